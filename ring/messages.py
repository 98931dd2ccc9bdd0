"""The ring's wire codec: every message between peers, and its msgpack form.

A frame is one msgpack array, positional for compactness (URL batches are the
volume)::

    [VERSION, TYPE_CODE, field1, field2, ...]      fields in dataclass order

``VERSION`` changes whenever a layout changes; a peer refuses other versions
rather than guess. The type codes are :data:`TYPE_CODES`. Nested records
(:class:`Member`, :class:`MemberStatus`) are arrays of their fields in the same
way; a :class:`MemberState` travels as its index in ``MemberState``'s order.
A :class:`UrlBatch`'s ``urls`` travel as two parallel arrays, ``[[url...],
[depth...]]``, which packs and checks in C-speed passes instead of one Python
step per pair (bytes per URL: the URL, its 1–3 byte string header and a
1-byte depth).

What each message is for:

- :class:`Digest` — heartbeat gossip. Each :class:`Member` entry carries that
  member's own ``heartbeat`` and termination counters (``idle``, ``sent``,
  ``received``, ``pages``) and its page-budget ``grants`` (``ring.membership.budget``)
  rather than the digest carrying only the sender's:
  gossip goes to a few peers a round and spreads transitively, so a peer
  learns everyone's counters second-hand, ordered by (incarnation,
  heartbeat). The counter method of termination sums them over the live
  members; each peer's share of the cluster-wide ``max_pages`` is its
  cap, moved between members only by grants (``ring.membership.budget``). ``want_reply`` asks for the
  receiver's digest back (push-pull; a reply never asks again).
- :class:`Join` / :class:`Leave` — a new peer announces itself to a seed; a
  leaving one announces ``left`` before handing off.
- :class:`UrlBatch` / :class:`Ack` — URLs forwarded to their owner.
  ``(sender, epoch, seq)`` names a batch: ``seq`` counts per destination and
  ``epoch`` is fixed per process start (e.g. start time in ms), so a restarted
  sender's ``seq`` 0 is not mistaken for a replay, and a replayed frame is.
  ``seen`` carries a hand-off's already-fetched URLs (on a leave or join),
  which the new owner adds to its Bloom filter without queueing; it rides in
  the same acked, resent batches rather than in a message of its own.
- :class:`Packet` — everything one member has for another at one flush
  (``ring.forwarding.forwarder`` rule 7): acks of the receiver's batches (``acks``,
  ``acked_epoch``) and any of the sender's own batches, as
  :class:`BatchPart` s of ``epoch``, at most ``batch_size`` entries in all.
  Added later under code 15 without a ``VERSION`` change: a lone batch still
  goes as a :class:`UrlBatch` and a lone ack as an :class:`Ack`, and both
  old forms decode as before.
- :class:`HandoffDone` — after a ring change, the old owner of some hosts
  tells their new owner that every hand-off batch to it is acked;
  :class:`LeaveRequest` — ``python -m ring leave`` asks a peer to leave;
  :class:`ForgetRequest` / :class:`ForgetReply` — ``python -m ring forget``
  asks a peer to drop a dead member from its view and its quorum
  (``Membership.forget``), and the peer says what it did
  (:class:`ForgetOutcome`); codes 16 and 17, added without a ``VERSION``
  change (a peer that does not know them drops them as an unknown type).
- :class:`Voters` — a member's voter record (``ring.membership.voters``),
  pushed when it changes and sent with anti-entropy; :class:`VoterRequest`
  / :class:`VoterReply` — ``python -m ring voter add|retire`` asks a peer to
  change it (:class:`VoterAction`) from the version the operator saw
  (``base``), and the peer says what it did (:class:`VoterOutcome`). Codes
  20-22, added without a ``VERSION`` change, as 16 and 17: a peer of an
  older build drops them as an unknown type, and takes part with version 0
  (cluster.toml's voters).
- :class:`NearQuery` / :class:`NearAnswer` — duplicate content
  (``peer.core.dedupe.verdicts``): a peer asks the owner of some of a page's SimHash
  bands whether an earlier page is within k bits of it, and the owner
  answers with the nearest (``duplicate_of``, ``distance``) or nil and -1.
  Their fields after ``ring`` and ``sender`` are ``peer.core.dedupe.bands``'s,
  in its order. Codes 18 and 19, added without a ``VERSION`` change, as
  16 and 17: no layout changed, and a peer of an older build drops them as
  an unknown type and counts it; the asker then decides the page at its
  ``answer_timeout`` with what came (a missed duplicate, never a stall).
- :class:`RestartRequest` — ``python -m ring restart`` asks a peer to stop
  for a planned restart (``ring.membership.restarts``); code 37, without a
  ``VERSION`` change, as 16 and 17. The restarting member's record says
  ``MemberState.RESTARTING`` (index 4, new in wire version 4).
- :class:`Ping` / :class:`PingReq` / :class:`PingAck` — SWIM's failure
  detector: a probe, a request to probe for the sender, and the
  answer (relayed by the helper for a ``PingReq``). Each carries at most
  ``MAX_UPDATES`` piggybacked :class:`Member` records, the changes the
  sender is still spreading, so a round costs O(1) bytes whatever N is;
  the full :class:`Digest` is kept for joins, pushed verdicts and the
  answers of :class:`Sync`, the anti-entropy summary.
- :class:`StatusRequest` / :class:`StatusReply` — ``python -m ring status``;
  one :class:`MemberStatus` per member with the keys of ``--json``, plus the
  ``dropped`` counters (garbage, unknown type, other ring, replay...), so an
  operator sees what the peer refused, the failed fetches by kind and the
  busiest hosts against their setpoint (``ring dashboard``), and the
  member's own view of its lease (:class:`LeaseStatus`, vouches, the ring's
  version and fingerprint: peers that agree on the ring show one
  fingerprint). ``nonce`` matches a reply to its request.

An entry's URL may carry a tail after a space: a sitemap job's depth and
grants, or a sitemap's hints about the URL (``peer.core.sitemaps.hints``;
``VERSION`` 3). The codec carries it as the string it is; a peer of
``VERSION`` 2 would have taken the tail for part of the URL, so it refuses
the frame instead.

The codec checks types and ranges only. A decoded URL is still untrusted
input: the receiver normalises it (``peer.core.urls.normalize``) and checks ``ring`` against
its own ring name before acting on anything.

Errors (``ring.errors``): :func:`decode` of anything that is not a valid frame
of this version raises only :class:`DecodeError` (the remote's fault: drop and
count); :func:`encode` of a message it cannot carry raises :class:`EncodeError`
(ours). Everything :func:`encode` returns, :func:`decode` accepts.

Limits (a hostile frame costs bounded memory and time):

=================  ===========  ==============================================
frame              8 MiB        length check before unpacking (``unpackb``
                                takes no ``max_buffer_size``; that is the
                                streaming ``Unpacker``'s option)
string             8 KiB        ``max_str_len``; a URL is ≤ 4 KiB (peer.core.urls.normalize)
array              10 000       ``max_array_len``; URLs in a batch, ``seen``
names              256 chars    ring name, peer id, address, counter name
members            1 024        entries of a digest or status reply
updates            64           piggybacked records of a ping, ping-req, ack
dropped counters   64           entries of ``MemberStatus.dropped``, ``.errors``
busiest hosts      10           entries of ``MemberStatus.busiest``
bin, map, ext      none         ``max_*_len=0``: the codec uses none of them
=================  ===========  ==============================================

Integers are unsigned 64-bit; floats are finite and non-negative; ``bool`` is
not an ``int`` here (msgpack keeps them apart, and so do the checks).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from enum import StrEnum
from operator import attrgetter
from typing import Any, Union

import msgpack

from ring.errors import DecodeError, DropKind, EncodeError
from ring.vocabulary import Family, Split, split_pairs

__all__ = [
    "VERSION",
    "TYPE_CODES",
    "MAX_FRAME",
    "MAX_STR",
    "MAX_ARRAY",
    "MAX_NAME",
    "MAX_MEMBERS",
    "MAX_BUSIEST",
    "MAX_DROPPED",
    "MemberState",
    "Member",
    "MemberStatus",
    "Digest",
    "Join",
    "Leave",
    "UrlBatch",
    "Ack",
    "BatchPart",
    "Packet",
    "StatusRequest",
    "StatusReply",
    "HandoffDone",
    "HostStarts",
    "LeaveRequest",
    "RestartRequest",
    "ForgetRequest",
    "ForgetReply",
    "ForgetOutcome",
    "NearQuery",
    "NearAnswer",
    "Voters",
    "VoterAction",
    "VoterOutcome",
    "VoterRequest",
    "VoterReply",
    "LeaseStatus",
    "Ping",
    "PingReq",
    "PingAck",
    "Sync",
    "MAX_UPDATES",
    "Message",
    "encode",
    "decode",
    "DecodeError",
    "EncodeError",
]

# 3: a Member record carries its page-budget grants (ring.membership.budget); a peer
# of version 2 would read a 10-field record and could not know the caps.
# An entry's URL may carry a sitemap tail (peer.core.sitemaps.hints), which a
# peer of version 2 would take for part of the URL.
VERSION = 3
MAX_FRAME = 8 * 1024 * 1024
MAX_STR = 8 * 1024
MAX_ARRAY = 10_000
MAX_NAME = 256
MAX_MEMBERS = 1024
MAX_DROPPED = 64
MAX_UPDATES = 64
#: Busiest hosts a status reply carries (MemberStatus.busiest).
MAX_BUSIEST = 10
MAX_UINT = 2**64 - 1


class MemberState(StrEnum):
    """A member's state in the membership view; the wire carries its index."""

    ALIVE = "alive"
    SUSPECT = "suspect"
    DEAD = "dead"
    LEFT = "left"
    # A planned restart (ring.membership.restarts): its index, 4, is new in wire
    # version 4; a peer of version 3 must be sent ALIVE in its place (it then
    # probes the member and finds it dead, as before planned restarts).
    RESTARTING = "restarting"


