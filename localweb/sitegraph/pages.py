"""The bytes of the site graph's pages: HTML, robots.txt, files and redirects.

:class:`Pages` renders any route of a :class:`~localweb.sitegraph.graph.Graph` on its
own, in about a millisecond (a content page is 20-40 KiB of text picked
from the seeded pool of :mod:`localweb.sitegraph.text`). Besides the links the graph
lists, a page carries the traps a correct crawler never follows: URLs in
``<script>`` and HTML comments, ``<link>``/``<img>`` sources, ``<area>``
links inside an image map, a canonical link, and on some pages a ``<base
href>`` that changes what relative links mean.
"""

from __future__ import annotations

import bisect
import itertools
import zlib
from dataclasses import dataclass
from random import Random
from typing import Any

from localweb.sitegraph.endpoints import small_html
from localweb.sitegraph.graph import (
    AUTHOR, CART, CATEGORY, COVER, FILE, REDIRECT, SHOP_HOST, SHOP_INDEX, STATIC,
    Graph,
)
from localweb.sitegraph.hrefs import attr, href, port_suffix
from localweb.sitegraph.hrefs import text as esc
from localweb.sitegraph.shop import CATEGORIES
from localweb.sitegraph.text import BLOCK_MAX, phrases, text_pool

__all__ = ["Page", "Pages"]


@dataclass(frozen=True, slots=True)
class Page:
    """One answer of the graph: status, Content-Type, body and extra headers (name, value)."""

    status: int
    content_type: str
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()


