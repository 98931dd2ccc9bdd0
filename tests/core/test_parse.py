"""peer.core.page.parse: one HTML page read once for its links, its items and, with [dedupe] on, its fingerprints.

What a worker thread hands back (``Parsed``) from the same tree the link
extraction read; the parts are tested in tests/core/test_extract.py,
test_items.py and test_simhash.py, the parse in a crawl in tests/core/test_crawl.py.
"""

from __future__ import annotations

import hashlib

from peer.core.config.dedupe import DedupeConfig
from peer.core.dedupe.maintext import main_text
from peer.core.dedupe.simhash import fingerprint, visible_text
from peer.core.page.extract import parse_page, parse_tree
from peer.core.page.items import ExtractConfig, Field, Rule
from peer.core.page.parse import parse_response

URL = "http://shop.test/book/1"
# Forty distinct words: digits are folded in the SimHash ("word1" is "word0").
WORDS = " ".join(f"word{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(40))
BODY = (f"<html><head><title>A book</title></head><body><h1>Dune</h1><p>{WORDS}</p>"
        "<a href='/book/2'>next</a><a href='http://other.test/x?utm_source=y'>out</a>"
        "<script>var notSeen = 1;</script></body></html>").encode()


def test_without_rules_or_dedupe_it_is_the_page_alone():
    got = parse_response(URL, BODY, "utf-8", ExtractConfig())
    assert got.page == parse_page(URL, BODY, "utf-8")
    assert (got.items, got.errors, got.digest, got.simhash) == ([], [], None, None)


def test_dedupe_on_adds_the_body_digest_and_the_simhash_of_the_main_content():
    cfg = DedupeConfig(enabled=True)
    got = parse_response(URL, BODY, "utf-8", ExtractConfig(), dedupe=cfg)
    assert got.page == parse_page(URL, BODY, "utf-8")     # the links read before the hidden text went
    assert got.digest == hashlib.sha1(BODY).digest()
    text = main_text(parse_tree(BODY, "utf-8"))
    assert "notSeen" not in text and "wordbn" in text
    assert got.simhash == fingerprint(text, shingle=cfg.shingle, min_words=cfg.min_words,
                                      max_bytes=cfg.max_text_bytes, fold_digits=True) is not None
    # main_content off: all the visible text, digits as written (the fingerprint before it).
    old = DedupeConfig(enabled=True, main_content=False)
    assert parse_response(URL, BODY, "utf-8", ExtractConfig(), dedupe=old).simhash == fingerprint(
        visible_text(parse_tree(BODY, "utf-8")))
    # Off, or under min_words: no SimHash.
    assert parse_response(URL, BODY, "utf-8", ExtractConfig(), dedupe=DedupeConfig()).digest is None
    short = parse_response(URL, b"<p>three short words</p>", "utf-8", ExtractConfig(), dedupe=cfg)
    assert short.digest is not None and short.simhash is None


def test_a_rule_that_matches_reads_its_items_from_the_same_parse():
    ex = ExtractConfig((Rule("book", "*/book/*", (Field("title", "h1"),)),))
    got = parse_response(URL, BODY, "utf-8", ex, dedupe=DedupeConfig(enabled=True))
    assert got.items and got.items[0][1]["title"] == "Dune" and got.errors == []
    assert got.page.links == parse_page(URL, BODY, "utf-8").links and got.simhash is not None
    assert parse_response("http://shop.test/about", BODY, "utf-8", ex).items == []
