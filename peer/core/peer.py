"""One peer's core: the crawl core and the ring node composed; events in, one ordered list of effects out (pure).

``PeerCore`` joins ``peer.core.crawl.core.CrawlCore`` and ``ring.node.RingNode``
where they meet, so no driver stands between them (httpcore drives one h11
``Connection``, not two). A link found here whose host is another peer's
is a ``Forward`` the crawl decides and that goes into the ring node's Outbox
here, in the same call; a batch the ring takes goes straight into
``CrawlCore.discover`` with the crawl's own ``Origin``. The driver
(``peer.engine.crawler``) carries out what is returned, in order, through
one ``{effect type: handler}`` table.

Events (each takes ``now``, the crawl's clock; the ones that need the wall
clock take ``wall``). The ring's timers run on ``now - stalled``: the
seconds this process stood still beyond a gossip interval a round, which
the sockets measure and the driver sets (Lifeguard, Dadgar et al. 2018:
the silence of a process that was not running is its own, not its peers').

- ``discover`` / ``seeds`` and ``routed(effects)``: the crawl's own decisions
  (a fetch result's, a sieve batch's...), their Forwards put in the Outbox;
- ``receive(route, msg)``: a decoded ring frame; ``tick``: a gossip round;
  ``flush``: the Outbox's frames due; ``leave``: ``ring leave`` or a signal;
- ``hosts_read`` / ``fetched_read``: the answers to a hand-off's reads.

Effects: the crawl's (``peer.core.crawl.decisions``: ``Forward`` is journaled by
the driver, its send is done here), the ring's ``Send``, ``Reply``,
``Log``, ``StatusAsked``, ``Released`` (done here; for the record) and
``Granted`` (the driver journals the grant totals) (``ring.actions``), and
three of this module:

==============  ==============================================================
``Commit``      make every journal record so far durable, before what follows
``ReadHosts``   a hand-off needs the hosts the results hold (``hosts_read``)
``ReadFetched`` ... and the fetched URLs of those that moved (``fetched_read``)
==============  ==============================================================

Rules:

1. **Taken, then acked.** A batch taken from the ring (``Deliver``) gives
   its discoveries, then ``Commit``, then whatever the ring said after it:
   the adopt tool's ``Reply`` ack, and the member's ack owed in the Outbox,
   which leaves only with a later ``flush`` (rule 5 of ``ring.node``).
2. **Origins.** A member's or the adopt tool's batch is ``RELAY`` or
   ``ADOPTED`` by who sent it (``ring.node.ADOPT_PREFIX``); its seen URLs
   are ``HANDED_SEEN``; our own entries rerouted back (``Rerouted``) are
   ``HANDED_SEEN`` then ``HANDED_BACK``, in the order ``Outbox.reroute``
   gives them.
3. **Hand-off reads** are h11's ``NEED_DATA``: a ``HandOff`` of the ring
   gives ``ReadHosts(request)``; its answer gives ``ReadFetched(request,
   hosts)`` for the moved hosts alone, the jobs whose request is on the wire
   taken at that moment (a fetch that ends during the read writes a row the
   read may not see); its answer puts each moved fetched URL in the Outbox as
   seen and starts the ring's hand-off (``RingNode.begin_handoff``). An
   answer for a request that is not open changes nothing.
4. **One host key per URL per peer**: ``discover`` computes it once and
   ``Forward`` carries it on; what comes from another peer has it computed
   again there, once.
5. **Grants are durable first.** A ``Granted`` (``ring.budget`` rule 5)
   is followed by ``Commit``, before the round's messages that carry the
   grants: a process killed after them restarts with them (a restart that
   forgot a grant would spend it a second time).
6. **Band queries** (``peer.core.dedupe.held``): a ``NearAsk`` to this
   peer (or in a ring of one) is answered here, in the same call, and the
   answer fed back to the crawl; one to another member is a ``Send`` of a
   ``NearQuery``. A member's ``NearQuery`` is answered with a ``Send`` of
   the ``NearAnswer`` to its sender (never to the ``reply_to`` it names: a
   query must not aim answers at a third peer); a ``NearAnswer`` goes to
   the crawl, which checks it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Union

from peer.core.crawl.core import CrawlCore
from peer.core.crawl.decisions import Effect, Finished, Forward, NearAsk, Origin, Sleep, Start
from peer.core.dedupe.bands import NearAnswer, NearQuery
from ring.actions import (
    Action,
    Count,
    Deliver,
    Granted,
    HandOff,
    LeaveAsked,
    Log,
    NearAnswered,
    NearAsked,
    Released,
    Reply,
    Rerouted,
    RingChanged,
    SeedStarts,
    Send,
    StatusAsked,
)
from ring.lease import LeaseState
from ring import messages as wire
from ring.messages import MemberState, Message, StatusReply
from ring.node import ADOPT_PREFIX, RingNode
from ring.status import StatusFigures

__all__ = ["Commit", "PeerCore", "PeerEffect", "ReadFetched", "ReadHosts"]


@dataclass(frozen=True, slots=True)
class Commit:
    """Make every journal record so far durable before the effects after it (an ack)."""


@dataclass(frozen=True, slots=True)
class ReadHosts:
    """A hand-off needs the hosts the results hold: answer with ``PeerCore.hosts_read(request, ...)``."""

    request: int


@dataclass(frozen=True, slots=True)
class ReadFetched:
    """A hand-off needs (url, host) of the pages fetched of ``hosts``: answer with ``PeerCore.fetched_read``."""

    request: int
    hosts: tuple[str, ...]


PeerEffect = Union[Effect, Send, Reply, Log, StatusAsked, Released, Commit, ReadHosts, ReadFetched,
                   Granted]


@dataclass(slots=True)
class _Read:
    """An open hand-off read (rule 3)."""

    handoff: HandOff
    inflight: list[tuple[str, str]] | None = None


class PeerCore:
    """One peer's decisions, crawl and ring (module docstring); mutable, pure, one thread.

    ``node`` is None for a peer alone: every host is its own, nothing is
    forwarded, and the ring's events never come.
    """

    def __init__(self, crawl: CrawlCore, node: RingNode | None = None, *, now: float = 0.0,
                 joining: bool = False) -> None:
        self.crawl = crawl
        self.node = node
        self._reads: dict[int, _Read] = {}
        self._next_request = 0
        self._now = now
        self._stalled = 0.0
        # The lease as last computed, and until when it holds for sure (may_start).
        self._lease: LeaseState | None = None
        self._lease_sure = -math.inf
        self._lease_ring = 0
        if node is not None:
            crawl.alive = self._alive
            crawl.hold_timeout = node.hold_timeout
            crawl.ring = ring = node.ring()
            if joining:
                # A peer not in cluster.toml joins a running ring: every
                # host it owns had an owner before, who hands it over.
                crawl.hold_from(ring.without_peer(crawl.peer_id), now)

    @property
    def stalled(self) -> float:
        """Seconds this process stood still (module docstring): the ring's clock is ``now - stalled``."""
        return self._stalled

    @stalled.setter
    def stalled(self, value: float) -> None:
        self._stalled = value
        if self.node is not None:
            # The lease is measured on the real clock (ring.membership).
            self.node.membership.stalled = value

    # -- the crawl's own decisions ---------------------------------------------------

    def routed(self, effects: Iterable[Effect], now: float) -> list[PeerEffect]:
        """The crawl's effects, each ``Forward`` queued in the Outbox for its owner (rule 4)."""
        out: list[PeerEffect] = []
        outbox = self.node.outbox if self.node is not None else None
        for e in effects:
            if isinstance(e, NearAsk):
                out += self._near_ask(e, now)
                continue
            if isinstance(e, Forward) and outbox is not None:
                # A URL we were handed (relay) must not be dropped by the
                # Outbox's "recently forwarded" cache: it may be the only copy.
                if e.relay:
                    outbox.relay(e.url, e.depth, e.owner, now - self.stalled)
                else:
                    outbox.add(e.url, e.depth, e.owner, now - self.stalled)
            out.append(e)
        return out

    def _near_ask(self, e: NearAsk, now: float) -> list[PeerEffect]:
        """Rule 6: a band query, answered here when the bands are ours, else sent."""
        crawl = self.crawl
        me = crawl.peer_id
        if self.node is None or e.owner == me:
            return self.routed(crawl.dup_answer(me, crawl.dedupe.serve(e.query), now), now)
        q = e.query
        return [Send(e.owner, wire.NearQuery(self.node.ring_name, me, q.bands, q.fingerprint, q.url, me,
                                             q.seen_at))]

    def discover(self, url: str, depth: int, now: float, origin: Origin) -> list[PeerEffect]:
        return self.routed(self.crawl.discover(url, depth, now, origin), now)

    def seeds(self, now: float) -> list[PeerEffect]:
        return self.routed(self.crawl.seeds(now), now)

    def next(self, now: float) -> Start | Sleep | Finished:
        """The scheduler's next step (``CrawlCore.next``), the ring's counts in view.

        A ``Sleep``'s effects are the crawl's: the driver passes them through ``routed``.
        """
        self._now = now
        return self.crawl.next(now, self if self.node is not None else None)

    # ``peer.core.crawl.decisions.RingView``: what ``CrawlCore.next`` asks of the ring.

    @property
    def page_cap(self) -> int:
        return self.node.page_cap if self.node is not None else 0

    def others_pages(self) -> int:
        return self.node.others_pages() if self.node is not None else 0

    def budget_gone(self) -> bool:
        return self.node is not None and bool(self.node.budget_gone)

    def idle(self) -> bool:
        return self.node is None or self.node.idle()

    def done(self) -> bool:
        return self.node is None or self.node.done(self._now - self.stalled)

    def left(self) -> bool:
        return self.node is not None and self.node.left(self.crawl.locally_idle())

    def may_start(self, now: float) -> bool:
        """Whether a request may start at ``now`` (the crawl's clock): the ring's lease holds.

        A held lease is taken as it is until it would run out or the ring
        moves (``LeaseState.until``, at most a tenth of a second: the
        scheduler asks before every start); a lost one is asked again.
        """
        if self.node is None:
            return True
        ring = self.node.membership.lease
        fp = ring.ring if ring is not None else 0
        if self._lease is None or now >= self._lease_sure or fp != self._lease_ring:
            self._lease = state = self.node.lease_state(now)
            self._lease_ring = fp
            self._lease_sure = min(state.until, now + 0.1) if state.held else -math.inf
        return self._lease.held

    def lease_state(self, now: float) -> LeaseState | None:
        """The ring's lease at ``now`` (the crawl's clock), for status and progress; None alone."""
        return self.node.lease_state(now) if self.node is not None else None

    # -- the ring's events -------------------------------------------------------------

    def receive(self, route: bytes, msg: Message, now: float, *, wall: float,
                user_id: str | None = None) -> list[PeerEffect]:
        """A decoded frame that came on ``route`` (``RingNode.receive``'s rules, then ours)."""
        assert self.node is not None
        return self._ring(self.node.receive(route, msg, now - self.stalled, user_id=user_id), now, wall)

    def tick(self, now: float) -> list[PeerEffect]:
        """A gossip round: our counts, membership, ring changes, hand-off markers."""
        assert self.node is not None
        crawl = self.crawl
        return self._ring(self.node.tick(now - self.stalled, idle=crawl.locally_idle(),
                                         pages=crawl.requested, in_flight=crawl.in_flight), now, 0.0)

    def flush(self, now: float) -> list[PeerEffect]:
        """The Outbox's frames due now (batches with the acks owed)."""
        assert self.node is not None
        return self._ring(self.node.flush(now - self.stalled), now, 0.0)

    def leave(self, now: float) -> list[PeerEffect]:
        """Leave the ring: fetch nothing more, hand everything over (a second call does nothing)."""
        if self.node is None or self.crawl.leaving:
            return []
        self.crawl.leaving = True
        return self._ring(self.node.leave(now - self.stalled), now, 0.0)

    def status_reply(self, nonce: int, figures: StatusFigures) -> StatusReply:
        assert self.node is not None
        return self.node.status_reply(nonce, figures)

    def _alive(self, peer: str) -> bool | None:
        """The membership's view of ``peer``, for the hand-off holds."""
        m = self.node.membership.members().get(peer) if self.node is not None else None
        if m is None:
            return None
        return m.state is not MemberState.DEAD

    def _ring(self, actions: Sequence[Action], now: float, wall: float) -> list[PeerEffect]:
        """The ring node's actions, those meant for the crawl done here, in their order."""
        out: list[PeerEffect] = []
        crawl = self.crawl
        for a in actions:
            if isinstance(a, Deliver):
                # Rule 2: the crawl's origin, by who sent the batch.
                origin = Origin.ADOPTED if a.sender.startswith(ADOPT_PREFIX) else Origin.RELAY
                for url, depth in a.urls:
                    out += self.routed(crawl.discover(url, depth, now, origin), now)
                for url in a.seen:
                    out += crawl.discover(url, 0, now, Origin.HANDED_SEEN)
                out.append(Commit())  # rule 1: taken is on disk before it is acked
            elif isinstance(a, Rerouted):
                for url in a.seen:
                    out += crawl.discover(url, 0, now, Origin.HANDED_SEEN)
                for url, depth in a.urls:
                    out += self.routed(crawl.discover(url, depth, now, Origin.HANDED_BACK), now)
            elif isinstance(a, RingChanged):
                out += self.routed(crawl.set_ring(a.ring, now), now)
            elif isinstance(a, HandOff):
                request = self._next_request
                self._next_request += 1
                self._reads[request] = _Read(a)
                out.append(ReadHosts(request))
            elif isinstance(a, Released):
                crawl.handoff_done(a.sender)
                out.append(a)  # done; for the record (a log line, a test)
            elif isinstance(a, SeedStarts):
                # Epoch seconds in the message; our clock is ``now``.
                crawl.seed_starts(list(a.starts), now, now - wall)
            elif isinstance(a, LeaveAsked):
                out += self.leave(now)
            elif isinstance(a, Granted):
                # Rule 5: on disk before the round's messages that carry it.
                out += [a, Commit()]
            elif isinstance(a, NearAsked):
                m = a.msg
                ans = crawl.dedupe.serve(NearQuery(m.bands, m.fingerprint, m.url, m.sender, m.seen_at))
                assert self.node is not None
                out.append(Send(m.sender, wire.NearAnswer(self.node.ring_name, crawl.peer_id, ans.url,
                                                          ans.duplicate_of, ans.distance)))
            elif isinstance(a, NearAnswered):
                m2 = a.msg
                out += self.routed(crawl.dup_answer(m2.sender, NearAnswer(m2.url, m2.duplicate_of, m2.distance),
                                                    now), now)
            elif isinstance(a, Count):
                pass  # counted by the node already
            else:
                out.append(a)
        return out

    # -- a hand-off's reads (rule 3) ------------------------------------------------------

    def hosts_read(self, request: int, hosts: Iterable[str], now: float) -> list[PeerEffect]:
        """The hosts the results hold: ask for the fetched URLs of those that moved."""
        read = self._reads.get(request)
        if read is None or read.inflight is not None:
            return []
        h = read.handoff
        read.inflight = self.crawl.inflight_urls()  # before the read: see rule 3
        return [ReadFetched(request, tuple(self.crawl.moved_hosts(hosts, h.old, h.ring)))]

    def fetched_read(self, request: int, rows: Iterable[tuple[str, str]], now: float, *,
                     wall: float) -> list[PeerEffect]:
        """(url, host) of the moved hosts' fetched pages: hand them over, start the ring's hand-off."""
        read = self._reads.get(request)
        if read is None or read.inflight is None:
            return []
        del self._reads[request]
        assert self.node is not None
        h = read.handoff
        crawl = self.crawl
        moved = crawl.handoff_seen([*rows, *read.inflight], h.old, h.ring)
        outbox = self.node.outbox
        for url, owner in moved:
            outbox.add_seen(url, owner, now)
        # Request starts travel in epoch seconds (HostStarts).
        starts = crawl.handoff_starts(h.old, h.ring, wall - now)
        return self._ring(self.node.begin_handoff(h.version, len(moved), starts, now - self.stalled),
                          now, wall)
