"""The ring's I/O edge: ZeroMQ under trio, and the CurveZMQ key files.

Only the modules here import zmq.

- ``errors``    the sockets' exceptions; zmq errors are translated there only
- ``sockopts``  the options every socket is opened with, and the measurements behind them
- ``zmqio``     the sockets: ``ZmqSocket``, a pyzmq socket driven from trio
- ``curve``     the keys directory: read and write CurveZMQ key pairs
- ``zap``       the Curve ``configure`` hooks and the ZAP handler that admits members' keys
- ``driver``    ``RingDriver`` runs a ``ring.node.RingNode`` over zmq;
  ``ForwardLink``, a non-member's sender
"""
