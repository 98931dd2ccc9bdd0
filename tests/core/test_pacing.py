"""A host's pace through the frontier: backoff, Crawl-delay floor, PID windows, the ceiling, starts taken back
(peer/core/frontier/pacing.py, frontier rules 1, 3, 4, 5, 7)."""

import pytest

from peer.core.frontier.frontier import Frontier, Job, Outcome, Politeness, ceiling
from peer.core.politeness.pid import PID
from test_frontier import A, B, fill, url


def replica(pol, *ns):
    """The delay a fresh PID of ``pol`` reaches after windows of ``ns`` pages."""
    pid = PID(pol.kp, pol.ki, pol.kd, pol.rate * pol.window / 60, pol.start_delay,
              pol.floor_delay, pol.max_delay, pol.integral_limit, nominal_delay=60 / pol.rate)
    for n in ns:
        pid.update(n)
    return pid.delay


# ----------------------------------------------------- backoff and floor

def test_backoff_doubles_the_delay_at_once():
    f = Frontier(Politeness(initial_delay=1.0, max_delay=5.0))
    fill(f, A, 3)
    f.pop_ready(0.0)
    f.backoff(A, 0.5, None)
    f.done(A, 0.5)
    assert f.host_delay(A) == 2.0
    assert f.next_ready_at() == 2.0
    f.backoff(A, 0.6, None)
    assert f.host_delay(A) == 4.0
    f.backoff(A, 0.7, None)
    assert f.host_delay(A) == 5.0  # capped at max_delay
    assert f.pop_ready(4.9) is None
    assert f.pop_ready(5.0) is not None


def test_backoff_from_zero_delay_steps_at_least_one_second():
    f = Frontier(Politeness(rate=0, window=60.0))
    fill(f, A, 2)
    f.pop_ready(0.0)
    f.done(A, 0.0)
    f.backoff(A, 0.0, None)
    assert f.host_delay(A) == 1.0
    assert f.pop_ready(0.5) is None
    assert f.pop_ready(1.0).url == url(A, 1)


def test_backoff_penalty_without_pid_halves_each_window():
    f = Frontier(Politeness(rate=0, window=60.0))
    fill(f, A, 10)
    f.pop_ready(0.0)
    f.backoff(A, 0.0, None)
    f.backoff(A, 0.0, None)
    assert f.host_delay(A) == 2.0  # 0 -> 1 (the minimum step) -> 2 (doubled)
    f.done(A, 59.0)
    f.pop_ready(59.0)
    f.done(A, 60.0)
    f.roll_windows(60.0)
    assert f.host_delay(A) == 1.0
    f.roll_windows(180.0)
    assert f.host_delay(A) == 0.25


def test_backoff_honours_retry_after():
    f = Frontier(Politeness(initial_delay=1.0))
    fill(f, A, 2)
    f.pop_ready(0.0)
    f.done(A, 0.5)
    f.backoff(A, 0.5, 30.0)
    assert f.next_ready_at() == 30.5
    assert f.pop_ready(30.0) is None
    assert f.pop_ready(30.5).url == url(A, 1)


def test_backoff_is_a_penalty_halved_each_window_and_no_pid_sample():
    # Rule 4: the doubled delay is the server's pacing. It halves every
    # window; the windows it slowed are not "too slow" samples, so the PID
    # keeps its delay (2 s, the nominal at 30/min) instead of winding down.
    pol = Politeness(rate=30, window=60.0)
    f = Frontier(pol)
    fill(f, A, 200)
    f.pop_ready(0.0)
    for _ in range(3):  # three 429s: 2 -> 4 -> 8 -> 16 s
        f.backoff(A, 0.1, None)
    f.done(A, 0.2)
    assert f.host_delay(A) == 16.0
    run_backlogged(f, A, 240.0)
    f.roll_windows(240.0)
    # Windows to 60, 120, 180 (paced at 16, 8, 4 s: under S = 30, but by the
    # server) are no samples; the penalty is 2 s by 180, no more than the PID's.
    assert [(s.window_end, s.n, s.delay) for s in f.drain_trace()] == [(240.0, 30, 2.0)]
    assert f.host_delay(A) == 2.0


