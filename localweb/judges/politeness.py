"""Judge politeness as a site owner would, from the server's request log: any 1 s and 5 s window.

A site owner does not see a crawler's per-window averages; they see their
access log. This module takes what that log holds (:class:`Request` rows:
when each request started and ended, which host it named) and returns the
figures an owner would hold a crawler to. It is pure: lists in, numbers out,
no clock, no file; :mod:`localweb.bench.web` reads the logs of nginx and
webfarm into :class:`Request` rows, and a test can hand-make them.

Rules:

- A request is counted at its **start**, as the frontier paces starts
  (nginx logs the answer's end: ``$msec - $request_time`` is its start).
- Windows are half-open, ``[t, t + w)``, and slide over *every* ``t``, not
  only over a grid: "at most N in any 5 s" is what an owner's rate limiter
  checks, and a burst across a grid line is still a burst.
- The ceiling for a host paced at ``per_s`` requests a second is
  ``ceil(1.1 x per_s x W) + 1`` in any ``W`` seconds (:func:`ceiling`): 10%
  over the setpoint, plus the one request a window boundary can add.
- Time lists passed to these functions are sorted ascending
  (:func:`starts_by_host` returns them so).
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "TOLERANCE", "TRIM", "HostsVerdict", "Request", "Totals", "ceiling", "count_in", "judge_hosts",
    "mid_rate", "recovery", "sliding_max", "starts_by_host", "total_vs_setpoints", "windows", "worst",
]

#: How far over its setpoint a host's rate may go before it is called over.
TOLERANCE = 0.10
#: The ends of a host's active span left out of its mid-crawl rate.
TRIM = 0.1


class Request(NamedTuple):
    """One request of a server's log: start and end (epoch s), address it came in on, host..."""

    start: float
    end: float
    addr: str  # the server address it reached ("" when the log does not say)
    host: str
    status: int
    target: str


# ---------------------------------------------------------------------------
# Counting in windows


def count_in(times: Sequence[float], lo: float, hi: float) -> int:
    """How many of ``times`` (sorted) fall in ``[lo, hi)``."""
    return bisect.bisect_left(times, hi) - bisect.bisect_left(times, lo)


def sliding_max(times: Sequence[float], w: float, lo: float, hi: float) -> int:
    """Most of ``times`` (sorted) in any half-open ``[t, t + w)`` inside ``[lo, hi)``."""
    ts = times[bisect.bisect_left(times, lo):bisect.bisect_left(times, hi)]
    best = j = 0
    for i, t in enumerate(ts):
        while ts[j] <= t - w:
            j += 1
        best = max(best, i - j + 1)
    return best


def worst(times: Sequence[float], w: float) -> int:
    """Most of ``times`` (sorted) in any half-open ``w``-second interval."""
    return sliding_max(list(times), w, -math.inf, math.inf)


