"""localweb.judges.politeness: a server's request log judged as a site owner would, on hand-made logs.

Each log here is written out by hand, so its worst window, its ceilings and
its rates are known before the code counts them.
"""

from __future__ import annotations

import math

import pytest

from localweb.judges.politeness import (
    Request,
    ceiling,
    count_in,
    judge_hosts,
    mid_rate,
    recovery,
    sliding_max,
    starts_by_host,
    total_vs_setpoints,
    windows,
    worst,
)


def req(start: float, host: str = "a.web.test", dur: float = 0.01) -> Request:
    return Request(start, start + dur, "127.0.0.1", host, 200, "/")


# ---------------------------------------------------------------------------
# Counting in windows


def test_count_in_is_half_open() -> None:
    times = [0.0, 1.0, 1.0, 2.0, 3.0]
    assert count_in(times, 1.0, 2.0) == 2  # both 1.0s, not 2.0
    assert count_in(times, 0.0, 3.0) == 4
    assert count_in(times, 3.5, 9.0) == 0


def test_sliding_max_finds_a_burst_across_a_grid_line() -> None:
    # On a 1 s grid no window holds more than 4; [0.7, 1.7) holds 6.
    times = [0.1, 0.7, 0.8, 0.9, 1.1, 1.2, 1.3, 2.5]
    assert windows(times, 0.0, 3.0, 1.0) == [4, 3, 1]
    assert sliding_max(times, 1.0, -math.inf, math.inf) == 6
    assert worst(times, 1.0) == 6


def test_sliding_max_window_is_half_open() -> None:
    # Exactly w apart: [t, t + w) holds one of the two, never both.
    assert worst([0.0, 1.0, 2.0, 3.0], 1.0) == 1
    assert worst([0.0, 0.999, 1.998], 1.0) == 2


def test_sliding_max_only_counts_inside_lo_hi() -> None:
    times = [0.0, 0.1, 0.2, 0.3, 5.0, 5.5]
    assert sliding_max(times, 1.0, -math.inf, math.inf) == 4
    assert sliding_max(times, 1.0, 1.0, 10.0) == 2
    assert sliding_max(times, 1.0, 0.15, 5.2) == 2  # 0.2, 0.3 (5.0 alone)


def test_worst_of_an_empty_or_single_log() -> None:
    assert worst([], 5.0) == 0
    assert worst([42.0], 1.0) == 1


def test_windows_counts_whole_windows_only() -> None:
    # [10, 20) in 3 s windows: [10,13) [13,16) [16,19); 19.5 is in no whole window.
    assert windows([9.9, 10.0, 12.9, 13.0, 18.9, 19.5, 20.0], 10.0, 20.0, 3.0) == [2, 1, 1]


# ---------------------------------------------------------------------------
# Rates and ceilings


@pytest.mark.parametrize(("per_s", "w", "limit"), [
    (10.0, 1.0, 12),   # ceil(11) + 1
    (10.0, 5.0, 56),   # 1.1 x 10 x 5 is 55.000000000000007 in binary: still 55 + 1
    (2.0, 1.0, 4),     # ceil(2.2) + 1
    (4.0, 5.0, 23),    # ceil(22) + 1
    (0.5, 1.0, 2),     # ceil(0.55) + 1
])
def test_ceiling(per_s: float, w: float, limit: int) -> None:
    assert ceiling(per_s, w) == limit


def test_mid_rate_trims_the_ends() -> None:
    # 1/s for 100 s, with a burst of 50 in the first second: trimmed away.
    times = sorted([float(t) for t in range(101)] + [0.01 * k for k in range(1, 51)])
    rate = mid_rate(times)
    assert rate is not None
    assert rate == pytest.approx(1.0, abs=0.02)
    untrimmed = mid_rate(times, trim=0.0)
    assert untrimmed is not None and untrimmed > 1.4


