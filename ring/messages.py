"""The ring's wire codec: every message between peers, and its msgpack form.

A frame is one msgpack array, positional for compactness (URL batches are the
volume)::

    [version, TYPE_CODE, field1, field2, ...]      fields in dataclass order

A peer speaks two wire versions, ``VERSION`` and the one before
(``MIN_VERSION``), and refuses others rather than guess: a field or type
added after version 3 says when it came (``_added(..., since=4)``, a
``_Spec``'s ``since``), and a frame of the older version leaves it out.
``ring.wirecodec`` has those rules and the field codecs the tables are
made of; ``ring.wireversion`` says which version to speak to whom. The type codes are :data:`TYPE_CODES`. Nested records
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
- :class:`SeedAddRequest` / :class:`SeedAddReply` — ``python -m ring seed
  add``: an operator's batch of seed lines for a running ring, sent to any
  live member, which judges each line as a ``crawl.seeds_file`` line,
  routes it to its host's owner through the forwarding, and answers with
  the count of each outcome once the batch is on its disk and, up to a
  wait, acked by the owners (:class:`SeedAddStatus`). Codes 30 and 31,
  types of wire version 4: a peer of version 3 drops them (its route says
  its version, so it is not asked), and the tool reads its silence as a
  peer that does not answer and asks the next (so nothing is taken twice
  by a peer that never took it).
- :class:`Settings` — a member's config epoch (``ring.membership.epochs``):
  the epoch, its document's fingerprint and the document, pushed when it
  changes and sent with anti-entropy; :class:`SettingsRequest` /
  :class:`SettingsReply` — ``python -m ring set|pause|resume`` asks the
  steward for the next epoch from the one the operator saw (``base``), and
  it says what it did (:class:`SettingsOutcome`). Codes 23-25, types of
  wire version 4.
- :class:`HostState` / :class:`HostStateAck` — the state of hosts that
  change owner, sent with their hand-off (``ring.statebox``): each host's
  revisit records (its schedule and validators), its cookies and the
  exact-duplicate digests of its pages, numbered ``(epoch, seq)`` per
  destination like a batch, resent until acked, and dropped by the sender
  only then. Codes 33 and 34, types of wire version 4: a member of version
  3 is never sent them (it could not take them), and its hand-off does not
  wait for their ack (``ring.statebox``: counted ``handoff_state.unsupported``).
  A record's missing value travels as ``""`` (a string) or ``0.0`` (a time),
  so every field is one type.
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
- :class:`HoldRequest` / :class:`HoldReply` — ``python -m ring restart`` of a
  member that cannot announce its own restart (one of wire version 3, or
  ``--hold``) asks every other member of version 4 to hold it for an
  operator's restart (``ring.membership.restarts`` rule 7), and each says
  what it did (:class:`HoldOutcome`); codes 38 and 39, types of wire
  version 4 that only tools send (a peer of version 3 is never asked).
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
settings document  128 chunks   of at most 8 KiB each (``Settings.doc``)
bin, map, ext      none         ``max_*_len=0``: the codec uses none of them
=================  ===========  ==============================================

Integers are unsigned 64-bit; floats are finite and non-negative; ``bool`` is
not an ``int`` here (msgpack keeps them apart, and so do the checks).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Union

from ring.errors import DecodeError, EncodeError
from ring.vocabulary import Family, Split, split_pairs
from ring.wirecodec import (MAX_ARRAY, MAX_FRAME, MAX_NAME, MAX_STR, MIN_VERSION, VERSION, decode_frame,
                            encode_frame, frame_version)
from ring.wirecodec import (  # the tables' names for them
    BOOL as _BOOL,
    FLOAT as _FLOAT,
    float_in as _float_in,
    float_out as _float_out,
    NAME as _NAME,
    UINT as _UINT,
    Check,
    Invalid as _Invalid,
    Spec as _Spec,
    added as _added,
    array_codec as _array_codec,
    busy_in as _busy_in,
    busy_out as _busy_out,
    counter_in as _counter_in,
    counter_out as _counter_out,
    enum_codec as _enum_codec,
    name_codec as _name_codec,
    pairs_in as _pairs_in,
    pairs_out as _pairs_out,
    record_codec as _record_codec,
    seen_in as _seen_in,
    seen_out as _seen_out,
    start_in as _start_in,
    start_out as _start_out,
    uint as _uint,
    what as _what,
)

__all__ = [
    "VERSION",
    "MIN_VERSION",
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
    "HoldRequest",
    "HoldReply",
    "HoldOutcome",
    "ForgetRequest",
    "ForgetReply",
    "ForgetOutcome",
    "NearQuery",
    "NearAnswer",
    "Reverdict",
    "Voters",
    "VoterAction",
    "VoterOutcome",
    "VoterRequest",
    "VoterReply",
    "SeedAddRequest",
    "SeedAddReply",
    "SeedAddStatus",
    "Settings",
    "SettingsAction",
    "SettingsOutcome",
    "SettingsRequest",
    "SettingsReply",
    "MAX_DOC_CHUNKS",
    "HostState",
    "HostStateAck",
    "LeaseStatus",
    "Ping",
    "PingReq",
    "PingAck",
    "RecentRing",
    "MAX_RECENT",
    "Sync",
    "MAX_UPDATES",
    "Message",
    "encode",
    "decode",
    "decode_versioned",
    "encode_lowest",
    "speaks",
    "specs",
    "DecodeError",
    "EncodeError",
]

MAX_MEMBERS = 1024
MAX_DROPPED = 64
MAX_UPDATES = 64
#: Rings a vouch lists besides its own (PingAck.recent; ring.membership.lease.MAX_RECENT is
#: what a peer sends, this what it reads).
MAX_RECENT = 8
#: Busiest hosts a status reply carries (MemberStatus.busiest).
MAX_BUSIEST = 10
#: The counters of ``ring seed add``'s lines (peer/core/crawl/seedadd.py), shown as ``seed_add`` in --json.
_SEED_ADD = "seed_add."
#: Chunks of a settings document (:class:`Settings`): MAX_DOC_CHUNKS x MAX_STR = 1 MiB at most.
MAX_DOC_CHUNKS = 128


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


class HoldOutcome(StrEnum):
    """What a peer did with a :class:`HoldRequest` (``ring.membership.restarts`` rule 7); the wire
    carries its index."""

    HELD = "held"  # it holds the member for restart_hold: no probe of it, PingReqs about it answered
    SELF = "self"  # the target is the answering peer: it is running
    NOT_KNOWN = "not_known"  # not in its view
    NOT_ALIVE = "not_alive"  # refused: not alive at that incarnation here (suspect, dead, left,
    # restarting by its own word, or already back as a new process)


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


class SeedAddStatus(StrEnum):
    """What a peer did with a :class:`SeedAddRequest`; the wire carries its index."""

    ACKED = "acked"  # taken: on this peer's disk, and every URL forwarded acked by its owner
    DURABLE = "durable"  # taken, on this peer's disk; some owners had not acked within crawl.seed_add_wait
    BUSY = "busy"  # nothing taken: its forwarding backlog (or the batches waiting for acks) is full; ask again
    OVER_CAP = "over_cap"  # nothing taken: more lines than its crawl.seed_add_batch
    LEAVING = "leaving"  # nothing taken: this peer is leaving the ring; ask another
    NO_CRAWL = "no_crawl"  # nothing taken: this member runs no crawl (a tool's or a test's bare member)

class SettingsAction(StrEnum):
    """What ``python -m ring set|pause|resume`` asks of the ring's settings; the wire carries its index."""

    SET = "set"  # KEY=VALUE assignments
    PAUSE = "pause"  # no request starts anywhere
    RESUME = "resume"  # requests start again


