"""The SimHash is the same 64 bits it always was: stored fingerprints and other peers' still compare.

``peer.core.dedupe.simhash`` is computed faster than it was (word classes by
``bytes.translate``, one histogram for the bit vote, the distinct-word count
settled on a prefix), and a fingerprint is data that outlives a run: a
results row, a band table entry, another peer's query. Every value here is
checked against the code as it was (tests/support/simhashref.py, verbatim)
and a few against numbers written down from it, so a change that moves one
bit fails. The real documentation pages are compared in
tests/edges/test_realdocs_fingerprint.py.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

import simhashref
from localweb.sitegraph.nearcopies import corpus
from peer.core.dedupe.maintext import main_text
from peer.core.dedupe.simhash import fingerprint, visible_text, word_hashes

_WORDS = ("the river carries silt past quiet towns where lanterns burn late and merchants count "
          "copper coins beside ledgers of salt wool timber grain Über café naïve 東京 2024-05-17 "
          "version_3 HTTP/1.1 snake_case ÉCOLE").split()


def _text(seed: int, n: int) -> str:
    # A 64-bit LCG (Knuth's MMIX constants), not random.Random: the texts of
    # the written-down values below must never change with Python's version.
    x, out = seed, []
    for _ in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        out.append(_WORDS[(x >> 33) % len(_WORDS)])
    return " ".join(out)


@pytest.mark.parametrize(("seed", "n", "options", "value"), [
    (1, 300, {}, 0x656A22E5D58A287),
    (2, 300, {"fold_digits": True}, 0x2E3E09CCEC8757C0),
    (3, 1000, {"shingle": 1}, 0x160FE211969A73C),
    (4, 40, {"shingle": 4}, 0xE56819EC955D6CA8),
    (5, 5000, {"max_bytes": 2000}, 0x4C67B92233A8B1A5),
])
def test_fingerprints_written_down_from_the_released_code_are_unchanged(seed, n, options, value):
    assert fingerprint(_text(seed, n), **options) == value
    assert simhashref.fingerprint(_text(seed, n), **options) == value


@pytest.fixture(scope="module")
def pages() -> list[bytes]:
    c = corpus(40, seed=5)
    return list(c.originals) + [cp.body for cp in c.copies]


def test_every_page_of_the_synthetic_corpus_and_its_copies_keeps_its_fingerprint(pages):
    # 40 originals and 9 copies of each: the visible text and the main
    # content, digits folded or not, 1- to 4-word shingles.
    checked = 0
    for body in pages:
        for text in (visible_text(LexborHTMLParser(body)), main_text(LexborHTMLParser(body))):
            for fold in (False, True):
                for shingle in (1, 2, 3, 4):
                    new = fingerprint(text, shingle=shingle, fold_digits=fold)
                    assert new == simhashref.fingerprint(text, shingle=shingle, fold_digits=fold)
                    checked += new is not None
    assert checked == len(pages) * 16  # every one has a fingerprint: none compared as None == None


@pytest.mark.parametrize(("text", "has"), [
    # The first words repeat (a hub's link labels), so the prefix cannot
    # settle the distinct count: the whole text does.
    ("more " * 500 + " ".join(f"w{i}x" for i in range(18)), False),  # 19 distinct with "more"
    ("more " * 500 + " ".join(f"w{i}x" for i in range(19)), True),
    (" ".join(f"w{i}x" for i in range(19)), False),
    (" ".join(f"w{i}x" for i in range(20)), True),
    ("l " * 10_000, False),
    ("", False),
    ("\xa0".join(f"word{i}x" for i in range(30)), True),  # no-break spaces part words
])
def test_the_distinct_word_rule_gives_the_same_answer_on_texts_that_repeat(text, has):
    assert (fingerprint(text) is not None) == has
    assert fingerprint(text) == simhashref.fingerprint(text)


_ALPHABET = st.sampled_from(list("aAbBzZ09_5 \t\n.,-'/") + ["\xa0", "é", "É", "ß", "東", "\U0001F600", "\ud800", "\u2019"])


@settings(max_examples=300, deadline=None)
@given(text=st.lists(_ALPHABET, max_size=600).map("".join),
       shingle=st.integers(1, 5), min_words=st.integers(1, 30), max_bytes=st.integers(1, 800),
       fold=st.booleans())
def test_any_text_and_settings_give_the_released_fingerprint(text, shingle, min_words, max_bytes, fold):
    # Short words from a small alphabet repeat often (ties in the bit vote,
    # distinct counts near min_words); multi-byte characters meet max_bytes.
    assert (word_hashes(text, max_bytes, fold) == simhashref.word_hashes(text, max_bytes, fold)).all()
    got = fingerprint(text, shingle=shingle, min_words=min_words, max_bytes=max_bytes, fold_digits=fold)
    assert got == simhashref.fingerprint(text, shingle=shingle, min_words=min_words, max_bytes=max_bytes,
                                         fold_digits=fold)
