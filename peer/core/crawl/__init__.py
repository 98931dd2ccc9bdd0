"""The crawl core: every crawl decision of one peer, with no I/O.

``decisions`` (the effects and answers the core returns), ``limits`` (caps
on remote input), ``robots`` (robots.txt policy per host, RFC 9309),
``discovery`` (the way a URL comes in, and the seen set), ``jobs`` (the
jobs in flight and the row each leaves), ``outcomes`` (what a fetch's
answer means, and the retries), ``figures`` (the progress line's, status's
and summary's figures) and ``core`` (``CrawlCore``, which composes them
with the sitemaps', duplicates' and hand-offs' parts of their rooms).
"""