class SettingsOutcome(StrEnum):
    """What a peer did with a :class:`SettingsRequest` (``ring.membership.epochs``); the wire carries its index."""

    CHANGED = "changed"  # it made the next epoch: the change spreads
    ALREADY = "already"  # the settings say so already: no new epoch
    INVALID = "invalid"  # the operator's mistake (a key that cannot change live...): ``detail`` says
    STALE = "stale"  # the request's base is not this peer's epoch: ask again
    NO_LEASE = "no_lease"  # this peer holds no lease under its epoch
    LEAVING = "leaving"  # this peer is leaving the ring
    NOT_STEWARD = "not_steward"  # only the lowest id of the live ring makes epochs: ask it


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
    # The newest wire version the member speaks (ring.wirecodec), in its own row;
    # 0 in a row of another member (not said). Added in wire version 4: a
    # row without it comes from a peer of version 3, hence the default.
    wire_version: int = 3
    # Added in wire version 4: whether the member is held by `ring pause` (no
    # request starts there until `ring resume`). Last, with a default: a row
    # of an older member decodes as not paused.
    paused: bool = False
    # The config epoch the member runs (ring.membership.epochs) and its
    # document's fingerprint, and whether the member still waits to hear the
    # ring's document (a peer just started: it starts no request until then).
    # Added in wire version 4, at the end, with defaults.
    config_epoch: int = 0
    config_fingerprint: int = 0
    config_waiting: bool = False
    # Not held, yet a majority vouches with rings its peer can read: hosts whose
    # owner did not change go on, moved hosts wait (ring.membership.hostgate).
    lease_open: bool = False  # added in wire version 4
    # A member away for a planned restart (ring.membership.restarts): when its
    # hold runs out in the answering peer's view, in epoch seconds (0: not
    # restarting). Added in wire version 4, at the end.
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
                # `ring seed add`'s lines this member took, by outcome (ring.seedadds); {}: none.
                "seed_add": {k[len(_SEED_ADD):]: n for k, n in split.counters if k.startswith(_SEED_ADD)},
                "heard": self.heard, "page_cap": self.page_cap, "budget_wait": self.budget_wait,
                "voters_version": self.voters_version, "voters": list(self.voters),
                "voters_joint": list(self.voters_joint), "voters_alive": self.voters_alive,
                "voters_needed": self.voters_needed, "wire_version": self.wire_version or None,
                "lease_open": self.lease_open,
                "back_by": self.back_by or None,
                # Voters that can fail while a majority of them stays alive (docs/membership.md).
                "survives": max(0, self.voters_alive - self.voters_needed) if self.voters_needed else None,
                "paused": self.paused, "config_epoch": self.config_epoch,
                "config_fingerprint": f"{self.config_fingerprint:016x}" if self.config_fingerprint else None,
                "config_waiting": self.config_waiting}


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

    ``incarnation``: the sender's when it sent this, so a receiver that
    still holds an earlier life of it dead can keep the marker until it sees
    that life back (``ring.handoff`` rule 7); 0 from a peer of version 3.
    """

    ring: str
    sender: str
    members: tuple[str, ...]
    incarnation: int = 0  # added in wire version 4


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
class HoldRequest:
    """``python -m ring restart --id TARGET`` of a member that cannot announce its own restart:
    hold ``target``, at the incarnation it is alive at in the receiver's view, for an operator's
    restart (``ring.membership.restarts`` rule 7). A tool's message, sent to each member of wire
    version 4 directly."""

    ring: str
    sender: str
    target: str
    nonce: int = 0


@dataclass(frozen=True, slots=True)
class HoldReply:
    """What ``sender`` did with the :class:`HoldRequest` of ``nonce``; ``hold``: the seconds its
    hold lasts from now (``ring.restart_hold``; 0 unless held)."""

    ring: str
    sender: str
    target: str
    outcome: HoldOutcome
    hold: float = 0.0
    nonce: int = 0


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
class RecentRing:
    """A ring the answering peer held within its grace, as a difference from the ring it
    vouches for now (``ring.membership.lease`` rule 2): its vouch fingerprint, the members
    (id, weight) only it had, and those only the current ring has. A changed weight is in
    both lists. Either ring can be rebuilt from the other, and checked by its fingerprint."""

    print: int
    then_only: tuple[tuple[str, float], ...] = ()
    now_only: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, slots=True)
class PingAck:
    """``target`` answered probe ``seq`` (directly, or relayed by ``sender``).

    ``vouch``: the fingerprint of the answering peer's ring, or 0 while it
    vouches for none (``ring.membership.lease``, rules 1-2); 0 in a relayed answer.
    ``recent``: the other rings it held within its grace (rule 2), at most
    ``MAX_RECENT``; ``settle_ms``: milliseconds until that list is empty (or, with
    ``vouch`` 0, until it vouches again), a hint for the prober's renewal only.
    """

    ring: str
    sender: str
    seq: int
    target: str
    updates: tuple[Member, ...] = ()
    vouch: int = 0
    recent: tuple[RecentRing, ...] = ()  # added in wire version 4
    settle_ms: int = 0  # added in wire version 4


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
    says: int = 1  # what the page's canonical says (peer.core.dedupe.precedence.Says; 1: none)
    digest: int = 0  # the body digest's first 8 bytes (peer.core.dedupe.exact); 0: not said


@dataclass(frozen=True, slots=True)
class NearAnswer:
    """A band owner's answer: ``url`` is within ``distance`` of ``duplicate_of`` (nil and -1: of nothing)."""

    ring: str
    sender: str
    url: str
    duplicate_of: str | None
    distance: int
    # Earlier originals within k that the asked page outranks: (url, distance) pairs.
    superseded: tuple[tuple[str, int], ...] = ()
    exact: bool = False  # duplicate_of has the same body digest (peer.core.dedupe.exact)
    exact_superseded: tuple[str, ...] = ()  # URLs of superseded with the asked page's body digest


