"""The crawl engine of one peer: the trio driver around ``peer.core.crawl.core.CrawlCore``.

This module is the scheduler and the effects' table; the rest of ``Crawler``
comes from its parts, one module each: ``peer.engine.durability`` (journal,
snapshots, the exact seen set: rules 9-10), ``peer.engine.ringface`` (what
the ring driver calls) and ``peer.engine.reporting`` (status, progress).

Layers, top down (httpcore's shape: the driver does I/O, the core decides):

- this module: the nursery, the scheduler loop, one task per job, the
  parser threads, the result store (DuckDB), the journal (``peer.state.journal``),
  snapshots in a worker thread, the progress line, and in a ring the
  sockets (``ring.io.sockets``, served by ``peer.engine.ringface``);
- ``peer.core.peer.PeerCore``: the crawl core and the ring node in one, pure;
  its effects, the crawl's (``Forward``, ``Queued``, ``Row``...) and the
  ring's (``Send``, ``Reply``, ``Commit``...), are done here by one
  ``{effect type: handler}`` table;
- ``peer.core.crawl.core.CrawlCore``: every crawl decision, pure (scope, Bloom
  filter, frontier, robots cache, limits, retries, redirects, hand-off holds,
  ``max_pages``);
- ``peer.net.fetcher`` / ``peer.net.resolver``: one attempt, errors as data.

The path of one URL, as this module reads: a URL arrives (a seed, a link,
a batch from the ring) -> ``CrawlCore.discover`` -> the scheduler asks
``CrawlCore.next`` and starts ``_work(job)`` -> ``CrawlCore.admit`` says
fetch, robots.txt first, requeue, drop or pass on -> the fetcher -> the
parser thread when ``CrawlCore.fetched`` says HTML -> ``CrawlCore.on_result``
-> its effects, through ``PeerCore.routed`` (URLs of other owners into the
Outbox there), here: rows to the store and journal.

Rules (the core keeps most of them; peer/core/crawl/core.py):

1. A job is *started* when the frontier hands it out, and *done* when its
   request has ended, whatever the outcome; ``Frontier.done`` is called
   exactly once per ``pop_ready``.
2. Retries go back through the frontier (``requeue`` with a not-before time),
   so a retry waits for the host's delay like any request. 5xx, connection
   errors, resets and timeouts are retried ``MAX_RETRIES`` times with
   exponential backoff and jitter; 429 and 503 also back the host off at once
   (doubling its delay, honouring Retry-After up to ``max_retry_after``:
   rule 6).
3. Redirects are not followed inside a fetch: the target is discovered like a
   link at the same depth, so it passes scope, robots and dedupe and is
   fetched by its host's politeness gate (and, in a ring, by its owner).
   The hop count travels with it, up to ``max_redirects``.
4. Only 2xx HTML answers are parsed for links; ``<meta name=robots
   nofollow>`` and ``rel=nofollow`` are honoured.
5. The crawl ends when the frontier is empty and nothing is in flight, when
   ``max_pages`` fetches have started, or on ``stop()``; results are flushed
   in every case.
6. Remote input is capped (peer/core/crawl/limits.py): URL length, repeating paths,
   links per page and URLs per host before a URL is queued; Retry-After
   cut to ``max_retry_after``, and a host that keeps asking for more is
   given up (its URLs recorded as ``retry_after``). Every hit is counted in
   the summary, the progress line and the ring status.
7. A robots.txt that cannot be read says why at its first failure: a
   warning names its URL, the cause, the next try and the keys that govern
   it, later tries a short line each; the progress line names the held
   host tried next and when (peer/core/crawl/robots.py rule 4), and when
   no retry can help (``dns``, ``blocked``: at once; ``connect`` and the
   rest: after the cache's last retry) the host's URLs are recorded with
   that cause, not as ``robots``. A longer robots.txt is read up to
   RFC 9309 §2.5's 500 KiB, not refused.
8. A bug is one URL's problem, not the peer's: an exception escaping a job
   (fetch, parse, robots.txt, the outcome) becomes that URL's row with error
   ``internal``, is counted by type (``Summary.internal``), logged with its
   traceback the first time its type is seen, and the job still ends with
   exactly one ``Frontier.done`` (rule 1).
9. Politeness holds across what the frontier cannot see (docs/politeness.md):
   with ``ip_rate`` or ``ip_concurrency`` a host shares its IP's budget from
   the moment its address is known (at push time from static or cached DNS,
   else after its first fetch), and this peer's share of an IP's budget is
   its ring share; after a restart the hosts' request starts of the last
   ceiling horizon are read back from the rows (start = ``fetched_at`` less
   ``elapsed_ms``) so a host sees no burst across the restart.
10. The loop keeps its rhythm: parsing and the full state snapshot run in
   worker threads, the snapshot over a copy taken on the loop (the Bloom
   filter copied, the queue listed) while the journal goes on in both
   generations (peer/state/journal.py, rule 4).
"""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from peer.core.config.cluster import ClusterConfig
from peer.core.crawl.core import (
    Checking,
    MAX_RETRIES,
    CrawlCore,
    Done,
    Drop,
    Effect,
    Fetch,
    FetchRobots,
    FetchSitemap,
    Finished,
    Forward,
    Items,
    Parsed,
    PassOn,
    Queued,
    Refused,
    Requeue,
    Requeued,
    Row,
    Seen,
    Sleep,
    Start,
    StopReason,
    Summary,
    Warn,
    parse_response,
)
from peer.core.http.result import FetchResult
from peer.net.fetcher import Fetcher
from peer.core.seen.bloom import BloomFilter
from peer.core.frontier.frontier import Frontier, Job
from peer.core.run.layout import DataDir
from peer.core.crawl.limits import Limits
from peer.net.resolver import Resolver
from peer.core.crawl.robots import MAX_ROBOTS_BYTES, RobotsCache
from peer.state.spill import FileSpill
from peer.state.journal import PeerState
from peer.results.store import PageRow, ResultStore

