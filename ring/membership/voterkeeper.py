"""The voter record as one peer keeps it: changed, settled, taken from gossip, answered (pure).

``ring.membership.voters`` has the rules of the lease's voters (a record
changed as Raft changes its configuration, in two steps: Ongaro,
"Consensus: bridging theory and practice", 2014, ch. 4); this module is
where one peer applies them, apart from the SWIM protocol that carries the
record (``ring.membership.protocol``), as the lease's bookkeeping is
``ring.membership.lease.LeaseKeeper``. :class:`VoterKeeper` is a part of
``Membership``: the record lives in the view (``View.voters``), the lease
says whether a change may be made, and ``Membership`` sends what the
keeper decides.

- **An operator's change** (rule 4): refused, and said why
  (``VoterOutcome``), unless our record is settled at the request's base
  version, we are not leaving, we hold our lease under the record, and we
  are the steward (the lowest live id: every peer holding a lease at one
  instant holds it on one ring, so all of them name the same one).
- **Settling** (rule 4): a joint record under which we hold our lease is
  settled, by the peer that holds it.
- **Gossip** (rule 5): a member's record of a higher version replaces ours;
  one of a lower version is answered with ours; another of the same version
  is two concurrent changes, and ours stays (``voters_conflict``). A record
  that breaks the record's own rules is refused (``bad_voters``).
- Every record we take is followed by the lease at once (rule 3: a change
  of record starts a grace).
"""

from __future__ import annotations

from collections import Counter

from ring.membership.lease import LeaseKeeper
from ring.membership.records import ALIVE, LEFT, LIVE
from ring.membership.view import View
from ring.membership.voters import Survival, VoterRecord, joint_change, problem, settle, survival, wins
from ring.messages import VoterAction, VoterOutcome, Voters

__all__ = ["VoterKeeper"]


class VoterKeeper:
    """One peer's voter record: what it decides of changes and of others' records (module docstring).

    Times are on the real clock (``Membership``'s ``now + stalled``), the lease's.
    """

    __slots__ = ("_self_id", "_ring_name", "_view", "_leases", "_dropped")

    def __init__(self, self_id: str, ring_name: str, view: View, leases: LeaseKeeper,
                 dropped: Counter[str]) -> None:
        self._self_id = self_id
        self._ring_name = ring_name
        self._view = view
        self._leases = leases
        self._dropped = dropped

    def message(self) -> Voters:
        """Our voter record as gossip carries it."""
        r = self._view.voters
        return Voters(self._ring_name, self._self_id, r.version, r.voters, r.joint)

    def survival(self) -> Survival:
        """How many voters can fail while a majority stays alive, in our view."""
        alive = {mid for mid, m in self._view.members.items() if m.state in LIVE}
        return survival(self._leases.quorums(), alive)

    def change(self, action: VoterAction, target: str, base: int,
               real: float) -> tuple[VoterOutcome, VoterRecord | None]:
        """An operator's change (rule 4): what we do, and the joint record to adopt when we make one."""
        view = self._view
        record = view.voters
        if view.members[self._self_id].state is LEFT:
            return VoterOutcome.LEAVING, None
        if base != record.version:
            return VoterOutcome.STALE, None
        if not record.settled:
            return VoterOutcome.BUSY, None
        state = self._leases.state(real)
        if state is None or not state.held:
            return VoterOutcome.NO_LEASE, None
        if min(view.live()) != self._self_id:
            # One writer at a time (rule 4): every peer holding a lease at one
            # instant holds it on one ring, so all of them name the same steward.
            return VoterOutcome.NOT_STEWARD, None
        member = view.members.get(target)
        if action is VoterAction.ADD and target not in record.voters and (
                member is None or member.state is not ALIVE):
            return VoterOutcome.NOT_LIVE, None
        if action is VoterAction.RETIRE and record.voters == (target,):
            return VoterOutcome.LAST_VOTER, None
        new = joint_change(record, action, target)
        if new is None:
            return VoterOutcome.ALREADY, None
        return VoterOutcome.CHANGING, new

    def settling(self, real: float) -> VoterRecord | None:
        """The settled record to adopt now: our record is joint and we hold our lease under it (rule 4)."""
        record = self._view.voters
        if record.settled:
            return None
        state = self._leases.state(real)
        if state is not None and state.held:
            return settle(record)
        return None

    def adopt(self, record: VoterRecord, real: float) -> None:
        """Take ``record`` as ours (it won: rule 5), and let the lease follow it (rule 3)."""
        self._view.set_voters(record)
        self._leases.follow(real)

    def heard(self, msg: Voters, real: float) -> bool:
        """A member's voter record (rule 5), taken if it wins; True when the sender is behind and is to
        be told ours."""
        record = VoterRecord(msg.version, msg.voters, msg.joint)
        if problem(record) is not None:
            self._dropped["bad_voters"] += 1
            return False
        ours = self._view.voters
        if wins(record, ours):
            self.adopt(record, real)
            return False
        if record.version < ours.version:
            return True
        if record != ours:
            self._dropped["voters_conflict"] += 1  # two concurrent changes: ours stays (sticky)
        return False
