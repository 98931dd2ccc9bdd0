"""Near copies of the site graph's pages: a labelled corpus for duplicate detection.

Each original is a content page of :class:`~localweb.sitegraph.web.SiteGraph`
(its text from :mod:`localweb.sitegraph.text`). A copy is made of it by one
:class:`Change`, on the HTML, as a mirror, a print view or a later crawl of
the same page would differ:

- ``EXACT``: the same bytes (another URL of the same page);
- ``SESSION``: every link carries another ``?sid=`` (the markup differs, the text does not);
- ``DATE``: a "last updated" line with a date and time added to the header;
- ``AD``: an advertisement block of about 40 words added to the body;
- ``NAV``: the navigation's link texts replaced (another site template);
- ``BOILERPLATE``: a mirror's chrome: a header and a footer of about 150 words;
- ``EDIT_1``, ``EDIT_3``, ``EDIT_5``: 1, 3 or 5% of the text's words replaced.

:func:`corpus` returns originals and copies; every pair (original, its copy)
is a duplicate, every pair of two originals is not (two originals may share
some of the pool's blocks, as two pages of one site share some text).
Seeded: the same arguments give the same corpus.

:func:`mirror_web` serves a corpus as a web to crawl, for an end-to-end test
of duplicate detection over a ring: originals on ``src<h>.dup.test``, each
with a child page only it links to, and its copies on the mirror hosts
``mirror<m>.dup.test`` (and an exact copy under ``/print/`` on its own
host). Every page's own links are relative, so a copy's child link names a
page of the *copy's* host: requested only if the copy's links are followed
(:attr:`MirrorWeb.traps`). The originals link to their copies (absolute), so
a copy is always discovered, and fetched, after its original.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from random import Random

from localweb.sitegraph.web import SiteGraph
from localweb.sitegraph.text import WORDS

__all__ = ["Change", "Copy", "Corpus", "MirrorWeb", "change", "corpus", "mirror_web"]


class Change(enum.Enum):
    """How a near copy differs from its original."""

    EXACT = "exact"
    SESSION = "session id"
    DATE = "date line"
    AD = "ad block"
    NAV = "nav texts"
    BOILERPLATE = "boilerplate"
    EDIT_1 = "1% words"
    EDIT_3 = "3% words"
    EDIT_5 = "5% words"


@dataclass(frozen=True, slots=True)
class Copy:
    """A changed copy of original number ``of``."""

    of: int
    change: Change
    body: bytes


@dataclass(frozen=True, slots=True)
class Corpus:
    """Original pages (HTML bytes) and their copies."""

    originals: tuple[bytes, ...]
    copies: tuple[Copy, ...]


_TAG_SPLIT = re.compile(r"(<[^>]*>)")
_WORD = re.compile(r"[A-Za-z]+")
_HREF = re.compile(r'href="([^"]*)"')
_NAV = re.compile(r"(<nav>.*?</nav>)", re.S)
_NAV_TEXT = re.compile(r"(<a [^>]*>)([^<]*)(</a>)")
_EDIT = {Change.EDIT_1: 0.01, Change.EDIT_3: 0.03, Change.EDIT_5: 0.05}


def _sentence(rng: Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _edit_words(html: str, fraction: float, rng: Random) -> str:
    """``html`` with ``fraction`` of the words of its text (not its tags) replaced."""
    parts = _TAG_SPLIT.split(html)
    # Text between tags, past the head (its title and style are not body text),
    # and outside script (the reader never sees it).
    start = next((i for i, p in enumerate(parts) if p.startswith("<body")), 0)
    spans: list[tuple[int, int, int]] = []  # part index, start, end of each word
    hidden = False
    for i in range(start, len(parts)):
        p = parts[i]
        if p.startswith("<"):
            hidden = p.startswith("<script") or (hidden and not p.startswith("</script"))
            continue
        if not hidden:
            spans.extend((i, m.start(), m.end()) for m in _WORD.finditer(p))
    if not spans:
        return html
    chosen = sorted(rng.sample(range(len(spans)), max(1, round(len(spans) * fraction))), reverse=True)
    for n in chosen:  # right to left, so earlier offsets in a part stay valid
        i, a, b = spans[n]
        old = parts[i][a:b].lower()
        new = rng.choice(WORDS)
        while new == old:
            new = rng.choice(WORDS)
        parts[i] = parts[i][:a] + new + parts[i][b:]
    return "".join(parts)


def change(html: bytes, how: Change, rng: Random) -> bytes:
    """A copy of the page ``html`` changed as ``how`` says."""
    if how is Change.EXACT:
        return html
    s = html.decode("utf-8")
    if how is Change.SESSION:
        sid = f"{rng.getrandbits(64):016x}"
        s = _HREF.sub(lambda m: f'href="{m.group(1)}{"&amp;" if "?" in m.group(1) else "?"}sid={sid}"', s)
    elif how is Change.DATE:
        stamp = f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"
        s = s.replace("<main>", f"<main>\n<p class=\"updated\">Last updated {stamp}</p>", 1)
    elif how is Change.AD:
        ad = f'<aside class="ad"><h3>Advertisement</h3><p>{_sentence(rng, 40)}</p></aside>\n'
        paras = [m.start() for m in re.finditer("<p>", s)]
        at = paras[len(paras) // 2] if paras else s.find("</main>")
        s = s[:at] + ad + s[at:]
    elif how is Change.NAV:
        def relabel(m: re.Match[str]) -> str:
            return m.group(1) + _sentence(rng, 2).title() + m.group(3)
        s = _NAV.sub(lambda m: _NAV_TEXT.sub(relabel, m.group(1)), s, count=1)
    elif how is Change.BOILERPLATE:
        header = f'<div class="mirror-header"><p>{_sentence(rng, 70)}</p></div>\n'
        footer = f'<div class="mirror-footer"><p>{_sentence(rng, 80)}</p></div>\n'
        s = s.replace("<body>", "<body>\n" + header, 1).replace("</body>", footer + "</body>", 1)
    else:
        s = _edit_words(s, _EDIT[how], rng)
    return s.encode("utf-8")


def corpus(originals: int = 200, *, seed: int = 1, changes: tuple[Change, ...] = tuple(Change)) -> Corpus:
    """``originals`` content pages of a seeded site graph, and one copy of each by every change."""
    per_host = 40
    graph = SiteGraph(seed=seed, hosts=max(1, -(-originals // per_host)), pages_per_host=per_host + 10)
    pages: list[bytes] = []
    for host in graph.site_hosts():
        for n in range(1, per_host + 1):
            page = graph.render(host, graph.page_path(n), 8080)
            if page.status == 200 and page.content_type.startswith("text/html"):
                pages.append(page.body)
            if len(pages) == originals:
                break
        if len(pages) == originals:
            break
    rng = Random(seed * 31337 + 5)
    copies = tuple(Copy(i, how, change(body, how, rng)) for i, body in enumerate(pages) for how in changes)
    return Corpus(tuple(pages), copies)


@dataclass(frozen=True, slots=True)
class MirrorWeb:
    """Pages by (host, path), and what a crawl of them should find (:func:`mirror_web`)."""

    pages: dict[tuple[str, str], bytes]
    seeds: tuple[tuple[str, str], ...]  # (host, path) of each source host's home
    originals: tuple[tuple[str, str], ...]  # (host, path), by original number
    #: (copy's host, path) -> (original number, change)
    copies: dict[tuple[str, str], tuple[int, Change]]
    #: copy's (host, path) -> the (host, path) its child link names: fetched only if its links are followed
    traps: dict[tuple[str, str], tuple[str, str]]


_ANY_HREF = re.compile(r'href="[^"]*"')


def mirror_web(originals: int = 12, *, port: int, seed: int = 1, sources: int = 3, mirrors: int = 4,
               changes: tuple[Change, ...] = (Change.EXACT, Change.SESSION, Change.DATE, Change.NAV)) -> MirrorWeb:
    """``originals`` pages on ``sources`` hosts, each copied by every change onto a mirror host (module docstring)."""
    base = corpus(originals, seed=seed, changes=()).originals
    rng = Random(seed * 7919 + 3)
    pages: dict[tuple[str, str], bytes] = {}
    origs: list[tuple[str, str]] = []
    copies: dict[tuple[str, str], tuple[int, Change]] = {}
    traps: dict[tuple[str, str], tuple[str, str]] = {}
    homes: dict[str, list[str]] = {}
    for i, body in enumerate(base):
        host, path = f"src{i % sources}.dup.test", f"/p{i}.html"
        origs.append((host, path))
        homes.setdefault(host, []).append(path)
        # The site graph's own links go nowhere here ("#" is the page itself).
        text = _ANY_HREF.sub('href="#"', body.decode("utf-8"))
        places = [(f"mirror{(i + n) % mirrors}.dup.test", f"/c{i}-{n}.html") for n in range(len(changes))]
        places.append((host, f"/print/p{i}.html"))  # an exact copy its own host serves
        out = "".join(f'<a href="http://{h}:{port}{p}">copy</a> ' for h, p in places)
        block = f'<p class="more"><a href="p{i}-child.html">more</a> {out}</p>\n'
        html = text.replace("</body>", block + "</body>", 1).encode("utf-8")
        pages[(host, path)] = html
        pages[(host, f"/p{i}-child.html")] = f"<html><body><p>child {i}</p></body></html>".encode()
        for n, how in enumerate([*changes, Change.EXACT]):
            where = places[n]
            pages[where] = change(html, how, rng)
            copies[where] = (i, how)
            child = where[1].rsplit("/", 1)[0] + f"/p{i}-child.html"
            traps[where] = (where[0], child)
    for host, paths in homes.items():
        links = "".join(f'<a href="{p}">page</a> ' for p in paths)
        pages[(host, "/")] = f"<html><body><p>{links}</p></body></html>".encode()
    return MirrorWeb(pages, tuple((h, "/") for h in homes), tuple(origs), copies, traps)
