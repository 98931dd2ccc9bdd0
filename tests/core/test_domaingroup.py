"""The hosts of one registered domain paced like one host (``politeness.group = "domain"``,
peer/core/frontier/ipbudget.py and scheduler.py, frontier rule 8), judged by their starts."""

from __future__ import annotations

import dataclasses

import pytest

from localweb.judges.politeness import ceiling, worst
from peer.core.config.cluster import parse_config
from peer.core.frontier.frontier import Frontier, Politeness
from peer.errors import ConfigError
from test_frontier import fill

A, B, C = "a.example.com", "b.example.com:8080", "www.example.com"
OTHER = "other.org"


def domain_frontier(politeness_for=None, **kw):
    args = dict(rate=600.0, window=60.0, group="domain")
    args.update(kw)
    return Frontier(Politeness(**args), politeness_for=politeness_for)


def run(frontiers, until, latency=0.05, hosts=None):
    """Drive frontiers (one a peer) to ``until``: each start is (time, host), every fetch
    ``latency`` long. Starts of ``hosts`` only, if given."""
    starts = []
    busy: list[tuple[float, int, str]] = []  # (end, frontier, host)
    t = 0.0
    while t < until:
        for end, i, host in [b for b in busy if b[0] <= t]:
            frontiers[i].done(host, end)
            busy.remove((end, i, host))
        for i, f in enumerate(frontiers):
            while (job := f.pop_ready(t)) is not None:
                starts.append((t, job.host))
                busy.append((t + latency, i, job.host))
        nexts = [f.next_ready_at() for f in frontiers] + [b[0] for b in busy]
        nexts = [x for x in nexts if x is not None]
        if not nexts:
            break
        t = max(min(nexts), t)
        if t == starts[-1][0] and not any(b[0] <= t for b in busy):
            t += 1e-6
    return [s for s in starts if hosts is None or s[1] in hosts]


def test_two_hosts_of_one_domain_share_one_setpoint_another_domain_keeps_its_own():
    f = domain_frontier(rate=60.0)  # one a second
    for h in (A, B, OTHER):
        fill(f, h, 5)
    got = run([f], 3.5)
    assert [t for t, h in got if h != OTHER] == [0.0, 1.0, 2.0, 3.0]  # A and B together: 60/min
    assert [t for t, h in got if h == OTHER] == [0.0, 1.0, 2.0, 3.0]  # its own 60/min
    assert f.host_domain(A) == f.host_domain(B) == "example.com" and f.host_domain(OTHER) == "other.org"
    assert f.domain_delay("example.com") == 1.0 and f.n_domains == 2
    assert f.host_ip(A) is None  # a domain's group is no IP


def test_by_host_the_same_hosts_each_get_the_setpoint():
    f = Frontier(Politeness(rate=60.0, window=60.0))
    for h in (A, B):
        fill(f, h, 5)
    got = run([f], 3.5)
    assert len(got) == 8 and f.n_domains == 0 and f.host_domain(A) is None


def test_a_domain_of_many_hosts_stays_within_one_hosts_ceilings_and_uses_its_setpoint():
    f = domain_frontier(rate=600.0, host_concurrency=2)
    hosts = [f"h{i}.example.com" for i in range(6)]
    for h in hosts:
        fill(f, h, 200)
    times = [t for t, _ in run([f], 20.0, latency=0.15)]  # 2 slots: up to 13/s
    for w in (1.0, 5.0):
        assert worst(times, w) <= ceiling(10.0, w), w
    assert 190 <= len(times) <= 201  # 10/s for 20 s: the whole setpoint, not a host's share of it


def test_the_domains_concurrency_is_one_hosts():
    f = domain_frontier(rate=0.0, host_concurrency=2)  # no rate: only the slots bind
    for h in (A, B, C):
        fill(f, h, 5)
    jobs = [f.pop_ready(0.0) for _ in range(3)]
    assert jobs[2] is None and {j.host for j in jobs[:2]} <= {A, B, C}
    f.done(jobs[0].host, 0.1)
    assert f.pop_ready(0.1) is not None


def test_two_peers_owning_a_domains_hosts_together_keep_its_ceilings_at_their_ring_shares():
    # The ring places hosts by name: p1 owns A, p2 owns B and C; each paces the
    # domain at its ring share of the setpoint, so the parts sum to it.
    p1, p2 = domain_frontier(), domain_frontier()
    p1.set_ring_ip_share(0.4, 0.0)
    p2.set_ring_ip_share(0.6, 0.0)
    fill(p1, A, 300)
    for h in (B, C):
        fill(p2, h, 300)
    got = run([p1, p2], 30.0)
    times = [t for t, _ in got]
    for w in (1.0, 5.0):
        assert worst(times, w) <= ceiling(10.0, w), w
    assert 280 <= len(times) <= 302  # 10/s together
    assert p1.domain_delay("example.com") == pytest.approx(0.25)  # 4/s
    assert p2.domain_delay("example.com") == pytest.approx(1 / 6)  # 6/s


