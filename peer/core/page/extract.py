"""Link and metadata extraction from a fetched HTML page.

The engine parses only HTML (:func:`is_html`), decodes it (:func:`decode_html`)
and takes from the tree (:func:`parse_page`):

- **links** from ``a[href]`` and ``area[href]``, in document order, resolved
  against the document base URL: the first ``<base href>`` in tree order,
  itself resolved against the page URL (HTML Living Standard §2.4.1 "document
  base URL"; a base that does not resolve is ignored, as in browsers). Each is
  normalised with :func:`peer.core.urls.normalize.normalize_link`, so non-http(s) links
  (``mailto:``, ``javascript:``...) drop out, and deduped keeping the first
  occurrence. A link whose ``rel`` token list (ASCII-whitespace separated,
  case-insensitive; HTML §4.6.7) holds ``nofollow`` is skipped;
- more link sources, each a switch of :class:`PageRules` (``crawl.follow_*``),
  into the same list, deduped with the anchors' links and cut at the same
  cap: ``<frame src>`` and ``<iframe src>`` and the URL of a ``<meta
  http-equiv=refresh>`` (on by default: a browser loads them without a
  click, so they are part of the page as a reader sees it), and ``<link
  rel=next|prev|previous|alternate href>`` (off by default: alternates are
  mostly the same page in other languages or formats, feeds and print
  versions, which multiply a crawl; ``alternate stylesheet`` and icons are
  never links). :attr:`Page.via` names the links each source brought;
- ``<meta name=robots content=...>`` and ``<meta name=TOKEN>`` (the
  crawler's product token): ``noindex``, ``nofollow``, ``none``
  (``peer.core.page.directives`` rule 1; several such tags add up). A nofollow
  page yields no links at all;
- the **canonical** URL: the first ``<link rel=canonical href>`` among the
  head's children, resolved and normalised like a link
  (``peer.core.page.directives`` rule 3);
- the **title**: the first ``<title>``, stripped, whitespace collapsed,
  capped at :data:`MAX_TITLE` characters.

Only the parsed tree is read: lexbor (selectolax) is a conforming HTML5
parser, so URLs inside ``<script>`` text, comments, ``<template>`` and
``<textarea>`` are never elements and never links. The local test web plants
trap URLs in all of those (``localweb/sitegraph/pages.py``; ``localweb.sitegraph.oracle.trap_urls``).

**Charset** (WHATWG Encoding Standard, simplified): a byte order mark wins;
then the HTTP ``charset`` parameter; then a ``<meta charset>`` or
``<meta http-equiv=content-type content="...; charset=...">`` in the first
1024 bytes (HTML §13.2.3.2 prescan; comments skipped); else UTF-8. Labels map
as browsers map them: ``iso-8859-1``/``latin1``/``ascii`` are windows-1252,
a UTF-16 label found by the meta prescan means UTF-8. A label Python does not
know, a non-text codec (``base64``, ``rot13``), or one browsers refuse
(``utf-7``: an XSS vector, so HTML §13.2.3.1 forbids it) falls through to the
next source. Decoding always uses ``errors="replace"``: no input raises.

Speed: UTF-8 bodies go to lexbor as bytes (it decodes them itself, with the
same replacement as Python, and skips the str -> UTF-8 copy selectolax makes
of a str). One CSS query collects every element of interest in tree order
(one walk instead of four), and a repeated href is normalised once. On a
40 KB page with 100 links, normalising costs about as much as the parse
(~0.45 ms each on the 2-core test box).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from selectolax.lexbor import LexborHTMLParser, LexborNode

from peer.core.page.directives import html_canonical, refresh_url, robots_rules
from peer.core.urls.normalize import normalize_link

if TYPE_CHECKING:
    from peer.core.urls.rules import ParamRules

__all__ = ["FRAME", "LINK_REL", "MAX_TITLE", "REFRESH", "Page", "PageRules", "decode_html", "is_html", "parse_page", "parse_tree"]

#: Characters of a title kept; the rest is cut (a results column, not a document).
MAX_TITLE = 1000

_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# parse_page: the elements it reads, and the page size up to which selecting
# them beats walking every element (its docstring has the figures).
_SELECT = "a, area, title, base, meta, link, frame, iframe"
# <link rel> types that name another page of the site (HTML §4.6.7); a
# stylesheet or icon among a link's types makes it none.
_REL_PAGES = frozenset({"next", "prev", "previous", "alternate"})
_REL_NOT_PAGES = frozenset({"stylesheet", "icon", "apple-touch-icon", "manifest", "preload",
                            "prefetch", "modulepreload", "dns-prefetch", "preconnect", "nofollow"})
_SELECT_MAX = 64 * 1024
# WHATWG MIME Sniffing §7.1: these mean "no usable type", so the body decides.
_UNKNOWN_TYPES = frozenset({"", "unknown/unknown", "application/unknown", "*/*"})

# WHATWG MIME Sniffing §7.1 "rules for identifying an unknown MIME type", the
# HTML rows: a case-insensitive pattern after leading whitespace, followed by
# a tag-terminating byte (space or ">"). "<?xml" is XML, not listed.
_SNIFF = re.compile(
    rb"[\t\n\x0c\r ]*(?:<!doctype html|<html|<head|<script|<iframe|<h1|<div|<font|<table"
    rb"|<a|<style|<title|<b|<body|<br|<p|<!--)[ >]",
    re.I,
)
_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# The meta prescan looks at 1024 bytes (HTML §13.2.3.2). Comments are removed
# first: "<!-- <meta charset=koi8-r> -->" declares nothing.
_PRESCAN = 1024
_COMMENT = re.compile(rb"<!--.*?(?:-->|\Z)", re.S)
_META_CHARSET = re.compile(
    rb"<meta\s[^>]*?charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:+\-]{1,40})", re.I
)

# WHATWG Encoding §4.2 label aliases where Python's codec differs from what a
# browser uses; everything else goes to Python's codec registry.
_ALIASES = {
    label: "cp1252"
    for label in ("ascii", "us-ascii", "ansi_x3.4-1968", "iso-8859-1", "iso8859-1",
                  "iso_8859-1", "iso88591", "latin1", "l1", "cp819", "ibm819",
                  "iso-ir-100", "csisolatin1", "windows-1252", "x-cp1252", "cp1252",
                  "x-user-defined")
}
_ALIASES.update({"iso-8859-9": "cp1254", "latin5": "cp1254", "l5": "cp1254",
                 "iso-8859-11": "cp874", "tis-620": "cp874",
                 "gb2312": "gb18030", "gbk": "gb18030", "x-gbk": "gb18030"})
# Python codecs that browsers refuse or that are not text encodings of a web page.
_REFUSED = frozenset({"utf-7", "unicode-escape", "raw-unicode-escape", "idna", "punycode",
                      "undefined", "mbcs", "oem", "charmap", "palmos"})


@dataclass(frozen=True, slots=True)
class PageRules:
    """What :func:`parse_page` reads besides anchors (``crawl.follow_*``), and for whom."""

    agent: str = ""  # the product token, lower case: <meta name=TOKEN> is ours
    frames: bool = True
    refresh: bool = True
    link_rel: bool = False


#: The link sources other than ``a``/``area`` (``Page.via``'s names).
FRAME, REFRESH, LINK_REL = "frame", "refresh", "link"


@dataclass(frozen=True, slots=True)
class Page:
    """What the engine keeps from one HTML page."""

    title: str | None
    links: tuple[str, ...]  # absolute, normalised, document order, deduped
    noindex: bool  # from <meta name=robots|TOKEN>
    nofollow: bool  # likewise: then links == ()
    n_links: int  # distinct links on the page (more than len(links) when cut at max_links)
    canonical: str | None = None  # normalised; None when absent or not a crawlable URL
    via: tuple[tuple[str, str], ...] = ()  # (link, FRAME | REFRESH | LINK_REL) of links not from <a>
    cleaned: int = 0  # links whose parameters the rules changed (crawl.strip_params, sort_query)


def is_html(content_type: str, body: bytes) -> bool:
    """Is this response HTML? By its media type; sniffed when it has none."""
    ctype = content_type.partition(";")[0].strip().lower() if content_type else ""
    if ctype in _HTML_TYPES:
        return True
    if ctype not in _UNKNOWN_TYPES:
        return False
    head = body[:512]
    if head.startswith(codecs.BOM_UTF8):
        head = head[3:]
    return _SNIFF.match(head) is not None


@lru_cache(maxsize=256)
def _codec(label: str, from_meta: bool = False) -> str | None:
    """The Python codec for a charset label, or None if unusable."""
    label = label.strip().strip("\"'").strip().lower()
    if not label or len(label) > 40:
        return None
    name = _ALIASES.get(label)
    if name is None:
        try:
            name = codecs.lookup(label).name
            # Bytes-to-bytes codecs (base64, zlib, rot13...) refuse bytes.decode
            # of a non-empty input ("not a text encoding"); "undefined" raises.
            b"x".decode(name, "replace")
        except (LookupError, ValueError, TypeError, UnicodeError):
            return None
        if name in _REFUSED:
            return None
    if from_meta and name.startswith("utf-16"):
        # HTML §13.2.3.2: a document that could read its own meta as ASCII is
        # not UTF-16, whatever it says.
        return "utf-8"
    return name


def _sniff_codec(body: bytes, charset: str | None) -> tuple[str, int]:
    """(codec, bytes of BOM to skip)."""
    for bom, name in _BOMS:
        if body.startswith(bom):
            return name, len(bom)
    if charset:
        codec = _codec(charset)
        if codec is not None:
            return codec, 0
    head = body[:_PRESCAN]
    if b"<!--" in head:
        head = _COMMENT.sub(b"", head)
    for m in _META_CHARSET.finditer(head):
        codec = _codec(m.group(1).decode("ascii"), True)
        if codec is not None:
            return codec, 0
    return "utf-8", 0


def decode_html(body: bytes, charset: str | None) -> str:
    """The text of an HTML body: BOM, then ``charset``, then ``<meta>``, then UTF-8."""
    name, skip = _sniff_codec(body, charset)
    return _decode(body, name, skip)


def _decode(body: bytes, name: str, skip: int) -> str:
    try:
        return (body[skip:] if skip else body).decode(name, "replace")
    except (LookupError, UnicodeError):  # a codec that cannot even replace
        return body.decode("utf-8", "replace")


def _title(text: str | None) -> str | None:
    if not text:
        return None
    title = " ".join(text.split())[:MAX_TITLE]
    if not title:
        return None
    try:
        title.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: the results file needs UTF-8
        title = title.encode("utf-8", "replace").decode("utf-8")
    return title


def parse_tree(body: bytes, charset: str | None = None) -> LexborHTMLParser:
    """The parsed document, for :func:`parse_page` and the extraction rules to share."""
    name, skip = _sniff_codec(body, charset)
    if name == "utf-8":
        # lexbor decodes UTF-8 itself, replacing bad bytes as Python would;
        # handing it the bytes saves a ~20% str -> UTF-8 round trip.
        return LexborHTMLParser(body[skip:] if skip else body)
    return LexborHTMLParser(_decode(body, name, skip))


def parse_page(url: str, body: bytes, charset: str | None = None,
               tree: LexborHTMLParser | None = None, *, max_links: int = 0,
               params: ParamRules | None = None, rules: PageRules = PageRules()) -> Page:
    """Links, title, meta robots and canonical URL of the HTML page ``body`` fetched from ``url``.

    ``tree``: the document already parsed by :func:`parse_tree` (then ``body``
    is not parsed again). ``max_links``: keep the first that many distinct
    links in document order (0: all), whatever their source; the rest of the
    document is only counted. ``params``: the crawl's parameter rules, applied
    to each link (so its tracking variants are one link). ``rules``: the link
    sources besides anchors, and the product token a ``<meta name>`` may
    address. Never raises on bad input: garbage bytes give a Page (most
    likely empty).

    Why a walk in document order and not a CSS selection: reading a node's
    attributes is the cost (a link farm's 2 MiB page, 59,711 links: 28 ms to
    select them, 36 ms to read their hrefs, 330 ms to normalise them), and a
    walk can stop reading at the cap. Past ``max_links`` distinct hrefs only
    tags are looked at (6 ms for all 59,716 nodes), so one page costs about
    what its first ``max_links`` links cost. ``<base>`` and ``<meta
    name=robots>`` belong in the head (HTML §4.2), so stopping there misses
    nothing a conforming page says. A page of at most :data:`_SELECT_MAX`
    bytes is read through one CSS selection instead, in the same tree order:
    on the 30 KB pages of the 49-host bench web (357 elements, 18 links) the
    walk cost 65 us and the selection 26 us, and so small a page cannot
    hold enough links for the cap to matter.
    """
    if tree is None:
        tree = parse_tree(body, charset)
    hrefs: dict[str, str] = {}  # href -> its source ("" for a and area)
    base_href: str | None = None
    canonical: str | None = None
    seen_canonical = False
    agent = rules.agent
    title: str | None = None
    seen_title = False
    noindex = nofollow = False
    more = 0  # links past the cap: counted, not read
    root = tree.root
    nodes: Iterable[LexborNode]
    if root is None:
        nodes = ()
    elif len(body) <= _SELECT_MAX:
        nodes = tree.css(_SELECT)
    else:
        nodes = root.traverse()
    for node in nodes:
        tag = node.tag
        if tag == "a" or tag == "area":
            if max_links and len(hrefs) >= max_links:
                more += 1
                continue
            attrs = node.attributes
            href = attrs.get("href")
            if href is None:
                continue
            rel = attrs.get("rel")
            if rel and "nofollow" in rel.lower().split():
                continue
            if href not in hrefs:
                hrefs[href] = ""
        elif more:
            continue
        elif tag == "link":
            attrs = node.attributes
            rel = attrs.get("rel")
            href = attrs.get("href")
            if not rel or href is None:
                continue
            types = set(rel.lower().split())
            if "canonical" in types:
                parent = node.parent
                if not seen_canonical and parent is not None and parent.tag == "head":
                    seen_canonical = True
                    canonical = html_canonical(href)
            elif (rules.link_rel and types & _REL_PAGES and not types & _REL_NOT_PAGES
                  and not (max_links and len(hrefs) >= max_links)):
                hrefs.setdefault(href, LINK_REL)
        elif tag == "frame" or tag == "iframe":
            src = node.attributes.get("src")
            if rules.frames and src is not None and not (max_links and len(hrefs) >= max_links):
                hrefs.setdefault(src, FRAME)
        elif tag == "title":
            if not seen_title:
                seen_title = True
                title = _title(node.text())
        elif tag == "base":
            if base_href is None:
                base_href = node.attributes.get("href")
        elif tag == "meta":
            attrs = node.attributes
            meta_name = attrs.get("name")
            if meta_name:
                meta_name = meta_name.strip().lower()
                if meta_name == "robots" or (agent and meta_name == agent):
                    no_index, no_follow = robots_rules(attrs.get("content") or "")
                    noindex |= no_index
                    nofollow |= no_follow
            elif rules.refresh and (attrs.get("http-equiv") or "").strip().lower() == "refresh":
                target = refresh_url(attrs.get("content") or "")
                if target is not None and not (max_links and len(hrefs) >= max_links):
                    hrefs.setdefault(target, REFRESH)
    base = url
    if base_href is not None:
        base = normalize_link(url, base_href) or url
    if canonical is not None:
        canonical = normalize_link(base, canonical, params)
    if nofollow or not hrefs:
        return Page(title, (), noindex, nofollow, 0, canonical)
    links: dict[str, str] = {}
    cleaned = 0
    for href, source in hrefs.items():
        if params is None:
            target = normalize_link(base, href)
        else:
            # Normalised once, then the rules applied (ParamRules.clean: the
            # same object when nothing changes), so the changed ones are
            # counted for an operator to see what the rules merge. A link
            # under MAX_URL_LENGTH only once stripped takes the rules' way.
            plain = normalize_link(base, href)
            target = params.clean(plain) if plain is not None else normalize_link(base, href, params)
            if plain is not None and target is not plain:
                cleaned += 1
        if target is None:
            continue
        if target not in links:
            links[target] = source
    out = tuple(links)
    via = tuple((link, source) for link, source in links.items() if source)
    # Past the cap the a/area elements stand for the page's link count
    # (nofollow and repeated ones included): reading them is what the cap saves.
    return Page(title, out, noindex, nofollow, len(out) + more, canonical, via, cleaned)
