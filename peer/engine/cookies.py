"""The crawl engine's cookie jar on disk: put back on a resume, saved while the crawl runs (edge).

A part of ``peer.engine.crawler.Crawler``. The jar is the core's
(``peer.core.http.cookies``, reached through ``PeerCore``'s
``cookie_records``, ``cookie_changes`` and ``restore_cookies``); its file is
``peer.state.cookiefile``'s, written atomically beside the snapshots within
``COOKIE_SAVE_SECONDS`` of a change and once more at the end. A kill -9 loses
at most the changes of those seconds: the sites set the cookies again.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import trio

from peer.core.door.peer import PeerCore
from peer.core.run.layout import DataDir
from peer.state.cookiefile import COOKIE_SAVE_SECONDS, discard_cookies, read_cookies, write_cookies
from peer.state.journal import Recovered

log = logging.getLogger("peer.engine")

__all__ = ["CookieSaves"]


class CookieSaves:
    """One peer's cookie file (module docstring)."""

    def __init__(self, peer_id: str, data_dir: Path, peer: PeerCore) -> None:
        self._peer_id = peer_id
        self._dir = DataDir(data_dir).state
        self._peer = peer

    async def open(self, rec: Recovered | None) -> None:
        """A resume puts the jar back; a new crawl starts it empty."""
        if rec is None or not self._peer.cookies_on:
            # An earlier crawl's cookies are not this crawl's session; with
            # cookies off now, a resume with them on later starts empty too.
            await trio.to_thread.run_sync(discard_cookies, self._dir)
            return
        records, problem = await trio.to_thread.run_sync(read_cookies, self._dir, self._peer_id)
        if problem is not None:
            log.warning("%s: resuming with an empty cookie jar (the sites set them again)", problem)
        kept, hosts = self._peer.disk.restore_cookies(records, time.time())
        if kept:
            log.info("cookie jar: %d cookies of %d hosts put back", kept, hosts)

    async def run(self) -> None:
        """Write the jar within COOKIE_SAVE_SECONDS of a change, and once more at the end."""
        peer = self._peer
        if not peer.cookies_on:
            return
        saved = peer.disk.cookie_changes()
        try:
            while True:
                await trio.sleep(COOKIE_SAVE_SECONDS)
                if peer.disk.cookie_changes() != saved:
                    saved = peer.disk.cookie_changes()
                    await self._write()
        finally:
            if peer.disk.cookie_changes() != saved:
                with trio.CancelScope(shield=True):
                    await self._write()

    async def _write(self) -> None:
        disk = self._peer.disk
        changes = disk.cookie_changes()
        await trio.to_thread.run_sync(write_cookies, self._dir, self._peer_id, disk.cookie_records())
        # Cookies handed to us before that moment are on disk: the snapshots need not carry them.
        disk.cookies_saved(changes)
