"""Where the crawl engine parses a fetched page: on the loop, in a worker thread, or the heavy one (edge).

A part of ``peer.engine.crawler.Crawler`` that owns the parser threads: the
core decides what is parsed (``PeerCore.fetched``, its ``parse_rules``),
this part decides where, so the loop keeps its rhythm (the engine's rule
10) whatever the pages are:

- a page of at most ``INLINE_PAGE`` bytes and ``INLINE_TAGS`` ``<`` is
  parsed on the loop: handing it to a thread and back costs more CPU than
  parsing it;
- any other page in one of two worker threads (``trio.to_thread``): lexbor
  releases the GIL while it parses, and a crafted page can take it seconds
  or more (deep nesting, huge ``<select>``s: tests/e2e/test_hostile.py);
- a page over ``HEAVY_PAGE`` bytes in the one "heavy" slot of those two,
  shared with the sitemaps' parse (``peer.engine.sitemapfetch``), so a heavy
  host slows itself, not the rest.
"""

from __future__ import annotations

import trio

from peer.core.crawl.core import Parsed, parse_response
from peer.core.door.peer import PeerCore
from peer.core.frontier.frontier import Job
from peer.core.http.result import FetchResult

__all__ = ["HEAVY_PAGE", "INLINE_PAGE", "INLINE_TAGS", "Parsing"]

#: Bytes of HTML over which a page is parsed in the one "heavy" thread.
HEAVY_PAGE = 256 * 1024
#: A page this small, with at most INLINE_TAGS "<", is parsed on the event
#: loop instead of in a thread. Handing a page to a thread and back cost
#: more CPU than parsing it (a 4 KiB page: 108-225 us inline, 395-527 us
#: through trio.to_thread, alternating runs), and at hundreds of pages a
#: second the GIL hand-offs were a fifth of the loop's time. The bound is
#: on the loop's stall: lexbor's worst cases grow with the square of the
#: tag count (3,276 nested <div>s: 48 ms), and at these bounds the worst
#: crafted page measured (64 KiB, 1,000 tags, nesting, misnested
#: formatting, tables, 20,000 attributes) took 7.6 ms.
INLINE_PAGE = 64 * 1024
INLINE_TAGS = 1000


class Parsing:
    """The engine's parser threads, and which one a page goes to (module docstring)."""

    __slots__ = ("_peer", "_threads", "heavy")

    def __init__(self, peer: PeerCore) -> None:
        self._peer = peer
        # Two threads keep both cores busy without letting a flood of crafted
        # pages take every thread of trio's pool. Pages over HEAVY_PAGE share
        # one of them: lexbor takes ~40 µs a KiB, so a link farm's 2 MiB pages
        # (85 ms each) would otherwise hold both threads and every other
        # host's pages would queue behind them; this way a heavy host slows
        # itself (its jobs wait to be parsed), not the rest.
        self._threads = trio.CapacityLimiter(2)
        #: The one heavy slot, shared with the sitemaps' parse.
        self.heavy = trio.CapacityLimiter(1)

    @staticmethod
    def fits_inline(body: bytes) -> bool:
        """Whether a page is small enough to parse on the loop (``INLINE_PAGE``, ``INLINE_TAGS``)."""
        return len(body) <= INLINE_PAGE and body.count(b"<") <= INLINE_TAGS

    def inline(self, job: Job, res: FetchResult) -> Parsed:
        """Parse ``res`` on the loop (a page that :meth:`fits_inline`)."""
        return parse_response(job.url, res.body, res.charset, *self._peer.parse_rules)

    async def in_thread(self, job: Job, res: FetchResult) -> Parsed:
        """Parse ``res`` in a worker thread; a page over ``HEAVY_PAGE`` in the heavy slot."""
        if len(res.body) > HEAVY_PAGE:
            async with self.heavy:
                return await self.threaded(job, res)
        return await self.threaded(job, res)

    async def threaded(self, job: Job, res: FetchResult) -> Parsed:
        # Through this module's name, so a test can swap the parser for one that fails.
        return await trio.to_thread.run_sync(
            parse_response, job.url, res.body, res.charset, *self._peer.parse_rules, limiter=self._threads)
