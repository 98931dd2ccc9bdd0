"""ring.membership.antientropy through Membership: joins, Sync summaries and their answers, greeting unheard seeds;
last, its Repairs part alone."""

from __future__ import annotations

from collections import Counter

from ring.hashring import HashRing
from ring.messages import Digest, Join, Member, Ping, PingAck, Sync, encode

from membershipnet import (
    ALIVE,
    DEAD,
    DEAD_AFTER,
    INTERVAL,
    RING,
    SUSPECT,
    answer,
    heard_cluster,
    make,
    rec,
    seed_list,
    static_cluster,
    tick_until,
)


def test_joiner_not_in_seeds_becomes_known_to_all():
    net = static_cluster(8, seed=7, loss=0.1)
    net.run_until_converged(limit=20)
    joiner = make("p42", [("p2", "tcp://127.0.0.1:7002")], now=net.now)
    assert not joiner.joined
    first = joiner.tick(net.now + INTERVAL)
    assert [(d, type(m)) for d, m in first] == [("p2", Join)]
    net.add(joiner)
    net.run_until_converged(limit=15)
    assert joiner.joined
    versions = {p: net.peers[p].ring_version for p in net.peers}
    assert all(v >= 1 for v in versions.values())
    assert {net.peers[p].ring(32) for p in net.peers} == {
        HashRing({p: 1.0 for p in net.peers}, 32)
    }


def test_joins_go_to_a_few_unheard_seeds_until_one_answers():
    m = make("p0", seed_list(10), join_seeds=3)
    first = [d for d, msg in m.tick(0.5) if type(msg) is Join]
    assert len(first) == len(set(first)) == 3  # not all nine
    assert [d for d, msg in m.tick(1.0) if type(msg) is Join] == []  # a round trip to answer
    assert len([d for d, msg in m.tick(1.5) if type(msg) is Join]) == 3
    # p1 answers; a Join from p3 is hearing from p3
    m.receive(Digest(RING, "p1", (rec("p1"), rec("p2"))), 1.6)
    out = m.receive(Join(RING, "p3", "tcp://127.0.0.1:7003", 1.0, 5), 1.6)
    assert [(d, type(msg)) for d, msg in out] == [("p3", Digest)]
    # in: no more Joins (each answer is the whole view); every JOIN_EVERY_AFTER
    # (8) rounds a Sync to a seed not heard from, whose answer is what we lack
    outs = [m.tick(r * INTERVAL) for r in range(4, 20)]
    assert not [d for out in outs for d, msg in out if type(msg) is Join]
    unheard = [d for out in outs for d, msg in out if type(msg) is Sync
               and d not in {"p1", "p2", "p3"}]
    assert len(unheard) == 2


def test_anti_entropy_repairs_what_piggybacking_never_carried_with_a_summary_and_a_delta():
    b = heard_cluster(40)
    b.receive(Digest(RING, "p2", (Member("j1", "tcp://j:1", 7, ALIVE, 1.0, 1),
                                  *(rec(f"p{i}") for i in range(2, 8)))), 0.0)
    assert "j1" in b.members() and b.pending_updates() == 0  # nobody will piggyback it
    a = make("p1", seed_list(40))
    a.receive(Digest(RING, "p0", tuple(rec(f"p{i}") for i in range(2, 40)) + (b.me,)), 0.0)
    syncs = []
    for r in range(1, 5):  # 40 records: a sync every other round (ceil(40 / 32))
        out = a.tick(r * INTERVAL)
        answer(a, out, r * INTERVAL)
        syncs += [(d, msg) for d, msg in out if type(msg) is Sync]
    assert len(syncs) == 2 and len({d for d, _ in syncs}) <= 2
    r = 5
    while True:  # until one goes to b (p0): ONE random partner a time
        r += 1
        out = a.tick(r * INTERVAL)
        answer(a, out, r * INTERVAL)
        [(dst, sync)] = [(d, msg) for d, msg in out if type(msg) is Sync] or [("", None)]
        if dst == "p0":
            break
        assert r < 400
    assert {e[0] for e in sync.summary} == set(a.digest().members[i].id for i in range(40))
    assert len(encode(sync)) < len(encode(a.digest())) / 2  # (id, incarnation, state, heartbeat)
    [(dst, reply)] = b.receive(sync, 1.0)
    # the answer holds only what the asker lacks or holds older
    assert dst == "p1" and type(reply) is Digest and not reply.want_reply
    assert "j1" in {r.id for r in reply.members} and len(reply.members) < 10
    a.receive(reply, r * INTERVAL)
    assert a.members()["j1"].incarnation == 7
    assert a.pending_updates() == 0  # the answer's news is the answer's: not queued
    again = b.receive(Sync(RING, "p1", tuple((m.id, m.incarnation, m.state, m.heartbeat)
                                             for m in a.digest().members)), 1.2)
    assert all("j1" not in {r.id for r in msg.members} for _, msg in again)  # known now


