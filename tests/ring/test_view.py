"""ring.membership.view through Membership: the bound on members, tombstones and their expiry, the live ring's version."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ring.hashring import HashRing
from ring.messages import MAX_MEMBERS, Digest, Join, Member, decode, encode
from ring.membership.records import LIVE, MAX_WEIGHT, ChangeReason

from membershipnet import (
    ALIVE,
    DEAD,
    DEAD_AFTER,
    INTERVAL,
    RING,
    FakeNet,
    make,
    rec,
    seed_list,
    static_cluster,
    tick_until,
)


def test_the_1025th_member_is_refused_and_counted_and_the_view_still_encodes():
    m = make("p0", seed_list(2))
    m.receive(Digest(RING, "p1", (Member("p1", "tcp://127.0.0.1:7001", 5, ALIVE, 1.0, 1),)), 0.0)
    many = [Member(f"n{i}", f"tcp://10.0.{i // 250}.{i % 250}:1", 5, ALIVE, 1.0, 1) for i in range(1100)]
    for chunk in (many[:600], many[600:]):  # each digest within the codec's limit
        m.receive(decode(encode(Digest(RING, "p1", tuple(chunk)))), 1.0)
    assert len(m.members()) == MAX_MEMBERS
    assert m.dropped == {"too_many_members": 2 + 1100 - MAX_MEMBERS}
    assert m.receive(Join(RING, "n5000", "tcp://x:1", 1.0, 3), 1.0) == []  # no answer either
    assert m.dropped["too_many_members"] == 2 + 1100 - MAX_MEMBERS + 1
    # Known members are still merged, and what we gossip still encodes.
    m.receive(Digest(RING, "p1", (Member("n3", "tcp://10.0.0.3:1", 6, ALIVE, 1.0, 1),)), 2.0)
    assert m.members()["n3"].incarnation == 6
    assert len(decode(encode(m.digest())).members) == MAX_MEMBERS
    for _, out in m.tick(2.5):
        encode(out)
    with pytest.raises(ValueError, match="max_members"):
        make("p0", seed_list(2), max_members=MAX_MEMBERS + 1)


def test_a_dead_members_tombstone_expires_after_the_ttl_and_a_seeds_never():
    ttl = 2 * DEAD_AFTER
    m = make("p0", seed_list(3), tombstone_ttl=ttl)
    m.receive(Digest(RING, "p2", (Member("p1", "tcp://a:1", 50, DEAD, 1.0, 1),
                                  Member("j1", "tcp://j:1", 70, DEAD, 1.0, 1)), verdicts=True),
              DEAD_AFTER)
    assert {m.members()[p].state for p in ("p1", "j1")} == {DEAD}
    m.tick(DEAD_AFTER + ttl - 0.1)
    assert "j1" in m.members()  # still a tombstone, still gossiped
    assert "j1" in {r.id for r in m.digest().members}
    m.tick(DEAD_AFTER + ttl)
    assert "j1" not in m.members() and "j1" not in {r.id for r in m.digest().members}
    assert m.members()["p1"].state is DEAD  # a seed: every fresh peer would revive it
    m.tick(DEAD_AFTER + 100 * ttl)
    assert m.members()["p1"].state is DEAD
    # A fresh peer's placeholder of the seed (incarnation 0) cannot revive it.
    m.receive(Digest(RING, "p1", (Member("p1", "tcp://a:1", 0, ALIVE, 1.0, 0),)), 1000.0)
    assert m.members()["p1"].state is DEAD
    expired = [e for e in m.drain_events() if e.reason is ChangeReason.EXPIRED]
    assert [(e.id, e.state) for e in expired] == [("j1", DEAD)]
    with pytest.raises(ValueError, match="tombstone_ttl"):
        make("p0", seed_list(2), tombstone_ttl=2 * DEAD_AFTER - 0.1)


def test_a_refuted_death_stops_the_tombstone_clock():
    ttl = 2 * DEAD_AFTER
    m = make("p0", seed_list(2), tombstone_ttl=ttl)
    m.receive(Digest(RING, "p1", (Member("j1", "tcp://j:1", 70, DEAD, 1.0, 1),)), 0.0)
    assert m.members()["j1"].state is DEAD
    m.receive(Digest(RING, "j1", (Member("j1", "tcp://j:1", 71, ALIVE, 1.0, 2),)), 1.0)
    tick_until(m, 1.0, lambda t: t >= 200)  # it answers every probe, past any ttl
    assert m.members()["j1"].state is ALIVE


def test_a_peer_paused_past_the_ttl_brings_a_zombie_that_dies_again():
    # The documented limit: a record older than every tombstone window comes
    # back as new, and the probes end it again.
    ttl = 2 * DEAD_AFTER
    m = make("p0", seed_list(2), tombstone_ttl=ttl)
    stale = Member("j1", "tcp://j:1", 70, ALIVE, 1.0, 3)
    m.receive(Digest(RING, "p1", (stale,)), 0.0)
    t = tick_until(m, 0.0, lambda t: m.members()["j1"].state is DEAD, silent={"j1"})
    assert t <= DEAD_AFTER + INTERVAL
    t = tick_until(m, t, lambda t: "j1" not in m.members(), silent={"j1"})
    m.receive(Digest(RING, "p1", (stale,)), t)
    assert m.members()["j1"].state is ALIVE
    again = tick_until(m, t, lambda t: m.members()["j1"].state is DEAD, silent={"j1"})
    assert again - t <= DEAD_AFTER + INTERVAL


@pytest.mark.parametrize("seed", range(3))
def test_tombstones_expire_everywhere_and_no_stale_gossip_revives_the_dead(seed):
    # 8 seeds and a joiner at 10% loss; the joiner and a seed crash. Every
    # peer forgets the joiner after the ttl, keeps the seed, and from its
    # first verdict on no peer ever holds either alive again, even when a
    # seed restarts afterwards with fresh placeholders.
    ttl = 2 * DEAD_AFTER
    net = FakeNet(seed, loss=0.1)
    seeds = seed_list(8)
    for i in range(8):
        net.add(make(f"p{i}", seeds, rng=random.Random(seed * 100 + i), tombstone_ttl=ttl))
    net.add(make("p42", seeds[:1], now=0.0, tombstone_ttl=ttl, rng=random.Random(seed)))
    net.run_until_converged(limit=30)
    net.run(4)
    net.down |= {"p42", "p7"}
    declared: set[str] = set()
    rounds = int((DEAD_AFTER + ttl) / INTERVAL) + 20
    for r in range(2 * rounds):
        if r == rounds:  # a seed restarts with a new life: placeholders at incarnation 0
            net.add(make("p1", seeds, now=net.now, incarnation=10**6,
                         rng=random.Random(seed), tombstone_ttl=ttl))
        net.step()
        for p in net.running():
            view = net.peers[p].members()
            for victim in ("p42", "p7"):
                rec = view.get(victim)
                if rec is not None and rec.state is DEAD:
                    declared.add(victim)
                elif victim in declared and p != "p1":
                    assert rec is None or rec.state not in LIVE, (r, p, victim, rec)
    for p in net.running():
        assert "p42" not in net.peers[p].members(), p
        assert net.peers[p].members()["p7"].state is DEAD, p


# --------------------------------------------------------------------------
# the ring follows the live set


@settings(max_examples=60, deadline=None)
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["step", "crash", "revive", "leave", "split", "heal"]),
            st.integers(0, 5),
        ),
        max_size=40,
    ),
    seed=st.integers(0, 2**16),
)
def test_ring_version_moves_exactly_when_the_live_set_changes(ops, seed):
    net = static_cluster(6, seed, loss=0.2)
    last = {p: (m.ring_version, m.live(), m.ring(8)) for p, m in net.peers.items()}
    for op, k in ops:
        pid = f"p{k}"
        if op == "step":
            net.step()
        elif op == "crash":
            net.down.add(pid)
        elif op == "revive":
            net.down.discard(pid)
        elif op == "leave" and net.peers[pid].me.state is ALIVE:
            net.send(pid, net.peers[pid].leave(net.now), net.round + 1)
        elif op == "split":
            net.partition({f"p{i}" for i in range(k)}, {f"p{i}" for i in range(k, 6)})
        elif op == "heal":
            net.heal()
        for p, m in net.peers.items():
            version, live, ring = last[p]
            assert (m.ring_version != version) == (m.live() != live)
            if m.ring_version == version:
                assert m.ring(8) is ring
            else:
                assert m.ring(8) == HashRing(m.live(), 8) != ring
            assert set(m.live()) == {q for q, r in m.members().items() if r.state in LIVE}
            last[p] = (m.ring_version, m.live(), m.ring(8))


def test_a_gossiped_weight_past_max_weight_is_refused():
    # Its ring points grow with the weight: 1e9 would be 256e9 of them.
    m = make("p0", seed_list(2))
    m.receive(Digest(RING, "p1", (Member("j1", "tcp://j:1", 5, ALIVE, 1e9, 1),)), 1.0)
    assert m.receive(Join(RING, "j2", "tcp://j:2", 10.5, 5), 1.0) == []
    m.receive(Digest(RING, "p1", (Member("j3", "tcp://j:3", 5, ALIVE, MAX_WEIGHT, 1),)), 1.0)
    assert m.dropped == {"bad_member": 2}
    assert set(m.live()) == {"p0", "p1", "j3"}
    with pytest.raises(ValueError, match="weight"):
        make("p0", seed_list(2), weight=MAX_WEIGHT * 2)
