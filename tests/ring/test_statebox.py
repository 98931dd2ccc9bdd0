"""ring.statebox: hosts' state numbered, acked, resent and re-routed; and the node's side of it.

The state of a host that changes owner (revisit records, cookies, digests)
must reach the new owner before it fetches the host, and must never be
dropped by the sender before the new owner took it: a peer of an older
build that drops the message type leaves the records with their sender.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from fakering import RING

from ring.errors import DecodeError, DropKind
from ring.hashring import HashRing
from ring.messages import (
    VERSION,
    Ack,
    Digest,
    HandoffDone,
    HostState,
    HostStateAck,
    MemberState,
    UrlBatch,
    decode,
    encode,
)
from ring.node import Count, RingNode, Send, StateTaken
from ring.statebox import MAX_RESEND, Kind, StateBox, StateRecords
from ring.wireversion import marked_nonce

REV = ("http://a.test/x", "a.test", 1_700_000_100.0, 60.0, 1_700_000_000.0, "sha1:AB", '"e1"', "", 3, 1, 2)
COOKIE = ("a.test", "sid", "s3cr3t", "/", False, 0.0)
DIGEST = (2**63 + 5, "http://a.test/x")


def test_records_travel_numbered_and_are_dropped_only_when_acked() -> None:
    box = StateBox("p1", RING, epoch=7, chunk=2)
    for kind, rec in ((Kind.REVISIT, REV), (Kind.COOKIE, COOKIE), (Kind.DIGEST, DIGEST)):
        box.add("p2", "a.test", kind, rec)
    mark = box.barrier("p2")
    assert mark == 1  # three records in messages of at most two
    sent = box.messages(0.0)
    assert [(d, m.seq) for d, m in sent] == [("p2", 0), ("p2", 1)]
    assert sent[0][1] == HostState(RING, "p1", 7, 0, (REV,), (COOKIE,), ())
    assert sent[1][1].digests == (DIGEST,)
    assert box.messages(0.5) == []  # not yet due again
    assert box.ack("p2", 7, 0) and not box.acked_through("p2", mark)
    assert [m.seq for _, m in box.messages(1.0)] == [1]  # the unacked one, again
    assert box.ack("p2", 7, 1) and box.acked_through("p2", mark) and box.idle
    assert not box.ack("p2", 7, 1)  # a duplicate ack changes nothing
    assert box.counts["handoff_state.acked"] == 3


def test_a_peer_that_never_acks_keeps_the_records_here_resent_less_and_less_often() -> None:
    # A peer of an older build drops HostState as an unknown type: no ack ever.
    box = StateBox("p1", RING, epoch=7)
    box.add("old", "a.test", Kind.REVISIT, REV)
    times = [t / 4 for t in range(0, 4 * 200) if box.messages(t / 4)]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert gaps[:5] == [1.0, 2.0, 4.0, 8.0, 16.0] and set(gaps[5:]) == {MAX_RESEND}
    assert box.pending() == 1 and not box.idle  # nothing lost


def test_an_older_build_drops_the_new_types_as_unknown_and_ours_round_trip() -> None:
    msg = HostState(RING, "p1", 7, 3, (REV,), (COOKIE,), (DIGEST,))
    assert decode(encode(msg)) == msg
    assert decode(encode(HostStateAck(RING, "p2", 7, 3))) == HostStateAck(RING, "p2", 7, 3)
    import msgpack
    unknown = msgpack.packb([VERSION, 99, RING, "p1"])
    with pytest.raises(DecodeError) as e:
        decode(unknown)
    assert e.value.kind is DropKind.UNKNOWN_TYPE


def test_records_for_a_member_gone_go_to_their_hosts_new_owner_or_come_back() -> None:
    box = StateBox("p1", RING, epoch=7)
    box.add("p3", "a.test", Kind.REVISIT, REV)
    box.add("p3", "b.test", Kind.COOKIE, ("b.test", "n", "v", "/", False, 0.0))
    box.messages(0.0)  # sent, unacked
    owners = {"a.test": "p2", "b.test": "p1"}
    back = box.reroute(owners.__getitem__, members={"p1", "p2"})
    assert back == StateRecords((), (("b.test", "n", "v", "/", False, 0.0),), ())  # ours again
    [(dest, msg)] = box.messages(0.1)
    assert dest == "p2" and msg.revisits == (REV,) and msg.seq == 0
    assert box.pending() == 1  # the re-routed revisit, unacked at p2; nothing waits on p3


# -- the node's side -------------------------------------------------------------------

SEEDS = [("p1", "tcp://a:1", 1.0), ("p2", "tcp://a:2", 1.0), ("p3", "tcp://a:3", 1.0)]
R2 = b"p2/" + marked_nonce("a" * 16).encode()  # a member of wire version 4
R2_OLD = b"p2/aaaa"  # an unmarked route: a member of wire version 3 (ring.wireversion)
INC = 5000


def node(peer_id: str = "p1") -> RingNode:
    return RingNode(peer_id, "tcp://a:1", 1.0, RING, seeds=SEEDS, gossip_interval=0.1,
                    suspect_after=0.5, dead_after=1.5, now=0.0, incarnation=INC)


def heard(n: RingNode) -> RingNode:
    p2 = node("p2")
    n.receive(R2, p2.membership.digest(), 0.0)
    return p2


def first_ring(n: RingNode) -> None:
    """A round, and the first ring's hand-off (``ring.handoff`` rule 6) read: nothing fetched here."""
    n.tick(0.0, idle=True, pages=0)
    [first] = n.handoff.records
    n.begin_handoff(first.version, 0, {}, 0.0)


