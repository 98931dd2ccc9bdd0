"""The crawl engine's exact seen set on disk: the sieve's batches answered in a worker thread (edge).

A part of ``peer.engine.crawler.Crawler`` that owns ``data_dir/seen``
(``peer.state.sievefile``: sorted runs of URL hashes). The policy is the
core's (``peer.core.seen.sieve``, reached through ``PeerCore``): when a
batch is due, which URLs go in it, what the answers mean. This part takes a
batch when the core says it is due, carries out the ``Commit`` that comes
with it (``peer.core.door.peer`` rule 1d) before the files hold its hashes,
applies it in a worker thread and hands the answers back.
"""

from __future__ import annotations

import importlib.util
import logging
import math
from collections.abc import Callable, Iterable
from pathlib import Path

import trio

from peer.core.config.cluster import ClusterConfig
from peer.core.door.peer import PeerCore, PeerEffect
from peer.core.run.layout import DataDir
from peer.state.journal import Recovered
from peer.state.sievefile import SieveFiles, SieveFileStats

log = logging.getLogger("peer.engine")

__all__ = ["SeenFiles"]


class SeenFiles:
    """One peer's seen-set files (module docstring); ``carry`` does the effects the core returns."""

    def __init__(self, cfg: ClusterConfig, data_dir: Path, peer: PeerCore, clock: Callable[[], float],
                 carry: Callable[[Iterable[PeerEffect]], None]) -> None:
        self._cfg = cfg
        self._dir = DataDir(data_dir).seen
        self._peer = peer
        self._clock = clock
        self._carry = carry
        self._files: SieveFiles | None = None
        self._stats: SieveFileStats | None = None
        self._kick = trio.Event()

    async def open(self, rec: Recovered | None, fetched: list[str] | None = None) -> None:
        """Open ``data_dir/seen``; a new crawl starts it empty, a resume re-adds its rows' URLs.

        ``fetched``: a peer rejoining after a graceful leave starts it again from
        these, its rows' URLs (``Persistence.forget_handed_over``)."""
        peer = self._peer
        if importlib.util.find_spec("numpy") is None:  # numpy (the "fast" extra) is missing
            log.warning("numpy is not installed: the seen set stays a Bloom filter alone and "
                        "bloom.disk_after is ignored (pip install 'ringcrawl[fast]')")
            peer.disk.sieve_off()
            return
        files = SieveFiles(self._dir, self._cfg.bloom.sieve_ram)
        if rec is None or fetched is not None:
            # Hashes of an earlier crawl would call this crawl's new URLs seen;
            # a leaver's, the URLs it handed over and gets back.
            await trio.to_thread.run_sync(files.discard)
        await trio.to_thread.run_sync(files.open)
        self._files = files
        self._stats = files.stats()
        if fetched is not None:
            peer.disk.sieve_readd(fetched, self._clock())
        elif rec is not None:
            peer.disk.sieve_readd((str(row[0]) for row in rec.rows if row), self._clock())

    def kick(self) -> None:
        """A batch may be due sooner than the loop thought (the core filled one)."""
        self._kick.set()

    async def run(self) -> None:
        """Hand the sieve its batches when they are due, in a worker thread."""
        if self._files is None:
            return
        try:
            while True:
                due = self._peer.disk.sieve_due_at()
                if due is None or due > self._clock():
                    self._kick = trio.Event()
                    with trio.move_on_at(math.inf if due is None else due):
                        await self._kick.wait()
                    continue
                await self._pass()
        finally:
            # The last adds and checks, so a clean exit leaves the sieve whole.
            await self._pass()

    async def _pass(self) -> None:
        files = self._files
        assert files is not None
        # Shielded: a batch taken is answered, or its URLs would wait forever.
        with trio.CancelScope(shield=True):
            batch, first = self._peer.disk.sieve_take(self._clock())
            self._carry(first)  # the Commit before the files hold the batch's hashes
            if batch is None:
                return
            new = await trio.to_thread.run_sync(files.apply, batch)
            self._stats = files.stats()
            self._carry(self._peer.disk.sieve_verdicts(batch, new, self._clock()))

    def close(self) -> None:
        if self._files is not None:
            self._files.close()

    def summary_line(self) -> str | None:
        """The summary's line on the seen set's files, or None without them."""
        st = self._stats
        if self._files is None or st is None or not self._peer.disk.sieve_exact:
            return None
        return (f"seen set on disk: {st.hashes:,} URL hashes in {st.disk_runs} run files "
                f"({st.disk_bytes / 2**20:.1f} MiB) and {st.ram_runs} in RAM "
                f"({st.ram_bytes / 2**20:.1f} MiB)")
