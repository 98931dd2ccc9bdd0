"""styled.test: pages that need their requisites to look right, and a CDN host that serves some (pure).

A site as a replay sees it: every page of ``styled.test`` loads a
stylesheet that ``@import``s another and names a font and a background in
``url()``s, a favicon, a script, an image with a ``srcset``, and an image
on ``styled-cdn.test`` (another host, out of a crawl scoped to
``styled.test``). The pages also *link* one of their images (``<a
href=...png>``), which ``skip_extensions`` leaves out as a link.

What a crawl with ``[warc] requisites`` must fetch is :func:`requisites`
(each once), and the bytes of every file are :func:`body` (deterministic,
distinct per path), so a test compares what a replay serves against them.
"""

from __future__ import annotations

import hashlib

from localweb.hostile.wire import Reply, html, reply

__all__ = ["CDN_HOST", "HOSTS", "PAGES", "STYLED_HOST", "body", "page_paths", "requisites", "route"]

STYLED_HOST = "styled.test"
CDN_HOST = "styled-cdn.test"
HOSTS = (STYLED_HOST, CDN_HOST)
PAGES = 3

_TYPES = {".css": "text/css", ".png": "image/png", ".js": "text/javascript", ".ico": "image/x-icon",
          ".woff2": "font/woff2"}
_CSS = {
    "/css/site.css": ('@import url("base.css");\n'
                      "body { background: #fff url(../img/bg.png) repeat-x }\n"
                      '@font-face { font-family: "Site"; src: url(/fonts/site.woff2) format("woff2") }\n'
                      "/* url(/img/commented-out.png) is no requisite */\n"),
    "/css/base.css": "h1 { background-image: url('/img/h1.png'); font-family: Site }\n",
}
_FILES = ("/img/bg.png", "/img/h1.png", "/fonts/site.woff2", "/favicon.ico", "/js/app.js",
          *(f"/img/photo-{i}.png" for i in range(PAGES)), *(f"/img/photo-{i}-2x.png" for i in range(PAGES)))


def page_paths() -> list[str]:
    """The HTML pages of styled.test: ``/`` and ``/page/<i>``."""
    return ["/", *(f"/page/{i}" for i in range(PAGES))]


def requisites(port: int) -> dict[str, str]:
    """URL -> host of every requisite a crawl of styled.test must fetch (levels 1 to 3)."""
    out = {f"http://{STYLED_HOST}:{port}{p}": STYLED_HOST for p in (*_CSS, *_FILES)}
    out[f"http://{CDN_HOST}:{port}/img/shared.png"] = CDN_HOST
    return out


def body(path: str) -> bytes:
    """The bytes served at a requisite's ``path`` (a stylesheet's text, or a file's)."""
    if path in _CSS:
        return _CSS[path].encode()
    magic = b"\x89PNG\r\n\x1a\n" if path.endswith(".png") else b""
    return magic + hashlib.sha256(path.encode()).digest() * 4


def _page(title: str, port: int, image: str, links: list[str]) -> bytes:
    head = ('<link rel="stylesheet" href="/css/site.css"><link rel="icon" href="/favicon.ico">'
            '<script src="/js/app.js"></script>')
    img = (f'<img src="{image}.png" srcset="{image}-2x.png 2x" alt="photo">'
           f'<img src="http://{CDN_HOST}:{port}/img/shared.png" alt="shared">') if image else ""
    page = html(title, links, "a page that needs its stylesheet and images").decode()
    return page.replace("</head>", head + "</head>").replace("</h1>", "</h1>" + img).encode()


def route(host: str, path: str, port: int) -> Reply | None:
    """The answer of styled.test or styled-cdn.test for ``path``, or None (not found)."""
    if host == CDN_HOST:
        return reply(200, body(path), content_type="image/png") if path == "/img/shared.png" else None
    if host != STYLED_HOST:
        return None
    if path == "/":
        return reply(200, _page("styled", port, "", [f"/page/{i}" for i in range(PAGES)]))
    if path.startswith("/page/") and path[6:].isdigit() and int(path[6:]) < PAGES:
        i = int(path[6:])
        links = [f"/page/{(i + 1) % PAGES}", f"/img/photo-{i}.png"]  # the second: skip_extensions
        return reply(200, _page(f"styled {i}", port, f"/img/photo-{i}", links))
    if path in _CSS or path in _FILES:
        ext = path[path.rfind("."):]
        return reply(200, body(path), content_type=_TYPES[ext])
    return None