@dataclass(frozen=True, slots=True)
class Reverdict:
    """``sender`` learned that ``url`` (of a host this peer owns) is a ``kind`` copy of
    ``duplicate_of``, a better copy that came after it (``peer.core.dedupe.held`` rule 6)."""

    ring: str
    sender: str
    url: str
    duplicate_of: str
    kind: str  # "exact" or "near"
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


@dataclass(frozen=True, slots=True)
class SeedAddRequest:
    """``python -m ring seed add``: seed lines for the running ring, judged as ``crawl.seeds_file``'s.

    ``lines``: each line as read, without its line break (blank lines and ``#``
    comments included: the peer counts them ``skipped``). ``unreadable``:
    lines the tool could not carry (not UTF-8, or longer than ``MAX_STR``),
    which the peer counts ``invalid``. ``nonce`` names the batch: a peer
    asked again with a nonce it took answers what it answered, taking
    nothing twice.
    """

    ring: str
    sender: str
    nonce: int
    lines: tuple[str, ...]
    unreadable: int = 0


@dataclass(frozen=True, slots=True)
class SeedAddReply:
    """What ``sender`` did with the :class:`SeedAddRequest` of ``nonce``.

    ``counts``: (outcome, lines), in ``crawl.seeds_file``'s outcome words
    (``queued``, ``forwarded``, ``seen``, ``skipped``, ``invalid``, or the
    not-requested cause); empty unless taken. ``unacked``: URLs forwarded
    whose owner had not acked them when the answer went (``DURABLE``).
    """

    ring: str
    sender: str
    nonce: int
    status: SeedAddStatus
    counts: tuple[tuple[str, int], ...] = ()
    unacked: int = 0


