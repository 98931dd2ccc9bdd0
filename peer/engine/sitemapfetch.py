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

from collections.abc import Awaitable, Callable, Iterable

import trio

from peer.core.crawl.decisions import FetchSitemap
from peer.core.http.result import FetchResult
from peer.core.door.peer import PeerCore, PeerEffect
from peer.core.sitemaps.document import Sitemap, SitemapLimits, parse

__all__ = ["SitemapFetch"]


class SitemapFetch:
    """The sitemaps' part of ``Crawler`` (module docstring).

    ``fetch(url, max_body)`` reads a prefix of at most ``max_body`` bytes;
    ``keep(res)`` archives it (a no-op while WARC is off: peer/engine/archive.py
    rule 1 archives sitemaps too).
    """

    def __init__(self, peer: PeerCore, clock: Callable[[], float], limits: SitemapLimits, *,
                 fetch: Callable[[str, int], Awaitable[FetchResult]],
                 keep: Callable[[FetchResult], Awaitable[None]],
                 carry: Callable[[Iterable[PeerEffect]], None],
                 heavy: trio.CapacityLimiter, turn: trio.Lock) -> None:
        self._peer = peer
        self._clock = clock
        self._limits = limits
        self._fetch = fetch
        self._keep = keep
        self._carry = carry
        self._heavy = heavy
        self._turn = turn

    async def run(self, adm: FetchSitemap) -> None:
        """Fetch, archive and parse ``adm``'s sitemap, and give the core what it said."""
        job = adm.job
        res = await self._fetch(job.url, adm.max_bytes)
        await self._keep(res)
        sitemap: Sitemap | None = None
        status = res.status
        if status is not None and 200 <= status < 300 and res.body:
            async with self._heavy:
                sitemap = await trio.to_thread.run_sync(parse, res.body, job.url, adm.granted, self._limits)
        async with self._turn:
            self._carry(self._peer.on_sitemap(job, res, sitemap, self._clock()))
