"""ringcrawl's cluster layer: who owns what, and how peers talk.

Layout, bottom up (pure modules at the top of the package; only ``io`` and
``tools`` do I/O):

- ``errors``          the package's exception tree
- ``vocabulary``      the words of a crawl's figures, one table for every surface that shows them (pure)
- ``durations``       a span of time as a person reads it, one format for every surface (pure)
- ``hashring``        consistent hashing of hosts onto peers (pure)
- ``messages``        the versioned msgpack wire codec, and the one status row type (pure)
- ``records``         member records: the merge rules, the local state machine, events (pure)
- ``budget``          the cluster-wide page budget: each member's cap of ``max_pages``,
                      moved between members only by grants; a part of ``RingNode`` (pure)
- ``lease``           a majority vouching for our ring, or no request starts; its part
                      of ``Membership`` (pure)
- ``swim``            probes, ping-reqs and suspicion timers: SWIM's failure detector (pure)
- ``dissemination``   the piggyback queue: which changed records ride on probes (pure)
- ``antientropy``     the Sync summary and its answers; joining and greeting seeds (pure)
- ``termination``     the counter method over gossiped counters: is the crawl over (pure)
- ``view``            the records one peer holds and what follows from each change (pure)
- ``membership``      ``Membership``: the SWIM protocol, composing records, view, swim,
                      dissemination, antientropy, termination and lease (pure)
- ``sim``             a simulated network for membership at scale (pure)
- ``forwarder``       URL batches to their owners: numbering, acks, resends, re-routing (pure)
- ``inbox``           the receiver's verdict on each URL batch: new, replay, stale (pure)
- ``routes``          a member's routing id ``<id>/<nonce>``, and the routes each member was
                      heard on, a part of ``RingNode`` (pure)
- ``actions``         the frozen actions ``RingNode`` returns (pure)
- ``intake``          what a batch taken or rerouted hands the crawl, in rule order, for both
                      drivers (pure)
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
I/O library. Nothing in ``ring`` imports ``peer``: ``peer.core.peer`` composes a
node with the crawl core for a running peer, and ``ring/__main__.py`` hands
the commands peer's cluster.toml parser.
"""

from ring.errors import DecodeError, EmptyRingError, EncodeError, RingError
from ring.hashring import HashRing

__all__ = ["HashRing", "RingError", "DecodeError", "EncodeError", "EmptyRingError"]
