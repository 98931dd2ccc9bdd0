"""ringcrawl's cluster layer: who owns what, and how peers talk.

Layout, bottom up (pure modules first; only the edges do I/O):

- ``errors``      the package's exception tree
- ``hashring``    consistent hashing of hosts onto peers (pure)
- ``messages``    the versioned msgpack wire codec (pure)
- ``membership``  heartbeat gossip with SWIM incarnations; termination detector (pure)
- ``forwarder``   URL batches to their owners: numbering, acks, resends, re-routing (pure)
- ``zmqio``       ZeroMQ sockets under trio: the only module that imports zmq (edge)
- ``dashboard``   the live page of ``ring dashboard``: history and escaped
                  tables (pure), its h11-on-trio server (edge); imports no ``peer``
- ``cli``         ``python -m ring table``, ``status``, ``leave``, ``dashboard`` (edge)

Only the pure names are re-exported here, so importing ``ring`` loads no
I/O library; ``peer.cluster`` is what puts these together in a running peer.
"""

from ring.errors import DecodeError, EmptyRingError, EncodeError, RingError
from ring.hashring import HashRing

__all__ = ["HashRing", "RingError", "DecodeError", "EncodeError", "EmptyRingError"]
