"""Per-IP budgets: hosts that share an IP address are paced together, like one host.

Many hosts on one server (virtual hosts, a shared hosting provider) would
each get a host's budget; BUbiNG, Nutch and StormCrawler pace them per IP
as well. An :class:`IpBudget` is the record of one IP address; the
scheduler (peer/core/frontier/scheduler.py) keeps them, links each host's record to
its IP's (peer/core/frontier/hoststate.py) and orders both levels. The rule keeps
the frontier's number:

8. Per IP (BUbiNG, Nutch, StormCrawler): hosts whose IP address is known
   (:meth:`Frontier.set_host_ip`) are grouped by it, and the group is paced like one
   host at ``ip_rate`` x share pages per minute (share: this peer's part of
   the cluster-wide budget, :meth:`Frontier.set_ip_share`), with the same ceiling on
   that rate, at most ``ip_concurrency`` x share (at least 1) fetches in
   flight. A host whose IP is not known yet is paced per host only: its first
   fetch, which resolves it, is not counted against the IP's budget before it
   starts (it is counted after, when the engine reports the IP).
   Scheduling is two-level (BUbiNG's workbench): the global ready heap holds
   hosts without an IP and IP entries; each IP entry holds a heap of its ready
   hosts and sits in the global heap at max(its own gate, its earliest host).
   An IP entry is forgotten once no host refers to it and its own delay and
   ceiling window have passed (frontier rule 6).
"""

from __future__ import annotations

import math
from array import array
from typing import TYPE_CHECKING

from peer.core.config.cluster import PolitenessConfig
from peer.core.frontier.hoststate import NEG_INF
from peer.core.frontier.pacing import CEILING_WINDOWS, HORIZON, ceiling, new_ring, ring_times

if TYPE_CHECKING:
    from peer.core.frontier.hoststate import HostState

__all__ = ["MIN_IP_SHARE", "IpBudget", "clamp_share", "is_share"]

#: set_ip_share clamps into [MIN_IP_SHARE, 1]: the share is computed from
#: gossiped counts, remote data that must not park an IP for good.
MIN_IP_SHARE = 0.001

_NO_CAP = 1 << 62


def is_share(fraction: object) -> bool:
    """Whether a share from the gossip is a finite number (anything else is ignored)."""
    return isinstance(fraction, (int, float)) and math.isfinite(fraction)


def clamp_share(fraction: float) -> float:
    """A share clamped into [MIN_IP_SHARE, 1]."""
    return min(max(float(fraction), MIN_IP_SHARE), 1.0)


class IpBudget:
    """An IP address shared by hosts (rule 8): a budget paced like one host."""

    __slots__ = (
        "addr", "share", "delay", "cap", "limits", "starts", "spos", "last_start",
        "in_flight", "nref", "heap", "rguard", "rseq", "rkey", "tseq", "tkey",
    )

    def __init__(self, addr: str) -> None:
        self.addr = addr
        self.share = 1.0
        self.delay = 0.0
        self.cap = _NO_CAP
        self.limits: tuple[tuple[float, int], ...] = ()
        self.starts: array[float] | None = None
        self.spos = 0
        self.last_start = NEG_INF
        self.in_flight = 0
        self.nref = 0  # hosts whose state is kept and that resolve here
        # (ready_at, seq, host) of its hosts with queued work and a free slot.
        self.heap: list[tuple[float, int, HostState]] = []
        self.rguard = False  # its place in the frontier's heap was set by its ceiling
        self.rseq = 0  # seq of its live entry in the frontier's ready heap, 0 = none
        self.rkey = 0.0
        self.tseq = 0  # seq of its live timer-heap entry, 0 = none
        self.tkey = 0.0

    def configure(self, pol: PolitenessConfig, share: float, now: float) -> None:
        """Derive the IP's delay, concurrency cap and ceiling from its share (rule 8)."""
        share = clamp_share(share)
        self.share = share
        if pol.ip_concurrency > 0:
            self.cap = max(1, math.floor(pol.ip_concurrency * share + 1e-9))
        if pol.ip_rate > 0:
            rate = pol.ip_rate * share
            self.delay = 60.0 / rate
            self.limits = tuple((w, ceiling(rate, w)) for w in CEILING_WINDOWS)
            n = max(k for _, k in self.limits)
            if self.starts is None or len(self.starts) != n:
                self.starts = new_ring(n, ring_times(self.starts, self.spos, now - HORIZON))
                self.spos = 0

    def add_starts(self, times: list[float], now: float) -> None:
        """Count a host's recent starts against the IP (a host newly resolved here, seeded starts)."""
        if not times:
            return
        if self.starts is not None:
            old = ring_times(self.starts, self.spos, now - HORIZON)
            self.starts = new_ring(len(self.starts), old + times)
            self.spos = 0
        newest = max(times)
        if newest > self.last_start:
            self.last_start = newest

    def forget_at(self) -> float:
        """When an unreferenced entry may go: its delay and its ceiling's windows have passed."""
        return self.last_start + max(self.delay, HORIZON)
