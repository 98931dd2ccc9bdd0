"""A page's requisites: what a browser loads to show it, read from its HTML and its stylesheets (pure).

A captured page replays as it looked only if the archive also holds what
the page embeds. The crawl fetches these *requisites* (``[warc] requisites``,
``peer.core.crawl.requisites`` decides their path) and this module finds them:

- :func:`html_requisites`, from a parsed page, in document order, resolved
  against the document base URL (the first ``<base href>``, as links are):

  ========================  ================================================
  element                   attribute
  ========================  ================================================
  ``link``                  ``href`` when ``rel`` holds ``stylesheet``,
                            ``icon``, ``apple-touch-icon``(``-precomposed``),
                            ``mask-icon``, or ``preload``/``modulepreload``
                            with ``as`` a style, script, font or image
                            (HTML §4.6.7; ``alternate stylesheet`` is left
                            out: a browser does not load it until chosen)
  ``img``                   ``src``, ``srcset`` (every candidate)
  ``source``                ``srcset`` (``<picture>``; a media ``src`` is
                            left out: audio and video can be any size)
  ``script``                ``src``
  ``frame``, ``iframe``     ``src``
  ``video``                 ``poster``
  ``input type=image``      ``src``
  ``embed`` / ``object``    ``src`` / ``data``
  ``body``                  ``background``
  ``style`` element, any    ``@import`` and ``url()`` in the text (CSS)
  ``style`` attribute
  ========================  ================================================

- :func:`css_requisites`, from a stylesheet's text: ``@import`` (a string
  or a ``url()``) and every ``url()`` (fonts in ``@font-face``, background
  images, cursors), resolved against the stylesheet's own URL (CSS Values
  and Units 4 §4.5.1: a relative URL in a stylesheet is relative to it).
  A regular expression over the text with comments removed, as Heritrix's
  ``ExtractorCSS`` and wget's ``css-url.c`` do it: a full CSS parser
  would find the same URLs (CSS Syntax 3 §4.3.6 "consume a url token" and
  the string form ``url("...")``) at ten times the cost.

What is never a requisite: ``data:`` URIs (the bytes are in the page
already), a fragment alone (``url(#clip)`` names a part of the document),
anything :func:`peer.core.urls.normalize.normalize_link` refuses (not
http(s), malformed), and the page's own URL. The result is deduped keeping
the first occurrence, normalised with the crawl's parameter rules (so a
requisite is one URL of the seen set, like a link). Never raises on bad
input.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from peer.core.urls.normalize import normalize_link

if TYPE_CHECKING:
    from selectolax.lexbor import LexborHTMLParser

    from peer.core.urls.rules import ParamRules

__all__ = ["css_requisites", "css_urls", "decode_css", "html_requisites", "is_css", "srcset_urls"]

# The elements html_requisites reads, in one selection (tree order).
_SELECT = ("base[href], link[href], img, source[srcset], script[src], frame[src], iframe[src], "
           "video[poster], input[src], embed[src], object[data], body[background], style, [style]")
_REL_TYPES = frozenset({"stylesheet", "icon", "apple-touch-icon", "apple-touch-icon-precomposed", "mask-icon"})
_PRELOAD_AS = frozenset({"style", "script", "font", "image"})

_CSS_COMMENT = re.compile(r"/\*.*?(?:\*/|\Z)", re.S)
# url( "x" ) | url( 'x' ) | url( x ), and @import "x" | @import 'x' (the url() form
# of @import is the first pattern's). CSS Syntax 3 §4.3.6: an unquoted url token
# ends at whitespace or ")", and holds no quote or "(".
_CSS_URL = re.compile(
    r"""url\(\s*(?:"([^"\n]*)"|'([^'\n]*)'|([^\s"'()]*))\s*\)"""
    r"""|@import\s+(?:"([^"\n]*)"|'([^'\n]*)')""",
    re.I,
)
_CSS_CHARSET = re.compile(rb'@charset\s+"([A-Za-z0-9_.:+\-]{1,40})"\s*;')
_CSS_TYPES = frozenset({"text/css"})


def is_css(content_type: str | None, url: str) -> bool:
    """Whether a fetched requisite is a stylesheet: by its media type, or its name when it has none."""
    ctype = (content_type or "").partition(";")[0].strip().lower()
    if ctype:
        return ctype in _CSS_TYPES
    path = url.partition("?")[0].lower()
    return path.endswith(".css")


def decode_css(body: bytes, charset: str | None) -> str:
    """A stylesheet's text: the HTTP charset, else its ``@charset`` rule, else UTF-8 (CSS Syntax 3 §3.2)."""
    for label in (charset, _css_charset(body)):
        if label:
            try:
                return body.decode(label, "replace")
            except (LookupError, ValueError, UnicodeError):
                continue
    return body.decode("utf-8", "replace")


