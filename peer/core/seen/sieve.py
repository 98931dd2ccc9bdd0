"""The exact seen set's policy: a Bloom filter in front of a batched sieve of URL hashes.

A Bloom filter never forgets a URL but wrongly calls a new one "seen" with
probability p; past its size that drops new URLs silently (peer/core/seen/bloom.py).
So behind it sits an exact set of 64-bit URL hashes, checked in batches, the
way Mercator's URL-seen test (Heydon & Najork, "Mercator: A scalable,
extensible Web crawler", WWW 1999) and IRLbot's DRUM (Lee, Leonard, Wang and
Loguinov, "IRLbot: Scaling to 6 Billion Pages and Beyond", WWW 2008) do: the
keys to check wait in RAM, are sorted, and are merged with the sorted hashes
on disk in one sequential pass, instead of one random disk read per URL.

This module is the policy (pure: no file, no thread, no clock of its own);
``peer/state/sievefile.py`` is the driver that holds the hashes and does the I/O
in a worker thread. The crawl core asks, per URL:

1. ``bloom.add(url)`` says new: the URL is new for sure (a Bloom filter has
   no false negatives); :meth:`SeenSieve.add` records its hash for the disk.
2. It says "maybe seen" and the seen set holds fewer than ``disk_after``
   URLs: the Bloom filter's word is final (a drop, counted, at most about
   ``error_rate`` of the new URLs; the cheap path of a small crawl).
3. It says "maybe seen" past ``disk_after``: :meth:`check` puts the URL in the
   pending batch (``Verdict.PENDING``), or drops it if the same URL is already
   pending (``Verdict.DUPLICATE``). The batch is taken (:meth:`take`) when it
   holds ``batch`` URLs or its oldest waited ``max_wait`` seconds; the driver
   answers which hashes are new; :meth:`verdicts` returns the pending URLs
   that were new (Bloom false positives, queued after all) and counts the
   rest as true duplicates.

So no URL is dropped as seen past ``disk_after`` unless its 64-bit hash
equals another URL's: with n URLs in the set a new URL collides with
probability n / 2^64, 5.4e-11 at n = 1e9; over a whole crawl of n URLs the
expected number of such losses is n^2 / 2^65: 2.7e-6 at 1e7, 0.027 at 1e9.

The false-positive rate is measured, not estimated: past ``disk_after``
every Bloom "maybe" of a new URL comes back from the sieve as new, so
``false_positives / (false_positives + new)`` over the URLs judged there is
the Bloom filter's rate on this crawl's URLs (:attr:`SeenSieve.measured_fpr`).

Hashes are recorded from the first URL on, so the switch at ``disk_after``
needs no back-fill: the sieve already holds every URL the Bloom filter does.

Crash safety rests on one order: a hash reaches the driver only in a batch
taken after the journal records of its URLs are committed (the engine
commits, then :meth:`take`). A URL found new by the sieve is therefore not
inserted by the driver; it is journaled queued and :meth:`add`-ed to the
next batch. So the sieve never holds a URL the journal lacks, and recovery
can never call a lost URL seen. A URL waiting for a verdict is journaled
as ``Checking`` (a forward to ourselves): after a crash it goes through
``discover`` again and is judged again. A crash can lose the sieve the
hashes of the batch not yet taken; the engine re-adds the recovered queue
and rows, and the rest (URLs done or handed over since the last snapshot)
can at worst be fetched a second time, never lost.
"""

from __future__ import annotations

import enum
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import mmh3

__all__ = ["Pending", "SeenSieve", "SieveBatch", "SieveStats", "Verdict", "url_hash", "plan_merge",
           "MERGE_RATIO"]

# A seed the Bloom filter's own hash (mmh3.hash128, seed 0) does not share, so
# a sieve collision and a Bloom false positive are independent events.
_SEED = 0x5EE5
_hash64 = mmh3.hash64
#: Runs are merged while the newer is at least 1/MERGE_RATIO of the older one
#: (size-tiered, as LSM trees do): at most log_MERGE_RATIO(n / batch) runs, so
#: a check probes a few runs and each hash is rewritten about log n times.
MERGE_RATIO = 4


def url_hash(url: str) -> int:
    """The 64-bit hash of ``url`` the sieve stores (MurmurHash3 x64, low half, unsigned)."""
    return _hash64(url, _SEED, signed=False)[0]


class Verdict(enum.Enum):
    NEW = "new"              # queue it now (the Bloom filter said new)
    PENDING = "pending"      # waits in the batch for the sieve
    DUPLICATE = "duplicate"  # the same URL is already pending: a drop
    SEEN = "seen"            # the Bloom filter's word is final (below disk_after)


@dataclass(frozen=True, slots=True)
class Pending:
    """A URL waiting for the sieve's verdict: what ``discover`` needs to queue it after all."""

    url: str
    host: str
    depth: int
    hops: int
    hash: int


@dataclass(frozen=True, slots=True)
class SieveBatch:
    """One pass for the driver: hashes to insert, then hashes to check (not inserted)."""

    adds: bytes                        # little-endian u64 hashes, inserted first
    checks: bytes                      # little-endian u64 hashes, one per pending URL, in order
    pending: tuple[Pending, ...]       # the URLs of ``checks``, same order


@dataclass(frozen=True, slots=True)
class SieveStats:
    """The policy's counters, for the summary, the status and the metrics."""

    exact: bool                        # past disk_after: Bloom "maybe"s wait for the sieve
    checked: int                       # Bloom "maybe"s the sieve judged
    false_positives: int               # of them new after all (queued)
    new_direct: int                    # new URLs the Bloom filter passed, while exact
    bloom_drops: int                   # "maybe"s taken as seen below disk_after (unchecked)
    pending: int                       # URLs waiting for a verdict now
    passes: int                        # batches applied

    @property
    def measured_fpr(self) -> float | None:
        new = self.false_positives + self.new_direct
        return self.false_positives / new if new else None


