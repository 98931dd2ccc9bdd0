"""The polite scheduler over hosts: when each host may start, and which one goes next.

A part of the frontier (peer/core/frontier/frontier.py) that holds no URL: it
keeps a record a host (peer/core/frontier/hoststate.py) and an IP budget an
address (peer/core/frontier/ipbudget.py), asks the pacing rules
(peer/core/frontier/pacing.py) when each may start, and orders them in two
heaps: the ready heap (when a host, or an IP, may start next) and the timer
heap (a host's PID window end, or when an idle host or IP is forgotten).

The frontier owns the queues and reaches this part through a small
interface: :meth:`HostScheduler.keep` hands it a host's record, whose queue
fields are the frontier's alone; :meth:`~HostScheduler.filled`,
:meth:`~HostScheduler.requeued` and :meth:`~HostScheduler.emptied` tell when a
queue gains or loses work; :meth:`~HostScheduler.next_host` hands out the host
whose turn it is, :meth:`~HostScheduler.start` records its start and
:meth:`~HostScheduler.end` its end. This part never reads a queue: "has work"
is the record's ``work`` flag, which only those calls set. The rest of its
methods are the host-level calls (pace, IPs, read-outs), which the frontier
passes on for its callers. The rules keep the frontier's numbers:

2. Among ready hosts the one ready earliest goes first; "ready" counts from
   the moment the host had work and was free, so a host that has waited longer
   is not overtaken by one that just received a URL.
6. Memory: a host with no queued work and nothing in flight is forgotten once
   its delay, a fresh host's delay, any hold and its ceiling's longest window
   have passed (and its last backlogged window has been sampled), so a
   re-created host can never start sooner than the forgotten one could have.
   The trade-off: its learned PID delay, its Crawl-delay floor and its IP go
   too, so a host whose URLs trickle in restarts at the nominal delay, and the
   engine re-applies Crawl-delay with :meth:`Frontier.set_min_delay` from its
   robots cache each time it starts a request for a host (O(1); the host is
   then in flight, so its last start is known), and its IP with
   :meth:`Frontier.set_host_ip`. An IP entry is forgotten likewise once no
   host refers to it and its own delay and ceiling window have passed
   (peer/core/frontier/ipbudget.py). Without this, a crawl of millions of hosts
   would keep millions of structs for nothing.
11. Live changes (``ring set`` of a rate, a clamp or a ``[[site]]`` block:
   :meth:`HostScheduler.repace`) cost O(profiles) at once, not O(hosts): the
   profiles they replace are marked, and a host paced by a marked one is
   paced anew by its current profile when it is next touched (pushed,
   handed out, ended, its window rolled), always before it starts: a longer
   delay puts it back in line, so a host slowed down never starts early.
   :meth:`HostScheduler.refresh` paces the rest anew in chunks, from the
   crawl's scheduling loop, so that a host sped up does not wait out its old
   delay. A host paced anew keeps its last start, Crawl-delay floor, backoff
   and holds (the server's pacing is not ours to change); a new rate or clamp
   gives it a fresh controller at the new start delay, its current window
   is no "too slow" sample (rule 3: its count is of both paces), and its ring
   of starts is rebuilt to the new ceiling with the starts it holds (rule 7).
   ``scripts/bench_livesettings.py`` measures both (docs/operations.md, Live settings).

Every operation is O(log hosts): heaps with lazy deletion (an entry is live
only if its sequence number is still its owner's), never a scan of hosts
but :meth:`~HostScheduler.refresh`'s bounded chunks (set_host_ip and
seed_starts also copy one ring of start times).
``now`` must not go backwards.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import TypeVar

from peer.core.config.cluster import PolitenessConfig
from peer.core.frontier import ipbudget
from peer.core.frontier.census import HostCensus, busiest_hosts, count_due, sample_delays, take_census
from peer.core.frontier.hoststate import HostState, IpBudget
from peer.core.frontier.ipbudget import clamp_share, is_share
from peer.core.frontier.pacing import (
    Outcome, PidSample, apply_backoff, count_starts, delay, gated, record_start, roll, set_floor, starts_since,
    take_back,
)
from peer.core.politeness.ceiling import HORIZON, NEG_INF, new_ring, ring_gate
from peer.core.politeness.profile import Pace
from peer.errors import PeerError

__all__ = ["HostScheduler"]

#: A heap entry's object: a host, or an IP in the global heap (rule 8).
_E = TypeVar("_E", HostState, IpBudget, HostState | IpBudget)


def _controller(pol: PolitenessConfig) -> tuple[float, float, float, float]:
    """What a host's PID is made from that ``ring set`` may change (``repace``)."""
    return pol.rate, pol.floor_delay, pol.max_delay, pol.start_delay


