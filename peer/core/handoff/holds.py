"""Hand-off holds: hosts gained in a ring change wait for their previous owner.

When the live member set changes, a host this peer gains was fetched until
now by its previous owner, whose seen set (what it fetched) is on its disk
and comes over in its hand-off (the seen URLs, then ``HandoffDone``). Until
then the host is *held*: its jobs are requeued, not fetched, so no page is
fetched twice across the change. Pure: the caller passes ``now``.

Rules, each a line or two below:

1. A change of ring adds one hold ``(old ring, {previous owner: wait})``,
   for the previous owners other than us: a live one (alive or left) is
   waited for until its ``HandoffDone``, at most ``hold_timeout``; a dead
   one until ``takeover_after`` after its death was seen (the change; 0:
   not at all).
2. A host is held while its owner in *some* hold's old ring is still
   waited for.
3. A wait ends when that previous owner's ``HandoffDone`` comes
   (:meth:`Holds.release`) or at its deadline, never because it was seen
   dead: a dead member is often alive beyond a partition, fetching its
   hosts. A live previous owner that dies while waited for
   (:meth:`Holds.dead`) is waited for until ``takeover_after`` from then.
4. A deadline reached is reported once (:meth:`Holds.held`) and counted in
   :attr:`Holds.counts`: ``handoffs_late`` (a live owner's hand-off never
   came) or ``takeovers`` (a dead owner was not back within
   ``takeover_after``: taken to have crashed for good, its hosts are
   fetched; once per death).
5. A member back from dead (:meth:`Holds.back`, the same process refuting
   or a new one) gets its hosts back, so waits to take them over end
   unreported; and, since it may have taken over *ours* while we were dead
   to it, every host we own waits for its ``HandoffDone``, at most
   ``hold_timeout``. That word comes promptly, so the wait is short: a
   refuting member that saw us dead hands over what it fetched of ours as
   in any ring change, one that never saw us dead repeats its marker
   when told it is dead, even at an incarnation it had already left
   (``ring.handoff`` rule 4), and a new process (a crash, a kill -9, an
   unplanned stop) hands over at its first ring what its resumed results
   hold of others' hosts and tells each member, at once where it held
   none of that member's (rule 6); a marker that comes before its
   sender's return is seen here is kept until then (rule 7). Why that
   keeps one owner per host and no page fetched twice: the returner's new
   life owns none of our hosts in the ring we both hold (the lease fences
   any other), so only its old life can have fetched them, and every page
   that life fetched is in its results, which it hands over before the
   word (the ``HandoffDone`` follows the acks of those seen URLs); the
   word names the ring and the life it speaks for, so no marker of an
   older life or another view ends the wait. Only that word ends it
   early; ``hold_timeout``, its bound as before, is what a returner of
   wire version 3 still costs: it sends no word at its start, and its
   markers name no life.
6. A hold with nobody left to wait for is dropped.
7. The crawl is not over while a member seen dead may still come back
   (:meth:`Holds.awaiting`: within ``takeover_after`` of its death): beyond
   a partition it may be fetching, with links to our hosts queued for us.
   Ended before, this side would be gone when the split heals, and the
   other side would take its hosts over and fetch again what it fetched.

Why ``takeover_after`` and not at once: the new owner of a dead member's
hosts does not have its seen set, so fetching them at once fetched again
what it had fetched; after a split that healed (the member was alive all
along), every such page was fetched twice because of the split. Held until
``takeover_after``, they go back to it when it refutes in time, with the
URLs queued here meanwhile (``Handoffs.set_ring`` passes them on), and are
deduplicated against its seen set there. Past it, a crash is the likelier
story and the hosts are fetched here.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Expired", "Holds", "OwnerMap", "Wait"]


class OwnerMap(Protocol):
    """What a hold needs of a ring: who owned a host (``ring.hashring.HashRing``)."""

    def owner(self, host: str) -> str: ...


#: ``alive(peer)``: True while the peer is a member that is not dead, False
#: once it is dead, None if it is not known at all.
Liveness = Callable[[str], "bool | None"]


class Wait(enum.Enum):
    """What a held host waits for."""

    HANDOFF = "handoff"  # a live previous owner's HandoffDone (rule 1)
    TAKEOVER = "takeover"  # a dead previous owner to come back (rules 1, 3)
    RETURNED = "returned"  # the HandoffDone of a member back from dead (rule 5)


@dataclass(frozen=True, slots=True)
class Expired:
    """A wait that reached its deadline (rule 4): its hosts are fetched here now."""

    peer: str
    wait: Wait
    waited: float  # seconds since the wait began

    @property
    def text(self) -> str:
        if self.wait is Wait.TAKEOVER:
            return (f"{self.peer} dead for {self.waited:.0f}s (takeover_after): taken to have "
                    "crashed; fetching its former hosts")
        if self.wait is Wait.RETURNED:
            return (f"no hand-off from {self.peer} {self.waited:.0f}s after it came back from dead; "
                    "fetching our hosts again")
        return f"no hand-off from {self.peer} after {self.waited:.0f}s; fetching its former hosts"


class _Until:
    __slots__ = ("until", "since", "wait")

    def __init__(self, until: float, since: float, wait: Wait) -> None:
        self.until = until
        self.since = since
        self.wait = wait


class _Everything:
    """The owner map of rule 5: ``peer`` may have held any host."""

    __slots__ = ("peer",)

    def __init__(self, peer: str) -> None:
        self.peer = peer

    def owner(self, host: str) -> str:
        return self.peer


class Holds:
    """The hand-off holds of one peer (module docstring, rules 1-6)."""

    def __init__(self) -> None:
        self._holds: list[tuple[OwnerMap, dict[str, _Until]]] = []
        self._dead: dict[str, float] = {}  # seen dead and not back -> when takeover_after ends (rule 7)
        self._taken: set[str] = set()  # of those, taken over and reported (rule 4: once a death)
        #: Rule 4's counts, for ``ring status`` (``peer.core.crawl.figures``).
        self.counts: Counter[str] = Counter()

    def __bool__(self) -> bool:
        return bool(self._holds)

    def __len__(self) -> int:
        return len(self._holds)

    def add(self, old: OwnerMap, previous: Iterable[str], me: str, now: float, alive: Liveness, *,
            hold_timeout: float, takeover_after: float) -> None:
        """Rule 1: hold the hosts ``old`` gave ``previous`` members (not ``me``) from ``now``."""
        waiting: dict[str, _Until] = {}
        for p in previous:
            if p == me:
                continue
            state = alive(p)
            if state is True:
                waiting[p] = _Until(now + hold_timeout, now, Wait.HANDOFF)
            elif state is False and takeover_after > 0:
                waiting[p] = _Until(now + takeover_after, now, Wait.TAKEOVER)
        if waiting:
            self._holds.append((old, waiting))

    def dead(self, peer: str, now: float, takeover_after: float) -> None:
        """Rule 3: ``peer`` was seen dead at ``now``; a wait for its hand-off becomes one for its return."""
        self._dead[peer] = now + takeover_after
        for _, waiting in self._holds:
            w = waiting.get(peer)
            if w is not None and w.wait is Wait.HANDOFF:
                if takeover_after > 0:
                    waiting[peer] = _Until(now + takeover_after, now, Wait.TAKEOVER)
                else:
                    del waiting[peer]
        self._drop_empty()

    def back(self, peer: str, now: float, hold_timeout: float) -> None:
        """Rule 5: ``peer``, seen dead before, is a live member again."""
        if peer not in self._dead:
            return
        del self._dead[peer]
        self._taken.discard(peer)
        for _, waiting in self._holds:
            w = waiting.get(peer)
            if w is not None and w.wait is Wait.TAKEOVER:
                del waiting[peer]
        self._drop_empty()
        if hold_timeout > 0:
            self._holds.append((_Everything(peer), {peer: _Until(now + hold_timeout, now, Wait.RETURNED)}))

    def held(self, host: str, now: float) -> tuple[bool, list[Expired]]:
        """Rules 2-4: whether ``host`` waits, and the waits that reached their deadline."""
        held = False
        expired: list[Expired] = []
        for old, waiting in self._holds:
            prev = old.owner(host)
            w = waiting.get(prev)
            if w is None:
                continue
            if now < w.until:
                held = True
                continue
            del waiting[prev]
            if w.wait is Wait.TAKEOVER:
                if prev in self._taken:
                    continue
                self._taken.add(prev)
                self.counts["takeovers"] += 1
            else:
                self.counts["handoffs_late"] += 1
            expired.append(Expired(prev, w.wait, now - w.since))
        self._drop_empty()
        return held, expired

    def holding(self, host: str, now: float) -> bool:
        """Rule 2 alone: whether ``host`` waits at ``now``, nothing reported or dropped (figures)."""
        for old, waiting in self._holds:
            w = waiting.get(old.owner(host))
            if w is not None and now < w.until:
                return True
        return False

    def release(self, sender: str) -> None:
        """Rule 3: ``sender`` handed over everything for the current ring."""
        for _, waiting in self._holds:
            waiting.pop(sender, None)
        self._drop_empty()

    def awaiting(self, now: float) -> bool:
        """Rule 7: a member seen dead may still come back with work."""
        return any(now < until for until in self._dead.values())

    def waiting_for(self) -> set[str]:
        """The previous owners still waited for (for tests and status)."""
        return {p for _, w in self._holds for p in w}

    def _drop_empty(self) -> None:
        """Rule 6."""
        if any(not w for _, w in self._holds):
            self._holds = [(o, w) for o, w in self._holds if w]
