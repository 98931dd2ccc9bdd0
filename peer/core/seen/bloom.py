"""The URL-seen set: a scalable Bloom filter on bitarray and MurmurHash3.

A Bloom filter (B. H. Bloom, "Space/Time Trade-offs in Hash Coding with
Allowable Errors", CACM 13(7), 1970) on bitarray and MurmurHash3, hashed the
Kirsch-Mitzenmacher way (below). It never forgets a URL it has seen (no false
negatives) and wrongly claims to have seen a new one with probability about ``error_rate`` once ``capacity``
URLs are in; that is the price of a few bits per URL instead of the URL itself.

Each slice is sized for its n keys at its rate p (m bits, k hashes: Broder
and Mitzenmacher's optimum, peer/core/seen/slices.py).

Growth. A fixed filter past its capacity does not fail, it silently lies: at
p = 0.001 the measured false-positive rate is 5.7 % at 2x capacity, 73 % at 5x
and 99 % at 10x (scripts/bench_bloom.py), and every new URL it wrongly calls
"seen" is never crawled.
So the filter is a *scalable* Bloom filter (Almeida, Baquero, Preguiça and
Hutchison, "Scalable Bloom Filters", Information Processing Letters 101(6),
2007): a list of slices, each a plain Bloom filter sized as above. When the
newest slice holds its capacity, the next new URL allocates a slice ``growth``
(s) times bigger with an error rate r = ``TIGHTENING`` times smaller. A URL is
seen if any slice holds it; ``add`` inserts into the newest slice only. Slice
i has capacity n0 s^i and error rate p0 r^i, so the compound false-positive
rate is below sum p0 r^i < p0 / (1 - r).

r = 0.5, so the compound rate stays below 2 x ``error_rate`` however far the
filter grows. The paper suggests r = 0.8-0.9, which needs a tighter first
slice for the same 2x bound (p0 = 2p(1 - r)) and so costs memory whether or
not the filter ever grows. Bits per URL with s = 2, p = 0.001, when the first
1, 2, 3, 4, 5 and 6 slices are full (1x, 3x, 7x, 15x, 31x, 63x capacity)::

    r = 0.5, p0 = p       14.4  15.3  16.4  17.6  18.9  20.3
    r = 0.8, p0 = 0.4 p   16.3  16.6  16.9  17.3  17.8  18.2
    r = 0.9, p0 = 0.2 p   17.7  17.9  18.0  18.2  18.4  18.6

r = 0.5 is the cheapest up to about 10x the configured capacity, costs nothing
at all for a filter that never grows (its one slice is exactly the fixed
filter of the same capacity and error rate, so old files load unchanged), and
costs 6-11 % more only past 30x, where ``capacity`` was badly undersized.
s = 2 (the paper's choice for fast growth, the link-farm case) allocates
less ahead: just after a growth the new, empty slice is 50-70 % of the bits
with s = 2 and 75-82 % with s = 4; s = 4 (a slowly growing set) makes fewer
slices, and a lookup of an absent URL probes every slice.

Growth stops at ``max_capacity`` URLs in all (the last slice is cut to fit):
memory is bounded whatever the web serves. Past it the newest slice fills
beyond its capacity and the false-positive rate climbs, as a fixed filter's
does; ``full`` says so. Each growth and reaching ``max_capacity`` log one
warning (stdlib ``logging``, logger ``peer.bloom``) and are kept as
:class:`BloomEvent` for :meth:`BloomFilter.take_growth`, so a driver can count
them where an operator looks.

Hashing: each key costs one 128-bit MurmurHash3 (x64 variant, seed 0), split
into two 64-bit halves h1 (low) and h2 (high), shared by every slice, which
probes g_i = h1 + i*h2 mod m (Kirsch & Mitzenmacher, ESA 2006: as good as k
independent hashes; peer/core/seen/slices.py).

Batches: ``add_many``/``contains_many`` use numpy when it is importable and
the batch is big enough to pay for the array set-up; results and the filter
afterwards are identical to calling ``add``/``in`` key by key, in order (a key
that an earlier key of the same batch made look present reports False, as it
would sequentially; a batch grows the filter at the same key ``add`` would).

The file format is laid out in ``peer.state.bloomfile``'s docstring, its
structs in ``peer.core.seen.bloomformat``; this module gives a filter's buffers (``BloomFilter.file_parts``) and rebuilds one
from checked slices (``BloomFilter.from_parts``). ``peer.state.bloomfile``
does the file I/O: it writes with
``peer.state.fsio.write_atomic`` (a temporary file, fsynced and renamed over
the old one), so a crash leaves either the old or the new filter, never half
of one. Anything unreadable raises ``StateError`` naming the file.
"""

