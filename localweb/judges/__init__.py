"""A crawl judged as a site owner would, from the server's request log alone (pure).

``politeness`` (the most requests in any 1 s and 5 s window), ``owners``
(which peer asked for each host, pages asked twice, coverage);
``duplicates``, the one judge that reads the peers' ``pages`` rows:
duplicate detection on real documentation pages, by fingerprint distance
and by a crawl's verdicts.
"""
