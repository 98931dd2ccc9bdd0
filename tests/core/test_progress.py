"""peer.core.run.progress: the progress line, driven synchronously with ``now`` passed in."""

from __future__ import annotations

from peer.core.run.progress import Progress, ProgressSnapshot
from ring.durations import duration


def snap(now: float, pages: int, **kw) -> ProgressSnapshot:
    return ProgressSnapshot(now=now, elapsed=now, pages=pages, **kw)


def test_the_rate_is_over_the_last_interval_not_cumulative():
    p = Progress()
    p.line(snap(5.0, 500))                 # 100/s for the first 5 s
    line = p.line(snap(10.0, 510))         # then 2/s
    assert "pages 510 (2.0/s now)" in line  # the cumulative average would say 51/s


def test_elapsed_time_items_and_errors_by_kind():
    line = Progress().line(snap(725.0, 10, items=4, errors={"timeout": 3, "connect": 1}))
    assert line.startswith("12m05s: ")
    assert "items 4" in line and "failed 4 (timeout 3, connect 1)" in line


def test_hosts_ready_waiting_and_held():
    line = Progress().line(snap(1.0, 1, hosts_ready=2, hosts_waiting=7, held_robots=1,
                                held_retry_after=3, held_next="Retry-After of a.test", held_next_in=42.0))
    assert "hosts 2 ready, 7 waiting on politeness, 4 held (Retry-After 3, robots.txt 1; " \
        "next Retry-After of a.test, retry in 42s)" in line
    assert "hosts 0 ready, 0 waiting on politeness, 0 held," in Progress().line(snap(1.0, 1))


def test_one_held_host_is_named_with_its_cause_and_the_time_to_its_retry():
    why = "robots.txt of 127.0.0.1:8091 unreachable (connection refused on port 8091)"
    line = Progress().line(snap(5.0, 0, held_robots=1, held_next=why, held_next_in=25.2))
    assert f"0 held" not in line
    assert f"1 held: {why}, retry in 25s" in line


def test_a_held_host_is_not_suppressed_as_a_repeat_while_it_waits():
    # A dead seed host: nothing else moves for minutes, but every line says
    # how long until its robots.txt is tried again.
    p = Progress()
    why = "robots.txt of x.test unreachable (connection refused on port 8091)"
    lines = [p.line(snap(t, 0, held_robots=1, held_next=why, held_next_in=60.0 - t))
             for t in (5.0, 10.0, 15.0, 20.0)]
    assert all(line is not None and why in line for line in lines)
    assert ["retry in 55s" in lines[0], "retry in 40s" in lines[3]] == [True, True]


def test_exclusions_are_apart_from_pages_and_errors():
    line = Progress().line(snap(1.0, 98, not_requested={"robots": 45}, out_of_scope=12))
    # The words of every other figure (ring.vocabulary): links out of scope are a cause.
    assert "pages 98 " in line and "failed 0" in line
    assert "not requested 57 (robots 45, scope 12)" in line


def test_percent_and_eta_toward_max_pages_at_the_current_cluster_rate():
    p = Progress()
    p.line(snap(10.0, 100, max_pages=1000, cluster_pages=300))
    line = p.line(snap(20.0, 150, max_pages=1000, cluster_pages=400))  # 10 pages/s cluster-wide
    assert "40% of max_pages 1,000, ETA 1m00s" in line
    done = p.line(snap(30.0, 160, max_pages=1000, cluster_pages=1003))
    assert "100% of max_pages 1,000, done" in done


def test_no_eta_while_nothing_moves():
    p = Progress()
    p.line(snap(10.0, 100, max_pages=1000, cluster_pages=100))
    assert "ETA unknown" in p.line(snap(20.0, 100, max_pages=1000, cluster_pages=100, frontier=1))


def test_the_same_line_is_not_repeated_while_the_ring_winds_down():
    p = Progress()
    assert p.line(snap(5.0, 50)) is not None
    assert p.line(snap(10.0, 60)) is not None
    assert p.line(snap(15.0, 60)) is not None   # the rate fell to 0: a change
    assert p.line(snap(20.0, 60)) is None       # idle, same figures: quiet
    assert p.line(snap(25.0, 60)) is None
    assert p.line(snap(30.0, 61)) is not None   # anything moves: printed again


