"""Which of two copies is the original: one order every peer computes alike, whatever came first (pure).

When two pages are found to be copies (the same body digest, or SimHashes
within k bits), one is kept as the original and the other is marked a copy
of it, and a copy's links are not followed. "The first one fetched" is
the wrong original whenever the crawl meets a worse URL first: a site's
session-id views (``/p?sid=...``) linked before its plain pages made the
plain pages copies of the session views, and the crawl went on through
session URLs. So the original is the copy that comes first in this order,
each step breaking the ties of the one before:

1. **What the page's own canonical link says** (:class:`Says`). A page whose
   ``rel=canonical`` names itself comes first, then a page with none, then
   a page whose canonical names another URL. RFC 6596 (§1, §3) defines the
   canonical link as the author's "preferred version" of content served
   under several IRIs: a page that names another as preferred has said it is
   the copy, so a copy whose canonical names the other page always loses to
   it (it is ``OTHER``, the other at worst ``NONE``).
2. **A URL without session or tracking parameters** before one with them
   (:func:`has_session`, :data:`SESSION_PARAMS`): the same page under a
   session id is a view of one visitor's session, and the URL a reader
   would share is the one without it. Heritrix's canonicalisation rules
   strip session ids for the same reason; Manku, Jain and Das Sarma (WWW
   2007) keep one page of a near-duplicate cluster and say nothing of
   which, so this order is ours.
3. **The shorter path** (``/a/`` before ``/a/index.html``, ``/p`` before
   ``/print/p``): the shorter URL is the one a site links to as the page.
4. **The earlier fetch** (``seen_at``, wall time as the band queries carry it).
5. **The URL string**, so that two copies are never equal and the order is
   total: the original of a set of copies is the same on every peer, in any
   order of arrival (tests/core/test_precedence.py checks it by property).

The key of a copy (:func:`key`) uses only what every band owner and digest
table is told of it (its URL, what its canonical says, its fetch time), so
each computes the same order from the messages alone. The order decides
only between pages already found to be copies: a wrong guess that a
parameter is a session id costs which copy is kept, never a page.
"""

from __future__ import annotations

import enum
import fnmatch
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from peer.core.urls.rules import DEFAULT_STRIP_PARAMS

__all__ = ["Claim", "Demoted", "SESSION_PARAMS", "Says", "confirmed", "has_session", "key", "original",
           "says", "session_free", "session_names", "unsessioned"]


class Says(enum.IntEnum):
    """What a page's canonical link says of it (rule 1): smaller comes first."""

    SELF = 0  # its canonical names its own URL
    NONE = 1  # it has no canonical link
    OTHER = 2  # its canonical names another URL: by its author's word, a copy


#: Query parameter names (globs, case-insensitive) that mark a session or
#: tracking view of a page (rule 2): the crawl's default ``strip_params``
#: (tracking tags and platform session ids, removed from every URL before it
#: is seen unless a cluster.toml empties the list) and the session ids that
#: list leaves in because the same name elsewhere chooses content: ``sid``
#: (phpBB, and the session-id views of many sites), ``sessionid``,
#: ``session_id``, ``sessid``, ``session``, ``s_id``, osCommerce's ``oscsid``,
#: Zen Cart's ``zenid``, ``ps_session``. Here a wrong guess only changes which
#: of two copies is kept, so the list may be wider than ``strip_params``.
SESSION_PARAMS: tuple[str, ...] = DEFAULT_STRIP_PARAMS + (
    "sid", "sessionid", "session_id", "sessid", "session", "s_id", "oscsid", "zenid", "ps_session",
)

_SESSION = re.compile("|".join(fnmatch.translate(p) for p in SESSION_PARAMS), re.I).match


def _names(query: str) -> list[str]:
    return [part.split("=", 1)[0] for part in query.split("&") if part]


def session_names(url: str) -> frozenset[str]:
    """The session or tracking parameter names (lowercase) of ``url``'s query (rule 2)."""
    query = url.partition("#")[0].partition("?")[2]
    return frozenset(n.lower() for n in _names(query) if _SESSION(n))


