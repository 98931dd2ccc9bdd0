"""Pacing: when a host may start its next request, and how fast its pace may go.

Each host is paced by a PID controller on the delay between its requests
(peer/core/politeness/pid.py); docs/politeness.md derives the numbers used here. This
module holds the rules of one host's pace as functions on its record
(peer/core/frontier/hoststate.py): its delay, its PID windows, its backoff penalty,
its Crawl-delay floor and its ring of start times. The frontier's scheduler
(peer/core/frontier/scheduler.py) calls them and turns their answers into a place in
its heaps; the per-IP budget (rule 8) is peer/core/frontier/ipbudget.py, the
ceiling's numbers and rings (rule 7) peer/core/politeness/ceiling.py, a
profile's figures (``Pace``) peer/core/politeness/profile.py. The rules
keep the frontier's numbers, which the docs and the other modules cite:

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
3. PID windows (the controller T_k = T_{k-1} + Kp*(S - n) + ..., scale-free: peer/core/politeness/pid.py): every host
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
7. Ceiling: whatever the PID, retries, robots.txt fetches, redirects or
   hand-offs do, a host never gets more than ``ceiling(rate, W)`` =
   ceil(1.1 x rate/60 x W) + 1 request starts in any W-second window, for W
   in ``CEILING_WINDOWS`` (1 s and 5 s). Starts are counted at
   :meth:`Frontier.pop_ready`, kept in a ring of the last ``ceiling(rate, 5)``
   start times (the k-th newest start + W is when a window of W seconds holds
   fewer than k), and can be exported and imported (:meth:`Frontier.recent_starts`,
   :meth:`Frontier.seed_starts`) so that a restart or a hand-off does not reset the
   count. The floor nominal/1.1 alone keeps any W-window to ceil(1.1 x rate/60
   x W) starts; the ring is the guarantee when something else (a seeded
   history, a ``min_delay`` set below the floor) would not.

:func:`delay`, :func:`gated` and :func:`roll` run for every URL the
frontier pushes, pops or ends: they are plain functions on the record,
called directly, with nothing in between.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from peer.core.config.sections import PolitenessConfig
from peer.core.frontier.hoststate import HostState, StartUndo
from peer.core.politeness.ceiling import HORIZON, NEG_INF, new_ring, ring_times
from peer.core.politeness.profile import new_pid

__all__ = [
    "BACKOFF_MIN_STEP", "Outcome", "PidSample", "apply_backoff", "count_starts", "delay", "gated", "penalty",
    "record_start", "roll", "set_floor", "starts_since", "take_back",
]

#: Without a PID (rate 0) a backoff raises the delay by at least this many
#: seconds, so a host at delay 0 is actually slowed down.
BACKOFF_MIN_STEP = 1.0


class Outcome(enum.StrEnum):
    """How a request ended, for counting it in the host's window (rule 5)."""

    FETCHED = "fetched"  # an HTTP response, any status: counts
    FAILED = "failed"  # reached the server, then failed (timeout, reset): counts
    UNREACHED = "unreached"  # never reached the server (DNS, refused): does not count
    # No request was made at all (robots.txt disallows the URL, its host moved
    # or was given up): does not count, and its start is taken back (rule 1).
    NOT_STARTED = "not_started"


@dataclass(frozen=True, slots=True)
class PidSample:
    """One PID update: ``n`` pages in the window ending at ``window_end`` gave ``delay``."""

    host: str
    window_end: float
    n: int
    delay: float


# ------------------------------------------------------------ start rings (rule 7)
# The rings themselves and the ceiling's numbers: peer/core/politeness/ceiling.py.


def starts_since(hs: HostState, since: float) -> list[float]:
    """The host's start times after ``since``, oldest first (its last start only, without a ring)."""
    if hs.starts is not None:
        return ring_times(hs.starts, hs.spos, since)
    return [hs.last_start] if hs.last_start > since else []


def count_starts(hs: HostState, times: list[float], now: float, ring_n: int) -> None:
    """Count ``times`` (not empty, none after ``now``) as the host's starts (rule 7)."""
    if ring_n:
        old = ring_times(hs.starts, hs.spos, now - HORIZON)
        hs.starts = new_ring(ring_n, old + times)
        hs.spos = 0
    newest = max(times)
    if newest > hs.last_start:
        hs.last_start = newest


