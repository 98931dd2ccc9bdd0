"""What the ring asks of the crawl it serves: a ``typing.Protocol`` (pure).

``ring.io.driver.RingDriver`` talks to the crawl only through these methods,
so ``ring`` never imports ``peer``; what a batch taken or rerouted gives,
and in what order, is ``ring.forwarding.intake``'s (``accept`` for ``RELAY`` and
``ADOPTED``, ``accept_seen``, ``take_back``, ``commit_state``). A peer's
engine does not use it: there the crawl and the ring are one core
(``peer.core.door.peer.PeerCore``); it serves the ring's tests and benchmarks,
whose members have a stand-in crawl.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from ring.hashring import HashRing
from ring.status import StatusFigures

__all__ = ["CrawlPort", "NoCrawl"]


class CrawlPort(Protocol):
    """The crawl of one peer, as the ring driver sees it."""

    @property
    def pages_requested(self) -> int:
        """Pages this peer has requested (gossiped: cluster-wide ``max_pages``)."""
        ...

    def locally_idle(self) -> bool:
        """Nothing queued and nothing in flight here (termination)."""
        ...

    def accept(self, url: str, depth: int) -> None:
        """A URL forwarded to us: route, dedupe, queue."""
        ...

    def accept_seen(self, url: str) -> None:
        """A URL another peer fetched, for a host now ours (hand-off)."""
        ...

    def take_back(self, url: str, depth: int) -> None:
        """A URL of ours that was on its way to a peer now gone."""
        ...

    def commit_state(self) -> None:
        """Make what was taken durable: it is acked next."""
        ...

    def set_ring(self, ring: HashRing) -> None:
        """The live member set changed: hosts no longer ours go to their owners."""
        ...

    async def handoff_seen(self, old: HashRing, ring: HashRing) -> int:
        """Queue the moved hosts' fetched URLs for their new owners; how many."""
        ...

    def handoff_starts(self, old: HashRing, ring: HashRing) -> Mapping[str, Iterable[tuple[str, float]]]:
        """{new owner: [(host, last request start)]} of the hosts that moved away."""
        ...

    def handoff_done(self, sender: str) -> None:
        """``sender`` handed us everything for the current ring: release its hosts."""
        ...

    def seed_host_starts(self, starts: Iterable[tuple[str, float]]) -> None:
        """A previous owner's last request starts of hosts now ours."""
        ...

    def leave(self) -> None:
        """``ring leave`` asked this peer to leave gracefully."""
        ...

    def poke(self) -> None:
        """Gossip brought news: re-check termination and limits."""
        ...

    def status_figures(self) -> StatusFigures:
        """This peer's figures for ``ring status``."""
        ...

    def add_seeds(self, lines: Sequence[str], unreadable: int) -> Mapping[str, int] | None:
        """``ring seed add``'s batch (``ring.seedadds``): judged, routed and durable; the count of
        each outcome, or None for a member that runs no crawl (answered ``no_crawl``)."""
        ...


class NoCrawl:
    """A :class:`CrawlPort` with nothing to crawl: the stand-in of a ring member that
    runs no crawl (the tools' and benchmarks' bare members). Idle; a subclass that
    must keep the ring from ending says so in ``locally_idle``."""

    pages_requested = 0

    def locally_idle(self) -> bool:
        return True

    def accept(self, url: str, depth: int) -> None:
        pass

    def accept_seen(self, url: str) -> None:
        pass

    def take_back(self, url: str, depth: int) -> None:
        pass

    def commit_state(self) -> None:
        pass

    def set_ring(self, ring: HashRing) -> None:
        pass

    async def handoff_seen(self, old: HashRing, ring: HashRing) -> int:
        return 0

    def handoff_starts(self, old: HashRing, ring: HashRing) -> Mapping[str, Iterable[tuple[str, float]]]:
        return {}

    def handoff_done(self, sender: str) -> None:
        pass

    def seed_host_starts(self, starts: Iterable[tuple[str, float]]) -> None:
        pass

    def leave(self) -> None:
        pass

    def poke(self) -> None:
        pass

    def status_figures(self) -> StatusFigures:
        return StatusFigures()

    def add_seeds(self, lines: Sequence[str], unreadable: int) -> Mapping[str, int] | None:
        return None
