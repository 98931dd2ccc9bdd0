"""The ring's I/O edge: ZeroMQ under trio, and the CurveZMQ key files.

Only the modules here import zmq.

- ``errors``    the sockets' exceptions; zmq errors are translated there only
- ``sockopts``  the options every socket is opened with, and the measurements behind them
- ``zmqio``     the sockets: ``ZmqSocket``, a pyzmq socket driven from trio
- ``curve``     the keys directory: read and write CurveZMQ key pairs
- ``zap``       the Curve ``configure`` hooks and the ZAP handler that admits members' keys
- ``handshakes`` the connections a ROUTER refused in their handshake, counted from its monitor
- ``sockets``   a member's ROUTER, its DEALERs' sender task and its two clocks,
  serving whoever decides (a peer's ``PeerCore`` engine, or ``RingDriver``)
- ``driver``    ``RingDriver`` runs a bare ``ring.node.RingNode`` over the sockets
  (tests, benchmarks); ``ForwardLink``, a non-member's sender
"""
