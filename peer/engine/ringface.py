"""The crawl engine's face to the ring: what the ring driver calls, and the spilled queues that move (edge).

A part of ``peer.engine.crawler.Crawler``: URLs delivered by the ring go
into ``CrawlCore.discover`` with their origin, ring changes into
``CrawlCore.set_ring``, and a hand-off reads the moved hosts' fetched URLs
from the results (``handoff_seen``) for the ring node's Outbox.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from peer.core.config import ClusterConfig
from peer.core.crawl import CrawlCore, Effect, Origin
from peer.net.resolver import Resolver
from peer.state.journal import PeerState
from peer.results.store import ResultStore
from ring.messages import MemberState

if TYPE_CHECKING:
    from ring.hashring import HashRing


__all__ = ["MOVE_BACKLOG", "MOVE_CHUNK", "RingFace"]

#: Spilled URLs of hosts that changed owner passed on in one turn of the
#: loop (frontier rule 10; ~30 us a URL: a 15 ms step), and how many may wait
#: in the Outbox for their acks before more are read.
MOVE_CHUNK = 500
MOVE_BACKLOG = 20_000


class RingFace:
    """The ring's side of ``Crawler`` (module docstring)."""

    cfg: ClusterConfig
    peer_id: str
    core: CrawlCore
    clock: Callable[[], float]
    node: Any
    data_dir: Path
    resolver: Resolver
    _state: PeerState | None
    _store: ResultStore | None
    _wake: trio.Event
    _turn: trio.Lock

    def _apply(self, effects: Iterable[Effect]) -> None:
        raise NotImplementedError

    _move_kick: trio.Event

    def stop(self) -> None:
        raise NotImplementedError

    def accept(self, url: str, depth: int) -> None:
        """A URL forwarded to us (or returned by a re-route): route, dedupe, queue."""
        self._apply(self.core.discover(url, depth, self.clock(), Origin.RELAY))

    def take_back(self, url: str, depth: int) -> None:
        """A URL of ours that was on its way to a peer now gone (``Outbox.reroute``)."""
        self._apply(self.core.discover(url, depth, self.clock(), Origin.HANDED_BACK))

    def accept_seen(self, url: str) -> None:
        """A URL another peer already fetched for a host now ours (hand-off)."""
        self._apply(self.core.discover(url, 0, self.clock(), Origin.HANDED_SEEN))

    def set_ring(self, ring: HashRing) -> None:
        """The live member set changed: hosts no longer ours go to their owners."""
        self._apply(self.core.set_ring(ring, self.clock()))
        if self.core.frontier.moving:
            self._move_kick.set()

    async def _move_spilled(self) -> None:
        """Pass on the spilled queues of hosts that changed owner, MOVE_CHUNK URLs a turn (frontier rule 10).

        Paced by the Outbox: while MOVE_BACKLOG URLs wait for their owners'
        acks, no more are taken off the disk, so the move costs RAM of a
        backlog, not of the queues.
        """
        fr = self.core.frontier
        while True:
            if not fr.moving or self.node is None:
                self._move_kick = trio.Event()
                await self._move_kick.wait()
                continue
            outbox = self.node.outbox
            st = outbox.stats()
            if st.pending + st.unacked * MOVE_CHUNK > MOVE_BACKLOG:
                await trio.sleep(0.05)
                continue
            async with self._turn:
                self._apply(self.core.pass_on_moving(self.clock(), MOVE_CHUNK))
                if self._state is not None:
                    self._state.commit()

    def handoff_done(self, sender: str) -> None:
        """``sender`` handed us everything for the current ring: release its hosts."""
        self.core.handoff_done(sender)
        self._wake.set()

    async def handoff_seen(self, old: HashRing | None, ring: HashRing) -> int:
        """Queue, for their new owners, the URLs fetched here of hosts that moved.

        The seen set cannot be read out of a Bloom filter, so it comes from
        the results (``pages``, flushed first) plus the page requests on
        the wire (``CrawlCore.inflight_urls``: not a job started but not yet
        admitted, which is passed on instead): only the moved hosts' rows,
        found by the store's host index.
        """
        node = self.node
        if node is None or self._store is None:
            return 0
        # In flight now: taken before the query, since a fetch that ends
        # during it writes a row the query may not see.
        inflight = self.core.inflight_urls()
        moving = self.core.moved_hosts(self._store.hosts(), old, ring)
        rows = await self._store.page_urls(moving)
        rows.extend(inflight)
        now = trio.current_time()
        moved = self.core.handoff_seen(rows, old, ring)
        for url, owner in moved:
            node.outbox.add_seen(url, owner, now)
        return len(moved)

    def handoff_starts(self, old: HashRing | None, ring: HashRing) -> dict[str, list[tuple[str, float]]]:
        """{new owner: [(host, request start in epoch seconds)]} of the hosts that moved away."""
        return self.core.handoff_starts(old, ring, time.time() - self.clock())

    def seed_host_starts(self, starts: Iterable[tuple[str, float]]) -> None:
        """The previous owner's last request starts of hosts now ours (epoch seconds)."""
        now = self.clock()
        self.core.seed_starts(list(starts), now, now - time.time())
        self._wake.set()

    def commit_state(self) -> None:
        """Make what was taken so far survive a kill -9 (before an ack goes out)."""
        if self._state is not None:
            self._state.commit()

    def leave(self) -> None:
        """Leave the ring gracefully: hand everything over, then stop."""
        if self.node is None or self.core.leaving:
            if self.node is None:
                self.stop()
            return
        self.core.leaving = True
        self.node.leave()
        self._wake.set()

    def locally_idle(self) -> bool:
        return self.core.locally_idle()

    def poke(self) -> None:
        """Re-check termination and limits (the gossip brought news)."""
        self._wake.set()

    def _alive(self, peer: str) -> bool | None:
        """The ring node's view of ``peer`` for the hand-off holds."""
        m = self.node.membership.members().get(peer) if self.node is not None else None
        if m is None:
            return None
        return m.state is not MemberState.DEAD

