"""The fingerprint of what a page says: main-content text, and real documentation pages with labelled copies.

The rules of ``peer.core.dedupe.maintext`` on small pages, then the page
parse the engine runs (``parse_response`` with ``[dedupe]`` on) over a
sample of the real-docs corpus (``localweb.sitegraph.realdocs``: Python,
PostgreSQL and SQLite pages from Debian's doc packages, which scripts/test
installs; skipped with the reason when they are missing): every kind of copy
within k of its original, and no two different pages of one template.
"""

from __future__ import annotations

from random import Random

import pytest
from selectolax.lexbor import LexborHTMLParser

from localweb.judges.duplicates import SAME_CONTENT, by_distance
from localweb.sitegraph.realdocs import SITES, Kind, corpus, make_copy, missing, site_of
from peer.core.config.dedupe import DedupeConfig
from peer.core.dedupe.maintext import main_text
from peer.core.dedupe.simhash import distance, fingerprint
from peer.core.page.items import ExtractConfig
from peer.core.page.parse import parse_response

_NOUNS = ("index", "table", "query", "planner", "cursor", "schema", "trigger", "view", "column", "row", "page",
          "journal", "lock", "buffer", "tuple", "relation", "operator", "function", "type", "cast")
ARTICLE = " ".join(f"The {a} reads the {b} before the {c} is written." for a, b, c in
                   zip(_NOUNS, _NOUNS[3:] + _NOUNS[:3], _NOUNS[7:] + _NOUNS[:7]))


def words(html: str) -> list[str]:
    return main_text(LexborHTMLParser(html)).split()


def test_the_main_element_alone_counts_when_the_page_marks_it():
    html = (f"<body><div class=top>Site menu Home About</div><div role=main><p>{ARTICLE}</p></div>"
            "<div>Copyright notice</div></body>")
    assert words(html) == ARTICLE.split()


def test_chrome_is_removed_by_tag_role_and_class_but_not_content_named_alike():
    html = (f"<body><nav>Home Docs</nav><div class=navheader>Prev Up Next</div>"
            f"<div class='sphinxsidebar'>Table of contents</div><div id=breadcrumbs>a b c</div>"
            f"<div role=search>Search</div><footer>Last updated 2024</footer>"
            f"<h1>Title <a class=headerlink href=#t>mark</a></h1><p>{ARTICLE}</p></body>")
    assert words(html) == ["Title", "mark", *ARTICLE.split()]


def test_the_blocks_before_the_first_heading_are_the_header_only_when_there_is_a_heading():
    banner = "<div class=nosearch><img alt=logo><div>Small. Fast. Reliable.</div></div>"
    assert words(f"<body>{banner}<h2>Title</h2><p>{ARTICLE}</p></body>") == ["Title", *ARTICLE.split()]
    # No heading: nothing tells a banner from the content.
    assert words(f"<body>{banner}<p>{ARTICLE}</p></body>")[:3] == ["Small.", "Fast.", "Reliable."]


def test_digits_are_folded_so_a_date_line_is_no_change():
    a = f"{ARTICLE} This page last modified on 2022-10-26 20:02:18 UTC"
    b = f"{ARTICLE} This page last modified on 2025-03-01 08:11:40 UTC"
    assert fingerprint(a, fold_digits=True) == fingerprint(b, fold_digits=True)
    assert fingerprint(a) != fingerprint(b)


def test_without_main_content_the_old_visible_text_is_fingerprinted():
    html = f"<html><body><nav>{' '.join(f'menu{i}' for i in range(30))}</nav><p>{ARTICLE}</p></body></html>".encode()
    on = DedupeConfig(enabled=True)
    off = DedupeConfig(enabled=True, main_content=False)
    ex = ExtractConfig()
    a = parse_response("http://a.test/", html, "utf-8", ex, dedupe=on).simhash
    b = parse_response("http://a.test/", html, "utf-8", ex, dedupe=off).simhash
    assert a is not None and b is not None and a != b
    assert a == fingerprint(ARTICLE, fold_digits=True)


# -- real documentation pages ---------------------------------------------------------------------

GONE = [m for s in SITES if (m := missing(s))]
pytestmark_real = pytest.mark.skipif(bool(GONE), reason="; ".join(GONE))
K = 3


def engine_fingerprint(body: bytes) -> int | None:
    """The SimHash the engine's parse worker computes with [dedupe] on and its defaults."""
    return parse_response("http://docs.test/page.html", body, None, ExtractConfig(),
                          dedupe=DedupeConfig(enabled=True, k=K)).simhash


@pytestmark_real
def test_every_kind_of_copy_of_real_pages_is_within_k_and_no_two_pages_of_a_template_are():
    # 8 originals a site (24, 120 copies), and 150 pages a site as negatives
    # (33,525 pairs): the full corpus is scripts/bench_dedupe.py --real's.
    c = corpus(8, seed=3, negatives=150)
    r = by_distance(c, engine_fingerprint, K)
    recall = {kind.value: round(r.recall(kind), 2) for kind in Kind}
    assert recall == {kind.value: 1.0 for kind in Kind}, (recall, r.distances)
    assert r.false_pairs == [], r.false_pairs  # two pages of one template within k, not saying the same
    for site, a, b, d, j in r.close:  # the pairs within k are pages that say the same thing
        assert j >= SAME_CONTENT, (site, a, b, d, j)


@pytestmark_real
def test_a_print_view_and_a_navigation_change_of_a_real_page_are_near_duplicates():
    # One page of each template, named: what a user would check by hand.
    rng = Random(1)
    for site, path in (("python", "library/shlex.html"), ("postgresql", "sql-select.html"),
                       ("sqlite", "lang_select.html")):
        s = site_of(site)
        body = (s.root / path).read_bytes()
        if len(body) > 2_000_000:
            continue
        original = engine_fingerprint(body)
        assert original is not None
        for kind in (Kind.PRINT, Kind.NAV, Kind.DATE):
            copy = engine_fingerprint(make_copy(s, body, kind, rng))
            assert copy is not None and distance(original, copy) <= K, (site, kind)
