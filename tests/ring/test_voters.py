"""ring.membership.voters: the lease's voters, changed a member at a time in two steps
(kept by each peer as ring.membership.voterkeeper does).

From the pure rules (two records in use at once always have majorities
that share a voter; what a record may be; how many failures it survives),
through Memberships in tests/support/leasenet.py's ``LeaseNet`` (a joiner
made a voter keeps a ring of two listed peers fetching when one is killed;
a restart keeps the record; concurrent and stale changes), to the lease's
safety property over randomized runs with voter changes among the splits,
stalls and restarts.
"""

from __future__ import annotations

import itertools
import random

import pytest
from leasenet import LeaseNet
from test_lease import chaos, one_ring_among_holders

from ring.membership.voters import (Survival, VoterRecord, initial, joint_change, problem, settle, survival,
                                   wins)
from ring.messages import MemberState, VoterAction, VoterOutcome, Voters

ADD, RETIRE = VoterAction.ADD, VoterAction.RETIRE


def majorities(ids: tuple[str, ...]) -> list[frozenset[str]]:
    """Every majority of ``ids`` (every subset of more than half)."""
    need = len(ids) // 2 + 1
    return [frozenset(c) for k in range(need, len(ids) + 1) for c in itertools.combinations(ids, k)]


def lease_sets(r: VoterRecord) -> list[frozenset[str]]:
    """Every set of voters whose vouches give a lease under ``r``: a majority of each of its quorums."""
    out = [frozenset()]
    for q in r.quorums():
        out = [a | b for a in out for b in majorities(q)]
    return out


def share_a_voter(a: VoterRecord, b: VoterRecord) -> bool:
    """Whether every lease under ``a`` and every lease under ``b`` rest on a common voter."""
    return all(x & y for x in lease_sets(a) for y in lease_sets(b))


# -- the rules, pure -------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_neighbouring_records_always_share_a_voter(n):
    # The lease's argument needs a voter in both majorities of any two leases
    # that can be held at once. Every change from n voters, each step of it.
    base = VoterRecord(2, tuple(f"p{i}" for i in range(n)))
    for action, target in [*((RETIRE, v) for v in base.voters), (ADD, "p9")]:
        if action is RETIRE and n == 1:
            continue
        joint = joint_change(base, action, target)
        assert joint is not None and not joint.settled and joint.version == 3
        done = settle(joint)
        assert done.settled and done.version == 4 and done.voters == joint.voters
        assert share_a_voter(base, joint), (base, joint)
        assert share_a_voter(joint, done), (joint, done)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_two_concurrent_changes_share_a_voter_and_settled_ones_would_not(n):
    # Two operators change the voters at once through two peers: two joint
    # records of one version. Leases under both need a majority of the same
    # old set, so they share a voter, and no peer vouches for both (rule 5):
    # at most one is ever under a lease.
    base = VoterRecord(0, tuple(f"p{i}" for i in range(n)))
    a = joint_change(base, ADD, "p8")
    b = joint_change(base, ADD, "p9")
    assert a is not None and b is not None and a.version == b.version and a != b
    assert share_a_voter(a, b)
    assert share_a_voter(a, joint_change(base, RETIRE, "p0"))  # type: ignore[arg-type]
    # Why the joint step: had each change gone straight to its settled record,
    # an even number of voters gives two leases that share no one
    # ({p0, p8} and {p1, p9} of p0, p1 plus p8 or p9).
    if n % 2 == 0:
        assert not share_a_voter(settle(a), settle(b))


def test_a_record_that_cannot_be_one_is_refused():
    assert problem(VoterRecord(1, ("p0", "p1", "p2"), ("p0", "p1"))) is None
    assert problem(VoterRecord(2, ("p0", "p1", "p2"))) is None
    for bad in (
        VoterRecord(0, ("p0",)),  # version 0 is cluster.toml's: never sent
        VoterRecord(2, ()),  # no voter
        VoterRecord(2, ("p1", "p0")),  # not sorted
        VoterRecord(2, ("p0", "p0")),  # twice
        VoterRecord(2, ("p0",), ("p0",)),  # settled with a joint set
        VoterRecord(1, ("p0", "p1", "p2")),  # joint without the old set
        VoterRecord(1, ("p0", "p1", "p2", "p3"), ("p0", "p1")),  # two members at once
        VoterRecord(1, ("p0", "p1"), ("p0", "p1")),  # no change at all
    ):
        assert problem(bad) is not None, bad


