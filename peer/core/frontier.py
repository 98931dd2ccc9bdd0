"""The per-host frontier: FIFO queues of URLs and a polite scheduler over hosts.

Per-host FIFO queues as in Mercator's frontier (Heydon and Najork, "Mercator:
A scalable, extensible Web crawler", World Wide Web 2(4), 1999), and each host
paced by a PID controller on the delay between its requests (peer/core/pid.py).
This module is the pure core of both: it takes ``now`` and returns the next :class:`Job` that may start, so the
engine's loop is "sleep until :meth:`Frontier.next_ready_at`, :meth:`pop_ready`,
fetch, :meth:`done`", and tests drive it synchronously. docs/politeness.md
derives the numbers used here.

The frontier's rules are numbered 1-10 across the modules that hold them
(the docs and the other modules cite them as "frontier rule N"):

- rules 1, 3, 4, 5, 7: a host's pace (its delay and Crawl-delay floor, PID
  windows, backoff, what counts, the 1 s/5 s ceiling): peer/core/pacing.py;
- rule 8: hosts sharing an IP address paced like one: peer/core/ipbudget.py;
- rules 9, 10: the part of a queue beyond its head in RAM, in a spill
  store, and the blocks of hosts given away: peer/core/spillqueue.py;
- rules 2 and 6, below: which host goes next, and forgetting idle hosts.
  This module holds the queues and the heaps that turn each host's pace
  into a place in line, and calls the modules above.

The record of a host is one slotted object (peer/core/hoststate.py) that
all of them read and write; the read-outs for status and metrics are
peer/core/census.py.

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
   (peer/core/ipbudget.py). Without this, a crawl of millions of hosts would keep millions of structs
   for nothing.

Every operation is O(log hosts): heaps with lazy deletion (an entry is live
only if its sequence number is still its owner's), never a scan of hosts
(set_host_ip and seed_starts also copy one ring of start times).
``now`` must not go backwards.
"""

from __future__ import annotations

import enum
import heapq
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from peer.core.census import HostCensus, busiest_hosts, count_due, sample_delays, take_census
from peer.core.config import PolitenessConfig
from peer.core.hoststate import NEG_INF, HostState
from peer.core.ipbudget import MIN_IP_SHARE, IpBudget, clamp_share, is_share
from peer.core.pacing import (
    BACKOFF_MIN_STEP, CEILING_FACTOR, CEILING_WINDOWS, HORIZON, PidSample, StartUndo, apply_backoff,
    ceiling, count_starts, delay, gated, new_pid, new_ring, ring_gate, roll, set_floor,
    starts_since, take_back,
)
from peer.core.spillqueue import MemorySpill, SpillQueue, SpillStore
from peer.errors import PeerError

__all__ = [
    "BACKOFF_MIN_STEP", "CEILING_FACTOR", "CEILING_WINDOWS", "MIN_IP_SHARE", "Frontier", "HostCensus",
    "Job", "MemorySpill", "Outcome", "PidSample", "Politeness", "SpillStore", "ceiling",
]

_NO_CAP = 1 << 62
# A fully popped prefix of a host's queue is cut off once it is this long and
# at least half the list; amortised O(1) popleft without a deque's 760 bytes.
_COMPACT_AT = 64


# The settings are cluster.toml's [politeness] section, defaults and all; the
# frontier takes that object as it is, so there is one place for the defaults.
Politeness = PolitenessConfig


@dataclass(frozen=True, slots=True)
class Job:
    """One URL to fetch. ``host`` is the frontier's interned host string."""

    url: str
    host: str
    depth: int


class Outcome(enum.StrEnum):
    """How a request ended, for counting it in the host's window (pacing rule 5)."""

    FETCHED = "fetched"  # an HTTP response, any status: counts
    FAILED = "failed"  # reached the server, then failed (timeout, reset): counts
    UNREACHED = "unreached"  # never reached the server (DNS, refused): does not count
    # No request was made at all (robots.txt disallows the URL, its host moved
    # or was given up): does not count, and its start is taken back (rule 1).
    NOT_STARTED = "not_started"


#: A heap entry's object: a host, or an IP in the global heap (rule 8).
_E = TypeVar("_E", HostState, IpBudget, HostState | IpBudget)


