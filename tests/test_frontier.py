"""The per-host frontier: politeness gate, concurrency, FIFO, backoff, PID windows."""

from collections import deque

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from peer.errors import PeerError
from peer.core.frontier import MIN_IP_SHARE, Frontier, Job, Outcome, PidSample, Politeness, ceiling
from peer.core.pid import PID

A, B, C = "a.test", "b.test", "c.test"


def url(host, i):
    return f"http://{host}/{i}"


def fill(f, host, n, now=0.0, depth=0):
    for i in range(n):
        f.push(url(host, i), host, depth, now)


def replica(pol, *ns):
    """The delay a fresh PID of ``pol`` reaches after windows of ``ns`` pages."""
    pid = PID(pol.kp, pol.ki, pol.kd, pol.rate * pol.window / 60, pol.start_delay,
              pol.floor_delay, pol.max_delay, pol.integral_limit, nominal_delay=60 / pol.rate)
    for n in ns:
        pid.update(n)
    return pid.delay


# --------------------------------------------------------------- the gate

def test_politeness_gate_holds_a_host_until_its_delay_has_passed():
    f = Frontier(Politeness(initial_delay=1.0))
    fill(f, A, 2)
    assert f.pop_ready(0.0) == Job(url(A, 0), A, 0)
    f.done(A, 0.25)
    assert f.pop_ready(0.5) is None
    assert f.pop_ready(0.999) is None
    assert f.pop_ready(1.0) == Job(url(A, 1), A, 0)
    assert len(f) == 0


def test_delay_counts_from_the_start_not_the_end():
    f = Frontier(Politeness(initial_delay=1.0))
    fill(f, A, 2)
    f.pop_ready(0.0)
    f.done(A, 0.9)
    assert f.next_ready_at() == 1.0


def test_host_concurrency_caps_requests_in_flight():
    f = Frontier(Politeness(rate=0, host_concurrency=2))
    fill(f, A, 3)
    assert f.pop_ready(0.0).url == url(A, 0)
    assert f.pop_ready(0.0).url == url(A, 1)
    assert f.pop_ready(0.0) is None
    assert f.next_ready_at() is None
    assert (f.in_flight, f.hosts_active) == (2, 1)
    f.done(A, 0.0)
    assert f.pop_ready(0.0).url == url(A, 2)


def test_fifo_per_host():
    f = Frontier(Politeness(rate=0))
    fill(f, A, 5)
    got = []
    while (job := f.pop_ready(0.0)) is not None:
        got.append(job.url)
        f.done(A, 0.0)
    assert got == [url(A, i) for i in range(5)]


def test_hosts_interleave_and_earliest_ready_goes_first():
    f = Frontier(Politeness(initial_delay=1.0))
    fill(f, A, 3)
    fill(f, B, 3)
    assert [f.pop_ready(0.0).host, f.pop_ready(0.0).host, f.pop_ready(0.0)] == [A, B, None]
    f.done(B, 0.1)
    f.done(A, 0.2)
    # Both are ready at 1.0; B has been free (and waiting) longer, so it goes first.
    assert f.pop_ready(1.0).host == B
    assert f.pop_ready(1.5).host == A
    f.done(A, 1.6)
    f.done(B, 1.7)
    # Different ready times (B at 2.0, A at 2.5): the earliest first, even when asked late.
    assert [f.pop_ready(5.0).host, f.pop_ready(5.0).host] == [B, A]
    assert len(f) == 0


def test_a_host_that_waited_longer_is_not_overtaken_by_a_new_one():
    f = Frontier(Politeness(rate=0))
    fill(f, A, 2)
    f.pop_ready(0.0)
    f.done(A, 1.0)  # A free again with work since 1.0
    f.push(url(B, 0), B, 0, 5.0)  # B since 5.0
    assert f.pop_ready(5.0).host == A
    assert f.pop_ready(5.0).host == B


def test_next_ready_at_exact_values():
    f = Frontier(Politeness(initial_delay=1.0))
    assert f.next_ready_at() is None
    fill(f, A, 2, now=0.0)
    assert f.next_ready_at() == 0.0
    f.pop_ready(0.0)
    assert f.next_ready_at() is None  # A at its cap, nothing else queued
    f.done(A, 0.25)
    assert f.next_ready_at() == 1.0
    fill(f, B, 2, now=0.5)
    assert f.next_ready_at() == 0.5
    assert f.pop_ready(0.5).host == B
    f.done(B, 0.7)
    assert f.next_ready_at() == 1.0
    assert f.pop_ready(1.0).host == A
    assert f.next_ready_at() == 1.5
    f.done(A, 1.2)
    assert f.pop_ready(1.5).host == B
    assert f.next_ready_at() is None