class LeaseStatus(StrEnum):
    """A member's lease as its own status row says (``ring.membership.lease``); the wire carries its index."""

    UNKNOWN = "unknown"  # not the member's own row (it did not answer), or no lease figures
    HELD = "held"  # a majority vouches for its ring: requests start
    GRACE = "grace"  # paused: its ring changed a moment ago (ring.membership.lease rule 2)
    NO_MAJORITY = "no_majority"  # paused: too few members vouch for its ring (rule 4)


class ForgetOutcome(StrEnum):
    """What a peer did with a :class:`ForgetRequest`; the wire carries its index."""

    FORGOTTEN = "forgotten"  # dropped from its view and its quorum
    NOT_KNOWN = "not_known"  # not in its view (never heard of, or forgotten already)
    SELF = "self"  # the target is the answering peer: it is running
    ALIVE = "alive"  # refused: alive in its view
    SUSPECT = "suspect"  # refused: suspected, not yet dead, in its view


class VoterAction(StrEnum):
    """What ``python -m ring voter`` asks of the voter record; the wire carries its index."""

    ADD = "add"  # make a member a voter
    RETIRE = "retire"  # make a voter a learner


class VoterOutcome(StrEnum):
    """What a peer did with a :class:`VoterRequest` (``ring.membership.voters``); the wire carries its index."""

    CHANGING = "changing"  # it made the joint record: the change spreads and settles
    ALREADY = "already"  # nothing to change: a voter already (add), or not one (retire)
    STALE = "stale"  # the request's base is not this peer's version: ask again
    BUSY = "busy"  # a change is under way (a joint record): wait for it to settle
    NO_LEASE = "no_lease"  # this peer holds no lease: no majority vouches for its ring
    NOT_LIVE = "not_live"  # add: the member is not alive in its view
    LAST_VOTER = "last_voter"  # retire: a ring needs one voter at least
    LEAVING = "leaving"  # this peer is leaving the ring
    NOT_STEWARD = "not_steward"  # only the lowest id of the live ring changes the voters: ask it


