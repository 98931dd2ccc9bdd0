"""What a member's band query may be taken for (peer.core.dedupe.claims): its fetch time and its URL's host."""

from __future__ import annotations

import math

import pytest

from peer.core.dedupe.claims import Claim, judge

WALL = 1_800_000_000.0


def owner(url: str) -> str | None:
    return None if "nohost" in url else "p2" if "//mine.p2" in url else "p3"


@pytest.mark.parametrize("seen_at, url, want", [
    (WALL, "http://mine.p2/a", Claim.TAKEN),
    (WALL + 10.0, "http://mine.p2/a", Claim.TAKEN),  # within the skew
    (WALL + 10.001, "http://mine.p2/a", Claim.FUTURE),
    (WALL - 20.0, "http://mine.p2/a", Claim.TAKEN),  # answer_timeout + skew old: a query can be
    (WALL - 20.001, "http://mine.p2/a", Claim.TOO_OLD),
    (0.0, "http://mine.p2/a", Claim.TOO_OLD),  # 1970
    (math.nan, "http://mine.p2/a", Claim.FUTURE),
    (math.inf, "http://mine.p2/a", Claim.FUTURE),
    (WALL, "http://theirs.p3/a", Claim.NOT_OWNER),
    (WALL, "nohost", Claim.NOT_OWNER),
])
def test_a_claim_is_taken_only_within_the_clock_window_and_for_the_senders_own_host(seen_at, url, want):
    got = judge(seen_at, url, "p2", WALL, answer_timeout=10.0, skew=10.0, host_owner=owner)
    assert got is want
    assert got.recorded is (want is Claim.TAKEN)
    assert got.answered is (want in (Claim.TAKEN, Claim.NOT_OWNER))
