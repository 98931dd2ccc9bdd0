"""The URL-seen set: a Bloom filter on bitarray and MurmurHash3.

The seed paper on the Scrapy-Redis crawler (seed 001) deduplicates URLs with a
Bloom filter built on bitarray and MurmurHash3; so does this module. A Bloom
filter never forgets a URL it has seen (no false negatives) and wrongly claims
to have seen a new one with probability about ``error_rate`` once ``capacity``
URLs are in; that is the price of a few bits per URL instead of the URL itself.

Sizing (Broder & Mitzenmacher, "Network Applications of Bloom Filters: A
Survey", 2004): for n keys at false-positive rate p the optimum is

    m = ceil(-n ln p / (ln 2)^2) bits,   k = round((m / n) ln 2) hashes.

Hashing: Kirsch & Mitzenmacher, "Less Hashing, Same Performance: Building a
Better Bloom Filter" (ESA 2006) show that g_i(x) = h1(x) + i*h2(x) mod m, for
i = 0..k-1, keeps the asymptotic false-positive rate of k independent hashes.
So each key costs one 128-bit MurmurHash3 (x64 variant, seed 0), split into
two 64-bit halves h1 (low) and h2 (high). The index is computed as
(h1 mod m + i*(h2 mod m)) mod m, which equals (h1 + i*h2) mod m exactly and
keeps every intermediate inside 64 bits for the vectorised path.

Batches: ``add_many``/``contains_many`` use numpy when it is importable and
the batch is big enough to pay for the array set-up; results are identical to
calling ``add``/``in`` key by key, in order (a key that an earlier key of the
same batch made look present reports False, as it would sequentially).

File format, version 1 (all integers little-endian)::

    0   8  magic b"RCBLOOM1" (the last byte is the format version)
    8   8  m, number of bits (u64)
    16  4  k, number of hashes (u32)
    20  8  capacity (u64)
    28  8  error_rate (f64)
    36  8  count (u64)
    44  B  the bits, B = ceil(m / 8); bit i is bit (i % 8) of byte i // 8
    -4  4  zlib.crc32 of everything before it (u32)

Files are written to a temporary file in the same directory, fsynced and
renamed over the old one, so a crash leaves either the old or the new filter,
never half of one. Anything unreadable raises ``StateError`` naming the file.
"""

from __future__ import annotations

import math
import operator
import os
import struct
import tempfile
import zlib
from collections.abc import Iterable

import mmh3
from bitarray import bitarray

from peer.errors import StateError

try:
    import numpy as _np
except ImportError:  # numpy is optional (the "fast" extra)
    _np = None

__all__ = ["BloomFilter"]

_MAGIC = b"RCBLOOM1"
_MAGIC_FAMILY = _MAGIC[:-1]
_HEADER = struct.Struct("<8sQIQdQ")
_TRAILER = struct.Struct("<I")
_MASK64 = (1 << 64) - 1
_FRESH = "restore it from a backup or start over with --fresh"

# Below this many keys the per-call numpy set-up (a dozen small arrays) costs
# more than it saves; the measured crossover on a 2-core box was ~64 keys.
_NUMPY_MIN_BATCH = 64
# Keys per vectorised chunk: bounds the temporaries (~100 bytes/key) and keeps
# entry numbers small enough to pack beside a bit position in one int64.
_CHUNK_KEYS = 1 << 16

_hash128 = mmh3.hash128
_hash_bytes = mmh3.hash_bytes  # the same 128 bits as hash128, as 16 LE bytes


def optimal_size(capacity: int, error_rate: float) -> tuple[int, int]:
    """Return (m bits, k hashes) for ``capacity`` keys at ``error_rate``."""
    m = math.ceil(-capacity * math.log(error_rate) / (math.log(2) ** 2))
    k = max(1, round(m / capacity * math.log(2)))
    return m, k


