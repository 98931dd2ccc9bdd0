"""The crawl's WARC output: each fetch's capture handed to the writer thread (edge).

With ``[warc] enabled`` the fetcher keeps the bytes of every exchange
(``FetchResult.capture``) and the engine hands each one here; this module
turns it into a writer item (``peer.results.warc``) and puts it on the
writer's bounded queue. Rules:

1. **What is archived**: every fetch that got a response head, whatever its
   status or error: pages, redirects, errors with a status, robots.txt and
   sitemaps (a replay of the site as it was needs the robots.txt the crawl
   obeyed and the sitemaps it read, and Heritrix archives them too). A fetch
   with no response (DNS, connect, TLS failures) has no bytes to keep and is
   only counted (``without_response``).
2. **Order at start**: :func:`peer.results.warc.recover` runs before the
   writer opens, so a peer killed mid-file has that file cut to its last
   whole record and indexed; the writer then starts a new file (a resumed
   peer never appends).
3. **Order at the end**: :meth:`Archive.aclose` after the crawl, before the
   results are flushed: the files are closed (fsync, index, rename).
4. **A failing disk stops the crawl** rather than marking every URL that
   follows ``internal``: the first :class:`peer.errors.StateError` is logged
   with its file, the crawl is asked to stop, and later captures are dropped
   and counted.
5. **A kill -9 loses the fetches still queued for the writer thread** (at
   most ``warc.queue_items``), whose rows the results may hold: those URLs
   are not fetched again on resume, so the archive misses them. Bytes already
   written are kept (rule 2).
6. **Revisits** (a 304, or a payload equal to the original capture's) go
   through :meth:`Archive.keep_revisit`, given the response record that
   holds the payload (peer/core/warc/record.py rule 6); a continuous crawl
   (peer/engine/revisits.py) names the response records it may refer to
   later (:meth:`Archive.keep`'s ``record_id``).
"""

from __future__ import annotations

import dataclasses
import logging
import socket
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from peer.core.config.cluster import ClusterConfig
from peer.core.warc.record import DigestAlgorithm, Refers, RevisitProfile, info_json
from peer.errors import StateError
from peer.core.http.result import FetchResult

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    # Imported when WARC is on (Archive.open): surt and warcio cost a peer
    # with WARC off 64 ms of start-up (python -X importtime).
    from peer.results.warc import Fetched, Revisited, WarcStats, WarcWriter

__all__ = ["Archive", "warc_directory"]

log = logging.getLogger("peer.warc")

# Config keys whose values may hold a secret: named in warcinfo, never shown.
_SECRET_KEYS = frozenset({"headers", "proxy_auth_env", "proxy_auth_file", "client_key",
                          "client_key_password_env"})


def warc_directory(cfg: ClusterConfig, data_dir: Path) -> Path:
    """Where a peer's WARC files go: ``warc.directory`` under its data_dir (or absolute)."""
    return data_dir / cfg.warc.directory


def _public(section: DataclassInstance) -> dict[str, object]:
    """A config section as warcinfo shows it: secrets left out, a proxy's credentials cut."""
    out: dict[str, object] = {}
    for f in dataclasses.fields(section):
        value = getattr(section, f.name)
        if f.name in _SECRET_KEYS:
            value = "(set)" if value else value
        elif f.name == "proxy" and isinstance(value, str) and "@" in value:
            parts = urlsplit(value)
            value = urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
        out[f.name] = value
    return out


def crawl_info(cfg: ClusterConfig) -> dict[str, str]:
    """The ``warcinfo`` fields of a crawl (§6.2's suggested names where there is one)."""
    return {
        "hostname": socket.gethostname(),
        "isPartOf": cfg.ring.name,
        "http-header-user-agent": cfg.crawl.user_agent,
        "robots": "obey" if cfg.crawl.obey_robots else "ignore",
        "crawl-config": info_json({"crawl": _public(cfg.crawl), "politeness": _public(cfg.politeness),
                                   "warc": _public(cfg.warc)}),
    }


