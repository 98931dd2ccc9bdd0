"""ringcrawl's cluster layer: who owns what, and how peers talk.

Layout, bottom up (pure modules first; only the edges do I/O):

- ``errors``      the package's exception tree
- ``hashring``    consistent hashing of hosts onto peers (pure)
- ``messages``    the versioned msgpack wire codec (pure)
- ``membership``  SWIM probes, piggybacked changes, anti-entropy; termination detector (pure)
- ``sim``         a simulated network for membership at scale (pure)
- ``forwarder``   URL batches to their owners: numbering, acks, resends, re-routing (pure)
- ``zmqio``       ZeroMQ sockets under trio: the only module that imports zmq (edge)
- ``cli``         ``python -m ring table`` and ``status`` (edge)

Only the pure names are re-exported here, so importing ``ring`` loads no
I/O library; ``peer.cluster`` is what puts these together in a running peer.
"""

from ring.errors import DecodeError, EmptyRingError, EncodeError, RingError
from ring.hashring import HashRing

__all__ = ["HashRing", "RingError", "DecodeError", "EncodeError", "EmptyRingError"]
