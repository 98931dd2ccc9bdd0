"""The crawl engine's journal: the state recovered, its records, its snapshots, the spill store (edge).

A part of ``peer.engine.crawler.Crawler`` that owns ``data_dir/state``: it
recovers it after a crash and puts its rows back (rule 9 of that module),
writes the journal's records as the engine carries out the core's effects
and makes them durable where the core says ``Commit`` (``peer.core.door.peer``
rule 1), and writes a full snapshot off the loop when the journal grows big
or old (rule 10). peer/state/journal.py has the crash-ordering argument
these follow. It reaches the core through three calls of ``PeerCore``
(``restore``, ``attach_spill``, ``snapshot_view``) and the results through
the store it is given.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path

import trio

from peer.core.config.cluster import ClusterConfig
from peer.core.crawl.core import CEILING_HORIZON
from peer.core.door.peer import PeerCore
from peer.core.run.layout import DataDir
from peer.results.schema import PageRow, Value
from peer.results.store import ResultStore
from peer.state.journal import PeerState, Recovered, SnapshotStats
from peer.state.spill import FileSpill

log = logging.getLogger("peer.engine")

__all__ = ["DEFAULT_HEAD", "Durability", "SNAPSHOT_CHECK", "SNAPSHOT_SECONDS"]

#: A new state snapshot (and a fresh journal) once the journal is
#: [frontier] checkpoint_mb big, or SNAPSHOT_SECONDS old: recovery replays at
#: most that much (peer/state/journal.py's figures: ~0.5 M records, a few seconds,
#: per 64 MiB).
SNAPSHOT_SECONDS = 600.0
#: The spill store's block size when [frontier] head_per_host is 0 and a
#: recovered store still holds URLs.
DEFAULT_HEAD = 64
#: How often the snapshot task looks at the journal's size and age: two
#: integer reads, so often enough that the journal overshoots checkpoint_mb
#: by at most a second of records.
SNAPSHOT_CHECK = 1.0


class Durability:
    """One peer's journal, snapshots and spill store (module docstring); opened by :meth:`open`."""

    def __init__(self, cfg: ClusterConfig, peer_id: str, data_dir: Path, peer: PeerCore, *,
                 rejoining: bool = False) -> None:
        self._cfg = cfg
        #: The last run left the ring gracefully: the seen set is rebuilt from the rows.
        self.rejoining = rejoining
        #: With ``rejoining``: the URLs of this peer's rows, the seen set's files rebuilt from them.
        self.fetched: list[str] | None = None
        self._peer_id = peer_id
        self._dir = DataDir(data_dir).state
        self._peer = peer
        self._state: PeerState | None = None
        self._spill: FileSpill | None = None
        #: What a restart found (None: a new crawl), for the tests and the log.
        self.resumed: dict[str, float] | None = None
        #: The hosts' request starts of the last ceiling horizon, from the rows (rule 9).
        self.restart_starts: list[tuple[str, float]] = []
        #: Snapshots written (the last one's stats are logged).
        self.snapshots = 0
        #: A restart went on in the recovered generation: its first snapshot comes at once (run).
        self._snapshot_soon = False

    async def open(self, store: ResultStore) -> Recovered | None:
        """Recover ``data_dir/state`` if a crawl was interrupted, and start its journal.

        Why a journal plus snapshots and not DuckDB tables: every queued
        URL, every finished page and every batch taken must be on disk before
        the next step (an ack, a fetch that must not repeat), which is one
        ``write`` of a few dozen bytes here against a transaction there;
        peer/state/journal.py has the crash-ordering argument and the figures.
        """
        fcfg = self._cfg.frontier
        head = fcfg.head_per_host or DEFAULT_HEAD
        self._state = state = PeerState(self._dir, self._peer_id, self._cfg.ring.name,
                                        spill_block=head, segment_bytes=fcfg.segment_mb << 20)
        rec = await trio.to_thread.run_sync(state.recover)
        spill = rec.spill if rec is not None and rec.spill is not None else state.open_spill()
        if fcfg.head_per_host or spill.hosts():
            # head_per_host = 0 keeps every URL in RAM; a store recovered
            # from a run with spilling still gives its URLs back through it.
            self._peer.disk.attach_spill(spill, head)
            self._spill = spill
        else:
            spill.close()
        counters: dict[str, float] = {}
        if rec is not None:
            self._peer.disk.restore(rec)
            counters = dict(rec.counters)
            # Pages done since the last snapshot whose rows DuckDB had not
            # written yet when the process died: their rows come back.
            have = {u for u, _ in await store.page_urls()}
            if self.rejoining:
                # peer.core.door.persistence.Persistence.forget_handed_over says why.
                self.fetched = sorted(have | {str(row[0]) for row in rec.rows if row})
                self._peer.disk.forget_handed_over(self.fetched)
            missing = [PageRow.from_values(row) for row in rec.rows if row and row[0] not in have]
            for page in missing:
                store.add_page(page)
            await store.flush()
            # Politeness counts across the restart: the requests of the last
            # ceiling horizon, as the rows say they started (rule 9).
            self.restart_starts = await store.recent_starts(time.time() - CEILING_HORIZON)
            self.resumed = {"queued": len(rec.queued) + rec.head_urls + rec.spilled, "forwards": len(rec.forwards),
                            "rows_restored": len(missing), "generation": rec.generation,
                            "torn_bytes": rec.torn_bytes, "spilled": rec.spilled,
                            "blocks_read": rec.blocks_read, "packed": rec.resident}
            log.warning("resuming the crawl from %s: %d queued URLs (%d of them on disk, %d blocks "
                        "read; %d in packed heads), %d to forward, %d result rows restored%s", state.directory,
                        len(rec.queued) + rec.head_urls + rec.spilled, rec.spilled - rec.resident, rec.blocks_read,
                        rec.resident, len(rec.forwards),
                        len(missing), f", {rec.torn_bytes} bytes of a torn journal tail dropped"
                        if rec.torn_bytes else "")
        if rec is not None and not self.rejoining:
            # Go on in the recovered generation (peer/state/journal.py rule 7): no
            # snapshot of millions of URLs before the first request, but one in a
            # worker thread soon after (run: once the journal's URLs are back in the
            # frontier), so the next restart replays little.
            # A rejoining peer's Bloom filter was replaced above, so it writes one now.
            await trio.to_thread.run_sync(state.resume)
            self._snapshot_soon = True
            return rec
        # The spilled hosts' heads (in RAM again, not in the store) and the rest: the new snapshot's queue.
        queued = [*rec.all_heads(), *rec.queued.items()] if rec is not None else []
        forwards = rec.forwards if rec is not None else []
        manifest = None
        if self._spill is not None:
            self._peer.disk.flush_tails()  # (empty now: nothing is queued before begin)
            manifest = self._spill.checkpoint()
        # The handed records the journal kept go into the first snapshot as they are
        # (peer/state/journal.py rule 6): the engine imports them once the results are open.
        # So do the URLs other peers handed us as fetched (a second kill -9 before the
        # next snapshot forgot them, and fetched a queued copy of one again).
        handed_state = rec.handed_state if rec is not None else ([], [])
        handed = list(rec.handed.items()) if rec is not None else []
        await trio.to_thread.run_sync(lambda: state.begin(self._peer.figures.bloom, queued, forwards, counters,
                                                          manifest, handed_state=handed_state, handed=handed))
        if manifest is not None and self._spill is not None:
            self._spill.release(manifest)
        return rec

    # -- the journal's records, as the engine carries out the core's effects ---------

    def queued(self, url: str, depth: int) -> None:
        if self._state is not None:
            self._state.queued(url, depth)

    def forwarded(self, url: str, depth: int) -> None:
        if self._state is not None:
            self._state.forwarded(((url, depth),))

    def seen(self, url: str) -> None:
        if self._state is not None:
            self._state.seen(url)

    def done(self, url: str, row: Sequence[Value] | None) -> None:
        """``url`` left the queue: with its page row's values (``PageRow.values``), or None."""
        if self._state is not None:
            self._state.done(url, row)

    def handed_state(self, revisits: Sequence[object], cookies: Sequence[object]) -> None:
        """A host's state handed to us, journaled before its ack (the ``Commit`` after it)."""
        if self._state is not None:
            self._state.state(revisits, cookies)

    def counters(self, counters: dict[str, float]) -> None:
        if self._state is not None:
            self._state.counters(counters)

    def commit(self) -> None:
        """Every record so far durable (``Commit``: ``peer.core.door.peer`` rule 1)."""
        if self._state is not None:
            self._state.commit()

    # -- snapshots --------------------------------------------------------------------

    async def run(self, store: ResultStore) -> None:
        """A new snapshot when the journal is big or old, so recovery stays short."""
        last = trio.current_time()
        state = self._state
        assert state is not None
        while True:
            await trio.sleep(SNAPSHOT_CHECK)
            big = state.journal_bytes() >= self._cfg.frontier.checkpoint_mb << 20
            if not big and trio.current_time() - last < SNAPSHOT_SECONDS and not self._snapshot_soon:
                continue
            if self._snapshot_soon and not big and self._peer.disk.recovering():
                # Not while the recovered journal's URLs go back (after the first requests):
                # the snapshot would hold the GIL on the way to them and list those URLs one
                # by one; once they are in the frontier it packs them with the heads.
                continue
            self._snapshot_soon = False
            stats = await self.snapshot(store)
            last = trio.current_time()
            log.info("state snapshot %s", stats)

    async def snapshot(self, store: ResultStore) -> SnapshotStats:
        """Write a full snapshot in a worker thread; the loop goes on meanwhile (rule 10).

        The view is taken on the loop, between two awaits, so it is one
        moment's state: the Bloom filter copied, the queue and the outbox's
        unacked URLs listed. From then on the journal is written to the old
        and the new generation both, so whichever generation a crash leaves
        whole holds every record since its snapshot.
        """
        state = self._state
        assert state is not None
        # The rows of the pages done so far must be in DuckDB first: the
        # snapshot drops the journal that holds them (peer/state/journal.py rule 5).
        await store.flush()
        view = self._peer.disk.snapshot_view()  # the spill store's tails flushed, for its checkpoint
        spill = self._spill
        manifest = spill.checkpoint() if spill is not None else None
        # prepare_snapshot commits the journal itself (journal rule 4): the
        # snapshot's own I/O, not a durability point of the crawl's.
        pending = state.prepare_snapshot()
        try:
            stats = await trio.to_thread.run_sync(
                state.write_snapshot, pending, view.bloom, view.queued, view.forwards, view.counters,
                manifest, view.handed, view.handed_state, view.heads, self._cfg.frontier.packed_heads,
                view.recovering)
        except BaseException:
            state.abort_snapshot(pending)
            raise
        state.finish_snapshot(pending)
        await trio.to_thread.run_sync(state.drop_older, pending.generation)
        if spill is not None and manifest is not None:
            spill.release(manifest)  # segments emptied before it: the last snapshot naming them is gone
        self.snapshots += 1
        return stats

    def close(self) -> None:
        """The last counters (the page count for max_pages across a resume), then the files closed."""
        if self._state is not None:
            self._state.counters(self._peer.disk.counters())
            self._state.close()
        if self._spill is not None:
            self._spill.close()

    def spill_line(self, peak: int, head: int, overflow: int = 0) -> str | None:
        """The summary's line on the spilled frontier, or None if nothing spilled; ``overflow``:
        URLs spilled out of their band's order (frontier rule 11)."""
        if self._spill is None or not peak:
            return None
        st = self._spill.stats()
        return (f"frontier: at most {peak:,} queued URLs on disk (heads of {head} a host in RAM); "
                f"{st.blocks_written:,} blocks written, {st.blocks_read:,} read; {st.urls - st.resident:,} URLs in "
                f"{st.segments} segments ({st.disk_bytes / 2**20:.1f} MiB) left"
                + (f"; {overflow:,} spilled out of their order (a host's RAM full: docs/engine.md)" if overflow else ""))
