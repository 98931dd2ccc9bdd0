"""The crawl engine's figures: ``ring status``'s row, the cap counters, the progress line (edge).

A part of ``peer.engine.crawler.Crawler``. The figures are the core's
(``PeerCore.figures``: ``peer.core.door.readouts``); this part adds what only the
engine measures (the wall-clock time since the start, the resolver's hit
rate, the fetcher's malformed-header counts, the WARC writer's counters)
and logs the progress line every ``progress_interval`` seconds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import trio

from peer.core.door.peer import PeerCore
from peer.core.run.progress import Progress, ProgressSnapshot
from peer.engine.archive import Archive
from peer.net.resolver import Resolver
from ring.status import StatusFigures

log = logging.getLogger("peer.engine")

__all__ = ["Reporting"]


class Reporting:
    """The figures' part of ``Crawler`` (module docstring).

    ``fetcher_stats`` reads the fetcher's counters (None before the crawl
    opens it, or for a test's fetcher without them); ``archive`` the WARC
    files (None while WARC is off or not open yet).
    """

    def __init__(self, peer: PeerCore, clock: Callable[[], float], resolver: Resolver, *,
                 fetcher_stats: Callable[[], object], archive: Callable[[], Archive | None],
                 progress_interval: float) -> None:
        self._peer = peer
        self._clock = clock
        self._resolver = resolver
        self._fetcher_stats = fetcher_stats
        self._archive = archive
        self.progress_interval = progress_interval
        #: time.monotonic() at the crawl's start (``start``), for the rates.
        self.wall0 = time.monotonic()

    def start(self) -> None:
        self.wall0 = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.wall0

    def status_figures(self) -> StatusFigures:
        """This peer's row of ``ring status`` (the ring driver fills in its own uptime)."""
        return self._peer.figures.status(self._clock(), elapsed=self.elapsed(),
                                         dns_hit_rate=self._resolver.stats().hit_rate,
                                         limits=self.limits_figures())

    def limits_figures(self) -> dict[str, int]:
        """Non-zero cap hits, held hosts, malformed answers, ceiling holds, internal errors, by name."""
        figures = self._peer.figures.limits(self._clock(), self.malformed())
        archive = self._archive()
        if archive is not None:  # the WARC writer's counters (peer/engine/archive.py)
            figures.update((f"warc.{k}", n) for k, n in archive.figures().items() if n)
        return figures

    def malformed(self) -> dict[str, int]:
        """The fetcher's counts of header values it ignored or clamped, by reason."""
        figures = self._fetcher_stats()
        got = figures.get("malformed") if isinstance(figures, dict) else None
        return dict(got) if isinstance(got, dict) else {}

    def progress_snapshot(self) -> ProgressSnapshot:
        """This peer's figures now, for peer/core/run/progress.py."""
        return self._peer.figures.progress(self._clock(), self.elapsed(), self._resolver.stats().hit_rate)

    def pause_words(self) -> str:
        """Why no request starts, as the progress line says it ("" while the lease holds)."""
        return self._peer.figures.pause_words(self._clock())

    def progress_line(self) -> str:
        """The progress line now (a fresh formatter: never suppressed as a repeat)."""
        return Progress().line(self.progress_snapshot()) or ""

    async def run(self, flush_pid: Callable[[], None]) -> None:
        """The progress line every ``progress_interval`` seconds, the PID trace flushed before it."""
        progress = Progress()
        while True:
            await trio.sleep(self.progress_interval)
            flush_pid()
            snap = self.progress_snapshot()
            if (line := progress.line(snap)) is not None:
                log.info("%s", line, extra={"event": "progress", "fields": snap.log_fields()})
