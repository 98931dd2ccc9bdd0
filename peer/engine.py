"""The crawl engine of one peer: a thin trio loop around the pure cores.

The loop asks the cores what to do and does it (httpcore's shape):

- the **frontier** says which job may start now (politeness, host
  concurrency) and when the next one could, so the scheduler sleeps exactly
  until then or until a fetch ends or a URL arrives; it never busy-waits;
- the **robots cache** says whether a URL may be fetched, or whether the
  host's robots.txt must be fetched first, through the same politeness gate;
- the **fetcher** makes one attempt and returns a result (errors are data);
- this module decides what a result means: a row in the results, links to
  discover, a retry later, a backoff, a redirect target to route;
- **discovery** runs every link through scope, the Bloom filter and into the
  frontier.

Rules (each one is a line or two below):

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
6. Remote input is capped (peer/limits.py): URL length, repeating paths,
   links per page and URLs per host before a URL is queued; Retry-After
   cut to ``max_retry_after``, and a host that keeps asking for more is
   given up (its URLs recorded as ``retry_after``). Every hit is counted in
   the summary, the progress line and the ring status.
7. A robots.txt that cannot be read says why: a warning names the host, the
   cause and the next try, held hosts show in the progress line, and when
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
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

import trio

from peer.bloom import BloomFilter
from peer.config import ClusterConfig
from peer.extract import Page, decode_html, is_html, parse_page, parse_tree
from peer.items import ExtractConfig, extract_items
from peer.fetcher import Fetcher, FetchResult
from peer.frontier import CEILING_WINDOWS, Frontier, Job, Outcome
from peer.layout import DataDir
from peer.limits import Cap, Hold, Limits
from peer.resolver import Resolver
from peer.robots import MAX_ROBOTS_BYTES, RobotsCache, Verdict
from peer.state import PeerState
from peer.store import PageRow, ResultStore
from peer.errors import URLError
from peer.urls import Scope, host_key, hostname, normalize, normalize_link
from ring.messages import MemberState

__all__ = ["Crawler", "Summary", "StopReason", "MAX_RETRIES"]

log = logging.getLogger("peer.engine")

#: Attempts after the first for a transient failure (5xx, reset, timeout...).
MAX_RETRIES = 2
#: First retry waits this long (then x2 per attempt, with +-50% jitter).
RETRY_BASE = 1.0
#: Transient error kinds worth a retry; the rest (dns, blocked, tls,
#: too_large, protocol) would fail the same way again.
RETRYABLE = frozenset({"connect", "reset", "timeout"})
#: robots.txt failures no retry mends in this run: the name does not resolve
#: (the resolver caches that, too) or the SSRF guard refuses every address.
ROBOTS_FINAL = frozenset({"dns", "blocked"})
#: Error kinds of requests that never reached the server (frontier rule 5).
UNREACHED_KINDS = frozenset({"dns", "blocked", "connect"})
#: How long a job waits when another task is fetching its host's robots.txt.
ROBOTS_PENDING_WAIT = 0.25
#: Gossip rounds a peer keeps answering after it saw the cluster finish.
LINGER_ROUNDS = 6
#: Grace for in-flight fetches after stop() before they are cancelled.
STOP_GRACE = 5.0
#: How often a job of a host held for a hand-off looks again.
HOLD_POLL = 0.1
#: Longest host key a HostStarts message carries (ring.messages.MAX_NAME).
MAX_HOST_KEY = 256
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
#: How far back a restarted peer counts its hosts' request starts: the
#: frontier's longest ceiling window.
CEILING_HORIZON = max(CEILING_WINDOWS)
#: A new state snapshot (and a fresh journal) once the journal is this big, or
#: this old: recovery replays at most that much (peer/state.py's figures:
#: ~0.5 M records, a few seconds, per 64 MiB).
SNAPSHOT_BYTES = 64 * 2**20
SNAPSHOT_SECONDS = 600.0
#: The fields of a page row as the journal keeps it (PageRow's order).
ROW_FIELDS = tuple(PageRow.__dataclass_fields__)
# What happened to a job so far, for rule 8: after an exception, the row and
# the done() it still needs, and nothing twice.
_DONE, _ROW, _REQUEUED, _ROBOTS = 1, 2, 4, 8


@dataclass(frozen=True, slots=True)
class Parsed:
    """What a worker thread got out of one HTML page."""

    page: Page
    items: list[tuple[str, dict]]
    errors: list[str]


def parse_response(url: str, body: bytes, charset: str | None, ex: ExtractConfig,
                   max_links: int = 0) -> Parsed:
    """Links, title and extraction-rule items of an HTML page; pure, for a worker thread."""
    tree = None
    items: list[tuple[str, dict]] = []
    errors: list[str] = []
    if ex and (ex.module or any(r.matches(url) for r in ex.rules)):
        # One parse for the links and the extraction rules.
        tree = parse_tree(body, charset)
        html = decode_html(body, charset) if ex.module else ""
        items, errors = extract_items(ex, url, html, tree)
    return Parsed(parse_page(url, body, charset, tree=tree, max_links=max_links), items, errors)


class StopReason(StrEnum):
    """Why a crawl ended; the value is what the summary's first line says."""

    STOPPED = "stopped"  # SIGINT/SIGTERM or Crawler.stop()
    MAX_PAGES = "max_pages reached"  # crawl.max_pages, summed over the cluster
    LEFT = "left the ring"  # a graceful leave handed the hosts over
    FRONTIER_EMPTY = "frontier empty"  # a lone peer has nothing left to fetch
    CLUSTER_DONE = "cluster done"  # termination detection: every peer idle, nothing in flight


