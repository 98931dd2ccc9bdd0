"""``python -m ring forget`` at one member: a dead or left member dropped at an operator's word (pure).

A lease counts the vouches of a quorum that keeps its dead members
(``ring.membership.lease`` rule 4), so a ring that lost its majority for
good stays paused until an operator says a member is gone for good. This module is what one member
does with that word, rule 8 of ``ring.node``: it drops the member from its
view and its quorum (``Membership.forget``) only when its view holds it
dead or left; never itself (``self``: the target is running), never a
member alive or suspect here (``alive``, ``suspect``: forgetting a live
member would silently shrink the quorum a lease needs, and change the ring
under its hosts). The reply says which (``ForgetOutcome``), and the log
says it too.
"""

from __future__ import annotations

import logging

from ring.actions import Action, Log, Reply
from ring.membership.protocol import Membership
from ring.messages import ForgetOutcome, ForgetReply, ForgetRequest, MemberState

__all__ = ["answer_forget"]


def answer_forget(membership: Membership, peer_id: str, ring_name: str, route: bytes, msg: ForgetRequest,
                  now: float) -> tuple[list[Action], bool]:
    """Forget ``msg.target`` if our view holds it gone, and say what was done; and whether it was
    forgotten (then the node adds the membership changes and the ring change that follow)."""
    target = msg.target
    rec = membership.members().get(target)
    if target == peer_id:
        outcome = ForgetOutcome.SELF
    elif rec is None:
        outcome = ForgetOutcome.NOT_KNOWN
    elif rec.state is MemberState.ALIVE:
        outcome = ForgetOutcome.ALIVE
    elif rec.state is MemberState.SUSPECT:
        outcome = ForgetOutcome.SUSPECT
    else:
        outcome = ForgetOutcome.FORGOTTEN if membership.forget(target, now) else ForgetOutcome.NOT_KNOWN
    out: list[Action] = [Reply(route, ForgetReply(ring_name, peer_id, target, outcome, msg.nonce))]
    if outcome is ForgetOutcome.FORGOTTEN:
        assert rec is not None
        out.append(Log(logging.WARNING, (
            f"forget requested by {msg.sender}: {target} ({rec.state.value}, incarnation "
            f"{rec.incarnation}) dropped from our view and quorum; a new process of it joins again")))
        return out, True
    if outcome is ForgetOutcome.NOT_KNOWN:
        out.append(Log(logging.INFO, f"forget requested by {msg.sender}: {target} is not in our view"))
    else:
        why = "that is this peer" if outcome is ForgetOutcome.SELF else f"{target} is {outcome.value} in our view"
        out.append(Log(logging.WARNING, f"forget of {target} requested by {msg.sender} refused: {why}"))
    return out, False
