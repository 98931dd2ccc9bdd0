"""The per-host frontier: FIFO queues of URLs and a polite scheduler over hosts.

Per-host FIFO queues as in Mercator's frontier (Heydon and Najork, "Mercator:
A scalable, extensible Web crawler", World Wide Web 2(4), 1999), and each host
paced by a PID controller on the delay between its requests (peer/core/frontier/pid.py).
This module is the pure core of both: it takes ``now`` and returns the next :class:`Job` that may start, so the
engine's loop is "sleep until :meth:`Frontier.next_ready_at`, :meth:`pop_ready`,
fetch, :meth:`done`", and tests drive it synchronously. docs/politeness.md
derives the numbers used here.

The frontier is built from modules of one concept each, bottom up; its
rules are numbered 1-10 across them (the docs and the other modules cite
them as "frontier rule N"):

- peer/core/frontier/ceiling.py, rule 7's numbers: the 1 s/5 s ceiling and the
  rings of start times that count it;
- peer/core/frontier/profile.py: a politeness profile's figures (``Pace``), one
  for ``[politeness]`` and one a ``[[site]]`` block;
- peer/core/frontier/hoststate.py: the records kept per host and per IP, one
  slotted object each, that the modules below share;
- peer/core/frontier/pacing.py, rules 1, 3, 4, 5, 7: a host's pace (its delay and
  Crawl-delay floor, PID windows, backoff, what counts, the 1 s/5 s
  ceiling), as functions on its record;
- peer/core/frontier/ipbudget.py, rule 8: hosts sharing an IP address paced like one;
- peer/core/frontier/census.py: the read-outs for status and metrics;
- peer/core/frontier/scheduler.py, rules 2, 6: the heaps that turn each host's pace
  into a place in line, and forgetting idle hosts;
- peer/core/frontier/spillqueue.py, rules 9, 10: the part of a queue beyond its
  head in RAM, in a spill store, and the blocks of hosts given away;
- this module: :class:`Frontier`, the scheduler with the queues of URLs
  (:meth:`push`, :meth:`requeue`), the starts (:meth:`pop_ready`, which
  records each in the host's and its IP's rings, rule 7) and the ends
  (:meth:`done`, which counts them, rule 5).

A host's queue is one flat list ``[url, depth, url, depth, ...]`` read from
``head`` on (peer/core/frontier/hoststate.py): no tuple a URL, and no deque, whose
760 bytes a host would cost more than a short queue's URLs.
"""

from __future__ import annotations

import enum
import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from peer.core.frontier.census import HostCensus, count_due
from peer.core.config.cluster import PolitenessConfig
from peer.core.frontier.ceiling import CEILING_FACTOR, CEILING_WINDOWS, NEG_INF, ceiling, new_ring
from peer.core.frontier.hoststate import HostState, IpBudget, StartUndo
from peer.core.frontier.ipbudget import MIN_IP_SHARE
from peer.core.frontier.pacing import BACKOFF_MIN_STEP, PidSample, delay, roll, take_back
from peer.core.frontier.scheduler import HostScheduler
from peer.core.frontier.spillqueue import MemorySpill, SpillQueue, SpillStore
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


class Frontier(HostScheduler):
    """Per-host FIFO queues and the polite, PID-paced choice of the next job."""

    __slots__ = (
        "_queued", "_n_hosts", "_in_flight", "_active", "_ceiling_holds", "_ip_ceiling_holds",
        "_sq", "_head_max", "_moving", "_spilled",
    )

    def __init__(self, politeness: Politeness | None = None, spill: SpillStore | None = None,
                 head_per_host: int = 64, *,
                 politeness_for: Callable[[str], Politeness] | None = None) -> None:
        super().__init__(politeness if politeness is not None else Politeness(), politeness_for)
        self._queued = 0
        self._n_hosts = 0
        self._in_flight = 0
        self._active = 0
        self._ceiling_holds = 0
        self._ip_ceiling_holds = 0
        self._sq: SpillQueue | None = None  # with a spill store (rule 9)
        # Its head_max and its moving table, here too: push reads both for
        # every URL, so a store attached costs no lookup more.
        self._head_max = _NO_CAP
        self._moving: dict[str, int] = {}
        self._spilled = 0  # queued URLs out of RAM, in the store or in a tail (rule 9)
        if spill is not None:
            self.set_spill(spill, head_per_host)

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
        self._spilled += hs.spilled
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
            # Behind a full head, onto its tail (rule 9); the head is not
            # empty, so nothing about the host's schedule changes, as for any
            # push onto work. The appends are here, not a call away: in a
            # large crawl most pushes take this branch.
            tail = hs.tail
            if tail is None:
                assert self._sq is not None  # _head_max is finite only with a store
                tail = self._sq.new_tail(hs)
            tail.append(url)
            tail.append(depth)
            hs.spilled += 1
            self._spilled += 1
            self._queued += 1
            if len(tail) >= self._head_max:
                assert self._sq is not None
                self._sq.put_tail(hs)
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
                self._spilled -= sq.refill(hs)
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
            # The start, in the host's and its IP's rings (pacing rule 7), and
            # what it overwrote there, to take it back should no request follow.
            slot = ip_last = ip_slot = NEG_INF
            last = hs.last_start
            ip_spos = -1
            hs.last_start = now
            ring_n = hs.pace.ring_n
            if ring_n:
                if hs.starts is None:
                    hs.starts = new_ring(ring_n)
                slot = hs.starts[hs.spos]
                hs.starts[hs.spos] = now
                hs.spos = (hs.spos + 1) % ring_n
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
        if hs.pid is not None and now >= hs.win_start + self._window:
            roll(hs, now, hs.pace.pol, self._trace)
        if (hs.in_flight == hs.pace.cap and hs.head < len(hs.items)
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

    # ---------------------------------------------------------------- read-outs

    def __len__(self) -> int:
        return self._queued

    @property
    def n_hosts(self) -> int:
        """Hosts with queued work."""
        return self._n_hosts

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

    def host_due(self, host: str, now: float) -> bool | None:
        """Whether ``host``'s next start is due at ``now`` by its own gate, as
        :meth:`host_counts` counts it (ready: True, waiting: False); None without queued work."""
        hs = self._hosts.get(host)
        if hs is None or hs.head >= len(hs.items):
            return None
        ip = hs.ip
        return bool(hs.rseq) and hs.rkey <= now and (ip is None or bool(ip.rseq) and ip.rkey <= now)

    def host_queued(self, host: str) -> int:
        """URLs queued for ``host`` (in RAM and spilled)."""
        hs = self._hosts.get(host)
        return 0 if hs is None else (len(hs.items) - hs.head) // 2 + hs.spilled

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

    # ------------------------------------------------------------ hand-off (rules 9, 10)

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
            self._spilled -= hs.spilled
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
        self._spilled -= hs.spilled
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
        self._spilled += n
        self._queued += n
        return n

    @property
    def moving(self) -> int:
        """URLs in the store of hosts no longer ours, still to be passed on (rule 10)."""
        return self._sq.moving_urls if self._sq is not None else 0

    @property
    def spilled(self) -> int:
        """Queued URLs in the spill store, not in RAM (rule 9)."""
        return self._spilled

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

    def _forget(self, hs: HostState) -> None:
        """Drop an idle host's record (rule 6), and the spill queue's note of its tail."""
        super()._forget(hs)
        if self._sq is not None:
            self._sq.forget(hs.name)