def test_crawl_delay_floor_raises_the_delay_but_not_lowers_it():
    f = Frontier(Politeness(initial_delay=1.0))
    fill(f, A, 3)
    f.pop_ready(0.0)
    f.set_min_delay(A, 5.0, 0.05)  # robots.txt read while the first fetch runs
    assert f.host_delay(A) == 5.0
    f.done(A, 0.1)
    assert f.pop_ready(4.9) is None
    assert f.pop_ready(5.0) is not None
    f.set_min_delay(A, 0.5, 5.0)
    assert f.host_delay(A) == 1.0
    f.done(A, 5.1)
    assert f.next_ready_at() == 6.0


def test_news_about_a_host_with_no_known_start_counts_from_now():
    # Its last request (robots.txt, or one forgotten since) was about now.
    f = Frontier(Politeness(rate=0))
    f.set_min_delay(A, 3.0, 10.0)
    f.push(url(A, 0), A, 0, 10.0)
    assert f.next_ready_at() == 13.0
    f.backoff(B, 20.0, None)
    f.push(url(B, 0), B, 0, 20.0)
    assert f.next_ready_at() == 13.0
    f.pop_ready(13.0)
    assert f.next_ready_at() == 21.0


def test_crawl_delay_is_capped_at_max_crawl_delay():
    f = Frontier(Politeness(rate=0, max_crawl_delay=30.0))
    fill(f, A, 2)
    f.pop_ready(0.0)
    f.set_min_delay(A, 3600.0, 0.0)  # "Crawl-delay: 3600" would park the host
    assert f.host_delay(A) == 30.0
    f.done(A, 0.0)
    assert f.next_ready_at() == 30.0


def test_crawl_delay_floor_applies_with_rate_zero():
    f = Frontier(Politeness(rate=0))
    fill(f, A, 2)
    f.pop_ready(0.0)
    f.set_min_delay(A, 2.0)
    f.done(A, 0.0)
    assert f.next_ready_at() == 2.0


# ------------------------------------------------------------ PID windows

def test_pid_follows_the_seed_law_at_the_seeds_operating_point():
    # The PID post's operating point, 40 pages/min in 60 s windows (S = 40, nominal
    # delay 1.5 s): there the scale-free law is the post's, term by term.
    # T0 = 1.0 s, Kp = -0.05: n = 60 gives 1.0 + 0.05*20 = 2.0, then n = 30
    # gives 2.0 - 0.05*10 = 1.5. (The post's n = 100 cannot happen any more:
    # the ceiling allows 1 start a second at 40/min.) min_delay lets the
    # host start at the post's 1.0 s, below the derived floor of 1.36 s.
    pol = Politeness(rate=40, window=60.0, kp=-0.05, ki=0.0, kd=0.0, initial_delay=1.0,
                     min_delay=0.5)
    f = Frontier(pol)
    fill(f, A, 500)
    for t in range(60):
        assert f.pop_ready(float(t)) is not None
        f.done(A, t + 0.5)
    f.roll_windows(59.9)
    assert f.drain_trace() == []
    f.roll_windows(60.0)
    [s1] = f.drain_trace()
    assert (s1.host, s1.window_end, s1.n) == (A, 60.0, 60)
    assert s1.delay == pytest.approx(2.0)
    assert s1.delay == replica(pol, 60) == f.host_delay(A)
    t = f.next_ready_at()
    assert t == 61.0
    while t < 120.0:
        assert f.pop_ready(t) is not None
        f.done(A, t + 0.5)
        t = f.next_ready_at()
    f.roll_windows(120.0)
    [s2] = f.drain_trace()
    assert (s2.host, s2.window_end, s2.n) == (A, 120.0, 30)
    assert s2.delay == pytest.approx(1.5)
    assert s2.delay == replica(pol, 60, 30)


def run_backlogged(f, host, until, fetch_time=0.1):
    """Fetch ``host``'s queue as fast as the frontier allows until ``until``."""
    t = f.next_ready_at()
    while t is not None and t < until:
        if f.pop_ready(t) is not None:
            f.done(host, t + fetch_time)
        t = f.next_ready_at()


