"""A member's routing id on the wire, ``b"<member id>/<nonce>"``, and the routes each member was heard on (pure).

Each member process connects its DEALERs with one routing id, its id plus a
random hex nonce drawn per process, so a restart is a new route, never a
duplicate (``ring.io.zmqio``'s "Routes: no takeover" explains why a duplicate
would lock the member out), and a receiver can tell which member a route
claims to be (``ring.node`` checks it against every member message). A
tool's route (libzmq's own, 5 bytes from a zero byte, or ``~tool/<nonce>``) claims no member.
From wire version 4 the nonce ends with its sender's version (``ring.wireversion``).

:class:`Routes` is a part of ``ring.node.RingNode``: its rules 2 and 4, the
checks on who a member's message comes from and whether it comes from a
new process of that member, on the state they need (the route each
member's newest process uses, and the highest epoch heard from it there).
The node carries out a restart's duties (``ring.forwarding.forwarder``'s
"Termination counters").
"""

from __future__ import annotations

import re
from collections.abc import Collection

from ring.messages import Digest, Join, Leave, Message, Packet, Ping, PingAck, PingReq, Sync, UrlBatch

__all__ = ["Routes", "claimed_epoch", "member_route", "route_member"]

_ROUTE_SEP = b"/"
_ROUTE_NONCE = re.compile(rb"[0-9a-f]{1,32}")
_MEMBER_ID = re.compile(rb"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def member_route(member_id: str, nonce: str) -> bytes:
    """The routing id of a member's DEALER: ``b"<member id>/<nonce>"`` (nonce: hex, per process)."""
    route = member_id.encode("ascii") + _ROUTE_SEP + nonce.encode("ascii")
    if route_member(route) != member_id:
        raise ValueError(f"not a member route: {member_id!r} / {nonce!r}")
    return route


def route_member(route: bytes) -> str | None:
    """The member id a routing id claims, or None for any other routing id (a tool's, libzmq's own)."""
    mid, sep, nonce = route.rpartition(_ROUTE_SEP)
    if not sep or not _MEMBER_ID.fullmatch(mid) or not _ROUTE_NONCE.fullmatch(nonce):
        return None
    return mid.decode("ascii")


def claimed_epoch(msg: Message) -> int | None:
    """The sender's own start epoch or incarnation, where ``msg`` says it (``ring.node`` rule 4).

    -1 for a message that could say it and does not; None for a kind that never does.
    """
    sender = msg.sender
    if isinstance(msg, UrlBatch | Packet):
        return msg.epoch
    if isinstance(msg, Join | Leave):
        return msg.incarnation
    if isinstance(msg, Ping | PingReq | PingAck):
        # Every probe message carries its sender's own record first.
        return next((m.incarnation for m in msg.updates if m.id == sender), -1)
    if isinstance(msg, Sync):
        return next((e[1] for e in msg.summary if e[0] == sender), -1)
    if isinstance(msg, Digest):
        return next((m.incarnation for m in msg.members if m.id == sender), -1)
    return None


class Routes:
    """member -> (the route its newest process uses, the highest epoch heard from it there) (mutable)."""

    __slots__ = ("curve", "_routes")

    def __init__(self, *, curve: bool = False) -> None:
        self.curve = curve  # a ZAP User-Id comes with every message (CurveZMQ)
        self._routes: dict[str, tuple[bytes, int]] = {}

    def impostor(self, route: bytes, user_id: str | None, sender: str) -> str | None:
        """Rule 2: why a member's message on ``route`` is not from ``sender``, or None if it may be."""
        claimed = route_member(route)
        if self.curve and (user_id is None or user_id != sender or claimed != user_id):
            return "wrong_user"  # its key is another member's (or it took another's route)
        if claimed != sender:
            return "route_spoof"
        return None

    def heard(self, route: bytes, sender: str, epoch: int) -> bool:
        """Rule 4: ``sender`` (a member) was heard on ``route`` saying ``epoch``; True if that is
        a new process of it: a new route with a later epoch than any heard before."""
        known = self._routes.get(sender)
        if known is None or known[0] == route:
            self._routes[sender] = (route, max(epoch, known[1] if known else epoch))
            return False
        if epoch <= known[1]:
            return False  # a late message of an earlier life (or a forged route): no restart
        self._routes[sender] = (route, epoch)
        return True

    def live(self, route: bytes, sender: str) -> bool:
        """Whether ``route`` is the route ``sender``'s newest process was heard on (rule 4's state).

        For a member message that says no epoch (a band query or answer): it
        cannot show itself a new process, so only the route the member's
        gossip made live may carry it. Without CurveZMQ anyone may claim a
        member's id on a route of its own; that route is never live unless
        it also claims a later life in gossip, which the member refutes
        (``ring.membership`` rule 4) and which is counted as a restart.
        """
        known = self._routes.get(sender)
        return known is not None and known[0] == route

    def keep(self, members: Collection[str]) -> None:
        """Forgotten members' routes go with them: at most one per member of the view."""
        if len(self._routes) > len(members) or any(m not in members for m in self._routes):
            self._routes = {m: r for m, r in self._routes.items() if m in members}
