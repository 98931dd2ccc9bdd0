"""SimHash: a page's visible text as a 64-bit fingerprint, near pages at a small Hamming distance.

Charikar ("Similarity estimation techniques from rounding algorithms", STOC
2002) hashes each feature of a document to 64 bits, adds +w or -w per bit
position, and keeps the sign of each sum: documents that share most of their
weighted features agree on most bits. Manku, Jain and Das Sarma ("Detecting
near-duplicates for web crawling", WWW 2007) showed it on 8B pages with
k = 3 (two pages are near duplicates within Hamming distance 3 of 64 bits),
and found them by splitting the fingerprint into tables of bands, the
pigeonhole principle behind :func:`bands` here.

Rules:

1. **Text.** What is compared is what a reader sees: the document's text
   with ``<script>``, ``<style>``, ``<noscript>`` and ``<template>``
   removed (:func:`visible_text`), lower-cased and split into words (runs of
   Unicode word characters). Markup, attributes and URLs do not count, so
   the same article under two URLs with other session ids in its links
   hashes the same. A word is a run of ASCII letters, digits and ``_`` and
   of non-ASCII bytes (UTF-8), ASCII case folded: the text is cut into
   words as bytes, in numpy, since Python's ``re`` and ``str.lower`` cost
   as much as the parse (non-ASCII case is not folded, and a non-ASCII
   punctuation mark sticks to its word). At most ``max_bytes`` of the text
   are read (hostile pages are megabytes of text).
2. **Features.** Overlapping ``shingle``-word shingles (Broder et al.,
   "Syntactic clustering of the web", 1997), each weight 1 (a shingle that
   occurs twice counts twice). Measured on the local web's generator
   (``scripts/bench_dedupe.py``, docs/dedupe.md): words weighted by count
   put unrelated pages of one vocabulary at a median distance of 3 bits
   (precision 0.15 at k = 3), because word counts lose the order that
   makes two texts different; 3-word shingles put them at 30 (about 32 is
   random) with precision 0.995, and copies that differ in a date, an ad or
   the navigation mostly stay within k = 3.
3. **Hashing.** A word's hash is tabulation hashing over its byte pairs
   (a table of MurmurHash3-derived values, see ``_tables``), finished with
   MurmurHash3's 64-bit finaliser ``fmix64``; a shingle's hash combines its
   words' (multiply-add by odd constants, then ``fmix64``, so every input
   bit reaches every output bit). All of it runs in numpy over the whole
   text: one ``mmh3.hash64`` call a word from Python cost as much as the
   parse (``scripts/bench_dedupe.py`` prints the parts).
4. **Too little text.** A text of fewer than ``min_words`` distinct words
   has no fingerprint (:func:`fingerprint` returns None): a hundred nearly
   empty pages (a login form, "Not found") would all be "near duplicates"
   of each other, and dropping them loses pages that differ in what
   matters. Distinct, not in all: a hub whose text is its link labels, the
   same word a thousand times ("more", "next", a link farm's "l"), has one
   shingle, so every such page has the same fingerprint, and calling them
   duplicates of each other dropped their links (a crawl of a link farm
   stopped at its first page).
5. **Bands.** :func:`bands` splits the 64 bits into k+1 bands of 64/(k+1)
   bits (the first ``64 % (k+1)`` bands one bit wider): two fingerprints
   within distance k differ in at most k bands, so at least one band is
   identical in both (pigeonhole). :func:`band_key` names a band for the
   ring, which places it on its owner like a host.
6. **Digits folded** (``fold_digits``, on with ``[dedupe] main_content``):
   every digit hashes as ``0``, in the same table that folds case, so a
   date line ("last modified on 2022-10-26 20:02:18") or a counter that
   changed is not a change of what the page says. What text is hashed
   (the main content or all visible text) is :mod:`peer.core.dedupe.maintext`'s.
"""

from __future__ import annotations

import mmh3
import numpy as np
from selectolax.lexbor import LexborHTMLParser

__all__ = [
    "FINGERPRINT_BITS", "band_key", "band_widths", "bands", "distance", "fingerprint",
    "shingle_hashes", "visible_text", "word_hashes",
]

FINGERPRINT_BITS = 64
# Elements whose text a reader never sees (HTML §4.12: script data and
# templates are not rendered; noscript is not, in a browser that runs
# scripts, which is what most readers have).
_HIDDEN = ["script", "style", "noscript", "template"]

