"""The sitemaps one peer has found: each fetched once, index nesting and per-host counts bounded.

A pure core beside :mod:`peer.core.sitemaps.document` (which reads one document):
the engine reports every sitemap URL it meets, named by a robots.txt
``Sitemap:`` line or a seed (depth 0) or listed by an index it parsed
(the index's depth + 1), and :meth:`SitemapTracker.found` answers with a
:class:`Found` decision. Only the owner of a sitemap's host fetches it, so
a peer tracks the sitemaps of the hosts it owns.

Rules (``[sitemaps]`` config keys in brackets, from :class:`SitemapLimits`):

1. **Once**: a sitemap URL already found is ``SEEN``, never fetched again
   in this run. That ends loops: an index that lists itself, or indexes
   that list each other, are each fetched once.
2. **Depth** [``max_depth``]: the protocol says an index lists only
   sitemaps, not other indexes, but real sites nest them; a sitemap found
   deeper than ``max_depth`` is ``TOO_DEEP``, so a chain of indexes (each
   new, so rule 1 cannot end it) ends there.
3. **Per host** [``max_per_host``]: at most that many sitemaps of one host
   (``host[:port]``) are fetched; the next are ``HOST_CAP``. A host that
   generates index after index (each listing new ones) costs at most that
   many fetches and ``max_per_host x max_bytes`` of parsing.
4. **Authority**: each sitemap keeps the authorities it was found with
   (:class:`peer.core.sitemaps.document.Authority`: a robots.txt's host, inherited
   by the children of an index); a sitemap found again, before or after its
   fetch, adds the new ones, so one named by robots.txt after an index
   listed it still gets robots.txt's grant when it is parsed. The depth
   kept is the least it was found at.

Every refusal is counted in :attr:`SitemapTracker.refused` under its
decision's value. Memory: one small record per sitemap found, at most
``max_per_host`` per host.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from peer.core.sitemaps.document import Authority, SitemapLimits
from peer.core.urls.normalize import host_key, normalize
from peer.errors import URLError

__all__ = ["Found", "SitemapRecord", "SitemapTracker"]


class Found(enum.Enum):
    """What to do with a sitemap URL just found."""

    NEW = "new"              # fetch it (under its host's politeness)
    SEEN = "seen"            # found before: nothing to do
    TOO_DEEP = "too_deep"    # below max_depth index levels
    HOST_CAP = "host_cap"    # its host has max_per_host sitemaps already
    BAD_URL = "bad_url"      # not a crawlable http(s) URL


@dataclass(frozen=True, slots=True)
class SitemapRecord:
    """One sitemap found: where, how deep, with what authority, first when."""

    url: str
    depth: int
    authorities: frozenset[Authority]
    found_at: float


class SitemapTracker:
    """Which sitemaps this peer has found; :meth:`found` decides each new one."""

    __slots__ = ("limits", "_records", "_per_host", "refused")

    def __init__(self, limits: SitemapLimits = SitemapLimits()) -> None:
        self.limits = limits
        self._records: dict[str, SitemapRecord] = {}
        self._per_host: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()

    def found(self, url: str, granted: Iterable[Authority], depth: int, now: float) -> Found:
        """Decide on sitemap ``url``, found at index ``depth`` (0: robots.txt or a seed) with ``granted``."""
        try:
            url = normalize(url)
            host = host_key(url)
        except URLError:
            return self._refuse(Found.BAD_URL)
        record = self._records.get(url)
        if record is not None:
            authorities = record.authorities.union(granted)
            if authorities != record.authorities or depth < record.depth:
                self._records[url] = SitemapRecord(url, min(depth, record.depth), authorities,
                                                   record.found_at)
            return self._refuse(Found.SEEN)
        if depth > self.limits.max_depth:
            return self._refuse(Found.TOO_DEEP)
        if self._per_host[host] >= self.limits.max_per_host:
            return self._refuse(Found.HOST_CAP)
        self._per_host[host] += 1
        self._records[url] = SitemapRecord(url, depth, frozenset(granted), now)
        return Found.NEW

    def _refuse(self, decision: Found) -> Found:
        self.refused[decision.value] += 1
        return decision

    def record(self, url: str) -> SitemapRecord | None:
        """What is known of ``url`` (normalised), or None if it was never found (or refused)."""
        return self._records.get(url)

    def authorities(self, url: str) -> frozenset[Authority]:
        """The authorities to parse ``url`` with (its own location's is added by the parse)."""
        record = self._records.get(url)
        return record.authorities if record is not None else frozenset()

    def per_host(self, host: str) -> int:
        """Sitemaps of ``host`` (a host key) accepted so far."""
        return self._per_host[host]

    def __len__(self) -> int:
        return len(self._records)
