"""The politeness room's numbers: the 1 s/5 s ceiling and its rings of start times
(peer.core.politeness.ceiling), and a profile's figures worked out once (peer.core.politeness.profile).

A site owner judges a crawler by the most requests it saw in any 1 s and 5 s
window (localweb.judges.politeness); these are the counts the frontier holds
every host to, whatever its PID says (frontier rule 7)."""

from dataclasses import replace

import pytest

from peer.core.frontier.frontier import Politeness
from peer.core.politeness.ceiling import NEG_INF, ceiling, new_ring, ring_gate, ring_times
from peer.core.politeness.profile import Pace, new_pid


@pytest.mark.parametrize(("rate", "window", "most"), [
    (60, 1.0, 3),     # 1.1 a second, rounded up, plus one: the counting resolution
    (60, 5.0, 7),     # 5.5 in five seconds -> 6, plus one
    (600, 5.0, 56),   # 1.1 * 10 * 5 is 55.000...01 in floating point: not 57
    (6, 1.0, 2),      # a slow site still gets its one start and the resolution's
])
def test_the_ceiling_is_ten_percent_over_the_setpoint_plus_one_start(rate, window, most):
    assert ceiling(rate, window) == most


def test_a_ring_keeps_the_newest_starts_and_says_when_one_more_fits():
    ring = new_ring(3, [0.1, 0.5, 0.2, 0.9])  # four starts, room for three: the oldest goes
    assert ring_times(ring, 0, NEG_INF) == [0.2, 0.5, 0.9]
    assert ring_times(ring, 0, 0.3) == [0.5, 0.9]
    # At most 3 starts in any 1 s: the third newest (0.2) + 1 s is when a fourth fits.
    assert ring_gate(ring, 0, ((1.0, 3),)) == pytest.approx(1.2)
    # At most 2 in any 1 s: the second newest (0.5) + 1 s.
    assert ring_gate(ring, 0, ((1.0, 2),)) == pytest.approx(1.5)
    # Several windows: the latest of their answers.
    assert ring_gate(ring, 0, ((1.0, 3), (5.0, 2))) == pytest.approx(5.5)
    assert ring_gate(None, 0, ((1.0, 1),)) == NEG_INF  # no ring: no start to wait for
    assert list(new_ring(2)) == [NEG_INF, NEG_INF]


def test_a_profile_works_out_its_ceilings_once_and_a_rate_of_zero_paces_nothing():
    pol = Politeness(rate=60.0, host_concurrency=2)
    pace = Pace(pol)
    assert pace.pid_on and pace.cap == 2 and pace.fresh_delay == pol.start_delay
    assert pace.limits == ((1.0, ceiling(60.0, 1.0)), (5.0, ceiling(60.0, 5.0)))
    assert pace.ring_n == ceiling(60.0, 5.0)  # the ring holds the longest window's count
    assert pace.new_host_pid() is not None
    off = Pace(replace(pol, rate=0.0))
    assert not off.pid_on and off.limits == () and off.ring_n == 0 and off.fresh_delay == 0.0
    assert off.new_host_pid() is None


def test_a_new_controller_starts_inside_the_delay_bounds():
    pol = Politeness(rate=60.0)
    assert new_pid(pol, initial_delay=1e9).delay == pol.max_delay
    assert new_pid(pol, initial_delay=0.0).delay == pol.floor_delay
    assert new_pid(pol).delay == min(max(pol.start_delay, pol.floor_delay), pol.max_delay)
