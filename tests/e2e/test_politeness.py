"""Politeness at any rate, judged by the simulated servers' own request logs.

localweb/sims/politeness.py drives the frontier on simulated time (request start ->
latency -> done). Every test checks, over the log, the ceilings of rule 7 in
peer/core/frontier/frontier.py (any 1 s and any 5 s window, sliding) and the rate a site saw
while it had work. The figures of docs/politeness.md come from the same code
(scripts/sim_polite.py).

Pure (no socket, no clock), but long: hosts simulated for up to 18 minutes of
simulated time at every rate, about 6 s of CPU in all, so they run with the
end-to-end tests and not in ``scripts/test --pure``; the frontier's rules one
by one are tests/core/test_pacing.py's and test_frontier.py's.
"""

from __future__ import annotations

import math

import pytest

from peer.core.frontier.frontier import Frontier, Politeness
from localweb.sims.politeness import (
    Site, ceilings, max_in_window, per_window, rate_between, recovery_windows, simulate, steps,
)

RATES = [6.0, 60.0, 120.0, 600.0, 1200.0]
WINDOW = 60.0
PHASE = 6 * WINDOW


def limit(rate: float, window: float) -> int:
    """The brief's rule, written out: ceil(1.1 x rate/s x W) + 1, with a tolerance for binary floats."""
    return math.ceil(1.1 * rate / 60.0 * window - 1e-9) + 1


def assert_ceilings(times: list[float], rate: float, what: str) -> None:
    for w in (1.0, 5.0):
        worst = max_in_window(times, w)
        assert worst <= limit(rate, w), f"{what}: {worst} requests in {w:g} s, limit {limit(rate, w)}"


def test_the_ceilings_are_the_rule_written_out():
    # Figures from the measurement that motivated the rule.
    assert ceilings(600.0) == {1.0: 12, 5.0: 56}
    assert ceilings(120.0)[5.0] == 12
    for rate in RATES:
        assert ceilings(rate) == {w: limit(rate, w) for w in (1.0, 5.0)}


@pytest.mark.parametrize("concurrency", [1, 4])
@pytest.mark.parametrize("rate", RATES)
def test_latency_steps_at_any_rate(rate, concurrency):
    """50 -> 1000 -> 50 ms: the setpoint in the fast phases, the ceilings always.

    In the slow phase a host whose slots cannot carry the setpoint
    (concurrency / 1 s < rate) runs at what its slots carry, and its PID is
    not wound down by it: back at 50 ms it is at the setpoint from the first
    window on.
    """
    pol = Politeness(rate=rate, window=WINDOW, host_concurrency=concurrency)
    lat = steps((0.0, 0.05), (PHASE, 1.0), (2 * PHASE, 0.05))
    run = simulate([Site("a.test", latency=lat)], pol, 3 * PHASE)
    ts = run.times()
    assert_ceilings(ts, rate, f"{rate:g}/min x {concurrency}")
    capacity = 60.0 * concurrency / 1.0  # pages/min the slots carry at 1 s
    for phase, can in enumerate([rate, min(rate, capacity), rate]):
        got = rate_between(ts, phase * PHASE + WINDOW, (phase + 1) * PHASE)
        assert got >= 0.9 * can, f"phase {phase}: {got:.1f}/min, can {can:g}"
        assert got <= 1.05 * rate, f"phase {phase}: {got:.1f}/min over the setpoint {rate:g}"
    back = recovery_windows(ts, WINDOW, 2 * PHASE, 3 * PHASE, rate * WINDOW / 60.0)
    assert back is not None and back <= 1, per_window(ts, WINDOW, 3 * PHASE)


@pytest.mark.parametrize("retry_after", [None, 5.0])
@pytest.mark.parametrize("rate", RATES)
def test_429s_back_off_and_recover(rate, retry_after):
    """30 s of 429s: the host slows at once, the ceilings hold, the rate comes back.

    Every 429 doubles the delay and each window halves it again (rule 4), so
    a host that got k 429s in a row is back within about k + 1 windows.
    """
    pol = Politeness(rate=rate, window=WINDOW, host_concurrency=2)
    site = Site("a.test", busy=[(PHASE, PHASE + 30.0)], retry_after=retry_after)
    end = PHASE + 30.0 + 14 * WINDOW
    run = simulate([site], pol, end)
    ts = run.times()
    assert_ceilings(ts, rate, f"{rate:g}/min")
    n429 = sum(h.status == 429 for h in run.log)
    assert 1 <= n429 <= 12  # slowed at once: not a 429 for every request of 30 s
    back = recovery_windows(ts, WINDOW, PHASE + 30.0, end, rate * WINDOW / 60.0)
    assert back is not None and back <= n429 + 1, (n429, per_window(ts, WINDOW, end))
    assert rate_between(ts, end - 3 * WINDOW, end) >= 0.9 * rate


@pytest.mark.parametrize("rate", [60.0, 600.0])
def test_ceiling_holds_with_min_delay_below_the_floor_and_a_seeded_history(rate):
    """A user's min_delay far below the floor and a restarted peer's history: the ring holds."""
    pol = Politeness(rate=rate, window=10.0, min_delay=0.001, initial_delay=0.001,
                     host_concurrency=8)
    f = Frontier(pol)
    # Before the restart the host got a full 5 s worth of starts, the last just now.
    n5 = limit(rate, 5.0)
    before = [100.0 - 4.9 + 4.9 * i / (n5 - 1) for i in range(n5)]
    for i in range(2000):
        f.push(f"http://a.test/{i}", "a.test", 0, 100.0)
    f.seed_starts("a.test", before, 100.0)
    t, starts = 100.0, []
    while t < 160.0:
        job = f.pop_ready(t)
        if job is not None:
            starts.append(t)
            f.done("a.test", t + 0.01)
        nxt = f.next_ready_at()
        t = max(t + 1e-3, nxt if nxt is not None else t + 1.0)
    assert starts and starts[0] >= before[0] + 5.0  # the restart did not reset the count
    assert_ceilings(before + starts, rate, "restart")
    assert f.ceiling_holds > 0


