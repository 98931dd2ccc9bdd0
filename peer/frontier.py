"""The per-host frontier: FIFO queues of URLs and a polite scheduler over hosts.

Seed 002 gives every worker its own URL queue; seed 000 paces each host with a
PID controller on the delay between requests. This module is the pure core of
both: it takes ``now`` and returns the next :class:`Job` that may start, so the
engine's loop is "sleep until :meth:`Frontier.next_ready_at`, :meth:`pop_ready`,
fetch, :meth:`done`", and tests drive it synchronously.

Rules (every transition lives in this file):

1. A host may start a request when its *delay* has passed since its last
   request **started**, no Retry-After/retry hold is pending, and fewer than
   ``host_concurrency`` of its requests are in flight. The delay is
   ``max(pid.delay, floor)``: the floor is robots.txt's Crawl-delay.
   With ``rate == 0`` there is no PID and the delay is the floor only (plus a
   backoff penalty, rule 4). News about a host whose last start is unknown
   (a Crawl-delay or a backoff for a new or forgotten host) counts from
   ``now``: the answer that brought it was itself a request.
2. Among ready hosts the one ready earliest goes first; "ready" counts from
   the moment the host had work and was free, so a host that has waited longer
   is not overtaken by one that just received a URL.
3. PID windows (seed 000, law 4.1): every host measures ``n``, the fetches
   completed in each window of ``window`` seconds. At the window's end, and
   only if the host was *backlogged* during it, ``pid.update(n)`` sets the new
   delay and a :class:`PidSample` is traced. Backlogged means: at some moment
   it had queued work that its own *delay* kept from starting. Work held back
   by the concurrency cap does not count: then the delay is not what limits
   the rate, and a slow host capped below its setpoint would otherwise wind
   its delay down to ``min_delay`` and be hammered once it answers fast again.
   A Retry-After hold does not count either: that is the server's pacing, not
   the controller's. A window *over* the setpoint in which URLs waited (held
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
   windows of 13 then 26; 177 windows over +10% of 1400, 17 without them). Each host's windows start at its first push (so deadlines
   spread out); they are rolled lazily when a host is touched and by a heap
   of window deadlines; after a long silence at most one catch-up sample is
   taken and the rest are jumped over, not looped.
4. Backoff (429/503): the host's delay is doubled at once (by at least
   ``BACKOFF_MIN_STEP``, capped at ``max_delay``) by re-seeding its PID at the
   new delay, which also discards integral error gathered before the server
   complained; the PID then brings it down again only through backlogged
   windows. Without a PID the same doubling is a penalty halved every window.
   Retry-After holds the host until ``now + retry_after``.
5. Counting (:class:`Outcome`): a fetch that reached the server counts in
   ``n``, whatever its status, because the server did the work; a fetch that
   never reached it (DNS failure, connection refused) does not.
6. Memory: a host with no queued work and nothing in flight is forgotten once
   its delay, a fresh host's ``initial_delay`` and any hold have passed (and
   its last backlogged window has been sampled), so a re-created host can
   never start sooner than the forgotten one could have. The trade-off: its
   learned PID delay and its Crawl-delay floor go too, so a host whose URLs
   trickle in restarts at ``initial_delay`` (the polite default), and the
   engine re-applies Crawl-delay with :meth:`Frontier.set_min_delay` from its
   robots cache each time it starts a request for a host (O(1); the host is
   then in flight, so its last start is known). Without this, a crawl of
   millions of hosts would keep millions of structs for nothing.

Every operation is O(log hosts): two heaps with lazy deletion (an entry is
live only if its sequence number is still the host's), never a scan of hosts.
``now`` must not go backwards.
"""

from __future__ import annotations

import enum
import heapq
from collections.abc import Iterator
from dataclasses import dataclass

from peer.config import PolitenessConfig
from peer.errors import PeerError
from peer.pid import PID

__all__ = ["BACKOFF_MIN_STEP", "Frontier", "Job", "Outcome", "PidSample", "Politeness"]

#: A backoff raises the delay by at least this many seconds, so a host at
#: delay 0 (rate 0 or PID at ``min_delay``) is actually slowed down.
BACKOFF_MIN_STEP = 1.0

_NEG_INF = float("-inf")
# A fully popped prefix of a host's queue is cut off once it is this long and
# at least half the list; amortised O(1) popleft without a deque's 760 bytes.
_COMPACT_AT = 64


# The settings are cluster.toml's [politeness] section, defaults and all; the
# frontier takes that object as it is, so there is one place for the defaults.
Politeness = PolitenessConfig


def new_pid(pol: Politeness, initial_delay: float | None = None) -> PID:
    """A fresh controller for a host, starting at ``initial_delay`` (clamped)."""
    d = pol.initial_delay if initial_delay is None else initial_delay
    d = min(max(d, pol.min_delay), pol.max_delay)
    return PID(pol.kp, pol.ki, pol.kd, pol.setpoint, d,
               pol.min_delay, pol.max_delay, pol.integral_limit)


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


