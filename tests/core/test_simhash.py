"""SimHash of a page's visible text: what a user of duplicate detection relies on (peer.core.dedupe.simhash)."""

from __future__ import annotations

import statistics
from random import Random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

from localweb.sitegraph.nearcopies import Change, change, corpus
from localweb.sitegraph.text import WORDS
from peer.core.dedupe.simhash import (
    band_key, band_widths, bands, distance, fingerprint, shingle_hashes, visible_text, word_hashes,
)
from ring.hashring import HashRing


def _text(seed: int, n: int = 600) -> str:
    rng = Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _page_fp(html: bytes) -> int | None:
    return fingerprint(visible_text(LexborHTMLParser(html)))


@pytest.fixture(scope="module")
def pages() -> tuple[bytes, ...]:
    return corpus(12, changes=()).originals


def test_identical_text_identical_fingerprint() -> None:
    t = _text(1)
    assert fingerprint(t) == fingerprint(str(t))
    assert fingerprint(t) is not None


def test_case_and_punctuation_do_not_count() -> None:
    t = _text(2)
    shouted = ", ".join(w.upper() for w in t.split()) + "!"
    assert fingerprint(shouted) == fingerprint(t)


def test_word_order_counts() -> None:
    t = _text(3).split()
    shuffled = t[:]
    Random(9).shuffle(shuffled)
    assert distance(fingerprint(" ".join(t)), fingerprint(" ".join(shuffled))) > 12  # type: ignore[arg-type]


def test_word_hashes_equal_words_equal_hashes_anagrams_differ() -> None:
    h = word_hashes("dog god Dog café cafe", 1000)
    assert len(h) == 5
    assert h[0] == h[2]
    assert h[0] != h[1]
    assert h[3] != h[4]


def test_a_small_edit_is_a_small_distance() -> None:
    words = _text(4, 3000).split()
    fp = fingerprint(" ".join(words))
    edited = words[:]
    edited[1500] = "zebra"
    assert distance(fp, fingerprint(" ".join(edited))) <= 3  # type: ignore[arg-type]
    for i in range(0, 3000, 100):  # 1% of the words
        edited[i] = "zebra"
    assert 0 < distance(fp, fingerprint(" ".join(edited))) <= 12  # type: ignore[arg-type]


def test_unrelated_texts_are_about_32_apart() -> None:
    fps = [fingerprint(_text(100 + i)) for i in range(40)]
    ds = [distance(a, b) for a, b in zip(fps, fps[1:])]  # type: ignore[arg-type]
    assert 28 <= statistics.mean(ds) <= 36
    assert min(ds) > 12


def test_hidden_elements_do_not_count(pages: tuple[bytes, ...]) -> None:
    html = pages[0].decode()
    assert "<script>" in html
    # Other script and style text, and a template: a reader sees none of it.
    changed = html.replace("<script>", "<script>var other = 'x y z'; ", 1).replace(
        "<style>", "<style>h1{color:red} ", 1).replace(
        "</main>", "<template><p>never shown to anyone at all</p></template></main>", 1)
    assert changed != html
    assert _page_fp(changed.encode()) == _page_fp(pages[0])


def test_session_ids_in_links_do_not_count(pages: tuple[bytes, ...]) -> None:
    copy = change(pages[1], Change.SESSION, Random(1))
    assert copy != pages[1]
    assert _page_fp(copy) == _page_fp(pages[1])


def test_near_copies_of_site_pages_stay_near(pages: tuple[bytes, ...]) -> None:
    rng = Random(5)
    for page in pages:
        for how in (Change.DATE, Change.NAV):
            assert distance(_page_fp(page), _page_fp(change(page, how, rng))) <= 6  # type: ignore[arg-type]


def test_too_little_text_has_no_fingerprint() -> None:
    assert fingerprint("Not found", min_words=20) is None
    assert fingerprint("", min_words=1) is None
    assert fingerprint(" ".join(f"word{i}" for i in range(20)), min_words=20) is not None
    # Distinct words: a hub of a thousand identical link labels says nothing to compare.
    assert fingerprint(" ".join(["word"] * 1000), min_words=20) is None


def test_text_past_max_bytes_is_not_read() -> None:
    t = _text(6) + " "
    more = t + _text(7)
    assert fingerprint(more) != fingerprint(t)
    assert fingerprint(more, max_bytes=len(t.encode())) == fingerprint(t)


def test_shingles_of_a_short_text() -> None:
    h = word_hashes("one two", 100)
    assert len(shingle_hashes(h, 3)) == 1
    assert len(shingle_hashes(word_hashes("one two three four", 100), 3)) == 2
    assert len(shingle_hashes(word_hashes("", 100), 3)) == 0


@pytest.mark.parametrize("junk", [b"\xff\xfe\x00garbage\x00", b"<" * 5000, b"", "\ud800 lone".encode("utf-8", "surrogatepass")])
def test_hostile_bytes_never_raise(junk: bytes) -> None:
    text = visible_text(LexborHTMLParser(junk))
    assert fingerprint(text, min_words=1) is None or isinstance(fingerprint(text, min_words=1), int)
    assert isinstance(fingerprint("word\ud800 " * 30, min_words=1), int)


@pytest.mark.parametrize("k", range(8))
def test_band_widths_cover_64_bits(k: int) -> None:
    widths = band_widths(k)
    assert len(widths) == k + 1
    assert sum(widths) == 64
    assert max(widths) - min(widths) <= 1


def test_bands_put_the_fingerprint_back_together() -> None:
    fp = 0x0123456789ABCDEF
    value = 0
    for width, band in zip(band_widths(3), bands(fp, 3)):
        value = (value << width) | band
    assert value == fp


@given(fp=st.integers(0, (1 << 64) - 1), k=st.integers(0, 7), data=st.data())
def test_within_k_share_a_band(fp: int, k: int, data: st.DataObject) -> None:
    flips = data.draw(st.sets(st.integers(0, 63), max_size=k))
    other = fp
    for bit in flips:
        other ^= 1 << bit
    assert distance(fp, other) == len(flips)
    assert any(a == b for a, b in zip(bands(fp, k), bands(other, k)))


def test_band_keys_are_placed_like_hosts() -> None:
    ring = HashRing({"p1": 1.0, "p2": 1.0, "p3": 1.0})
    keys = [band_key(i, v) for i, v in enumerate(bands(0xDEADBEEF12345678, 3))]
    assert len(set(keys)) == 4
    assert all(ring.owner(key) == HashRing({"p3": 1.0, "p1": 1.0, "p2": 1.0}).owner(key) for key in keys)
    # The bands spread over the peers (4 keys on 3 peers: rarely all on one).
    owners = {ring.owner(band_key(i, v)) for fp in range(1, 50) for i, v in enumerate(bands(fp * 0x9E3779B97F4A7C15 % (1 << 64), 3))}
    assert owners == {"p1", "p2", "p3"}
