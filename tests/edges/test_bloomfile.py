"""peer.state.bloomfile: a Bloom filter's state file written atomically and read back checked.

The filter itself (peer.core.seen.bloom) is tested without files in
tests/core/test_bloom.py; here it goes through the file: round trips (across
growth too), the format's layout (its structs: peer.core.seen.bloomformat),
version 1 files, and every damaged file a StateError naming it.
"""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from peer.core.seen.bloom import BloomFilter
from peer.state.bloomfile import read_bloom, write_bloom
from peer.errors import StateError

# Format 2 (see the module docstring): magic, growth, max_capacity, slices,
# then per slice m, k, capacity, error_rate, count.
FIXED_HEADER = 24
SLICE_HEADER = 36
HEADER_SIZE = FIXED_HEADER + SLICE_HEADER  # of a one-slice file
COUNT_OFFSET = FIXED_HEADER + 28  # count of the first slice


def make_keys(n: int, tag: str = "k") -> list[str]:
    return [f"https://h{i % 97}.example/{tag}/{i}" for i in range(n)]


def test_set_policy_applies_to_a_loaded_filter(tmp_path: Path) -> None:
    bf = BloomFilter(100, 0.01, max_capacity=100)
    bf.add_many(make_keys(300))
    assert bf.full
    write_bloom(bf, tmp_path / "f.bloom")
    loaded = read_bloom(tmp_path / "f.bloom")
    assert loaded == bf and loaded.max_capacity == 100
    loaded.set_policy(4, 1_000)  # the operator raised the limit and restarted
    assert not loaded.full
    loaded.add("https://h0.example/after")
    assert [c for c, *_ in loaded.slices()] == [100, 400]
    loaded.set_policy(2, None)
    assert loaded.max_capacity is None and loaded.growth == 2


@settings(max_examples=100, deadline=None)
@given(
    batches=st.lists(st.lists(st.text(max_size=20), max_size=80), max_size=8),
    capacity=st.integers(1, 50),
    growth=st.sampled_from([2, 3, 4]),
    limit=st.none() | st.integers(0, 200),
    save_after=st.integers(0, 8),
    batched=st.booleans(),
)
def test_no_false_negatives_across_growth_and_round_trips(
    tmp_path_factory: pytest.TempPathFactory, batches: list[list[str]], capacity: int,
    growth: int, limit: int | None, save_after: int, batched: bool,
) -> None:
    max_capacity = None if limit is None else capacity + limit
    bf = BloomFilter(capacity, 0.05, growth=growth, max_capacity=max_capacity)
    path = tmp_path_factory.mktemp("rt") / "f.bloom"
    seen: list[str] = []
    for i, batch in enumerate(batches):
        if i == save_after:
            write_bloom(bf, path)
            loaded = read_bloom(path)
            assert loaded == bf
            bf = loaded
        if batched:
            bf.add_many(batch)
        else:
            for key in batch:
                bf.add(key)
        seen += batch
        assert all(key in bf for key in seen)
        assert all(bf.contains_many(seen))
    assert max_capacity is None or bf.total_capacity <= max_capacity
    assert bf.count <= len(set(seen))


@pytest.fixture
def saved(tmp_path: Path) -> tuple[BloomFilter, Path]:
    bf = BloomFilter(2_000, 0.01)
    bf.add_many([f"https://example.com/{i}" for i in range(1_500)])
    path = tmp_path / "seen.bloom"
    write_bloom(bf, path)
    return bf, path


def test_round_trip(saved: tuple[BloomFilter, Path], tmp_path: Path) -> None:
    bf, path = saved
    loaded = read_bloom(str(path))
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
    write_bloom(loaded, again)
    assert again.read_bytes() == path.read_bytes()
    # The loaded filter is live: adding works and is independent of the original.
    assert loaded.add("https://example.com/new") is True
    assert loaded != bf


def test_file_layout(saved: tuple[BloomFilter, Path]) -> None:
    bf, path = saved
    data = path.read_bytes()
    assert data[:8] == b"RCBLOOM2"
    assert struct.unpack("<IQI", data[8:FIXED_HEADER]) == (2, 0, 1)  # growth, no limit, 1 slice
    m, k, capacity, error_rate, count = struct.unpack("<QIQdQ", data[FIXED_HEADER:HEADER_SIZE])
    assert (m, k, capacity, error_rate, count) == (bf.num_bits, bf.num_hashes, 2_000, 0.01, bf.count)
    assert len(data) == HEADER_SIZE + (m + 7) // 8 + 4
    assert struct.unpack("<I", data[-4:])[0] == zlib.crc32(data[:-4])


