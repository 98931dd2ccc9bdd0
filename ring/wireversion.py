"""Which wire version to speak to whom: read from the routing id every frame comes on (pure).

A ring upgrades one peer at a time, so for a while its peers speak two wire
versions (``ring.wirecodec`` rule 1). A sender must encode each frame at the
version its receiver speaks; this module says which that is.

Rules:

1. **A routing id names its sender's version.** From wire version 4 a
   peer's DEALERs connect as ``<member id>/<nonce>`` (``ring.forwarding.routes``)
   whose nonce is 16 random hex digits followed by the peer's :data:`VERSION`
   as two hex digits (:func:`marked_nonce`); a tool's requests come on
   ``~tool/<nonce>``, marked the same way (:func:`tool_route`). A peer of
   version 3 drew 16 digits and no mark; it still accepts the longer nonce
   (its check is 1-32 hex digits), and sees a tool's route as claiming no
   member, as before. The receiver reads the mark off every routing id, so it
   knows a sender's version from its first frame, with no message and no byte
   more: the id travels once, in the connection's handshake (ZMTP 3.0).
2. **An unmarked routing id is version 3** (:data:`UNMARKED`): the last
   build whose ids were not marked. libzmq's own anonymous ids (a tool of
   version 3) are unmarked too.
3. **A member we have not heard from is spoken to at** :data:`MIN_VERSION`,
   the oldest version we speak: every peer within one version of us reads it,
   and a member heard from a moment later is answered at its own. The newest
   would cost the frames an older member drops until we hear from it, and a
   joiner's ``Join`` to an older seed would never be read. A member's
   messages reach us every gossip round (probes, acks), so the lowest is
   spoken for at most a round or two after a start.
   **Except the duplicate messages** (:data:`WHOLE_ONLY`: ``NearQuery``,
   ``NearAnswer``, ``Reverdict``), which go to a member not yet heard from at
   our own version: their fields of version 4 (what a page's canonical says,
   its body digest, the copies it outranks) decide which copy a band owner
   keeps (``peer.core.dedupe.precedence``), and a band owner that read a
   version-3 frame of a version-4 peer would record the page as having no
   canonical, so that a later copy outranked it. Seen at a ring's start: an
   original fetched in the first round was marked a copy of its own copy.
   A member of version 3 refuses such a frame for that round (counted as
   ``version`` in its drops); the asker then decides the page without
   that owner's answer, as for any owner that does not answer in time.
4. **The version is the process's.** A member's version is the mark of the
   route it was last heard on: a restart is a new route (a fresh nonce), so an
   upgraded or rolled-back member is spoken to at its new version from its
   first frame. With CurveZMQ only a route whose ZAP User-Id is the member's
   own counts (``ring.node`` rule 2 applies to its messages; here to its word
   on its version). Without Curve anyone can claim a member's route, as they
   can already send as it.
5. **Answers go at the asker's version.** A reply on the ROUTER (a tool's
   status, forget or voter request; an ack to the adopt tool) is encoded at
   the version its route names, clamped to the ones we speak.
6. **A type the receiver's version lacks is not sent** (``ring.messages.speaks``):
   the sender counts it as ``wire.withheld.<type>`` and the receiver never sees
   it. An older peer would drop it as an unknown type anyway; not sending it
   keeps that peer's drop counters for real faults. A message type of a later
   version must therefore be one whose absence an older peer already lives
   with: gossip that its own state stands in for, a request only tools send.
7. **A value an older peer would misread is said its way** (:func:`said_to`).
   A ``PingAck``'s ``vouch`` with ``recent`` rings (``ring.membership.lease``
   rule 2, leases by host) means "my ring, and these I held a moment ago";
   a peer of version 3 drops ``recent`` and would count the vouch as a
   settled one, inside the grace its own rules keep. To it the answer
   vouches for nothing until ``recent`` is empty (``Vouch.whole``), as its
   own rule 2 did. At config epoch 0 our vouch names our cluster.toml's
   fingerprint, which a peer of version 3 never names: to it we vouch for
   the ring alone, as it does (``ring.membership.epochs`` rule 3).

A member two versions apart (its mark below :data:`MIN_VERSION`) is still
spoken to at :data:`MIN_VERSION`; it refuses those frames as we refuse its,
each side counting them as ``version`` in its drops (``ring status``).
"""

from __future__ import annotations

import re
from dataclasses import replace
from collections.abc import Callable

from ring.forwarding.routes import route_member
from ring.messages import Message, NearAnswer, NearQuery, PingAck, Reverdict
from ring.wirecodec import BASE_VERSION, MIN_VERSION, VERSION

__all__ = ["NONCE_DIGITS", "TOOL", "UNMARKED", "WHOLE_ONLY", "WireVersions", "marked_nonce", "route_version", "said_to", "speak_to",
           "tool_route"]