if TYPE_CHECKING:
    from ring.hashring import HashRing

from peer.engine.archive import Archive
from peer.engine.durability import Durability
from peer.engine.reporting import Reporting
from peer.engine.sitemapfetch import SitemapFetch
from peer.engine.revisits import Revisits
from peer.engine.ringface import RingFace, ring_node, ring_sockets
from peer.core.peer import Commit, PeerCore, PeerEffect, ReadFetched, ReadHosts
from ring.actions import Granted, Log, Released, Reply, Send, StatusAsked
from ring.io.sockets import MemberSockets
from ring.node import RingNode

__all__ = ["Crawler", "Summary", "MAX_RETRIES", "Parsed", "parse_response"]

log = logging.getLogger("peer.engine")

#: Gossip rounds a peer keeps answering after it saw the cluster finish.
LINGER_ROUNDS = 6
#: Grace for in-flight fetches after stop() before they are cancelled.
STOP_GRACE = 5.0
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
#: The fields of a page row as the journal keeps it (PageRow's order).
ROW_FIELDS = tuple(PageRow.__dataclass_fields__)
#: The stop reasons after which a ring peer lingers (see ``_crawl``).
#: Seconds between checks that the results file is still the one we write.
RESULTS_WATCH = 1.0
_LINGER_AFTER = (StopReason.CLUSTER_DONE, StopReason.LEFT, StopReason.MAX_PAGES)



