"""Membership.remember_left: a seed that left gracefully stays left across the restart of the others.

Every peer starts with each seed alive at incarnation 0 (ring.membership.view),
and a "left" is believed only from the leaver: so peers restarted after a seed
left waited for it, found it silent, and declared it dead (logged as a crash
``takeover_after`` later). A restarted peer is given back the tombstones its
former process kept (``Membership.tombstones``, persisted as counters by
peer.core.door.persistence).
"""

from __future__ import annotations

import random

from membershipnet import DEAD_AFTER, INTERVAL, FakeNet, make, seed_list

from ring.membership.records import ChangeReason
from ring.messages import MemberState
from peer.core.door.persistence import left_from_counters, left_to_counters


def _left_then_restart_the_others(remember: bool):
    net = FakeNet(seed=3)
    seeds = seed_list(3)
    for i in range(3):
        net.add(make(f"p{i}", seeds, rng=random.Random(i)))
    net.run_until_converged(limit=20)
    leaver = net.peers["p2"]
    net.send("p2", leaver.leave(net.now), net.round + 1)
    net.run(4)
    net.down.add("p2")
    net.run(4)
    kept = {p: left_from_counters(left_to_counters(net.peers[p].tombstones())) for p in ("p0", "p1")}
    # Both stay stopped a while and start again (a rolling restart, a reboot), p2 still gone.
    for i, p in enumerate(("p0", "p1")):
        again = make(p, seeds, now=net.now, incarnation=5000 + i, rng=random.Random(10 + i))
        if remember:
            again.remember_left(kept[p], net.now)
        net.peers[p] = again
    # Past seed_grace (60 s: an unheard seed is not probed before) and dead_after.
    net.run(int((60 + 3 * DEAD_AFTER) / INTERVAL))
    return net, kept


def test_a_restarted_peer_keeps_a_leaver_left_and_never_calls_it_dead():
    net, kept = _left_then_restart_the_others(remember=True)
    assert kept == {"p0": {"p2": 1002}, "p1": {"p2": 1002}}
    for p in ("p0", "p1"):
        m = net.peers[p]
        events = [e for e in m.drain_events() if e.id == "p2"]
        assert [(e.state, e.reason) for e in events] == [(MemberState.LEFT, ChangeReason.LEFT)], events
        assert "p2" not in m.live() and m.members()["p2"].state is MemberState.LEFT
        assert "p2" not in m.quorum()  # a leaver votes no more (lease rule 4)


def test_without_it_the_leaver_is_declared_dead_by_silence():
    # What the peers did before: p2 alive in their ring for a minute (its hosts
    # not fetched), then "dead (silence)" and, later, "taken to have crashed".
    net, _ = _left_then_restart_the_others(remember=False)
    for p in ("p0", "p1"):
        events = {(e.state, e.reason) for e in net.peers[p].drain_events() if e.id == "p2"}
        assert (MemberState.DEAD, ChangeReason.SILENCE) in events


def test_a_leaver_that_comes_back_outranks_its_tombstone():
    m = make("p0", seed_list(3), now=0.0)
    m.remember_left({"p2": 1002, "p9": 7, "p0": 3}, 0.0)  # p9 is no seed; p0 is us: ignored
    assert m.members()["p2"].state is MemberState.LEFT and "p9" not in m.members()
    assert m.tombstones() == {"p1": 0, "p2": 1002}
    back = make("p2", seed_list(3), now=1.0, incarnation=9000)
    m.receive(back.digest(), 1.0)
    assert m.members()["p2"].state is MemberState.ALIVE and "p2" in m.live()
    assert m.tombstones()["p2"] == 0  # persisted as 0: the next restart holds no stale tombstone