def _css_charset(body: bytes) -> str | None:
    m = _CSS_CHARSET.match(body[:128])
    return m.group(1).decode("ascii") if m else None


def css_urls(text: str) -> list[str]:
    """The URLs a stylesheet's text names (``@import`` and ``url()``), unresolved, in order."""
    if "/*" in text:
        text = _CSS_COMMENT.sub(" ", text)
    # The tokens found with str.find and the pattern matched only there: sre scans a
    # pattern without a literal prefix a character at a time (85 KiB of CSS: 1.8 ms by
    # finditer, 0.2 ms this way, on the 2-core box), and a stylesheet is read on the loop.
    low = text.lower()
    found: list[tuple[int, str]] = []
    for token in ("url(", "@import"):
        i = low.find(token)
        while i >= 0:
            m = _CSS_URL.match(text, i)
            if m is not None:
                href = next((g for g in m.groups() if g is not None), "").strip()
                if href:
                    found.append((i, href))
            i = low.find(token, i + 1)
    found.sort()
    return [href for _, href in found]


def srcset_urls(srcset: str) -> list[str]:
    """The URLs of a ``srcset`` (HTML §4.8.4.3.3 "parse a srcset attribute", without the descriptors).

    A candidate is a URL (a run of non-whitespace; commas at its end end the
    candidate) and then descriptors up to the next comma outside parentheses.
    """
    out: list[str] = []
    i, n = 0, len(srcset)
    while i < n:
        while i < n and (srcset[i].isspace() or srcset[i] == ","):
            i += 1
        start = i
        while i < n and not srcset[i].isspace():
            i += 1
        url = srcset[start:i]
        if url.endswith(","):
            url = url.rstrip(",")
        else:
            depth = 0
            while i < n:
                c = srcset[i]
                if c == "(":
                    depth += 1
                elif c == ")":
                    depth = max(0, depth - 1)
                elif c == "," and depth == 0:
                    break
                i += 1
        if url:
            out.append(url)
    return out


class _Found:
    """Resolved, normalised, deduped requisites in order."""

    __slots__ = ("_own", "_params", "urls", "_seen")

    def __init__(self, own: str, params: ParamRules | None) -> None:
        self._own = own
        self._params = params
        self.urls: list[str] = []
        self._seen = {own}

    def add(self, base: str, href: str | None) -> None:
        if href is None:
            return
        href = href.strip()
        if not href or href.startswith("#") or href[:5].lower() == "data:":
            return
        url = normalize_link(base, href, self._params)
        if url is not None and url not in self._seen:
            self._seen.add(url)
            self.urls.append(url)


def css_requisites(url: str, text: str, params: ParamRules | None = None) -> tuple[str, ...]:
    """What the stylesheet at ``url`` with ``text`` loads: its imports, fonts and images (module docstring)."""
    found = _Found(url, params)
    for href in css_urls(text):
        found.add(url, href)
    return tuple(found.urls)


def html_requisites(url: str, tree: LexborHTMLParser, params: ParamRules | None = None) -> tuple[str, ...]:
    """What the page at ``url`` (parsed into ``tree``) embeds, in document order (module docstring)."""
    if tree.root is None:
        return ()
    nodes = tree.css(_SELECT)
    base = url
    for node in nodes:
        if node.tag == "base":
            href = node.attributes.get("href")
            if href is not None:
                base = normalize_link(url, href) or url
            break
    found = _Found(url, params)
    add = found.add
    for node in nodes:
        tag = node.tag
        attrs = node.attributes
        if tag == "link":
            rel = set((attrs.get("rel") or "").lower().split())
            if "alternate" in rel:
                continue
            if rel & _REL_TYPES or (rel & {"preload", "modulepreload"}
                                    and ((attrs.get("as") or "script").strip().lower() in _PRELOAD_AS)):
                add(base, attrs.get("href"))
        elif tag == "img":
            add(base, attrs.get("src"))
            srcset = attrs.get("srcset")
            if srcset:
                for href in srcset_urls(srcset):
                    add(base, href)
        elif tag == "source":
            for href in srcset_urls(attrs.get("srcset") or ""):
                add(base, href)
        elif tag == "script" or tag == "frame" or tag == "iframe" or tag == "embed":
            add(base, attrs.get("src"))
        elif tag == "video":
            add(base, attrs.get("poster"))
        elif tag == "input":
            if (attrs.get("type") or "").strip().lower() == "image":
                add(base, attrs.get("src"))
        elif tag == "object":
            add(base, attrs.get("data"))
        elif tag == "body":
            add(base, attrs.get("background"))
        elif tag == "style":
            for href in css_urls(node.text(deep=True)):
                add(base, href)
        style = attrs.get("style") if tag != "style" else None
        if style:
            for href in css_urls(style):
                add(base, href)
    return tuple(found.urls)