#: Random hex digits of a route's nonce; a marked nonce has two more.
NONCE_DIGITS = 16
#: The version of a routing id that names none (rule 2).
UNMARKED = BASE_VERSION
#: Types sent whole to a member not yet heard from (rule 3's exception).
WHOLE_ONLY: frozenset[type] = frozenset((NearQuery, NearAnswer, Reverdict))
#: What a tool's routing id starts with: not a member id (``ring.forwarding.routes``).
TOOL = b"~tool"
#: Members kept before those no longer in the view are dropped (a view holds at
#: most ``ring.messages.MAX_MEMBERS``, 1,024).
_PRUNE_AT = 2048
_MARKED = re.compile(rb"[0-9a-f]{%d}([0-9a-f]{2})" % NONCE_DIGITS)


def marked_nonce(random_hex: str, version: int = VERSION) -> str:
    """A route's nonce: ``random_hex`` (16 hex digits) and ``version`` as two (rule 1)."""
    if len(random_hex) != NONCE_DIGITS or not 0 < version < 256:
        raise ValueError(f"a nonce of {NONCE_DIGITS} hex digits and a version 1-255: {random_hex!r}, {version}")
    return f"{random_hex}{version:02x}"


def tool_route(random_hex: str, version: int = VERSION) -> bytes:
    """A tool's routing id: claims no member, names its version (rule 1)."""
    return TOOL + b"/" + marked_nonce(random_hex, version).encode("ascii")


def route_version(route: bytes) -> int:
    """The wire version a routing id names (rules 1 and 2)."""
    _, sep, nonce = route.rpartition(b"/")
    m = _MARKED.fullmatch(nonce) if sep else None
    return int(m.group(1), 16) if m is not None else UNMARKED


def speak_to(version: int) -> int:
    """The version to encode at for a receiver of ``version``: the nearest one we speak."""
    return max(MIN_VERSION, min(VERSION, version))


class WireVersions:
    """member -> the wire version to speak to it (rules 3 and 4) (mutable).

    ``known(member)``: whether it is a member of our view; routes of others
    are not kept, so the table is bounded by the view.
    """

    __slots__ = ("curve", "known", "_of", "_last")

    def __init__(self, known: Callable[[str], bool], *, curve: bool = False) -> None:
        self.curve = curve
        self.known = known
        self._of: dict[str, tuple[bytes, int]] = {}
        self._last = b""  # the route of the last frame taken: most frames repeat it

    def heard(self, route: bytes, user_id: str | None = None) -> None:
        """A frame came on ``route`` (``user_id``: its ZAP User-Id under Curve)."""
        if route == self._last:
            return
        member = route_member(route)
        if member is None:
            return  # a tool's: rule 5 answers it by its route
        had = self._of.get(member)
        if had is not None and had[0] == route:
            self._last = route
            return
        if (self.curve and user_id != member) or not self.known(member):
            return
        if had is None and len(self._of) >= _PRUNE_AT:
            self._of = {m: r for m, r in self._of.items() if self.known(m)}  # forgotten members go
        self._of[member] = (route, speak_to(route_version(route)))
        self._last = route

    def of(self, member: str) -> int:
        """The version to encode frames for ``member`` at (rule 3: the oldest until heard from)."""
        got = self._of.get(member)
        return got[1] if got is not None else MIN_VERSION

    def for_message(self, member: str, kind: type) -> int:
        """The version to encode a ``kind`` message for ``member`` at: :meth:`of`, but our own
        for a type of :data:`WHOLE_ONLY` to a member not yet heard from (rule 3)."""
        got = self._of.get(member)
        if got is not None:
            return got[1]
        return VERSION if kind in WHOLE_ONLY else MIN_VERSION

    def knows(self, member: str) -> bool:
        """Whether ``member`` was heard from, so :meth:`of` is its own version, not rule 3's oldest."""
        return member in self._of

    def versions(self) -> dict[str, int]:
        """Each member heard from, with its version."""
        return {m: v for m, (_, v) in self._of.items()}


def said_to(msg: Message, version: int, plain: Callable[[int], int] | None = None) -> Message:
    """``msg`` as a member of wire ``version`` must be told it (rule 7); ``plain``: our vouch
    as such a member vouches, without our config epoch (``ring.membership.lease.Lease.plain_of``)."""
    if version < 4 and isinstance(msg, PingAck) and msg.recent:
        return replace(msg, vouch=0, recent=(), settle_ms=0)
    if version < 4 and isinstance(msg, PingAck) and plain is not None and msg.vouch:
        vouch = plain(msg.vouch)
        return replace(msg, vouch=vouch) if vouch != msg.vouch else msg
    return msg