def test_a_higher_version_wins_and_one_version_is_sticky():
    ours = VoterRecord(1, ("p0", "p1", "p2"), ("p0", "p1"))
    other = VoterRecord(1, ("p0", "p1", "p3"), ("p0", "p1"))
    assert not wins(other, ours) and not wins(ours, other)
    assert wins(settle(other), ours)  # the settled record of the other change rescues us
    assert not wins(initial(["p0", "p1"]), ours)


def test_joint_change_says_when_there_is_nothing_to_change():
    base = initial(["p1", "p0"])
    assert base == VoterRecord(0, ("p0", "p1"))
    assert joint_change(base, ADD, "p0") is None
    assert joint_change(base, RETIRE, "p5") is None
    with pytest.raises(ValueError):
        joint_change(joint_change(base, ADD, "p2"), ADD, "p3")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        settle(base)


def test_survival_is_the_voters_that_can_fail_while_a_majority_stays_alive():
    three = [("p0", "p1", "p2")]
    assert survival(three, {"p0", "p1", "p2"}) == Survival(3, 2, 3)
    assert survival(three, {"p0", "p1", "p2"}).survives == 1
    assert survival(three, {"p0", "p1"}).survives == 0  # the edge: one more and it pauses
    lost = survival(three, {"p0"})
    assert lost.survives == 0 and not lost.majority
    assert survival([("p0", "p1")], {"p0", "p1"}).survives == 0  # a ring of two never survives one
    assert survival([("p0", "p1", "p2", "p3", "p4")], {"p0", "p1", "p2", "p3", "p4"}).survives == 2
    # Joint: each set must keep its majority; the figure is the smaller one.
    joint = [("p0", "p1"), ("p0", "p1", "p2")]
    assert survival(joint, {"p0", "p1", "p2"}) == Survival(2, 2, 2)


def test_a_change_leaves_the_record_it_was_made_from_only_forwards():
    r = initial(["p0", "p1"])
    seen = [r]
    for action, target in ((ADD, "p2"), (RETIRE, "p0"), (ADD, "p3"), (RETIRE, "p2")):
        j = joint_change(seen[-1], action, target)
        assert j is not None
        seen += [j, settle(j)]
    assert [x.version for x in seen] == list(range(9))
    assert seen[-1].voters == ("p1", "p3")
    assert all(problem(x) is None for x in seen[1:])
    assert len({x.ident() for x in seen}) == len(seen) and seen[0].ident() == 0


# -- Memberships in a network -----------------------------------------------------


def two_and_a_joiner(seed: int) -> LeaseNet:
    """p0 and p1 listed in cluster.toml, p2 joined; all hold their leases."""
    net = LeaseNet(2, seed, latency=(0.001, 0.05))
    net.run_until(5.0, one_ring_among_holders)
    net.join("p2")
    net.run_until(20.0, one_ring_among_holders)
    assert all(net.held(p) for p in ("p0", "p1", "p2"))
    return net


def held_from(net: LeaseNet, pids: tuple[str, ...], start: float, end: float) -> float:
    """Run until ``end``; the share of checks from ``start`` at which all ``pids`` held a lease."""
    checks = held = 0
    while net.t < end:
        net.run_until(net.t + 0.1, one_ring_among_holders)
        if net.t >= start:
            checks += 1
            held += all(net.held(p) for p in pids)
    return held / checks


