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

   Per registered domain (``politeness.group = "domain"``): the same
   budget, keyed by the host's registered domain (peer/core/urls/domains.py)
   instead of its IP, and known when the host's record is made (no DNS), so
   even a host's first fetch is counted. The group's whole setpoint is the
   smallest ``rate`` and ``host_concurrency`` among the profiles its hosts
   are paced by (``[politeness]`` or their ``[[site]]`` blocks; a rate of 0,
   no limit, is left out), kept as a count of hosts a profile (``paces``),
   so it follows hosts that come, go, or change profile live. This peer's
   part is its share of it, as an IP's. A host is in one group: a domain's
   or an IP's, never both (the config refuses ``group = "domain"`` with
   ``ip_rate`` or ``ip_concurrency``).
"""

from __future__ import annotations

import math

from peer.core.config.sections import PolitenessConfig
from peer.core.frontier.hoststate import IpBudget
from peer.core.politeness.ceiling import CEILING_WINDOWS, HORIZON, ceiling, new_ring, ring_times
from peer.core.politeness.profile import Pace
from peer.core.urls.domains import registered_domain
from peer.core.urls.normalize import hostname

__all__ = ["MIN_IP_SHARE", "add_starts", "budget", "clamp_share", "configure", "enter_domain", "forget_at",
           "is_share", "join", "leave"]

#: set_ip_share clamps into [MIN_IP_SHARE, 1]: the share is computed from
#: gossiped counts, remote data that must not park an IP for good.
MIN_IP_SHARE = 0.001


def is_share(fraction: object) -> bool:
    """Whether a share from the gossip is a finite number (anything else is ignored)."""
    return isinstance(fraction, (int, float)) and math.isfinite(fraction)


def clamp_share(fraction: float) -> float:
    """A share clamped into [MIN_IP_SHARE, 1]."""
    return min(max(float(fraction), MIN_IP_SHARE), 1.0)


def budget(ip: IpBudget, pol: PolitenessConfig) -> tuple[float, int]:
    """The group's whole setpoint, cluster-wide: (pages per minute, fetches in flight), 0 = none.

    An IP's: ``ip_rate`` and ``ip_concurrency``. A registered domain's: the
    smallest rate (0, no limit, left out) and host_concurrency among its hosts' profiles.
    """
    if ip.paces is None:
        return pol.ip_rate, pol.ip_concurrency
    rate = min((p.pol.rate for p in ip.paces if p.pol.rate > 0), default=0.0)
    return rate, min((p.pol.host_concurrency for p in ip.paces), default=0)


def configure(ip: IpBudget, pol: PolitenessConfig, share: float, now: float) -> None:
    """Derive the group's delay, concurrency cap and ceiling from its budget and share (rule 8)."""
    share = clamp_share(share)
    ip.share = share
    whole, conc = budget(ip, pol)
    if conc > 0:
        ip.cap = max(1, math.floor(conc * share + 1e-9))
    if whole > 0:
        rate = whole * share
        ip.delay = 60.0 / rate
        ip.limits = tuple((w, ceiling(rate, w)) for w in CEILING_WINDOWS)
        n = max(k for _, k in ip.limits)
        if ip.starts is None or len(ip.starts) != n:
            ip.starts = new_ring(n, ring_times(ip.starts, ip.spos, now - HORIZON))
            ip.spos = 0
    elif ip.paces is not None:  # a domain of unlimited hosts only: no pace of its own
        ip.delay = 0.0
        ip.limits = ()
        ip.starts = None
        ip.spos = 0


def enter_domain(groups: dict[str, IpBudget], host: str, pace: Pace, pol: PolitenessConfig, share: float,
                 now: float) -> IpBudget:
    """The group of ``host``'s registered domain in ``groups`` (made, at ``share``, if new),
    with the host, paced by ``pace``, counted in it and the group's pace derived anew."""
    name = registered_domain(hostname(host))
    group = groups.get(name)
    if group is None:
        group = groups[name] = IpBudget(name)
        group.paces = {}
        group.share = share
    group.nref += 1
    join(group, pace)
    configure(group, pol, group.share, now)
    return group


def join(group: IpBudget, pace: Pace) -> None:
    """A host paced by ``pace`` is in the domain's group from now on (call :func:`configure` after)."""
    assert group.paces is not None
    group.paces[pace] = group.paces.get(pace, 0) + 1


def leave(group: IpBudget, pace: Pace) -> None:
    """A host paced by ``pace`` left the domain's group (forgotten, or paced anew)."""
    assert group.paces is not None
    n = group.paces.get(pace, 0) - 1
    if n > 0:
        group.paces[pace] = n
    else:
        group.paces.pop(pace, None)


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
