"""The ring's I/O edge: ZeroMQ under trio, and the CurveZMQ key files.

- ``zmqio``   the sockets: the only module that imports zmq
- ``curve``   the keys directory: read and write CurveZMQ key pairs
- ``driver``  ``RingDriver`` runs a ``ring.node.RingNode`` over zmq;
  ``ForwardLink``, a non-member's sender
"""
