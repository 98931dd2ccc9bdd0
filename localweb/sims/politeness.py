"""A simulated web for the frontier: servers with latency, 429s and shared IPs, on simulated time.

One or more :class:`~peer.core.frontier.frontier.Frontier` instances (peers) are driven the
way peer/core/crawl/core.py's core and its driver peer/engine/crawler.py drive one: sleep until
``next_ready_at`` or the next response, ``pop_ready``, the request reaches the
server at its start (which logs it), the response comes ``latency`` later,
``done``. A 429 is answered as
the engine does: ``backoff``, ``requeue`` with the retry wait, ``done``. DNS is
modelled by ``set_host_ip``: at push time (``resolve_at_push``, the engine
asking its DNS cache) or right after the host's first start.

The oracle is the server's own request log, as in the end-to-end tests:
:func:`max_in_window` over it checks the ceilings, :func:`rate_between` the
rate a site saw. Pure Python, no clock: tests/e2e/test_politeness.py and
scripts/sim_polite.py run the same code.

The PID's own test host is here too (its last section): one host answered
by a closed loop of connections, slowing and speeding up in phases
(:func:`simulate_pid_host`, tests/core/test_pid.py).
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from peer.core.frontier.frontier import Frontier, Job, Outcome, Politeness, ceiling
from peer.core.politeness.pid import PID

Latency = Callable[[float], float]


def steps(*phases: tuple[float, float]) -> Latency:
    """Latency by phase: ``(from_t, seconds), ...`` in time order."""
    starts = [t for t, _ in phases]
    values = [v for _, v in phases]

    def latency(t: float) -> float:
        return values[max(0, bisect.bisect_right(starts, t) - 1)]

    return latency


@dataclass
class Site:
    """One host: its IP, its latency, when it answers 429, and its URLs."""

    host: str
    ip: str = ""
    latency: Latency = field(default=lambda t: 0.05)
    # (from, to) intervals of simulated time in which every request gets 429.
    busy: Sequence[tuple[float, float]] = ()
    retry_after: float | None = None
    urls: int = 100_000
    peer: int = 0


@dataclass(frozen=True, slots=True)
class Hit:
    """One request as the server logged it."""

    t: float
    host: str
    ip: str
    peer: int
    status: int


@dataclass
class Run:
    log: list[Hit]
    peers: list[Frontier]

    def times(self, host: str | None = None, ip: str | None = None) -> list[float]:
        return [h.t for h in self.log
                if (host is None or h.host == host) and (ip is None or h.ip == ip)]


def simulate(sites: Sequence[Site], pol: Politeness, until: float, *, peers: int = 1,
             shares: dict[tuple[int, str], float] | None = None,
             resolve_at_push: bool = True, retry_wait: float = 1.0) -> Run:
    """Run the sites against ``peers`` frontiers until simulated time ``until``."""
    fronts = [Frontier(pol) for _ in range(peers)]
    by_host = {s.host: s for s in sites}
    for s in sites:
        f = fronts[s.peer]
        for i in range(s.urls):
            f.push(f"http://{s.host}/{i}", s.host, 0, 0.0)
        if resolve_at_push and s.ip:
            f.set_host_ip(s.host, s.ip, 0.0)
    for (p, ip), share in (shares or {}).items():
        fronts[p].set_ip_share(ip, share, 0.0)
    resolved = {(s.peer, s.host) for s in sites if resolve_at_push}
    log: list[Hit] = []
    events: list[tuple[float, int, int, Job, int]] = []  # (t, seq, peer, job, status)
    seq = 0
    clock = 0.0
    # Bounded: every step starts or ends a request, or rolls a window.
    for _ in range(50_000_000):
        t_ready, p_ready = math.inf, -1
        for p, f in enumerate(fronts):
            t = f.next_ready_at()
            if t is not None and t < t_ready:
                t_ready, p_ready = t, p
        t_done = events[0][0] if events else math.inf
        # next_ready_at may lie in the past ("now"): the clock never goes back.
        t = clock = max(clock, min(t_ready, t_done))
        if t >= until:
            break
        if t_done <= t_ready:
            t, _, p, job, status = heapq.heappop(events)
            f = fronts[p]
            if status == 429:
                s = by_host[job.host]
                f.backoff(job.host, t, s.retry_after)
                wait = retry_wait if s.retry_after is None else max(retry_wait, s.retry_after)
                f.requeue(job, t, t + wait)
            f.done(job.host, t, Outcome.FETCHED)
            continue
        f = fronts[p_ready]
        ready = f.pop_ready(t)
        if ready is None:  # a window rolled at t and moved the host later
            f.roll_windows(t)
            continue
        job = ready
        s = by_host[job.host]
        status = 429 if any(a <= t < b for a, b in s.busy) else 200
        log.append(Hit(t, s.host, s.ip, p_ready, status))
        if (p_ready, s.host) not in resolved and s.ip:
            f.set_host_ip(s.host, s.ip, t)  # DNS answered during the first fetch
            resolved.add((p_ready, s.host))
        seq += 1
        heapq.heappush(events, (t + s.latency(t), seq, p_ready, job, status))
    else:
        raise RuntimeError("simulation did not reach its end time")
    return Run(log, fronts)


def max_in_window(times: Sequence[float], window: float) -> int:
    """The most requests in any ``window`` seconds [a, a + window), sliding."""
    ts = sorted(times)
    best = j = 0
    for i, t in enumerate(ts):
        while ts[j] + window <= t:  # the frontier's own test: a start at s + W is outside [s, s + W)
            j += 1
        best = max(best, i - j + 1)
    return best


def rate_between(times: Sequence[float], a: float, b: float) -> float:
    """Requests per minute in [a, b)."""
    ts = sorted(times)
    n = bisect.bisect_left(ts, b) - bisect.bisect_left(ts, a)
    return n * 60.0 / (b - a)


def per_window(times: Sequence[float], window: float, until: float) -> list[int]:
    counts = [0] * int(math.ceil(until / window))
    for t in times:
        counts[int(t // window)] += 1
    return counts


def recovery_windows(times: Sequence[float], window: float, step_at: float, until: float,
                     target: float, band: float = 0.1) -> int | None:
    """Windows after ``step_at`` from which every window is within ``band`` of ``target``."""
    counts = per_window(times, window, until)
    first = int(math.ceil(step_at / window))
    last = int(until // window)  # the last complete window is last - 1
    for i in range(first, last):
        if all(abs(c - target) <= band * target for c in counts[i:last]):
            return i - first
    return None


def ceilings(rate: float) -> dict[float, int]:
    """The limit of rule 7 for each window, from the formula itself."""
    return {w: ceiling(rate, w) for w in (1.0, 5.0)}


# ---------------------------------------------------------------------------
# The PID post's host: one host, a closed loop of connections (tests/core/test_pid.py)
#
# CONNECTIONS connections each wait the delay after their response before the
# next request, so a connection's period is delay + response time; the
# connections stay evenly interleaved (tests/core/test_pid.py says why this model
# and why 7). The host answers in FAST seconds a page, then SLOW, then FAST
# again, PHASE windows each (the PID post's §2). tests/core/test_pid.py and
# scripts/sim_polite.py run it.

PID_WINDOW = 60.0  # seconds
CONNECTIONS = 7
FAST, SLOW = 0.5, 9.5  # seconds per page (seed §2)
PHASE = 30  # windows per phase: fast, slow, fast

#: (window, pages completed in it, the delay after it), per window.
Trace = list[tuple[int, int, float]]


def host_response_time(t: float) -> float:
    """The PID post's host: 0.5 s a page, then 9.5 s, then 0.5 s again."""
    return SLOW if PHASE <= t // PID_WINDOW < 2 * PHASE else FAST


def simulate_pid_host(
    control: PID | float,
    response_time: Callable[[float], float],
    windows: int,
    connections: int = CONNECTIONS,
    window: float = PID_WINDOW,
) -> Trace:
    """Run the closed-loop host model; return (window, n, delay after it) per window.

    ``control`` is a PID (updated at every window boundary) or a fixed delay.
    Deterministic: no clock, no randomness.
    """
    delay = control.delay if isinstance(control, PID) else float(control)
    last_response = 0.0  # nothing seen yet: the first requests go out delay/C apart
    next_start = 0.0
    in_flight: list[tuple[float, float]] = []  # (completion time, response time)
    trace: Trace = []
    for w in range(windows):
        end = (w + 1) * window
        n = 0
        while True:
            done = in_flight[0][0] if in_flight else math.inf
            if min(done, next_start) >= end:
                break
            if done <= next_start:
                _, last_response = heapq.heappop(in_flight)
                n += 1
            else:
                r = response_time(next_start)
                heapq.heappush(in_flight, (next_start + r, r))
                next_start += (delay + last_response) / connections
        if isinstance(control, PID):
            delay = control.update(n)
        trace.append((w, n, delay))
    return trace
