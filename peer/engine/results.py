"""The crawl engine's results file: the store opened with the tables the config asks for, and watched (edge).

A part of ``peer.engine.crawler.Crawler`` that owns ``data_dir/pages.duckdb``
(``peer.results.store``): it opens the store with the tables a run fills
(links and bodies when a ``[[site]]`` block keeps them, the extraction
rules' tables, ``fetches`` for a continuous crawl), adds a page's items and
the PID trace, and stops the crawl if the file is deleted or replaced under
it: on POSIX a deleted file stays writable by those who hold it open, so the
peer would go on writing rows nobody can read, and report them (an ``rm -rf``
of the data_dir mid-crawl lost a run silently).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

import trio

from peer.core.config.cluster import ClusterConfig
from peer.core.config.sites import SiteSettings
from peer.core.crawl.decisions import Hinted, Items
from peer.core.frontier.frontier import PidSample
from peer.core.run.layout import DataDir
from peer.results.store import ResultStore

log = logging.getLogger("peer.engine")

__all__ = ["RESULTS_WATCH", "Results"]

#: Seconds between checks that the results file is still the one we write.
RESULTS_WATCH = 1.0


class Results:
    """One peer's results file (module docstring); ``stop`` ends the crawl when the file is lost."""

    def __init__(self, cfg: ClusterConfig, peer_id: str, data_dir: Path, stop: Callable[[], None]) -> None:
        self._cfg = cfg
        self._peer_id = peer_id
        self.path = DataDir(data_dir).results
        self._stop = stop
        #: The store while the crawl runs (``open``).
        self.store: ResultStore | None = None
        #: Why the crawl stopped because its data_dir was lost (None: it was not).
        self.lost: str | None = None
        self._first: os.stat_result | None = None  # the file as the crawl opened it

    def open(self, sites: SiteSettings) -> ResultStore:
        """The store, to be entered (``async with``): the tables a run fills."""
        cfg = self._cfg
        self.store = ResultStore(
            self.path, self._peer_id,
            # The tables a [[site]] block may fill too (peer/core/config/sites.py).
            store_links=sites.any("store_links"), store_body=sites.any("store_body"),
            item_tables=cfg.extract.tables(), store_fetches=cfg.revisit.enabled)
        return self.store

    def items(self, e: Items) -> None:
        """The extraction rules' rows of one page."""
        if self.store is not None:
            fetched_at = time.time()
            for table, row in e.items:
                self.store.add_item(table, e.url, fetched_at, row)

    def hinted(self, e: Hinted) -> None:
        """A sitemap's hints for a URL whose row may be written already (peer.core.sitemaps.jobs rule 4)."""
        if self.store is not None:
            self.store.add_hints(e.url, e.lastmod, e.priority, e.changefreq)

    def pid(self, samples: list[PidSample], setpoint: Callable[[str], float]) -> None:
        """The politeness controllers' samples since the last call (``pid_trace``)."""
        if samples and self.store is not None:
            self.store.add_pid(samples, setpoint)

    async def watch(self) -> None:
        """Stop the crawl if the results file is deleted or replaced under us (module docstring)."""
        try:
            self._first = self.path.stat()
        except OSError:
            return  # not made yet: nothing to compare with
        while True:
            await trio.sleep(RESULTS_WATCH)
            why = self.gone()
            if why is not None:
                self.lost = why
                log.error("%s while the crawl ran: stopping; the rows written since are lost", why)
                self._stop()
                return

    def gone(self) -> str | None:
        """Why the results file is no longer the one the crawl opened, or None.

        Also asked when the crawl ended in an error: a write that failed
        because the data_dir was deleted (DuckDB opening its log anew in a
        directory that is gone) is that loss, not a failing disk.
        """
        first = self._first
        if first is None:
            return None
        try:
            now = self.path.stat()
        except FileNotFoundError:
            return f"{self.path} was deleted"
        except OSError:
            return None
        if (now.st_dev, now.st_ino) != (first.st_dev, first.st_ino):
            return f"{self.path} was replaced by another file"
        return None