# --------------------------------------------------------------------------
# The messages


@dataclass(frozen=True, slots=True)
class Member:
    """One entry of a gossip digest: a member as the sender last heard of it."""

    id: str
    address: str
    incarnation: int
    state: MemberState
    weight: float
    heartbeat: int = 0
    idle: bool = False
    sent: int = 0
    received: int = 0
    pages: int = 0
    #: (recipient, total): the page budget this member has given each one so
    #: far (``ring.membership.budget``), sorted by recipient; written only by the giver.
    grants: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Digest:
    """Member records. ``verdicts``: the dead records in it are the sender's own
    verdicts, from its own failed probes (``ring.membership.view``, "Hearsay")."""

    ring: str
    sender: str
    members: tuple[Member, ...]
    want_reply: bool = False
    verdicts: bool = False


@dataclass(frozen=True, slots=True)
class Join:
    ring: str
    sender: str
    address: str
    weight: float
    incarnation: int


@dataclass(frozen=True, slots=True)
class Leave:
    ring: str
    sender: str
    incarnation: int


@dataclass(frozen=True, slots=True)
class UrlBatch:
    """URLs for their owner, as (url, depth) pairs; ``seen``: hand-off only."""

    ring: str
    sender: str
    epoch: int
    seq: int
    urls: tuple[tuple[str, int], ...]
    seen: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Ack:
    """The receiver took batch (epoch, seq) of ``UrlBatch.sender`` into its frontier."""

    ring: str
    sender: str
    epoch: int
    seq: int


@dataclass(frozen=True, slots=True)
class StatusRequest:
    ring: str
    sender: str
    nonce: int = 0


@dataclass(frozen=True, slots=True)
class MemberStatus:
    """One member's row of ``ring status``: on the wire, in ``ring.tools.client``, the table,
    ``--json`` (:meth:`as_json`) and the dashboard; the field names are its JSON keys.

    A row a member gives of itself carries all its figures; one of another
    member carries what gossip says of it (``ring.status``).
    """

    id: str
    address: str
    state: MemberState
    share: float
    pages: int
    rate: float
    frontier: int
    hosts: int
    forwarded_out: int
    forwarded_in: int
    dns_hit_rate: float
    bloom_fill: float
    uptime: float
    dropped: tuple[tuple[str, int], ...] = ()
    # What `ring dashboard` plots: failed fetches by kind, and the hosts with
    # the most request starts in the last 5 s as (host, pages/min, setpoint
    # pages/min), at most MAX_BUSIEST. Added without a VERSION change: only
    # tools (ring status, ring dashboard) decode a StatusReply, never a peer,
    # so peers of both layouts still gossip as one ring; a tool older than
    # the peers it asks reads no answer.
    errors: tuple[tuple[str, int], ...] = ()
    busiest: tuple[tuple[str, float, float], ...] = ()
    # The member's own view of its lease (ring.membership.lease): whether requests
    # start, the members vouching for its ring (itself included), the
    # majority needed and the quorum it is of, the grace still to run; and
    # its ring: the version (changes of its live set) and the fingerprint
    # its vouches carry. A row of another member (gossip) says UNKNOWN.
    lease: LeaseStatus = LeaseStatus.UNKNOWN
    vouched: int = 0
    needed: int = 0
    quorum: int = 0
    grace_left: float = 0.0
    ring_version: int = 0
    ring_fingerprint: int = 0
    # Whether the answering peer has heard from this member at all: a
    # [[peer]] that never started is in every view, alive at incarnation 0
    # (ring.membership.view), and must not read "alive" (``shown_state``).
    heard: bool = True
    # The member's own view of its max_pages budget (ring.membership.budget):
    # its cap now (0: no max_pages), and whether it waits for a grant, at its
    # cap with URLs queued (so it fetches nothing until one comes).
    page_cap: int = 0
    budget_wait: bool = False
    # The member's voter record (ring.membership.voters) and how many voters
    # can fail while a majority stays alive, in its view: voters alive and
    # the majority needed, of the set closest to losing it. Added without a
    # VERSION change, as errors and busiest were.
    voters_version: int = 0
    voters: tuple[str, ...] = ()
    voters_joint: tuple[str, ...] = ()
    voters_alive: int = 0
    voters_needed: int = 0
    # A member away for a planned restart (ring.membership.restarts): when its
    # hold runs out in the answering peer's view, in epoch seconds (0: not
    # restarting). Added in wire version 4.
    back_by: float = 0.0

    @property
    def live(self) -> bool:
        """Owns hosts: alive or suspect (``ring.membership.records.LIVE``)."""
        return self.state is MemberState.ALIVE or self.state is MemberState.SUSPECT

    @property
    def shown_state(self) -> str:
        """The state an operator reads: ``waiting`` for a listed peer not heard from yet
        (it never started, or has not reached the answering peer), else the state's name."""
        return "waiting" if not self.heard and self.state is MemberState.ALIVE else self.state.value

    @property
    def families(self) -> Split:
        """``dropped`` by family: drops, counters, not-requested causes (``ring.vocabulary`` rule 5)."""
        return split_pairs(self.dropped)

    def as_json(self) -> dict[str, Any]:
        """The ``--json`` form (and the dashboard's): these field names, the pairs named by ``ring.vocabulary``."""
        split = self.families
        return {"id": self.id, "address": self.address, "state": self.shown_state, "share": self.share,
                "pages": self.pages, "rate": self.rate, "frontier": self.frontier, "hosts": self.hosts,
                "forwarded_out": self.forwarded_out, "forwarded_in": self.forwarded_in,
                "dns_hit_rate": self.dns_hit_rate, "bloom_fill": self.bloom_fill, "uptime": self.uptime,
                Family.FAILED.value: dict(self.errors), Family.NOT_REQUESTED.value: dict(split.not_requested),
                Family.DROPS.value: dict(split.drops), Family.COUNTERS.value: dict(split.counters),
                "busiest": [list(b) for b in self.busiest],
                "lease": self.lease.value, "vouched": self.vouched, "needed": self.needed,
                "quorum": self.quorum, "grace_left": self.grace_left, "ring_version": self.ring_version,
                # Hex: a 64-bit integer loses digits in JavaScript (the dashboard) and in many
                # JSON readers. None: the member did not say.
                "ring_fingerprint": f"{self.ring_fingerprint:016x}" if self.ring_fingerprint else None,
                "heard": self.heard, "page_cap": self.page_cap, "budget_wait": self.budget_wait,
                "voters_version": self.voters_version, "voters": list(self.voters),
                "voters_joint": list(self.voters_joint), "voters_alive": self.voters_alive,
                "voters_needed": self.voters_needed,
                "back_by": self.back_by or None,
                # Voters that can fail while a majority of them stays alive (docs/membership.md).
                "survives": max(0, self.voters_alive - self.voters_needed) if self.voters_needed else None}


