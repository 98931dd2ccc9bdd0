"""The crawl engine of one peer: the trio driver around ``peer.core.door.peer.PeerCore``.

This module is the scheduler and the effects' table; the rest of the
engine is parts that own their state, one module each, built here and
handed the few calls they need: ``durability`` (the journal, snapshots, the
spill store: rules 9-10), ``seenfiles`` (the exact seen set's files),
``cookies`` (the cookie jar's file), ``ringface`` (the sockets a ring
member serves, the ring's effects, moved queues), ``reporting`` (status,
progress), ``sitemapfetch`` (a sitemap read and parsed), ``revisits``
(visits recorded, revisits archived) and ``parsing`` (the parser threads:
where a page is parsed).

Layers, top down (httpcore's shape: the driver does I/O, the core decides):

- this module: the nursery, the scheduler loop, one task per job, the
  parser threads, the result store (DuckDB), the WARC files, and the
  parts above;
- ``peer.core.door.peer.PeerCore``, the one core object held here: the crawl
  core and the ring node in one, pure. Each of its calls returns one
  ordered list of effects, the crawl's (``Forward``, ``Queued``, ``Row``...)
  and the ring's (``Send``, ``Reply``...) alike, with the durability points
  among them (``Commit``, its rule 1); this module carries them out
  through one ``{effect type: handler}`` table and commits nowhere else;
- ``peer.core.crawl.core.CrawlCore`` inside it: every crawl decision (scope,
  Bloom filter, frontier, robots cache, limits, retries, redirects,
  hand-off holds, ``max_pages``);
- ``peer.net.fetcher`` / ``peer.net.resolver``: one attempt, errors as data.

The path of one URL, as this module reads: a URL arrives (a seed, a link,
a batch from the ring) -> ``PeerCore.discover`` -> the scheduler asks
``PeerCore.next`` and starts ``_work(job)`` -> ``PeerCore.admit`` says
fetch, robots.txt first, requeue, drop or pass on -> the fetcher -> the
parser thread when ``PeerCore.fetched`` says HTML -> ``PeerCore.on_result``
-> its effects (URLs of other owners already in the Outbox), here: rows
to the store and journal, then the ``Commit`` after them.

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
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

import trio

from peer.core.config.cluster import ClusterConfig
from peer.core.crawl.core import (
    MAX_RETRIES,
    Checking,
    Done,
    Fetch,
    FetchRobots,
    FetchSitemap,
    Finished,
    Forward,
    Items,
    Queued,
    Refused,
    Requeued,
    Reverdict,
    Row,
    Seen,
    Start,
    StopReason,
    Summary,
    Warn,
)
from peer.core.crawl.decisions import Hinted
from peer.core.crawl.limits import Limits
from peer.core.crawl.robots import MAX_ROBOTS_BYTES
from peer.core.frontier.frontier import Job
from peer.core.http.result import FetchResult
from peer.core.door.effects import SeedsAt, StateKept
from peer.core.door.peer import Commit, PeerCore, ReadFetched, ReadHosts
from peer.core.seen.bloom import BloomFilter
from peer.errors import ConfigError, StorageError
from peer.engine.archive import Archive
from peer.engine.cookies import CookieSaves
from peer.engine.durability import Durability
from peer.engine.effects import Effects
from peer.engine.parsing import Parsing
from peer.engine.reporting import Reporting
from peer.engine.results import Results
from peer.core.run.layout import DataDir
from peer.engine.revisits import Revisits
from peer.engine.ringface import RingFace, curve_keys
from peer.engine.seedsfile import SeedsFile
from peer.engine.seenfiles import SeenFiles
from peer.engine.sitemapfetch import SitemapFetch
from peer.net.fetcher import Fetcher
from peer.net.resolver import Resolver
from peer.results.schema import PageRow
from peer.results.store import ResultStore
from peer.state.journal import Recovered, SnapshotStats
from peer.core.door.settings import decode_doc
from peer.core.door.settings import initial as initial_settings
from peer.state.settingsfile import read_settings, write_settings
from peer.state.voterfile import read_voters, write_voters
from ring.addresses import bind_address
from ring.actions import (Granted, Log, Released, Reply, RestartAsked, Send, SettingsChanged, SettingsMismatch,
                          StatusAsked, VotersChanged)
from ring.messages import SeedAddReply, SeedAddRequest
from ring.membership.budget import grants_to_counters
from ring.status import StatusFigures

__all__ = ["Crawler", "Summary", "MAX_RETRIES"]

log = logging.getLogger("peer.engine")

#: Gossip rounds a peer keeps answering after it saw the cluster finish.
LINGER_ROUNDS = 6
#: Grace for in-flight fetches after stop() before they are cancelled.
STOP_GRACE = 5.0
#: Recovered URLs put back a turn of the loop (``_drain_recovered``): about 20 ms of it.
RECOVER_BATCH = 10_000
#: The stop reasons after which a ring peer lingers (see ``_crawl``).
_LINGER_AFTER = (StopReason.CLUSTER_DONE, StopReason.LEFT, StopReason.MAX_PAGES)
#: Gossip rounds a peer stopping for a planned restart waits, at most, for every live
#: member to answer its announce (ring.membership.restarts rule 1): each round it asks
#: again those that did not. A member still silent then is unreachable: it finds us
#: dead as it would any silent peer.
ANNOUNCE_ROUNDS = 4


class FetchPort(Protocol):
    """What the engine asks of a fetcher (``peer.net.fetcher.Fetcher``, or a test's fake web)."""

    async def fetch(self, url: str, *, max_body: int | None = None, prefix_ok: bool = False,
                    cookie: str | None = None, headers: tuple[tuple[str, str], ...] = ()) -> FetchResult: ...
    async def __aenter__(self) -> object: ...
    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> object: ...


class Crawler:
    """One peer's crawl of the hosts it owns (in a ring of one: all of them)."""

    def __init__(
        self,
        cfg: ClusterConfig,
        peer_id: str,
        *,
        data_dir: Path | None = None,
        fetcher: FetchPort | None = None,
        progress_interval: float = 5.0,
        rng: random.Random | None = None,
        cluster: bool = False,
        address: str | None = None,
        weight: float | None = None,
        bind: str | None = None,
        rejoining: bool = False,
        retry_failed: bool = False,
    ) -> None:
        # {machine} in a User-Agent: the sites see one comment per machine (peer.core.config.workers).
        cfg = cfg.for_peer(peer_id)
        self.cfg = cfg
        self.peer_id = peer_id
        self.data_dir = Path(data_dir or cfg.data_dir(peer_id))
        self.resolver = Resolver(cfg.dns, allow_private=cfg.crawl.allow_private)
        #: The one core: the crawl's decisions and, in a ring, the ring node's (peer/core/door/peer.py).
        self.peer = PeerCore.alone(cfg, peer_id, rng=rng, peek_ip=self.resolver.peek)
        self._fetcher = fetcher
        # trio's clock: the frontier's ready times are what trio sleeps on, and
        # tests swap in trio.testing.MockClock to run politeness delays at once.
        self.clock: Callable[[], float] = trio.current_time
        self._wake = trio.Event()
        #: Where a page is parsed: on the loop, in a thread, in the heavy one (peer/engine/parsing.py).
        self.parsing = Parsing(self.peer)
        # One page's CPU work at a time on the loop (parse, links, journal).
        # trio runs every task that is ready in one batch before it looks at
        # its sockets again, so with 64 fetches done at once each batch held
        # 64 pages' work: ~1.3 s on the loaded 2-core box, and a ping waited
        # that long twice (its receipt, its answer's), past suspect_after
        # (scripts/bench_scale.py: both peers suspected 3 s in). Behind this
        # lock a batch holds one page's work, and a waiting fetch costs no
        # CPU: the pages per second stay what the core can do.
        self._turn = trio.Lock()
        #: The WARC files ([warc] enabled; peer/engine/archive.py), opened by run().
        self.archive: Archive | None = None
        self._workers: trio.Nursery | None = None
        #: Why a stop is a planned restart (``ring.membership.restarts``): "" (none), "signal"
        #: (a stop without --leave) or "ring restart" (``ring restart``: exit EXIT_RESTART).
        self.restart_reason = ""
        #: ``ring restart`` asked: exit with ``peer.errors.EXIT_RESTART`` for the service manager to start us again.
        self.exit_for_restart = False
        # In a ring of several peers the core joins a ring node and the
        # sockets serve it; alone, every host is ours and there is neither.
        self._cluster = cluster
        self._address = address
        self._bind = bind  # a joiner's --bind; a listed peer's is its [[peer]] bind
        self._weight = weight
        #: ``--retry-failed``: this peer's failed pages queued again at the start (peer/core/crawl/failedpages.py).
        self._retry_failed = retry_failed
        self.started = time.time()  # epoch seconds, for stats.json
        # The one table for every effect the core returns (peer/engine/effects.py).
        self.effects = effects = Effects(after=self._after_effects)
        carry = self._apply = effects.carry
        # The parts, each owning its state and handed the calls it needs.
        peer, now = self.peer, self._now
        # rejoining: the last run left the ring gracefully (peer/core/run/runs.py rule 4).
        self.durability = journal = Durability(cfg, peer_id, self.data_dir, peer, rejoining=rejoining)
        self.seen = SeenFiles(cfg, self.data_dir, peer, now, carry)
        self.cookies = CookieSaves(peer_id, self.data_dir, peer)
        self.reporting = Reporting(peer, now, self.resolver, fetcher_stats=self._fetcher_stats,
                                   archive=lambda: self.archive, progress_interval=progress_interval)
        self.results = results = Results(cfg, peer_id, self.data_dir, self.stop)
        self.ringface = ring = RingFace(cfg, peer, now, carry=carry, carry_async=effects.carry_async,
                                        status=self.status_figures, turn=self._turn)
        self.sitemaps = SitemapFetch(peer, now, cfg.sitemaps.limits(), fetch=self._fetch_prefix,
                                     keep=self._keep, carry=carry, heavy=self.parsing.heavy, turn=self._turn)
        self.revisits = Revisits(peer, peer_id, now, lambda: results.store)
        self.seeds_file = SeedsFile(cfg.crawl.seeds_file, (p.id for p in cfg.peers), peer_id, peer, now,
                                    carry, self._turn)
        effects.register({
            Forward: self._do_forward, Queued: lambda e: journal.queued(e.url, e.depth),
            Checking: lambda e: journal.forwarded(e.url, e.depth), Seen: lambda e: journal.seen(e.url),
            Done: lambda e: journal.done(e.url, None), Row: self._do_row, Items: results.items,
            Hinted: results.hinted,
            Reverdict: self._do_reverdict,
            Commit: lambda e: journal.commit(),
            SeedsAt: lambda e: journal.counters(dict(e.counters)),
            StateKept: lambda e: journal.handed_state(e.revisits, e.cookies),
            Granted: lambda e: journal.counters(grants_to_counters(e.grants)),
            # Once an operator's change, a few ids: written at once, atomically, before
            # the sends after it (ring.membership.voters rule 6), not in a thread.
            VotersChanged: lambda e: write_voters(self.data_dir, e.record),
            # The same for the ring's settings (ring.membership.epochs rule 7); a starting peer
            # whose cluster.toml differs from the ring's stops, one line (rule 6).
            # An epoch-0 record names the file it replaced (peer.state.settingsfile).
            SettingsChanged: lambda e: write_settings(self.data_dir, e.record,
                                                      initial_settings(self.cfg).fingerprint),
            SettingsMismatch: self._settings_mismatch,
            Send: ring.send, Reply: ring.reply, StatusAsked: ring.status, Log: ring.log_line,
            ReadHosts: ring.read_hosts, ReadFetched: ring.read_fetched,
            Warn: lambda e: log.warning("%s", e.text),
            # Done by the core already (a requeue, a hand-off released): for the record.
            Requeued: _nothing, Released: _nothing,
            RestartAsked: self._restart_asked,
            Refused: _nothing,  # counted by the core (peer.core.crawl.decisions.Reason)
        }, awaiting=(Reply, StatusAsked))

    def _now(self) -> float:
        return self.clock()

    # -- read-outs, for the status, the tests and the CLI ----------------------------------

    @property
    def summary(self) -> Summary:
        return self.peer.figures.summary

    @property
    def bloom(self) -> BloomFilter:
        return self.peer.figures.bloom

    @property
    def limits(self) -> Limits:
        return self.peer.figures.limits_state

    @property
    def in_flight(self) -> int:
        return self.peer.figures.in_flight

    @property
    def pages_requested(self) -> int:
        return self.peer.figures.requested

    @property
    def handoffs_in(self) -> int:
        return self.peer.figures.handoffs_in

    @property
    def lost(self) -> str | None:
        """Why the crawl stopped because its results file was lost (None: it was not)."""
        return self.results.lost

    @property
    def resumed(self) -> dict[str, float] | None:
        """What a restart found (None: a new crawl)."""
        return self.durability.resumed

    @property
    def running(self) -> bool:
        """Whether the scheduler runs: the state is open and fetches may start (the readiness probe's)."""
        return self._workers is not None

    @property
    def cluster(self) -> bool:
        """Whether this peer runs in a ring of several (with a ring node and sockets)."""
        return self._cluster

    def status_figures(self) -> StatusFigures:
        """This peer's row of ``ring status`` (the ring driver fills in its own uptime)."""
        return self.reporting.status_figures()

    def limits_figures(self) -> dict[str, int]:
        return self.reporting.limits_figures()

    def progress_line(self) -> str:
        return self.reporting.progress_line()

    def _fetcher_stats(self) -> object:
        # getattr: a test's fetcher may have no counters.
        stats = getattr(self._fetcher, "stats", None)
        return stats() if callable(stats) else None

    # -- what the CLI, the signals and the tests call --------------------------------------

    def stop(self) -> None:
        """Stop starting fetches; in-flight ones get ``STOP_GRACE`` seconds."""
        self.peer.stop()
        self._wake.set()

    def _settings_mismatch(self, e: SettingsMismatch) -> None:
        """``[ring] config_mismatch = "refuse"``: this peer's cluster.toml differs from the ring's."""
        keys = ", ".join(e.keys) or "none"
        raise ConfigError(str(self.cfg.path), "", (
            f"this file's live settings differ from the ring's at epoch {e.ours.epoch} (member "
            f"{e.sender}): {keys}; make them agree, change them live with `ringcrawl-ring set`, or set "
            f'[ring] config_mismatch = "adopt" to take the ring\'s'))

    def adopt_settings(self, doc: Mapping[str, Any]) -> None:
        """A live settings document in force now (``PeerCore.adopt_settings``); the scheduler looks again."""
        self._apply(self.peer.adopt_settings(doc, self.clock()))

    def cancel_in_flight(self) -> None:
        """Stop now: in-flight fetches are cancelled; results are still flushed."""
        self.stop()
        if self._workers is not None:
            self._workers.cancel_scope.cancel()

    def restart(self, why: str = "signal") -> None:
        """Stop for a planned restart (``ring.membership.restarts``): fetch nothing more, then
        tell every live member we keep our hosts and will be back; alone, or leaving: just stop."""
        if not self.restart_reason and not self.peer.leaving:
            self.restart_reason = why
        self.stop()

    def _restart_asked(self, e: RestartAsked) -> None:
        if not self.peer.leaving:
            self.exit_for_restart = True
        self.restart(f"ring restart by {e.sender}")

    def leave(self) -> None:
        """Leave the ring gracefully: hand everything over, then stop (alone: just stop)."""
        if self.ringface.sockets is None:
            self.stop()
            return
        self._apply(self.peer.leave(self.clock()))

    def accept(self, url: str, depth: int) -> None:
        """A URL handed to us (a test's): route, dedupe, queue."""
        self._apply(self.peer.accept(url, depth, self.clock()))

    async def seed_add(self, msg: SeedAddRequest) -> SeedAddReply:
        """``ring seed add``'s batch at a ring of one (``peer.engine.observe``): judged and committed,
        then answered (``PeerCore.seeds_alone``)."""
        async with self._turn:
            status, counts, effects = self.peer.seeds_alone(msg.lines, msg.unreadable, self.clock())
            self._apply(effects)
        return SeedAddReply(self.cfg.ring.name, self.peer_id, msg.nonce, status, tuple(sorted(counts.items())))

    async def snapshot(self) -> SnapshotStats:
        """Write a full snapshot now, in a worker thread (rule 10)."""
        assert self.results.store is not None
        return await self.durability.snapshot(self.results.store)

    async def run(self) -> Summary:
        """Crawl until done, ``max_pages`` or ``stop()``; results flushed."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        cfg = self.cfg
        self.reporting.start()
        self.started = time.time()
        self.peer.set_wall(self.clock(), time.time())
        sites = self.peer.sites
        fetcher = self._fetcher or Fetcher(cfg.crawl, self.resolver, sites=sites, capture=cfg.warc.enabled)
        async with self.results.open(sites) as store, fetcher:
            self._fetcher = fetcher
            recovered = await self.durability.open(store)
            await self.revisits.restore(store, DataDir(self.data_dir).state)
            await self.seen.open(recovered, self.durability.fetched)
            await self.cookies.open(recovered)
            if recovered is not None:
                # Hosts' state handed to us that only the journal held (peer/state/journal.py
                # rule 6), over the fetches schedule and the jar's file: each keeps the newer.
                n = self.peer.disk.restore_state(*recovered.handed_state, time.time())
                if n:
                    log.info("hand-off: %d revisit records and cookies handed to this peer put back", n)
            # After the state is ours (no other process on this data_dir): recovery cuts .open files.
            self.archive = Archive.open(cfg, self.peer_id, self.data_dir, self.stop)
            try:
                await self._crawl(store, recovered)
            finally:
                self.durability.close()
                self.seen.close()
                self.revisits.close()
                if self.archive is not None:
                    with trio.CancelScope(shield=True):  # the open file closed whole, even on a cancel
                        await self.archive.aclose()
            await store.flush()
        s = self.peer.figures.final_summary(self.clock(), self.reporting.malformed())
        s.elapsed = self.reporting.elapsed()
        if self.archive is not None:
            s.details.append(self.archive.summary_line())
            s.warc = self.archive.figures()
        for line in (self.peer.retry_failed_line(self._retry_failed), self.seen.summary_line(),
                     self.revisits.far_line(),
                     self.durability.spill_line(self.peer.figures.spill_peak, self.peer.figures.head_per_host,
                                                self.peer.figures.order_overflow)):
            if line is not None:
                s.details.append(line)
        return s

    async def _crawl(self, store: ResultStore, recovered: Recovered | None) -> None:
        """The services (ring sockets, store writer, progress, snapshots) around the scheduler."""
        cfg, peer = self.cfg, self.peer
        async with trio.open_nursery() as services:
            sockets = None
            if self._cluster:
                spec = next((p for p in cfg.peers if p.id == self.peer_id), None)
                address = self._address or (spec.address if spec is not None else "")
                bind = bind_address(address, self._bind or (spec.bind if spec is not None else ""))
                keys = curve_keys(cfg, self.peer_id)
                # A peer not in cluster.toml joins a running ring (PeerCore: joining); so
                # does one back after a graceful leave: the others fetched its hosts
                # meanwhile, and it fetches none before their hand-off says what.
                voters = await trio.to_thread.run_sync(read_voters, self.data_dir)
                settings = await trio.to_thread.run_sync(read_settings, self.data_dir,
                                                         initial_settings(cfg).fingerprint)
                peer.join_ring(address, self._weight or (spec.weight if spec else 1.0), self.clock(),
                               incarnation=int(time.time() * 1000), curve=keys is not None,
                               joining=spec is None or self.durability.rejoining, voters=voters,
                               settings=settings)
                if settings is not None:
                    # The ring's settings as this peer last ran them (ring.membership.epochs
                    # rule 7): a paused ring stays paused, a rate set live stays set.
                    doc = decode_doc(settings.doc)
                    if doc is not None:
                        self._apply(peer.adopt_settings(doc, self.clock()))
                sockets = self.ringface.open(self.peer_id, address, keys, store, services, bind=bind)
                passed = peer.pass_on_restored()
                if passed:
                    log.info("hand-off: %d revisit records and cookies of hosts now owned by other peers "
                             "passed on to them at start", passed)
            failed: list[Any] = []
            still: frozenset[str] = frozenset()
            if self._retry_failed:
                # Read before the recovered queue goes back: which failed pages it holds still
                # (peer/core/crawl/failedpages.py rule 3), its spilled blocks read in a thread.
                failed = await store.failed_pages()
                if recovered is not None and failed:
                    urls = {row[0] for row in failed}
                    still = await trio.to_thread.run_sync(
                        lambda: frozenset(u for u, _ in recovered.all_queued() if u in urls))
            if recovered is not None:
                starts, self.durability.restart_starts = self.durability.restart_starts, []
                self._apply(peer.disk.resume(recovered, starts, self.clock(), wall=time.time()))
            if sockets is not None:
                await services.start(sockets.run)
            self._apply(peer.seeds(self.clock()))
            if self._retry_failed:
                self._apply(peer.retry_failed(failed, self.clock(), still))
                log.info("%s", peer.retry_failed_line(True))
            # Before the first step: the reader is busy, so neither it nor the ring ends first.
            seeds_start = await self.seeds_file.begin()
            if seeds_start is not None:
                services.start_soon(self.seeds_file.run, seeds_start)
            services.start_soon(store.run, 1.0, cfg.crawl.results_checkpoint)
            services.start_soon(self.results.watch)
            services.start_soon(self.reporting.run, self._flush_pid)
            services.start_soon(self.durability.run, store)
            services.start_soon(self.seen.run)
            services.start_soon(self.ringface.move_spilled)
            services.start_soon(self._drain_recovered)
            services.start_soon(self.cookies.run)
            if cfg.revisit.enabled and cfg.revisit.run_for:
                services.start_soon(self._run_for, cfg.revisit.run_for)
            async with trio.open_nursery() as workers:
                self._workers = workers
                await self._schedule(workers)
                if peer.stopping and self.in_flight:
                    workers.cancel_scope.deadline = trio.current_time() + STOP_GRACE
            self._flush_pid()
            if sockets is not None and self.restart_reason and not peer.leaving:
                await self._announce_restart()
            elif sockets is not None and self.summary.stop_reason in _LINGER_AFTER:
                # Keep gossiping "idle, done" for a few rounds so every
                # peer sees the same stable counters before we vanish;
                # otherwise a peer a round behind would see us die, its
                # live set change, and its termination count restart.
                # A leaver's final counters (its hand-off batches) must
                # reach the others too, or their sums never balance; and a
                # peer stopped by max_pages must spread its final page
                # count, or a peer a round behind never sees the limit.
                await trio.sleep(LINGER_ROUNDS * cfg.ring.gossip_interval)
            services.cancel_scope.cancel()

    async def _drain_recovered(self) -> None:
        """A recovered journal's queued URLs back into the frontier, a batch a turn of the loop,
        after the first requests started (``CrawlCore.defer_recovered``)."""
        disk = self.peer.disk
        while disk.recovering():
            self._apply(disk.drain_recovered(self.clock(), RECOVER_BATCH))
            await trio.sleep(0)

    async def _announce_restart(self) -> None:
        """Rule 1 of ``ring.membership.restarts``: with our state durable, say we will be back,
        and wait (at most ``ANNOUNCE_ROUNDS`` rounds) until every live member has heard it."""
        self.durability.commit()  # what the journal holds so far, on disk before the announce
        async with self._turn:
            self._apply(self.peer.restart(self.clock()))
        with trio.move_on_after(ANNOUNCE_ROUNDS * self.cfg.ring.gossip_interval):
            while not self.peer.announced():
                await trio.sleep(self.cfg.ring.gossip_interval / 4)
        waiting = self.peer.restart_waiting()
        if waiting:
            log.warning("planned restart: %s did not answer the announce; they will find this peer "
                        "dead after dead_after", ", ".join(waiting))
        log.info("planned restart (%s): every live member keeps this peer's hosts for it for %gs "
                 "(ring.restart_hold)", self.restart_reason, self.cfg.ring.restart_hold)

    async def _run_for(self, seconds: float) -> None:
        """``revisit.run_for``: a continuous crawl stops after that many seconds."""
        await trio.sleep(seconds)
        log.info("revisit.run_for (%gs) is over: stopping", seconds)
        self.stop()

    # -- effects ----------------------------------------------------------------------

    def _after_effects(self) -> None:
        """After every list of effects: the scheduler looks again, and the loops the core filled."""
        self._wake.set()
        if self.peer.disk.sieve_kicked():
            self.seen.kick()
        if self.peer.moving():
            self.ringface.kick_moves()

    def _do_forward(self, e: Forward) -> None:
        # Already in the Outbox (PeerCore.routed): journaled, and the sender woken.
        self.durability.forwarded(e.url, e.depth)
        self.ringface.wake()

    def _do_row(self, e: Row) -> None:
        page = PageRow(e, time.time(), self.peer_id)
        self.durability.done(e.url, page.values())
        # The page count with the row, whatever the config: after a kill -9
        # the count the last snapshot held (up to checkpoint_mb or 10 minutes
        # old) would let this peer go past max_pages, and `ring status`,
        # /metrics and stats.json would forget its pages since (a peer showed
        # 39 pages where the server had answered it 191). A dozen bytes a page.
        # With a budget set, the host's pages and bytes spent ride along (budgets rule 5).
        self.durability.counters(self.peer.disk.row_counters(e.host))
        write, replace = self.revisits.row(e)  # a revisit's 304 keeps the stored row
        replace = self.peer.replaces_row(e.url) or replace  # a failed page queued again: its new row
        store = self.results.store
        if store is not None and write:
            store.add_page(page, body=e.body, links=e.links, replace=replace)

    def _do_reverdict(self, e: Reverdict) -> None:
        # A better copy came after this page (peer.core.dedupe.held rule 6): its row is
        # corrected in place. Not journaled: a kill -9 before the store's next
        # flush leaves the first verdict, the safe side (the page is kept twice).
        store = self.results.store
        if store is not None:
            store.reverdict(e.url, e.duplicate_of, e.kind)

    # -- scheduling --------------------------------------------------------

    async def _schedule(self, workers: trio.Nursery) -> None:
        while True:
            step, effects = self.peer.next(self.clock())
            if isinstance(step, Start):
                workers.start_soon(self._work, step.job)
                continue
            if isinstance(step, Finished):
                self.summary.stop_reason = step.reason
                return
            if effects:
                self._apply(effects)
            self._wake = trio.Event()
            # Until a host can start, or a fetch ends, or a URL arrives.
            with trio.move_on_at(step.until):
                await self._wake.wait()

    async def _work(self, job: Job) -> None:
        peer = self.peer
        try:
            await self._handle(job)
        except StorageError:
            # The disk refused a write (the journal's commit of this page's
            # records, say): not this URL's fault, and recording it as an
            # 'internal' row would count a page as done that has no row of its
            # own. The peer stops; the page has neither row nor done record,
            # so whoever fetches its host next fetches it again.
            raise
        except Exception as exc:  # noqa: BLE001 - rule 8: one URL's bug, not the peer's
            name = type(exc).__name__
            effects, first = peer.internal(job, name, self.clock())
            if first:
                log.error("internal error %s on %s: recorded as 'internal', the crawl goes on "
                          "(further %s errors are counted in the summary, not logged)",
                          name, job.url, name, exc_info=exc)
            self._apply(effects)
        finally:
            peer.job_ended(job)
            self._wake.set()

    async def _handle(self, job: Job) -> None:
        # The admission's effects first, whatever it says: a Drop's or a
        # PassOn's end with the Commit that puts the job off our queue.
        adm, effects = self.peer.admit(job, self.clock())
        self._apply(effects)
        if isinstance(adm, Fetch):
            await self._fetch_page(job)
        elif isinstance(adm, FetchSitemap):
            await self.sitemaps.run(adm)
        elif isinstance(adm, FetchRobots):
            await self._fetch_robots(job, adm.url)

    async def _fetch_page(self, job: Job) -> None:
        peer, url = self.peer, job.url
        fetcher = self._fetcher
        assert fetcher is not None
        if peer.revisits and not peer.is_requisite(url):
            # A continuous crawl: a revisit's validators (RFC 9110 §13.1). A page requisite
            # is fetched once and leaves no row, so it has no visit to record.
            res = await fetcher.fetch(url, headers=peer.validators(url),
                                      cookie=peer.cookie_header(url, time.time()))
            self.revisits.answered(job, res)
        elif peer.cookies_on:  # some host's cookies are on: one test
            res = await fetcher.fetch(url, cookie=peer.cookie_header(url, time.time()))
        else:
            res = await fetcher.fetch(url)
        if self.archive is not None:
            await self.revisits.archive(self.archive, job, res)
        async with self._turn:
            if not peer.fetched(job, res, self.clock()):
                self._apply(peer.on_result(job, res, None, self.clock()))
                return
            # A small page on the loop (peer.engine.parsing); the rest in a worker
            # thread: lexbor releases the GIL while it parses, and a crafted
            # page can take it seconds or more (deep nesting, huge <select>s:
            # tests/e2e/test_hostile.py); gossip and the other fetches must go
            # on meanwhile.
            if self.parsing.fits_inline(res.body):
                self._apply(peer.on_result(job, res, self.parsing.inline(job, res), self.clock()))
                return
        parsed = await self.parsing.in_thread(job, res)
        async with self._turn:
            self._apply(peer.on_result(job, res, parsed, self.clock()))

    async def _fetch_robots(self, job: Job, url: str) -> None:
        peer = self.peer
        try:
            # The first 500 KiB however long the file (RFC 9309 §2.5): a
            # prefix with ``truncated`` set, not a too_large refusal.
            fetcher = self._fetcher
            assert fetcher is not None
            if peer.cookies_on:
                res = await fetcher.fetch(url, max_body=MAX_ROBOTS_BYTES, prefix_ok=True,
                                          cookie=peer.cookie_header(url, time.time()))
            else:
                res = await fetcher.fetch(url, max_body=MAX_ROBOTS_BYTES, prefix_ok=True)
        except trio.Cancelled:
            peer.robots_cancelled(job)
            raise
        await self._keep(res)
        self._apply(peer.on_robots(job, res, self.clock()))

    def _fetch_prefix(self, url: str, max_body: int) -> Awaitable[FetchResult]:
        """At most ``max_body`` bytes of ``url``, a longer body cut (a sitemap's read)."""
        assert self._fetcher is not None
        return self._fetcher.fetch(url, max_body=max_body, prefix_ok=True)

    async def _keep(self, res: FetchResult) -> None:
        """Archive ``res`` (robots.txt, a sitemap) when WARC is on."""
        if self.archive is not None:
            await self.archive.keep(res)

    def _flush_pid(self) -> None:
        self.results.pid(*self.peer.figures.pid_trace())


def _nothing(effect: object) -> None:
    """Done by the core already (a requeue, a hand-off released); nothing to do here."""
