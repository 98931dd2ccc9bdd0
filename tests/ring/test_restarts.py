"""Planned restarts (ring/membership/restarts.py): the record's rules and the ring that does not move."""

from __future__ import annotations

import random

import pytest
from membershipnet import (
    ALIVE,
    DEAD,
    DEAD_AFTER,
    INTERVAL,
    RESTARTING,
    answer,
    RING,
    SUSPECT,
    heard_cluster,
    make,
    rec,
    restartable,
    seed_list,
    static_cluster,
)

from ring.membership.records import (
    OWNERS,
    ChangeReason,
    IllegalTransition,
    LocalEvent,
    merge_members,
    next_state,
)
from ring.membership.restarts import Announce, RestartHolds
from ring.messages import Digest, Ping, PingAck, PingReq

HOLD = 20.0


def restarting_cluster(n=5, seed=1, loss=0.0, hold=HOLD):
    net = static_cluster(n, seed, loss)
    for i in range(n):
        net.peers[f"p{i}"] = make(f"p{i}", seed_list(n), rng=random.Random(seed * 1000 + i),
                                  restart_hold=hold)
    net.run_until_converged(limit=30)
    return net


def announce(net, pid):
    """``pid`` announces a restart, runs until every live member answered, then exits."""
    m = net.peers[pid]
    net.send(pid, m.restart(net.now), net.round)
    for _ in range(10):
        if m.announced():
            break
        net.step()
    assert m.announced(), m.restart_waiting()
    net.down.add(pid)


# -- the record ---------------------------------------------------------------


def test_restarting_ranks_above_alive_and_suspect_and_below_dead_within_one_incarnation():
    alive, suspect = rec("p1", state=ALIVE, hb=9), rec("p1", state=SUSPECT, hb=9)
    restarting, dead = rec("p1", state=RESTARTING, hb=2), rec("p1", state=DEAD, hb=1)
    assert merge_members(alive, restarting) is restarting
    assert merge_members(restarting, suspect) is restarting  # a suspicion as it stopped undoes nothing
    assert merge_members(restarting, dead) is dead  # its hold ran out somewhere: dead as any silent member
    back = rec("p1", inc=4, state=ALIVE, hb=0)
    assert merge_members(dead, back) is back  # its new process, rule 1


def test_only_the_member_restarts_itself_and_only_its_hold_ends_it():
    assert next_state(ALIVE, LocalEvent.RESTART) is RESTARTING
    assert next_state(RESTARTING, LocalEvent.HOLD_OVER) is DEAD
    assert next_state(RESTARTING, LocalEvent.REFUTE) is RESTARTING
    for state in (SUSPECT, DEAD):
        with pytest.raises(IllegalTransition):
            next_state(state, LocalEvent.RESTART)
    assert RESTARTING in OWNERS


def test_hearsay_restarting_about_a_member_held_alive_is_a_suspicion():
    m = heard_cluster(4)
    m.receive(Digest(RING, "p2", (rec("p1", state=RESTARTING, hb=5),)), 1.0)
    assert m.members()["p1"].state is SUSPECT
    assert m.dropped["hearsay_restarting"] == 1
    # Now that we suspect it, the claim agrees with our own silence: believed.
    m.receive(Digest(RING, "p2", (rec("p1", state=RESTARTING, hb=5),)), 1.5)
    assert m.members()["p1"].state is RESTARTING


def test_hearsay_restarting_of_an_unknown_member_is_an_alive_record_we_probe():
    m = heard_cluster(3)
    m.receive(Digest(RING, "p1", (rec("p9", state=RESTARTING),)), 1.0)
    assert m.members()["p9"].state is ALIVE
    assert m.dropped["hearsay_restarting"] == 1


def test_the_members_own_word_is_believed_and_a_dead_claim_about_it_is_refused():
    m = heard_cluster(4)
    m.receive(Ping(RING, "p1", 7, "p0", (rec("p1", state=RESTARTING, hb=5),)), 1.0)
    assert m.members()["p1"].state is RESTARTING
    ring_before = m.ring_version
    m.receive(Digest(RING, "p2", (rec("p1", state=DEAD, hb=5),), verdicts=True), 1.5)
    assert m.members()["p1"].state is RESTARTING
    assert m.dropped["hearsay_dead"] == 1
    assert m.ring_version == ring_before  # its hosts never moved


