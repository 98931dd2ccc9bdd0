"""How the site graph spells a link: the forms of an href, and what each one names.

A link of the graph is a canonical target (host, path) plus a *form* that
spells it in the page: relative, ``../``, absolute path, absolute URL,
protocol-relative, upper-case host, dot segments, percent-encoded, padded
with spaces, with a fragment, query-only, fragment-only (``self``), or
``raw``: an href from :data:`RAW` that is not a page of the graph
(``mailto:``, off-site URLs...). Every spelling resolves (RFC 3986 §5.2) to
its canonical target; tests/edges/test_webfarm.py checks that ``peer.core.urls.normalize.join``
agrees for every href of every page, so the graph and the crawler's URL
module are checked against each other rather than one against itself.
"""

from __future__ import annotations

import html
import itertools

__all__ = ["CROSS_FORMS", "FORMS", "RAW", "RAW_HREFS", "SAME_FORMS", "Edge", "attr", "href",
           "port_suffix", "raw_target", "text"]

#: Hrefs that are not pages of the graph, and the URL each names (None: not
#: an http(s) URL a crawler follows). ``{host}`` is the page's host, ``{ps}``
#: its port suffix (":8080", or "" on port 80).
RAW: tuple[tuple[str, str | None], ...] = (
    ("mailto:webmaster@{host}", None),
    ("javascript:void(0)", None),
    ("tel:+44-20-7946-0958", None),
    ("https://www.example.org/", "https://www.example.org/"),
    ("http://example.com/page?x=1&y=2", "http://example.com/page?x=1&y=2"),
    ("ftp://files.example.net/pub/", None),
    ("HTTPS://WWW.EXAMPLE.ORG/About", "https://www.example.org/About"),  # scheme and host lower-cased
    ("http://web.test{ps}/", "http://web.test{ps}/"),  # the apex: out of a *.web.test scope
    ("data:text/plain,hello", None),
)
RAW_HREFS = tuple(h for h, _ in RAW)
_RAW_TARGETS = dict(RAW)

# Same-host forms, weighted (a table indexed by int(random() * len)).
SAME_FORMS = tuple(
    itertools.chain.from_iterable(
        [form] * weight
        for form, weight in (("rel", 30), ("abs_path", 20), ("abs_url", 10), ("proto", 5),
                             ("upper", 3), ("dot", 3), ("dotdot", 3), ("pct", 3),
                             ("space", 3), ("frag", 8))
    )
)
CROSS_FORMS = ("abs_url", "abs_url", "proto", "upper")
#: Every form an emitted href can take.
FORMS = frozenset(SAME_FORMS) | {"self", "qonly", "raw"}

# A structural link: (host, path, form, rel, tag). Form "raw": path is an href
# template ({host}: the page's host, {ps}: its port suffix); form "self": path
# unused, the target is the page's own URL.
Edge = tuple[str, str, str, str, str]


def port_suffix(port: int) -> str:
    return "" if port == 80 else f":{port}"


def relative(here: str, path: str) -> str:
    # All directories are depth 0 or 1 ("/", "/c3/"), so one "../" reaches any path.
    if path.startswith(here):
        rest = path[len(here):]
        return rest if rest and rest[0] != "?" else "./" + rest
    return "../" + path[1:]


def href(link: Edge, here: str, ps: str) -> str:
    host, path, form, _, _ = link
    if form == "rel":
        return relative(here, path)
    if form == "abs_path":
        return path
    if form == "abs_url":
        return f"http://{host}{ps}{path}"
    if form == "frag":
        return f"{relative(here, path)}#s{len(path) % 7}"
    if form == "proto":
        return f"//{host}{ps}{path}"
    if form == "raw":
        return path.replace("{host}", host).replace("{ps}", ps) if "{" in path else path
    if form == "upper":
        return f"HTTP://{host.upper()}{ps}{path}"
    if form == "dot":
        return "./" + relative(here, path)
    if form == "dotdot":
        return "/x/.." + path
    if form == "pct":
        c = path[1:2]
        return f"/%{ord(c):02x}{path[2:]}" if c.isalnum() else path
    if form == "space":
        return f"  {relative(here, path)} "
    if form == "self":
        return "#top"
    if form == "qonly":
        return path[path.index("?"):]
    raise AssertionError(form)


def attr(s: str) -> str:
    return s.replace("&", "&amp;").replace('"', "&quot;") if ("&" in s or '"' in s) else s


def text(s: str) -> str:
    return html.escape(s, quote=False)


def raw_target(template: str, host: str, ps: str) -> str | None:
    """The URL a raw href of :data:`RAW` names on a page of ``host``, or None."""
    target = _RAW_TARGETS[template]
    return target.replace("{host}", host).replace("{ps}", ps) if target else None
