"""The per-host frontier: FIFO queues of URLs and a polite scheduler over hosts.

Per-host FIFO queues as in Mercator's frontier (Heydon and Najork, "Mercator:
A scalable, extensible Web crawler", World Wide Web 2(4), 1999), and each host
paced by a PID controller on the delay between its requests (peer/core/pid.py).
This module is the pure core of both: it takes ``now`` and returns the next :class:`Job` that may start, so the
engine's loop is "sleep until :meth:`Frontier.next_ready_at`, :meth:`pop_ready`,
fetch, :meth:`done`", and tests drive it synchronously. docs/politeness.md
derives the numbers used here.

Rules (every transition lives in this file):

1. A host may start a request when its *delay* has passed since its last
   request **started**, no Retry-After/retry hold is pending, fewer than
   ``host_concurrency`` of its requests are in flight, its ceiling (rule 7)
   allows one more start and, once its IP address is known, so does the IP's
   budget (rule 8). The delay is ``max(pid.delay, floor)``: the floor is
   robots.txt's Crawl-delay. A new host starts at the nominal delay
   ``60/rate`` (or ``initial_delay`` if set) and the PID never takes it below
   ``floor_delay`` (``min_delay``, or nominal/1.1 if unset).
   With ``rate == 0`` there is no PID and the delay is the floor only (plus a
   backoff penalty, rule 4). News about a host whose last start is unknown
   (a Crawl-delay or a backoff for a new or forgotten host) counts from
   ``now``: the answer that brought it was itself a request. A job that
   ends in no request at all (``Outcome.NOT_STARTED``: robots.txt disallows
   its URL, its host moved or was given up) gives its start back, if no later
   start of the host (or of its IP) came since: its host's next URL waits
   only for the starts that were requests.
2. Among ready hosts the one ready earliest goes first; "ready" counts from
   the moment the host had work and was free, so a host that has waited longer
   is not overtaken by one that just received a URL.
3. PID windows (the controller T_k = T_{k-1} + Kp*(S - n) + ..., scale-free: peer/core/pid.py): every host
   measures ``n``, the fetches
   completed in each window of ``window`` seconds. At the window's end, and
   only if the host was *backlogged* during it, ``pid.update(n)`` sets the new
   delay and a :class:`PidSample` is traced. Backlogged means: at some moment
   it had queued work that its own *delay* kept from starting. Work held back
   by the concurrency cap does not count: then the delay is not what limits
   the rate, and a slow host capped below its setpoint would otherwise wind
   its delay down to ``min_delay`` and be hammered once it answers fast again.
   A Retry-After hold does not count either: that is the server's pacing, not
   the controller's. Nor is a window *under* the setpoint a sample if in it
   something other than the delay held a start back: the IP's budget (rule
   8), or the concurrency cap after the delay had passed (a request ended
   later than ``last_start + delay`` with all slots busy). Marking "gated" at
   the moment of a start is not enough for ``host_concurrency`` > 1: right
   after a start a slot is free and the delay runs, so a host capped at
   4 slots x 1 s latency = 240/min under a setpoint of 1200 looked
   backlogged every window and wound its delay down to the floor. A window *over* the setpoint in which URLs waited (held
   by the concurrency cap, say) is a sample too: "too fast" is never
   windup, and a host whose delay fell below its fetch time (its fetches,
   not its delay, set the pace) would otherwise run over the setpoint for
   good. Anti-windup: the seed clamps the integral
   ("限制误差积分项的最大值"); more is needed here, because an idle host measures
   ``n = 0 < S`` window after window, which the law reads as "too slow" and so
   winds the delay down to ``min_delay``; its next burst of URLs would then be
   fetched back to back. An idle window says nothing about the delay, so it is
   not a sample. Nor is a host's first window if its queue ran dry in it:
   the host was just found and its URLs were still trickling in, so its
   ``n`` is short, and the law would answer with a faster delay and an
   overshoot the next window (scripts/bench_ring.py, 20 pages a window:
   windows of 13 then 26; 177 windows over +10% of 1400, 17 without them).
   Each host's windows start at its first push (so deadlines
   spread out); they are rolled lazily when a host is touched and by a heap
   of window deadlines; after a long silence at most one catch-up sample is
   taken and the rest are jumped over, not looped.
4. Backoff (429/503): the host's delay is doubled at once (capped at
   ``max_delay``; without a PID by at least ``BACKOFF_MIN_STEP``, so a host at
   delay 0 is slowed) as a *penalty*: delay = max(PID's, penalty, floor), and
   the penalty is halved every window after it, so a host that got k 429s in
   a row is back at its rate after about k windows whatever the rate. The
   PID keeps its delay (its integral is discarded: error gathered before the
   server complained), and a window in which the penalty set the pace is no
   "too slow" sample: that is the server's pacing, not the controller's.
   (Re-seeding the PID at the doubled delay, as before, left it to walk back
   additively: after 30 s of 429s at 600 pages/min the delay had doubled 8
   times, to 25.6 s, and the scale-free law needed hundreds of windows.)
   Retry-After holds the host until ``now + retry_after``.
5. Counting (:class:`Outcome`): a fetch that reached the server counts in
   ``n``, whatever its status, because the server did the work; a fetch that
   never reached it (DNS failure, connection refused) does not.
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
   host refers to it and its own delay and ceiling window have passed.
   Without this, a crawl of millions of hosts would keep millions of structs
   for nothing.
7. Ceiling: whatever the PID, retries, robots.txt fetches, redirects or
   hand-offs do, a host never gets more than ``ceiling(rate, W)`` =
   ceil(1.1 x rate/60 x W) + 1 request starts in any W-second window, for W
   in ``CEILING_WINDOWS`` (1 s and 5 s). Starts are counted at
   :meth:`Frontier.pop_ready`, kept in a ring of the last ``ceiling(rate, 5)``
   start times (the k-th newest start + W is when a window of W seconds holds
   fewer than k), and can be exported and imported (:meth:`recent_starts`,
   :meth:`seed_starts`) so that a restart or a hand-off does not reset the
   count. The floor nominal/1.1 alone keeps any W-window to ceil(1.1 x rate/60
   x W) starts; the ring is the guarantee when something else (a seeded
   history, a ``min_delay`` set below the floor) would not.
8. Per IP (BUbiNG, Nutch, StormCrawler): hosts whose IP address is known
   (:meth:`set_host_ip`) are grouped by it, and the group is paced like one
   host at ``ip_rate`` x share pages per minute (share: this peer's part of
   the cluster-wide budget, :meth:`set_ip_share`), with the same ceiling on
   that rate, at most ``ip_concurrency`` x share (at least 1) fetches in
   flight. A host whose IP is not known yet is paced per host only: its first
   fetch, which resolves it, is not counted against the IP's budget before it
   starts (it is counted after, when the engine reports the IP).
   Scheduling is two-level (BUbiNG's workbench): the global ready heap holds
   hosts without an IP and IP entries; each IP entry holds a heap of its ready
   hosts and sits in the global heap at max(its own gate, its earliest host).

9. Spill (Mercator's frontier, whose per-host queues are "stored on disk"
   apart from a buffer at each end; BUbiNG's workbench virtualizer): with
   a :class:`SpillStore` attached, a host keeps at most ``head_per_host``
   URLs of its queue in RAM, the *head*; a push onto a full head, or onto
   a host that has spilled URLs already, goes to its *tail*, and a tail of
   ``head_per_host`` URLs goes to the store as one block (one call a
   block, not a URL: the push path stays as fast as without a store). When
   a pop empties the head it is refilled at once, from the store's first
   block or, with none left, from the tail, so a host with work always has
   a non-empty head and rules 1-8 read only the head. Order is unchanged:
   head, the store's blocks, tail; a requeue goes in front of the head as
   before. :meth:`Frontier.flush_tails` hands every tail to the store (a
   checkpoint: then the store and the heads hold the whole queue). The store is the only I/O seam: the frontier calls
   it and stays pure (:class:`MemorySpill` for tests, peer/state/spill.py on
   disk).
10. Moving (a host changed owner): :meth:`Frontier.release_host` gives back
   only what is in RAM, the head and the tail, and leaves the host's blocks
   in the store, *moving*; :meth:`Frontier.take_moving` hands them out a few
   blocks at a time for the driver to pass on, so a ring change costs the
   loop the heads, not the queue (passing on 3 M spilled URLs at once stalled
   a peer 72 s, past dead_after: scripts/bench_scale.py). Moving URLs count
   in :attr:`Frontier.moving`, not in ``len()``; a moving host that becomes
   ours again (a push, or :meth:`Frontier.reattach`) takes its blocks back
   as spilled ones, behind its head.

Every operation is O(log hosts): heaps with lazy deletion (an entry is live
only if its sequence number is still its owner's), never a scan of hosts
(set_host_ip and seed_starts also copy one ring of start times).
``now`` must not go backwards.
"""

