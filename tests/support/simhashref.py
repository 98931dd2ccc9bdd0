"""The SimHash as it stood before its speed-ups, kept verbatim: the values every later version must give.

Fingerprints are stored (results rows, band tables) and compared across
peers and runs, so a faster ``peer.core.dedupe.simhash`` must give the same
64 bits for the same text. This is its code before the speed-ups of its
word classes (``np.take``), its bit vote (one ``bincount`` a byte column)
and its distinct-word count (``np.unique``), with its own tables, so a change to the
product's tables or seed shows here too. Used by tests/core/test_simhash_identity.py
and tests/edges/test_realdocs_fingerprint.py; nothing else may import it.
"""

from __future__ import annotations

import mmh3
import numpy as np

_C1 = np.uint64(0x9E3779B97F4A7C15)
_C2 = np.uint64(0xC2B2AE3D27D4EB4F)
_F1 = np.uint64(0xFF51AFD7ED558CCD)
_F2 = np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)


def _fmix64(h: np.ndarray) -> np.ndarray:
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
    word[0x80:] = True
    low = np.arange(256, dtype=np.uint64)
    low[ord("A"):ord("Z") + 1] += 32
    if fold_digits:
        low[ord("1"):ord("9") + 1] = ord("0")
    seed = np.uint64(mmh3.hash64(b"ringcrawl simhash", signed=False)[0])
    folded = (low[:, None] << np.uint64(8)) | low[None, :]
    tab = _fmix64(folded.ravel() * _C1 + seed)
    tab[~np.tile(word, 256)] = 0
    return word, tab


_IS_WORD, _PAIR = _tables()
_, _PAIR_DIGITS = _tables(fold_digits=True)


def word_hashes(text: str, max_bytes: int, fold_digits: bool = False) -> np.ndarray:
    raw = (" " + text[:max_bytes].replace("\xa0", " ")).encode("utf-8", "replace")[:max_bytes + 1]
    b = np.frombuffer(raw, dtype=np.uint8)
    isw = _IS_WORD.take(b)
    starts = np.flatnonzero(isw[1:] > isw[:-1])
    if not len(starts):
        return np.zeros(0, dtype=np.uint64)
    pairs = np.ndarray((len(b) - 1,), dtype=">u2", buffer=raw, strides=(1,))
    run = np.cumsum((_PAIR_DIGITS if fold_digits else _PAIR).take(pairs))
    ends = np.empty(len(starts) + 1, dtype=np.uint64)
    ends[0] = 0
    ends[1:-1] = run.take(starts[1:] - 1)
    ends[-1] = run[-1]
    return _fmix64(np.diff(ends))


def shingle_hashes(words: np.ndarray, shingle: int) -> np.ndarray:
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


_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.int64)


def _fold(hashes: np.ndarray) -> int:
    by = hashes.view(np.uint8).reshape(-1, 8)
    counts = np.empty(64, dtype=np.int64)
    for j in range(8):
        counts[8 * j:8 * j + 8] = np.bincount(by[:, j], minlength=256) @ _BITS
    return int(np.packbits(counts * 2 > len(hashes)).view(hashes.dtype)[0])


def fingerprint(text: str, *, shingle: int = 3, min_words: int = 20, max_bytes: int = 500_000,
                fold_digits: bool = False) -> int | None:
    """The SimHash of ``text`` as it was (``peer.core.dedupe.simhash.fingerprint``'s rules)."""
    words = word_hashes(text, max_bytes, fold_digits)
    if len(words) < min_words or len(np.unique(words)) < min_words:
        return None
    return _fold(shingle_hashes(words, shingle))
