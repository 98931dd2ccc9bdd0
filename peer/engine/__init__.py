"""The trio driver of one peer: it asks the cores what to do and does it.

- ``crawler``   ``Crawler``: the nursery, the scheduler loop, one task per
  job, the parser threads, the journal and the store
- ``cluster``   the ring side: gossip, forwarding and status over ZeroMQ
- ``metrics``   Prometheus figures at ``metrics_address``
- ``observe``   a solo peer's answers to ``ring status``
"""