from __future__ import annotations

import enum
import heapq
import math
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, TypeVar

from peer.core.config import PolitenessConfig
from peer.errors import PeerError
from peer.core.pid import PID

__all__ = [
    "BACKOFF_MIN_STEP", "CEILING_FACTOR", "CEILING_WINDOWS", "Frontier", "HostCensus", "Job", "MemorySpill",
    "Outcome", "PidSample", "Politeness", "SpillStore", "ceiling",
]

#: Without a PID (rate 0) a backoff raises the delay by at least this many
#: seconds, so a host at delay 0 is actually slowed down.
BACKOFF_MIN_STEP = 1.0

#: Rule 7: at most ceil(CEILING_FACTOR x rate/60 x W) + 1 starts in any W
#: seconds. 10 % over the setpoint plus one start: one start is the counting
#: resolution of a window (a window can hold both ends of a period), 10 % the
#: PID's room to make up for time lost to holds.
CEILING_FACTOR = 1.1
CEILING_WINDOWS = (1.0, 5.0)
_HORIZON = max(CEILING_WINDOWS)

#: set_ip_share clamps into [MIN_IP_SHARE, 1]: the share is computed from
#: gossiped counts, remote data that must not park an IP for good.
MIN_IP_SHARE = 0.001

_NEG_INF = float("-inf")
_NO_CAP = 1 << 62
# A fully popped prefix of a host's queue is cut off once it is this long and
# at least half the list; amortised O(1) popleft without a deque's 760 bytes.
_COMPACT_AT = 64


