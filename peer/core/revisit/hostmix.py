"""A host's budget shared between new URLs and revisits: which kind takes the next start (pure).

A host's pace (peer/core/frontier/pacing.py) says *when* it may start a request;
this module says *what* that start fetches once a crawl revisits pages: the
host's next new URL (its frontier queue) or its next due revisit
(peer/core/revisit/duequeue.py). Nutch and StormCrawler put both kinds in one queue
ordered by fetch time, so a host with a deep backlog of new links never
gets to its revisits (or the other way round); here each host divides its
budget by ``revisit_share`` (peer/core/revisit/policy.py's ``RevisitConfig``).

Rules:

1. Smooth weighted round robin (nginx's ``ngx_http_upstream_get_peer``,
   the two-weight case of Shreedhar & Varghese's deficit round robin,
   SIGCOMM 1995): each start with both kinds waiting adds ``share`` to the
   revisits' credit and ``1 - share`` to the new URLs'; the kind with the
   larger credit goes and pays one start. The two credits always sum to 0,
   so one number per host is kept. Over any run of ``k`` such starts the
   revisits got ``share x k`` of them, within one start either way, and the
   order interleaves (share 0.25: N N N R N N N R ...), never in bursts.
2. Work-conserving: with one kind waiting, it takes the start, and no credit
   moves: an idle kind earns nothing while idle, so it cannot come back
   owed a burst that would starve the other (a host whose new URLs ran dry
   for an hour would otherwise owe them an hour of starts).
3. ``share`` 0.0 gives revisits only the starts no new URL wants, 1.0 the
   reverse; anything between starves neither (rule 1's bound).
4. A host with nothing waiting keeps its credit, which is within one start
   of 0 by rule 1; :meth:`HostMix.forget` drops it (the host left the
   frontier or the ring), and a forgotten host starts again from 0.
"""

from __future__ import annotations

import enum

__all__ = ["HostMix", "Kind"]


class Kind(enum.Enum):
    """What a host's start fetches."""

    NEW = "new"
    REVISIT = "revisit"


class HostMix:
    """Per-host credits of rule 1; ask :meth:`take` each time a host may start."""

    __slots__ = ("share", "_credit", "taken")

    def __init__(self, share: float) -> None:
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"revisit_share must be within 0.0-1.0, not {share!r}")
        self.share = share
        # The revisits' credit per host; the new URLs' is its negation (rule 1).
        self._credit: dict[str, float] = {}
        self.taken: dict[Kind, int] = {Kind.NEW: 0, Kind.REVISIT: 0}

    def take(self, host: str, has_new: bool, has_revisit: bool) -> Kind | None:
        """The kind ``host``'s allowed start should fetch; None when neither waits."""
        if has_new and has_revisit:
            c = self._credit.get(host, 0.0) + self.share
            # Revisits' credit c against the new URLs' (1 - share) - (c - share) = 1 - c.
            kind = Kind.REVISIT if c >= 1.0 - c else Kind.NEW
            self._credit[host] = c - 1.0 if kind is Kind.REVISIT else c
        elif has_new:
            kind = Kind.NEW
        elif has_revisit:
            kind = Kind.REVISIT
        else:
            return None
        self.taken[kind] += 1
        return kind

    def credit(self, host: str) -> float:
        """The revisits' credit of ``host`` (0 for a host never seen or forgotten)."""
        return self._credit.get(host, 0.0)

    def forget(self, host: str) -> None:
        """Drop ``host``'s credit (rule 4)."""
        self._credit.pop(host, None)

    def __len__(self) -> int:
        return len(self._credit)