@dataclass(frozen=True, slots=True)
class StatusReply:
    ring: str
    sender: str
    members: tuple[MemberStatus, ...]
    nonce: int = 0


@dataclass(frozen=True, slots=True)
class HandoffDone:
    """``sender`` has handed us everything we now own of its hosts, for the ring of ``members``.

    Sent once every hand-off batch (queued and ``seen`` URLs) to us is acked,
    and repeated for a few rounds; until it comes, the new owner holds the
    hosts it gained from ``sender`` so that it never fetches a URL the old
    owner fetched (join and leave with hand-off).
    """

    ring: str
    sender: str
    members: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class HostStarts:
    """The last request starts (epoch seconds) of hosts ``sender`` hands over to us.

    Sent just before each :class:`HandoffDone`, on the same connection (so
    it arrives first): a host's new owner counts these against its per-host
    ceiling, so the host sees no burst when its owner changes. Wall-clock
    times: peers' clocks are assumed NTP-close (milliseconds); skew shifts
    the inherited window by that much.
    """

    ring: str
    sender: str
    starts: tuple[tuple[str, float], ...]  # (host, start), at most MAX_ARRAY


@dataclass(frozen=True, slots=True)
class RestartRequest:
    """``python -m ring restart --id TARGET``: ask peer ``target`` to stop for a planned
    restart (``ring.membership.restarts``): it keeps its hosts, and exits with
    ``EXIT_RESTART`` for its service manager to start it again."""

    ring: str
    sender: str
    target: str


@dataclass(frozen=True, slots=True)
class LeaveRequest:
    """``python -m ring leave --id TARGET``: ask peer ``target`` to leave gracefully."""

    ring: str
    sender: str
    target: str


@dataclass(frozen=True, slots=True)
class ForgetRequest:
    """``python -m ring forget --id TARGET``: drop dead member ``target`` from the view and the quorum."""

    ring: str
    sender: str
    target: str
    nonce: int = 0


@dataclass(frozen=True, slots=True)
class ForgetReply:
    """What ``sender`` did with the :class:`ForgetRequest` of ``nonce``."""

    ring: str
    sender: str
    target: str
    outcome: ForgetOutcome
    nonce: int = 0


@dataclass(frozen=True, slots=True)
class Ping:
    """A SWIM probe of ``target`` (the receiver); ``updates`` are piggybacked member records."""

    ring: str
    sender: str
    seq: int
    target: str
    updates: tuple[Member, ...] = ()


@dataclass(frozen=True, slots=True)
class PingReq:
    """SWIM's ping-req: ``sender`` had no answer from ``target``; probe it for us."""

    ring: str
    sender: str
    seq: int
    target: str
    updates: tuple[Member, ...] = ()


@dataclass(frozen=True, slots=True)
class PingAck:
    """``target`` answered probe ``seq`` (directly, or relayed by ``sender``).

    ``vouch``: the fingerprint of the answering peer's ring, or 0 while it
    vouches for none (``ring.membership.lease``, rules 1-2); 0 in a relayed answer.
    """

    ring: str
    sender: str
    seq: int
    target: str
    updates: tuple[Member, ...] = ()
    vouch: int = 0


@dataclass(frozen=True, slots=True)
class Sync:
    """Anti-entropy: what ``sender`` holds, one ``(id, incarnation, state, heartbeat)`` a member.

    The receiver answers with a :class:`Digest` of the records that beat
    these (or that the sender lacks): a third of a full digest's bytes out,
    and only the news back.
    """

    ring: str
    sender: str
    summary: tuple[tuple[str, int, MemberState, int], ...]


@dataclass(frozen=True, slots=True)
class BatchPart:
    """One :class:`UrlBatch` inside a :class:`Packet`, which gives its ring, sender and epoch."""

    seq: int
    urls: tuple[tuple[str, int], ...]
    seen: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Packet:
    """``sender``'s acks and batches for one member, in one frame (acks piggybacked).

    ``acks``: seqs of the receiver's batches of epoch ``acked_epoch`` that
    ``sender`` took (each as an :class:`Ack` would say). ``batches``: the
    sender's batches of its ``epoch``, each as a :class:`UrlBatch` would
    carry it. ``epoch`` is the sender's start epoch even when ``batches`` is
    empty, so a restart is seen on any packet.
    """

    ring: str
    sender: str
    epoch: int
    batches: tuple[BatchPart, ...] = ()
    acked_epoch: int = 0
    acks: tuple[int, ...] = ()

    def url_batches(self) -> tuple[UrlBatch, ...]:
        """The batches as the :class:`UrlBatch` es they stand for."""
        return tuple(UrlBatch(self.ring, self.sender, self.epoch, p.seq, p.urls, p.seen)
                     for p in self.batches)