def record_start(hs: HostState, now: float, url: str) -> None:
    """Count a start of the host for ``url`` in its ring and its IP's (rule 7), and note what it
    overwrote there (``hs.undo``), to take it back should no request follow (:func:`take_back`)."""
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
    ip = hs.ip
    if ip is not None:
        ip_last = ip.last_start
        ip.last_start = now
        if ip.starts is not None:
            ip_slot = ip.starts[ip.spos]
            ip.starts[ip.spos] = now
            ip.spos = (ip.spos + 1) % len(ip.starts)
        ip_spos = ip.spos
    hs.undo = StartUndo(url, now, last, slot, hs.spos, hs.starts, ip, ip_last, ip_slot, ip_spos,
                        ip.starts if ip is not None else None)


def take_back(hs: HostState, undo: StartUndo) -> None:
    """Undo what the start ``undo`` recorded, where no later start came since (rule 1).

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


# ------------------------------------------------------------ the delay (rules 1, 4)


def penalty(hs: HostState, now: float, window: float) -> float:
    """The host's backoff penalty at ``now``, halved once per window since it was set (rule 4)."""
    d = hs.penalty
    if d:
        k = (now - hs.penalty_at) // window
        if k >= 1:
            # Halve once per window; below 1 ms it is gone.
            d = d * 0.5 ** min(k, 64.0)
            if d < 1e-3:
                d = 0.0
            hs.penalty = d
            hs.penalty_at += k * window
    return d


def delay(hs: HostState, now: float, window: float) -> float:
    """The host's delay between request starts at ``now``: max(PID's, penalty, floor) (rules 1, 4)."""
    d = penalty(hs, now, window) if hs.penalty else 0.0  # most hosts have none: no call
    if hs.pid is not None and hs.pid.delay > d:
        d = hs.pid.delay
    return d if d > hs.floor else hs.floor


def set_floor(hs: HostState, seconds: float, now: float, pol: PolitenessConfig) -> None:
    """Crawl-delay ``seconds`` becomes the host's floor, capped at ``max_crawl_delay`` (rule 1)."""
    if hs.last_start == NEG_INF:
        # Unknown last start (a new or forgotten host): the answer that
        # brought this news was itself a request, so count from now.
        hs.last_start = now
    hs.floor = min(max(0.0, seconds), pol.max_crawl_delay)


def apply_backoff(hs: HostState, now: float, pol: PolitenessConfig, retry_after: float | None) -> None:
    """The host answered 429/503: a doubled delay as a penalty, and Retry-After's hold (rule 4)."""
    if hs.last_start == NEG_INF:
        hs.last_start = now  # unknown (new or forgotten host): see set_floor
    eff = delay(hs, now, pol.window)
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


# ------------------------------------------------------------ PID windows (rule 3)


def gated(hs: HostState, t: float, cap: int, window: float) -> bool:
    """Had queued work at ``t`` that its own delay kept from starting (rule 3)."""
    return (
        hs.work
        and t >= hs.hold_until
        and hs.in_flight < cap
        and t < hs.last_start + delay(hs, t, window)
    )


def roll(hs: HostState, now: float, pol: PolitenessConfig, trace: list[PidSample]) -> None:
    """Close the host's windows that ended by ``now``, sampling the PID into ``trace`` (rule 3)."""
    pid = hs.pid
    assert pid is not None  # windows are rolled only with the PID on
    w = pol.window
    cap = pol.host_concurrency
    setpoint = pol.setpoint
    ws = hs.win_start + w
    if (hs.backlog and not (hs.held and hs.win_n < setpoint)
            and not (hs.fresh and hs.dry)) or (
            hs.waiting and hs.win_n > setpoint):
        trace.append(PidSample(hs.name, ws, hs.win_n, pid.update(hs.win_n)))
    hs.waiting = False
    hs.fresh = False
    hs.held = False
    if now >= ws + w:
        # A silent window: sampled only if it inherited a gated host. The
        # ones after it are jumped; zeros would only push the same way.
        if gated(hs, ws, cap, w) and not penalty(hs, ws, w) > pid.delay:
            trace.append(PidSample(hs.name, ws + w, 0, pid.update(0)))
        ws += w * ((now - ws) // w)
    hs.win_start = ws
    hs.win_n = 0
    hs.backlog = gated(hs, ws, cap, w)
    # A backoff penalty still above the PID's delay sets this window's pace (rule 4).
    hs.held = penalty(hs, ws, w) > pid.delay