def test_a_restarting_member_is_not_probed_and_dies_only_when_its_hold_runs_out():
    m = make("p0", seed_list(3), restart_hold=HOLD)
    m.receive(Digest(RING, "p2", (rec("p2"),)), 0.0)
    m.receive(Ping(RING, "p1", 7, "p0", (rec("p1", state=RESTARTING, hb=5),)), 0.0)
    events = [e for e in m.drain_events() if e.id == "p1"]
    assert events[-1].reason is ChangeReason.RESTARTING
    version = m.ring_version
    t = 0.0
    while t < HOLD - INTERVAL:
        t += INTERVAL
        out = m.tick(t)
        assert all(dst != "p1" for dst, _ in out), (t, out)
        answer(m, out, t)  # p2 answers
        assert m.members()["p1"].state is RESTARTING
    assert "p1" in m.live() and m.ring_version == version
    assert m.restart_until("p1") == pytest.approx(HOLD)
    t += INTERVAL
    out = m.tick(t)
    assert m.members()["p1"].state is DEAD
    assert [e.reason for e in m.drain_events() if e.id == "p1"] == [ChangeReason.NOT_BACK]
    pushed = [msg for dst, msg in out if isinstance(msg, Digest) and msg.verdicts]
    assert pushed and pushed[0].members[0].state is DEAD


def test_an_older_peer_s_indirect_probe_of_a_restarting_member_is_answered_for_it():
    # Rule 6: a peer of wire version 3 reads `restarting` as alive and probes it; held
    # here, its PingReq gets the answer the member's relayed ack would be, so its ring
    # keeps the member (else neither side of the ring would have a majority).
    m = make("p0", seed_list(3), restart_hold=HOLD)
    m.receive(Digest(RING, "p2", (rec("p2"),)), 0.0)
    m.receive(Ping(RING, "p1", 7, "p0", (rec("p1", state=RESTARTING, hb=5),)), 0.0)
    out = m.receive(PingReq(RING, "p2", 41, "p1"), 0.1)
    assert [(dst, type(msg).__name__, msg.seq, msg.target) for dst, msg in out] == [("p2", "PingAck", 41, "p1")]
    assert out[0][1].vouch == 0  # a relayed answer vouches for nobody
    # Once the hold ran out here the member is dead, and nobody answers for it.
    t = 0.0
    while m.members()["p1"].state is RESTARTING:
        t += INTERVAL
        answer(m, m.tick(t), t)
    assert m.receive(PingReq(RING, "p2", 42, "p1"), t) == []


def test_a_restarting_member_blocks_termination():
    m = heard_cluster(3)
    m.set_local(idle=True)
    m.receive(Digest(RING, "p1", (rec("p1", state=RESTARTING, hb=5, idle=True),)), 0.0)
    m.receive(Digest(RING, "p2", (rec("p2", hb=5, idle=True),)), 0.0)
    assert not any(m.cluster_idle(t * INTERVAL) for t in range(40))


# -- the parts ----------------------------------------------------------------


def test_restart_holds_time_each_incarnation_from_when_it_was_first_held():
    holds = RestartHolds(10.0)
    holds.note(rec("p1", inc=3, state=RESTARTING, hb=1), 1.0)
    holds.note(rec("p1", inc=3, state=RESTARTING, hb=2), 4.0)  # a newer heartbeat: same hold
    assert holds.until("p1") == 11.0
    members = {"p1": rec("p1", inc=3, state=RESTARTING, hb=2)}
    assert list(holds.due(10.9, members)) == []
    assert [m.id for m in holds.due(11.0, members)] == ["p1"]
    holds.note(rec("p1", inc=4, state=ALIVE), 12.0)  # back
    assert holds.until("p1") is None and len(holds) == 0
    with pytest.raises(ValueError):
        RestartHolds(0.0)


