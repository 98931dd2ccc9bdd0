"""What the rolling-restart tests judge a ring by: the web server's log between a stop and a return.

Shared by the two tests of tests/e2e/test_rolling_restart.py: a ring of today's
peers, and one with two peers of the previous release.
"""

from __future__ import annotations

from collections import defaultdict

import trio

__all__ = ["address_of", "gaps_while_away", "wait_until"]


def gaps_while_away(farm, hosts: set[str], start: float, end: float) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """The longest time each of ``hosts`` went without a request within [start, end] (between two
    requests of it: a host whose crawl is over has none to wait for)."""
    times: dict[str, list[float]] = defaultdict(list)
    for e in farm.log:
        if e.host in hosts:
            times[e.host].append(e.t)
    worst: dict[str, float] = {}
    for host, ts in times.items():
        ts.sort()
        for a, b in zip(ts, ts[1:]):
            if b > start and a < end:
                worst[host] = max(worst.get(host, 0.0), min(b, end) - max(a, start))
    return worst


async def wait_until(cond, limit: float | None = None) -> None:  # type: ignore[no-untyped-def]
    """Until ``cond()`` holds, or ``limit`` seconds passed."""
    with trio.move_on_after(limit if limit is not None else 1e9):
        while not cond():
            await trio.sleep(0.05)


def address_of(text: str, peer: str) -> str:
    """``peer``'s address in the cluster.toml ``text``."""
    block = text.split(f'id = "{peer}"', 1)[1]
    return block.split('address = "', 1)[1].split('"', 1)[0]
