#!/usr/bin/env python3
"""The local test web: a seeded multi-host site graph served over loopback.

ringcrawl's tests, demo and benchmark crawl this instead of the Internet. One
trio + h11 server on one loopback port answers for every host, dispatching on
the ``Host`` header (the crawler maps ``*.web.test`` to 127.0.0.1 with a
static DNS entry):

- ``s001.web.test`` ... ``sNNN.web.test``: the site graph. Each host has an
  index ``/``, section indexes ``/c<d>/``, content pages ``/c<d>/p<n>.html``,
  ``/about.html`` (``<meta name=robots content="noindex, nofollow">``),
  ``/private/...`` (robots-disallowed on some hosts, with an ``Allow:``
  exception), redirects ``/c<d>/old<n>.html`` -> ``p<n>.html``, files
  ``/files/doc<k>.pdf`` and ``/img/pic<k>.png``, and trap pages ``/trap/...``.
- ``shop.web.test``: a small book shop for the extraction rules (issue 5),
  linked from s001's index; :meth:`SiteGraph.shop_items` knows its fields.
- ``bad.web.test``: misbehaving endpoints (gzip bomb, oversized bodies, drip,
  redirect loop, malformed and Latin-1 HTML, TCP reset, huge header, any
  status). Linked only when ``SiteSpec.link_bad`` asks, so ordinary crawls
  are not slowed; tests request them directly.

**Determinism.** Everything derives from ``SiteSpec.seed``: a page's links
come from a ``random.Random`` keyed by (seed, host, route) and its text from
another one, so one page can be rendered, or its links listed, without the
rest of the graph. Same seed, same bytes.

**The expected set.** Each emitted link is a canonical target (host, path)
plus a *form* that spells it (relative, ``../``, absolute path, absolute URL,
protocol-relative, upper-case host, dot segments, percent-encoded, padded
with spaces, with a fragment, query-only, fragment-only) and a ``rel``.
:meth:`SiteGraph.expected_urls` walks the canonical targets breadth-first
exactly as a correct crawler would (GET, scope, robots.txt, ``rel=nofollow``
and meta nofollow, links followed from 200 ``text/html`` answers only, each
redirect target requested too) and never renders HTML; tests check that
``peer.urls.join(page, href)`` of every emitted href is its target, so the
graph and the URL module agree. Traps a correct crawler never requests:
URLs in ``<script>``, HTML comments, ``<link>``/``<img>``, ``rel=nofollow``
targets, links of a meta-nofollow page and of 404 pages
(:meth:`SiteGraph.trap_urls`); robots-disallowed links are
:meth:`SiteGraph.disallowed_urls`. With ``max_depth`` the set assumes a
breadth-first crawler (a URL's depth is its shortest link distance; a
redirect target keeps the depth of its source).

**The server** (:class:`WebFarm`, :func:`serve_webfarm`) speaks HTTP/1.1 with
keep-alive, GET and HEAD, per-host latency that may change over time and a
token-bucket rate limit answering 429 with ``Retry-After``
(:class:`HostBehaviour`). Every request is logged (:class:`LogEntry`) in
memory and, with ``log_path``, as JSON lines flushed per line. It binds
loopback addresses only.

CLI::

    python scripts/webfarm.py --port 8080 --hosts 20 --pages 300 --seed 1 \
        [--log requests.jsonl] [--latency [HOST=]T:S,T:S] [--rate-limit [HOST=]R[/B]]

prints ``listening on 127.0.0.1:PORT`` (flushed) and serves until SIGINT or
SIGTERM, then exits 0. ``--print-expected`` prints the expected URL set for
``--port`` and exits. A port it cannot bind or a log file it cannot open is
one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import bisect
import email.utils
import functools
import html
import ipaddress
import itertools
import json
import math
import signal
import socket
import struct
import sys
import time
import zlib
from collections import Counter, OrderedDict, deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from random import Random
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, unquote

import h11
import trio

from peer.errors import user_error
from peer.urls import Scope, URLError, hostname, normalize, normalize_link

__all__ = [
    "BAD_HOST",
    "FarmError",
    "HostBehaviour",
    "Link",
    "LogEntry",
    "SHOP_HOST",
    "SiteGraph",
    "SiteSpec",
    "WebFarm",
    "main",
    "read_log",
    "serve_webfarm",
]

DOMAIN = "web.test"
SHOP_HOST = f"shop.{DOMAIN}"
BAD_HOST = f"bad.{DOMAIN}"
DEFAULT_ALLOW = (f"*.{DOMAIN}",)

# ---------------------------------------------------------------------------
# The spec


@dataclass(frozen=True, slots=True)
class SiteSpec:
    """Everything that shapes the site graph. Same spec, same bytes."""

    seed: int = 1
    hosts: int = 20
    pages_per_host: int = 300
    page_kb: tuple[int, int] = (20, 40)  # size range of a site page, KiB
    links_per_page: int = 100  # <a>/<area> links on a content page, nav included
    section_size: int = 30  # content pages per /c<d>/ directory
    # Shares of the random links on a page (the rest go to same-host pages).
    cross_host_ratio: float = 0.10
    missing_ratio: float = 0.01  # to /c<d>/gone<k>.html: 404
    file_ratio: float = 0.01  # to a .pdf or .png
    nofollow_ratio: float = 0.01  # rel=nofollow to a trap page
    redirect_ratio: float = 0.01  # to /c<d>/old<n>.html (n = 3, 13, 23...): 301 to p<n>.html
    private_ratio: float = 0.01  # to /private/...
    nonhttp_ratio: float = 0.02  # mailto:, javascript:, tel:, off-site http(s)
    query_every: int = 10  # pages p<n> with n % query_every == 0 get ?query variants
    base_every: int = 25  # one content page in base_every carries <base href>
    private_every: int = 3  # hosts s001, s004, ... disallow /private/
    no_robots_every: int = 5  # hosts s005, s010, ... have no robots.txt (404)
    crawl_delay: tuple[tuple[str, float], ...] = ()  # (host, seconds) in robots.txt
    shop: bool = True
    shop_products: int = 40
    link_bad: bool = False  # link bad.web.test's endpoints from s001's index

    def __post_init__(self) -> None:
        if isinstance(self.crawl_delay, Mapping):
            object.__setattr__(self, "crawl_delay", tuple(sorted(self.crawl_delay.items())))
        lo, hi = self.page_kb
        if not 1 <= self.hosts <= 999:
            raise ValueError(f"hosts must be 1..999, not {self.hosts}")
        if self.pages_per_host < 1 or self.section_size < 1:
            raise ValueError("pages_per_host and section_size must be >= 1")
        if not 4 <= lo <= hi or hi - lo < 2:
            raise ValueError(f"page_kb must be (lo, hi), 4 <= lo, hi >= lo + 2; not {self.page_kb}")
        if self.links_per_page < 0 or self.shop_products < 1:
            raise ValueError("links_per_page must be >= 0 and shop_products >= 1")
        ratios = (self.cross_host_ratio, self.missing_ratio, self.file_ratio, self.nofollow_ratio,
                  self.redirect_ratio, self.private_ratio, self.nonhttp_ratio)
        if min(ratios) < 0 or sum(ratios) >= 1:
            raise ValueError("link ratios must be >= 0 and sum to less than 1")


@dataclass(frozen=True, slots=True)
class Link:
    """One ``<a href>``/``<area href>`` of a page, as a parser sees it.

    ``href`` is the attribute value after entity decoding; ``target`` is the
    normalised URL it names (``None`` for mailto:, javascript:, ...);
    ``follow`` is False for ``rel=nofollow`` and on a meta-nofollow page.
    """

    href: str
    target: str | None
    form: str
    rel: str
    tag: str
    follow: bool


# ---------------------------------------------------------------------------
# Text: a seeded pool of blocks, so a page is assembled by picking indices
# instead of drawing thousands of words (which would cost milliseconds).

_WORDS = (
    "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut "
    "labore et dolore magna aliqua enim ad minim veniam quis nostrud exercitation ullamco laboris "
    "nisi aliquip ex ea commodo consequat duis aute irure in reprehenderit voluptate velit esse "
    "cillum fugiat nulla pariatur excepteur sint occaecat cupidatat non proident sunt culpa qui "
    "officia deserunt mollit anim id est laborum harbour garden river window market lantern "
    "orchard meadow copper violet thunder whisper crystal ember quarry signal bridge tower canal "
    "station library archive ledger compass anchor beacon harvest winter summer autumn spring"
).split()
_RARE_WORDS = ("café", "naïve", "façade", "crème", "über", "jalapeño", "smørrebrød", "déjà vu")
_BLOCK_MAX = 1200  # bytes; pages are padded to a target with blocks, so this bounds overshoot


def _sentence(rng: Random, lo: int = 6, hi: int = 16) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(lo, hi))]
    r = rng.random()
    if r < 0.15:
        words[rng.randrange(len(words))] = rng.choice(_RARE_WORDS)
    elif r < 0.25:
        i = rng.randrange(len(words))
        words[i] = f"<em>{words[i]}</em>"
    elif r < 0.32:
        words.insert(rng.randrange(1, len(words)), "&amp;")
    elif r < 0.36:
        words.insert(rng.randrange(1, len(words)), "&lt;tag&gt;")
    s = " ".join(words)
    return s[0].upper() + s[1:] + rng.choice(".....?!;")


def _block(rng: Random) -> str:
    r = rng.random()
    if r < 0.70:
        text = " ".join(_sentence(rng) for _ in range(rng.randint(3, 8)))
        return f"<p>{text}</p>\n"
    if r < 0.85:
        items = "".join(f"<li>{_sentence(rng, 3, 8)}</li>" for _ in range(rng.randint(3, 7)))
        return f"<ul>{items}</ul>\n"
    if r < 0.95:
        rows = "".join(
            f"<tr><td>{rng.choice(_WORDS)}</td><td>{rng.randint(1, 9999)}</td>"
            f"<td>{rng.random():.3f}</td></tr>"
            for _ in range(rng.randint(3, 8))
        )
        return f'<table class="data"><tr><th>name</th><th>count</th><th>ratio</th></tr>{rows}</table>\n'
    return f"<h2>{_sentence(rng, 2, 5)[:-1]}</h2>\n<p>{_sentence(rng)} {_sentence(rng)}</p>\n"


def _text_pool(seed: int, n: int = 512) -> tuple[list[str], list[int]]:
    rng = Random(seed * 7919 + 17)
    blocks: list[str] = []
    while len(blocks) < n:
        b = _block(rng)
        if len(b.encode()) <= _BLOCK_MAX:
            blocks.append(b)
    return blocks, [len(b.encode()) for b in blocks]


def _phrases(seed: int, n: int = 256) -> list[str]:
    rng = Random(seed * 104729 + 3)
    ascii_words = [w for w in _WORDS if w.isascii()]
    return [" ".join(rng.choice(ascii_words) for _ in range(rng.randint(2, 4))).title() for _ in range(n)]


# ---------------------------------------------------------------------------
# Routes and link forms

# Route kinds of the site hosts.
INDEX, SECTION, PAGE, ABOUT, PRIVATE, TRAP, REDIRECT, FILE, STATIC = range(9)
# Route kinds of the shop.
SHOP_INDEX, CATEGORY, PRODUCT, AUTHOR, CART, COVER = range(20, 26)

_HTML_KINDS = frozenset({INDEX, SECTION, PAGE, ABOUT, PRIVATE, TRAP,
                         SHOP_INDEX, CATEGORY, PRODUCT, AUTHOR, CART})
_N_FILES = 5
_N_PRIVATE = 5
_N_NOFOLLOW = 3
_N_GONE = 2
_NAV_SECTIONS = 8
_QUERIES = ("?a=1&b=2", "?sort=desc&page=2")
_TRAP_PATHS = ("/trap/script.html", "/trap/docwrite.html", "/trap/comment.html",
               "/trap/from-404.html", "/trap/meta.html", "/static/site.css", "/img/inline.png")
_RAW_HREFS = ("mailto:webmaster@{host}", "javascript:void(0)", "tel:+44-20-7946-0958",
              "https://www.example.org/", "http://example.com/page?x=1&y=2",
              "ftp://files.example.net/pub/", "HTTPS://WWW.EXAMPLE.ORG/About",
              "http://web.test{ps}/", "data:text/plain,hello")

# Same-host forms, weighted (a table indexed by int(random() * len)).
_SAME_FORMS = tuple(
    itertools.chain.from_iterable(
        [form] * weight
        for form, weight in (("rel", 30), ("abs_path", 20), ("abs_url", 10), ("proto", 5),
                             ("upper", 3), ("dot", 3), ("dotdot", 3), ("pct", 3),
                             ("space", 3), ("frag", 8))
    )
)
_CROSS_FORMS = ("abs_url", "abs_url", "proto", "upper")
#: Every form an emitted href can take.
FORMS = frozenset(_SAME_FORMS) | {"self", "qonly", "raw"}

# A structural link: (host, path, form, rel, tag). Form "raw": path is an href
# template ({host}: the page's host, {ps}: its port suffix); form "self": path
# unused, the target is the page's own URL.
_L = tuple[str, str, str, str, str]


class _Struct(NamedTuple):
    links: list[_L]
    nav_end: int  # links[:nav_end] are the header nav
    area_start: int  # links[area_start:footer_start] are <area>s
    footer_start: int
    here: str  # directory relative hrefs resolve against (the <base> if any)
    base: str | None  # the <base href> path, if any
    meta_nofollow: bool
    key: int


def _port_suffix(port: int) -> str:
    return "" if port == 80 else f":{port}"


def _relative(here: str, path: str) -> str:
    # All directories are depth 0 or 1 ("/", "/c3/"), so one "../" reaches any path.
    if path.startswith(here):
        rest = path[len(here):]
        return rest if rest and rest[0] != "?" else "./" + rest
    return "../" + path[1:]


def _href(link: _L, here: str, ps: str) -> str:
    host, path, form, _, _ = link
    if form == "rel":
        return _relative(here, path)
    if form == "abs_path":
        return path
    if form == "abs_url":
        return f"http://{host}{ps}{path}"
    if form == "frag":
        return f"{_relative(here, path)}#s{len(path) % 7}"
    if form == "proto":
        return f"//{host}{ps}{path}"
    if form == "raw":
        return path.replace("{host}", host).replace("{ps}", ps) if "{" in path else path
    if form == "upper":
        return f"HTTP://{host.upper()}{ps}{path}"
    if form == "dot":
        return "./" + _relative(here, path)
    if form == "dotdot":
        return "/x/.." + path
    if form == "pct":
        c = path[1:2]
        return f"/%{ord(c):02x}{path[2:]}" if c.isalnum() else path
    if form == "space":
        return f"  {_relative(here, path)} "
    if form == "self":
        return "#top"
    if form == "qonly":
        return path[path.index("?"):]
    raise AssertionError(form)


def _attr(s: str) -> str:
    return s.replace("&", "&amp;").replace('"', "&quot;") if ("&" in s or '"' in s) else s


def _text(s: str) -> str:
    return html.escape(s, quote=False)


# ---------------------------------------------------------------------------
# The shop


class _Product(NamedTuple):
    slug: str
    title: str
    price: str
    authors: tuple[int, ...]
    blurb: str
    category: int


_CATEGORIES = ("Fiction", "History", "Science", "Poetry", "Travel & Food")
_FIRST = ("Ada", "Bram", "Clara", "Dev", "Elif", "Finn", "Grace", "Hugo", "Iris", "Jonah",
          "Kaito", "Lena", "Mei", "Nico", "Orla", "Priya")
_LAST = ("O'Brien", "Okafor", "Lindqvist", "Moreau", "Tanaka", "Castillo", "Novak", "Reyes",
         "Sato", "Whitfield", "Achebe", "Brennan")
_TITLE_WORDS = ("salt", "stone", "river", "glass", "winter", "garden", "ember", "silver",
                "harbour", "lantern", "orchard", "thunder", "compass", "atlas", "midnight",
                "paper", "tide", "hollow", "crown", "sparrow", "iron", "velvet", "quiet", "north")


def _slug(s: str) -> str:
    s = s.lower().replace("&", "and").replace("'", "")
    return "-".join("".join(c if c.isalnum() else " " for c in s).split())


def _make_shop(seed: int, n: int) -> tuple[list[_Product], list[str]]:
    rng = Random(seed * 31337 + 5)
    names: list[str] = []
    while len(names) < 12:
        name = f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"
        if name not in names:
            names.append(name)
    products: list[_Product] = []
    slugs: set[str] = set()
    while len(products) < n:
        words = [rng.choice(_TITLE_WORDS).title() for _ in range(rng.randint(2, 4))]
        if rng.random() < 0.2:
            words.insert(rng.randint(1, len(words) - 1), "&")
        title = ("The " if rng.random() < 0.3 else "") + " ".join(words)
        slug = _slug(title)
        if slug in slugs:
            continue
        slugs.add(slug)
        authors = tuple(rng.sample(range(len(names)), rng.choice((1, 1, 1, 2, 2, 3))))
        price = f"£{rng.randint(3, 39)}.{rng.choice(('00', '49', '95', '99'))}"
        blurb = f"{_plain_sentence(rng)} {_plain_sentence(rng)}"
        products.append(_Product(slug, title, price, authors, blurb, len(products) % len(_CATEGORIES)))
    return products, names


def _plain_sentence(rng: Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(6, 14))]
    if rng.random() < 0.3:
        words[rng.randrange(len(words))] = rng.choice(_RARE_WORDS)
    s = " ".join(words)
    return s[0].upper() + s[1:] + "."


# ---------------------------------------------------------------------------
# The site graph


class _Page(NamedTuple):
    status: int
    content_type: str
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()


class SiteGraph:
    """The seeded site graph: routes, links, robots rules, pages and expected sets.

    ``SiteGraph(seed=1, hosts=20, pages_per_host=300)`` or ``SiteGraph(spec)``.
    Port-independent until a method takes ``port`` (absolute links carry it).
    """

    def __init__(self, spec: SiteSpec | None = None, **overrides: Any) -> None:
        if spec is None:
            spec = SiteSpec(**overrides)
        elif overrides:
            raise TypeError("pass a SiteSpec or keyword overrides, not both")
        self.spec = spec
        s = spec
        self._names = [f"s{i:03d}.{DOMAIN}" for i in range(1, s.hosts + 1)]
        self._index = {name: i for i, name in enumerate(self._names)}
        self._nsec = -(-s.pages_per_host // s.section_size)
        self._page_paths = [""] + [
            f"/c{(n - 1) // s.section_size}/p{n}.html" for n in range(1, s.pages_per_host + 1)
        ]
        self._section_paths = [f"/c{d}/" for d in range(self._nsec)]
        self._routes = self._site_routes()
        self._blocks, self._block_bytes = _text_pool(s.seed)
        self._blocks2 = self._blocks * 2
        self._cum_bytes = list(itertools.accumulate(self._block_bytes * 2, initial=0))
        self._phrases = _phrases(s.seed)
        self._products, self._authors = _make_shop(s.seed, s.shop_products) if s.shop else ([], [])
        self._shop_routes = self._make_shop_routes()
        self._delay = dict(s.crawl_delay)
        unknown = set(self._delay) - set(self.hosts())
        if unknown:
            raise ValueError(f"crawl_delay names unknown hosts: {sorted(unknown)}")
        self._rules = {h: self._robots_rules(h) for h in self.hosts()}
        lo, hi = s.page_kb
        self._size_lo = lo * 1024 + 512
        self._size_span = max(0, (hi - lo) * 1024 - 512 - _BLOCK_MAX - 512)

    # -- naming ---------------------------------------------------------------

    def hosts(self, special: bool = True) -> list[str]:
        """Host names served: ``sNNN`` first, then the shop and bad hosts."""
        extra = ([SHOP_HOST] if self.spec.shop else []) + [BAD_HOST]
        return self._names + extra if special else list(self._names)

    def site_hosts(self) -> list[str]:
        """The ``sNNN.web.test`` hosts of the graph."""
        return list(self._names)

    @staticmethod
    def host_of(url: str) -> str:
        """The host name of a URL (no port)."""
        return hostname(normalize(url).split("/", 3)[2])

    def seeds(self, port: int) -> list[str]:
        """The crawl seeds: s001's index."""
        return [f"http://{self._names[0]}{_port_suffix(port)}/"]

    def page_count(self, host: str | None = None) -> int:
        """HTML pages served with 200 (all hosts, or one), traps included."""
        if host is None:
            return sum(self.page_count(h) for h in self.hosts())
        if host in self._index:
            return sum(1 for kind, _, _ in self._routes.values() if kind in _HTML_KINDS)
        if host == SHOP_HOST and self.spec.shop:
            return sum(1 for kind, _, _ in self._shop_routes.values()
                       if kind in _HTML_KINDS and kind != CART)
        return 0

    def _site_routes(self) -> dict[str, tuple[int, Any, int]]:
        """path -> (kind, arg, route id); one table serves every sNNN host."""
        s = self.spec
        routes: dict[str, tuple[int, Any]] = {"/": (INDEX, None), "/about.html": (ABOUT, None)}
        for d, p in enumerate(self._section_paths):
            routes[p] = (SECTION, d)
        for n in range(1, s.pages_per_host + 1):
            routes[self._page_paths[n]] = (PAGE, n)
        for n in range(1, s.pages_per_host + 1):
            routes[self._page_paths[n].replace("/p", "/old")] = (REDIRECT, n)
        for k in range(_N_PRIVATE):
            routes[f"/private/p{k}.html"] = (PRIVATE, k)
        routes["/private/open.html"] = (PRIVATE, _N_PRIVATE)
        for k in range(_N_NOFOLLOW):
            routes[f"/trap/nf{k}.html"] = (TRAP, k)
        for p in _TRAP_PATHS:
            routes[p] = (STATIC, p) if not p.endswith(".html") else (TRAP, p)
        for k in range(_N_FILES):
            routes[f"/files/doc{k}.pdf"] = (FILE, "application/pdf")
            routes[f"/img/pic{k}.png"] = (FILE, "image/png")
        return {p: (kind, arg, rid) for rid, (p, (kind, arg)) in enumerate(routes.items())}

    def _make_shop_routes(self) -> dict[str, tuple[int, Any, int]]:
        routes: dict[str, tuple[int, Any]] = {"/": (SHOP_INDEX, None)}
        for i, c in enumerate(_CATEGORIES):
            routes[f"/category/{_slug(c)}.html"] = (CATEGORY, i)
        for i, p in enumerate(self._products):
            routes[f"/product/{p.slug}.html"] = (PRODUCT, i)
            routes[f"/img/{p.slug}.jpg"] = (COVER, i)
        for i, a in enumerate(self._authors):
            routes[f"/author/{_slug(a)}.html"] = (AUTHOR, i)
        routes["/cart/add"] = (CART, None)
        return {p: (kind, arg, rid) for rid, (p, (kind, arg)) in enumerate(routes.items())}

    # -- robots.txt -----------------------------------------------------------

    def _robots_rules(self, host: str) -> list[tuple[bool, str]] | None:
        """(allow, prefix) rules of the ``*`` group; None: robots.txt is 404."""
        if host == SHOP_HOST:
            return [(False, "/cart/")]
        if host == BAD_HOST:
            return None
        i = self._index[host]
        no_robots, private = self.spec.no_robots_every, self.spec.private_every
        if no_robots and (i + 1) % no_robots == 0:
            return None
        if private and i % private == 0:
            return [(False, "/private/"), (True, "/private/open.html")]
        return []

    def robots_txt(self, host: str) -> str | None:
        """The robots.txt text of a host, or None when it answers 404."""
        rules = self._rules.get(host)
        if rules is None:
            return None
        lines = [f"# robots.txt for {host}", "User-agent: badbot", "Disallow: /", "",
                 "User-agent: *"]
        lines += [f"{'Allow' if allow else 'Disallow'}: {prefix}" for allow, prefix in rules]
        if not rules:
            lines.append("Disallow:")
        if host in self._delay:
            lines.append(f"Crawl-delay: {self._delay[host]:g}")
        return "\n".join(lines) + "\n"

    def robots_allows(self, host: str, path: str) -> bool:
        """RFC 9309 §2.2.2 for the ``*`` group: the longest matching rule wins, Allow on ties."""
        rules = self._rules.get(host)
        if not rules:
            return True
        best, verdict = -1, True
        for allow, prefix in rules:
            if path.startswith(prefix) and (len(prefix) > best or (len(prefix) == best and allow)):
                best, verdict = len(prefix), allow
        return verdict

    # -- link structure -------------------------------------------------------

    def _key(self, hidx: int, rid: int) -> int:
        return ((self.spec.seed & 0xFFFFFFFF) << 32) ^ (hidx << 20) ^ rid

    def _structure(self, host: str, path: str) -> _Struct | None:
        """The links of an HTML page at ``path`` (query removed), or None."""
        if host in self._index:
            route = self._routes.get(path)
            if route is None or route[0] not in _HTML_KINDS:
                return None
            return self._site_structure(self._index[host], path, route)
        if host == SHOP_HOST and self.spec.shop:
            route = self._shop_routes.get(path)
            if route is None or route[0] not in _HTML_KINDS:
                return None
            return self._shop_structure(path, route)
        return None

    def _site_structure(self, hidx: int, path: str, route: tuple[int, Any, int]) -> _Struct:
        s = self.spec
        kind, arg, rid = route
        key = self._key(hidx, rid)
        host = self._names[hidx]
        here = path[: path.rfind("/") + 1]
        if kind == TRAP:
            links: list[_L] = [(host, "/", "abs_path", "", "a")]
            return _Struct(links, 1, 1, 1, here, None, False, key)
        rng = Random(key)
        rnd = rng.random
        links = [(host, "/", "abs_path", "", "a"), (host, "/about.html", "abs_path", "", "a")]
        add = links.append
        for d in range(min(self._nsec, _NAV_SECTIONS)):
            add((host, self._section_paths[d], "rel", "", "a"))
        nav_end = len(links)
        base = None
        meta_nofollow = False
        n_random = s.links_per_page
        if kind == INDEX:
            for p in self._section_paths:
                add((host, p, "rel", "", "a"))
            nxt = self._names[(hidx + 1) % s.hosts]
            add((nxt, "/", "abs_url", "", "a"))
            if hidx == 0:
                if s.shop:
                    add((SHOP_HOST, "/", "abs_url", "", "a"))
                if s.link_bad:
                    for p in BAD_LINKED:
                        add((BAD_HOST, p, "abs_url", "", "a"))
        elif kind == SECTION:
            first = arg * s.section_size + 1
            for n in range(first, min(first + s.section_size, s.pages_per_host + 1)):
                add((host, self._page_paths[n], "rel", "", "a"))
            add((host, "/", "rel", "", "a"))
        elif kind == ABOUT:
            meta_nofollow = True
            add((host, "/trap/meta.html", "rel", "", "a"))
            n_random = 0
        elif kind == PRIVATE:
            n_random //= 2
        elif kind == PAGE and s.base_every and arg % s.base_every == s.base_every // 2:
            d = ((arg - 1) // s.section_size + 1) % self._nsec
            base = here = self._section_paths[d]
            # Same-directory links that resolve elsewhere without the <base>.
            first = d * s.section_size + 1
            last = min(first + s.section_size, s.pages_per_host + 1) - 1
            for _ in range(3):
                add((host, self._page_paths[rng.randint(first, last)], "rel", "", "a"))
        n_random = max(0, n_random - len(links) - 6)
        self._random_links(rng, rnd, hidx, host, n_random, add)
        if kind == PAGE and base is None and s.query_every and arg % s.query_every == 0:
            add((host, self._page_paths[arg] + _QUERIES[0], "qonly", "", "a"))
        if len(links) > nav_end:
            add(links[nav_end])  # a duplicate, spelt the same
        area_start = len(links)
        if kind == PAGE:
            for _ in range(2):
                n = int(rnd() * s.pages_per_host) + 1
                add((host, self._page_paths[n], "rel" if rnd() < 0.5 else "abs_path", "", "area"))
        footer_start = len(links)
        if base is None:
            add((host, "", "self", "", "a"))
        add((host, _RAW_HREFS[0], "raw", "", "a"))
        add((host, _RAW_HREFS[1], "raw", "", "a"))
        return _Struct(links, nav_end, area_start, footer_start, here, base, meta_nofollow, key)

    def _random_links(self, rng: Random, rnd: Callable[[], float], hidx: int, host: str,
                      count: int, add: Callable[[_L], None]) -> None:
        s = self.spec
        P = s.pages_per_host
        pages = self._page_paths
        c_cross = s.cross_host_ratio if s.hosts > 1 else 0.0
        c_missing = c_cross + s.missing_ratio
        c_file = c_missing + s.file_ratio
        c_nofollow = c_file + s.nofollow_ratio
        c_redirect = c_nofollow + s.redirect_ratio
        c_private = c_redirect + s.private_ratio
        c_raw = c_private + s.nonhttp_ratio
        nforms = len(_SAME_FORMS)
        qe = s.query_every
        for _ in range(count):
            r = rnd()
            if r >= c_raw:
                n = int(rnd() * P) + 1
                path = pages[n]
                if qe and n % qe == 0 and rnd() < 0.5:
                    path += _QUERIES[int(rnd() * 2)]
                add((host, path, _SAME_FORMS[int(rnd() * nforms)], "", "a"))
            elif r < c_cross:
                j = int(rnd() * (s.hosts - 1))
                j += j >= hidx
                path = "/" if rnd() < 0.2 else pages[int(rnd() * P) + 1]
                add((self._names[j], path, _CROSS_FORMS[int(rnd() * 4)], "", "a"))
            elif r < c_missing:
                d = int(rnd() * self._nsec)
                add((host, f"/c{d}/gone{int(rnd() * _N_GONE)}.html", "rel", "", "a"))
            elif r < c_file:
                k = int(rnd() * _N_FILES)
                path = f"/files/doc{k}.pdf" if rnd() < 0.5 else f"/img/pic{k}.png"
                add((host, path, "abs_path" if rnd() < 0.5 else "rel", "", "a"))
            elif r < c_nofollow:
                rel = ("nofollow", "external nofollow", "nofollow noopener")[int(rnd() * 3)]
                add((host, f"/trap/nf{int(rnd() * _N_NOFOLLOW)}.html", "abs_path", rel, "a"))
            elif r < c_redirect:
                # Redirects point at p3, p13, p23...: a few per host, not one per page.
                n = min(P, 10 * int(rnd() * ((P + 6) // 10)) + 3)
                add((host, pages[n].replace("/p", "/old"), "abs_path", "", "a"))
            elif r < c_private:
                k = int(rnd() * (_N_PRIVATE + 1))
                path = "/private/open.html" if k == _N_PRIVATE else f"/private/p{k}.html"
                add((host, path, "abs_path" if rnd() < 0.5 else "rel", "", "a"))
            else:
                add((host, _RAW_HREFS[int(rnd() * len(_RAW_HREFS))], "raw", "", "a"))

    def _shop_structure(self, path: str, route: tuple[int, Any, int]) -> _Struct:
        kind, arg, rid = route
        key = self._key(1000, rid)
        here = path[: path.rfind("/") + 1]
        H = SHOP_HOST
        links: list[_L] = [(H, "/", "abs_path", "", "a")]
        links += [(H, f"/category/{_slug(c)}.html", "abs_path", "", "a") for c in _CATEGORIES]
        nav_end = len(links)
        add = links.append
        prods = self._products
        if kind == SHOP_INDEX:
            for c in _CATEGORIES:
                add((H, f"/category/{_slug(c)}.html", "rel", "", "a"))
            for p in prods[:6]:
                add((H, f"/product/{p.slug}.html", "rel", "", "a"))
            add((self._names[0], "/", "abs_url", "", "a"))
        elif kind == CATEGORY:
            for p in prods:
                if p.category == arg:
                    add((H, f"/product/{p.slug}.html", "rel", "", "a"))
        elif kind == PRODUCT:
            p = prods[arg]
            for a in p.authors:
                add((H, f"/author/{_slug(self._authors[a])}.html", "rel", "", "a"))
            add((H, f"/cart/add?id={p.slug}&qty=1", "abs_path", "", "a"))
            for k in (1, 2):
                q = prods[(arg + k * 7) % len(prods)]
                add((H, f"/product/{q.slug}.html", "rel", "", "a"))
        elif kind == AUTHOR:
            for p in prods:
                if arg in p.authors:
                    add((H, f"/product/{p.slug}.html", "rel", "", "a"))
        end = len(links)
        return _Struct(links, nav_end, end, end, here, None, False, key)

    def links(self, url: str) -> list[Link]:
        """The links of the HTML page at ``url``, in document order, as served."""
        url = normalize(url)
        host, port, path = _split_url(url)
        st = self._structure(host, path.partition("?")[0])
        if st is None:
            return []
        ps = _port_suffix(port)
        out = []
        for link in st.links:
            href = _href(link, st.here, ps)
            lhost, lpath, form, rel, tag = link
            if form == "self":
                target: str | None = url
            elif form == "raw":
                target = normalize_link(url, href)
            else:
                target = f"http://{lhost}{ps}{lpath}"
            follow = not st.meta_nofollow and "nofollow" not in rel.split()
            out.append(Link(href, target, form, rel, tag, follow))
        return out

    # -- expected sets ----------------------------------------------------------

    def _walk(self, port: int, seeds: Iterable[str] | None, allow: Sequence[str], deny: Sequence[str],
              max_depth: int, obey_robots: bool, nofollow: bool, bad: bool
              ) -> tuple[set[str], set[str]]:
        """BFS over canonical targets: (requested, robots-disallowed)."""
        scope = Scope(tuple(allow), tuple(deny) + (() if bad else (BAD_HOST,)), max_depth)
        ps = _port_suffix(port)
        seen: set[str] = set()
        disallowed: set[str] = set()
        queue: deque[tuple[str, int]] = deque()

        def consider(url: str, depth: int) -> None:
            if url in seen or not scope.allows(url, depth):
                return
            host, uport, path = _split_url(url)
            if obey_robots and uport == port and not self.robots_allows(host, path):
                disallowed.add(url)
                return
            seen.add(url)
            queue.append((url, depth))

        for s in seeds if seeds is not None else self.seeds(port):
            consider(normalize(s), 0)
        while queue:
            url, depth = queue.popleft()
            host, uport, pathq = _split_url(url)
            if uport != port:
                continue
            path = pathq.partition("?")[0]
            location = self._redirect_target(host, path)
            if location is not None:
                consider(f"http://{host}{ps}{location}", depth)
                continue
            st = self._structure(host, path)
            if st is None:
                continue
            for lhost, lpath, form, rel, _ in st.links:
                if form == "self":
                    continue  # the page itself
                if form == "raw":
                    target = normalize_link(url, _href((lhost, lpath, form, rel, ""), st.here, ps))
                    if target is None:
                        continue
                else:
                    target = f"http://{lhost}{ps}{lpath}"
                if nofollow and (st.meta_nofollow or "nofollow" in rel.split()):
                    continue
                consider(target, depth + 1)
        return seen, disallowed

    def expected_urls(self, port: int, *, seeds: Iterable[str] | None = None,
                      allow: Sequence[str] = DEFAULT_ALLOW, deny: Sequence[str] = (),
                      max_depth: int = 0, obey_robots: bool = True, nofollow: bool = True,
                      bad: bool = False) -> set[str]:
        """The normalised URLs a correct crawler from ``seeds`` requests (GET).

        In scope (``allow``/``deny`` host globs, ``max_depth``; ``bad.web.test``
        only when ``bad``), robots-allowed when ``obey_robots``, skipping
        nofollow links when ``nofollow``. 404s, files and redirect sources are
        in (requested once, no outlinks); robots.txt is not.
        """
        return self._walk(port, seeds, allow, deny, max_depth, obey_robots, nofollow, bad)[0]

    def disallowed_urls(self, port: int, *, seeds: Iterable[str] | None = None,
                        allow: Sequence[str] = DEFAULT_ALLOW, deny: Sequence[str] = (),
                        max_depth: int = 0, nofollow: bool = True, bad: bool = False) -> set[str]:
        """URLs linked from crawled pages that robots.txt disallows (never to be fetched)."""
        return self._walk(port, seeds, allow, deny, max_depth, True, nofollow, bad)[1]

    def trap_urls(self, port: int) -> set[str]:
        """URLs the pages name that a correct default crawl never requests.

        Script strings, comments, ``<link>``/``<img>`` sources, 404-page links,
        ``rel=nofollow`` targets and the links of a meta-nofollow page.
        """
        ps = _port_suffix(port)
        out = set()
        for host in self._names:
            out.update(f"http://{host}{ps}{p}" for p in _TRAP_PATHS)
            out.update(f"http://{host}{ps}/trap/nf{k}.html" for k in range(_N_NOFOLLOW))
        out.update(f"http://{SHOP_HOST}{ps}/img/{p.slug}.jpg" for p in self._products)
        return out

    def _redirect_target(self, host: str, path: str) -> str | None:
        if host in self._index:
            route = self._routes.get(path)
            if route is not None and route[0] == REDIRECT:
                return self._page_paths[route[1]]
        elif host == BAD_HOST:
            return _bad_redirect(path)
        return None

    # -- shop -------------------------------------------------------------------

    def shop_items(self, port: int) -> list[dict[str, Any]]:
        """The fields a correct extractor gets from each product page, by URL."""
        ps = _port_suffix(port)
        items = []
        for p in self._products:
            items.append({
                "url": f"http://{SHOP_HOST}{ps}/product/{p.slug}.html",
                "title": p.title,
                "price": p.price,
                "cover": f"http://{SHOP_HOST}{ps}/img/{p.slug}.jpg",
                "authors": [self._authors[a] for a in p.authors],
                "blurb": p.blurb,
            })
        return sorted(items, key=lambda d: d["url"])

    # -- rendering --------------------------------------------------------------

    def render(self, host: str, path: str, port: int) -> _Page:
        """The response for ``path`` (query ignored) on ``host`` of the graph hosts."""
        path = path.partition("?")[0]
        if host in self._index:
            route = self._routes.get(path)
            if path == "/robots.txt":
                return self._robots_page(host)
            if route is None:
                return self._not_found(host, port)
            kind, arg, _ = route
            if kind == REDIRECT:
                target = self._page_paths[arg]
                # Half the Locations are absolute paths, half absolute URLs.
                location = target if (arg // 10) % 2 == 0 else f"http://{host}{_port_suffix(port)}{target}"
                return _Page(301, "text/html; charset=utf-8", b"<p>Moved.</p>\n",
                             (("location", location),))
            if kind == FILE:
                return _Page(200, arg, _file_body(arg, path))
            if kind == STATIC:
                ctype = "text/css" if path.endswith(".css") else "image/png"
                return _Page(200, ctype, _file_body(ctype, path))
            return _Page(200, "text/html; charset=utf-8", self._render_site(host, path, port))
        if host == SHOP_HOST and self.spec.shop:
            if path == "/robots.txt":
                return self._robots_page(host)
            route = self._shop_routes.get(path)
            if route is None:
                return self._not_found(host, port)
            if route[0] == COVER:
                return _Page(200, "image/jpeg", _file_body("image/jpeg", path))
            return _Page(200, "text/html; charset=utf-8", self._render_shop(path, route, port))
        return _Page(404, "text/plain; charset=utf-8", f"no such host: {host}\n".encode())

    def _robots_page(self, host: str) -> _Page:
        text = self.robots_txt(host)
        if text is None:
            return _Page(404, "text/plain; charset=utf-8", b"no robots.txt here\n")
        return _Page(200, "text/plain; charset=utf-8", text.encode())

    def _not_found(self, host: str, port: int) -> _Page:
        # Links on a 404 page are not to be followed: /trap/from-404.html says so.
        body = (
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>404 Not Found</title></head>"
            "<body><h1>Not Found</h1><p>Nothing here. Try <a href=\"/\">the home page</a> or "
            "<a href=\"/trap/from-404.html\">the archive</a>.</p></body></html>\n"
        )
        return _Page(404, "text/html; charset=utf-8", body.encode())

    def _head(self, title: str, canonical: str, base: str | None, meta_nofollow: bool) -> str:
        extra = f'<base href="{_attr(base)}">\n' if base else ""
        if meta_nofollow:
            extra += '<meta name="robots" content="noindex, nofollow">\n'
        return (
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{title}</title>\n"
            f"<meta name=\"description\" content=\"{title} and other stories\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<link rel=\"stylesheet\" href=\"/static/site.css\">\n"
            f"<link rel=\"canonical\" href=\"{_attr(canonical)}\">\n{extra}"
            "<style>body{font-family:sans-serif;max-width:60em;margin:auto}nav li{display:inline}</style>\n"
            "</head>\n"
        )

    def _render_site(self, host: str, path: str, port: int) -> bytes:
        st = self._structure(host, path)
        assert st is not None
        ps = _port_suffix(port)
        links = st.links
        here = st.here
        phrases = self._phrases
        key = st.key
        npf = len(phrases)
        # One pass over the links; the layout below only joins slices of it.
        tags = []
        tag = tags.append
        for i, link in enumerate(links):
            h = _href(link, here, ps)
            if "&" in h:
                h = h.replace("&", "&amp;")
            if link[4] == "area":
                tag(f'<area shape="rect" coords="{10 * i},0,{10 * i + 9},9" href="{h}" alt="{i}">')
            elif link[3]:
                tag(f'<a href="{h}" rel="{link[3]}">{phrases[(key + i) % npf]}</a>')
            else:
                tag(f'<a href="{h}">{phrases[(key + i) % npf]}</a>')
        rng = Random(key ^ 0x5A5A5A5A5A)
        rnd = rng.random
        title = f"{phrases[key % npf]} - {host}"
        base = None
        if st.base is not None:
            base = st.base if key % 2 else f"http://{host}{ps}{st.base}"
        head = self._head(title, f"http://{host}{ps}{path}", base, st.meta_nofollow)
        nav = ("<body>\n<header id=\"top\"><nav><ul><li>" + "</li><li>".join(tags[:st.nav_end])
               + f"</li></ul></nav></header>\n<main>\n<h1>{phrases[(key >> 3) % npf]}</h1>\n")
        groups = []
        i, end = st.nav_end, st.area_start
        while i < end:
            j = min(end, i + 3 + int(rnd() * 8))
            if rnd() < 0.5:
                groups.append('<ul class="links"><li>' + "</li><li>".join(tags[i:j]) + "</li></ul>\n")
            else:
                groups.append("<p>See also " + ", ".join(tags[i:j]) + ".</p>\n")
            i = j
        tail = []
        if st.area_start < st.footer_start:
            tail.append('<map name="m">' + "".join(tags[st.area_start:st.footer_start]) + "</map>\n")
        tail.append('<img src="/img/inline.png" usemap="#m" alt="map" width="100" height="10">\n')
        tail.append("</main>\n<footer><p>" + " | ".join(tags[st.footer_start:]) + "</p></footer>\n")
        tail.append(
            "<script>\n"
            f"var trackUrl = \"/trap/script.html\"; var api = 'http://{host}{ps}/trap/script.html?x=1';\n"
            "if (window.legacy) { document.write('<a href=\"/trap/docwrite.html\">old</a>'); }\n"
            "</script>\n<!-- retired: <a href=\"/trap/comment.html\">archive</a> -->\n</body>\n</html>\n"
        )
        fixed = len(head) + len(nav) + sum(map(len, groups)) + sum(map(len, tail))
        need = self._size_lo + int(rnd() * self._size_span) - fixed
        # Text: a run of consecutive pool blocks from a random start, as long
        # as the size needs (found by bisecting cumulative sizes of the pool
        # laid out twice, so a run may wrap).
        nb = len(self._blocks)
        start = int(rnd() * nb)
        cum = self._cum_bytes
        stop = bisect.bisect_left(cum, cum[start] + need, start) if need > 0 else start
        stop = min(stop, start + nb)
        run = self._blocks2[start:stop]
        body = [head, nav]
        gaps = len(groups) + 1
        per = -(-len(run) // gaps) if run else 0
        for g in range(gaps):
            body += run[g * per:(g + 1) * per]
            if g < len(groups):
                body.append(groups[g])
        body += tail
        return "".join(body).encode()

    def _render_shop(self, path: str, route: tuple[int, Any, int], port: int) -> bytes:
        kind, arg, _ = route
        ps = _port_suffix(port)
        if kind == CART:
            return _small_html("Basket", "<p>Added.</p>")
        st = self._structure(SHOP_HOST, path)
        assert st is not None
        links = st.links

        def a(i: int, text: str, cls: str = "") -> str:
            c = f' class="{cls}"' if cls else ""
            return f'<a{c} href="{_attr(_href(links[i], st.here, ps))}">{_text(text)}</a>'

        nav = "<header><nav>" + a(0, "Home") + " " + " ".join(
            a(i + 1, c) for i, c in enumerate(_CATEGORIES)) + "</nav></header>\n<main>\n"
        i = st.nav_end
        prods = self._products
        if kind == SHOP_INDEX:
            title = "Paper Lantern Books"
            main = ["<h1>Paper Lantern Books</h1>\n<h2>Categories</h2><ul>"]
            for c in _CATEGORIES:
                main.append(f"<li>{a(i, c)}</li>")
                i += 1
            main.append("</ul>\n<h2>Featured</h2><ul>")
            for p in prods[:6]:
                main.append(f"<li>{a(i, p.title)} <span class=\"price\">{p.price}</span></li>")
                i += 1
            main.append(f"</ul>\n<p>Back to {a(i, 'the web')}.</p>\n")
        elif kind in (CATEGORY, AUTHOR):
            title = _CATEGORIES[arg] if kind == CATEGORY else self._authors[arg]
            main = [f"<h1>{_text(title)}</h1>\n<ul class=\"products\">"]
            for k in range(i, len(links)):
                slug = links[k][1].rsplit("/", 1)[1][:-5]
                p = next(q for q in prods if q.slug == slug)
                main.append(f"<li>{a(k, p.title)}</li>")
            main.append("</ul>\n")
        else:
            p = prods[arg]
            title = p.title
            authors = ", ".join(a(i + k, self._authors[au], "author") for k, au in enumerate(p.authors))
            i += len(p.authors)
            main = [
                '<article class="product">\n',
                f'<h1 class="title">{_text(p.title)}</h1>\n',
                f'<img class="cover" src="../img/{p.slug}.jpg" alt="{_attr(_text(p.title))}" width="200">\n',
                f'<p class="byline">by {authors}</p>\n',
                f'<p class="price-box">Our price: <span class="price">{p.price}</span> (incl. VAT)</p>\n',
                f'<p class="blurb">{_text(p.blurb)}</p>\n',
                f'<p>{a(i, "Add to basket", "buy")}</p>\n</article>\n',
                '<section class="related"><h2>You may also like</h2><ul>',
                f"<li>{a(i + 1, prods[(arg + 7) % len(prods)].title)}</li>",
                f"<li>{a(i + 2, prods[(arg + 14) % len(prods)].title)}</li></ul></section>\n",
            ]
        head = self._head(f"{_text(title)} | Paper Lantern Books",
                          f"http://{SHOP_HOST}{ps}{path}", None, False)
        return (head + "<body>\n" + nav + "".join(main)
                + "</main>\n<footer><p>&copy; Paper Lantern Books</p></footer>\n</body>\n</html>\n").encode()


def _split_url(url: str) -> tuple[str, int, str]:
    """(host, port, path+query) of a normalised http URL."""
    rest = url[url.index("//") + 2:]
    slash = rest.find("/")
    authority, path = (rest, "/") if slash < 0 else (rest[:slash], rest[slash:])
    name, _, port = authority.rpartition(":")
    if not name or not port.isdigit():
        return authority, (443 if url.startswith("https:") else 80), path
    return name, int(port), path


def _small_html(title: str, body: str) -> bytes:
    return (f"<!DOCTYPE html>\n<html><head><title>{title}</title></head>"
            f"<body>{body}</body></html>\n").encode()


def _file_body(ctype: str, path: str) -> bytes:
    seed = zlib.crc32(path.encode())
    filler = bytes((seed >> (8 * (i % 4))) & 0xFF ^ i & 0xFF for i in range(2048))
    if ctype == "application/pdf":
        return b"%PDF-1.4\n% webfarm\n" + filler + b"\n%%EOF\n"
    if ctype == "image/png":
        return b"\x89PNG\r\n\x1a\n" + filler
    if ctype == "image/jpeg":
        return b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + filler + b"\xff\xd9"
    return b"body{font-family:sans-serif}\n"


# ---------------------------------------------------------------------------
# bad.web.test: misbehaving endpoints

BAD_LINKED = ("/gzip-bomb", "/big-cl", "/big-chunked", "/drip", "/redirect-loop", "/malformed",
              "/latin1", "/latin1-nocharset", "/reset", "/huge-header", "/redirect/3",
              "/status/404", "/status/410", "/slow?ms=300")
BIG_BODY = 50 * 1024 * 1024
BOMB_SIZE = 1 << 30
_CHUNK = 64 * 1024
_FILLER = (b"<p>" + b"x" * 1017 + b"</p>\n") * 64  # 64 KiB of HTML-ish filler
_bomb_cache: dict[int, bytes] = {}


def gzip_bomb(size: int = BOMB_SIZE) -> bytes:
    """A gzip member that inflates to ``size`` zero bytes (~1 MB for 1 GiB).

    Built by repeating one deflate segment: after ``Z_FULL_FLUSH`` the
    compressor's history is empty and its output byte-aligned, so 1 MiB of
    zeros compresses to the same bytes every time and copies can be
    concatenated. That costs one 1 MiB compression plus a CRC pass, instead
    of ~11 s to compress 1 GiB at level 9.
    """
    cached = _bomb_cache.get(size)
    if cached is not None:
        return cached
    mib = 1 << 20
    if size % mib:
        raise ValueError("bomb size must be a multiple of 1 MiB")
    zeros = bytes(mib)
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    segment = comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(size // mib):
        crc = zlib.crc32(zeros, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    body = header + segment * (size // mib) + comp.flush(zlib.Z_FINISH) + struct.pack(
        "<II", crc, size & 0xFFFFFFFF)
    _bomb_cache[size] = body
    return body


def _bad_redirect(path: str) -> str | None:
    if path == "/redirect-loop":
        return "/redirect-loop/b"
    if path == "/redirect-loop/b":
        return "/redirect-loop"
    if path.startswith("/redirect/"):
        n = path[10:]
        if n.isdigit() and 0 < int(n) <= 100:
            return f"/redirect/{int(n) - 1}"
    return None


_MALFORMED = (
    b"<html><head><title>Broken page</title><body>\x00\x00<p>unclosed <b>bold <i>italic\n"
    b"<div><table><tr><td>cell\xff\xfe\xc3\x28 invalid utf-8 <p>para \x00 null\n"
    b"<a>no target</a><img src=x <script>var x = '<'; </scr\n<p>\x80\x81\x82 &bogus; &#xD800; "
    b"<<<>>> </div></div></div>\n" + b"<td>\xe9t\xe9 " * 200 + b"\n<!-- unterminated comment"
)
_LATIN1 = (
    "<!DOCTYPE html>\n<html><head><title>Café crème brûlée</title></head>\n"
    "<body><h1>Crème brûlée à la française</h1><p>Ça coûte £5, señor. Déjà vu, naïve façade.</p>"
    "</body></html>\n"
).encode("latin-1")
#: The title a crawler decoding /latin1 correctly reads.
LATIN1_TITLE = "Café crème brûlée"


# ---------------------------------------------------------------------------
# Server: per-host behaviour, the log, and the HTTP loop


@dataclass(frozen=True, slots=True)
class HostBehaviour:
    """How one host misbehaves on purpose.

    ``latency``: seconds added before answering; a number, a schedule of
    ``(t, seconds)`` steps (``t`` = seconds since the server started, each
    step holds until the next), or a callable of that elapsed time.
    ``rate``: requests per second a token bucket of ``burst`` tokens allows
    (0 = unlimited); over it the answer is 429 with ``Retry-After``
    (``retry_after`` seconds, or the time until a token is free, rounded up).
    """

    latency: float | tuple[tuple[float, float], ...] | Callable[[float], float] = 0.0
    rate: float = 0.0
    burst: float = 1.0
    retry_after: int | None = None
    _steps: tuple[float, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        lat = self.latency
        if isinstance(lat, (list, tuple)):
            steps = tuple(sorted((float(t), float(s)) for t, s in lat))
            if any(s < 0 for _, s in steps):
                raise ValueError("latency must be >= 0")
            object.__setattr__(self, "latency", steps)
            object.__setattr__(self, "_steps", tuple(t for t, _ in steps))
        elif not callable(lat) and lat < 0:
            raise ValueError("latency must be >= 0")
        if self.rate < 0 or self.burst < 1:
            raise ValueError("rate must be >= 0 and burst >= 1")

    def latency_at(self, elapsed: float) -> float:
        """Seconds of latency ``elapsed`` seconds after the server started."""
        lat = self.latency
        if isinstance(lat, tuple):
            i = bisect.bisect_right(self._steps, elapsed) - 1
            return lat[i][1] if i >= 0 else 0.0
        if callable(lat):
            return max(0.0, float(lat(elapsed)))
        return lat


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One request: wall time it arrived, host (no port), method, target
    (path+query as sent), status (0: connection reset), body bytes sent,
    connection id and seconds taken. Appended when the answer ends (so a
    drip is logged when its client leaves)."""

    t: float
    host: str
    method: str
    target: str
    status: int
    bytes: int
    conn: int
    dur: float

    def to_json(self) -> str:
        return json.dumps({"t": round(self.t, 6), "host": self.host, "method": self.method,
                           "target": self.target, "status": self.status, "bytes": self.bytes,
                           "conn": self.conn, "dur": round(self.dur, 6)})


def read_log(path: str) -> list[LogEntry]:
    """The entries of a JSON-lines request log (a torn last line is skipped)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                d = json.loads(line)
            except json.JSONDecodeError:
                continue
            out.append(LogEntry(**d))
    return out


class FarmStats:
    """Counters of a running farm (mutable; read them, don't write)."""

    __slots__ = ("requests", "status", "bytes_sent", "connections", "open_connections",
                 "inflight", "max_inflight", "per_host")

    def __init__(self) -> None:
        self.requests = 0
        self.status: Counter[int] = Counter()
        self.bytes_sent = 0
        self.connections = 0
        self.open_connections = 0
        self.inflight: Counter[str] = Counter()
        self.max_inflight: Counter[str] = Counter()  # per host, ever
        self.per_host: Counter[str] = Counter()


class _Reply(NamedTuple):
    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes = b""
    stream: Callable[[], AsyncIterator[bytes]] | None = None  # lazy body; closes the connection
    reset_after: int = -1  # >= 0: send headers and this many body bytes, then RST


class FarmError(OSError):
    """The server cannot start: its port cannot be bound, or its log file not opened.

    An OSError, as before, for callers that catch that; the CLI prints it as
    one line and exits 2.
    """


def _check_loopback(host: str) -> None:
    if host == "localhost":
        return
    try:
        ok = ipaddress.ip_address(host).is_loopback
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"webfarm binds loopback addresses only, not {host!r}")


class WebFarm:
    """The HTTP server of a :class:`SiteGraph`.

    ``log`` keeps every :class:`LogEntry` in memory when ``keep_log`` (a
    list: tests need all of it; ~200 bytes an entry); ``log_path`` appends
    them as JSON lines. ``behaviours`` maps a host, or ``"*"`` for all, to a
    :class:`HostBehaviour`; it may be changed while serving.
    """

    def __init__(self, graph: SiteGraph, *, behaviours: Mapping[str, HostBehaviour] | None = None,
                 log_path: str | None = None, keep_log: bool = True, cache_pages: int = 1024,
                 idle_timeout: float = 60.0) -> None:
        self.graph = graph
        self.behaviours: dict[str, HostBehaviour] = dict(behaviours or {})
        self.log: list[LogEntry] = []
        self.stats = FarmStats()
        self.port = 0
        self.host = ""
        self.started = 0.0  # trio clock when serving began
        self._keep_log = keep_log
        self._log_path = log_path
        self._log_file: Any = None
        self._cache: OrderedDict[tuple[str, str], _Page] = OrderedDict()
        self._cache_size = cache_pages
        self._idle = idle_timeout
        self._conn_ids = itertools.count(1)
        self._buckets: dict[str, list[float]] = {}
        self._date = b""
        self._date_sec = -1

    # -- public helpers ---------------------------------------------------------

    def url(self, host: str, path: str = "/") -> str:
        return f"http://{host}{_port_suffix(self.port)}{path}"

    def fetched(self, method: str = "GET") -> Counter[str]:
        """How often each URL was requested with ``method``, normalised; robots.txt excluded."""
        out: Counter[str] = Counter()
        for e in self.log:
            if e.method == method and e.target != "/robots.txt":
                raw = f"http://{e.host}{_port_suffix(self.port)}{e.target}"
                try:
                    out[normalize(raw)] += 1
                except URLError:
                    out[raw] += 1
        return out

    # -- serving ------------------------------------------------------------------

    async def serve(self, host: str = "127.0.0.1", port: int = 0, *,
                    task_status: trio.TaskStatus[WebFarm] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen on ``host:port`` and serve until cancelled; ``started(self)``."""
        _check_loopback(host)
        if host == "localhost":
            host = "127.0.0.1"  # one listener, so port 0 means one port
        try:
            listeners = await trio.open_tcp_listeners(port, host=host)
        except OSError as e:
            raise FarmError(f"cannot listen on {host}:{port}: {e.strerror or e}; stop the process "
                            "that holds it, or pick another --port (0 picks a free one)") from e
        self.port = listeners[0].socket.getsockname()[1]
        self.host = host
        self.started = trio.current_time()
        if self._log_path:
            try:
                self._log_file = open(self._log_path, "a", encoding="utf-8")  # noqa: SIM115
            except OSError as e:
                for listener in listeners:
                    await listener.aclose()
                raise FarmError(f"cannot open the request log {self._log_path}: "
                                f"{e.strerror or e}") from e
        try:
            task_status.started(self)
            await trio.serve_listeners(self._connection, listeners)
        finally:
            if self._log_file is not None:
                self._log_file.close()
                self._log_file = None

    def _record(self, entry: LogEntry) -> None:
        st = self.stats
        st.requests += 1
        st.status[entry.status] += 1
        st.bytes_sent += entry.bytes
        if self._keep_log:
            self.log.append(entry)
        if self._log_file is not None:
            self._log_file.write(entry.to_json() + "\n")
            self._log_file.flush()

    async def _connection(self, stream: trio.SocketStream) -> None:
        cid = next(self._conn_ids)
        st = self.stats
        st.connections += 1
        st.open_connections += 1
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                event = await self._next_event(stream, conn)
                if not isinstance(event, h11.Request):
                    return
                request = event
                while not isinstance(event, h11.EndOfMessage):
                    event = await self._next_event(stream, conn)
                    if event is None or isinstance(event, h11.ConnectionClosed):
                        return
                if not await self._respond(stream, conn, request, cid):
                    return
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    return
                conn.start_next_cycle()
        except h11.RemoteProtocolError as exc:
            if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                try:
                    data = conn.send(h11.Response(status_code=exc.error_status_hint, headers=[
                        (b"content-length", b"0"), (b"connection", b"close")]))
                    await stream.send_all(data or b"")
                except (h11.LocalProtocolError, trio.BrokenResourceError, trio.ClosedResourceError):
                    pass
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        except h11.LocalProtocolError:
            pass  # e.g. a /status/302?to= value h11 will not put in a header
        finally:
            st.open_connections -= 1
            await trio.aclose_forcefully(stream)

    async def _next_event(self, stream: trio.SocketStream, conn: h11.Connection) -> Any:
        while True:
            event = conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            with trio.move_on_after(self._idle):
                conn.receive_data(await stream.receive_some(65536))
                continue
            return None

    def _http_date(self) -> bytes:
        now = int(time.time())
        if now != self._date_sec:
            self._date_sec = now
            self._date = email.utils.formatdate(now, usegmt=True).encode()
        return self._date

    def _rate_limited(self, host: str, b: HostBehaviour, now: float) -> int | None:
        """None if the request may go on, else the Retry-After seconds."""
        bucket = self._buckets.get(host)
        if bucket is None:
            bucket = self._buckets[host] = [b.burst, now]
        tokens = min(b.burst, bucket[0] + (now - bucket[1]) * b.rate)
        bucket[1] = now
        if tokens >= 1.0:
            bucket[0] = tokens - 1.0
            return None
        bucket[0] = tokens
        return b.retry_after if b.retry_after is not None else max(1, math.ceil((1.0 - tokens) / b.rate))

    async def _respond(self, stream: trio.SocketStream, conn: h11.Connection,
                       request: h11.Request, cid: int) -> bool:
        t_wall = time.time()
        t0 = trio.current_time()
        method = request.method.decode("ascii", "replace")
        target = request.target.decode("ascii", "replace")
        host = ""
        for name, value in request.headers:
            if name == b"host":
                host = value.decode("ascii", "replace").lower()
                break
        if target.startswith(("http://", "https://")):  # absolute-form (RFC 9112 §3.2.2)
            rest = target.split("//", 1)[1]
            slash = rest.find("/")
            host, target = (rest, "/") if slash < 0 else (rest[:slash].lower(), rest[slash:])
        if host.startswith("["):
            host = host[: host.find("]") + 1]
        else:
            host = host.partition(":")[0].rstrip(".")
        st = self.stats
        st.per_host[host] += 1
        st.inflight[host] += 1
        if st.inflight[host] > st.max_inflight[host]:
            st.max_inflight[host] = st.inflight[host]
        sent = [0, 0]  # status, body bytes
        try:
            reply = None
            b = self.behaviours.get(host) or self.behaviours.get("*")
            if b is not None:
                if b.rate > 0:
                    retry = self._rate_limited(host, b, trio.current_time())
                    if retry is not None:
                        reply = _Reply(429, [(b"content-type", b"text/plain; charset=utf-8"),
                                             (b"retry-after", str(retry).encode())], b"slow down\n")
                if reply is None:
                    delay = b.latency_at(trio.current_time() - self.started)
                    if delay > 0:
                        await trio.sleep(delay)
            if reply is None:
                if not host:
                    reply = _Reply(400, [(b"content-type", b"text/plain")], b"no Host header\n")
                elif method not in ("GET", "HEAD"):
                    reply = _Reply(405, [(b"allow", b"GET, HEAD")], b"")
                elif host == BAD_HOST:
                    reply = await self._bad(target)
                else:
                    reply = self._page(host, target)
            return await self._send(stream, conn, reply, method == "HEAD", sent)
        finally:
            st.inflight[host] -= 1
            self._record(LogEntry(t_wall, host, method, target, sent[0], sent[1], cid,
                                  trio.current_time() - t0))

    def _page(self, host: str, target: str) -> _Reply:
        path, _, _ = target.partition("?")
        if "%" in path:
            path = unquote(path)
        key = (host, path)
        page = self._cache.get(key)
        if page is None:
            page = self.graph.render(host, path, self.port)
            self._cache[key] = page
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        headers = [(b"content-type", page.content_type.encode())]
        headers += [(k.encode(), v.encode()) for k, v in page.headers]
        return _Reply(page.status, headers, page.body)

    async def _send(self, stream: trio.SocketStream, conn: h11.Connection, reply: _Reply,
                    head: bool, sent: list[int]) -> bool:
        """Send a reply; False when the connection must now close."""
        headers = reply.headers + [(b"server", b"webfarm"), (b"date", self._http_date())]
        status = reply.status
        if reply.reset_after >= 0:
            sent[0] = 0
            if reply.reset_after > 0:
                await stream.send_all(conn.send(h11.Response(status_code=200, headers=headers)))
                sent[0] = 200
                if not head:
                    await stream.send_all(_FILLER[: reply.reset_after])
                    sent[1] = reply.reset_after
            # SO_LINGER (on, 0 s): close() sends RST instead of FIN.
            stream.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            await trio.aclose_forcefully(stream)
            return False
        if reply.stream is not None:
            return await self._send_stream(stream, conn, reply, headers, head, sent)
        bodyless = head or status in (204, 304)
        if status not in (204, 304):
            headers.append((b"content-length", str(len(reply.body)).encode()))
        data = conn.send(h11.Response(status_code=status, headers=headers))
        sent[0] = status
        if not bodyless and reply.body:
            data += conn.send(h11.Data(data=reply.body))
        data += conn.send(h11.EndOfMessage())
        await stream.send_all(data)
        if not bodyless:
            sent[1] = len(reply.body)
        return conn.our_state is h11.DONE

    async def _send_stream(self, stream: trio.SocketStream, conn: h11.Connection, reply: _Reply,
                           headers: list[tuple[bytes, bytes]], head: bool, sent: list[int]) -> bool:
        headers.append((b"connection", b"close"))
        await stream.send_all(conn.send(h11.Response(status_code=reply.status, headers=headers)))
        sent[0] = reply.status
        if head:
            await stream.send_all(conn.send(h11.EndOfMessage()))
            return False
        assert reply.stream is not None
        chunks = reply.stream()

        async def pump(cancel: trio.CancelScope) -> None:
            try:
                async for chunk in chunks:
                    await stream.send_all(conn.send(h11.Data(data=chunk)))
                    sent[1] += len(chunk)
                await stream.send_all(conn.send(h11.EndOfMessage()))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
            finally:
                await chunks.aclose()  # type: ignore[attr-defined]
                cancel.cancel()

        async def watch(cancel: trio.CancelScope) -> None:
            # A client that hangs up must stop the stream now, not when a
            # send finally fails (a drip sends 1 byte per interval).
            try:
                while await stream.receive_some(4096):
                    pass
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
            cancel.cancel()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump, nursery.cancel_scope)
            nursery.start_soon(watch, nursery.cancel_scope)
        return False

    async def _bad(self, target: str) -> _Reply:
        path, _, query = target.partition("?")
        q = dict(parse_qsl(query))

        def qnum(name: str, default: float, lo: float, hi: float) -> float:
            try:
                return min(hi, max(lo, float(q.get(name, default))))
            except ValueError:
                return default

        html_t = [(b"content-type", b"text/html; charset=utf-8")]
        location = _bad_redirect(path)
        if location is not None:
            return _Reply(302, [(b"location", location.encode())] + html_t, b"<p>Moved.</p>\n")
        if path == "/":
            listing = "".join(f"<li>{p}</li>" for p in BAD_LINKED)
            return _Reply(200, html_t, _small_html("Bad endpoints", f"<ul>{listing}</ul>"))
        if path == "/gzip-bomb":
            bomb = gzip_bomb(int(qnum("mb", BOMB_SIZE >> 20, 1, 4096)) << 20)
            return _Reply(200, html_t + [(b"content-encoding", b"gzip"),
                                         (b"content-length", str(len(bomb)).encode())],
                          stream=lambda: _chunks(bomb))
        if path in ("/big-cl", "/big-chunked"):
            size = int(qnum("mb", BIG_BODY >> 20, 1, 4096)) << 20
            extra = [(b"content-length", str(size).encode())] if path == "/big-cl" else []
            return _Reply(200, html_t + extra, stream=lambda: _filler(size))
        if path == "/drip":
            interval = qnum("interval", 0.3, 0.001, 10.0)
            count = int(qnum("count", 400, 1, 100000))
            return _Reply(200, html_t, stream=lambda: _drip(interval, count))
        if path == "/malformed":
            return _Reply(200, [(b"content-type", b"text/html")], _MALFORMED)
        if path == "/latin1":
            return _Reply(200, [(b"content-type", b"text/html; charset=iso-8859-1")], _LATIN1)
        if path == "/latin1-nocharset":
            return _Reply(200, [(b"content-type", b"text/html")], _LATIN1)
        if path == "/reset":
            return _Reply(200, html_t + [(b"content-length", str(BIG_BODY).encode())],
                          reset_after=int(qnum("after", 0, 0, len(_FILLER))))
        if path == "/huge-header":
            kb = int(qnum("kb", 200, 1, 10240))
            return _Reply(200, html_t + [(b"x-huge", b"a" * (kb * 1024))], b"<p>huge header</p>\n")
        if path.startswith("/status/") and path[8:].isdigit() and 200 <= int(path[8:]) <= 599:
            code = int(path[8:])
            extra = []
            if code in (429, 503):
                extra.append((b"retry-after", str(int(qnum("retry_after", 1, 0, 86400))).encode()))
            if "to" in q:
                extra.append((b"location", q["to"].encode()))
            return _Reply(code, html_t + extra, f"<p>status {code}</p>\n".encode())
        if path == "/redirect/0":
            return _Reply(200, html_t, _small_html("End of chain", "<p>end</p>"))
        if path == "/slow":
            await trio.sleep(qnum("ms", 1000, 0, 60000) / 1000)
            return _Reply(200, html_t, _small_html("Slow", "<p>slow</p>"))
        return _Reply(404, html_t, b"<p>no such endpoint</p>\n")


async def _chunks(data: bytes) -> AsyncIterator[bytes]:
    for i in range(0, len(data), _CHUNK):
        yield data[i:i + _CHUNK]


async def _filler(size: int) -> AsyncIterator[bytes]:
    # Lazy: 50 MB is never held in memory, only one 64 KiB view at a time.
    view = memoryview(_FILLER)
    while size > 0:
        n = min(size, len(_FILLER))
        yield bytes(view[:n])
        size -= n


async def _drip(interval: float, count: int) -> AsyncIterator[bytes]:
    for i in range(count):
        if i:
            await trio.sleep(interval)
        yield b"x"


async def serve_webfarm(graph: SiteGraph, *, host: str = "127.0.0.1", port: int = 0,
                        task_status: trio.TaskStatus[WebFarm] = trio.TASK_STATUS_IGNORED,
                        **farm_options: Any) -> None:
    """Serve ``graph`` until cancelled: ``farm = await nursery.start(serve_webfarm, graph)``.

    ``farm.port`` is the bound port; ``farm_options`` go to :class:`WebFarm`.
    """
    farm = WebFarm(graph, **farm_options)
    await farm.serve(host, port, task_status=task_status)


# ---------------------------------------------------------------------------
# CLI


def _parse_hostspec(value: str) -> tuple[str, str]:
    host, sep, rest = value.partition("=")
    return (host.strip().lower(), rest) if sep else ("*", value)


def _parse_latency(value: str) -> float | tuple[tuple[float, float], ...]:
    if ":" not in value:
        return float(value)
    steps = []
    for step in value.split(","):
        t, _, s = step.partition(":")
        steps.append((float(t), float(s)))
    return tuple(steps)


def _behaviours(args: argparse.Namespace) -> dict[str, HostBehaviour]:
    latency: dict[str, Any] = {}
    rates: dict[str, tuple[float, float]] = {}
    for spec in args.latency or ():
        host, rest = _parse_hostspec(spec)
        latency[host] = _parse_latency(rest)
    for spec in args.rate_limit or ():
        host, rest = _parse_hostspec(spec)
        rate, _, burst = rest.partition("/")
        rates[host] = (float(rate), float(burst or 1))
    out = {}
    for host in set(latency) | set(rates):
        rate, burst = rates.get(host, (0.0, 1.0))
        out[host] = HostBehaviour(latency=latency.get(host, 0.0), rate=rate, burst=burst,
                                  retry_after=args.retry_after)
    return out


def _arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="webfarm.py",
        description="Serve ringcrawl's local test web (*.web.test) on one loopback port.")
    p.add_argument("--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port; 0 picks a free one (default 8080)")
    p.add_argument("--seed", type=int, default=1, help="graph seed (default 1)")
    p.add_argument("--hosts", type=int, default=20, help="number of sNNN.web.test hosts (default 20)")
    p.add_argument("--pages", type=int, default=300, help="content pages per host (default 300)")
    p.add_argument("--links", type=int, default=100, help="links per content page (default 100)")
    p.add_argument("--shop-products", type=int, default=40, help="products of shop.web.test (default 40)")
    p.add_argument("--no-shop", action="store_true", help="leave out shop.web.test")
    p.add_argument("--link-bad", action="store_true",
                   help="link bad.web.test's endpoints from s001's index (slows a crawl on purpose)")
    p.add_argument("--crawl-delay", action="append", metavar="HOST=SECONDS",
                   help="add a Crawl-delay to HOST's robots.txt (repeatable)")
    p.add_argument("--latency", action="append", metavar="[HOST=]S|T:S,T:S",
                   help="added latency in seconds, or steps t:seconds since start (repeatable)")
    p.add_argument("--rate-limit", action="append", metavar="[HOST=]RATE[/BURST]",
                   help="token bucket per host, requests/s; over it: 429 (repeatable)")
    p.add_argument("--retry-after", type=int, default=None, help="fixed Retry-After seconds for 429s")
    p.add_argument("--log", metavar="FILE", help="append every request to FILE as JSON lines")
    p.add_argument("--print-expected", action="store_true",
                   help="print the URLs a correct crawl of --port requests, one a line, and exit")
    return p


async def _run(graph: SiteGraph, args: argparse.Namespace,
               behaviours: dict[str, HostBehaviour]) -> None:
    # The receiver is open before the port is printed, so a SIGTERM sent as
    # soon as a parent reads that line is handled, not fatal.
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            farm: WebFarm = await nursery.start(functools.partial(
                serve_webfarm, graph, host=args.host, port=args.port, log_path=args.log,
                keep_log=False, behaviours=behaviours))
            print(f"listening on {args.host}:{farm.port}", flush=True)
            print(f"seed {graph.seeds(farm.port)[0]} ; {len(graph.hosts())} hosts", flush=True)
            async for _ in signals:
                break
            nursery.cancel_scope.cancel()
    st = farm.stats
    print(f"served {st.requests} requests on {st.connections} connections, "
          f"{st.bytes_sent} body bytes; status {dict(sorted(st.status.items()))}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    args = _arg_parser().parse_args(argv)
    try:
        _check_loopback(args.host)
        delays = {}
        for spec in args.crawl_delay or ():
            host, _, secs = spec.partition("=")
            delays[host.strip().lower()] = float(secs)
        graph = SiteGraph(seed=args.seed, hosts=args.hosts, pages_per_host=args.pages,
                          links_per_page=args.links, shop=not args.no_shop,
                          shop_products=args.shop_products, link_bad=args.link_bad,
                          crawl_delay=delays)
        behaviours = _behaviours(args)
    except ValueError as exc:
        print(f"webfarm: {exc}", file=sys.stderr)
        return 2
    if args.print_expected:
        if args.port == 0:
            print("webfarm: --print-expected needs a fixed --port", file=sys.stderr)
            return 2
        for url in sorted(graph.expected_urls(args.port)):
            print(url)
        return 0
    try:
        trio.run(_run, graph, args, behaviours)
    except BaseException as exc:  # trio wraps a FarmError in a group; user_error() unwraps it
        err = user_error(exc, (FarmError,))
        if err is None:
            raise
        print(f"webfarm: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
