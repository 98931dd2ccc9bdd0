"""``crawl.seeds_file`` fed into the crawl a batch at a time (edge).

The reading peer (``peer.core.crawl.seedfeed.reader``: the lowest ``[[peer]]``
id) opens the file where its journal says it stopped, reads a batch of
:data:`BATCH` lines in a worker thread, and hands it to the core
(``PeerCore.seeds_file_batch``), which judges every line, routes each URL
(queued here, or into the Outbox for its owner), journals the position and
commits. Before each batch it waits while the Outbox's backlog is full
(``PeerCore.seeds_file_room``: the owners' acks come back first), so the
memory a file costs is a backlog's, whatever its length. The peer is not
idle while it reads (``CrawlCore.locally_idle``), so the ring does not end
before the file does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

import trio

from peer.core.crawl.seedfeed import reader
from peer.core.door.peer import PeerCore, PeerEffect
from peer.state.seedfile import SeedReader, mark_of

__all__ = ["BATCH", "SeedsFile"]

log = logging.getLogger("peer.seeds_file")

#: Lines judged a batch: ~30 ms of the loop at ~30 us a URL (PeerCore rule 6's measure).
BATCH = 1000
#: Seconds between two looks at a full Outbox.
ROOM_WAIT = 0.05


class SeedsFile:
    """The seeds file's reader task (module docstring)."""

    def __init__(self, path: str, peer_ids: Iterable[str], me: str, peer: PeerCore, now: Callable[[], float],
                 carry: Callable[[Iterable[PeerEffect]], None], turn: trio.Lock) -> None:
        self._path = path
        self._reads = bool(path) and reader(peer_ids, me)
        self._peer = peer
        self._now = now
        self._carry = carry
        self._turn = turn

    @property
    def reads(self) -> bool:
        """Whether this peer reads the file (the lowest id of cluster.toml's peers)."""
        return self._reads

    async def begin(self) -> int | None:
        """Mark the reader busy before the crawl's first step; the offset to start at, or None."""
        if not self._reads:
            return None
        try:
            mark = await trio.to_thread.run_sync(mark_of, self._path)
        except OSError as exc:  # checked at the start; gone or unreadable since
            log.error("seeds_file %s cannot be read (%s): no URL of it is crawled", self._path,
                      exc.strerror or exc)
            return None
        start, said = self._peer.seeds_file_begin(mark)
        if said is not None:
            log.warning("seeds_file %s: %s", self._path, said)
        if not self._peer.seeds_file_reading:
            log.info("seeds_file %s: read to its end in an earlier run", self._path)
            return None
        if start:
            log.info("seeds_file %s: going on from byte %s (%s lines read before)", self._path,
                     f"{start:,}", f"{self._peer.seeds_file_lines():,}")
        return start

    async def run(self, start: int) -> None:
        """Read from ``start`` to the end, a batch at a time (module docstring)."""
        peer = self._peer
        try:
            f = await trio.to_thread.run_sync(SeedReader, self._path, start)
            try:
                while True:
                    while not peer.seeds_file_room():
                        await trio.sleep(ROOM_WAIT)
                    lines, end = await trio.to_thread.run_sync(f.read, BATCH)
                    if not lines:
                        break
                    async with self._turn:
                        self._carry(peer.seeds_file_batch(lines, end, self._now()))
            finally:
                f.close()
        except OSError as exc:
            # The disk's fault, not the crawl's: what was read is crawled, and a
            # restart goes on from the position (seedfeed rule 3).
            log.error("seeds_file %s: reading stopped (%s): %s; a restart goes on from there",
                      self._path, exc.strerror or exc, peer.seeds_file_summary())
            peer.seeds_file_give_up()
            self._carry(())  # the scheduler looks again: the peer may be idle now
            return
        self._carry(peer.seeds_file_end())
        log.info("%s", peer.seeds_file_summary())
