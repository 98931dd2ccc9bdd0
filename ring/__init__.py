"""ringcrawl's cluster layer: who owns what, and how peers talk.

Layout, bottom up (everything pure but ``io`` and ``tools``, which do I/O):

- ``errors``          the package's exception tree
- ``vocabulary``      the words of a crawl's figures, one table for every surface that shows them (pure)
- ``durations``       a span of time as a person reads it, one format for every surface (pure)
- ``commandnames``    the commands' names as the user starts them: installed or from a checkout (pure)
- ``hashring``        consistent hashing of hosts onto peers (pure)
- ``wirecodec``       the codec's machinery: field codecs, a record's spec with the wire version
                      of each field, frames of the two versions a peer speaks (pure)
- ``messages``        the ring's messages and their tables, the one status row type (pure)
- ``membership/``     who is in the ring and what its members agree on: SWIM's records,
                      view, probes, piggybacking and repairs, the termination counters, the
                      lease and the page budget, composed by ``Membership``
                      (``ring.membership`` lists its modules; pure)
- ``forwarding/``     URL batches to their owners: the ``Outbox`` (numbering, acks, resends,
                      re-routing), the ``Inbox``'s verdicts, routes, and what a batch hands the
                      crawl in rule order (``ring.forwarding`` lists them; pure)
- ``wireversion``     which wire version to speak to whom, read off routing ids (pure)
- ``actions``         the frozen actions ``RingNode`` returns (pure)
- ``handoff``         ring changes and the hand-off's phases and markers, a part of ``RingNode`` (pure)
- ``status``          ``StatusFigures``, the rows of the ``ring status`` reply and the reply (pure)
- ``crawlport``       the ``typing.Protocol`` of what ``RingDriver`` asks of a crawl (pure)
- ``node``            ``RingNode``: one member's decisions, composed of parts that own their
                      state; ``receive``/``tick`` return actions (pure)
- ``io/``             the edge: ZeroMQ sockets under trio, the CurveZMQ key files and ZAP,
                      ``RingDriver`` and ``ForwardLink`` (``ring.io`` lists its modules)
- ``tools/``          the operator's tools: the status and leave client, ``python -m ring``'s
                      commands, the dashboard, the keys command (``ring.tools`` lists them)

Only the pure names are re-exported here, so importing ``ring`` loads no
I/O library. Nothing in ``ring`` imports ``peer``: ``peer.core.door.peer`` composes a
node with the crawl core for a running peer, and ``ring/__main__.py`` hands
the commands peer's cluster.toml parser.
"""

from ring.errors import DecodeError, EmptyRingError, EncodeError, RingError
from ring.hashring import HashRing

__all__ = ["HashRing", "RingError", "DecodeError", "EncodeError", "EmptyRingError"]
