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

The filter (:mod:`peer.core.seen.bloom`) gives its buffers
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

from peer.core.seen.bloom import (
    _FRESH, _HEADER, _MAGIC, _MAGIC_FAMILY, _MAGIC_V1, _MAX_SLICES, _SLICE, _TRAILER, _V1_HEADER,
    DEFAULT_GROWTH, BloomFilter, _Slice,
)
from peer.errors import StateError
from peer.state.fsio import write_atomic

__all__ = ["read_bloom", "write_bloom"]


def write_bloom(bf: BloomFilter, path: str | os.PathLike[str]) -> None:
    """Write ``bf`` to ``path`` atomically (``peer.state.fsio.write_atomic``)."""
    path = os.fspath(path)
    try:
        # The buffers themselves: no copy of a big filter.
        write_atomic(path, bf.file_parts())
    except OSError as e:
        raise StateError(f"{path}: cannot write Bloom filter ({e.strerror or e})") from e


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
                slices.append(_Slice(m, k, capacity, error_rate, count, bits))
            tail = f.read()
    except FileNotFoundError:
        raise StateError(f"{path}: Bloom filter file not found; {_FRESH}") from None
    except OSError as e:
        raise StateError(f"{path}: cannot read Bloom filter ({e.strerror or e}); {_FRESH}") from e
    if short or len(tail) != _TRAILER.size:
        # The size was checked against fstat; this is a file shrinking under us.
        raise StateError(f"{path}: Bloom filter is truncated; {_FRESH}")
    (expected,) = _TRAILER.unpack(tail)
    if crc != expected:
        raise StateError(f"{path}: Bloom filter is corrupt (checksum mismatch); {_FRESH}")
    if any(s.bits[s.m :].any() for s in slices):
        raise StateError(f"{path}: Bloom filter is corrupt (bits set past the end); {_FRESH}")
    return BloomFilter.from_parts(slices, growth, max_capacity or None)


def read_header(path: str, f: BinaryIO, size: int) -> tuple[bytes, int, int, list[tuple[Any, ...]]]:
    """Check the magic and headers against the file size; return what follows."""
    head = f.read(len(_MAGIC))
    if len(head) < len(_MAGIC):
        if _MAGIC.startswith(head):
            raise StateError(f"{path}: Bloom filter is truncated ({size} bytes); {_FRESH}")
        raise StateError(f"{path}: not a ringcrawl Bloom filter (bad magic); {_FRESH}")
    if head[: len(_MAGIC_FAMILY)] != _MAGIC_FAMILY:
        raise StateError(f"{path}: not a ringcrawl Bloom filter (bad magic); {_FRESH}")
    if head == _MAGIC_V1:
        growth, max_capacity, n_slices = DEFAULT_GROWTH, 0, 1
        head_size = _V1_HEADER.size
    elif head == _MAGIC:
        more = f.read(_HEADER.size - len(head))
        head += more
        if len(head) < _HEADER.size:
            raise StateError(f"{path}: Bloom filter is truncated ({size} bytes); {_FRESH}")
        _, growth, max_capacity, n_slices = _HEADER.unpack(head)
        if not (growth >= 2 and 1 <= n_slices <= _MAX_SLICES):
            raise StateError(f"{path}: Bloom filter is corrupt (bad header); {_FRESH}")
        head_size = _HEADER.size + n_slices * _SLICE.size
    else:
        raise StateError(
            f"{path}: Bloom filter format {head!r} is not supported "
            f"(this build reads {_MAGIC_V1!r} and {_MAGIC!r}); {_FRESH}"
        )
    rest = f.read(head_size - len(head))
    head += rest
    if len(head) < head_size:
        raise StateError(f"{path}: Bloom filter is truncated ({size} bytes); {_FRESH}")
    start = head_size - n_slices * _SLICE.size
    dims = [_SLICE.unpack_from(head, start + i * _SLICE.size) for i in range(n_slices)]
    for m, k, capacity, error_rate, count in dims:
        if not (m >= 1 and 1 <= k <= 4096 and capacity >= 1 and 0.0 < error_rate < 1.0 and count <= m):
            raise StateError(f"{path}: Bloom filter is corrupt (bad header); {_FRESH}")
    expected = head_size + sum(-(-m // 8) for m, *_ in dims) + _TRAILER.size
    if size < expected:
        raise StateError(
            f"{path}: Bloom filter is truncated ({size} of {expected} bytes); {_FRESH}"
        )
    if size > expected:
        raise StateError(
            f"{path}: Bloom filter is corrupt ({size - expected} unexpected trailing bytes); {_FRESH}"
        )
    return head, growth, max_capacity, dims
