"""One slice of the seen-URL filter: a plain Bloom filter, sized for its keys and probed by two hashes.

Sizing (Broder & Mitzenmacher, "Network Applications of Bloom Filters: A
Survey", 2004): for n keys at false-positive rate p the optimum is

    m = ceil(-n ln p / (ln 2)^2) bits,   k = round((m / n) ln 2) hashes.

Probing: Kirsch & Mitzenmacher, "Less Hashing, Same Performance: Building a
Better Bloom Filter" (ESA 2006) show that g_i(x) = h1(x) + i*h2(x) mod m, for
i = 0..k-1, keeps the asymptotic false-positive rate of k independent hashes.
The filter (peer/core/seen/bloom.py) hashes a key once and hands every slice
the two halves; the index is computed as (h1 mod m + i*(h2 mod m)) mod m,
which equals (h1 + i*h2) mod m exactly and keeps every intermediate inside 64
bits for the vectorised path (peer/core/seen/kernels.py).
"""

from __future__ import annotations

import math

from bitarray import bitarray

from peer.core.seen.bloomformat import SLICE

__all__ = ["Slice", "optimal_size"]


def optimal_size(capacity: int, error_rate: float) -> tuple[int, int]:
    """Return (m bits, k hashes) for ``capacity`` keys at ``error_rate``."""
    m = math.ceil(-capacity * math.log(error_rate) / (math.log(2) ** 2))
    k = max(1, round(m / capacity * math.log(2)))
    return m, k


class Slice:
    """One plain Bloom filter of the list: its bits, its size and what it holds."""

    __slots__ = ("bits", "m", "k", "capacity", "error_rate", "count", "probes")

    def __init__(
        self, m: int, k: int, capacity: int, error_rate: float, count: int = 0,
        bits: bitarray | None = None,
    ) -> None:
        if bits is None:
            # Whole bytes, so the buffer is exactly the file payload and numpy
            # can view it; the pad bits past m are never set.
            bits = bitarray(-(-m // 8) * 8, endian="little")
            bits.setall(0)
        self.bits = bits
        self.m = m
        self.k = k
        self.capacity = capacity
        self.error_rate = error_rate
        self.count = count
        self.probes = range(k)

    @classmethod
    def sized(cls, capacity: int, error_rate: float) -> Slice:
        """An empty slice sized for ``capacity`` keys at ``error_rate``."""
        m, k = optimal_size(capacity, error_rate)
        return cls(m, k, capacity, error_rate)

    def has(self, lo: int, hi: int) -> bool:
        """Whether every probe of the key hashed to ``lo``, ``hi`` is set (Kirsch-Mitzenmacher)."""
        m = self.m
        j = lo % m
        step = hi % m
        bits = self.bits
        # Early exit: an absent key usually fails on the first probe or two.
        for _ in self.probes:
            if not bits[j]:
                return False
            j += step
            if j >= m:
                j -= m
        return True

    def fpr(self) -> float:
        """Its false-positive rate at its count: (1 - e^(-kn/m))^k."""
        return (1.0 - math.exp(-self.k * self.count / self.m)) ** self.k

    def header(self) -> bytes:
        """Its header in the file (peer/core/seen/bloomformat.py)."""
        return SLICE.pack(self.m, self.k, self.capacity, self.error_rate, self.count)

    def same(self, other: Slice) -> bool:
        """Equal sizes, count and bits."""
        return (
            self.m == other.m and self.k == other.k and self.capacity == other.capacity
            and self.error_rate == other.error_rate and self.count == other.count
            and self.bits == other.bits
        )