def test_pid_with_integral_term_matches_the_controller():
    # initial_delay 3 s against the nominal 2 s: too slow, so it speeds up.
    pol = Politeness(rate=30, window=60.0, kp=-0.05, ki=-0.01, initial_delay=3.0)
    f = Frontier(pol)
    fill(f, A, 1000)
    run_backlogged(f, A, 180.0)
    f.roll_windows(180.0)
    trace = f.drain_trace()
    assert [(s.host, s.window_end) for s in trace] == [(A, 60.0), (A, 120.0), (A, 180.0)]
    ns = [s.n for s in trace]
    assert ns[0] == 20  # one every 3 s at the initial delay
    assert ns[1] > 20  # sped up
    assert [s.delay for s in trace] == [replica(pol, *ns[:i + 1]) for i in range(3)]
    assert f.host_delay(A) == trace[-1].delay


def test_work_held_only_by_the_concurrency_cap_is_not_backlog():
    # A slow host answering after 5 s with a 1 s delay and host_concurrency 1:
    # the cap, not the delay, limits its rate, so the PID must not wind its
    # delay down (it would hammer the host once it answers fast again).
    pol = Politeness(rate=60, window=60.0, initial_delay=1.0, host_concurrency=1)
    f = Frontier(pol)
    fill(f, A, 20)
    t = 0.0
    while t < 60.0:
        assert f.pop_ready(t) is not None
        t += 5.0
        f.done(A, t)
    f.roll_windows(60.0)
    assert f.drain_trace() == []
    assert f.host_delay(A) == 1.0


def test_no_pid_update_without_backlog():
    pol = Politeness(rate=30, window=60.0)
    f = Frontier(pol)
    # One URL every 3 s, each fetched at once: 20 pages a window, two thirds
    # of the setpoint, yet never a URL waiting, so the delay is not what held
    # it; feeding n = 20 in would wind the delay down (anti-windup).
    for t in range(0, 300, 3):
        f.push(url(A, t), A, 0, float(t))
        assert f.pop_ready(float(t)) is not None
        f.done(A, t + 0.5)
    f.roll_windows(300.0)
    assert f.drain_trace() == []
    assert f.host_delay(A) == 2.0  # the nominal 60/rate


def test_pid_update_with_backlog_each_window():
    pol = Politeness(rate=30, window=60.0, initial_delay=3.0)
    f = Frontier(pol)
    for t in range(130):  # two URLs a second: more than the host may take
        f.push(url(A, 2 * t), A, 0, float(t))
        f.push(url(A, 2 * t + 1), A, 0, float(t))
        if f.pop_ready(float(t)) is not None:
            f.done(A, t + 0.5)
    trace = f.drain_trace()
    assert [(s.window_end, s.n) for s in trace] == [(60.0, 20), (120.0, trace[1].n)]
    assert trace[1].n > 20
    assert trace[-1].delay == replica(pol, 20, trace[1].n) == f.host_delay(A)
    assert f.backlogged(A)


def test_unreached_fetches_do_not_count():
    pol = Politeness(rate=30, window=60.0, initial_delay=1.0)
    f = Frontier(pol)
    fill(f, A, 10)
    for t, outcome in enumerate([Outcome.FETCHED, Outcome.UNREACHED, Outcome.FAILED]):
        assert f.pop_ready(2.0 * t) is not None  # the nominal delay is 2 s
        f.done(A, 2.0 * t + 0.5, outcome)
    f.roll_windows(60.0)
    assert [s.n for s in f.drain_trace()] == [2]


def test_long_silence_is_jumped_not_looped():
    # min_delay keeps the delay at 1 s, so the queued URL is held by it.
    pol = Politeness(rate=30, window=60.0, initial_delay=1.0, min_delay=1.0)
    f = Frontier(pol)
    fill(f, A, 3)
    f.pop_ready(0.0)
    f.done(A, 0.5)  # one queued URL held by the delay: backlogged
    f.roll_windows(1e7)  # a silence of ~166,000 windows
    assert [(s.window_end, s.n) for s in f.drain_trace()] == [(60.0, 1)]
    f.pop_ready(1e7)
    f.done(A, 1e7 + 0.5)
    f.roll_windows(1e7 + 60.0)
    # windows stay aligned to the host's first one: 1e7 lies in [9999960, 10000020)
    assert [(s.window_end, s.n) for s in f.drain_trace()] == [(10_000_020.0, 1)]


def test_pid_delay_is_per_host():
    pol = Politeness(rate=30, window=60.0, initial_delay=3.0)
    f = Frontier(pol)
    fill(f, A, 200)
    f.push(url(B, 0), B, 0, 0.0)
    t = 0.0
    while t < 60.0:
        job = f.pop_ready(t)
        f.done(job.host, t)
        t = f.next_ready_at()
    f.roll_windows(60.0)
    assert [s.host for s in f.drain_trace()] == [A]
    assert f.host_delay(A) == replica(pol, 20)
    assert f.host_delay(B) == 3.0