@dataclass(frozen=True, slots=True)
class NearQuery:
    """``sender`` asks a band owner: an earlier page within k bits of ``fingerprint`` under these ``bands``?"""

    ring: str
    sender: str
    bands: tuple[int, ...]  # band indices only: the owner derives the values from the fingerprint
    fingerprint: int
    url: str
    reply_to: str
    seen_at: float  # the asker's fetch time: the order every owner agrees on


@dataclass(frozen=True, slots=True)
class NearAnswer:
    """A band owner's answer: ``url`` is within ``distance`` of ``duplicate_of`` (nil and -1: of nothing)."""

    ring: str
    sender: str
    url: str
    duplicate_of: str | None
    distance: int


@dataclass(frozen=True, slots=True)
class Voters:
    """``sender``'s voter record (``ring.membership.voters.VoterRecord``'s fields)."""

    ring: str
    sender: str
    version: int
    voters: tuple[str, ...]
    joint: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class VoterRequest:
    """``python -m ring voter add|retire TARGET``: change the voters, from version ``base``."""

    ring: str
    sender: str
    action: VoterAction
    target: str
    base: int
    nonce: int = 0


@dataclass(frozen=True, slots=True)
class VoterReply:
    """What ``sender`` did with the :class:`VoterRequest` of ``nonce``; ``version``: its record's now."""

    ring: str
    sender: str
    target: str
    outcome: VoterOutcome
    version: int
    nonce: int = 0


Message = Union[Digest, Join, Leave, UrlBatch, Ack, StatusRequest, StatusReply, HandoffDone,
                LeaveRequest, HostStarts, Ping, PingReq, PingAck, Sync, Packet, ForgetRequest,
                ForgetReply, NearQuery, NearAnswer, Voters, VoterRequest, VoterReply, RestartRequest]

# --------------------------------------------------------------------------
# Field codecs: (to_wire, from_wire). Each checks and converts one value and
# raises _Invalid; encode/decode add the field's path and translate.


class _Invalid(Exception):
    pass


Check = Callable[[Any], Any]


def _what(v: object) -> str:
    return type(v).__name__


def _name_codec(max_len: int = MAX_NAME) -> tuple[Check, Check]:
    def check(v: Any) -> str:
        if type(v) is not str:
            raise _Invalid(f"expected str, got {_what(v)}")
        if len(v) > max_len:
            raise _Invalid(f"longer than {max_len}")
        return v

    return check, check


def _uint(v: Any) -> int:
    if type(v) is not int:
        raise _Invalid(f"expected int, got {_what(v)}")
    if not 0 <= v <= MAX_UINT:
        raise _Invalid(f"{v} out of range 0..2**64-1")
    return v


def _bool(v: Any) -> bool:
    if type(v) is not bool:
        raise _Invalid(f"expected bool, got {_what(v)}")
    return v


def _float_out(v: Any) -> float:
    if type(v) is not float and type(v) is not int:
        raise _Invalid(f"expected float, got {_what(v)}")
    try:
        return _float_in(float(v))
    except OverflowError:
        raise _Invalid("int too large for a float") from None


def _float_in(v: Any) -> float:
    if type(v) is not float:
        raise _Invalid(f"expected float, got {_what(v)}")
    if not (v >= 0.0 and math.isfinite(v)):
        raise _Invalid(f"{v} is not a finite float >= 0")
    return v


_STATES = tuple(MemberState)
_STATE_CODE: dict[str, int] = {s: i for i, s in enumerate(_STATES)}  # a StrEnum is its str


def _state_out(v: Any) -> int:
    if type(v) is not MemberState and type(v) is not str:
        raise _Invalid(f"expected MemberState, got {_what(v)}")
    code = _STATE_CODE.get(v)
    if code is None:
        raise _Invalid(f"unknown state {v[:20]!r}")
    return code


def _state_in(v: Any) -> MemberState:
    if type(v) is not int or not 0 <= v < len(_STATES):
        raise _Invalid("unknown state code")
    return _STATES[v]


def _enum_codec(cls: type[StrEnum]) -> tuple[Check, Check]:
    """A StrEnum as its index in the enum's order (new members go at the end)."""
    members = tuple(cls)
    codes: dict[str, int] = {m: i for i, m in enumerate(members)}

    def out(v: Any) -> int:
        if type(v) is not cls and type(v) is not str:
            raise _Invalid(f"expected {cls.__name__}, got {_what(v)}")
        code = codes.get(v)
        if code is None:
            raise _Invalid(f"unknown {cls.__name__} {v[:20]!r}")
        return code

    def in_(v: Any) -> Any:
        if type(v) is not int or not 0 <= v < len(members):
            raise _Invalid(f"unknown {cls.__name__} code")
        return members[v]

    return out, in_


def _urls_check(urls: Any, decoding: bool) -> None:
    # C-speed passes over the whole array; one Python step per URL would
    # dominate decoding a batch. join() raises TypeError on a non-str.
    if len(urls) > MAX_ARRAY:
        raise _Invalid(f"more than {MAX_ARRAY} URLs")
    if not urls:
        return
    try:
        ascii_ = "".join(urls).isascii()
    except TypeError:
        ascii_ = False
    # max_str_len already bounds a decoded string; an encoded one must fit it.
    if not ascii_ or (not decoding and max(map(len, urls)) > MAX_STR):
        raise _Invalid("URLs must be ASCII strings (normalised), at most 8 KiB")


def _depths_check(depths: Any, decoding: bool) -> None:
    # msgpack ints fit 64 bits, so a decoded depth needs no upper bound check.
    if depths and (
        set(map(type, depths)) != {int}
        or min(depths) < 0
        or (not decoding and max(depths) > MAX_UINT)
    ):
        raise _Invalid("depths must be ints >= 0")


def _pairs_out(v: Any) -> tuple[tuple[str, ...], tuple[int, ...]]:
    if type(v) is not tuple and type(v) is not list:
        raise _Invalid(f"expected tuple of (url, depth), got {_what(v)}")
    if not v:
        return (), ()
    if not set(map(type, v)) <= {tuple, list} or set(map(len, v)) != {2}:
        raise _Invalid("expected (url, depth) pairs")
    urls, depths = zip(*v)
    _urls_check(urls, False)
    _depths_check(depths, False)
    return urls, depths