def test_rate_zero_means_no_delay():
    f = Frontier(Politeness(rate=0))
    fill(f, A, 3)
    assert f.host_delay(A) == 0.0
    for i in range(3):
        assert f.pop_ready(7.0).url == url(A, i)
        f.done(A, 7.0)
    assert f.drain_trace() == []


def test_depth_is_kept():
    f = Frontier()
    f.push("http://a.test/x", A, 7, 0.0)
    assert f.pop_ready(0.0) == Job("http://a.test/x", A, 7)


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


# -------------------------------------------------------------- requeue

def test_requeue_puts_the_job_first_with_a_not_before_time():
    f = Frontier(Politeness(rate=0))
    fill(f, A, 3)
    job = f.pop_ready(0.0)
    f.done(A, 0.5, Outcome.FAILED)
    f.requeue(job, 0.5, not_before=30.0)
    assert len(f) == 3
    assert f.next_ready_at() == 30.0
    assert f.pop_ready(29.9) is None
    assert f.pop_ready(30.0) == job
    f.done(A, 30.0)
    assert f.pop_ready(30.0).url == url(A, 1)


def test_requeue_after_compaction_and_on_empty_queue():
    f = Frontier(Politeness(rate=0))
    fill(f, A, 200)
    jobs = []
    for _ in range(150):
        jobs.append(f.pop_ready(0.0))
        f.done(A, 0.0)
    f.requeue(jobs[-1], 0.0, 0.0)
    assert f.pop_ready(0.0) == jobs[-1]
    f.done(A, 0.0)
    assert f.pop_ready(0.0).url == url(A, 150)
    g = Frontier(Politeness(rate=0))
    g.requeue(Job("http://x.test/", "x.test", 3), 1.0, 2.0)
    assert (len(g), g.n_hosts, g.next_ready_at()) == (1, 1, 2.0)


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


# ------------------------------------------------- stats, hand-off, memory

def test_stats_iter_and_remove_host():
    f = Frontier(Politeness(rate=0))
    fill(f, A, 3)
    fill(f, B, 2)
    f.push(url(C, 0), C, 4, 0.0)
    assert (len(f), f.n_hosts, f.host_queued(A)) == (6, 3, 3)
    assert f.pop_ready(0.0).host == A
    assert (len(f), f.in_flight, f.hosts_active) == (5, 1, 1)
    assert sorted(f.queued_hosts()) == [A, B, C]
    assert sorted(j.url for j in f.iter_queued()) == sorted(
        [url(A, 1), url(A, 2), url(B, 0), url(B, 1), url(C, 0)])
    assert f.remove_host(A) == [Job(url(A, 1), A, 0), Job(url(A, 2), A, 0)]
    assert f.remove_host(C) == [Job(url(C, 0), C, 4)]
    assert f.remove_host("nobody.test") == []
    assert (len(f), f.n_hosts, f.in_flight) == (2, 1, 1)
    f.done(A, 0.0)  # the request in flight when A moved still ends here
    assert [f.pop_ready(0.0).host, f.pop_ready(0.0)] == [B, None]


def test_done_without_request_in_flight_is_an_error():
    f = Frontier()
    with pytest.raises(PeerError, match="a.test"):
        f.done(A, 0.0)
    f.push(url(A, 0), A, 0, 0.0)
    with pytest.raises(PeerError):
        f.done(A, 0.0)


def test_idle_hosts_are_forgotten_once_their_delay_has_passed():
    f = Frontier(Politeness(initial_delay=1.0))
    for h in (A, B):
        f.push(url(h, 0), h, 0, 0.0)
        f.pop_ready(0.0)
        f.done(h, 0.2)
    f.set_min_delay(B, 10.0, 0.2)
    assert f.n_known == 2
    f.roll_windows(0.999)
    assert f.n_known == 2
    f.roll_windows(4.999)
    assert f.n_known == 2  # A's delay has passed, not its ceiling's 5 s window
    f.roll_windows(5.0)
    assert f.n_known == 1  # A's ceiling window has passed, B's floor has not
    assert f.host_delay(B) == 10.0
    f.roll_windows(10.0)
    assert f.n_known == 0


