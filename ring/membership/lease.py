"""Leases on the ring: a peer starts requests only while a majority vouches for its ring (pure).

SWIM tells each peer who is alive, but two views of the ring can differ
for as long as a split or a starved process lasts, and a host whose owner
differs between two views would be fetched by two peers at once. A lease
closes that gap. The whole argument, and its assumptions about clocks, is
in ``docs/membership.md``; the rules it rests on are these:

1. **Vouches.** Every :class:`~ring.messages.PingAck` carries ``vouch``: a
   fingerprint of the answering peer's ring (its live member set, ids and
   weights, :func:`fingerprint`), or 0 while it vouches for nothing; and
   ``recent``, the other rings it held within ``grace`` (rule 2).
2. **Grace.** A peer whose ring changes lists the rings it left for
   ``grace`` seconds of its clock after it left each
   (``ring.membership.hostgate`` rule 1): a host whose owner differs between
   them waits, the others go on. A peer that resumes a crawl vouches for
   nothing from its start for ``grace`` (its former life may have vouched
   for another ring a moment before it died, and it does not know which).
3. **Evidence.** A vouch counts for the prober at the time the prober
   *sent* the ping it answers (its own clock), never at the time the answer
   came: a process that was not running while its answers waited in a
   socket buffer gains nothing from them. A probe's retry goes with the
   same seq, and an answer cannot say which send it answers: the first
   send dates it.
4. **The lease.** A peer holds its lease at ``now`` when, counting itself
   (out of grace), a majority of its quorum vouched for its current ring alone
   (no recent ring) in answers to pings it sent at or after ``now - lease``:
   then every host it owns may go. Within a grace it holds the *host's*
   lease of ``h`` when a majority vouched with rings that all give ``h`` to it
   (``ring.membership.hostgate`` rule 3, :meth:`Lease.gate`). The quorum is the
   ring's voters (``ring.membership.voters``: the ``[[peer]]`` list until
   ``python -m ring voter`` changes it; two sets, a majority of each, while
   it changes) that have not left: alive, suspect and dead alike, so the
   side of a split cannot make itself a majority by declaring the other side
   dead, nor by letting new members join it (a member that is not a voter is
   a learner: it fetches under a lease like anyone, but does not vote). A
   voter leaves the quorum otherwise only by leaving (its own word) or by
   ``python -m ring forget``. Our voter record is part of what we vouch for
   (:func:`vouch_print`), and a new one starts a grace as a new ring does.
   So is our config epoch (``ring.membership.epochs``), but a new epoch
   starts no grace: it moves no host, so no two peers can own one host
   across it (``docs/membership.md``, "Config epochs").
5. **Renewal.** Each round the peer pings members of its quorum whose
   vouch is missing, for another ring, older than half the lease, or lists
   recent rings it should have let go of by now (``settle_ms``), at most
   once a gossip interval each, until it holds a majority's worth of fresh
   vouches and a few more (:meth:`Lease.renewals`): O(N / lease) pings a
   second a peer, bare (no piggybacked records). After a change of what we
   vouch for, a member whose last answer predates it is asked again at
   once, interval or not: a new config epoch has no grace to wait out, so
   the lease comes back a ping round trip after a majority took the epoch.

:class:`Lease` keeps the pings, the vouches and the grace. :class:`LeaseKeeper`
is the lease's part of ``ring.membership.protocol.Membership``: it reads the view
(given as a :class:`Roster`) to tell the lease when our ring changed (rule
2), to name the quorum (rule 4) and to pick the renewals (rule 5); the
membership sends the pings. Every time it is given is the real clock
(``ring.membership.protocol``: the ring's clock plus the time the process stood
still). Without a lease (SWIM alone) it vouches for nothing and renews
nothing.

Why no two peers fetch one host at once: two majorities of one quorum
share a member Y. If P fetches ``h`` on Y's vouch at ``a1`` and X on Y's vouch
at ``a2 > a1``, the ring Y held at ``a1`` gives ``h`` to P, so it is not in
the list of the vouch at ``a2`` (whose rings all give ``h`` to X): Y left it
more than ``grace`` before ``a2`` (rule 2). By rule 3 P's lease on that vouch
ended by ``a1 + lease`` (its ping went before ``a1``). With ``grace >= lease *
(1 + rho)**2`` for clocks whose rates differ by at most a factor ``1 + rho``,
P's lease is over before X's begins. (``docs/membership.md`` has it whole.)
"""

