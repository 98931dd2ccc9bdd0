"""The trio driver of one peer: it asks ``peer.core.door.peer.PeerCore`` what to do and does it.

- ``crawler``   ``Crawler``: the nursery, the scheduler loop, one task per
  job, the parser threads; it holds the one core and builds the parts
  below, each owning its state and handed the few calls it needs
- ``effects``   the one ``{effect type: handler}`` table the core's effects go through
- ``durability`` the journal, its snapshots, the spill store; ``seenfiles``
  the exact seen set's files; ``cookies`` the cookie jar's file
- ``results``   the results file: opened with its tables, watched
- ``ringface``  the ``Member`` its ``ring.io.sockets`` serve, the ring's effects, moved queues
- ``reporting`` status, cap counters, progress
- ``sitemapfetch`` a sitemap read and parsed; ``revisits`` visits recorded in
  ``fetches``, revisits archived
- ``archive``   the WARC files: each fetch's capture handed to the writer thread
- ``metrics``   Prometheus figures at ``metrics_address``; ``opserver`` its HTTP
  server, the probes ``/healthz`` and ``/readyz``, the token and TLS
- ``observe``   a solo peer's answers to ``ring status``
"""
