"""The cluster-wide page budget: ``max_pages`` split into caps that move only by grants (pure).

``crawl.max_pages`` is a hard bound on the page requests of the whole ring.
Counting the others' pages by gossip and stopping at the total cannot give
one: every count arrives a round or more late, and each peer would go on
spending what the others had already spent. Instead the limit is a budget
that is *conserved*: each member may request up to its own cap, and a cap
only moves from one member to another by a grant its giver writes.

Rules:

1. **Base.** ``max_pages`` is split over the configured peers (``[[peer]]``,
   the lease's voters: the same set at every peer) by sorted id:
   ``max_pages // n`` each, one more for the first ``max_pages % n`` ids. A
   peer that joins (not in ``[[peer]]``) has base 0.
2. **Grants.** Each member's record (``ring.messages.Member.grants``)
   carries the totals it has given so far, one ``(recipient, total)`` pair a
   recipient, sorted by id; a total only grows. Only the giver writes its
   grants, and they travel in its record like its page count.
3. **Cap.** ``cap_i = base_i + received_i - given_i``: ``given_i`` from
   ``i``'s own record, ``received_i`` the sum of the grants to ``i`` in the
   others' records as this peer knows them (the most it ever saw from each
   giver: a record that expires or is forgotten takes no budget back).
4. **Starts.** A peer starts a request only while ``requested + in flight <
   cap`` as it knows its cap.
5. **Granting.** A peer that is idle (nothing queued it may fetch, nothing
   in flight) with spare budget (``cap - requested``) grants all of it to
   the live members that are not idle and are at their cap as it sees them,
   evenly, the remainder to the lowest ids. Never to an idle member, so
   budget does not go back and forth between peers that have nothing to
   fetch. A peer at its cap with URLs queued is not idle: it waits for
   grants. A leaving peer grants what it will not use to the live members
   (those not idle first) before it goes.
6. **Ending.** A peer ends with ``max_pages reached`` when the gossiped
   total of pages reaches ``max_pages``, or when it is at its cap with
   nothing in flight and the rest of the budget is held only by members that
   left or have been dead for ``takeover_after`` (:func:`held_by_gone`):
   their spare is never granted, and the log names them.

**Why the pages never exceed max_pages, whatever the gossip delay.** Let
``R_i`` and ``G_i`` be the true totals (over every member's newest record)
of what member ``i`` received and gave. Every grant is in exactly one
``G`` and one ``R``, so the true caps ``base_i + R_i - G_i`` sum to
``sum(base) = max_pages``. Peer ``i`` knows ``G_i`` exactly (it writes it;
a restarted process restores it from its disk before its first request, and
takes the higher totals any gossip about its earlier records shows), and
knows ``R_i`` only as gossip brought it: late, never more than the truth.
So the cap ``i`` acts on is at most its true cap, ``requested_i <= cap_i``,
and ``sum(requested) <= sum(cap) = max_pages``. Staleness only makes a peer
more careful: it waits for a grant that is on its way, it never spends one
that is not. This holds as long as each peer's ``requested`` is exact
across a restart (``peer.engine.durability`` restores it with the grants).

A dead member's spare is not inherited (that would need its last
requests, which it may have made after its last record left it): the
peers that wait for it end by rule 6 instead, with fewer pages than
``max_pages`` and a line that says whose budget is missing.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from ring.messages import Member, MemberState
from ring.membership.records import MemberEvent

__all__ = [
    "COUNTER_PREFIX",
    "Grants",
    "PageBudget",
    "add_grants",
    "base",
    "bases",
    "cap_of",
    "caps",
    "given",
    "grant_to",
    "grants_from_counters",
    "grants_to_counters",
    "held_by_gone",
    "merge_grants",
    "split",
]

#: (recipient, total) pairs, sorted by recipient: ``Member.grants``.
Grants = tuple[tuple[str, int], ...]

_LIVE = (MemberState.ALIVE, MemberState.SUSPECT)
#: How grant totals are named among a peer's persisted counters (``peer.state``).
COUNTER_PREFIX = "granted:"


def bases(max_pages: int, voters: Collection[str]) -> dict[str, int]:
    """Rule 1: each voter's share of ``max_pages`` (a member not in it has 0)."""
    ids = sorted(voters)
    share, extra = divmod(max_pages, len(ids)) if ids else (0, 0)
    return {vid: share + (1 if i < extra else 0) for i, vid in enumerate(ids)}


def base(max_pages: int, voters: Collection[str], peer_id: str) -> int:
    """Rule 1: ``peer_id``'s share of ``max_pages`` over ``voters`` (0 if not one of them)."""
    return bases(max_pages, voters).get(peer_id, 0)


