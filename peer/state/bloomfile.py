"""A Bloom filter's file: write it atomically, read it back checked (blocking file I/O).

File format, version 2 (all integers little-endian)::

    0   8  magic b"RCBLOOM2" (the last byte is the format version)
    8   4  growth s (u32)
    12  8  max_capacity (u64; 0 = no limit)
    20  4  L, the number of slices (u32)
    24     L slice headers of 36 bytes, oldest first: m bits (u64),
           k hashes (u32), capacity (u64), error_rate (f64), count (u64)
    ..     the bits of each slice in the same order, ceil(m / 8) bytes each;
           bit i is bit (i % 8) of byte i // 8
    -4  4  zlib.crc32 of everything before it (u32)

Version 1 (one slice) is still read: b"RCBLOOM1", then one slice header, its
bits and the crc32; it loads as a one-slice filter with growth 2 and no limit.

The filter (:mod:`peer.core.seen.bloom`; the structs: :mod:`peer.core.seen.bloomformat`) gives its buffers
(``BloomFilter.file_parts``) and is rebuilt from checked slices
(``BloomFilter.from_parts``). Reading streams each slice's bits
straight into its bitarray (``readinto``), so a filter of hundreds of MB is
never copied. Anything unreadable raises ``StateError`` naming the file and
the way out.
"""

from __future__ import annotations

import os
import zlib
from typing import Any, BinaryIO

from bitarray import bitarray

from peer.core.seen.bloom import DEFAULT_GROWTH, BloomFilter
from peer.core.seen.bloomformat import (
    FRESH, HEADER, MAGIC, MAGIC_FAMILY, MAGIC_V1, MAX_SLICES, SLICE, TRAILER, V1_HEADER,
)
from peer.core.seen.slices import Slice
from peer.errors import StateError, StorageError
from peer.state.fsio import write_atomic

__all__ = ["read_bloom", "write_bloom"]


def write_bloom(bf: BloomFilter, path: str | os.PathLike[str]) -> None:
    """Write ``bf`` to ``path`` atomically (``peer.state.fsio.write_atomic``)."""
    path = os.fspath(path)
    try:
        # The buffers themselves: no copy of a big filter.
        write_atomic(path, bf.file_parts())
    except OSError as e:
        raise StorageError(f"{path}: cannot write Bloom filter ({e.strerror or e})") from e


def read_bloom(path: str | os.PathLike[str]) -> BloomFilter:
    """Load a filter written by ``write_bloom`` (format 2, or 1); raise StateError if unusable."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            head, growth, max_capacity, dims = read_header(path, f, size)
            slices = []
            short = False
            crc = zlib.crc32(head)
            for m, k, capacity, error_rate, count in dims:
                bits = bitarray(-(-m // 8) * 8, endian="little")
                short = short or f.readinto(bits) != len(bits) // 8
                crc = zlib.crc32(bits, crc)
                slices.append(Slice(m, k, capacity, error_rate, count, bits))
            tail = f.read()
    except FileNotFoundError:
        raise StateError(f"{path}: Bloom filter file not found; {FRESH}") from None
    except OSError as e:
        raise StateError(f"{path}: cannot read Bloom filter ({e.strerror or e}); {FRESH}") from e
    if short or len(tail) != TRAILER.size:
        # The size was checked against fstat; this is a file shrinking under us.
        raise StateError(f"{path}: Bloom filter is truncated; {FRESH}")
    (expected,) = TRAILER.unpack(tail)
    if crc != expected:
        raise StateError(f"{path}: Bloom filter is corrupt (checksum mismatch); {FRESH}")
    if any(s.bits[s.m :].any() for s in slices):
        raise StateError(f"{path}: Bloom filter is corrupt (bits set past the end); {FRESH}")
    return BloomFilter.from_parts(slices, growth, max_capacity or None)


def read_header(path: str, f: BinaryIO, size: int) -> tuple[bytes, int, int, list[tuple[Any, ...]]]:
    """Check the magic and headers against the file size; return what follows."""
    head = f.read(len(MAGIC))
    if len(head) < len(MAGIC):
        if MAGIC.startswith(head):
            raise StateError(f"{path}: Bloom filter is truncated ({size} bytes); {FRESH}")
        raise StateError(f"{path}: not a ringcrawl Bloom filter (bad magic); {FRESH}")
    if head[: len(MAGIC_FAMILY)] != MAGIC_FAMILY:
        raise StateError(f"{path}: not a ringcrawl Bloom filter (bad magic); {FRESH}")
    if head == MAGIC_V1:
        growth, max_capacity, n_slices = DEFAULT_GROWTH, 0, 1
        head_size = V1_HEADER.size
    elif head == MAGIC:
        more = f.read(HEADER.size - len(head))
        head += more
        if len(head) < HEADER.size:
            raise StateError(f"{path}: Bloom filter is truncated ({size} bytes); {FRESH}")
        _, growth, max_capacity, n_slices = HEADER.unpack(head)
        if not (growth >= 2 and 1 <= n_slices <= MAX_SLICES):
            raise StateError(f"{path}: Bloom filter is corrupt (bad header); {FRESH}")
        head_size = HEADER.size + n_slices * SLICE.size
    else:
        raise StateError(
            f"{path}: Bloom filter format {head!r} is not supported "
            f"(this build reads {MAGIC_V1!r} and {MAGIC!r}); {FRESH}"
        )
    rest = f.read(head_size - len(head))
    head += rest
    if len(head) < head_size:
        raise StateError(f"{path}: Bloom filter is truncated ({size} bytes); {FRESH}")
    start = head_size - n_slices * SLICE.size
    dims = [SLICE.unpack_from(head, start + i * SLICE.size) for i in range(n_slices)]
    for m, k, capacity, error_rate, count in dims:
        if not (m >= 1 and 1 <= k <= 4096 and capacity >= 1 and 0.0 < error_rate < 1.0 and count <= m):
            raise StateError(f"{path}: Bloom filter is corrupt (bad header); {FRESH}")
    expected = head_size + sum(-(-m // 8) for m, *_ in dims) + TRAILER.size
    if size < expected:
        raise StateError(
            f"{path}: Bloom filter is truncated ({size} of {expected} bytes); {FRESH}"
        )
    if size > expected:
        raise StateError(
            f"{path}: Bloom filter is corrupt ({size - expected} unexpected trailing bytes); {FRESH}"
        )
    return head, growth, max_capacity, dims