def test_a_joiner_made_a_voter_keeps_the_ring_fetching_when_a_listed_peer_is_killed():
    # The ring: two peers listed, a third joined. Without a change, a
    # kill -9 of either listed peer pauses the other two: a majority of two.
    before = two_and_a_joiner(1)
    assert before.peers["p1"].m.survival().survives == 0
    before.crash("p0")
    assert held_from(before, ("p1", "p2"), 10.0 + before.t, 60.0 + before.t) == 0.0
    st = before.peers["p1"].m.lease_state(before.peers["p1"].local(before.t))
    assert st is not None and (st.vouched, st.needed, st.quorum) == (1, 2, 2)  # no-majority 1/2/2

    net = two_and_a_joiner(1)
    assert net.change_voters("p1", ADD, "p2") is VoterOutcome.NOT_STEWARD  # the lowest live id writes
    assert net.change_voters("p0", ADD, "p2") is VoterOutcome.CHANGING
    net.run_until(net.t + 20.0, one_ring_among_holders)
    for p in ("p0", "p1", "p2"):
        m = net.peers[p].m
        assert m.voter_record == VoterRecord(2, ("p0", "p1", "p2")), p
        assert m.survival().survives == 1
    net.crash("p0")
    t = net.t
    # Once p0 is declared dead (dead_after) and the ring's grace is over, the
    # two left hold their leases for good: 2 of 3 voters.
    assert held_from(net, ("p1", "p2"), t + 15.0, t + 60.0) == 1.0
    st = net.peers["p2"].m.lease_state(net.peers["p2"].local(net.t))
    assert st is not None and (st.vouched, st.needed, st.quorum) == (2, 2, 3)
    assert net.peers["p2"].m.survival().survives == 0


def test_a_voter_retired_leaves_the_quorum_and_a_restart_keeps_the_record():
    net = two_and_a_joiner(2)
    assert net.change_voters("p0", ADD, "p2") is VoterOutcome.CHANGING
    net.run_until(net.t + 20.0, one_ring_among_holders)
    assert net.change_voters("p0", RETIRE, "p0") is VoterOutcome.CHANGING  # a voter retires itself
    net.run_until(net.t + 20.0, one_ring_among_holders)
    assert {net.peers[p].m.voter_record for p in ("p0", "p1", "p2")} == {VoterRecord(4, ("p1", "p2"))}
    # p0 runs on as a learner; killed, it takes no vote away.
    net.restart("p1")
    assert net.peers["p1"].m.voter_record == VoterRecord(4, ("p1", "p2"))
    net.run_until(net.t + 20.0, one_ring_among_holders)
    assert all(net.held(p) for p in ("p0", "p1", "p2"))
    net.crash("p0")
    assert held_from(net, ("p1", "p2"), net.t + 15.0, net.t + 40.0) == 1.0


def test_a_stale_busy_or_early_request_changes_nothing():
    net = two_and_a_joiner(3)
    m = net.peers["p0"].m
    now = net.peers["p0"].local(net.t)
    assert m.change_voters(ADD, "p2", 7, now) == (VoterOutcome.STALE, [])
    assert m.change_voters(ADD, "p0", 0, now) == (VoterOutcome.ALREADY, [])
    assert m.change_voters(RETIRE, "p2", 0, now) == (VoterOutcome.ALREADY, [])
    assert m.change_voters(ADD, "p7", 0, now) == (VoterOutcome.NOT_LIVE, [])
    outcome, sends = m.change_voters(ADD, "p2", 0, now)
    assert outcome is VoterOutcome.CHANGING and {d for d, _ in sends} == {"p1", "p2"}
    assert m.change_voters(ADD, "p2", 1, now) == (VoterOutcome.BUSY, [])  # joint: not settled yet
    # The peer is in grace (its record changed): it cannot settle, nor change more.
    assert m.voter_record.version == 1 and m.voter_record.joint == ("p0", "p1")
    # A ring of one voter keeps it.
    solo = LeaseNet(1, 4)
    solo.run_until(5.0)
    p = solo.peers["p0"]
    assert p.m.change_voters(RETIRE, "p0", 0, p.local(solo.t)) == (VoterOutcome.LAST_VOTER, [])


def test_a_peer_without_its_lease_changes_nothing():
    net = two_and_a_joiner(5)
    net.crash("p0")
    net.run_until(net.t + 20.0)
    p = net.peers["p1"]
    assert not net.held("p1")
    assert p.m.change_voters(ADD, "p2", 0, p.local(net.t)) == (VoterOutcome.NO_LEASE, [])


