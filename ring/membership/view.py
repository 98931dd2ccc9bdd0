"""One peer's view of the ring: the member records it holds, and their bookkeeping (pure).

:class:`View` merges every record it is given by ``ring.membership.records``' rules
(rule 4, a claim about us, becomes a refutation), and keeps what follows
from each change: the piggyback queue (``ring.membership.dissemination``), the
suspicion timers (``ring.membership.swim``), the membership events, the tombstones, and
the live set and hash ring the crawl routes by. ``Membership`` owns one
and drives it.

**The seeds** (``[[peer]]``) start in every view as ``alive`` at
incarnation 0, so every peer starts with the same ring; until a seed is
heard from (a real record, a Join) it is *unheard*, its placeholder is left
out of digests (every peer has it), and its first real record, alive at the
same address and weight, is not piggybacked (see :meth:`View.put`).

**Grants** (``ring.membership.budget``): a member's page-budget grant totals only
grow, across its lives too: a record with lower totals than the one it
replaces keeps the higher ones, and its subject is told (``lagging``); a
record about us whose totals beat ours raises ours, so a restarted peer
whose disk lost a grant learns it from the others.

**Tombstones**: dead and left records are kept, and gossiped in digests, for
``tombstone_ttl`` seconds of local time after they entered our view as such
(van Renesse et al. keep failed members a while: forgetting one lets a
stale gossip bring it back to life), then forgotten, as
hashicorp/memberlist reaps a dead node ``GossipToTheDeadTime`` after its
local ``StateChange``. ``tombstone_ttl >= 2 * dead_after`` (peer.core.config.cluster
checks it) outlives every stale *alive* record at a running peer: such a
record lives only until that peer's own probes time out or it merges the
verdict. The seeds' tombstones never expire (every fresh peer starts with
each seed alive at incarnation 0; the seed list bounds them). A peer paused
past the window comes back as a zombie that dies again.

**Hearsay** (one message must not poison a view): a record that a peer
sends about another member is a *claim*, and :meth:`View.merge` takes it
with ``sender`` as follows (its subject's own records are taken as they are):

- a claim above ``ring.membership.records.REFUTABLE`` is refused (``bad_member``), so
  the subject can always outbid it;
- an adverse claim (suspect, dead, left) above the incarnation we know of
  its subject is clamped to it (``clamped``): only the subject raises its
  own incarnation, and it refutes at that number plus one (a seed not
  heard from yet, and a member we never knew of, have no number to clamp
  to);
- a "left" is believed only from the leaver itself: from anyone else it is
  a suspicion (``hearsay_left``) that our own probes settle, unless we hold
  the member dead already (a leave we missed: it owns no host either way);
- a "dead" is believed from the peer whose own probes found it (its
  verdicts, pushed at once to every live member: ``Digest.verdicts``), or
  when we suspect its subject already; otherwise it too is a suspicion
  (``hearsay_dead``). A verdict therefore sticks only where the subject
  said it (left) or a failed probe was seen. About a member we hold
  restarting it is refused (``hearsay_dead``): only our own hold's end
  kills it (``ring.membership.restarts`` rule 5);
- a "restarting" (``ring.membership.restarts``) is believed from the
  member itself; from anyone else only for a seed not heard from yet or a
  member we suspect already; about one we hold alive it is a suspicion
  (``hearsay_restarting``), about one we never knew of an alive record:
  our probes settle both.

**Forgotten members** (``python -m ring forget``): :meth:`View.forget`
drops a member at once, and others' records of it at or below the
incarnation it had then are refused (``forgotten``), so gossip from a peer
that has not forgotten it yet cannot bring it back; its own word (a Join or
its own record, at any incarnation) makes it a member again.

**Bounds**: the view holds at most ``max_members`` records (the codec's
``MAX_MEMBERS``, what a digest can carry): a record of a new member beyond
it is refused and counted (``too_many_members``); at most
:data:`MAX_EVENTS` events wait to be drained (``events_overflow``). An
unusable record (``ring.membership.records.usable``) is dropped and counted
(``bad_member``): remote input never raises.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from ring.membership.budget import merge_grants
from ring.membership.dissemination import PiggybackQueue
from ring.hashring import HashRing
from ring.messages import Member, MemberState
from ring.membership.records import (
    ALIVE,
    DEAD,
    LEFT,
    MAX_WEIGHT,
    OWNERS,
    REFUTABLE,
    RESTARTING,
    SUSPECT,
    ChangeReason,
    LocalEvent,
    MemberEvent,
    is_news,
    merge_key,
    merge_order,
    next_state,
    usable,
)
from ring.membership.restarts import RestartHolds
from ring.membership.swim import Suspicions
from ring.membership.voters import VoterRecord, initial

__all__ = ["MAX_EVENTS", "View"]

MAX_EVENTS = 10_000
"""Events kept until ``Membership.drain_events``; the driver drains every call."""


class View:
    """Member id -> record, as this peer holds it, and what follows from each change (mutable).

    ``members`` and ``unheard`` are never replaced, only changed in place, so
    ``Membership`` may hold them too.
    """

    __slots__ = (
        "self_id", "members", "unheard", "seeds", "queue", "suspicions", "dropped", "epoch",
        "joined", "refuted", "_buried", "_tombstone_ttl", "_max_members", "_events", "_digest",
        "_dirty", "_live", "_version", "_rings", "forgotten", "configured", "lagging", "voters",
        "holds",
    )

    def __init__(self, me: Member, seeds: Sequence[tuple[str, str] | tuple[str, str, float]], *,
                 queue: PiggybackQueue, suspicions: Suspicions, dropped: Counter[str],
                 tombstone_ttl: float, max_members: int, holds: RestartHolds | None = None) -> None:
        self_id = me.id
        self.self_id = self_id
        self.members: dict[str, Member] = {self_id: me}
        # seeds not heard from yet: their records are placeholders
        self.unheard: set[str] = set()
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
                self.members[sid] = Member(sid, saddr, 0, ALIVE, sweight)
                self.unheard.add(sid)
        if len(seed_ids | {self_id}) > max_members:
            raise ValueError(f"{len(seed_ids)} seeds: more than max_members ({max_members})")
        self.seeds = frozenset(seed_ids)
        #: The seeds as configured, forgotten ones included: what max_pages is split over.
        self.configured = self.seeds
        #: The lease's voters (``ring.membership.voters``): the seeds until an operator changes them.
        self.voters: VoterRecord = initial(seed_ids)
        self.queue = queue
        self.suspicions = suspicions
        #: The restarting members' holds (``ring.membership.restarts`` rule 3).
        self.holds = holds if holds is not None else RestartHolds(60.0)
        self.dropped = dropped
        self.epoch = 0  # moves with every change of the probe candidates
        self.joined = self_id in seed_ids or not seed_ids
        self.refuted = False  # a record about us was refuted (Membership clears it)
        # id -> local time its record became dead or left (tombstone_ttl)
        self._buried: dict[str, float] = {}
        self._tombstone_ttl = tombstone_ttl
        self._max_members = max_members
        self._events: list[MemberEvent] = []
        self._digest: tuple[Member, ...] | None = None
        self._dirty = False
        self._live = {m.id: m.weight for m in self.members.values()}
        self._version = 0
        self._rings: dict[int, HashRing] = {}
        #: id -> the incarnation it had when ``forget`` dropped it
        self.forgotten: dict[str, int] = {}
        #: Members whose newest record gave less than an earlier one (a restart
        #: that lost its grants): ``Membership`` tells them their record.
        self.lagging: set[str] = set()

    @property
    def me(self) -> Member:
        """Our own record."""
        return self.members[self.self_id]

    @property
    def ring_version(self) -> int:
        """Incremented each time :meth:`live` (ids and weights) differs from before."""
        self._refresh()
        return self._version

    def live(self) -> dict[str, float]:
        """id -> weight of the members that own hosts (alive, suspect, restarting:
        ``ring.membership.records.OWNERS``), not a copy."""
        self._refresh()
        return self._live

    def ring(self, vnodes: int) -> HashRing:
        """The hash ring of :meth:`live`; the same object until ``ring_version`` moves."""
        self._refresh()
        ring = self._rings.get(vnodes)
        if ring is None:
            ring = self._rings[vnodes] = HashRing(self._live, vnodes)
        return ring

    def digest(self) -> tuple[Member, ...]:
        """Every record, less the seeds' placeholders (every peer has them)."""
        if self._digest is None:
            unheard = self.unheard
            self._digest = tuple(
                m
                for m in self.members.values()
                if not (m.id in unheard and m.incarnation == 0 and m.heartbeat == 0
                        and m.state is ALIVE)
            )
        return self._digest

    def drain_events(self) -> list[MemberEvent]:
        """The membership changes seen since the last call, oldest first."""
        out, self._events = self._events, []
        return out

    def set_voters(self, record: VoterRecord) -> None:
        """Our voter record is now ``record`` (``ring.membership.voters`` rule 5: the caller judged it)."""
        self.voters = record
        self.epoch += 1

    def full(self) -> bool:
        """Whether a new member would exceed ``max_members``."""
        return len(self.members) >= self._max_members

    # -- the rules --------------------------------------------------------------

    def merge(self, r: Member, now: float, spread: bool = True, sender: str | None = None,
              verdicts: bool = False) -> None:
        """Take in a received record by the merge rules; ``spread``: piggyback it if it is news.

        ``sender``: the peer whose message carried it; a record about
        another member is a claim (module docstring, "Hearsay"); ``verdicts``:
        its dead records are the sender's own verdicts.
        """
        mid = r.id
        local = self.members.get(mid)
        if local is r:
            return
        if sender is not None and mid != sender:
            claim = self._claim(r, local, verdicts)
            if claim is None:
                return
            r = claim
        forgotten = self.forgotten.get(mid)
        if forgotten is not None:
            # Its own word (a Join, its own record) brings it back whatever its
            # number: a new process of a forgotten member is a member again.
            if r.incarnation <= forgotten and sender != mid:
                self.dropped["forgotten"] += 1
                return
            del self.forgotten[mid]
        if (
            local is not None
            and r.state is local.state
            and r.incarnation == local.incarnation
            and (r.heartbeat < local.heartbeat or (r.heartbeat == local.heartbeat and r == local))
        ):
            # The usual case: old news (about us too: nothing to refute). If we
            # are spreading it, the sender knew it already (rumor feedback,
            # ring.membership.dissemination).
            if r.heartbeat == local.heartbeat:
                self.queue.heard(mid, len(self.members))
            return
        if mid == self.self_id:
            if local is not None and r.grants:
                grants = merge_grants(local.grants, r.grants)
                if grants != local.grants:
                    # Budget an earlier life of ours gave (ring.membership.budget rule 3):
                    # never spent again, whatever our disk kept.
                    self.put(replace(local, grants=grants, heartbeat=local.heartbeat + 1), now)
                    local = self.me
            if local is not None and usable(r) and merge_key(r) > merge_key(local):  # local: always ours
                self.refute(r, now)
            return
        if not usable(r):
            self.dropped["bad_member"] += 1
            return
        if local is None:
            if self.full():
                self.dropped["too_many_members"] += 1
                return
            self.put(r, now, spread=spread)
            self.heard(mid)
            return
        if local.grants:
            grants = merge_grants(r.grants, local.grants)
            if grants != r.grants:
                # Grant totals only grow, across a member's lives too: a new
                # process whose disk lost a grant is told what it gave.
                r = replace(r, grants=grants)
                self.lagging.add(mid)
        if r == local or merge_order(r) <= merge_order(local):
            return
        self.put(r, now, spread=spread)
        if r.incarnation > local.incarnation or r.heartbeat > local.heartbeat:
            self.heard(mid)

    def _claim(self, r: Member, local: Member | None, verdicts: bool) -> Member | None:
        """A record another peer sent about ``r.id``, as we may take it (module docstring)."""
        if r.incarnation > REFUTABLE:
            self.dropped["bad_member"] += 1
            return None
        if r.state is ALIVE:
            return r
        if local is None:
            if r.state is RESTARTING:
                # Restarting would give a member nobody probes hosts nobody fetches:
                # that it exists is all we take, and our probes settle the rest.
                self.dropped["hearsay_restarting"] += 1
                return replace(r, state=ALIVE)
            return r  # a tombstone of one we never knew: it owns no host here either way
        if r.id == self.self_id:
            return r  # about us: refuted above its number, which the others hold too
        if r.incarnation > local.incarnation and r.id not in self.unheard:
            # (A seed's placeholder says nothing of its incarnation: not clamped.)
            self.dropped["clamped"] += 1
            r = replace(r, incarnation=local.incarnation, heartbeat=local.heartbeat)
        if r.incarnation < local.incarnation:
            return r  # old news: the merge ignores it
        if r.state is LEFT and local.state is DEAD:
            return r  # it owns no host either way; a leave we missed leaves the quorum
        if r.state is LEFT and local.state is not LEFT:
            self.dropped["hearsay_left"] += 1
            return replace(r, state=SUSPECT)
        if r.state is DEAD and local.state is ALIVE and not verdicts:
            self.dropped["hearsay_dead"] += 1
            return replace(r, state=SUSPECT)
        if r.state is DEAD and local.state is RESTARTING:
            # Only our own hold's end kills a member that said it will be back
            # (ring.membership.restarts rule 5): a peer that missed its announce
            # must not move the ring for everyone.
            self.dropped["hearsay_dead"] += 1
            return None
        if r.state is RESTARTING and local.state is ALIVE and r.id not in self.unheard:
            # Only the member says it restarts: from anyone else, about a member
            # we hold alive, a suspicion that our probes settle.
            self.dropped["hearsay_restarting"] += 1
            return replace(r, state=SUSPECT)
        return r

    def forget(self, mid: str, now: float) -> bool:
        """Drop member ``mid`` at once (``python -m ring forget``); False if unknown or us."""
        gone = self.members.get(mid)
        if gone is None or mid == self.self_id:
            return False
        self.forgotten[mid] = gone.incarnation
        self._drop(mid, now, gone)
        return True

    def _drop(self, mid: str, now: float, gone: Member) -> None:
        del self.members[mid]
        self._buried.pop(mid, None)
        self.unheard.discard(mid)
        self.queue.discard(mid)
        self.seeds = self.seeds - {mid}
        self._digest = None
        self.epoch += 1
        if gone.state in OWNERS:
            self._dirty = True
        self.event(now, gone, ChangeReason.EXPIRED, gone.state)

    def expire(self, now: float) -> None:
        """Forget tombstones older than ``tombstone_ttl``, except the seeds' (module docstring)."""
        if not self._buried:
            return
        ttl = self._tombstone_ttl
        for mid, since in list(self._buried.items()):
            # Never our own record: a peer that left keeps gossiping its own until it exits.
            if now - since >= ttl and mid not in self.seeds and mid != self.self_id:
                self._drop(mid, now, self.members[mid])

    def heard(self, mid: str) -> None:
        """``mid`` spoke for itself (a Join, a newer record): no longer a seed's placeholder."""
        if mid in self.unheard:
            self.unheard.discard(mid)
            self.joined = True
            self._digest = None
            self.epoch += 1

    def refute(self, claim: Member, now: float) -> None:
        """Rule 4: a record about us beats ours; outbid it."""
        me = self.me
        self.refuted = True
        self.put(
            replace(
                me,
                state=next_state(me.state, LocalEvent.REFUTE),
                incarnation=max(claim.incarnation, me.incarnation) + 1,
                heartbeat=me.heartbeat + 1,
            ),
            now,
            ChangeReason.REFUTED,
        )

    def put(self, new: Member, now: float, reason: ChangeReason | None = None,
            ours: bool = False, spread: bool = True) -> None:
        """Store ``new`` (already judged to win) and keep everything that follows from it.

        ``reason``: the event's, when the caller knows it (else it follows
        from the change); ``ours``: a suspicion of our own finding.
        """
        mid = new.id
        old = self.members.get(mid)
        self.members[mid] = new
        self._digest = None
        if old is not None and not is_news(old, new):
            return  # a heartbeat or counters: not worth a piggyback (the fast path)
        first = old is None or (mid in self.unheard and old.incarnation == 0
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
            self.queue.push(mid)
        else:
            self.queue.discard(mid)  # the digest carried a newer one than we were spreading
        self.epoch += 1
        was_live = old is not None and old.state in OWNERS
        is_live = new.state in OWNERS
        if was_live != is_live or (is_live and old is not None and old.weight != new.weight):
            self._dirty = True
        self.suspicions.note(new, now, ours)
        if mid != self.self_id:
            self.holds.note(new, now)  # our own restart is timed by the driver, not held
        if is_live:
            self._buried.pop(mid, None)
        elif old is None or old.state in OWNERS or new.incarnation > old.incarnation:
            self._buried[mid] = now
        previous = None if first or old is None else old.state
        if reason is None:
            if previous is None and new.state is RESTARTING:
                reason = ChangeReason.RESTARTING
            elif previous is None:
                reason = ChangeReason.JOINED if is_live else (
                    ChangeReason.LEFT if new.state is LEFT else ChangeReason.REPORTED)
            elif previous is new.state:
                if new.state is ALIVE and old is not None and new.incarnation > old.incarnation:
                    reason = ChangeReason.RESTARTED
            elif new.state is LEFT:
                reason = ChangeReason.LEFT
            elif new.state is RESTARTING:
                reason = ChangeReason.RESTARTING
            elif previous is RESTARTING and new.state is ALIVE and old is not None \
                    and new.incarnation > old.incarnation:
                reason = ChangeReason.RESTARTED  # back from a planned restart
            elif new.state is ALIVE:
                reason = ChangeReason.REFUTED
            else:
                reason = ChangeReason.REPORTED
        if reason is not None:
            self.event(now, new, reason, previous)

    def event(self, now: float, m: Member, reason: ChangeReason,
              previous: MemberState | None) -> None:
        """Record a membership change for :meth:`drain_events`."""
        if len(self._events) >= MAX_EVENTS:
            del self._events[0]
            self.dropped["events_overflow"] += 1
        self._events.append(MemberEvent(now, m.id, m.state, reason, m.incarnation, previous))

    def _refresh(self) -> None:
        # Compared, not just flagged: a member declared dead and refuted within
        # one round leaves the live set as it was, and the ring need not move.
        if self._dirty:
            self._dirty = False
            live = {m.id: m.weight for m in self.members.values() if m.state in OWNERS}
            if live != self._live:
                self._live = live
                self._version += 1
                self._rings.clear()
