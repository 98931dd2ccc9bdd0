"""One ringcrawl peer: the crawler process that owns a slice of the hosts.

Layout, bottom up. The pure cores take values and ``now`` in and return
decisions out; they import no trio, zmq, httpx or duckdb:

- ``errors``     the package's exception tree
- ``config``     cluster.toml -> frozen, typed objects (every default in one place)
- ``urls``       normalisation, link joining, host key, scope
- ``bloom``      the seen-URL Bloom filter of this peer's partition
- ``pid``        the per-host delay controller (docs/politeness.md)
- ``frontier``   per-host queues and the politeness gate
- ``runs``       resume, fresh, ask or refuse a run on earlier state
- ``progress``   the progress line from a snapshot of figures
- ``stats``      the end-of-run summary and stats.json
- ``limits``     caps on remote input, counted
- ``robots``     robots.txt policy per host (RFC 9309)
- ``extract``, ``items``  links, title and extraction rules from HTML
- ``dnscache``, ``netguard``  DNS cache policy; which addresses are public
- ``state``      the crash-safe journal and snapshots (plain file I/O)
- ``holds``      hand-off holds of hosts gained in a ring change
- ``decisions``  the frozen effects and answers ``crawl`` returns
- ``crawl``      ``CrawlCore``: every crawl decision, composing the cores above

The edges ask the cores what to do and do the I/O:

- ``fetcher``, ``resolver``, ``store``  one HTTP attempt; DNS; DuckDB rows
- ``engine``     the trio driver of ``CrawlCore`` (tasks, threads, journal)
- ``cluster``    the ring side: gossip, forwarding, status over ZeroMQ
- ``cli``        ``python -m peer``; ``trial``: ``python -m peer try``
- ``metrics``, ``observe``  Prometheus figures at ``metrics_address``; a
  solo peer's answers to ``ring status``
"""
