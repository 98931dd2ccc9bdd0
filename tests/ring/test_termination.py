"""ring.membership.termination: the counter method over gossiped counters, alone and through Membership."""

from __future__ import annotations

import pytest

from ring.messages import Digest, Member
from ring.membership.termination import TerminationDetector

from membershipnet import (
    ALIVE,
    DEAD,
    INTERVAL,
    LEFT,
    RING,
    SUSPECT,
    make,
    seed_list,
    static_cluster,
)


def test_cluster_idle_needs_two_rounds_of_idle_balanced_counters():
    net = static_cluster(4, seed=9)
    net.run_until_converged(limit=10)
    p0 = net.peers["p0"]
    for m in net.peers.values():
        m.set_local(idle=True, sent=0, received=0)
    # p1 forwarded 5 URLs to p2, which has not counted them yet
    net.peers["p1"].set_local(sent=5)
    for _ in range(8):
        net.step()
        assert not p0.cluster_idle(net.now)
    net.peers["p2"].set_local(received=5)
    idle_at = []
    for _ in range(8):
        net.step()
        idle_at.append(p0.cluster_idle(net.now))
    # (no loss, fanout 3 of 3: p0 hears of p2's count in the first round) the
    # balanced view starts a wave, then it takes two rounds of fresh reports
    assert idle_at == [False, False, True, True, True, True, True, True]
    net.peers["p3"].set_local(idle=False)  # new work anywhere: not idle any more
    net.run(2)
    assert not p0.cluster_idle(net.now)


def test_termination_detector_counts_rounds_in_fresh_heartbeats():
    def view(hb, *, idle=True, sent=(3, 0), received=(0, 3), suspect=False):
        return {
            "a": Member("a", "x", 1, ALIVE, 1.0, hb, idle, sent[0], received[0]),
            "b": Member("b", "y", 1, SUSPECT if suspect else ALIVE, 1.0, hb, True, sent[1], received[1]),
        }

    d = TerminationDetector(interval=1.0)
    assert d.observe(view(1), 0.0) is False  # wave starts
    assert d.observe(view(1), 5.0) is False  # time passed, but no fresh report
    assert d.observe(view(2), 5.0) is False  # one round
    assert d.observe(view(2), 5.5) is False
    assert d.observe(view(3), 5.5) is False  # fresh, but less than an interval
    assert d.observe(view(3), 6.0) is True  # two rounds
    assert d.observe(view(3), 9.0) is True
    assert d.observe(view(4, sent=(3, 1), received=(1, 3)), 9.0) is False  # counters moved
    assert d.observe(view(5, received=(0, 2)), 9.0) is False  # unbalanced
    assert d.observe(view(5, idle=False), 9.0) is False
    d2 = TerminationDetector(interval=1.0)
    for t in range(10):
        assert d2.observe(view(1, suspect=True), float(t)) is False  # a suspect's heartbeat is stuck


def test_set_local_gossips_every_change_with_a_new_heartbeat():
    a, b = make("p0", seed_list(2)), make("p1", seed_list(2))
    a.set_local(idle=True)
    b.receive(a.digest(), 0.0)
    assert b.members()["p0"].idle is True
    hb = a.me.heartbeat
    a.set_local(idle=True)  # no change, no new heartbeat
    assert a.me.heartbeat == hb
    a.set_local(idle=False, sent=2)  # new work: must win over the idle record
    assert a.me.heartbeat == hb + 1
    b.receive(a.digest(), 0.0)
    assert (b.members()["p0"].idle, b.members()["p0"].sent) == (False, 2)
    with pytest.raises(ValueError):
        a.set_local(pages=-1)


def test_left_members_counters_count_dead_ones_do_not():
    m = make("p0", seed_list(4))
    # p0 took p1's hand-off (4 entries); p3 died and p0 dropped its channel.
    m.set_local(idle=True, sent=0, received=4)
    m.receive(Digest(RING, "p1", (Member("p1", "a", 5, LEFT, 1.0, 9, True, 4, 0, 17),)), 0.0)
    m.receive(Digest(RING, "p2", (Member("p2", "b", 5, ALIVE, 1.0, 9, True, 0, 0, 3),)), 0.0)
    m.receive(Digest(RING, "p2", (Member("p3", "c", 5, DEAD, 1.0, 9, False, 7, 2, 5),), verdicts=True), 0.0)
    assert m.total_pages() == 25  # max_pages counts every page ever fetched
    # p2 ticks in lockstep with us; the left p1's 4 sent balance our 4 received
    hb = 9
    result = []
    for r in range(1, 6):
        hb += 1
        m.receive(Digest(RING, "p2", (Member("p2", "b", 5, ALIVE, 1.0, hb, True, 0, 0, 3),)), r * INTERVAL)
        m.tick(r * INTERVAL)
        result.append(m.cluster_idle(r * INTERVAL))
    assert result == [False, False, True, True, True]


def test_unbalanced_but_quiet_counters_end_the_crawl_after_quiet_rounds():
    # A peer died between taking a batch and acking it: the sums never agree,
    # but every live peer is idle and nothing moves.
    def view(hb):
        return {"a": Member("a", "x", 1, ALIVE, 1.0, hb, True, 5, 0),
                "b": Member("b", "y", 1, ALIVE, 1.0, hb, True, 0, 3)}

    d = TerminationDetector(interval=1.0, rounds=2, quiet_rounds=4)
    got = [d.observe(view(hb), float(hb)) for hb in range(1, 8)]
    assert got == [False, False, False, False, True, True, True]  # 4 rounds after the first
    assert d.balanced is False
    # Not idle: never, however long.
    d2 = TerminationDetector(interval=1.0, rounds=2, quiet_rounds=4)
    busy = {"a": Member("a", "x", 1, ALIVE, 1.0, 1, False, 5, 5)}
    assert not any(d2.observe(busy, float(t)) for t in range(20))
