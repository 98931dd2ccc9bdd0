"""The trio driver of one peer: it asks the cores what to do and does it.

- ``crawler``   ``Crawler``: the nursery, the scheduler loop, one task per
  job, the parser threads, the effects' table; its parts:
  ``durability`` (journal, snapshots, the exact seen set), ``ringface``
  (what the ring calls), ``reporting`` (status, progress)
- ``cluster``   the ring side: gossip, forwarding and status over ZeroMQ
- ``metrics``   Prometheus figures at ``metrics_address``
- ``observe``   a solo peer's answers to ``ring status``
"""
