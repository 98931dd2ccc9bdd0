"""The band table a band's owner keeps: band key -> the fingerprints seen with that band, bounded.

A page's SimHash is split into k+1 bands (:func:`peer.core.dedupe.simhash.bands`);
each band ``(index, value)`` is a key on the ring, and its owner (the same
``HashRing.owner`` that places hosts) keeps the fingerprints and URLs of the
pages that had that band. A page within distance k of an earlier one shares
at least one band with it, so asking the owners of its k+1 bands finds it
(Manku et al., WWW 2007, §3: their tables are our bands, one table a band).

Rules:

1. **Query and insert are one step** (:meth:`BandTable.query`): an owner
   answers with the nearest earlier entry within k, then records the page.
   Two copies asked at the same time at the same owner are thus ordered.
2. **The original wins, by one order every owner agrees on**
   (``peer.core.dedupe.precedence``: what the page's canonical says, no
   session parameter, the shorter path, ``seen_at``, the URL). A candidate
   is reported as the page's original only if it comes before the page in
   that order, computed from what the queries carry (``url``, ``says``,
   ``seen_at``). Owners see queries in different orders, but no owner ever
   calls A a copy of B and another B a copy of A (that would drop both).
   Ties on distance go to the candidate first in the order. The candidates
   within k that the page comes *before* are answered too
   (``superseded``, nearest first, at most :data:`MAX_SUPERSEDED`): they
   were kept as originals, and are now copies of this page (the asker has
   their rows corrected, ``peer.core.dedupe.held`` rule 6).
3. **A URL is not its own duplicate**: its earlier entry under a key is
   replaced (a recrawl of a page whose text changed does not multiply under
   the bands it kept; under a band that changed, the old text's entry stays
   until evicted, and a copy of the old text is still a copy of the URL).
4. **Bounded.** At most ``max_per_key`` entries a band key (a band shared by
   many pages, such as the template of a big site, evicts its oldest) and
   ``max_entries`` in all (the oldest entry goes first); each eviction is
   counted in :class:`BandTableStats`. Forgetting loses a duplicate found,
   never a page: an evicted fingerprint only makes a later copy "new".
5. **Hostile input never raises**: a band index out of range, a fingerprint
   outside 64 bits, a URL that is not a string or is longer than
   ``max_url``, or a ``seen_at`` that is not a finite number (NaN would
   break rule 2's order) is dropped and counted, and answered with no
   duplicate.

Messages (frozen; the codec, ``ring/messages.py``, is to carry them with
these fields, in this order):

- :class:`NearQuery` ``bands`` (list of band indices this owner is asked
  for: small ints; the values are not sent, the owner derives them from the
  fingerprint, so they cannot disagree with it), ``fingerprint`` (uint64),
  ``url`` (str), ``reply_to`` (the asking peer's id, str), ``seen_at``
  (float, the asker's fetch time: rule 2's order), ``says`` (int, what the
  page's canonical says, ``precedence.Says``; 1, "none", from an older peer).
- :class:`NearAnswer` ``url`` (str, the page asked about), ``duplicate_of``
  (str or nil), ``distance`` (int 0..64, or -1 with no duplicate),
  ``superseded`` (``(url, distance)`` pairs the page outranks: rule 2).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from peer.core.dedupe.precedence import Says, key
from peer.core.dedupe.simhash import FINGERPRINT_BITS, bands, distance

__all__ = ["BandTable", "BandTableStats", "MAX_SUPERSEDED", "NearAnswer", "NearQuery", "NO_DISTANCE"]

#: Earlier originals one answer names as now copies of the page (rule 2):
#: a band key holds at most ``band_max_per_key`` entries, and more than a
#: few copies of one page met before their original is rare; the rest keep
#: their first verdict, the safe side (a page kept twice, none lost).
MAX_SUPERSEDED = 16

#: ``NearAnswer.distance`` when there is no duplicate.
NO_DISTANCE = -1


@dataclass(frozen=True, slots=True)
class NearQuery:
    """To a band owner: near duplicates of ``fingerprint`` under these of its bands?"""

    bands: tuple[int, ...]
    fingerprint: int
    url: str
    reply_to: str
    seen_at: float
    says: int = int(Says.NONE)  # precedence.Says of the page's canonical (rule 2)
    #: The page's body digest prefix (``peer.core.dedupe.exact``); 0: not said.
    digest: int = 0


@dataclass(frozen=True, slots=True)
class NearAnswer:
    """From a band owner: ``url`` is within ``distance`` of ``duplicate_of`` (None: of nothing it knows)."""

    url: str
    duplicate_of: str | None
    distance: int = NO_DISTANCE
    superseded: tuple[tuple[str, int], ...] = ()  # (url, distance): now copies of ``url`` (rule 2)
    #: ``duplicate_of`` has the same body digest (``peer.core.dedupe.exact``): an exact copy.
    exact: bool = False
    #: URLs of ``superseded`` with the asked page's body digest: exact copies of it, not near ones.
    exact_superseded: tuple[str, ...] = ()


@dataclass(slots=True)
class BandTableStats:
    """What a band table did: counters for the metrics."""

    queries: int = 0
    duplicates: int = 0
    inserted: int = 0
    replaced: int = 0  # rule 3: the same URL again under a key
    evicted_per_key: int = 0
    evicted_total: int = 0
    dropped: int = 0  # rule 5: hostile queries
    superseded: int = 0  # rule 2: earlier originals answered as now copies


@dataclass(slots=True)
class _Entry:
    fingerprint: int
    seen_at: float
    url: str
    seq: int  # insertion number: which deque record is this entry's
    says: int = int(Says.NONE)


@dataclass(slots=True)
class BandTable:
    """One owner's bands: ``(index, value)`` -> entries, oldest first."""

    k: int
    max_per_key: int = 64
    max_entries: int = 1_000_000
    max_url: int = 8192
    stats: BandTableStats = field(default_factory=BandTableStats)
    _keys: dict[tuple[int, int], list[_Entry]] = field(default_factory=dict)
    # (seq, key) of every insertion in order; a record whose entry already
    # left through its key's cap or a replacement is skipped when reached.
    _order: deque[tuple[int, tuple[int, int]]] = field(default_factory=deque)
    _seq: int = 0
    _size: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.k < FINGERPRINT_BITS:
            raise ValueError(f"k must be 0..{FINGERPRINT_BITS - 1}, not {self.k!r}")
        if self.max_per_key < 1 or self.max_entries < 1:
            raise ValueError("max_per_key and max_entries must be >= 1")

    def __len__(self) -> int:
        """Entries held, over every band key."""
        return self._size

    def keys(self) -> int:
        """Band keys held."""
        return len(self._keys)

    def query(self, q: NearQuery, *, record: bool = True) -> NearAnswer:
        """The nearest earlier page within k under ``q``'s bands, then ``q``'s page recorded (rules 1-3;
        ``record`` False: answered only, ``peer.core.dedupe.claims`` rule 3)."""
        self.stats.queries += 1
        fp = q.fingerprint
        if (not isinstance(fp, int) or not 0 <= fp <= (1 << FINGERPRINT_BITS) - 1
                or not isinstance(q.url, str) or len(q.url) > self.max_url
                or not isinstance(q.seen_at, (int, float)) or not math.isfinite(q.seen_at)
                or not isinstance(q.bands, tuple) or not q.bands
                or type(q.says) is not int or not 0 <= q.says <= 2
                or any(not isinstance(i, int) or not 0 <= i <= self.k for i in q.bands)):
            self.stats.dropped += 1
            return NearAnswer(q.url, None)
        values = bands(fp, self.k)
        me = key(q.url, q.says, q.seen_at)
        best: _Entry | None = None
        best_key = me
        best_d = FINGERPRINT_BITS + 1
        after: dict[str, int] = {}  # rule 2: candidates this page outranks
        for i in dict.fromkeys(q.bands):
            for e in self._keys.get((i, values[i]), ()):
                if e.url == q.url:
                    continue
                d = distance(e.fingerprint, fp)
                if d > self.k:
                    continue
                ek = key(e.url, e.says, e.seen_at)
                if ek > me:
                    after[e.url] = d
                elif d < best_d or (d == best_d and ek < best_key):
                    best, best_d, best_key = e, d, ek
        for i in dict.fromkeys(q.bands) if record else ():
            self._insert((i, values[i]), fp, q.seen_at, q.url, q.says)
        # A page not recorded (a claim not taken) outranks nothing: it never demotes a kept page.
        superseded = tuple(sorted(after.items(), key=lambda ud: (ud[1], ud[0]))[:MAX_SUPERSEDED]) if record else ()
        self.stats.superseded += len(superseded)
        if best is None:
            return NearAnswer(q.url, None, NO_DISTANCE, superseded)
        self.stats.duplicates += 1
        return NearAnswer(q.url, best.url, best_d, superseded)

    def _insert(self, band: tuple[int, int], fp: int, seen_at: float, url: str,
                says: int = int(Says.NONE)) -> None:
        entries = self._keys.setdefault(band, [])
        for j, e in enumerate(entries):
            if e.url == url:
                del entries[j]
                self._size -= 1
                self.stats.replaced += 1
                break
        if len(entries) >= self.max_per_key:
            del entries[0]
            self._size -= 1
            self.stats.evicted_per_key += 1
        self._seq += 1
        entries.append(_Entry(fp, seen_at, url, self._seq, says))
        self._order.append((self._seq, band))
        self._size += 1
        self.stats.inserted += 1
        while self._size > self.max_entries:
            self._evict_oldest()
        if len(self._order) > 2 * self.max_entries + 16:
            self._compact()

    def _evict_oldest(self) -> None:
        while self._order:
            seq, key = self._order.popleft()
            entries = self._keys.get(key)
            if not entries:
                continue
            for j, e in enumerate(entries):
                if e.seq == seq:
                    del entries[j]
                    self._size -= 1
                    self.stats.evicted_total += 1
                    if not entries:
                        del self._keys[key]
                    return

    def _compact(self) -> None:
        # Records of entries gone through their key's cap pile up while the
        # total cap is never reached; rebuilding keeps the deque within 2x.
        live = {(e.seq, key) for key, entries in self._keys.items() for e in entries}
        self._order = deque(r for r in self._order if r in live)