@dataclass(frozen=True, slots=True)
class Settings:
    """``sender``'s config epoch (``ring.membership.epochs.ConfigEpoch``): its number, its
    document's fingerprint and the document (opaque to the ring, in chunks of at most
    ``MAX_STR``); ``running``: the sender starts requests under it (holds its lease, and
    its document is the ring's, not its file's alone); ``confirmed``: the sender's document
    is the ring's (``ring.membership.epochs`` rule 5); one that is not asks for the
    receiver's record in answer."""

    ring: str
    sender: str
    epoch: int
    fingerprint: int
    doc: tuple[str, ...]
    running: bool = False
    confirmed: bool = False


@dataclass(frozen=True, slots=True)
class SettingsRequest:
    """``python -m ring set|pause|resume``: a new epoch from epoch ``base``; ``assignments``: KEY=VALUE."""

    ring: str
    sender: str
    action: SettingsAction
    assignments: tuple[str, ...]
    base: int
    nonce: int = 0


@dataclass(frozen=True, slots=True)
class SettingsReply:
    """What ``sender`` did with the :class:`SettingsRequest` of ``nonce``: ``epoch`` is its epoch now,
    ``detail`` the reason of a refusal in words (an INVALID key named)."""

    ring: str
    sender: str
    outcome: SettingsOutcome
    epoch: int
    detail: str = ""
    nonce: int = 0


