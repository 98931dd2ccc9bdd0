"""The ring's membership: who is in the cluster, and in what state (pure core).

Protocol: SWIM (Das, Gupta, Motivala, "SWIM: scalable weakly-consistent
infection-style process group membership protocol", DSN 2002), with the
full-state gossip of van Renesse, Minsky, Hayden ("A gossip-style failure
detection service", Middleware 1998) kept as a slow anti-entropy repair.
:class:`Membership` is the protocol: it composes the parts, each a module
of its own with its rules in its header (as hashicorp/memberlist
splits ``state.go``, ``suspicion.go``, ``queue.go``):

- ``ring.membership.records``        how two records of a member merge; the local state
                          machine (:class:`IllegalTransition`); membership events
- ``ring.membership.view``           the records one peer holds and what follows from each
                          change: queue, suspicions, events, tombstones, the ring
- ``ring.membership.swim``           probes, ping-reqs and suspicion timers: whom to probe,
                          when to suspect, when to declare dead
- ``ring.membership.dissemination``  the piggyback queue: which changed records ride on
                          probe messages, and how often
- ``ring.membership.antientropy``    the Sync summary and its answers; ``Repairs``: when to
                          join, sync and greet the seeds
- ``ring.membership.termination``    the counter method over the gossiped counters
- ``ring.membership.lease``          the lease: a majority vouching for our ring, or no
                          request starts
- ``ring.membership.voterkeeper``    the lease's voter record as we keep it: an operator's
                          change, settling, others' records taken or answered
- ``ring.membership.tombstones``     the seeds a former process of ours saw leave, given
                          back at a restart
- ``ring.membership.budget``         the page budget: each member's cap of ``max_pages``,
                          moved between members by the grants in their records
- ``ring.membership.restarts``       planned restarts: the announce, and the holds that
                          keep a restarting member's hosts its own

The driver calls :meth:`Membership.tick` every ``gossip_interval`` and
:meth:`Membership.receive` for each decoded message, and sends the
``(peer_id, message)`` pairs both return. Each round a peer probes
(``ring.membership.swim``), piggybacks changed records on its probe messages
(``ring.membership.dissemination``) and now and then repairs by anti-entropy with one
member (``ring.membership.antientropy``). Each probe message also carries the sender's
own record, so counters and heartbeats reach the members it talks to, and
the record of a receiver we hold suspect or dead, so it learns it and
refutes. After each call :meth:`Membership.drain_events` hands over the
membership changes (``ring.membership.records.MemberEvent``) for the driver to log.

Seeds: a seed not yet heard from is not probed for ``seed_grace`` seconds
after our start (``ring.membership.antientropy``, "Seeds"). A peer told it is dead (a
partition that healed, a long pause) refutes and comes back; to make sure it
is told, each ``reconnect_every`` ticks a peer pings one dead member with
its verdict (memberlist's reconnect), and a message from a member we hold
suspect or dead is answered with its record.

Limits: a ``Join`` of a new member beyond ``max_members`` is refused and
counted (``too_many_members``), and gets no answer (``ring.membership.view`` bounds the
records and the events); at most ``MAX_RELAYS`` ping-reqs are relayed at a
time (``relay_full``).

**Senders and claims.** A message from a sender that is not a member of
our view (a Join apart) is refused before any record in it is applied
(``unknown_sender``); the records a member sends about others are claims,
taken by ``ring.membership.view``'s hearsay rules.

**Lease** (``ring.membership.lease``, whose ``LeaseKeeper`` is the part kept here):
every ping we send is remembered with its send
time, every direct answer's vouch is evidence, our answers vouch for our
ring, and each round :meth:`Membership.tick` pings the members of the
quorum whose vouch needs renewing. The driver's ring clock runs slow by the
time the process stood still (``stalled``); the lease is measured on the
real clock, ``now + stalled``, so a process that stood still finds its
lease run out, not extended.

Remote input never raises: a message of another ring, a stale ``Join`` or
``Leave``, an unusable record... is dropped and counted in :attr:`dropped`.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from ring.membership.antientropy import Repairs, answer_pull, answer_sync, is_push, summary
from ring.membership.budget import merge_grants
from ring.membership.dissemination import PIGGYBACK, PiggybackQueue, retransmit_limit
from ring.hashring import HashRing
from ring.membership.hostgate import HostGate
from ring.membership.lease import Lease, LeaseKeeper, LeaseState
from ring.messages import (
    MAX_MEMBERS,
    Digest,
    HoldOutcome,
    Join,
    Leave,
    Member,
    Message,
    Ping,
    PingAck,
    PingReq,
    Sync,
    VoterAction,
    VoterOutcome,
    Voters,
)
from ring.membership.records import (
    ALIVE,
    DEAD,
    LEFT,
    LIVE,
    MAX_INCARNATION,
    MAX_WEIGHT,
    RESTARTING,
    SUSPECT,
    ChangeReason,
    IllegalTransition,
    LocalEvent,
    MemberEvent,
    merge_members,
    next_state,
    usable,
)
from ring.membership.restarts import Announce, OperatorHolds, RestartHolds
from ring.membership.swim import ProbeStep, Prober, Suspicions, SuspicionStep
from ring.membership.termination import TerminationDetector
from ring.membership.view import View
from ring.membership.tombstones import remember_left, tombstones
from ring.membership.voterkeeper import VoterKeeper
from ring.membership.voters import Survival, VoterRecord

# Membership, and the names callers have imported from here since before the
# split into parts (each is the part's own object: tests/ring/test_membership.py).
__all__ = ["Membership", "IllegalTransition", "MemberEvent", "ChangeReason", "TerminationDetector",
           "merge_members", "retransmit_limit", "LIVE", "MAX_WEIGHT", "PIGGYBACK"]


class Membership:
    """One peer's view of the ring, driven by :meth:`tick` and :meth:`receive`.

    Both return ``[(peer_id, message), ...]`` to send; the edge finds the
    address in ``members()[peer_id].address``. ``incarnation`` should be the
    process start epoch (seconds or ms), so a restart outranks its old life.
    After each call, :meth:`drain_events` gives the membership changes to log.
    """

    __slots__ = (
        "self_id", "ring_name", "dropped", "_reconnect_every", "_indirect", "_rng", "_start", "_view",
        "_members", "_unheard", "_queue", "_ticks", "_term", "_sorted", "_prober", "_repairs",
        "stalled", "_leases", "_voting", "_announce", "_operator_holds", "_telling_until",
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
        lease: float | None = None,
        resumed: bool = False,
        voters: VoterRecord | None = None,
        restart_hold: float = 60.0,
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
        if not 0 <= incarnation <= MAX_INCARNATION:
            raise ValueError(f"incarnation out of range: {incarnation!r}")
        if lease is not None and not 0 < lease < dead_after:
            raise ValueError(f"expected 0 < lease < dead_after, got {lease!r}, {dead_after!r}")
        self.self_id = self_id
        self.ring_name = ring_name
        self.dropped: Counter[str] = Counter()
        """Refused input by reason: other_ring, stale, self_sender, bad_member,
        unknown_sender, unexpected_type, too_many_members, misdirected,
        relay_full, events_overflow."""
        self._reconnect_every = reconnect_every
        self._indirect = indirect
        self._rng = rng if rng is not None else random.Random()
        self._start = now
        self._view = view = View(
            Member(self_id, address, incarnation, ALIVE, float(weight)), seeds,
            queue=PiggybackQueue(retransmit_mult),
            suspicions=Suspicions(gossip_interval, suspect_after, dead_after),
            dropped=self.dropped, tombstone_ttl=tombstone_ttl, max_members=max_members,
            holds=RestartHolds(restart_hold))
        if voters is not None and voters.version > view.voters.version:
            view.set_voters(voters)  # as this peer last held it (on disk): never an older one
        # The view's own dict, set and queue (never replaced): read on every message.
        self._members, self._unheard, self._queue = view.members, view.unheard, view.queue
        self._repairs = Repairs(now, seed_grace=seed_grace, join_seeds=join_seeds, contacted=not self._unheard)
        self._ticks = 0
        self._term = TerminationDetector(gossip_interval)
        self._prober = Prober(gossip_interval, suspect_after)
        self._sorted: tuple[int, bool, list[str]] | None = None
        #: Seconds the caller's clock (the ring's) lags the real one (module docstring).
        self.stalled = 0.0
        held = Lease(self_id, lease, gossip_interval) if lease is not None else None
        if held is not None and resumed:
            held.resumed(now)
        #: Until then our renewal pings carry our record (``_renew``): a resumed process's
        #: new incarnation is news to the members that held it restarting (``_spreads``).
        self._telling_until = now + held.grace if held is not None and resumed else -math.inf
        self._leases = LeaseKeeper(self_id, held, view, now)
        self._voting = VoterKeeper(self_id, ring_name, view, self._leases, self.dropped)
        #: Our planned restart's announce (``ring.membership.restarts`` rule 1); None: not restarting.
        self._announce: Announce | None = None
        #: Members held at an operator's word (``ring.membership.restarts`` rule 7).
        self._operator_holds = OperatorHolds(restart_hold)

    # -- views ------------------------------------------------------------------

    @property
    def me(self) -> Member:
        """Our own record, as we gossip it."""
        return self._members[self.self_id]

    @property
    def ring_version(self) -> int:
        """Incremented each time :meth:`live` (ids and weights) differs from before."""
        return self._view.ring_version

    @property
    def joined(self) -> bool:
        """True once a seed has answered (always, for a seed): the ring is real."""
        return self._view.joined

    def members(self) -> Mapping[str, Member]:
        """Every member ever heard of, self included, by id (read-only)."""
        return MappingProxyType(self._members)

    def live(self) -> dict[str, float]:
        """id -> weight of the members that own hosts (alive and suspect)."""
        return dict(self._view.live())

    def ring(self, vnodes: int) -> HashRing:
        """The hash ring of :meth:`live`; the same object until ``ring_version`` moves."""
        return self._view.ring(vnodes)

    def digest(self, want_reply: bool = False) -> Digest:
        """Our whole view as a gossip message, less the seeds' placeholders (every peer has them)."""
        return Digest(self.ring_name, self.self_id, self._view.digest(), want_reply)

    def drain_events(self) -> list[MemberEvent]:
        """The membership changes seen since the last call, oldest first (for the log)."""
        return self._view.drain_events()

    @property
    def lease(self) -> Lease | None:
        """Our lease (``ring.membership.lease``); None: SWIM alone (no renewals, no vouches)."""
        return self._leases.lease

    def quorum(self) -> list[str]:
        """The members a lease counts (``ring.membership.lease`` rule 4): the seeds that have not left."""
        return self._leases.quorum()

    def lease_state(self, real_now: float) -> LeaseState | None:
        """Whether this peer may start requests at ``real_now`` (the real clock, not the
        ring's); None without a lease."""
        return self._leases.state(real_now)

    def host_gate(self, real_now: float, vnodes: int) -> HostGate:
        """Which hosts this peer may start requests to at ``real_now`` (the real clock), by the
        lease of each host (``ring.membership.hostgate``); ``vnodes``: the crawl's hash ring's."""
        return self._leases.gate(real_now, vnodes)

    @property
    def voter_record(self) -> VoterRecord:
        """The lease's voters as this peer holds them (``ring.membership.voters``)."""
        return self._view.voters

    def quorums(self) -> list[list[str]]:
        """The sets a lease needs a majority of: one, two while the voters change."""
        return self._leases.quorums()

    def survival(self) -> Survival:
        """How many voters can fail while a majority stays alive, in our view (``ring.membership.voters``)."""
        return self._voting.survival()

    def voters_message(self) -> Voters:
        """Our voter record as gossip carries it."""
        return self._voting.message()

    def change_voters(self, action: VoterAction, target: str, base: int,
                      now: float) -> tuple[VoterOutcome, list[tuple[str, Message]]]:
        """An operator's change (``ring.membership.voterkeeper``): what we did, and the pushes.

        Refused (and said why) unless our record is settled at version
        ``base`` and we hold our lease under it.
        """
        outcome, new = self._voting.change(action, target, base, now + self.stalled)
        return outcome, (self._adopt(new, now) if new is not None else [])

    def _adopt(self, record: VoterRecord, now: float) -> list[tuple[str, Message]]:
        """Take ``record`` as ours (it won: rule 5); push it to every live member if we made it."""
        self._voting.adopt(record, now + self.stalled)
        return self._to_live(self.voters_message())

    def forget(self, member: str, now: float) -> bool:
        """Drop ``member`` from the view and the quorum (``python -m ring forget``); False if unknown."""
        if not self._view.forget(member, now):
            return False
        self._leases.forget(member, now + self.stalled)
        return True

    @property
    def health(self) -> int:
        """Lifeguard's local health multiplier (``ring.membership.swim``): 0 is healthy."""
        return self._prober.health

    def retransmits(self) -> int:
        """Sends of each queued record at today's view size (:func:`retransmit_limit`)."""
        return self._queue.limit(len(self._members))

    def pending_updates(self) -> int:
        """Records still being piggybacked."""
        return len(self._queue)

    def total_pages(self) -> int:
        """Pages fetched cluster-wide as gossiped (every member, any state): ``max_pages``."""
        return sum(m.pages for m in self._members.values())

    def voters(self) -> frozenset[str]:
        """The configured seeds (``[[peer]]``), forgotten ones included: the lease's voters,
        and the members ``max_pages`` is split over (``ring.membership.budget`` rule 1)."""
        return self._view.configured

    def waiting_for(self) -> frozenset[str]:
        """Listed peers not heard from yet: their records are the placeholders every view starts
        with, alive at incarnation 0 (``ring status`` shows them ``waiting``, not ``alive``)."""
        members = self._members
        return frozenset(mid for mid in self._unheard
                         if (m := members.get(mid)) is not None and m.incarnation == 0 and m.heartbeat == 0)

    def tombstones(self) -> dict[str, int]:
        """The configured seeds that left, at the incarnation they left with; 0 for the others
        (what a restart is given back to :meth:`remember_left`: ``ring.membership.tombstones``)."""
        return tombstones(self._view, self.self_id)

    def remember_left(self, left: Mapping[str, int], now: float) -> None:
        """Seeds our former process saw leave, each at the incarnation it left with
        (``ring.membership.tombstones``: left, not silent)."""
        remember_left(self._view, self.self_id, left, now)

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
        grants: tuple[tuple[str, int], ...] | None = None,
    ) -> None:
        """Update the counters gossip carries for us (termination, ``max_pages``), and our
        page-budget grants (``ring.membership.budget``: totals, which only grow)."""
        me = self.me
        new = replace(
            me,
            idle=me.idle if idle is None else bool(idle),
            sent=me.sent if sent is None else sent,
            received=me.received if received is None else received,
            pages=me.pages if pages is None else pages,
            grants=me.grants if grants is None else merge_grants(me.grants, grants),
        )
        if min(new.sent, new.received, new.pages) < 0:
            raise ValueError("counters must be >= 0")
        if new != me:
            # A new heartbeat with every change: two different records with
            # one key would make the merge depend on arrival order.
            self._view.put(replace(new, heartbeat=me.heartbeat + 1), self._start)

    def leave(self, now: float) -> list[tuple[str, Message]]:
        """Mark ourselves left; the :class:`Leave` to send to every live member.

        Keep calling :meth:`tick` while handing off: gossip spreads the leave to
        those the direct message missed and carries our final counters.
        """
        me = self.me
        left = replace(me, state=next_state(me.state, LocalEvent.LEAVE), heartbeat=me.heartbeat + 1)
        self._view.put(left, now, ChangeReason.LEFT)
        return self._to_live(Leave(self.ring_name, self.self_id, me.incarnation))

    # -- a planned restart (ring.membership.restarts) ------------------------------

    def restart(self, now: float) -> list[tuple[str, Message]]:
        """Mark ourselves restarting (rule 1); the announce to every live member.

        Keep calling :meth:`tick` until :meth:`announced` (or the driver's
        bound): each round the announce goes again to those that did not answer.
        """
        me = self.me
        new = replace(me, state=next_state(me.state, LocalEvent.RESTART), heartbeat=me.heartbeat + 1)
        self._view.put(new, now, ChangeReason.RESTARTING)
        self._announce = Announce()
        return self._announcing(now)

    def announced(self) -> bool:
        """Whether every live member has answered our restart's announce."""
        return self._announce is not None and not self.restart_waiting()

    def restart_waiting(self) -> list[str]:
        """The live members that have not answered our restart's announce yet (all, before it)."""
        live = [mid for mid, m in self._members.items() if m.state in LIVE and mid != self.self_id]
        return self._announce.waiting(live) if self._announce is not None else sorted(live)

    def restart_until(self, member: str) -> float | None:
        """When ``member``'s restart hold runs out here (our clock); None unless it is restarting."""
        return self._view.holds.until(member)

    def _announcing(self, now: float) -> list[tuple[str, Message]]:
        """The announce (a ping with our restarting record) to each live member not answered yet."""
        announce = self._announce
        assert announce is not None
        out: list[tuple[str, Message]] = []
        for mid in self.restart_waiting():
            seq = self._prober.next_seq()
            announce.sent(seq, mid)
            out.append((mid, Ping(self.ring_name, self.self_id, seq, mid, (self.me,))))
        return out

    # -- an operator's hold (ring.membership.restarts rule 7) -----------------------

    def operator_hold(self, target: str, now: float) -> tuple[HoldOutcome, float]:
        """Hold ``target``, at the incarnation it is alive at here, for ``restart_hold`` from ``now``
        (rule 7): what we did, and the seconds the hold lasts (0 unless held). Asked again, it runs
        from ``now``."""
        if target == self.self_id:
            return HoldOutcome.SELF, 0.0
        m = self._members.get(target)
        if m is None:
            return HoldOutcome.NOT_KNOWN, 0.0
        if m.state is not ALIVE or (target in self._unheard and m.incarnation == 0):
            return HoldOutcome.NOT_ALIVE, 0.0  # suspect, gone, restarting; or never heard from
        self._operator_holds.start(target, m.incarnation, now)
        return HoldOutcome.HELD, self._operator_holds.hold

    def operator_held(self, now: float) -> dict[str, float]:
        """The members we hold at an operator's word at ``now``, each with when its hold runs out."""
        return self._operator_holds.active(self._members, now)

    def _held(self, mid: str, now: float) -> bool:
        """Whether ``mid`` is held at an operator's word (rule 7): not probed, answered for."""
        if not self._operator_holds:
            return False
        m = self._members.get(mid)
        return m is not None and self._operator_holds.held(m, now)

    # -- driving ----------------------------------------------------------------

    def tick(self, now: float) -> list[tuple[str, Message]]:
        """One round: heartbeat, timers, then the messages to send."""
        self._ticks += 1
        me = self.me
        self._view.put(replace(me, heartbeat=me.heartbeat + 1), now)
        if me.state is RESTARTING:
            # About to exit (ring.membership.restarts rule 1): the announce, and
            # nothing else; our probes and timers would judge a ring we leave.
            return self._announcing(now)
        out: list[tuple[str, Message]] = []
        verdicts = self._timers(now, out)
        self._prober.expire_relays(now)
        self._view.expire(now)
        active = self.me.state is not LEFT

        if not active:
            # A "left" is believed only from the leaver itself (ring.membership.view,
            # "Hearsay"): while it hands off, it tells every live member each round.
            out += self._to_live(Leave(self.ring_name, self.self_id, self.me.incarnation))
        repairs = self._repairs
        if active and repairs.join_due(self._ticks):
            self._joins(out)
        if active and repairs.contacted and self._unheard:
            for sid in repairs.greet(self._ticks, now, self._unheard, self._members, self._rng):
                out.append((sid, self._untimed_ping(sid, now)))
        candidates = self._candidates(now)
        for target in self._prober.targets(candidates, self.self_id, self._members, self._rng):
            out.append((target, self._ping(target, now)))
        if repairs.sync_due(self._ticks) and candidates:
            # Anti-entropy with one peer (memberlist's push/pull): repairs
            # what piggybacking missed and carries heartbeats and counters.
            sync = self._sync()
            partner = self._rng.choice(candidates)
            repairs.synced(self._ticks, len(sync.summary), partner)
            out.append((partner, sync))
            if self._view.voters.version:
                out.append((partner, self.voters_message()))  # the record's anti-entropy
        if active and self._ticks % self._reconnect_every == 0:
            dead = [m for m in self._members.values() if m.state is DEAD]
            if dead:
                d = self._rng.choice(dead)
                seq = self._prober.next_seq()
                self._leases.sent(seq, d.id, now + self.stalled)
                out.append((d.id, Ping(self.ring_name, self.self_id, seq, d.id, (self.me, d))))
        if verdicts:
            # A death of our own finding goes to every live member at once, as
            # a leave does: until all agree, peers route hosts by different rings.
            out += self._to_live(Digest(self.ring_name, self.self_id, tuple(verdicts), verdicts=True))
        real = now + self.stalled
        self._leases.follow(real)
        if active and (settled := self._voting.settling(real)) is not None:
            # A majority of both sets vouches for the joint record: settle it (rule 4).
            out += self._adopt(settled, now)
        if active and repairs.contacted:
            pinged = {dest for dest, msg in out if isinstance(msg, Ping)}
            out += self._renew(candidates, pinged, real)
        return out

    def _renew(self, candidates: Sequence[str], pinged: set[str], real: float) -> list[tuple[str, Message]]:
        """The lease's renewal pings (``ring.membership.lease`` rule 5)."""
        out: list[tuple[str, Message]] = []
        # Bare: the probes carry the gossip; this only dates a vouch. But in a resumed
        # process's grace, our own record: each member asked learns our return from us.
        told = (self.me,) if real < self._telling_until else ()
        for mid in self._leases.renewals(candidates, pinged, real):
            seq = self._prober.next_seq()
            self._leases.sent(seq, mid, real)
            out.append((mid, Ping(self.ring_name, self.self_id, seq, mid, told)))
        return out

    def set_config(self, ident: int, now: float) -> list[tuple[str, Message]]:
        """Our config epoch is now the one of ``ident`` (``ring.membership.epochs`` rule 3): our
        vouch names it, with no grace, and the quorum is asked again at once (lease rule 5)."""
        real = now + self.stalled
        self._leases.config = ident
        self._leases.follow(real)
        if self.me.state is LEFT or not self._repairs.contacted:
            return []
        return self._renew(self._candidates(now), set(), real)

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
        if sender not in self._members and not isinstance(msg, Join):
            # Senders and claims (module docstring): refused before any record is applied.
            self.dropped["unknown_sender"] += 1
            return []
        self._view.refuted = False
        out: list[tuple[str, Message]] = handler(self, msg, now)
        view = self._view
        if view.lagging:
            # A member's new record forgot grants an earlier one made (ring.membership.view, "Grants").
            for mid in sorted(view.lagging):
                m = self._members.get(mid)
                if m is not None and m.state in LIVE and mid != self.self_id:
                    out.append((mid, Digest(self.ring_name, self.self_id, (m,))))
            view.lagging.clear()
        self._leases.follow(now + self.stalled)
        if self._view.refuted:
            self._prober.worse()  # others found us slow (Lifeguard)
        if self._view.refuted and sender in self._members and not any(d == sender for d, _ in out):
            # Tell whoever said we were suspect or dead at once; the queue tells the rest.
            out.append((sender, Digest(self.ring_name, self.self_id, (self.me,))))
        return out

    # -- handlers ---------------------------------------------------------------

    def _on_digest(self, msg: Digest, now: float) -> list[tuple[str, Message]]:
        spread = is_push(msg, self._repairs.partner)
        for r in msg.members:
            self._view.merge(r, now, spread, msg.sender, msg.verdicts)
        s = self._members[msg.sender]  # a merge never drops a member
        self._contact()
        if msg.want_reply:
            # Push-pull: answer only what beats the sender's.
            newer = answer_pull(self.digest().members, msg.members)
            return [(msg.sender, Digest(self.ring_name, self.self_id, newer))]
        # A sender we hold suspect, dead or restarting must learn it, to refute (rule 4).
        if s.state is SUSPECT or s.state is DEAD or s.state is RESTARTING:
            return [(msg.sender, Digest(self.ring_name, self.self_id, (self.me, s)))]
        return []

    def _on_sync(self, msg: Sync, now: float) -> list[tuple[str, Message]]:
        newer = answer_sync(self.digest().members, msg.summary)
        return [(msg.sender, Digest(self.ring_name, self.self_id, newer))] if newer else []

    def _on_join(self, msg: Join, now: float) -> list[tuple[str, Message]]:
        r = Member(msg.sender, msg.address, msg.incarnation, ALIVE, msg.weight)
        if not usable(r):
            self.dropped["bad_member"] += 1
            return []
        known = self._members.get(msg.sender)
        if known is None and self._view.full():
            self.dropped["too_many_members"] += 1
            return []
        if known is not None and msg.incarnation < known.incarnation:
            self.dropped["stale"] += 1  # a replay; our answer tells a real one to move on
        else:
            self._view.merge(r, now, self._spreads(r, msg.sender), msg.sender)
        self._view.heard(msg.sender)
        out: list[tuple[str, Message]] = [(msg.sender, self.digest())]
        if self._view.voters.version:
            out.append((msg.sender, self.voters_message()))
        return out

    def _on_leave(self, msg: Leave, now: float) -> list[tuple[str, Message]]:
        known = self._members[msg.sender]  # a member: receive() checked
        if msg.incarnation < known.incarnation or msg.incarnation > MAX_INCARNATION:
            self.dropped["stale"] += 1
            return []
        hb = known.heartbeat if msg.incarnation == known.incarnation else 0
        self._view.merge(replace(known, incarnation=msg.incarnation, state=LEFT, heartbeat=hb), now)
        return []

    def _on_voters(self, msg: Voters, now: float) -> list[tuple[str, Message]]:
        """A member's voter record (``ring.membership.voterkeeper``): ours, if it is behind."""
        return [(msg.sender, self.voters_message())] if self._voting.heard(msg, now + self.stalled) else []

    def _merge_updates(self, updates: tuple[Member, ...], sender: str, now: float) -> None:
        """A probe message's records, merged; what is news is piggybacked on (:meth:`_spreads`)."""
        for r in updates:
            self._view.merge(r, now, self._spreads(r, sender), sender)

    def _spreads(self, r: Member, sender: str) -> bool:
        """Whether ``r``, from ``sender``, is piggybacked on if it is news: not a planned
        restart's own word, its announce or its return.

        Each would cost ``retransmit_mult * log10(N + 1)`` sends at every peer
        (``ring.membership.dissemination``): at 160 peers, 7 % more bytes for
        a rolling restart than for a quiet ring, all of it this news
        (``scripts/bench_membership.py --rolling-restart --breakdown``), for
        what the member tells nearly everyone itself. Its announce goes to
        every live member, again each round until each has answered
        (``ring.membership.restarts`` rule 1). Back at a new incarnation, its
        renewal pings carry its record for its resumed grace (:meth:`_renew`):
        a majority of the quorum and an eighth more within a round or two (lease rule 5).
        Anti-entropy's digests bring either to the rest (every peer syncs
        with one a few rounds apart, ``ring.membership.antientropy``), and the
        hold that waits for the return lasts ``restart_hold`` (a minute), not
        rounds. A record told by another peer, a death, or a return from
        anything but a restart spreads as before.
        """
        if r.id != sender:
            return True
        if r.state is RESTARTING:
            return False
        held = self._members.get(r.id)
        return held is None or held.state is not RESTARTING or r.incarnation <= held.incarnation

    def _on_ping(self, msg: Ping, now: float) -> list[tuple[str, Message]]:
        self._merge_updates(msg.updates, msg.sender, now)
        if msg.target != self.self_id:
            self.dropped["misdirected"] += 1  # meant for whoever had our address before
            return []
        if any(r.id == msg.sender and r.state is RESTARTING for r in msg.updates):
            # Its restart's announce (ring.membership.restarts rule 1): it only counts the
            # answer, then exits. Our record and news would be bytes for nothing, and each
            # record sent would count as one of its sends (ring.membership.dissemination).
            return [(msg.sender, PingAck(self.ring_name, self.self_id, msg.seq, self.self_id))]
        return [(msg.sender, self._answer(msg.sender, msg.seq, now))]

    def _answer(self, asker: str, seq: int, now: float) -> PingAck:
        """Our own answer to a probe: our record's news and our vouch (``ring.membership.lease``)."""
        v = self._leases.vouch(now + self.stalled)
        return PingAck(self.ring_name, self.self_id, seq, self.self_id, self._updates(asker),
                       v.print, v.recent, v.settle_ms)

    def _on_ping_req(self, msg: PingReq, now: float) -> list[tuple[str, Message]]:
        self._merge_updates(msg.updates, msg.sender, now)
        target = self._members.get(msg.target)
        if msg.target == self.self_id:
            return [(msg.sender, self._answer(msg.sender, msg.seq, now))]
        if target is not None and (target.state is RESTARTING or self._held(msg.target, now)):
            # ring.membership.restarts rules 6 and 7: an older peer probes a member away
            # for a planned restart (or one an operator asked us to hold); we hold it, so
            # we answer for it as its relayed answer would.
            return [(msg.sender, PingAck(self.ring_name, self.self_id, msg.seq, msg.target,
                                         self._updates(msg.sender)))]
        if target is None or target.state not in LIVE:
            return []  # nothing to ask: our view holds it gone already
        seq = self._prober.relay(msg.sender, msg.seq, msg.target, now)
        if seq is None:
            self.dropped["relay_full"] += 1
            return []
        return [(msg.target, self._ping_msg(seq, msg.target, now))]

    def _on_ack(self, msg: PingAck, now: float) -> list[tuple[str, Message]]:
        self._merge_updates(msg.updates, msg.sender, now)
        self._contact()
        if self._announce is not None and self._announce.acked(msg.seq, msg.sender):
            return []  # an answer to our restart's announce (ring.membership.restarts rule 1)
        if msg.target == msg.sender:
            self._leases.acked(msg.seq, msg.sender, msg.vouch, msg.recent, msg.settle_ms)
        relay = self._prober.acked(msg.seq, msg.target, msg.sender)
        if relay is not None and relay[0] in self._members:
            asker, seq = relay
            return [(asker, PingAck(self.ring_name, self.self_id, seq, msg.target,
                                    self._updates(asker)))]
        return []

    # -- probing ----------------------------------------------------------------

    def _ask(self, target: str, seq: int, now: float, out: list[tuple[str, Message]]) -> None:
        """SWIM's ping-req: ``indirect`` random others probe ``target`` for probe ``seq``."""
        helpers = [c for c in self._candidates(now) if c != target]
        for h in self._rng.sample(helpers, min(self._indirect, len(helpers))):
            out.append((h, PingReq(self.ring_name, self.self_id, seq, target, self._updates(h))))

    def _ping(self, target: str, now: float) -> Ping:
        """A timed probe of ``target`` (``ring.membership.swim``)."""
        return self._ping_msg(self._prober.start(target, now), target, now)

    def _untimed_ping(self, target: str, now: float) -> Ping:
        """A ping no probe timer waits for: a hello, a suspect told, a lease renewal."""
        return self._ping_msg(self._prober.next_seq(), target, now)

    def _ping_msg(self, seq: int, target: str, now: float) -> Ping:
        """Every ping we send: its send time is remembered for the lease (rule 3)."""
        self._leases.sent(seq, target, now + self.stalled)
        return Ping(self.ring_name, self.self_id, seq, target, self._updates(target))

    def _candidates(self, now: float) -> list[str]:
        """Sorted ids of the members we probe: live, not us, and heard of (or past seed_grace)."""
        grace_over = self._repairs.grace_over(now)
        cached = self._sorted
        if cached is None or cached[0] != self._view.epoch or cached[1] != grace_over:
            unheard = set() if grace_over else self._unheard
            ids = sorted(mid for mid, m in self._members.items()
                         if m.state in LIVE and mid != self.self_id and mid not in unheard)
            self._sorted = cached = (self._view.epoch, grace_over, ids)
        if self._operator_holds:
            # Rule 7: a member held at an operator's word is not probed, so no suspicion of it starts here.
            return [mid for mid in cached[2] if not self._held(mid, now)]
        return cached[2]

    def _updates(self, to: str) -> tuple[Member, ...]:
        """What a probe message to ``to`` carries (``ring.membership.dissemination``)."""
        return self._queue.updates(self.me, to, self._members)

    def _joins(self, out: list[tuple[str, Message]]) -> None:
        """A Join to seeds not heard from, or once in a Sync to one (``ring.membership.antientropy``)."""
        unheard = [sid for sid in sorted(self._unheard) if self._members[sid].state in LIVE]
        targets = self._repairs.joins(unheard, self._rng)
        if self._repairs.contacted:
            out.extend((sid, self._sync()) for sid in targets)
            return
        me = self.me
        join = Join(self.ring_name, self.self_id, me.address, me.weight, me.incarnation)
        out.extend((sid, join) for sid in targets)

    def _to_live(self, msg: Message) -> list[tuple[str, Message]]:
        """``msg`` to every live member but us."""
        return [(mid, msg) for mid, m in self._members.items() if m.state in LIVE and mid != self.self_id]

    def _sync(self) -> Sync:
        return Sync(self.ring_name, self.self_id, summary(self.digest().members))

    def _contact(self) -> None:
        self._repairs.contacted = True
        self._view.joined = True

    # -- timers -----------------------------------------------------------------

    def _timers(self, now: float, out: list[tuple[str, Message]]) -> list[Member]:
        """Carry out what the probe and suspicion timers say (``ring.membership.swim``); our verdicts."""
        members = self._members
        for seq, m, step in self._prober.due(now, members):
            if self._held(m.id, now):
                continue  # a probe begun before the hold (ring.membership.restarts rule 7)
            if step is ProbeStep.SUSPECT:
                suspect = replace(m, state=next_state(m.state, LocalEvent.PROBE_TIMEOUT))
                self._view.put(suspect, now, ChangeReason.SILENCE, ours=True)
            else:
                out.append((m.id, self._ping_msg(seq, m.id, now)))
                self._ask(m.id, seq, now, out)
        verdicts: list[Member] = []
        for m, sstep in self._view.suspicions.due(now, members):
            if sstep is SuspicionStep.DEAD:
                dead = replace(m, state=next_state(m.state, LocalEvent.DEAD_TIMER))
                self._view.put(dead, now, ChangeReason.SILENCE)
                verdicts.append(dead)
            else:
                out.append((m.id, self._untimed_ping(m.id, now)))
        for m in self._view.holds.due(now, members):
            # Not back within restart_hold (ring.membership.restarts rule 3): dead, as any silent member.
            dead = replace(m, state=next_state(m.state, LocalEvent.HOLD_OVER))
            self._view.put(dead, now, ChangeReason.NOT_BACK)
            verdicts.append(dead)
        return verdicts


_HANDLERS: dict[type, Callable[[Membership, Any, float], list[tuple[str, Message]]]] = {
    Digest: Membership._on_digest,
    Sync: Membership._on_sync,
    Join: Membership._on_join,
    Leave: Membership._on_leave,
    Ping: Membership._on_ping,
    PingReq: Membership._on_ping_req,
    PingAck: Membership._on_ack,
    Voters: Membership._on_voters,
}