# The settings are cluster.toml's [politeness] section, defaults and all; the
# frontier takes that object as it is, so there is one place for the defaults.
Politeness = PolitenessConfig


def ceiling(rate: float, window: float) -> int:
    """Rule 7: the most request starts allowed in any ``window`` seconds at ``rate`` pages/min."""
    # round(): 1.1 * 10 * 5 is 55.00000000000001 in binary floating point.
    return math.ceil(round(CEILING_FACTOR * rate / 60.0 * window, 9)) + 1


def new_pid(pol: Politeness, initial_delay: float | None = None) -> PID:
    """A fresh, scale-free controller for a host at ``initial_delay`` (default: the start delay)."""
    lo, hi = pol.floor_delay, pol.max_delay
    d = pol.start_delay if initial_delay is None else initial_delay
    d = min(max(d, lo), hi)
    return PID(pol.kp, pol.ki, pol.kd, pol.setpoint, d, lo, hi, pol.integral_limit,
               nominal_delay=pol.nominal_delay)


@dataclass(frozen=True, slots=True)
class Job:
    """One URL to fetch. ``host`` is the frontier's interned host string."""

    url: str
    host: str
    depth: int


@dataclass(frozen=True, slots=True)
class PidSample:
    """One PID update: ``n`` pages in the window ending at ``window_end`` gave ``delay``."""

    host: str
    window_end: float
    n: int
    delay: float


@dataclass(frozen=True, slots=True)
class HostCensus:
    """Hosts with queued work by state: may start now, on their delay or ceiling,
    held (Retry-After, a robots.txt retry), all their slots in flight."""

    ready: int
    waiting: int
    held: int
    busy: int


class Outcome(enum.StrEnum):
    """How a request ended, for counting it in the host's window (rule 5)."""

    FETCHED = "fetched"  # an HTTP response, any status: counts
    FAILED = "failed"  # reached the server, then failed (timeout, reset): counts
    UNREACHED = "unreached"  # never reached the server (DNS, refused): does not count
    # No request was made at all (robots.txt disallows the URL, its host moved
    # or was given up): does not count, and its start is taken back (rule 1).
    NOT_STARTED = "not_started"


# ------------------------------------------------------------ the spill seam (rule 9)


class SpillStore(Protocol):
    """Per-host FIFO queues of blocks of (url, depth) behind the in-RAM heads (rule 9)."""

    def put(self, host: str, flat: list[Any]) -> None:
        """Queue a block, flat ``[url, depth, url, depth, ...]``, at the end of ``host``'s queue
        (the store keeps the list)."""

    def take(self, host: str) -> list[Any]:
        """``host``'s first block, flat; only when :meth:`count` is not 0."""

    def drop(self, host: str) -> list[tuple[str, int]]:
        """Remove and return every URL spilled for ``host``, in order."""

    def iter_host(self, host: str) -> Iterator[tuple[str, int]]:
        """``host``'s spilled URLs in order, left in place."""

    def count(self, host: str) -> int:
        """URLs spilled for ``host``."""

    def hosts(self) -> list[str]:
        """Hosts with spilled URLs."""


class MemorySpill:
    """A :class:`SpillStore` in RAM (for the pure tests)."""

    def __init__(self) -> None:
        self._q: dict[str, list[list[Any]]] = {}
        self.takes = 0

    def put(self, host: str, flat: list[Any]) -> None:
        if flat:
            self._q.setdefault(host, []).append(flat)

    def take(self, host: str) -> list[Any]:
        q = self._q[host]
        self.takes += 1
        out = q.pop(0)
        if not q:
            del self._q[host]
        return out

    def drop(self, host: str) -> list[tuple[str, int]]:
        blocks = self._q.pop(host, [])
        return [p for b in blocks for p in zip(b[::2], b[1::2])]

    def iter_host(self, host: str) -> Iterator[tuple[str, int]]:
        for b in self._q.get(host, ()):
            yield from zip(b[::2], b[1::2])

    def count(self, host: str) -> int:
        return sum(len(b) for b in self._q.get(host, ())) // 2

    def hosts(self) -> list[str]:
        return list(self._q)


# ------------------------------------------------------------ start rings
# A ring of the newest start times: array('d') (8 bytes a start, not a list's
# 32), ``pos`` the slot of the oldest, which the next start overwrites.


def _ring(n: int, times: Iterable[float] = ()) -> array[float]:
    vals = sorted(times)[-n:]
    return array("d", [_NEG_INF] * (n - len(vals)) + vals)


def _ring_times(buf: array[float] | None, pos: int, since: float) -> list[float]:
    if buf is None:
        return []
    return [t for t in (*buf[pos:], *buf[:pos]) if t > since]


def _ring_gate(buf: array[float] | None, pos: int, limits: tuple[tuple[float, int], ...]) -> float:
    """When one more start keeps every window of ``limits`` under its count."""
    if buf is None:
        return _NEG_INF
    n = len(buf)
    t = _NEG_INF
    for w, k in limits:
        s = buf[(pos - k) % n] + w
        if s > t:
            t = s
    return t


