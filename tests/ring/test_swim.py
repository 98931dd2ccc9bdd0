"""ring.membership.swim through Membership: probes, repeated pings and ping-reqs, relays, suspicion and death timers."""

from __future__ import annotations

import math

import pytest

from ring.membership.protocol import ChangeReason
from ring.messages import Digest, Member, Ping, PingAck, PingReq, Sync

from membershipnet import (
    ALIVE,
    DEAD,
    DEAD_AFTER,
    INTERVAL,
    RING,
    SUSPECT,
    SUSPECT_AFTER,
    answer,
    make,
    rec,
    seed_list,
    tick_until,
)


def test_an_unanswered_probe_suspects_then_kills_and_answers_keep_a_member_alive():
    m = make("p0", seed_list(2))
    m.receive(Digest(RING, "p1", (rec("p1"),)), 0.0)
    # p1 answers every probe: alive however long
    t = tick_until(m, 0.0, lambda t: t >= 20.0)
    assert m.members()["p1"].state is ALIVE
    # silent from now on: the first unanswered ping starts the clocks
    pinged, states = None, {}
    for _ in range(20):
        t += INTERVAL
        out = m.tick(t)
        if pinged is None and any(type(msg) is Ping and d == "p1" for d, msg in out):
            pinged = t
        states[t - pinged] = m.members()["p1"].state
    assert states[SUSPECT_AFTER - INTERVAL] is ALIVE and states[SUSPECT_AFTER] is SUSPECT
    assert states[DEAD_AFTER - INTERVAL] is SUSPECT and states[DEAD_AFTER] is DEAD
    said = [(e.state, e.reason) for e in m.drain_events() if e.id == "p1"]
    assert said[-2:] == [(SUSPECT, ChangeReason.SILENCE), (DEAD, ChangeReason.SILENCE)]


def test_an_unanswered_ping_is_repeated_and_asked_about_and_an_indirect_answer_counts():
    for relayed in (False, True):
        m = make("p0", seed_list(4))
        for p in ("p1", "p2", "p3"):
            m.receive(Digest(RING, p, (rec(p),)), 0.0)
        out = m.tick(0.5)
        ping = next(msg for d, msg in out if d == "p1" and type(msg) is Ping)  # our successor
        answer(m, out, 0.5, silent={"p1"})
        out = m.tick(1.0)
        again = [msg for d, msg in out if d == "p1" and type(msg) is Ping and msg.seq == ping.seq]
        asked = [(d, msg) for d, msg in out if type(msg) is PingReq]
        assert len(again) == 1
        assert {d for d, _ in asked} == {"p2", "p3"} and {msg.target for _, msg in asked} == {"p1"}
        answer(m, out, 1.0, silent={"p1"})
        if relayed:  # p2 got an answer from p1 on our behalf
            m.receive(PingAck(RING, "p2", ping.seq, "p1", ()), 1.2)
        tick_until(m, 1.0, lambda t: t >= 0.5 + SUSPECT_AFTER, silent={"p1"})
        assert m.members()["p1"].state is (ALIVE if relayed else SUSPECT)


def test_at_half_of_suspect_after_the_target_is_pinged_and_asked_about_once_more():
    m = make("p0", seed_list(6))
    for p in ("p1", "p2", "p3", "p4", "p5"):
        m.receive(Digest(RING, p, (rec(p),)), 0.0)
    out = m.tick(0.5)
    ping = next(msg for d, msg in out if d == "p1" and type(msg) is Ping)
    asks = []
    t = 0.5
    while t < 0.5 + SUSPECT_AFTER / 2:
        answer(m, out, t, silent={"p1"})
        t += INTERVAL
        out = m.tick(t)
        asks.append([(d, msg.seq) for d, msg in out if type(msg) is PingReq and msg.target == "p1"])
    # the next round (1.0), then at half of suspect_after (1.5): 3 helpers each time
    assert [len(a) for a in asks] == [3, 3]
    assert {s for a in asks for _, s in a} == {ping.seq}
    # the second ask's relayed answer still clears the probe
    m.receive(PingAck(RING, asks[1][0][0], ping.seq, "p1", ()), t + 0.1)
    tick_until(m, t, lambda t: t >= 0.5 + SUSPECT_AFTER, silent={"p1"})
    assert m.members()["p1"].state is ALIVE


def test_a_relay_asks_the_target_and_passes_its_answer_back():
    m = make("p2", seed_list(3))
    for p in ("p0", "p1"):
        m.receive(Digest(RING, p, (rec(p),)), 0.0)
    out = m.receive(PingReq(RING, "p0", 77, "p1", ()), 1.0)
    [(dst, ping)] = out
    assert dst == "p1" and type(ping) is Ping and ping.target == "p1"
    # only the target itself may answer it
    assert m.receive(PingAck(RING, "p0", ping.seq, "p1", ()), 1.1) == []
    [(dst, ack)] = m.receive(PingAck(RING, "p1", ping.seq, "p1", ()), 1.1)
    assert (dst, type(ack), ack.seq, ack.target) == ("p0", PingAck, 77, "p1")
    assert m.receive(PingAck(RING, "p1", ping.seq, "p1", ()), 1.2) == []  # once