from __future__ import annotations

import enum
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import mmh3

from ring.messages import Member, MemberState, RecentRing
from ring.membership.hostgate import CLOSED, HostGate, RingBook, Tally
from ring.membership.voters import VoterRecord
from ring.durations import duration

__all__ = ["GRACE_FACTOR", "Lease", "LeaseKeeper", "LeaseState", "PauseNote", "PauseReason", "Pauses", "Roster",
           "Vouch", "fingerprint", "vouch_print"]

#: ``grace = lease * GRACE_FACTOR``: rule 2's bound holds for clock rates
#: that differ by up to 11 % (1.11**2 = 1.23); crystal clocks differ by 1e-4.
GRACE_FACTOR = 1.25
#: Pings remembered for their send time, at most (the oldest go first).
MAX_PENDING = 4096


class PauseReason(enum.Enum):
    """Why a peer holds no lease (None in :class:`LeaseState` when it holds one)."""

    GRACE = "grace"  # our ring changed, or we resumed: rule 2
    NO_MAJORITY = "no_majority"  # too few members vouch for our ring: rule 4


@dataclass(frozen=True, slots=True)
class LeaseState:
    """Whether a peer may start requests, and the figures behind it (for status and logs)."""

    held: bool
    vouched: int  # members vouching for our ring within the lease, ourselves included
    needed: int  # a majority of the quorum
    quorum: int  # voters: the [[peer]] list less those that left
    reason: PauseReason | None
    grace_left: float  # seconds of grace still to run (0: none)
    until: float  # when the lease runs out unless renewed (our clock); 0: not held
    #: Not held, but a majority vouches with rings we can read: hosts whose owner is
    #: the same in all of them go, moved hosts wait (``ring.membership.hostgate``).
    open: bool = False


@dataclass(frozen=True, slots=True)
class Vouch:
    """What a :class:`~ring.messages.PingAck` says of our ring (rules 1-2)."""

    print: int  # our ring's (and voter record's) fingerprint; 0: nothing
    recent: tuple[RecentRing, ...] = ()  # the other rings we held within grace
    settle: float = 0.0  # seconds until ``recent`` is empty (or, with print 0, until we vouch)

    @property
    def settle_ms(self) -> int:
        return max(0, math.ceil(self.settle * 1000))

    @property
    def whole(self) -> int:
        """The vouch as a peer of wire version 3 must read it: our ring only with no recent ring
        (its rule 2 made a peer vouch for nothing within a grace)."""
        return 0 if self.recent else self.print


def fingerprint(live: Mapping[str, float]) -> int:
    """A nonzero 64-bit fingerprint of a ring's live members and weights (rule 1)."""
    text = "\n".join(f"{mid}\t{weight!r}" for mid, weight in sorted(live.items()))
    fp = mmh3.hash64(text.encode("utf-8"), signed=False)[0]
    return fp or 1


def vouch_print(ring: int, record: int, config: int = 0) -> int:
    """What a vouch carries: the ring's fingerprint, the voter record's ident
    (``ring.membership.voters`` rule 3) and the config epoch's
    (``ring.membership.epochs`` rule 3: epoch 0 too); the ring's alone for record 0 and
    config 0, as a peer of wire version 3 vouches while its voters never changed."""
    if not record and not config:
        return ring
    text = f"{ring:x}:{record:x}" if not config else f"{ring:x}:{record:x}:{config:x}"
    return mmh3.hash64(text.encode("ascii"), signed=False)[0] or 1