def test_mid_rate_none_when_too_short() -> None:
    assert mid_rate([]) is None
    assert mid_rate([1.0]) is None
    assert mid_rate([0.0, 1.0, 4.9]) is None
    assert mid_rate([0.0, 5.0]) is not None


def test_recovery_first_and_settled() -> None:
    target = 20.0  # within +-10%: 18..22
    assert recovery([5, 19, 30, 21, 20, 22], target) == (2, 4)
    assert recovery([5, 6, 7], target) == (None, None)
    assert recovery([20, 20, 10], target) == (1, None)
    assert recovery([20, 20, 20], target) == (1, 1)


# ---------------------------------------------------------------------------
# Verdicts over a whole log


def test_starts_by_host_sorts_and_filters() -> None:
    log = [req(3.0, "a"), req(1.0, "b"), req(2.0, "a"), req(9.0, "a"), req(1.5, "c")]
    assert starts_by_host(log) == {"a": [2.0, 3.0, 9.0], "b": [1.0], "c": [1.5]}
    assert starts_by_host(log, lo=1.5, hi=9.0) == {"a": [2.0, 3.0], "c": [1.5]}
    assert starts_by_host(log, hosts=["a"]) == {"a": [2.0, 3.0, 9.0]}


def test_starts_not_ends_are_counted() -> None:
    # Five requests started within 1 s but each took 2 s: their ends are
    # spread out, their starts are not.
    log = [Request(0.2 * k, 0.2 * k + 2.0 * k, "", "a", 200, "/") for k in range(5)]
    assert judge_hosts(log, 10.0).w1 == 5


def test_judge_hosts_finds_the_host_over_its_ceiling() -> None:
    per_s = 2.0  # ceilings: 4 in any 1 s, ceil(11) + 1 = 12 in any 5 s
    polite = [req(0.5 * k, "polite") for k in range(40)]  # exactly 2/s for 20 s
    burst = [req(10.0 + 0.1 * k, "burst") for k in range(6)]  # 6 in 0.5 s
    steady_fast = [req(0.3 * k, "fast") for k in range(60)]  # 3.33/s: 4 in 1 s, 17 in 5 s
    v = judge_hosts(polite + burst + steady_fast, per_s)
    assert (v.hosts, v.c1, v.c5) == (3, 4, 12)
    assert v.w1 == 6 and v.top == "burst"
    assert v.w5 == 17
    assert v.over == 2  # burst over in 1 s, fast over in 5 s; polite under both
    # mid-crawl rates: polite about 2, fast about 3.33, burst too short (None): median of two
    assert v.median_rate == pytest.approx((2.0 + 10 / 3) / 2, abs=0.1)


def test_judge_hosts_of_an_empty_log() -> None:
    v = judge_hosts([], 1.0)
    assert (v.hosts, v.w1, v.w5, v.top, v.over, v.median_rate) == (0, 0, 0, "", 0, None)


def test_total_vs_setpoints_owes_only_hosts_with_work() -> None:
    # Host a works 0..20 s at 1/s, host b 10..20 s at 1/s; setpoint 1/s each.
    log = [req(float(t), "a") for t in range(21)] + [req(float(t), "b") for t in range(10, 21)]
    t = total_vs_setpoints(log, 1.0, 0.0, 20.0)
    # 20 requests of a and 10 of b in [0, 20); owed 20 + 10 host-seconds.
    assert t.rate == pytest.approx(30 / 20)
    assert t.owed == pytest.approx(30 / 20)
    assert t.ratio == pytest.approx(1.0)
    assert t.max == pytest.approx(1.0)


def test_total_vs_setpoints_sees_a_crawler_twice_too_fast() -> None:
    log = [req(0.5 * k, "a") for k in range(41)]  # 2/s against a setpoint of 1/s
    t = total_vs_setpoints(log, 1.0, 0.0, 20.0)
    assert t.ratio == pytest.approx(2.0)
    assert t.median == pytest.approx(2.0)
