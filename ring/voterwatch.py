"""The node's side of the lease's voters: requests, records told and made durable, survival (pure).

The voters (``ring.membership.voters``) are the quorum a lease counts, a
record changed as Raft changes its configuration (Ongaro, "Consensus:
bridging theory and practice", 2014, ch. 4). ``Membership`` keeps the
record and its gossip; :class:`VoterWatch` is the part of
``ring.node.RingNode`` that turns it into actions (``ring.actions``) for
the driver and the operator, and owns what that needs remembered: the
record last made durable and the voters' survival as last logged. It adds
its counts to the node's counter of refusals, as ``ring.handoff`` does.
This is rule 10 of ``ring.node``:

- A ``VoterRequest`` (``python -m ring voter add|retire``) changes the
  voters (``Membership.change_voters``, ``ring.membership.voters`` rule 4)
  only when this peer's record is settled at the request's ``base``
  version and it holds its lease: a stale, early or malformed request
  changes nothing, is answered with why (``VoterOutcome``) and counted
  (``voter_<outcome>``, ``voter_malformed``).
- Each change of our record is a ``VotersChanged``, ahead of every other
  action of its round (``ring.membership.voters`` rule 6: on disk before
  use), and a log line; a member that joined, restarted or refuted is sent
  our record, since a new process may hold an older one.
- Each change of the voters alive, or of the record, that leaves the ring
  surviving no failure (a majority of the voters alive, but not one more)
  is a WARNING, once; the ring surviving a failure again is said once too.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence

from ring.actions import Action, Count, Log, Reply, Send, VotersChanged
from ring.membership.protocol import Membership
from ring.membership.records import LIVE, ChangeReason, MemberEvent
from ring.membership.voters import Survival
from ring.messages import MemberState, VoterOutcome, VoterReply, VoterRequest

__all__ = ["VoterWatch"]

#: A voter request's outcomes that change nothing for a reason of the request's (counted).
_VOTER_REFUSED = frozenset(VoterOutcome) - {VoterOutcome.CHANGING, VoterOutcome.ALREADY}

#: What the survival warning compares: the survival, the quorums, the voters alive in them.
_SurvivalKey = tuple[Survival, tuple[tuple[str, ...], ...], frozenset[str]]


class VoterWatch:
    """Rule 10 of ``ring.node`` for one member (module docstring)."""

    __slots__ = ("_peer_id", "_ring_name", "_membership", "_dropped", "_told", "_survival")

    def __init__(self, peer_id: str, ring_name: str, membership: Membership, dropped: Counter[str]) -> None:
        self._peer_id = peer_id
        self._ring_name = ring_name
        self._membership = membership
        self._dropped = dropped
        # The record last made durable, and the voters' survival as last logged.
        self._told = membership.voter_record
        self._survival = self._survival_key()

    def request(self, route: bytes, msg: VoterRequest, now: float) -> tuple[list[Action], bool]:
        """An operator's change of the voters, made or refused, answered and counted; and whether it
        was taken (then the node adds the membership changes that follow)."""
        target = msg.target.strip()
        m = self._membership
        if not target or target != msg.target:
            self._dropped["voter_malformed"] += 1
            return [Count("voter_malformed"), Reply(route, VoterReply(
                self._ring_name, self._peer_id, msg.target, VoterOutcome.STALE, m.voter_record.version,
                msg.nonce))], False
        outcome, sends = m.change_voters(msg.action, target, msg.base, now)
        out: list[Action] = [Reply(route, VoterReply(self._ring_name, self._peer_id, target, outcome,
                                                     m.voter_record.version, msg.nonce))]
        if outcome in _VOTER_REFUSED:
            self._dropped[f"voter_{outcome.value}"] += 1
            out += [Count(f"voter_{outcome.value}"), Log(logging.WARNING, (
                f"voter {msg.action.value} {target} requested by {msg.sender} refused: {outcome.value} "
                f"(our record: {m.voter_record.describe()}, the request's base: version {msg.base})"))]
            return out, False
        if outcome is VoterOutcome.CHANGING:
            out.append(Log(logging.WARNING, f"voter {msg.action.value} {target} requested by {msg.sender}"))
        out += [Send(dest, reply) for dest, reply in sends]
        return out, True

    def saw(self, events: Sequence[MemberEvent]) -> tuple[list[Action], list[Action]]:
        """What the membership changes ``events`` mean for the voters: the actions to put before the
        round's other actions (our record, to make durable), and those to put after them."""
        m = self._membership
        record = m.voter_record
        first: list[Action] = []
        out: list[Action] = []
        if record.version:
            # A new process of a member (or a new member) may hold an older record: tell it ours.
            out += [Send(e.id, m.voters_message()) for e in events
                    if e.id != self._peer_id and e.state is MemberState.ALIVE
                    and e.reason in (ChangeReason.JOINED, ChangeReason.RESTARTED, ChangeReason.REFUTED)]
        if record != self._told:
            self._told = record
            first.append(VotersChanged(record))  # rule 6 of ring.membership.voters: on disk first
            out.append(Log(logging.INFO, f"voters: {record.describe()}"))
        return first, out + self._survival_log()

    def _survival_key(self) -> _SurvivalKey:
        m = self._membership
        quorums = tuple(tuple(q) for q in m.quorums())
        members = m.members()
        alive = frozenset(v for q in quorums for v in q if v in members and members[v].state in LIVE)
        return m.survival(), quorums, alive

    def _survival_log(self) -> list[Action]:
        """A change that leaves the ring surviving no failure is warned, once."""
        key = self._survival_key()
        if key[1:] == self._survival[1:]:
            return []
        before, self._survival = self._survival[0], key
        now = key[0]
        slack, was = now.alive - now.needed, before.alive - before.needed
        down = sorted({v for q in key[1] for v in q} - key[2])
        gone = f"; not alive: {', '.join(down)}" if down else ""
        if slack <= 0 and slack < was:
            if slack < 0:
                what = f"no majority of the voters is alive ({now.alive} of {now.quorum}, {now.needed} needed{gone})"
            else:
                what = (f"the ring now survives no failure: {now.alive} of {now.quorum} voters alive, "
                        f"{now.needed} needed{gone}")
            return [Log(logging.WARNING, (
                f"voters: {what}; make a live member a voter (python -m ring voter add ID) or retire a "
                "dead one (python -m ring voter retire ID)"))]
        if slack > 0 and was <= 0:
            return [Log(logging.INFO, (f"voters: the ring survives {now.survives} failure"
                                       f"{'s' if now.survives != 1 else ''} again ({now.alive} of {now.quorum} "
                                       f"voters alive, {now.needed} needed)"))]
        return []
