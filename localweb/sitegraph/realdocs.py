"""Real documentation pages and labelled copies of them: a corpus for duplicate detection on real templates.

The pages are Debian's documentation packages, HTML as the projects publish
it: Python's (Sphinx, ``python3-doc``), PostgreSQL's (DocBook XSL,
``postgresql-doc-15``) and SQLite's (its own generator, ``sqlite3-doc``).
Three templates, each with the chrome a real site has around what a page
says: a navigation bar, a sidebar, breadcrumbs, a header and a footer.
:data:`SITES` names, per site, where its pages are, which elements are its
chrome (written by reading the template; the fingerprint under test never
sees these selectors) and what element holds the content.

Per sampled original, :func:`corpus` makes one copy by each :class:`Kind`:

- ``EXACT``: the same bytes (served on another host: a mirror);
- ``DATE``: the page's own date line ("Last updated on ...", "This page
  last modified on ...") set to another date, or one added to the
  template's footer where the site has none (PostgreSQL);
- ``SESSION``: every relative link carries a ``?sid=`` session id;
- ``PRINT``: the print view: the content element alone in a bare page (no
  navigation, sidebar, header or footer), as a site's "printable version" is;
- ``NAV``: the chrome's link texts and headings replaced (another release of
  the template: other labels in the navigation, sidebar and breadcrumbs).

Every other page of the same site is a negative: two different pages of one
template are not duplicates. Reading files is this module's only I/O;
:func:`missing` says in one line why a site cannot be read (its package not
installed), so a test can skip. Seeded: the same arguments give the same
corpus on any machine with the same packages.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from random import Random

from selectolax.lexbor import LexborHTMLParser

__all__ = ["Kind", "Page", "RealCopy", "RealCorpus", "SITES", "Site", "content_words", "corpus", "make_copy", "missing",
           "site_of", "site_pages"]


class Kind(enum.Enum):
    """How a labelled copy differs from its original."""

    EXACT = "exact mirror"
    DATE = "date line"
    SESSION = "session id"
    PRINT = "print view"
    NAV = "navigation"


@dataclass(frozen=True, slots=True)
class Site:
    """One documentation site: its files, its template's chrome and its content element."""

    name: str
    package: str  # the Debian package that installs it
    root: Path
    #: CSS selectors of the template's chrome: navigation, sidebar, breadcrumbs, header, footer
    chrome: tuple[str, ...]
    #: CSS selector of the element holding what the page says; None: the body less its chrome
    content: str | None
    #: path prefixes (relative to root) that are not documentation pages: indexes, search
    skip: tuple[str, ...] = ()


SITES: tuple[Site, ...] = (
    Site("python", "python3-doc", Path("/usr/share/doc/python3.11/html"),
         chrome=("div.mobile-nav", "div.related", "div.sphinxsidebar", "div.footer", "div.inline-search",
                 "body > div[role=note]"),
         content="div.body",
         skip=("_static", "_sources", "_images", "_downloads", "genindex", "search", "py-modindex",
               "contents", "bugs", "copyright", "license", "about")),
    Site("postgresql", "postgresql-doc-15", Path("/usr/share/doc/postgresql-doc-15/html"),
         chrome=("div.navheader", "div.navfooter"),
         content=None,
         skip=("bookindex", "index.html")),
    Site("sqlite", "sqlite3-doc", Path("/usr/share/doc/sqlite3"),
         # The first div.nosearch is the banner (logo, tagline, menus, search);
         # the C interface's pages hold their title in a second one.
         chrome=("body > div.nosearch:first-of-type",),
         content=None,
         skip=("c3ref/funclist", "c3ref/objlist", "c3ref/constlist", "sitemap", "doclist", "keyword_index",
               "toc", "docs.html")),
)

#: Largest page read (bytes): SQLite's syntax pages embed megabytes of SVG diagrams.
MAX_PAGE = 300_000


def missing(site: Site) -> str | None:
    """Why ``site`` cannot be read here (one line), or None."""
    if not (site.root / "index.html").is_file():  # /usr/share/doc/sqlite3 is there without its pages
        return f"{site.root}/index.html not found (apt-get install {site.package})"
    return None


