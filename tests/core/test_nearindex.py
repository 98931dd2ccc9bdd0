"""A band owner's table: near duplicates found, first wins, caps and eviction counted (peer.core.dedupe.bands)."""

from __future__ import annotations

import pytest

from peer.core.dedupe.bands import NO_DISTANCE, BandTable, NearAnswer, NearQuery

ALL = (0, 1, 2, 3)
FP = 0x0123456789ABCDEF


def q(fp: int, url: str, seen_at: float = 0.0, which: tuple[int, ...] = ALL) -> NearQuery:
    return NearQuery(which, fp, url, "p1", seen_at)


def test_an_earlier_page_within_k_is_found() -> None:
    t = BandTable(k=3)
    assert t.query(q(FP, "http://a/1", 1.0)) == NearAnswer("http://a/1", None, NO_DISTANCE)
    near = FP ^ 0b1011  # 3 bits off, all in the last band
    assert t.query(q(near, "http://b/1", 2.0)) == NearAnswer("http://b/1", "http://a/1", 3)
    assert t.stats.duplicates == 1


def test_a_far_page_sharing_a_band_is_not_a_duplicate() -> None:
    t = BandTable(k=3)
    t.query(q(FP, "http://a/1", 1.0))
    far = FP ^ 0b11111  # 5 bits off, three bands still equal
    assert t.query(q(far, "http://b/1", 2.0)).duplicate_of is None


def test_only_the_bands_asked_are_looked_at() -> None:
    t = BandTable(k=3)
    t.query(q(FP, "http://a/1", 1.0, which=(0,)))
    near = FP ^ (1 << 63)  # band 0 differs: the other bands are not held here
    assert t.query(q(near, "http://b/1", 2.0, which=(0,))).duplicate_of is None
    assert t.query(q(FP ^ 1, "http://c/1", 3.0, which=(0,))).duplicate_of == "http://a/1"


def test_the_nearest_earlier_page_wins() -> None:
    t = BandTable(k=3)
    t.query(q(FP ^ 0b111, "http://far/", 1.0))
    t.query(q(FP ^ 0b1, "http://close/", 2.0))
    a = t.query(q(FP, "http://me/", 3.0))
    assert (a.duplicate_of, a.distance) == ("http://close/", 1)


def test_first_wins_by_seen_at_whatever_order_the_owner_sees() -> None:
    # Two owners see A and B in opposite orders; neither may call both copies.
    one, two = BandTable(k=3), BandTable(k=3)
    a, b = q(FP, "http://a/", 5.0), q(FP ^ 1, "http://b/", 6.0)
    verdicts = {}
    one.query(a)
    verdicts["b@one"] = one.query(b).duplicate_of
    two.query(b)
    verdicts["a@two"] = two.query(a).duplicate_of
    assert verdicts == {"b@one": "http://a/", "a@two": None}


def test_a_recrawled_url_is_not_its_own_duplicate() -> None:
    t = BandTable(k=3)
    t.query(q(FP, "http://a/", 1.0))
    assert t.query(q(FP ^ 1, "http://a/", 9.0)).duplicate_of is None
    # Replaced under the 3 band keys its new fingerprint shares with the old;
    # the old last band keeps the old text's entry until evicted.
    assert t.stats.replaced == 3
    assert len(t) == 5


def test_per_key_cap_evicts_the_oldest() -> None:
    t = BandTable(k=3, max_per_key=3)
    # Same first band, different elsewhere: one shared key, others distinct.
    for i in range(5):
        t.query(q(FP ^ (0xFFFF << 20 if i % 2 else 0) ^ (i << 8), f"http://x/{i}", float(i), which=(0,)))
    assert len(t) == 3
    assert t.stats.evicted_per_key == 2
    # The oldest (x/0, x/1) are gone: a copy of x/0 finds x/2.. only if near them.
    a = t.query(q(FP, "http://copy/", 10.0, which=(0,)))
    assert a.duplicate_of not in {"http://x/0", "http://x/1"}


def test_total_cap_evicts_the_oldest_over_all_keys() -> None:
    t = BandTable(k=3, max_entries=10)
    fps = [(i * 0x9E3779B97F4A7C15) % (1 << 64) for i in range(1, 9)]
    for i, fp in enumerate(fps):
        t.query(q(fp, f"http://p/{i}", float(i)))
    assert len(t) == 10
    assert t.stats.evicted_total == 8 * 4 - 10
    # The first pages left every key: a copy of page 0 finds nothing, of page 7 its original
    # (a path as long as its original's: the earlier fetch decides, peer.core.dedupe.precedence).
    assert t.query(q(fps[0], "http://copy/0", 100.0)).duplicate_of is None
    assert t.query(q(fps[7], "http://copy/7", 100.0)).duplicate_of == "http://p/7"
    assert len(t) <= 10


def test_eviction_records_stay_bounded_under_per_key_churn() -> None:
    t = BandTable(k=0, max_per_key=2, max_entries=50)
    for i in range(2000):  # one band key (k=0: the whole fingerprint), churned
        t.query(q(FP, f"http://churn/{i}", float(i), which=(0,)))
    assert len(t) == 2
    assert len(t._order) <= 2 * 50 + 16


@pytest.mark.parametrize("bad", [
    q(1 << 64, "http://a/"),
    q(-1, "http://a/"),
    q(FP, "http://a/", which=(4,)),
    q(FP, "http://a/", which=()),
    q(FP, "http://a/" + "x" * 9000),
    NearQuery((0,), "12", "http://a/", "p1", 0.0),  # type: ignore[arg-type]
    NearQuery((0,), FP, "http://a/", "p1", float("nan")),
    NearQuery((0,), FP, "http://a/", "p1", "yesterday"),  # type: ignore[arg-type]
    NearQuery((0,), FP, b"http://a/", "p1", 0.0),  # type: ignore[arg-type]
])
def test_hostile_queries_are_dropped_and_counted(bad: NearQuery) -> None:
    t = BandTable(k=3)
    assert t.query(bad).duplicate_of is None
    assert t.stats.dropped == 1
    assert len(t) == 0


def test_bad_settings_raise() -> None:
    with pytest.raises(ValueError):
        BandTable(k=64)
    with pytest.raises(ValueError):
        BandTable(k=3, max_per_key=0)
