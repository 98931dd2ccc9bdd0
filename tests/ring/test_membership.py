"""ring.membership.protocol: SWIM probes, piggybacked changes and anti-entropy over fake networks.

The whole protocol here; each part's own rules in the files that mirror its
module (test_records, test_swim, test_dissemination, test_antientropy,
test_termination, test_view). Two fake networks. ``FakeNet``
(tests/support/membershipnet.py, h11's ConnectionPair idea, for N peers) runs
synchronous rounds: every running peer ticks at ``now = round * INTERVAL``,
then messages due this round are delivered, replies included, until none is
left. A message is lost with probability ``loss``, arrives ``delay`` rounds
late, and never crosses a partition. ``SimNet`` (``ring.membership.sim``) is continuous time
with a latency (200 ms here), random tick phases and the real codec; its
large-N figures are ``scripts/bench_membership.py``'s, the small-N checks
are here. ``python tests/ring/test_membership.py`` prints the FakeNet table of
docs/membership.md.
"""

from __future__ import annotations

import math
import random
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ring.hashring import HashRing
from ring.membership.protocol import Membership
from ring.messages import Ack, Digest, Join, Leave, Member
from ring.membership.sim import SimNet

from membershipnet import (
    ALIVE,
    DEAD,
    DEAD_AFTER,
    INTERVAL,
    LEFT,
    RING,
    SUSPECT,
    SUSPECT_AFTER,
    joining_cluster,
    make,
    rec,
    seed_list,
    static_cluster,
)


SIZES = (2, 4, 8, 16, 32, 64)
SEEDS = range(5)


def rounds_bound(n):
    """The asserted bound on rounds to converge at 10% loss (docs/membership.md).

    Anti-entropy with one peer every ceil(D / 16) rounds is an epidemic of
    push-pull exchanges; over 10 network seeds the worst was 2 log2(N) + 4
    at 64 peers (17 rounds: pull-only summaries), and less below.
    """
    return 2 * math.ceil(math.log2(n)) + 6


def convergence_rounds(build, n, seed, loss=0.1):
    net = build(n, seed, loss)
    return net.run_until_converged(limit=rounds_bound(n) + 20)


def test_the_names_ring_membership_offered_are_the_parts_own():
    # Callers import these from ring.membership.protocol since before the split into parts.
    import ring.membership.antientropy
    import ring.membership.dissemination
    import ring.membership.protocol
    import ring.membership.records
    import ring.membership.swim
    import ring.membership.termination
    import ring.membership.view

    parts = (ring.membership.records, ring.membership.swim, ring.membership.dissemination, ring.membership.antientropy, ring.membership.termination,
             ring.membership.view)
    for name in ring.membership.protocol.__all__:
        value = getattr(ring.membership.protocol, name)
        homes = [p for p in parts if getattr(p, name, None) is value]
        assert homes or name == "Membership", name
    assert set(ring.membership.protocol.__all__) >= {
        "IllegalTransition", "Membership", "MemberEvent", "ChangeReason", "TerminationDetector",
        "merge_members", "retransmit_limit", "LIVE", "MAX_WEIGHT", "PIGGYBACK"}


# --------------------------------------------------------------------------
# 1. convergence with N peers and 10% loss


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("build", [static_cluster, joining_cluster], ids=["seeds", "join"])
def test_views_converge_within_bound_at_10pct_loss(build, n):
    rounds = [convergence_rounds(build, n, s) for s in SEEDS]
    assert max(rounds) <= rounds_bound(n), rounds


def test_convergence_survives_delay_and_the_wire_codec():
    # a round of delay is 0.5 s one way: suspicions happen, deaths must not
    net = joining_cluster(8, seed=3, loss=0.1, delay=1, wire=True)
    net.run_until_converged(limit=40)
    versions = {p: m.ring_version for p, m in net.peers.items()}
    sent = net.sent
    net.run(40)
    assert {p: m.ring_version for p, m in net.peers.items()} == versions
    assert all(len(m.live()) == 8 for m in net.peers.values())
    # 0.5 s one way is a round trip of two rounds: every probe is repeated
    # and asked about twice (36 messages a peer a round, measured; 22 with
    # one ask); still bounded
    assert (net.sent - sent) / (40 * 8) <= 40


def test_steady_state_costs_a_few_messages_a_peer_a_round():
    net = static_cluster(8, seed=3, loss=0.1)
    net.run_until_converged(limit=20)
    sent = net.sent
    net.run(40)
    # two probes and their answers, the repeats of the 19% unanswered, a
    # sync and its answer (8 members: every round): 9.6 measured
    assert (net.sent - sent) / (40 * 8) <= 12


