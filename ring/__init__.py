"""ringcrawl's cluster layer: who owns what, and how peers talk.

Layout, bottom up (pure modules first; only the edges do I/O):

- ``errors``      the package's exception tree
- ``hashring``    consistent hashing of hosts onto peers (pure)
- ``messages``    the versioned msgpack wire codec (pure)
- ``membership``  SWIM probes, piggybacked changes, anti-entropy; termination detector (pure)
- ``sim``         a simulated network for membership at scale (pure)
- ``forwarder``   URL batches to their owners: numbering, acks, resends, re-routing (pure)
- ``routes``      a member's routing id ``<id>/<nonce>`` and the member it claims (pure)
- ``crawlport``   the ``typing.Protocol`` of what the ring asks of a crawl (pure)
- ``actions``     the frozen actions ``RingNode`` returns (pure)
- ``handoff``     ring changes and the hand-off's phases and markers, a part of ``RingNode`` (pure)
- ``status``      ``StatusFigures`` and the ``ring status`` reply, a part of ``RingNode`` (pure)
- ``node``        ``RingNode``: one member's decisions; ``receive``/``tick`` return actions (pure)
- ``zmqio``       ZeroMQ sockets under trio: the only module that imports zmq (edge)
- ``sockets``     a member's ROUTER, DEALERs and clocks, serving whoever decides (edge)
- ``driver``      ``RingDriver`` runs a node over zmq; ``ForwardLink``, a non-member's sender (edge)
- ``client``      the tools' status and leave client, typed results (edge)
- ``dashboard``   the live page of ``ring dashboard``: history and escaped
                  tables (pure), its h11-on-trio server (edge); imports no ``peer``
- ``cli``         ``python -m ring table``, ``status``, ``leave``, ``dashboard``: parsing and formatting (edge)

Only the pure names are re-exported here, so importing ``ring`` loads no
I/O library. Nothing in ``ring`` imports ``peer``: ``peer.core.peer`` composes a
node with the crawl core for a running peer, and ``ring/__main__.py`` hands
the commands peer's cluster.toml parser.
"""

from ring.errors import DecodeError, EmptyRingError, EncodeError, RingError
from ring.hashring import HashRing

__all__ = ["HashRing", "RingError", "DecodeError", "EncodeError", "EmptyRingError"]
