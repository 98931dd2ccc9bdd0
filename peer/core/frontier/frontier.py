"""The per-host frontier: queues of URLs served by priority, and a polite scheduler over hosts.

Per-host FIFO queues as in Mercator's frontier (Heydon and Najork, "Mercator:
A scalable, extensible Web crawler", World Wide Web 2(4), 1999), and each host
paced by a PID controller on the delay between its requests (peer/core/politeness/pid.py).
This module is the pure core of both: it takes ``now`` and returns the next :class:`Job` that may start, so the
engine's loop is "sleep until :meth:`Frontier.next_ready_at`, :meth:`pop_ready`,
fetch, :meth:`done`", and tests drive it synchronously. docs/politeness.md
derives the numbers used here.

The frontier is built from modules of one concept each, bottom up, over
the politeness room's numbers (peer/core/politeness/: the PID controller;
``ceiling.py``, rule 7's numbers, the 1 s/5 s ceiling and the rings of
start times that count it; ``profile.py``, a politeness profile's figures,
``Pace``, one for ``[politeness]`` and one a ``[[site]]`` block). Its rules
are numbered 1-10 across them (the docs and the other modules cite them as
"frontier rule N"):

- peer/core/frontier/hoststate.py: the records kept per host and per IP, one
  slotted object each, that the modules below share;
- peer/core/frontier/pacing.py, rules 1, 3, 4, 5, 7: a host's pace (its delay and
  Crawl-delay floor, PID windows, backoff, what counts, the 1 s/5 s
  ceiling), as functions on its record;
- peer/core/frontier/ipbudget.py, rule 8: hosts sharing an IP address paced like one;
- peer/core/frontier/census.py: the read-outs for status and metrics;
- peer/core/frontier/scheduler.py, rules 2, 6: :class:`HostScheduler`, the part that
  keeps the records, turns each host's pace into a place in line, records
  the starts and ends of requests, and forgets idle hosts;
- peer/core/frontier/spillqueue.py, rules 9, 10: the part of a queue beyond its
  head in RAM, in a spill store, and the blocks of hosts given away;
- peer/core/frontier/order.py, rule 11: a URL's band (its depth, moved by a
  sitemap's priority or a priority rule) and the slot that carries it;
- peer/core/frontier/bands.py, rule 11: a host's URLs in RAM, band by band;
- this module: :class:`Frontier`, the queues of URLs (:meth:`push`,
  :meth:`requeue`, :meth:`pop_ready`) with a :class:`HostScheduler` as its
  part. The frontier asks the scheduler for the host whose turn it is, takes
  its next URL and hands back the start; it tells the scheduler when a queue
  gains or loses work, and passes :meth:`done` and the host-level calls
  (pace, IPs, read-outs) on to it. It never touches the scheduler's state,
  and the scheduler never reads a queue.

A host's queue is one flat list ``[url, depth, url, depth, ...]`` read from
``head`` on, in the host's record (peer/core/frontier/hoststate.py), beside the
scheduler's fields but written only here and in the spill queue: no tuple a
URL, no deque, whose 760 bytes a host would cost more than a short queue's
URLs, and no second record a host.

11. Order (peer/core/frontier/order.py): a host's queue is served band by
   band, the lowest first, each band FIFO: breadth-first by depth unless a
   boost moves a URL. ``items`` holds the lowest band in RAM, ``more`` the
   higher ones (a dict made only when a host has two bands in RAM, so a
   host of one band costs what it did); a push of a lower band than the
   one served puts it first. The spill (rule 9) stays one FIFO a host: a
   host begins to spill only with a URL of a band at least as high as every
   band in RAM, at band ``sband``, and from then on a push of a lower band
   stays in RAM, in its band, until RAM holds ``4 * head_per_host`` URLs of
   the host. So every URL of a band below ``sband`` is served before the
   spilled ones, and the spilled ones in the order they came, which a
   breadth-first crawl makes mostly by depth too. A refill, an adopted head
   and a reattached host are split into bands again from their slots. With
   ``order = "fifo"`` every URL is in band 0: one FIFO a host.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from peer.core.config.cluster import PolitenessConfig
from peer.core.frontier.census import HostCensus
from peer.core.frontier.hoststate import HostState
from peer.core.frontier.ipbudget import MIN_IP_SHARE
from peer.core.frontier import bands
from peer.core.frontier.order import DEPTH_BANDS, MAX_BOOST, band_of, depth_of, make_slot
from peer.core.frontier.pacing import BACKOFF_MIN_STEP, Outcome, PidSample
from peer.core.frontier.scheduler import HostScheduler
from peer.core.frontier.spillqueue import MemorySpill, SpillQueue, SpillStore
from peer.core.politeness.ceiling import CEILING_FACTOR, CEILING_WINDOWS, ceiling
from peer.errors import PeerError

__all__ = [
    "BACKOFF_MIN_STEP", "CEILING_FACTOR", "CEILING_WINDOWS", "MIN_IP_SHARE", "Frontier", "HostCensus",
    "Job", "MemorySpill", "Outcome", "PidSample", "Politeness", "SpillStore", "ceiling",
]

_NO_CAP = 1 << 62
# A fully popped prefix of a host's queue is cut off once it is this long and
# at least half the list; amortised O(1) popleft without a deque's 760 bytes.
_COMPACT_AT = 64
# A spilling host keeps URLs of a lower band than its spill in RAM up to
# this many heads (rule 11), then they spill too and their order is the
# arrival's: a sitemap of a million URLs in random priorities must not undo
# rule 9's bound on RAM.
_RAM_HEADS = 4
# A recovered host's spill band until its first refill reads its head (rule 11):
# below every band, so that every push goes behind the spill until then.
_UNKNOWN = -1


# The settings are cluster.toml's [politeness] section, defaults and all; the
# frontier takes that object as it is, so there is one place for the defaults.
Politeness = PolitenessConfig


@dataclass(frozen=True, slots=True)
class Job:
    """One URL to fetch. ``host`` is the frontier's interned host string."""

    url: str
    host: str
    depth: int


