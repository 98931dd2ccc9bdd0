"""The pure cores of a peer: every crawl decision, with no I/O of any kind.

Nothing here opens a socket or a file, starts a thread or reads a clock:
``now`` and what the network said come in, decisions go out as frozen
dataclasses (h11's shape). ``tests/test_purity.py`` checks every module of
this folder by glob, and mypy checks them strictly (pyproject.toml).

Bottom up:

- ``config``     cluster.toml text -> frozen, typed objects (every default in one place);
  ``configkeys`` how a key is declared, ``sections`` the sections' keys and checks,
  ``sitemapconfig`` the ``[sitemaps]`` section, ``warcconfig`` the ``[warc]`` section
- ``sites``      ``[[site]]`` blocks: each host's settings, one block over the global config
- ``tlsconfig``  TLS options in the config: paths resolved, combinations checked, the ``--check`` line
- ``urls``       normalisation, link joining, host key, scope
- ``urlrules``   scope by URL: include/exclude rules, skipped extensions, parameters stripped
- ``bloom``, ``bloomnp``  the seen-URL Bloom filter of this peer's partition; its numpy batch kernels
- ``seen``       the exact seen set's policy behind the filter
- ``pid``        the per-host delay controller (docs/politeness.md)
- ``hoststate``  the record the frontier keeps per host (one slotted object)
- ``pacing``     a host's pace: delay, PID windows, backoff, the 1 s/5 s ceiling
- ``ipbudget``   hosts sharing an IP address paced like one host
- ``census``     the frontier's read-outs for status and metrics
- ``scheduler``  the polite scheduler over hosts: when each may start, which goes next
- ``spillqueue`` the part of each host's queue beyond its head in RAM (spill store seam)
- ``frontier``   the scheduler with the per-host queues of URLs: push, pop_ready, done
- ``limits``     caps on remote input, counted
- ``robots``     robots.txt policy per host (RFC 9309)
- ``sitemap``, ``sitemaps``  one sitemap document read from hostile bytes; the sitemaps a peer found
- ``directives`` what a page says of itself: robots directives, canonical, meta refresh
- ``sitemaphints`` what travels with a URL from a sitemap: its hints, or a sitemap job's grant
- ``extract``, ``items``  links, title and extraction rules from HTML
- ``simhash``    a page's visible text as a 64-bit SimHash, and its bands
- ``digests``, ``nearindex``  exact duplicates by body digest; a band owner's table of SimHashes
- ``dedupe``     duplicate verdicts: digest, then the band owners asked, with timeouts;
  ``dedupeconfig`` the ``[dedupe]`` section; ``duplicates`` what a verdict means
  for the crawl: a page's row and links held until it comes
- ``http1``      HTTP/1.1 response framing (RFC 9112) and the request head
- ``head``       what the crawler reads of a response head, every value checked
- ``cookies``    the cookie jar: Set-Cookie kept per host and sent back (RFC 6265), bounded
- ``inflate``    gzip/deflate body decoding with a bounded output
- ``warcrecord`` WARC/1.1 records of one fetch's bytes, each a gzip member, with their CDXJ facts
- ``dnscache``, ``netguard``  DNS cache policy; which addresses are public
- ``eyeballs``   happy eyeballs (RFC 8305): the order a host's addresses are raced in
- ``proxyconf``, ``tunnel``  proxies in cluster.toml and each host's; what a proxy is asked and its answer means
- ``layout``, ``runs``  a data_dir's file names; resume, fresh or refuse a run
- ``progress``, ``stats``  the progress line; the end-of-run summary
- ``scrape``     what one metrics scrape exports (``peer.engine.metrics`` serves it)
- ``holds``      hand-off holds of hosts gained in a ring change
- ``revisit``    continuous crawling: a page's next visit (adaptive interval), conditional GETs;
  ``duequeue`` the revisit records by host and due time; ``hostmix`` a host's starts shared
  between new URLs and revisits; ``recrawl`` the three composed for ``crawl``: due revisits
  through the frontier, the visits recorded; ``revisitconfig`` the ``[revisit]`` keys
- ``decisions``  the frozen effects and answers ``crawl`` returns
- ``parsing``    one HTML page's parse for a worker thread
- ``crawlstate`` the crawl core's state, under its parts:
  ``outcomes`` (results, retries), ``sitemapside`` (sitemaps found, fetched, read),
  ``ringside`` (ring changes, hand-offs), ``figures``
- ``crawl``      ``CrawlCore``: every crawl decision, composing the cores above
- ``peer``       ``PeerCore``: the crawl core and the ring node in one; one list of effects
"""
