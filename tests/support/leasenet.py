"""The lease tests' network: Memberships with leases, each on its own clock, in virtual time.

tests/support/membershipnet.py's ``FakeNet`` runs lockstep rounds on one clock;
a lease's safety argument (``ring.membership.lease``) is about what lockstep hides:
clocks that run at different rates, answers that wait in a socket while a
process stands still, messages late by any amount. :class:`LeaseNet` is an
event queue in global time ``T``:

- peer ``p`` reads its clock as ``offset + rate * T``; it ticks every
  ``INTERVAL`` of its own clock, as the driver's gossip loop does;
- a message takes ``latency`` seconds (uniform in a range), is lost with
  probability ``loss``, and never crosses a partition or a cut link (a
  split need not be transitive: p0 and p2 may both reach p1 and not each
  other);
- a *frozen* peer (a process not scheduled, a GC pause) neither ticks nor
  reads; what reaches it waits, and it reads it when it thaws. Its ring
  clock then lags its real one by the time it stood still, as
  ``ring.io.sockets`` counts ``stalled``;
- a peer may crash and start again as a new process (a higher
  incarnation, ``resumed``), leave gracefully, and a new member may join
  through the seeds.

:meth:`LeaseNet.holders` says which running peers hold a lease right now,
and on which ring: the safety property is that they all hold it on one.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from membershipnet import DEAD_AFTER, INTERVAL, SUSPECT_AFTER, make, seed_list

from ring.membership.protocol import Membership
from ring.messages import Message

LEASE = 2.0  # < DEAD_AFTER (6 s); grace = 2.5 s


@dataclass
class Peer:
    pid: str
    m: Membership
    rate: float
    offset: float
    due: float = 0.0  # local time the next tick was due
    frozen_until: float = -1.0  # global time
    waiting: list[tuple[str, Message]] = field(default_factory=list)
    crashed: bool = False

    def local(self, t: float) -> float:
        return self.offset + self.rate * t


class LeaseNet:
    """Peers p0..p{n-1} (all seeds), their clocks, and the messages between them."""

    def __init__(self, n: int, seed: int, *, loss: float = 0.0,
                 latency: tuple[float, float] = (0.001, 0.02), drift: float = 0.0,
                 lease: float = LEASE) -> None:
        self.rng = random.Random(seed)
        self.loss = loss
        self.latency = latency
        self.lease = lease
        self.seeds = seed_list(n)
        self.t = 0.0
        self.peers: dict[str, Peer] = {}
        self.groups: list[set[str]] | None = None
        self.cuts: set[frozenset[str]] = set()  # single links down: a split that is not transitive
        self._heap: list[tuple[float, int, str, tuple[object, ...]]] = []
        self._n = 0
        self.delivered = 0
        self.trace: list[str] = []
        self.tracing = False
        for pid, _ in self.seeds:
            self._start(pid, drift)

    # -- peers ----------------------------------------------------------------

    def _start(self, pid: str, drift: float, *, seeds=None, incarnation=None,
               resumed: bool = False, voters=None) -> Peer:
        rate = 1.0 + self.rng.uniform(-drift, drift)
        offset = self.rng.uniform(0.0, 1000.0)
        now = offset + rate * self.t
        m = make(pid, self.seeds if seeds is None else seeds, now=now, incarnation=incarnation,
                 rng=random.Random(self.rng.random()), lease=self.lease, resumed=resumed, voters=voters)
        p = Peer(pid, m, rate, offset)
        p.due = now + self.rng.uniform(0.0, INTERVAL)
        self.peers[pid] = p
        self._at(self.t + (p.due - now) / rate, "tick", pid, m)
        return p

    def join(self, pid: str, drift: float = 0.0) -> Peer:
        """A new member (not listed among the seeds) that joins through them."""
        return self._start(pid, drift, seeds=self.seeds)

    def restart(self, pid: str) -> Peer:
        """``pid`` crashed; a new process of it starts (a later incarnation, resumed, with the
        voter record it held: its data_dir's, ``peer.state.voterfile``)."""
        old = self.peers[pid]
        old.crashed = True
        inc = old.m.me.incarnation + 1000
        return self._start(pid, 0.0, incarnation=inc, resumed=True, voters=old.m.voter_record)

    def crash(self, pid: str) -> None:
        """``pid`` is killed for good (kill -9, never restarted)."""
        self.peers[pid].crashed = True

    def change_voters(self, pid: str, action, target: str):
        """``python -m ring voter ACTION TARGET`` asked of ``pid``, from the version it holds."""
        p = self.peers[pid]
        outcome, out = p.m.change_voters(action, target, p.m.voter_record.version, self._now(p))
        self._send(pid, out)
        return outcome

    def leave(self, pid: str, after: float) -> None:
        """``pid`` leaves gracefully: its Leave now, its rounds for ``after`` seconds, then it exits."""
        p = self.peers[pid]
        self._send(pid, p.m.leave(self._now(p)))
        self._at(self.t + after, "exit", pid, p.m)

    def freeze(self, pid: str, seconds: float) -> None:
        """``pid`` stands still for ``seconds`` of global time."""
        p = self.peers[pid]
        until = self.t + seconds
        if until > p.frozen_until:
            p.frozen_until = until
            self._at(until, "thaw", pid, p.m)

    def partition(self, *groups: set[str] | list[str]) -> None:
        self.groups = [set(g) for g in groups]

    def cut(self, a: str, b: str) -> None:
        """The link between ``a`` and ``b`` goes down (both ways); the others stay up."""
        self.cuts.add(frozenset((a, b)))

    def heal(self) -> None:
        self.groups = None
        self.cuts.clear()

    def can_talk(self, a: str, b: str) -> bool:
        if frozenset((a, b)) in self.cuts:
            return False
        return self.groups is None or any(a in g and b in g for g in self.groups)

    # -- time -----------------------------------------------------------------

    def _at(self, t: float, kind: str, pid: str, *data: object) -> None:
        self._n += 1
        heapq.heappush(self._heap, (t, self._n, kind, (pid, *data)))

    def _now(self, p: Peer) -> float:
        """``p``'s ring clock: its own clock less the time it stood still."""
        return p.local(self.t) - p.m.stalled

    def _send(self, src: str, out: list[tuple[str, Message]]) -> None:
        for dst, msg in out:
            if self.rng.random() < self.loss or not self.can_talk(src, dst):
                continue
            lo, hi = self.latency
            self._at(self.t + self.rng.uniform(lo, hi), "msg", dst, src, msg)

    def _deliver(self, p: Peer, src: str, msg: Message) -> None:
        if self.tracing:
            self.trace.append(f"{self.t:9.3f} {src}->{p.pid} {msg!r:.300}")
        self.delivered += 1
        self._send(p.pid, p.m.receive(msg, self._now(p)))

    def _tick(self, p: Peer) -> None:
        local = p.local(self.t)
        late = local - p.due - INTERVAL
        if late > 0:
            p.m.stalled += late  # ring.io.sockets' _gossip: the round woke late
        self._send(p.pid, p.m.tick(self._now(p)))
        p.due = local + INTERVAL
        self._at(self.t + INTERVAL / p.rate, "tick", p.pid, p.m)

    def step(self) -> None:
        t, _, kind, data = heapq.heappop(self._heap)
        self.t = t
        pid = data[0]
        p = self.peers.get(pid)
        if kind == "msg":
            if p is None or p.crashed:
                return
            src, msg = data[1], data[2]
            if not self.can_talk(src, pid):
                return  # cut while it flew
            if self.t < p.frozen_until:
                p.waiting.append((src, msg))
            else:
                self._deliver(p, src, msg)
            return
        if p is None or p.m is not data[1] or p.crashed:
            return  # an event of an earlier process of pid
        if self.t < p.frozen_until:
            return  # its ticks resume when it thaws
        if kind == "exit":
            p.crashed = True
            return
        if kind == "thaw":
            waiting, p.waiting = p.waiting, []
            if self.rng.random() < 0.5:
                self._tick(p)  # the gossip loop woke first ...
                for src, msg in waiting:
                    self._deliver(p, src, msg)
            else:
                for src, msg in waiting:  # ... or the receiver did
                    self._deliver(p, src, msg)
                self._tick(p)
        elif kind == "tick":
            if p.due <= p.local(self.t) + 1e-9:
                self._tick(p)

    def run_until(self, t: float, check: Callable[[LeaseNet], None] | None = None) -> None:
        """Run events up to global time ``t``, calling ``check`` after each."""
        for _ in range(10_000_000):
            if not self._heap or self._heap[0][0] > t:
                break
            self.step()
            if check is not None:
                check(self)
        else:
            raise AssertionError("run_until: too many events")
        self.t = t

    # -- what the tests read ----------------------------------------------------

    def running(self) -> list[Peer]:
        return [p for p in self.peers.values() if not p.crashed and self.t >= p.frozen_until]

    def held(self, pid: str) -> bool:
        p = self.peers[pid]
        st = p.m.lease_state(p.local(self.t))
        return st is not None and st.held

    def holders(self) -> dict[str, int]:
        """Running peer -> the ring fingerprint it holds a lease on, right now."""
        out = {}
        for p in self.running():
            st = p.m.lease_state(p.local(self.t))
            if st is not None and st.held:
                out[p.pid] = p.m.lease.ring  # type: ignore[union-attr]
        return out


__all__ = ["DEAD_AFTER", "INTERVAL", "LEASE", "LeaseNet", "Peer", "SUSPECT_AFTER"]
