"""The site graph: a seeded multi-host web whose every page can be built on its own.

- ``s001.web.test`` ... ``sNNN.web.test``: each host has an index ``/``,
  section indexes ``/c<d>/``, content pages ``/c<d>/p<n>.html``,
  ``/about.html`` (``<meta name=robots content="noindex, nofollow">``),
  ``/private/...`` (robots-disallowed on some hosts, with an ``Allow:``
  exception), redirects ``/c<d>/old<n>.html`` -> ``p<n>.html``, files
  ``/files/doc<k>.pdf`` and ``/img/pic<k>.png``, and trap pages ``/trap/...``.
- ``shop.web.test``: a small book shop for the extraction rules
  (:mod:`localweb.sitegraph.shop`), linked from s001's index.
- ``bad.web.test``: misbehaving endpoints (:mod:`localweb.sitegraph.endpoints`),
  linked only when ``SiteSpec.link_bad`` asks.

**Determinism.** Everything derives from ``SiteSpec.seed``: a page's links
come from a ``random.Random`` keyed by (seed, host, route), so one page's
links can be listed without the rest of the graph. Same seed, same bytes.

This module is the structure only: which routes exist, which links a page
carries and how each is spelt (:mod:`localweb.sitegraph.hrefs`), and the robots.txt
rules. :mod:`localweb.sitegraph.pages` renders the bytes, :mod:`localweb.sitegraph.oracle` says
what a correct crawl of it requests, and :class:`localweb.sitegraph.web.SiteGraph`
puts the three together.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from random import Random
from typing import Any, NamedTuple

from localweb.sitegraph.endpoints import BAD_HOST, BAD_LINKED
from localweb.sitegraph.endpoints import redirect_target as bad_redirect
from localweb.sitegraph.hrefs import CROSS_FORMS, RAW_HREFS, SAME_FORMS, Edge, href, port_suffix, raw_target
from localweb.sitegraph.shop import CATEGORIES, SHOP_HOST, make_shop, slug

__all__ = ["BAD_HOST", "DEFAULT_ALLOW", "DOMAIN", "Graph", "Link", "SHOP_HOST", "SiteSpec", "split_url"]

DOMAIN = "web.test"
DEFAULT_ALLOW = (f"*.{DOMAIN}",)


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



# Route kinds of the site hosts.
INDEX, SECTION, PAGE, ABOUT, PRIVATE, TRAP, REDIRECT, FILE, STATIC = range(9)
# Route kinds of the shop.
SHOP_INDEX, CATEGORY, PRODUCT, AUTHOR, CART, COVER = range(20, 26)

HTML_KINDS = frozenset({INDEX, SECTION, PAGE, ABOUT, PRIVATE, TRAP,
                         SHOP_INDEX, CATEGORY, PRODUCT, AUTHOR, CART})
_N_FILES = 5
_N_PRIVATE = 5
N_NOFOLLOW = 3
_N_GONE = 2
_NAV_SECTIONS = 8
_QUERIES = ("?a=1&b=2", "?sort=desc&page=2")
TRAP_PATHS = ("/trap/script.html", "/trap/docwrite.html", "/trap/comment.html",
               "/trap/from-404.html", "/trap/meta.html", "/static/site.css", "/img/inline.png")


class Layout(NamedTuple):
    """The links of one HTML page and where they stand in it."""

    links: list[Edge]
    nav_end: int  # links[:nav_end] are the header nav
    area_start: int  # links[area_start:footer_start] are <area>s
    footer_start: int
    here: str  # directory relative hrefs resolve against (the <base> if any)
    base: str | None  # the <base href> path, if any
    meta_nofollow: bool
    key: int


def split_url(url: str) -> tuple[str, int, str]:
    """(host, port, path+query) of a canonical http(s) URL such as the graph writes."""
    rest = url[url.index("//") + 2:]
    slash = rest.find("/")
    authority, path = (rest, "/") if slash < 0 else (rest[:slash], rest[slash:])
    name, _, port = authority.rpartition(":")
    if not name or not port.isdigit():
        return authority, (443 if url.startswith("https:") else 80), path
    return name, int(port), path


class Graph:
    """The seeded site graph's structure: hosts, routes, links and robots rules.

    ``Graph(seed=1, hosts=20, pages_per_host=300)`` or ``Graph(spec)``.
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
        self.products, self.authors = make_shop(s.seed, s.shop_products) if s.shop else ([], [])
        self._shop_routes = self._make_shop_routes()
        self._delay = dict(s.crawl_delay)
        unknown = set(self._delay) - set(self.hosts())
        if unknown:
            raise ValueError(f"crawl_delay names unknown hosts: {sorted(unknown)}")
        self._rules = {h: self._robots_rules(h) for h in self.hosts()}

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
        return split_url(url)[0].lower()

    def seeds(self, port: int) -> list[str]:
        """The crawl seeds: s001's index."""
        return [f"http://{self._names[0]}{port_suffix(port)}/"]

    def page_count(self, host: str | None = None) -> int:
        """HTML pages served with 200 (all hosts, or one), traps included."""
        if host is None:
            return sum(self.page_count(h) for h in self.hosts())
        if host in self._index:
            return sum(1 for kind, _, _ in self._routes.values() if kind in HTML_KINDS)
        if host == SHOP_HOST and self.spec.shop:
            return sum(1 for kind, _, _ in self._shop_routes.values()
                       if kind in HTML_KINDS and kind != CART)
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
        for k in range(N_NOFOLLOW):
            routes[f"/trap/nf{k}.html"] = (TRAP, k)
        for p in TRAP_PATHS:
            routes[p] = (STATIC, p) if not p.endswith(".html") else (TRAP, p)
        for k in range(_N_FILES):
            routes[f"/files/doc{k}.pdf"] = (FILE, "application/pdf")
            routes[f"/img/pic{k}.png"] = (FILE, "image/png")
        return {p: (kind, arg, rid) for rid, (p, (kind, arg)) in enumerate(routes.items())}

    def _make_shop_routes(self) -> dict[str, tuple[int, Any, int]]:
        routes: dict[str, tuple[int, Any]] = {"/": (SHOP_INDEX, None)}
        for i, c in enumerate(CATEGORIES):
            routes[f"/category/{slug(c)}.html"] = (CATEGORY, i)
        for i, p in enumerate(self.products):
            routes[f"/product/{p.slug}.html"] = (PRODUCT, i)
            routes[f"/img/{p.slug}.jpg"] = (COVER, i)
        for i, a in enumerate(self.authors):
            routes[f"/author/{slug(a)}.html"] = (AUTHOR, i)
        routes["/cart/add"] = (CART, None)
        return {p: (kind, arg, rid) for rid, (p, (kind, arg)) in enumerate(routes.items())}

    def site_route(self, path: str) -> tuple[int, Any, int] | None:
        """(kind, arg, route id) of ``path`` on any sNNN host, or None."""
        return self._routes.get(path)

    def shop_route(self, path: str) -> tuple[int, Any, int] | None:
        """(kind, arg, route id) of ``path`` on the shop, or None (also when there is no shop)."""
        return self._shop_routes.get(path) if self.spec.shop else None

    def page_path(self, n: int) -> str:
        """The path of content page ``n`` (1-based) of every sNNN host."""
        return self._page_paths[n]

    def is_site_host(self, host: str) -> bool:
        return host in self._index

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

    def structure(self, host: str, path: str) -> Layout | None:
        """The links of an HTML page at ``path`` (query removed), or None."""
        if host in self._index:
            route = self._routes.get(path)
            if route is None or route[0] not in HTML_KINDS:
                return None
            return self._site_structure(self._index[host], path, route)
        if host == SHOP_HOST and self.spec.shop:
            route = self._shop_routes.get(path)
            if route is None or route[0] not in HTML_KINDS:
                return None
            return self._shop_structure(path, route)
        return None

    def _site_structure(self, hidx: int, path: str, route: tuple[int, Any, int]) -> Layout:
        s = self.spec
        kind, arg, rid = route
        key = self._key(hidx, rid)
        host = self._names[hidx]
        here = path[: path.rfind("/") + 1]
        if kind == TRAP:
            links: list[Edge] = [(host, "/", "abs_path", "", "a")]
            return Layout(links, 1, 1, 1, here, None, False, key)
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
        add((host, RAW_HREFS[0], "raw", "", "a"))
        add((host, RAW_HREFS[1], "raw", "", "a"))
        return Layout(links, nav_end, area_start, footer_start, here, base, meta_nofollow, key)

    def _random_links(self, rng: Random, rnd: Callable[[], float], hidx: int, host: str,
                      count: int, add: Callable[[Edge], None]) -> None:
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
        nforms = len(SAME_FORMS)
        qe = s.query_every
        for _ in range(count):
            r = rnd()
            if r >= c_raw:
                n = int(rnd() * P) + 1
                path = pages[n]
                if qe and n % qe == 0 and rnd() < 0.5:
                    path += _QUERIES[int(rnd() * 2)]
                add((host, path, SAME_FORMS[int(rnd() * nforms)], "", "a"))
            elif r < c_cross:
                j = int(rnd() * (s.hosts - 1))
                j += j >= hidx
                path = "/" if rnd() < 0.2 else pages[int(rnd() * P) + 1]
                add((self._names[j], path, CROSS_FORMS[int(rnd() * 4)], "", "a"))
            elif r < c_missing:
                d = int(rnd() * self._nsec)
                add((host, f"/c{d}/gone{int(rnd() * _N_GONE)}.html", "rel", "", "a"))
            elif r < c_file:
                k = int(rnd() * _N_FILES)
                path = f"/files/doc{k}.pdf" if rnd() < 0.5 else f"/img/pic{k}.png"
                add((host, path, "abs_path" if rnd() < 0.5 else "rel", "", "a"))
            elif r < c_nofollow:
                rel = ("nofollow", "external nofollow", "nofollow noopener")[int(rnd() * 3)]
                add((host, f"/trap/nf{int(rnd() * N_NOFOLLOW)}.html", "abs_path", rel, "a"))
            elif r < c_redirect:
                # Redirects point at p3, p13, p23...: a few per host, not one per page.
                n = min(P, 10 * int(rnd() * ((P + 6) // 10)) + 3)
                add((host, pages[n].replace("/p", "/old"), "abs_path", "", "a"))
            elif r < c_private:
                k = int(rnd() * (_N_PRIVATE + 1))
                path = "/private/open.html" if k == _N_PRIVATE else f"/private/p{k}.html"
                add((host, path, "abs_path" if rnd() < 0.5 else "rel", "", "a"))
            else:
                add((host, RAW_HREFS[int(rnd() * len(RAW_HREFS))], "raw", "", "a"))

    def _shop_structure(self, path: str, route: tuple[int, Any, int]) -> Layout:
        kind, arg, rid = route
        key = self._key(1000, rid)
        here = path[: path.rfind("/") + 1]
        H = SHOP_HOST
        links: list[Edge] = [(H, "/", "abs_path", "", "a")]
        links += [(H, f"/category/{slug(c)}.html", "abs_path", "", "a") for c in CATEGORIES]
        nav_end = len(links)
        add = links.append
        prods = self.products
        if kind == SHOP_INDEX:
            for c in CATEGORIES:
                add((H, f"/category/{slug(c)}.html", "rel", "", "a"))
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
                add((H, f"/author/{slug(self.authors[a])}.html", "rel", "", "a"))
            add((H, f"/cart/add?id={p.slug}&qty=1", "abs_path", "", "a"))
            for k in (1, 2):
                q = prods[(arg + k * 7) % len(prods)]
                add((H, f"/product/{q.slug}.html", "rel", "", "a"))
        elif kind == AUTHOR:
            for p in prods:
                if arg in p.authors:
                    add((H, f"/product/{p.slug}.html", "rel", "", "a"))
        end = len(links)
        return Layout(links, nav_end, end, end, here, None, False, key)

    def links(self, url: str) -> list[Link]:
        """The links of the HTML page at canonical ``url``, in document order, as served."""
        host, port, path = split_url(url)
        st = self.structure(host, path.partition("?")[0])
        if st is None:
            return []
        ps = port_suffix(port)
        out = []
        for link in st.links:
            spelt = href(link, st.here, ps)
            lhost, lpath, form, rel, tag = link
            if form == "self":
                target: str | None = url
            elif form == "raw":
                target = raw_target(lpath, host, ps)
            else:
                target = f"http://{lhost}{ps}{lpath}"
            follow = not st.meta_nofollow and "nofollow" not in rel.split()
            out.append(Link(spelt, target, form, rel, tag, follow))
        return out

    def redirect_target(self, host: str, path: str) -> str | None:
        """The path a redirect route of ``host`` points to (same host), or None."""
        if host in self._index:
            route = self._routes.get(path)
            if route is not None and route[0] == REDIRECT:
                return self._page_paths[route[1]]
        elif host == BAD_HOST:
            return bad_redirect(path)
        return None
