"""``bad.web.test/directives/``: pages that say how to crawl them, in their head or their HTML.

Pure, like :mod:`localweb.sitegraph.endpoints` (which routes ``/directives/...`` here):
:func:`answer` maps a path to an :class:`~localweb.sitegraph.endpoints.Answer`. Each
page names what a correct crawl does with it, so a test judges the crawl
from the server's request log and the results file:

===================================  ==================================================
``/directives/canonical-html``       ``<link rel=canonical>`` in its head (relative)
``/directives/canonical-header``     ``Link: <...>; rel="canonical"``
``/directives/noindex``              ``<meta name=robots content=noindex>``: a
                                     product page whose item must not be stored
``/directives/xrt-nofollow``         ``X-Robots-Tag: ringcrawl: nofollow``: its links
                                     (``/directives/never/*``) are never requested
``/directives/xrt-otherbot``         ``X-Robots-Tag: otherbot: nofollow, noindex``:
                                     not for us, its link is followed
``/directives/frames``               a frameset of two frames and an iframe page
``/directives/refresh``              ``<meta http-equiv=refresh content="0; URL='...'">``
``/directives/link-rel``             ``<link rel=next>`` (followed only with
                                     ``crawl.follow_link_rel``) and a stylesheet
``/directives/<anything else>``      a plain page with no links
===================================  ==================================================
"""

from __future__ import annotations

__all__ = ["CANONICAL", "FRAME_TARGETS", "LINK_REL_TARGET", "NEVER", "PREFIX", "REFRESH_TARGET",
           "TARGETS", "answer_parts"]

PREFIX = "/directives/"
#: The canonical URL both canonical pages name (a path on bad.web.test).
CANONICAL = "/directives/the-canonical"
#: Paths a crawler that honours X-Robots-Tag for its own token never requests.
NEVER = ("/directives/never/1", "/directives/never/2")
FRAME_TARGETS = ("/directives/frame/top", "/directives/frame/main", "/directives/frame/inline")
REFRESH_TARGET = "/directives/refreshed"
LINK_REL_TARGET = "/directives/page/2"
#: The pages a default crawl seeded with every page above requests.
TARGETS = ("/directives/canonical-html", "/directives/canonical-header", "/directives/noindex",
           "/directives/xrt-nofollow", "/directives/xrt-otherbot", "/directives/frames",
           "/directives/refresh", "/directives/link-rel")

Headers = tuple[tuple[bytes, bytes], ...]
_HTML: Headers = ((b"content-type", b"text/html; charset=utf-8"),)


def _page(title: str, head: str = "", body: str = "") -> bytes:
    return (f"<!DOCTYPE html>\n<html><head><title>{title}</title>{head}</head>"
            f"<body>{body}</body></html>\n").encode()


def answer_parts(path: str) -> tuple[int, Headers, bytes]:
    """(status, headers, body) of a ``/directives/`` path."""
    name = path[len(PREFIX):]
    if name == "canonical-html":
        return 200, _HTML, _page("Canonical in HTML", '<link rel="canonical" href="the-canonical">',
                                 '<a href="/directives/plain/1">one</a>'
                                 # A canonical in the body is user content, never the page's.
                                 '<link rel=canonical href="/directives/body-canonical">')
    if name == "canonical-header":
        return 200, _HTML + ((b"link", b'</style.css>; rel=preload; as="style", '
                                       b'<' + CANONICAL.encode() + b'>; rel="canonical"'),), \
            _page("Canonical in the header", body='<a href="/directives/plain/2">two</a>')
    if name == "noindex":
        return 200, _HTML, _page("A noindexed product", '<meta name="robots" content="NOINDEX">',
                                 '<h1 class="product">Hidden product</h1>'
                                 '<a href="/directives/plain/3">three</a>')
    if name == "xrt-nofollow":
        headers = _HTML + ((b"x-robots-tag", b"otherbot: noindex"),
                           (b"x-robots-tag", b"ringcrawl: nofollow"))
        return 200, headers, _page("Nofollow by header", body="".join(
            f'<a href="{p}">never</a>' for p in NEVER))
    if name == "xrt-otherbot":
        headers = _HTML + ((b"x-robots-tag", b"otherbot: nofollow, noindex"),
                           (b"x-robots-tag", b"unavailable_after: 25 Jun 2010 15:00:00 PST"))
        return 200, headers, _page("Not for us", body='<a href="/directives/plain/4">four</a>')
    if name == "frames":
        return 200, _HTML, (
            "<!DOCTYPE html>\n<html><head><title>Frames</title></head>"
            f'<frameset rows="20%,80%"><frame src="{FRAME_TARGETS[0]}">'
            f"<frame src='{FRAME_TARGETS[1]}'></frameset></html>\n").encode()
    if name == "frame/main":
        return 200, _HTML, _page("Main frame", body=f'<iframe src="{FRAME_TARGETS[2]}"></iframe>')
    if name == "refresh":
        return 200, _HTML, _page("Moved", f'<meta http-equiv="Refresh" content="0;  URL=\'{REFRESH_TARGET}\'">')
    if name == "link-rel":
        return 200, _HTML, _page("Page 1", f'<link rel="next" href="{LINK_REL_TARGET}">'
                                           '<link rel="stylesheet" href="/directives/style.css">'
                                           '<link rel="alternate stylesheet" href="/directives/alt.css">')
    return 200, _HTML, _page(name or "directives")