class Lease:
    """One peer's lease: the pings it sent, the vouches it got, and its grace (mutable)."""

    __slots__ = ("self_id", "lease", "grace", "_interval", "_fp", "_base", "_vouch", "_asked", "_record",
                 "_config", "_grace_until", "_resumed_until", "_pending", "_evidence", "_pinged", "book", "plain")

    def __init__(self, self_id: str, lease: float, gossip_interval: float, *,
                 grace: float | None = None) -> None:
        if not lease > 0:
            raise ValueError(f"lease must be > 0, got {lease!r}")
        self.self_id = self_id
        self.lease = lease
        self.grace = lease * GRACE_FACTOR if grace is None else grace
        self._interval = gossip_interval
        self._fp = 0
        self._base = 0  # vouch_print(_fp, the voter record's ident): a change of it starts a grace
        self._vouch = 0  # _base with the config epoch's ident: what we vouch for and count
        self._asked: set[str] = set()  # members pinged since _vouch last changed (rule 5: the others at once)
        self._record = 0  # our voter record's ident
        self._config = 0  # our config epoch's ident (ring.membership.epochs)
        #: Whether a vouch that names no config epoch (the ring and voter record alone, as a
        #: peer of wire version 3 vouches) counts as ours: while we run epoch 0
        #: (``ring.membership.epochs`` rule 3). :meth:`plain_of` says ours to such a peer.
        self.plain = False
        self._grace_until = 0.0  # the last ring we left is listed until then (rule 2)
        self._resumed_until = 0.0  # a resumed process vouches for nothing until then (rule 2)
        # seq -> (target, time sent): rule 3 reads the send time back
        self._pending: dict[int, tuple[str, float]] = {}
        # member -> (time our ping was sent, its vouch, its recent rings, when they go): the newest only
        self._evidence: dict[str, tuple[float, int, tuple[RecentRing, ...], float]] = {}
        self._pinged: dict[str, float] = {}  # member -> our last ping to it
        #: The rings we held, and those we rebuilt from vouches (``ring.membership.hostgate``).
        self.book = RingBook(self.grace, self._print)

    def _print(self, live: Mapping[str, float]) -> int:
        return vouch_print(fingerprint(live), self._record, self._config)

    @property
    def ring(self) -> int:
        """The fingerprint of our current ring (0 before the first)."""
        return self._fp

    def resumed(self, now: float) -> None:
        """Rule 2 for a process that resumes a crawl: vouch for nothing for ``grace``."""
        self._resumed_until = max(self._resumed_until, now + self.grace)
        self._grace_until = max(self._grace_until, now + self.grace)

    def ring_changed(self, live: Mapping[str, float], now: float, record: int = 0, config: int = 0) -> None:
        """Our live set is now ``live``, our voter record ``record`` and our config epoch
        ``config`` (their idents): a new fingerprint, and a grace unless it is our first (a
        new record too: ``ring.membership.voters`` rule 3). A new config epoch alone
        starts no grace: it moves no host (``ring.membership.epochs`` rule 3)."""
        fp = fingerprint(live)
        base = vouch_print(fp, record)
        vouch = vouch_print(fp, record, config)
        if vouch == self._vouch:
            return
        first = not self._vouch
        if not first and base != self._base:
            self._grace_until = max(self._grace_until, now + self.grace)
        rekey = record != self._record
        self._fp = fp
        self._base = base
        self._vouch = vouch
        self._asked = set()
        # A new record or config epoch renames every ring (their prints): the rings we
        # knew are read no more (ring.membership.hostgate rule 2).
        rekey = rekey or config != self._config
        self._record = record
        self._config = config
        self.book.changed(vouch, live, now, first, rekey)

    def vouch(self, now: float) -> int:
        """Our ring's fingerprint as a peer of wire version 3 reads a vouch (0 within a grace)."""
        return self.vouching(now).whole

    def vouching(self, now: float) -> Vouch:
        """What our answers carry now (rules 1-2): our ring and the rings we held within
        ``grace``; nothing while resumed or past ``MAX_RECENT`` rings."""
        if now < self._resumed_until:
            return Vouch(0, (), self._resumed_until - now)
        if now >= self._grace_until:
            return Vouch(self._vouch)
        got = self.book.recent(now)
        if got is None:
            return Vouch(0, (), self._grace_until - now)
        recent, until = got
        return Vouch(self._vouch, recent, max(0.0, until - now) if recent else 0.0)

    def plain_of(self, vouch: int) -> int:
        """``vouch`` (ours) as a peer of wire version 3 reads it: at epoch 0, without the
        epoch, as it vouches itself (``ring.membership.epochs`` rule 3)."""
        return self._base if self.plain and vouch and vouch == self._vouch else vouch

    def sent(self, seq: int, target: str, now: float) -> None:
        """We pinged ``target`` with ``seq`` now (any ping: probes, retries, renewals)."""
        if seq not in self._pending:  # a retry keeps the first send (rule 3)
            if len(self._pending) >= MAX_PENDING:
                del self._pending[next(iter(self._pending))]
            self._pending[seq] = (target, now)
        self._pinged[target] = now
        self._asked.add(target)

    def acked(self, seq: int, sender: str, vouch: int, recent: tuple[RecentRing, ...] = (),
              settle_ms: int = 0) -> None:
        """``sender`` answered our ping ``seq`` itself, vouching ``vouch`` with ``recent`` (rule 3)."""
        got = self._pending.get(seq)
        if got is None or got[0] != sender:
            return  # not ours, relayed, or forgotten: no evidence
        if self.plain and vouch and vouch == self._base != self._vouch:
            vouch = self._vouch  # an older peer's vouch for our ring at epoch 0 (epochs rule 3)
        sent_at = got[1]
        old = self._evidence.get(sender)
        if old is None or sent_at >= old[0]:
            # settle_ms is a hint for renewals, never for safety: capped at a grace.
            self._evidence[sender] = (sent_at, vouch, recent, sent_at + min(settle_ms / 1000, self.grace))

    def forget(self, member: str) -> None:
        """``member`` left the quorum."""
        self._evidence.pop(member, None)
        self._pinged.pop(member, None)

    def expire(self, now: float) -> None:
        """Drop the send times of pings too old to count any more."""
        horizon = now - self.lease
        for seq in [s for s, (_, at) in self._pending.items() if at < horizon]:
            del self._pending[seq]

    def renewals(self, quorum: Iterable[str], now: float, limit: int,
                 want: int | None = None) -> list[str]:
        """Rule 5: members to ping this round, oldest vouch first, at most ``limit``.

        ``want``: fresh vouches (for our ring, at most half a lease old) to
        keep from others; with that many, none is renewed, and with fewer,
        only the shortfall. None: every one. A vouch that lists recent rings
        counts as fresh until its ``settle_ms`` is over: asked sooner, it
        would list them still.
        """
        due: list[tuple[float, str]] = []
        fresh = 0
        half = self.lease / 2
        for mid in quorum:
            if mid == self.self_id:
                continue
            ev = self._evidence.get(mid)
            if (ev is not None and ev[1] == self._vouch and now - ev[0] <= half
                    and (not ev[2] or now < ev[3])):
                fresh += 1
                continue
            pinged = self._pinged.get(mid, -1e18)
            # A member not asked since our vouch changed (a new config epoch: no grace
            # to wait out) is asked at once, not a gossip interval after its last ping.
            if now - pinged < self._interval and mid in self._asked:
                continue
            due.append((ev[0] if ev is not None else -1e18, mid))
        if want is not None:
            limit = min(limit, max(0, want - fresh))
        due.sort()
        return [mid for _, mid in due[:limit]]

    def state(self, quorum: Iterable[str], now: float) -> LeaseState:
        """Rule 4 at ``now``: whether the lease is held, and why not (``quorum``: the voters)."""
        return self.state_of((list(quorum),), now)

    def state_of(self, quorums: Sequence[Sequence[str]], now: float) -> LeaseState:
        """Rule 4 with a majority of EACH of ``quorums`` (two while the voters change:
        ``ring.membership.voters`` rule 2); the figures are the set closest to losing it."""
        states = [self._one(quorum, now) for quorum in quorums] or [self._one((), now)]
        worst = min(states, key=lambda s: (s.held, s.vouched - s.needed))
        opened = all(s.open for s in states)
        if worst.held and len(states) > 1:
            return replace(worst, until=min(s.until for s in states), open=opened)
        return replace(worst, open=opened) if worst.open != opened else worst

    def _own(self, now: float) -> frozenset[int] | None:
        """The rings our own vouch lists now (rule 2), or None while it vouches for nothing."""
        if now < self._resumed_until or not self._vouch:
            return None
        return self.book.own(now) if now < self._grace_until else frozenset((self._vouch,))

    def _one(self, quorum: Iterable[str], now: float) -> LeaseState:
        voters = list(quorum)
        votes = self.self_id in voters
        members = [m for m in voters if m != self.self_id]
        size = len(members) + votes
        needed = size // 2 + 1
        grace_left = max(0.0, self._grace_until - now)
        fp = self._vouch
        horizon = now - self.lease
        book = self.book
        times: list[float] = []
        readable = 0
        for mid in members:
            ev = self._evidence.get(mid)
            if ev is None or not ev[1] or ev[0] < horizon:
                continue
            if ev[1] == fp and not ev[2]:
                times.append(ev[0])
                readable += 1
            elif book.read(ev[1], ev[2]) is not None:
                readable += 1
        own = self._own(now)
        readable += 1 if votes and own is not None and all(book.ring_known(p) for p in own) else 0
        opened = readable >= needed
        vouched = len(times) + (1 if votes and grace_left == 0.0 and fp else 0)
        if grace_left > 0.0:
            return LeaseState(False, vouched, needed, size, PauseReason.GRACE, grace_left, 0.0, opened)
        if vouched < needed:
            return LeaseState(False, vouched, needed, size, PauseReason.NO_MAJORITY, 0.0, 0.0, opened)
        # The lease runs until the vouch it cannot do without is too old.
        times.sort(reverse=True)
        others = needed - votes
        until = (times[others - 1] + self.lease) if others >= 1 else float("inf")
        return LeaseState(True, vouched, needed, size, None, 0.0, until, True)

    def gate(self, quorums: Sequence[Sequence[str]], now: float, vnodes: int) -> HostGate:
        """Rule 4 host by host (``ring.membership.hostgate`` rule 3): which hosts may go at ``now``,
        with a majority of EACH of ``quorums``; ``vnodes``: the crawl's hash ring's."""
        horizon = now - self.lease
        book = self.book
        own = self._own(now)
        until = now + self.lease
        tallies: list[Tally] = []
        prints: set[int] = set()
        opened = True
        for quorum in quorums or ((),):
            groups: dict[frozenset[int], int] = {}
            size = 0
            for mid in quorum:
                size += 1
                if mid == self.self_id:
                    rings = own
                else:
                    ev = self._evidence.get(mid)
                    if ev is None or not ev[1] or ev[0] < horizon:
                        continue
                    rings = book.read(ev[1], ev[2])
                    if rings is not None:
                        until = min(until, ev[0] + self.lease)
                if rings is not None:
                    groups[rings] = groups.get(rings, 0) + 1
            needed = size // 2 + 1
            opened = opened and sum(groups.values()) >= needed
            tallies.append(Tally(needed, tuple(sorted(groups.items(), key=lambda kv: -kv[1]))))
            for rings in groups:
                prints.update(rings)
        if not opened:
            return CLOSED
        built = {p: r for p in prints if (r := book.ring(p, vnodes)) is not None}
        return HostGate(self.self_id, True, until, tuple(tallies), built)


