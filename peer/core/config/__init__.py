"""cluster.toml, parsed once into frozen objects: every key's type, default, check and doc.

Bottom up: ``keys`` (how a key is declared, and how a section is built from
a TOML table), ``sections`` (the core sections: ring, peers, crawl,
politeness, dns, bloom, frontier), the feature sections ``sitemaps``,
``warc``, ``dedupe``, ``revisit`` and ``metrics``, ``tls`` and ``proxies`` (paths
resolved, combinations checked), ``sites`` (``[[site]]`` blocks over the
global config), and ``cluster`` (``ClusterConfig``: the whole file).
"""
