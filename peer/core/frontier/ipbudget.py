"""Per-IP budgets: hosts that share an IP address are paced together, like one host.

Many hosts on one server (virtual hosts, a shared hosting provider) would
each get a host's budget; BUbiNG, Nutch and StormCrawler pace them per IP
as well. An ``IpBudget`` is the record of one IP address, kept beside the
hosts' records it links (peer/core/frontier/hoststate.py); this module holds
its rules, as functions on it; the scheduler (peer/core/frontier/scheduler.py)
keeps the records and orders both levels. The rule keeps the frontier's
number:

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

from peer.core.config.sections import PolitenessConfig
from peer.core.frontier.hoststate import IpBudget
from peer.core.politeness.ceiling import CEILING_WINDOWS, HORIZON, ceiling, new_ring, ring_times

__all__ = ["MIN_IP_SHARE", "add_starts", "clamp_share", "configure", "forget_at", "is_share"]

#: set_ip_share clamps into [MIN_IP_SHARE, 1]: the share is computed from
#: gossiped counts, remote data that must not park an IP for good.
MIN_IP_SHARE = 0.001


def is_share(fraction: object) -> bool:
    """Whether a share from the gossip is a finite number (anything else is ignored)."""
    return isinstance(fraction, (int, float)) and math.isfinite(fraction)


def clamp_share(fraction: float) -> float:
    """A share clamped into [MIN_IP_SHARE, 1]."""
    return min(max(float(fraction), MIN_IP_SHARE), 1.0)


def configure(ip: IpBudget, pol: PolitenessConfig, share: float, now: float) -> None:
    """Derive the IP's delay, concurrency cap and ceiling from its share (rule 8)."""
    share = clamp_share(share)
    ip.share = share
    if pol.ip_concurrency > 0:
        ip.cap = max(1, math.floor(pol.ip_concurrency * share + 1e-9))
    if pol.ip_rate > 0:
        rate = pol.ip_rate * share
        ip.delay = 60.0 / rate
        ip.limits = tuple((w, ceiling(rate, w)) for w in CEILING_WINDOWS)
        n = max(k for _, k in ip.limits)
        if ip.starts is None or len(ip.starts) != n:
            ip.starts = new_ring(n, ring_times(ip.starts, ip.spos, now - HORIZON))
            ip.spos = 0


def add_starts(ip: IpBudget, times: list[float], now: float) -> None:
    """Count a host's recent starts against the IP (a host newly resolved here, seeded starts)."""
    if not times:
        return
    if ip.starts is not None:
        old = ring_times(ip.starts, ip.spos, now - HORIZON)
        ip.starts = new_ring(len(ip.starts), old + times)
        ip.spos = 0
    newest = max(times)
    if newest > ip.last_start:
        ip.last_start = newest


def forget_at(ip: IpBudget) -> float:
    """When an unreferenced entry may go: its delay and its ceiling's windows have passed."""
    return ip.last_start + max(ip.delay, HORIZON)
