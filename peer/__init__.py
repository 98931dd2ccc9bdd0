"""One ringcrawl peer: the crawler process that owns a slice of the hosts.

Layout, bottom up. The pure cores take values and ``now`` in and return
decisions out; they import no trio, zmq, httpx or duckdb:

- ``errors``     the package's exception tree
- ``config``     cluster.toml -> frozen, typed objects (every default in one place)
- ``urls``       normalisation, link joining, host key, scope
- ``bloom``      the seen-URL Bloom filter of this peer's partition
- ``pid``        the per-host delay controller (a PID law on the delay)
- ``frontier``   per-host queues and the politeness gate
- ``dnscache``   DNS cache policy

The edges (``cli`` today; fetcher, resolver, store as the engine arrives) ask
the cores what to do and do the I/O.
"""
