"""The oracle: what a correct crawl of the site graph requests, and what it extracts.

:func:`expected_urls` walks the graph's canonical link targets breadth-first
exactly as a correct crawler would: GET, scope (host globs, depth),
robots.txt, ``rel=nofollow`` and meta nofollow, links followed from 200
``text/html`` answers only, each redirect target requested too. It never
renders HTML. Traps a correct crawler never requests (URLs in
``<script>``, HTML comments, ``<link>``/``<img>``, ``rel=nofollow``
targets, links of a meta-nofollow page and of 404 pages) are
:func:`trap_urls`; robots-disallowed links are :func:`disallowed_urls`.
With ``max_depth`` the set assumes a breadth-first crawler (a URL's depth is
its shortest link distance; a redirect target keeps the depth of its source).
:func:`shop_items` lists the fields an extractor gets from the book shop.

**Its own URL rules.** The oracle judges ``peer.core.urls.normalize`` and must not be
built on it, or a bug there would be agreed with. :func:`normalize` is a
small normaliser of its own: RFC 3986 §6.2.2 syntax-based normalisation
(case, percent-encoding of unreserved characters, dot segments) and §6.2.3
for http(s) (default port, empty path), fragment and userinfo dropped. It
covers the spellings this web writes and a crawler sends, not the whole of
RFC 3986 (no IDNA, no IPv6 literals). Scope is host globs
(:func:`fnmatch.fnmatchcase`, deny wins, an empty allow list allows
nothing), as ``crawl.allow_hosts`` is documented; then file extensions
(``skip_extensions``, on the last path segment, case-insensitive, as
``crawl.skip_extensions`` is documented; by default :data:`GRAPH_SKIPPED`,
the graph's file types that the crawler's default list holds) and
``exclude`` regexes searched in the URL (a crawl's ``exclude:re:`` rules).
"""

from __future__ import annotations

import fnmatch
import re
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

from localweb.sitegraph.endpoints import BAD_HOST
from localweb.sitegraph.graph import DEFAULT_ALLOW, N_NOFOLLOW, SHOP_HOST, TRAP_PATHS, Graph, split_url
from localweb.sitegraph.hrefs import port_suffix, raw_target

__all__ = ["GRAPH_SKIPPED", "disallowed_urls", "expected_urls", "in_scope", "normalize", "shop_items", "trap_urls"]

#: The graph's file types (``/files/doc<k>.pdf``, ``/img/pic<k>.png``) that a
#: crawl with the default ``crawl.skip_extensions`` never requests. Written
#: out, not imported: the oracle must not agree with the crawler by construction.
GRAPH_SKIPPED = ("pdf", "png")

_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*)://([^/?#]*)([^?#]*)(?:\?([^#]*))?")
_DEFAULT_PORT = {"http": "80", "https": "443"}
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


def _escape(m: re.Match[str]) -> str:
    c = chr(int(m[1], 16))
    return c if c in _UNRESERVED else f"%{m[1].upper()}"


def _remove_dots(path: str) -> str:
    """RFC 3986 §5.2.4 for an absolute path."""
    out: list[str] = []
    segments = path.split("/")[1:]
    for seg in segments:
        if seg == "..":
            if out:
                out.pop()
        elif seg != ".":
            out.append(seg)
    if segments and segments[-1] in (".", ".."):
        out.append("")
    return "/" + "/".join(out)


def normalize(url: str) -> str:
    """The normal form of an absolute http(s) URL; ValueError for anything else."""
    m = _URL.fullmatch(url.strip().partition("#")[0])
    if m is None:
        raise ValueError(f"not an absolute URL: {url!r}")
    scheme, authority, path, query = m[1].lower(), m[2], m[3], m[4]
    if scheme not in _DEFAULT_PORT:
        raise ValueError(f"not an http(s) URL: {url!r}")
    host, _, port = authority.rpartition("@")[2].partition(":")
    host = host.lower().rstrip(".")
    if not host:
        raise ValueError(f"no host: {url!r}")
    port = port.lstrip("0") or ("0" if port else "")
    authority = host if port in ("", _DEFAULT_PORT[scheme]) else f"{host}:{port}"
    path = _remove_dots(_ESCAPE.sub(_escape, path or "/"))
    query = _ESCAPE.sub(_escape, query) if query else ""
    return f"{scheme}://{authority}{path}" + (f"?{query}" if query else "")


def in_scope(host: str, allow: Sequence[str], deny: Sequence[str]) -> bool:
    """Is host name ``host`` matched by an ``allow`` glob and by no ``deny`` glob?"""
    host = host.lower()
    if any(fnmatch.fnmatchcase(host, p.lower()) for p in deny):
        return False
    return any(fnmatch.fnmatchcase(host, p.lower()) for p in allow)


def _skipped(url: str, extensions: frozenset[str], exclude: Sequence[re.Pattern[str]]) -> bool:
    last = url.partition("?")[0].rsplit("/", 1)[-1]
    if "." in last[1:] and last.rsplit(".", 1)[1].lower() in extensions:
        return True
    return any(r.search(url) for r in exclude)