#: One revisit record on the wire (``peer.core.revisit.policy.RevisitState`` and its
#: depth): (url, host, due, interval, last_visit, digest, etag, last_modified,
#: visits, changes, depth); times are epoch seconds, 0.0 and "" stand for none.
RevisitWire = tuple[str, str, float, float, float, str, str, str, int, int, int]
#: One cookie on the wire (``peer.core.http.cookies.Cookie``): (host, name, value,
#: path, secure, expires); ``expires`` 0.0: the crawl's length.
CookieWire = tuple[str, str, str, str, bool, float]
#: One exact-duplicate digest (``peer.core.dedupe.digests``): (its 64-bit prefix, first URL).
DigestWire = tuple[int, str]


@dataclass(frozen=True, slots=True)
class HostState:
    """State of hosts ``sender`` hands to us (``ring.statebox``): batch ``(epoch, seq)`` of its records."""

    ring: str
    sender: str
    epoch: int
    seq: int
    revisits: tuple[RevisitWire, ...] = ()
    cookies: tuple[CookieWire, ...] = ()
    digests: tuple[DigestWire, ...] = ()


@dataclass(frozen=True, slots=True)
class HostStateAck:
    """We took ``HostState`` ``(epoch, seq)`` of the member we answer: its sender may drop the records."""

    ring: str
    sender: str
    epoch: int
    seq: int


Message = Union[Digest, Join, Leave, UrlBatch, Ack, StatusRequest, StatusReply, HandoffDone,
                LeaveRequest, HostStarts, Ping, PingReq, PingAck, Sync, Packet, ForgetRequest,
                ForgetReply, NearQuery, NearAnswer, Reverdict, Voters, VoterRequest, VoterReply, SeedAddRequest,
                SeedAddReply, Settings, SettingsRequest, SettingsReply, HostState, HostStateAck, RestartRequest,
                HoldRequest, HoldReply]

# --------------------------------------------------------------------------
# The tables: per record, its fields in dataclass order with their codecs
# (ring.wirecodec); a field added after wire version 3 is _added(..., since=N).

_STATES = tuple(MemberState)
_STATE_CODE: dict[str, int] = {s: i for i, s in enumerate(_STATES)}  # a StrEnum is its str
_RESTARTING = _STATE_CODE[MemberState.RESTARTING]  # 4: new in wire version 4


def _state_out(v: Any) -> int:
    if type(v) is not MemberState and type(v) is not str:
        raise _Invalid(f"expected MemberState, got {_what(v)}")
    code = _STATE_CODE.get(v)
    if code is None:
        raise _Invalid(f"unknown state {v[:20]!r}")
    if code == _RESTARTING and frame_version() < 4:
        # Wire version 3 has no restarting state (ring.membership.restarts): to such a
        # peer a restarting member is alive, and its own probes find it dead, as before
        # planned restarts. Its ring then differs from the newer peers' until the member
        # is back, and the lease lets only a side with a majority fetch: nothing twice.
        return _STATE_CODE[MemberState.ALIVE]
    return code


def _state_in(v: Any) -> MemberState:
    if type(v) is not int or not 0 <= v < len(_STATES):
        raise _Invalid("unknown state code")
    return _STATES[v]


def _entry_out(v: Any) -> tuple[str, int, int, int]:
    if (type(v) is not tuple and type(v) is not list) or len(v) != 4:
        raise _Invalid("expected (id, incarnation, state, heartbeat) entries")
    return _NAME[0](v[0]), _uint(v[1]), _state_out(v[2]), _uint(v[3])


