"""Planned restarts: a member that stops and says it will be back keeps its hosts (pure).

A restart (an upgrade, a new config, a machine's reboot) used to look like a
crash: the member went silent, was suspected, declared dead after
``dead_after``, and its hosts moved; when it came back they moved again, and
every peer held the hosts it owned until the returner's hand-off
(``peer.core.handoff.holds`` rule 5). Measured on a 5-peer ring with a peer
down 12 s: every other peer fetched nothing for 12.1-12.9 s at each
restart. A *planned* restart avoids the ring change altogether:

1. **Announce.** Before it exits, with its crawl state durable (its journal
   runs to the end), the member marks its own record ``restarting``
   (``records``: rule 3 ranks it above alive and suspect, below dead) and
   sends it, in a timed :class:`~ring.messages.Ping`, to every live member,
   again each round until each has answered (:class:`Announce`) or the
   driver's bound runs out. An answer means the member holds the record:
   a ping's updates are merged before it is answered.
2. **Hold.** A member holding it ``restarting`` keeps it in the ring: its
   hosts stay its own (``records.OWNERS``; no ring change, so no grace and
   no hand-off anywhere), nobody fetches them meanwhile, and it is neither
   probed nor sent to (``records.LIVE`` leaves it out). Its vote in the
   lease's quorum counts as absent, as any silent voter's does: it is still
   a voter (``ring.membership.lease`` rule 4 drops only those that left).
3. **Hold over.** Each member times the hold from when *it* first held
   the member restarting at that incarnation (:class:`RestartHolds`, as a
   suspicion is timed where it is heard): not back ``restart_hold``
   seconds later, the member is dead by that peer's own timer
   (``not_back``), and from then on it is a death as any other
   (``takeover_after``, the hand-off on its return).
4. **Back.** Its new process comes back at a higher incarnation, alive
   (``records`` rule 1): the live set is what it was, the ring does not
   move, and only the returner waits, for its own lease (its resumed
   crawl's grace, ``ring.membership.lease`` rule 2, is its own: others'
   vouches do not depend on it).
5. **Hearsay.** Only the member itself says it is restarting: its own
   record (in its announce, or any message it sends) is believed.
   Another peer's claim that it is (``ring.membership.view``, "Hearsay") is
   believed only where it cannot mislead: for a seed not heard from yet
   (its placeholder owns its hosts in every view already), or a member
   we already suspect (our own silence agrees); about a member we hold
   alive it is a suspicion, which our probes settle (``hearsay_restarting``),
   and about one we never heard of, an alive record, which they settle too.
   A dead claim about a member we hold restarting is refused
   (``hearsay_dead``) until our own hold runs out: a peer that missed the
   announce must not move the ring for everyone. (An operator's hold,
   rule 7, is no claim: it changes no record and is never gossiped.)
6. **Older peers.** A member of wire version 3 has no ``restarting``: it
   reads the record as alive, probes the member, and would find it dead
   after ``dead_after``. Its ring would then lack the member while ours
   hold it, and neither side could gather a majority for its own ring (the
   restarting member's vote is absent), so the whole ring would stop until
   the member is back. A member holding it restarting therefore answers a
   ``PingReq`` about it on its behalf, as the relay of its answer would
   (``Membership._on_ping_req``): the older peer's indirect probe succeeds,
   its ring keeps the member, and every host but the restarting member's
   goes on. Only for the hold: once it runs out here, the member is dead
   and no answer is given for it. A peer of this version never asks (it
   does not probe a restarting member).
7. **An operator's hold.** A member that cannot announce its own restart
   (one of wire version 3, whose SIGTERM just stops it; or a machine about
   to be rebooted, whose peer will be killed) is held at the operator's
   word instead: ``ring restart`` asks each member of wire version 4
   directly (:class:`~ring.messages.HoldRequest`, with the tool's key
   under CurveZMQ) to hold it, at the incarnation it is alive at in that
   member's view, for ``restart_hold`` (:class:`OperatorHolds`). A holder changes no
   record: the member stays alive in its view and in every message it
   sends, so no view, no ring and no lease changes anywhere, and a peer of
   version 3 sees nothing but its own probes. The holder only stops
   probing the member (no suspicion of it starts here) and answers a
   ``PingReq`` about it on its behalf, as rule 6 does for a restarting
   member: the probes of a peer that holds nothing (version 3) fail
   directly and succeed through the holders, so its ring keeps the
   member too. The hold ends when its time runs out (then our probes
   resume: a member not back is found dead, as any silent one), or when
   the member's record is anything but alive at that incarnation (its new
   process is back at a higher one; a suspicion or a verdict reached us;
   it announced a restart of its own). This is not hearsay (rule 5): no
   peer claims anything about the member, each holder acts on the
   operator's own request, received directly, and nothing of the hold is
   gossiped, so no peer can make another hold a member. A member the
   operator never stops goes on as before: alive, fetching its own hosts
   (which it owns in every view), and probed again once the hold is over.

Why hosts are never fetched twice: a restarting member owns its hosts in
every view that holds it restarting, as it did alive, so no ownership
changes; its old process fetches nothing after it announces (the crawl
stopped before), and its new process fetches only under its own lease, as
any resumed peer does.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping

from ring.messages import Member
from ring.membership.records import ALIVE, RESTARTING

__all__ = ["Announce", "OperatorHolds", "RestartHolds"]

_EPS = 1e-9  # timers compare sums of floats


class RestartHolds:
    """Member id -> (incarnation, local time its hold began here): rule 3's timers (mutable)."""

    __slots__ = ("hold", "_since")

    def __init__(self, hold: float) -> None:
        if not hold > 0:
            raise ValueError(f"restart_hold must be > 0, got {hold!r}")
        self.hold = hold
        self._since: dict[str, tuple[int, float]] = {}

    def note(self, m: Member, now: float) -> None:
        """``m`` entered the view: start its hold if it is newly restarting, else end it."""
        if m.state is RESTARTING:
            held = self._since.get(m.id)
            if held is None or held[0] != m.incarnation:
                self._since[m.id] = (m.incarnation, now)
        else:
            self._since.pop(m.id, None)

    def due(self, now: float, members: Mapping[str, Member]) -> Iterator[Member]:
        """The restarting members whose hold ran out (a generator, read as the caller acts)."""
        for mid, (_, since) in list(self._since.items()):
            m = members.get(mid)
            if m is None or m.state is not RESTARTING:
                self._since.pop(mid, None)
                continue
            if now - since >= self.hold - _EPS:
                yield m

    def until(self, mid: str) -> float | None:
        """When ``mid``'s hold runs out here (the caller's clock); None if it is not held."""
        held = self._since.get(mid)
        return None if held is None else held[1] + self.hold

    def __len__(self) -> int:
        return len(self._since)


