"""What a page and its response head say of themselves: robots directives, canonical URL, refresh.

Pure and total: every function takes strings a server sent and returns a
value; nothing raises, and what is malformed is ignored. The callers are
:mod:`peer.core.http.head` (the head's fields), :mod:`peer.core.page.extract` (the
page's ``<meta>`` and ``<link>``) and :mod:`peer.core.crawl.outcomes` (what the
crawl does with them). The rules:

1. **Robots directives** (Google's and Bing's documented syntax for the
   robots meta tag and ``X-Robots-Tag``): a comma-separated,
   case-insensitive list; ``noindex``, ``nofollow``, and ``none`` for
   both. The crawler acts on those two only (positive ones such as
   ``index``/``follow``/``all`` change nothing, since the most restrictive
   rule wins, and the rest concern search results: ``noarchive``,
   ``nosnippet``, ``max-snippet: 20``, ``unavailable_after: <date>``).
   Several sources add up: ``<meta name=robots>``, ``<meta name=TOKEN>``
   (TOKEN our product token, as robots.txt's, ``peer.core.crawl.robots.product_token``),
   every ``X-Robots-Tag`` field.
2. **User-agent scope in X-Robots-Tag**: ``X-Robots-Tag: otherbot: noindex,
   nofollow`` applies only to ``otherbot``; a ``name:`` before a rule names
   the agent the rest of that field value is for, until the next ``name:``.
   A field without one is for every crawler. A ``name:`` that is a rule
   taking a value (``unavailable_after``, ``max-snippet``...) is that rule,
   not an agent: so the dates and numbers in them are never read as rules.
3. **Canonical** (RFC 6596; RFC 8288 for the header): the first
   ``Link: <uri>; rel="canonical"`` of the head (``rel`` is a
   space-separated list of relation types, case-insensitive; a link with an
   ``anchor`` parameter describes another resource, RFC 8288 §3.2, and is
   skipped), and the first ``<link rel=canonical href>`` among the head's
   children (a canonical in the body is ignored, as Google ignores it:
   pages that take user content in the body must not be re-pointed by it).
   Both are resolved by the caller, the header's against the request URL
   (its link context, RFC 8288 §3.2) and the page's against its base URL.
4. **Meta refresh** (HTML Living Standard §4.2.5.3, "shared declarative
   refresh steps", followed step by step): ``5; url='/next'`` -> ``/next``;
   a refresh without a URL reloads the page itself and is no link.

Caps, because a head is hostile input: at most :data:`MAX_FIELDS` fields of
a name are read and each at most :data:`MAX_FIELD` characters of it; a
canonical longer than :data:`MAX_TARGET` or with a control character is
none (``peer.core.http.head`` counts the fields past the caps as malformed).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["MAX_FIELD", "MAX_FIELDS", "MAX_TARGET", "html_canonical", "link_canonical",
           "refresh_url", "robots_rules", "x_robots_tag"]

#: Fields of one name read (X-Robots-Tag, Link); the rest are ignored.
MAX_FIELDS = 16
#: Characters of one field value read; the rest is ignored.
MAX_FIELD = 8192
#: The longest canonical URL taken (RFC 9110 §4.1's 8000, as a Location).
MAX_TARGET = 8000

# Robots rules that take a value after a colon: such a "name:" is no agent.
_VALUED = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})
# "name:" at the start of a comma-separated piece: an agent or a valued rule.
_SCOPE = re.compile(r"\s*([A-Za-z0-9_.-]+)\s*:(.*)", re.S)
_SPLIT = re.compile(r"[,\s]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# RFC 8288 §3: ";" OWS token BWS [ "=" BWS ( token / quoted-string ) ].
_PARAM = re.compile(r"""\s*;\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+\*?)\s*"""
                    r"""(?:=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]*)))?""", re.S)
_QUOTED_PAIR = re.compile(r"\\(.)", re.S)
_WS = " \t\n\x0c\r"  # ASCII whitespace (Infra standard)


def _rule(token: str, rules: list[bool]) -> None:
    if token == "noindex":
        rules[0] = True
    elif token == "nofollow":
        rules[1] = True
    elif token == "none":
        rules[0] = rules[1] = True


def robots_rules(content: str) -> tuple[bool, bool]:
    """``(noindex, nofollow)`` of a robots meta tag's ``content`` (rule 1)."""
    rules = [False, False]
    for token in _SPLIT.split(content[:MAX_FIELD].lower()):
        _rule(token, rules)
    return rules[0], rules[1]


