"""``docs.web.test``: a documentation site as Sphinx builds one, with its sitemap.

The site the scoping guide (docs/scoping.md) crawls one section of. Pure:
:func:`answer` maps a request target to an :class:`~localweb.sitegraph.endpoints.Answer`.
Every ``loc`` and link is absolute or root-relative for the port the web
listens on.

====================================  =========================================
``/robots.txt``                       ``Sitemap: /sitemap.xml``; disallows
                                      ``/_sources/``
``/``                                 links the sections' indexes, the search
                                      and the general index
``/library/``                         links :data:`LIBRARY` pages but not
                                      :data:`LIBRARY_UNLINKED`
``/library/NAME.html``                a module's page: headings with Sphinx's
                                      ``¶``, a link to its ``_sources`` text
                                      and to its PDF, the stylesheet, a logo,
                                      a search link
``/tutorial/``, ``/tutorial/N.html``  the tutorial (:data:`TUTORIAL` pages)
``/whatsnew/``, ``/whatsnew/V.html``  release notes (:data:`WHATSNEW`)
``/search.html?q=...``                a search page: every query is a URL
``/genindex.html``                    links every page
``/_sources/...``, ``/_static/...``   text sources, a stylesheet, a PNG
``/sitemap.xml``                      every page, with ``lastmod``: the
                                      library's unlinked pages are found only
                                      here
====================================  =========================================

Pages link back to the home page and across sections, as real documentation
does, so a crawl of one section must be scoped by URL, not by host.
"""

from __future__ import annotations

from localweb.sitegraph.endpoints import Answer, small_html

__all__ = ["DOCS_HOST", "LIBRARY", "LIBRARY_UNLINKED", "TUTORIAL", "WHATSNEW", "answer", "pages"]

DOCS_HOST = "docs.web.test"
#: The library's modules that ``/library/`` links.
LIBRARY = ("asyncio", "collections", "dataclasses", "functools", "itertools", "json", "logging",
           "os", "pathlib", "re", "socket", "sqlite3", "ssl", "subprocess", "typing", "zlib")
#: Library pages no page links to: a crawl finds them only in the sitemap.
LIBRARY_UNLINKED = ("graphlib", "tomllib", "zoneinfo")
TUTORIAL = 8
WHATSNEW = ("3.11", "3.12", "3.13")

_HTML = ((b"content-type", b"text/html; charset=utf-8"),)
_LASTMOD = "2026-11-{day:02d}T09:00:00+00:00"


def pages() -> list[str]:
    """Every page's path, the sitemap's order."""
    out = ["/", "/library/", "/tutorial/", "/whatsnew/", "/genindex.html"]
    out += [f"/library/{m}.html" for m in (*LIBRARY, *LIBRARY_UNLINKED)]
    out += [f"/tutorial/{i}.html" for i in range(1, TUTORIAL + 1)]
    out += [f"/whatsnew/{v}.html" for v in WHATSNEW]
    return out


def _page(title: str, body: str) -> Answer:
    head = ('<link rel="stylesheet" href="/_static/pygments.css">'
            '<img src="/_static/logo.png" alt="logo">'
            '<form action="/search.html"><input name="q"></form>'
            '<a href="/">Home</a> <a href="/genindex.html">Index</a> '
            '<a href="/search.html?q=ring">Search</a>')
    return Answer(200, _HTML, small_html(title, head + body))


def _module(name: str) -> Answer:
    body = (f'<h1>{name} \u2014 a module<a class="headerlink" href="#{name}">\u00b6</a></h1>'
            f'<h2>Functions<a class="headerlink" href="#functions">\u00b6</a></h2>'
            f'<p>See also <a href="/library/json.html">json</a> and '
            f'<a href="/tutorial/1.html">the tutorial</a>.</p>'
            f'<a href="/_sources/library/{name}.rst.txt">Show source</a> '
            f'<a href="/library/{name}.pdf">PDF</a>')
    return _page(f"{name} \u2014 docs", body)


def _sitemap(port: int) -> bytes:
    origin = f"http://{DOCS_HOST}" + (f":{port}" if port else "")
    urls = "".join(f"<url><loc>{origin}{p}</loc><lastmod>{_LASTMOD.format(day=1 + i % 28)}</lastmod></url>"
                   for i, p in enumerate(pages()))
    return (b'<?xml version="1.0" encoding="UTF-8"?>\n'
            b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            + urls.encode() + b"</urlset>\n")


def answer(target: str, port: int = 0) -> Answer:
    """The reply to ``GET target`` on ``docs.web.test`` (served on ``port``)."""
    path, _, _ = target.partition("?")
    origin = f"http://{DOCS_HOST}" + (f":{port}" if port else "")
    if path == "/robots.txt":
        body = f"User-agent: *\nDisallow: /_sources/\n\nSitemap: {origin}/sitemap.xml\n".encode()
        return Answer(200, ((b"content-type", b"text/plain"),), body)
    if path == "/sitemap.xml":
        return Answer(200, ((b"content-type", b"application/xml"),), _sitemap(port))
    if path == "/":
        return _page("Documentation", '<a href="/library/">Library</a> <a href="/tutorial/">Tutorial</a> '
                     '<a href="/whatsnew/">What\'s new</a>')
    if path == "/library/":
        return _page("The library", "".join(f'<a href="{m}.html">{m}</a> ' for m in LIBRARY))
    if path.startswith("/library/") and path.endswith(".html") and path[9:-5] in (*LIBRARY, *LIBRARY_UNLINKED):
        return _module(path[9:-5])
    if path == "/tutorial/":
        return _page("Tutorial", "".join(f'<a href="{i}.html">Part {i}</a> ' for i in range(1, TUTORIAL + 1)))
    if path.startswith("/tutorial/") and path[10:-5].isdigit() and 1 <= int(path[10:-5]) <= TUTORIAL:
        n = int(path[10:-5])
        nxt = f'<a href="{n + 1}.html">Next</a>' if n < TUTORIAL else ""
        return _page(f"Tutorial {n}", f'<p>Part {n}, using <a href="/library/re.html">re</a>.</p>{nxt}')
    if path == "/whatsnew/":
        return _page("What's new", "".join(f'<a href="{v}.html">{v}</a> ' for v in WHATSNEW))
    if path.startswith("/whatsnew/") and path[10:-5] in WHATSNEW:
        return _page(f"What's new in {path[10:-5]}", '<a href="/library/typing.html">typing</a>')
    if path == "/genindex.html":
        return _page("Index", "".join(f'<a href="{p}">{p}</a> ' for p in pages()))
    if path == "/search.html":
        return _page("Search", '<a href="/search.html?q=more">more results</a>')
    if path.startswith("/library/") and path.endswith(".pdf"):
        return Answer(200, ((b"content-type", b"application/pdf"),), b"%PDF-1.4\n")
    if path.startswith("/_sources/"):
        return Answer(200, ((b"content-type", b"text/plain"),), b"source text\n")
    if path == "/_static/pygments.css":
        return Answer(200, ((b"content-type", b"text/css"),), b"body { margin: 0 }\n")
    if path == "/_static/logo.png":
        return Answer(200, ((b"content-type", b"image/png"),), b"\x89PNG\r\n\x1a\n")
    return Answer(404, _HTML, small_html("Not found", "<p>no such page</p>"))
