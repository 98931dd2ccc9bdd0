"""The crawl core of one peer: every crawl decision, with no I/O (h11's shape).

``CrawlCore`` owns the scope, the frontier, the robots cache, the limits,
the cookie jar and the summary, and composes the parts that own the rest,
each handed only what it asks, as ``ring.membership.protocol`` composes its parts:

- ``discovery``  the way a URL comes in, and the seen set (``peer.core.crawl.discovery``)
- ``jobs``       the jobs in flight: rule 8's marks (peer/engine/crawler.py), redirect hops,
                 recent rows; ``rows``: a job's row, counted (both ``peer.core.crawl.jobs``)
- ``outcomes``   what a fetch's answer means, steps 4-6; ``retries``: the attempts of the
                 URLs retried (both ``peer.core.crawl.outcomes``)
- ``sitemap_jobs``  sitemaps found, fetched by their host's owner, read (``peer.core.sitemaps.jobs``)
- ``held``       duplicate verdicts, and the pages held for them (``peer.core.dedupe.held``)
- ``requisite_jobs``  a page's stylesheets, images, scripts, fonts and frames, fetched for
                 the archive (``peer.core.crawl.requisites``)
- ``handoffs``   the ring, the hand-off holds, the URLs handed in (``peer.core.handoff.moves``):
                 the crawl's side of the ring, which the peer core calls as it is

This module holds steps 2-3 below (scheduling, admission), the moves
several parts make (push a URL, pass one on), and what the driver and the
tools call or read, some of it handed on to the parts;
``peer.core.crawl.figures`` computes the figures. It imports no trio, zmq,
httpx or duckdb: the caller passes ``now`` and what the network said, and
gets decisions back as frozen values (``peer.core.crawl.decisions``).
``peer/engine/crawler.py`` is the driver; ``tests/core/test_crawl.py`` drives it synchronously.

The path of one URL, as the code reads:

1. ``discover(url, depth, now, origin)`` - ``peer.core.crawl.discovery``
   (its table: each origin's path): a new URL is ``Queued``, another
   peer's is a ``Forward``, one not taken a ``Refused(url, reason)``.
2. ``next(now, ring)`` - ``Start(job)`` when the frontier's politeness gate
   and the concurrency (and ``max_pages``: in a ring, this peer's cap of
   the budget, ``ring.membership.budget``) allow one, else ``Sleep(until)`` or
   ``Finished(reason)``.
3. ``admit(job, now)`` - just before the request: ``Fetch``, ``FetchRobots``
   (robots.txt first), ``FetchSitemap``, ``Requeue`` (robots.txt pending, a
   hand-off hold), ``Drop`` (a row: disallowed, given up, fetched by the
   previous owner) or ``PassOn`` (its host moved to another peer).
4. The driver fetches; ``fetched`` says whether to parse (in a thread).
5. ``on_result`` / ``on_robots`` - the effects: its links' or redirect
   target's discoveries, the ``Row``, ``Items``, retries, warnings.
6. ``job_ended(job)`` - always (``internal`` first if the job raised: rule 8
   of peer/engine/crawler.py).
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections import Counter
from collections.abc import Callable, Container, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from peer.core.config.cluster import ClusterConfig, PolitenessConfig
from peer.core.config.sites import SiteSettings
from peer.core.crawl.decisions import (
    Admission, Checking, Done, Drop, Effect, Fetch, FetchRobots, FetchSitemap, Finished, Forward, Items,
    Origin, PassOn, Queued, Reason, Refused, Requeue, Requeued, RingView, Row, Seen, Sleep, Start, StopReason,
    Reverdict, Warn,
)
from peer.core.crawl.budgets import Budgets
from peer.core.crawl.discovery import Discovery
from peer.core.crawl.failedpages import FailedPages, FailedRow
from peer.core.crawl.proxyreach import ProxyReach, proxy_of
from peer.core.crawl.figures import detail_lines, limits_figures, progress_snapshot
from peer.core.crawl.jobs import FETCHING, ROBOTS, Jobs, Rows
from peer.core.crawl.limits import Limits
from peer.core.crawl.outages import Outages
from peer.core.crawl.outcomes import MAX_RETRIES, RETRY_BASE, Outcomes, Retries
from peer.core.crawl.requisites import RequisiteJobs
from peer.core.crawl.robots import RobotsCache, Verdict, product_token
from peer.core.crawl.seedadd import SeedTally
from peer.core.crawl.seedfeed import SeedFeed
from peer.core.dedupe.held import HeldPages
from peer.core.frontier.frontier import CEILING_WINDOWS, Frontier, Job, Outcome
from peer.core.handoff.leasewaits import LeaseWaits
from peer.core.handoff.moves import Handoffs
from peer.core.http.cookies import CookieJar, CookieLimits
from peer.core.page.extract import PageRules
from peer.core.page.parse import Parsed, parse_response
from peer.core.revisit.recrawl import Recrawl
from peer.core.run.stats import Summary
from peer.core.seen.bloom import BloomFilter
from peer.core.seen.sieve import SeenSieve, SieveBatch
from peer.core.sitemaps.hints import RETRY, Requisite, Retry, attach, detach
from peer.core.sitemaps.jobs import SitemapJobs
from peer.core.urls.normalize import hostname
from peer.core.urls.rules import Cause, parse_rules, parse_url_rules
from peer.core.urls.priority import parse_priority_rules
from peer.core.frontier.order import boost_of, depth_of
from peer.core.urls.scope import Scope

if TYPE_CHECKING:
    from peer.core.dedupe.bands import NearAnswer
    from peer.core.dedupe.verdicts import Dedupe
    from peer.core.handoff.holds import Holds, Liveness
    from peer.core.http.result import FetchResult
    from peer.core.run.progress import ProgressSnapshot
    from peer.core.sitemaps.document import Sitemap
    from peer.core.sitemaps.tracker import SitemapTracker
    from ring.hashring import HashRing

__all__ = [
    "CrawlCore", "Origin", "StopReason", "Summary", "Parsed", "parse_response", "RingView", "Reason",
    "Forward", "Queued", "Checking", "Seen", "Done", "Row", "Items", "Requeued", "Warn", "Refused", "Reverdict", "Effect",
    "Fetch", "FetchRobots", "FetchSitemap", "Requeue", "Drop", "PassOn", "Admission",
    "Start", "Sleep", "Finished", "MAX_RETRIES", "CEILING_HORIZON", "RETRY_BASE", "HOLD_POLL",
    "ROBOTS_PENDING_WAIT",
]

#: Hosts paced anew a scheduling step after a live change of pace (scheduler rule 11):
#: 12-25 us a host on the shared 2-core box (scripts/bench_livesettings.py): 6-12 ms of the loop a step.
REPACE_CHUNK = 500
#: How long a job waits when another task is fetching its host's robots.txt.
ROBOTS_PENDING_WAIT = 0.25
#: How often a job of a host held for a hand-off looks again.
HOLD_POLL = 0.1
#: How far back a restarted peer counts its hosts' request starts: the
#: frontier's longest ceiling window.
CEILING_HORIZON = max(CEILING_WINDOWS)


def _no_ip(host: str) -> str | None:
    return None


class CrawlCore:
    """One peer's crawl decisions (module docstring); mutable, pure, one thread."""

    def __init__(self, cfg: ClusterConfig, peer_id: str, *, rng: random.Random | None = None,
                 peek_ip: Callable[[str], str | None] = _no_ip) -> None:
        self._cfg = cfg
        self.peer_id = peer_id
        crawl, pol = cfg.crawl, cfg.politeness
        self.scope = Scope.from_seeds(crawl.seeds, crawl.allow_hosts, crawl.deny_hosts, crawl.max_depth,
                                      crawl.allow_domains)
        #: crawl.rules and skip_extensions after the host scope; ``params``
        #: (strip_params, sort_query) are part of every URL's identity.
        self.urlrules = parse_url_rules(crawl, str(cfg.path))
        self.params = self.urlrules.params
        #: Each host's settings: [[site]] blocks over the global config (peer/core/config/sites.py).
        # Read through ``self.sites``, not a copy: a live change (``adopt``) replaces it.
        #: ``[frontier] priority`` (peer/core/urls/priority.py; frontier rule 11); a
        #: ``[[site]]`` block's ``priority`` replaces it for its hosts.
        self.priority_rules = parse_priority_rules(cfg.frontier.priority, str(cfg.path))
        self.sites = sites = SiteSettings(cfg.sites, crawl, pol, cfg.retry, self.priority_rules)
        self.frontier = Frontier(pol, politeness_for=self._politeness_for() if sites else None,
                                 order=cfg.frontier.order)
        self.robots = RobotsCache(crawl.user_agent, max_crawl_delay=pol.max_crawl_delay,
                                  error_retry=crawl.robots_retry, max_failures=crawl.robots_tries,
                                  tokens=(lambda h: self.sites.for_host(h).token) if sites else None)
        self.limits = Limits.from_config(crawl, pol)
        #: What a page's parse reads besides anchors, and the token its meta robots may name.
        self.page_rules = PageRules(product_token(crawl.user_agent), crawl.follow_frames,
                                    crawl.follow_meta_refresh, crawl.follow_link_rel)
        self.summary = Summary()
        #: Jitter of the retry waits: injected, so a test sees the same waits.
        self.rng = rng or random.Random()
        #: The revisit schedule of a continuous crawl ([revisit] enabled), else None.
        self.recrawl = (Recrawl(cfg.revisit, random.Random(self.rng.random()), archived=cfg.warc.enabled)
                        if cfg.revisit.enabled else None)
        #: The DNS cache's answer for a host name, without a lookup (resolver.peek).
        self.peek_ip = peek_ip
        self.stopping = False
        self.leaving = False
        #: ``ring pause``: no request starts while set (``next``); those in flight end.
        self.paused = False
        #: Queued URLs a live rule change refused at their turn, by cause (``admit``).
        self.refused_queued: Counter[str] = Counter()
        #: ``crawl.seeds_file``'s count and position (peer/core/crawl/seedfeed.py); its reader is not idle.
        self.seed_feed = SeedFeed()
        #: ``ring seed add``'s lines taken here, by outcome (peer/core/crawl/seedadd.py).
        self.seed_adds = SeedTally()
        #: A recovered journal's queued URLs not yet put back (:meth:`defer_recovered`), from ``_next_recovered`` on.
        self._recovering: list[tuple[str, int]] = []
        self._next_recovered = 0
        self._ip_politeness = bool(pol.ip_rate or pol.ip_concurrency)
        #: The cookies of the hosts we fetch (peer/core/http/cookies.py); None when
        #: no host has them on, so the default path costs one test.
        self.cookies: CookieJar | None = None
        if sites.any("cookies"):
            self.cookies = CookieJar(
                CookieLimits(crawl.cookie_max_bytes, crawl.cookies_per_host, crawl.cookies_max_total),
                enabled=lambda h: self.sites.for_host(h).cookies)
            self.summary.cookies = self.cookies.counts  # the jar's figures, for stats.json
        # -- the parts (module docstring), each handed what it asks ---------------------
        self.jobs = Jobs(self.frontier)
        self.handoffs = Handoffs(peer_id, self.frontier, self.limits, takeover_after=cfg.ring.takeover_after,
                                 pass_on=self._pass_on, push=self._push)
        self.retries = Retries(self.jobs, self.summary, self.rng, self._keeps, cfg.retry,
                               lambda h: self.sites.for_host(h).retry)
        #: Hosts down, or asking for a wait over the cap (peer/core/crawl/outages.py).
        self.outages = Outages(cfg.retry)
        #: Failed pages queued again by --retry-failed (peer/core/crawl/failedpages.py).
        self.failed_pages = FailedPages(lambda h: self.sites.for_host(h).retry)
        #: Moved hosts waiting for their lease (peer/core/handoff/leasewaits.py).
        self.lease_waits = LeaseWaits()
        # Handed CrawlCore.discover, not the part's: Discovery comes next and is
        # handed this part's entry reader (a sitemap's tail), one way each.
        self.sitemap_jobs = SitemapJobs(
            cfg.sitemaps, me=peer_id, scope=self.scope, summary=self.summary, robots=self.robots,
            frontier=self.frontier, limits=self.limits, jobs=self.jobs, retries=self.retries,
            recrawl=self.recrawl, owner=self.handoffs.owner, push=self._push, discover=self.discover)
        #: Pages and bytes per host, [[site]] block and registered domain (peer/core/crawl/budgets.py).
        self.budgets = Budgets(crawl, lambda: self.sites, self.limits, me=peer_id, ring=lambda: self.handoffs.ring)
        b = cfg.bloom
        self.discovery = Discovery(
            peer_id, bloom=BloomFilter(b.capacity, b.error_rate, growth=b.growth, max_capacity=b.max_capacity),
            sieve=SeenSieve(b.disk_after, b.sieve_batch, b.sieve_wait), scope=self.scope,
            urlrules=self.urlrules, params=self.params, sites=sites, limits=self.limits, summary=self.summary,
            jobs=self.jobs, handoffs=self.handoffs, push=self._push, pass_on=self._pass_on,
            entry=self._entry, requisites_any_host=cfg.warc.requisites_other_hosts,
            retrying=self.failed_pages.queued, budgets=self.budgets)
        discover = self.discovery.discover
        self.requisite_jobs = RequisiteJobs(
            cfg.warc, params=self.params, discover=discover, jobs=self.jobs, retries=self.retries,
            limits=self.limits, frontier=self.frontier, counts=self.summary.requisites)
        self.rows = Rows(self.summary, sites, self.jobs, self.sitemap_jobs)
        self.held = HeldPages(cfg.dedupe, peer_id, owner=self.handoffs.owner, discover=discover)
        self.outcomes = Outcomes(
            cfg, summary=self.summary, limits=self.limits, frontier=self.frontier, robots=self.robots,
            page_rules=self.page_rules, params=self.params, jobs=self.jobs, rows=self.rows,
            retries=self.retries, outages=self.outages, held=self.held, discover=discover,
            discover_links=self.discovery.discover_links,
            robots_sitemaps=self.sitemap_jobs.robots_sitemaps, keep_cookies=self.keep_cookies,
            requisites=self.requisite_jobs, proxies=self._proxy_reach(cfg))

    def _proxy_reach(self, cfg: ClusterConfig) -> ProxyReach | None:
        """Which proxies answered in this run (peer/core/crawl/proxyreach.py); None without a proxy."""
        if not cfg.crawl.proxy and not any(b.proxy for b in cfg.sites):
            return None

        def proxy_for(host: str) -> tuple[str, str] | None:
            block = self.sites.for_host(host).block
            mine = self.sites.blocks[block].proxy if block >= 0 else None
            return proxy_of(block, mine, self.cfg.crawl.proxy)

        return ProxyReach(proxy_for)

    def _entry(self, entry: str, depth: int, now: float, origin: Origin, hops: int = 0, *,
               boost: int = 0) -> list[Effect]:
        """A URL with a tail (peer/core/sitemaps/hints.py): a page requisite's, or the sitemaps' part's."""
        if " requisite " in entry:
            url, tail = detach(entry)
            if isinstance(tail, Requisite):
                return self.requisite_jobs.arrived(url, tail.level, depth, now)
        if entry.endswith(" retry"):
            url, tail = detach(entry)
            if isinstance(tail, Retry):  # another peer's failed page, of a host ours now
                effects = self._retry_one(url, depth, now)
                if any(type(e) is Queued for e in effects):
                    self.failed_pages.received += 1
                return effects
        return self.sitemap_jobs.entry(entry, depth, now, origin, hops)

    # -- what the driver, the peer core and the tools read or set ----------------------

    @property
    def cfg(self) -> ClusterConfig:
        """The config, read by the parts when the core is made: another config is another core,
        but for its live part (``adopt``)."""
        return self._cfg

    def adopt(self, cfg: ClusterConfig, now: float) -> int:
        """``cfg``'s live part in force from now on (peer.core.config.livekeys): how many known
        hosts are paced anew (each before its next start; ``next`` gets to all in chunks).

        ``cfg`` differs from ours only in its live keys (``livekeys.with_live``
        made it): the rates and clamps of every host, the URL rules (new
        links, and queued URLs at their turn: ``admit``), the ``[[site]]``
        blocks, ``max_pages`` (read from ``cfg`` at every ``next``). What the
        parts were built from otherwise is the same, so they stay.
        """
        old, self._cfg = self._cfg, cfg
        self.sites = sites = SiteSettings(cfg.sites, cfg.crawl, cfg.politeness, cfg.retry, self.priority_rules)
        self.urlrules = dataclasses.replace(self.urlrules, rules=parse_rules(cfg.crawl.rules, str(cfg.path), "crawl.rules"))
        self.discovery.rescope(self.urlrules, sites)
        self.rows.rescope(sites)
        self.budgets.configure(cfg.crawl)
        if cfg.politeness == old.politeness and cfg.sites == old.sites:
            return 0
        return self.frontier.set_politeness(cfg.politeness, self._politeness_for() if sites else None, now)

    def _politeness_for(self) -> Callable[[str], PolitenessConfig]:
        return lambda h: self.sites.for_host(h).politeness

    @property
    def bloom(self) -> BloomFilter:
        """The Bloom filter of the seen set; replaced by the driver on recovery."""
        return self.discovery.bloom

    @bloom.setter
    def bloom(self, bloom: BloomFilter) -> None:
        self.discovery.bloom = bloom

    @property
    def sieve(self) -> SeenSieve:
        """The exact seen set's policy behind the Bloom filter (peer/core/seen/sieve.py)."""
        return self.discovery.sieve

    @sieve.setter
    def sieve(self, sieve: SeenSieve) -> None:
        self.discovery.sieve = sieve

    @property
    def in_flight(self) -> int:
        """Jobs started and not ended."""
        return self.jobs.count

    @property
    def requested(self) -> int:
        """Page rows whose request was made (``max_pages``); set by the driver on recovery."""
        return self.rows.requested

    @requested.setter
    def requested(self, n: int) -> None:
        self.rows.requested = n

    @property
    def ring(self) -> HashRing | None:
        """The ring of live members, or None alone (every host is ours)."""
        return self.handoffs.ring

    @ring.setter
    def ring(self, ring: HashRing | None) -> None:
        self.handoffs.ring = ring

    @property
    def holds(self) -> Holds:
        """The hand-off holds (peer/core/handoff/holds.py)."""
        return self.handoffs.holds

    @property
    def alive(self) -> Liveness:
        """Whether a peer is alive, dead or unknown: the ring node's membership; holds ask it."""
        return self.handoffs.alive

    @alive.setter
    def alive(self, alive: Liveness) -> None:
        self.handoffs.alive = alive

    @property
    def hold_timeout(self) -> float:
        """How long a gained host waits for its previous owner's HandoffDone."""
        return self.handoffs.hold_timeout

    @hold_timeout.setter
    def hold_timeout(self, seconds: float) -> None:
        self.handoffs.hold_timeout = seconds

    @property
    def handoffs_in(self) -> int:
        """Seen URLs taken from hand-offs."""
        return self.handoffs.handoffs_in

    @property
    def wall_offset(self) -> float:
        """Epoch seconds minus the crawl's clock, set by the driver (peer.core.dedupe.held)."""
        return self.held.wall_offset

    @wall_offset.setter
    def wall_offset(self, offset: float) -> None:
        self.held.wall_offset = offset

    @property
    def sitemaps(self) -> SitemapTracker:
        """The sitemaps found of the hosts we own (peer/core/sitemaps/tracker.py)."""
        return self.sitemap_jobs.tracker

    @property
    def dedupe(self) -> Dedupe:
        """The duplicate verdicts and the band table this peer owns."""
        return self.held.dedupe

    # -- discovery (peer.core.crawl.discovery) -------------------------------------------

    def discover(self, url: str, depth: int, now: float, origin: Origin, hops: int = 0, *,
                 host: str | None = None, boost: int = 0) -> list[Effect]:
        """A URL arrives from ``origin`` (``peer.core.crawl.discovery``'s table); ``host``: its key, if known;
        ``boost``: a sitemap's priority's (frontier rule 11), if it is queued here."""
        return self.discovery.discover(url, depth, now, origin, hops, host=host, boost=boost)

    def discover_links(self, links: Sequence[str], depth: int, now: float) -> list[Effect]:
        """A page's links, as :meth:`discover` with ``Origin.LINK`` takes them one by one, in one batch."""
        return self.discovery.discover_links(links, depth, now)

    def recovered(self, queued: Iterable[tuple[str, int]], now: float) -> list[Effect]:
        """A recovered queue put back, as :meth:`discover` with ``Origin.RECOVERED`` would, URL by URL."""
        return self.discovery.recovered(queued, now)

    def defer_recovered(self, queued: list[tuple[str, int]]) -> None:
        """What a recovered journal queued, to put back after the first requests start
        (:meth:`drain_recovered`): a journal holds up to a million of them, seconds of a
        restart. They come behind each host's head and blocks, as they would have; until
        then a snapshot lists them (:meth:`snapshot_recovering`) and the crawl is not idle."""
        self._recovering = queued
        self._next_recovered = 0

    @property
    def recovering(self) -> int:
        """Recovered URLs not yet put back."""
        return len(self._recovering) - self._next_recovered

    def drain_recovered(self, now: float, limit: int) -> list[Effect]:
        """Put back up to ``limit`` of the deferred recovered URLs (:meth:`defer_recovered`)."""
        i = self._next_recovered
        chunk = self._recovering[i : i + limit]
        self._next_recovered = i + len(chunk)
        if self._next_recovered >= len(self._recovering):
            self._recovering, self._next_recovered = [], 0
        return self.discovery.recovered(chunk, now)

    def sieve_verdicts(self, batch: SieveBatch, new: list[bool], now: float) -> list[Effect]:
        """The sieve's answer for ``batch``: new URLs are queued after all; duplicates are dropped."""
        return self.discovery.sieve_verdicts(batch, new, now)

    def sieve_readd(self, urls: Iterable[str], now: float) -> None:
        """Hashes the sieve may have lost in a crash (the recovered journal's rows)."""
        self.discovery.sieve_readd(urls, now)

    def seeds(self, now: float) -> list[Effect]:
        """The seeds and the ``[sitemaps] seeds``, found at the start of every run."""
        out: list[Effect] = []
        for seed in self.cfg.crawl.seeds:
            out += self.discover(seed, 0, now, Origin.SEED)
        return out + self.sitemap_jobs.seeds(now)

    def retry_failed(self, rows: Iterable[FailedRow], now: float,
                     queued: Container[str] = frozenset()) -> list[Effect]:
        """``--retry-failed``: the failed pages among this peer's latest rows queued again, or sent
        to their hosts' owners (peer/core/crawl/failedpages.py); ``summary_line`` says how many.
        ``queued``: those of them a recovered journal holds queued still (rule 3)."""
        out: list[Effect] = []
        fp = self.failed_pages
        for url, depth, cause in fp.pick(rows):
            if url in queued:
                fp.queued.add(url)
                fp.pending += 1
                continue
            effects = self._retry_one(url, depth, now)
            fp.counted(cause, effects)
            out += effects
        return out

    def _retry_one(self, url: str, depth: int, now: float) -> list[Effect]:
        """One failed page queued again, once a run (failedpages rule 3)."""
        fp = self.failed_pages
        if url in fp.queued:
            return []
        effects = self.discovery.discover(url, depth, now, Origin.RETRY)
        if any(type(e) is Queued for e in effects):
            fp.queued.add(url)
        return effects

    def _push(self, url: str, host: str, depth: int, now: float, boost: int = 0) -> None:
        """Queue ``url``, in its band (frontier rule 11: ``boost``, a sitemap's, plus
        ``[frontier] priority``'s); with per-IP politeness, a host whose address is known
        shares its IP's budget."""
        fr = self.frontier
        rules = self.sites.for_host(host).priority if self.sites else self.priority_rules
        if rules and not boost_of(depth):  # a recovered slot has its rules' boost already
            boost += rules.boost(url)
        fr.push(url, host, depth, now, boost)
        if self._ip_politeness and fr.host_ip(host) is None:
            # Static entries and cached answers are known before the first
            # fetch; otherwise the first fetch resolves it (docs/politeness.md).
            ip = self.peek_ip(hostname(host))
            if ip is not None:
                fr.set_host_ip(host, ip, now)

    def _pass_on(self, url: str, depth: int, owner: str, host: str, out: list[Effect]) -> None:
        """A URL queued here whose host is now ``owner``'s: it travels on and leaves our queue.

        A sitemap job travels as one (it was never journaled as queued); a
        URL with a sitemap's hints takes them along (peer/core/sitemaps/hints.py).
        """
        depth = depth_of(depth)  # a recovered queue's slot (frontier rule 11): the depth alone travels
        sitemaps = self.sitemap_jobs
        job = sitemaps.take_job(url)
        if job is not None:
            out.append(Forward(attach(url, job), depth, owner, True, host))
            return
        requisite = self.requisite_jobs.take_level(url)
        if requisite is not None:  # it goes on as a requisite (peer.core.crawl.requisites rule 3)
            out.append(Forward(attach(url, requisite), depth, owner, True, host))
            out.append(Done(url))
            return
        if self.failed_pages.replaces(url):  # still a failed page queued again, at its new owner
            out.append(Forward(attach(url, RETRY), depth, owner, True, host))
        else:
            out.append(Forward(attach(url, sitemaps.take_hints(url)), depth, owner, True, host))
        out.append(Done(url))

    def _keeps(self, host: str) -> bool:
        """Whether this peer keeps ``host``'s jobs: not stopping nor leaving, and still its owner (a retry's test)."""
        return not self.stopping and not self.leaving and self.handoffs.owner(host) == self.peer_id

    # -- scheduling ------------------------------------------------------------------

    def next(self, now: float, ring: RingView | None = None) -> Start | Sleep | Finished:
        """What the scheduler does now: start a job, sleep, or end (``ring``: the node, in a ring)."""
        # Held pages decided first: at their deadline, or all when the crawl ends
        # (peer.core.dedupe.held rule 4); their effects before anything else.
        due = self.held.due(now, ending=self.stopping or self._at_max_pages(ring))
        if due:
            return Sleep(now, tuple(due))
        if self.stopping:
            return Finished(StopReason.STOPPED)
        max_pages = self.cfg.crawl.max_pages
        done_pages = self.requested
        cap = max_pages
        gone = False
        if ring is not None and max_pages:
            # Cluster-wide: the others' gossiped counts plus ours end the
            # crawl; our cap of the budget bounds our starts (ring.membership.budget).
            done_pages += ring.others_pages()
            cap = ring.page_cap
            gone = ring.budget_gone()
        if max_pages and (done_pages >= max_pages or gone):
            return Finished(StopReason.MAX_PAGES)
        fr = self.frontier
        fr.roll_windows(now)
        if fr.stale:  # a live change of pace: a chunk of its hosts a step (scheduler rule 11)
            fr.refresh(now, REPACE_CHUNK)
        # With max_pages, start no more than the cap: requested + in flight
        # never pass it (ring.membership.budget rule 4), so no peer ever overshoots.
        room = self.cfg.crawl.concurrency - self.in_flight
        if max_pages:
            mine = self.requested if ring is not None else done_pages
            room = min(room, cap - mine - self.in_flight)
        # Without the ring's lease no request starts (ring.membership.lease): a split or a
        # starved process must cost time, never a second owner of a host. Nor while
        # the operator paused the crawl (``ring pause``).
        paused = self.paused or (ring is not None and not ring.may_start(now))
        rc = self.recrawl
        if rc is not None:  # due revisits to the front of their hosts' queues (peer/core/revisit/recrawl.py)
            for url, host, depth in rc.feed(now):
                fr.requeue(Job(url, host, depth), now, now)
        job = fr.pop_ready(now) if room > 0 and not paused else None
        if job is not None:
            if rc is not None and (nxt := rc.started(job.url, job.host, fr)) is not None:
                fr.requeue(Job(*nxt), now, now)
            self.jobs.started(job)
            return Start(job)
        if self.leaving:
            # Fetch nothing more. What comes back to the frontier (a job
            # that waited on robots.txt) goes to its owner like the rest.
            effects: list[Effect] = []
            if len(fr) and self.ring is not None:
                effects = self.handoffs.set_ring(self.ring, now)
            if ring is not None and ring.left():
                return Finished(StopReason.LEFT)
            return Sleep(now + HOLD_POLL, tuple(effects))
        if self.locally_idle():
            if ring is None:
                return Finished(StopReason.FRONTIER_EMPTY)
            if ring.idle() and ring.done() and not self.holds.awaiting(now):  # holds rule 7
                return Finished(StopReason.CLUSTER_DONE)
        if paused:
            return Sleep(now + HOLD_POLL)
        # Sleep until a host can start, or a fetch ends, or a URL arrives.
        when = fr.next_ready_at() if room > 0 else None
        dup = self.held.next_deadline()
        if dup is not None:
            when = dup if when is None else min(when, dup)
        revisit_at = None if rc is None else rc.next_due()  # a revisit coming due wakes the loop
        if revisit_at is not None and (when is None or revisit_at < when):
            when = revisit_at
        if fr.stale:
            when = now  # back at once for the next chunk, the loop's other work in between
        return Sleep(math.inf if when is None else when)

    def _at_max_pages(self, ring: RingView | None) -> bool:
        """``next``'s max_pages test, for the held pages (peer.core.dedupe.held rule 4)."""
        max_pages = self.cfg.crawl.max_pages
        if not max_pages or not self.held.waiting():
            return False
        done = self.requested + (ring.others_pages() if ring is not None else 0)
        return done >= max_pages or (ring is not None and ring.budget_gone())

    def locally_idle(self) -> bool:
        # A continuous crawl is never idle while revisits are scheduled
        # (peer/core/revisit/recrawl.py rule 5): neither done alone nor in the ring.
        rc = self.recrawl
        return (self.in_flight == 0 and len(self.frontier) == 0 and not self.sieve.pending
                and not self.recovering and not self.frontier.moving and not self.held.waiting() and not self.seed_feed.reading
                and (rc is None or self.leaving or not rc.scheduled))

    def job_ended(self, job: Job) -> None:
        """The job's task is over, whatever happened (the driver's ``finally``)."""
        self.jobs.ended(job)

    # -- admission -------------------------------------------------------------------

    def admit(self, job: Job, now: float, lease: RingView | None = None) -> Admission:
        """What to do with a job the frontier handed out, before any request (``lease``: the
        ring node, in a ring: it says whether the host's lease holds)."""
        out: list[Effect] = []
        jobs = self.jobs
        rc = self.recrawl
        if not (rc is not None and rc.is_revisit(job.url)) and self.handoffs.take_fetched_elsewhere(job.url):
            # Fetched by the host's previous owner, which handed it over. Not a revisit:
            # the schedule the host's state brought back asks for it again on purpose.
            out.append(Done(job.url))
            jobs.finish(job, now, Outcome.NOT_STARTED)
            return Drop(job, tuple(out))
        if jobs.recently_requested(job.url) and (self.recrawl is None or not self.recrawl.is_revisit(job.url)):
            # Requested here a moment ago and queued a second time (RECENT_ROWS); a
            # revisit comes back on purpose, through its schedule (peer/core/revisit/recrawl.py).
            self.summary.requeued_twice += 1
            out.append(Done(job.url))
            jobs.finish(job, now, Outcome.NOT_STARTED)
            return Drop(job, tuple(out))
        ring = self.handoffs.ring
        if ring is not None and len(ring):
            owner = ring.owner(job.host)
            if owner != self.peer_id:
                # Came back after its host moved (a retry, a robots.txt
                # wait): it is the new owner's now.
                self._pass_on(job.url, job.depth, owner, job.host, out)
                jobs.finish(job, now, Outcome.NOT_STARTED)
                return PassOn(job, owner, tuple(out))
        if self.paused:
            # Started by the scheduler just before ``ring pause``, its request not made:
            # it waits like the rest (only requests on the wire finish).
            jobs.requeue(job, now, now + HOLD_POLL, out)
            jobs.finish(job, now, Outcome.UNREACHED)
            return Requeue(job, now + HOLD_POLL, tuple(out))
        if self.cfg.crawl.rules or self.sites:
            cause = self._refused_now(job)
            if cause is not None:
                # Queued under rules since changed live (``adopt``): never requested now.
                self.summary.excluded[cause] += 1
                self.refused_queued[str(cause)] += 1
                out.append(Done(job.url))
                jobs.finish(job, now, Outcome.NOT_STARTED)
                return Drop(job, tuple(out))
        budgets = self.budgets
        page = budgets.active and not self.sitemap_jobs.is_job(job.url) and not self.requisite_jobs.is_job(job.url)
        if page:
            spent = budgets.spent(job.host)
            if spent is not None:
                # Its host's, block's or domain's budget is spent: dropped unrequested,
                # counted as the budget's not-requested cause (peer.core.crawl.budgets rule 3).
                self.limits.dropped(spent)
                self.retries.forget(job.url)
                self.jobs.take_hops(job.url)
                out.append(Done(job.url))
                jobs.finish(job, now, Outcome.NOT_STARTED)
                return Drop(job, tuple(out))
        if self.limits.given_up(job.host):
            # Came back (a retry, a robots.txt wait) after its host was given up.
            self.rows.row(job, None, out, error="retry_after")
            jobs.finish(job, now, Outcome.NOT_STARTED)
            return Drop(job, tuple(out))
        holds = self.handoffs.holds
        if holds:
            held, expired = holds.held(job.host, now)
            out += [Warn(e.text) for e in expired]
            if held:
                jobs.requeue(job, now, now + HOLD_POLL, out)
                jobs.finish(job, now, Outcome.UNREACHED)
                return Requeue(job, now + HOLD_POLL, tuple(out))
        if lease is not None:
            # The host's own lease (ring.membership.hostgate): one that moved in a ring
            # change waits out the grace, every other host goes on. Before robots.txt:
            # that is a request to the host too.
            if not lease.may_fetch(job.host, now):
                self.lease_waits.refused(job.host, now)
                jobs.requeue(job, now, now + HOLD_POLL, out)
                jobs.finish(job, now, Outcome.UNREACHED)
                return Requeue(job, now + HOLD_POLL, tuple(out))
            self.lease_waits.let(job.host, now)
        if self.cfg.crawl.obey_robots:
            verdict = self.robots.check(job.host, job.url, now)
            if verdict is Verdict.FETCH:
                jobs.mark(job.url, ROBOTS)
                scheme = job.url.split(":", 1)[0]
                return FetchRobots(job, self.robots.robots_url(job.host, scheme), tuple(out))
            if verdict is Verdict.PENDING or verdict is Verdict.UNREACHABLE:
                # Held, not dropped: the robots.txt answer is on its way, or
                # the server may be back by the retry (RFC 9309 §2.3.1.4).
                later = now + ROBOTS_PENDING_WAIT
                if verdict is Verdict.UNREACHABLE:
                    later = max(later, self.robots.retry_at(job.host))
                jobs.requeue(job, now, later, out)
                jobs.finish(job, now, Outcome.UNREACHED)
                return Requeue(job, later, tuple(out))
            if verdict is Verdict.DISALLOW:
                # By the rules, or because robots.txt could not be read (rule 7).
                self.rows.row(job, None, out, error=self.robots.failure(job.host) or "robots")
                # No request: the host's next URL need not wait a delay for it.
                jobs.finish(job, now, Outcome.NOT_STARTED)
                return Drop(job, tuple(out))
            delay = self.robots.crawl_delay(job.host)
            if delay:
                # Again at every start: the frontier forgets idle hosts, and
                # their Crawl-delay floor with them.
                self.frontier.set_min_delay(job.host, delay, now)
        jobs.mark(job.url, FETCHING)
        if page:
            budgets.page(job.host)  # reserved before the request: one in flight counts (budgets rule 1)
        if self.sitemap_jobs.is_job(job.url):
            return FetchSitemap(job, self.cfg.sitemaps.max_bytes,
                                tuple(sorted(self.sitemaps.authorities(job.url))), tuple(out))
        return Fetch(job, tuple(out))

    def _refused_now(self, job: Job) -> Cause | None:
        """Why the URL rules in force refuse ``job``'s URL, or None (a sitemap job: never)."""
        if self.sitemap_jobs.is_job(job.url) or self.requisite_jobs.is_job(job.url):
            return None  # a requisite is judged by its own rules (peer.core.crawl.discovery note 7)
        return self.discovery.url_rules(job.url).excluded(job.url)

    # -- results (steps 4-6: peer.core.crawl.outcomes) ------------------------------

    def fetched(self, job: Job, res: FetchResult, now: float) -> bool:
        """The answer came: note the host's address and cookies; whether the body is HTML to parse."""
        return self.outcomes.fetched(job, res, now)

    def on_result(self, job: Job, res: FetchResult, parsed: Parsed | None, now: float) -> list[Effect]:
        """What a fetch result means: rows, discoveries, retries; the job is done."""
        if self.budgets.active and not self.requisite_jobs.is_job(job.url):
            self.budgets.received(job.host, res.raw_bytes)  # peer.core.crawl.budgets rule 2
        return self.outcomes.on_result(job, res, parsed, now)

    def on_robots(self, job: Job, res: FetchResult, now: float) -> list[Effect]:
        """The host's robots.txt answer (or failure) for the job that asked for it."""
        return self.outcomes.on_robots(job, res, now)

    def robots_cancelled(self, job: Job) -> None:
        """The robots.txt request was cancelled: the host's next job asks again."""
        self.outcomes.robots_cancelled(job)

    def internal(self, job: Job, exc_type: str, now: float) -> tuple[list[Effect], bool]:
        """Rule 8: an exception escaped the job; its row and done(), once. True: first of its type."""
        return self.outcomes.internal(job, exc_type, now)

    def keep_cookies(self, res: FetchResult) -> None:
        """The cookies a response set, into the jar (its host's cookies on), at its wall time."""
        if self.cookies is not None and res.set_cookies:
            self.cookies.store(res.url, res.set_cookies, res.received)

    # -- sitemaps and duplicates (peer.core.sitemaps.jobs, peer.core.dedupe.held) -----

    def on_sitemap(self, job: Job, res: FetchResult, sitemap: Sitemap | None, now: float) -> list[Effect]:
        """The sitemap's answer and its parse (None: not parsed, not a 2xx with a body)."""
        return self.sitemap_jobs.on_sitemap(job, res, sitemap, now)

    def is_sitemap_job(self, url: str) -> bool:
        """Whether the queued ``url`` is a sitemap to fetch, not a page."""
        return self.sitemap_jobs.is_job(url)

    def dup_answer(self, sender: str, a: NearAnswer, now: float) -> list[Effect]:
        """Band owner ``sender``'s answer; the page's links and row once it is decided."""
        return self.held.answer(sender, a, now)

    def reverdict(self, sender: str, fix: Reverdict) -> list[Effect]:
        """Member ``sender`` says one of this peer's pages is a copy of a better one (held rule 6)."""
        return self.held.reverdict(fix, remote=True)

    def dup_figures(self) -> dict[str, int]:
        """``dedupe.*`` counters and ``dedupe_*`` drops, non-zero only."""
        return self.held.figures()

    # -- the ring (peer.core.handoff.moves) -------------------------------------------

    def inflight_urls(self) -> list[tuple[str, str]]:
        """(url, host) of the jobs whose page request is on the wire now: a hand-off calls them fetched."""
        return self.jobs.fetching()

    def snapshot_queue(self) -> list[tuple[str, int]]:
        """(url, depth) of what a snapshot lists: queued (without a spill store; with one the
        heads are :meth:`snapshot_heads`) or in flight."""
        fr = self.frontier
        # Not the sitemap jobs: they are found again after a restart (peer/core/sitemaps/jobs.py rule 3).
        sitemaps = self.sitemap_jobs.queued()
        queued: list[tuple[str, int]] = []
        if fr.spill_store is None:
            # Nor the URLs handed to us as fetched while queued here: fetched already.
            elsewhere = self.handoffs.fetched_elsewhere
            queued = [(j.url, j.depth) for j in fr.iter_queued() if j.url not in sitemaps and not elsewhere(j.url)]
        queued += [(url, hd[1]) for url, hd in self.jobs.in_flight() if url not in sitemaps]
        queued += [(p.url, p.depth) for p in self.sieve.pending_urls()]
        return queued

    def snapshot_recovering(self) -> list[tuple[str, int]]:
        """A recovered journal's URLs not yet put back (:meth:`defer_recovered`), for a snapshot
        to list apart: a restart queues them as they are, behind every host's head and blocks,
        without looking for their hosts (peer/state/snapshot.py, format 3)."""
        return self._recovering[self._next_recovered:]

    def snapshot_heads(self) -> list[tuple[str, list[Any]]]:
        """With a spill store: (host, flat head) of the frontier's heads, for a snapshot to pack a
        host each (peer/state/spill.py, "Heads"); the filters of :meth:`snapshot_queue` applied
        to the few hosts they touch."""
        fr = self.frontier
        if fr.spill_store is None:
            return []
        heads = fr.heads()
        sitemaps = self.sitemap_jobs.queued()
        elsewhere = self.handoffs.fetched_elsewhere
        if not sitemaps and not self.handoffs.any_fetched_elsewhere:
            return heads
        out: list[tuple[str, list[Any]]] = []
        for host, flat in heads:
            keep: list[Any] = []
            for i in range(0, len(flat), 2):
                if flat[i] not in sitemaps and not elsewhere(flat[i]):
                    keep += flat[i:i + 2]
            if keep:
                out.append((host, keep))
        return out

    # -- figures (peer.core.crawl.figures) ----------------------------------------------

    def limits_figures(self, now: float, malformed: dict[str, int]) -> dict[str, int]:
        """Non-zero cap hits, held hosts, malformed answers, ceiling holds, internal errors, by name."""
        return limits_figures(self, now, malformed)

    def detail_lines(self, malformed: dict[str, int]) -> list[str]:
        """The summary's lines on remote input, politeness and the seen set (only what happened)."""
        return detail_lines(self, malformed)

    def progress_snapshot(self, now: float, elapsed: float, dns_hit_rate: float,
                          cluster_pages: int) -> ProgressSnapshot:
        """This peer's figures at ``now``, for :mod:`peer.core.run.progress` to format."""
        return progress_snapshot(self, now, elapsed, dns_hit_rate, cluster_pages)
