"""An operator's hold (ring/membership/restarts.py rule 7): a member that cannot announce its own
restart is held by the members an operator asks, and no view, ring or record changes anywhere.

The members not asked stand for peers of wire version 3: they know nothing of holds (nor of
``restarting``) and probe the held member as any other.
"""

from __future__ import annotations

import random

import pytest
from membershipnet import (
    ALIVE,
    DEAD,
    DEAD_AFTER,
    INTERVAL,
    RING,
    SUSPECT,
    answer,
    make,
    rec,
    seed_list,
    static_cluster,
)

from ring.membership.records import ChangeReason
from ring.membership.restarts import OperatorHolds
from ring.messages import Digest, HoldOutcome, HoldReply, HoldRequest, PingAck, PingReq, decode, encode

HOLD = 20.0


def cluster(n=5, seed=1):
    net = static_cluster(n, seed)
    for i in range(n):
        net.peers[f"p{i}"] = make(f"p{i}", seed_list(n), rng=random.Random(seed * 1000 + i), restart_hold=HOLD)
    net.run_until_converged(limit=30)
    for m in net.peers.values():
        m.drain_events()
    return net


# Three holders (a ring with two older peers), one (in a ring of 5 every peer's PingReq asks all
# three others, so one upgraded peer holds for everyone), none (the control: a death).
@pytest.mark.parametrize("holders", [("p0", "p1", "p2"), ("p0",), ()])
def test_a_held_member_down_past_dead_after_moves_no_ring_at_peers_that_hold_nothing(holders):
    # p3 cannot announce (an older release): p0-p2 hold it at the operator's word, p4 knows
    # nothing of holds. Without holders (the second case) the same stop is a death: the
    # test can fail.
    net = cluster()
    versions = {p: m.ring_version for p, m in net.peers.items()}
    for h in holders:
        assert net.peers[h].operator_hold("p3", net.now) == (HoldOutcome.HELD, HOLD)
    net.down.add("p3")
    for _ in range(int(2 * DEAD_AFTER / INTERVAL)):
        net.step()
    states = net.states_of("p3")
    if not holders:
        assert DEAD in states.values() or SUSPECT in states.values()
        assert any(net.peers[q].ring_version != versions[q] for q in net.running())
        return
    assert states == {q: ALIVE for q in net.running() if q != "p3"}  # no record changed anywhere
    assert {q: net.peers[q].ring_version for q in net.running()} == {q: versions[q] for q in net.running()}
    assert not any(e.id == "p3" for q in net.running() for e in net.peers[q].drain_events())
    # Its new process, at a later incarnation: alive everywhere, the ring as it was, the holds over.
    net.peers["p3"] = make("p3", seed_list(5), now=net.now, incarnation=9000, restart_hold=HOLD,
                           rng=random.Random(3))
    net.down.discard("p3")
    net.run_until_converged(limit=30)
    for q in net.running():
        if q != "p3":
            assert net.peers[q].ring_version == versions[q]
            assert [e.reason for e in net.peers[q].drain_events() if e.id == "p3"] == [ChangeReason.RESTARTED]
            assert net.peers[q].operator_held(net.now) == {}


def test_a_holder_does_not_probe_the_member_and_answers_a_ping_req_about_it():
    net = cluster(3)
    m = net.peers["p0"]
    m.operator_hold("p1", net.now)
    t = net.now
    for _ in range(int(HOLD / INTERVAL) - 2):
        t += INTERVAL
        out = m.tick(t)
        assert not [msg for dst, msg in out if dst == "p1" or getattr(msg, "target", "") == "p1"], t
        answer(m, out, t)  # p2 answers
    out = m.receive(PingReq(RING, "p2", 41, "p1"), t)
    assert [(dst, type(msg), msg.seq, msg.target) for dst, msg in out] == [("p2", PingAck, 41, "p1")]
    assert out[0][1].vouch == 0  # a relayed answer vouches for nobody
    assert m.members()["p1"].state is ALIVE


def test_the_hold_runs_out_and_a_member_not_back_is_found_dead_as_any_silent_one():
    net = cluster(3)
    net.peers["p0"].operator_hold("p1", net.now)
    net.down.add("p1")
    net.run(int(HOLD / INTERVAL) - 2)
    assert net.peers["p0"].members()["p1"].state is ALIVE  # p2 holds nothing: its PingReqs to p0 answered
    net.run(int((2 * DEAD_AFTER + 4) / INTERVAL))
    assert net.peers["p0"].members()["p1"].state is DEAD and net.peers["p0"].operator_held(net.now) == {}