def _entry_in(v: Any) -> tuple[str, int, MemberState, int]:
    if type(v) is not tuple or len(v) != 4:
        raise _Invalid("expected [id, incarnation, state, heartbeat] entries")
    return _NAME[1](v[0]), _uint(v[1]), _state_in(v[2]), _uint(v[3])


_STATE = (_state_out, _state_in)


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
        _added("wire_version", _UINT, since=4),
        _added("paused", _BOOL, since=4),
        # The config epoch (ring.membership.epochs).
        _added("config_epoch", _UINT, since=4),
        _added("config_fingerprint", _UINT, since=4),
        _added("config_waiting", _BOOL, since=4),
        _added("lease_open", _BOOL, since=4),
        _added("back_by", _FLOAT, since=4),  # a restarting member's hold (ring.membership.restarts)
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
                           ("members", _array_codec(_NAME, MAX_MEMBERS)),
                           _added("incarnation", _UINT, since=4))),
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


def _weighted_out(v: Any) -> tuple[str, float]:
    if (type(v) is not tuple and type(v) is not list) or len(v) != 2:
        raise _Invalid("expected (id, weight) pairs")
    return _NAME[0](v[0]), _float_out(v[1])


def _weighted_in(v: Any) -> tuple[str, float]:
    if type(v) is not tuple or len(v) != 2:
        raise _Invalid("expected [id, weight] pairs")
    return _NAME[1](v[0]), _float_in(v[1])


_WEIGHTED = _array_codec((_weighted_out, _weighted_in), MAX_MEMBERS)
_RECENT = _Spec(RecentRing, 0, (("print", _UINT), ("then_only", _WEIGHTED), ("now_only", _WEIGHTED)), since=4)

# A PingAck carries the answerer's vouch for a ring (ring.membership.lease): VERSION 2;
# the rings it held within its grace (recent, settle_ms): added in wire version 4.
_SPECS += (_Spec(PingAck, 13, (("ring", _NAME), ("sender", _NAME), ("seq", _UINT),
                               ("target", _NAME), ("updates", _UPDATES), ("vouch", _UINT),
                               _added("recent", _array_codec(_record_codec(_RECENT), MAX_RECENT), since=4),
                               _added("settle_ms", _UINT, since=4))),)

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


# -- which copy wins (peer.core.dedupe.precedence): fields of 18 and 19, and 44.
def _says(v: Any) -> int:
    # precedence.Says: 0 its canonical names itself, 1 none, 2 another URL.
    if type(v) is not int or not 0 <= v <= 2:
        raise _Invalid("a canonical's say 0..2")
    return v


def _superseded_out(v: Any) -> list[Any]:
    if not isinstance(v, tuple) or len(v) != 2:
        raise _Invalid(f"a (url, distance) pair, not {_what(v)}")
    return [_URL[0](v[0]), _distance(v[1])]


def _superseded_in(v: Any) -> tuple[str, int]:
    if type(v) is not tuple or len(v) != 2:
        raise _Invalid("a (url, distance) pair")
    return (_URL[1](v[0]), _distance(v[1]))


# At most peer.core.dedupe.bands.MAX_SUPERSEDED (16) pairs an answer (ring never imports peer).
_SUPERSEDED = (_superseded_out, _superseded_in)


def _copy_kind(v: Any) -> str:
    if v not in ("exact", "near"):
        raise _Invalid("'exact' or 'near'")
    return str(v)

# Duplicate content (peer.core.dedupe.verdicts): 18 and 19, without a VERSION change.
_SPECS += (
    _Spec(NearQuery, 18, (("ring", _NAME), ("sender", _NAME),
                          ("bands", _array_codec((_band_index, _band_index), 64)),
                          ("fingerprint", _UINT), ("url", _URL), ("reply_to", _NAME),
                          ("seen_at", _FLOAT), _added("says", (_says, _says), since=4),
                          # Exact copies across the ring (unsaid is left out, so a query without it
                          # is version 3's bytes); an older build refuses a query that says it.
                          _added("digest", _UINT, since=4))),
    _Spec(NearAnswer, 19, (("ring", _NAME), ("sender", _NAME), ("url", _URL),
                           ("duplicate_of", (_url_or_nil, _url_or_nil)),
                           ("distance", (_distance, _distance)),
                           _added("superseded", _array_codec(_SUPERSEDED, 16), since=4),
                           # Said only in an answer to a query that carried a digest: its asker reads it.
                           _added("exact", _BOOL, since=4),
                           # Which of superseded are byte-identical (exact) copies, not near ones.
                           _added("exact_superseded", _array_codec(_URL, 16), since=4))),
)

