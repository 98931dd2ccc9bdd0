"""ring.vocabulary: the one table of the figures' names (docs/figures.md's table of them: tests/project/test_reference.py)."""

from __future__ import annotations

from ring.vocabulary import failed, not_requested, split_pairs


def test_exclusions_are_never_failures_nor_drops():
    assert failed({"robots": 3, "dns": 2, "timeout": 1}, {"robots": 3, "dns": 1}) == {"dns": 1, "timeout": 1}
    assert not_requested({"robots": 3}, 4, {"max_url_length": 2, "max_links_per_page": 9}) == {
        "max_url_length": 2, "robots": 3, "scope": 4}
    split = split_pairs([("not_requested.robots", 3), ("cap.max_links_per_page", 9), ("fwd.frames", 2),
                         ("malformed.content_length", 1), ("not_msgpack", 1)])
    assert split.not_requested == (("robots", 3),)
    assert split.counters == (("cap.max_links_per_page", 9), ("fwd.frames", 2))
    assert split.drops == (("malformed.content_length", 1), ("not_msgpack", 1))


def test_refused_input_is_a_drop_and_our_own_stalls_are_not():
    split = split_pairs([("stalled_rounds", 2), ("peer_restarts", 1), ("unknown_type", 20),
                         ("handshake.protocol", 3), ("handshake.auth", 1), ("handshake.closed", 4)])
    assert split.counters == (("stalled_rounds", 2), ("peer_restarts", 1))
    assert split.drops == (("unknown_type", 20), ("handshake.protocol", 3), ("handshake.auth", 1),
                           ("handshake.closed", 4))