def test_announce_counts_only_answers_from_the_member_pinged():
    a = Announce()
    a.sent(5, "p1")
    a.sent(6, "p2")
    assert not a.acked(5, "p2") and not a.acked(99, "p1")
    assert a.acked(5, "p1")
    assert a.waiting(["p1", "p2", "p3"]) == ["p2", "p3"]
    assert a.heard_by() == {"p1"}


# -- the ring -----------------------------------------------------------------


@pytest.mark.parametrize("loss", [0.0, 0.1])
def test_a_rolling_restart_of_every_peer_never_moves_the_ring(loss):
    net = restarting_cluster(5, seed=3, loss=loss)
    versions = {p: m.ring_version for p, m in net.peers.items()}
    down_rounds = int(2 * DEAD_AFTER / INTERVAL)  # each down longer than dead_after
    for i in range(5):
        pid = f"p{i}"
        announce(net, pid)
        for _ in range(down_rounds):
            net.step()
            for q in net.running():
                view = net.peers[q]
                assert view.members()[pid].state is RESTARTING, (pid, q)
                assert view.ring_version == versions[q], (pid, q)
        new = make(pid, seed_list(5), now=net.now, incarnation=9000 + i, restart_hold=HOLD,
                   rng=random.Random(i), resumed=True, lease=DEAD_AFTER / 2)
        net.peers[pid] = new
        net.down.discard(pid)
        net.run_until_converged(limit=30)
        versions[pid] = new.ring_version
        for q in net.running():
            if q != pid:
                assert net.peers[q].ring_version == versions[q]  # the return moved nothing either
                reasons = [e.reason for e in net.peers[q].drain_events() if e.id == pid]
                assert ChangeReason.RESTARTED in reasons and ChangeReason.SILENCE not in reasons


def test_without_an_announce_the_same_stop_moves_the_ring():
    """The test above can fail: a silent stop of the same length is a death."""
    net = restarting_cluster(5, seed=3)
    before = net.peers["p0"].ring_version
    net.down.add("p2")
    net.run(int(2 * DEAD_AFTER / INTERVAL))
    assert net.peers["p0"].members()["p2"].state is DEAD
    assert net.peers["p0"].ring_version != before


def test_a_restarting_peer_that_misses_an_answer_asks_again_each_round():
    m = make("p0", seed_list(3))
    m.receive(Digest(RING, "p1", (rec("p1"), rec("p2"))), 0.0)
    out = m.restart(0.0)
    assert {dst for dst, _ in out} == {"p1", "p2"}
    assert all(isinstance(msg, Ping) and msg.updates[0].state is RESTARTING for _, msg in out)
    first = {dst: msg.seq for dst, msg in out}
    m.receive(PingAck(RING, "p1", first["p1"], "p1", ()), 0.1)
    assert m.restart_waiting() == ["p2"] and not m.announced()
    again = m.tick(INTERVAL)
    assert [dst for dst, _ in again] == ["p2"]  # nothing else: no probes of a ring it leaves
    m.receive(PingAck(RING, "p2", again[0][1].seq, "p2", ()), 0.6)
    assert m.announced()


# -- the node and ring status --------------------------------------------------


def _node(peer_id: str, **kw):  # type: ignore[no-untyped-def]
    from ring.node import RingNode

    seeds = [("p1", "tcp://a:1", 1.0), ("p2", "tcp://a:2", 1.0), ("p3", "tcp://a:3", 1.0)]
    return RingNode(peer_id, f"tcp://a:{peer_id[1:]}", 1.0, RING, seeds=seeds, gossip_interval=0.1,
                    suspect_after=0.5, dead_after=1.5, now=0.0, incarnation=5000, **kw)


def test_a_restart_request_becomes_an_action_for_the_peer_it_names():
    from ring.actions import RestartAsked
    from ring.messages import RestartRequest, decode, encode

    n = _node("p1")
    msg = decode(encode(RestartRequest(RING, "ring-restart", "p1")))
    assert n.receive(b"tool", msg, 0.1)[-1] == RestartAsked("ring-restart")
    assert n.receive(b"tool", RestartRequest(RING, "ring-restart", "p2"), 0.1) == []