class Outcome(enum.Enum):
    """How a request ended, for counting it in the host's window (rule 5)."""

    FETCHED = "fetched"  # an HTTP response, any status: counts
    FAILED = "failed"  # reached the server, then failed (timeout, reset): counts
    UNREACHED = "unreached"  # never reached the server (DNS, refused): does not count


class _Host:
    """Mutable per-host state; small, since there may be a million of them."""

    __slots__ = (
        "name", "items", "head", "in_flight", "last_start", "hold_until",
        "floor", "pid", "penalty", "penalty_at", "since",
        "win_start", "win_n", "backlog", "fresh", "dry", "waiting", "rseq", "rkey", "tseq", "tkey",
    )

    def __init__(self, name: str, now: float, pid: PID | None) -> None:
        self.name = name
        # The queue: url, depth, url, depth, ... from index ``head`` on.
        self.items: list = []
        self.head = 0
        self.in_flight = 0
        self.last_start = _NEG_INF
        self.hold_until = _NEG_INF
        self.floor = 0.0
        self.pid = pid
        self.penalty = 0.0  # backoff delay of a host without PID (rate 0)
        self.penalty_at = 0.0
        self.since = now  # when it last became free with work (rule 2)
        self.win_start = now
        self.win_n = 0
        self.backlog = False
        self.fresh = True  # still in its first window
        self.dry = False  # its queue ran dry since it was created (rule 3)
        self.waiting = False  # URLs waited in this window (rule 3)
        self.rseq = 0  # seq of its live ready-heap entry, 0 = none
        self.rkey = 0.0
        self.tseq = 0  # seq of its live timer-heap entry, 0 = none
        self.tkey = 0.0