def test_a_malformed_conflicting_or_old_record_is_refused_counted_or_answered():
    net = two_and_a_joiner(6)
    m = net.peers["p0"].m
    now = net.peers["p0"].local(net.t)
    bad = Voters("testring", "p1", 3, ("p0", "p1", "p2", "p3"), ("p0", "p1"))
    assert m.receive(bad, now) == [] and m.dropped["bad_voters"] == 1
    assert m.receive(Voters("testring", "p1", 0, ("p1",)), now) == [] and m.dropped["bad_voters"] == 2
    assert m.voter_record.version == 0
    mine = Voters("testring", "p1", 1, ("p0", "p1", "p2"), ("p0", "p1"))
    assert m.receive(mine, now) == [] and m.voter_record.version == 1
    other = Voters("testring", "p2", 1, ("p0", "p1", "p3"), ("p0", "p1"))
    assert m.receive(other, now) == [] and m.dropped["voters_conflict"] == 1
    assert m.voter_record.voters == ("p0", "p1", "p2")  # sticky
    # A peer behind is told ours.
    back = m.receive(Voters("testring", "p2", 0 + 2, ("p0", "p1")), now)
    assert m.voter_record.version == 2 and back == []  # 2 beats 1: taken
    told = m.receive(Voters("testring", "p1", 1, ("p0", "p1", "p2"), ("p0", "p1")), now)
    assert told == [("p1", Voters("testring", "p0", 2, ("p0", "p1")))]


def test_restarted_member_learns_the_record_from_anti_entropy():
    net = two_and_a_joiner(7)
    assert net.change_voters("p0", ADD, "p2") is VoterOutcome.CHANGING
    net.run_until(net.t + 20.0, one_ring_among_holders)
    # p1's disk was wiped (a new data_dir): it starts from cluster.toml's version 0.
    old = net.peers["p1"]
    old.crashed = True
    net._start("p1", 0.0, incarnation=old.m.me.incarnation + 1000, resumed=True)
    assert net.peers["p1"].m.voter_record.version == 0
    net.run_until(net.t + 20.0, one_ring_among_holders)
    assert net.peers["p1"].m.voter_record == VoterRecord(2, ("p0", "p1", "p2"))
    assert all(net.held(p) for p in ("p0", "p1", "p2"))


# -- safety under chaos ------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_no_two_peers_ever_hold_leases_on_different_rings_while_the_voters_change(seed):
    # tests/ring/test_lease.py's chaos, with operators changing the voters
    # through random peers, at times two at once (concurrent changes).
    rng = random.Random(1000 + seed)
    net = LeaseNet(3 + seed % 2, seed, loss=0.05, latency=(0.001, 0.3), drift=0.04)
    net.join(f"p{len(net.peers)}")
    net.run_until(10.0, one_ring_among_holders)
    changed = 0
    for _ in range(10):
        if rng.random() < 0.6:
            net.heal()  # most changes are asked of a ring that holds its leases
            net.run_until(net.t + 12.0, one_ring_among_holders)
        running = [p for p, peer in net.peers.items() if not peer.crashed]
        for viewer in rng.sample(running, min(len(running), rng.choice((1, 1, 2)))):
            # The tool asks the steward as one peer's view names it (two views: at times two).
            asker = min(net.peers[viewer].m.live())
            if net.peers[asker].crashed:
                continue
            m = net.peers[asker].m
            voters = m.voter_record.voters
            if rng.random() < 0.5 and len(voters) > 1:
                outcome = net.change_voters(asker, RETIRE, rng.choice(voters))
            else:
                outcome = net.change_voters(asker, ADD, rng.choice(running))
            changed += outcome is VoterOutcome.CHANGING
        chaos(net, rng, net.t + 25.0)
    net.heal()
    net.run_until(net.t + 40.0, one_ring_among_holders)
    assert changed >= 2
    records = {p.m.voter_record for p in net.running()}
    assert len(records) == 1 and next(iter(records)).settled, records
    assert all(p.m.me.state is MemberState.ALIVE for p in net.running())
