"""URLs: their one spelling, the crawl's scope by host, and its rules by URL.

``normalize`` (RFC 3986 normalisation, link joining, the host key),
``scope`` (allow/deny host globs and the depth), ``rules`` (include and
exclude rules, skipped extensions, parameters stripped).
"""