from __future__ import annotations

import enum
import logging
import math
import operator
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, SupportsIndex

import mmh3
from bitarray import bitarray

from peer.core.seen.bloomformat import HEADER, MAGIC, TRAILER
from peer.core.seen.slices import Slice

if TYPE_CHECKING:
    import numpy as _np
    import numpy.typing as npt

    from peer.core.seen import kernels as bloomnp
else:
    # numpy and the kernels of peer.core.seen.kernels are imported at the first
    # batch big enough to use them (0.1-0.2 s of a peer's start-up otherwise,
    # for a crawl that may never batch).
    _np = bloomnp = None
_np_tried = False


def _numpy() -> Any:
    """numpy, imported on first use (with the kernels); None where it is not installed."""
    global _np, _np_tried, bloomnp
    if not _np_tried:
        _np_tried = True
        try:
            import numpy as module

            from peer.core.seen import kernels
        except ImportError:  # numpy is optional (the "fast" extra)
            return None
        _np, bloomnp = module, kernels
    return _np

__all__ = ["DEFAULT_GROWTH", "BloomEvent", "BloomEventKind", "BloomFilter", "TIGHTENING"]

log = logging.getLogger("peer.bloom")

# Error-rate ratio between a slice and the one before it; the compound rate
# stays below error_rate / (1 - TIGHTENING) = 2 x error_rate (module docstring).
TIGHTENING = 0.5
DEFAULT_GROWTH = 2

_MASK64 = (1 << 64) - 1

# Below this many keys the per-call numpy set-up (a dozen small arrays) costs
# more than it saves; the measured crossover on a 2-core box was ~64 keys.
_NUMPY_MIN_BATCH = 64
# The same for a lookup (contains_many: no sort), measured on the same box
# against ``in`` of keys that are present (all k probes read, a crawl's usual
# link): 0.77 µs a key either way at 16 keys, 0.5 against 0.8 at 32.
_NUMPY_MIN_LOOKUP = 24
# Keys per vectorised chunk: bounds the temporaries (~100 bytes/key) and keeps
# entry numbers small enough to pack beside a bit position in one int64.
_CHUNK_KEYS = 1 << 16

_hash128 = mmh3.hash128


class BloomEventKind(enum.StrEnum):
    GREW = "grew"   # a slice was added
    FULL = "full"   # max_capacity is reached: no more growth, the error rate climbs


@dataclass(frozen=True, slots=True)
class BloomEvent:
    """One growth of the filter, or its reaching ``max_capacity``."""

    kind: BloomEventKind
    slices: int            # slices after the event
    capacity: int          # total capacity after the event (URLs)
    count: int             # URLs added so far
    estimated_fpr: float   # compound rate estimated at the event
    fpr_bound: float       # error_rate / (1 - TIGHTENING)
    nbytes: int            # memory of the bits after the event

    def __str__(self) -> str:
        mib = self.nbytes / 2**20
        if self.kind is BloomEventKind.GREW:
            return (
                f"Bloom filter grew to {self.slices} slices, capacity {self.capacity:,} URLs "
                f"({mib:.1f} MiB) after {self.count:,} URLs; estimated false-positive rate "
                f"{self.estimated_fpr:.2g}, bound {self.fpr_bound:.2g}"
            )
        return (
            f"Bloom filter is full at {self.capacity:,} URLs ({self.slices} slices, {mib:.1f} MiB) "
            f"and max_capacity stops its growth: its false-positive rate, now "
            f"{self.estimated_fpr:.2g}, will climb past {self.fpr_bound:.2g} and skip more and "
            f"more new URLs as seen"
        )