def given(grants: Grants) -> int:
    """The budget a member gave away: the sum of its grant totals."""
    return sum(total for _, total in grants)


def grant_to(m: Member, recipient: str) -> int:
    """What ``m``'s record says it gave ``recipient`` (0: nothing)."""
    for rid, total in m.grants:
        if rid == recipient:
            return total
    return 0


def merge_grants(a: Grants, b: Grants) -> Grants:
    """Per recipient, the higher total (totals only grow, so the higher is the newer)."""
    if a == b or not b:
        return a
    merged = dict(a)
    for rid, total in b:
        if total > merged.get(rid, 0):
            merged[rid] = total
    return tuple(sorted(merged.items()))


def add_grants(grants: Grants, amounts: Mapping[str, int]) -> Grants:
    """``grants`` with ``amounts`` added to the totals (a new recipient gets a pair)."""
    totals = dict(grants)
    for rid, n in amounts.items():
        if n > 0:
            totals[rid] = totals.get(rid, 0) + n
    return tuple(sorted(totals.items()))


def split(spare: int, recipients: Iterable[str]) -> dict[str, int]:
    """Rule 5: ``spare`` split evenly over ``recipients``, the remainder to the lowest ids."""
    ids = sorted(recipients)
    if spare <= 0 or not ids:
        return {}
    share, extra = divmod(spare, len(ids))
    out = {rid: share + (1 if i < extra else 0) for i, rid in enumerate(ids)}
    return {rid: n for rid, n in out.items() if n > 0}


def caps(max_pages: int, voters: Collection[str], members: Mapping[str, Member]) -> dict[str, int]:
    """Rule 3 for every member of one view, in one pass over the records."""
    out = dict.fromkeys(members, 0)
    out.update((vid, n) for vid, n in bases(max_pages, voters).items() if vid in out)
    for mid, m in members.items():
        for rid, total in m.grants:
            out[mid] -= total
            if rid in out and rid != mid:
                out[rid] += total
    return out


def cap_of(max_pages: int, voters: Collection[str], members: Mapping[str, Member], peer_id: str) -> int:
    """Rule 3 for one member, from one view (``peer_id``'s own: :meth:`PageBudget.cap`)."""
    me = members.get(peer_id)
    received = sum(grant_to(m, peer_id) for mid, m in members.items() if mid != peer_id)
    return base(max_pages, voters, peer_id) + received - (given(me.grants) if me is not None else 0)


def held_by_gone(max_pages: int, voters: Collection[str], members: Mapping[str, Member],
                 peer_id: str, gone: Collection[str]) -> list[str]:
    """Rule 6: the members of ``gone`` holding spare budget, if no live member other than
    ``peer_id`` holds any and some budget is left; else ``[]`` (wait for grants)."""
    if sum(m.pages for m in members.values()) >= max_pages:
        return []  # spent: the gossiped total ends the crawl by itself
    cap = caps(max_pages, voters, members)
    holders = []
    for mid, m in members.items():
        if mid == peer_id or cap[mid] - m.pages <= 0:
            continue
        if m.state in _LIVE or m.state is MemberState.RESTARTING:
            return []  # a live (or restarting) member still holds some: it spends it, or grants it when idle
        if mid in gone:
            holders.append(mid)
    return sorted(holders)


def grants_to_counters(grants: Grants) -> dict[str, float]:
    """The grant totals as persisted counters (``{"granted:<id>": total}``)."""
    return {COUNTER_PREFIX + rid: float(total) for rid, total in grants}


def grants_from_counters(counters: Mapping[str, float]) -> Grants:
    """The grant totals read back from persisted counters (others ignored)."""
    return tuple(sorted((name[len(COUNTER_PREFIX):], int(v)) for name, v in counters.items()
                        if name.startswith(COUNTER_PREFIX) and v > 0))


