"""``ring seed add``'s lines at the peer that took them: counted by outcome, kept across a restart (pure).

An operator's batch (``ring.messages.SeedAddRequest``) reaches one live
peer, which judges each line exactly as a ``crawl.seeds_file`` line
(``peer.core.crawl.seedfeed`` rules 1-2: ``parse_line``, then
``CrawlCore.discover`` with ``Origin.SEED`` and ``outcome``), so the two
ways in share one set of checks and one vocabulary: ``skipped``,
``invalid``, ``queued``, ``forwarded``, ``seen``, or the not-requested
cause (``scope``, ``rules``, a cap's key). A line the tool could not
carry (not UTF-8, too long) is ``invalid`` too.

Rules:

1. **Counted where it was taken**, under ``seed_add.<outcome>``, in
   ``ring status`` (the ``seed_add`` key of ``--json``) and ``/metrics``
   (``ringcrawl_seed_add_lines_total{outcome}``). A ``forwarded`` URL is
   judged again by its owner, which may find it seen; that is the owner's
   count, as for a seeds file.
2. **Journaled with the batch**: the counts ride in the journal's counters
   (which replace by name) before the batch's ``Commit``, so a restart
   shows what the peer took before it, and a batch not on disk was never
   answered (the tool asks again, ``ring.seedadds`` rule 3).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

__all__ = ["PREFIX", "SeedTally"]

#: The counters' prefix (``ring.vocabulary.COUNTER_PREFIXES``).
PREFIX = "seed_add."


class SeedTally:
    """Every ``ring seed add`` line this peer took, by outcome (module docstring)."""

    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    @property
    def lines(self) -> int:
        return sum(self.counts.values())

    def add(self, counts: Mapping[str, int]) -> None:
        self.counts.update(counts)

    def figures(self) -> dict[str, int]:
        """The counts as the status reply's counters carry them (``seed_add.<outcome>``)."""
        return {PREFIX + k: n for k, n in self.counts.items() if n}

    def summary(self) -> str:
        parts = ", ".join(f"{k} {n:,}" for k, n in sorted(self.counts.items()))
        return f"seed add: {self.lines:,} lines taken ({parts})"

    def to_counters(self) -> dict[str, float]:
        """Rule 2: what the journal keeps."""
        return {PREFIX + k: float(n) for k, n in self.counts.items()}

    @classmethod
    def from_counters(cls, counters: Mapping[str, float]) -> SeedTally:
        tally = cls()
        for name, v in counters.items():
            if name.startswith(PREFIX) and v:
                tally.counts[name[len(PREFIX):]] = int(v)
        return tally
