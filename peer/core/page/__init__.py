"""One fetched page read: its links, title, directives and extraction items.

``directives`` (robots directives, canonical, meta refresh), ``extract``
(links and metadata from HTML), ``items`` (extraction rules by CSS
selector), ``parse`` (one page's whole parse, for a worker thread).
"""
