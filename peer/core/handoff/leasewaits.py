"""Moved hosts waiting for their lease: how many, and for how long (pure).

After a ring change a host whose owner changed waits until a majority of
the ring vouches with rings that all give it to its new owner, about
``grace`` after the change (``ring.membership.hostgate``); every other host
goes on. The crawl core asks the ring before each request
(``CrawlCore.admit``) and requeues a host that must wait; this part counts
those waits once each, from the first refusal to the first request let
through, so an operator sees them (``lease.moved_*`` in ``ring status
--json``'s limits and in /metrics) instead of a ring that looks stalled.
"""

from __future__ import annotations

__all__ = ["LeaseWaits"]

#: Hosts tracked at once; beyond, a new wait is counted but not timed (a ring change
#: moves about 1/N of a peer's hosts, and the waits end within a grace).
MAX_WAITING = 100_000


class LeaseWaits:
    """Hosts refused by the lease now, and the waits that ended (mutable)."""

    __slots__ = ("_since", "waits", "longest", "total", "untimed")

    def __init__(self) -> None:
        self._since: dict[str, float] = {}  # host -> its first refusal of this wait
        self.waits = 0  # waits begun
        self.longest = 0.0  # the longest that ended, in seconds
        self.total = 0.0  # seconds waited, over the waits that ended
        self.untimed = 0  # waits begun past MAX_WAITING

    def refused(self, host: str, now: float) -> None:
        """The lease refused a request to ``host`` at ``now``."""
        if host in self._since:
            return
        self.waits += 1
        if len(self._since) >= MAX_WAITING:
            self.untimed += 1
            return
        self._since[host] = now

    def let(self, host: str, now: float) -> None:
        """The lease let a request to ``host`` through at ``now``: its wait, if any, is over."""
        if not self._since:
            return
        began = self._since.pop(host, None)
        if began is not None:
            waited = now - began
            self.total += waited
            self.longest = max(self.longest, waited)

    @property
    def waiting(self) -> int:
        """Hosts waiting for their lease now."""
        return len(self._since)

    def figures(self) -> dict[str, int]:
        """Non-zero counts for the crawl's limits figures (whole milliseconds for times)."""
        out = {"lease.moved_waits": self.waits, "lease.moved_waiting": self.waiting,
               "lease.moved_wait_max_ms": round(self.longest * 1000),
               "lease.moved_wait_total_ms": round(self.total * 1000),
               "lease.moved_untimed": self.untimed}
        return {k: v for k, v in out.items() if v}
