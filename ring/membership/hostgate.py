"""Leases by host: the rings a peer held within its grace, and which hosts a lease lets it fetch (pure).

``ring.membership.lease`` rule 2 used to make a peer whose ring changed
vouch for nothing for ``grace``, so after any change no peer of the ring
started any request for about 3.75 s. A host whose owner is the same in
every ring involved cannot be fetched by two peers whatever the peers'
views, so the grace need only cover the hosts that moved. Here is what
that takes (the argument is in ``docs/membership.md``, "Leases by host"):

1. **A vouch lists its recent rings.** Within ``grace`` of a change, a
   peer vouches for its current ring *and* every ring it held in the last
   ``grace`` of its clock, each as a :class:`~ring.messages.RecentRing`, a
   difference from the current one (:meth:`RingBook.recent`). More than
   ``MAX_RECENT`` of them, and it vouches for nothing, as before.
2. **Reading one.** A prober rebuilds the rings of a vouch from any of them
   it knows (its own current and recent rings, and those it rebuilt
   before), and checks each rebuilt ring by its fingerprint, which also
   names the voter record: a ring of another record, or one it cannot
   rebuild, makes the vouch count for no host (:meth:`RingBook.read`).
3. **A host's lease.** A peer may start a request to host ``h`` at ``now``
   when, counting itself (its own current and recent rings), a majority
   of each quorum vouched, in answers to pings sent at or after ``now -
   lease``, with rings that all give ``h`` to it (:class:`HostGate`). A
   vouch need not be for the prober's current ring: the argument needs
   only that the rings a vouch lists agree on ``h``'s owner.

:class:`RingBook` keeps the rings; :class:`HostGate` is one instant's
answer, built by ``ring.membership.lease.Lease.gate`` and asked host by host
by the crawl (``peer.core.door.ringgate``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ring.hashring import HashRing
from ring.messages import RecentRing

__all__ = ["MAX_RECENT", "HostGate", "RingBook", "Tally"]

#: Rings besides its current one a vouch lists at most (rule 1); beyond, it vouches
#: for nothing. Four changes within a grace (3.75 s) is a flapping ring already.
MAX_RECENT = 4
#: Rings a peer keeps by fingerprint to read others' vouches with (its own and rebuilt ones).
MAX_KNOWN = 32
#: Hash rings built at once (each is ``vnodes`` points a member: 131 k at 512 peers, about 2 MB).
MAX_RINGS = 8

Live = Mapping[str, float]


def _diff(then: Live, now: Live) -> RecentRing:
    """``then`` as a difference from ``now`` (its print filled in by the caller)."""
    then_only = tuple(sorted((m, w) for m, w in then.items() if now.get(m) != w))
    now_only = tuple(sorted((m, w) for m, w in now.items() if then.get(m) != w))
    return RecentRing(0, then_only, now_only)


def _apply(base: Live, drop: Sequence[tuple[str, float]], add: Sequence[tuple[str, float]]) -> dict[str, float]:
    out = dict(base)
    for mid, _ in drop:
        out.pop(mid, None)
    for mid, w in add:
        out[mid] = w
    return out


class RingBook:
    """The rings this peer held, when it left each, and rings it rebuilt from others' vouches (mutable).

    ``printer(live)`` names a ring as a vouch does (its fingerprint with our
    voter record's): the book checks every rebuilt ring by it.
    """

    __slots__ = ("grace", "_printer", "_current", "_left", "_known", "_recent", "_reads", "_rings")

    def __init__(self, grace: float, printer: Callable[[Live], int]) -> None:
        self.grace = grace
        self._printer = printer
        self._current = 0
        self._left: list[tuple[int, float]] = []  # (print, when we left it), newest last
        self._known: OrderedDict[int, dict[str, float]] = OrderedDict()
        self._recent: dict[int, RecentRing] = {}  # print -> as a difference from the current ring
        self._reads: dict[tuple[int, tuple[RecentRing, ...]], frozenset[int] | None] = {}
        self._rings: dict[tuple[int, int], HashRing] = {}

    def _print(self, live: Live) -> int:
        return self._printer(live)

    @property
    def current(self) -> int:
        return self._current

    def _learn(self, fp: int, live: Live) -> None:
        known = self._known
        known[fp] = dict(live)
        known.move_to_end(fp)
        keep = {self._current, *(fp for fp, _ in self._left)}
        while len(known) > MAX_KNOWN:
            old = next((k for k in known if k not in keep), None)
            if old is None:
                break
            del known[old]

    def changed(self, fp: int, live: Live, now: float, first: bool, rekey: bool = False) -> None:
        """Our ring is now ``live`` (print ``fp``); the one before was left ``now`` (unless ``first``).

        ``rekey``: our voter record changed too. The rings we knew are named
        by the old record's prints, so they are forgotten for reading (rule
        2: a vouch listing one counts for no host, and a record change costs
        a grace as before); our own are still listed, so that nobody reads
        ours either.
        """
        if self._current and not first:
            self._left.append((self._current, now))
        self._left = [(p, at) for p, at in self._left if p != fp]
        self._current = fp
        self._recent = {}
        for p, _ in self._left:
            then = self._known.get(p)
            if then is not None:
                self._recent[p] = _diff(then, live)
        if rekey:
            self._known.clear()
            self._rings.clear()
        self._learn(fp, live)
        self._reads.clear()

    def left_within(self, now: float) -> list[tuple[int, float]]:
        """The rings we left within ``grace`` before ``now`` (print, when), newest last."""
        horizon = now - self.grace
        self._left = [(p, at) for p, at in self._left if at >= horizon - self.grace]
        return [(p, at) for p, at in self._left if at >= horizon]

    def recent(self, now: float) -> tuple[tuple[RecentRing, ...], float] | None:
        """Rule 1: what a vouch lists besides the current ring, and when that list is empty
        (our clock); None: more than ``MAX_RECENT`` (vouch for nothing)."""
        left = self.left_within(now)
        prints = list(dict.fromkeys(p for p, _ in reversed(left) if p != self._current))
        if len(prints) > MAX_RECENT:
            return None
        out = []
        for p in prints:
            d = self._recent.get(p)
            if d is None:
                return None  # a ring we no longer know the members of: cannot say it
            out.append(RecentRing(p, d.then_only, d.now_only))
        until = max((at for _, at in left), default=now - self.grace) + self.grace
        return tuple(out), until

    def own(self, now: float) -> frozenset[int]:
        """The rings we held within ``grace``, current included (what our own vouch lists)."""
        return frozenset([self._current, *(p for p, _ in self.left_within(now))])

    def read(self, vouch: int, recent: tuple[RecentRing, ...]) -> frozenset[int] | None:
        """Rule 2: the rings of a vouch, each known here by now; None if it cannot be read."""
        if not vouch:
            return None
        key = (vouch, recent)
        if key in self._reads:
            return self._reads[key]
        got = self._rebuild(vouch, recent)
        if len(self._reads) > 4096:
            self._reads.clear()
        self._reads[key] = got
        return got

    def _rebuild(self, vouch: int, recent: tuple[RecentRing, ...]) -> frozenset[int] | None:
        known = self._known
        now = known.get(vouch)
        if now is None:
            for r in recent:
                then = known.get(r.print)
                if then is not None:
                    cand = _apply(then, r.then_only, r.now_only)
                    if self._print(cand) == vouch:
                        now = cand
                        self._learn(vouch, cand)
                    break
            if now is None:
                return None
        for r in recent:
            if r.print in known:
                continue
            then = _apply(now, r.now_only, r.then_only)
            if not then or self._print(then) != r.print:
                return None
            self._learn(r.print, then)
        return frozenset([vouch, *(r.print for r in recent)])

    def ring_known(self, fp: int) -> bool:
        """Whether we know the members of ring ``fp``."""
        return fp in self._known

    def ring(self, fp: int, vnodes: int) -> HashRing | None:
        """The hash ring of a known ring (built from a neighbour's points when there is one)."""
        key = (fp, vnodes)
        ring = self._rings.get(key)
        if ring is None:
            live = self._known.get(fp)
            if not live:
                return None
            base = next((r for (p, v), r in self._rings.items() if v == vnodes), None)
            ring = base.rebuilt(live) if base is not None else HashRing(live, vnodes)
            if len(self._rings) >= MAX_RINGS:
                for k in [k for k in self._rings if k[0] not in self._known]:
                    del self._rings[k]
                if len(self._rings) >= MAX_RINGS:
                    del self._rings[next(iter(self._rings))]
            self._rings[key] = ring
        return ring


@dataclass(frozen=True, slots=True)
class Tally:
    """One quorum's count for a host gate: vouches grouped by the rings they list."""

    needed: int
    groups: tuple[tuple[frozenset[int], int], ...]  # (rings listed, how many vouches), ours included


@dataclass(frozen=True, slots=True)
class HostGate:
    """Rule 3 at one instant: which hosts this peer may start a request to.

    ``open``: a majority of each quorum vouches at all (some host may go);
    ``until``: when the evidence it counts runs out (ask again before).
    """

    self_id: str
    open: bool
    until: float
    tallies: tuple[Tally, ...]
    rings: Mapping[int, HashRing]

    def may(self, host: str) -> bool:
        """Whether a request to ``host`` may start: in each quorum, vouches whose every ring
        gives ``host`` to us make a majority."""
        if not self.open:
            return False
        owners: dict[int, bool] = {}
        me = self.self_id
        for tally in self.tallies:
            count = 0
            for prints, n in tally.groups:
                ok = True
                for p in prints:
                    mine = owners.get(p)
                    if mine is None:
                        ring = self.rings.get(p)
                        mine = owners[p] = ring is not None and len(ring) > 0 and ring.owner(host) == me
                    if not mine:
                        ok = False
                        break
                if ok:
                    count += n
                    if count >= tally.needed:
                        break
            if count < tally.needed:
                return False
        return True

    def settled(self) -> bool:
        """Every counted vouch lists one and the same ring: every host of ours may go."""
        return self.open and len({p for t in self.tallies for prints, _ in t.groups for p in prints}) == 1


CLOSED = HostGate("", False, float("-inf"), (), {})