def test_backlogged_idle_host_is_kept_until_its_window_is_sampled():
    pol = Politeness(rate=60, window=60.0)
    f = Frontier(pol)
    fill(f, A, 64)  # more than the first window takes: it is sampled
    t = 0.0
    while len(f):
        if f.pop_ready(t) is not None:
            f.done(A, t + 0.1)
        t += 0.5
    assert 60.0 < t < 90.0  # ran dry in the second window
    f.roll_windows(90.0)
    assert f.n_known == 1   # backlogged in a window not yet sampled: kept
    f.roll_windows(120.0)
    assert [s.window_end for s in f.drain_trace()] == [60.0, 120.0]
    assert f.n_known == 0


def test_a_first_window_whose_queue_ran_dry_is_not_a_sample():
    # A host just found: two URLs, then nothing while more links are being
    # found. Its first window's n (2) says nothing about its delay.
    pol = Politeness(rate=60, window=60.0)
    f = Frontier(pol)
    fill(f, A, 2)
    f.pop_ready(0.0)
    f.done(A, 0.1)
    f.pop_ready(1.0)
    f.done(A, 1.1)
    for i in range(40):  # URLs arrive again, more than the delay lets start
        f.push(url(A, 100 + i), A, 0, 30.0)
    f.roll_windows(60.0)
    assert f.drain_trace() == []
    assert f.host_delay(A) == 1.0   # not sped up by the short window
    t = 60.0
    while t < 120.0:
        if f.pop_ready(t) is not None:
            f.done(A, t + 0.1)
        t += 0.5
    f.roll_windows(120.0)
    assert [s.window_end for s in f.drain_trace()] == [120.0]


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


# --------------------------------------------------------- per IP (rule 8)

IP = "10.0.0.1"


def ip_frontier(**kw):
    args = dict(rate=600.0, window=60.0, ip_rate=60.0)
    args.update(kw)
    return Frontier(Politeness(**args))


def test_hosts_on_one_ip_share_its_pace():
    f = ip_frontier()
    for h in (A, B):
        fill(f, h, 5)
        f.set_host_ip(h, IP, 0.0)
    fill(f, C, 5)  # IP unknown: per host only
    got = []
    t = 0.0
    while t < 3.0:
        job = f.pop_ready(t)
        if job is None:
            t = f.next_ready_at()
            continue
        got.append((t, job.host))
        f.done(job.host, t)
    on_ip = [t for t, h in got if h != C]
    assert on_ip == [0.0, 1.0, 2.0]  # one a second between A and B: ip_rate 60/min
    assert sum(h == C for _, h in got) == 5  # C at its own 10/s
    assert f.host_ip(A) == IP and f.host_ip(C) is None and f.ip_delay(IP) == 1.0


def test_ip_share_scales_the_pace_and_bad_shares_are_data():
    f = ip_frontier(ip_concurrency=4)
    fill(f, A, 5)
    f.set_host_ip(A, IP, 0.0)
    f.set_ip_share(IP, 0.25, 0.0)
    assert f.ip_delay(IP) == 4.0  # 60/min x 1/4
    f.set_ip_share(IP, float("nan"), 0.0)
    f.set_ip_share("10.9.9.9", 0.5, 0.0)  # no host of ours there: ignored
    assert (f.ip_delay(IP), f.n_ips) == (4.0, 1)
    f.set_ip_share(IP, 0.0, 0.0)  # clamped, not a division by zero
    assert f.ip_delay(IP) == 60.0 / (60.0 * MIN_IP_SHARE)
    f.set_ip_share(IP, 7.0, 0.0)
    assert f.ip_delay(IP) == 1.0
    f.set_default_ip_share(0.5)
    fill(f, B, 1)
    f.set_host_ip(B, "10.0.0.2", 0.0)
    assert f.ip_delay("10.0.0.2") == 2.0  # a new IP gets the default share