def test_ring_status_shows_a_restarting_member_and_when_its_hold_runs_out():
    from ring.messages import MemberStatus, StatusReply, decode, encode
    from ring.node import Send, StatusFigures

    p1, p2 = _node("p1", restart_hold=30.0), _node("p2")
    sends = [a for a in p2.restart(0.0) if isinstance(a, Send)]
    assert {a.dest for a in sends} == {"p1", "p3"} and p2.restarting
    p1.receive(b"p2/aaaa", sends[0].msg if sends[0].dest == "p1" else sends[1].msg, 1.0)
    reply = decode(encode(p1.status_reply(1, StatusFigures(), now=11.0, wall=1_000_000.0)))
    assert isinstance(reply, StatusReply)
    rows: dict[str, MemberStatus] = {m.id: m for m in reply.members}
    assert rows["p2"].shown_state == "restarting" and not rows["p2"].live
    assert rows["p2"].back_by == pytest.approx(1_000_000.0 + 20.0)  # held from 1.0, 30 s
    assert rows["p3"].back_by == 0.0 and rows["p2"].as_json()["back_by"] == pytest.approx(1_000_020.0)


def test_in_the_simulation_a_planned_restart_costs_the_others_no_lease_and_moves_no_ring():
    from ring.membership.sim import SimNet

    peers = [f"p{i}" for i in range(8)]
    seeds = [(p, f"tcp://10.0.0.{i}:5701") for i, p in enumerate(peers)]
    resumed: set[str] = set()

    net = SimNet(seed=2, loss=0.01)
    for i, p in enumerate(peers):
        net.add(p, restartable(p, seeds, resumed, hold=HOLD), i * 0.05)
    net.run_until(1.0)
    assert net.run_until_converged(limit=30.0) >= 0
    net.run_for(8.0)
    for victim in ("p3", "p6"):
        versions = {p: net.peers[p].ring_version for p in peers if p != victim}
        net.announce_restart(victim)
        net.run_for(2 * INTERVAL)
        assert net.peers[victim].announced()
        net.crash(victim)
        for _ in range(int(2 * DEAD_AFTER / 0.25)):  # down twice dead_after
            net.run_for(0.25)
            assert all(net.peers[p].lease_state(net.now).held for p in versions), net.now
        resumed.add(victim)
        net.restart(victim)
        net.run_for(8.0)
        assert net.peers[victim].lease_state(net.now).held
        assert {p: net.peers[p].ring_version for p in versions} == versions
    assert not [e for e in net.events if e.event.state is DEAD]


def test_a_peer_of_wire_version_3_is_told_a_restarting_member_is_alive():
    """Version 3 has no restarting state: such a peer probes the member and finds it dead, as before."""
    from ring.messages import Sync, decode, encode

    d = Digest(RING, "p1", (rec("p1", state=RESTARTING),))
    assert decode(encode(d, 3)).members[0].state is ALIVE
    assert decode(encode(d, 4)).members[0].state is RESTARTING
    s = Sync(RING, "p2", (("p1", 3, RESTARTING, 1),))
    assert decode(encode(s, 3)).summary[0][2] is ALIVE


def test_ring_forget_gives_up_on_a_restarting_member_at_once():
    from ring.messages import ForgetOutcome, ForgetReply, ForgetRequest
    from ring.node import Reply, Send

    p1, p2 = _node("p1"), _node("p2")
    announce_to_p1 = next(a.msg for a in p2.restart(0.0) if isinstance(a, Send) and a.dest == "p1")
    p1.receive(b"p2/aaaa", announce_to_p1, 1.0)
    assert "p2" in p1.membership.live()
    out = p1.receive(b"tool", ForgetRequest(RING, "ring-forget", "p2", 5), 2.0)
    reply = next(a.msg for a in out if isinstance(a, Reply))
    assert isinstance(reply, ForgetReply) and reply.outcome is ForgetOutcome.FORGOTTEN
    assert "p2" not in p1.membership.live()