def test_duration_forms():
    assert [duration(s) for s in (0, 59.4, 60, 3599, 3600, 7322)] == [
        "0.0s", "59s", "1m00s", "59m59s", "1h00m", "2h02m"]


def test_ready_hosts_are_counted_up_to_a_bound():
    from peer.core.run.progress import READY_MOST

    line = Progress().line(snap(1.0, 1, hosts_ready=READY_MOST, hosts_waiting=123_456))
    assert f"hosts {READY_MOST:,}+ ready, 123,456 waiting on politeness" in line


def test_the_frontier_counts_ready_and_waiting_hosts():
    from peer.core.config.cluster import PolitenessConfig
    from peer.core.frontier.frontier import Frontier

    f = Frontier(PolitenessConfig(rate=60.0))  # 1 s between a host's starts
    for i in range(50):
        f.push(f"http://h{i}.test/a", f"h{i}.test", 0, 0.0)
        f.push(f"http://h{i}.test/b", f"h{i}.test", 0, 0.0)
    assert f.host_counts(0.0) == (50, 0)
    assert f.host_counts(0.0, most=7) == (7, 43)
    for _ in range(20):
        job = f.pop_ready(0.0)
        f.done(job.host, 0.1)
    assert f.host_counts(0.5) == (30, 20)   # 20 wait on their delay
    assert f.host_counts(1.5) == (50, 0)


def test_a_pause_of_the_ring_is_on_the_line_and_its_start_is_never_suppressed():
    from ring.messages import LeaseStatus
    from ring.status import lease_words

    paused = lease_words(LeaseStatus.NO_MAJORITY, 1, 2, 3, 0.0)
    assert paused == "paused: no majority (1 of 3 vouch, 2 needed)"
    p = Progress()
    assert p.line(snap(5.0, 60)) is not None
    assert p.line(snap(10.0, 60)) is not None  # the rate fell to 0
    assert p.line(snap(15.0, 60)) is None
    line = p.line(snap(20.0, 60, paused=paused))  # nothing else moved: printed all the same
    assert line is not None and line.endswith(", paused: no majority (1 of 3 vouch, 2 needed)")
    assert p.line(snap(25.0, 60, paused=paused)) is None
    assert lease_words(LeaseStatus.GRACE, 0, 2, 3, 2.4) == "paused: grace (2.4s left)"
    assert lease_words(LeaseStatus.HELD, 3, 2, 3, 0.0) == "held (3 of 3 vouch, 2 needed)"


def test_the_first_line_after_a_resume_has_no_eta_from_pages_of_earlier_runs():
    # 66 of 300 pages were fetched by earlier runs; 3 s into this one the ETA
    # said 11 s (66 / 3 pages a second), where minutes were left.
    first = Progress().line(snap(3.0, 0, max_pages=300, cluster_pages=66))
    assert "22% of max_pages 300, ETA unknown" in first


def test_a_solo_eta_counts_the_queue_when_it_ends_before_max_pages():
    # 240 of a 251-page site fetched at 20 pages/s toward max_pages 500: the
    # crawl ends with its 11 queued URLs in about half a second; toward
    # max_pages the ETA said 13 s.
    p = Progress()
    p.line(snap(10.0, 40, max_pages=500, cluster_pages=40, frontier=200, solo=True))
    line = p.line(snap(20.0, 240, max_pages=500, cluster_pages=240, frontier=10, in_flight=1,
                       solo=True))
    assert "48% of max_pages 500, ETA 0.6s (the 11 queued)" in line


def test_a_ring_peer_eta_stays_toward_max_pages():
    # A ring peer's queue is its share only: other peers' queues feed the count.
    p = Progress()
    p.line(snap(10.0, 40, max_pages=500, cluster_pages=40))
    line = p.line(snap(20.0, 240, max_pages=500, cluster_pages=240, frontier=10))
    assert "48% of max_pages 500, ETA 13s" in line


def test_an_eta_beyond_a_week_is_not_a_number():
    p = Progress()
    p.line(snap(5.0, 0, max_pages=2**62, cluster_pages=0))
    line = p.line(snap(10.0, 100, max_pages=2**62, cluster_pages=100))
    assert "ETA over a week" in line and "h49m" not in line