def test_a_domain_first_seen_alone_takes_the_ring_share_when_the_ring_grows():
    f = domain_frontier()
    fill(f, A, 5)
    assert f.domain_delay("example.com") == pytest.approx(0.1)  # alone: the whole setpoint
    f.set_ring_ip_share(0.5, 0.0)
    assert f.domain_delay("example.com") == pytest.approx(0.2)
    fill(f, "new.example.net", 1)  # a new domain gets the ring share too
    assert f.domain_delay("example.net") == pytest.approx(0.2)


def test_per_site_rates_the_domain_runs_at_its_slowest_hosts_rate_until_that_host_goes():
    base = Politeness(rate=600.0, window=60.0, group="domain")
    slow = dataclasses.replace(base, rate=60.0)
    f = Frontier(base, politeness_for=lambda h: slow if h.startswith("slow.") else base)
    fill(f, A, 100)
    assert f.domain_delay("example.com") == pytest.approx(0.1)
    fill(f, "slow.example.com", 1)
    assert f.domain_delay("example.com") == pytest.approx(1.0)  # the smallest rate of its hosts
    got = run([f], 4.5)
    assert [t for t, _ in got] == [0.0, 1.0, 2.0, 3.0, 4.0]  # A too, while the slow host is kept
    # The slow host's one URL is done; once it is forgotten (rule 6) the domain speeds up.
    f.roll_windows(20.0)
    assert "slow.example.com" not in f.known_hosts() and A in f.known_hosts()
    assert f.domain_delay("example.com") == pytest.approx(0.1)


def test_a_live_change_of_a_sites_rate_moves_the_domains_setpoint():
    base = Politeness(rate=600.0, window=60.0, group="domain")
    slow = dataclasses.replace(base, rate=60.0)
    f = Frontier(base, politeness_for=lambda h: slow if h.startswith("slow.") else base)
    for h in (A, "slow.example.com"):
        fill(f, h, 5)
    assert f.domain_delay("example.com") == pytest.approx(1.0)
    # ring set: the [[site]] block that slowed one host is gone; its hosts are paced anew.
    f.set_politeness(base, None, 0.0)
    f.refresh(0.0, 100)
    assert f.domain_delay("example.com") == pytest.approx(0.1)
    f.set_politeness(dataclasses.replace(base, rate=120.0), None, 0.0)  # and [politeness] rate itself
    f.refresh(0.0, 100)
    assert f.domain_delay("example.com") == pytest.approx(0.5)


def test_domain_groups_are_forgotten_with_their_hosts():
    f = domain_frontier()
    fill(f, A, 1)
    job = f.pop_ready(0.0)
    f.done(job.host, 0.1)
    f.roll_windows(4.99)
    assert (f.n_known, f.n_domains) == (1, 1)
    f.roll_windows(5.0)
    assert (f.n_known, f.n_domains) == (0, 0)


def test_an_address_is_a_group_of_its_own_and_set_host_ip_is_ignored():
    f = domain_frontier()
    fill(f, "127.0.0.1:8080", 1)
    fill(f, A, 1)
    f.set_host_ip(A, "10.0.0.1", 0.0)
    assert f.host_domain("127.0.0.1:8080") == "127.0.0.1" and f.host_domain(A) == "example.com"
    assert f.n_ips == 0


# --------------------------------------------------------------- the config

MINIMAL = '[[peer]]\nid = "p1"\n'


def error_of(text):
    with pytest.raises(ConfigError) as info:
        parse_config(MINIMAL + text, "/etc/rc/cluster.toml")
    return info.value


@pytest.mark.parametrize("text, key, says", [
    ('[politeness]\ngroup = "site"\n', "politeness.group", 'expected "host" or "domain"'),
    ('[politeness]\ngroup = "domain"\nip_rate = 60\n', "politeness.group",
     'expected "host" with politeness.ip_rate set'),
    ('[politeness]\ngroup = "domain"\nip_concurrency = 2\n', "politeness.group",
     'expected "host" with politeness.ip_concurrency set'),
])
def test_a_bad_group_is_one_line_naming_the_key(text, key, says):
    err = error_of(text)
    assert err.key == key and says in err.message, str(err)
    assert "\n" not in str(err)


def test_group_defaults_to_host():
    cfg = parse_config(MINIMAL, "/etc/rc/cluster.toml")
    assert cfg.politeness.group == "host" and not cfg.politeness.by_domain
    cfg = parse_config(MINIMAL + '[politeness]\ngroup = "domain"\n', "/etc/rc/cluster.toml")
    assert cfg.politeness.by_domain
