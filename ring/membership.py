"""The ring's membership: who is in the cluster, and in what state (pure core).

Protocol: SWIM (Das, Gupta, Motivala, "SWIM: scalable weakly-consistent
infection-style process group membership protocol", DSN 2002), with the
full-state gossip of van Renesse, Minsky, Hayden ("A gossip-style failure
detection service", Middleware 1998) kept as a slow anti-entropy repair
(Demers et al.'s anti-entropy, by summary and delta).
The driver calls :meth:`Membership.tick` every ``gossip_interval`` and
:meth:`Membership.receive` for each decoded message, and sends the
``(peer_id, message)`` pairs both return. Each round a peer:

- **probes** two members with a :class:`~ring.messages.Ping`: its successor
  in the sorted ids of the live members (so every member is probed every
  round by someone, whatever the peers' clocks, which bounds the time to a
  first failed probe by one round) and the next one of a shuffled
  round-robin list (SWIM 4.3: every member within N-1 rounds, and the
  random contacts that spread the piggybacked news). No :class:`PingAck`
  within a round: ``indirect`` others are asked to probe it
  (:class:`PingReq`, SWIM 3.1), and again at half of ``suspect_after``;
  no answer either way ``suspect_after``
  after the ping: suspect. Our own suspicion not refuted ``dead_after``
  after the ping: dead, and the verdict is pushed to every live member at
  once (as a leave is), so a death is everywhere about one latency later.
- **piggybacks** changed records only: a record enters the queue when it
  says something new about membership (a new member, state, incarnation,
  address, weight or idle flag; not a mere heartbeat or counter) and rides
  on our next pings, ping-reqs and acks, fewest-sent first, for
  ``ceil(retransmit_mult * log10(N + 1))`` sends (SWIM 4.1's lambda log N;
  the formula is hashicorp/memberlist's). Each probe message also carries
  the sender's own record, so counters and heartbeats reach the members it
  talks to, and the record of a receiver we hold suspect or dead, so it
  learns it and refutes.
- **repairs** every ``ceil(D / SYNC_MEMBERS)`` rounds (D: the records our
  digest holds; 8 rounds at 256 peers) by a :class:`Sync` to ONE random
  live member: our ``(id, incarnation, state, heartbeat)`` of each member
  (23 B each against a record's 51), answered by a :class:`Digest` of the
  records that beat ours (a pull; memberlist's push/pull sends both whole
  views). The summary is O(N), its period O(N), so its cost per peer is
  flat; it brings the heartbeats and counters that termination and
  ``max_pages`` read, which are not news (to an asker that lacks members,
  those members alone: the heartbeats wait for its next sync). Once in, a
  peer also syncs with one seed not heard from every ``JOIN_EVERY_AFTER``
  rounds and greets ``HELLO_SEEDS`` of them a round with an untimed ping.

A suspicion we only *heard* of (not ours) turns dead by our own timer only
``dead_after + gossip_interval * ceil(log2 N)`` after we heard it: the
suspector's verdict normally comes first; this backup covers a suspector
that died too, and grows with log N because the refutation it waits for
spreads in O(log N) rounds (Lifeguard's scaling, Dadgar et al., "Lifeguard:
local health awareness for more accurate failure detection", 2018). The
probe's own wait does not grow with N: a probe is one hop (three for an
indirect one), not an epidemic.

Why heartbeat gossip alone is gone: every member in every digest is 67 B x N
per message; at 256 peers that was 206 KB/s a peer, and a start-up Join to
every seed cost 1.16 GB (docs/membership.md has today's figures).

Merging two records of one member (the order is a total order, so merging
is a commutative, associative, idempotent join and all views converge)::

    key = (incarnation, FINAL[state], SOFT[state], heartbeat)   greater wins;
                                                                ties: the rest
    state     FINAL  SOFT   meaning
    alive       0     0     answers probes
    suspect     0     1     "no answer since this heartbeat"
    dead        1     0     a suspicion not refuted in time: owns no hosts
    left        2     0     announced a graceful leave: owns no hosts

    rule                                              why
    1 higher incarnation wins, whatever the states    a restarted peer (its start
                                                      epoch is its incarnation) or
                                                      a refuting one comes back alive
    2 same incarnation: dead and left are sticky,     a verdict must not be undone by a
      left beats dead                                 stale record; a leave is not
                                                      a crash
    3 same incarnation: suspect beats alive,          SWIM's order: only its subject clears
      whatever the heartbeats; one state: the         a suspicion. Heartbeats travel with
      higher heartbeat wins                           the subject's own messages, so a peer
                                                      that suspects holds an older one than
                                                      others: with "newer heartbeat wins"
                                                      any stale copy undid the suspicion
    4 a record about *us* that beats our own is       the SWIM refutation; we never
      refuted: incarnation := its incarnation + 1     adopt a verdict on ourselves

Local events (anything else raises :class:`IllegalTransition`, our bug)::

    from     event          to       when
    alive    probe_timeout  suspect  no ack, direct or indirect, suspect_after after a ping
    suspect  dead_timer     dead     not refuted dead_after after the ping (backup:
                                     dead_after + interval * ceil(log2 N) after hearing it)
    alive    leave          left     leave(): self only, once
    alive    refute         alive    rule 4 (self only)
    left     refute         left     rule 4 while handing off after a leave

Every change of a member's state in our view (and a restart) is also an
event, :class:`MemberEvent` (who, the new state, :class:`ChangeReason`), for
the driver to log; :meth:`Membership.drain_events` hands them over.

Joining: the seeds (``[[peer]]``) start in the view as ``alive`` at
incarnation 0, so every peer starts with the same ring. Until a member has
answered us, every other round we send a :class:`Join` to ``join_seeds``
random seeds not yet heard from (not to all of them: each answer is a full
digest, 13 KB at 256 peers); once answered, a :class:`Sync` to one such
seed every ``JOIN_EVERY_AFTER`` rounds, so two groups of a rolling start
that joined each other cannot stay apart, and a greeting (an untimed ping,
backing off: ``HELLO_SEEDS``) to a few. A seed not yet heard from is not
probed for ``seed_grace`` seconds after our start: a rolling start longer
than ``dead_after`` does not declare the seeds that have not started dead.
After it, a seed never heard from is probed like anyone and dies if it
never answers. The seeds' placeholders are left out of digests (every peer
has them). A peer told it is dead (a partition that healed, a long pause)
refutes and comes back; to make sure it is told, each ``reconnect_every``
ticks a peer pings one dead member with its verdict (memberlist's
reconnect), and a message from a member we hold suspect or dead is answered
with its record.

Tombstones: dead and left records are kept, and gossiped in digests, for
``tombstone_ttl`` seconds of local time after they entered our view as such
(van Renesse et al. keep failed members a while: forgetting one lets a
stale gossip bring it back to life), then forgotten, as
hashicorp/memberlist reaps a dead node ``GossipToTheDeadTime`` after its
local ``StateChange``. ``tombstone_ttl >= 2 * dead_after`` (peer.core.config
checks it) outlives every stale *alive* record at a running peer: such a
record lives only until that peer's own probes time out or it merges the
verdict. The seeds' tombstones never expire (every fresh peer starts with
each seed alive at incarnation 0; the seed list bounds them). A peer paused
past the window comes back as a zombie that dies again.

The view holds at most ``max_members`` records (the codec's ``MAX_MEMBERS``,
what a digest can carry): a record or ``Join`` of a new member beyond it is
refused and counted (``too_many_members``), and gets no answer. At most
``MAX_RELAYS`` ping-reqs are relayed at a time (``relay_full``), and at
most ``MAX_EVENTS`` events wait to be drained (``events_overflow``).

Remote input never raises: a message of another ring, a stale ``Join`` or
``Leave``, an unusable record... is dropped and counted in :attr:`dropped`.
"""