class Frontier:
    """Per-host FIFO queues and the polite, PID-paced choice of the next job."""

    __slots__ = (
        "_pol", "_cap", "_window", "_pid_on", "_fresh_delay", "_hosts", "_ready", "_timers",
        "_seq", "_queued", "_n_hosts", "_in_flight", "_active", "_trace", "_clock",
    )

    def __init__(self, politeness: Politeness | None = None) -> None:
        self._pol = pol = politeness if politeness is not None else Politeness()
        self._cap = pol.host_concurrency
        self._window = pol.window
        self._pid_on = pol.rate > 0
        # The delay of a host with no history.
        self._fresh_delay = (
            min(max(pol.initial_delay, pol.min_delay), pol.max_delay) if self._pid_on else 0.0
        )
        self._hosts: dict[str, _Host] = {}
        # (ready_at, seq, host) of hosts with queued work and a free slot.
        self._ready: list[tuple[float, int, str]] = []
        # (deadline, seq, host): a busy host's window end, an idle one's forget time.
        self._timers: list[tuple[float, int, str]] = []
        self._seq = 0
        self._queued = 0
        self._n_hosts = 0
        self._in_flight = 0
        self._active = 0
        self._trace: list[PidSample] = []
        self._clock = _NEG_INF
        if self._pid_on:
            new_pid(pol)  # bad gains fail here, at start-up, not at the first host

    # ------------------------------------------------------------------ queue

    def push(self, url: str, host: str, depth: int, now: float) -> None:
        """Append a URL (already deduplicated) to its host's queue."""
        hs = self._touch(host, now)
        items = hs.items
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
        hosts = self._hosts
        while ready:
            key, seq, name = ready[0]
            hs = hosts.get(name)
            if hs is None or hs.rseq != seq:
                heapq.heappop(ready)
                continue
            if key > now:
                return None
            heapq.heappop(ready)
            hs.rseq = 0
            items = hs.items
            head = hs.head
            url = items[head]
            depth = items[head + 1]
            head += 2
            if head == len(items):
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
            hs.last_start = now
            self._schedule_ready(hs, now)
            self._mark(hs, now)
            return Job(url, name, depth)
        return None

    def done(self, host: str, now: float, outcome: Outcome = Outcome.FETCHED) -> None:
        """A request of ``host`` ended; it counts in the host's window unless UNREACHED."""
        hs = self._hosts.get(host)
        if hs is None or hs.in_flight <= 0:
            raise PeerError(f"frontier: done({host!r}) without a request in flight")
        self._clock = now
        if self._pid_on and now >= hs.win_start + self._window:
            self._roll(hs, now)
        hs.in_flight -= 1
        self._in_flight -= 1
        if hs.in_flight == 0:
            self._active -= 1
        if outcome is not Outcome.UNREACHED:
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
        hosts = self._hosts
        while ready:
            _, seq, name = ready[0]
            hs = hosts.get(name)
            if hs is not None and hs.rseq == seq:
                return ready[0][0]
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
        new = min(pol.max_delay, max(2.0 * eff, eff + BACKOFF_MIN_STEP))
        if hs.pid is not None:
            hs.pid = new_pid(pol, new)
        elif new > hs.penalty:
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
    def n_hosts(self) -> int:
        """Hosts with queued work."""
        return self._n_hosts

    @property
    def n_known(self) -> int:
        """Hosts whose state is kept (queued, in flight, or delay still running)."""
        return len(self._hosts)

    @property
    def in_flight(self) -> int:
        """Requests started and not yet done."""
        return self._in_flight

    @property
    def hosts_active(self) -> int:
        """Hosts with at least one request in flight."""
        return self._active

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

    def host_queued(self, host: str) -> int:
        """URLs queued for ``host``."""
        hs = self._hosts.get(host)
        return 0 if hs is None else (len(hs.items) - hs.head) // 2

    def queued_hosts(self) -> list[str]:
        """Hosts with queued work (for hand-off when ownership changes)."""
        return [h.name for h in self._hosts.values() if h.head < len(h.items)]

    def iter_queued(self) -> Iterator[Job]:
        """Every queued job, host by host in FIFO order (for persistence)."""
        for hs in list(self._hosts.values()):
            items = hs.items
            name = hs.name
            for i in range(hs.head, len(items), 2):
                yield Job(items[i], name, items[i + 1])

    def remove_host(self, host: str) -> list[Job]:
        """Take away a host's queue (it changed owner); requests in flight still need done()."""
        hs = self._hosts.get(host)
        if hs is None:
            return []
        items = hs.items
        jobs = [Job(items[i], hs.name, items[i + 1]) for i in range(hs.head, len(items), 2)]
        if jobs:
            self._queued -= len(jobs)
            self._n_hosts -= 1
        items.clear()
        hs.head = 0
        hs.rseq = 0
        if hs.in_flight == 0:
            del self._hosts[host]
        return jobs

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

    def _delay(self, hs: _Host, now: float) -> float:
        if hs.pid is not None:
            d = hs.pid.delay
        else:
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
        delay = hs.pid.update(n)
        self._trace.append(PidSample(hs.name, window_end, n, delay))

    def _roll(self, hs: _Host, now: float) -> None:
        """Close the host's windows that ended by ``now`` (rule 3)."""
        w = self._window
        ws = hs.win_start + w
        if (hs.backlog and not (hs.fresh and hs.dry)) or (
                hs.waiting and hs.win_n > self._pol.setpoint):
            self._sample(hs, ws, hs.win_n)
        hs.waiting = False
        hs.fresh = False
        if now >= ws + w:
            # A silent window: sampled only if it inherited a gated host. The
            # ones after it are jumped; zeros would only push the same way.
            if self._gated(hs, ws):
                self._sample(hs, ws + w, 0)
            ws += w * ((now - ws) // w)
        hs.win_start = ws
        hs.win_n = 0
        hs.backlog = self._gated(hs, ws)

    def _schedule_ready(self, hs: _Host, now: float) -> None:
        """(Re)place the host in the ready heap if it has work and a free slot."""
        if hs.head < len(hs.items) and hs.in_flight < self._cap:
            if hs.rseq == 0:
                hs.since = now
            key = hs.last_start + self._delay(hs, now)
            if hs.hold_until > key:
                key = hs.hold_until
            if hs.since > key:
                key = hs.since
            if hs.rseq and hs.rkey == key:
                return
            self._seq += 1
            hs.rseq = self._seq
            hs.rkey = key
            heapq.heappush(self._ready, (key, self._seq, hs.name))
        else:
            hs.rseq = 0

    def _forget_at(self, hs: _Host) -> float:
        # Not before a fresh host's delay has passed either, so that forgetting
        # can never let two starts come closer than the delay then in force.
        d = self._delay(hs, self._clock)
        t = hs.last_start + (d if d > self._fresh_delay else self._fresh_delay)
        if hs.hold_until > t:
            t = hs.hold_until
        if hs.backlog:
            end = hs.win_start + self._window
            if end > t:
                t = end
        return t

    def _schedule_timer(self, hs: _Host) -> None:
        if hs.head < len(hs.items) or hs.in_flight:
            if not self._pid_on:
                hs.tseq = 0
                return
            t = hs.win_start + self._window
        else:
            t = self._forget_at(hs)
        if hs.tseq and hs.tkey == t:
            return
        self._seq += 1
        hs.tseq = self._seq
        hs.tkey = t
        heapq.heappush(self._timers, (t, self._seq, hs.name))

    def _roll_due(self, now: float) -> None:
        timers = self._timers
        hosts = self._hosts
        while timers and timers[0][0] <= now:
            _, seq, name = heapq.heappop(timers)
            hs = hosts.get(name)
            if hs is None or hs.tseq != seq:
                continue
            hs.tseq = 0
            if self._pid_on and now >= hs.win_start + self._window:
                self._roll(hs, now)
            if hs.head == len(hs.items) and not hs.in_flight and now >= self._forget_at(hs):
                del hosts[name]
                continue
            self._schedule_ready(hs, now)
            self._schedule_timer(hs)
