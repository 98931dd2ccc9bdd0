"""What travels with a URL found through a sitemap: its hints, or a sitemap job's grant (pure).

A URL a sitemap lists goes to its host's owner like a link, and its
``lastmod``, ``priority`` and ``changefreq`` go with it to its page row; a
sitemap found at one peer (a robots.txt ``Sitemap:`` line, an index's
child) goes to the owner of *its* host with its index depth and the
authorities it was granted (cross-submission: a robots.txt of host A may
name a sitemap on host B that lists A's URLs; sitemaps.org, "Sitemaps &
Cross Submits"). Both ride in the URL field of a forwarded entry, as a tail
after the URL::

    <url>                                        a plain URL, as always
    <url> hints <lastmod> <priority> <changefreq>   "-" for a field absent
    <url> sitemap <depth> <prefix> ...           a sitemap job: depth, granted URL prefixes
    <url> requisite <level>                      a page requisite (peer.core.crawl.requisites)
    <url> retry                                  a failed page queued again (peer.core.crawl.failedpages)

Why a tail and not a field: the entry is ``(url, depth)`` in the Outbox, its
resends, its re-routing, the journal's forwarded records and their
recovery, and every one of those carries the string untouched; a third
field would have had to be threaded through each. A normalised URL holds
no space (``peer.core.urls.normalize`` percent-encodes one), so the first space ends
the URL, and ``host_key`` reads only the authority, so the ring places a
tailed entry by its URL's host. The wire's ``VERSION`` is 3 since entries
may carry tails: a peer of an older tree (which would take the tail for
part of the URL) refuses the frame instead. The requisite form came later
under the same version: a peer that does not know it reads it as malformed
(rule 1), drops that one entry and counts it (``sitemap.bad_entry``), so a
mixed ring loses a requisite, never a page. The retry form came later too:
such a peer drops the entry the same way, and the page stays failed in the
results, as it was.

Rules:

1. :func:`detach` never raises: a tail that is not exactly one of the two
   forms above, or whose values are out of range, is :data:`MALFORMED` and
   its entry is dropped and counted by the caller (remote input).
2. An entry stays within ``MAX_URL_LENGTH``, the longest string a URL field
   carries anywhere: hints that would not fit are left off (the URL goes
   plain), and a job keeps the grants that fit, at most :data:`MAX_GRANTS`
   (a robots.txt's host and an index's own directory are one or two in
   practice).
3. A grant travels as the URL prefix it covers, ``origin + prefix``
   (:class:`peer.core.sitemaps.document.Authority`): a robots.txt grants its whole
   host (``http://a.test/``), an index its children its own authorities,
   its directory among them (``http://a.test/dir/``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from peer.core.sitemaps.document import Authority, ChangeFreq, host_authority
from peer.core.urls.normalize import MAX_URL_LENGTH

__all__ = ["MALFORMED", "MAX_GRANTS", "RETRY", "Malformed", "Requisite", "Retry", "SitemapJob", "Tail", "UrlHints",
           "attach", "detach"]

#: Granted origins one job carries at most.
MAX_GRANTS = 8
#: Index levels a tail may say; the tracker's ``max_depth`` refuses far fewer.
_MAX_DEPTH = 64
_FREQS = {f.value: f for f in ChangeFreq}


@dataclass(frozen=True, slots=True)
class UrlHints:
    """A sitemap's hints about one URL, carried to its page row."""

    lastmod: float | None = None      # epoch seconds, UTC
    priority: float | None = None     # 0.0-1.0
    changefreq: ChangeFreq | None = None

    def __bool__(self) -> bool:
        return not (self.lastmod is None and self.priority is None and self.changefreq is None)


@dataclass(frozen=True, slots=True)
class SitemapJob:
    """A sitemap to fetch: its index depth (0: robots.txt or a seed) and the origins granted it."""

    depth: int
    granted: frozenset[Authority] = frozenset()


@dataclass(frozen=True, slots=True)
class Requisite:
    """A page requisite on its way to its host's owner: how many embeds from its page (1: the page's own)."""

    level: int


@dataclass(frozen=True, slots=True)
class Retry:
    """A failed page queued again by ``--retry-failed``, on its way to its host's owner, whose
    seen set may hold it: it is queued all the same (peer.core.crawl.failedpages rule 4)."""


#: The one value of :class:`Retry`.
RETRY = Retry()


class Malformed:
    """The tail of an entry that is neither form (rule 1)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MALFORMED"


MALFORMED = Malformed()
Tail = UrlHints | SitemapJob | Requisite | Retry | Malformed


def _num(v: float | None) -> str:
    return "-" if v is None else repr(float(v))


def attach(url: str, tail: UrlHints | SitemapJob | Requisite | Retry | None) -> str:
    """``url`` with ``tail`` after it, within ``MAX_URL_LENGTH`` (rule 2)."""
    if tail is None:
        return url
    if isinstance(tail, Retry):
        entry = f"{url} retry"
        return entry if len(entry) <= MAX_URL_LENGTH else url
    if isinstance(tail, Requisite):
        entry = f"{url} requisite {tail.level}"
        return entry if len(entry) <= MAX_URL_LENGTH else url
    if isinstance(tail, UrlHints):
        if not tail:
            return url
        freq = "-" if tail.changefreq is None else tail.changefreq.value
        entry = f"{url} hints {_num(tail.lastmod)} {_num(tail.priority)} {freq}"
        return entry if len(entry) <= MAX_URL_LENGTH else url
    entry = f"{url} sitemap {tail.depth}"
    for n, a in enumerate(sorted(tail.granted)):
        grant = a.origin + a.prefix
        if n == MAX_GRANTS or len(entry) + 1 + len(grant) > MAX_URL_LENGTH or " " in grant:
            break
        entry += " " + grant
    return entry


def _float(text: str, low: float = -math.inf, high: float = math.inf) -> float | None:
    if text == "-":
        return None
    value = float(text)  # ValueError: the caller's MALFORMED
    if not (math.isfinite(value) and low <= value <= high):
        raise ValueError(text)
    return value


def _grant(text: str) -> Authority:
    slash = text.find("/", text.find("//") + 2)
    if slash < 0:
        raise ValueError(text)
    a = host_authority(text)
    if a is None or a.origin != text[:slash]:
        raise ValueError(text)
    return Authority(a.origin, text[slash:])


def detach(entry: str) -> tuple[str, Tail | None]:
    """The URL of a forwarded entry and its tail (None: a plain URL); never raises (rule 1)."""
    url, space, rest = entry.partition(" ")
    if not space:
        return entry, None
    parts = rest.split(" ")
    try:
        if parts[0] == "hints" and len(parts) == 4:
            freq = None
            if parts[3] != "-":
                freq = _FREQS[parts[3]]
            return url, UrlHints(_float(parts[1]), _float(parts[2], 0.0, 1.0), freq)
        if parts[0] == "sitemap" and 2 <= len(parts) <= 2 + MAX_GRANTS:
            if not parts[1].isdigit() or int(parts[1]) > _MAX_DEPTH:
                return url, MALFORMED
            return url, SitemapJob(int(parts[1]), frozenset(map(_grant, parts[2:])))
        if parts == ["retry"]:
            return url, RETRY
        if parts[0] == "requisite" and len(parts) == 2 and parts[1].isdigit() and 1 <= int(parts[1]) <= _MAX_DEPTH:
            return url, Requisite(int(parts[1]))
    except (ValueError, KeyError):
        pass
    return url, MALFORMED