class PageBudget:
    """One peer's side of the budget (module docstring): its cap, its grants, its end.

    A part of ``ring.node.RingNode``, which calls :meth:`granting` before each
    gossip round (and writes the grants into our record), :meth:`settle`
    after it, and :meth:`saw` with every membership event.
    """

    __slots__ = ("max_pages", "peer_id", "voters", "base", "takeover_after", "page_cap", "gone",
                 "_received", "_dead_at")

    def __init__(self, max_pages: int, peer_id: str, voters: Collection[str], *,
                 takeover_after: float = 0.0) -> None:
        if max_pages <= 0:
            raise ValueError(f"max_pages must be > 0 for a budget, got {max_pages!r}")
        self.max_pages = max_pages
        self.peer_id = peer_id
        # Alone in no configured ring (a test's node without seeds): the whole budget.
        self.voters = frozenset(voters) or frozenset((peer_id,))
        self.base = base(max_pages, self.voters, peer_id)
        self.takeover_after = takeover_after  # a member dead this long is gone (rule 6)
        #: Our cap as of the last :meth:`settle` (rule 3).
        self.page_cap = 0
        #: The members that hold the rest of the budget and will not grant it
        #: (rule 6): once set, this peer's crawl ends.
        self.gone: tuple[str, ...] = ()
        self._received: dict[str, int] = {}  # giver -> the most it was ever seen to give us
        self._dead_at: dict[str, float] = {}  # member -> when our view last saw it die

    def resize(self, max_pages: int, members: Mapping[str, Member]) -> None:
        """A live change of ``max_pages`` (``ring set``): our base of the new limit, our cap at once.

        Grants keep their totals: they move budget between members and sum
        to nothing, so the caps of members on the same limit still sum to it
        (the module docstring's argument, with the new bases). While the
        change spreads, members on the old and the new limit may together
        pass the lower one by the difference of their bases; the ring's
        settings epochs, which no request starts across, close that gap.
        A cap below the pages requested already starts nothing more.
        """
        if max_pages <= 0:
            raise ValueError(f"max_pages must be > 0 for a budget, got {max_pages!r}")
        self.max_pages = max_pages
        self.base = base(max_pages, self.voters, self.peer_id)
        self.gone = ()
        if self.peer_id in members:
            self.page_cap = self.cap(members)

    def received(self, members: Mapping[str, Member]) -> int:
        """What the others gave us, the most ever seen from each (rule 3)."""
        me, seen = self.peer_id, self._received
        for mid, m in members.items():
            if mid != me and m.grants:
                n = grant_to(m, me)
                if n > seen.get(mid, 0):
                    seen[mid] = n
        return sum(seen.values())

    def cap(self, members: Mapping[str, Member]) -> int:
        """Rule 3: the pages this peer may have requested in all, as it knows now."""
        me = members[self.peer_id]
        return self.base + self.received(members) - given(me.grants)

    def grant(self, members: Mapping[str, Member], spare: int, *, leaving: bool) -> dict[str, int]:
        """Rule 5: who gets ``spare`` (already known to be unused here) and how much."""
        live = [mid for mid, m in members.items() if mid != self.peer_id and m.state in _LIVE]
        busy = [mid for mid in live if not members[mid].idle]
        if leaving:
            return split(spare, busy or live)
        # Only to those at their cap: every peer is idle for a moment at a
        # start, before its first URLs come, and would give away the budget
        # it needs a second later; a busy member with spare spends that first.
        cap = caps(self.max_pages, self.voters, members) if busy else {}
        waiting = [mid for mid in busy if members[mid].pages >= cap[mid]]
        return split(spare, waiting)

    def held_by_gone(self, members: Mapping[str, Member], gone: Collection[str]) -> list[str]:
        return held_by_gone(self.max_pages, self.voters, members, self.peer_id, gone)

    def saw(self, events: Iterable[MemberEvent]) -> None:
        """Membership changes: when each member died, for the budget it holds (rule 6)."""
        for e in events:
            if e.state is MemberState.DEAD:
                self._dead_at.setdefault(e.id, e.at)
            else:
                self._dead_at.pop(e.id, None)

    def granting(self, members: Mapping[str, Member], *, idle: bool, leaving: bool, pages: int,
                 in_flight: int) -> dict[str, int]:
        """Rule 5 for this round: an idle (or leaving) peer's spare, to whom and how much ({}: none).

        ``pages``: the page requests made here; ``in_flight``: those started and not ended.
        """
        if not (idle or leaving):
            return {}
        spare = self.cap(members) - pages - in_flight
        if spare <= 0:
            return {}
        return self.grant(members, spare, leaving=leaving)

    def settle(self, members: Mapping[str, Member], now: float, *, pages: int, in_flight: int) -> list[str]:
        """After a round: our cap as now known, and rule 6: at our cap with nothing in flight,
        the members that left or have been dead ``takeover_after`` holding the rest (once, when
        first found; they become :attr:`gone`), else []."""
        self.page_cap = self.cap(members)
        if self.gone or in_flight or pages < self.page_cap:
            return []
        gone = {mid for mid, m in members.items() if m.state is MemberState.LEFT}
        gone.update(mid for mid, at in self._dead_at.items() if now - at >= self.takeover_after)
        holders = self.held_by_gone(members, gone)
        self.gone = tuple(holders)
        return holders