def summary_of(m):
    return tuple((r.id, r.incarnation, r.state, r.heartbeat) for r in m.digest().members)


def test_a_sync_answer_holds_the_members_the_asker_lacks_alone_then_the_heartbeats():
    b = heard_cluster(10)
    b.receive(Digest(RING, "p2", (Member("j1", "tcp://j:1", 7, ALIVE, 1.0, 1),)), 0.0)
    b.receive(Digest(RING, "p3", tuple(rec(f"p{i}", hb=9) for i in range(4, 10))), 0.0)
    # a holds every member b does but j1, and all at older heartbeats
    a = make("p1", seed_list(10))
    a.receive(Digest(RING, "p0", tuple(rec(f"p{i}") for i in range(2, 10)) + (b.me,)), 0.0)
    [(dst, reply)] = b.receive(Sync(RING, "p1", summary_of(a)), 1.0)
    assert dst == "p1" and [r.id for r in reply.members] == ["j1"]  # no heartbeat-only record
    a.receive(reply, 1.0)
    # nothing is missing now: the next answer is the newer heartbeats
    [(_, reply)] = b.receive(Sync(RING, "p1", summary_of(a)), 1.5)
    assert {r.id for r in reply.members} == {f"p{i}" for i in range(4, 10)}
    a.receive(reply, 1.5)
    assert all(a.members()[f"p{i}"].heartbeat == 9 for i in range(4, 10))
    # a restart (a higher incarnation) is news, not a heartbeat
    b.receive(Digest(RING, "p5", (rec("p5", inc=4, hb=1),)), 2.0)
    b.receive(Digest(RING, "p6", (rec("p6", hb=12),)), 2.0)
    [(_, reply)] = b.receive(Sync(RING, "p1", summary_of(a)), 2.0)
    assert [(r.id, r.incarnation) for r in reply.members] == [("p5", 4)]
    assert b.receive(Sync(RING, "p1", summary_of(b)), 2.0) == []  # nothing newer: no answer