def test_a_host_held_by_its_ip_is_not_wound_down():
    f = ip_frontier(rate=60.0, ip_rate=30.0)
    for h in (A, B):
        fill(f, h, 100)
        f.set_host_ip(h, IP, 0.0)
    t = 0.0
    while t < 300.0:
        job = f.pop_ready(t)
        if job is not None:
            f.done(job.host, t + 0.1)
        t = max(t, f.next_ready_at())
    assert f.host_delay(A) == f.host_delay(B) == 1.0  # 15 pages/min each, S = 60: not samples
    assert [s for s in f.drain_trace() if s.n < 60] == []


def test_moving_a_host_between_ips_moves_its_requests_in_flight():
    f = ip_frontier(ip_rate=0.0, ip_concurrency=1)
    fill(f, A, 3)
    fill(f, B, 3)
    f.set_host_ip(B, "10.0.0.2", 0.0)
    assert f.pop_ready(0.0).host == A  # A's IP is not known yet
    f.set_host_ip(A, "10.0.0.2", 0.0)  # DNS answered: A shares B's IP, 1 in flight
    assert f.pop_ready(10.0) is None
    f.done(A, 10.0)
    assert f.pop_ready(10.0) is not None
    f.set_host_ip(A, IP, 10.0)


def test_ip_entries_are_forgotten_with_their_hosts():
    f = ip_frontier()
    fill(f, A, 1)
    f.set_host_ip(A, IP, 0.0)
    f.pop_ready(0.0)
    f.done(A, 0.1)
    f.roll_windows(4.99)
    assert (f.n_known, f.n_ips) == (1, 1)  # the host's 5 s ceiling window runs
    f.roll_windows(5.0)
    assert (f.n_known, f.n_ips) == (0, 0)  # and the IP's: its delay (1 s) and window (5 s)


def test_without_ip_keys_set_host_ip_keeps_nothing():
    f = Frontier(Politeness(rate=600.0))
    fill(f, A, 1)
    f.set_host_ip(A, IP, 0.0)
    assert (f.host_ip(A), f.n_ips) == (None, 0)


# ----------------------------------------------------- stateful property

#: The politeness a machine run draws (tests/test_spill.py's machine draws the same, and a head size).
MACHINE_SETUP = dict(
    rate=st.sampled_from([0.0, 30.0, 600.0]),
    window=st.sampled_from([5.0, 60.0]),
    cap=st.integers(1, 3),
    initial=st.sampled_from([0.0, 0.5, 1.0]),
    min_delay=st.sampled_from([0.0, 0.001]),
    ip_rate=st.sampled_from([0.0, 120.0]),
    ip_cap=st.sampled_from([0, 2]),
)


