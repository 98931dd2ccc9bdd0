"""The pure cores of a peer: every crawl decision, with no I/O of any kind.

Nothing here opens a socket or a file, starts a thread or reads a clock:
``now`` and what the network said come in, decisions go out as frozen
dataclasses (h11's shape). ``tests/project/test_purity.py`` checks every
module under this folder by glob, and mypy checks them strictly
(pyproject.toml).

One room a concern, bottom up (each room's ``__init__`` names its modules):

- ``urls``      a URL's one spelling, the scope by host, the rules by URL
- ``http``      a response read sans-IO: framing, head, inflation, cookies,
  proxy answers; ``FetchResult``, what one fetch returns to the core
- ``dns``       the DNS cache's policy, the SSRF guard, happy eyeballs
- ``page``      one page read: directives, links, extraction items
- ``warc``      WARC/1.1 records of one fetch's bytes
- ``sitemaps``  sitemap documents, the sitemaps found, their jobs
- ``config``    cluster.toml parsed once into frozen objects
- ``seen``      the seen-URL set: a Bloom filter and its exact sieve
- ``politeness`` a host's delay controller, the rate ceiling, a profile's
  figures
- ``frontier``  per-host queues and the polite scheduler over hosts
- ``dedupe``    duplicate content, exact and near, across the ring
- ``revisit``   continuous crawling: when a page comes due again
- ``handoff``   hosts that change owner when the ring moves
- ``run``       a run's data directory, resume or fresh, its figures
- ``crawl``     ``CrawlCore``: every crawl decision, composing the rooms above
- ``door``      ``PeerCore``: the crawl core and the ring node in one, the
  engine's one door; one ordered list of effects out
"""
