"""``[dedupe]``: duplicate content detection, exact by digest and near by SimHash, and its caps.

A section of cluster.toml in a module of its own, declared like the others
(``peer.core.config.keys``) and listed in ``peer.core.config.cluster.SECTIONS``. Every cap bounds what a hostile web can make a peer
hold; docs/dedupe.md has the measurements behind the defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from peer.core.config.keys import at_least_one, key, positive

__all__ = ["DedupeConfig"]


def _k(v: Any) -> str | None:
    # k+1 bands of 64/(k+1) bits: past k = 7 a band is 8 bits or less, and
    # every band key is shared by 1/256 of all pages (docs/dedupe.md).
    return None if 0 <= v <= 7 else "an integer 0..7"


def _shingle(v: Any) -> str | None:
    return None if 1 <= v <= 8 else "an integer 1..8"


@dataclass(frozen=True, slots=True)
class DedupeConfig:
    """``[dedupe]``: which pages are duplicates of pages already crawled, and how much a peer keeps to tell."""

    enabled: bool = key(bool, False, "detect duplicate pages: exact copies by the digest of their decoded body, near copies by the SimHash of their text; off by default, as a duplicate's links are not followed and a templated site's pages with little text of their own can come within k of each other")
    k: int = key(int, 3, "Hamming distance (of 64 bits) within which two pages' SimHashes are near duplicates; also k+1 bands are asked", _k)
    shingle: int = key(int, 3, "words a SimHash feature spans (overlapping shingles)", _shingle)
    min_words: int = key(int, 20, "distinct words of text under which a page has no SimHash and is never a near duplicate", at_least_one)
    max_text_bytes: int = key(int, 500_000, "bytes (UTF-8) of a page's visible text read for its SimHash; the rest are ignored", at_least_one)
    max_digests: int = key(int, 1_000_000, "body digests a peer remembers for exact duplicates; the oldest are forgotten and counted", at_least_one)
    band_max_per_key: int = key(int, 64, "pages a band owner keeps under one band key; the oldest are evicted and counted", at_least_one)
    band_max_entries: int = key(int, 1_000_000, "entries a band owner keeps over all its band keys; the oldest are evicted and counted", at_least_one)
    answer_timeout: float = key(float, 10.0, "seconds a page waits for its band owners' answers; past them it is new, counted", positive)
    max_waiting: int = key(int, 10_000, "pages waiting for band owners' answers at once; past them a page is new, counted", at_least_one)
    # Duplicate messages no outsider can forge, and exact copies across the ring (peer.core.dedupe.claims, .exact).
    max_clock_skew: float = key(float, 10.0, "seconds a member's clock may differ from this peer's: a band query dated later than now plus this, or earlier than now minus answer_timeout and this, is refused and counted", positive)
    exact_across_ring: bool = key(bool, True, "send a page's body digest with its band queries (alone, to its own key's owner, for a page without a SimHash), so a byte-identical copy on another peer's host is an exact duplicate; a peer of an older build drops such a query (one page waits answer_timeout, then that peer is sent no digest for 60 timeouts)")
    main_content: bool = key(bool, True, "fingerprint the page's main content (without the site's navigation, sidebar, header and footer; digits folded) rather than all its visible text, so a print view, a navigation change or a date line stays within k; every peer of a ring must agree")

    def describe(self) -> str:
        """``--check``'s line."""
        if not self.enabled:
            return "dedupe: off"
        return (f"dedupe: exact by body digest (at most {self.max_digests:,} kept), near by SimHash within "
                f"k={self.k} ({self.k + 1} band owners asked, {self.shingle}-word shingles, "
                f"{self.answer_timeout:g}s for their answers, {self.max_waiting:,} pages waiting at most)")

    def __post_init__(self) -> None:
        # The cluster.toml loader runs these checks with the file's name; this
        # is for a config built in code, which must not be wrong either.
        for f in fields(self):
            check = f.metadata.get("check")
            problem = check(getattr(self, f.name)) if check is not None else None
            if problem is not None:
                raise ValueError(f"dedupe.{f.name}: expected {problem}, not {getattr(self, f.name)!r}")
