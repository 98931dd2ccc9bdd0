"""Tests for peer.core.seen.bloom: sizing, membership, growth and batches (its state file: tests/edges/test_bloomfile.py).

One slice, sized and probed, is peer.core.seen.slices (its sizes are checked
here). A batch big enough goes through the vectorised kernels
(peer.core.seen.kernels): the batch tests check them against adding key by key.
"""

from __future__ import annotations

import logging
import math
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import peer.core.seen.bloom as bloom
from peer.core.seen.slices import optimal_size
from peer.core.seen.bloom import BloomEventKind, BloomFilter


# ---------------------------------------------------------------------------
# Sizing and arguments


@pytest.mark.parametrize(
    ("capacity", "error_rate", "num_bits", "num_hashes"),
    [
        # m = ceil(-n ln p / ln(2)^2), k = round(m/n ln 2)
        (1_000_000, 0.01, 9_585_059, 7),  # 9585058.38 -> 9585059; 6.64 -> 7
        (200_000, 0.01, 1_917_012, 7),
        (1_000, 0.001, 14_378, 10),  # k = 9.966 -> 10
        (1, 0.5, 2, 1),  # 1.44 -> 2 bits; k = 1.39 -> 1
    ],
)
def test_optimal_sizing(capacity: int, error_rate: float, num_bits: int, num_hashes: int) -> None:
    bf = BloomFilter(capacity, error_rate)
    assert (bf.num_bits, bf.num_hashes) == (num_bits, num_hashes)
    assert (bf.capacity, bf.error_rate, bf.count) == (capacity, error_rate, 0)