def _pairs_in(v: Any) -> tuple[tuple[str, int], ...]:
    if type(v) is not tuple or len(v) != 2:
        raise _Invalid("expected [urls, depths]")
    urls, depths = v
    if type(urls) is not tuple or type(depths) is not tuple or len(urls) != len(depths):
        raise _Invalid("expected two arrays of the same length")
    _urls_check(urls, True)
    _depths_check(depths, True)
    return tuple(zip(urls, depths))


def _seen_out(v: Any) -> tuple[str, ...]:
    if type(v) is not tuple and type(v) is not list:
        raise _Invalid(f"expected tuple of str, got {_what(v)}")
    _urls_check(v, False)
    return tuple(v)


def _seen_in(v: Any) -> tuple[str, ...]:
    if type(v) is not tuple:
        raise _Invalid(f"expected array of str, got {_what(v)}")
    _urls_check(v, True)
    return v


def _start_out(v: Any) -> tuple[str, float]:
    if (type(v) is not tuple and type(v) is not list) or len(v) != 2:
        raise _Invalid("expected (host, start) pairs")
    return _NAME[0](v[0]), _float_out(v[1])


def _start_in(v: Any) -> tuple[str, float]:
    if type(v) is not tuple or len(v) != 2:
        raise _Invalid("expected [host, start] pairs")
    return _NAME[1](v[0]), _float_in(v[1])


def _entry_out(v: Any) -> tuple[str, int, int, int]:
    if (type(v) is not tuple and type(v) is not list) or len(v) != 4:
        raise _Invalid("expected (id, incarnation, state, heartbeat) entries")
    return _NAME[0](v[0]), _uint(v[1]), _state_out(v[2]), _uint(v[3])


def _entry_in(v: Any) -> tuple[str, int, MemberState, int]:
    if type(v) is not tuple or len(v) != 4:
        raise _Invalid("expected [id, incarnation, state, heartbeat] entries")
    return _NAME[1](v[0]), _uint(v[1]), _state_in(v[2]), _uint(v[3])


def _array_codec(item: tuple[Check, Check], max_len: int) -> tuple[Check, Check]:
    item_out, item_in = item

    def out(v: Any) -> list[Any]:
        if type(v) is not tuple and type(v) is not list:
            raise _Invalid(f"expected tuple, got {_what(v)}")
        if len(v) > max_len:
            raise _Invalid(f"more than {max_len} entries")
        return [item_out(x) for x in v]

    def in_(v: Any) -> tuple[Any, ...]:
        if type(v) is not tuple:
            raise _Invalid(f"expected array, got {_what(v)}")
        if len(v) > max_len:
            raise _Invalid(f"more than {max_len} entries")
        return tuple([item_in(x) for x in v])

    return out, in_


def _counter_out(v: Any) -> tuple[str, int]:
    if (type(v) is not tuple and type(v) is not list) or len(v) != 2:
        raise _Invalid("expected (name, count) pairs")
    return _NAME[0](v[0]), _uint(v[1])


def _counter_in(v: Any) -> tuple[str, int]:
    if type(v) is not tuple or len(v) != 2:
        raise _Invalid("expected [name, count] pairs")
    return _NAME[1](v[0]), _uint(v[1])


def _busy_out(v: Any) -> tuple[str, float, float]:
    if (type(v) is not tuple and type(v) is not list) or len(v) != 3:
        raise _Invalid("expected (host, rate, setpoint) triples")
    return _NAME[0](v[0]), _float_out(v[1]), _float_out(v[2])


def _busy_in(v: Any) -> tuple[str, float, float]:
    if type(v) is not tuple or len(v) != 3:
        raise _Invalid("expected [host, rate, setpoint] triples")
    return _NAME[1](v[0]), _float_in(v[1]), _float_in(v[2])


_NAME = _name_codec()
_UINT = (_uint, _uint)
_BOOL = (_bool, _bool)
_FLOAT = (_float_out, _float_in)
_STATE = (_state_out, _state_in)

# --------------------------------------------------------------------------
# The table: per record, its fields in dataclass order with their codecs.


class _Spec:
    __slots__ = ("cls", "code", "names", "outs", "ins", "get")

    def __init__(self, cls: type, code: int, spec: tuple[tuple[str, tuple[Check, Check]], ...]):
        names = tuple(name for name, _ in spec)
        # The table must follow the dataclass, or the wire order silently shifts.
        assert names == tuple(f.name for f in fields(cls)), cls
        self.cls = cls
        self.code = code
        self.names = names
        self.outs = tuple(c[0] for _, c in spec)
        self.ins = tuple(c[1] for _, c in spec)
        self.get = attrgetter(*names)

    def _blame(self, convs: tuple[Check, ...], values: Any, e: _Invalid) -> _Invalid:
        # Off the fast path: find which field failed, to name it.
        for name, conv, v in zip(self.names, convs, values):
            try:
                conv(v)
            except _Invalid as err:
                return _Invalid(f"{self.cls.__name__}.{name}: {err}")
        return _Invalid(f"{self.cls.__name__}: {e}")  # pragma: no cover

    def to_wire(self, obj: Any) -> list[Any]:
        values = self.get(obj)
        try:
            return [conv(v) for conv, v in zip(self.outs, values)]
        except _Invalid as e:
            raise self._blame(self.outs, values, e) from None

    def from_wire(self, values: tuple[Any, ...]) -> Any:
        if len(values) != len(self.names):
            raise _Invalid(f"{self.cls.__name__}: {len(values)} fields, expected {len(self.names)}")
        try:
            return self.cls(*[conv(v) for conv, v in zip(self.ins, values)])
        except _Invalid as e:
            raise self._blame(self.ins, values, e) from None


