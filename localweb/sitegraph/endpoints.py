"""``bad.web.test``: the site graph's misbehaving endpoints, as answers a server sends.

Pure: :func:`answer` maps a request target to an :class:`Answer` that says
what to send and how to pace it (``delay`` before the head, ``interval``
between body chunks, ``reset_after`` for a TCP reset), and the server
(:mod:`localweb.sitegraph.server`) does the sleeping and the sending. A body of
unbounded size is a generator made on demand, so 50 MB or 1 GiB is never
held in memory whole.

=================================  ==========================================
``/gzip-bomb?mb=N``                gzip that inflates to N MiB (default 1 GiB)
``/big-cl``, ``/big-chunked``      50 MB bodies, with a Content-Length or not
``/drip?interval=S&count=N``       one byte every S seconds
``/redirect-loop``                 302 to ``/redirect-loop/b`` and back
``/redirect/N``                    a chain of N redirects to ``/redirect/0``
``/malformed``                     broken HTML with NULs and bad UTF-8
``/latin1``, ``/latin1-nocharset`` Latin-1 HTML, with its charset or not
``/reset?after=N``                 N body bytes, then a TCP reset
``/huge-header?kb=N``              one N KiB header
``/status/C?retry_after=S&to=U``   any status 200-999, with Retry-After or
                                   Location (600-999: invalid, RFC 9110 §15)
``/slow?ms=N``                     answers after N ms
``/permalinks``                    documentation whose headings end in a
                                   ``¶`` permalink, as Sphinx writes them
``/tracking``                      links to one page, ``/tracking/page``, by
                                   its tracking and session-id variants
                                   (:data:`TRACKING_LINKS`), to a search and
                                   to files; ``/tracking/...`` answers 200
``/directives/...``                pages with canonical, robots directives,
                                   frames, refresh (:mod:`localweb.sitegraph.directives`)
``/session``, ``/session/...``     pages served only with the session cookie
                                   the first sets (:mod:`localweb.sitegraph.session`)
=================================  ==========================================

These hosts are linked only when the graph's ``SiteSpec.link_bad`` asks, so
ordinary crawls are not slowed; tests request them directly.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import parse_qsl

from localweb.sitegraph import directives

from localweb.sitegraph import session

__all__ = [
    "Answer", "BAD_HOST", "BAD_LINKED", "BIG_BODY", "BOMB_SIZE", "LATIN1", "LATIN1_TITLE",
    "MALFORMED", "PERMALINKS", "PERMALINK_HEADINGS", "TRACKING_LINKS", "answer", "gzip_bomb", "redirect_target", "small_html",
]

BAD_HOST = "bad.web.test"
BAD_LINKED = ("/gzip-bomb", "/big-cl", "/big-chunked", "/drip", "/redirect-loop", "/malformed",
              "/latin1", "/latin1-nocharset", "/reset", "/huge-header", "/redirect/3",
              "/status/404", "/status/410", "/slow?ms=300")
BIG_BODY = 50 * 1024 * 1024
BOMB_SIZE = 1 << 30
_CHUNK = 64 * 1024
FILLER = (b"<p>" + b"x" * 1017 + b"</p>\n") * 64  # 64 KiB of HTML-ish filler
_bomb_cache: dict[int, bytes] = {}

Headers = tuple[tuple[bytes, bytes], ...]


@dataclass(frozen=True, slots=True)
class Answer:
    """What the server sends for one request.

    ``body`` is sent with a Content-Length; a ``stream`` (a generator made
    when sending starts) is sent chunk by chunk, ``interval`` seconds apart,
    and the connection closes after it. ``delay`` seconds pass before the
    head. ``reset_after`` >= 0: send a 200 head (when > 0) and that many
    filler bytes, then reset the connection.
    """

    status: int
    headers: Headers
    body: bytes = b""
    stream: Callable[[], Iterator[bytes]] | None = None
    interval: float = 0.0
    delay: float = 0.0
    reset_after: int = -1


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


def redirect_target(path: str) -> str | None:
    """Where a redirect endpoint points (a path on this host), or None."""
    if path == "/redirect-loop":
        return "/redirect-loop/b"
    if path == "/redirect-loop/b":
        return "/redirect-loop"
    if path.startswith("/redirect/"):
        n = path[10:]
        if n.isdigit() and 0 < int(n) <= 100:
            return f"/redirect/{int(n) - 1}"
    return None


MALFORMED = (
    b"<html><head><title>Broken page</title><body>\x00\x00<p>unclosed <b>bold <i>italic\n"
    b"<div><table><tr><td>cell\xff\xfe\xc3\x28 invalid utf-8 <p>para \x00 null\n"
    b"<a>no target</a><img src=x <script>var x = '<'; </scr\n<p>\x80\x81\x82 &bogus; &#xD800; "
    b"<<<>>> </div></div></div>\n" + b"<td>\xe9t\xe9 " * 200 + b"\n<!-- unterminated comment"
)
LATIN1 = (
    "<!DOCTYPE html>\n<html><head><title>Café crème brûlée</title></head>\n"
    "<body><h1>Crème brûlée à la française</h1><p>Ça coûte £5, señor. Déjà vu, naïve façade.</p>"
    "</body></html>\n"
).encode("latin-1")
#: The title a crawler decoding /latin1 correctly reads.
LATIN1_TITLE = "Café crème brûlée"


#: The headings of /permalinks (h1, then the h2s) without their permalinks.
PERMALINK_HEADINGS = ("Installation", "From PyPI", "From source")
# Sphinx's HTML writer puts the permalink anchor inside the heading (its
# html_permalinks_icon, "¶" by default), so the heading's text ends in "¶"
# and a rule that takes h1::text gets "Installation¶".
PERMALINKS = (
    "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Installation \u2014 Example 1.0 "
    "documentation</title></head>\n<body><section id=\"installation\">\n"
    + "".join(
        f'<h{1 if i == 0 else 2}>{h}<a class="headerlink" href="#{h.lower().replace(" ", "-")}" '
        f'title="Link to this heading">\u00b6</a></h{1 if i == 0 else 2}>\n<p>Text about {h.lower()}.</p>\n'
        for i, h in enumerate(PERMALINK_HEADINGS))
    + "</section></body></html>\n"
).encode()


#: The hrefs of /tracking: /tracking/page five ways (a crawl that strips
#: tracking and session-id parameters requests it once), a search and two files.
TRACKING_LINKS = (
    "/tracking/page",
    "/tracking/page?utm_source=news&utm_medium=email",
    "page?fbclid=IwAR0x9&UTM_campaign=spring",
    "/tracking/page;jsessionid=0A1B2C3D",
    "/tracking/page?gclid=Cj0K&_ga=2.1#top",
    "/tracking/search?q=books",
    "/tracking/report.PDF",
    "/tracking/photo.jpg",
)


def small_html(title: str, body: str) -> bytes:
    return (f"<!DOCTYPE html>\n<html><head><title>{title}</title></head>"
            f"<body>{body}</body></html>\n").encode()


def _chunks(data: bytes) -> Iterator[bytes]:
    for i in range(0, len(data), _CHUNK):
        yield data[i:i + _CHUNK]


def _filler(size: int) -> Iterator[bytes]:
    # Lazy: 50 MB is never held in memory, only one 64 KiB view at a time.
    view = memoryview(FILLER)
    while size > 0:
        n = min(size, len(FILLER))
        yield bytes(view[:n])
        size -= n


def _drip(count: int) -> Iterator[bytes]:
    for _ in range(count):
        yield b"x"


_HTML: Headers = ((b"content-type", b"text/html; charset=utf-8"),)


def answer(target: str, cookie: str = "") -> Answer:
    """The answer of ``bad.web.test`` to ``target`` (path and query), ``cookie`` its Cookie field."""
    path, _, query = target.partition("?")
    q = dict(parse_qsl(query))

    def qnum(name: str, default: float, lo: float, hi: float) -> float:
        try:
            return min(hi, max(lo, float(q.get(name, default))))
        except ValueError:
            return default

    location = redirect_target(path)
    if location is not None:
        return Answer(302, ((b"location", location.encode()),) + _HTML, b"<p>Moved.</p>\n")
    if path == "/":
        listing = "".join(f"<li>{p}</li>" for p in BAD_LINKED)
        return Answer(200, _HTML, small_html("Bad endpoints", f"<ul>{listing}</ul>"))
    if path == "/gzip-bomb":
        bomb = gzip_bomb(int(qnum("mb", BOMB_SIZE >> 20, 1, 4096)) << 20)
        return Answer(200, _HTML + ((b"content-encoding", b"gzip"),
                                    (b"content-length", str(len(bomb)).encode())),
                      stream=lambda: _chunks(bomb))
    if path in ("/big-cl", "/big-chunked"):
        size = int(qnum("mb", BIG_BODY >> 20, 1, 4096)) << 20
        length = ((b"content-length", str(size).encode()),) if path == "/big-cl" else ()
        return Answer(200, _HTML + length, stream=lambda: _filler(size))
    if path == "/drip":
        interval = qnum("interval", 0.3, 0.001, 10.0)
        count = int(qnum("count", 400, 1, 100000))
        return Answer(200, _HTML, stream=lambda: _drip(count), interval=interval)
    if path == "/malformed":
        return Answer(200, ((b"content-type", b"text/html"),), MALFORMED)
    if path == "/latin1":
        return Answer(200, ((b"content-type", b"text/html; charset=iso-8859-1"),), LATIN1)
    if path == "/latin1-nocharset":
        return Answer(200, ((b"content-type", b"text/html"),), LATIN1)
    if path == "/reset":
        return Answer(200, _HTML + ((b"content-length", str(BIG_BODY).encode()),),
                      reset_after=int(qnum("after", 0, 0, len(FILLER))))
    if path == "/huge-header":
        kb = int(qnum("kb", 200, 1, 10240))
        return Answer(200, _HTML + ((b"x-huge", b"a" * (kb * 1024)),), b"<p>huge header</p>\n")
    if path.startswith("/status/") and path[8:].isdigit() and 200 <= int(path[8:]) <= 999:
        code = int(path[8:])
        extra: list[tuple[bytes, bytes]] = []
        if code in (429, 503):
            extra.append((b"retry-after", str(int(qnum("retry_after", 1, 0, 86400))).encode()))
        if "to" in q:
            extra.append((b"location", q["to"].encode()))
        return Answer(code, _HTML + tuple(extra), f"<p>status {code}</p>\n".encode())
    if path == "/redirect/0":
        return Answer(200, _HTML, small_html("End of chain", "<p>end</p>"))
    if path == "/permalinks":
        return Answer(200, _HTML, PERMALINKS)
    if path == "/tracking":
        # A <base>, so the relative href resolves in /tracking/ (the page's own
        # URL has no trailing slash).
        links = "".join(f'<a href="{h}">{i}</a>' for i, h in enumerate(TRACKING_LINKS))
        return Answer(200, _HTML, small_html("Tracking", f'<base href="/tracking/">{links}'))
    if path.startswith("/tracking/"):
        return Answer(200, _HTML, small_html("Tracked", "<p>one page, many URLs</p>"))
    if path == session.PREFIX or path.startswith(session.PREFIX + "/"):
        return Answer(*session.answer_parts(path, cookie))
    if path.startswith(directives.PREFIX):
        return Answer(*directives.answer_parts(path))
    if path == "/slow":
        return Answer(200, _HTML, small_html("Slow", "<p>slow</p>"), delay=qnum("ms", 1000, 0, 60000) / 1000)
    return Answer(404, _HTML, b"<p>no such endpoint</p>\n")