# ------------------------------------------------------ ceiling (rule 7)

def test_new_host_starts_at_the_nominal_delay_and_never_below_the_floor():
    pol = Politeness(rate=600.0, window=10.0)
    f = Frontier(pol)
    assert f.host_delay(A) == pytest.approx(0.1)
    fill(f, A, 2000)
    run_backlogged(f, A, 100.0, fetch_time=0.01)
    assert f.host_delay(A) >= 0.1 / 1.1 - 1e-12
    assert f.ceiling_holds == 0  # the floor alone kept it under the ceiling


def test_recent_starts_round_trip_and_unknown_hosts():
    f = Frontier(Politeness(rate=600.0))
    assert f.recent_starts(A) == ()
    fill(f, A, 10)
    for t in (0.0, 0.1, 0.2):
        f.pop_ready(t)
        f.done(A, t + 0.05)
    assert f.recent_starts(A) == (0.0, 0.1, 0.2)
    f.roll_windows(5.15)
    assert f.recent_starts(A) == (0.2,)  # within the last 5 s only
    g = Frontier(Politeness(rate=600.0))
    fill(g, A, 3, now=1.0)
    g.seed_starts(A, [0.5, 0.9, 7.0, float("nan")], 1.0)  # 7.0: clock skew, counts as now
    assert g.recent_starts(A) == (0.5, 0.9, 1.0)
    assert g.next_ready_at() == pytest.approx(1.1)  # the delay runs from the newest


def test_idle_host_with_a_full_ring_is_kept_until_its_windows_are_empty():
    pol = Politeness(rate=600.0, min_delay=0.001, initial_delay=0.001)
    f = Frontier(pol)
    fill(f, A, 12)
    t = 0.0
    while len(f):
        if f.pop_ready(t) is not None:
            f.done(A, t)
        t += 0.001
    f.roll_windows(4.9)
    assert f.n_known == 1
    fill(f, A, 1, now=4.9)
    assert f.pop_ready(4.9) is not None  # 12 starts in [0, 0.011], none since: allowed


# ------------------------------------------- a start that was no request (rule 1)


def test_a_job_dropped_before_any_request_gives_its_start_back():
    # robots.txt disallows the URL, its host moved or was given up: no
    # request was made, so the host's next URL need not wait a delay for it.
    f = Frontier(Politeness(rate=600.0, initial_delay=1.0))
    fill(f, A, 3)
    first = f.pop_ready(0.0)
    f.done(A, 0.0, Outcome.FETCHED, first.url)
    dropped = f.pop_ready(1.0)
    f.done(A, 1.0, Outcome.NOT_STARTED, dropped.url)
    assert f.recent_starts(A) == (0.0,)
    assert f.next_ready_at() == pytest.approx(1.0)  # from the request at 0, not from 1
    assert f.pop_ready(1.0) == Job(url(A, 2), A, 0)


def test_an_unreached_request_keeps_its_start():
    # DNS failed, the connection was refused: something was attempted, and
    # the start stays counted (only the PID's window leaves it out).
    f = Frontier(Politeness(rate=600.0, initial_delay=1.0))
    fill(f, A, 2)
    job = f.pop_ready(0.0)
    f.done(A, 0.0, Outcome.UNREACHED, job.url)
    assert f.recent_starts(A) == (0.0,)
    assert f.pop_ready(0.5) is None


def test_a_start_taken_back_after_a_later_start_stays_counted():
    # Two slots: the later start (a real request) is kept, and the earlier
    # one is not taken back from under it: more polite, never less.
    f = Frontier(Politeness(rate=600.0, initial_delay=0.1, host_concurrency=2))
    fill(f, A, 3)
    a = f.pop_ready(0.0)
    b = f.pop_ready(0.1)
    assert a is not None and b is not None
    f.done(A, 0.15, Outcome.NOT_STARTED, a.url)
    assert f.recent_starts(A) == (0.0, 0.1)
    f.done(A, 0.2, Outcome.NOT_STARTED, b.url)  # the latest: taken back
    assert f.recent_starts(A) == (0.0,)
