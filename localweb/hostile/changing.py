"""changing.test: a host whose pages change on a schedule, served live (pure).

The served twin of :mod:`localweb.sims.changes`'s model, for a continuous crawl
over real sockets: ``/`` links ``fast_pages`` pages under ``/fast/`` whose
content changes every ``FAST_PERIOD`` seconds of wall time and
``static_pages`` under ``/static/`` that never change. Validators are split
as in the model, so both of RFC 9110's conditional requests are exercised:
pages with an even number send an ``ETag`` and answer a matching
``If-None-Match`` with a 304 (§13.1.2); odd ones send a ``Last-Modified``
(the start of their current version) and answer an ``If-Modified-Since``
at or after it with a 304 (§13.1.3). ``/`` itself never changes and sends
both. The hostile web (:mod:`localweb.hostile.server`) routes the host here with
the request's two validators.

Under ``/framed/`` (linked from nowhere else: seed it) are pages that never
change, in each framing a WARC record must keep right (peer/core/warc/record.py
rules 1 and 2): ``plain`` with a Content-Length, ``gzip`` (Content-Encoding)
with a Content-Length, and ``chunked``: gzip sent in chunks. Each comes
without validators (``/framed/gzip``: every revisit is a 200 of the same
bytes) and with an ETag (``/framed/gzip-etag``: a 304 to each revisit).
``/framed/not-modified`` (linked from nowhere) is a broken server's page: a
304 to every request, the first one too, which had no validators.
"""

from __future__ import annotations

import email.utils
import gzip
import math

from localweb.hostile.wire import Reply, chunked, html, reply

__all__ = ["CHANGE_HOST", "FAST_PERIOD", "FAST_PAGES", "FRAMED", "STATIC_PAGES", "answer", "framed_page", "version"]

CHANGE_HOST = "changing.test"
#: Seconds between two versions of a fast page: a few, so a bounded run sees many.
FAST_PERIOD = 3.0
FAST_PAGES = 4
STATIC_PAGES = 4
#: Versions count from this epoch second, so a page's Last-Modified is stable across runs.
EPOCH = 1_700_000_000.0


def version(path: str, now: float) -> int:
    """The version ``path`` is at on wall time ``now``: 0 forever unless it is a fast page."""
    if path.startswith("/fast/"):
        return math.floor((now - EPOCH) / FAST_PERIOD)
    return 0


def _since(path: str, now: float) -> float:
    """When the current version of ``path`` began (its Last-Modified)."""
    return EPOCH + version(path, now) * FAST_PERIOD if path.startswith("/fast/") else EPOCH


#: The pages under ``/framed/`` (module docstring).
FRAMED = tuple(f"/framed/{framing}{etag}" for framing in ("plain", "gzip", "chunked") for etag in ("", "-etag"))


def framed_page(path: str) -> bytes:
    """The page ``path`` under ``/framed/`` is, decoded: what a replay of any of its captures shows."""
    if path == "/framed/":
        return html("framed", FRAMED, "pages in each framing")
    return html(path, (), " ".join(f"{path} word {i}" for i in range(300)))


def _framed(path: str, if_none_match: str | None) -> Reply:
    if path == "/framed/not-modified":
        return reply(304, b"", headers=[("ETag", '"nm"')], content_type=None)
    if path != "/framed/" and path not in FRAMED:
        return reply(404, html("not found"))
    body = framed_page(path)
    headers = [("ETag", '"framed-1"')] if path.endswith("-etag") else []
    if headers and if_none_match is not None and '"framed-1"' in if_none_match:
        return reply(304, b"", headers=headers, content_type=None)
    framing = path[len("/framed/"):].split("-")[0]
    if framing in ("", "plain"):
        return reply(200, body, headers=headers)
    packed = gzip.compress(body, mtime=0)   # the same bytes each time: identical payloads
    headers.append(("Content-Encoding", "gzip"))
    if framing == "gzip":
        return reply(200, packed, headers=headers)
    lines = ["HTTP/1.1 200 OK", f"Date: {email.utils.formatdate(usegmt=True)}",
             "Content-Type: text/html; charset=utf-8", *(f"{k}: {v}" for k, v in headers),
             "Transfer-Encoding: chunked"]
    parts = [packed[i:i + 500] for i in range(0, len(packed), 500)]
    return Reply(("\r\n".join(lines) + "\r\n\r\n").encode(), chunked(parts), status=200)


def answer(path: str, now: float, if_none_match: str | None, if_modified_since: str | None) -> Reply:
    """The answer for ``path`` on wall time ``now`` to a GET with these validators."""
    if path.startswith("/framed/"):
        return _framed(path, if_none_match)
    if path == "/":
        links = [f"/fast/{i}" for i in range(FAST_PAGES)] + [f"/static/{i}" for i in range(STATIC_PAGES)]
        body, number = html("changing", links, "pages that change, and pages that do not"), 0
    else:
        kind, _, tail = path[1:].partition("/")
        count = {"fast": FAST_PAGES, "static": STATIC_PAGES}.get(kind)
        if count is None or not tail.isdigit() or int(tail) >= count:
            return reply(404, html("not found"))
        number = int(tail)
        body = html(f"{kind} {number}", (), f"version {version(path, now)}")
    etag = f'"v{version(path, now)}"'
    modified = _since(path, now)
    headers: list[tuple[str, str]] = []
    if number % 2 == 0:
        headers.append(("ETag", etag))
    if number % 2 == 1 or path == "/":
        headers.append(("Last-Modified", email.utils.formatdate(modified, usegmt=True)))
    fresh = False
    if if_none_match is not None and number % 2 == 0:
        fresh = etag in [t.strip() for t in if_none_match.split(",")]
    elif if_modified_since is not None and number % 2 == 1:
        try:
            fresh = email.utils.parsedate_to_datetime(if_modified_since).timestamp() >= modified
        except (TypeError, ValueError, IndexError, OverflowError):
            fresh = False
    if fresh:
        return reply(304, b"", headers=headers, content_type=None)
    return reply(200, body, headers=headers)