class Pages:
    """Renders the pages of ``graph``; holds the text pool of its seed."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        s = graph.spec
        self._blocks, self._block_bytes = text_pool(s.seed)
        self._blocks2 = self._blocks * 2
        self._cum_bytes = list(itertools.accumulate(self._block_bytes * 2, initial=0))
        self._phrases = phrases(s.seed)
        lo, hi = s.page_kb
        self._size_lo = lo * 1024 + 512
        self._size_span = max(0, (hi - lo) * 1024 - 512 - BLOCK_MAX - 512)

    # -- rendering --------------------------------------------------------------

    def render(self, host: str, path: str, port: int) -> Page:
        """The response for ``path`` (query ignored) on ``host`` of the graph hosts."""
        path = path.partition("?")[0]
        g = self.graph
        if g.is_site_host(host):
            route = g.site_route(path)
            if path == "/robots.txt":
                return self._robots_page(host)
            if route is None:
                return self._not_found(host, port)
            kind, arg, _ = route
            if kind == REDIRECT:
                target = g.page_path(arg)
                # Half the Locations are absolute paths, half absolute URLs.
                location = target if (arg // 10) % 2 == 0 else f"http://{host}{port_suffix(port)}{target}"
                return Page(301, "text/html; charset=utf-8", b"<p>Moved.</p>\n",
                             (("location", location),))
            if kind == FILE:
                return Page(200, arg, file_body(arg, path))
            if kind == STATIC:
                ctype = "text/css" if path.endswith(".css") else "image/png"
                return Page(200, ctype, file_body(ctype, path))
            return Page(200, "text/html; charset=utf-8", self._render_site(host, path, port))
        if host == SHOP_HOST and g.spec.shop:
            if path == "/robots.txt":
                return self._robots_page(host)
            route = g.shop_route(path)
            if route is None:
                return self._not_found(host, port)
            if route[0] == COVER:
                return Page(200, "image/jpeg", file_body("image/jpeg", path))
            return Page(200, "text/html; charset=utf-8", self._render_shop(path, route, port))
        return Page(404, "text/plain; charset=utf-8", f"no such host: {host}\n".encode())

    def _robots_page(self, host: str) -> Page:
        text = self.graph.robots_txt(host)
        if text is None:
            return Page(404, "text/plain; charset=utf-8", b"no robots.txt here\n")
        return Page(200, "text/plain; charset=utf-8", text.encode())

    def _not_found(self, host: str, port: int) -> Page:
        # Links on a 404 page are not to be followed: /trap/from-404.html says so.
        body = (
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>404 Not Found</title></head>"
            "<body><h1>Not Found</h1><p>Nothing here. Try <a href=\"/\">the home page</a> or "
            "<a href=\"/trap/from-404.html\">the archive</a>.</p></body></html>\n"
        )
        return Page(404, "text/html; charset=utf-8", body.encode())

    def _head(self, title: str, canonical: str, base: str | None, meta_nofollow: bool) -> str:
        extra = f'<base href="{attr(base)}">\n' if base else ""
        if meta_nofollow:
            extra += '<meta name="robots" content="noindex, nofollow">\n'
        return (
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{title}</title>\n"
            f"<meta name=\"description\" content=\"{title} and other stories\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<link rel=\"stylesheet\" href=\"/static/site.css\">\n"
            f"<link rel=\"canonical\" href=\"{attr(canonical)}\">\n{extra}"
            "<style>body{font-family:sans-serif;max-width:60em;margin:auto}nav li{display:inline}</style>\n"
            "</head>\n"
        )

    def _render_site(self, host: str, path: str, port: int) -> bytes:
        st = self.graph.structure(host, path)
        assert st is not None
        ps = port_suffix(port)
        links = st.links
        here = st.here
        phrases = self._phrases
        key = st.key
        npf = len(phrases)
        # One pass over the links; the layout below only joins slices of it.
        tags: list[str] = []
        tag = tags.append
        for i, link in enumerate(links):
            h = href(link, here, ps)
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
        ps = port_suffix(port)
        if kind == CART:
            return small_html("Basket", "<p>Added.</p>")
        st = self.graph.structure(SHOP_HOST, path)
        assert st is not None
        links = st.links

        def a(i: int, text: str, cls: str = "") -> str:
            c = f' class="{cls}"' if cls else ""
            return f'<a{c} href="{attr(href(links[i], st.here, ps))}">{esc(text)}</a>'

        nav = "<header><nav>" + a(0, "Home") + " " + " ".join(
            a(i + 1, c) for i, c in enumerate(CATEGORIES)) + "</nav></header>\n<main>\n"
        i = st.nav_end
        prods = self.graph.products
        if kind == SHOP_INDEX:
            title = "Paper Lantern Books"
            main = ["<h1>Paper Lantern Books</h1>\n<h2>Categories</h2><ul>"]
            for c in CATEGORIES:
                main.append(f"<li>{a(i, c)}</li>")
                i += 1
            main.append("</ul>\n<h2>Featured</h2><ul>")
            for p in prods[:6]:
                main.append(f"<li>{a(i, p.title)} <span class=\"price\">{p.price}</span></li>")
                i += 1
            main.append(f"</ul>\n<p>Back to {a(i, 'the web')}.</p>\n")
        elif kind in (CATEGORY, AUTHOR):
            title = CATEGORIES[arg] if kind == CATEGORY else self.graph.authors[arg]
            main = [f"<h1>{esc(title)}</h1>\n<ul class=\"products\">"]
            for k in range(i, len(links)):
                slug = links[k][1].rsplit("/", 1)[1][:-5]
                p = next(q for q in prods if q.slug == slug)
                main.append(f"<li>{a(k, p.title)}</li>")
            main.append("</ul>\n")
        else:
            p = prods[arg]
            title = p.title
            authors = ", ".join(a(i + k, self.graph.authors[au], "author") for k, au in enumerate(p.authors))
            i += len(p.authors)
            main = [
                '<article class="product">\n',
                f'<h1 class="title">{esc(p.title)}</h1>\n',
                f'<img class="cover" src="../img/{p.slug}.jpg" alt="{attr(esc(p.title))}" width="200">\n',
                f'<p class="byline">by {authors}</p>\n',
                f'<p class="price-box">Our price: <span class="price">{p.price}</span> (incl. VAT)</p>\n',
                f'<p class="blurb">{esc(p.blurb)}</p>\n',
                f'<p>{a(i, "Add to basket", "buy")}</p>\n</article>\n',
                '<section class="related"><h2>You may also like</h2><ul>',
                f"<li>{a(i + 1, prods[(arg + 7) % len(prods)].title)}</li>",
                f"<li>{a(i + 2, prods[(arg + 14) % len(prods)].title)}</li></ul></section>\n",
            ]
        head = self._head(f"{esc(title)} | Paper Lantern Books",
                          f"http://{SHOP_HOST}{ps}{path}", None, False)
        return (head + "<body>\n" + nav + "".join(main)
                + "</main>\n<footer><p>&copy; Paper Lantern Books</p></footer>\n</body>\n</html>\n").encode()



def file_body(ctype: str, path: str) -> bytes:
    """2 KiB of a file type's bytes, the same for the same path (a crawler stores or skips them)."""
    seed = zlib.crc32(path.encode())
    filler = bytes((seed >> (8 * (i % 4))) & 0xFF ^ i & 0xFF for i in range(2048))
    if ctype == "application/pdf":
        return b"%PDF-1.4\n% webfarm\n" + filler + b"\n%%EOF\n"
    if ctype == "image/png":
        return b"\x89PNG\r\n\x1a\n" + filler
    if ctype == "image/jpeg":
        return b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + filler + b"\xff\xd9"
    return b"body{font-family:sans-serif}\n"