class FrontierMachine(RuleBasedStateMachine):
    """Random push/pop/done/backoff/requeue with advancing time, checked against a model."""

    @initialize(**MACHINE_SETUP)
    def setup(self, rate, window, cap, initial, min_delay, ip_rate, ip_cap):
        self.pol = Politeness(rate=rate, window=window, initial_delay=initial,
                              min_delay=min_delay if rate else 0.0,
                              max_delay=5.0, host_concurrency=cap,
                              ip_rate=ip_rate, ip_concurrency=ip_cap)
        self.starts = {}  # host or IP -> start times, to check the ceilings (rule 7)
        self.f = Frontier(self.pol)
        self.now = 0.0
        self.n = 0
        self.queues = {}  # host -> deque of urls, the model
        self.flying = []  # jobs in flight
        self.last_start = {}
        self.hold = {}  # host -> earliest allowed start (Retry-After / requeue)
        self.pushed = 0
        self.popped = []
        self.requeued = 0
        # host -> (id of its latest started job, its start, the host's last start before it)
        self.latest = {}

    @rule(host=st.sampled_from([A, B, C]), k=st.integers(1, 4))
    def push(self, host, k):
        for _ in range(k):
            u = f"http://{host}/{self.n}"
            self.n += 1
            self.f.push(u, host, 0, self.now)
            self.queues.setdefault(host, deque()).append(u)
            self.pushed += 1

    @rule(dt=st.sampled_from([0.0, 0.01, 0.3, 1.0, 2.5, 61.0]))
    def advance(self, dt):
        self.now += dt

    @rule()
    def pop(self):
        self._pop()

    def _pop(self):
        job = self.f.pop_ready(self.now)
        if job is None:
            return None
        h = job.host
        assert self.queues[h].popleft() == job.url  # FIFO, nothing lost or made up
        if h in self.last_start:
            assert self.now - self.last_start[h] >= self.f.host_delay(h) - 1e-9
        assert self.now >= self.hold.get(h, float("-inf"))
        self.latest[h] = (id(job), self.now, self.last_start.get(h))
        self.last_start[h] = self.now
        ip = self.f.host_ip(h)
        for key, rate in ((h, self.pol.rate), (ip, self.pol.ip_rate)):
            if key is None or not rate:
                continue
            times = self.starts.setdefault(key, [])
            times.append(self.now)
            for w in (1.0, 5.0):
                assert sum(t + w > self.now for t in times) <= ceiling(rate, w), (key, w, times)
        if ip is not None and self.pol.ip_concurrency:
            assert sum(self.f.host_ip(j.host) == ip for j in self.flying) < self.pol.ip_concurrency
        self.flying.append(job)
        self.popped.append(job.url)
        assert sum(j.host == h for j in self.flying) <= self.pol.host_concurrency
        return job

    @precondition(lambda self: self.flying)
    @rule(i=st.integers(0, 10), outcome=st.sampled_from(list(Outcome)))
    def done(self, i, outcome):
        job = self.flying.pop(i % len(self.flying))
        self._ended(job)
        self.f.done(job.host, self.now, outcome)

    def _ended(self, job):
        if self.latest.get(job.host, (None,))[0] == id(job):
            del self.latest[job.host]

    # Hosts without an IP budget: with one, a start taken back also depends
    # on the IP's ring (rebuilt when a host resolves there), which the
    # take-back's own tests check.
    @precondition(lambda self: self.flying and not self.pol.ip_rate and not self.pol.ip_concurrency)
    @rule(i=st.integers(0, 10))
    def not_started(self, i):
        """A job dropped before any request: its start is taken back if it was the host's latest."""
        job = self.flying.pop(i % len(self.flying))
        h = job.host
        self.f.done(h, self.now, Outcome.NOT_STARTED, job.url)
        latest = self.latest.pop(h, None)
        if latest is not None and latest[0] == id(job):
            _, t, before = latest
            if before is None:
                del self.last_start[h]
            else:
                self.last_start[h] = before
            if h in self.starts:
                assert self.starts[h][-1] == t
                self.starts[h].pop()
        elif latest is not None:
            self.latest[h] = latest  # a later start: this one stays counted

    @precondition(lambda self: self.flying)
    @rule(i=st.integers(0, 10), wait=st.sampled_from([0.0, 0.5, 3.0]))
    def retry(self, i, wait):
        job = self.flying.pop(i % len(self.flying))
        self._ended(job)
        self.f.done(job.host, self.now, Outcome.FAILED)
        self.f.requeue(job, self.now, self.now + wait)
        self.queues[job.host].appendleft(job.url)
        self.hold[job.host] = max(self.hold.get(job.host, float("-inf")), self.now + wait)
        self.requeued += 1

    @rule(host=st.sampled_from([A, B, C]), retry_after=st.sampled_from([None, 0.0, 2.0]))
    def backoff(self, host, retry_after):
        self.f.backoff(host, self.now, retry_after)
        if retry_after is not None:
            self.hold[host] = max(self.hold.get(host, float("-inf")), self.now + retry_after)

    @rule(host=st.sampled_from([A, B, C]), ip=st.sampled_from(["10.0.0.1", "10.0.0.2"]))
    def resolve(self, host, ip):
        self.f.set_host_ip(host, ip, self.now)

    @rule(host=st.sampled_from([A, B, C]), seconds=st.sampled_from([0.0, 0.7, 2.0]))
    def crawl_delay(self, host, seconds):
        self.f.set_min_delay(host, seconds, self.now)

    @invariant()
    def counts_match_the_model(self):
        queued = sum(len(q) for q in self.queues.values())
        assert len(self.f) == queued
        assert self.f.n_hosts == sum(1 for q in self.queues.values() if q)
        assert self.f.in_flight == len(self.flying)

    @invariant()
    def next_ready_is_none_only_when_nothing_can_start(self):
        def ip_free(h):
            # An IP at ip_concurrency blocks its hosts until a fetch ends,
            # whichever host (resolved before or after it started) holds it.
            ip = self.f.host_ip(h)
            if ip is None or not self.pol.ip_concurrency:
                return True
            return sum(self.f.host_ip(j.host) == ip for j in self.flying) < self.pol.ip_concurrency

        free_with_work = [
            h for h, q in self.queues.items()
            if q and sum(j.host == h for j in self.flying) < self.pol.host_concurrency and ip_free(h)
        ]
        assert (self.f.next_ready_at() is None) == (not free_with_work)

    def teardown(self):
        if not hasattr(self, "f"):
            return
        # Drain: everything pushed is popped exactly once (plus once per requeue).
        for _ in range(10_000):
            while self.flying:
                job = self.flying.pop()
                self.f.done(job.host, self.now)
            t = self.f.next_ready_at()
            if t is None:
                break
            self.now = max(self.now, t)
            self._pop()
        assert len(self.f) == 0
        assert len(self.popped) == self.pushed + self.requeued
        assert len(set(self.popped)) == self.pushed


