"""Exact duplicates across the ring: the digests a band owner keeps for the pages it is asked about (pure).

A peer's own :class:`~peer.core.dedupe.digests.DigestTable` finds a copy
among its own hosts' pages. A byte-identical mirror on a host another peer
owns has the same body digest and the same SimHash, so the same bands, and
is asked of the same band owners as its original. The asker folds the
digest into the band queries it sends anyway (``NearQuery.digest``), and
each owner keeps an :class:`ExactTable` beside its bands: no message more
than the near check costs. Every owner, not only one: two peers whose
views of the ring differ for a moment (a join one has not seen yet) place a
band on different owners, and a copy is then found by the owners their
views share, as a near copy is. Seen in a three-peer crawl: an original
fetched while its peer's ring had two members asked p1 for every band, its
mirror (three members) asked p3 for band 0 and p1 for band 2 only.

Rules:

1. **Which pages.** Those whose digest this peer's own table did not
   know: an unchanged page (the same URL, the same body) and a copy among
   the peer's own hosts are decided there, at once, without a message. A
   page with a SimHash sends its digest with its band queries; one without
   (a text under ``min_words``) sends it alone, in a query naming no band,
   to the owner of :func:`digest_ring_key` (a message and its answer more,
   when that owner is another peer). Two byte-identical pages take the
   same way: both have a SimHash or neither.
2. **The original wins, by the bands' order** (``peer.core.dedupe.precedence``):
   the copy first in the precedence order (its canonical, no session id,
   the shorter path, the earlier fetch, the URL) is the original, the
   order the band owners use: were the digest owner to go by arrival, it
   could call B a copy of A while a band owner calls A a near copy of B,
   and both would be dropped. A query that comes first in the order takes
   the entry, and the URL it displaced is returned so that the asker can
   correct that page's verdict (``peer.core.dedupe.held`` rule 6).
3. **A URL is not its own copy**: the same URL with the same digest is left
   as it was (its first ``seen_at`` kept).
4. **Recorded only when the claim is taken** (``peer.core.dedupe.claims``):
   a query answered but not recorded is checked against the table and
   leaves nothing in it.
5. **Bounded.** At most ``max_digests`` entries (``dedupe.max_digests``),
   the oldest out first, counted: forgetting only lets a later copy through
   as new (or near, by its bands).
6. **Digests**: the first 8 bytes of the body's digest as an unsigned int
   (the local table's prefix, ``digests`` rule 3); 0 means "not said" on the
   wire, so a digest whose prefix is 0 is not looked up (one in 2**64).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from peer.core.dedupe.digests import DIGEST_PREFIX
from peer.core.dedupe.precedence import Key, Says, key

__all__ = ["ExactStats", "ExactTable", "digest_key", "digest_ring_key"]


def digest_key(digest: bytes) -> int:
    """The table's key of a body digest: its first 8 bytes, big-endian (rule 6)."""
    return int.from_bytes(digest[:DIGEST_PREFIX], "big")


def digest_ring_key(digest: int) -> str:
    """The ring key a page without a SimHash asks its digest of (``HashRing.owner``; rule 1)."""
    return f"page-digest/{digest:016x}"


@dataclass(slots=True)
class ExactStats:
    """Counters for the metrics."""

    checked: int = 0
    duplicates: int = 0
    forgotten: int = 0


@dataclass(slots=True)
class ExactTable:
    """Digest prefix -> the first copy in the precedence order asked with it, at most ``max_digests``."""

    max_digests: int = 1_000_000
    stats: ExactStats = field(default_factory=ExactStats)
    _first: OrderedDict[int, Key] = field(default_factory=OrderedDict)

    def __len__(self) -> int:
        return len(self._first)

    def check(self, digest: int, seen_at: float, url: str, said: Says | int = Says.NONE, *,
              record: bool = True) -> tuple[str | None, str | None]:
        """``(original, displaced)``: the URL this page is a copy of (None: it is first), and the
        URL it took the entry from (None: none; only when recorded). Rules 2-5."""
        if not 0 < digest < 2**64:
            return None, None
        self.stats.checked += 1
        first = self._first.get(digest)
        me = key(url, said, seen_at)
        if first is not None and first[-1] != url and first < me:
            self.stats.duplicates += 1
            return first[-1], None
        if record and (first is None or (first[-1] != url and me < first)):
            self._first[digest] = me
            if len(self._first) > self.max_digests:
                self._first.popitem(last=False)
                self.stats.forgotten += 1
            return None, None if first is None else first[-1]
        return None, None
