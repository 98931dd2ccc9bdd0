"""The frontier's census: read-outs of its hosts for status pages and metrics.

Rules:

- Never on the crawl path: an operator's scrape or status request asks,
  and the answer is computed then, from the records the frontier's
  scheduler keeps (peer/core/frontier/hoststate.py, peer/core/frontier/scheduler.py);
  nothing here writes them.
- Bounded: a scan of the hosts kept (frontier rule 6 bounds them), a sample
  of at most ``limit`` of them, or a walk of the ready heaps that stops at
  ``most``, so that a scrape of a peer keeping 100,000 hosts costs the event
  loop milliseconds.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from peer.core.frontier.hoststate import HostState, IpBudget
from peer.core.frontier.pacing import delay
from peer.core.politeness.ceiling import HORIZON

__all__ = ["HostCensus", "busiest_hosts", "count_due", "sample_delays", "take_census"]


@dataclass(frozen=True, slots=True)
class HostCensus:
    """Hosts with queued work by state: may start now, on their delay or ceiling,
    held (Retry-After, a robots.txt retry), all their slots in flight."""

    ready: int
    waiting: int
    held: int
    busy: int


def take_census(hosts: Iterable[HostState], now: float) -> HostCensus:
    """Hosts with queued work by what they wait for at ``now`` (busy: at their host_concurrency)."""
    ready = waiting = held = busy = 0
    for hs in hosts:
        if not hs.work:
            continue
        if hs.hold_until > now:
            held += 1
        elif hs.in_flight >= hs.pace.cap:
            busy += 1
        elif hs.rseq and hs.rkey <= now:
            ready += 1
        else:
            waiting += 1
    return HostCensus(ready, waiting, held, busy)


def busiest_hosts(hosts: Iterable[HostState], now: float, n: int) -> list[tuple[str, float, float]]:
    """The ``n`` hosts with the most starts in the last 5 s: (host, pages/min, setpoint pages/min).

    The rate is the starts in the ceiling's longest window (pacing rule 7
    keeps every one of them in the host's ring), so it is what the host saw
    lately, not a PID window's count. The setpoint is the host's ``rate``
    (its ``[[site]]`` block's, or ``[politeness]``'s), or less under a
    robots.txt Crawl-delay.
    """
    since = now - HORIZON
    counts = []
    for hs in hosts:
        if hs.last_start > since and hs.starts is not None:
            k = sum(1 for t in hs.starts if t > since)
            counts.append((k, hs.name, hs.floor, hs.pace.pol.rate))
    out = []
    for k, name, floor, rate in heapq.nlargest(n, counts):
        setpoint = rate if floor <= 0 else min(rate, 60.0 / floor)
        out.append((name, k * 60.0 / HORIZON, setpoint))
    return out


def sample_delays(hosts: Sequence[HostState], now: float, limit: int, window: float) -> list[float]:
    """The delays of every k-th host of ``hosts``, at most ``limit`` of them (for quantiles).

    Quantiles from a couple of thousand are as good as from all.
    """
    step = max(1, -(-len(hosts) // limit)) if limit > 0 else 1
    return [delay(hs, now, window) for hs in hosts[::step]]


def count_due(heap: Sequence[tuple[float, int, HostState | IpBudget]], now: float, most: int) -> int:
    """Live entries of a ready heap due at ``now`` (an IP's counted by its own heap), up to ``most``.

    A walk that skips every subtree whose root is not due (a heap's
    children are never earlier than their parent), so it costs the due and
    stale entries, not every host: the hosts waiting on politeness, most of
    a crawl's, are not visited. Measured: 0.01 ms with 100,000 hosts
    waiting, 200 ms with 100,000 due (a broad crawl held by
    ``concurrency``), hence ``most``, ~20 ms at 10,000.
    """
    n = 0
    todo = [0]
    size = len(heap)
    while todo and n < most:
        i = todo.pop()
        if i >= size:
            continue
        key, seq, obj = heap[i]
        if key > now:
            continue
        if obj.rseq == seq:
            n += count_due(obj.heap, now, most - n) if type(obj) is IpBudget else 1
        todo.append(2 * i + 1)
        todo.append(2 * i + 2)
    return n