TestFrontierMachine = FrontierMachine.TestCase
TestFrontierMachine.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)


# --------------------------------------------------------------- census and busiest (status, metrics)

def test_census_tells_ready_waiting_held_and_busy_hosts_apart():
    from peer.core.frontier import HostCensus

    f = Frontier(Politeness(rate=60.0, initial_delay=1.0))
    fill(f, A, 3)
    fill(f, B, 3)
    fill(f, C, 3)
    assert f.census(0.0) == HostCensus(ready=3, waiting=0, held=0, busy=0)
    a = f.pop_ready(0.0)
    f.done(a.host, 0.1)
    b = f.pop_ready(0.1)  # in flight: its one slot is taken
    c = f.pop_ready(0.1)
    f.done(c.host, 0.2)
    f.backoff(c.host, 0.2, retry_after=30.0)
    census = f.census(0.5)
    assert census == HostCensus(ready=0, waiting=1, held=1, busy=1), (a, b, c)
    assert f.census(1.5).ready == 1  # a's delay has passed


def test_busiest_hosts_rate_over_the_last_5_s_against_the_setpoint():
    f = Frontier(Politeness(rate=600.0))  # 10 pages/s a host
    fill(f, A, 50)
    fill(f, B, 50)
    now = 0.0
    while now < 5.0:
        for job in iter(lambda: f.pop_ready(now), None):
            f.done(job.host, now)
        now = round(now + 0.01, 2)
    f.set_min_delay(B, 1.0, now)  # a Crawl-delay of 1 s: its setpoint is 60 pages/min
    top = f.busiest(now, 5)
    assert [h for h, _, _ in top] == [A, B] or [h for h, _, _ in top] == [B, A]
    rates = {h: (r, s) for h, r, s in top}
    assert 500 <= rates[A][0] <= 700 and rates[A][1] == 600.0
    assert rates[B][1] == 60.0
    assert f.busiest(now, 1)[0][0] in (A, B) and len(f.busiest(now, 1)) == 1
    assert f.busiest(now + 60, 5) == []  # nothing started in the last 5 s
    assert Frontier(Politeness(rate=0)).busiest(now, 5) == []


def test_delays_lists_each_kept_hosts_delay():
    f = Frontier(Politeness(rate=60.0))
    fill(f, A, 1)
    fill(f, B, 1)
    assert sorted(f.delays()) == [1.0, 1.0]


def test_delays_samples_at_most_limit_hosts_spread_over_the_table():
    f = Frontier(Politeness(rate=60.0))
    for i in range(5000):
        f.push(url(f"h{i}", 0), f"h{i}", 0, 0.0)
    got = f.delays(limit=1000)
    assert 500 < len(got) <= 1000 and set(got) == {1.0}
    assert len(f.delays(limit=10_000)) == 5000


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


def test_a_start_taken_back_gives_the_ip_its_slot_back_too():
    f = ip_frontier(ip_rate=60.0)  # one request a second on the IP
    for h in (A, B):
        fill(f, h, 2)
        f.set_host_ip(h, IP, 0.0)
    job = f.pop_ready(0.0)
    f.done(job.host, 0.0, Outcome.NOT_STARTED, job.url)
    other = f.pop_ready(0.0)
    assert other is not None  # the IP's second was not used: the next host starts at once
    f.done(other.host, 0.0, Outcome.FETCHED, other.url)
    assert f.pop_ready(0.5) is None  # and that one was a request: the IP waits its second