def v1_bytes(bf: BloomFilter) -> bytes:
    """The format-1 file of a one-slice filter, as the previous build wrote it."""
    ((capacity, error_rate, m, k, count),) = bf.slices()
    body = struct.pack("<8sQIQdQ", b"RCBLOOM1", m, k, capacity, error_rate, count)
    body += bf._slices[0].bits.tobytes()
    return body + struct.pack("<I", zlib.crc32(body))


def test_reads_version_1_files(saved: tuple[BloomFilter, Path], tmp_path: Path) -> None:
    bf, _ = saved
    old = tmp_path / "old.bloom"
    old.write_bytes(v1_bytes(bf))
    loaded = read_bloom(old)
    assert loaded == bf
    assert (loaded.growth, loaded.max_capacity, loaded.num_slices) == (2, None, 1)
    # A format-1 filter at capacity grows like any other, and is saved as format 2.
    loaded.add_many([f"https://example.com/more/{i}" for i in range(1_000)])
    assert loaded.num_slices == 2
    write_bloom(loaded, old)
    assert old.read_bytes()[:8] == b"RCBLOOM2"
    assert read_bloom(old) == loaded


def test_corrupt_version_1_file_is_a_state_error(saved: tuple[BloomFilter, Path], tmp_path: Path) -> None:
    bf, _ = saved
    old = tmp_path / "old.bloom"
    old.write_bytes(v1_bytes(bf))
    corrupt(old, 44 + 100)
    with pytest.raises(StateError, match="checksum mismatch") as info:
        read_bloom(old)
    assert str(old) in str(info.value)
    old.write_bytes(v1_bytes(bf)[:-10])
    with pytest.raises(StateError, match="truncated"):
        read_bloom(old)


def test_overwrite_is_atomic_and_leaves_no_temp_files(saved: tuple[BloomFilter, Path]) -> None:
    bf, path = saved
    bf.add("https://example.com/later")
    write_bloom(bf, path)
    assert os.listdir(path.parent) == [path.name]
    assert read_bloom(path) == bf


def test_write_failure_is_a_state_error(tmp_path: Path) -> None:
    path = tmp_path / "missing-dir" / "seen.bloom"
    with pytest.raises(StateError, match="cannot write") as info:
        write_bloom(BloomFilter(10, 0.01), path)
    assert str(path) in str(info.value)


def corrupt(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x10
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["bits", "count", "trailer"])
def test_corrupt_file_is_a_state_error(saved: tuple[BloomFilter, Path], where: str) -> None:
    _, path = saved
    size = path.stat().st_size
    corrupt(path, {"bits": HEADER_SIZE + 100, "count": COUNT_OFFSET, "trailer": size - 1}[where])
    with pytest.raises(StateError, match="checksum mismatch") as info:
        read_bloom(path)
    message = str(info.value)
    assert str(path) in message and "--fresh" in message and "\n" not in message


@pytest.mark.parametrize("keep", [0, 5, 8, 20, HEADER_SIZE, HEADER_SIZE + 10, -4, -1])
def test_truncated_file_is_a_state_error(saved: tuple[BloomFilter, Path], keep: int) -> None:
    _, path = saved
    data = path.read_bytes()
    path.write_bytes(data[:keep])
    with pytest.raises(StateError, match="truncated") as info:
        read_bloom(path)
    assert str(path) in str(info.value)