class BloomFilter:
    """A fixed-size Bloom filter of str keys (URLs)."""

    __slots__ = ("_bits", "_m", "_k", "_capacity", "_error_rate", "_count", "_probes")

    def __init__(self, capacity: int, error_rate: float) -> None:
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
        m, k = optimal_size(capacity, float(error_rate))
        self._init(m, k, capacity, float(error_rate), 0, None)

    def _init(
        self, m: int, k: int, capacity: int, error_rate: float, count: int, bits: bitarray | None
    ) -> None:
        if bits is None:
            # Whole bytes, so the buffer is exactly the file payload and numpy
            # can view it; the pad bits past m are never set.
            bits = bitarray(-(-m // 8) * 8, endian="little")
            bits.setall(0)
        self._bits = bits
        self._m = m
        self._k = k
        self._capacity = capacity
        self._error_rate = error_rate
        self._count = count
        self._probes = range(k)

    # -- sizes and statistics -------------------------------------------------

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def error_rate(self) -> float:
        return self._error_rate

    @property
    def num_bits(self) -> int:
        """m, the number of bits."""
        return self._m

    @property
    def num_hashes(self) -> int:
        """k, the number of bit positions per key."""
        return self._k

    @property
    def count(self) -> int:
        """How many adds returned True (distinct keys, less false positives)."""
        return self._count

    def fill_ratio(self) -> float:
        """Fraction of the m bits that are set (O(m/8), popcount)."""
        return self._bits.count() / self._m

    def estimated_fpr(self) -> float:
        """Expected false-positive rate now: (1 - e^(-k*count/m))^k.

        This is the textbook estimate from ``count``, O(1) so a stats loop can
        call it often. ``fill_ratio() ** num_hashes`` measures the same thing
        from the bits themselves; the two agree to within a few percent while
        count is accurate (count misses keys that were false positives).
        """
        return (1.0 - math.exp(-self._k * self._count / self._m)) ** self._k

    # -- single keys ----------------------------------------------------------

    def add(self, url: str) -> bool:
        """Insert ``url``; return True if it was new (some bit was clear)."""
        h = _hash128(url)
        m = self._m
        j = (h & _MASK64) % m
        step = (h >> 64) % m
        bits = self._bits
        new = False
        for _ in self._probes:
            if not bits[j]:
                bits[j] = 1
                new = True
            j += step
            if j >= m:
                j -= m
        if new:
            self._count += 1
        return new

    def __contains__(self, url: object) -> bool:
        h = _hash128(url)  # type: ignore[arg-type]
        m = self._m
        j = (h & _MASK64) % m
        step = (h >> 64) % m
        bits = self._bits
        # Early exit: an absent key usually fails on the first probe or two.
        for _ in self._probes:
            if not bits[j]:
                return False
            j += step
            if j >= m:
                j -= m
        return True

    # -- batches --------------------------------------------------------------

    def add_many(self, urls: Iterable[str]) -> list[bool]:
        """``[self.add(u) for u in urls]``, vectorised with numpy when it helps."""
        urls = urls if isinstance(urls, list) else list(urls)
        if not self._vectorise(len(urls)):
            add = self.add
            return [add(u) for u in urls]
        out: list[bool] = []
        for lo in range(0, len(urls), _CHUNK_KEYS):
            out += self._np_add(urls[lo : lo + _CHUNK_KEYS])
        return out

    def contains_many(self, urls: Iterable[str]) -> list[bool]:
        """``[u in self for u in urls]``, vectorised with numpy when it helps."""
        urls = urls if isinstance(urls, list) else list(urls)
        if not self._vectorise(len(urls)):
            return [u in self for u in urls]
        out: list[bool] = []
        for lo in range(0, len(urls), _CHUNK_KEYS):
            idx = self._np_indices(urls[lo : lo + _CHUNK_KEYS])
            buf = _np.frombuffer(self._bits, dtype=_np.uint8)
            hit = (buf[idx >> 3] >> (idx & 7).astype(_np.uint8)) & 1
            out += hit.all(axis=1).tolist()
        return out

    def _vectorise(self, n: int) -> bool:
        # The numpy path packs (bit position, entry number) into one int64.
        return (
            _np is not None
            and n >= _NUMPY_MIN_BATCH
            and (self._m - 1).bit_length() + (_CHUNK_KEYS * self._k - 1).bit_length() <= 63
        )

    def _np_indices(self, urls: list[str]):  # -> numpy int64 array (len(urls), k)
        raw = b"".join(map(_hash_bytes, urls))
        h = _np.frombuffer(raw, dtype="<u8").reshape(-1, 2)
        m = self._m
        h1 = (h[:, 0] % _np.uint64(m)).astype(_np.int64)
        h2 = (h[:, 1] % _np.uint64(m)).astype(_np.int64)
        idx = _np.multiply.outer(h2, _np.arange(self._k, dtype=_np.int64))
        idx += h1[:, None]
        idx %= m
        return idx

    def _np_add(self, urls: list[str]) -> list[bool]:
        np = _np
        n, k = len(urls), self._k
        flat = self._np_indices(urls).ravel()  # entry e = key e // k, probe e % k
        buf = np.frombuffer(self._bits, dtype=np.uint8)
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
        self._count += int(new.sum())
        return new.tolist()

    # -- persistence ----------------------------------------------------------

    def to_file(self, path: str | os.PathLike[str]) -> None:
        """Write the filter to ``path`` atomically (tmp file, fsync, rename)."""
        path = os.fspath(path)
        header = _HEADER.pack(
            _MAGIC, self._m, self._k, self._capacity, self._error_rate, self._count
        )
        crc = zlib.crc32(self._bits, zlib.crc32(header))
        directory = os.path.dirname(os.path.abspath(path))
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(
                prefix=os.path.basename(path) + ".", suffix=".tmp", dir=directory
            )
            with os.fdopen(fd, "wb") as f:
                f.write(header)
                f.write(self._bits)  # the buffer itself: no copy of a big filter
                f.write(_TRAILER.pack(crc))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            tmp = None
            fsync_dir(directory)
        except OSError as e:
            raise StateError(f"{path}: cannot write Bloom filter ({e.strerror or e})") from e
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> BloomFilter:
        """Load a filter written by ``to_file``; raise StateError if unusable."""
        path = os.fspath(path)
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                head = f.read(_HEADER.size)
                m, k, capacity, error_rate, count = _check_header(path, head, size)
                bits = bitarray(-(-m // 8) * 8, endian="little")
                got = f.readinto(bits)
                tail = f.read()
        except FileNotFoundError:
            raise StateError(f"{path}: Bloom filter file not found; {_FRESH}") from None
        except OSError as e:
            raise StateError(f"{path}: cannot read Bloom filter ({e.strerror or e}); {_FRESH}") from e
        if got != len(bits) // 8 or len(tail) != _TRAILER.size:
            # The size was checked against fstat; this is a file shrinking under us.
            raise StateError(f"{path}: Bloom filter is truncated; {_FRESH}")
        (crc,) = _TRAILER.unpack(tail)
        if zlib.crc32(bits, zlib.crc32(head)) != crc:
            raise StateError(f"{path}: Bloom filter is corrupt (checksum mismatch); {_FRESH}")
        if bits[m:].any():
            raise StateError(f"{path}: Bloom filter is corrupt (bits set past the end); {_FRESH}")
        bf = cls.__new__(cls)
        bf._init(m, k, capacity, error_rate, count, bits)
        return bf

    # -- value semantics ------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BloomFilter):
            return NotImplemented
        return (
            self._m == other._m
            and self._k == other._k
            and self._capacity == other._capacity
            and self._error_rate == other._error_rate
            and self._count == other._count
            and self._bits == other._bits
        )

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return (
            f"BloomFilter(capacity={self._capacity}, error_rate={self._error_rate}, "
            f"num_bits={self._m}, num_hashes={self._k}, count={self._count})"
        )


def _check_header(path: str, head: bytes, size: int) -> tuple[int, int, int, float, int]:
    if len(head) < len(_MAGIC):
        if _MAGIC.startswith(head):
            raise StateError(f"{path}: Bloom filter is truncated ({size} bytes); {_FRESH}")
        raise StateError(f"{path}: not a ringcrawl Bloom filter (bad magic); {_FRESH}")
    if head[: len(_MAGIC_FAMILY)] != _MAGIC_FAMILY:
        raise StateError(f"{path}: not a ringcrawl Bloom filter (bad magic); {_FRESH}")
    if head[: len(_MAGIC)] != _MAGIC:
        raise StateError(
            f"{path}: Bloom filter format {head[: len(_MAGIC)]!r} is not supported "
            f"(this build reads {_MAGIC!r}); {_FRESH}"
        )
    if len(head) < _HEADER.size:
        raise StateError(f"{path}: Bloom filter is truncated ({size} bytes); {_FRESH}")
    _, m, k, capacity, error_rate, count = _HEADER.unpack(head)
    if not (m >= 1 and 1 <= k <= 4096 and capacity >= 1 and 0.0 < error_rate < 1.0 and count <= m):
        raise StateError(f"{path}: Bloom filter is corrupt (bad header); {_FRESH}")
    expected = _HEADER.size + -(-m // 8) + _TRAILER.size
    if size < expected:
        raise StateError(
            f"{path}: Bloom filter is truncated ({size} of {expected} bytes); {_FRESH}"
        )
    if size > expected:
        raise StateError(
            f"{path}: Bloom filter is corrupt ({size - expected} unexpected trailing bytes); {_FRESH}"
        )
    return m, k, capacity, error_rate, count


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """Make renames, creations and deletions in ``directory`` durable (POSIX; a no-op elsewhere)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
