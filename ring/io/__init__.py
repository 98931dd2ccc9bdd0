"""The ring's I/O edge: ZeroMQ under trio, and the CurveZMQ key files.

- ``zmqio``   the sockets: the only module that imports zmq
- ``curve``   the keys directory: read and write CurveZMQ key pairs
- ``sockets`` a member's ROUTER, its DEALERs' sender task and its two clocks,
  serving whoever decides (a peer's ``PeerCore`` engine, or ``RingDriver``)
- ``driver``  ``RingDriver`` runs a bare ``ring.node.RingNode`` over the sockets
  (tests, benchmarks); ``ForwardLink``, a non-member's sender
"""
