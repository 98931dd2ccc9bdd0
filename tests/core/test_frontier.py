"""The per-host frontier: the gate, concurrency, FIFO, requeue, hand-off, memory, and a stateful model of it all
(peer/core/frontier/frontier.py, peer/core/frontier/scheduler.py, and the per-host record they share,
peer/core/frontier/hoststate.py; pacing, per-IP budgets and the census have their own files)."""

from collections import deque

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from peer.errors import PeerError
from peer.core.frontier.frontier import Frontier, Job, Outcome, Politeness, ceiling

A, B, C = "a.test", "b.test", "c.test"


def url(host, i):
    return f"http://{host}/{i}"


def fill(f, host, n, now=0.0, depth=0):
    for i in range(n):
        f.push(url(host, i), host, depth, now)


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


# ----------------------------------------------------- stateful property

#: The politeness a machine run draws (tests/core/test_spillqueue.py's machine draws the same, and a head size).
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
