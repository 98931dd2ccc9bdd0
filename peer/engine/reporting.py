"""The crawl engine's figures: ``ring status``'s row, the cap counters, the progress line (edge).

A part of ``peer.engine.crawler.Crawler``; the figures are the core's
(``peer.core.crawl.figures``), the fetcher's and the resolver's, read here.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

import trio

from peer.engine.archive import Archive
from peer.engine.parts import CrawlerParts
from peer.core.crawl.core import Summary
from peer.core.peer import PeerCore
from peer.core.run.progress import Progress, ProgressSnapshot
from ring.node import StatusFigures
from ring.status import lease_status, lease_words
from ring.vocabulary import NOT_REQUESTED_CAPS, failed, not_requested


log = logging.getLogger("peer.engine")

__all__ = ["Reporting"]


class Reporting(CrawlerParts):
    """The figures' part of ``Crawler`` (module docstring)."""

    peer: PeerCore
    _fetcher: Any
    archive: Archive | None
    _wall0: float
    spill_peak: int
    progress_interval: float

    @property
    def summary(self) -> Summary:
        raise NotImplementedError

    def _flush_pid(self) -> None:
        raise NotImplementedError

    def status_figures(self) -> StatusFigures:
        """This peer's row of ``ring status`` (the ring driver fills in its own uptime)."""
        s = self.summary
        elapsed = max(time.monotonic() - self._wall0, 1e-9)
        node = self.node
        return StatusFigures(
            pages=self.core.requested, rate=s.requested / elapsed, frontier=len(self.core.frontier),
            hosts=self.core.frontier.n_hosts,
            forwarded_out=node.outbox.stats().forwarded if node is not None else 0,
            forwarded_in=node.inbox.received if node is not None else 0,
            dns_hit_rate=self.resolver.stats().hit_rate, bloom_fill=self.core.bloom.fill_estimate(),
            uptime=elapsed,
            # Caps hit and hosts held (cap.<key>, held.<kind>) and internal
            # errors: counters the ring sends with the status reply; the caps
            # whose hits are URLs never requested are counted there instead.
            limits={k: n for k, n in self.limits_figures().items()
                    if k.removeprefix("cap.") not in NOT_REQUESTED_CAPS},
            # Named by ring.vocabulary, as the summary and stats.json name them.
            errors=failed(s.errors, s.not_requested),
            not_requested=not_requested(s.not_requested, s.out_of_scope,
                                        {str(c): n for c, n in self.core.limits.hits.items()},
                                        s.excluded),
            busiest=tuple(self.core.frontier.busiest(self.clock(), 10)),
            # The ring's lease now (None alone): whether requests start, and why not.
            lease=self.peer.lease_state(self.clock()),
        )

    def limits_figures(self) -> dict[str, int]:
        """Non-zero cap hits, held hosts, malformed answers, ceiling holds, internal errors, by name."""
        figures = self.core.limits_figures(self.clock(), self._malformed())
        if self.archive is not None:  # the WARC writer's counters (peer/engine/archive.py)
            figures.update((f"warc.{k}", n) for k, n in self.archive.figures().items() if n)
        return figures

    def _malformed(self) -> dict[str, int]:
        """The fetcher's counts of header values it ignored or clamped, by reason."""
        stats = getattr(self._fetcher, "stats", None)
        figures = stats() if callable(stats) else {}
        got = figures.get("malformed") if isinstance(figures, dict) else None
        return dict(got) if isinstance(got, dict) else {}

    def progress_snapshot(self) -> ProgressSnapshot:
        """This peer's figures now, for peer/core/run/progress.py."""
        cluster = self.core.requested
        if self.node is not None:
            cluster += self.node.others_pages()
        self.spill_peak = max(self.spill_peak, self.core.frontier.spilled)
        snap = self.core.progress_snapshot(self.clock(), time.monotonic() - self._wall0,
                                           self.resolver.stats().hit_rate, cluster)
        return dataclasses.replace(snap, paused=self.pause_words())

    def pause_words(self) -> str:
        """Why no request starts, as the progress line says it ("" while the lease holds)."""
        state = self.peer.lease_state(self.clock())
        if state is None or state.held:
            return ""
        return lease_words(lease_status(state), state.vouched, state.needed, state.quorum, state.grace_left)

    def progress_line(self) -> str:
        """The progress line now (a fresh formatter: never suppressed as a repeat)."""
        return Progress().line(self.progress_snapshot()) or ""

    async def _progress(self) -> None:
        progress = Progress()
        while True:
            await trio.sleep(self.progress_interval)
            self._flush_pid()
            if (line := progress.line(self.progress_snapshot())) is not None:
                log.info("%s", line)