def site_pages(site: Site) -> list[Path]:
    """The documentation pages of ``site`` (sorted; indexes and oversized pages left out)."""
    out = []
    for p in sorted(site.root.rglob("*.html")):
        rel = p.relative_to(site.root).as_posix()
        if any(rel.startswith(s) for s in site.skip) or p.stat().st_size > MAX_PAGE:
            continue
        out.append(p)
    return out


@dataclass(frozen=True, slots=True)
class Page:
    """An original: its site, its path under the site's root and its bytes."""

    site: str
    path: str
    body: bytes


@dataclass(frozen=True, slots=True)
class RealCopy:
    """A copy of original number ``of`` made by ``kind``."""

    of: int
    kind: Kind
    body: bytes


@dataclass(frozen=True, slots=True)
class RealCorpus:
    """Sampled originals with one copy of each by every kind, and every page of the sites read (negatives)."""

    originals: tuple[Page, ...]
    copies: tuple[RealCopy, ...]
    #: every page read of each site, by site name: any two are different pages of one template
    pages: dict[str, tuple[Page, ...]]


# A site's own date lines: Sphinx's footer and SQLite's "last modified" line.
_SPHINX_DATE = re.compile(r"(Last updated on )([A-Z][a-z]{2} \d\d, \d{4} \(\d\d:\d\d UTC\))")
_SQLITE_DATE = re.compile(r"(last modified on\s*<a [^>]*>)(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(</a>)")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_HREF = re.compile(r'href="([^"#:]*)(#[^"]*)?"')
#: Words for a template's other labels (a redesign names its navigation otherwise).
_LABELS = ("Back", "Forward", "Overview", "Contents", "Start", "Manual", "Guide", "Topics", "Chapter",
           "Section", "Reference", "Browse", "Index", "Previous", "Following", "Parent", "Top", "Docs",
           "Library", "Tutorial", "Menu", "Go", "Site", "Help", "More", "Related", "Pages", "Jump")


def _date(rng: Random) -> tuple[int, int, int, int, int, int]:
    return (rng.randint(2023, 2026), rng.randint(1, 12), rng.randint(1, 28), rng.randint(0, 23),
            rng.randint(0, 59), rng.randint(0, 59))


def _redate(site: Site, html: str, rng: Random) -> str:
    y, mo, d, h, mi, s = _date(rng)
    if site.name == "python" and _SPHINX_DATE.search(html):
        return _SPHINX_DATE.sub(lambda m: f"{m.group(1)}{_MONTHS[mo - 1]} {d:02d}, {y} ({h:02d}:{mi:02d} UTC)",
                                html, count=1)
    if site.name == "sqlite" and _SQLITE_DATE.search(html):
        return _SQLITE_DATE.sub(lambda m: f"{m.group(1)}{y}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d}{m.group(3)}",
                                html, count=1)
    # No date line of its own: one in the template's header, as sites put it.
    line = f'<p class="updated">Last updated {y}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}</p>'
    tree = LexborHTMLParser(html)
    foot = next((n for sel in site.chrome for n in tree.css(sel)), None)
    if foot is None:
        return html.replace("</body>", line + "</body>", 1)
    foot.insert_child(LexborHTMLParser(line).css_first("p"))  # type: ignore[arg-type]
    return tree.html or html


def _session(html: str, rng: Random) -> str:
    sid = f"{rng.getrandbits(64):016x}"

    def add(m: re.Match[str]) -> str:
        url, frag = m.group(1), m.group(2) or ""
        if not url:  # "#anchor": the page itself
            return m.group(0)
        return f'href="{url}{"&amp;" if "?" in url else "?"}sid={sid}{frag}"'
    return _HREF.sub(add, html)


def _title(tree: LexborHTMLParser) -> str:
    t = tree.css_first("title")
    return t.text() if t is not None else ""