class BloomFilter:
    """A scalable Bloom filter of str keys (URLs); see the module docstring."""

    __slots__ = ("_slices", "_old", "_growth", "_max_capacity", "_events", "_full_noted")

    def __init__(
        self, capacity: int, error_rate: float, *, growth: int = DEFAULT_GROWTH,
        max_capacity: int | None = None,
    ) -> None:
        """A filter of one slice of ``capacity`` URLs at ``error_rate``.

        It grows by ``growth`` (an integer >= 2) each time it is full, up to
        ``max_capacity`` URLs in all (None: no limit; ``capacity``: never grows).
        """
        try:
            capacity = operator.index(capacity)
        except TypeError:
            raise ValueError(f"capacity must be an integer >= 1, got {capacity!r}") from None
        if capacity < 1:
            raise ValueError(f"capacity must be an integer >= 1, got {capacity!r}")
        if isinstance(error_rate, bool) or not isinstance(error_rate, (int, float)):
            raise ValueError(f"error_rate must be a number in (0, 1), got {error_rate!r}")
        if not 0.0 < error_rate < 1.0:  # also rejects NaN
            raise ValueError(f"error_rate must be a number in (0, 1), got {error_rate!r}")
        if max_capacity is not None and _index(max_capacity) < capacity:
            raise ValueError(
                f"max_capacity must be None or an integer >= capacity ({capacity}), got {max_capacity!r}"
            )
        self._setup([Slice.sized(capacity, float(error_rate))], growth, max_capacity)

    def _setup(self, slices: list[Slice], growth: int, max_capacity: int | None) -> None:
        self._slices = slices
        self._old = tuple(reversed(slices[:-1]))  # newest first: it holds the most keys
        self._events: list[BloomEvent] = []
        self.set_policy(growth, max_capacity)

    def set_policy(self, growth: int, max_capacity: int | None) -> None:
        """Change the growth factor and the limit, e.g. from the config of a resumed crawl.

        A limit below the current total capacity only stops further growth.
        """
        if isinstance(growth, bool) or not isinstance(growth, int) or growth < 2:
            raise ValueError(f"growth must be an integer >= 2, got {growth!r}")
        if max_capacity is not None and _index(max_capacity) < 1:
            raise ValueError(f"max_capacity must be None or an integer >= 1, got {max_capacity!r}")
        self._growth = growth
        self._max_capacity = max_capacity
        self._full_noted = False  # a new limit that is reached again is news again

    # -- sizes and statistics -------------------------------------------------

    @property
    def capacity(self) -> int:
        """The configured capacity: that of the first slice."""
        return self._slices[0].capacity

    @property
    def error_rate(self) -> float:
        """The configured error rate: that of the first slice, at its capacity."""
        return self._slices[0].error_rate

    @property
    def fpr_bound(self) -> float:
        """The compound false-positive rate the filter stays under while it can grow."""
        return self.error_rate / (1.0 - TIGHTENING)

    @property
    def growth(self) -> int:
        return self._growth

    @property
    def max_capacity(self) -> int | None:
        return self._max_capacity

    @property
    def num_slices(self) -> int:
        return len(self._slices)

    @property
    def total_capacity(self) -> int:
        """URLs the allocated slices are sized for; growth adds a slice past it."""
        return sum(s.capacity for s in self._slices)

    @property
    def num_bits(self) -> int:
        """m, the number of bits of all slices."""
        return sum(s.m for s in self._slices)

    @property
    def num_hashes(self) -> int:
        """k, the number of bit positions per key in the newest slice."""
        return self._slices[-1].k

    @property
    def nbytes(self) -> int:
        """Bytes of bits allocated (the file is this plus 36 bytes a slice and 28)."""
        return sum(len(s.bits) // 8 for s in self._slices)

    @property
    def count(self) -> int:
        """How many adds returned True (distinct keys, less false positives)."""
        return sum(s.count for s in self._slices)

    @property
    def full(self) -> bool:
        """The filter holds ``max_capacity`` URLs and cannot grow: its error rate climbs."""
        newest = self._slices[-1]
        return newest.count >= newest.capacity and not self._can_grow()

    def slices(self) -> list[tuple[int, float, int, int, int]]:
        """(capacity, error_rate, m, k, count) of each slice, oldest first."""
        return [(s.capacity, s.error_rate, s.m, s.k, s.count) for s in self._slices]

    def fill_ratio(self) -> float:
        """Fraction of the newest slice's bits that are set (O(m/8), popcount).

        About 0.5 when that slice reaches its capacity, which is when the
        filter grows (older slices stay at about 0.5, so they tell nothing);
        above 0.5 only when the filter is ``full``.
        """
        newest = self._slices[-1]
        return newest.bits.count() / newest.m

    def fill_estimate(self) -> float:
        """:meth:`fill_ratio` from the newest slice's count, 1 - e^(-k*count/m): O(1).

        For the progress line and ``ring status``, asked every second: the
        popcount of a 10 M-URL slice (18 MB) took 69 ms of the event loop on
        the loaded 2-core box.
        """
        newest = self._slices[-1]
        return 1.0 - math.exp(-newest.k * newest.count / newest.m)

    def estimated_fpr(self) -> float:
        """Expected compound false-positive rate now: 1 - prod(1 - fpr_i).

        Each slice's rate is the textbook (1 - e^(-k*count/m))^k from its
        ``count``, O(1) per slice so a stats loop can call it often. For one
        slice ``fill_ratio() ** num_hashes`` measures the same thing from the
        bits; the two agree to within a few percent while count is accurate
        (count misses keys that were false positives).
        """
        miss = 1.0
        for s in self._slices:
            miss *= 1.0 - s.fpr()
        return 1.0 - miss

    # -- growth ---------------------------------------------------------------

    def take_growth(self) -> list[BloomEvent]:
        """Growth (and full) events since the last call, oldest first."""
        events, self._events = self._events, []
        return events

    def _can_grow(self) -> bool:
        return self._max_capacity is None or self.total_capacity < self._max_capacity

    def _make_room(self) -> Slice:
        """The slice a new key goes into: a new one if the newest is full and growth allowed."""
        newest = self._slices[-1]
        if newest.count < newest.capacity:
            return newest
        if not self._can_grow():
            if not self._full_noted:
                self._full_noted = True
                self._note(BloomEventKind.FULL)
            return newest
        capacity = newest.capacity * self._growth
        if self._max_capacity is not None:
            capacity = min(capacity, self._max_capacity - self.total_capacity)
        # Lazily: a slice's bits are allocated only when a key needs them.
        grown = Slice.sized(capacity, newest.error_rate * TIGHTENING)
        self._slices.append(grown)
        self._old = tuple(reversed(self._slices[:-1]))
        self._note(BloomEventKind.GREW)
        return grown

    def _note(self, kind: BloomEventKind) -> None:
        event = BloomEvent(
            kind=kind, slices=len(self._slices), capacity=self.total_capacity, count=self.count,
            estimated_fpr=self.estimated_fpr(), fpr_bound=self.fpr_bound, nbytes=self.nbytes,
        )
        self._events.append(event)
        log.warning("%s", event)

    # -- single keys ----------------------------------------------------------

    def add(self, url: str) -> bool:
        """Insert ``url``; return True if it was new (in no slice)."""
        h = _hash128(url)
        lo = h & _MASK64
        hi = h >> 64
        for s in self._old:
            if s.has(lo, hi):
                return False
        s = self._slices[-1]
        if s.count >= s.capacity:
            if s.has(lo, hi):
                return False
            s = self._make_room()
        # Set the key's bits in the newest slice (inlined: a call costs ~15 % of an add).
        m = s.m
        j = lo % m
        step = hi % m
        bits = s.bits
        new = False
        for _ in s.probes:
            if not bits[j]:
                bits[j] = 1
                new = True
            j += step
            if j >= m:
                j -= m
        if new:
            s.count += 1
        return new

    def __contains__(self, url: str | bytes) -> bool:
        h = _hash128(url)
        lo = h & _MASK64
        hi = h >> 64
        # The newest slice first, inlined: it holds the most keys.
        s = self._slices[-1]
        m = s.m
        j = lo % m
        step = hi % m
        bits = s.bits
        for _ in s.probes:
            if not bits[j]:
                break
            j += step
            if j >= m:
                j -= m
        else:
            return True
        for s in self._old:
            if s.has(lo, hi):
                return True
        return False

    # -- batches --------------------------------------------------------------

    def add_many(self, urls: Iterable[str]) -> list[bool]:
        """``[self.add(u) for u in urls]``, vectorised with numpy when it helps."""
        urls = urls if isinstance(urls, list) else list(urls)
        if not self._vectorise(len(urls)):
            add = self.add
            return [add(u) for u in urls]
        out: list[bool] = []
        pos, n = 0, len(urls)
        while pos < n:
            newest = self._slices[-1]
            room = newest.capacity - newest.count
            if room <= 0 and (not self._full_noted or self._can_grow()):
                # The next new key grows the filter (or finds it full): skip
                # the keys before it (all present, so add changes nothing for
                # them), then add it key by key, as add would.
                chunk = urls[pos : pos + _CHUNK_KEYS]
                present = self._np_contains(chunk, bloomnp.hash_batch(chunk))
                absent = _np.flatnonzero(~present)
                skip = int(absent[0]) if absent.size else len(chunk)
                out += [False] * skip
                pos += skip
                if pos < n and skip < len(chunk):
                    out.append(self.add(urls[pos]))
                    pos += 1
                continue
            # At most `room` keys, so a segment never fills a slice past its
            # capacity; once full at max_capacity, the newest overfills.
            size = min(_CHUNK_KEYS, n - pos, room if room > 0 else n)
            seg = urls[pos : pos + size]
            pos += size
            if size < _NUMPY_MIN_BATCH or not self._vectorise(size):
                out += [self.add(u) for u in seg]
            else:
                out += self._np_add(seg)
        return out

    def add_all(self, urls: list[str]) -> None:
        """Every key of ``urls`` added, no verdicts: a recovered journal's URLs (``add_many``'s
        bits, without the sort its verdicts cost, in one slice with room for them all)."""
        newest = self._slices[-1]
        if self._old or newest.capacity - newest.count < len(urls) or not self._vectorise(len(urls)):
            self.add_many(urls)
            return
        for lo in range(0, len(urls), _CHUNK_KEYS):
            chunk = urls[lo : lo + _CHUNK_KEYS]
            newest.count += bloomnp.set_all(newest.m, newest.k, newest.bits, bloomnp.hash_batch(chunk))

    def contains_many(self, urls: Iterable[str]) -> list[bool]:
        """``[u in self for u in urls]``, vectorised with numpy when it helps."""
        urls = urls if isinstance(urls, list) else list(urls)
        if not self._vectorise(len(urls), _NUMPY_MIN_LOOKUP):
            return [u in self for u in urls]
        out: list[bool] = []
        for lo in range(0, len(urls), _CHUNK_KEYS):
            chunk = urls[lo : lo + _CHUNK_KEYS]
            out += self._np_contains(chunk, bloomnp.hash_batch(chunk)).tolist()
        return out

    def _vectorise(self, n: int, least: int | None = None) -> bool:
        # The numpy path packs (bit position, entry number) into one int64.
        return (
            n >= (_NUMPY_MIN_BATCH if least is None else least)
            and _numpy() is not None
            and all(
                (s.m - 1).bit_length() + (_CHUNK_KEYS * s.k - 1).bit_length() <= 63
                for s in self._slices
            )
        )

    def _np_contains(self, urls: list[str], h: npt.NDArray[_np.uint64],
                     slices: Iterable[Slice] | None = None) -> npt.NDArray[_np.bool_]:
        """Which keys some slice holds (default all slices, newest first)."""
        order = reversed(self._slices) if slices is None else slices
        return bloomnp.contains([(s.m, s.k, s.bits) for s in order], h, len(urls))

    def _np_add(self, urls: list[str]) -> list[bool]:
        h = bloomnp.hash_batch(urls)
        newest = self._slices[-1]
        if self._old:
            # Keys an older slice holds are not new and touch no bit.
            fresh = _np.flatnonzero(~self._np_contains(urls, h, self._old))
            new = _np.zeros(len(urls), dtype=bool)
            if fresh.size:
                new[fresh] = bloomnp.put(newest.m, newest.k, newest.bits, h[fresh])
        else:
            new = bloomnp.put(newest.m, newest.k, newest.bits, h)
        newest.count += int(new.sum())
        verdicts: list[bool] = new.tolist()
        return verdicts

    # -- the file format's parts (peer/state/bloomfile.py reads and writes them) --

    def file_parts(self) -> tuple[bytes | bitarray, ...]:
        """The file's bytes as buffers, header first and crc32 trailer last (no copy of the bits)."""
        head = HEADER.pack(MAGIC, self._growth, self._max_capacity or 0, len(self._slices))
        head += b"".join(s.header() for s in self._slices)
        crc = zlib.crc32(head)
        for s in self._slices:
            crc = zlib.crc32(s.bits, crc)
        return (head, *(s.bits for s in self._slices), TRAILER.pack(crc))

    @classmethod
    def from_parts(cls, slices: list[Slice], growth: int, max_capacity: int | None) -> BloomFilter:
        """A filter from checked slices (``peer.state.bloomfile.read_bloom``)."""
        bf = cls.__new__(cls)
        bf._setup(slices, growth, max_capacity)
        return bf

    # -- value semantics ------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BloomFilter):
            return NotImplemented
        return (
            self._growth == other._growth
            and self._max_capacity == other._max_capacity
            and len(self._slices) == len(other._slices)
            and all(a.same(b) for a, b in zip(self._slices, other._slices))
        )

    # No __hash__: a class that defines __eq__ alone is unhashable, as a mutable filter must be.

    def __repr__(self) -> str:
        return (
            f"BloomFilter(capacity={self.capacity}, error_rate={self.error_rate}, "
            f"slices={len(self._slices)}, total_capacity={self.total_capacity}, "
            f"num_bits={self.num_bits}, count={self.count})"
        )


def _index(value: object) -> int:
    if isinstance(value, SupportsIndex):
        return operator.index(value)
    raise ValueError(f"expected an integer, got {value!r}")