def plan_merge(sizes: Sequence[int], ratio: int = MERGE_RATIO) -> int:
    """How many of the newest runs to merge into one (0 or >= 2); ``sizes`` oldest first.

    The newest run absorbs the one before it while that one is less than
    ``ratio`` times bigger, repeatedly (size-tiered compaction).
    """
    if len(sizes) < 2:
        return 0
    n, total = 1, sizes[-1]
    while n < len(sizes) and sizes[-n - 1] < ratio * total:
        total += sizes[-n - 1]
        n += 1
    return n if n >= 2 else 0


class SeenSieve:
    """The batching and the verdicts of the exact seen set (module docstring); pure, one thread."""

    def __init__(self, disk_after: int, batch: int, max_wait: float) -> None:
        if disk_after < 0 or batch < 1 or not max_wait > 0:
            raise ValueError(f"bad sieve policy: disk_after={disk_after!r}, batch={batch!r}, "
                             f"max_wait={max_wait!r}")
        self.disk_after = disk_after
        self.batch = batch
        self.max_wait = max_wait
        self._adds = array("Q")
        self._open: dict[str, Pending] = {}      # pending, not yet taken
        self._taken: dict[str, Pending] = {}     # pending, in the batch being applied
        self._since: float | None = None         # when the open batch's first entry came
        self._kick = False
        self.exact = disk_after == 0
        self.checked = 0
        self.false_positives = 0
        self.new_direct = 0
        self.bloom_drops = 0
        self.passes = 0

    # -- the crawl core's side -----------------------------------------------------

    def note_size(self, count: int) -> None:
        """The seen set holds ``count`` URLs: past ``disk_after`` the sieve judges (for good)."""
        if not self.exact and count >= self.disk_after:
            self.exact = True

    def add(self, url: str, now: float, *, direct: bool = False) -> None:
        """``url`` goes into the seen set; ``direct``: a discovery the Bloom filter called new.

        Hand-offs and recovered URLs are added without ``direct`` (they may
        be here already: a duplicate hash costs 8 bytes until the next merge).
        """
        self._adds.append(url_hash(url))
        if direct and self.exact:
            self.new_direct += 1
        self._touch(now, len(self._adds) >= self.batch)

    def check(self, url: str, host: str, depth: int, hops: int, now: float) -> Verdict:
        """The Bloom filter said "maybe seen": final below ``disk_after``, else wait for the sieve."""
        if not self.exact:
            self.bloom_drops += 1
            return Verdict.SEEN
        if url in self._open or url in self._taken:
            return Verdict.DUPLICATE
        self._open[url] = Pending(url, host, depth, hops, url_hash(url))
        self._touch(now, len(self._open) >= self.batch)
        return Verdict.PENDING

    def dropped(self, n: int) -> None:
        """``n`` "maybe seen" URLs taken as seen below ``disk_after``: :meth:`check`'s ``SEEN``
        for a batch of links at once (``Discovery.discover_links``), counted the same."""
        self.bloom_drops += n

    def _touch(self, now: float, full: bool) -> None:
        if self._since is None:
            self._since = now
            self._kick = True
        if full:
            self._kick = True

    def is_pending(self, url: str) -> bool:
        return url in self._open or url in self._taken

    def pending_urls(self) -> list[Pending]:
        """Every URL waiting for a verdict (a snapshot's queue holds them)."""
        return [*self._taken.values(), *self._open.values()]

    @property
    def pending(self) -> int:
        return len(self._open) + len(self._taken)

    # -- the driver's side ---------------------------------------------------------

    def take_kick(self) -> bool:
        """Whether the driver should look at :meth:`due_at` again (work arrived, a batch filled)."""
        kick, self._kick = self._kick, False
        return kick

    def due_at(self) -> float | None:
        """When the open batch must be taken (now if full); None: nothing to do."""
        if self._since is None:
            return None
        if len(self._open) >= self.batch or len(self._adds) >= self.batch:
            return self._since  # already due
        return self._since + self.max_wait

    def take(self, now: float) -> SieveBatch | None:
        """The open batch, for the driver; None while the previous one is out or nothing waits."""
        if self._taken or self._since is None:
            return None
        batch = SieveBatch(self._adds.tobytes() if _LITTLE else _swapped(self._adds),
                           _pack(p.hash for p in self._open.values()), tuple(self._open.values()))
        self._taken, self._open = self._open, {}
        self._adds = array("Q")
        self._since = None
        return batch

    def verdicts(self, batch: SieveBatch, new: Sequence[bool], now: float) -> list[Pending]:
        """The driver's answer for ``batch``'s checks: the pending URLs that were new."""
        if len(new) != len(batch.pending):
            raise ValueError(f"{len(new)} verdicts for {len(batch.pending)} checks")
        self._taken = {}
        self.passes += 1
        self.checked += len(new)
        out = [p for p, is_new in zip(batch.pending, new) if is_new]
        self.false_positives += len(out)
        if self._since is not None:
            self._kick = True  # more came while this batch was out
        return out

    def stats(self) -> SieveStats:
        return SieveStats(exact=self.exact, checked=self.checked, false_positives=self.false_positives,
                          new_direct=self.new_direct, bloom_drops=self.bloom_drops,
                          pending=self.pending, passes=self.passes)


_LITTLE = array("Q", [1]).tobytes()[0] == 1


def _swapped(a: array[int]) -> bytes:
    b = array("Q", a)
    b.byteswap()
    return b.tobytes()


def _pack(hashes: Iterable[int]) -> bytes:
    a = array("Q", hashes)
    return a.tobytes() if _LITTLE else _swapped(a)