class Frontier:
    """Per-host FIFO queues and the polite, PID-paced choice of the next job."""

    __slots__ = (
        "_pol", "_cap", "_window", "_pid_on", "_fresh_delay", "_hosts", "_ready", "_timers",
        "_seq", "_queued", "_n_hosts", "_in_flight", "_active", "_trace", "_clock",
        "_limits", "_ring_n", "_ips", "_ip_on", "_default_share",
        "_ceiling_holds", "_ip_ceiling_holds", "_sq", "_head_max", "_moving",
    )

    def __init__(self, politeness: Politeness | None = None, spill: SpillStore | None = None,
                 head_per_host: int = 64) -> None:
        self._pol = pol = politeness if politeness is not None else Politeness()
        self._cap = pol.host_concurrency
        self._window = pol.window
        self._pid_on = pol.rate > 0
        # The delay of a host with no history.
        self._fresh_delay = pol.start_delay if self._pid_on else 0.0
        self._limits = (
            tuple((w, ceiling(pol.rate, w)) for w in CEILING_WINDOWS) if self._pid_on else ()
        )
        self._ring_n = max((k for _, k in self._limits), default=0)
        self._hosts: dict[str, HostState] = {}
        self._ips: dict[str, IpBudget] = {}
        self._ip_on = pol.ip_rate > 0 or pol.ip_concurrency > 0
        self._default_share = 1.0
        # (ready_at, seq, host or IP): hosts without an IP, with queued work and
        # a free slot, and IPs with such a host (rule 8).
        self._ready: list[tuple[float, int, HostState | IpBudget]] = []
        # (deadline, seq, host or IP): a busy host's window end, an idle one's
        # or an unreferenced IP's forget time.
        self._timers: list[tuple[float, int, HostState | IpBudget]] = []
        self._seq = 0
        self._queued = 0
        self._n_hosts = 0
        self._in_flight = 0
        self._active = 0
        self._trace: list[PidSample] = []
        self._clock = NEG_INF
        self._ceiling_holds = 0
        self._ip_ceiling_holds = 0
        self._sq: SpillQueue | None = None  # with a spill store (rule 9)
        # Its head_max and its moving table, here too: push reads both for
        # every URL, so a store attached costs no lookup more.
        self._head_max = _NO_CAP
        self._moving: dict[str, int] = {}
        if spill is not None:
            self.set_spill(spill, head_per_host)
        if self._pid_on:
            new_pid(pol)  # bad gains fail here, at start-up, not at the first host

    # ------------------------------------------------------------------ queue

    def set_spill(self, spill: SpillStore, head_per_host: int) -> None:
        """Keep at most ``head_per_host`` URLs a host in RAM, the rest in ``spill`` (rule 9).

        Only before the first push: URLs already queued would be out of order.
        The store may hold URLs already (recovered): :meth:`adopt` them.
        """
        if self._queued:
            raise PeerError("frontier: set_spill() after URLs were queued")
        self._sq = sq = SpillQueue(spill, head_per_host)
        self._head_max = sq.head_max
        self._moving = sq.moving

    def flush_tails(self) -> int:
        """Hand every host's tail to the store as a block (rule 9; before a checkpoint); returns how many."""
        return self._sq.flush_tails() if self._sq is not None else 0

    def adopt(self, host: str, now: float) -> int:
        """Queue the URLs the spill store already holds for ``host`` (a recovered store).

        Before any other URL of that host is pushed; returns how many.
        """
        sq = self._sq
        if sq is None:
            return 0
        n = sq.store.count(host)
        if n == 0:
            return 0
        hs = self._touch(host, now)
        sq.adopt(hs, n)
        self._queued += n
        self._n_hosts += 1
        self._schedule_ready(hs, now)
        if hs.in_flight == 0:
            self._schedule_timer(hs)
        self._mark(hs, now)
        return n

    def push(self, url: str, host: str, depth: int, now: float) -> None:
        """Append a URL (already deduplicated) to its host's queue."""
        if self._moving and host in self._moving:
            self.reattach(host, now)  # ours again: its stored blocks come first
        hs = self._touch(host, now)
        items = hs.items
        if hs.spilled or len(items) - hs.head >= self._head_max:
            # Behind a full head (rule 9); the head is not empty, so nothing
            # about the host's schedule changes, as for any push onto work.
            sq = self._sq
            assert sq is not None  # _head_max is finite only with a store
            sq.push(hs, url, depth)
            self._queued += 1
            return
        was_empty = hs.head == len(items)
        items.append(url)
        items.append(depth)
        self._queued += 1
        if was_empty:
            self._n_hosts += 1
            self._schedule_ready(hs, now)
            if hs.in_flight == 0:
                self._schedule_timer(hs)  # idle -> busy: forget timer becomes window timer
            # Onto a queue that had work, a push cannot newly gate the host.
            self._mark(hs, now)

    def requeue(self, job: Job, now: float, not_before: float) -> None:
        """Put ``job`` back at the front of its host's queue; the host waits until ``not_before``.

        For retries. It does not end the request: call :meth:`done` for that too.
        """
        hs = self._touch(job.host, now)
        items = hs.items
        was_empty = hs.head == len(items)
        if hs.head >= 2:
            hs.head -= 2
            items[hs.head] = job.url
            items[hs.head + 1] = job.depth
        else:
            items[hs.head:hs.head] = (job.url, job.depth)
        self._queued += 1
        if was_empty:
            self._n_hosts += 1
        if not_before > hs.hold_until:
            hs.hold_until = not_before
        self._schedule_ready(hs, now)
        self._schedule_timer(hs)
        self._mark(hs, now)

    def pop_ready(self, now: float) -> Job | None:
        """The next job that may start at ``now``, marked started; ``None`` if none may yet."""
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
            ip = None
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
            if hs.rguard:
                self._ceiling_holds += 1
            items = hs.items
            head = hs.head
            url = items[head]
            depth = items[head + 1]
            head += 2
            if head == len(items) and hs.spilled:
                # Refill the head now (rule 9), so "has work" stays "has a head".
                sq = self._sq
                assert sq is not None  # spilled only with a store
                sq.refill(hs)
                head = 0
                hs.waiting = True
            elif head == len(items):
                items.clear()
                head = 0
                # Its queue ran dry in its first window: URLs were still
                # trickling in, so that window's n is short (rule 3).
                hs.dry = True
                self._n_hosts -= 1
            else:
                hs.waiting = True  # more URLs wait behind this one (rule 3)
                items[head - 2] = items[head - 1] = None
                if head >= _COMPACT_AT and head * 2 >= len(items):
                    del items[:head]
                    head = 0
            hs.head = head
            self._queued -= 1
            if hs.in_flight == 0:
                self._active += 1
            hs.in_flight += 1
            self._in_flight += 1
            slot = ip_last = ip_slot = NEG_INF
            last = hs.last_start
            ip_spos = -1
            hs.last_start = now
            if self._ring_n:
                if hs.starts is None:
                    hs.starts = new_ring(self._ring_n)
                slot = hs.starts[hs.spos]
                hs.starts[hs.spos] = now
                hs.spos = (hs.spos + 1) % self._ring_n
            if ip is not None:
                ip.in_flight += 1
                ip_last = ip.last_start
                ip.last_start = now
                if ip.starts is not None:
                    ip_slot = ip.starts[ip.spos]
                    ip.starts[ip.spos] = now
                    ip.spos = (ip.spos + 1) % len(ip.starts)
                ip_spos = ip.spos
            hs.undo = StartUndo(url, now, last, slot, hs.spos, hs.starts, ip, ip_last, ip_slot, ip_spos,
                                ip.starts if ip is not None else None)
            self._schedule_ready(hs, now)  # and its IP's place
            self._mark(hs, now)
            return Job(url, hs.name, depth)
        return None

    def done(self, host: str, now: float, outcome: Outcome = Outcome.FETCHED, url: str | None = None) -> None:
        """A request of ``host`` ended; it counts in the host's window unless UNREACHED or NOT_STARTED.

        NOT_STARTED (with the job's ``url``): no request was made, and the
        start :meth:`pop_ready` recorded is taken back if it was the host's
        latest (and the IP's, for the IP), so the host's next URL waits only
        for the starts that were requests. A later start stays: taking an
        earlier one back would leave the ceilings' record out of order.
        """
        hs = self._hosts.get(host)
        if hs is None or hs.in_flight <= 0:
            raise PeerError(f"frontier: done({host!r}) without a request in flight")
        self._clock = now
        if self._pid_on and now >= hs.win_start + self._window:
            roll(hs, now, self._pol, self._trace)
        if (hs.in_flight == self._cap and hs.head < len(hs.items)
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
        self._mark(hs, now)

    def next_ready_at(self) -> float | None:
        """The earliest time :meth:`pop_ready` could return a job, or ``None``.

        ``None`` means no host has both queued work and a free slot: wait for a
        :meth:`push` or :meth:`done`. A time in the past means "now". A delay
        lowered by a window ending before that time takes effect at the next
        :meth:`pop_ready`, so the answer errs on the polite side.
        """
        ready = self._ready
        while ready:
            key, seq, obj = ready[0]
            if obj.rseq == seq:
                return key
            heapq.heappop(ready)
        return None

    # ------------------------------------------------------------ politeness

    def backoff(self, host: str, now: float, retry_after: float | None = None) -> None:
        """The host answered 429/503: double its delay now and honour Retry-After (rule 4)."""
        hs = self._touch(host, now)
        apply_backoff(hs, now, self._pol, retry_after)
        self._schedule_ready(hs, now)
        self._schedule_timer(hs)

    def set_min_delay(self, host: str, seconds: float, now: float | None = None) -> None:
        """Set the host's floor (robots.txt Crawl-delay): delay = max(PID's, floor).

        The floor is capped at ``max_crawl_delay``: a robots.txt asking for
        an hour between requests would otherwise park the host for good.
        """
        if now is None:
            now = self._clock if self._clock > NEG_INF else 0.0
        hs = self._touch(host, now)
        set_floor(hs, seconds, now, self._pol)
        self._schedule_ready(hs, now)
        self._schedule_timer(hs)

    def recent_starts(self, host: str) -> tuple[float, ...]:
        """The host's request starts within the ceiling's longest window, oldest first (rule 7).

        In this frontier's clock (the engine's monotonic time). The engine
        carries them over a restart or a hand-off, translated to wall-clock
        time and back; a host forgotten (rule 6) has none that matter.
        """
        hs = self._hosts.get(host)
        if hs is None:
            return ()
        return tuple(starts_since(hs, self._clock - HORIZON))

    def seed_starts(self, host: str, times: Iterable[float], now: float) -> None:
        """Count starts made elsewhere (before a restart, by the host's previous owner).

        ``times`` are in this frontier's clock; the engine translates them.
        Times after ``now`` (clock skew) count as ``now``; those older than
        the longest ceiling window are dropped. The newest also counts as
        the host's last start, so its delay runs from it.
        """
        hs = self._touch(host, now)
        vals = [min(float(t), now) for t in times if t == t and t > now - HORIZON]
        if not vals:
            return
        count_starts(hs, vals, now, self._ring_n)
        if hs.ip is not None:
            hs.ip.add_starts(vals, now)
        self._schedule_ready(hs, now)
        self._schedule_timer(hs)

    def set_host_ip(self, host: str, ip: str, now: float) -> None:
        """The host resolves to ``ip``: from now on it shares that IP's budget (rule 8).

        The engine calls it after DNS (or at push time when its DNS cache
        already knows the answer). The host's recent starts, including the
        fetch that resolved it, are counted against the IP. A no-op when
        neither ``ip_rate`` nor ``ip_concurrency`` is set.
        """
        if not self._ip_on:
            return
        hs = self._touch(host, now)
        old = hs.ip
        if old is not None and old.addr == ip:
            return
        new = self._ips.get(ip)
        if new is None:
            new = self._ips[ip] = IpBudget(ip)
            new.configure(self._pol, self._default_share, now)
        if old is not None:
            old.nref -= 1
            old.in_flight -= hs.in_flight
        new.nref += 1
        new.in_flight += hs.in_flight
        new.add_starts(starts_since(hs, now - HORIZON), now)
        hs.ip = new
        hs.rseq = 0  # its entry sat in the old heap
        self._schedule_ready(hs, now)
        self._schedule_timer(hs)
        if old is not None:
            self._schedule_ip(old)
            if old.nref == 0:
                self._schedule_timer(old)

    def set_ip_share(self, ip: str, fraction: float, now: float) -> None:
        """This peer's part of ``ip``'s cluster-wide budget, in [MIN_IP_SHARE, 1].

        An IP no host of this frontier resolves to is ignored (call after
        :meth:`set_host_ip`; the gossip re-sends shares). A share that is not
        a finite number is ignored; others are clamped: it comes from
        gossiped counts.
        """
        entry = self._ips.get(ip)
        if entry is None or not is_share(fraction):
            return
        self._clock = now
        entry.configure(self._pol, fraction, now)
        self._schedule_ip(entry)

    def set_default_ip_share(self, fraction: float) -> None:
        """The share of IPs first seen from now on, until :meth:`set_ip_share` sets theirs.

        BUbiNG's rule, 1/(number of peers), is the safe default for a ring
        before per-IP counts are gossiped; 1.0 (the initial value) for one peer.
        """
        if is_share(fraction):
            self._default_share = clamp_share(fraction)

    def roll_windows(self, now: float) -> None:
        """Close every PID window that ended by ``now`` and forget idle hosts due."""
        self._clock = now
        if self._timers and self._timers[0][0] <= now:
            self._roll_due(now)

    def drain_trace(self) -> list[PidSample]:
        """The PID samples recorded since the last call, oldest first."""
        trace, self._trace = self._trace, []
        return trace

    # ---------------------------------------------------------------- stats

    def __len__(self) -> int:
        return self._queued

    @property
    def spilled(self) -> int:
        """Queued URLs in the spill store, not in RAM (rule 9)."""
        return self._sq.spilled if self._sq is not None else 0

    @property
    def refills(self) -> int:
        """Heads refilled from the spill store (rule 9)."""
        return self._sq.refills if self._sq is not None else 0

    @property
    def spill_store(self) -> SpillStore | None:
        """The spill store attached (rule 9), or None."""
        return self._sq.store if self._sq is not None else None

    @property
    def head_per_host(self) -> int:
        """URLs a host keeps in RAM before the rest spill; 0 without a store (rule 9)."""
        return self._head_max // 2 if self._sq is not None else 0

    @property
    def n_hosts(self) -> int:
        """Hosts with queued work."""
        return self._n_hosts

    @property
    def n_known(self) -> int:
        """Hosts whose state is kept (queued, in flight, or delay still running)."""
        return len(self._hosts)

    @property
    def n_ips(self) -> int:
        """IP entries kept (rule 8)."""
        return len(self._ips)

    @property
    def in_flight(self) -> int:
        """Requests started and not yet done."""
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

    def census(self, now: float) -> HostCensus:
        """Hosts with queued work by what they wait for at ``now`` (for status and metrics).

        A scan of the hosts kept (rule 6 bounds them), asked for by an
        operator's scrape or status request, never on the crawl path.
        """
        return take_census(self._hosts.values(), now, self._cap)

    def busiest(self, now: float, n: int) -> list[tuple[str, float, float]]:
        """The ``n`` hosts with the most starts in the last 5 s: (host, pages/min, setpoint pages/min).

        The rate is the starts in the ceiling's longest window (rule 7 keeps
        every one of them in the host's ring), so it is what the host saw
        lately, not a PID window's count. The setpoint is ``rate``, or less
        under a robots.txt Crawl-delay. Empty without a rate (no ring of
        starts is kept). A scan like :meth:`census`.
        """
        if not self._pid_on or n <= 0:
            return []
        return busiest_hosts(self._hosts.values(), now, n, self._pol.rate)

    def delays(self, limit: int = 2048) -> list[float]:
        """Kept hosts' current delays between request starts, seconds (for quantiles).

        At most ``limit`` of them, every k-th host in the table: quantiles
        from a couple of thousand are as good as from all, and a scrape of a
        peer keeping 100,000 hosts then costs the event loop milliseconds.
        """
        return sample_delays(list(self._hosts.values()), self._clock, limit, self._window)

    def host_counts(self, now: float, most: int = 10_000) -> tuple[int, int]:
        """(ready, waiting): hosts with queued work whose next start is due at ``now`` by their
        own gate (counted up to ``most``), and the rest of them (waiting on their delay,
        ceiling, backoff or a free slot).

        A walk of the ready heaps that skips every subtree whose root is not
        due (a heap's children are never earlier than their parent), so it
        costs the due and stale entries, not every host: the hosts waiting on
        politeness, most of a crawl's, are not visited. Measured: 0.01 ms
        with 100,000 hosts waiting, 200 ms with 100,000 due (a broad crawl
        held by ``concurrency``), hence ``most``, ~20 ms at 10,000.
        """
        ready = count_due(self._ready, now, most)
        return ready, max(self._n_hosts - ready, 0)

    def backlogged(self, host: str) -> bool:
        """Whether the host's current PID window is backlogged (will be sampled)."""
        hs = self._hosts.get(host)
        return hs is not None and hs.backlog

    def host_delay(self, host: str) -> float:
        """The host's delay between request starts now (a new host's for unknown ones)."""
        hs = self._hosts.get(host)
        if hs is None:
            return self._fresh_delay
        return delay(hs, self._clock, self._window)

    def host_ip(self, host: str) -> str | None:
        """The IP the host is paced under (rule 8), or None."""
        hs = self._hosts.get(host)
        return None if hs is None or hs.ip is None else hs.ip.addr

    def ip_delay(self, ip: str) -> float:
        """The delay between request starts to ``ip`` on this peer (0 if unknown or unpaced)."""
        entry = self._ips.get(ip)
        return 0.0 if entry is None else entry.delay

    def host_queued(self, host: str) -> int:
        """URLs queued for ``host`` (in RAM and spilled)."""
        hs = self._hosts.get(host)
        return 0 if hs is None else (len(hs.items) - hs.head) // 2 + hs.spilled

    def known_hosts(self) -> list[str]:
        """Every host the frontier still keeps (rule 6 bounds them): work, in flight or recent starts."""
        return list(self._hosts)

    def queued_hosts(self) -> list[str]:
        """Hosts with queued work (for hand-off when ownership changes)."""
        return [h.name for h in self._hosts.values() if h.head < len(h.items)]

    def iter_queued(self) -> Iterator[Job]:
        """Every queued job, host by host in FIFO order (spilled ones read from the store)."""
        sq = self._sq
        for hs in list(self._hosts.values()):
            items = hs.items
            name = hs.name
            for i in range(hs.head, len(items), 2):
                yield Job(items[i], name, items[i + 1])
            if hs.spilled and sq is not None:
                for url, depth in sq.iter_spilled(hs):
                    yield Job(url, name, depth)

    def iter_heads(self) -> Iterator[Job]:
        """The queued jobs held in RAM, host by host in FIFO order (rule 9: a checkpoint's part)."""
        for hs in list(self._hosts.values()):
            items = hs.items
            name = hs.name
            for i in range(hs.head, len(items), 2):
                yield Job(items[i], name, items[i + 1])

    def remove_host(self, host: str) -> list[Job]:
        """Take away a host's queue (it changed owner); requests in flight still need done().

        The host's start times stay until rule 6 forgets it, so that it
        cannot get a burst should it come back soon (a ring that flaps).
        """
        hs = self._hosts.get(host)
        if hs is None:
            return []
        items = hs.items
        jobs = [Job(items[i], hs.name, items[i + 1]) for i in range(hs.head, len(items), 2)]
        if hs.spilled and self._sq is not None:
            jobs += [Job(u, hs.name, d) for u, d in self._sq.drop(hs)]
        if jobs:
            self._queued -= len(jobs)
            self._n_hosts -= 1
        items.clear()
        hs.head = 0
        hs.rseq = 0
        if hs.ip is not None:
            self._schedule_ip(hs.ip)
        self._schedule_timer(hs)
        return jobs

    def release_host(self, host: str) -> list[Job]:
        """Like :meth:`remove_host`, but the host's blocks stay in the store, moving (rule 10)."""
        hs = self._hosts.get(host)
        sq = self._sq
        if hs is None or not hs.spilled or sq is None:
            return self.remove_host(host)
        items = hs.items
        jobs = [Job(items[i], hs.name, items[i + 1]) for i in range(hs.head, len(items), 2)]
        self._queued -= hs.spilled + (len(items) - hs.head) // 2
        self._n_hosts -= 1
        jobs += [Job(u, hs.name, d) for u, d in sq.release(hs)]
        items.clear()
        hs.head = 0
        hs.rseq = 0
        if hs.ip is not None:
            self._schedule_ip(hs.ip)
        self._schedule_timer(hs)
        return jobs

    def release_stored(self, host: str) -> int:
        """Mark a recovered store's queue of ``host`` (not in the frontier) moving; returns its URLs."""
        return self._sq.release_stored(host) if self._sq is not None else 0

    def take_moving(self, limit: int) -> list[tuple[str, list[Any]]]:
        """Blocks of moving hosts, ``(host, [url, depth, ...])``, about ``limit`` URLs in all (rule 10)."""
        return self._sq.take_moving(limit) if self._sq is not None else []

    def reattach(self, host: str, now: float) -> int:
        """A moving host is ours again: its blocks queue behind its head (rule 10); returns how many."""
        sq = self._sq
        n = sq.unmove(host) if sq is not None else 0
        if not n:
            return 0
        assert sq is not None
        hs = self._hosts.get(host)
        if hs is None or (hs.head == len(hs.items) and not hs.spilled):
            if hs is not None:
                sq.park_tail(hs)  # its tail came after the blocks: into the store behind them
            return self.adopt(host, now)
        sq.reattach(hs, n)
        self._queued += n
        return n

    @property
    def moving(self) -> int:
        """URLs in the store of hosts no longer ours, still to be passed on (rule 10)."""
        return self._sq.moving_urls if self._sq is not None else 0

    # ------------------------------------------------------------- internals

    def _touch(self, host: str, now: float) -> HostState:
        """The host's state, created or with its window rolled up to ``now``."""
        self._clock = now
        hs = self._hosts.get(host)
        if hs is None:
            hs = HostState(host, now, new_pid(self._pol) if self._pid_on else None)
            self._hosts[host] = hs  # the caller schedules its timer
        elif self._pid_on and now >= hs.win_start + self._window:
            roll(hs, now, self._pol, self._trace)
            self._schedule_ready(hs, now)
            self._schedule_timer(hs)
        return hs

    def _mark(self, hs: HostState, now: float) -> None:
        if self._pid_on and not hs.backlog and gated(hs, now, self._cap, self._window):
            hs.backlog = True

    def _schedule_ready(self, hs: HostState, now: float) -> None:
        """(Re)place the host in its ready heap if it has work and a free slot."""
        if hs.head < len(hs.items) and hs.in_flight < self._cap:
            if hs.rseq == 0:
                hs.since = now
            key = hs.last_start + delay(hs, now, self._window)
            if hs.hold_until > key:
                key = hs.hold_until
            if hs.since > key:
                key = hs.since
            gate = ring_gate(hs.starts, hs.spos, self._limits)
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
        t = hs.last_start + (d if d > self._fresh_delay else self._fresh_delay)
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
            t = obj.forget_at()
        elif obj.head < len(obj.items) or obj.in_flight:
            if not self._pid_on:
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
        hosts = self._hosts
        while timers and timers[0][0] <= now:
            _, seq, obj = heapq.heappop(timers)
            if obj.tseq != seq:
                continue
            obj.tseq = 0
            if isinstance(obj, IpBudget):
                if obj.nref == 0 and obj.in_flight == 0 and now >= obj.forget_at():
                    del self._ips[obj.addr]
                else:
                    self._schedule_timer(obj)
                continue
            hs = obj
            if self._pid_on and now >= hs.win_start + self._window:
                roll(hs, now, self._pol, self._trace)
            if hs.head == len(hs.items) and not hs.in_flight and now >= self._forget_at(hs):
                del hosts[hs.name]
                if self._sq is not None:
                    self._sq.forget(hs.name)
                hs.rseq = 0
                ip = hs.ip
                if ip is not None:
                    ip.nref -= 1
                    if ip.nref == 0:
                        self._schedule_timer(ip)
                continue
            self._schedule_ready(hs, now)
            self._schedule_timer(hs)