def x_robots_tag(values: Iterable[str], token: str) -> tuple[bool, bool]:
    """``(noindex, nofollow)`` for the crawler named ``token`` from X-Robots-Tag values (rules 1-2).

    ``token``: the product token, lower case (``""``: only unscoped rules apply).
    """
    rules = [False, False]
    for n, value in enumerate(values):
        if n >= MAX_FIELDS:
            break
        agent: str | None = None  # every crawler, until a "name:" says otherwise
        for piece in value[:MAX_FIELD].lower().split(","):
            m = _SCOPE.match(piece)
            if m is not None:
                name, rest = m.groups()
                if name in _VALUED:
                    continue  # "max-snippet: 20", "unavailable_after: 25 Jun 2010 ..."
                agent, piece = name, rest
                inner = _SCOPE.match(piece)
                if inner is not None and inner.group(1) in _VALUED:
                    continue  # "otherbot: unavailable_after: ..."
            if agent is not None and agent != token:
                continue
            for word in piece.split():
                _rule(word, rules)
    return rules[0], rules[1]


def _target(raw: str) -> str | None:
    target = raw.strip(_WS)
    if not target or len(target) > MAX_TARGET or _CONTROL.search(target):
        return None
    return target


def link_canonical(values: Iterable[str]) -> str | None:
    """The target of the first ``rel="canonical"`` link in Link field values, unresolved (rule 3)."""
    for n, value in enumerate(values):
        if n >= MAX_FIELDS:
            break
        value = value[:MAX_FIELD]
        i, end = 0, len(value)
        while i < end:
            lt = value.find("<", i)
            if lt < 0:
                break
            gt = value.find(">", lt + 1)
            if gt < 0:
                break
            # The link's parameters run to the next comma outside a quoted string.
            j, quoted = gt + 1, False
            while j < end:
                c = value[j]
                if c == '"':
                    quoted = not quoted
                elif c == "\\" and quoted:
                    j += 1
                elif c == "," and not quoted:
                    break
                j += 1
            params = _params(value[gt + 1:j])
            rel = params.get("rel")
            if rel is not None and "anchor" not in params and "canonical" in rel.lower().split():
                return _target(value[lt + 1:gt])
            i = j + 1
    return None


def _params(text: str) -> dict[str, str]:
    """A link-value's parameters, ``;``-separated outside quoted strings; the first of a name wins."""
    out: dict[str, str] = {}
    for m in _PARAM.finditer(text):
        name, quoted, token = m.groups()
        value = _QUOTED_PAIR.sub(r"\1", quoted) if quoted is not None else (token or "")
        out.setdefault(name.lower(), value)
    return out


def html_canonical(href: str) -> str | None:
    """A ``<link rel=canonical>``'s href, checked like the header's (rule 3)."""
    return _target(href)


def refresh_url(content: str) -> str | None:
    """The URL of a ``<meta http-equiv=refresh content=...>``, unresolved; None if none (rule 4)."""
    s = content[:MAX_FIELD]
    end = len(s)
    pos = 0
    while pos < end and s[pos] in _WS:
        pos += 1
    start = pos
    while pos < end and s[pos].isascii() and s[pos].isdigit():
        pos += 1
    if pos == start and not (pos < end and s[pos] == "."):
        return None  # no time: not a refresh
    while pos < end and (s[pos] == "." or (s[pos].isascii() and s[pos].isdigit())):
        pos += 1
    if pos >= end:
        return None  # a time alone: the page reloads itself
    if s[pos] not in ";," + _WS:
        return None
    while pos < end and s[pos] in _WS:
        pos += 1
    if pos < end and s[pos] in ";,":
        pos += 1
    while pos < end and s[pos] in _WS:
        pos += 1
    if pos >= end:
        return None
    url_start = pos
    if s[pos:pos + 3].lower() == "url":
        p = pos + 3
        while p < end and s[p] in _WS:
            p += 1
        if p < end and s[p] == "=":
            p += 1
            while p < end and s[p] in _WS:
                p += 1
            url_start = p
    quote = s[url_start] if url_start < end and s[url_start] in "'\"" else ""
    url = s[url_start + len(quote):]
    if quote and quote in url:
        url = url[:url.index(quote)]
    url = url.strip(_WS)
    return url or None