def test_hand_off_carries_the_starts_to_the_new_owner():
    pol = Politeness(rate=600.0, window=10.0, min_delay=0.001, initial_delay=0.001)
    old, new = Frontier(pol), Frontier(pol)
    for i in range(100):
        old.push(f"http://a.test/{i}", "a.test", 0, 0.0)
    for k in range(3000):  # 3 s in 1 ms steps: the ring lets 12 a second through
        t = k / 1000
        if old.pop_ready(t) is not None:
            old.done("a.test", t + 0.001)
    recent = old.recent_starts("a.test")
    assert len(recent) == 3 * limit(600.0, 1.0)
    jobs = old.remove_host("a.test")
    assert old.recent_starts("a.test") == recent  # kept until rule 6 forgets the host
    new.seed_starts("a.test", recent, 3.0)
    for job in jobs:
        new.push(job.url, job.host, job.depth, 3.0)
    starts = []
    for k in range(3000, 10_000):
        t = k / 1000
        if new.pop_ready(t) is not None:
            starts.append(t)
            new.done("a.test", t + 0.001)
    assert new.ceiling_holds > 0 and len(starts) > 50
    assert_ceilings(list(recent) + starts, 600.0, "hand-off")


# ------------------------------------------------------------------ per IP

def shared_ip_sites(per_peer: tuple[int, int], rate: float) -> list[Site]:
    sites = []
    for peer, n in enumerate(per_peer):
        for i in range(n):
            sites.append(Site(f"h{peer}{i}.test", ip="10.0.0.1", peer=peer,
                              latency=lambda t: 0.2))
    sites.append(Site("alone.test", ip="10.0.0.2", peer=0))  # its own IP: not slowed
    return sites


@pytest.mark.parametrize("concurrency", [1, 4])
@pytest.mark.parametrize(("ip_rate", "host_rate"), [(120.0, 60.0), (600.0, 600.0), (1200.0, 600.0)])
def test_hosts_sharing_an_ip_across_two_peers_share_its_budget(ip_rate, host_rate, concurrency):
    """1 host on peer 0 and 3 on peer 1 share one IP; shares by host count, 1/4 and 3/4.

    Over the merged log of both peers the IP gets its ceilings (the sum of two
    peers' paced starts cannot exceed them: ceil(a) + ceil(b) <= ceil(a+b) + 1)
    and at least 90 % of ip_rate, the hosts their own ceilings, and the host on
    another IP its full rate.
    """
    pol = Politeness(rate=host_rate, window=WINDOW, host_concurrency=concurrency,
                     ip_rate=ip_rate, ip_concurrency=8)
    sites = shared_ip_sites((1, 3), host_rate)
    run = simulate(sites, pol, 4 * WINDOW, peers=2,
                   shares={(0, "10.0.0.1"): 0.25, (1, "10.0.0.1"): 0.75})
    shared = run.times(ip="10.0.0.1")
    assert_ceilings(shared, ip_rate, "the shared IP")
    can = min(ip_rate, 4 * host_rate)
    assert rate_between(shared, WINDOW, 4 * WINDOW) >= 0.9 * can
    assert rate_between(shared, WINDOW, 4 * WINDOW) <= 1.05 * ip_rate
    for s in sites:
        assert_ceilings(run.times(host=s.host), host_rate, s.host)
    assert rate_between(run.times(host="alone.test"), WINDOW, 4 * WINDOW) >= 0.9 * host_rate
    # Neither peer's PID was wound down by the IP holding its hosts back.
    for f in run.peers:
        for s in sites:
            if s.ip == "10.0.0.1":
                assert f.host_delay(s.host) >= pol.nominal_delay - 1e-9


def test_ip_concurrency_caps_fetches_in_flight_per_ip():
    pol = Politeness(rate=600.0, window=WINDOW, host_concurrency=4, ip_rate=0.0, ip_concurrency=2)
    sites = [Site(f"h{i}.test", ip="10.0.0.1", latency=lambda t: 1.0) for i in range(4)]
    run = simulate(sites, pol, 30.0)
    starts = sorted(h.t for h in run.log)
    # At most 2 in flight: any 1 s (the latency) holds at most 2 starts.
    assert max_in_window(starts, 1.0 - 1e-9) <= 2
    assert len(starts) >= 2 * 29


def test_first_fetch_resolves_the_ip_and_then_counts():
    """Resolved after the first fetch (no DNS cache answer at push time): one start per host
    escapes the IP's pacing, then the IP's budget holds."""
    pol = Politeness(rate=60.0, window=WINDOW, ip_rate=60.0)
    sites = [Site(f"h{i}.test", ip="10.0.0.1") for i in range(5)]
    run = simulate(sites, pol, 120.0, resolve_at_push=False)
    starts = run.times(ip="10.0.0.1")
    assert sum(t == 0.0 for t in starts) == 5  # each host's first fetch, before DNS
    later = [t for t in starts if t > 0.0]
    assert later[0] >= 1.0  # the five count against the IP: the next waits a full delay
    assert_ceilings(later, 60.0, "after DNS")
    assert rate_between(starts, 10.0, 120.0) == pytest.approx(60.0, rel=0.05)
