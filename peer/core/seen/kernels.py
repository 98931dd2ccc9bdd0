"""The Bloom filter's vectorised kernels: a batch of keys hashed, probed and set with numpy.

``peer.core.seen.bloom`` imports this module on its first batch big enough to pay
for the arrays' set-up (``_NUMPY_MIN_BATCH``); results and the bits
afterwards are identical to adding or probing key by key, in order. A slice
is given as ``(m, k, bits)``: its size in bits, its number of hashes and its
little-endian bitarray, whose buffer numpy reads and writes in place.

Index arithmetic (Kirsch & Mitzenmacher, ESA 2006): probe ``i`` of a key is
``(h1 mod m + i * (h2 mod m)) mod m``, which equals ``(h1 + i*h2) mod m`` and
keeps every intermediate inside 64 bits.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import mmh3
import numpy as np
import numpy.typing as npt
from bitarray import bitarray

__all__ = ["contains", "hash_batch", "has", "put", "set_all"]

_hash_bytes = mmh3.hash_bytes  # the same 128 bits as mmh3.hash128, as 16 LE bytes

#: One slice: (m bits, k hashes, its bits).
Slice = tuple[int, int, bitarray]


def hash_batch(urls: Sequence[str]) -> npt.NDArray[np.uint64]:
    """(len(urls), 2): the two 64-bit halves h1 (low), h2 (high) of each key's MurmurHash3."""
    raw = b"".join(map(_hash_bytes, urls))
    return np.frombuffer(raw, dtype="<u8").reshape(-1, 2)


def _indices(m: int, k: int, h: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:  # (len(h), k)
    h1 = (h[:, 0] % np.uint64(m)).astype(np.int64)
    h2 = (h[:, 1] % np.uint64(m)).astype(np.int64)
    idx = np.multiply.outer(h2, np.arange(k, dtype=np.int64))
    idx += h1[:, None]
    idx %= m
    return idx


def has(m: int, k: int, bits: bitarray, h: npt.NDArray[np.uint64]) -> npt.NDArray[np.bool_]:
    """(len(h),): whether each key's k bits are all set in this slice."""
    idx = _indices(m, k, h)
    buf = np.frombuffer(memoryview(bits), dtype=np.uint8)
    hit: npt.NDArray[np.bool_] = ((buf[idx >> 3] >> (idx & 7).astype(np.uint8)) & 1).all(axis=1)
    return hit


def contains(slices: Iterable[Slice], h: npt.NDArray[np.uint64], n: int) -> npt.NDArray[np.bool_]:
    """Which of the ``n`` keys some slice holds, probing the slices in the order given."""
    hit = None
    for m, k, bits in slices:
        if hit is None:
            hit = has(m, k, bits, h)
            continue
        todo = np.flatnonzero(~hit)
        if not todo.size:
            break
        hit[todo] = has(m, k, bits, h[todo])
    return np.zeros(n, dtype=bool) if hit is None else hit


def put(m: int, k: int, bits: bitarray, h: npt.NDArray[np.uint64]) -> npt.NDArray[np.bool_]:
    """Set the keys' bits; (len(h),): which keys were new, as adding them in order would say."""
    n = len(h)
    flat = _indices(m, k, h).ravel()  # entry e = key e // k, probe e % k
    buf = np.frombuffer(memoryview(bits), dtype=np.uint8)
    clear = np.flatnonzero(((buf[flat >> 3] >> (flat & 7).astype(np.uint8)) & 1) == 0)
    new = np.zeros(n, dtype=bool)
    if clear.size:
        # Sequential semantics: a key is new iff it is the first key of the
        # batch to touch some bit that was clear before the batch. Packing
        # (position, entry) into one int64 and sorting finds, for each
        # position, its smallest entry; one plain sort is several times
        # faster than a stable argsort here.
        shift = (n * k - 1).bit_length()
        keyed = flat[clear] << shift
        keyed |= clear
        keyed.sort()
        pos = keyed >> shift
        first = np.empty(pos.size, dtype=bool)
        first[0] = True
        np.not_equal(pos[1:], pos[:-1], out=first[1:])
        new[(keyed[first] & ((1 << shift) - 1)) // k] = True
        # Set the newly touched bits: OR the masks of each byte together
        # (positions are sorted, so equal bytes are adjacent).
        u = pos[first]
        byte = u >> 3
        mask = np.left_shift(np.uint8(1), (u & 7).astype(np.uint8))
        starts = np.flatnonzero(np.concatenate(([True], byte[1:] != byte[:-1])))
        buf[byte[starts]] |= np.bitwise_or.reduceat(mask, starts)
    return new


def set_all(m: int, k: int, bits: bitarray, h: npt.NDArray[np.uint64]) -> int:
    """Set the keys' bits, with no verdict a key; returns how many keys had a bit clear before.

    :func:`put` without its sort (most of its time): for a batch whose
    verdicts nobody reads, a recovered journal's URLs. The count errs high
    only for a key repeated in the batch, or two keys of it that share their
    clear bits; the filter's fill, and so its growth, errs to the safe side.
    """
    n = len(h)
    flat = _indices(m, k, h).ravel()
    buf = np.frombuffer(memoryview(bits), dtype=np.uint8)
    byte = flat >> 3
    mask = np.left_shift(np.uint8(1), (flat & 7).astype(np.uint8))
    clear = (buf[byte] & mask) == 0
    fresh = int(clear.reshape(n, k).any(axis=1).sum())
    np.bitwise_or.at(buf, byte[clear], mask[clear])
    return fresh