class HostScheduler:
    """The polite scheduler over hosts: when each may start, and which goes next.

    It keeps a record a host (peer/core/frontier/hoststate.py) and an IP budget an
    address, and orders them in its heaps; the frontier
    (:class:`~peer.core.frontier.frontier.Frontier`) holds it as a part and keeps
    the queues. ``forgotten(host)``, if set, is called when a host's record
    goes (rule 6): the owner's hook, which it may set later (a spill queue's).
    """

    __slots__ = (
        "_pol", "_pace", "_pace_for", "_paces", "_window", "_hosts", "_ips",
        "_ip_on", "_domains", "_by_domain", "_default_share", "_ready", "_timers", "_seq", "_trace", "_clock",
        "forgotten", "_in_flight", "_active", "_ceiling_holds", "_ip_ceiling_holds", "_stale", "_swaps",
    )

    def __init__(self, politeness: PolitenessConfig,
                 politeness_for: Callable[[str], PolitenessConfig] | None = None,
                 forgotten: Callable[[str], None] | None = None) -> None:
        self._pol = pol = politeness
        # Each host is paced by its own profile (HostState.pace): [politeness]'s,
        # or what ``politeness_for(host)`` answers for it ([[site]] blocks,
        # peer/core/config/sites.py), asked once when its record is made. ``window``
        # and the per-IP keys stay ``politeness``'s, one for all hosts.
        self._pace = Pace(pol)
        self._pace_for = politeness_for
        self._paces: dict[PolitenessConfig, Pace] = {pol: self._pace}
        self._window = pol.window
        self._hosts: dict[str, HostState] = {}
        self._ips: dict[str, IpBudget] = {}
        self._ip_on = pol.ip_rate > 0 or pol.ip_concurrency > 0
        # politeness.group = "domain": each host in its registered domain's
        # group from the moment its record is made (rule 8); not a live key.
        self._by_domain = pol.by_domain
        self._domains: dict[str, IpBudget] = {}
        self._default_share = 1.0
        # (ready_at, seq, host or IP): hosts without an IP, with queued work and
        # a free slot, and IPs with such a host (rule 8).
        self._ready: list[tuple[float, int, HostState | IpBudget]] = []
        # (deadline, seq, host or IP): a busy host's window end, an idle one's
        # or an unreferenced IP's forget time.
        self._timers: list[tuple[float, int, HostState | IpBudget]] = []
        self._seq = 0
        self._trace: list[PidSample] = []
        self._clock = NEG_INF
        self.forgotten = forgotten
        self._in_flight = 0
        self._active = 0
        self._ceiling_holds = 0
        self._ip_ceiling_holds = 0
        self._stale: list[HostState] = []  # hosts a live change left to pace anew (rule 11)
        # (old profile, new one) -> what pacing a host anew changes, worked out once (rule 11);
        # the profiles themselves held too, so that their ids are not reused meanwhile.
        self._swaps: dict[tuple[int, int], tuple[bool, bool, bool, Pace, Pace]] = {}

    # ------------------------------------------------------------ the frontier's interface

    def keep(self, host: str, now: float) -> HostState:
        """The host's record, kept from now on: made, or its PID window rolled up to ``now``.

        Its queue fields (``items``, ``head``, ``spilled``, ``tail``) are the
        caller's; this part never reads them.
        """
        self._clock = now
        hs = self._hosts.get(host)
        if hs is not None and hs.pace.replaced:
            self._fresh(hs, now)
        if hs is None:
            pace = self._pace_of(host)
            hs = HostState(host, now, pace.new_host_pid(), pace)
            self._hosts[host] = hs  # the caller schedules its timer
            if self._by_domain:
                self._join_domain(hs, now)
        elif hs.pid is not None and now >= hs.win_start + self._window:
            roll(hs, now, hs.pace.pol, self._trace)
            self._schedule_ready(hs, now)
            self._schedule_timer(hs)
        return hs

    def get(self, host: str) -> HostState | None:
        """The host's record if it is kept (rule 6), untouched."""
        return self._hosts.get(host)

    def records(self) -> list[HostState]:
        """Every record kept, oldest first (a copy: the caller may touch hosts meanwhile)."""
        return list(self._hosts.values())

    def filled(self, hs: HostState, now: float) -> None:
        """The host's queue, empty until now, has work (a push, an adopted store)."""
        hs.work = True
        self._schedule_ready(hs, now)
        if hs.in_flight == 0:
            self._schedule_timer(hs)  # idle -> busy: forget timer becomes window timer
        self._mark(hs, now)  # its work may now wait on its delay (rule 3)

    def requeued(self, hs: HostState, now: float, not_before: float) -> None:
        """A job went back to the front of the host's queue; the host waits until ``not_before``."""
        hs.work = True
        if not_before > hs.hold_until:
            hs.hold_until = not_before
        self._schedule_ready(hs, now)
        self._schedule_timer(hs)
        self._mark(hs, now)

    def emptied(self, hs: HostState) -> None:
        """The host's queue was taken away (it changed owner); its starts stay (rule 6)."""
        hs.work = False
        hs.rseq = 0
        if hs.ip is not None:
            self._schedule_ip(hs.ip)
        self._schedule_timer(hs)

    def next_host(self, now: float) -> HostState | None:
        """The host whose turn it is at ``now``, out of the heaps; ``None`` if none may start yet.

        The caller takes the URL off its queue and then calls :meth:`start`,
        which puts the host back in line.
        """
        self._clock = now
        if self._timers and self._timers[0][0] <= now:
            self._roll_due(now)
        ready = self._ready
        while ready:
            key, seq, obj = ready[0]
            if obj.rseq != seq:
                heapq.heappop(ready)
                continue
            if key > now:
                return None
            heapq.heappop(ready)
            obj.rseq = 0
            if isinstance(obj, IpBudget):
                ip = obj
                self._clean(ip.heap)
                if not ip.heap:  # cannot happen: every change of its hosts reschedules it
                    continue
                hkey, _, hs = heapq.heappop(ip.heap)
                if key > hkey:
                    hs.held = True  # the IP, not the host's delay, held it (rule 3)
                if ip.rguard:
                    self._ip_ceiling_holds += 1
            else:
                hs = obj
            hs.rseq = 0
            if hs.pace.replaced:
                # Paced anew before it starts (rule 11): a longer delay puts it back in line.
                self._fresh(hs, now)
                if hs.rseq and hs.rkey > now:
                    continue
                hs.rseq = 0
            if hs.rguard:
                self._ceiling_holds += 1
            return hs
        return None

    def start(self, hs: HostState, now: float, url: str, more: bool) -> None:
        """A request of the host :meth:`next_host` handed out starts, for ``url``.

        ``more``: whether URLs are left in the host's queue after this one.
        """
        if more:
            hs.waiting = True  # more URLs wait behind this one (rule 3)
        else:
            hs.work = False
            # Its queue ran dry in its first window: URLs were still
            # trickling in, so that window's n is short (rule 3).
            hs.dry = True
        if hs.in_flight == 0:
            self._active += 1
        hs.in_flight += 1
        self._in_flight += 1
        if hs.ip is not None:
            hs.ip.in_flight += 1
        record_start(hs, now, url)
        self._schedule_ready(hs, now)  # and its IP's place
        # _mark's test, here and in end() without the call when it cannot mark: hot.
        if hs.pid is not None and not hs.backlog and gated(hs, now, hs.pace.cap, self._window):
            hs.backlog = True

    def end(self, host: str, now: float, outcome: Outcome = Outcome.FETCHED, url: str | None = None) -> None:
        """A request of ``host`` ended: counted in its window unless UNREACHED or NOT_STARTED,
        whose start (the job of ``url``) is taken back if it was the latest (rules 1, 5)."""
        hs = self._hosts.get(host)
        if hs is None or hs.in_flight <= 0:
            raise PeerError(f"frontier: done({host!r}) without a request in flight")
        self._clock = now
        if hs.pace.replaced:
            self._fresh(hs, now)
        if hs.pid is not None and now >= hs.win_start + self._window:
            roll(hs, now, hs.pace.pol, self._trace)
        if (hs.in_flight == hs.pace.cap and hs.work
                and now > hs.last_start + delay(hs, now, self._window)):
            hs.held = True  # a start waited for this slot, not for the delay (rule 3)
        undo = hs.undo
        if undo is not None and undo.url == url:
            hs.undo = None
            if outcome is Outcome.NOT_STARTED:
                take_back(hs, undo)
        hs.in_flight -= 1
        self._in_flight -= 1
        if hs.in_flight == 0:
            self._active -= 1
        if hs.ip is not None:
            hs.ip.in_flight -= 1
        if outcome is not Outcome.UNREACHED and outcome is not Outcome.NOT_STARTED:
            hs.win_n += 1
        self._schedule_ready(hs, now)
        self._schedule_timer(hs)
        if hs.pid is not None and not hs.backlog and gated(hs, now, hs.pace.cap, self._window):
            hs.backlog = True

    # ------------------------------------------------------------ when the next host may start

    def next_ready_at(self) -> float | None:
        """The earliest time :meth:`next_host` could hand out a host, or ``None`` (none has work and a free slot)."""
        ready = self._ready
        while ready:
            key, seq, obj = ready[0]
            if obj.rseq == seq:
                return key
            heapq.heappop(ready)
        return None

    # ------------------------------------------------------------ a host's pace (pacing.py)

    def backoff(self, host: str, now: float, retry_after: float | None = None) -> None:
        """The host answered 429/503: double its delay now and honour Retry-After (rule 4)."""
        hs = self.keep(host, now)
        apply_backoff(hs, now, hs.pace.pol, retry_after)
        self._schedule_ready(hs, now)
        self._schedule_timer(hs)

    def set_min_delay(self, host: str, seconds: float, now: float | None = None) -> None:
        """The host's floor (robots.txt Crawl-delay), capped at ``max_crawl_delay`` (rule 1)."""
        if now is None:
            now = self._clock if self._clock > NEG_INF else 0.0
        hs = self.keep(host, now)
        set_floor(hs, seconds, now, self._pol)
        self._schedule_ready(hs, now)
        self._schedule_timer(hs)

    def recent_starts(self, host: str) -> tuple[float, ...]:
        """The host's request starts within the ceiling's longest window, oldest first (rule 7)."""
        hs = self._hosts.get(host)
        if hs is None:
            return ()
        return tuple(starts_since(hs, self._clock - HORIZON))

    def seed_starts(self, host: str, times: Iterable[float], now: float) -> None:
        """Count starts made elsewhere; those after ``now`` count as ``now``, older than the ceiling's are dropped."""
        hs = self.keep(host, now)
        vals = [min(float(t), now) for t in times if t == t and t > now - HORIZON]
        if not vals:
            return
        count_starts(hs, vals, now, hs.pace.ring_n)
        if hs.ip is not None:
            ipbudget.add_starts(hs.ip, vals, now)
        self._schedule_ready(hs, now)
        self._schedule_timer(hs)

    # ------------------------------------------------------------ per IP (ipbudget.py)

    def set_host_ip(self, host: str, ip: str, now: float) -> None:
        """The host resolves to ``ip``: from now on it shares that IP's budget (rule 8), if one is set.

        A no-op with ``group = "domain"``: a host is in one group (the config
        refuses ip_rate and ip_concurrency with it).
        """
        if not self._ip_on or self._by_domain:
            return
        hs = self.keep(host, now)
        old = hs.ip
        if old is not None and old.addr == ip:
            return
        new = self._ips.get(ip)
        if new is None:
            new = self._ips[ip] = IpBudget(ip)
            ipbudget.configure(new, self._pol, self._default_share, now)
        if old is not None:
            old.nref -= 1
            old.in_flight -= hs.in_flight
        new.nref += 1
        new.in_flight += hs.in_flight
        ipbudget.add_starts(new, starts_since(hs, now - HORIZON), now)
        hs.ip = new
        hs.rseq = 0  # its entry sat in the old heap
        self._schedule_ready(hs, now)
        self._schedule_timer(hs)
        if old is not None:
            self._schedule_ip(old)
            if old.nref == 0:
                self._schedule_timer(old)

    def set_ip_share(self, ip: str, fraction: float, now: float) -> None:
        """This peer's part of ``ip``'s cluster-wide budget, clamped into [MIN_IP_SHARE, 1]; else ignored."""
        entry = self._ips.get(ip)
        if entry is None or not is_share(fraction):
            return
        self._clock = now
        entry.pinned = True
        ipbudget.configure(entry, self._pol, fraction, now)
        self._schedule_ip(entry)

    def set_default_ip_share(self, fraction: float) -> None:
        """The share of IPs first seen from now on (1/(number of peers), BUbiNG's rule)."""
        if is_share(fraction):
            self._default_share = clamp_share(fraction)

    def set_ring_ip_share(self, fraction: float, now: float) -> None:
        """This peer's ring share: the default's, and every known IP's not set by ``set_ip_share``."""
        if not is_share(fraction):
            return
        self._default_share = share = clamp_share(fraction)
        self._clock = now
        # A registered domain's group likewise (rule 8): the ring places its
        # hosts by name, so this peer owns about its ring share of them.
        for entry in (*self._ips.values(), *self._domains.values()):
            if not entry.pinned and entry.share != share:
                ipbudget.configure(entry, self._pol, share, now)
                self._schedule_ip(entry)

    # ------------------------------------------------------------ a live change of pace

    def repace(self, politeness: PolitenessConfig, politeness_for: Callable[[str], PolitenessConfig] | None,
               now: float) -> int:
        """New profiles for every host (a live change: ``ring set``, rule 11); how many hosts
        are to be looked at again (:meth:`refresh`)."""
        for pace in self._paces.values():
            pace.replaced = True
        self._pol = politeness
        self._pace = Pace(politeness)
        self._pace_for = politeness_for
        self._paces = {politeness: self._pace}
        self._stale = list(self._hosts.values())
        self._swaps = {}
        return len(self._stale)

    @property
    def stale(self) -> int:
        """Hosts a live change left for :meth:`refresh` to look at."""
        return len(self._stale)

    def refresh(self, now: float, most: int) -> int:
        """Pace anew up to ``most`` of the hosts a live change left (rule 11); how many are left."""
        stale = self._stale
        for _ in range(min(most, len(stale))):
            hs = stale.pop()
            if hs.pace.replaced and self._hosts.get(hs.name) is hs:
                self._fresh(hs, now)
        if not stale:
            self._swaps = {}
        return len(stale)

    def _fresh(self, hs: HostState, now: float) -> None:
        """The host paced by its profile as of now (rule 11), placed again in its heaps."""
        old = hs.pace
        pace = self._pace_of(hs.name)
        hs.pace = pace
        group = hs.ip
        if group is not None and group.paces is not None and pace is not old:
            # Its domain's setpoint is its hosts' smallest: count it by its new profile.
            ipbudget.leave(group, old)
            ipbudget.join(group, pace)
            ipbudget.configure(group, self._pol, group.share, now)
            self._schedule_ip(group)
        swap = self._swaps.get((id(old), id(pace)))
        if swap is None:
            same = pace.pol == old.pol
            swap = self._swaps[id(old), id(pace)] = (
                same, not same and _controller(pace.pol) != _controller(old.pol), pace.ring_n != old.ring_n,
                old, pace)
        same, controller, ring, _, _ = swap
        if same:
            return  # the same figures (one Pace a profile, as a new record gets)
        if controller or (hs.pid is None) == pace.pid_on:
            hs.pid = pace.new_host_pid()
            # This window's count is of both paces: not a "too slow" sample (rule 3).
            hs.win_n = 0
            hs.held = True
        if ring:
            hs.starts = new_ring(pace.ring_n, starts_since(hs, now - HORIZON)) if pace.ring_n else None
            hs.spos = 0
        if hs.rseq or hs.work:
            self._schedule_ready(hs, now)  # its ready time moves with its delay
        self._schedule_timer(hs)

    # ------------------------------------------------------------ windows and memory

    def roll_windows(self, now: float) -> None:
        """Close every PID window that ended by ``now`` and forget idle hosts due."""
        self._clock = now
        if self._timers and self._timers[0][0] <= now:
            self._roll_due(now)

    def drain_trace(self) -> list[PidSample]:
        """The PID samples recorded since the last call, oldest first."""
        trace, self._trace = self._trace, []
        return trace

    # ---------------------------------------------------------------- read-outs

    @property
    def n_known(self) -> int:
        """Hosts whose state is kept (queued, in flight, or delay still running)."""
        return len(self._hosts)

    @property
    def n_ips(self) -> int:
        """IP entries kept (rule 8)."""
        return len(self._ips)

    @property
    def n_domains(self) -> int:
        """Registered domains' groups kept (rule 8, ``group = "domain"``)."""
        return len(self._domains)

    @property
    def in_flight(self) -> int:
        """Requests started and not yet ended."""
        return self._in_flight

    @property
    def hosts_active(self) -> int:
        """Hosts with at least one request in flight."""
        return self._active

    @property
    def ceiling_holds(self) -> int:
        """Starts that a host's ceiling (rule 7), not its delay, made wait."""
        return self._ceiling_holds

    @property
    def ip_ceiling_holds(self) -> int:
        """Starts that an IP's ceiling (rules 7, 8), not its delay, made wait."""
        return self._ip_ceiling_holds

    def count_due(self, now: float, most: int) -> int:
        """Hosts whose next start is due at ``now`` by their own gate, counted up to ``most``
        (a walk of the ready heaps: peer/core/frontier/census.py's count_due)."""
        return count_due(self._ready, now, most)

    def host_due(self, host: str, now: float) -> bool | None:
        """Whether ``host``'s next start is due at ``now`` by its own gate; None without queued work."""
        hs = self._hosts.get(host)
        if hs is None or not hs.work:
            return None
        ip = hs.ip
        return bool(hs.rseq) and hs.rkey <= now and (ip is None or bool(ip.rseq) and ip.rkey <= now)

    def known_hosts(self) -> list[str]:
        """Every host the frontier still keeps (rule 6 bounds them): work, in flight or recent starts."""
        return list(self._hosts)

    def census(self, now: float) -> HostCensus:
        """Hosts with queued work by what they wait for at ``now``: a scan (census.py), never on the crawl path."""
        return take_census(self._hosts.values(), now)

    def busiest(self, now: float, n: int) -> list[tuple[str, float, float]]:
        """The ``n`` hosts with the most starts in the last 5 s: (host, pages/min, setpoint pages/min)."""
        if n <= 0:
            return []
        return busiest_hosts(self._hosts.values(), now, n)

    def delays(self, limit: int = 2048) -> list[float]:
        """Kept hosts' current delays, every k-th host's, at most ``limit`` of them (for quantiles)."""
        return sample_delays(list(self._hosts.values()), self._clock, limit, self._window)

    def backlogged(self, host: str) -> bool:
        """Whether the host's current PID window is backlogged (will be sampled)."""
        hs = self._hosts.get(host)
        return hs is not None and hs.backlog

    def host_delay(self, host: str) -> float:
        """The host's delay between request starts now (a new host's for unknown ones)."""
        hs = self._hosts.get(host)
        if hs is None:
            return self._pace_of(host).fresh_delay
        return delay(hs, self._clock, self._window)

    def host_ip(self, host: str) -> str | None:
        """The IP the host is paced under (rule 8), or None."""
        hs = self._hosts.get(host)
        return None if hs is None or hs.ip is None or hs.ip.paces is not None else hs.ip.addr

    def host_domain(self, host: str) -> str | None:
        """The registered domain the host is paced under (``group = "domain"``), or None."""
        hs = self._hosts.get(host)
        return None if hs is None or hs.ip is None or hs.ip.paces is None else hs.ip.addr

    def domain_delay(self, domain: str) -> float:
        """The delay between request starts to ``domain``'s hosts on this peer (0 if unknown or unpaced)."""
        entry = self._domains.get(domain)
        return 0.0 if entry is None else entry.delay

    def ip_delay(self, ip: str) -> float:
        """The delay between request starts to ``ip`` on this peer (0 if unknown or unpaced)."""
        entry = self._ips.get(ip)
        return 0.0 if entry is None else entry.delay

    # ------------------------------------------------------------- internals

    def _pace_of(self, host: str) -> Pace:
        """The profile a new record of ``host`` is paced by: one Pace per distinct politeness."""
        if self._pace_for is None:
            return self._pace
        pol = self._pace_for(host)
        pace = self._paces.get(pol)
        if pace is None:
            pace = self._paces[pol] = Pace(pol)
        return pace

    def _mark(self, hs: HostState, now: float) -> None:
        if hs.pid is not None and not hs.backlog and gated(hs, now, hs.pace.cap, self._window):
            hs.backlog = True

    def _schedule_ready(self, hs: HostState, now: float) -> None:
        """(Re)place the host in its ready heap if it has work and a free slot."""
        if hs.work and hs.in_flight < hs.pace.cap:
            if hs.rseq == 0:
                hs.since = now
            key = hs.last_start + delay(hs, now, self._window)
            if hs.hold_until > key:
                key = hs.hold_until
            if hs.since > key:
                key = hs.since
            if hs.starts is None:  # no ring yet (or no rate): no ceiling to wait for, no call
                hs.rguard = False
            else:
                gate = ring_gate(hs.starts, hs.spos, hs.pace.limits)
                hs.rguard = gate > key
                if hs.rguard:
                    key = gate
            if not (hs.rseq and hs.rkey == key):
                self._seq += 1
                hs.rseq = self._seq
                hs.rkey = key
                if hs.ip is None:
                    heapq.heappush(self._ready, (key, self._seq, hs))
                else:
                    heapq.heappush(hs.ip.heap, (key, self._seq, hs))
        else:
            hs.rseq = 0
        if hs.ip is not None:
            self._schedule_ip(hs.ip)

    def _clean(self, heap: list[tuple[float, int, _E]]) -> None:
        while heap and heap[0][2].rseq != heap[0][1]:
            heapq.heappop(heap)

    def _schedule_ip(self, ip: IpBudget) -> None:
        """(Re)place the IP in the global heap at max(its gate, its earliest host) (rule 8)."""
        heap = ip.heap
        self._clean(heap)
        if heap and ip.in_flight < ip.cap:
            key = heap[0][0]
            paced = ip.last_start + ip.delay
            gate = ring_gate(ip.starts, ip.spos, ip.limits)
            ip.rguard = gate > key and gate > paced
            if paced > key:
                key = paced
            if gate > key:
                key = gate
            if ip.rseq and ip.rkey == key:
                return
            self._seq += 1
            ip.rseq = self._seq
            ip.rkey = key
            heapq.heappush(self._ready, (key, self._seq, ip))
        else:
            ip.rseq = 0

    def _forget_at(self, hs: HostState) -> float:
        # Not before a fresh host's delay has passed either, so that forgetting
        # can never let two starts come closer than the delay then in force.
        d = delay(hs, self._clock, self._window)
        fresh = hs.pace.fresh_delay
        t = hs.last_start + (d if d > fresh else fresh)
        if hs.hold_until > t:
            t = hs.hold_until
        if hs.starts is not None and hs.last_start + HORIZON > t:
            t = hs.last_start + HORIZON  # its ceiling's windows must be empty (rule 7)
        if hs.backlog:
            end = hs.win_start + self._window
            if end > t:
                t = end
        return t

    def _schedule_timer(self, obj: HostState | IpBudget) -> None:
        if isinstance(obj, IpBudget):
            if obj.nref:
                obj.tseq = 0
                return
            t = ipbudget.forget_at(obj)
        elif obj.work or obj.in_flight:
            if obj.pid is None:
                obj.tseq = 0
                return
            t = obj.win_start + self._window
        else:
            t = self._forget_at(obj)
        if obj.tseq and obj.tkey == t:
            return
        self._seq += 1
        obj.tseq = self._seq
        obj.tkey = t
        heapq.heappush(self._timers, (t, self._seq, obj))

    def _roll_due(self, now: float) -> None:
        timers = self._timers
        while timers and timers[0][0] <= now:
            _, seq, obj = heapq.heappop(timers)
            if obj.tseq != seq:
                continue
            obj.tseq = 0
            if isinstance(obj, IpBudget):
                if obj.nref == 0 and obj.in_flight == 0 and now >= ipbudget.forget_at(obj):
                    del (self._ips if obj.paces is None else self._domains)[obj.addr]
                else:
                    self._schedule_timer(obj)
                continue
            hs = obj
            if hs.pace.replaced:
                self._fresh(hs, now)
            if hs.pid is not None and now >= hs.win_start + self._window:
                roll(hs, now, hs.pace.pol, self._trace)
            if not hs.work and not hs.in_flight and now >= self._forget_at(hs):
                self._forget(hs)
                continue
            self._schedule_ready(hs, now)
            self._schedule_timer(hs)

    def _join_domain(self, hs: HostState, now: float) -> None:
        """Put a new record in its registered domain's group (rule 8, ``group = "domain"``)."""
        hs.ip = group = ipbudget.enter_domain(self._domains, hs.name, hs.pace, self._pol, self._default_share, now)
        self._schedule_ip(group)  # its delay may have changed under hosts waiting in it

    def _forget(self, hs: HostState) -> None:
        """Drop the record of an idle host whose time has come (rule 6)."""
        del self._hosts[hs.name]
        hs.rseq = 0
        ip = hs.ip
        if ip is not None:
            ip.nref -= 1
            if ip.paces is not None:
                ipbudget.leave(ip, hs.pace)
                if ip.nref:  # its setpoint may rise with the slowest host gone
                    ipbudget.configure(ip, self._pol, ip.share, self._clock)
                    self._schedule_ip(ip)
            if ip.nref == 0:
                self._schedule_timer(ip)
        if self.forgotten is not None:
            self.forgotten(hs.name)