def test_converged_views_agree_on_one_ring():
    net = static_cluster(16, seed=1, loss=0.1)
    net.run_until_converged(limit=20)
    rings = {net.peers[p].ring(64) for p in net.running()}
    assert rings == {HashRing({f"p{i}": 1.0 for i in range(16)}, 64)}


# --------------------------------------------------------------------------
# 2. a silent peer is dead everywhere within dead_after + 2 intervals


@pytest.mark.parametrize(("n", "seed"), [(4, 0), (16, 1), (64, 2), (64, 3)])
def test_silent_peer_dead_everywhere_within_dead_after_plus_two_intervals(n, seed):
    net = static_cluster(n, seed, loss=0.1)
    net.run_until_converged(limit=rounds_bound(n) + 10)
    net.run(10)
    victim = f"p{n - 1}"
    last_heard = net.now  # it ticked and answered in this round, then crashed
    net.down.add(victim)
    dead_at: dict[str, float] = {}
    while len(dead_at) < n - 1:
        net.step()
        for p, state in net.states_of(victim).items():
            if state is DEAD and p not in dead_at:
                dead_at[p] = net.now
        assert net.now <= last_heard + DEAD_AFTER + 2 * INTERVAL, dead_at
    for p in net.running():
        assert victim not in net.peers[p].live()
        assert victim not in net.peers[p].ring(16)
    # and nobody else died on the way: no false deaths
    for p in net.running():
        assert set(net.peers[p].live()) == set(net.running())


# --------------------------------------------------------------------------
# 3. partitions heal