def windows(times: Sequence[float], lo: float, hi: float, w: float) -> list[int]:
    """Requests in each whole window ``[lo + k w, lo + (k + 1) w)`` inside ``[lo, hi)``."""
    n = int((hi - lo) // w)
    counts = [0] * n
    for t in times:
        k = int((t - lo) // w)
        if lo <= t and 0 <= k < n:
            counts[k] += 1
    return counts


# ---------------------------------------------------------------------------
# Rates and ceilings


def ceiling(per_s: float, w: float) -> int:
    """Most requests allowed in any ``w`` s: ceil(1.1 x per_s x w) + 1.

    Rounded to 1e-9 first: 1.1 x 10 x 5 is 55.000000000000007 in binary.
    """
    return math.ceil(round((1 + TOLERANCE) * per_s * w, 9)) + 1


def mid_rate(times: Sequence[float], trim: float = TRIM) -> float | None:
    """Requests per second between a host's first and last request, the ends trimmed.

    None when the span is under 5 s: too short to call a rate.
    """
    if len(times) < 2:
        return None
    span = times[-1] - times[0]
    if span < 5.0:
        return None
    lo, hi = times[0] + trim * span, times[-1] - trim * span
    return sum(1 for t in times if lo <= t < hi) / (hi - lo)


def recovery(counts: Sequence[int], target: float) -> tuple[int | None, int | None]:
    """(first window within +-10% of ``target``, first window from which all are), 1-based."""
    inside = [abs(c - target) <= TOLERANCE * target for c in counts]
    first = next((k + 1 for k, ok in enumerate(inside) if ok), None)
    settled = None
    for k in range(len(inside), 0, -1):
        if not inside[k - 1]:
            break
        settled = k
    return first, settled


# ---------------------------------------------------------------------------
# Verdicts over a whole log


def starts_by_host(reqs: Iterable[Request], lo: float = -math.inf, hi: float = math.inf,
                   hosts: Iterable[str] | None = None) -> dict[str, list[float]]:
    """Each host's request starts in ``[lo, hi)``, sorted (only ``hosts``, when given)."""
    keep = set(hosts) if hosts is not None else None
    out: dict[str, list[float]] = defaultdict(list)
    for r in reqs:
        if lo <= r.start < hi and (keep is None or r.host in keep):
            out[r.host].append(r.start)
    for ts in out.values():
        ts.sort()
    return dict(out)


@dataclass(frozen=True, slots=True)
class HostsVerdict:
    """Every host of a log judged against the ceilings of one setpoint."""

    hosts: int  # hosts in the log
    c1: int  # ceiling in any 1 s
    c5: int  # ceiling in any 5 s
    w1: int  # the worst host's most requests in any 1 s
    w5: int  # ... in any 5 s
    top: str  # the host with the most in any 1 s ("" for an empty log)
    over: int  # hosts over either ceiling
    median_rate: float | None  # the median host's mid-crawl rate, req/s (None: no host long enough)


def judge_hosts(reqs: Iterable[Request], per_s: float) -> HostsVerdict:
    """Judge every host of ``reqs`` against a setpoint of ``per_s`` requests a second."""
    by = starts_by_host(reqs)
    c1, c5 = ceiling(per_s, 1), ceiling(per_s, 5)
    w1 = {h: worst(ts, 1) for h, ts in by.items()}
    w5 = {h: worst(ts, 5) for h, ts in by.items()}
    rates = [r for r in (mid_rate(ts) for ts in by.values()) if r is not None]
    top1 = max(w1, key=w1.__getitem__, default="")
    return HostsVerdict(hosts=len(by), c1=c1, c5=c5, w1=max(w1.values(), default=0),
                        w5=max(w5.values(), default=0), top=top1,
                        over=sum(1 for h in by if w1[h] > c1 or w5[h] > c5),
                        median_rate=statistics.median(rates) if rates else None)


@dataclass(frozen=True, slots=True)
class Totals:
    """All hosts' requests against the sum of the setpoints of the hosts that had work."""

    ratio: float  # requests / requests owed, over the whole span
    median: float  # the median 5 s window's ratio
    max: float  # the worst 5 s window's ratio
    rate: float  # requests a second
    owed: float  # the setpoints of the hosts with work, summed, a second


def total_vs_setpoints(reqs: Sequence[Request], per_s: float, lo: float, hi: float) -> Totals:
    """Requests in ``[lo, hi)`` against the sum of setpoints of the hosts with work, 5 s windows.

    A host has work from its first to its last request (as the server saw it).
    """
    by = starts_by_host(reqs)
    spans = [(ts[0], ts[-1]) for ts in by.values()]
    ratios, got, owed = [], 0, 0.0
    t = lo
    while t + 5 <= hi:
        n = sum(1 for ts in by.values() for x in ts if t <= x < t + 5)
        active = sum(max(0.0, min(b, t + 5) - max(a, t)) for a, b in spans)  # host-seconds
        if active > 0:
            ratios.append(n / (active * per_s))
        got += n
        owed += active * per_s
        t += 5
    return Totals(ratio=got / owed if owed else 0.0, median=statistics.median(ratios) if ratios else 0.0,
                  max=max(ratios, default=0.0), rate=got / (hi - lo) if hi > lo else 0.0,
                  owed=owed / (hi - lo) if hi > lo else 0.0)