class Roster(Protocol):
    """What :class:`LeaseKeeper` reads of the membership's view (``ring.membership.view.View``)."""

    @property
    def members(self) -> Mapping[str, Member]: ...
    @property
    def voters(self) -> VoterRecord: ...
    @property
    def forgotten(self) -> Mapping[str, int]: ...
    @property
    def epoch(self) -> int: ...
    @property
    def ring_version(self) -> int: ...
    def live(self) -> dict[str, float]: ...


class LeaseKeeper:
    """The lease's part of the membership: our ring told (rule 2), the quorum (rule 4), renewals (rule 5)."""

    __slots__ = ("lease", "_self_id", "_roster", "_version", "_quorums", "config")

    def __init__(self, self_id: str, lease: Lease | None, roster: Roster, now: float) -> None:
        #: None: SWIM alone (no renewals, no vouches); a peer that crawls always has one.
        self.lease = lease
        self._self_id = self_id
        self._roster = roster
        self._version: tuple[int, int, int] = (-1, 0, 0)  # (ring_version, voter record, config) last told
        #: Our config epoch's ident (``ring.membership.epochs``), mixed into our vouch; 0: none told.
        self.config = 0
        self._quorums: tuple[int, list[list[str]], list[str]] | None = None  # (roster epoch, sets, union)
        self.follow(now)

    def quorums(self) -> list[list[str]]:
        """The sets a lease needs a majority of (rule 4; two while the voters change,
        ``ring.membership.voters`` rule 2): the voters that have not left nor been forgotten
        (everyone not left, with no voters at all)."""
        return self._sets()[1]

    def quorum(self) -> list[str]:
        """Every member the lease counts: the union of :meth:`quorums`."""
        return self._sets()[2]

    def _sets(self) -> tuple[int, list[list[str]], list[str]]:
        roster = self._roster
        cached = self._quorums
        if cached is None or cached[0] != roster.epoch:
            members, record, forgotten = roster.members, roster.voters, roster.forgotten
            if not record.voters:
                sets = [sorted(mid for mid, m in members.items() if m.state is not MemberState.LEFT)]
            else:
                # A voter this view never heard of still counts (it cannot vouch):
                # leaving it out would make a majority smaller, not safer.
                sets = [sorted(v for v in q if v not in forgotten and not (
                    v in members and members[v].state is MemberState.LEFT)) for q in record.quorums()]
            union = sorted({v for q in sets for v in q})
            self._quorums = cached = (roster.epoch, sets, union)
        return cached

    def state(self, now: float) -> LeaseState | None:
        """Whether this peer may start requests at ``now``; None without a lease."""
        return self.lease.state_of(self.quorums(), now) if self.lease is not None else None

    def follow(self, now: float) -> None:
        """Rule 2: tell the lease when our live set (or our voter record, or config epoch) changed."""
        roster = self._roster
        if self.lease is None:
            return
        version = (roster.ring_version, roster.voters.ident(), self.config)
        if version != self._version:
            self._version = version
            self.lease.ring_changed(roster.live(), now, version[1], version[2])

    def vouch(self, now: float) -> Vouch:
        """What our answers vouch for (rules 1-2): our ring as of now and the rings we held
        within grace, or nothing."""
        if self.lease is None:
            return Vouch(0)
        self.follow(now)
        return self.lease.vouching(now)

    def gate(self, now: float, vnodes: int) -> HostGate:
        """Which hosts we may start a request to at ``now`` (``ring.membership.hostgate``);
        every host without a lease (SWIM alone never fetches)."""
        if self.lease is None:
            return CLOSED
        self.follow(now)  # our own recent rings as of now (rule 2)
        return self.lease.gate(self.quorums(), now, vnodes)

    def sent(self, seq: int, target: str, now: float) -> None:
        """We pinged ``target`` with ``seq`` (rule 3: its send time is what a vouch counts for)."""
        if self.lease is not None:
            self.lease.sent(seq, target, now)

    def acked(self, seq: int, sender: str, vouch: int, recent: tuple[RecentRing, ...] = (),
              settle_ms: int = 0) -> None:
        """``sender`` answered our ping ``seq`` itself (rule 3)."""
        if self.lease is not None:
            self.lease.acked(seq, sender, vouch, recent, settle_ms)

    def forget(self, member: str, now: float) -> None:
        """``member`` left the view and the quorum (``python -m ring forget``)."""
        if self.lease is not None:
            self.lease.forget(member)
        self.follow(now)

    def renewals(self, candidates: Sequence[str], pinged: Collection[str], now: float) -> list[str]:
        """Rule 5: the members of the quorum to ping bare this round, among ``candidates``
        (those we probe) not ``pinged`` already this round; [] without a lease."""
        lease = self.lease
        if lease is None:
            return []
        lease.expire(now)
        quorum = self.quorum()
        voters = set(quorum)
        renew = [mid for mid in candidates if mid not in pinged and mid in voters]
        needed = len(quorum) // 2 + 1 - (self._self_id in voters)
        # A few more than the majority needs: an answer lost, a member gone.
        want = needed + 1 + len(quorum) // 8
        return lease.renewals(renew, now, len(quorum) // 2 + 1, want)


@dataclass(frozen=True, slots=True)
class PauseNote:
    """A line for the log about the lease, and whether it is an alarm (a WARNING) or news (INFO)."""

    warn: bool
    line: str
    event: str = ""  # its name in a JSON log: lease.forming, lease.formed, lease.partition, lease.partition_over
    vouched: int = 0
    needed: int = 0
    quorum: int = 0


class Pauses:
    """The lease for the log: a lost majority said once when it begins and once when it ends (mutable).

    Not every wait for a majority is a partition:

    - A ring that is *forming* at start: until this peer has held its lease
      once, the voters not heard from yet are peers still starting (a service
      manager starts them one by one). Said once, at INFO (``forming``), and
      once when it formed; never a WARNING, however long it takes.
    - A ring *settling* after a change of its members (a join, a leave, a
      restart): each peer's grace (rule 2) ends at its own time, so for a
      moment too few vouch for the new ring. Silent, unless it lasts
      ``patience`` seconds (a lease): then it is a partition after all.
    - A majority lost while the ring had not changed is a partition (or the
      crash of enough voters) and warns at once; the line when it ends says
      how long it lasted.
    """

    __slots__ = ("patience", "_since", "_warned", "_held_once", "_forming", "_settling")

    def __init__(self, patience: float = 0.0) -> None:
        self.patience = patience
        self._since: float | None = None  # when the majority was lost (None: not lost)
        self._warned = False  # the loss was said as a partition
        self._held_once = False  # a majority vouched for us once: the ring formed
        self._forming = False  # the forming line was said
        self._settling = False  # our ring changed since the lease was last held

    @staticmethod
    def _note(state: LeaseState, name: str, warn: bool, line: str) -> PauseNote:
        return PauseNote(warn, line, name, state.vouched, state.needed, state.quorum)

    def seen(self, state: LeaseState, now: float) -> PauseNote | None:
        """The line to log now that the lease is ``state`` at ``now`` (the real clock), or None."""
        vouched, quorum, needed = state.vouched, state.quorum, state.needed
        # A majority vouching with rings we can read is no partition: hosts that kept
        # their owner go on while the ring settles (ring.membership.hostgate).
        going = state.held or state.open
        if not self._held_once:
            if going:
                self._held_once = True
                if self._forming:
                    return self._note(state, "lease.formed", False,
                                      f"ring formed: {vouched} of {quorum} voters vouch for our view; "
                                      f"requests start")
            elif state.reason is PauseReason.NO_MAJORITY and not self._forming:
                self._forming = True
                return self._note(state, "lease.forming", False,
                                  f"forming: heard {vouched} of {quorum} voters ({needed} needed); "
                                  f"no request starts until they answer")
            return None
        if going:
            self._settling = False
            began, warned, self._since, self._warned = self._since, self._warned, None, False
            if began is not None and warned:
                return self._note(state, "lease.partition_over", False,
                                  f"partition over: a majority again ({vouched} of {quorum}) after "
                                  f"{duration(now - began)}; requests resume")
            return None
        if state.reason is PauseReason.GRACE:
            self._settling = True
            return None
        if state.reason is not PauseReason.NO_MAJORITY:
            return None
        if self._since is None:
            self._since = now
        if self._warned or (self._settling and now - self._since < self.patience):
            return None
        self._warned = True
        return self._note(state, "lease.partition", True,
                          f"partition: no majority of the ring ({vouched} of {quorum} members vouch "
                          f"for our view, {needed} needed); no request starts until it is back")