@dataclass(slots=True)
class Summary:
    """What a crawl did; printed at the end and returned by ``Crawler.run``."""

    pages: int = 0                       # rows written (fetched or failed)
    fetched: int = 0                     # requests that got an HTTP answer
    bytes: int = 0                       # body bytes kept
    by_status: Counter[int] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    retries: int = 0
    robots_fetches: int = 0
    items: int = 0                       # rows of the extraction rules' tables
    extract_errors: int = 0              # user extraction function failures
    internal: Counter[str] = field(default_factory=Counter)  # exceptions by type (rule 8)
    limits: str = ""                     # Limits.render(): caps hit, hosts held
    details: list[str] = field(default_factory=list)  # remote input, politeness, seen set
    elapsed: float = 0.0
    stop_reason: StopReason | None = None

    def rate(self) -> float:
        return self.pages / self.elapsed if self.elapsed > 0 else 0.0

    def render(self) -> str:
        statuses = ", ".join(f"{s}: {n}" for s, n in sorted(self.by_status.items())) or "none"
        errs = ", ".join(f"{k}: {n}" for k, n in self.errors.most_common(5)) or "none"
        if self.internal:
            errs += " (internal: " + ", ".join(f"{k} {n}" for k, n in self.internal.most_common(5)) + ")"
        return "\n".join([
            f"crawl finished ({self.stop_reason or ''}) in {self.elapsed:.1f}s: "
            f"{self.pages} pages, {self.rate():.1f} pages/s, {self.bytes / 2**20:.1f} MiB",
            f"  by status: {statuses}",
            f"  top errors: {errs}",
            f"  retries: {self.retries}; robots.txt fetched: {self.robots_fetches}"
            + (f"; items: {self.items}" if self.items or self.extract_errors else "")
            + (f" ({self.extract_errors} extraction errors)" if self.extract_errors else ""),
            *([f"  {self.limits}"] if self.limits else []),
            *(f"  {line}" for line in self.details),
        ])


