"""The trio driver of one peer: it asks ``peer.core.peer.PeerCore`` what to do and does it.

- ``crawler``   ``Crawler``: the nursery, the scheduler loop, one task per
  job, the parser threads, the one ``{effect type: handler}`` table; its
  parts, one concern each over the state ``parts`` declares once:
  ``durability`` (journal, snapshots, the exact seen set), ``ringface``
  (the ``Member`` its ``ring.io.sockets`` serve, the ring's effects),
  ``reporting`` (status, progress), ``sitemapfetch`` (a sitemap read and parsed),
  ``revisits`` (conditional GETs, visits recorded in ``fetches``, ``run_for``)
- ``archive``   the WARC files: each fetch's capture handed to the writer thread
- ``metrics``   Prometheus figures at ``metrics_address``
- ``observe``   a solo peer's answers to ``ring status``
"""