class Frontier:
    """Per-host FIFO queues and the polite, PID-paced choice of the next job.

    The queues are its own; the hosts' pace and turns are its
    :class:`HostScheduler`'s, a part it holds and reaches only through the
    part's interface (peer/core/frontier/scheduler.py).
    """

    __slots__ = ("_sched", "_queued", "_n_hosts", "_sq", "_head_max", "_ram_max", "_moving", "_spilled",
                 "_fifo", "_near", "_overflow")

    def __init__(self, politeness: Politeness | None = None, spill: SpillStore | None = None,
                 head_per_host: int = 64, *,
                 politeness_for: Callable[[str], Politeness] | None = None, order: str = "depth") -> None:
        pol = politeness if politeness is not None else Politeness()
        if order not in ("depth", "fifo"):
            raise PeerError(f"frontier: order must be 'depth' or 'fifo', not {order!r}")
        self._fifo = order == "fifo"  # rule 11: every URL in band 0
        # The band of each depth with a band of its own and no boost, looked up by push.
        self._near = (0,) * DEPTH_BANDS if self._fifo else tuple(d + MAX_BOOST for d in range(DEPTH_BANDS))
        self._overflow = 0  # URLs spilled out of their band's order (rule 11's RAM bound)
        self._sched = HostScheduler(pol, politeness_for)
        self._queued = 0
        self._n_hosts = 0
        self._sq: SpillQueue | None = None  # with a spill store (rule 9)
        # Its head_max and its moving table, here too: push reads both for
        # every URL, so a store attached costs no lookup more.
        self._head_max = _NO_CAP
        self._ram_max = _NO_CAP
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
        self._ram_max = _RAM_HEADS * sq.head_max
        self._moving = sq.moving
        # A host forgotten (rule 6) goes from the tails' note too. The queue's
        # method, not one of ours: no cycle through the part, so that a frontier
        # dropped is freed at once, not at the next full GC.
        self._sched.forgotten = sq.forget

    def flush_tails(self) -> int:
        """Hand every host's tail to the store as a block (rule 9; before a checkpoint); returns how many."""
        return self._sq.flush_tails() if self._sq is not None else 0

    def adopt(self, host: str, now: float, head: list[Any] | None = None) -> int:
        """Queue the URLs the spill store already holds for ``host`` (a recovered store),
        behind ``head`` (flat ``[url, depth, ...]``: the host's head as a snapshot kept it).

        Before any other URL of that host is pushed; returns how many.
        """
        sq = self._sq
        if sq is None:
            return 0
        n = sq.store.count(host)
        if n == 0:
            return 0
        hs = self._sched.keep(host, now)
        sq.adopt(hs, n, head)
        # The band its spill began at is not kept: the highest band of its
        # head stands for it, a lower bound (rule 11). A head still in the
        # store is read at the host's first start (rule 9's lazy head), and
        # until then a push goes behind its spill, as in a FIFO.
        if self._fifo:
            hs.sband = 0
        elif head:
            bands.reband(hs, False)
            hs.sband = bands.top(hs)
        else:
            hs.sband = _UNKNOWN
        self._spilled += hs.spilled
        self._queued += n + (len(head) // 2 if head else 0)
        self._n_hosts += 1
        self._sched.filled(hs, now)
        return n + (len(head) // 2 if head else 0)

    def push(self, url: str, host: str, depth: int, now: float, boost: int = 0) -> None:
        """Append a URL (already deduplicated) to its band of its host's queue (rule 11).

        ``boost``: levels the URL is served ahead of its depth (negative: behind;
        peer/core/frontier/order.py).
        """
        if self._moving and host in self._moving:
            self.reattach(host, now)  # ours again: its stored blocks come first
        hs = self._sched.keep(host, now)
        slot = depth if boost == 0 else make_slot(depth, boost)
        b = self._near[slot] if slot < DEPTH_BANDS else 0 if self._fifo else band_of(slot)
        items = hs.items
        if hs.spilled:
            # Behind its spilled URLs (rule 9), unless it is of a lower band
            # than they are and RAM has room (rule 11).
            spill = b >= hs.sband or len(items) - hs.head + hs.nmore >= self._ram_max
        elif len(items) - hs.head + hs.nmore >= self._head_max:
            spill = b >= bands.top(hs) or bands.ram_slots(hs) >= self._ram_max
            if spill:
                hs.sband = b
        else:
            spill = False
        if spill:
            # Onto its tail (rule 9); the head is not empty, so nothing
            # about the host's schedule changes, as for any push onto work.
            # The appends are here, not a call away: in a large crawl most
            # pushes take this branch.
            if b < hs.sband:
                self._overflow += 1
            tail = hs.tail
            if tail is None:
                assert self._sq is not None  # _head_max is finite only with a store
                tail = self._sq.new_tail(hs)
            tail.append(url)
            tail.append(slot)
            hs.spilled += 1
            self._spilled += 1
            self._queued += 1
            if len(tail) >= self._head_max:
                assert self._sq is not None
                self._sq.put_tail(hs)
            return
        self._queued += 1
        if hs.head < len(items):
            # The two common cases inline (rule 11): the band served, or a higher one.
            if b == hs.band:
                items.append(url)
                items.append(slot)
                return
            more = hs.more
            if b > hs.band and more is not None:
                q = more.get(b)
                if q is not None:
                    q.append(url)
                    q.append(slot)
                    hs.nmore += 2
                    return
        fresh = hs.head == len(items) and not hs.spilled
        bands.insert(hs, url, slot, b)
        if fresh:  # onto a queue with work, a push changes nothing of the host's schedule
            self._n_hosts += 1
            self._sched.filled(hs, now)

    def requeue(self, job: Job, now: float, not_before: float) -> None:
        """Put ``job`` back at the front of its host's queue; the host waits until ``not_before``.

        For retries. It does not end the request: call :meth:`done` for that too.
        """
        hs = self._sched.keep(job.host, now)
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
            hs.band = 0 if self._fifo else band_of(job.depth)
        self._sched.requeued(hs, now, not_before)

    def pop_ready(self, now: float) -> Job | None:
        """The next job that may start at ``now``, marked started; ``None`` if none may yet."""
        sched = self._sched
        hs = sched.next_host(now)
        if hs is None:
            return None
        items = hs.items
        head = hs.head
        if head == len(items):
            # Adopted from a recovered store with its head not read yet (rule 9).
            assert hs.spilled  # the scheduler holds only hosts with work
            self._refill(hs)
            items = hs.items
            head = 0
        url = items[head]
        slot = items[head + 1]
        head += 2
        more = True
        if head == len(items) and hs.more:
            bands.promote(hs)  # the next band (rule 11)
            head = 0
        elif head == len(items) and hs.spilled:
            # Refill the head now (rule 9), so "has work" stays "has a head".
            self._refill(hs)
            head = 0
        elif head == len(items):
            items.clear()
            head = 0
            more = False
            self._n_hosts -= 1
        else:
            items[head - 2] = items[head - 1] = None
            if head >= _COMPACT_AT and head * 2 >= len(items):
                del items[:head]
                head = 0
        hs.head = head
        self._queued -= 1
        sched.start(hs, now, url, more)
        return Job(url, hs.name, slot if slot < DEPTH_BANDS else depth_of(slot))

    def _refill(self, hs: HostState) -> None:
        """The host's RAM ran empty: its next spilled URLs into it, split into bands (rules 9, 11)."""
        sq = self._sq
        assert sq is not None  # spilled only with a store
        self._spilled -= sq.refill(hs)
        bands.reband(hs, self._fifo)
        if hs.sband == _UNKNOWN:  # a recovered host's head, read at last
            hs.sband = bands.top(hs)

    def done(self, host: str, now: float, outcome: Outcome = Outcome.FETCHED, url: str | None = None) -> None:
        """A request of ``host`` ended; it counts in the host's window unless UNREACHED or NOT_STARTED.

        NOT_STARTED (with the job's ``url``): no request was made, and the
        start :meth:`pop_ready` recorded is taken back if it was the host's
        latest (and the IP's, for the IP), so the host's next URL waits only
        for the starts that were requests. A later start stays: taking an
        earlier one back would leave the ceilings' record out of order.
        """
        self._sched.end(host, now, outcome, url)

    # ---------------------------------------------------------------- read-outs

    def __len__(self) -> int:
        return self._queued

    @property
    def n_hosts(self) -> int:
        """Hosts with queued work."""
        return self._n_hosts

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
        ready = self._sched.count_due(now, most)
        return ready, max(self._n_hosts - ready, 0)

    def host_queued(self, host: str) -> int:
        """URLs queued for ``host`` (in RAM and spilled)."""
        hs = self._sched.get(host)
        return 0 if hs is None else bands.ram_slots(hs) // 2 + hs.spilled

    def queued_hosts(self) -> list[str]:
        """Hosts with queued work (for hand-off when ownership changes)."""
        return [h.name for h in self._sched.records() if h.head < len(h.items) or h.spilled]

    def iter_queued(self) -> Iterator[Job]:
        """Every queued job, host by host: those in RAM in the order served, then the spilled
        ones in the store's order (a block is split into bands when it comes back: rule 11)."""
        sq = self._sq
        for hs in self._sched.records():
            yield from self._ram_jobs(hs)
            if hs.spilled and sq is not None:
                name = hs.name
                for url, slot in sq.iter_spilled(hs):
                    yield Job(url, name, depth_of(slot))

    def iter_heads(self) -> Iterator[Job]:
        """The queued jobs held in RAM, host by host in the order served (rule 9: a checkpoint's part)."""
        for hs in self._sched.records():
            yield from self._ram_jobs(hs)

    @staticmethod
    def _ram_jobs(hs: HostState) -> Iterator[Job]:
        flat = bands.ram(hs) if hs.more else hs.items
        start = 0 if hs.more else hs.head
        name = hs.name
        for i in range(start, len(flat), 2):
            yield Job(flat[i], name, depth_of(flat[i + 1]))

    def heads(self) -> list[tuple[str, list[Any]]]:
        """(host, a copy of its head, flat ``[url, slot, ...]``, its bands in order) of every host
        with URLs in RAM (rule 9: a checkpoint's part, packed a host each off the loop, and
        given back to :meth:`adopt`, slots and all: rule 11); a slice a host, no object a URL."""
        return [(hs.name, bands.ram(hs)) for hs in self._sched.records() if hs.head < len(hs.items)]

    @property
    def overflow(self) -> int:
        """URLs spilled behind URLs of a higher band, RAM being full (rule 11)."""
        return self._overflow

    def priority(self, depth: int, boost: int = 0) -> int:
        """The band a URL of ``depth`` and ``boost`` is queued in (rule 11; 0 is served first)."""
        return 0 if self._fifo else band_of(make_slot(depth, boost))

    @property
    def order(self) -> str:
        """``"depth"`` or ``"fifo"`` (rule 11)."""
        return "fifo" if self._fifo else "depth"

    # ------------------------------------------------------------ hand-off (rules 9, 10)

    def remove_host(self, host: str) -> list[Job]:
        """Take away a host's queue (it changed owner); requests in flight still need done().

        The host's start times stay until rule 6 forgets it, so that it
        cannot get a burst should it come back soon (a ring that flaps).
        """
        hs = self._sched.get(host)
        if hs is None:
            return []
        jobs = list(self._ram_jobs(hs))
        if hs.spilled and self._sq is not None:
            self._spilled -= hs.spilled
            jobs += [Job(u, hs.name, depth_of(d)) for u, d in self._sq.drop(hs)]
        if jobs:
            self._queued -= len(jobs)
            self._n_hosts -= 1
        bands.clear(hs)
        self._sched.emptied(hs)
        return jobs

    def release_host(self, host: str) -> list[Job]:
        """Like :meth:`remove_host`, but the host's blocks stay in the store, moving (rule 10)."""
        hs = self._sched.get(host)
        sq = self._sq
        if hs is None or not hs.spilled or sq is None:
            return self.remove_host(host)
        jobs = list(self._ram_jobs(hs))
        self._queued -= hs.spilled + len(jobs)
        self._spilled -= hs.spilled
        self._n_hosts -= 1
        jobs += [Job(u, hs.name, depth_of(d)) for u, d in sq.release(hs)]
        bands.clear(hs)
        self._sched.emptied(hs)
        return jobs

    def release_stored(self, host: str) -> int:
        """Mark a recovered store's queue of ``host`` (not in the frontier) moving; returns its URLs."""
        return self._sq.release_stored(host) if self._sq is not None else 0

    def take_moving(self, limit: int) -> list[tuple[str, list[Any]]]:
        """Blocks of moving hosts, ``(host, [url, depth, ...])``, about ``limit`` URLs in all (rule 10).

        Depths, not slots: they leave the frontier (rule 11; a boost from a
        sitemap travels with the URL's hints instead).
        """
        out = self._sq.take_moving(limit) if self._sq is not None else []
        for _, flat in out:
            for i in range(1, len(flat), 2):
                flat[i] = depth_of(flat[i])
        return out

    def reattach(self, host: str, now: float) -> int:
        """A moving host is ours again: its blocks queue behind its head (rule 10); returns how many."""
        sq = self._sq
        n = sq.unmove(host) if sq is not None else 0
        if not n:
            return 0
        assert sq is not None
        hs = self._sched.get(host)
        if hs is None or (hs.head == len(hs.items) and not hs.spilled):
            if hs is not None:
                sq.park_tail(hs)  # its tail came after the blocks: into the store behind them
            return self.adopt(host, now)
        if not hs.spilled:  # its RAM's highest band bounds what goes behind the blocks (rule 11)
            hs.sband = bands.top(hs)
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

    # ------------------------------------------------------------ host-level calls
    # The scheduler's (peer/core/frontier/scheduler.py), passed on for the
    # frontier's callers, one call to the part each.

    def next_ready_at(self) -> float | None:
        """The earliest time :meth:`pop_ready` could return a job, or ``None``.

        ``None`` means no host has both queued work and a free slot: wait for a
        :meth:`push` or :meth:`done`. A time in the past means "now". A delay
        lowered by a window ending before that time takes effect at the next
        :meth:`pop_ready`, so the answer errs on the polite side.
        """
        return self._sched.next_ready_at()

    def roll_windows(self, now: float) -> None:
        """Close every PID window that ended by ``now`` and forget idle hosts due (rules 3, 6)."""
        self._sched.roll_windows(now)

    def drain_trace(self) -> list[PidSample]:
        """The PID samples recorded since the last call, oldest first."""
        return self._sched.drain_trace()

    def backoff(self, host: str, now: float, retry_after: float | None = None) -> None:
        """The host answered 429/503: double its delay now and honour Retry-After (rule 4)."""
        self._sched.backoff(host, now, retry_after)

    def set_min_delay(self, host: str, seconds: float, now: float | None = None) -> None:
        """Set the host's floor (robots.txt Crawl-delay): delay = max(PID's, floor).

        The floor is capped at ``max_crawl_delay``: a robots.txt asking for
        an hour between requests would otherwise park the host for good.
        """
        self._sched.set_min_delay(host, seconds, now)

    def recent_starts(self, host: str) -> tuple[float, ...]:
        """The host's request starts within the ceiling's longest window, oldest first (rule 7).

        In this frontier's clock (the engine's monotonic time). The engine
        carries them over a restart or a hand-off, translated to wall-clock
        time and back; a host forgotten (rule 6) has none that matter.
        """
        return self._sched.recent_starts(host)

    def seed_starts(self, host: str, times: Iterable[float], now: float) -> None:
        """Count starts made elsewhere (before a restart, by the host's previous owner).

        ``times`` are in this frontier's clock; the engine translates them.
        Times after ``now`` (clock skew) count as ``now``; those older than
        the longest ceiling window are dropped. The newest also counts as
        the host's last start, so its delay runs from it.
        """
        self._sched.seed_starts(host, times, now)

    def set_host_ip(self, host: str, ip: str, now: float) -> None:
        """The host resolves to ``ip``: from now on it shares that IP's budget (rule 8).

        The engine calls it after DNS (or at push time when its DNS cache
        already knows the answer). The host's recent starts, including the
        fetch that resolved it, are counted against the IP. A no-op when
        neither ``ip_rate`` nor ``ip_concurrency`` is set.
        """
        self._sched.set_host_ip(host, ip, now)

    def set_ip_share(self, ip: str, fraction: float, now: float) -> None:
        """This peer's part of ``ip``'s cluster-wide budget, in [MIN_IP_SHARE, 1].

        An IP no host of this frontier resolves to is ignored (call after
        :meth:`set_host_ip`; the gossip re-sends shares). A share that is not
        a finite number is ignored; others are clamped: it comes from
        gossiped counts.
        """
        self._sched.set_ip_share(ip, fraction, now)

    def set_default_ip_share(self, fraction: float) -> None:
        """The share of IPs first seen from now on, until :meth:`set_ip_share` sets theirs.

        BUbiNG's rule, 1/(number of peers), is the safe default for a ring
        before per-IP counts are gossiped; 1.0 (the initial value) for one peer.
        """
        self._sched.set_default_ip_share(fraction)

    def set_ring_ip_share(self, fraction: float, now: float) -> None:
        """This peer's share of the ring, as the share of every IP's budget (rule 8).

        The share of IPs first seen from now on, as :meth:`set_default_ip_share`,
        and of every IP already known whose share :meth:`set_ip_share` did not
        set: an IP first seen while the peer was alone (share 1) or in a smaller
        ring must not keep that larger share once the ring has grown.
        """
        self._sched.set_ring_ip_share(fraction, now)

    @property
    def in_flight(self) -> int:
        """Requests started and not yet done."""
        return self._sched.in_flight

    @property
    def hosts_active(self) -> int:
        """Hosts with at least one request in flight."""
        return self._sched.hosts_active

    @property
    def ceiling_holds(self) -> int:
        """Starts that a host's ceiling (rule 7), not its delay, made wait."""
        return self._sched.ceiling_holds

    @property
    def ip_ceiling_holds(self) -> int:
        """Starts that an IP's ceiling (rules 7, 8), not its delay, made wait."""
        return self._sched.ip_ceiling_holds

    @property
    def n_known(self) -> int:
        """Hosts whose state is kept (queued, in flight, or delay still running)."""
        return self._sched.n_known

    @property
    def n_ips(self) -> int:
        """IP entries kept (rule 8)."""
        return self._sched.n_ips

    @property
    def n_domains(self) -> int:
        """Registered domains' groups kept (rule 8, ``politeness.group = "domain"``)."""
        return self._sched.n_domains

    def known_hosts(self) -> list[str]:
        """Every host the frontier still keeps (rule 6 bounds them): work, in flight or recent starts."""
        return self._sched.known_hosts()

    def host_due(self, host: str, now: float) -> bool | None:
        """Whether ``host``'s next start is due at ``now`` by its own gate, as
        :meth:`host_counts` counts it (ready: True, waiting: False); None without queued work."""
        return self._sched.host_due(host, now)

    def census(self, now: float) -> HostCensus:
        """Hosts with queued work by what they wait for at ``now`` (for status and metrics).

        A scan of the hosts kept (rule 6 bounds them), asked for by an
        operator's scrape or status request, never on the crawl path.
        """
        return self._sched.census(now)

    def busiest(self, now: float, n: int) -> list[tuple[str, float, float]]:
        """The ``n`` hosts with the most starts in the last 5 s: (host, pages/min, setpoint pages/min).

        The rate is the starts in the ceiling's longest window (rule 7 keeps
        every one of them in the host's ring), so it is what the host saw
        lately, not a PID window's count. The setpoint is the host's ``rate``,
        or less under a robots.txt Crawl-delay. Hosts without a rate keep no
        ring of starts and are not listed. A scan like :meth:`census`.
        """
        return self._sched.busiest(now, n)

    def delays(self, limit: int = 2048) -> list[float]:
        """Kept hosts' current delays between request starts, seconds (for quantiles).

        At most ``limit`` of them, every k-th host in the table: quantiles
        from a couple of thousand are as good as from all, and a scrape of a
        peer keeping 100,000 hosts then costs the event loop milliseconds.
        """
        return self._sched.delays(limit)

    def backlogged(self, host: str) -> bool:
        """Whether the host's current PID window is backlogged (will be sampled)."""
        return self._sched.backlogged(host)

    def set_politeness(self, politeness: Politeness, politeness_for: Callable[[str], Politeness] | None,
                       now: float) -> int:
        """A live change of pace (``ring set``): every host paced anew, lazily (scheduler rule 11);
        how many hosts :meth:`refresh` is to look at."""
        return self._sched.repace(politeness, politeness_for, now)

    @property
    def stale(self) -> int:
        """Hosts a live change of pace left for :meth:`refresh`."""
        return self._sched.stale

    def refresh(self, now: float, most: int) -> int:
        """Pace anew up to ``most`` hosts a live change left (scheduler rule 11); how many are left."""
        return self._sched.refresh(now, most)

    def host_delay(self, host: str) -> float:
        """The host's delay between request starts now (a new host's for unknown ones)."""
        return self._sched.host_delay(host)

    def host_ip(self, host: str) -> str | None:
        """The IP the host is paced under (rule 8), or None."""
        return self._sched.host_ip(host)

    def ip_delay(self, ip: str) -> float:
        """The delay between request starts to ``ip`` on this peer (0 if unknown or unpaced)."""
        return self._sched.ip_delay(ip)

    def host_domain(self, host: str) -> str | None:
        """The registered domain the host is paced under (``politeness.group = "domain"``, rule 8), or None."""
        return self._sched.host_domain(host)

    def domain_delay(self, domain: str) -> float:
        """The delay between request starts to ``domain``'s hosts on this peer (0 if unknown or unpaced)."""
        return self._sched.domain_delay(domain)
