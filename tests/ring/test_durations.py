"""ring.durations: one form of a span of time, for every surface that shows one to a person."""

import math

import pytest

from ring.durations import duration


@pytest.mark.parametrize(("seconds", "shown"), [
    (0, "0.0s"), (0.04, "0.0s"), (0.36, "0.4s"), (9.94, "9.9s"),
    (9.96, "10s"), (10, "10s"), (59.4, "59s"), (59.6, "1m00s"),
    (60, "1m00s"), (125, "2m05s"), (3599, "59m59s"),
    (3600, "1h00m"), (7322, "2h02m"), (86399, "23h59m"),
    (86400, "1d00h"), (2 * 86400 + 3 * 3600 + 59 * 60, "2d03h"),
])
def test_each_size_has_its_one_form(seconds, shown):
    assert duration(seconds) == shown


def test_never_negative_and_never_a_crash():
    # A clock step or a rate of zero must not print "-3s" or raise.
    assert duration(-3.0) == "0.0s"
    assert duration(math.inf) == "forever"
    assert duration(math.nan) == "?"


def test_the_form_is_fixed_within_each_range():
    # Minutes and seconds are zero-padded, so a column of them lines up.
    assert {len(duration(s)) for s in range(600, 3600, 7)} == {6}
