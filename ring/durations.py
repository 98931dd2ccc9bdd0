"""A span of time as a person reads it: one format for every surface that shows one (pure).

The progress line (its elapsed time, an ETA, a held host's retry), the
end-of-run summary, the merge's summary, the report, ``python -m ring
status`` and the dashboard all show how long something took or will take.
They show it one way, :func:`duration`: short, fixed in form, and read the
same wherever it appears. Machine formats stay numbers: ``stats.json``'s
``elapsed_seconds``, the metrics' ``uptime_seconds``, ``status --json``.

It lives at the top of ``ring`` for the reason ``ring.vocabulary`` does:
``ring``'s tools show durations too, and ``ring`` imports nothing of
``peer``; ``peer`` imports it.

The form, by size (rounded to the last unit shown; never negative):

- under 10 s, tenths: ``0.4s``, ``9.5s`` (a short crawl or merge still says something)
- under a minute, seconds: ``45s``
- under an hour, minutes and seconds: ``12m05s``
- under a day, hours and minutes: ``3h02m``
- then days and hours: ``2d03h`` (a continuous crawl's uptime)
"""

from __future__ import annotations

import math

__all__ = ["duration"]


def duration(seconds: float) -> str:
    """``seconds`` for a person: ``0.4s``, ``45s``, ``12m05s``, ``3h02m``, ``2d03h``."""
    if math.isnan(seconds):
        return "?"
    if math.isinf(seconds):
        return "forever" if seconds > 0 else "0.0s"
    seconds = max(0.0, seconds)
    tenths = round(seconds * 10)
    if tenths < 100:
        return f"{tenths / 10:.1f}s"
    s = int(seconds + 0.5)
    if s < 60:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h}h{m:02d}m"
    d, h = divmod(h, 24)
    return f"{d}d{h:02d}h"
