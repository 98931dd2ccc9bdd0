"""Hosts that share an IP address paced like one host (peer/core/frontier/ipbudget.py, frontier rule 8)."""

from peer.core.frontier.frontier import MIN_IP_SHARE, Frontier, Outcome, Politeness, ceiling
from test_frontier import A, B, C, fill


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


# ------------------------------------------- a start that was no request (rule 1), on an IP

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


def test_the_ring_share_applies_to_known_ips_too_but_not_to_one_set_for_itself():
    # An IP first seen while the peer was alone (share 1) kept that share after
    # the ring grew: a peer of a ring of 5 paced its IP at 10/s where the
    # others, at their fifth, did 2/s, and the site saw the ring exceed ip_rate.
    f = ip_frontier(ip_concurrency=8)
    fill(f, A, 5)
    f.set_host_ip(A, IP, 0.0)
    fill(f, B, 5)
    f.set_host_ip(B, "10.0.0.2", 0.0)
    f.set_ip_share("10.0.0.2", 0.5, 0.0)  # its own share (per-IP gossip): kept
    assert (f.ip_delay(IP), f.ip_delay("10.0.0.2")) == (1.0, 2.0)
    f.set_ring_ip_share(0.25, 1.0)
    assert (f.ip_delay(IP), f.ip_delay("10.0.0.2")) == (4.0, 2.0)
    fill(f, C, 1)
    f.set_host_ip(C, "10.0.0.3", 1.0)
    assert f.ip_delay("10.0.0.3") == 4.0  # a new IP: the ring's share
    f.set_ring_ip_share(float("nan"), 2.0)  # not a share: ignored
    assert f.ip_delay(IP) == 4.0
