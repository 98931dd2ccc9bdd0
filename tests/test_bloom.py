"""Tests for peer.bloom: sizing, membership, batches and the state file."""

from __future__ import annotations

import math
import os
import struct
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import peer.bloom as bloom
from peer.bloom import BloomFilter
from peer.errors import StateError

HEADER_SIZE = 44  # magic, m, k, capacity, error_rate, count (see the module docstring)


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
# Batches: numpy and plain paths agree with key-by-key add


def sequential(capacity: int, preload: list[str], keys: list[str]) -> tuple[BloomFilter, list[bool]]:
    bf = BloomFilter(capacity, 0.05)
    for key in preload:
        bf.add(key)
    return bf, [bf.add(key) for key in keys]


BATCH_CASES = dict(
    preload=st.lists(st.text(max_size=12), max_size=30),
    keys=st.lists(st.sampled_from(["a", "b", "/x", "é"]) | st.text(max_size=12), max_size=200),
    capacity=st.integers(1, 60),
)


def check_batch_path(preload: list[str], keys: list[str], capacity: int, vectorised: bool) -> None:
    # Small filters so keys of one batch share bits; duplicates come from the
    # sampled_from arm.
    expected_bf, expected = sequential(capacity, preload, keys)
    probes = keys + [k + "?" for k in keys]
    expected_in = [p in expected_bf for p in probes]
    bf, _ = sequential(capacity, preload, [])
    assert bf._vectorise(max(1, len(keys))) is vectorised
    assert bf.add_many(iter(keys)) == expected
    assert bf == expected_bf
    assert bf.contains_many(probes) == expected_in


@settings(max_examples=100, deadline=None)
@given(**BATCH_CASES)
def test_numpy_batches_match_key_by_key_add(preload: list[str], keys: list[str], capacity: int) -> None:
    pytest.importorskip("numpy")
    # A tiny chunk size makes batches cross chunk boundaries.
    with mock.patch.object(bloom, "_NUMPY_MIN_BATCH", 1), mock.patch.object(bloom, "_CHUNK_KEYS", 7):
        check_batch_path(preload, keys, capacity, vectorised=True)


@settings(max_examples=50, deadline=None)
@given(**BATCH_CASES)
def test_plain_batches_match_key_by_key_add(preload: list[str], keys: list[str], capacity: int) -> None:
    with mock.patch.object(bloom, "_np", None):
        check_batch_path(preload, keys, capacity, vectorised=False)


def test_large_batch_uses_numpy_and_matches() -> None:
    pytest.importorskip("numpy")
    keys = [f"https://h{i % 13}.example/{i // 3}" for i in range(20_000)]  # each key 3 times
    expected_bf, expected = sequential(5_000, [], keys)
    bf = BloomFilter(5_000, 0.05)
    with mock.patch.object(bloom, "_CHUNK_KEYS", 4096):
        assert bf._vectorise(len(keys))
        assert bf.add_many(keys) == expected
    assert bf == expected_bf
    assert bf.count == expected_bf.count


# ---------------------------------------------------------------------------
# The state file


@pytest.fixture
def saved(tmp_path: Path) -> tuple[BloomFilter, Path]:
    bf = BloomFilter(2_000, 0.01)
    bf.add_many([f"https://example.com/{i}" for i in range(1_500)])
    path = tmp_path / "seen.bloom"
    bf.to_file(path)
    return bf, path


def test_round_trip(saved: tuple[BloomFilter, Path], tmp_path: Path) -> None:
    bf, path = saved
    loaded = BloomFilter.from_file(str(path))
    assert loaded == bf
    assert (loaded.num_bits, loaded.num_hashes, loaded.capacity, loaded.error_rate, loaded.count) == (
        bf.num_bits,
        bf.num_hashes,
        bf.capacity,
        bf.error_rate,
        bf.count,
    )
    probes = [f"https://example.com/{i}" for i in range(3_000)]
    assert loaded.contains_many(probes) == bf.contains_many(probes)
    again = tmp_path / "again.bloom"
    loaded.to_file(again)
    assert again.read_bytes() == path.read_bytes()
    # The loaded filter is live: adding works and is independent of the original.
    assert loaded.add("https://example.com/new") is True
    assert loaded != bf


