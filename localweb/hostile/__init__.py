"""The hostile web (``*.test``): every answer a crawler must survive, on one raw-socket server.

Pure, bottom up: ``wire`` (bytes on the wire), ``site`` (the normal site),
``farm`` (link farms and traps), ``endless`` (a web without end),
``cases`` (the hostile hosts), ``sitemaps``, ``changing``
(changing.test), ``styled`` (styled.test: pages and their requisites); ``server`` serves them (``python -m localweb.hostile``).
"""