class _Host:
    """Mutable per-host state; small, since there may be a million of them."""

    __slots__ = (
        "name", "items", "head", "spilled", "tail", "in_flight", "last_start", "hold_until",
        "floor", "pid", "penalty", "penalty_at", "since",
        "win_start", "win_n", "backlog", "fresh", "dry", "waiting", "held",
        "starts", "spos", "ip", "rguard", "rseq", "rkey", "tseq", "tkey", "undo",
    )

    def __init__(self, name: str, now: float, pid: PID | None) -> None:
        self.name = name
        # The queue: url, depth, url, depth, ... from index ``head`` on (one
        # flat list, no tuple per URL; typed Any, as its items alternate).
        self.items: list[Any] = []
        self.head = 0
        self.spilled = 0  # URLs of its queue after ``items``: in the spill store, then ``tail`` (rule 9)
        self.tail: list[Any] | None = None  # url, depth, ... not yet a block (rule 9)
        self.in_flight = 0
        self.last_start = _NEG_INF
        self.hold_until = _NEG_INF
        self.floor = 0.0
        self.pid = pid
        self.penalty = 0.0  # backoff delay (rule 4), halved every window
        self.penalty_at = 0.0
        self.since = now  # when it last became free with work (rule 2)
        self.win_start = now
        self.win_n = 0
        self.backlog = False
        self.fresh = True  # still in its first window
        self.dry = False  # its queue ran dry since it was created (rule 3)
        self.waiting = False  # URLs waited in this window (rule 3)
        self.held = False  # its cap or its IP, not its delay, held a start back (rule 3)
        self.starts: array[float] | None = None  # ring of start times (rule 7), made at the first start
        self.spos = 0
        self.ip: _Ip | None = None
        self.rguard = False  # its ready time was set by its ceiling (counted at the start)
        self.rseq = 0  # seq of its live ready-heap entry, 0 = none
        self.rkey = 0.0
        self.tseq = 0  # seq of its live timer-heap entry, 0 = none
        self.tkey = 0.0
        # What its latest start changed, to take it back (Outcome.NOT_STARTED);
        # None once that job is done.
        self.undo: _Undo | None = None


class _Undo(NamedTuple):
    """What one start changed (Frontier.pop_ready), for Frontier.done(NOT_STARTED)."""

    url: str
    start: float
    last: float  # the host's last_start before
    slot: float  # the value its ring slot held before
    spos: int  # the host's ring position after the start
    ring: array[float] | None  # the host's ring it wrote to (a rebuilt ring is a new array)
    ip: _Ip | None
    ip_last: float
    ip_slot: float
    ip_spos: int
    ip_ring: array[float] | None


class _Ip:
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
        self.last_start = _NEG_INF
        self.in_flight = 0
        self.nref = 0  # hosts whose state is kept and that resolve here
        # (ready_at, seq, host) of its hosts with queued work and a free slot.
        self.heap: list[tuple[float, int, _Host]] = []
        self.rguard = False
        self.rseq = 0
        self.rkey = 0.0
        self.tseq = 0
        self.tkey = 0.0


#: A heap entry's object: a host, or an IP in the global heap (rule 8).
_E = TypeVar("_E", "_Host", "_Ip", "_Host | _Ip")