def test_file_layout(saved: tuple[BloomFilter, Path]) -> None:
    bf, path = saved
    data = path.read_bytes()
    assert data[:8] == b"RCBLOOM1"
    m, k, capacity, error_rate, count = struct.unpack("<QIQdQ", data[8:HEADER_SIZE])
    assert (m, k, capacity, error_rate, count) == (bf.num_bits, bf.num_hashes, 2_000, 0.01, bf.count)
    assert len(data) == HEADER_SIZE + (m + 7) // 8 + 4


def test_overwrite_is_atomic_and_leaves_no_temp_files(saved: tuple[BloomFilter, Path]) -> None:
    bf, path = saved
    bf.add("https://example.com/later")
    bf.to_file(path)
    assert os.listdir(path.parent) == [path.name]
    assert BloomFilter.from_file(path) == bf


def test_write_failure_is_a_state_error(tmp_path: Path) -> None:
    path = tmp_path / "missing-dir" / "seen.bloom"
    with pytest.raises(StateError, match="cannot write") as info:
        BloomFilter(10, 0.01).to_file(path)
    assert str(path) in str(info.value)


def corrupt(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x10
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["bits", "count", "trailer"])
def test_corrupt_file_is_a_state_error(saved: tuple[BloomFilter, Path], where: str) -> None:
    _, path = saved
    size = path.stat().st_size
    corrupt(path, {"bits": HEADER_SIZE + 100, "count": 36, "trailer": size - 1}[where])
    with pytest.raises(StateError, match="checksum mismatch") as info:
        BloomFilter.from_file(path)
    message = str(info.value)
    assert str(path) in message and "--fresh" in message and "\n" not in message


@pytest.mark.parametrize("keep", [0, 5, 8, 20, HEADER_SIZE, HEADER_SIZE + 10, -4, -1])
def test_truncated_file_is_a_state_error(saved: tuple[BloomFilter, Path], keep: int) -> None:
    _, path = saved
    data = path.read_bytes()
    path.write_bytes(data[:keep])
    with pytest.raises(StateError, match="truncated") as info:
        BloomFilter.from_file(path)
    assert str(path) in str(info.value)


def test_trailing_garbage_is_a_state_error(saved: tuple[BloomFilter, Path]) -> None:
    _, path = saved
    path.write_bytes(path.read_bytes() + b"\0")
    with pytest.raises(StateError, match="corrupt") as info:
        BloomFilter.from_file(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize(
    ("magic", "fragment"),
    [(b"NOTBLOOM", "bad magic"), (b"\x00" * 8, "bad magic"), (b"RCBLOOM2", "not supported")],
)
def test_wrong_magic_is_a_state_error(saved: tuple[BloomFilter, Path], magic: bytes, fragment: str) -> None:
    _, path = saved
    path.write_bytes(magic + path.read_bytes()[8:])
    with pytest.raises(StateError, match=fragment) as info:
        BloomFilter.from_file(path)
    assert str(path) in str(info.value)


def test_short_foreign_file_is_bad_magic_not_truncated(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"hi\n")
    with pytest.raises(StateError, match="bad magic"):
        BloomFilter.from_file(path)


def test_missing_file_is_a_state_error(tmp_path: Path) -> None:
    path = tmp_path / "nope.bloom"
    with pytest.raises(StateError, match="not found") as info:
        BloomFilter.from_file(path)
    assert str(path) in str(info.value)


def test_directory_instead_of_file_is_a_state_error(tmp_path: Path) -> None:
    with pytest.raises(StateError) as info:
        BloomFilter.from_file(tmp_path)
    assert str(tmp_path) in str(info.value)