def _record_codec(spec: _Spec) -> tuple[Check, Check]:
    def out(v: Any) -> list[Any]:
        if type(v) is not spec.cls:
            raise _Invalid(f"expected {spec.cls.__name__}, got {_what(v)}")
        return spec.to_wire(v)

    def in_(v: Any) -> Any:
        if type(v) is not tuple:
            raise _Invalid(f"expected {spec.cls.__name__} array, got {_what(v)}")
        return spec.from_wire(v)

    return out, in_


_MEMBER = _Spec(
    Member,
    0,
    (
        ("id", _NAME),
        ("address", _NAME),
        ("incarnation", _UINT),
        ("state", _STATE),
        ("weight", _FLOAT),
        ("heartbeat", _UINT),
        ("idle", _BOOL),
        ("sent", _UINT),
        ("received", _UINT),
        ("pages", _UINT),
        ("grants", _array_codec((_counter_out, _counter_in), MAX_MEMBERS)),
    ),
)

_MEMBER_STATUS = _Spec(
    MemberStatus,
    0,
    (
        ("id", _NAME),
        ("address", _NAME),
        ("state", _STATE),
        ("share", _FLOAT),
        ("pages", _UINT),
        ("rate", _FLOAT),
        ("frontier", _UINT),
        ("hosts", _UINT),
        ("forwarded_out", _UINT),
        ("forwarded_in", _UINT),
        ("dns_hit_rate", _FLOAT),
        ("bloom_fill", _FLOAT),
        ("uptime", _FLOAT),
        ("dropped", _array_codec((_counter_out, _counter_in), MAX_DROPPED)),
        ("errors", _array_codec((_counter_out, _counter_in), MAX_DROPPED)),
        ("busiest", _array_codec((_busy_out, _busy_in), MAX_BUSIEST)),
        ("lease", _enum_codec(LeaseStatus)),
        ("vouched", _UINT),
        ("needed", _UINT),
        ("quorum", _UINT),
        ("grace_left", _FLOAT),
        ("ring_version", _UINT),
        ("ring_fingerprint", _UINT),
        ("heard", _BOOL),
        ("page_cap", _UINT),
        ("budget_wait", _BOOL),
        ("voters_version", _UINT),
        ("voters", _array_codec(_NAME, MAX_MEMBERS)),
        ("voters_joint", _array_codec(_NAME, MAX_MEMBERS)),
        ("voters_alive", _UINT),
        ("voters_needed", _UINT),
        ("back_by", _FLOAT),  # added in wire version 4
    ),
)

_SPECS: tuple[_Spec, ...] = (
    _Spec(
        Digest,
        1,
        (
            ("ring", _NAME),
            ("sender", _NAME),
            ("members", _array_codec(_record_codec(_MEMBER), MAX_MEMBERS)),
            ("want_reply", _BOOL),
            ("verdicts", _BOOL),
        ),
    ),
    _Spec(
        Join,
        2,
        (
            ("ring", _NAME),
            ("sender", _NAME),
            ("address", _NAME),
            ("weight", _FLOAT),
            ("incarnation", _UINT),
        ),
    ),
    _Spec(Leave, 3, (("ring", _NAME), ("sender", _NAME), ("incarnation", _UINT))),
    _Spec(
        UrlBatch,
        4,
        (
            ("ring", _NAME),
            ("sender", _NAME),
            ("epoch", _UINT),
            ("seq", _UINT),
            ("urls", (_pairs_out, _pairs_in)),
            ("seen", (_seen_out, _seen_in)),
        ),
    ),
    _Spec(Ack, 5, (("ring", _NAME), ("sender", _NAME), ("epoch", _UINT), ("seq", _UINT))),
    _Spec(StatusRequest, 6, (("ring", _NAME), ("sender", _NAME), ("nonce", _UINT))),
    _Spec(
        StatusReply,
        7,
        (
            ("ring", _NAME),
            ("sender", _NAME),
            ("members", _array_codec(_record_codec(_MEMBER_STATUS), MAX_MEMBERS)),
            ("nonce", _UINT),
        ),
    ),
)

_SPECS += (
    _Spec(HandoffDone, 8, (("ring", _NAME), ("sender", _NAME),
                           ("members", _array_codec(_NAME, MAX_MEMBERS)))),
    _Spec(LeaveRequest, 9, (("ring", _NAME), ("sender", _NAME), ("target", _NAME))),
    _Spec(HostStarts, 10, (("ring", _NAME), ("sender", _NAME),
                           ("starts", _array_codec((_start_out, _start_in), MAX_ARRAY)))),
)

# SWIM probes: a few records each, so a round costs O(1) bytes in N.
_UPDATES = _array_codec(_record_codec(_MEMBER), MAX_UPDATES)
_SPECS += tuple(
    _Spec(cls, code, (("ring", _NAME), ("sender", _NAME), ("seq", _UINT), ("target", _NAME),
                      ("updates", _UPDATES)))
    for cls, code in ((Ping, 11), (PingReq, 12))
)
# A PingAck carries the answerer's vouch for a ring (ring.membership.lease): VERSION 2.
_SPECS += (_Spec(PingAck, 13, (("ring", _NAME), ("sender", _NAME), ("seq", _UINT),
                               ("target", _NAME), ("updates", _UPDATES), ("vouch", _UINT))),)

_SPECS += (_Spec(Sync, 14, (("ring", _NAME), ("sender", _NAME),
                             ("summary", _array_codec((_entry_out, _entry_in), MAX_MEMBERS)))),)

# A Packet came after the SWIM messages took 11-14, so it is 15: codes are never reused.
_BATCH_PART = _Spec(
    BatchPart,
    0,
    (("seq", _UINT), ("urls", (_pairs_out, _pairs_in)), ("seen", (_seen_out, _seen_in))),
)

_SPECS += (
    _Spec(Packet, 15, (("ring", _NAME), ("sender", _NAME), ("epoch", _UINT),
                       ("batches", _array_codec(_record_codec(_BATCH_PART), MAX_ARRAY)),
                       ("acked_epoch", _UINT), ("acks", _array_codec(_UINT, MAX_ARRAY)))),
)