# Odd 64-bit constants (MurmurHash3's and the golden ratio's): multiplying by
# an odd number is a bijection mod 2**64, so no combination collapses.
_C1 = np.uint64(0x9E3779B97F4A7C15)
_C2 = np.uint64(0xC2B2AE3D27D4EB4F)
_F1 = np.uint64(0xFF51AFD7ED558CCD)
_F2 = np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)


def visible_text(tree: LexborHTMLParser) -> str:
    """The text a reader sees of a parsed document (rule 1).

    Removes the hidden elements from ``tree`` itself (a copy would cost a
    second parse): call it after :func:`peer.core.page.extract.parse_page` and the
    extraction rules have read the tree.
    """
    tree.strip_tags(_HIDDEN)
    root = tree.body or tree.root
    if root is None:
        return ""
    return root.text(separator=" ")


def _fmix64(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser, in place: every input bit reaches every output bit."""
    h ^= h >> _S33
    h *= _F1
    h ^= h >> _S33
    h *= _F2
    h ^= h >> _S33
    return h


def _tables(fold_digits: bool = False) -> tuple[np.ndarray, np.ndarray]:
    word = np.zeros(256, dtype=bool)
    for c in b"0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ":
        word[c] = True
    word[0x80:] = True  # every byte of a non-ASCII character (rule 1)
    low = np.arange(256, dtype=np.uint64)
    low[ord("A"):ord("Z") + 1] += 32
    if fold_digits:  # every digit draws 0's values (rule 6)
        low[ord("1"):ord("9") + 1] = ord("0")
    # Tabulation hashing (Zobrist; Carter and Wegman, 1979): one random 64-bit
    # value per byte pair (previous byte, byte), from a MurmurHash3-seeded
    # counter; a word's hash is the sum of its pairs' values. A pair, not a
    # byte, so that order counts ("dog" is not "god"). Pairs ending in a
    # non-word byte draw 0, so a running sum differenced at word starts gives
    # each word's own. ASCII case is folded in the table (a pair of upper-case
    # letters draws its lower-case pair's value), which saves a pass over the
    # text. A 512 KiB table, built in a millisecond at import.
    seed = np.uint64(mmh3.hash64(b"ringcrawl simhash", signed=False)[0])
    folded = (low[:, None] << np.uint64(8)) | low[None, :]
    tab = _fmix64(folded.ravel() * _C1 + seed)
    tab[~np.tile(word, 256)] = 0
    return word, tab


_IS_WORD, _PAIR = _tables()
_IS_WORD_BYTES = _IS_WORD.astype(np.uint8).tobytes()
_, _PAIR_DIGITS = _tables(fold_digits=True)


def word_hashes(text: str, max_bytes: int, fold_digits: bool = False) -> np.ndarray:
    """A 64-bit hash of each word of ``text``, in order: the words of rule 1, hashed as rule 3 says.

    Only the first ``max_bytes`` bytes of the text (UTF-8) are read;
    ``fold_digits``: every digit hashes as 0 (rule 6).
    """
    # A character is at least one byte: cut the str first, so a hostile
    # page's megabytes of text are never encoded whole.
    raw = (" " + text[:max_bytes].replace("\xa0", " ")).encode("utf-8", "replace")[:max_bytes + 1]
    # bytes.translate maps each byte through a 256-byte table in C: numpy's
    # take would first widen every byte to an 8-byte index.
    isw = np.frombuffer(raw.translate(_IS_WORD_BYTES), dtype=np.bool_)
    starts = np.flatnonzero(isw[1:] > isw[:-1])  # the pair that begins each word
    if not len(starts):
        return np.zeros(0, dtype=np.uint64)
    # Each (previous byte, byte) pair as one big-endian 16-bit index, read in
    # place (a stride of one byte), then a running sum of their values: word
    # i's hash is the sum at the next word's start less the sum at its own
    # (zero before the first word: no pair there ends in a word byte).
    pairs = np.ndarray((len(raw) - 1,), dtype=">u2", buffer=raw, strides=(1,))
    run = (_PAIR_DIGITS if fold_digits else _PAIR).take(pairs)
    np.cumsum(run, out=run)
    ends = np.empty(len(starts) + 1, dtype=np.uint64)
    ends[0] = 0
    ends[1:-1] = run.take(starts[1:] - 1)
    ends[-1] = run[-1]
    return _fmix64(np.diff(ends))


def shingle_hashes(words: np.ndarray, shingle: int) -> np.ndarray:
    """The 64-bit hashes of the overlapping ``shingle``-word shingles of ``words``' hashes (rules 2, 3).

    Fewer words than ``shingle`` make one shingle of them all; none make none.
    """
    if shingle <= 1 or not len(words):
        return words
    n = len(words) - shingle + 1
    if n < 1:
        n, shingle = 1, len(words)
    acc = words[:n] * _C1
    for j in range(1, shingle):
        acc += words[j:j + n]
        if j < shingle - 1:
            acc *= _C2 if j % 2 else _C1
    return _fmix64(acc)


# Bit j (most significant first) of each byte value, for counting set bits.
# Integers, not floats: a float product would go to BLAS, whose own thread
# pool has no business in a parse worker thread for an 8x256 product.
_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.int64)
# Byte j of a feature counts in bins 256*j .. 256*j+255 of one histogram.
_COLUMN = np.arange(8, dtype=np.uint16) * np.uint16(256)


def _fold(hashes: np.ndarray) -> int:
    """Charikar's rule: bit i of the fingerprint is set when most features set bit i.

    Counted a byte column at a time (a histogram of its 256 values, then the
    bits of each value): unpacking every bit of every feature cost 3-6x more.
    The eight columns share one histogram (one ``bincount`` over all bytes,
    offset by column): 18 µs against 32 for 100 features, 33 against 45 for
    1,000, even at 3,300 (a 30 KiB page), where the per-call cost no longer
    counts.
    """
    by = hashes.view(np.uint8).reshape(-1, 8)
    hist = np.bincount((by + _COLUMN).ravel(), minlength=8 * 256).reshape(8, 256)
    counts = (hist @ _BITS).ravel()
    # A tie (an even count, half set) goes to 0; packbits inverts the byte
    # and bit order read above, so bit i of the result is bit i of the features.
    return int(np.packbits(counts * 2 > len(hashes)).view(hashes.dtype)[0])


def _distinct_at_least(words: np.ndarray, n: int) -> bool:
    """Whether ``words`` holds at least ``n`` distinct values (rule 4).

    A prefix of a few times ``n`` words mostly settles it, in a set of a
    hundred ints; sorting every word (``np.unique``) cost a fifth of the
    fingerprint. Only a text whose start repeats itself is sorted whole.
    """
    if len(set(words[:4 * n].tolist())) >= n:
        return True
    return len(np.unique(words)) >= n


def fingerprint(text: str, *, shingle: int = 3, min_words: int = 20, max_bytes: int = 500_000,
                fold_digits: bool = False) -> int | None:
    """The 64-bit SimHash of ``text``, or None under ``min_words`` distinct words (rule 4)."""
    words = word_hashes(text, max_bytes, fold_digits)
    if len(words) < min_words or not _distinct_at_least(words, min_words):
        return None
    return _fold(shingle_hashes(words, shingle))


def distance(a: int, b: int) -> int:
    """The Hamming distance of two fingerprints: how many of their 64 bits differ."""
    return (a ^ b).bit_count()


def band_widths(k: int) -> tuple[int, ...]:
    """The widths in bits of the k+1 bands of a fingerprint (rule 5), most significant first."""
    if not 0 <= k < FINGERPRINT_BITS:
        raise ValueError(f"k must be 0..{FINGERPRINT_BITS - 1}, not {k!r}")
    n = k + 1
    base, extra = divmod(FINGERPRINT_BITS, n)
    return tuple(base + 1 if i < extra else base for i in range(n))


def bands(fp: int, k: int) -> tuple[int, ...]:
    """The k+1 band values of ``fp``: any ``fp2`` within distance k shares one of them at its index."""
    out = []
    shift = FINGERPRINT_BITS
    for width in band_widths(k):
        shift -= width
        out.append((fp >> shift) & ((1 << width) - 1))
    return tuple(out)


def band_key(index: int, value: int) -> str:
    """The ring key of band ``index`` of value ``value``: its owner is ``HashRing.owner(band_key(...))``.

    The prefix keeps band keys apart from host names on the same circle
    (no host is called ``simhash-band``); hex is lower-case, as the ring
    lower-cases its keys.
    """
    return f"simhash-band/{index}/{value:x}"
