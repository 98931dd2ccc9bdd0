"""The crawl engine's durability loops: the journal and its snapshots, the exact seen set (edge).

A part of ``peer.engine.crawler.Crawler``: recover ``data_dir/state`` after
a crash and put its queue back (rule 9 of that module), hand the seen set's
batches to ``peer.state.sievefile`` in a worker thread, and write a full
snapshot off the loop when the journal grows big or old (rule 10).
peer/state/journal.py has the crash-ordering argument these follow.
"""

from __future__ import annotations

import copy
import importlib.util
import logging
import math
import time
from typing import Any

import trio

from peer.engine.parts import CrawlerParts
from peer.core.crawl.core import CEILING_HORIZON, Origin
from peer.core.run.layout import DataDir
from peer.state.cookiefile import COOKIE_SAVE_SECONDS, discard_cookies, read_cookies, write_cookies
from peer.state.spill import FileSpill
from peer.state.journal import PeerState, SnapshotStats
from peer.results.store import PageRow, ResultStore
from ring.budget import Grants, grants_from_counters, grants_to_counters


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


class Durability(CrawlerParts):
    """Crash safety and the exact seen set, a part of ``Crawler`` (module docstring)."""

    _spill: FileSpill | None
    _sieve: Any
    _sieve_stats: Any
    _sieve_kick: trio.Event
    _restart_starts: list[tuple[str, float]]
    resumed: dict[str, float] | None
    snapshots: int
    #: The max_pages grants a former process of this peer gave (ring.budget), from its disk.
    resumed_grants: Grants = ()

    def _counters(self) -> dict[str, float]:
        """What a snapshot and the journal's last record keep: the page count and the grants."""
        grants = self.node.membership.me.grants if self.node is not None else self.resumed_grants
        return {"pages": self.core.requested, **grants_to_counters(grants)}

    async def _open_state(self, store: ResultStore) -> Any:
        """Recover ``data_dir/state`` if a crawl was interrupted, and start its journal.

        Why a journal plus snapshots and not DuckDB tables: every queued
        URL, every finished page and every batch taken must be on disk before
        the next step (an ack, a fetch that must not repeat), which is one
        ``write`` of a few dozen bytes here against a transaction there;
        peer/state/journal.py has the crash-ordering argument and the figures.
        """
        fcfg = self.cfg.frontier
        head = fcfg.head_per_host or DEFAULT_HEAD
        self._state = state = PeerState(DataDir(self.data_dir).state, self.peer_id, self.cfg.ring.name,
                                        spill_block=head, segment_bytes=fcfg.segment_mb << 20)
        rec = await trio.to_thread.run_sync(state.recover)
        spill = rec.spill if rec is not None and rec.spill is not None else state.open_spill()
        if fcfg.head_per_host or spill.hosts():
            # head_per_host = 0 keeps every URL in RAM; a store recovered
            # from a run with spilling still gives its URLs back through it.
            self.core.frontier.set_spill(spill, head)
            self._spill = spill
        else:
            spill.close()
        counters: dict[str, float] = {}
        core = self.core
        if rec is not None:
            core.bloom = rec.bloom
            # The file holds the policy it was written with; the config now in
            # force decides (an operator raises max_capacity and restarts).
            core.bloom.set_policy(self.cfg.bloom.growth, self.cfg.bloom.max_capacity)
            core.requested = int(rec.counters.get("pages", 0))
            # What this peer gave of the max_pages budget (ring.budget): never spent again.
            self.resumed_grants = grants_from_counters(rec.counters)
            counters = dict(rec.counters)
            # Pages done since the last snapshot whose rows DuckDB had not
            # written yet when the process died: their rows come back.
            have = {u for u, _ in await store.page_urls()}
            missing = [PageRow(*row) for row in rec.rows if row and row[0] not in have]
            for row in missing:
                store.add_page(row)
            await store.flush()
            # Politeness counts across the restart: the requests of the last
            # ceiling horizon, as the rows say they started (rule 9).
            self._restart_starts = await store.recent_starts(time.time() - CEILING_HORIZON)
            self.resumed = {"queued": len(rec.queued) + rec.spilled, "forwards": len(rec.forwards),
                            "rows_restored": len(missing), "generation": rec.generation,
                            "torn_bytes": rec.torn_bytes, "spilled": rec.spilled,
                            "blocks_read": rec.blocks_read}
            log.warning("resuming the crawl from %s: %d queued URLs (%d of them on disk, %d blocks "
                        "read), %d to forward, %d result rows restored%s", state.directory,
                        len(rec.queued) + rec.spilled, rec.spilled, rec.blocks_read, len(rec.forwards),
                        len(missing), f", {rec.torn_bytes} bytes of a torn journal tail dropped"
                        if rec.torn_bytes else "")
        queued = list(rec.queued.items()) if rec is not None else []
        forwards = rec.forwards if rec is not None else []
        manifest = None
        if self._spill is not None:
            core.frontier.flush_tails()  # (empty now: nothing is queued before begin)
            manifest = self._spill.checkpoint()
        await trio.to_thread.run_sync(state.begin, core.bloom, queued, forwards, counters, manifest)
        if manifest is not None and self._spill is not None:
            self._spill.release(manifest)
        return rec

    def _resume(self, rec: Any) -> None:
        """Put a recovered queue back: ours into the frontier, the rest to its owners."""
        now = self.clock()
        state = self._state
        assert state is not None
        # The spilled queues first: they came before what the journal queued.
        self._did(self.core.resume_spilled(now))
        for url, depth in rec.queued.items():
            self._did(self.core.discover(url, depth, now, Origin.RECOVERED))
        for url, depth in rec.forwards:
            # Like any URL handed to us: to its owner, or through our Bloom filter.
            self._did(self.core.discover(url, depth, now, Origin.RELAY))
        self.core.seed_starts(self._restart_starts, now, now - time.time())
        self._restart_starts = []
        state.commit()

    # -- the cookie jar ----------------------------------------------------------

    async def _open_cookies(self, rec: Any) -> None:
        """A resume puts the jar back (peer/state/cookiefile.py); a new crawl starts it empty."""
        directory = DataDir(self.data_dir).state
        jar = self.core.cookies
        if rec is None or jar is None:
            # An earlier crawl's cookies are not this crawl's session; with
            # cookies off now, a resume with them on later starts empty too.
            await trio.to_thread.run_sync(discard_cookies, directory)
            return
        records, problem = await trio.to_thread.run_sync(read_cookies, directory, self.peer_id)
        if problem is not None:
            log.warning("%s: resuming with an empty cookie jar (the sites set them again)", problem)
        kept = jar.restore(records, time.time())
        if kept:
            log.info("cookie jar: %d cookies of %d hosts put back", kept, len(jar.hosts()))

    async def _cookie_saves(self) -> None:
        """Write the jar within COOKIE_SAVE_SECONDS of a change, and once more at the end."""
        jar = self.core.cookies
        if jar is None:
            return
        directory = DataDir(self.data_dir).state
        saved = jar.changes
        try:
            while True:
                await trio.sleep(COOKIE_SAVE_SECONDS)
                if jar.changes != saved:
                    saved = jar.changes
                    await trio.to_thread.run_sync(write_cookies, directory, self.peer_id, jar.records())
        finally:
            if jar.changes != saved:
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(write_cookies, directory, self.peer_id, jar.records())

    # -- the exact seen set -----------------------------------------------------

    async def _open_sieve(self, rec: Any) -> None:
        """Open ``data_dir/seen`` (peer/state/sievefile.py); a new crawl starts it empty."""
        core = self.core
        from peer.state.sievefile import SieveFiles

        if importlib.util.find_spec("numpy") is None:  # numpy (the "fast" extra) is missing
            log.warning("numpy is not installed: the seen set stays a Bloom filter alone and "
                        "bloom.disk_after is ignored (pip install 'ringcrawl[fast]')")
            core.sieve.disk_after = 2**63
            core.sieve.exact = False
            return
        files = SieveFiles(DataDir(self.data_dir).seen, self.cfg.bloom.sieve_ram)
        if rec is None:
            # Hashes of an earlier crawl would call this crawl's new URLs seen.
            await trio.to_thread.run_sync(files.discard)
        await trio.to_thread.run_sync(files.open)
        self._sieve = files
        self._sieve_stats = files.stats()
        if rec is not None:
            now = self.clock()
            core.sieve_readd((row[0] for row in rec.rows if row), now)
            core.sieve.note_size(core.bloom.count)

    async def _sieve_loop(self) -> None:
        """Hand the sieve its batches (peer/core/seen/sieve.py) when they are due, in a worker thread."""
        sieve = self.core.sieve
        if self._sieve is None:
            return
        try:
            while True:
                due = sieve.due_at()
                if due is None or due > self.clock():
                    self._sieve_kick = trio.Event()
                    with trio.move_on_at(math.inf if due is None else due):
                        await self._sieve_kick.wait()
                    continue
                await self._sieve_pass()
        finally:
            # The last adds and checks, so a clean exit leaves the sieve whole.
            await self._sieve_pass()

    async def _sieve_pass(self) -> None:
        # Shielded: a batch taken is answered, or its URLs would wait forever.
        with trio.CancelScope(shield=True):
            if self._state is not None:
                # Every hash the sieve holds has its journal record first, so a
                # crash never leaves a URL called seen that was not queued.
                self._state.commit()
            batch = self.core.sieve.take(self.clock())
            if batch is None:
                return
            new = await trio.to_thread.run_sync(self._sieve.apply, batch)
            self._sieve_stats = self._sieve.stats()
            self._did(self.core.sieve_verdicts(batch, new, self.clock()))

    async def _snapshots(self) -> None:
        """A new snapshot when the journal is big or old, so recovery stays short."""
        last = trio.current_time()
        state = self._state
        assert state is not None
        while True:
            await trio.sleep(SNAPSHOT_CHECK)
            if (state.journal_bytes() < self.cfg.frontier.checkpoint_mb << 20
                    and trio.current_time() - last < SNAPSHOT_SECONDS):
                continue
            stats = await self.snapshot()
            last = trio.current_time()
            log.info("state snapshot %s", stats)

    async def snapshot(self) -> SnapshotStats:
        """Write a full snapshot in a worker thread; the loop goes on meanwhile (rule 10).

        The view is taken on the loop, between two awaits, so it is one
        moment's state: the Bloom filter copied, the queue and the outbox's
        unacked URLs listed. From then on the journal is written to the old
        and the new generation both, so whichever generation a crash leaves
        whole holds every record since its snapshot.
        """
        state = self._state
        assert state is not None and self._store is not None
        # The rows of the pages done so far must be in DuckDB first: the
        # snapshot drops the journal that holds them (peer/state/journal.py rule 5).
        await self._store.flush()
        core = self.core
        bloom = copy.deepcopy(core.bloom)
        queued = core.snapshot_queue()  # with a spill store: the heads and the jobs in flight
        forwards = self.node.outbox.queued().urls if self.node is not None else []
        spill = self._spill
        manifest = None
        if spill is not None:
            core.frontier.flush_tails()  # so the store and the heads hold the whole queue
            manifest = spill.checkpoint()
        pending = state.prepare_snapshot()
        try:
            stats = await trio.to_thread.run_sync(
                state.write_snapshot, pending, bloom, queued, forwards, self._counters(), manifest)
        except BaseException:
            state.abort_snapshot(pending)
            raise
        state.finish_snapshot(pending)
        await trio.to_thread.run_sync(state.drop_older, pending.generation)
        if spill is not None and manifest is not None:
            spill.release(manifest)  # segments emptied before it: the last snapshot naming them is gone
        self.snapshots += 1
        return stats

