"""The fingerprint of what a page says: the rules of ``peer.core.dedupe.maintext`` on small pages.

Real documentation pages and their labelled copies are
tests/edges/test_realdocs_fingerprint.py's (they are read from disk).
"""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser

from peer.core.config.dedupe import DedupeConfig
from peer.core.dedupe.maintext import main_text
from peer.core.dedupe.simhash import fingerprint
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


def test_nested_chrome_goes_with_its_outermost_element():
    # Chrome inside chrome, deep, and beside a deep plain chain: each element
    # is removed once, with its outermost chrome ancestor.
    nested = "<div class=nav>menu " * 300 + "</div>" * 300
    deep = "<div>" * 300 + "<ul class=menu><li>x</li></ul>" * 50 + "</div>" * 300
    assert words(f"<body>{nested}{deep}<p>{ARTICLE}</p>{nested}</body>") == ARTICLE.split()


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