def has_session(url: str) -> bool:
    """Does ``url``'s query carry a session or tracking parameter (:data:`SESSION_PARAMS`)?"""
    return bool(session_names(url))


def session_free(url: str, names: frozenset[str] | None = None) -> str | None:
    """``url`` without its session parameters (``names``, lowercase: else every one of
    :data:`SESSION_PARAMS`); None when it has none of them."""
    head, sep, query = url.partition("#")[0].partition("?")
    if not sep:
        return None
    kept = [p for p in query.split("&") if p and not (
        p.split("=", 1)[0].lower() in names if names is not None else _SESSION(p.split("=", 1)[0]))]
    if len(kept) == len([p for p in query.split("&") if p]):
        return None
    return head + ("?" + "&".join(kept) if kept else "")


def confirmed(url: str, canonical: str | None) -> frozenset[str]:
    """The session parameters ``url`` has and its canonical, on the same site, leaves out.

    The site's own word that they do not choose the content (RFC 6596 §3:
    the canonical is the preferred IRI of the same content), on a name the
    list already takes for a session id: ``/p?sid=9`` whose canonical is
    ``/p`` confirms ``sid``; a paginated ``/list?page=2`` whose canonical is
    ``/list`` confirms nothing (``page`` is not a session name), so a
    canonical misused for pagination never merges pages.
    """
    if canonical is None or canonical == url:
        return frozenset()
    try:
        a, b = urlsplit(url), urlsplit(canonical)
    except ValueError:
        return frozenset()
    if (a.scheme, a.netloc) != (b.scheme, b.netloc):
        return frozenset()
    return session_names(url) - session_names(canonical)


def unsessioned(page: str, canonical: str | None, links: tuple[str, ...]) -> tuple[str, ...]:
    """``links`` of ``page`` on its own site without the session parameters its canonical
    confirms (:func:`confirmed`), in order, each once; ``links`` itself when none is."""
    names = confirmed(page, canonical)
    if not names:
        return links
    site = page.split("/", 3)[:3]
    out: dict[str, None] = {}
    for link in links:
        if link.split("/", 3)[:3] == site:
            link = session_free(link, names) or link
        out[link] = None
    return tuple(out)


def says(url: str, canonical: str | None) -> Says:
    """What ``url``'s canonical link (normalised, or None) says of it (rule 1)."""
    if canonical is None:
        return Says.NONE
    return Says.SELF if canonical == url else Says.OTHER


#: A copy's place in the order: smaller is the original (module docstring).
Key = tuple[int, bool, int, float, str]


def key(url: str, said: Says | int, seen_at: float) -> Key:
    """The copy's key (rules 1-5): of two copies, the smaller key is the original."""
    try:
        path_len = len(urlsplit(url).path)
    except ValueError:  # a URL no split takes (remote input): last on rule 3
        path_len = len(url)
    s = int(said) if isinstance(said, int) and 0 <= int(said) <= 2 else int(Says.NONE)
    return (s, has_session(url), path_len, seen_at, url)


@dataclass(frozen=True, slots=True)
class Claim:
    """One copy as the order sees it."""

    url: str
    said: Says = Says.NONE
    seen_at: float = 0.0

    @property
    def key(self) -> Key:
        return key(self.url, self.said, self.seen_at)


def original(claims: list[Claim] | tuple[Claim, ...]) -> Claim:
    """The original of a set of copies: the first in the order, whatever their order here."""
    return min(claims, key=lambda c: c.key)


@dataclass(frozen=True, slots=True)
class Demoted:
    """An earlier original that a better copy now outranks: it is a copy of the better one.

    ``kind`` is ``"exact"`` or ``"near"`` (the ``duplicate_kind`` column),
    ``distance`` the SimHash distance (0 for exact).
    """

    url: str
    kind: str
    distance: int = 0
