"""ringcrawl's cluster layer: who owns what, and how peers talk.

Layout, bottom up (pure modules first; only the edges do I/O):

- ``hashring``  consistent hashing of hosts onto peers (pure)
- ``messages``  the versioned msgpack wire codec (pure)
- ``errors``    the package's exception tree

The gossip membership state machine, the ZeroMQ adapter and the ``python -m
ring`` commands build on these.
"""

from ring.errors import DecodeError, EmptyRingError, EncodeError, RingError
from ring.hashring import HashRing

__all__ = ["HashRing", "RingError", "DecodeError", "EncodeError", "EmptyRingError"]