@pytest.mark.parametrize(("n", "seed"), [(8, 0), (16, 1)])
def test_long_partition_heals_through_refutation(n, seed):
    net = static_cluster(n, seed, loss=0.1)
    net.run_until_converged(limit=30)
    left = {f"p{i}" for i in range(n // 2)}
    right = set(net.peers) - left
    before = {p: net.peers[p].me.incarnation for p in net.peers}
    net.partition(left, right)
    # A member is probed by its successor's prober every round only if that
    # prober can reach it; across a partition, the round-robin finds it
    # within N - 1 rounds, then dead_after (or the backup's log N more).
    limit = n + int((DEAD_AFTER + INTERVAL * math.log2(n)) / INTERVAL) + 4
    for _ in range(limit):
        net.step()
        if all(net.peers[p].members()[q].state is DEAD
               for side, other in ((left, right), (right, left)) for p in side for q in other):
            break
    # each side sees the other dead and owns the whole ring by itself
    for side, other in ((left, right), (right, left)):
        for p in side:
            view = net.peers[p].members()
            assert {view[q].state for q in other} == {DEAD}
            assert set(net.peers[p].live()) == side
    net.heal()
    net.run_until_converged(limit=10)
    # the way back was SWIM's: every peer refuted its death with a higher incarnation
    assert all(net.peers[p].me.incarnation > before[p] for p in net.peers)
    assert {frozenset(net.peers[p].live()) for p in net.peers} == {frozenset(net.peers)}


def test_short_partition_moves_no_host_and_heals_by_refutation():
    net = static_cluster(8, seed=5, loss=0.0)
    net.run_until_converged(limit=20)
    before = {p: net.peers[p].me.incarnation for p in net.peers}
    versions = {p: net.peers[p].ring_version for p in net.peers}
    net.partition({"p0", "p1", "p2", "p3"}, {"p4", "p5", "p6", "p7"})
    net.run(int(SUSPECT_AFTER / INTERVAL) + 3)  # past suspect_after, short of dead_after
    assert SUSPECT in set(net.states_of("p0").values())
    net.heal()
    net.run_until_converged(limit=20)
    # SWIM: only its subject clears a suspicion, with a new incarnation
    assert any(net.peers[p].me.incarnation > before[p] for p in net.peers)
    # suspects keep their hosts: the ring never moved
    assert {p: net.peers[p].ring_version for p in net.peers} == versions


def test_isolated_peer_that_was_declared_dead_rejoins():
    net = static_cluster(6, seed=2, loss=0.1)
    net.run_until_converged(limit=20)
    net.partition({"p5"}, {f"p{i}" for i in range(5)})
    net.run(int(DEAD_AFTER / INTERVAL) + 4)
    assert set(net.states_of("p5").values()) == {DEAD}
    inc = net.peers["p5"].me.incarnation
    net.heal()
    net.run_until_converged(limit=20)
    assert net.peers["p5"].me.incarnation > inc


def test_restarted_peer_with_higher_incarnation_comes_back_alive():
    net = static_cluster(5, seed=4, loss=0.1)
    net.run_until_converged(limit=20)
    net.down.add("p4")
    net.run(int(DEAD_AFTER / INTERVAL) + 3)
    assert set(net.states_of("p4").values()) == {DEAD}
    # restart: a new process, a new (later) start epoch as incarnation
    net.peers["p4"] = make("p4", seed_list(5), now=net.now, incarnation=5000)
    net.down.discard("p4")
    net.run_until_converged(limit=10)
    assert {m.members()["p4"].incarnation for m in net.peers.values()} == {5000}


# --------------------------------------------------------------------------
# 4. graceful leave


def test_graceful_leave_is_seen_quickly_and_never_becomes_dead():
    net = static_cluster(16, seed=6, loss=0.1)
    net.run_until_converged(limit=20)
    leaver = net.peers["p3"]
    out = leaver.leave(net.now)
    assert {dst for dst, _ in out} == set(net.peers) - {"p3"}
    assert all(msg == Leave(RING, "p3", leaver.me.incarnation) for _, msg in out)
    net.send("p3", out, net.round + 1)
    net.step()
    net.step()  # direct Leave plus one round of gossip for the ones it missed
    assert set(net.states_of("p3").values()) == {LEFT}
    # it hands off for a while, then exits; long after, still left, not dead
    net.run(4)
    net.down.add("p3")
    net.run(int(3 * DEAD_AFTER / INTERVAL))
    assert set(net.states_of("p3").values()) == {LEFT}
    for p in net.running():
        assert "p3" not in net.peers[p].live()


# --------------------------------------------------------------------------
# 5. other rings, stale messages, joiners


def test_other_ring_messages_are_dropped_and_counted():
    m = make("p0", seed_list(2))
    before = dict(m.members())
    foreign = Member("p9", "tcp://x:1", 99, ALIVE, 1.0, 5)
    msgs = [
        Digest("other", "p9", (foreign,), want_reply=True),
        Join("other", "p9", "tcp://x:1", 1.0, 99),
        Leave("other", "p1", 0),
    ]
    for msg in msgs:
        assert m.receive(msg, 1.0) == []
    assert m.dropped == {"other_ring": 3}
    assert dict(m.members()) == before


def test_stale_replayed_and_misdirected_messages_are_counted():
    m = make("p0", seed_list(2))
    m.receive(Digest(RING, "p1", (Member("p1", "tcp://a:1", 50, ALIVE, 1.0, 4),)), 1.0)
    assert m.receive(Leave(RING, "p1", 49), 1.0) == []  # a replayed old life's leave
    assert m.receive(Join(RING, "p1", "tcp://a:1", 1.0, 49), 1.0)[0][0] == "p1"
    assert m.receive(Leave(RING, "p9", 1), 1.0) == []
    assert m.receive(Join(RING, "p0", "tcp://evil:1", 1.0, 1), 1.0) == []
    assert m.receive(Join(RING, "p8", "tcp://z:1", 0.0, 1), 1.0) == []
    assert m.receive(Ack(RING, "p1", 1, 1), 1.0) == []
    assert m.dropped == {
        "stale": 2,
        "unknown_sender": 1,
        "self_sender": 1,
        "bad_member": 1,
        "unexpected_type": 1,
    }
    assert m.members()["p1"].state is ALIVE and m.members()["p1"].incarnation == 50
    assert set(m.members()) == {"p0", "p1"}


def test_peer_of_another_ring_cannot_join():
    net = static_cluster(4, seed=8)
    net.run_until_converged(limit=10)
    net.add(make("p9", [("p0", "tcp://127.0.0.1:7000")], now=net.now, ring="intruders"))
    net.run(10)
    for p in ("p0", "p1", "p2", "p3"):
        assert "p9" not in net.peers[p].members()
    assert net.peers["p0"].dropped["other_ring"] >= 5  # a Join every other round
    assert not net.peers["p9"].joined


@settings(max_examples=30, deadline=None)
@given(
    faults=st.lists(
        st.tuples(st.sampled_from(["pause", "split", "restart"]), st.integers(0, 5),
                  st.integers(1, 30)),
        max_size=6,
    ),
    seed=st.integers(0, 2**16),
)
def test_after_any_faults_the_healed_cluster_converges(faults, seed):
    net = static_cluster(6, seed, loss=0.1)
    for kind, k, rounds in faults:
        pid = f"p{k}"
        if kind == "pause":  # a long GC pause or a stopped VM: silent, then back
            net.down.add(pid)
        elif kind == "split":
            net.partition({f"p{i}" for i in range(k)}, {f"p{i}" for i in range(k, 6)})
        else:  # kill -9 and restart with a later start epoch
            net.peers[pid] = make(pid, seed_list(6), now=net.now,
                                  incarnation=net.peers[pid].me.incarnation + 100)
        net.run(rounds)
        net.down.clear()
        net.heal()
    net.run_until_converged(limit=12)


def test_a_digest_from_a_peer_we_hold_dead_is_answered_unasked():
    m = make("p0", seed_list(3))
    m.receive(Digest(RING, "p2", (rec("p1", state=DEAD),), verdicts=True), 1.0)
    assert m.members()["p1"].state is DEAD
    out = m.receive(Digest(RING, "p1", (rec("p1", hb=5),)), 8.0)
    assert [(d, type(msg), msg.want_reply) for d, msg in out] == [("p1", Digest, False)]
    assert m.members()["p1"] in out[0][1].members  # the verdict, for it to refute
    assert m.members()["p1"].state is DEAD  # sticky until p1 refutes


def test_constructor_rejects_bad_timing_and_duplicate_seeds():
    with pytest.raises(ValueError):
        Membership("p0", "a", 1.0, RING, seeds=[], gossip_interval=1.0, suspect_after=3.0,
                   dead_after=2.0, now=0.0)
    with pytest.raises(ValueError):
        Membership("p0", "a", 1.0, RING, seeds=[("p1", "a"), ("p1", "b")],
                   gossip_interval=0.5, suspect_after=2.0, dead_after=6.0, now=0.0)


# --------------------------------------------------------------------------


def dead_latency(n, seed, loss=0.1):
    """Rounds after dead_after until the last peer marks a crashed peer dead."""
    net = static_cluster(n, seed, loss)
    net.run_until_converged(limit=30)
    net.run(10)
    t0 = net.now
    victim = f"p{n - 1}"
    net.down.add(victim)
    while set(net.states_of(victim).values()) != {DEAD}:
        net.step()
    return (net.now - t0 - DEAD_AFTER) / INTERVAL


def heal_rounds(n, seed, loss=0.1):
    """Rounds to reconverge after a partition in halves long enough for deaths."""
    net = static_cluster(n, seed, loss)
    net.run_until_converged(limit=30)
    net.partition({f"p{i}" for i in range(n // 2)}, {f"p{i}" for i in range(n // 2, n)})
    net.run(int((DEAD_AFTER + 2 * INTERVAL) / INTERVAL) + 1)
    net.heal()
    return net.run_until_converged(limit=60)


def print_tables(seeds=range(20)):
    """The tables of docs/membership.md (10% loss; median / max over ``seeds``)."""

    def cell(values):
        return f"{statistics.median(values):g} / {max(values):g}"

    print("| N | all seeds | 1 seed, N-1 joiners | bound | dead: rounds past dead_after | heal |")
    print("|---|---|---|---|---|---|")
    for n in SIZES:
        print(
            f"| {n} | {cell([convergence_rounds(static_cluster, n, s) for s in seeds])} "
            f"| {cell([convergence_rounds(joining_cluster, n, s) for s in seeds])} "
            f"| {rounds_bound(n)} "
            f"| {cell([dead_latency(n, s) for s in seeds])} "
            f"| {cell([heal_rounds(n, s) for s in seeds]) if n > 2 else '-'} |"
        )


if __name__ == "__main__":
    import sys

    print_tables(range(int(sys.argv[1]) if len(sys.argv) > 1 else 20))


def test_the_voters_are_the_configured_peers_and_a_leave_keeps_them():
    m = make("p0", seed_list(3))
    assert m.voters() == {"p0", "p1", "p2"}
    m.receive(Leave(RING, "p2", 0), 0.0)
    assert m.voters() == {"p0", "p1", "p2"}  # the base split of max_pages never moves
    assert make("p9", seed_list(3)).voters() == {"p0", "p1", "p2"}  # a joiner is no voter


def test_a_restarted_member_that_forgot_its_grants_keeps_them_here_and_is_told():
    m = make("p0", seed_list(2))
    gave = Member("p1", "a", 4, ALIVE, 1.0, 3, True, 0, 0, 0, (("p0", 6),))
    m.receive(Digest(RING, "p1", (gave,)), 0.0)
    # A new process of p1 whose disk lost the grant: its record says nothing of it.
    out = m.receive(Digest(RING, "p1", (Member("p1", "a", 9, ALIVE, 1.0, 1),)), 0.1)
    assert m.members()["p1"].incarnation == 9
    assert m.members()["p1"].grants == (("p0", 6),)  # what it gave stays given
    told = [msg for dest, msg in out if dest == "p1" and isinstance(msg, Digest)]
    assert told and told[0].members[0].grants == (("p0", 6),)


def test_grants_of_an_earlier_life_come_back_from_gossip_and_only_grow():
    m = make("p0", seed_list(2), incarnation=5)
    m.set_local(grants=(("p1", 3),))
    m.set_local(grants=(("p1", 2),))  # totals only grow: a smaller one changes nothing
    assert m.me.grants == (("p1", 3),)
    # p1 still holds our record of an earlier life, which gave it 7 and p2 1.
    old = Member("p0", m.me.address, 4, DEAD, 1.0, 30, False, 0, 0, 0, (("p1", 7), ("p2", 1)))
    m.receive(Digest(RING, "p1", (Member("p1", "a", 1, ALIVE, 1.0, 1), old)), 0.0)
    assert m.me.grants == (("p1", 7), ("p2", 1))
    assert m.me.incarnation == 5  # an older life: no refutation needed


# --------------------------------------------------------------------------
# the simulated network: 200 ms one way, random phases, the real codec


def sim_cluster(n, seed, loss, spread=0.0, latency=0.2):
    net = SimNet(seed=seed, loss=loss, latency=latency, interval=INTERVAL, wire=True)
    seeds = seed_list(n)
    rng = random.Random(seed)

    def factory(pid):
        return lambda now: make(pid, seeds, now=now, incarnation=1000 + int(now * 1000),
                                rng=random.Random(f"{seed}/{pid}/{now}"))

    for pid, _ in seeds:
        net.add(pid, factory(pid), rng.random() * spread)
    return net


@pytest.mark.parametrize(("n", "seed"), [(8, 0), (16, 1), (32, 2)])
def test_sim_converges_at_10pct_loss_and_no_running_peer_is_ever_declared_dead(n, seed):
    net = sim_cluster(n, seed, loss=0.1)
    net.run_until(INTERVAL)
    assert 0 <= net.run_until_converged(limit=30.0)
    net.run_for(30.0)
    assert net.false(DEAD) == []
    rings = {net.peers[p].ring(16) for p in net.running()}
    assert rings == {HashRing({p: 1.0 for p in net.peers}, 16)}
    # what a round costs does not depend on loss of the odd message: a few KB/s
    assert max(net.sent.values()) / net.now < 8_000


def test_sim_splits_the_bytes_by_what_was_answered():
    net = sim_cluster(32, 7, loss=0.1)
    net.run_until(INTERVAL)
    assert 0 <= net.run_until_converged(limit=30.0)
    why = net.why
    assert sum(why.values()) == sum(net.sent.values()) == sum(net.bytes.values())
    # anti-entropy's pull, the probes and their answers, the greetings' answers
    assert {("Sync", "tick"), ("Digest", "Sync"), ("Ping", "tick"), ("PingAck", "Ping")} <= set(why)
    assert sum(b for (kind, _), b in why.items() if kind == "Digest") == net.bytes["Digest"]


@pytest.mark.parametrize(("n", "seed"), [(16, 3), (32, 4)])
def test_sim_rolling_start_longer_than_dead_after_declares_nobody_dead(n, seed):
    net = sim_cluster(n, seed, loss=0.1, spread=3 * DEAD_AFTER)
    net.run_until(3 * DEAD_AFTER + 20.0)
    assert [e for e in net.events if e.event.state is DEAD] == []
    assert net.converged()


@pytest.mark.parametrize(("n", "seed"), [(8, 5), (24, 6)])
def test_sim_crash_is_dead_everywhere_within_dead_after_plus_two_rounds(n, seed):
    net = sim_cluster(n, seed, loss=0.1)
    net.run_until(INTERVAL)
    net.run_until_converged(limit=30.0)
    net.run_for(10.0)
    victim = f"p{n // 2}"
    crashed = net.now
    net.crash(victim)
    while not all(net.peers[p].members()[victim].state is DEAD for p in net.running()):
        net.run_for(0.05)
        assert net.now - crashed <= DEAD_AFTER + 2 * INTERVAL
    assert net.false(DEAD) == []

