"""The ceiling's numbers and its rings of start times (frontier rule 7, peer/core/frontier/pacing.py).

Whatever the PID does, a host (or an IP, rule 8) gets at most
``ceiling(rate, W)`` request starts in any W-second window, for W in
``CEILING_WINDOWS``. Starts are kept in a ring of the newest start times:
``array('d')`` (8 bytes a start, not a list's 32), ``pos`` the slot of the
oldest, which the next start overwrites; the k-th newest start + W is when a
window of W seconds holds fewer than k. Below the frontier: a host's
record (peer/core/frontier/hoststate.py), its pace and its IP's budget all
count starts this way.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable

__all__ = ["CEILING_FACTOR", "CEILING_WINDOWS", "HORIZON", "NEG_INF", "ceiling", "new_ring", "ring_gate",
           "ring_times"]

#: "Never": a time before every other (no start yet, no hold).
NEG_INF = float("-inf")

#: At most ceil(CEILING_FACTOR x rate/60 x W) + 1 starts in any W seconds.
#: 10 % over the setpoint plus one start: one start is the counting
#: resolution of a window (a window can hold both ends of a period), 10 % the
#: PID's room to make up for time lost to holds.
CEILING_FACTOR = 1.1
CEILING_WINDOWS = (1.0, 5.0)
#: The ceiling's longest window: starts older than this no longer count.
HORIZON = max(CEILING_WINDOWS)


def ceiling(rate: float, window: float) -> int:
    """The most request starts allowed in any ``window`` seconds at ``rate`` pages/min."""
    # round(): 1.1 * 10 * 5 is 55.00000000000001 in binary floating point.
    return math.ceil(round(CEILING_FACTOR * rate / 60.0 * window, 9)) + 1


def new_ring(n: int, times: Iterable[float] = ()) -> array[float]:
    """A ring of ``n`` slots holding the newest of ``times``."""
    vals = sorted(times)[-n:]
    return array("d", [NEG_INF] * (n - len(vals)) + vals)


def ring_times(buf: array[float] | None, pos: int, since: float) -> list[float]:
    """The ring's start times after ``since``, oldest first."""
    if buf is None:
        return []
    return [t for t in (*buf[pos:], *buf[:pos]) if t > since]


def ring_gate(buf: array[float] | None, pos: int, limits: tuple[tuple[float, int], ...]) -> float:
    """When one more start keeps every window of ``limits`` under its count."""
    if buf is None:
        return NEG_INF
    n = len(buf)
    t = NEG_INF
    for w, k in limits:
        s = buf[(pos - k) % n] + w
        if s > t:
            t = s
    return t
