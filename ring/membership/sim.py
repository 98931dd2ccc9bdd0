"""A simulated network for :class:`~ring.membership.protocol.Membership` (pure, in-process).

Continuous time, one event queue: each peer ticks every ``interval`` from
its own start (a random phase, as real peers never tick together), and a
message sent at ``t`` arrives at ``t + latency`` (plus up to ``jitter``),
or never, with probability ``loss``, or if its receiver is down, not started
yet, or across a partition. Every message is encoded with the real codec
(``ring.messages.encode``), and its frame length is what :attr:`SimNet.sent`
counts; with ``wire=True`` the receiver gets ``decode(frame)``, not the
object. :attr:`SimNet.why` splits the bytes by what made a peer send them:
``("Digest", "Sync")`` is the answers to syncs, ``("Ping", "tick")`` the
probes of a round. Membership events of every peer are kept in
:attr:`SimNet.events`, so a test or ``scripts/bench_membership.py`` can count false suspicions and
false deaths against the truth the network knows (who is really up).

Nothing here reads a clock or does I/O: ``run_until(t)`` runs the events up
to simulated time ``t``, in microseconds of CPU per message.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import cast

from ring.membership.protocol import MemberEvent, Membership
from ring.messages import MemberState, Message, decode, encode

__all__ = ["SimNet", "SeenEvent"]

_TICK, _DELIVER = 0, 1


@dataclass(frozen=True, slots=True)
class SeenEvent:
    """A membership event as peer ``at_peer`` logged it, with the truth about its subject."""

    at_peer: str
    event: MemberEvent
    subject_up: bool  # the network's truth: the subject was running when this was seen


class SimNet:
    """N :class:`Membership` instances over a lossy, slow, partitionable network."""

    def __init__(self, *, seed: int = 0, loss: float = 0.0, latency: float = 0.2,
                 jitter: float = 0.0, interval: float = 0.5, wire: bool = False) -> None:
        self.rng = random.Random(seed)
        self.loss = loss
        self.latency = latency
        self.jitter = jitter
        self.interval = interval
        self.wire = wire
        self.now = 0.0
        self.peers: dict[str, Membership] = {}
        self.up: set[str] = set()
        self.groups: list[set[str]] | None = None
        self.sent: Counter[str] = Counter()  # bytes sent, by peer
        self.messages: Counter[str] = Counter()  # messages sent, by type name
        self.bytes: Counter[str] = Counter()  # bytes sent, by type name
        # bytes sent, by (type name, what it answers: a type name, or "tick")
        self.why: Counter[tuple[str, str]] = Counter()
        self.events: list[SeenEvent] = []
        self._heap: list[tuple[float, int, int, object]] = []
        self._n = 0
        self._factory: dict[str, Callable[[float], Membership]] = {}

    # -- the cluster -----------------------------------------------------------

    def add(self, pid: str, factory: Callable[[float], Membership], start_at: float = 0.0) -> None:
        """Start ``factory(now)`` as peer ``pid`` at ``start_at`` (a rolling start: later)."""
        self._factory[pid] = factory
        self._push(start_at, _TICK, ("start", pid))

    def crash(self, pid: str) -> None:
        """``pid`` stops now: no ticks, and what reaches it is lost."""
        self.up.discard(pid)

    def restart(self, pid: str) -> None:
        """A new process for ``pid`` from its factory, now."""
        self._push(self.now, _TICK, ("start", pid))

    def announce_restart(self, pid: str) -> None:
        """``pid`` announces a planned restart now (``ring.membership.restarts``); it keeps
        running (and asking again each round) until the caller :meth:`crash` es it."""
        m = self.peers[pid]
        self._send(pid, m.restart(self.now), "restart")
        self._log(pid, m)

    def partition(self, *groups: Iterable[str]) -> None:
        self.groups = [set(g) for g in groups]

    def heal(self) -> None:
        self.groups = None

    def running(self) -> list[str]:
        return sorted(self.up)

    # -- time ------------------------------------------------------------------

    def run_until(self, t: float) -> None:
        heap = self._heap
        while heap and heap[0][0] <= t:
            when, _, kind, payload = heapq.heappop(heap)
            self.now = when
            if kind == _TICK:
                self._tick(payload)
            else:
                self._deliver(payload)
        self.now = t

    def run_for(self, seconds: float) -> None:
        self.run_until(self.now + seconds)

    # -- questions -------------------------------------------------------------

    def converged(self, among: Iterable[str] | None = None) -> bool:
        """Every running peer sees every other running peer alive at its own incarnation."""
        ids = list(among) if among is not None else self.running()
        truth = {p: self.peers[p].me.incarnation for p in ids}
        for p in ids:
            view = self.peers[p].members()
            for q, inc in truth.items():
                m = view.get(q)
                if m is None or m.state is not MemberState.ALIVE or m.incarnation != inc:
                    return False
        return True

    def run_until_converged(self, limit: float, step: float = 0.25) -> float:
        """Simulated seconds until :meth:`converged`; ``limit`` at the most (then returns -1)."""
        start = self.now
        while not self.converged():
            if self.now - start >= limit:
                return -1.0
            self.run_for(step)
        return self.now - start

    def false(self, state: MemberState) -> list[SeenEvent]:
        """Events that put a running member in ``state`` (a false suspicion or death)."""
        return [e for e in self.events if e.event.state is state and e.subject_up
                and e.event.id != e.at_peer]

    # -- the engine ------------------------------------------------------------

    def _push(self, when: float, kind: int, payload: object) -> None:
        self._n += 1
        heapq.heappush(self._heap, (when, self._n, kind, payload))

    def _tick(self, payload: object) -> None:
        if type(payload) is tuple:
            _, pid = payload
            self.peers[pid] = self._factory[pid](self.now)
            self.up.add(pid)
            # A random phase: real peers never tick in step.
            self._push(self.now + self.rng.random() * self.interval, _TICK, pid)
            return
        pid = cast(str, payload)
        if pid not in self.up:
            return
        m = self.peers[pid]
        self._send(pid, m.tick(self.now), "tick")
        self._log(pid, m)
        self._push(self.now + self.interval, _TICK, pid)

    def _deliver(self, payload: object) -> None:
        src, dst, msg, inc = cast(tuple[str, str, Message, int], payload)
        if dst not in self.up:
            return
        m = self.peers[dst]
        if m.me.incarnation < inc:
            return  # meant for an older process of dst (never happens: incarnations grow)
        out = m.receive(msg, self.now)
        self._send(dst, out, type(msg).__name__)
        self._log(dst, m)

    def _send(self, src: str, out: list[tuple[str, Message]], cause: str) -> None:
        last: object = None
        frame = b""
        for dst, msg in out:
            if msg is not last:
                frame = encode(msg)
                last = msg
            self.sent[src] += len(frame)
            self.messages[type(msg).__name__] += 1
            self.bytes[type(msg).__name__] += len(frame)
            self.why[type(msg).__name__, cause] += len(frame)
            if self.rng.random() < self.loss or dst not in self.peers and dst not in self._factory:
                continue
            if self.groups is not None and not any(src in g and dst in g for g in self.groups):
                continue
            delay = self.latency + (self.rng.random() * self.jitter if self.jitter else 0.0)
            got = decode(frame) if self.wire else msg
            self._push(self.now + delay, _DELIVER, (src, dst, got, 0))

    def _log(self, pid: str, m: Membership) -> None:
        for e in m.drain_events():
            self.events.append(SeenEvent(pid, e, e.id in self.up))
