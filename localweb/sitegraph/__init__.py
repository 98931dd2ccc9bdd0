"""The site graph (``*.web.test``): a realistic seeded web, its HTTP server, and the oracle that judges a crawl of it.

Pure, bottom up: ``text``, ``shop``, ``hrefs``, ``directives``, ``session``,
``docsite``, ``endpoints`` (bad.web.test), ``graph``, ``pages``, ``oracle``,
``web`` (``SiteGraph``: graph, pages and oracle in one), ``nearcopies``;
``realdocs`` reads real documentation pages from Debian's doc packages and
copies them as ``nearcopies`` copies the site graph's.
``server`` is the trio + h11 server for all of it.
"""