class Announce:
    """Rule 1, on the restarting member's side: who has answered its announce (mutable)."""

    __slots__ = ("_pending", "_acked")

    def __init__(self) -> None:
        self._pending: dict[int, str] = {}  # our ping's seq -> the member it went to
        self._acked: set[str] = set()

    def sent(self, seq: int, member: str) -> None:
        """Our announce went to ``member`` as ping ``seq``."""
        self._pending[seq] = member

    def acked(self, seq: int, sender: str) -> bool:
        """``sender`` answered ping ``seq``: whether that was an answer to our announce."""
        if self._pending.get(seq) != sender:
            return False
        del self._pending[seq]
        self._acked.add(sender)
        return True

    def waiting(self, live: Collection[str]) -> list[str]:
        """Those of ``live`` (the members we send to) that have not answered yet, sorted."""
        return sorted(mid for mid in live if mid not in self._acked)

    def heard_by(self) -> frozenset[str]:
        """The members that answered."""
        return frozenset(self._acked)


class OperatorHolds:
    """Member id -> (incarnation, local time the hold runs out): rule 7's holds (mutable)."""

    __slots__ = ("hold", "_until")

    def __init__(self, hold: float) -> None:
        if not hold > 0:
            raise ValueError(f"restart_hold must be > 0, got {hold!r}")
        self.hold = hold
        self._until: dict[str, tuple[int, float]] = {}

    def start(self, mid: str, incarnation: int, now: float) -> float:
        """Hold ``mid`` at ``incarnation`` from ``now`` (again: from ``now``, an operator's
        renewal); when it runs out."""
        until = now + self.hold
        self._until[mid] = (incarnation, until)
        return until

    def held(self, m: Member, now: float) -> bool:
        """Whether ``m`` (our record of it) is held at ``now``; a hold that ended is dropped."""
        got = self._until.get(m.id)
        if got is None:
            return False
        if m.state is not ALIVE or m.incarnation != got[0] or now >= got[1] - _EPS:
            del self._until[m.id]
            return False
        return True

    def until(self, mid: str) -> float | None:
        """When ``mid``'s hold runs out (the caller's clock); None if it is not held."""
        got = self._until.get(mid)
        return None if got is None else got[1]

    def active(self, members: Mapping[str, Member], now: float) -> dict[str, float]:
        """Each member of ``members`` held at ``now``, with when its hold runs out; the
        holds that ended (or whose member was forgotten) are dropped."""
        out: dict[str, float] = {}
        for mid, (_, until) in list(self._until.items()):
            m = members.get(mid)
            if m is None:
                del self._until[mid]
            elif self.held(m, now):
                out[mid] = until
        return out

    def __len__(self) -> int:
        return len(self._until)