class Crawler:
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
        crawl = cfg.crawl
        self.scope = Scope.from_seeds(crawl.seeds, crawl.allow_hosts, crawl.deny_hosts, crawl.max_depth)
        self.frontier = Frontier(cfg.politeness)
        b = cfg.bloom
        self.bloom = BloomFilter(b.capacity, b.error_rate, growth=b.growth, max_capacity=b.max_capacity)
        self.robots = RobotsCache(crawl.user_agent, max_crawl_delay=cfg.politeness.max_crawl_delay,
                                  error_retry=crawl.robots_retry)
        self.limits = Limits.from_config(crawl, cfg.politeness)
        self.resolver = Resolver(cfg.dns, allow_private=crawl.allow_private)
        self._fetcher = fetcher
        # trio's clock: the frontier's ready times are what trio sleeps on, and
        # tests swap in trio.testing.MockClock to run politeness delays at once.
        self.clock = trio.current_time
        self.progress_interval = progress_interval
        self.summary = Summary()
        self._rng = rng or random.Random()
        self._attempts: dict[str, int] = {}   # url -> retries so far (only retried URLs)
        self._hops: dict[str, int] = {}       # url -> redirects that led to it
        self._marks: dict[str, int] = {}     # url in flight -> _DONE | _ROW | ... (rule 8)
        self._internal_logged: set[str] = set()
        self._in_flight = 0
        self._requested = 0                   # page rows whose request was made (max_pages)
        self._wake = trio.Event()
        # Parsing threads: two keep both cores busy without letting a flood
        # of crafted pages take every thread of trio's pool. Pages over
        # HEAVY_PAGE share one of them: lexbor takes ~40 µs a KiB, so a link
        # farm's 2 MiB pages (85 ms each) would otherwise hold both threads
        # and every other host's pages would queue behind them; this way a
        # heavy host slows itself (its jobs wait to be parsed), not the rest.
        self._parsers = trio.CapacityLimiter(2)
        self._heavy = trio.CapacityLimiter(1)
        self._stopping = False
        self._store: ResultStore | None = None
        self._workers: trio.Nursery | None = None
        # In a ring of several peers: who owns which host, and the node that
        # gossips and forwards. Alone, every host is ours and there is no node.
        self._cluster = cluster
        self._address = address
        self._weight = weight
        self.node = None
        self.ring = None
        self._wall0 = time.monotonic()
        # Hand-off (issue 6). Hosts this peer gained in a ring change are held
        # until their previous owner says it handed over what it had fetched
        # (HandoffDone), so they are never fetched twice: per change, the old
        # ring and {previous owner: give-up time}.
        self._holds: list[tuple[object, dict[str, float]]] = []
        # Handed-over URLs that were already queued here when they came:
        # dropped when their job comes up instead of fetched again.
        self._handed_seen: set[str] = set()
        self._inflight: dict[str, tuple[str, int]] = {}   # url -> (host, depth) in flight
        # Crash safety (issue 6): the frontier, Bloom filter and counters are
        # journaled under data_dir/state/ and resumed after a kill -9.
        self._state: PeerState | None = None
        self.resumed: dict[str, float] | None = None  # what a restart found
        # URLs handed to us as fetched (url -> host): passed on with our own
        # rows when their hosts move again, since only we hold them now.
        self._seen_in: dict[str, str] = {}
        self._leaving = False
        self.handoffs_in = 0                  # seen URLs taken from hand-offs
        pol = cfg.politeness
        self._ip_politeness = bool(pol.ip_rate or pol.ip_concurrency)
        self._restart_starts: list[tuple[str, float]] = []

    # -- public ------------------------------------------------------------

    def stop(self) -> None:
        """Stop starting fetches; in-flight ones get ``STOP_GRACE`` seconds."""
        self._stopping = True
        self._wake.set()

    def cancel_in_flight(self) -> None:
        """Stop now: in-flight fetches are cancelled; results are still flushed."""
        self.stop()
        if self._workers is not None:
            self._workers.cancel_scope.cancel()

    @property
    def in_flight(self) -> int:
        return self._in_flight

    async def run(self) -> Summary:
        """Crawl until done, ``max_pages`` or ``stop()``; results flushed."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        crawl = self.cfg.crawl
        self._wall0 = wall0 = time.monotonic()
        fetcher = self._fetcher or Fetcher(crawl, self.resolver)
        async with ResultStore(
            DataDir(self.data_dir).results, self.peer_id,
            store_links=crawl.store_links, store_body=crawl.store_body,
            item_tables=self.cfg.extract.tables(),
        ) as store, fetcher:
            self._store = store
            self._fetcher = fetcher
            recovered = await self._open_state(store)
            try:
                await self._crawl(store, recovered)
            finally:
                self._state.close()  # type: ignore[union-attr]
            await store.flush()
        self.summary.elapsed = time.monotonic() - wall0
        self.summary.limits = self.limits.render(self.clock())
        self.summary.details = self._detail_lines()
        return self.summary

    async def _crawl(self, store: ResultStore, recovered) -> None:  # type: ignore[no-untyped-def]
        """The services (ring node, store writer, progress, snapshots) around the scheduler."""
        async with trio.open_nursery() as services:
            if self._cluster:
                from peer.cluster import ClusterNode

                spec = next((p for p in self.cfg.peers if p.id == self.peer_id), None)
                self.node = ClusterNode(
                    self.cfg, self.peer_id, self._address or spec.address,  # type: ignore[union-attr]
                    self._weight or (spec.weight if spec else 1.0), self)
                self.ring = self.node.ring()
                if spec is None:
                    # A peer not in cluster.toml joins a running ring: every
                    # host it owns had an owner before, who hands it over.
                    self._hold_from(self.ring.without_peer(self.peer_id), self.ring)
            if recovered is not None:
                self._resume(recovered)
            if self.node is not None:
                await services.start(self.node.run)
            self._seed()
            self._state.commit()  # type: ignore[union-attr]
            services.start_soon(store.run)
            services.start_soon(self._progress)
            services.start_soon(self._snapshots)
            async with trio.open_nursery() as workers:
                self._workers = workers
                await self._schedule(workers)
                if self._stopping and self._in_flight:
                    workers.cancel_scope.deadline = trio.current_time() + STOP_GRACE
            self._flush_pid()
            if self.node is not None and self.summary.stop_reason in (
                    StopReason.CLUSTER_DONE, StopReason.LEFT, StopReason.MAX_PAGES):
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

    # -- crash safety (issue 6) ------------------------------------------------

    async def _open_state(self, store: ResultStore):  # type: ignore[no-untyped-def]
        """Recover ``data_dir/state`` if a crawl was interrupted, and start its journal.

        Why a journal plus snapshots and not DuckDB tables: every queued
        URL, every finished page and every batch taken must be on disk before
        the next step (an ack, a fetch that must not repeat), which is one
        ``write`` of a few dozen bytes here against a transaction there;
        peer/state.py has the crash-ordering argument and the figures.
        """
        self._state = state = PeerState(DataDir(self.data_dir).state, self.peer_id, self.cfg.ring.name)
        rec = await trio.to_thread.run_sync(state.recover)
        counters: dict[str, float] = {}
        if rec is not None:
            self.bloom = rec.bloom
            # The file holds the policy it was written with; the config now in
            # force decides (an operator raises max_capacity and restarts).
            self.bloom.set_policy(self.cfg.bloom.growth, self.cfg.bloom.max_capacity)
            self._requested = int(rec.counters.get("pages", 0))
            counters = dict(rec.counters)
            # Pages done since the last snapshot whose rows DuckDB had not
            # written yet when the process died: their rows come back.
            have = {u for u, _ in await store.page_urls()}
            missing = [PageRow(*row) for row in rec.rows if row and row[0] not in have]
            for row in missing:
                store.add_page(row)
            await store.flush()
            # Politeness counts across the restart: the requests of the last
            # ceiling horizon, as the rows say they started (rule 9).
            self._restart_starts = await store.recent_starts(time.time() - CEILING_HORIZON)
            self.resumed = {"queued": len(rec.queued), "forwards": len(rec.forwards),
                            "rows_restored": len(missing), "generation": rec.generation,
                            "torn_bytes": rec.torn_bytes}
            log.warning("resuming the crawl from %s: %d queued URLs, %d to forward, %d result "
                        "rows restored%s", state.directory, len(rec.queued), len(rec.forwards),
                        len(missing), f", {rec.torn_bytes} bytes of a torn journal tail dropped"
                        if rec.torn_bytes else "")
        queued = list(rec.queued.items()) if rec is not None else []
        forwards = rec.forwards if rec is not None else []
        await trio.to_thread.run_sync(state.begin, self.bloom, queued, forwards, counters)
        return rec

    def _resume(self, rec) -> None:  # type: ignore[no-untyped-def]
        """Put a recovered queue back: ours into the frontier, the rest to its owners."""
        now = self.clock()
        state = self._state
        assert state is not None
        for url, depth in rec.queued.items():
            host = host_key(url)
            owner = self.ring.owner(host) if self.ring is not None else self.peer_id
            if owner == self.peer_id:
                self._push(url, host, depth, now)  # already in the Bloom filter
                self.limits.queued(host)
            else:
                self._pass_on(url, depth, owner)
        for url, depth in rec.forwards:
            # Like any URL handed to us: to its owner, or through our Bloom filter.
            self._discover(url, depth, now, relay=True)
        self._seed_starts(self._restart_starts, now)
        self._restart_starts = []
        state.commit()

    def _seed_starts(self, starts: list[tuple[str, float]], now: float) -> None:
        """Count request starts made before (epoch seconds) against our hosts' ceilings."""
        by_host: dict[str, list[float]] = {}
        offset = now - time.time()  # epoch -> this clock
        for host, t in starts:
            if self.ring is None or not len(self.ring) or self.ring.owner(host) == self.peer_id:
                by_host.setdefault(host, []).append(t + offset)
        for host, times in by_host.items():
            self.frontier.seed_starts(host, times, now)

    async def _snapshots(self) -> None:
        """A new snapshot when the journal is big or old, so recovery stays short."""
        state = self._state
        assert state is not None and self._store is not None
        last = trio.current_time()
        while True:
            await trio.sleep(5.0)
            if state.journal_bytes() < SNAPSHOT_BYTES and trio.current_time() - last < SNAPSHOT_SECONDS:
                continue
            # The rows of the pages done so far must be in DuckDB first: the
            # snapshot drops the journal that holds them (peer/state.py rule 5).
            await self._store.flush()
            queued = [(j.url, j.depth) for j in self.frontier.iter_queued()]
            queued += [(url, hd[1]) for url, hd in self._inflight.items()]
            forwards = self.node.outbox.queued().urls if self.node is not None else []
            stats = state.snapshot(self.bloom, queued, forwards, {"pages": self._requested})
            last = trio.current_time()
            log.info("state snapshot %s", stats)

    # -- scheduling --------------------------------------------------------

    def _seed(self) -> None:
        now = self.clock()
        for seed in self.cfg.crawl.seeds:
            self._discover(normalize(seed), 0, now)

    async def _schedule(self, workers: trio.Nursery) -> None:
        fr = self.frontier
        concurrency = self.cfg.crawl.concurrency
        max_pages = self.cfg.crawl.max_pages
        while True:
            if self._stopping:
                self.summary.stop_reason = StopReason.STOPPED
                return
            done_pages = self._requested
            cap = max_pages
            if self.node is not None and max_pages:
                # Cluster-wide: the others' gossiped counts plus ours, and this
                # round's share of the rest (Membership.page_cap).
                done_pages += self.node.others_pages()
                cap = self.node.page_cap
            if max_pages and done_pages >= max_pages:
                self.summary.stop_reason = StopReason.MAX_PAGES
                return
            now = self.clock()
            fr.roll_windows(now)
            # With max_pages, start no more than can still be written, so the
            # overshoot is bounded by the requests that end up retried.
            room = concurrency - self._in_flight
            if max_pages:
                mine = self._requested if self.node is not None else done_pages
                room = min(room, cap - mine - self._in_flight)
            job = fr.pop_ready(now) if room > 0 else None
            if job is not None:
                self._in_flight += 1
                workers.start_soon(self._work, job)
                continue
            if self._leaving:
                # Fetch nothing more. What comes back to the frontier (a job
                # that waited on robots.txt) goes to its owner like the rest.
                if len(fr):
                    self.set_ring(self.ring)
                if self.node is not None and self.node.left():
                    self.summary.stop_reason = StopReason.LEFT
                    return
                self._wake = trio.Event()
                with trio.move_on_after(HOLD_POLL):
                    await self._wake.wait()
                continue
            if self._in_flight == 0 and len(fr) == 0:
                if self.node is None:
                    self.summary.stop_reason = StopReason.FRONTIER_EMPTY
                    return
                if self.node.idle() and self.node.done():
                    self.summary.stop_reason = StopReason.CLUSTER_DONE
                    return
            # Sleep until a host can start, or a fetch ends, or a URL arrives.
            self._wake = trio.Event()
            when = fr.next_ready_at() if room > 0 else None
            with trio.move_on_at(math.inf if when is None else when):
                await self._wake.wait()

    async def _work(self, job: Job) -> None:
        self._inflight[job.url] = (job.host, job.depth)
        self._marks[job.url] = 0
        try:
            await self._handle(job)
        except Exception as exc:  # noqa: BLE001 - rule 8: one URL's bug, not the peer's
            self._internal(job, exc)
        finally:
            self._marks.pop(job.url, None)
            self._inflight.pop(job.url, None)
            self._in_flight -= 1
            self._wake.set()

    def _internal(self, job: Job, exc: Exception) -> None:
        """Rule 8: the job's row says ``internal``, its type is counted, the job is done."""
        name = type(exc).__name__
        self.summary.internal[name] += 1
        if name not in self._internal_logged:
            self._internal_logged.add(name)
            log.error("internal error %s on %s: recorded as 'internal', the crawl goes on "
                      "(further %s errors are counted in the summary, not logged)",
                      name, job.url, name, exc_info=exc)
        marks = self._marks.get(job.url, 0)
        now = self.clock()
        if marks & _ROBOTS:
            self.robots.cancelled(job.host)  # the next job of the host asks again
        if not marks & (_ROW | _REQUEUED):
            self._attempts.pop(job.url, None)
            self._hops.pop(job.url, None)
            self._row(job, None, error="internal")
        if not marks & _DONE:
            self._finish(job, now, Outcome.FAILED)

    def _finish(self, job: Job, now: float, outcome: Outcome) -> None:
        """``Frontier.done`` for the job, once (rule 1)."""
        if job.url in self._marks:
            self._marks[job.url] |= _DONE
        self.frontier.done(job.host, now, outcome)

    def _requeue(self, job: Job, now: float, not_before: float) -> None:
        if job.url in self._marks:
            self._marks[job.url] |= _REQUEUED
        self.frontier.requeue(job, now, not_before)

    # -- one job -----------------------------------------------------------

    async def _handle(self, job: Job) -> None:
        if self._handed_seen and job.url in self._handed_seen:
            # Fetched by the host's previous owner, which handed it over.
            self._handed_seen.discard(job.url)
            self._journal_done(job.url, None)
            self._finish(job, self.clock(), Outcome.UNREACHED)
            return
        if self.ring is not None and self.node is not None and len(self.ring):
            owner = self.ring.owner(job.host)
            if owner != self.peer_id:
                # Came back after its host moved (a retry, a robots.txt
                # wait): it is the new owner's now.
                self._pass_on(job.url, job.depth, owner)
                self.commit_state()
                self._finish(job, self.clock(), Outcome.UNREACHED)
                return
        if self.limits.given_up(job.host):
            # Came back (a retry, a robots.txt wait) after its host was given up.
            self._row(job, None, error="retry_after")
            self._finish(job, self.clock(), Outcome.UNREACHED)
            return
        if self._holds and self._held(job.host):
            now = self.clock()
            self._requeue(job, now, now + HOLD_POLL)
            self._finish(job, now, Outcome.UNREACHED)
            return
        if self.cfg.crawl.obey_robots:
            verdict = self.robots.check(job.host, job.url, self.clock())
            if verdict is Verdict.FETCH:
                await self._fetch_robots(job)
                return
            if verdict is Verdict.PENDING or verdict is Verdict.UNREACHABLE:
                # Held, not dropped: the robots.txt answer is on its way, or
                # the server may be back by the retry (RFC 9309 §2.3.1.4).
                now = self.clock()
                later = now + ROBOTS_PENDING_WAIT
                if verdict is Verdict.UNREACHABLE:
                    later = max(later, self.robots.retry_at(job.host))
                self._requeue(job, now, later)
                self._finish(job, now, Outcome.UNREACHED)
                return
            if verdict is Verdict.DISALLOW:
                # By the rules, or because robots.txt could not be read (rule 7).
                self._row(job, None, error=self.robots.failure(job.host) or "robots")
                self._finish(job, self.clock(), Outcome.UNREACHED)
                return
            delay = self.robots.crawl_delay(job.host)
            if delay:
                # Again at every start: the frontier forgets idle hosts, and
                # their Crawl-delay floor with them.
                self.frontier.set_min_delay(job.host, delay, self.clock())
        res = await self._fetcher.fetch(job.url)  # type: ignore[union-attr]
        if res.address is not None:
            self.frontier.set_host_ip(job.host, res.address, self.clock())
        parsed = None
        if res.status is not None and 200 <= res.status < 300 and is_html(res.content_type, res.body):
            # A small page on the loop (INLINE_PAGE); the rest in a worker
            # thread: lexbor releases the GIL while it parses, and a crafted
            # page can take it seconds or more (deep nesting, huge <select>s:
            # tests/test_hostile.py); gossip and the other fetches must go on
            # meanwhile.
            body = res.body
            if len(body) <= INLINE_PAGE and body.count(b"<") <= INLINE_TAGS:
                parsed = parse_response(job.url, body, res.charset, self.cfg.extract,
                                        self.cfg.crawl.max_links_per_page)
            elif len(body) > HEAVY_PAGE:
                async with self._heavy:
                    parsed = await self._parse(job, res)
            else:
                parsed = await self._parse(job, res)
        now = self.clock()
        outcome = self._outcome(job, res, now, parsed)
        self._finish(job, now, outcome)

    async def _parse(self, job: Job, res: FetchResult) -> Parsed:
        return await trio.to_thread.run_sync(
            parse_response, job.url, res.body, res.charset, self.cfg.extract,
            self.cfg.crawl.max_links_per_page, limiter=self._parsers)

    async def _fetch_robots(self, job: Job) -> None:
        if job.url in self._marks:
            self._marks[job.url] |= _ROBOTS
        host = job.host
        scheme = job.url.split(":", 1)[0]
        try:
            # The first 500 KiB however long the file (RFC 9309 §2.5): a
            # prefix with ``truncated`` set, not a too_large refusal.
            res = await self._fetcher.fetch(  # type: ignore[union-attr]
                self.robots.robots_url(host, scheme), max_body=MAX_ROBOTS_BYTES, prefix_ok=True)
        except trio.Cancelled:
            self.robots.cancelled(host)
            raise
        now = self.clock()
        self.summary.robots_fetches += 1
        if res.address is not None:
            self.frontier.set_host_ip(host, res.address, now)
        status, error = res.status, res.error
        if status is not None and (not 200 <= status < 300 or error is None
                                   or (error == "too_large" and res.truncated)):
            # An answer: its status decides (rules 2-5 of peer/robots.py); a
            # 2xx cut at the limit is the prefix §2.5 asks us to parse.
            self.robots.loaded(host, status, res.body, now, truncated=res.truncated)
        else:
            cause = error or "unknown"
            wait = None
            if status in (429, 503) and res.retry_after is not None:
                # The server said when: ask again then, not after robots_retry.
                wait = min(res.retry_after, self.limits.max_retry_after)
            self.robots.failed(host, now, cause, final=cause in ROBOTS_FINAL, retry_after=wait)
        failures = self.robots.failures(host)
        outcome = (Outcome.UNREACHED if error in UNREACHED_KINDS and status is None
                   else Outcome.FETCHED if status is not None else Outcome.FAILED)
        if not failures:
            self.limits.release(host, Hold.ROBOTS)
            delay = self.robots.crawl_delay(host)
            if delay:
                self.frontier.set_min_delay(host, delay, now)
        else:
            why = f"HTTP {status}" if status is not None and error is None else (error or "unknown")
            final = self.robots.failure(host)
            queued = self.frontier.host_queued(host) + 1
            if final is not None:
                # No retry left, or none can help: the host's URLs are
                # recorded with the cause now rather than held (rule 7).
                self.limits.release(host, Hold.ROBOTS)
                log.warning("robots.txt of %s could not be read (%s, failure %d); its %d queued URLs "
                            "are recorded as %r", host, why, failures, queued, final)
                self._row(job, None, error=final)
                for other in self.frontier.remove_host(host):
                    self._attempts.pop(other.url, None)
                    self._hops.pop(other.url, None)
                    self._row(other, None, error=final)
                self._finish(job, now, outcome)
                return
            retry_at = self.robots.retry_at(host)
            self.limits.hold(host, Hold.ROBOTS, retry_at)
            log.warning("robots.txt of %s could not be read (%s, failure %d of %d); its %d queued "
                        "URLs wait for the next try in %.0fs", host, why, failures,
                        self.robots.max_failures, queued, retry_at - now)
        # The robots.txt request took this job's slot; the job goes back to
        # the front of its queue and waits for the host's delay like any other.
        self._requeue(job, now, now)
        self._finish(job, now, outcome)

    def _outcome(self, job: Job, res: FetchResult, now: float, parsed: Parsed | None = None) -> Outcome:
        """Decide what a fetch result means; returns how the request counts."""
        status = res.status
        host = job.host
        limits = self.limits
        retryable = res.error in RETRYABLE or (status is not None and status >= 500) or status == 429
        retry_after = None
        if retryable and status is not None:
            # Cut to max_retry_after; a host that keeps asking for more is given up.
            retry_after, gave_up = limits.retry_after(host, res.retry_after)
            if gave_up:
                self._give_up(host, res.retry_after)
        elif status is not None:
            limits.answered(host)
        given_up = retryable and limits.given_up(host)
        if retryable and not given_up:
            if status in (429, 503):
                self.frontier.backoff(host, now, retry_after)
                if retry_after:
                    limits.hold(host, Hold.RETRY_AFTER, now + retry_after)
            if self._retry(job, now, retry_after):
                return Outcome.FETCHED if status is not None else Outcome.FAILED
        self._attempts.pop(job.url, None)
        if status is None:
            self._row(job, res, error=res.error or "unknown")
            return Outcome.UNREACHED if res.error in UNREACHED_KINDS else Outcome.FAILED
        title, n_links, links = None, 0, ()
        final_url = job.url
        error = res.error or ("retry_after" if given_up else None)
        if 300 <= status < 400 and res.location:
            target = normalize_link(job.url, res.location)
            if target is not None:
                final_url = target
                hops = self._hops.pop(job.url, 0) + 1
                if hops > self.cfg.crawl.max_redirects:
                    error = "too_many_redirects"
                else:
                    self._discover(target, job.depth, now, hops)
        elif parsed is not None:
            page = parsed.page
            self._extracted(job.url, parsed)
            title, n_links = page.title, page.n_links
            links = tuple(limits.cut_links(page.links, page.n_links))
            max_depth = self.cfg.crawl.max_depth
            if not page.nofollow and (not max_depth or job.depth < max_depth):
                for link in links:
                    self._discover(link, job.depth + 1, now)
        self._hops.pop(job.url, None)
        self._row(job, res, final_url=final_url, title=title, n_links=n_links, error=error, links=links)
        return Outcome.FETCHED

    def _give_up(self, host: str, asked: float | None) -> None:
        """Rule 6: the host asked for too long a wait too often; its queued URLs get rows."""
        jobs = self.frontier.remove_host(host)
        log.warning("giving up %s: Retry-After %.0fs, over politeness.max_retry_after (%gs), %d "
                    "times in a row; its %d queued URLs are recorded as 'retry_after' and no more "
                    "of its URLs are queued", host, asked or 0.0, self.limits.max_retry_after,
                    self.limits.strikes, len(jobs))
        for job in jobs:
            self._attempts.pop(job.url, None)
            self._hops.pop(job.url, None)
            self._row(job, None, error="retry_after")

    def _extracted(self, url: str, parsed: Parsed) -> None:
        fetched_at = time.time()
        if self._store is not None:
            for table, row in parsed.items:
                self._store.add_item(table, url, fetched_at, row)
        self.summary.items += len(parsed.items)
        for err in parsed.errors:
            # A bug in the user's function must not stop the crawl; the first
            # few are logged, all are counted in the summary.
            self.summary.extract_errors += 1
            if self.summary.extract_errors <= 5:
                log.warning("extraction failed on %s: %s", url, err)

    def _retry(self, job: Job, now: float, retry_after: float | None) -> bool:
        n = self._attempts.get(job.url, 0)
        # Leaving: the URL is in the hand-off's seen set, so a retry queued
        # now would be dropped by its new owner; record the failure instead.
        if n >= MAX_RETRIES or self._stopping or self._leaving:
            return False
        self._attempts[job.url] = n + 1
        wait = RETRY_BASE * 2**n * self._rng.uniform(0.5, 1.5)
        if retry_after is not None:
            wait = max(wait, retry_after)
        self._requeue(job, now, now + wait)
        self.summary.retries += 1
        return True

    # -- discovery and results ----------------------------------------------

    def _discover(self, url: str, depth: int, now: float, hops: int = 0, relay: bool = False) -> None:
        if not self.scope.allows(url, depth):
            return
        limits = self.limits
        if limits.check_url(url) is not None:
            return  # too long, or a repeating path: the same verdict at any peer
        if self.ring is not None:
            owner = self.ring.owner(host_key(url))
            if owner != self.peer_id:
                # A URL we were handed (relay) must not be dropped by the
                # sender's "recently forwarded" cache: it may be the only copy.
                self.node.forward(url, depth, owner, relay=relay)  # type: ignore[union-attr]
                if self._state is not None:
                    self._state.forwarded(((url, depth),))
                return
        host = host_key(url)
        cap = limits.admit(host)
        if cap is not None:
            # Not put in the Bloom filter (a link farm would fill it); a URL
            # queued before is no drop.
            if url not in self.bloom:
                limits.dropped(cap)
            return
        if not self.bloom.add(url):
            return
        limits.queued(host)
        if self._state is not None:
            self._state.queued(url, depth)
        if hops:
            self._hops[url] = hops
        self._push(url, host, depth, now)
        self._wake.set()

    def _push(self, url: str, host: str, depth: int, now: float) -> None:
        """Queue ``url``; with per-IP politeness, a host whose address is known shares its IP's budget."""
        fr = self.frontier
        fr.push(url, host, depth, now)
        if self._ip_politeness and fr.host_ip(host) is None:
            # Static entries and cached answers are known before the first
            # fetch; otherwise the first fetch resolves it (docs/politeness.md).
            ip = self.resolver.peek(hostname(host))
            if ip is not None:
                fr.set_host_ip(host, ip, now)

    def _row(
        self, job: Job, res: FetchResult | None, *, final_url: str | None = None,
        title: str | None = None, n_links: int = 0, error: str | None = None,
        links: tuple[str, ...] = (),
    ) -> None:
        if job.url in self._marks:
            self._marks[job.url] |= _ROW
        s = self.summary
        s.pages += 1
        if res is not None:
            self._requested += 1
        if res is not None and res.status is not None:
            s.fetched += 1
            s.by_status[res.status] += 1
            s.bytes += len(res.body)
        if error:
            s.errors[error] += 1
        row = PageRow(
            url=job.url,
            final_url=final_url or job.url,
            host=job.host,
            status=None if res is None else res.status,
            content_type=None if res is None else res.content_type,
            bytes=0 if res is None else len(res.body),
            title=title,
            n_links=n_links,
            depth=job.depth,
            fetched_at=time.time(),
            elapsed_ms=0.0 if res is None else res.elapsed * 1000.0,
            error=error,
            peer=self.peer_id,
        )
        body = res.body if (res is not None and self.cfg.crawl.store_body) else None
        self._journal_done(row.url, row)
        if self._store is not None:
            self._store.add_page(row, body=body, links=links if self.cfg.crawl.store_links else ())

    def _journal_done(self, url: str, row: PageRow | None) -> None:
        """The URL left this peer's queue: fetched (with its row) or handed on."""
        if self._state is not None:
            self._state.done(url, None if row is None else [getattr(row, f) for f in ROW_FIELDS])
            # Right away: a page done but not on disk would be fetched again
            # after a kill, and only those in flight may be (issue 6).
            self._state.commit()

    def _flush_pid(self) -> None:
        samples = self.frontier.drain_trace()
        if samples and self._store is not None:
            self._store.add_pid(samples, self.cfg.politeness.setpoint)

    # -- the ring's side -----------------------------------------------------

    def accept(self, url: str, depth: int) -> None:
        """A URL forwarded to us (or returned by a re-route): route, dedupe, queue."""
        try:
            url = normalize(url)
        except URLError:
            return
        self._discover(url, depth, self.clock(), relay=True)

    def _pass_on(self, url: str, depth: int, owner: str) -> None:
        """A URL queued here whose host is now ``owner``'s: it travels on and leaves our queue."""
        self.node.forward(url, depth, owner, relay=True)  # type: ignore[union-attr]
        if self._state is not None:
            self._state.forwarded(((url, depth),))
            self._state.done(url, None)

    def take_back(self, url: str, depth: int) -> None:
        """A URL of ours that was on its way to a peer now gone (``Outbox.reroute``).

        It may already be in our Bloom filter (it was queued here before its
        host moved away, or recovered so), and it was never taken by
        anyone: it is queued without the filter's say.
        """
        host = host_key(url)
        if self.ring is not None and len(self.ring) and self.ring.owner(host) != self.peer_id:
            self.accept(url, depth)
            return
        self.bloom.add(url)
        self._push(url, host, depth, self.clock())
        self.limits.queued(host)
        if self._state is not None:
            self._state.queued(url, depth)
        self._wake.set()

    def accept_seen(self, url: str) -> None:
        """A URL another peer already fetched for a host now ours (hand-off)."""
        self.handoffs_in += 1
        self._seen_in[url] = host_key(url)
        if self._state is not None:
            self._state.seen(url)
        if not self.bloom.add(url):
            # Already here: queued (it came by another path before the
            # hand-off did), in flight, or done. A queued one must not run.
            self._handed_seen.add(url)

    def set_ring(self, ring) -> None:  # type: ignore[no-untyped-def]
        """The live member set changed: hosts no longer ours go to their owners."""
        old, self.ring = self.ring, ring
        if len(ring):
            # Hosts are placed by a hash of their name, not of their IP, so
            # this peer owns about its ring share of any IP's hosts: its share
            # of the IP's budget (BUbiNG divides by the number of agents;
            # this is the same for equal weights and follows unequal ones).
            self.frontier.set_default_ip_share(ring.shares().get(self.peer_id, 1.0))
        for host in self.frontier.queued_hosts():
            owner = ring.owner(host)
            if owner != self.peer_id:
                for job in self.frontier.remove_host(host):
                    self._pass_on(job.url, job.depth, owner)
        if old is not None and self.peer_id in ring and set(old) != set(ring):
            self._hold_from(old, ring)
        self._wake.set()

    # -- hand-off (issue 6) ----------------------------------------------------

    def _hold_from(self, old, ring) -> None:  # type: ignore[no-untyped-def]
        """Hold the hosts gained from live previous owners until their HandoffDone."""
        node = self.node
        assert node is not None
        members = node.membership.members()
        if not len(old):
            return
        until = self.clock() + node.hold_timeout
        waiting = {p: until for p in old if p != self.peer_id
                   and p in members and members[p].state is not MemberState.DEAD}
        if waiting:
            self._holds.append((old, waiting))

    def _held(self, host: str) -> bool:
        now = self.clock()
        held = False
        node = self.node
        for old, waiting in self._holds:
            prev = old.owner(host)  # type: ignore[attr-defined]
            until = waiting.get(prev)
            if until is None:
                continue
            m = node.membership.members().get(prev) if node is not None else None
            if now >= until or (m is not None and m.state is MemberState.DEAD):
                if now >= until:
                    log.warning("no hand-off from %s after %.0fs; fetching its former hosts",
                                prev, node.hold_timeout if node is not None else 0.0)
                del waiting[prev]
                continue
            held = True
        self._holds = [(o, w) for o, w in self._holds if w]
        return held

    def handoff_done(self, sender: str) -> None:
        """``sender`` handed us everything for the current ring: release its hosts."""
        for _, waiting in self._holds:
            waiting.pop(sender, None)
        self._holds = [(o, w) for o, w in self._holds if w]
        self._wake.set()

    async def handoff_seen(self, old, ring) -> int:  # type: ignore[no-untyped-def]
        """Queue, for their new owners, the URLs fetched here of hosts that moved.

        The seen set cannot be read out of a Bloom filter, so it comes from
        the results (``pages``, flushed first) plus the fetches in flight.
        A host counts as moved when its owner differs between the two rings:
        rows of hosts this peer handed over before go along too when they
        move again, since their next owner had them only from us.
        """
        node = self.node
        if node is None or self._store is None:
            return 0
        # In flight now: taken before the query, since a fetch that ends
        # during it writes a row the query may not see.
        inflight = [(url, hd[0]) for url, hd in self._inflight.items()]
        rows = await self._store.page_urls()
        rows.extend(inflight)
        rows.extend(self._seen_in.items())
        me = self.peer_id
        owners: dict[str, tuple[str, bool]] = {}
        now = trio.current_time()
        n = 0
        for url, host in rows:
            got = owners.get(host)
            if got is None:
                new = ring.owner(host) if len(ring) else me
                moved = new != me and (old is None or old.owner(host) != new)
                got = owners[host] = (new, moved)
            if got[1]:
                node.outbox.add_seen(url, got[0], now)
                n += 1
        return n

    def handoff_starts(self, old, ring) -> dict[str, list[tuple[str, float]]]:  # type: ignore[no-untyped-def]
        """{new owner: [(host, request start in epoch seconds)]} of the hosts that moved away.

        The frontier keeps a host's starts for the ceiling's horizon after it
        leaves our queue (``remove_host``), so they are still here when the
        hand-off runs; the new owner seeds its ceiling with them (rule 9).
        """
        out: dict[str, list[tuple[str, float]]] = {}
        if not len(ring):
            return out
        me, fr = self.peer_id, self.frontier
        offset = time.time() - self.clock()
        for host in fr.known_hosts():
            new = ring.owner(host)
            if new == me or (old is not None and len(old) and old.owner(host) == new):
                continue
            for t in fr.recent_starts(host):
                if len(host) <= MAX_HOST_KEY:
                    out.setdefault(new, []).append((host, t + offset))
        return out

    def seed_host_starts(self, starts) -> None:  # type: ignore[no-untyped-def]
        """The previous owner's last request starts of hosts now ours (epoch seconds)."""
        self._seed_starts(list(starts), self.clock())
        self._wake.set()

    def commit_state(self) -> None:
        """Make what was taken so far survive a kill -9 (before an ack goes out)."""
        if self._state is not None:
            self._state.commit()

    def leave(self) -> None:
        """Leave the ring gracefully: hand everything over, then stop (issue 6)."""
        if self.node is None or self._leaving:
            if self.node is None:
                self.stop()
            return
        self._leaving = True
        self.node.leave()
        self._wake.set()

    def locally_idle(self) -> bool:
        return self._in_flight == 0 and len(self.frontier) == 0

    @property
    def leaving(self) -> bool:
        return self._leaving

    @property
    def pages_requested(self) -> int:
        return self._requested

    def poke(self) -> None:
        """Re-check termination and limits (the gossip brought news)."""
        self._wake.set()

    def status_figures(self) -> dict:
        s = self.summary
        elapsed = max(time.monotonic() - self._wall0, 1e-9)
        out = self.node.outbox.stats() if self.node is not None else None
        return {
            "pages": self._requested, "rate": s.pages / elapsed, "frontier": len(self.frontier),
            "hosts": self.frontier.n_hosts,
            "forwarded_out": getattr(out, "forwarded", 0),
            "forwarded_in": self.node.inbox.received if self.node is not None else 0,
            "dns_hit_rate": self.resolver.stats().hit_rate, "bloom_fill": self.bloom.fill_ratio(),
            # Caps hit and hosts held (cap.<key>, held.<kind>) and internal
            # errors: counters that cluster.py sends with the status reply.
            "limits": self.limits_figures(),
        }

    def limits_figures(self) -> dict[str, int]:
        """Non-zero cap hits, held hosts, malformed answers, ceiling holds, internal errors, by name."""
        out = self.limits.figures(self.clock())
        internal = sum(self.summary.internal.values())
        if internal:
            out["error.internal"] = internal
        for reason, n in self._malformed().items():
            if n:
                out[f"malformed.{reason}"] = int(n)
        fr = self.frontier
        if fr.ceiling_holds:
            out["polite.ceiling_holds"] = fr.ceiling_holds
        if fr.ip_ceiling_holds:
            out["polite.ip_ceiling_holds"] = fr.ip_ceiling_holds
        if self.bloom.num_slices > 1:
            out["bloom.slices"] = self.bloom.num_slices
        if self.bloom.full:
            out["bloom.full"] = 1
        return out

    def _malformed(self) -> dict[str, int]:
        """The fetcher's counts of header values it ignored or clamped, by reason."""
        stats = getattr(self._fetcher, "stats", None)
        figures = stats() if callable(stats) else {}
        got = figures.get("malformed") if isinstance(figures, dict) else None
        return dict(got) if isinstance(got, dict) else {}

    def _detail_lines(self) -> list[str]:
        """The summary's lines on remote input, politeness and the seen set (only what happened)."""
        lines = []
        bad = self._malformed()
        excess = bad.pop("excess", 0)
        if bad or excess:
            parts = []
            if bad:
                parts.append("malformed headers ignored or clamped: "
                             + ", ".join(f"{k} {n}" for k, n in sorted(bad.items())))
            if excess:
                parts.append(f"bytes past a response's end {excess} (connection closed)")
            lines.append("remote input: " + "; ".join(parts))
        fr = self.frontier
        if fr.ceiling_holds or fr.ip_ceiling_holds or fr.n_ips:
            lines.append(f"politeness: starts held by the 1 s/5 s ceiling {fr.ceiling_holds} "
                         f"(per IP {fr.ip_ceiling_holds}); IP addresses paced {fr.n_ips}")
        b = self.bloom
        if b.num_slices > 1 or b.full:
            lines.append(f"seen set: {b.count:,} URLs in {b.num_slices} Bloom slices "
                         f"({b.total_capacity:,} capacity{', full' if b.full else ''}), "
                         f"estimated false positives {b.estimated_fpr():.3%} (bound {b.fpr_bound:.3%})")
        return lines

    # -- progress ------------------------------------------------------------

    def progress_line(self) -> str:
        s = self.summary
        elapsed = time.monotonic() - self._wall0
        dns = self.resolver.stats()
        held = self.limits.held(self.clock())
        hits = self.limits.hits
        capped = sum(hits[c] for c in (Cap.URL_LENGTH, Cap.PATH_REPEAT, Cap.URLS_PER_HOST,
                                       Cap.LINKS_PER_PAGE, Cap.GIVEN_UP))
        return (
            f"pages {s.pages} ({s.pages / elapsed if elapsed else 0.0:.1f}/s), "
            f"frontier {len(self.frontier)}, hosts active {self.frontier.hosts_active}, "
            f"in flight {self._in_flight}, errors {sum(s.errors.values())}, "
            f"dns hit rate {dns.hit_rate:.0%}, bloom fill {self.bloom.fill_ratio():.2%}"
            + (f" (slice {self.bloom.num_slices})" if self.bloom.num_slices > 1 else "")
            + (f", held hosts: robots.txt {held[Hold.ROBOTS]}, Retry-After {held[Hold.RETRY_AFTER]}"
               if any(held.values()) else "")
            + (f", capped {capped}" if capped else "")
        )

    async def _progress(self) -> None:
        while True:
            await trio.sleep(self.progress_interval)
            self._flush_pid()
            log.info("%s", self.progress_line())
