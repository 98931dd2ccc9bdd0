"""Exact duplicates: the digests of the bodies a peer has fetched, and the first URL of each.

Rules:

1. **Which digest.** The caller's digest (SHA-1 or longer) of the body
   *after* content decoding: a page served gzip to one request and identity
   to another is one page, and duplicate detection is about what the page
   says. WARC's ``WARC-Payload-Digest`` is of the entity body as received
   (after transfer decoding, before content decoding; ISO 28500 §5.9), so
   the archive writer keeps its own; the two agree for identity-encoded
   answers, most of the web.
2. **The original wins** (``peer.core.dedupe.precedence``). A digest seen
   before under another URL is a duplicate of the URL kept for it, unless
   it comes first in the precedence order (its canonical, no session
   parameter, a shorter path, ...): then it takes the entry's place and the
   URL kept before is the copy (:attr:`Seen.SUPERSEDES`). Under the same URL
   (a recrawl) it is not a duplicate, it is the page unchanged
   (:attr:`Seen.UNCHANGED`). A digest handed over without its claim (rule 6)
   counts as a page with no canonical, fetched at time 0.
3. **What is kept.** The first 8 bytes of the digest as an int, and the
   first URL. 64 bits is enough: among n digests the chance of any false
   match is about n**2 / 2**65 (3e-6 at 10M digests a peer). A Bloom filter
   in front would say "seen" without saying of which URL, and its false
   positives would call new pages duplicates, dropping them: this table
   errs the other way, forgetting.
4. **Bounded.** At most ``max_digests``; past them the oldest digest is
   forgotten (FIFO: the copies of a page mostly come soon after it, in the
   same crawl of its host) and counted. A forgotten digest only lets a later
   copy through as new.
5. **Scope.** The table is a peer's own: its hosts' pages, so a site's
   session-id, print and index.html copies (the common case) are caught
   here, for any content type. Copies across peers are caught by the band
   owners (``peer.core.dedupe.bands``) at SimHash distance 0; docs/dedupe.md
   says what breaks first at 10x and 100x.
6. **Moving with the host** (``ring.statebox``): the digests whose first
   URL is of a host that changes owner leave with it
   (:meth:`DigestTable.export_hosts`) and join the new owner's table
   (:meth:`DigestTable.import_digests`), where a digest already known keeps
   its first URL, so a copy of one of the host's pages fetched after the
   move is still an exact duplicate. Each host's digests are listed apart
   (its host key is the first URL's authority: the crawl's URLs are
   normalised), so an export costs the moved hosts' digests, not a scan of
   the table: a scan of 1 M digests took 1.2 s of the event loop, once a
   ring change. The lists cost about 12 bytes a digest when hosts have many
   pages, and about 100 more for a host of one page (its key and slot).
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from typing import Any

from peer.core.dedupe.precedence import Says, key

__all__ = ["DigestTable", "DigestStats", "Seen"]


def _authority(url: str) -> str:
    """A normalised URL's authority: its host key (``peer.core.urls.normalize.host_key``), sliced out."""
    start = url.find("//") + 2
    end = url.find("/", start)
    return url[start:end] if end >= 0 else url[start:]

DIGEST_PREFIX = 8  # bytes of a digest kept (rule 3)


class Seen(enum.Enum):
    """What the table says of a body."""

    NEW = "new"
    UNCHANGED = "unchanged"  # the same URL with the same body again (rule 2)
    DUPLICATE = "duplicate"  # another URL had this body first
    SUPERSEDES = "supersedes"  # another URL had it first, and is a copy of this one (rule 2)


@dataclass(slots=True)
class DigestStats:
    """Counters for the metrics."""

    checked: int = 0
    duplicates: int = 0
    unchanged: int = 0
    forgotten: int = 0
    superseded: int = 0  # a better copy took a digest's entry (rule 2)


