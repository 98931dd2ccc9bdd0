"""The frontier's read-outs for status and metrics (peer/core/frontier/census.py)."""

from peer.core.frontier.frontier import Frontier, Politeness
from test_frontier import A, B, C, fill, url


# --------------------------------------------------------------- census and busiest (status, metrics)

def test_census_tells_ready_waiting_held_and_busy_hosts_apart():
    from peer.core.frontier.frontier import HostCensus

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