from __future__ import annotations

import heapq
import math
import random
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from operator import itemgetter
from types import MappingProxyType
from typing import Any

from ring.errors import RingError
from ring.hashring import HashRing
from ring.messages import (
    MAX_MEMBERS,
    MAX_UPDATES,
    Digest,
    Join,
    Leave,
    Member,
    MemberState,
    Message,
    Ping,
    PingAck,
    PingReq,
    Sync,
)

__all__ = [
    "IllegalTransition",
    "Membership",
    "MemberEvent",
    "ChangeReason",
    "TerminationDetector",
    "merge_members",
    "retransmit_limit",
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

PIGGYBACK = 12
"""Queued records a probe message carries besides the sender's and the
receiver's own: about 600 B, under a 1,500 B MTU like memberlist's packets,
and the rate that spreads a 256-peer cold start (bench_membership)."""
SYNC_MEMBERS = 32
"""Members per round of anti-entropy: a Sync every ceil(D / 32) rounds, so a
peer sends about 32 summary entries a round whatever N is. At 256 peers, 10%
loss: 4.0 KB/s a peer and a cold start converged in 15 s; at 16, 2.6 KB/s
and 21 s (bench_membership)."""
PUSH_RECORDS = 4
"""A digest of at most this many records that asks no reply is a push (our
verdicts of one round, a "you are suspect"): its news is piggybacked on."""
JOIN_EVERY = 2
"""Rounds between Join attempts until one is answered: an answer takes a round trip."""
JOIN_EVERY_AFTER = 8
"""Rounds between syncs with a seed not heard from once we are in (no more
Joins: each answer is the whole view, 13 MB of a 256-peer cold start's 23).
They bridge two groups of a rolling start that joined each other; a ping
instead, answered with a few records, left the cold start unconverged 8 s
longer."""
HELLO_SEEDS = 2
"""Seeds not heard from that a peer pings each round once it is in, with no
probe timer: the ack brings the seed's real record, the ping ours, so a seed
never heard from costs a ping, not a suspicion (``seed_grace`` still holds).
Without them the last records of a cold start came by anti-entropy, every
``ceil(D / SYNC_MEMBERS)`` rounds (8 at 256 peers), and one lost answer in
five (10% loss each way) cost a straggler 4 s: at 256 peers, 10% loss, the
last 1% of the pairs took 6 of the 15 s and 5.6 of the 16.7 MB; greeting 2
a round, 10 s and 12.0 MB. 1 a round was slower, 3 no faster and less
steady (bench_membership, docs/membership.md)."""
HELLO_DENSE, HELLO_BACKOFF = 4, 16
"""A seed not heard from is greeted in each of ``HELLO_DENSE`` rounds, then
after 2, 4, 8, then every ``HELLO_BACKOFF`` rounds: 13 times in the default
60 s of grace. A real DEALER queues what it sends to an address nobody
listens on (zmq delivers it on connect), so without a backoff a seed that
started last would find 240 pings from every peer waiting. No seed of a
256-peer cold start was greeted more than 4 times by one peer; doubling the
waits from the first greeting on, every peer had heard of every seed 1.1 s
later (bench_membership)."""
MAX_RELAYS = 64
"""Ping-reqs relayed at once; each costs a dict entry until its ack or suspect_after."""
MAX_EVENTS = 10_000
"""Events kept until :meth:`Membership.drain_events`; the driver drains every call."""
_EPS = 1e-9  # timers compare sums of floats


class _Probe:
    """One probe in flight: whom, since when, and how far it has gone (mutable)."""

    __slots__ = ("target", "sent", "stage")

    def __init__(self, target: str, sent: float) -> None:
        self.target = target
        self.sent = sent
        self.stage = 0  # 0 pinged, 1 pinged again and asked others, 2 pinged a third time


class IllegalTransition(RingError):
    """A local event the membership state machine does not allow (our bug)."""


class ChangeReason(StrEnum):
    """Why a member's state changed in our view (:class:`MemberEvent`)."""

    JOINED = "joined"  # first heard of: a Join, or its first real record
    SILENCE = "silence"  # our own probe went unanswered (suspect), then our timer (dead)
    REPORTED = "reported"  # another peer's suspicion or verdict reached us
    REFUTED = "refuted"  # a suspect or dead member proved alive (it, or we about us)
    RESTARTED = "restarted"  # a live member came back at a higher incarnation
    LEFT = "left"  # announced a graceful leave
    EXPIRED = "expired"  # a tombstone outlived tombstone_ttl and was forgotten


@dataclass(frozen=True, slots=True)
class MemberEvent:
    """One membership change as this peer saw it: ``id`` is now ``state`` because ``reason``."""

    at: float
    id: str
    state: MemberState
    reason: ChangeReason
    incarnation: int
    previous: MemberState | None = None  # None: first heard of


_EVENTS: dict[tuple[MemberState, str], MemberState] = {
    (ALIVE, "probe_timeout"): SUSPECT,
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
    return (m.incarnation, _FINAL[m.state], _SOFT[m.state], m.heartbeat)


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


def _news(old: Member, new: Member) -> bool:
    """Whether ``new`` says something about membership ``old`` did not (worth piggybacking)."""
    return (
        old.state is not new.state
        or old.incarnation != new.incarnation
        or old.address != new.address
        or old.weight != new.weight
        or old.idle != new.idle
    )


def retransmit_limit(n: int, mult: int) -> int:
    """Sends of one queued record at ``n`` members: SWIM's lambda log N (memberlist's form)."""
    return max(1, mult * math.ceil(math.log10(n + 1)))


class Membership:
    """One peer's view of the ring, driven by :meth:`tick` and :meth:`receive`.

    Both return ``[(peer_id, message), ...]`` to send; the edge finds the
    address in ``members()[peer_id].address``. ``incarnation`` should be the
    process start epoch (seconds or ms), so a restart outranks its old life.
    After each call, :meth:`drain_events` gives the membership changes to log.
    """

    __slots__ = (
        "self_id",
        "ring_name",
        "dropped",
        "_interval",
        "_suspect_after",
        "_dead_after",
        "_reconnect_every",
        "_seed_grace",
        "_join_seeds",
        "_indirect",
        "_mult",
        "_rng",
        "_start",
        "_members",
        "_unheard",
        "_joined",
        "_contacted",
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
        "_queue",
        "_suspects",
        "_probes",
        "_relays",
        "_seq",
        "_epoch",
        "_sorted",
        "_rr",
        "_events",
        "_refuted",
        "_next_sync",
        "_sync_partner",
        "_hello",
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
        reconnect_every: int = 3,
        tombstone_ttl: float = 3600.0,
        max_members: int = MAX_MEMBERS,
        seed_grace: float = 60.0,
        join_seeds: int = 3,
        indirect: int = 3,
        retransmit_mult: int = 4,
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
        if reconnect_every < 1 or join_seeds < 1 or indirect < 0 or retransmit_mult < 1:
            raise ValueError(
                "reconnect_every, join_seeds and retransmit_mult must be at least 1, indirect >= 0")
        if not seed_grace >= 0:
            raise ValueError(f"seed_grace must be >= 0, got {seed_grace!r}")
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
        unknown_sender, unexpected_type, too_many_members, misdirected,
        relay_full, events_overflow."""
        self._interval = gossip_interval
        self._suspect_after = suspect_after
        self._dead_after = dead_after
        self._reconnect_every = reconnect_every
        self._seed_grace = seed_grace
        self._join_seeds = join_seeds
        self._indirect = indirect
        self._mult = retransmit_mult
        self._tombstone_ttl = tombstone_ttl
        self._max_members = max_members
        self._rng = rng if rng is not None else random.Random()
        self._start = now
        # id -> local time its record became dead or left (tombstone_ttl)
        self._buried: dict[str, float] = {}
        self._members: dict[str, Member] = {
            self_id: Member(self_id, address, incarnation, ALIVE, float(weight))
        }
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
                self._unheard.add(sid)
        if len(seed_ids | {self_id}) > max_members:
            raise ValueError(f"{len(seed_ids)} seeds: more than max_members ({max_members})")
        self._seeds = frozenset(seed_ids)
        self._joined = self_id in seed_ids or not seed_ids
        self._contacted = not self._unheard
        self._ticks = 0
        self._version = 0
        self._live = {m.id: m.weight for m in self._members.values()}
        self._dirty = False
        self._rings: dict[int, HashRing] = {}
        self._digest: tuple[Member, ...] | None = None
        self._term = TerminationDetector(gossip_interval)
        # id -> transmissions so far of its current record (the piggyback queue)
        self._queue: dict[str, int] = {}
        # id -> (local time the suspicion began here, whether it is ours)
        self._suspects: dict[str, tuple[float, bool]] = {}
        self._probes: dict[int, _Probe] = {}
        # our seq -> (asker, asker's seq, target, at)
        self._relays: dict[int, tuple[str, int, str, float]] = {}
        self._seq = 0
        self._epoch = 0  # moves with every change of the probe candidates
        self._sorted: tuple[int, bool, list[str]] | None = None
        self._rr: list[str] = []
        self._events: list[MemberEvent] = []
        self._refuted = False
        self._next_sync = 0
        self._sync_partner = ""
        # seed not heard from -> (tick of its next greeting, greetings so far)
        self._hello: dict[str, tuple[int, int]] = {}

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
        """Our whole view as a gossip message, less the seeds' placeholders (every peer has them)."""
        if self._digest is None:
            unheard = self._unheard
            self._digest = tuple(
                m
                for m in self._members.values()
                if not (m.id in unheard and m.incarnation == 0 and m.heartbeat == 0
                        and m.state is ALIVE)
            )
        return Digest(self.ring_name, self.self_id, self._digest, want_reply)

    def drain_events(self) -> list[MemberEvent]:
        """The membership changes seen since the last call, oldest first (for the log)."""
        out, self._events = self._events, []
        return out

    def retransmits(self) -> int:
        """Sends of each queued record at today's view size (:func:`retransmit_limit`)."""
        return retransmit_limit(len(self._members), self._mult)

    def pending_updates(self) -> int:
        """Records still being piggybacked."""
        return len(self._queue)

    def total_pages(self) -> int:
        """Pages fetched cluster-wide as gossiped (every member, any state): ``max_pages``."""
        return sum(m.pages for m in self._members.values())

    def page_cap(self, max_pages: int, mine: int) -> int:
        """Pages this peer may have requested until the next round (cluster-wide ``max_pages``).

        Each peer's count reaches the others late, so a peer that only
        compared the gossiped total with ``max_pages`` could go on after the
        others had used up the rest. Instead each round the rest is split:
        ``mine + ceil(rest / n)``, ``n`` counting this peer and the live
        peers that are not idle (an idle one would waste its share).
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
            self._put(replace(new, heartbeat=me.heartbeat + 1), self._start)

    def leave(self, now: float) -> list[tuple[str, Message]]:
        """Mark ourselves left; the :class:`Leave` to send to every live member.

        Keep calling :meth:`tick` while handing off: gossip spreads the leave to
        those the direct message missed and carries our final counters.
        """
        me = self.me
        self._put(replace(me, state=_next(me.state, "leave"), heartbeat=me.heartbeat + 1), now,
                  ChangeReason.LEFT)
        msg = Leave(self.ring_name, self.self_id, me.incarnation)
        return [(mid, msg) for mid, m in self._members.items()
                if m.state in LIVE and mid != self.self_id]

    # -- driving ----------------------------------------------------------------

    def tick(self, now: float) -> list[tuple[str, Message]]:
        """One round: heartbeat, timers, then the messages to send."""
        self._ticks += 1
        me = self.me
        self._put(replace(me, heartbeat=me.heartbeat + 1), now)
        out: list[tuple[str, Message]] = []
        verdicts = self._run_timers(now, out)
        self._expire(now)
        active = self.me.state is not LEFT

        every = JOIN_EVERY if not self._contacted else JOIN_EVERY_AFTER
        if active and self._ticks % every == 1 % every:
            self._joins(out)
        if active and self._contacted and self._unheard:
            self._hellos(now, out)
        candidates = self._candidates(now)
        for target in self._probe_targets(candidates):
            out.append((target, self._ping(target, now)))
        if self._ticks >= self._next_sync and candidates:
            # Anti-entropy with one peer (memberlist's push/pull): repairs
            # what piggybacking missed and carries heartbeats and counters.
            # Its period follows the digest's size, not N: at a cold start the
            # digests are short (placeholders are left out) and go every round,
            # so the seeds learn each other in a few rounds for little.
            sync = self._sync()
            self._next_sync = self._ticks + max(1, math.ceil(len(sync.summary) / SYNC_MEMBERS))
            self._sync_partner = self._rng.choice(candidates)
            out.append((self._sync_partner, sync))
        if active and self._ticks % self._reconnect_every == 0:
            dead = [m for m in self._members.values() if m.state is DEAD]
            if dead:
                d = self._rng.choice(dead)
                out.append((d.id, Ping(self.ring_name, self.self_id, self._next_seq(), d.id,
                                       (self.me, d))))
        if verdicts:
            # A death of our own finding goes to every live member at once, as
            # a leave does: until all agree, peers route hosts by different rings.
            push = Digest(self.ring_name, self.self_id, tuple(verdicts))
            out.extend((mid, push) for mid, m in self._members.items()
                       if m.state in LIVE and mid != self.self_id)
        return out

    def receive(self, msg: Message, now: float) -> list[tuple[str, Message]]:
        """Merge a Digest, Join, Leave, Ping, PingReq or PingAck; the replies to send."""
        handler = _HANDLERS.get(type(msg))
        if handler is None:
            self.dropped["unexpected_type"] += 1
            return []
        if msg.ring != self.ring_name:
            self.dropped["other_ring"] += 1
            return []
        sender: str = msg.sender
        if sender == self.self_id:
            self.dropped["self_sender"] += 1
            return []
        self._refuted = False
        out: list[tuple[str, Message]] = handler(self, msg, now)
        if self._refuted and sender in self._members and not any(d == sender for d, _ in out):
            # Tell whoever said we were suspect or dead at once; the queue tells the rest.
            out.append((sender, Digest(self.ring_name, self.self_id, (self.me,))))
        return out

    # -- handlers ---------------------------------------------------------------

    def _on_digest(self, msg: Digest, now: float) -> list[tuple[str, Message]]:
        # A full view (a Join's answer, anti-entropy) spreads itself: its news
        # is not queued, or a cold start of N peers queued N records at each,
        # each for lambda log N sends (at 256 peers, half the start-up bytes).
        # A short one (a verdict pushed, a "you are suspect") is news.
        # (A Sync's answer can be short too: it is the answer, not news.)
        spread = (not msg.want_reply and len(msg.members) <= PUSH_RECORDS
                  and msg.sender != self._sync_partner)
        for r in msg.members:
            self._merge(r, now, spread)
        s = self._members.get(msg.sender)
        if s is None:
            self.dropped["unknown_sender"] += 1
            return []
        self._contact()
        if msg.want_reply:
            # Push-pull: answer only what beats the sender's (after the merge,
            # every record of ours that differs from its copy is newer). At
            # a 256-peer cold start the full answer was 40% of the bytes.
            theirs = {r.id: r for r in msg.members}
            newer = tuple(m for m in self.digest().members if theirs.get(m.id) != m)
            return [(msg.sender, Digest(self.ring_name, self.self_id, newer))]
        # A sender we hold suspect or dead must learn it, to refute (rule 4).
        if s.state is SUSPECT or s.state is DEAD:
            return [(msg.sender, Digest(self.ring_name, self.self_id, (self.me, s)))]
        return []

    def _on_sync(self, msg: Sync, now: float) -> list[tuple[str, Message]]:
        if msg.sender not in self._members:
            self.dropped["unknown_sender"] += 1
            return []
        theirs = {e[0]: (e[1], _FINAL[e[2]], _SOFT[e[2]], e[3]) for e in msg.summary}
        news: list[Member] = []
        beats: list[Member] = []
        for m in self.digest().members:
            k = theirs.get(m.id)
            key = _key(m)
            if k is None or key[:3] > k[:3]:
                news.append(m)  # a member, incarnation or state the asker lacks
            elif key > k:
                beats.append(m)  # the same member, state and incarnation, a newer heartbeat
        # An asker that lacks members gets those alone: the heartbeats and
        # counters (termination, max_pages) come with its next sync, by then
        # one with nothing else to say. At a 256-peer cold start with 10%
        # loss, 131 k of the answers' 200 k records were heartbeats only:
        # 6.7 of 21.6 MB (bench_membership).
        newer = tuple(news) if news else tuple(beats)
        return [(msg.sender, Digest(self.ring_name, self.self_id, newer))] if newer else []

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

    def _on_ping(self, msg: Ping, now: float) -> list[tuple[str, Message]]:
        for r in msg.updates:
            self._merge(r, now)
        if msg.target != self.self_id:
            self.dropped["misdirected"] += 1  # meant for whoever had our address before
            return []
        if msg.sender not in self._members:
            self.dropped["unknown_sender"] += 1
            return []
        ack = PingAck(self.ring_name, self.self_id, msg.seq, self.self_id,
                      self._updates(msg.sender))
        return [(msg.sender, ack)]

    def _on_ping_req(self, msg: PingReq, now: float) -> list[tuple[str, Message]]:
        for r in msg.updates:
            self._merge(r, now)
        if msg.sender not in self._members:
            self.dropped["unknown_sender"] += 1
            return []
        target = self._members.get(msg.target)
        if msg.target == self.self_id:
            return [(msg.sender, PingAck(self.ring_name, self.self_id, msg.seq, self.self_id,
                                         self._updates(msg.sender)))]
        if target is None or target.state not in LIVE:
            return []  # nothing to ask: our view holds it gone already
        if len(self._relays) >= MAX_RELAYS:
            self.dropped["relay_full"] += 1
            return []
        seq = self._next_seq()
        self._relays[seq] = (msg.sender, msg.seq, msg.target, now)
        return [(msg.target, Ping(self.ring_name, self.self_id, seq, msg.target,
                                  self._updates(msg.target)))]

    def _on_ack(self, msg: PingAck, now: float) -> list[tuple[str, Message]]:
        for r in msg.updates:
            self._merge(r, now)
        if msg.sender in self._members:
            self._contact()
        probe = self._probes.get(msg.seq)
        if probe is not None and probe.target == msg.target:
            del self._probes[msg.seq]
            return []
        relay = self._relays.get(msg.seq)
        if relay is not None and relay[2] == msg.target == msg.sender:
            del self._relays[msg.seq]
            asker, seq = relay[0], relay[1]
            if asker in self._members:
                return [(asker, PingAck(self.ring_name, self.self_id, seq, msg.target,
                                        self._updates(asker)))]
        return []  # late: the probe has timed out, or a reconnect ping's answer

    # -- probing ----------------------------------------------------------------

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _ask(self, target: str, seq: int, now: float, out: list[tuple[str, Message]]) -> None:
        """SWIM's ping-req: ``indirect`` random others probe ``target`` for probe ``seq``."""
        helpers = [c for c in self._candidates(now) if c != target]
        for h in self._rng.sample(helpers, min(self._indirect, len(helpers))):
            out.append((h, PingReq(self.ring_name, self.self_id, seq, target, self._updates(h))))

    def _ping(self, target: str, now: float) -> Ping:
        seq = self._next_seq()
        self._probes[seq] = _Probe(target, now)
        return Ping(self.ring_name, self.self_id, seq, target, self._updates(target))

    def _candidates(self, now: float) -> list[str]:
        """Sorted ids of the members we probe: live, not us, and heard of (or past seed_grace)."""
        grace_over = now - self._start >= self._seed_grace
        cached = self._sorted
        if cached is None or cached[0] != self._epoch or cached[1] != grace_over:
            unheard = set() if grace_over else self._unheard
            ids = sorted(mid for mid, m in self._members.items()
                         if m.state in LIVE and mid != self.self_id and mid not in unheard)
            self._sorted = cached = (self._epoch, grace_over, ids)
        return cached[2]

    def _probe_targets(self, candidates: list[str]) -> list[str]:
        if not candidates:
            return []
        probing = {p.target for p in self._probes.values()}
        # Successor: the first id after ours, wrapping (every member has one prober a round).
        i = bisect_right(candidates, self.self_id)
        succ = candidates[i % len(candidates)]
        targets = [] if succ in probing else [succ]
        live = self._members
        for _ in range(2):
            while self._rr:
                t = self._rr.pop()
                m = live.get(t)
                if m is not None and m.state in LIVE and t != succ and t not in probing:
                    targets.append(t)
                    return targets
            if len(candidates) <= 1:
                break
            self._rr = [c for c in candidates if c != succ]
            self._rng.shuffle(self._rr)
        return targets

    def _updates(self, to: str) -> tuple[Member, ...]:
        """What a probe message to ``to`` carries: our record, ``to``'s if it is a
        suspect or dead, and the queued records that have been sent least."""
        recs = [self.me]
        m = self._members.get(to)
        if m is not None and (m.state is SUSPECT or m.state is DEAD):
            recs.append(m)
        queue = self._queue
        if queue:
            limit = retransmit_limit(len(self._members), self._mult)
            room = min(PIGGYBACK, MAX_UPDATES - len(recs))
            picks = (list(queue.items()) if len(queue) <= room
                     else heapq.nsmallest(room, queue.items(), key=itemgetter(1)))
            members = self._members
            for mid, sent in picks:
                if sent + 1 >= limit:
                    del queue[mid]
                else:
                    queue[mid] = sent + 1
                if mid != self.self_id and mid != to:
                    recs.append(members[mid])
        return tuple(recs)

    def _joins(self, out: list[tuple[str, Message]]) -> None:
        unheard = [sid for sid in sorted(self._unheard) if self._members[sid].state in LIVE]
        if not unheard:
            return
        if self._contacted:
            # In already: a Sync, whose answer is only what we lack (a Join's
            # is the whole view: 13 MB of a 256-peer cold start's 23 went so).
            sid = self._rng.choice(unheard)
            out.append((sid, self._sync()))
            return
        me = self.me
        join = Join(self.ring_name, self.self_id, me.address, me.weight, me.incarnation)
        for sid in self._rng.sample(unheard, min(self._join_seeds, len(unheard))):
            out.append((sid, join))

    def _hellos(self, now: float, out: list[tuple[str, Message]]) -> None:
        """Ping ``HELLO_SEEDS`` random seeds not heard from, untimed (see HELLO_SEEDS)."""
        if now - self._start >= self._seed_grace:
            return  # past the grace they are probed like anyone
        members, hello, ticks = self._members, self._hello, self._ticks
        due = [sid for sid in sorted(self._unheard)
               if members[sid].state is ALIVE and hello.get(sid, (0, 0))[0] <= ticks]
        for sid in self._rng.sample(due, min(HELLO_SEEDS, len(due))):
            k = hello.get(sid, (0, 0))[1] + 1  # this greeting's number
            wait = 1 if k < HELLO_DENSE else min(2 ** (k - HELLO_DENSE + 1), HELLO_BACKOFF)
            hello[sid] = (ticks + wait, k)
            out.append((sid, Ping(self.ring_name, self.self_id, self._next_seq(), sid,
                                  self._updates(sid))))

    def _sync(self) -> Sync:
        summary = tuple((m.id, m.incarnation, m.state, m.heartbeat) for m in self.digest().members)
        return Sync(self.ring_name, self.self_id, summary)

    def _contact(self) -> None:
        self._contacted = True
        self._joined = True

    # -- the rules --------------------------------------------------------------

    def _merge(self, r: Member, now: float, spread: bool = True) -> None:
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
            # The usual case: old news (about us too: nothing to refute). If we
            # are spreading it, the sender knew it already: Demers et al.'s
            # rumor mongering with feedback ("Epidemic algorithms for replicated
            # database maintenance", PODC 1987) counts that as a send, so a
            # rumor everyone has stops early instead of riding lambda log N more.
            sent = self._queue.get(mid)
            if sent is not None and r.heartbeat == local.heartbeat:
                if sent + 1 >= retransmit_limit(len(self._members), self._mult):
                    del self._queue[mid]
                else:
                    self._queue[mid] = sent + 1
            return
        if mid == self.self_id:
            if local is not None and _usable(r) and _key(r) > _key(local):  # local: always ours
                self._refute(r, now)
            return
        if not _usable(r):
            self.dropped["bad_member"] += 1
            return
        if local is None:
            if self._full():
                self.dropped["too_many_members"] += 1
                return
            self._put(r, now, spread=spread)
            self._heard(mid)
            return
        if r == local or _order(r) <= _order(local):
            return
        self._put(r, now, spread=spread)
        if r.incarnation > local.incarnation or r.heartbeat > local.heartbeat:
            self._heard(mid)

    def _full(self) -> bool:
        return len(self._members) >= self._max_members

    def _expire(self, now: float) -> None:
        """Forget tombstones older than ``tombstone_ttl``, except the seeds' (module docstring)."""
        for seq, (_, _, _, at) in list(self._relays.items()):
            if now - at >= self._suspect_after:
                del self._relays[seq]
        if not self._buried:
            return
        ttl = self._tombstone_ttl
        for mid, since in list(self._buried.items()):
            if now - since >= ttl and mid not in self._seeds:
                gone = self._members.pop(mid)
                del self._buried[mid]
                self._unheard.discard(mid)
                self._queue.pop(mid, None)
                self._digest = None
                self._epoch += 1
                self._event(now, gone, ChangeReason.EXPIRED, gone.state)

    def _heard(self, mid: str) -> None:
        if mid in self._unheard:
            self._unheard.discard(mid)
            self._hello.pop(mid, None)
            self._joined = True
            self._digest = None
            self._epoch += 1

    def _refute(self, claim: Member, now: float) -> None:
        me = self.me
        self._refuted = True
        self._put(
            replace(
                me,
                state=_next(me.state, "refute"),
                incarnation=max(claim.incarnation, me.incarnation) + 1,
                heartbeat=me.heartbeat + 1,
            ),
            now,
            ChangeReason.REFUTED,
        )

    def _run_timers(self, now: float, out: list[tuple[str, Message]]) -> list[Member]:
        members = self._members
        for seq, probe in list(self._probes.items()):
            target = probe.target
            m = members.get(target)
            if m is None or m.state not in LIVE:
                del self._probes[seq]
                continue
            age = now - probe.sent
            if age >= self._suspect_after - _EPS:
                del self._probes[seq]
                if m.state is ALIVE:
                    self._put(replace(m, state=_next(m.state, "probe_timeout")), now,
                              ChangeReason.SILENCE, ours=True)
            elif probe.stage == 0 and age >= self._interval / 2:
                # Unanswered for a round: ping again (same seq) and ask
                # ``indirect`` others (SWIM 3.1); at half of suspect_after, ping
                # and ask once more. At 10% loss one ping and one ask fail 0.8%
                # of probes (19% x 0.34^3); three pings and two asks, 0.001%
                # (0.19^3 x 0.34^6). With one ask, a 256-peer cold start
                # suspected 0-7 running peers, and their refutations held up
                # convergence by up to 3 s; with two, none in eight starts.
                probe.stage = 1
                out.append((target, Ping(self.ring_name, self.self_id, seq, target,
                                         self._updates(target))))
                self._ask(target, seq, now, out)
            elif probe.stage == 1 and age >= self._suspect_after / 2:
                probe.stage = 2
                out.append((target, Ping(self.ring_name, self.self_id, seq, target,
                                         self._updates(target))))
                self._ask(target, seq, now, out)
        verdicts: list[Member] = []
        if not self._suspects:
            return verdicts
        # The suspector's clock started at suspect_after past the ping; the
        # backup is longer by log N rounds (module docstring).
        ours_wait = self._dead_after - self._suspect_after
        backup = self._dead_after + self._interval * math.ceil(math.log2(max(2, len(members))))
        for mid, (since, ours) in list(self._suspects.items()):
            m = members.get(mid)
            if m is None or m.state is not SUSPECT:
                self._suspects.pop(mid, None)
                continue
            if now - since >= (ours_wait if ours else backup) - _EPS:
                dead = replace(m, state=_next(m.state, "dead_timer"))
                self._put(dead, now, ChangeReason.SILENCE)
                verdicts.append(dead)
            elif ours:
                # Tell it every round: one lost message must not cost a member its hosts.
                out.append((mid, Ping(self.ring_name, self.self_id, self._next_seq(), mid,
                                      self._updates(mid))))
        return verdicts

    def _put(self, new: Member, now: float, reason: ChangeReason | None = None,
             ours: bool = False, spread: bool = True) -> None:
        mid = new.id
        old = self._members.get(mid)
        self._members[mid] = new
        self._digest = None
        if old is not None and not _news(old, new):
            return  # a heartbeat or counters: not worth a piggyback (the fast path)
        first = old is None or (mid in self._unheard and old.incarnation == 0
                                and old.heartbeat == 0)
        if first and old is not None and new.state is ALIVE and new.address == old.address \
                and new.weight == old.weight:
            # A seed's first real record changes nothing anyone routes by: every
            # peer holds its placeholder, alive. Piggybacked, a cold start of N
            # seeds queued N records at every peer (at 256, 228 still queued
            # 10 s in; 20 of 32 start-up MB; sent twice only, rumor mongering
            # with a small counter, 2 MB more than not at all). Digests bring it.
            spread = False
        if spread:
            self._queue[mid] = 0
        else:
            self._queue.pop(mid, None)  # the digest carried a newer one than we were spreading
        self._epoch += 1
        was_live = old is not None and old.state in LIVE
        is_live = new.state in LIVE
        if was_live != is_live or (is_live and old is not None and old.weight != new.weight):
            self._dirty = True
        if new.state is SUSPECT:
            if mid not in self._suspects or ours:
                self._suspects[mid] = (now, ours)
        else:
            self._suspects.pop(mid, None)
        if is_live:
            self._buried.pop(mid, None)
        elif old is None or old.state in LIVE or new.incarnation > old.incarnation:
            self._buried[mid] = now
        previous = None if first or old is None else old.state
        if reason is None:
            if previous is None:
                reason = ChangeReason.JOINED if is_live else (
                    ChangeReason.LEFT if new.state is LEFT else ChangeReason.REPORTED)
            elif previous is new.state:
                if new.state is ALIVE and old is not None and new.incarnation > old.incarnation:
                    reason = ChangeReason.RESTARTED
            elif new.state is LEFT:
                reason = ChangeReason.LEFT
            elif new.state is ALIVE:
                reason = ChangeReason.REFUTED
            else:
                reason = ChangeReason.REPORTED
        if reason is not None:
            self._event(now, new, reason, previous)

    def _event(self, now: float, m: Member, reason: ChangeReason,
               previous: MemberState | None) -> None:
        if len(self._events) >= MAX_EVENTS:
            del self._events[0]
            self.dropped["events_overflow"] += 1
        self._events.append(MemberEvent(now, m.id, m.state, reason, m.incarnation, previous))

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


_HANDLERS: dict[type, Callable[[Membership, Any, float], list[tuple[str, Message]]]] = {
    Digest: Membership._on_digest,
    Sync: Membership._on_sync,
    Join: Membership._on_join,
    Leave: Membership._on_leave,
    Ping: Membership._on_ping,
    PingReq: Membership._on_ping_req,
    PingAck: Membership._on_ack,
}

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
