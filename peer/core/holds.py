"""Hand-off holds: hosts gained in a ring change wait for their previous owner.

When the live member set changes, a host this peer gains was fetched until
now by its previous owner, which hands over what it fetched (the seen URLs,
then ``HandoffDone``). Until that marker arrives the host is *held*: its
jobs are requeued, not fetched, so no page is fetched twice across the
change. Pure: the caller passes ``now`` and a liveness query.

Rules, each a line or two below:

1. A change of ring adds one hold ``(old ring, {previous owner: give-up
   time})``, for the previous owners alive at the change (a dead one will
   never send anything, so waiting for it would only delay its hosts).
2. A host is held while its owner in *some* hold's old ring is still
   waited for.
3. A previous owner is no longer waited for when its ``HandoffDone`` comes
   (:meth:`Holds.release`), when it is seen dead, or at its give-up time;
   the last is worth a warning (a hand-off that never came).
4. A hold with nobody left to wait for is dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

__all__ = ["Holds", "OwnerMap"]


class OwnerMap(Protocol):
    """What a hold needs of a ring: who owned a host (``ring.hashring.HashRing``)."""

    def owner(self, host: str) -> str: ...


#: ``alive(peer)``: True while the peer is a member that is not dead, False
#: once it is dead, None if it is not known at all.
Liveness = Callable[[str], "bool | None"]


class Holds:
    """The hand-off holds of one peer (module docstring, rules 1-4)."""

    def __init__(self) -> None:
        self._holds: list[tuple[OwnerMap, dict[str, float]]] = []

    def __bool__(self) -> bool:
        return bool(self._holds)

    def __len__(self) -> int:
        return len(self._holds)

    def add(self, old: OwnerMap, previous: Iterable[str], me: str, until: float,
            alive: Liveness) -> None:
        """Rule 1: hold the hosts of ``old`` owned by live ``previous`` members until ``until``."""
        waiting = {p: until for p in previous if p != me and alive(p) is True}
        if waiting:
            self._holds.append((old, waiting))

    def held(self, host: str, now: float, alive: Liveness) -> tuple[bool, list[str]]:
        """Rules 2-4: whether ``host`` waits, and the previous owners given up at their timeout."""
        held = False
        timed_out: list[str] = []
        for old, waiting in self._holds:
            prev = old.owner(host)
            until = waiting.get(prev)
            if until is None:
                continue
            if now >= until or alive(prev) is False:
                if now >= until:
                    timed_out.append(prev)
                del waiting[prev]
                continue
            held = True
        self._holds = [(o, w) for o, w in self._holds if w]
        return held, timed_out

    def release(self, sender: str) -> None:
        """Rule 3: ``sender`` handed over everything for the current ring."""
        for _, waiting in self._holds:
            waiting.pop(sender, None)
        self._holds = [(o, w) for o, w in self._holds if w]

    def waiting_for(self) -> set[str]:
        """The previous owners still waited for (for tests and status)."""
        return {p for _, w in self._holds for p in w}