class Archive:
    """One peer's WARC files for one run (module docstring)."""

    def __init__(self, writer: WarcWriter, on_failure: Callable[[], None]) -> None:
        self.writer = writer
        self.without_response = 0  # fetches with no response head: nothing to archive
        self.dropped = 0           # captures after the writer failed
        self.failed: StateError | None = None
        self._on_failure = on_failure

    @classmethod
    def open(cls, cfg: ClusterConfig, peer_id: str, data_dir: Path,
             on_failure: Callable[[], None]) -> Archive | None:
        """Recover the last run's open files, then start a writer; None when WARC is off."""
        if not cfg.warc.enabled:
            return None
        from peer.results.warc import WarcWriter, recover

        directory = warc_directory(cfg, data_dir)
        for done in recover(directory):
            if done.records:
                log.warning("warc: %s was left open (a crash?): kept its %d whole records, cut %d bytes "
                            "after them", done.path.name, done.records, done.dropped_bytes)
            else:
                log.warning("warc: %s was left open with no whole record: removed", done.path.name)
        return cls(WarcWriter(cfg.warc, directory, peer_id, crawl_info(cfg)), on_failure)

    @property
    def stats(self) -> WarcStats:
        return self.writer.stats

    @property
    def algorithm(self) -> DigestAlgorithm:
        """The digests' algorithm (``warc.digest``)."""
        return self.writer.config.algorithm

    @staticmethod
    def new_record_id() -> str:
        """A ``WARC-Record-ID`` for :meth:`keep`, when the crawl must know it."""
        from peer.results.warc import new_record_id

        return new_record_id()

    async def keep(self, res: FetchResult, record_id: str | None = None) -> None:
        """Queue ``res``'s request and response records; waits while the writer's queue is full.
        ``record_id``: the response record's, else the writer makes one."""
        if res.capture is None:
            self.without_response += 1
            return
        from peer.results.warc import Fetched  # loaded by open(): a dictionary lookup

        await self._put(Fetched(res.capture, record_id))

    async def keep_revisit(self, res: FetchResult, profile: RevisitProfile, refers: Refers) -> None:
        """Queue ``res`` as a request and a ``revisit`` record referring to ``refers``, the
        response record that holds the payload (peer/core/warc/record.py rule 6)."""
        if res.capture is None:
            self.without_response += 1
            return
        from peer.results.warc import Revisited

        await self._put(Revisited(res.capture, profile, refers))

    async def _put(self, item: Fetched | Revisited) -> None:
        if self.failed is not None:
            self.dropped += 1
            return
        try:
            await self.writer.put(item)
        except StateError as exc:
            self._fail(exc)
            self.dropped += 1

    def _fail(self, exc: StateError) -> None:
        self.failed = exc
        log.error("warc: %s; the crawl stops (the archive would miss what it fetches next)", exc)
        self._on_failure()

    async def aclose(self) -> None:
        """Close the open file (fsync, index, rename); a failure is logged, not raised twice."""
        try:
            await self.writer.aclose()
        except StateError as exc:
            if self.failed is None:
                self._fail(exc)

    def figures(self) -> dict[str, int]:
        """The counters of stats.json's ``warc`` object (peer/core/run/stats.py)."""
        s = self.writer.stats
        return {"records": s.records, "fetches": s.items, "files": s.files, "bytes": s.bytes,
                "without_response": self.without_response, "skipped_truncated": s.skipped_truncated,
                "not_archived": self.dropped}

    def summary_line(self) -> str:
        """One line for the crawl's summary."""
        s = self.writer.stats
        line = (f"warc: {s.records:,} records of {s.items:,} fetches in {s.files} file(s), "
                f"{s.bytes / 2**20:.1f} MiB; {self.without_response:,} fetches without a response")
        if s.skipped_truncated:
            line += f"; {s.skipped_truncated:,} cut at max_body not archived (warc.over_max_body)"
        if self.failed is not None:
            line += f"; FAILED: {self.failed} ({self.dropped:,} fetches not archived)"
        return line
