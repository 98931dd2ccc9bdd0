"""The ring's membership: who is in the cluster, and in what state (pure core).

Protocol: heartbeat gossip (van Renesse, Minsky, Hayden, "A gossip-style
failure detection service", Middleware 1998) with SWIM's incarnation numbers,
suspicion and refutation (Das, Gupta, Motivala, "SWIM: scalable
weakly-consistent infection-style process group membership protocol", DSN
2002). Every ``gossip_interval`` a peer bumps its own heartbeat and pushes its
whole view, a :class:`~ring.messages.Digest`, to ``fanout`` random live
peers, which merge it and answer with theirs (push-pull). A member whose
heartbeat has not *increased* for ``suspect_after`` seconds of *local* time is
suspected, for ``dead_after`` seconds declared dead; a dead member no longer
owns hosts. Freshness is local receive time, never a sender's clock.

Why heartbeats and not SWIM's probes (ping, ping-req): the counter method of
termination and the cluster-wide ``max_pages`` need every member's idle flag
and counters at every peer, so a full-state digest travels anyway, and its
per-member heartbeat is then a failure detector for free. Clusters are tens of
peers (a 64-member digest is ~2.8 KB), so O(N) digests cost little. From SWIM
we take incarnations, suspect-before-dead, refutation by the suspected member
and the dissemination of verdicts: a peer whose own timer declares a death
pushes it to every live member in that tick, as a leave is announced. At 64
peers a heartbeat can take three rounds to reach the last peer; without the
push the last verdict came up to two rounds after the first, right at issue
4's bound ("dead everywhere within ``dead_after`` + 2 intervals"); with it, at
most one round in 120 simulated crashes (docs/membership.md). Suspicion is
not pushed: it moves no hosts.

Merging two records of one member (the order is a total order, so merging
is a commutative, associative, idempotent join and all views converge)::

    key = (incarnation, FINAL[state], heartbeat, SOFT[state])   greater wins;
                                                                ties: the rest
    state     FINAL  SOFT   meaning
    alive       0     0     heartbeats arrive
    suspect     0     1     "nothing newer than this heartbeat for suspect_after"
    dead        1     0     "nothing newer for dead_after": owns no hosts
    left        2     0     announced a graceful leave: owns no hosts

    rule                                              why
    1 higher incarnation wins, whatever the states    a restarted peer (its start
                                                      epoch is its incarnation) or
                                                      a refuting one comes back alive
    2 same incarnation: dead and left are sticky,     a verdict must not be undone by a
      left beats dead                                 stale heartbeat; a leave is not
                                                      a crash
    3 same incarnation, alive/suspect: higher         a suspicion means "nothing newer
      heartbeat wins; equal: suspect beats alive      than h" and newer news clears it
    4 a record about *us* that beats our own is       the SWIM refutation; we never
      refuted: incarnation := its incarnation + 1     adopt a verdict on ourselves

Local events (anything else raises :class:`IllegalTransition`, our bug)::

    from     event          to       when
    alive    suspect_timer  suspect  no heartbeat increase for suspect_after
    suspect  dead_timer     dead     no heartbeat increase for dead_after
    alive    leave          left     leave(): self only, once
    alive    refute         alive    rule 4 (self only)
    left     refute         left     rule 4 while handing off after a leave

Joining and healing: the seeds (``[[peer]]``) start in the view as ``alive``
at incarnation 0, so every peer starts with the same ring. A seed not yet
heard from (no record newer than that placeholder) gets a :class:`Join` each
tick; a seed answers a ``Join`` with its digest, and gossip does the rest, so
a peer not in the seeds joins through any seed. A peer told it is dead (a
partition that healed, a long pause) refutes and comes back; to make sure it
is told, each ``reconnect_every`` ticks a peer also gossips to one dead member
(memberlist's reconnect), and a digest from a member we hold suspect or dead
is answered even unasked.

Tombstones: dead and left records are kept, and gossiped, for
``tombstone_ttl`` seconds of local time after they entered our view as such
(van Renesse et al. keep failed members a while for this reason: forgetting
one lets a stale gossip bring it back to life), then forgotten, as
hashicorp/memberlist reaps a dead node ``GossipToTheDeadTime`` after its
local ``StateChange`` (30 s on a LAN, its push/pull interval: "the interval
after which a node has died that we will still try to gossip to it. This
gives it a chance to refute"); our reconnect probe to the dead stops with
the tombstone too. The window is long
enough: a stale *alive* record of a member that really died can only live
at a running peer until that peer's own timer fires, ``dead_after`` after
the last heartbeat it got, which left the member before it died and so
before our verdict; or until it merges our verdict (dead beats alive at one
incarnation, rule 2), which the push spreads in a round or two. So
``tombstone_ttl >= 2 * dead_after`` (peer.config checks it) outlives every
such record at running peers. Two sources outlive any window: a seed's
placeholder (every fresh peer starts with each seed alive at incarnation 0),
which is why the seeds' tombstones never expire (the seed list bounds
them); and a peer paused longer than the window (SIGSTOP, a suspended VM)
that answers a digest before its first tick: the member comes back as a
zombie, is dead again ``dead_after`` later, and its hosts move there and
back (URLs queued for it are rerouted, none lost). A member really alive
behind a partition that outlasted the window is learnt anew when it heals.

The view holds at most ``max_members`` records (the codec's ``MAX_MEMBERS``,
what a digest can carry): a record or ``Join`` of a new member beyond it is
refused and counted (``too_many_members``), and gets no answer.

Remote input never raises: a message of another ring, a stale ``Join`` or
``Leave``, an unusable record... is dropped and counted in :attr:`dropped`.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType

from ring.errors import RingError
from ring.hashring import HashRing
from ring.messages import MAX_MEMBERS, Digest, Join, Leave, Member, MemberState, Message

__all__ = [
    "IllegalTransition",
    "Membership",
    "TerminationDetector",
    "merge_members",
    "LIVE",
    "MAX_WEIGHT",
]

ALIVE, SUSPECT, DEAD, LEFT = (
    MemberState.ALIVE,
    MemberState.SUSPECT,
    MemberState.DEAD,
    MemberState.LEFT,
)
LIVE = frozenset((ALIVE, SUSPECT))
"""States that own hosts: a suspect keeps its hosts until declared dead, so a
lost packet or two never moves hosts (SWIM's reason for suspicion)."""

_FINAL = {ALIVE: 0, SUSPECT: 0, DEAD: 1, LEFT: 2}
_SOFT = {ALIVE: 0, SUSPECT: 1, DEAD: 0, LEFT: 0}
_MAX_INCARNATION = 2**64 - 2  # a claim at 2**64-1 could not be refuted on the wire
MAX_WEIGHT = 10.0
"""Largest member weight: a member gets ``round(vnodes * weight)`` ring points,
so a gossiped weight of 1e9 would build 256e9 of them. At 10, a full view
(``MAX_MEMBERS``) at the default 256 vnodes is at most 2.6 M points."""


class IllegalTransition(RingError):
    """A local event the membership state machine does not allow (our bug)."""


_EVENTS: dict[tuple[MemberState, str], MemberState] = {
    (ALIVE, "suspect_timer"): SUSPECT,
    (SUSPECT, "dead_timer"): DEAD,
    (ALIVE, "leave"): LEFT,
    (ALIVE, "refute"): ALIVE,
    (LEFT, "refute"): LEFT,
}


def _next(state: MemberState, event: str) -> MemberState:
    try:
        return _EVENTS[state, event]
    except KeyError:
        raise IllegalTransition(f"no transition {event!r} from {state.value!r}") from None


def _key(m: Member) -> tuple[int, int, int, int]:
    return (m.incarnation, _FINAL[m.state], m.heartbeat, _SOFT[m.state])


def _order(m: Member) -> tuple[object, ...]:
    # The tail only breaks ties an honest owner never produces (it bumps its
    # heartbeat whenever its counters change), keeping the merge commutative.
    return (*_key(m), m.address, m.weight, m.idle, m.sent, m.received, m.pages)


def merge_members(a: Member, b: Member) -> Member:
    """The record that wins when two views of one member meet (the table above)."""
    return b if _order(b) > _order(a) else a


def _usable(m: Member) -> bool:
    # The codec lets weight 0.0 through; HashRing refuses it.
    return bool(m.id) and 0.0 < m.weight <= MAX_WEIGHT and m.incarnation <= _MAX_INCARNATION


class Membership:
    """One peer's view of the ring, driven by :meth:`tick` and :meth:`receive`.

    Both return ``[(peer_id, message), ...]`` to send; the edge finds the
    address in ``members()[peer_id].address``. ``incarnation`` should be the
    process start epoch (seconds or ms), so a restart outranks its old life.
    """

    __slots__ = (
        "self_id",
        "ring_name",
        "dropped",
        "_suspect_after",
        "_dead_after",
        "_fanout",
        "_reconnect_every",
        "_rng",
        "_members",
        "_seen",
        "_unheard",
        "_joined",
        "_ticks",
        "_version",
        "_live",
        "_dirty",
        "_rings",
        "_digest",
        "_term",
        "_seeds",
        "_buried",
        "_tombstone_ttl",
        "_max_members",
    )

    def __init__(
        self,
        self_id: str,
        address: str,
        weight: float,
        ring_name: str,
        *,
        seeds: Sequence[tuple[str, str] | tuple[str, str, float]],
        gossip_interval: float,
        suspect_after: float,
        dead_after: float,
        now: float,
        incarnation: int = 0,
        fanout: int = 3,
        reconnect_every: int = 3,
        tombstone_ttl: float = 3600.0,
        max_members: int = MAX_MEMBERS,
        rng: random.Random | None = None,
    ) -> None:
        if not self_id or not ring_name:
            raise ValueError("self_id and ring_name must be non-empty")
        if not 0 < weight <= MAX_WEIGHT:
            raise ValueError(f"weight must be in (0, {MAX_WEIGHT:g}], not {weight!r}")
        if not 0 < gossip_interval <= suspect_after < dead_after:
            raise ValueError(
                "expected 0 < gossip_interval <= suspect_after < dead_after, got "
                f"{gossip_interval!r}, {suspect_after!r}, {dead_after!r}"
            )
        if fanout < 1 or reconnect_every < 1:
            raise ValueError("fanout and reconnect_every must be at least 1")
        if not tombstone_ttl >= 2 * dead_after:
            raise ValueError(f"tombstone_ttl must be at least 2 * dead_after, got {tombstone_ttl!r}")
        if not 1 <= max_members <= MAX_MEMBERS:
            raise ValueError(f"max_members must be in 1..{MAX_MEMBERS}, got {max_members!r}")
        if not 0 <= incarnation <= _MAX_INCARNATION:
            raise ValueError(f"incarnation out of range: {incarnation!r}")
        self.self_id = self_id
        self.ring_name = ring_name
        self.dropped: Counter[str] = Counter()
        """Refused input by reason: other_ring, stale, self_sender, bad_member,
        unknown_sender, unexpected_type, too_many_members."""
        self._tombstone_ttl = tombstone_ttl
        self._max_members = max_members
        # id -> local time its record became dead or left (tombstone_ttl)
        self._buried: dict[str, float] = {}
        self._suspect_after = suspect_after
        self._dead_after = dead_after
        self._fanout = fanout
        self._reconnect_every = reconnect_every
        self._rng = rng if rng is not None else random.Random()
        self._members: dict[str, Member] = {
            self_id: Member(self_id, address, incarnation, ALIVE, float(weight))
        }
        self._seen: dict[str, float] = {self_id: now}
        self._unheard: set[str] = set()
        seed_ids: set[str] = set()
        for seed in seeds:
            sid, saddr = seed[0], seed[1]
            sweight = float(seed[2]) if len(seed) > 2 else 1.0
            if sid in seed_ids:
                raise ValueError(f"seed {sid!r} listed twice")
            if not sid or not 0 < sweight <= MAX_WEIGHT:
                raise ValueError(f"seed {sid!r}: needs an id and a weight in (0, {MAX_WEIGHT:g}]")
            seed_ids.add(sid)
            if sid != self_id:
                self._members[sid] = Member(sid, saddr, 0, ALIVE, sweight)
                self._seen[sid] = now
                self._unheard.add(sid)
        if len(seed_ids | {self_id}) > max_members:
            raise ValueError(f"{len(seed_ids)} seeds: more than max_members ({max_members})")
        self._seeds = frozenset(seed_ids)
        self._joined = self_id in seed_ids or not seed_ids
        self._ticks = 0
        self._version = 0
        self._live = {m.id: m.weight for m in self._members.values()}
        self._dirty = False
        self._rings: dict[int, HashRing] = {}
        self._digest: tuple[Member, ...] | None = None
        self._term = TerminationDetector(gossip_interval)

    # -- views ------------------------------------------------------------------

    @property
    def me(self) -> Member:
        """Our own record, as we gossip it."""
        return self._members[self.self_id]

    @property
    def ring_version(self) -> int:
        """Incremented each time :meth:`live` (ids and weights) differs from before."""
        self._refresh()
        return self._version

    @property
    def joined(self) -> bool:
        """True once a seed has answered (always, for a seed): the ring is real."""
        return self._joined

    def members(self) -> Mapping[str, Member]:
        """Every member ever heard of, self included, by id (read-only)."""
        return MappingProxyType(self._members)

    def live(self) -> dict[str, float]:
        """id -> weight of the members that own hosts (alive and suspect)."""
        self._refresh()
        return dict(self._live)

    def ring(self, vnodes: int) -> HashRing:
        """The hash ring of :meth:`live`; the same object until ``ring_version`` moves."""
        self._refresh()
        ring = self._rings.get(vnodes)
        if ring is None:
            ring = self._rings[vnodes] = HashRing(self._live, vnodes)
        return ring

    def digest(self, want_reply: bool = False) -> Digest:
        """Our whole view as a gossip message."""
        if self._digest is None:
            self._digest = tuple(self._members.values())
        return Digest(self.ring_name, self.self_id, self._digest, want_reply)

    def total_pages(self) -> int:
        """Pages fetched cluster-wide as gossiped (every member, any state): ``max_pages``."""
        return sum(m.pages for m in self._members.values())

    def page_cap(self, max_pages: int, mine: int) -> int:
        """Pages this peer may have requested until the next round (cluster-wide ``max_pages``).

        Each peer's count reaches the others a gossip round late, so a peer
        that only compared the gossiped total with ``max_pages`` could go on
        for a round after the others had used up the rest. Instead each round
        the rest is split: ``mine + ceil(rest / n)``, ``n`` counting this
        peer and the live peers that are not idle (an idle one would waste
        its share). If every view is from the same round the shares add up
        to the rest, so the overshoot is the rounding (< n) plus the
        fetches a stale view lets through, which shrink with the rest.
        """
        others = sum(m.pages for mid, m in self._members.items() if mid != self.self_id)
        rest = max_pages - others - mine
        if rest <= 0:
            return mine
        live = self.live()
        busy = sum(1 for mid in live if mid != self.self_id and not self._members[mid].idle)
        return mine + -(-rest // (busy + 1))

    def cluster_idle(self, now: float) -> bool:
        """The counter method over our view (see :class:`TerminationDetector`)."""
        return self._term.observe(self._members, now)

    # -- our own record ---------------------------------------------------------

    def set_local(
        self,
        *,
        idle: bool | None = None,
        sent: int | None = None,
        received: int | None = None,
        pages: int | None = None,
    ) -> None:
        """Update the counters gossip carries for us (termination, ``max_pages``)."""
        me = self.me
        new = replace(
            me,
            idle=me.idle if idle is None else bool(idle),
            sent=me.sent if sent is None else sent,
            received=me.received if received is None else received,
            pages=me.pages if pages is None else pages,
        )
        if min(new.sent, new.received, new.pages) < 0:
            raise ValueError("counters must be >= 0")
        if new != me:
            # A new heartbeat with every change: two different records with
            # one key would make the merge depend on arrival order.
            self._put(replace(new, heartbeat=me.heartbeat + 1))

    def leave(self, now: float) -> list[tuple[str, Message]]:
        """Mark ourselves left; the :class:`Leave` to send to every live member.

        Keep calling :meth:`tick` while handing off: gossip spreads the leave to
        those the direct message missed and carries our final counters.
        """
        me = self.me
        self._put(replace(me, state=_next(me.state, "leave"), heartbeat=me.heartbeat + 1))
        msg = Leave(self.ring_name, self.self_id, me.incarnation)
        return [(mid, msg) for mid, m in self._members.items() if m.state in LIVE]

    # -- driving ----------------------------------------------------------------

    def tick(self, now: float) -> list[tuple[str, Message]]:
        """One gossip round: heartbeat, timers, then the messages to send."""
        self._ticks += 1
        me = self.me
        self._put(replace(me, heartbeat=me.heartbeat + 1))
        verdict = self._run_timers(now)
        self._expire(now)

        out: list[tuple[str, Message]] = []
        if self.me.state is not LEFT and self._unheard:
            join = Join(self.ring_name, self.self_id, me.address, me.weight, me.incarnation)
            for sid in sorted(self._unheard):
                if self._members[sid].state in LIVE:
                    out.append((sid, join))
        live = [
            mid
            for mid, m in self._members.items()
            if m.state in LIVE and mid != self.self_id and mid not in self._unheard
        ]
        targets = self._rng.sample(live, self._fanout) if len(live) > self._fanout else [*live]
        if self.me.state is not LEFT and self._ticks % self._reconnect_every == 0:
            dead = [mid for mid, m in self._members.items() if m.state is DEAD]
            if dead:
                targets.append(self._rng.choice(dead))
        if targets:
            digest = self.digest(want_reply=True)
            out.extend((mid, digest) for mid in targets)
        if verdict:
            # A death of our own finding goes to every live member at once, as
            # a leave does: until all agree, peers route hosts by different
            # rings. Push only; the fanout above already pulls.
            push = self.digest()
            out.extend((mid, push) for mid in live if mid not in targets)
        return out

    def receive(self, msg: Message, now: float) -> list[tuple[str, Message]]:
        """Merge a :class:`Digest`, :class:`Join` or :class:`Leave`; the replies to send."""
        if not isinstance(msg, (Digest, Join, Leave)):
            self.dropped["unexpected_type"] += 1
            return []
        if msg.ring != self.ring_name:
            self.dropped["other_ring"] += 1
            return []
        if msg.sender == self.self_id:
            self.dropped["self_sender"] += 1
            return []
        if isinstance(msg, Digest):
            return self._on_digest(msg, now)
        if isinstance(msg, Join):
            return self._on_join(msg, now)
        return self._on_leave(msg, now)

    def _on_digest(self, msg: Digest, now: float) -> list[tuple[str, Message]]:
        for r in msg.members:
            self._merge(r, now)
        s = self._members.get(msg.sender)
        if s is None:
            self.dropped["unknown_sender"] += 1
            return []
        # Answer unasked a sender we hold suspect or dead: it must learn it,
        # to refute (rule 4). Its answer to us cannot loop: it refutes first.
        if msg.want_reply or s.state is SUSPECT or s.state is DEAD:
            return [(msg.sender, self.digest())]
        return []

    def _on_join(self, msg: Join, now: float) -> list[tuple[str, Message]]:
        r = Member(msg.sender, msg.address, msg.incarnation, ALIVE, msg.weight)
        if not _usable(r):
            self.dropped["bad_member"] += 1
            return []
        known = self._members.get(msg.sender)
        if known is None and self._full():
            self.dropped["too_many_members"] += 1
            return []
        if known is not None and msg.incarnation < known.incarnation:
            self.dropped["stale"] += 1  # a replay; our answer tells a real one to move on
        else:
            self._merge(r, now)
        self._heard(msg.sender)
        return [(msg.sender, self.digest())]

    def _on_leave(self, msg: Leave, now: float) -> list[tuple[str, Message]]:
        known = self._members.get(msg.sender)
        if known is None:
            self.dropped["unknown_sender"] += 1
            return []
        if msg.incarnation < known.incarnation or msg.incarnation > _MAX_INCARNATION:
            self.dropped["stale"] += 1
            return []
        hb = known.heartbeat if msg.incarnation == known.incarnation else 0
        self._merge(replace(known, incarnation=msg.incarnation, state=LEFT, heartbeat=hb), now)
        return []

    # -- the rules --------------------------------------------------------------

    def _merge(self, r: Member, now: float) -> None:
        mid = r.id
        local = self._members.get(mid)
        if local is r:
            return
        if (
            local is not None
            and r.state is local.state
            and r.incarnation == local.incarnation
            and (r.heartbeat < local.heartbeat or (r.heartbeat == local.heartbeat and r == local))
        ):
            return  # the usual case: old news (about us too: nothing to refute)
        if mid == self.self_id:
            if local is not None and _usable(r) and _key(r) > _key(local):  # local: always ours
                self._refute(r)
            return
        if not _usable(r):
            self.dropped["bad_member"] += 1
            return
        if local is None:
            if self._full():
                self.dropped["too_many_members"] += 1
                return
            self._put(r, now)
            self._bury(r, None, now)
            self._heard(mid)
            return
        if r == local or _order(r) <= _order(local):
            return
        if r.incarnation > local.incarnation or r.heartbeat > local.heartbeat:
            # Fresh evidence of life, timed by *our* clock (van Renesse et al.).
            self._put(r, now)
            self._heard(mid)
        else:
            self._put(r)
        self._bury(r, local, now)

    def _full(self) -> bool:
        return len(self._members) >= self._max_members

    def _bury(self, new: Member, old: Member | None, now: float) -> None:
        """Start (or stop) the tombstone clock of a member whose record just changed."""
        if new.state in LIVE:
            self._buried.pop(new.id, None)
        elif old is None or old.state in LIVE or new.incarnation > old.incarnation:
            self._buried[new.id] = now

    def _expire(self, now: float) -> None:
        """Forget tombstones older than ``tombstone_ttl``, except the seeds' (module docstring)."""
        if not self._buried:
            return
        ttl = self._tombstone_ttl
        for mid, since in list(self._buried.items()):
            if now - since >= ttl and mid not in self._seeds:
                del self._buried[mid], self._members[mid], self._seen[mid]
                self._unheard.discard(mid)
                self._digest = None

    def _heard(self, mid: str) -> None:
        if mid in self._unheard:
            self._unheard.discard(mid)
            self._joined = True

    def _refute(self, claim: Member) -> None:
        me = self.me
        self._put(
            replace(
                me,
                state=_next(me.state, "refute"),
                incarnation=max(claim.incarnation, me.incarnation) + 1,
                heartbeat=me.heartbeat + 1,
            )
        )

    def _run_timers(self, now: float) -> bool:
        verdict = False
        seen = self._seen
        for mid, m in list(self._members.items()):
            if m.state not in LIVE or mid == self.self_id:
                continue
            silent = now - seen[mid]
            if m.state is ALIVE and silent >= self._suspect_after:
                m = replace(m, state=_next(m.state, "suspect_timer"))
                self._put(m)
            if m.state is SUSPECT and silent >= self._dead_after:
                self._put(replace(m, state=_next(m.state, "dead_timer")))
                self._buried[mid] = now
                verdict = True
        return verdict

    def _put(self, new: Member, fresh_at: float | None = None) -> None:
        old = self._members.get(new.id)
        self._members[new.id] = new
        if fresh_at is not None:
            self._seen[new.id] = fresh_at
        self._digest = None
        was_live = old is not None and old.state in LIVE
        is_live = new.state in LIVE
        if was_live != is_live or (is_live and old is not None and old.weight != new.weight):
            self._dirty = True

    def _refresh(self) -> None:
        # Compared, not just flagged: a member declared dead and refuted within
        # one round leaves the live set as it was, and the ring need not move.
        if self._dirty:
            self._dirty = False
            live = {m.id: m.weight for m in self._members.values() if m.state in LIVE}
            if live != self._live:
                self._live = live
                self._version += 1
                self._rings.clear()


class TerminationDetector:
    """The counter method of termination detection over gossiped counters.

    Mattern ("Algorithms for distributed termination detection", Distributed
    Computing 2, 1987): the work is over when every process is idle and
    the messages sent equal those received, read in two successive waves
    with nothing changed in between. Here a wave is a gossip round: it ends
    when every live member has gossiped a *newer* heartbeat than at its start
    and at least one gossip interval has passed. Any change of a counter, an
    idle flag or the live set restarts the count, so two rounds of unchanged,
    balanced counters are needed. A suspect member's heartbeat does not move,
    so nothing terminates until it is refuted or dead.

    Sums run over the live members and those that left: a leaver hands
    everything over, waits for the acks and keeps gossiping its final
    counters for a few rounds before it exits, so its channels stay exact
    (``Outbox.reroute(left=...)`` keeps what it acked). A dead member's
    channels leave the sums on both sides (``Outbox.reroute`` zeroes ours to
    it, ``Inbox.forget`` its to us), so its own last counters are left out.

    **Quiescence fallback.** A batch is acked only once its receiver took
    it, and a peer with an unacked batch is not idle (``ring.forwarder``), so work in
    flight always has a non-idle peer behind it; idleness that holds still,
    with no counter moving, for ``quiet_rounds`` rounds is therefore the end
    too, balanced or not. It covers what the channel bookkeeping cannot make
    exact: a peer that died between taking a batch and acking it, or came
    back with new counters while a resend was on its way. Balanced sums end
    the crawl after ``rounds``; unbalanced ones after ``quiet_rounds``.
    """

    __slots__ = ("_interval", "_need", "_quiet", "_snapshot", "_marks", "_since", "_rounds",
                 "_balanced")

    def __init__(self, interval: float, rounds: int = 2, quiet_rounds: int = 10) -> None:
        self._interval = interval
        self._need = rounds
        self._quiet = max(quiet_rounds, rounds)
        self._snapshot: dict[str, tuple[int, int, int, bool]] | None = None
        self._marks: dict[str, tuple[int, int]] = {}
        self._since = 0.0
        self._rounds = 0
        self._balanced = False

    @property
    def balanced(self) -> bool:
        """Whether the live members' sums of sent and received agreed at the last observation."""
        return self._balanced

    def observe(self, members: Mapping[str, Member], now: float) -> bool:
        """True once the view has been idle and balanced for ``rounds`` rounds
        (or idle and unchanged for ``quiet_rounds``)."""
        sent = received = 0
        marks: dict[str, tuple[int, int]] = {}
        for m in members.values():
            if m.state is not DEAD:
                sent += m.sent
                received += m.received
            if m.state in LIVE:
                if not m.idle:
                    self._snapshot = None
                    return False
                marks[m.id] = (m.incarnation, m.heartbeat)
        if not marks:
            self._snapshot = None
            return False
        self._balanced = sent == received
        # pages too: a member that fetched in between was busy in between
        snapshot = {m.id: (m.sent, m.received, m.pages, m.state in LIVE) for m in members.values()}
        if snapshot != self._snapshot:
            self._snapshot = snapshot
            self._marks = marks
            self._since = now
            self._rounds = 0
            return False
        if (
            self._rounds < self._quiet
            and now - self._since >= self._interval
            and all(marks[k] > self._marks[k] for k in marks)
        ):
            self._rounds += 1
            self._marks = marks
            self._since = now
        return self._rounds >= (self._need if self._balanced else self._quiet)