def test_a_seed_never_heard_from_is_greeted_by_an_untimed_ping_whose_ack_brings_it_in():
    m = make("p0", seed_list(6), seed_grace=30.0)
    assert not [msg for d, msg in m.tick(0.5) if type(msg) is Ping]  # not in yet: Joins only
    m.receive(Digest(RING, "p1", (rec("p1"),)), 0.6)
    out = m.tick(1.0)
    hellos = [(d, msg) for d, msg in out if type(msg) is Ping and d in {"p2", "p3", "p4", "p5"}]
    assert len(hellos) == 2  # HELLO_SEEDS a round, not every unheard seed
    assert all(msg.updates[0] == m.me for _, msg in hellos)  # our record: the seed hears us
    dst, ping = hellos[0]
    m.receive(PingAck(RING, dst, ping.seq, dst, (rec(dst, inc=9),)), 1.1)
    assert m.members()[dst].incarnation == 9  # heard of: probed like anyone from now on
    assert m.members()[dst] in {r for r in m.digest().members}
    # the silent ones are greeted again, less and less often, never suspected,
    # until the grace ends (a real DEALER queues what it sends to a seed not up)
    silent = {"p2", "p3", "p4", "p5"} - {dst}
    t, greeted = 1.0, Counter()
    while t < 29.5:
        t += INTERVAL
        out = m.tick(t)
        answer(m, out, t, silent=silent)
        greeted.update(d for d, msg in out if d in silent and type(msg) is Ping)
    # about 9 each in 28 s (HELLO_DENSE, HELLO_BACKOFF), not 2 a round among 3
    assert set(greeted) == silent and all(6 <= n <= 10 for n in greeted.values()), greeted
    assert all(m.members()[p].state is ALIVE for p in silent)
    assert not [e for e in m.drain_events() if e.state is SUSPECT]


def test_a_seed_never_heard_from_gets_seed_grace_then_is_probed_like_anyone():
    m = make("p0", seed_list(3), seed_grace=30.0)
    m.receive(Digest(RING, "p1", (rec("p1"),)), 0.0)
    t, probed = 0.0, []
    while t < 30.0:
        t += INTERVAL
        out = m.tick(t)
        answer(m, out, t, silent={"p2"})
        probed += [t for d, msg in out if d == "p2" and type(msg) is Ping]
    # Greeted (HELLO_SEEDS) but never suspected: grace is measured from our start.
    assert probed[:9] == [0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 9.0, 17.0, 25.0]  # backing off
    assert probed[9] == 30.0  # then probed
    assert [e for e in m.drain_events() if e.id == "p2"] == []
    assert m.members()["p2"].state is ALIVE  # a rolling start: no verdict
    assert "p2" in m.live()  # it keeps its hosts meanwhile: every peer starts with one ring
    dead = tick_until(m, t, lambda t: m.members()["p2"].state is DEAD, silent={"p2"})
    assert dead <= 30.0 + DEAD_AFTER + INTERVAL


def test_repairs_alone_join_until_answered_then_sync_and_greet_within_the_grace():
    # ring.membership.antientropy.Repairs: the part Membership keeps; it picks, the membership sends.
    import random

    from ring.membership.antientropy import HELLO_SEEDS, JOIN_EVERY, JOIN_EVERY_AFTER, Repairs, sync_every
    from ring.messages import MemberState

    rng = random.Random(1)
    repairs = Repairs(10.0, seed_grace=5.0, join_seeds=2, contacted=False)
    unheard = ["s1", "s2", "s3"]
    assert [t for t in range(1, 9) if repairs.join_due(t)] == [t for t in range(1, 9) if t % JOIN_EVERY == 1]
    assert len(repairs.joins(unheard, rng)) == 2  # join_seeds of them, until one answers
    repairs.contacted = True
    assert [t for t in range(1, 20) if repairs.join_due(t)] == [1, 1 + JOIN_EVERY_AFTER, 1 + 2 * JOIN_EVERY_AFTER]
    assert len(repairs.joins(unheard, rng)) == 1  # in: a Sync to one of them
    seeds = {s: Member(s, "tcp://x", 0, MemberState.ALIVE, 1.0) for s in unheard}
    assert len(repairs.greet(1, 12.0, unheard, seeds, rng)) == HELLO_SEEDS
    assert repairs.greet(2, 15.0, unheard, seeds, rng) == []  # the grace is over: probed like anyone
    assert not repairs.grace_over(14.9) and repairs.grace_over(15.0)
    assert repairs.sync_due(0)
    repairs.synced(0, 100, "p7")
    assert repairs.partner == "p7" and not repairs.sync_due(sync_every(100) - 1) and repairs.sync_due(sync_every(100))