def _print_view(site: Site, html: str) -> str:
    tree = LexborHTMLParser(html)
    for sel in site.chrome:
        for n in tree.css(sel):
            n.decompose()
    tree.strip_tags(["script", "style", "noscript", "template"])
    if site.content is not None:
        node = tree.css_first(site.content)
        inner = node.inner_html if node is not None else ""
    else:
        body = tree.body
        inner = body.inner_html if body is not None else ""
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{_title(tree)} (print)</title>"
            f"</head>\n<body class=\"print\">\n{inner}\n</body></html>\n")


def _renav(site: Site, html: str, rng: Random) -> str:
    tree = LexborHTMLParser(html)
    for sel in site.chrome:
        for n in tree.css(sel):
            for el in n.css("a, h3, h4, th"):
                if el.text(strip=True):
                    label = " ".join(rng.choice(_LABELS) for _ in range(rng.randint(1, 2)))
                    el.inner_html = label  # type: ignore[misc,assignment]
    return tree.html or html


def make_copy(site: Site, body: bytes, kind: Kind, rng: Random) -> bytes:
    """A copy of the page ``body`` of ``site`` made by ``kind`` (module docstring)."""
    if kind is Kind.EXACT:
        return body
    html = body.decode("utf-8", "replace")
    if kind is Kind.DATE:
        out = _redate(site, html, rng)
    elif kind is Kind.SESSION:
        out = _session(html, rng)
    elif kind is Kind.PRINT:
        out = _print_view(site, html)
    else:
        out = _renav(site, html, rng)
    return out.encode("utf-8")


def content_words(site: Site, body: bytes) -> int:
    """Distinct words of what the page says (its print view's text): under 20 a page has no SimHash by design."""
    tree = LexborHTMLParser(make_copy(site, body, Kind.PRINT, Random(0)))
    root = tree.body
    text = _DIGIT.sub("0", root.text(separator=" ").lower()) if root is not None else ""
    return len(set(_WORDS.findall(text)))


# Words as the SimHash counts them with main_content on: digits folded.
_WORDS = re.compile(r"\w+")
_DIGIT = re.compile(r"\d")


def corpus(per_site: int = 25, *, seed: int = 1, sites: Sequence[Site] = SITES,
           kinds: Sequence[Kind] = tuple(Kind), negatives: int = 0, min_words: int = 20) -> RealCorpus:
    """``per_site`` sampled originals of each readable site, one copy of each by every kind.

    Originals are drawn from the pages that say at least ``min_words``
    distinct words of their own (:func:`content_words`): a page with less has
    no SimHash by design, so it is no test of one. ``negatives``: how many
    pages of each site to read as negatives (0: all); the originals are
    always among them. Sites that are :func:`missing` are left out.
    """
    rng = Random(seed)
    originals: list[Page] = []
    copies: list[RealCopy] = []
    pages: dict[str, tuple[Page, ...]] = {}
    for site in sites:
        if missing(site):
            continue
        paths = site_pages(site)
        order = rng.sample(range(len(paths)), len(paths))
        chosen: list[int] = []
        for i in order:
            if len(chosen) == per_site:
                break
            if content_words(site, paths[i].read_bytes()) >= min_words:
                chosen.append(i)
        chosen.sort()
        read = set(chosen)
        if negatives:
            rest = [i for i in range(len(paths)) if i not in read]
            read |= set(rng.sample(rest, max(0, min(negatives - len(chosen), len(rest)))))
        else:
            read = set(range(len(paths)))
        got = {i: Page(site.name, paths[i].relative_to(site.root).as_posix(), paths[i].read_bytes())
               for i in sorted(read)}
        pages[site.name] = tuple(got.values())
        for i in chosen:
            n = len(originals)
            originals.append(got[i])
            for kind in kinds:
                copies.append(RealCopy(n, kind, make_copy(site, got[i].body, kind, rng)))
    return RealCorpus(tuple(originals), tuple(copies), pages)


def site_of(name: str) -> Site:
    """The :data:`SITES` entry called ``name``."""
    return next(s for s in SITES if s.name == name)