@pytest.mark.parametrize("n", [4, 64])
def test_a_suspicion_heard_of_kills_after_dead_after_plus_log_n_rounds(n):
    # The suspector's own verdict comes dead_after after its ping; a peer
    # that only heard the suspicion waits longer, by log2 N rounds: the
    # refutation it waits for spreads in O(log N) rounds (Lifeguard).
    m = make("p0", seed_list(n))
    for i in range(1, n):
        m.receive(Digest(RING, f"p{i}", (rec(f"p{i}"),)), 0.0)
    m.receive(Digest(RING, "p2", (rec("p1", state=SUSPECT),)), 0.0)
    dead = tick_until(m, 0.0, lambda t: m.members()["p1"].state is DEAD, silent={"p1"})
    assert dead == DEAD_AFTER + INTERVAL * math.ceil(math.log2(n))
    said = [(e.state, e.reason) for e in m.drain_events() if e.id == "p1"]
    assert said == [(ALIVE, ChangeReason.JOINED), (SUSPECT, ChangeReason.REPORTED),
                    (DEAD, ChangeReason.SILENCE)]


def test_a_refutation_in_time_clears_a_suspicion_and_keeps_the_ring():
    m = make("p0", seed_list(3))
    for p in ("p1", "p2"):
        m.receive(Digest(RING, p, (rec(p),)), 0.0)
    version = m.ring_version
    m.receive(Digest(RING, "p2", (rec("p1", state=SUSPECT),)), 0.0)
    assert "p1" in m.live() and m.ring_version == version  # a suspect keeps its hosts
    m.receive(Digest(RING, "p1", (rec("p1", inc=4),)), 2.0)
    tick_until(m, 2.0, lambda t: t >= 20.0)
    assert m.members()["p1"].state is ALIVE and m.ring_version == version
    said = [(e.state, e.reason) for e in m.drain_events() if e.id == "p1"]
    assert said[-2:] == [(SUSPECT, ChangeReason.REPORTED), (ALIVE, ChangeReason.REFUTED)]


def test_tick_probes_the_successor_and_one_round_robin_member_syncs_with_one_and_pings_the_dead():
    m = make("p0", seed_list(10))
    for i in range(1, 9):
        m.receive(Digest(RING, f"p{i}", (rec(f"p{i}"),)), 0.5)
    m.receive(Digest(RING, "p1", (rec("p9", state=DEAD),), verdicts=True), 0.5)
    others, to_dead = [], []
    for r in range(1, 8):
        t = 0.5 + r * INTERVAL
        out = m.tick(t)
        answer(m, out, t)
        probed = [d for d, msg in out if type(msg) is Ping and d != "p9"]
        assert probed[0] == "p1" and len(probed) == 2  # p1 follows p0 in the sorted ids
        others.append(probed[1])
        syncs = [d for d, msg in out if type(msg) is Sync]
        assert len(syncs) == 1  # anti-entropy with ONE peer (10 records: every round)
        pings = [msg for d, msg in out if d == "p9"]
        to_dead.append(len(pings))
        assert all(m.members()["p9"] in msg.updates for msg in pings)  # "you are dead"
    assert sorted(others) == [f"p{i}" for i in range(2, 9)]  # a round-robin pass
    assert to_dead == [0, 0, 1, 0, 0, 1, 0]  # the one dead member, every third tick


def test_a_death_of_our_own_finding_is_pushed_to_every_live_member():
    m = make("p0", seed_list(10))
    for i in range(1, 10):
        m.receive(Digest(RING, f"p{i}", (rec(f"p{i}"),)), 0.0)
    t, first_ping = 0.0, None
    while m.members()["p9"].state is not DEAD:
        t += INTERVAL
        out = m.tick(t)
        answer(m, out, t, silent={"p9"})
        if first_ping is None and any(d == "p9" and type(msg) is Ping for d, msg in out):
            first_ping = t
    assert t - first_ping == DEAD_AFTER
    pushes = [(d, msg) for d, msg in out if type(msg) is Digest and not msg.want_reply]
    assert sorted(d for d, _ in pushes) == [f"p{i}" for i in range(1, 9)]
    assert all(msg.members == (m.members()["p9"],) for _, msg in pushes)  # the verdict only
    t += INTERVAL
    out = m.tick(t)
    assert not [d for d, msg in out if type(msg) is Digest and not msg.want_reply]  # once


def test_local_health_a_refuted_suspicion_of_us_makes_our_probes_wait_longer_and_answers_heal_it():
    # Lifeguard: a peer others found slow trusts its own timeouts less.
    m = make("p0", seed_list(3))
    for i in (1, 2):
        m.receive(Digest(RING, f"p{i}", (rec(f"p{i}"),)), 0.0)
    me = m.me
    m.receive(Digest(RING, "p1", (Member("p0", me.address, me.incarnation, SUSPECT, 1.0, 0),)), 0.1)
    assert m.health == 1 and m.me.incarnation == me.incarnation + 1
    # A probe that goes unanswered now becomes a suspicion only after 2 x suspect_after.
    out = m.tick(1.0)
    target = next(d for d, msg in out if type(msg) is Ping)
    t, suspected = 1.0, None
    while suspected is None and t < 1.0 + 3 * SUSPECT_AFTER:
        t += INTERVAL / 5
        m.tick(t)
        if m.members()[target].state is SUSPECT:
            suspected = t
    assert suspected is not None and suspected - 1.0 >= 2 * SUSPECT_AFTER - INTERVAL
    # Answered probes take it back down.
    for r in range(1, 6):
        now = suspected + r * INTERVAL
        answer(m, m.tick(now), now)
    assert m.health == 0