@dataclass(slots=True)
class DigestTable:
    """Digest prefix -> the first URL with that body, at most ``max_digests`` of them, oldest out first."""

    max_digests: int = 1_000_000
    stats: DigestStats = field(default_factory=DigestStats)
    _first: OrderedDict[int, str] = field(default_factory=OrderedDict)
    # -- precedence (rule 2): digest prefix -> what the kept URL's canonical
    # said and its fetch time; absent: Says.NONE at 0.0 (a handed-over digest).
    _claims: dict[int, tuple[int, float]] = field(default_factory=dict)
    # host key -> its digest, or its digests oldest first (rule 6): the same int
    # objects as _first's keys; a list only for a host of two or more.
    _hosts: dict[str, int | list[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.max_digests < 1:
            raise ValueError(f"max_digests must be >= 1, not {self.max_digests!r}")

    def __len__(self) -> int:
        return len(self._first)

    def check(self, url: str, digest: bytes, said: Says = Says.NONE,
              seen_at: float = 0.0) -> tuple[Seen, str | None]:
        """``(Seen, the URL kept before)`` of ``url``'s body, recorded if new or better (rules 2-4)."""
        if len(digest) < DIGEST_PREFIX:
            raise ValueError(f"a digest of at least {DIGEST_PREFIX} bytes, not {len(digest)}")
        self.stats.checked += 1
        d = int.from_bytes(digest[:DIGEST_PREFIX], "big")
        first = self._first.get(d)
        if first is not None:
            if first == url:
                self.stats.unchanged += 1
                return Seen.UNCHANGED, first
            self.stats.duplicates += 1
            # -- precedence (rule 2): the better copy takes the entry.
            had = self._claims.get(d, (int(Says.NONE), 0.0))
            if key(url, said, seen_at) < key(first, had[0], had[1]):
                first_d = self._first
                first_d[d] = url  # keeps its place in the FIFO: the body's age, not the URL's
                self._claims[d] = (int(said), seen_at)
                self._rehost(d, first, url)
                self.stats.superseded += 1
                return Seen.SUPERSEDES, first
            return Seen.DUPLICATE, first
        self._keep(d, url)
        if said is not Says.NONE or seen_at:
            self._claims[d] = (int(said), seen_at)
        return Seen.NEW, None

    def _rehost(self, d: int, old_url: str, url: str) -> None:
        """Digest ``d`` now belongs to ``url``'s host, not ``old_url``'s (rule 6's lists)."""
        old, new = _authority(old_url), _authority(url)
        if old == new:
            return
        kept = self._hosts.get(old)
        if kept == d:
            del self._hosts[old]
        elif isinstance(kept, list):
            kept.remove(d)
            if not kept:
                del self._hosts[old]
        had = self._hosts.get(new)
        if had is None:
            self._hosts[new] = d
        elif isinstance(had, int):
            self._hosts[new] = [had, d]
        else:
            had.append(d)

    def _keep(self, d: int, url: str) -> None:
        """Record ``d`` for ``url``, the oldest out past ``max_digests`` (rules 4, 6)."""
        first = self._first
        first[d] = url
        hosts = self._hosts
        host = _authority(url)
        had = hosts.get(host)
        if had is None:
            hosts[host] = d
        elif isinstance(had, int):
            hosts[host] = [had, d]
        else:
            had.append(d)
        if len(first) > self.max_digests:
            old, old_url = first.popitem(last=False)
            self._claims.pop(old, None)
            host = _authority(old_url)
            kept = hosts[host]
            if isinstance(kept, int) or len(kept) == 1:
                del hosts[host]
            elif kept[0] == old:  # the oldest of all is its host's oldest: both keep insertion order
                del kept[0]
            else:  # pragma: no cover - the orders agree; kept safe all the same
                kept.remove(old)
            self.stats.forgotten += 1

    def export_hosts(self, hosts: Iterable[str]) -> list[tuple[int, str]]:
        """(prefix, first URL) of every digest whose first URL's host key is one of ``hosts``,
        removed (rule 6); each host's oldest first. Costs the hosts' digests, not the table's."""
        out: list[tuple[int, str]] = []
        first = self._first
        for host in hosts:
            kept = self._hosts.pop(host, None)
            for d in ([] if kept is None else [kept] if isinstance(kept, int) else kept):
                out.append((d, first.pop(d)))
                self._claims.pop(d, None)
        return out

    def import_digests(self, records: Iterable[Any]) -> int:
        """Keep digests handed over by a host's previous owner (rule 6); how many were new here.

        Remote input: a record of the wrong shape is skipped. A digest known
        here keeps its first URL; past ``max_digests`` the oldest go, as always.
        """
        n = 0
        first = self._first
        for r in records:
            if not (isinstance(r, (list, tuple)) and len(r) == 2 and type(r[0]) is int
                    and 0 <= r[0] < 2**64 and isinstance(r[1], str) and r[1]):
                continue
            if r[0] in first:
                continue
            self._keep(r[0], r[1])
            n += 1
        return n