def test_a_member_never_stopped_goes_on_as_before():
    net = cluster(3)
    net.peers["p0"].operator_hold("p1", net.now)
    net.run(int((HOLD + 2 * DEAD_AFTER) / INTERVAL))
    assert net.states_of("p1") == {"p0": ALIVE, "p2": ALIVE}
    assert not any(e.id == "p1" for m in net.peers.values() for e in m.drain_events())


def test_a_hold_ends_when_the_record_is_not_alive_at_that_incarnation():
    m = make("p0", seed_list(3), restart_hold=HOLD)
    m.receive(Digest(RING, "p1", (rec("p1"), rec("p2"))), 0.0)
    assert m.operator_hold("p0", 0.0) == (HoldOutcome.SELF, 0.0)
    assert m.operator_hold("p9", 0.0) == (HoldOutcome.NOT_KNOWN, 0.0)
    assert m.operator_hold("p1", 1.0) == (HoldOutcome.HELD, HOLD)
    assert m.operator_held(2.0) == {"p1": 1.0 + HOLD}
    assert m.operator_hold("p1", 5.0) == (HoldOutcome.HELD, HOLD)  # asked again: from then
    assert m.operator_held(6.0) == {"p1": 5.0 + HOLD}
    m.receive(Digest(RING, "p2", (rec("p1", state=SUSPECT, hb=2),)), 7.0)  # a suspicion reached us
    assert m.operator_held(7.0) == {}
    assert m.operator_hold("p1", 8.0) == (HoldOutcome.NOT_ALIVE, 0.0)
    holds = OperatorHolds(10.0)
    holds.start("p2", 3, 0.0)
    assert not holds.held(rec("p2", inc=4), 1.0)  # its new process: the hold is over
    with pytest.raises(ValueError):
        OperatorHolds(0.0)


def test_a_hold_request_is_answered_counted_and_shown_in_ring_status():
    from ring.actions import Log, Reply
    from ring.messages import MemberStatus, StatusReply
    from ring.node import RingNode, StatusFigures

    seeds = [("p1", "tcp://a:1", 1.0), ("p2", "tcp://a:2", 1.0), ("p3", "tcp://a:3", 1.0)]
    n = RingNode("p1", "tcp://a:1", 1.0, RING, seeds=seeds, gossip_interval=0.1, suspect_after=0.5,
                 dead_after=1.5, now=0.0, incarnation=5000, restart_hold=30.0)
    n.receive(b"p3/aaaa", Digest(RING, "p3", (rec("p3", inc=7), rec("p2", inc=7))), 0.5)
    out = n.receive(b"~tool/bbbb", decode(encode(HoldRequest(RING, "ring-restart", "p3", 99))), 1.0)
    replies = [a for a in out if isinstance(a, Reply)]
    assert [r.msg for r in replies] == [HoldReply(RING, "p1", "p3", HoldOutcome.HELD, 30.0, 99)]
    assert any(isinstance(a, Log) and a.event == "hold" for a in out)
    again = n.receive(b"~tool/bbbb", HoldRequest(RING, "ring-restart", "p1", 100), 1.0)
    assert [a.msg.outcome for a in again if isinstance(a, Reply)] == [HoldOutcome.SELF]
    assert n.dropped["hold_request.held"] == 1 and n.dropped["hold_request.self"] == 1
    reply = decode(encode(n.status_reply(1, StatusFigures(), now=11.0, wall=1_000_000.0)))
    assert isinstance(reply, StatusReply)
    rows: dict[str, MemberStatus] = {m.id: m for m in reply.members}
    assert rows["p3"].shown_state == "restarting" and rows["p3"].back_by == pytest.approx(1_000_020.0)
    assert rows["p2"].back_by == 0.0
    assert n.membership.members()["p3"].state is ALIVE  # the record itself is unchanged


def test_in_a_ring_of_10_five_holders_keep_the_held_member_alive_at_every_other_peer():
    # docs/operations.md, "Upgrading a ring": an older peer's probe asks 3 random others, twice;
    # with 5 holders among 10 peers one of them is nearly always asked (with one, never enough).
    net = static_cluster(10, 4)
    for i in range(10):
        net.peers[f"p{i}"] = make(f"p{i}", seed_list(10), rng=random.Random(4000 + i), restart_hold=HOLD)
    net.run_until_converged(limit=40)
    for h in ("p0", "p1", "p2", "p3", "p4"):
        net.peers[h].operator_hold("p9", net.now)
    net.down.add("p9")
    net.run(int(2 * DEAD_AFTER / INTERVAL))
    assert set(net.states_of("p9").values()) == {ALIVE}
