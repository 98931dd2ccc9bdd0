"""A member's routing id on the wire: ``b"<member id>/<nonce>"`` (pure).

Each member process connects its DEALERs with one routing id, its id plus a
random hex nonce drawn per process, so a restart is a new route, never a
duplicate (``ring.io.zmqio``'s "Routes: no takeover" explains why a duplicate
would lock the member out), and a receiver can tell which member a route
claims to be (``ring.node`` checks it against every member message). A
tool's route (libzmq's own, 5 bytes from a zero byte) claims no member.
"""

from __future__ import annotations

import re

__all__ = ["member_route", "route_member"]

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