def test_trailing_garbage_is_a_state_error(saved: tuple[BloomFilter, Path]) -> None:
    _, path = saved
    path.write_bytes(path.read_bytes() + b"\0")
    with pytest.raises(StateError, match="corrupt") as info:
        read_bloom(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize(
    ("magic", "fragment"),
    [(b"NOTBLOOM", "bad magic"), (b"\x00" * 8, "bad magic"), (b"RCBLOOM3", "not supported")],
)
def test_wrong_magic_is_a_state_error(saved: tuple[BloomFilter, Path], magic: bytes, fragment: str) -> None:
    _, path = saved
    path.write_bytes(magic + path.read_bytes()[8:])
    with pytest.raises(StateError, match=fragment) as info:
        read_bloom(path)
    assert str(path) in str(info.value)


def test_short_foreign_file_is_bad_magic_not_truncated(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"hi\n")
    with pytest.raises(StateError, match="bad magic"):
        read_bloom(path)


def test_missing_file_is_a_state_error(tmp_path: Path) -> None:
    path = tmp_path / "nope.bloom"
    with pytest.raises(StateError, match="not found") as info:
        read_bloom(path)
    assert str(path) in str(info.value)


def test_directory_instead_of_file_is_a_state_error(tmp_path: Path) -> None:
    with pytest.raises(StateError) as info:
        read_bloom(tmp_path)
    assert str(tmp_path) in str(info.value)


@pytest.fixture
def grown(tmp_path: Path) -> tuple[BloomFilter, Path]:
    bf = BloomFilter(500, 0.01, growth=2, max_capacity=10_000)
    bf.add_many(make_keys(3_000))
    assert bf.num_slices == 3
    path = tmp_path / "grown.bloom"
    write_bloom(bf, path)
    return bf, path


def test_grown_filter_round_trip(grown: tuple[BloomFilter, Path], tmp_path: Path) -> None:
    bf, path = grown
    data = path.read_bytes()
    assert struct.unpack("<IQI", data[8:FIXED_HEADER]) == (2, 10_000, 3)
    sizes = [(m + 7) // 8 for _, _, m, _, _ in bf.slices()]
    assert len(data) == FIXED_HEADER + 3 * SLICE_HEADER + sum(sizes) + 4
    loaded = read_bloom(path)
    assert loaded == bf and loaded.slices() == bf.slices()
    assert (loaded.growth, loaded.max_capacity, loaded.total_capacity) == (2, 10_000, 3_500)
    assert loaded.take_growth() == []  # events are not persisted: they were logged already
    probes = make_keys(3_000) + make_keys(3_000, "fresh")
    assert loaded.contains_many(probes) == bf.contains_many(probes)
    again = tmp_path / "again.bloom"
    write_bloom(loaded, again)
    assert again.read_bytes() == data
    # It goes on growing where it stopped.
    loaded.add_many(make_keys(2_000, "more"))
    bf.add_many(make_keys(2_000, "more"))
    assert loaded == bf and loaded.num_slices == 4


@pytest.mark.parametrize("slice_no", [0, 1, 2])
def test_corrupt_bits_of_any_slice_is_a_state_error(grown: tuple[BloomFilter, Path], slice_no: int) -> None:
    bf, path = grown
    offset = FIXED_HEADER + 3 * SLICE_HEADER
    offset += sum((m + 7) // 8 for _, _, m, _, _ in bf.slices()[:slice_no]) + 17
    corrupt(path, offset)
    with pytest.raises(StateError, match="checksum mismatch") as info:
        read_bloom(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize(
    ("offset", "value", "fragment"),
    [
        (20, struct.pack("<I", 0), "bad header"),             # no slices
        (20, struct.pack("<I", 1_000), "bad header"),         # absurd slice count
        (20, struct.pack("<I", 4), "truncated|bad header"),  # one slice more than there is
        (20, struct.pack("<I", 2), "bad header|corrupt"),     # one slice less
        (8, struct.pack("<I", 1), "bad header"),              # growth 1
        (FIXED_HEADER + 2 * SLICE_HEADER, struct.pack("<Q", 0), "bad header"),  # m = 0 in slice 2
    ],
)
def test_bad_grown_header_is_a_state_error(
    grown: tuple[BloomFilter, Path], offset: int, value: bytes, fragment: str
) -> None:
    _, path = grown
    data = bytearray(path.read_bytes())
    data[offset : offset + len(value)] = value
    path.write_bytes(bytes(data))
    with pytest.raises(StateError, match=fragment) as info:
        read_bloom(path)
    assert str(path) in str(info.value) and "--fresh" in str(info.value)


@pytest.mark.parametrize("cut", [FIXED_HEADER + SLICE_HEADER, FIXED_HEADER + 3 * SLICE_HEADER + 5, -200, -1])
def test_truncated_grown_file_is_a_state_error(grown: tuple[BloomFilter, Path], cut: int) -> None:
    _, path = grown
    path.write_bytes(path.read_bytes()[:cut])
    with pytest.raises(StateError, match="truncated") as info:
        read_bloom(path)
    assert str(path) in str(info.value)
