"""Real documentation pages and labelled copies, fingerprinted by the engine's own page parse.

The parse the engine runs (``parse_response`` with ``[dedupe]`` on and its
defaults) over a sample of the real-docs corpus
(``localweb.sitegraph.realdocs``: Python, PostgreSQL and SQLite pages from
Debian's doc packages, which scripts/test installs; skipped with the reason
when they are missing): every kind of copy within k of its original, and no
two different pages of one template. The rules themselves are
tests/core/test_maintext.py's; the same corpus crawled by three peers is
tests/e2e/test_dedupe_realdocs.py.
"""

from __future__ import annotations

from random import Random

import pytest

import simhashref
from localweb.judges.duplicates import SAME_CONTENT, by_distance
from localweb.sitegraph.realdocs import SITES, Kind, corpus, make_copy, missing, site_of
from peer.core.config.dedupe import DedupeConfig
from peer.core.dedupe.maintext import main_text
from peer.core.dedupe.simhash import distance, fingerprint, visible_text
from peer.core.page.extract import parse_tree
from peer.core.page.items import ExtractConfig
from peer.core.page.parse import parse_response

GONE = [m for s in SITES if (m := missing(s))]
pytestmark = pytest.mark.skipif(bool(GONE), reason="; ".join(GONE))
K = 3


def engine_fingerprint(body: bytes) -> int | None:
    """The SimHash the engine's parse worker computes with [dedupe] on and its defaults."""
    return parse_response("http://docs.test/page.html", body, None, ExtractConfig(),
                          dedupe=DedupeConfig(enabled=True, k=K)).simhash


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


def test_real_pages_and_their_copies_keep_the_fingerprint_of_the_released_code():
    # The faster SimHash gives the same 64 bits as the code before it
    # (tests/support/simhashref.py) on real pages: the main content with
    # digits folded (the default) and all visible text, as the engine reads
    # them. Stored fingerprints and other peers' must still compare.
    c = corpus(4, seed=7, negatives=40)
    bodies = [p.body for pages in c.pages.values() for p in pages] + [cp.body for cp in c.copies]
    some = 0
    for body in bodies:
        for text, fold in ((main_text(parse_tree(body, None)), True), (visible_text(parse_tree(body, None)), False)):
            new = fingerprint(text, fold_digits=fold)
            assert new == simhashref.fingerprint(text, fold_digits=fold)
            some += new is not None
    assert some > len(bodies)  # most pages have one: not None == None throughout
