"""Peers one wire version apart: the tables say when each field came (``ring.wirecodec``, the
tables of ``ring.messages``), frames of both versions travel both ways, and each member is
spoken to at the version its routing id names (``ring.wireversion``).

The previous release's own codec reading today's frames (and the other way)
is tests/edges/test_previous_wire.py; a ring of both trees crawling is
tests/e2e/test_upgrade_ring.py.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import msgpack
import pytest

import ring.messages as M
from ring.errors import DecodeError, DropKind, EncodeError
from ring.forwarding.routes import member_route, route_member
from ring.messages import (MIN_VERSION, VERSION, Ack, Digest, LeaseStatus, Member,
                           MemberState, MemberStatus, StatusReply, StatusRequest, decode, decode_versioned,
                           encode, encode_lowest, speaks)
from ring.wirecodec import BASE_VERSION, NAME, UINT, Spec, added, decode_frame, encode_frame
from ring.wireversion import WireVersions, marked_nonce, route_version, speak_to, tool_route

# What wire version 3 carried, type by type: the layout a peer of the
# previous release reads and writes. Every field and type not here must say
# the version it came in (rule 2 of ring.wirecodec), or a newer peer would
# send it to a peer of version 3, which refuses the frame.
V3 = {
    1: (M.Digest, ("ring", "sender", "members", "want_reply", "verdicts")),
    2: (M.Join, ("ring", "sender", "address", "weight", "incarnation")),
    3: (M.Leave, ("ring", "sender", "incarnation")),
    4: (M.UrlBatch, ("ring", "sender", "epoch", "seq", "urls", "seen")),
    5: (M.Ack, ("ring", "sender", "epoch", "seq")),
    6: (M.StatusRequest, ("ring", "sender", "nonce")),
    7: (M.StatusReply, ("ring", "sender", "members", "nonce")),
    8: (M.HandoffDone, ("ring", "sender", "members")),
    9: (M.LeaveRequest, ("ring", "sender", "target")),
    10: (M.HostStarts, ("ring", "sender", "starts")),
    11: (M.Ping, ("ring", "sender", "seq", "target", "updates")),
    12: (M.PingReq, ("ring", "sender", "seq", "target", "updates")),
    13: (M.PingAck, ("ring", "sender", "seq", "target", "updates", "vouch")),
    14: (M.Sync, ("ring", "sender", "summary")),
    15: (M.Packet, ("ring", "sender", "epoch", "batches", "acked_epoch", "acks")),
    16: (M.ForgetRequest, ("ring", "sender", "target", "nonce")),
    17: (M.ForgetReply, ("ring", "sender", "target", "outcome", "nonce")),
    18: (M.NearQuery, ("ring", "sender", "bands", "fingerprint", "url", "reply_to", "seen_at")),
    19: (M.NearAnswer, ("ring", "sender", "url", "duplicate_of", "distance")),
    20: (M.Voters, ("ring", "sender", "version", "voters", "joint")),
    21: (M.VoterRequest, ("ring", "sender", "action", "target", "base", "nonce")),
    22: (M.VoterReply, ("ring", "sender", "target", "outcome", "version", "nonce")),
}
V3_RECORDS = {
    M.Member: ("id", "address", "incarnation", "state", "weight", "heartbeat", "idle", "sent", "received",
               "pages", "grants"),
    M.MemberStatus: ("id", "address", "state", "share", "pages", "rate", "frontier", "hosts", "forwarded_out",
                     "forwarded_in", "dns_hit_rate", "bloom_fill", "uptime", "dropped", "errors", "busiest",
                     "lease", "vouched", "needed", "quorum", "grace_left", "ring_version", "ring_fingerprint",
                     "heard", "page_cap", "budget_wait", "voters_version", "voters", "voters_joint",
                     "voters_alive", "voters_needed"),
    M.BatchPart: ("seq", "urls", "seen"),
}


def test_this_build_speaks_its_version_and_the_one_before():
    assert MIN_VERSION == VERSION - 1
    assert BASE_VERSION == 3  # the layout V3 below describes


# --------------------------------------------------------------------------
# The tables: rule 2 and 3 of ring.wirecodec


@pytest.mark.parametrize("spec", M.specs(), ids=lambda s: s.cls.__name__)
def test_every_field_added_after_version_3_trails_and_has_a_default(spec):
    fields = dataclasses.fields(spec.cls)
    later = [i for i, s in enumerate(spec.sinces) if s > BASE_VERSION]
    if spec.since > BASE_VERSION:
        return  # a type of a later version: all its fields came with it
    # trailing: once a field is added, every field after it is added too, in version order
    assert later == list(range(len(fields) - len(later), len(fields))), spec.cls
    assert list(spec.sinces) == sorted(spec.sinces)
    for i in later:
        f = fields[i]
        assert f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING, f.name
        assert BASE_VERSION < spec.sinces[i] <= VERSION


@pytest.mark.parametrize("spec", M.specs(), ids=lambda s: s.cls.__name__)
def test_what_version_3_did_not_carry_says_when_it_came(spec):
    """A field or a type added without its marker fails here (the layout of version 3 above)."""
    v3 = V3[spec.code][1] if spec.code in V3 and V3[spec.code][0] is spec.cls else V3_RECORDS.get(spec.cls)
    if v3 is None:
        assert spec.since > BASE_VERSION, f"{spec.cls.__name__}: a type version 3 did not have needs since=4"
        assert spec.code not in V3, f"code {spec.code} was {V3[spec.code][0].__name__}'s: codes are never reused"
        return
    assert spec.since == BASE_VERSION
    assert spec.names[:len(v3)] == v3, "a field of version 3 moved or went: that is a new VERSION"
    for name, since in zip(spec.names[len(v3):], spec.sinces[len(v3):]):
        assert since > BASE_VERSION, f"{spec.cls.__name__}.{name} was not in version 3: added(..., since=4)"


def test_a_spec_refuses_an_added_field_without_a_default_or_out_of_order():
    @dataclass(frozen=True, slots=True)
    class NoDefault:
        ring: str
        extra: int

    with pytest.raises(AssertionError, match="needs a default"):
        Spec(NoDefault, 99, (("ring", NAME), added("extra", UINT, since=4)))

    @dataclass(frozen=True, slots=True)
    class Middle:
        ring: str
        extra: int = 0
        old: int = 0

    with pytest.raises(AssertionError, match="go last"):
        Spec(Middle, 99, (("ring", NAME), added("extra", UINT, since=4), ("old", UINT)))


# --------------------------------------------------------------------------
# Frames of both versions


def status_row(**kw):
    base = dict(id="p1", address="tcp://h:1", state=MemberState.ALIVE, share=0.5, pages=3, rate=1.0,
                frontier=2, hosts=1, forwarded_out=0, forwarded_in=0, dns_hit_rate=0.0, bloom_fill=0.0,
                uptime=1.0)
    return MemberStatus(**(base | kw))


def test_a_field_added_in_4_is_left_out_of_a_version_3_frame_nested_too():
    # back_by, the last field of version 4, said: the row carries every field
    reply = StatusReply("demo", "p1", (status_row(wire_version=4, lease=LeaseStatus.HELD, back_by=2.5),), 7)
    new, old = encode(reply, 4), encode(reply, 3)
    assert msgpack.unpackb(new)[:2] == [4, 7] and msgpack.unpackb(old)[:2] == [3, 7]
    added = [f.name for f in dataclasses.fields(MemberStatus)][len(V3_RECORDS[MemberStatus]):]
    assert added[0] == "wire_version"  # then the others of version 4: paused, the config epoch's
    assert len(msgpack.unpackb(new)[4][0]) == len(V3_RECORDS[MemberStatus]) + len(added)
    assert len(msgpack.unpackb(old)[4][0]) == len(V3_RECORDS[MemberStatus])  # what version 3 reads
    assert decode(new) == reply
    # A version 3 frame decodes with the added fields' defaults: a row without
    # a wire version is a version 3 peer's.
    version, back = decode_versioned(old)
    assert version == 3 and back.members[0] == dataclasses.replace(reply.members[0], wire_version=3, back_by=0.0)


def test_a_version_4_frame_leaves_out_the_trailing_fields_of_version_4_at_their_defaults():
    # A lease renewal's answer, nothing recent and nothing to settle: version 3's bytes.
    bare = M.PingAck("demo", "p1", 7, "p1", (), 99)
    assert msgpack.unpackb(encode(bare, 4))[1:] == msgpack.unpackb(encode(bare, 3))[1:]
    assert len(encode(bare, 4)) == len(encode(bare, 3))
    assert decode(encode(bare, 4)) == bare
    recent = (M.RecentRing(5, (("p2", 1.0),)),)
    # what is said goes, and the defaults before it (positional)
    for msg, fields in ((dataclasses.replace(bare, settle_ms=250), 8),
                        (dataclasses.replace(bare, recent=recent), 7),
                        (dataclasses.replace(bare, recent=recent, settle_ms=250), 8)):
        assert len(msgpack.unpackb(encode(msg, 4))) - 2 == fields, msg
        assert decode(encode(msg, 4)) == msg
    # a status row of version 4 ends at its last field said
    row = status_row(wire_version=4)
    wire = msgpack.unpackb(encode(StatusReply("demo", "p1", (row,), 7), 4))[4][0]
    assert len(wire) == len(V3_RECORDS[MemberStatus]) + 1
    assert decode(encode(StatusReply("demo", "p1", (row,), 7), 4)).members[0] == row


def test_a_version_4_frame_may_carry_any_count_from_version_3s_to_its_own_and_no_other():
    ack = [4, 13, "demo", "p1", 7, "p1", [], 99]  # version 3's six fields
    for extra, settle in (([], 0), ([[]], 0), ([[], 250], 250)):
        assert decode(msgpack.packb(ack + extra)).settle_ms == settle
    for bad in (ack[:-1], ack + [[], 250, 1]):
        with pytest.raises(DecodeError, match="PingAck: .* fields, expected 6-8"):
            decode(msgpack.packb(bad))
    # version 3 frames stay exact: that is what a peer of the previous release reads
    with pytest.raises(DecodeError, match="PingAck: 7 fields, expected 6$"):
        decode(msgpack.packb([3] + ack[1:] + [[]]))
    # a type of version 4 carries all its own fields
    with pytest.raises(DecodeError, match="Later: 2 fields, expected 3"):
        decode_frame(msgpack.packb([4, 99, "demo", "p1"]), {99: LATER})
    assert decode_frame(encode_frame(LATER, Later("demo", "p1", 0), 4), {99: LATER}) == (4, Later("demo", "p1", 0))


def test_unchanged_layouts_are_the_same_bytes_at_both_versions_but_the_version():
    msgs = [Ack("demo", "p1", 7, 9), StatusRequest("demo", "ring-status", 5),
            Digest("demo", "p1", (Member("p1", "tcp://h:1", 1, MemberState.ALIVE, 1.0, 2, False, 0, 0, 5,
                                         (("p2", 4),)),))]
    for msg in msgs:
        new, old = encode(msg, 4), encode(msg, 3)
        assert msgpack.unpackb(new)[1:] == msgpack.unpackb(old)[1:]
        assert decode(new) == decode(old) == msg


def test_two_versions_apart_is_refused_either_way():
    with pytest.raises(EncodeError, match="speaks 3-4"):
        encode(Ack("demo", "p1", 7, 9), VERSION - 2)
    frame = msgpack.packb([VERSION - 2, 5, "demo", "p1", 7, 9])
    with pytest.raises(DecodeError) as e:
        decode(frame)
    assert e.value.kind is DropKind.VERSION
    frame = msgpack.packb([VERSION + 1, 5, "demo", "p1", 7, 9])
    with pytest.raises(DecodeError):
        decode(frame)


def test_a_frame_of_version_3_with_a_version_4_length_is_malformed():
    row = msgpack.unpackb(encode(StatusReply("demo", "p1", (status_row(wire_version=4),)), 4))[4][0]
    with pytest.raises(DecodeError, match=r"MemberStatus: \d+ fields, expected 31"):
        decode(msgpack.packb([3, 7, "demo", "p1", [row], 0]))


@dataclass(frozen=True, slots=True)
class Later:
    """A message type of version 4, as another change would add one."""

    ring: str
    sender: str
    n: int = 0


LATER = Spec(Later, 99, (("ring", NAME), ("sender", NAME), ("n", UINT)), since=4)


def test_a_type_of_version_4_is_not_in_a_version_3_frame():
    with pytest.raises(EncodeError, match="not in wire version 3"):
        encode_frame(LATER, Later("demo", "p1", 1), 3)
    assert decode_frame(encode_frame(LATER, Later("demo", "p1", 1), 4), {99: LATER}) == (4, Later("demo", "p1", 1))
    # what a peer of version 3 would be sent, were it sent: an unknown type to it
    with pytest.raises(DecodeError) as e:
        decode_frame(msgpack.packb([3, 99, "demo", "p1", 1]), {99: LATER})
    assert e.value.kind is DropKind.UNKNOWN_TYPE


def test_speaks_says_which_types_a_version_has():
    assert speaks(Ack, 3) and speaks(Ack, 4)
    assert not speaks(Ack, 2) and not speaks(Ack, 5)
    assert not speaks(Later, 4)  # not a message of ring.messages
    assert encode_lowest(StatusRequest("demo", "ring-status", 5))[1] == 3  # msgpack fixarray, then version 3


# --------------------------------------------------------------------------
# Whom to speak which version to: ring.wireversion


def test_a_routing_id_names_its_senders_version():
    nonce = marked_nonce("0123456789abcdef")
    assert nonce == "0123456789abcdef04"
    route = member_route("p1", nonce)
    assert route_member(route) == "p1"  # still a member's route, to every version
    assert route_version(route) == 4
    assert route_version(member_route("p1", "0123456789abcdef")) == 3  # a version 3 peer's
    assert route_version(b"\x00\x12\x34\x56\x78") == 3  # libzmq's own: a version 3 tool's
    tool = tool_route("0123456789abcdef")
    assert route_member(tool) is None and route_version(tool) == 4  # a tool's claims no member
    assert speak_to(route_version(member_route("p1", marked_nonce("0123456789abcdef", 9)))) == VERSION
    assert speak_to(2) == MIN_VERSION


def test_a_member_is_spoken_to_at_the_lowest_until_heard_then_at_its_own():
    members = {"p1", "p2"}
    versions = WireVersions(members.__contains__)
    assert versions.of("p2") == MIN_VERSION  # not heard from yet
    versions.heard(member_route("p2", marked_nonce("00" * 8)))
    assert versions.of("p2") == 4
    # restarted as the previous release: its new route is unmarked
    versions.heard(member_route("p2", "11" * 8))
    assert versions.of("p2") == 3
    versions.heard(member_route("p9", marked_nonce("22" * 8)))  # not a member: not kept
    versions.heard(tool_route("33" * 8))
    assert versions.versions() == {"p2": 3}


def test_duplicate_messages_go_whole_to_a_member_not_yet_heard_from():
    # A version-3 frame would leave out what a page's canonical says, and the band
    # owner would order the copy as if it had none (ring.wireversion rule 3).
    members = {"p1", "p2"}
    versions = WireVersions(members.__contains__)
    assert versions.for_message("p2", M.NearQuery) == VERSION
    assert versions.for_message("p2", M.NearAnswer) == VERSION
    assert versions.for_message("p2", M.Reverdict) == VERSION
    assert versions.for_message("p2", M.UrlBatch) == MIN_VERSION
    versions.heard(member_route("p2", "11" * 8))  # heard: the previous release
    assert versions.for_message("p2", M.NearQuery) == 3


def test_under_curve_only_the_members_own_key_says_its_version():
    versions = WireVersions({"p2"}.__contains__, curve=True)
    versions.heard(member_route("p2", marked_nonce("00" * 8)), user_id="p3")
    assert versions.of("p2") == MIN_VERSION
    versions.heard(member_route("p2", marked_nonce("00" * 8)), user_id="p2")
    assert versions.of("p2") == 4


def test_a_ring_node_knows_what_each_member_speaks_from_the_routes_it_hears():
    from ring.node import RingNode

    seeds = [("p1", "tcp://a:1", 1.0), ("p2", "tcp://a:2", 1.0), ("p3", "tcp://a:3", 1.0)]
    n = RingNode("p1", "tcp://a:1", 1.0, "demo", seeds=seeds, gossip_interval=0.1, suspect_after=0.5,
                 dead_after=1.5, now=0.0, incarnation=5000)
    assert n.speaks("p2", Ack) and not n.speaks("p2", Later)  # a type ring.messages does not have
    assert n.wire.of("p2") == n.wire.of("p3") == MIN_VERSION  # not heard from
    n.receive(member_route("p2", marked_nonce("00" * 8)), Ack("demo", "p2", 1, 0), 0.0)
    n.receive(member_route("p3", "11" * 8), Ack("demo", "p3", 1, 0), 0.0)  # the previous release
    assert n.wire.versions() == {"p2": VERSION, "p3": 3}


def test_a_vouch_with_recent_rings_vouches_for_nothing_to_a_member_of_version_3():
    # Version 3 drops `recent` and would count the vouch as settled within a grace
    # (ring.wireversion rule 7): to it, the answer vouches for nothing, as its own rule 2 did.
    from ring.messages import PingAck, RecentRing
    from ring.wireversion import said_to

    ack = PingAck("demo", "p1", 7, "p1", (), 0xABC, (RecentRing(0xDEF, (("p3", 1.0),), ()),), 900)
    assert said_to(ack, 4) == ack
    old = said_to(ack, 3)
    assert (old.vouch, old.recent, old.settle_ms) == (0, (), 0)
    settled = PingAck("demo", "p1", 7, "p1", (), 0xABC)
    assert said_to(settled, 3) == settled  # no recent ring: a whole vouch, as version 3 reads it
    assert decode(encode(old, 3)).vouch == 0