def test_a_new_owner_is_told_handoff_done_only_once_it_acked_the_hosts_state() -> None:
    n = node()
    p2 = heard(n)
    first_ring(n)
    p2.tick(1.9, idle=True, pages=0)
    p3 = p2.membership.members()["p3"]
    verdict = Digest(RING, "p2", (p2.membership.me, replace(p3, state=MemberState.DEAD)), verdicts=True)
    out = n.receive(R2, verdict, 1.9) + n.tick(2.0, idle=True, pages=0)
    handoff = next(a for a in out if type(a).__name__ == "HandOff")
    n.outbox.add_seen("http://a.test/x", "p2", 2.0)
    n.statebox.add("p2", "a.test", Kind.REVISIT, REV)
    out = n.begin_handoff(handoff.version, 1, {}, 2.0)
    [state] = [a.msg for a in out if isinstance(a, Send) and isinstance(a.msg, HostState)]
    assert state.revisits == (REV,)
    [batch] = [a.msg for a in n.flush(2.1) if isinstance(a.msg, UrlBatch)]
    out = n.receive(R2, Ack(RING, "p2", INC, batch.seq), 2.2)
    assert not any(isinstance(a, Send) and isinstance(a.msg, HandoffDone) for a in out)  # state not acked
    assert n.handing_off == 1
    out = n.receive(R2, HostStateAck(RING, "p2", INC, state.seq), 2.3)
    assert [type(a.msg).__name__ for a in out if isinstance(a, Send)] == ["HandoffDone"]
    assert n.handing_off == 0 and n.statebox.idle


def test_a_new_owner_of_an_older_wire_version_is_not_waited_for_its_state_is_dropped_and_counted() -> None:
    # Version 3 has no HostState: nothing would ever ack it, and the hand-off would
    # wait handoff_timeout (ring.statebox rule 7). Its URLs still go.
    n = node()
    p2 = node("p2")
    n.receive(R2_OLD, p2.membership.digest(), 0.0)
    first_ring(n)
    p2.tick(1.9, idle=True, pages=0)
    p3 = p2.membership.members()["p3"]
    verdict = Digest(RING, "p2", (p2.membership.me, replace(p3, state=MemberState.DEAD)), verdicts=True)
    out = n.receive(R2_OLD, verdict, 1.9) + n.tick(2.0, idle=True, pages=0)
    handoff = next(a for a in out if type(a).__name__ == "HandOff")
    n.outbox.add_seen("http://a.test/x", "p2", 2.0)
    n.statebox.add("p2", "a.test", Kind.REVISIT, REV)
    out = n.begin_handoff(handoff.version, 1, {}, 2.0)
    assert not any(isinstance(a, Send) and isinstance(a.msg, HostState) for a in out)
    assert n.statebox.idle and n.statebox.counts["handoff_state.unsupported"] == 1
    [batch] = [a.msg for a in n.flush(2.1) if isinstance(a.msg, UrlBatch)]
    out = n.receive(R2_OLD, Ack(RING, "p2", INC, batch.seq), 2.2)
    assert [type(a.msg).__name__ for a in out if isinstance(a, Send)] == ["HandoffDone"]
    assert n.handing_off == 0


def test_a_member_s_host_state_is_taken_then_acked_and_anyone_else_s_refused() -> None:
    n = node()
    heard(n)
    msg = HostState(RING, "p2", INC, 4, (REV,), (COOKIE,), ())
    out = n.receive(R2, msg, 1.0)
    assert out == [StateTaken(StateRecords((REV,), (COOKIE,), ()), "p2"),
                   Send("p2", HostStateAck(RING, "p1", INC, 4))]
    assert n.receive(R2, msg, 1.1)[1] == out[1]  # a replay: taken and acked again
    stranger = HostState(RING, "p9", INC, 0, (REV,))
    assert n.receive(b"p9/aaaa", stranger, 1.2) == [Count("unknown_sender")]
    n.leave(1.3)
    assert n.receive(R2, msg, 1.4) == [Count("leaving")]  # not acked: its sender re-routes it


def test_a_ring_change_gives_back_records_whose_host_is_ours_again() -> None:
    n = node()
    heard(n)
    n.tick(0.0, idle=True, pages=0)
    ring = n.ring()
    host = next(h for h in (f"h{i}.test" for i in range(100)) if ring.owner(h) == "p3")
    n.statebox.add("p3", host, Kind.COOKIE, (host, "n", "v", "/", False, 0.0))
    n.statebox.messages(0.1)
    p2 = node("p2")
    p2.tick(1.9, idle=True, pages=0)
    p3 = p2.membership.members()["p3"]
    verdict = Digest(RING, "p2", (p2.membership.me, replace(p3, state=MemberState.DEAD)), verdicts=True)
    out = n.receive(R2, verdict, 1.9)
    new_owner = HashRing({"p1": 1.0, "p2": 1.0}, vnodes=n.vnodes).owner(host)
    taken = [a for a in out if isinstance(a, StateTaken)]
    if new_owner == "p1":
        assert taken == [StateTaken(StateRecords((), ((host, "n", "v", "/", False, 0.0),), ()), "p1")]
    else:
        assert not taken
        assert [m.cookies for d, m in n.statebox.messages(2.0) if d == "p2"] == [((host, "n", "v", "/", False, 0.0),)]
