"""``bad.web.test/session``: pages served only with the session cookie the first page sets.

Pure, like :mod:`localweb.sitegraph.endpoints` (which routes ``/session...`` here):
:func:`answer_parts` maps a path and the request's ``Cookie`` field to a
status, headers and body. A crawl with cookies on for the host fetches the
gated pages (200); one without gets 403 for each. The request log records
the ``Cookie`` field a crawler sent, so a test judges by it.

====================  ========================================================
``/session``          sets ``sid`` (:data:`SESSION`, ``Path=/session``,
                      ``HttpOnly``, a day's ``Max-Age``), ``theme`` (the
                      default path ``/``), ``wide`` (``Domain=other.test``: a
                      crawler refuses it) and a malformed ``junk``; links
                      to :data:`GATED`
``/session/<name>``   200 and a link to the next gated page with ``sid`` in
                      the Cookie field, else 403
====================  ========================================================
"""

from __future__ import annotations

__all__ = ["GATED", "PREFIX", "SESSION", "SET_COOKIES", "answer_parts", "has_session"]

PREFIX = "/session"
#: The session cookie's value (a secret a crawler must never print).
SESSION = "s3cr3t-7f2a"
#: The gated pages, each linked from the first page and the one before it.
GATED = ("/session/a", "/session/b", "/session/c")
#: The Set-Cookie fields of ``/session``.
SET_COOKIES = (
    f"sid={SESSION}; Path=/session; HttpOnly; Max-Age=86400",
    "theme=dark",
    "wide=1; Domain=other.test",
    "junk",
)

Headers = tuple[tuple[bytes, bytes], ...]
_HTML: Headers = ((b"content-type", b"text/html; charset=utf-8"),)


def has_session(cookie: str) -> bool:
    """Does a Cookie field value carry the session (``sid=SESSION`` among its pairs)?"""
    return any(pair.strip() == f"sid={SESSION}" for pair in cookie.split(";"))


def _page(title: str, links: tuple[str, ...]) -> bytes:
    hrefs = "".join(f'<a href="{h}">{h}</a> ' for h in links)
    return (f"<!DOCTYPE html>\n<html><head><title>{title}</title></head>"
            f"<body><p>{title}</p>{hrefs}</body></html>\n").encode()


def answer_parts(path: str, cookie: str) -> tuple[int, Headers, bytes]:
    """(status, headers, body) of a ``/session`` path for a request with this Cookie value."""
    if path == PREFIX:
        sets = tuple((b"set-cookie", v.encode()) for v in SET_COOKIES)
        return 200, _HTML + sets, _page("Welcome: a session starts", GATED)
    if path in GATED:
        if not has_session(cookie):
            return 403, _HTML, b"<p>no session: start at /session</p>\n"
        after = GATED[GATED.index(path) + 1:][:1]
        return 200, _HTML, _page(f"Members only: {path}", after)
    return 404, _HTML, b"<p>no such page</p>\n"
