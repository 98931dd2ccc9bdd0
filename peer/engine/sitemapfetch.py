"""The crawl engine's sitemap fetch: at most ``sitemaps.max_bytes`` read, parsed in a worker thread (edge).

A part of ``peer.engine.crawler.Crawler``; the core decides
(``peer.core.sitemaps.jobs``), this part does the I/O of one ``FetchSitemap``:

- the request is the job's own, under its host's politeness: the frontier
  handed it out like a page (its pace, ``host_concurrency``), and admission
  read robots.txt first;
- the body is read up to ``max_bytes`` as a prefix (``prefix_ok``): a
  sitemap over the cap is cut and what came before is read, as the parse
  does with the inflated bytes;
- the parse runs in a worker thread behind the engine's one "heavy" parser
  slot: a full sitemap costs about 0.66 s of CPU (docs/benchmarks/cores.md)
  and a gzip bomb up to ``max_bytes`` of inflation, and neither may stall
  the loop or take both parser threads from the pages.
"""

from __future__ import annotations

from typing import Any

import trio

from peer.core.crawl.decisions import FetchSitemap
from peer.core.sitemaps.document import Sitemap, parse
from peer.engine.archive import Archive
from peer.engine.parts import CrawlerParts

__all__ = ["SitemapFetch"]


class SitemapFetch(CrawlerParts):
    """The sitemaps' part of ``Crawler`` (module docstring)."""

    _fetcher: Any
    archive: Archive | None
    _heavy: trio.CapacityLimiter

    async def _fetch_sitemap(self, adm: FetchSitemap) -> None:
        core, job = self.core, adm.job
        self._did(adm.effects)
        res = await self._fetcher.fetch(job.url, max_body=adm.max_bytes, prefix_ok=True)
        if self.archive is not None:  # peer/engine/archive.py rule 1: sitemaps are archived too
            await self.archive.keep(res)
        sitemap: Sitemap | None = None
        status = res.status
        if status is not None and 200 <= status < 300 and res.body:
            async with self._heavy:
                sitemap = await trio.to_thread.run_sync(
                    parse, res.body, job.url, adm.granted, self.cfg.sitemaps.limits())
        async with self._turn:
            self._did(core.on_sitemap(job, res, sitemap, self.clock()))