@pytest.mark.parametrize(
    ("capacity", "error_rate", "fragment"),
    [
        (0, 0.01, "capacity"),
        (-5, 0.01, "capacity"),
        (10.0, 0.01, "capacity"),
        ("10", 0.01, "capacity"),
        (10, 0.0, "error_rate"),
        (10, 1.0, "error_rate"),
        (10, -0.1, "error_rate"),
        (10, math.nan, "error_rate"),
        (10, "0.01", "error_rate"),
    ],
)
def test_bad_arguments_raise_value_error(capacity: object, error_rate: object, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        BloomFilter(capacity, error_rate)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# Membership


def test_add_returns_true_then_false_and_counts() -> None:
    bf = BloomFilter(100, 0.01)
    assert "https://a.example/" not in bf
    assert bf.add("https://a.example/") is True
    assert bf.add("https://a.example/") is False
    assert "https://a.example/" in bf
    assert bf.add("https://b.example/x?y=1") is True
    assert bf.count == 2
    assert bf.add_many(["https://c.example/", "https://c.example/", "https://a.example/"]) == [
        True,
        False,
        False,
    ]
    assert bf.count == 3


def test_str_keys_hash_as_their_utf8_bytes() -> None:
    bf = BloomFilter(100, 0.01)
    bf.add("https://例え.jp/パス")
    assert "https://例え.jp/パス".encode() in bf


@settings(max_examples=150, deadline=None)
@given(keys=st.lists(st.text(max_size=40), max_size=300), capacity=st.integers(1, 400))
def test_no_false_negatives(keys: list[str], capacity: int) -> None:
    # Including filters far over capacity: saturation raises false positives only.
    bf = BloomFilter(capacity, 0.01)
    for key in keys:
        bf.add(key)
    assert all(key in bf for key in keys)
    assert all(bf.contains_many(keys))


def test_false_positive_rate_at_capacity() -> None:
    capacity, p = 200_000, 0.01
    bf = BloomFilter(capacity, p)
    added = bf.add_many([f"https://host{i % 97}.example/page/{i}" for i in range(capacity)])
    probes = [f"https://other{i % 89}.example/item?id={i}" for i in range(capacity)]
    measured = sum(bf.contains_many(probes)) / len(probes)
    # 200k probes: one standard deviation is ~2 % of p, so +-20 % is ~9 sigma.
    assert abs(measured - p) <= 0.2 * p, f"measured false-positive rate {measured}"
    # Adds that collided with earlier keys are not counted: about p/2 of them.
    assert capacity * (1 - p) <= bf.count == sum(added) < capacity
    assert bf.estimated_fpr() == pytest.approx(p, rel=0.2)
    assert bf.fill_ratio() ** bf.num_hashes == pytest.approx(measured, rel=0.2)
    assert bf.fill_ratio() == pytest.approx(0.5, abs=0.02)  # optimal k fills half the bits


def test_empty_filter_statistics() -> None:
    bf = BloomFilter(1000, 0.01)
    assert bf.fill_ratio() == 0.0
    assert bf.estimated_fpr() == 0.0


# ---------------------------------------------------------------------------
# Growth (scalable Bloom filter)


def make_keys(n: int, tag: str = "k") -> list[str]:
    return [f"https://h{i % 97}.example/{tag}/{i}" for i in range(n)]


def test_grows_lazily_with_tightening_error_rates() -> None:
    bf = BloomFilter(100, 0.01)
    bf.add_many(make_keys(100))
    assert bf.num_slices == 1 and bf.count == 100  # exactly full, nothing allocated yet
    bf.add_many(make_keys(100))  # seen keys never grow it
    assert "https://elsewhere.example/" not in bf and bf.num_slices == 1
    assert bf.add("https://h0.example/new") is True
    assert bf.num_slices == 2
    added = bf.add_many(make_keys(400, "more"))
    assert [(c, e) for c, e, *_ in bf.slices()] == [(100, 0.01), (200, 0.005), (400, 0.0025)]
    assert (bf.capacity, bf.error_rate, bf.total_capacity) == (100, 0.01, 700)
    # False positives (about 1 %) are not counted.
    assert 101 + 0.95 * 400 <= bf.count == sum(n for *_, n in bf.slices()) == 101 + sum(added) < 501
    # Each slice is sized for its own capacity and error rate.
    assert [(m, k) for _, _, m, k, _ in bf.slices()] == [
        optimal_size(100, 0.01), optimal_size(200, 0.005), optimal_size(400, 0.0025)
    ]
    assert bf.num_bits == sum(m for _, _, m, _, _ in bf.slices())
    assert bf.nbytes == sum((m + 7) // 8 for _, _, m, _, _ in bf.slices())


def test_growth_factor_four() -> None:
    bf = BloomFilter(100, 0.01, growth=4)
    bf.add_many(make_keys(2_000))
    assert [c for c, *_ in bf.slices()] == [100, 400, 1600]
    assert bf.growth == 4


def test_seen_in_any_slice_and_added_to_the_newest_only() -> None:
    bf = BloomFilter(50, 0.01)
    first = make_keys(50)
    bf.add_many(first)
    later = make_keys(50, "later")
    assert bf.add_many(later) == [True] * 50
    (_, _, _, _, c0), (_, _, _, _, c1) = bf.slices()
    assert (c0, c1) == (50, 50)  # the first slice did not change
    assert all(k in bf for k in first + later)
    assert bf.add_many(first + later) == [False] * 100
    assert bf.count == 100


# False-positive rates past the configured capacity. 100,000 fresh probes:
# at a rate near 0.018 one standard deviation of the measured rate is
# sqrt(0.018 * 0.982 / 1e5) = 0.00042, so the 2 x error_rate = 0.02 bound
# sits at least 4.5 sigma above the compound rate expected at 10x
# (0.0104 + 0.0051 + 0.0026 + ~0, measured per slice; small slices run a few
# percent above the asymptotic p, Bose et al., IPL 108(4), 2008); the keys are
# fixed, so the test is deterministic and a different set would fail by
# chance with probability below 1e-5.
FPR_CAPACITY, FPR_P = 10_000, 0.01


@pytest.fixture(scope="module")
def fpr_probes() -> list[str]:
    return [f"https://other{i % 89}.example/item?id={i}" for i in range(100_000)]


@pytest.mark.parametrize("times", [2, 5, 10])
def test_false_positive_rate_stays_within_twice_error_rate_past_capacity(
    times: int, fpr_probes: list[str]
) -> None:
    bf = BloomFilter(FPR_CAPACITY, FPR_P)
    fixed = BloomFilter(FPR_CAPACITY, FPR_P, max_capacity=FPR_CAPACITY)
    inserted = make_keys(times * FPR_CAPACITY)
    bf.add_many(inserted)
    fixed.add_many(inserted)
    measured = sum(bf.contains_many(fpr_probes)) / len(fpr_probes)
    assert measured <= 2 * FPR_P == bf.fpr_bound, f"compound false-positive rate {measured} at {times}x"
    assert bf.estimated_fpr() == pytest.approx(measured, rel=0.15)
    assert bf.estimated_fpr() < bf.fpr_bound
    assert bf.num_slices == {2: 2, 5: 3, 10: 4}[times]
    assert all(bf.contains_many(inserted))
    # The same inserts into a filter that may not grow: what the bound prevents.
    fixed_rate = sum(fixed.contains_many(fpr_probes)) / len(fpr_probes)
    assert fixed.num_slices == 1 and fixed.full
    assert fixed_rate > {2: 0.05, 5: 0.7, 10: 0.98}[times], fixed_rate


def test_fill_ratio_is_of_the_newest_slice() -> None:
    bf = BloomFilter(1_000, 0.01)
    bf.add_many(make_keys(1_000))
    assert bf.fill_ratio() == pytest.approx(0.5, abs=0.03)
    bf.add_many(make_keys(20, "grow"))  # the few keys past capacity go to a new, bigger slice
    assert bf.num_slices == 2 and 0 < bf.fill_ratio() < 0.01
    bf.add_many(make_keys(2_000, "more"))
    assert bf.fill_ratio() == pytest.approx(0.5, abs=0.03)


def test_growth_warns_once_per_growth_event(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="peer.bloom")
    bf = BloomFilter(1_000, 0.01)
    bf.add_many(make_keys(1_000))
    assert caplog.records == [] and bf.take_growth() == []
    bf.add_many(make_keys(10_000, "b"))  # 11x: slices of 1k, 2k, 4k, 8k
    bf.add_many(make_keys(10_000, "b"))  # seen: no more growth, no more warnings
    for key in make_keys(50, "c"):
        bf.add(key)
    assert bf.num_slices == 4
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.name for r in warnings] == ["peer.bloom"] * 3
    events = bf.take_growth()
    assert [(e.kind, e.slices, e.capacity) for e in events] == [
        (BloomEventKind.GREW, 2, 3_000), (BloomEventKind.GREW, 3, 7_000), (BloomEventKind.GREW, 4, 15_000),
    ]
    assert bf.take_growth() == []  # each event is taken once
    for record, event in zip(warnings, events):
        message = record.getMessage()
        assert message == str(event)
        assert f"{event.capacity:,} URLs" in message and f"{event.estimated_fpr:.2g}" in message
        assert "\n" not in message
    assert [e.count for e in events] == [1_000, 3_000, 7_000]
    assert events[-1].estimated_fpr == pytest.approx(0.0175, rel=0.05)


def test_max_capacity_cuts_the_last_slice_and_warns_once_when_full(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="peer.bloom")
    bf = BloomFilter(100, 0.01, max_capacity=250)
    bf.add_many(make_keys(200))
    assert [c for c, *_ in bf.slices()] == [100, 150]
    assert not bf.full and bf.total_capacity == 250
    bf.add_many(make_keys(2_000, "past"))  # past the limit: no growth, the rate climbs
    for key in make_keys(100, "one-by-one"):
        bf.add(key)
    assert bf.full and bf.num_slices == 2
    assert bf.estimated_fpr() > 10 * bf.fpr_bound
    events = bf.take_growth()
    assert [(e.kind, e.slices, e.capacity) for e in events] == [
        (BloomEventKind.GREW, 2, 250), (BloomEventKind.FULL, 2, 250),
    ]
    assert 250 <= events[1].count < 300
    assert len(caplog.records) == 2
    assert caplog.records[1].getMessage().startswith("Bloom filter is full")
    assert "full at 250 URLs" in caplog.records[1].getMessage()
    assert "max_capacity" in caplog.records[1].getMessage()
    # No false negatives even when saturated.
    assert all(bf.contains_many(make_keys(200) + make_keys(2_000, "past")))


def test_max_capacity_equal_to_capacity_is_a_fixed_filter() -> None:
    bf = BloomFilter(100, 0.01, max_capacity=100)
    assert not bf.full
    bf.add_many(make_keys(100))
    assert bf.full and bf.take_growth() == []  # full, but no URL has been refused room yet
    bf.add("https://h0.example/one-more")
    assert bf.num_slices == 1
    assert [e.kind for e in bf.take_growth()] == [BloomEventKind.FULL]


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"growth": 1}, "growth"),
        ({"growth": 2.0}, "growth"),
        ({"growth": True}, "growth"),
        ({"max_capacity": 99}, "max_capacity"),
        ({"max_capacity": 0}, "max_capacity"),
        ({"max_capacity": 1e9}, "integer"),
    ],
)
def test_bad_growth_arguments_raise_value_error(kwargs: dict, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        BloomFilter(100, 0.01, **kwargs)


# ---------------------------------------------------------------------------
# Batches: numpy and plain paths agree with key-by-key add


def sequential(
    capacity: int, preload: list[str], keys: list[str], limit: int | None = None
) -> tuple[BloomFilter, list[bool]]:
    bf = BloomFilter(capacity, 0.05, max_capacity=None if limit is None else capacity + limit)
    for key in preload:
        bf.add(key)
    return bf, [bf.add(key) for key in keys]


BATCH_CASES = dict(
    preload=st.lists(st.text(max_size=12), max_size=30),
    keys=st.lists(st.sampled_from(["a", "b", "/x", "é"]) | st.text(max_size=12), max_size=200),
    capacity=st.integers(1, 60),
    limit=st.none() | st.integers(0, 100),
)


def check_batch_path(
    preload: list[str], keys: list[str], capacity: int, limit: int | None, vectorised: bool
) -> None:
    # Small filters so keys of one batch share bits and the filter grows (and
    # fills, with a limit) inside a batch; duplicates come from the
    # sampled_from arm.
    expected_bf, expected = sequential(capacity, preload, keys, limit)
    probes = keys + [k + "?" for k in keys]
    expected_in = [p in expected_bf for p in probes]
    bf, _ = sequential(capacity, preload, [], limit)
    assert bf._vectorise(max(1, len(keys))) is vectorised
    assert bf.add_many(iter(keys)) == expected
    assert bf == expected_bf  # grown at the same keys: same slices, same bits
    assert bf.contains_many(probes) == expected_in
    assert [(e.kind, e.slices, e.count) for e in bf.take_growth()] == [
        (e.kind, e.slices, e.count) for e in expected_bf.take_growth()
    ]


@settings(max_examples=100, deadline=None)
@given(**BATCH_CASES)
def test_numpy_batches_match_key_by_key_add(
    preload: list[str], keys: list[str], capacity: int, limit: int | None
) -> None:
    pytest.importorskip("numpy")
    # A tiny chunk size makes batches cross chunk boundaries.
    with (mock.patch.object(bloom, "_NUMPY_MIN_BATCH", 1), mock.patch.object(bloom, "_NUMPY_MIN_LOOKUP", 1),
          mock.patch.object(bloom, "_CHUNK_KEYS", 7)):
        check_batch_path(preload, keys, capacity, limit, vectorised=True)


@settings(max_examples=50, deadline=None)
@given(**BATCH_CASES)
def test_plain_batches_match_key_by_key_add(
    preload: list[str], keys: list[str], capacity: int, limit: int | None
) -> None:
    with mock.patch.object(bloom, "_np", None):
        check_batch_path(preload, keys, capacity, limit, vectorised=False)


@pytest.mark.parametrize(("capacity", "limit", "slices"), [(5_000, None, 2), (500, 4_500, 4), (30, None, 8)])
def test_large_batch_uses_numpy_and_matches(capacity: int, limit: int | None, slices: int) -> None:
    # With the real _NUMPY_MIN_BATCH: the few keys left before a slice is
    # full go key by key, the rest in chunks.
    pytest.importorskip("numpy")
    keys = [f"https://h{j % 13}.example/{j}" for j in (i % 7_000 for i in range(21_000))]  # 3 times each
    expected_bf, expected = sequential(capacity, [], keys, limit)
    bf, _ = sequential(capacity, [], [], limit)
    with mock.patch.object(bloom, "_CHUNK_KEYS", 4096):
        assert bf._vectorise(len(keys))
        assert bf.add_many(keys) == expected
    assert bf == expected_bf
    assert bf.count == expected_bf.count
    assert bf.num_slices == slices
    assert bf.full is (limit is not None)


def test_add_all_sets_the_bits_add_many_sets() -> None:
    """A recovered journal's URLs go in without verdicts: the same bits, the same count for
    distinct keys, so the filter answers as if they had been added one by one."""
    urls = [f"http://h{i % 97}.test/p{i}" for i in range(20_000)]
    one, other = BloomFilter(100_000, 0.01), BloomFilter(100_000, 0.01)
    one.add_many(urls[:500])
    other.add_many(urls[:500])
    one.add_many(urls)
    other.add_all(urls)
    assert other.count == one.count
    assert all(u in other for u in urls)
    assert [s.bits for s in other._slices] == [s.bits for s in one._slices]
