"""The book shop ``shop.web.test``: its products and authors, drawn from a seed.

The shop is there for the extraction rules (``[extract.*]``): each product
page carries a title, a price, a cover, one to three authors and a blurb,
some with ``&`` and apostrophes and non-ASCII letters, which the oracle
(:func:`localweb.sitegraph.oracle.shop_items`) lists as a correct extractor reads them.
"""

from __future__ import annotations

from random import Random
from typing import NamedTuple

from localweb.sitegraph.text import plain_sentence

__all__ = ["CATEGORIES", "SHOP_HOST", "Product", "make_shop", "slug"]

SHOP_HOST = "shop.web.test"


class Product(NamedTuple):
    """One book; ``authors`` index the names :func:`make_shop` returns."""

    slug: str
    title: str
    price: str
    authors: tuple[int, ...]
    blurb: str
    category: int


CATEGORIES = ("Fiction", "History", "Science", "Poetry", "Travel & Food")
_FIRST = ("Ada", "Bram", "Clara", "Dev", "Elif", "Finn", "Grace", "Hugo", "Iris", "Jonah",
          "Kaito", "Lena", "Mei", "Nico", "Orla", "Priya")
_LAST = ("O'Brien", "Okafor", "Lindqvist", "Moreau", "Tanaka", "Castillo", "Novak", "Reyes",
         "Sato", "Whitfield", "Achebe", "Brennan")
_TITLE_WORDS = ("salt", "stone", "river", "glass", "winter", "garden", "ember", "silver",
                "harbour", "lantern", "orchard", "thunder", "compass", "atlas", "midnight",
                "paper", "tide", "hollow", "crown", "sparrow", "iron", "velvet", "quiet", "north")


def slug(s: str) -> str:
    """The URL slug of a title or name: ``Travel & Food`` -> ``travel-and-food``."""
    s = s.lower().replace("&", "and").replace("'", "")
    return "-".join("".join(c if c.isalnum() else " " for c in s).split())


def make_shop(seed: int, n: int) -> tuple[list[Product], list[str]]:
    """``n`` products with distinct slugs, and the 12 author names they index."""
    rng = Random(seed * 31337 + 5)
    names: list[str] = []
    while len(names) < 12:
        name = f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"
        if name not in names:
            names.append(name)
    products: list[Product] = []
    slugs: set[str] = set()
    while len(products) < n:
        words = [rng.choice(_TITLE_WORDS).title() for _ in range(rng.randint(2, 4))]
        if rng.random() < 0.2:
            words.insert(rng.randint(1, len(words) - 1), "&")
        title = ("The " if rng.random() < 0.3 else "") + " ".join(words)
        key = slug(title)
        if key in slugs:
            continue
        slugs.add(key)
        authors = tuple(rng.sample(range(len(names)), rng.choice((1, 1, 1, 2, 2, 3))))
        price = f"£{rng.randint(3, 39)}.{rng.choice(('00', '49', '95', '99'))}"
        blurb = f"{plain_sentence(rng)} {plain_sentence(rng)}"
        products.append(Product(key, title, price, authors, blurb, len(products) % len(CATEGORIES)))
    return products, names