class Crawler(Durability, RingFace, Reporting, SitemapFetch, Revisits):
    """One peer's crawl of the hosts it owns (in a ring of one: all of them)."""

    def __init__(
        self,
        cfg: ClusterConfig,
        peer_id: str,
        *,
        data_dir: Path | None = None,
        fetcher: Fetcher | None = None,
        progress_interval: float = 5.0,
        rng: random.Random | None = None,
        cluster: bool = False,
        address: str | None = None,
        weight: float | None = None,
    ) -> None:
        self.cfg = cfg
        self.peer_id = peer_id
        self.data_dir = Path(data_dir or cfg.data_dir(peer_id))
        self.resolver = Resolver(cfg.dns, allow_private=cfg.crawl.allow_private)
        self.core = CrawlCore(cfg, peer_id, rng=rng, peek_ip=self.resolver.peek)
        self._fetcher: Any = fetcher
        # trio's clock: the frontier's ready times are what trio sleeps on, and
        # tests swap in trio.testing.MockClock to run politeness delays at once.
        self.clock: Callable[[], float] = trio.current_time
        self.progress_interval = progress_interval
        self._wake = trio.Event()
        # Parsing threads: two keep both cores busy without letting a flood
        # of crafted pages take every thread of trio's pool. Pages over
        # HEAVY_PAGE share one of them: lexbor takes ~40 µs a KiB, so a link
        # farm's 2 MiB pages (85 ms each) would otherwise hold both threads
        # and every other host's pages would queue behind them; this way a
        # heavy host slows itself (its jobs wait to be parsed), not the rest.
        self._parsers = trio.CapacityLimiter(2)
        self._heavy = trio.CapacityLimiter(1)
        # One page's CPU work at a time on the loop (parse, links, journal).
        # trio runs every task that is ready in one batch before it looks at
        # its sockets again, so with 64 fetches done at once each batch held
        # 64 pages' work: ~1.3 s on the loaded 2-core box, and a ping waited
        # that long twice (its receipt, its answer's), past suspect_after
        # (scripts/bench_scale.py: both peers suspected 3 s in). Behind this
        # lock a batch holds one page's work, and a waiting fetch costs no
        # CPU: the pages per second stay what the core can do.
        self._turn = trio.Lock()
        self._move_kick = trio.Event()
        self._store: ResultStore | None = None
        #: The WARC files ([warc] enabled; peer/engine/archive.py), opened by run().
        self.archive: Archive | None = None
        self._workers: trio.Nursery | None = None
        # In a ring of several peers, the node that gossips and forwards.
        # Alone, every host is ours and there is no node.
        self._cluster = cluster
        self._address = address
        self._weight = weight
        self.node: RingNode | None = None
        self._wall0 = time.monotonic()
        self.started = time.time()  # epoch seconds, for stats.json
        # Crash safety: the frontier, Bloom filter and counters are journaled
        # under data_dir/state/ and resumed after a kill -9.
        self._state: PeerState | None = None
        self._spill: FileSpill | None = None
        self.resumed: dict[str, float] | None = None  # what a restart found
        #: Why the crawl stopped because its data_dir was lost (None: it was not).
        self.lost: str | None = None
        self._restart_starts: list[tuple[str, float]] = []
        #: Snapshots written (the last one's stats are logged).
        self.snapshots = 0
        # The exact seen set's hash runs (peer/state/sievefile.py), opened by run().
        self._sieve: Any = None
        self._sieve_stats: Any = None
        self._sieve_kick = trio.Event()
        self.spill_peak = 0  # most queued URLs on disk seen by a progress line (rule 9)
        # One core for the crawl and the ring (peer/core/peer.py); alone, without a node.
        self.peer = PeerCore(self.core)
        self._answers = {}  # a continuous crawl's answers until their rows (peer.engine.revisits)
        self.sockets: MemberSockets | None = None
        self._services: trio.Nursery | None = None
        # One table for every effect the peer core returns, crawl's and ring's.
        self._effects: dict[type, Callable[[Any], Awaitable[None] | None]] = {
            Forward: self._do_forward, Queued: self._do_queued, Checking: self._do_checking,
            Seen: self._do_seen,
            Done: self._do_done, Row: self._do_row, Items: self._do_items,
            Requeued: _nothing, Warn: _warn,
            Refused: _nothing,  # counted by the core (peer.core.crawl.decisions.Reason)
            Commit: self._do_commit, ReadHosts: self._do_read_hosts,
            ReadFetched: self._do_read_fetched, Send: self._do_send, Reply: self._do_reply,
            StatusAsked: self._do_status, Log: self._do_log, Released: _nothing,
            Granted: self._do_granted,
        }

    # -- the core's state, for the status, the tests and the CLI -------------------------

    @property
    def frontier(self) -> Frontier:
        return self.core.frontier

    @property
    def bloom(self) -> BloomFilter:
        return self.core.bloom

    @property
    def limits(self) -> Limits:
        return self.core.limits

    @property
    def robots(self) -> RobotsCache:
        return self.core.robots

    @property
    def summary(self) -> Summary:
        return self.core.summary

    @property
    def ring(self) -> HashRing | None:
        return self.core.ring

    @property
    def in_flight(self) -> int:
        return self.core.in_flight

    @property
    def leaving(self) -> bool:
        return self.core.leaving

    @property
    def pages_requested(self) -> int:
        return self.core.requested

    @property
    def handoffs_in(self) -> int:
        return self.core.handoffs_in

    # -- public ------------------------------------------------------------

    async def _watch_results(self, results: Path) -> None:
        """Stop the crawl if the results file is deleted or replaced under us.

        On POSIX a deleted file stays writable by those who hold it open: the
        peer would go on writing rows nobody can read, and report them (an
        ``rm -rf`` of the data_dir mid-crawl lost a run silently).
        """
        try:
            first = results.stat()
        except OSError:
            return  # not made yet: nothing to compare with
        while True:
            await trio.sleep(RESULTS_WATCH)
            try:
                now = results.stat()
                gone = (now.st_dev, now.st_ino) != (first.st_dev, first.st_ino)
                why = f"{results} was replaced by another file"
            except FileNotFoundError:
                gone, why = True, f"{results} was deleted"
            except OSError:
                continue
            if gone:
                self.lost = why
                log.error("%s while the crawl ran: stopping; the rows written since are lost", why)
                self.stop()
                return

    def _stop_run(self) -> None:
        log.info("revisit.run_for (%gs) is over: stopping", self.cfg.revisit.run_for)
        self.stop()

    def stop(self) -> None:
        """Stop starting fetches; in-flight ones get ``STOP_GRACE`` seconds."""
        self.core.stopping = True
        self._wake.set()

    def cancel_in_flight(self) -> None:
        """Stop now: in-flight fetches are cancelled; results are still flushed."""
        self.stop()
        if self._workers is not None:
            self._workers.cancel_scope.cancel()

    async def run(self) -> Summary:
        """Crawl until done, ``max_pages`` or ``stop()``; results flushed."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        crawl = self.cfg.crawl
        self._wall0 = wall0 = time.monotonic()
        self.started = time.time()
        self.core.wall_offset = time.time() - self.clock()  # peer.core.dedupe.held
        sites = self.core.sites
        fetcher = self._fetcher or Fetcher(crawl, self.resolver, sites=sites, capture=self.cfg.warc.enabled)
        async with ResultStore(
            DataDir(self.data_dir).results, self.peer_id,
            # The tables a [[site]] block may fill too (peer/core/config/sites.py).
            store_links=sites.any("store_links"), store_body=sites.any("store_body"),
            item_tables=self.cfg.extract.tables(), store_fetches=self.cfg.revisit.enabled,
        ) as store, fetcher:
            self._store = store
            self._fetcher = fetcher
            recovered = await self._open_state(store)
            await self._revisit_restore(store)
            await self._open_sieve(recovered)
            await self._open_cookies(recovered)
            # After the state is ours (no other process on this data_dir): recovery cuts .open files.
            self.archive = Archive.open(self.cfg, self.peer_id, self.data_dir, self.stop)
            try:
                await self._crawl(store, recovered)
            finally:
                assert self._state is not None
                # The page count for max_pages across a resume (snapshots hold it too).
                self._state.counters(self._counters())
                self._state.close()
                if self._sieve is not None:
                    self._sieve.close()
                if self._spill is not None:
                    self._spill.close()
                if self.archive is not None:
                    with trio.CancelScope(shield=True):  # the open file closed whole, even on a cancel
                        await self.archive.aclose()
            await store.flush()
        s = self.summary
        s.elapsed = time.monotonic() - wall0
        s.limits = self.limits.render(self.clock())
        s.caps = Counter({str(cap): n for cap, n in self.limits.hits.items() if n})
        s.details = self.core.detail_lines(self._malformed())
        if self.archive is not None:
            s.details.append(self.archive.summary_line())
            s.warc = self.archive.figures()
        s.dedupe = self.core.dup_figures()
        s.revisit = self._revisit_status() or {}
        if self._sieve is not None and self.core.sieve.exact:
            st = self._sieve_stats
            s.details.append(f"seen set on disk: {st.hashes:,} URL hashes in {st.disk_runs} run files "
                             f"({st.disk_bytes / 2**20:.1f} MiB) and {st.ram_runs} in RAM "
                             f"({st.ram_bytes / 2**20:.1f} MiB)")
        self.spill_peak = max(self.spill_peak, self.core.frontier.spilled)
        if self._spill is not None and self.spill_peak:
            st = self._spill.stats()
            s.details.append(
                f"frontier: at most {self.spill_peak:,} queued URLs on disk (heads of "
                f"{self.core.frontier.head_per_host} a host in RAM); {st.blocks_written:,} blocks "
                f"written, {st.blocks_read:,} read; {st.urls:,} URLs in {st.segments} segments "
                f"({st.disk_bytes / 2**20:.1f} MiB) left")
        return s

    async def _crawl(self, store: ResultStore, recovered: Any) -> None:
        """The services (ring node, store writer, progress, snapshots) around the scheduler."""
        state = self._state
        assert state is not None
        async with trio.open_nursery() as services:
            if self._cluster:
                spec = next((p for p in self.cfg.peers if p.id == self.peer_id), None)
                address = self._address or (spec.address if spec is not None else "")
                node, keys = ring_node(self.cfg, self.peer_id, address,
                                       self._weight or (spec.weight if spec else 1.0), self.clock(),
                                       resumed=recovered is not None, grants=self.resumed_grants)
                self.node = node
                # A peer not in cluster.toml joins a running ring (PeerCore: joining).
                self.peer = PeerCore(self.core, node, now=self.clock(), joining=spec is None)
                self.sockets = ring_sockets(self, self.cfg, node, address, keys)
            self._services = services
            if recovered is not None:
                self._resume(recovered)
            if self.sockets is not None:
                await services.start(self.sockets.run)
            self._did(self.core.seeds(self.clock()))
            state.commit()
            services.start_soon(store.run)
            services.start_soon(self._watch_results, DataDir(self.data_dir).results)
            services.start_soon(self._progress)
            services.start_soon(self._snapshots)
            services.start_soon(self._sieve_loop)
            services.start_soon(self._move_spilled)
            services.start_soon(self._cookie_saves)
            if self.cfg.revisit.enabled and self.cfg.revisit.run_for:
                services.start_soon(self._run_for, self.cfg.revisit.run_for)
            async with trio.open_nursery() as workers:
                self._workers = workers
                await self._schedule(workers)
                if self.core.stopping and self.in_flight:
                    workers.cancel_scope.deadline = trio.current_time() + STOP_GRACE
            self._flush_pid()
            if self.node is not None and self.summary.stop_reason in _LINGER_AFTER:
                # Keep gossiping "idle, done" for a few rounds so every
                # peer sees the same stable counters before we vanish;
                # otherwise a peer a round behind would see us die, its
                # live set change, and its termination count restart.
                # A leaver's final counters (its hand-off batches) must
                # reach the others too, or their sums never balance; and a
                # peer stopped by max_pages must spread its final page
                # count, or a peer a round behind never sees the limit.
                await trio.sleep(LINGER_ROUNDS * self.cfg.ring.gossip_interval)
            services.cancel_scope.cancel()

    # -- effects ----------------------------------------------------------------------

    def _apply(self, effects: Iterable[PeerEffect]) -> None:
        """Do what the core decided, in its order (links' Queued before their page's Row).

        Synchronous: a ``Reply`` comes only with a received frame
        (``RingFace._apply_async``).
        """
        handlers = self._effects
        for effect in effects:
            got = handlers[type(effect)](effect)
            if got is not None:  # pragma: no cover - only a received frame gives replies
                raise RuntimeError(f"{effect!r} needs the receiver")
        self._wake.set()
        if self.core.sieve.take_kick():
            self._sieve_kick.set()
        if self.core.frontier.moving:
            self._move_kick.set()

    def _did(self, effects: Iterable[Effect]) -> None:
        """The crawl core's effects, its Forwards put in the Outbox by the peer core, then done."""
        self._apply(self.peer.routed(effects, self.clock()))

    def _do_forward(self, e: Forward) -> None:
        # Already in the Outbox (PeerCore.routed): journaled, and the sender woken.
        if self._state is not None:
            self._state.forwarded(((e.url, e.depth),))
        if self.sockets is not None:
            self.sockets.wake()

    def _do_queued(self, e: Queued) -> None:
        if self._state is not None:
            self._state.queued(e.url, e.depth)

    def _do_checking(self, e: Checking) -> None:
        if self._state is not None:
            self._state.forwarded(((e.url, e.depth),))

    def _do_seen(self, e: Seen) -> None:
        if self._state is not None:
            self._state.seen(e.url)

    def _do_done(self, e: Done) -> None:
        self._revisit_forget(e.url)
        if self._state is not None:
            self._state.done(e.url, None)

    def _do_row(self, e: Row) -> None:
        row = PageRow(
            url=e.url, final_url=e.final_url, host=e.host, status=e.status,
            content_type=e.content_type, bytes=e.bytes, title=e.title, n_links=e.n_links,
            depth=e.depth, fetched_at=time.time(), elapsed_ms=e.elapsed_ms, error=e.error,
            peer=self.peer_id, canonical=e.canonical, noindex=e.noindex, nofollow=e.nofollow,
            sitemap_lastmod=e.sitemap_lastmod, sitemap_priority=e.sitemap_priority,
            sitemap_changefreq=e.sitemap_changefreq, payload_digest=e.payload_digest,
            simhash=e.simhash, duplicate_of=e.duplicate_of, duplicate_kind=e.duplicate_kind,
        )
        if self._state is not None:
            self._state.done(row.url, [getattr(row, f) for f in ROW_FIELDS])
            if self.cfg.crawl.max_pages:
                # The page count with the row: after a kill -9 the count the
                # last snapshot held would let this peer go past its cap.
                self._state.counters({"pages": self.core.requested})
            # Right away: a page done but not on disk would be fetched again
            # after a kill, and only those in flight may be.
            self._state.commit()
        write, replace = self._revisit_row(e)  # a revisit's 304 keeps the stored row
        if self._store is not None and write:
            self._store.add_page(row, body=e.body, links=e.links, replace=replace)

    def _do_items(self, e: Items) -> None:
        if self._store is not None:
            fetched_at = time.time()
            for table, row in e.items:
                self._store.add_item(table, e.url, fetched_at, row)

    # -- scheduling --------------------------------------------------------

    async def _schedule(self, workers: trio.Nursery) -> None:
        while True:
            decision = self.peer.next(self.clock())
            if isinstance(decision, Start):
                workers.start_soon(self._work, decision.job)
                continue
            if isinstance(decision, Finished):
                self.summary.stop_reason = decision.reason
                return
            assert isinstance(decision, Sleep)
            if decision.effects:
                self._did(decision.effects)
            self._wake = trio.Event()
            # Until a host can start, or a fetch ends, or a URL arrives.
            with trio.move_on_at(decision.until):
                await self._wake.wait()

    async def _work(self, job: Job) -> None:
        core = self.core
        try:
            await self._handle(job)
        except Exception as exc:  # noqa: BLE001 - rule 8: one URL's bug, not the peer's
            name = type(exc).__name__
            effects, first = core.internal(job, name, self.clock())
            if first:
                log.error("internal error %s on %s: recorded as 'internal', the crawl goes on "
                          "(further %s errors are counted in the summary, not logged)",
                          name, job.url, name, exc_info=exc)
            self._did(effects)
        finally:
            core.job_ended(job)
            self._wake.set()

    async def _handle(self, job: Job) -> None:
        core = self.core
        adm = core.admit(job, self.clock())
        if isinstance(adm, Fetch):
            self._did(adm.effects)
            jar = core.cookies  # None unless some host's cookies are on: one test
            if core.recrawl is not None:  # a continuous crawl: a revisit's validators (RFC 9110 §13.1)
                res = await self._fetcher.fetch(job.url, headers=self._revisit_headers(job),
                                                cookie=None if jar is None else jar.header(job.url, time.time()))
                self._revisit_answer(job, res)
            elif jar is None:
                res = await self._fetcher.fetch(job.url)
            else:
                res = await self._fetcher.fetch(job.url, cookie=jar.header(job.url, time.time()))
            if self.archive is not None:
                await self._archive(job, res)
            parsed = None
            async with self._turn:
                if not core.fetched(job, res, self.clock()):
                    self._did(core.on_result(job, res, None, self.clock()))
                    return
                # A small page on the loop (INLINE_PAGE); the rest in a worker
                # thread: lexbor releases the GIL while it parses, and a crafted
                # page can take it seconds or more (deep nesting, huge <select>s:
                # tests/e2e/test_hostile.py); gossip and the other fetches must go
                # on meanwhile.
                body = res.body
                if len(body) <= INLINE_PAGE and body.count(b"<") <= INLINE_TAGS:
                    parsed = self._parse_inline(job, res)
                    self._did(core.on_result(job, res, parsed, self.clock()))
                    return
            if len(body) > HEAVY_PAGE:
                async with self._heavy:
                    parsed = await self._parse(job, res)
            else:
                parsed = await self._parse(job, res)
            async with self._turn:
                self._did(core.on_result(job, res, parsed, self.clock()))
        elif isinstance(adm, FetchSitemap):
            await self._fetch_sitemap(adm)
        elif isinstance(adm, FetchRobots):
            self._did(adm.effects)
            try:
                # The first 500 KiB however long the file (RFC 9309 §2.5): a
                # prefix with ``truncated`` set, not a too_large refusal.
                jar = core.cookies
                if jar is None:
                    res = await self._fetcher.fetch(adm.url, max_body=MAX_ROBOTS_BYTES, prefix_ok=True)
                else:
                    res = await self._fetcher.fetch(adm.url, max_body=MAX_ROBOTS_BYTES, prefix_ok=True,
                                                    cookie=jar.header(adm.url, time.time()))
            except trio.Cancelled:
                core.robots_cancelled(job)
                raise
            if self.archive is not None:
                await self.archive.keep(res)
            self._did(core.on_robots(job, res, self.clock()))
        else:
            assert isinstance(adm, (Requeue, Drop, PassOn))
            self._did(adm.effects)
            if not isinstance(adm, Requeue):
                # It left our queue (passed on, or fetched by the previous
                # owner): on disk before anything else happens.
                self.commit_state()

    def _parse_inline(self, job: Job, res: FetchResult) -> Parsed:
        return parse_response(job.url, res.body, res.charset, self.cfg.extract,
                              self.cfg.crawl.max_links_per_page, self.core.params, self.core.page_rules,
                              self.cfg.dedupe)

    async def _parse(self, job: Job, res: FetchResult) -> Parsed:
        # Through this module's name, so a test can swap the parser for one that fails.
        return await trio.to_thread.run_sync(
            parse_response, job.url, res.body, res.charset, self.cfg.extract,
            self.cfg.crawl.max_links_per_page, self.core.params, self.core.page_rules,
            self.cfg.dedupe, limiter=self._parsers)

    def _flush_pid(self) -> None:
        samples = self.frontier.drain_trace()
        if samples and self._store is not None:
            sites = self.core.sites
            self._store.add_pid(samples, (lambda h: sites.for_host(h).politeness.setpoint) if sites
                                else self.cfg.politeness.setpoint)

def _nothing(effect: Any) -> None:
    """Done by the core already (a requeue, a hand-off released); nothing to do here."""


def _warn(effect: Warn) -> None:
    log.warning("%s", effect.text)