class Frontier:
    """Per-host FIFO queues and the polite, PID-paced choice of the next job."""

    __slots__ = (
        "_pol", "_cap", "_window", "_pid_on", "_fresh_delay", "_hosts", "_ready", "_timers",
        "_seq", "_queued", "_n_hosts", "_in_flight", "_active", "_trace", "_clock",
        "_limits", "_ring_n", "_ips", "_ip_on", "_default_share",
        "_ceiling_holds", "_ip_ceiling_holds", "_spill", "_head_max", "_spilled", "_refills", "_tailed",
        "_moving", "_moving_urls",
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
        self._hosts: dict[str, _Host] = {}
        self._ips: dict[str, _Ip] = {}
        self._ip_on = pol.ip_rate > 0 or pol.ip_concurrency > 0
        self._default_share = 1.0
        # (ready_at, seq, host or IP): hosts without an IP, with queued work and
        # a free slot, and IPs with such a host (rule 8).
        self._ready: list[tuple[float, int, _Host | _Ip]] = []
        # (deadline, seq, host or IP): a busy host's window end, an idle one's
        # or an unreferenced IP's forget time.
        self._timers: list[tuple[float, int, _Host | _Ip]] = []
        self._seq = 0
        self._queued = 0
        self._n_hosts = 0
        self._in_flight = 0
        self._active = 0
        self._trace: list[PidSample] = []
        self._clock = _NEG_INF
        self._ceiling_holds = 0
        self._ip_ceiling_holds = 0
        self._spill: SpillStore | None = None
        self._head_max = _NO_CAP
        self._spilled = 0
        self._refills = 0
        self._tailed: dict[str, _Host] = {}  # hosts that may have a tail (rule 9)
        # Hosts given away whose blocks are still in the store (rule 10): URLs left.
        self._moving: dict[str, int] = {}
        self._moving_urls = 0
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
        if head_per_host < 1:
            raise PeerError(f"frontier: head_per_host must be at least 1, not {head_per_host}")
        self._spill = spill
        self._head_max = 2 * head_per_host  # in slots of ``_Host.items``: url, depth

    def flush_tails(self) -> int:
        """Hand every host's tail to the store as a block (rule 9; before a checkpoint); returns how many."""
        spill = self._spill
        n = 0
        if spill is not None:
            for hs in self._tailed.values():
                if hs.tail:
                    spill.put(hs.name, hs.tail)
                    n += 1
                hs.tail = None
        self._tailed.clear()
        return n

    def adopt(self, host: str, now: float) -> int:
        """Queue the URLs the spill store already holds for ``host`` (a recovered store).

        Before any other URL of that host is pushed; returns how many.
        """
        spill = self._spill
        if spill is None:
            return 0
        n = spill.count(host)
        if n == 0:
            return 0
        hs = self._touch(host, now)
        if hs.head < len(hs.items) or hs.spilled:
            raise PeerError(f"frontier: adopt({host!r}) of a host with queued URLs")
        chunk = spill.take(host)
        self._refills += 1
        hs.items[:] = chunk
        hs.head = 0
        hs.spilled = n - len(chunk) // 2
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
            # Behind a full head (rule 9); the head is not empty, so nothing
            # about the host's schedule changes, as for any push onto work.
            tail = hs.tail
            if tail is None:
                hs.tail = tail = []
                self._tailed[hs.name] = hs
            tail.append(url)
            tail.append(depth)
            hs.spilled += 1
            self._spilled += 1
            self._queued += 1
            if len(tail) >= self._head_max:
                spill = self._spill
                assert spill is not None  # _head_max is finite only with a store
                spill.put(hs.name, tail)
                hs.tail = []
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
            if isinstance(obj, _Ip):
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
                tail = hs.tail
                if tail and len(tail) == 2 * hs.spilled:
                    chunk, hs.tail = tail, []  # no block left: the tail is next
                else:
                    spill = self._spill
                    assert spill is not None  # spilled only with a store
                    chunk = spill.take(hs.name)
                    self._refills += 1
                got = len(chunk) // 2
                if got == 0:
                    raise PeerError(f"frontier: the spill store lost {hs.spilled} URLs of {hs.name!r}")
                items[:] = chunk
                head = 0
                hs.spilled -= got
                self._spilled -= got
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
            slot = ip_last = ip_slot = _NEG_INF
            last = hs.last_start
            ip_spos = -1
            hs.last_start = now
            if self._ring_n:
                if hs.starts is None:
                    hs.starts = _ring(self._ring_n)
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
            hs.undo = _Undo(url, now, last, slot, hs.spos, hs.starts, ip, ip_last, ip_slot, ip_spos,
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
            self._roll(hs, now)
        if (hs.in_flight == self._cap and hs.head < len(hs.items)
                and now > hs.last_start + self._delay(hs, now)):
            hs.held = True  # a start waited for this slot, not for the delay (rule 3)
        undo = hs.undo
        if undo is not None and undo.url == url:
            hs.undo = None
            if outcome is Outcome.NOT_STARTED:
                self._take_back(hs, undo)
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

    def _take_back(self, hs: _Host, undo: _Undo) -> None:
        """Undo what the start ``undo`` recorded, where no later start came since.

        "Since" is checked on each record: the last start, the ring's position
        and the ring itself (seeding starts from a restart or a hand-off builds
        a new one). Where anything else moved, the start stays counted: more
        polite, never less.
        """
        if hs.last_start == undo.start and hs.spos == undo.spos and hs.starts is undo.ring:
            hs.last_start = undo.last
            if hs.starts is not None:
                hs.spos = (hs.spos - 1) % len(hs.starts)
                hs.starts[hs.spos] = undo.slot
        ip = undo.ip
        if (ip is not None and ip is hs.ip and ip.last_start == undo.start and ip.spos == undo.ip_spos
                and ip.starts is undo.ip_ring):
            ip.last_start = undo.ip_last
            if ip.starts is not None:
                ip.spos = (ip.spos - 1) % len(ip.starts)
                ip.starts[ip.spos] = undo.ip_slot

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
        if hs.last_start == _NEG_INF:
            hs.last_start = now  # unknown (new or forgotten host): see set_min_delay
        pol = self._pol
        eff = self._delay(hs, now)
        if hs.pid is not None:
            new = min(pol.max_delay, 2.0 * eff)
            hs.pid = new_pid(pol, hs.pid.delay)
            hs.held = True
        else:
            new = min(pol.max_delay, max(2.0 * eff, eff + BACKOFF_MIN_STEP))
        if new > hs.penalty:
            hs.penalty = new
            hs.penalty_at = now
        if retry_after is not None and now + retry_after > hs.hold_until:
            hs.hold_until = now + retry_after
        self._schedule_ready(hs, now)
        self._schedule_timer(hs)

    def set_min_delay(self, host: str, seconds: float, now: float | None = None) -> None:
        """Set the host's floor (robots.txt Crawl-delay): delay = max(PID's, floor).

        The floor is capped at ``max_crawl_delay``: a robots.txt asking for
        an hour between requests would otherwise park the host for good.
        """
        if now is None:
            now = self._clock if self._clock > _NEG_INF else 0.0
        hs = self._touch(host, now)
        if hs.last_start == _NEG_INF:
            # Unknown last start (a new or forgotten host): the answer that
            # brought this news was itself a request, so count from now.
            hs.last_start = now
        hs.floor = min(max(0.0, seconds), self._pol.max_crawl_delay)
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
        since = self._clock - _HORIZON
        if hs.starts is not None:
            return tuple(_ring_times(hs.starts, hs.spos, since))
        return (hs.last_start,) if hs.last_start > since else ()

    def seed_starts(self, host: str, times: Iterable[float], now: float) -> None:
        """Count starts made elsewhere (before a restart, by the host's previous owner).

        ``times`` are in this frontier's clock; the engine translates them.
        Times after ``now`` (clock skew) count as ``now``; those older than
        the longest ceiling window are dropped. The newest also counts as
        the host's last start, so its delay runs from it.
        """
        hs = self._touch(host, now)
        vals = [min(float(t), now) for t in times if t == t and t > now - _HORIZON]
        if not vals:
            return
        if self._ring_n:
            old = _ring_times(hs.starts, hs.spos, now - _HORIZON)
            hs.starts = _ring(self._ring_n, old + vals)
            hs.spos = 0
        newest = max(vals)
        if newest > hs.last_start:
            hs.last_start = newest
        if hs.ip is not None:
            self._ip_add_starts(hs.ip, vals, now)
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
            new = self._ips[ip] = _Ip(ip)
            self._configure_ip(new, self._default_share, now)
        if old is not None:
            old.nref -= 1
            old.in_flight -= hs.in_flight
        new.nref += 1
        new.in_flight += hs.in_flight
        if hs.starts is not None:
            recent = _ring_times(hs.starts, hs.spos, now - _HORIZON)
        else:
            recent = [hs.last_start] if hs.last_start > now - _HORIZON else []
        self._ip_add_starts(new, recent, now)
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
        if entry is None or not isinstance(fraction, (int, float)) or not math.isfinite(fraction):
            return
        self._clock = now
        self._configure_ip(entry, fraction, now)
        self._schedule_ip(entry)

    def set_default_ip_share(self, fraction: float) -> None:
        """The share of IPs first seen from now on, until :meth:`set_ip_share` sets theirs.

        BUbiNG's rule, 1/(number of peers), is the safe default for a ring
        before per-IP counts are gossiped; 1.0 (the initial value) for one peer.
        """
        if isinstance(fraction, (int, float)) and math.isfinite(fraction):
            self._default_share = min(max(float(fraction), MIN_IP_SHARE), 1.0)

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
        return self._spilled

    @property
    def refills(self) -> int:
        """Heads refilled from the spill store (rule 9)."""
        return self._refills

    @property
    def spill_store(self) -> SpillStore | None:
        """The spill store attached (rule 9), or None."""
        return self._spill

    @property
    def head_per_host(self) -> int:
        """URLs a host keeps in RAM before the rest spill; 0 without a store (rule 9)."""
        return self._head_max // 2 if self._spill is not None else 0

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
        ready = waiting = held = busy = 0
        for hs in self._hosts.values():
            if hs.head >= len(hs.items):
                continue
            if hs.hold_until > now:
                held += 1
            elif hs.in_flight >= self._cap:
                busy += 1
            elif hs.rseq and hs.rkey <= now:
                ready += 1
            else:
                waiting += 1
        return HostCensus(ready, waiting, held, busy)

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
        since = now - _HORIZON
        counts = []
        for hs in self._hosts.values():
            if hs.last_start > since and hs.starts is not None:
                k = sum(1 for t in hs.starts if t > since)
                counts.append((k, hs.name, hs.floor))
        out = []
        for k, name, floor in heapq.nlargest(n, counts):
            setpoint = self._pol.rate if floor <= 0 else min(self._pol.rate, 60.0 / floor)
            out.append((name, k * 60.0 / _HORIZON, setpoint))
        return out

    def delays(self, limit: int = 2048) -> list[float]:
        """Kept hosts' current delays between request starts, seconds (for quantiles).

        At most ``limit`` of them, every k-th host in the table: quantiles
        from a couple of thousand are as good as from all, and a scrape of a
        peer keeping 100,000 hosts then costs the event loop milliseconds.
        """
        now = self._clock
        hosts = list(self._hosts.values())
        step = max(1, -(-len(hosts) // limit)) if limit > 0 else 1
        return [self._delay(hs, now) for hs in hosts[::step]]

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
        ready = self._due(self._ready, now, most)
        return ready, max(self._n_hosts - ready, 0)

    def _due(self, heap: Sequence[tuple[float, int, _Host | _Ip]], now: float, most: int) -> int:
        n = 0
        todo = [0]
        size = len(heap)
        while todo and n < most:
            i = todo.pop()
            if i >= size:
                continue
            key, seq, obj = heap[i]
            if key > now:
                continue
            if obj.rseq == seq:
                n += self._due(obj.heap, now, most - n) if type(obj) is _Ip else 1
            todo.append(2 * i + 1)
            todo.append(2 * i + 2)
        return n

    def backlogged(self, host: str) -> bool:
        """Whether the host's current PID window is backlogged (will be sampled)."""
        hs = self._hosts.get(host)
        return hs is not None and hs.backlog

    def host_delay(self, host: str) -> float:
        """The host's delay between request starts now (a new host's for unknown ones)."""
        hs = self._hosts.get(host)
        if hs is None:
            return self._fresh_delay
        return self._delay(hs, self._clock)

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
        spill = self._spill
        for hs in list(self._hosts.values()):
            items = hs.items
            name = hs.name
            for i in range(hs.head, len(items), 2):
                yield Job(items[i], name, items[i + 1])
            if hs.spilled and spill is not None:
                for url, depth in spill.iter_host(name):
                    yield Job(url, name, depth)
                tail = hs.tail or ()
                for i in range(0, len(tail), 2):
                    yield Job(tail[i], name, tail[i + 1])

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
        if hs.spilled and self._spill is not None:
            jobs += [Job(u, hs.name, d) for u, d in self._spill.drop(hs.name)]
            tail = hs.tail or []
            jobs += [Job(tail[i], hs.name, tail[i + 1]) for i in range(0, len(tail), 2)]
            hs.tail = None
            self._spilled -= hs.spilled
            hs.spilled = 0
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
        spill = self._spill
        if hs is None or not hs.spilled or spill is None:
            return self.remove_host(host)
        items = hs.items
        jobs = [Job(items[i], hs.name, items[i + 1]) for i in range(hs.head, len(items), 2)]
        tail = hs.tail or []
        jobs += [Job(tail[i], hs.name, tail[i + 1]) for i in range(0, len(tail), 2)]
        hs.tail = None
        stored = hs.spilled - len(tail) // 2
        self._spilled -= hs.spilled
        self._queued -= hs.spilled + (len(items) - hs.head) // 2
        self._n_hosts -= 1
        hs.spilled = 0
        if stored:
            self._moving[host] = self._moving.get(host, 0) + stored
            self._moving_urls += stored
        items.clear()
        hs.head = 0
        hs.rseq = 0
        if hs.ip is not None:
            self._schedule_ip(hs.ip)
        self._schedule_timer(hs)
        return jobs

    def release_stored(self, host: str) -> int:
        """Mark a recovered store's queue of ``host`` (not in the frontier) moving; returns its URLs."""
        spill = self._spill
        if spill is None or host in self._moving:
            return 0
        n = spill.count(host)
        if n:
            self._moving[host] = n
            self._moving_urls += n
        return n

    def take_moving(self, limit: int) -> list[tuple[str, list[Any]]]:
        """Blocks of moving hosts, ``(host, [url, depth, ...])``, about ``limit`` URLs in all (rule 10)."""
        spill = self._spill
        out: list[tuple[str, list[Any]]] = []
        if spill is None:
            return out
        got = 0
        while got < limit and self._moving:
            host = next(iter(self._moving))
            chunk = spill.take(host)
            n = len(chunk) // 2
            left = self._moving[host] - n
            if n == 0 or left <= 0:
                del self._moving[host]
                self._moving_urls -= n + max(left, 0)
            else:
                self._moving[host] = left
                self._moving_urls -= n
            if n:
                out.append((host, chunk))
                got += n
        return out

    def reattach(self, host: str, now: float) -> int:
        """A moving host is ours again: its blocks queue behind its head (rule 10); returns how many."""
        n = self._moving.pop(host, 0)
        if not n:
            return 0
        self._moving_urls -= n
        hs = self._hosts.get(host)
        if hs is None or (hs.head == len(hs.items) and not hs.spilled):
            if hs is not None and hs.tail:
                # Its tail came after the blocks: into the store behind them.
                spill = self._spill
                assert spill is not None
                spill.put(host, hs.tail)
                hs.tail = None
            return self.adopt(host, now)
        hs.spilled += n
        self._spilled += n
        self._queued += n
        if hs.tail:
            self._tailed[host] = hs
        return n

    @property
    def moving(self) -> int:
        """URLs in the store of hosts no longer ours, still to be passed on (rule 10)."""
        return self._moving_urls

    # ------------------------------------------------------------- internals

    def _touch(self, host: str, now: float) -> _Host:
        """The host's state, created or with its window rolled up to ``now``."""
        self._clock = now
        hs = self._hosts.get(host)
        if hs is None:
            hs = _Host(host, now, new_pid(self._pol) if self._pid_on else None)
            self._hosts[host] = hs  # the caller schedules its timer
        elif self._pid_on and now >= hs.win_start + self._window:
            self._roll(hs, now)
            self._schedule_ready(hs, now)
            self._schedule_timer(hs)
        return hs

    def _penalty(self, hs: _Host, now: float) -> float:
        d = hs.penalty
        if d:
            k = (now - hs.penalty_at) // self._window
            if k >= 1:
                # Halve once per window; below 1 ms it is gone.
                d = d * 0.5 ** min(k, 64.0)
                if d < 1e-3:
                    d = 0.0
                hs.penalty = d
                hs.penalty_at += k * self._window
        return d

    def _delay(self, hs: _Host, now: float) -> float:
        d = self._penalty(hs, now)
        if hs.pid is not None and hs.pid.delay > d:
            d = hs.pid.delay
        return d if d > hs.floor else hs.floor

    def _gated(self, hs: _Host, t: float) -> bool:
        """Had queued work at ``t`` that its own delay kept from starting (rule 3)."""
        return (
            hs.head < len(hs.items)
            and t >= hs.hold_until
            and hs.in_flight < self._cap
            and t < hs.last_start + self._delay(hs, t)
        )

    def _mark(self, hs: _Host, now: float) -> None:
        if self._pid_on and not hs.backlog and self._gated(hs, now):
            hs.backlog = True

    def _sample(self, hs: _Host, window_end: float, n: int) -> None:
        assert hs.pid is not None  # windows are rolled only with the PID on
        delay = hs.pid.update(n)
        self._trace.append(PidSample(hs.name, window_end, n, delay))

    def _roll(self, hs: _Host, now: float) -> None:
        """Close the host's windows that ended by ``now`` (rule 3)."""
        assert hs.pid is not None  # windows are rolled only with the PID on
        w = self._window
        ws = hs.win_start + w
        if (hs.backlog and not (hs.held and hs.win_n < self._pol.setpoint)
                and not (hs.fresh and hs.dry)) or (
                hs.waiting and hs.win_n > self._pol.setpoint):
            self._sample(hs, ws, hs.win_n)
        hs.waiting = False
        hs.fresh = False
        hs.held = False
        if now >= ws + w:
            # A silent window: sampled only if it inherited a gated host. The
            # ones after it are jumped; zeros would only push the same way.
            if self._gated(hs, ws) and not self._penalty(hs, ws) > hs.pid.delay:
                self._sample(hs, ws + w, 0)
            ws += w * ((now - ws) // w)
        hs.win_start = ws
        hs.win_n = 0
        hs.backlog = self._gated(hs, ws)
        # A backoff penalty still above the PID's delay sets this window's pace (rule 4).
        hs.held = self._penalty(hs, ws) > hs.pid.delay

    def _schedule_ready(self, hs: _Host, now: float) -> None:
        """(Re)place the host in its ready heap if it has work and a free slot."""
        if hs.head < len(hs.items) and hs.in_flight < self._cap:
            if hs.rseq == 0:
                hs.since = now
            key = hs.last_start + self._delay(hs, now)
            if hs.hold_until > key:
                key = hs.hold_until
            if hs.since > key:
                key = hs.since
            gate = _ring_gate(hs.starts, hs.spos, self._limits)
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

    def _schedule_ip(self, ip: _Ip) -> None:
        """(Re)place the IP in the global heap at max(its gate, its earliest host) (rule 8)."""
        heap = ip.heap
        self._clean(heap)
        if heap and ip.in_flight < ip.cap:
            key = heap[0][0]
            paced = ip.last_start + ip.delay
            gate = _ring_gate(ip.starts, ip.spos, ip.limits)
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

    def _configure_ip(self, ip: _Ip, share: float, now: float) -> None:
        """Derive the IP's delay, concurrency cap and ceiling from its share (rule 8)."""
        pol = self._pol
        share = min(max(float(share), MIN_IP_SHARE), 1.0)
        ip.share = share
        if pol.ip_concurrency > 0:
            ip.cap = max(1, math.floor(pol.ip_concurrency * share + 1e-9))
        if pol.ip_rate > 0:
            rate = pol.ip_rate * share
            ip.delay = 60.0 / rate
            ip.limits = tuple((w, ceiling(rate, w)) for w in CEILING_WINDOWS)
            n = max(k for _, k in ip.limits)
            if ip.starts is None or len(ip.starts) != n:
                ip.starts = _ring(n, _ring_times(ip.starts, ip.spos, now - _HORIZON))
                ip.spos = 0

    def _ip_add_starts(self, ip: _Ip, times: list[float], now: float) -> None:
        if not times:
            return
        if ip.starts is not None:
            old = _ring_times(ip.starts, ip.spos, now - _HORIZON)
            ip.starts = _ring(len(ip.starts), old + times)
            ip.spos = 0
        newest = max(times)
        if newest > ip.last_start:
            ip.last_start = newest

    def _forget_at(self, hs: _Host) -> float:
        # Not before a fresh host's delay has passed either, so that forgetting
        # can never let two starts come closer than the delay then in force.
        d = self._delay(hs, self._clock)
        t = hs.last_start + (d if d > self._fresh_delay else self._fresh_delay)
        if hs.hold_until > t:
            t = hs.hold_until
        if hs.starts is not None and hs.last_start + _HORIZON > t:
            t = hs.last_start + _HORIZON  # its ceiling's windows must be empty (rule 7)
        if hs.backlog:
            end = hs.win_start + self._window
            if end > t:
                t = end
        return t

    def _ip_forget_at(self, ip: _Ip) -> float:
        return ip.last_start + max(ip.delay, _HORIZON)

    def _schedule_timer(self, obj: _Host | _Ip) -> None:
        if isinstance(obj, _Ip):
            if obj.nref:
                obj.tseq = 0
                return
            t = self._ip_forget_at(obj)
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
            if isinstance(obj, _Ip):
                if obj.nref == 0 and obj.in_flight == 0 and now >= self._ip_forget_at(obj):
                    del self._ips[obj.addr]
                else:
                    self._schedule_timer(obj)
                continue
            hs = obj
            if self._pid_on and now >= hs.win_start + self._window:
                self._roll(hs, now)
            if hs.head == len(hs.items) and not hs.in_flight and now >= self._forget_at(hs):
                del hosts[hs.name]
                if self._tailed:
                    self._tailed.pop(hs.name, None)
                hs.rseq = 0
                ip = hs.ip
                if ip is not None:
                    ip.nref -= 1
                    if ip.nref == 0:
                        self._schedule_timer(ip)
                continue
            self._schedule_ready(hs, now)
            self._schedule_timer(hs)