# ``python -m ring forget`` (tools' messages, like 6, 7 and 9).
_SPECS += (
    _Spec(ForgetRequest, 16, (("ring", _NAME), ("sender", _NAME), ("target", _NAME), ("nonce", _UINT))),
    _Spec(ForgetReply, 17, (("ring", _NAME), ("sender", _NAME), ("target", _NAME),
                            ("outcome", _enum_codec(ForgetOutcome)), ("nonce", _UINT))),
)



def _band_index(v: Any) -> int:
    if type(v) is not int or not 0 <= v < 64:
        raise _Invalid("a band index 0..63")
    return v


def _distance(v: Any) -> int:
    # -1: no duplicate (peer.core.dedupe.bands.NO_DISTANCE); a SimHash has 64 bits.
    if type(v) is not int or not -1 <= v <= 64:
        raise _Invalid("a distance -1..64")
    return v


def _url_or_nil(v: Any) -> str | None:
    return None if v is None else _URL[0](v)


_URL = _name_codec(MAX_STR)

# Duplicate content (peer.core.dedupe.verdicts): 18 and 19, without a VERSION change.
_SPECS += (
    _Spec(NearQuery, 18, (("ring", _NAME), ("sender", _NAME),
                          ("bands", _array_codec((_band_index, _band_index), 64)),
                          ("fingerprint", _UINT), ("url", _URL), ("reply_to", _NAME),
                          ("seen_at", _FLOAT))),
    _Spec(NearAnswer, 19, (("ring", _NAME), ("sender", _NAME), ("url", _URL),
                           ("duplicate_of", (_url_or_nil, _url_or_nil)),
                           ("distance", (_distance, _distance)))),
)

# The voter record (ring.membership.voters): 20-22, without a VERSION change, as 16-19.
_IDS = _array_codec(_NAME, MAX_MEMBERS)
_SPECS += (
    _Spec(Voters, 20, (("ring", _NAME), ("sender", _NAME), ("version", _UINT), ("voters", _IDS),
                       ("joint", _IDS))),
    _Spec(VoterRequest, 21, (("ring", _NAME), ("sender", _NAME), ("action", _enum_codec(VoterAction)),
                             ("target", _NAME), ("base", _UINT), ("nonce", _UINT))),
    _Spec(VoterReply, 22, (("ring", _NAME), ("sender", _NAME), ("target", _NAME),
                           ("outcome", _enum_codec(VoterOutcome)), ("version", _UINT), ("nonce", _UINT))),
)

# A planned restart (ring.membership.restarts): 37, a tool's message as 9 is, without
# a VERSION change: a peer of an older build drops it as an unknown type, and the
# tool says it was not restarted.
_SPECS += (_Spec(RestartRequest, 37, (("ring", _NAME), ("sender", _NAME), ("target", _NAME))),)

TYPE_CODES: dict[int, type] = {s.code: s.cls for s in _SPECS}
_BY_CODE = {s.code: s for s in _SPECS}
_BY_TYPE = {s.cls: s for s in _SPECS}

_UNPACK_LIMITS: dict[str, Any] = dict(
    use_list=False,  # tuples: the dataclasses' field types, no conversion pass
    raw=False,  # invalid UTF-8 raises
    strict_map_key=True,
    max_str_len=MAX_STR,
    max_bin_len=0,
    max_array_len=MAX_ARRAY,
    max_map_len=0,
    max_ext_len=0,
)

# --------------------------------------------------------------------------
# The two entry points


def encode(msg: Message) -> bytes:
    """The frame for ``msg``; :class:`EncodeError` if it holds a value the codec refuses."""
    spec = _BY_TYPE.get(type(msg))
    if spec is None:
        raise EncodeError(f"not a ring message: {_what(msg)}")
    try:
        wire = spec.to_wire(msg)
    except _Invalid as e:
        raise EncodeError(str(e)) from None
    try:
        frame: bytes = msgpack.packb([VERSION, spec.code, *wire], use_bin_type=True)
    except (ValueError, TypeError, OverflowError) as e:  # a lone surrogate in a str
        raise EncodeError(f"{spec.cls.__name__}: {e}") from None
    if len(frame) > MAX_FRAME:
        name = spec.cls.__name__
        raise EncodeError(f"{name}: frame of {len(frame)} bytes > {MAX_FRAME}; split it")
    return frame


def decode(data: bytes | bytearray | memoryview) -> Message:
    """The message in frame ``data``; :class:`DecodeError` for anything else.

    Accepts ``bytes``, ``bytearray`` or ``memoryview`` (a zero-copy zmq frame).
    """
    if type(data) is not bytes and not isinstance(data, (bytearray, memoryview)):
        raise DecodeError(f"not bytes: {_what(data)}")
    size = len(data) if type(data) is bytes else memoryview(data).nbytes
    if size > MAX_FRAME:
        raise DecodeError(f"frame of {size} bytes > {MAX_FRAME}", DropKind.OVERSIZED)
    try:
        obj = msgpack.unpackb(data, **_UNPACK_LIMITS)
    except (ValueError, TypeError, OverflowError, msgpack.UnpackException) as e:
        raise DecodeError(f"not a msgpack frame: {str(e)[:80]}", DropKind.NOT_MSGPACK) from None
    if type(obj) is not tuple or len(obj) < 2:
        raise DecodeError("not a message array")
    version, code = obj[0], obj[1]
    if type(version) is not int or version != VERSION:
        raise DecodeError(f"wire version {str(version)[:20]}, expected {VERSION}", DropKind.VERSION)
    spec = _BY_CODE.get(code) if type(code) is int else None
    if spec is None:
        raise DecodeError(f"unknown message type {str(code)[:20]}", DropKind.UNKNOWN_TYPE)
    try:
        msg: Message = spec.from_wire(obj[2:])
        return msg
    except _Invalid as e:
        raise DecodeError(str(e)) from None