# A corrected verdict (peer.core.dedupe.held rule 6): 44, a type of wire version 4.
_SPECS += (
    _Spec(Reverdict, 44, (("ring", _NAME), ("sender", _NAME), ("url", _URL), ("duplicate_of", _URL),
                          ("kind", (_copy_kind, _copy_kind)), ("distance", (_distance, _distance))), since=4),
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

# ``python -m ring seed add`` (a tool's request and its answer): 30 and 31, types of
# wire version 4 (never sent to a member of version 3: ring.wireversion). A line travels as a string of at most MAX_STR (the codec's
# string bound; a URL is at most 4 KiB, peer.core.urls.normalize), at most MAX_ARRAY a batch.
_SPECS += (
    _Spec(SeedAddRequest, 30, (("ring", _NAME), ("sender", _NAME), ("nonce", _UINT),
                               ("lines", _array_codec(_URL, MAX_ARRAY)), ("unreadable", _UINT)), since=4),
    _Spec(SeedAddReply, 31, (("ring", _NAME), ("sender", _NAME), ("nonce", _UINT),
                             ("status", _enum_codec(SeedAddStatus)),
                             ("counts", _array_codec((_counter_out, _counter_in), MAX_DROPPED)),
                             ("unacked", _UINT)), since=4),

)

# Config epochs (ring.membership.epochs): 23-25, types of wire version 4 (never
# sent to a member of version 3: ring.wireversion). Such a member runs epoch 0
# (its cluster.toml), and a ring at a later epoch fences it out by the lease
# (docs/membership.md, "Config epochs").
_SPECS += (
    _Spec(Settings, 23, (("ring", _NAME), ("sender", _NAME), ("epoch", _UINT), ("fingerprint", _UINT),
                         ("doc", _array_codec(_name_codec(MAX_STR), MAX_DOC_CHUNKS)), ("running", _BOOL),
                         ("confirmed", _BOOL)), since=4),
    _Spec(SettingsRequest, 24, (("ring", _NAME), ("sender", _NAME), ("action", _enum_codec(SettingsAction)),
                                ("assignments", _array_codec(_name_codec(MAX_STR), MAX_MEMBERS)),
                                ("base", _UINT), ("nonce", _UINT)), since=4),
    _Spec(SettingsReply, 25, (("ring", _NAME), ("sender", _NAME), ("outcome", _enum_codec(SettingsOutcome)),
                              ("epoch", _UINT), ("detail", _name_codec(MAX_STR)), ("nonce", _UINT)), since=4),
)

def _tuple_codec(name: str, items: tuple[tuple[Check, Check], ...]) -> tuple[Check, Check]:
    """A fixed-length array of values, each checked by its own codec (a record without a dataclass)."""
    n = len(items)

    def out(v: Any) -> list[Any]:
        if not isinstance(v, tuple) or len(v) != n:
            raise _Invalid(f"a {name} of {n} values, not {_what(v)}")
        return [c[0](x) for c, x in zip(items, v)]

    def in_(v: Any) -> tuple[Any, ...]:
        if type(v) is not tuple or len(v) != n:
            raise _Invalid(f"a {name} of {n} values")
        return tuple(c[1](x) for c, x in zip(items, v))

    return out, in_


# Hand-off state (ring.statebox): 33 and 34, types of wire version 4.
_REVISIT = _tuple_codec("revisit record", (_URL, _URL, _FLOAT, _FLOAT, _FLOAT, _URL, _URL, _URL,
                                           _UINT, _UINT, _UINT))
_COOKIE = _tuple_codec("cookie", (_URL, _URL, _URL, _URL, _BOOL, _FLOAT))
_DIGEST = _tuple_codec("digest", (_UINT, _URL))
_SPECS += (
    _Spec(HostState, 33, (("ring", _NAME), ("sender", _NAME), ("epoch", _UINT), ("seq", _UINT),
                          ("revisits", _array_codec(_REVISIT, MAX_ARRAY)),
                          ("cookies", _array_codec(_COOKIE, MAX_ARRAY)),
                          ("digests", _array_codec(_DIGEST, MAX_ARRAY))), since=4),
    _Spec(HostStateAck, 34, (("ring", _NAME), ("sender", _NAME), ("epoch", _UINT), ("seq", _UINT)), since=4),
)

# A planned restart (ring.membership.restarts): 37, a tool's request, a type of wire
# version 4 (a peer of version 3 would drop it as an unknown type; the tool then says
# the peer did not stop).
_SPECS += (_Spec(RestartRequest, 37, (("ring", _NAME), ("sender", _NAME), ("target", _NAME)), since=4),)

# An operator's hold (ring.membership.restarts rule 7): 38 and 39, a tool's request and
# its answer, types of wire version 4. The tool asks members of version 4 only.
_SPECS += (
    _Spec(HoldRequest, 38, (("ring", _NAME), ("sender", _NAME), ("target", _NAME), ("nonce", _UINT)), since=4),
    _Spec(HoldReply, 39, (("ring", _NAME), ("sender", _NAME), ("target", _NAME),
                          ("outcome", _enum_codec(HoldOutcome)), ("hold", _FLOAT), ("nonce", _UINT)), since=4),
)

TYPE_CODES: dict[int, type] = {s.code: s.cls for s in _SPECS}
_BY_CODE = {s.code: s for s in _SPECS}
_BY_TYPE = {s.cls: s for s in _SPECS}

# --------------------------------------------------------------------------
# The entry points


def encode(msg: Message, version: int = VERSION) -> bytes:
    """The frame for ``msg`` at wire ``version`` (``ring.wirecodec`` rules 2 and 3).

    :class:`EncodeError` if it holds a value the codec refuses, or its type is
    not in ``version`` (ask :func:`speaks` first).
    """
    spec = _BY_TYPE.get(type(msg))
    if spec is None:
        raise EncodeError(f"not a ring message: {_what(msg)}")
    return encode_frame(spec, msg, version)


def decode(data: bytes | bytearray | memoryview) -> Message:
    """The message in frame ``data`` (of any version this build speaks); :class:`DecodeError` for anything else.

    Accepts ``bytes``, ``bytearray`` or ``memoryview`` (a zero-copy zmq frame).
    """
    msg: Message = decode_frame(data, _BY_CODE)[1]
    return msg


def decode_versioned(data: bytes | bytearray | memoryview) -> tuple[int, Message]:
    """(the frame's wire version, its message): :func:`decode`, saying which layout came."""
    got: tuple[int, Message] = decode_frame(data, _BY_CODE)
    return got


def encode_lowest(msg: Message) -> bytes:
    """``msg`` at the oldest version that has its type: a tool's request, which every peer that
    knows the type reads whatever its version (``ring.wireversion`` rule 5 answers it at the tool's)."""
    spec = _BY_TYPE.get(type(msg))
    if spec is None:
        raise EncodeError(f"not a ring message: {_what(msg)}")
    return encode_frame(spec, msg, max(MIN_VERSION, spec.since))


def specs() -> tuple[_Spec, ...]:
    """Every table of this module: the message types', then the nested records' (``Member``...)."""
    nested = [v for v in globals().values() if isinstance(v, _Spec) and v not in _SPECS]
    return (*_SPECS, *nested)


def speaks(kind: type, version: int) -> bool:
    """Whether a peer of wire ``version`` knows message type ``kind`` (``ring.wirecodec`` rule 3)."""
    spec = _BY_TYPE.get(kind)
    return spec is not None and spec.since <= version and MIN_VERSION <= version <= VERSION
