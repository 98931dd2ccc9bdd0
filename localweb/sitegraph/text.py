"""Text of the site graph's pages: a seeded pool of blocks and phrases.

A page is assembled by picking indices into the pool instead of drawing
thousands of words (which would cost milliseconds a page). Same seed, same
pool. Some words are not ASCII and some sentences carry entities, so a
crawler's decoding and text extraction see more than plain ASCII.
"""

from __future__ import annotations

from random import Random

__all__ = ["BLOCK_MAX", "WORDS", "RARE_WORDS", "phrases", "plain_sentence", "text_pool"]


WORDS = (
    "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut "
    "labore et dolore magna aliqua enim ad minim veniam quis nostrud exercitation ullamco laboris "
    "nisi aliquip ex ea commodo consequat duis aute irure in reprehenderit voluptate velit esse "
    "cillum fugiat nulla pariatur excepteur sint occaecat cupidatat non proident sunt culpa qui "
    "officia deserunt mollit anim id est laborum harbour garden river window market lantern "
    "orchard meadow copper violet thunder whisper crystal ember quarry signal bridge tower canal "
    "station library archive ledger compass anchor beacon harvest winter summer autumn spring"
).split()
RARE_WORDS = ("café", "naïve", "façade", "crème", "über", "jalapeño", "smørrebrød", "déjà vu")
BLOCK_MAX = 1200  # bytes; pages are padded to a target with blocks, so this bounds overshoot


def _sentence(rng: Random, lo: int = 6, hi: int = 16) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(lo, hi))]
    r = rng.random()
    if r < 0.15:
        words[rng.randrange(len(words))] = rng.choice(RARE_WORDS)
    elif r < 0.25:
        i = rng.randrange(len(words))
        words[i] = f"<em>{words[i]}</em>"
    elif r < 0.32:
        words.insert(rng.randrange(1, len(words)), "&amp;")
    elif r < 0.36:
        words.insert(rng.randrange(1, len(words)), "&lt;tag&gt;")
    s = " ".join(words)
    return s[0].upper() + s[1:] + rng.choice(".....?!;")


def _block(rng: Random) -> str:
    r = rng.random()
    if r < 0.70:
        text = " ".join(_sentence(rng) for _ in range(rng.randint(3, 8)))
        return f"<p>{text}</p>\n"
    if r < 0.85:
        items = "".join(f"<li>{_sentence(rng, 3, 8)}</li>" for _ in range(rng.randint(3, 7)))
        return f"<ul>{items}</ul>\n"
    if r < 0.95:
        rows = "".join(
            f"<tr><td>{rng.choice(WORDS)}</td><td>{rng.randint(1, 9999)}</td>"
            f"<td>{rng.random():.3f}</td></tr>"
            for _ in range(rng.randint(3, 8))
        )
        return f'<table class="data"><tr><th>name</th><th>count</th><th>ratio</th></tr>{rows}</table>\n'
    return f"<h2>{_sentence(rng, 2, 5)[:-1]}</h2>\n<p>{_sentence(rng)} {_sentence(rng)}</p>\n"


def text_pool(seed: int, n: int = 512) -> tuple[list[str], list[int]]:
    """``n`` HTML blocks of at most BLOCK_MAX bytes each, and their sizes in bytes."""
    rng = Random(seed * 7919 + 17)
    blocks: list[str] = []
    while len(blocks) < n:
        b = _block(rng)
        if len(b.encode()) <= BLOCK_MAX:
            blocks.append(b)
    return blocks, [len(b.encode()) for b in blocks]


def phrases(seed: int, n: int = 256) -> list[str]:
    """``n`` short title-cased ASCII phrases: titles and link texts."""
    rng = Random(seed * 104729 + 3)
    ascii_words = [w for w in WORDS if w.isascii()]
    return [" ".join(rng.choice(ascii_words) for _ in range(rng.randint(2, 4))).title() for _ in range(n)]


def plain_sentence(rng: Random) -> str:
    """A sentence without markup (the shop's blurbs, which an extractor reads back)."""
    words = [rng.choice(WORDS) for _ in range(rng.randint(6, 14))]
    if rng.random() < 0.3:
        words[rng.randrange(len(words))] = rng.choice(RARE_WORDS)
    s = " ".join(words)
    return s[0].upper() + s[1:] + "."
