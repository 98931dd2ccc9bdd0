"""The crawl core: every crawl decision of one peer, with no I/O.

``decisions`` (the effects and answers the core returns), ``limits`` (caps
on remote input), ``robots`` (robots.txt policy per host, RFC 9309),
``state`` (the core's state), ``outcomes`` (what a fetch's answer means),
``figures`` (the progress line's, status's and summary's figures) and
``core`` (``CrawlCore``).
"""