def _walk(graph: Graph, port: int, seeds: Iterable[str] | None, allow: Sequence[str],
          deny: Sequence[str], max_depth: int, obey_robots: bool, nofollow: bool, bad: bool,
          skip_extensions: Sequence[str] = GRAPH_SKIPPED, exclude: Sequence[str] = (),
          ) -> tuple[set[str], set[str]]:
    """BFS over canonical targets: (requested, robots-disallowed)."""
    deny = tuple(deny) + (() if bad else (BAD_HOST,))
    extensions = frozenset(e.lower() for e in skip_extensions)
    excludes = [re.compile(r) for r in exclude]
    ps = port_suffix(port)
    seen: set[str] = set()
    disallowed: set[str] = set()
    queue: deque[tuple[str, int]] = deque()
    scoped: dict[str, bool] = {}  # links repeat their hosts: one glob match a host

    def consider(url: str, depth: int) -> None:
        if url in seen or (max_depth and depth > max_depth):
            return
        host, uport, path = split_url(url)
        ok = scoped.get(host)
        if ok is None:
            ok = scoped[host] = in_scope(host, allow, deny)
        if not ok or _skipped(url, extensions, excludes):
            return
        if obey_robots and uport == port and not graph.robots_allows(host, path):
            disallowed.add(url)
            return
        seen.add(url)
        queue.append((url, depth))

    for s in seeds if seeds is not None else graph.seeds(port):
        consider(normalize(s), 0)
    while queue:
        url, depth = queue.popleft()
        host, uport, pathq = split_url(url)
        if uport != port:
            continue
        path = pathq.partition("?")[0]
        location = graph.redirect_target(host, path)
        if location is not None:
            consider(f"http://{host}{ps}{location}", depth)
            continue
        layout = graph.structure(host, path)
        if layout is None:
            continue
        for lhost, lpath, form, rel, _ in layout.links:
            if form == "self":
                continue  # the page itself
            if nofollow and (layout.meta_nofollow or "nofollow" in rel.split()):
                continue
            target = raw_target(lpath, host, ps) if form == "raw" else f"http://{lhost}{ps}{lpath}"
            if target is not None:
                consider(target, depth + 1)
    return seen, disallowed


def expected_urls(graph: Graph, port: int, *, seeds: Iterable[str] | None = None,
                  allow: Sequence[str] = DEFAULT_ALLOW, deny: Sequence[str] = (),
                  max_depth: int = 0, obey_robots: bool = True, nofollow: bool = True,
                  bad: bool = False, skip_extensions: Sequence[str] = GRAPH_SKIPPED,
                  exclude: Sequence[str] = ()) -> set[str]:
    """The normalised URLs a correct crawler from ``seeds`` requests (GET).

    In scope (``allow``/``deny`` host globs, ``max_depth``; ``bad.web.test``
    only when ``bad``), not of a ``skip_extensions`` file type (by default
    the crawler's default: the graph's .pdf and .png files are left out;
    ``()`` for a crawler that fetches every file),
    matching no ``exclude`` regex, robots-allowed when ``obey_robots``,
    skipping nofollow links when ``nofollow``. 404s, files of other types and
    redirect sources are in (requested once, no outlinks); robots.txt is not.
    """
    return _walk(graph, port, seeds, allow, deny, max_depth, obey_robots, nofollow, bad,
                 skip_extensions, exclude)[0]


def disallowed_urls(graph: Graph, port: int, *, seeds: Iterable[str] | None = None,
                    allow: Sequence[str] = DEFAULT_ALLOW, deny: Sequence[str] = (),
                    max_depth: int = 0, nofollow: bool = True, bad: bool = False,
                    skip_extensions: Sequence[str] = GRAPH_SKIPPED, exclude: Sequence[str] = ()) -> set[str]:
    """URLs linked from crawled pages that robots.txt disallows (never to be fetched)."""
    return _walk(graph, port, seeds, allow, deny, max_depth, True, nofollow, bad,
                 skip_extensions, exclude)[1]


def trap_urls(graph: Graph, port: int) -> set[str]:
    """URLs the pages name that a correct default crawl never requests.

    Script strings, comments, ``<link>``/``<img>`` sources, 404-page links,
    ``rel=nofollow`` targets and the links of a meta-nofollow page.
    """
    ps = port_suffix(port)
    out: set[str] = set()
    for host in graph.site_hosts():
        out.update(f"http://{host}{ps}{p}" for p in TRAP_PATHS)
        out.update(f"http://{host}{ps}/trap/nf{k}.html" for k in range(N_NOFOLLOW))
    out.update(f"http://{SHOP_HOST}{ps}/img/{p.slug}.jpg" for p in graph.products)
    return out


def shop_items(graph: Graph, port: int) -> list[dict[str, Any]]:
    """The fields a correct extractor gets from each product page, sorted by URL."""
    ps = port_suffix(port)
    items = [{
        "url": f"http://{SHOP_HOST}{ps}/product/{p.slug}.html",
        "title": p.title,
        "price": p.price,
        "cover": f"http://{SHOP_HOST}{ps}/img/{p.slug}.jpg",
        "authors": [graph.authors[a] for a in p.authors],
        "blurb": p.blurb,
    } for p in graph.products]
    return sorted(items, key=lambda d: d["url"])
