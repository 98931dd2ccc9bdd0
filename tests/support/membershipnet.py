"""The membership tests' shared fixtures: peers with test addresses, and ``FakeNet``.

``FakeNet`` (h11's ConnectionPair idea, for N peers) runs synchronous rounds:
every running peer ticks at ``now = round * INTERVAL``, then messages due
this round are delivered, replies included, until none is left. A message is
lost with probability ``loss``, arrives ``delay`` rounds late, and never
crosses a partition. Used by tests/ring/test_membership.py and the files that
mirror its parts (test_records, test_swim, test_dissemination,
test_antientropy, test_termination, test_view).
"""

from __future__ import annotations

import random
from collections import deque

from ring.membership.protocol import Membership
from ring.messages import Digest, Member, MemberState, Ping, PingAck, decode, encode

ALIVE, SUSPECT, DEAD, LEFT, RESTARTING = MemberState
INTERVAL = 0.5  # the config defaults: 0.5 s rounds, suspect after 2 s, dead after 6 s
SUSPECT_AFTER = 2.0
DEAD_AFTER = 6.0
RING = "testring"


def make(pid, seeds, *, now=0.0, incarnation=None, rng=None, ring=RING, weight=1.0, **kw):
    return Membership(
        pid,
        f"tcp://127.0.0.1:{7000 + int(pid[1:])}",
        weight,
        ring,
        seeds=seeds,
        gossip_interval=INTERVAL,
        suspect_after=SUSPECT_AFTER,
        dead_after=DEAD_AFTER,
        now=now,
        incarnation=1000 + int(pid[1:]) if incarnation is None else incarnation,
        rng=rng or random.Random(pid),
        **kw,
    )


def restartable(pid, seeds, resumed, *, hold, ring=RING):
    """A ``SimNet`` factory for ``pid``: a new process (incarnation from its start time) each time
    the net starts it, resumed (its data_dir kept) once ``pid`` is in ``resumed``."""

    def build(now):
        return Membership(pid, f"tcp://10.0.0.{pid[1:]}:5701", 1.0, ring, seeds=seeds,
                          gossip_interval=INTERVAL, suspect_after=SUSPECT_AFTER, dead_after=DEAD_AFTER,
                          now=now, incarnation=1000 + int(now * 1000), rng=random.Random(pid + str(now)),
                          lease=3.0, resumed=pid in resumed, restart_hold=hold)
    return build


def seed_list(n):
    return [(f"p{i}", f"tcp://127.0.0.1:{7000 + i}") for i in range(n)]


def rec(pid, inc=3, state=ALIVE, hb=1, **kw):
    """A record of ``pid`` at its test address."""
    return Member(pid, f"tcp://127.0.0.1:{7000 + int(pid[1:])}", inc, state, 1.0, hb, **kw)


def answer(m, out, t, silent=()):
    """Every member but ``silent`` answers the pings in ``out`` at once (with nothing to add)."""
    for dst, msg in out:
        if type(msg) is Ping and dst not in silent:
            m.receive(PingAck(RING, dst, msg.seq, dst, ()), t)


def tick_until(m, t, until, silent=(), step=INTERVAL):
    """Tick ``m`` every ``step`` after ``t`` until ``until(t)``; the time it held."""
    for _ in range(1000):
        t += step
        answer(m, m.tick(t), t, silent)
        if until(t):
            return t
    raise AssertionError("never")


class FakeNet:
    """N Membership instances wired by a lossy, delaying, partitionable network."""

    def __init__(self, seed=0, loss=0.0, delay=0, wire=False):
        self.rng = random.Random(seed)
        self.loss = loss
        self.delay = delay
        self.wire = wire  # round-trip every message through the codec
        self.peers: dict[str, Membership] = {}
        self.down: set[str] = set()
        self.groups: list[set[str]] | None = None
        self.round = 0
        self.queue: dict[int, deque] = {}
        self.sent = 0

    @property
    def now(self):
        return self.round * INTERVAL

    def add(self, m: Membership):
        self.peers[m.self_id] = m

    def running(self):
        return [p for p in self.peers if p not in self.down]

    def partition(self, *groups):
        self.groups = [set(g) for g in groups]

    def heal(self):
        self.groups = None

    def can_talk(self, a, b):
        if b in self.down or b not in self.peers:
            return False
        return self.groups is None or any(a in g and b in g for g in self.groups)

    def send(self, src, out, due):
        for dst, msg in out:
            self.sent += 1
            if self.wire:
                msg = decode(encode(msg))
            self.queue.setdefault(due, deque()).append((src, dst, msg))

    def step(self):
        self.round += 1
        now = self.now
        order = self.running()
        self.rng.shuffle(order)
        for pid in order:
            self.send(pid, self.peers[pid].tick(now), self.round + self.delay)
        q = self.queue.pop(self.round, deque())
        while q:
            src, dst, msg = q.popleft()
            if not self.can_talk(src, dst) or self.rng.random() < self.loss:
                continue
            out = self.peers[dst].receive(msg, now)
            if self.delay:
                self.send(dst, out, self.round + self.delay)
            else:
                self.send(dst, out, self.round)
                q.extend(self.queue.pop(self.round, ()))

    def run(self, rounds):
        for _ in range(rounds):
            self.step()

    def converged(self, among=None):
        """Every running peer sees every other running peer alive at its own incarnation."""
        ids = among or self.running()
        truth = {p: self.peers[p].me.incarnation for p in ids}
        for p in ids:
            view = self.peers[p].members()
            for q in ids:
                m = view.get(q)
                if m is None or m.state is not ALIVE or m.incarnation != truth[q]:
                    return False
        return True

    def run_until_converged(self, limit, among=None):
        start = self.round
        while not self.converged(among):
            assert self.round - start < limit, f"not converged in {limit} rounds"
            self.step()
        return self.round - start

    def states_of(self, pid):
        return {p: self.peers[p].members()[pid].state for p in self.running() if p != pid}


def static_cluster(n, seed, loss=0.0, delay=0, wire=False):
    """N peers, all of them seeds (all listed in cluster.toml), started at once."""
    net = FakeNet(seed, loss, delay, wire)
    seeds = seed_list(n)
    for i in range(n):
        net.add(make(f"p{i}", seeds, rng=random.Random(seed * 1000 + i)))
    return net


def joining_cluster(n, seed, loss=0.0, delay=0, wire=False):
    """p0 is the only seed; the N-1 others join through it at once."""
    net = FakeNet(seed, loss, delay, wire)
    seeds = seed_list(1)
    for i in range(n):
        net.add(make(f"p{i}", seeds, rng=random.Random(seed * 1000 + i)))
    return net


def heard_cluster(n):
    """p0 with p1..p{n-1} heard of, through one full digest (which queues nothing)."""
    m = make("p0", seed_list(n))
    m.receive(Digest(RING, "p1", tuple(rec(f"p{i}") for i in range(1, n))), 0.0)
    return m
