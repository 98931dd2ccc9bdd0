"""The crawl core's state and the few moves every part of it makes (pure).

``CrawlState`` holds what ``peer.core.crawl.core.CrawlCore`` decides with: the
scope, the Bloom filter and its exact sieve, the frontier, the robots cache,
the limits, the retry attempts and redirect hops, the hand-off holds, the
cookie jar (``peer.core.http.cookies``, when some host's cookies are on), and the
marks of the jobs in flight (rule 8 of peer/engine/crawler.py). The parts of
the core are mixins over it, one module each, split along the seams the core's
header numbers:

- ``peer.core.crawl.core``     discovery, scheduling, admission (steps 1-3)
- ``peer.core.crawl.outcomes``  results, retries, robots.txt answers (steps 4-6)
- ``peer.core.sitemaps.jobs`` sitemaps found, fetched by their host's owner, read
- ``peer.core.handoff.moves``  ring changes and hand-offs
- ``peer.core.crawl.figures``   the figures of the progress line, status and summary

The moves here are the ones more than one part makes: who owns a host, push
a URL, pass one on, a job's ``Frontier.done`` and requeue, and its row.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING

from peer.core.revisit.recrawl import Recrawl
from peer.core.seen.bloom import BloomFilter
from peer.core.seen.sieve import SeenSieve
from peer.core.config.cluster import ClusterConfig
from peer.core.http.cookies import CookieJar, CookieLimits
from peer.core.crawl.decisions import Done, Effect, Forward, Origin, Requeued, Row
from peer.core.frontier.frontier import CEILING_WINDOWS, Frontier, Job, Outcome
from peer.core.handoff.holds import Holds, Liveness
from peer.core.crawl.limits import Limits
from peer.core.page.extract import PageRules
from peer.core.crawl.robots import RobotsCache, product_token
from peer.core.sitemaps.hints import SitemapJob, UrlHints, attach
from peer.core.sitemaps.tracker import SitemapTracker
from peer.core.config.sites import SiteSettings
from peer.core.run.stats import Summary
from peer.core.urls.normalize import hostname
from peer.core.urls.scope import Scope
from peer.core.urls.rules import parse_url_rules

if TYPE_CHECKING:
    from peer.core.http.result import FetchResult
    from ring.hashring import HashRing

__all__ = ["CrawlState", "MAX_RETRIES"]

#: Attempts after the first for a transient failure (5xx, reset, timeout...).
MAX_RETRIES = 2
#: Transient error kinds worth a retry (a proxy down or overloaded, or its
#: upstream, is too); the rest (dns, blocked, the tls kinds, too_large,
#: protocol, proxy_auth) would fail the same way again.
RETRYABLE = frozenset({"connect", "reset", "timeout", "proxy", "proxy_refused"})
#: robots.txt failures no retry mends in this run: the name does not resolve
#: (the resolver caches that, too), the SSRF guard refuses every address, or
#: the proxy refuses the credentials read at start.
ROBOTS_FINAL = frozenset({"dns", "blocked", "proxy_auth"})
#: Error kinds of requests that never reached the server (frontier rule 5):
#: a proxy's failure is one, whoever's fault it was.
UNREACHED_KINDS = frozenset({"dns", "blocked", "connect", "proxy", "proxy_auth", "proxy_refused"})
#: How long a job waits when another task is fetching its host's robots.txt.
ROBOTS_PENDING_WAIT = 0.25
#: How often a job of a host held for a hand-off looks again.
HOLD_POLL = 0.1
#: Requests remembered so that one URL queued twice here is not fetched twice
#: (``CrawlCore.admit``): a URL may come back by two paths when hosts move
#: twice in a moment (one of ours re-routed back, and the same URL relayed by
#: a leaver), and the Bloom filter cannot say whether a URL it holds is
#: queued here. About 100 B a URL: 6.5 MB.
RECENT_ROWS = 65_536
#: Longest host key a HostStarts message carries (ring.messages.MAX_NAME).
MAX_HOST_KEY = 256
#: How far back a restarted peer counts its hosts' request starts: the
#: frontier's longest ceiling window.
CEILING_HORIZON = max(CEILING_WINDOWS)
#: Extraction failures logged before they are only counted.
EXTRACT_WARNINGS = 5
# What happened to a job so far, for rule 8: after an exception, the row and
# the done() it still needs, and nothing twice. _FETCHING: admit said Fetch,
# so the page's own request is (or was) on the wire; a hand-off calls only
# those jobs fetched (``inflight_urls``).
_DONE, _ROW, _REQUEUED, _ROBOTS, _FETCHING = 1, 2, 4, 8, 16


def _no_ip(host: str) -> str | None:
    return None


def _unknown(peer: str) -> bool | None:
    return None


class CrawlState:
    """The crawl core's mutable state (module docstring); ``CrawlCore`` is the whole core."""

    def __init__(self, cfg: ClusterConfig, peer_id: str, *, rng: random.Random | None = None,
                 peek_ip: Callable[[str], str | None] = _no_ip) -> None:
        self.cfg = cfg
        self.peer_id = peer_id
        crawl, pol = cfg.crawl, cfg.politeness
        self.scope = Scope.from_seeds(crawl.seeds, crawl.allow_hosts, crawl.deny_hosts, crawl.max_depth)
        #: crawl.rules and skip_extensions after the host scope; ``params``
        #: (strip_params, sort_query) are part of every URL's identity.
        self.urlrules = parse_url_rules(crawl, str(cfg.path))
        self.params = self.urlrules.params
        #: Each host's settings: [[site]] blocks over the global config (peer/core/config/sites.py).
        self.sites = sites = SiteSettings(cfg.sites, crawl, pol)
        self.frontier = Frontier(pol, politeness_for=(lambda h: sites.for_host(h).politeness) if sites else None)
        b = cfg.bloom
        self.bloom = BloomFilter(b.capacity, b.error_rate, growth=b.growth, max_capacity=b.max_capacity)
        #: The exact seen set's policy behind the Bloom filter (peer/core/seen/sieve.py).
        self.sieve = SeenSieve(b.disk_after, b.sieve_batch, b.sieve_wait)
        self.robots = RobotsCache(crawl.user_agent, max_crawl_delay=pol.max_crawl_delay,
                                  error_retry=crawl.robots_retry, max_failures=crawl.robots_tries,
                                  tokens=(lambda h: sites.for_host(h).token) if sites else None)
        self.limits = Limits.from_config(crawl, pol)
        #: What a page's parse reads besides anchors, and the token its meta robots may name.
        self.page_rules = PageRules(product_token(crawl.user_agent), crawl.follow_frames,
                                    crawl.follow_meta_refresh, crawl.follow_link_rel)
        self.summary = Summary()
        #: Jitter of the retry waits: injected, so a test sees the same waits.
        self.rng = rng or random.Random()
        #: The revisit schedule of a continuous crawl ([revisit] enabled), else None.
        self.recrawl = Recrawl(cfg.revisit, random.Random(self.rng.random())) if cfg.revisit.enabled else None
        #: The DNS cache's answer for a host name, without a lookup (resolver.peek).
        self.peek_ip = peek_ip
        #: Whether a peer is alive (True), dead (False) or unknown (None): the
        #: ring node's membership; hand-off holds ask it.
        self.alive: Liveness = _unknown
        #: How long a gained host waits for its previous owner's HandoffDone.
        self.hold_timeout = 0.0
        #: The ring of live members, or None alone (every host is ours).
        self.ring: HashRing | None = None
        self.holds = Holds()
        self.stopping = False
        self.leaving = False
        self.requested = 0                   # page rows whose request was made (max_pages)
        self.in_flight = 0
        self.handoffs_in = 0                 # seen URLs taken from hand-offs
        self._attempts: dict[str, int] = {}  # url -> retries so far (only retried URLs)
        self._hops: dict[str, int] = {}      # url -> redirects that led to it
        self._marks: dict[str, int] = {}     # url in flight -> _DONE | _ROW | ... (rule 8)
        self._inflight: dict[str, tuple[str, int]] = {}  # url -> (host, depth) in flight
        self._internal_seen: set[str] = set()
        # Handed-over URLs that were already queued here when they came:
        # dropped when their job comes up instead of fetched again.
        self._handed_seen: set[str] = set()
        # URLs handed to us as fetched (url -> host): passed on with our own
        # rows when their hosts move again, since only we hold them now.
        self._seen_in: dict[str, str] = {}
        # The URLs of the last RECENT_ROWS requests that wrote a row, oldest first.
        self._recent_rows: dict[str, None] = {}
        self._ip_politeness = bool(pol.ip_rate or pol.ip_concurrency)
        #: The sitemaps found of the hosts we own (peer/core/sitemaps/jobs.py).
        self.sitemaps = SitemapTracker(cfg.sitemaps.limits())
        # Queued jobs that are sitemaps, not pages: fetched apart, never a row.
        self._sitemap_jobs: dict[str, SitemapJob] = {}
        # A sitemap's hints for URLs queued here, until their row.
        self._hints: dict[str, UrlHints] = {}
        #: The cookies of the hosts we fetch (peer/core/http/cookies.py); None when
        #: no host has them on, so the default path costs one test.
        self.cookies: CookieJar | None = None
        if sites.any("cookies"):
            self.cookies = CookieJar(
                CookieLimits(crawl.cookie_max_bytes, crawl.cookies_per_host, crawl.cookies_max_total),
                enabled=lambda h: sites.for_host(h).cookies)
            self.summary.cookies = self.cookies.counts  # the jar's figures, for stats.json

    def discover(self, url: str, depth: int, now: float, origin: Origin, hops: int = 0, *,
                 host: str | None = None) -> list[Effect]:
        """A URL arrives from ``origin`` (``peer.core.crawl.core.CrawlCore.discover``)."""
        raise NotImplementedError

    def robots_sitemaps(self, host: str, robots_url: str, now: float) -> list[Effect]:
        """The sitemaps a robots.txt names (``peer.core.sitemaps.jobs.SitemapSide.robots_sitemaps``)."""
        raise NotImplementedError

    def keep_cookies(self, res: FetchResult) -> None:
        """The cookies a response set, into the jar (its host's cookies on), at its wall time."""
        if self.cookies is not None and res.set_cookies:
            self.cookies.store(res.url, res.set_cookies, res.received)

    def _owner(self, host: str) -> str:
        ring = self.ring
        return ring.owner(host) if ring is not None and len(ring) else self.peer_id

    def _push(self, url: str, host: str, depth: int, now: float) -> None:
        """Queue ``url``; with per-IP politeness, a host whose address is known shares its IP's budget."""
        fr = self.frontier
        fr.push(url, host, depth, now)
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
        job = self._sitemap_jobs.pop(url, None) if self._sitemap_jobs else None
        if job is not None:
            out.append(Forward(attach(url, job), depth, owner, True, host))
            return
        hints = self._hints.pop(url, None) if self._hints else None
        out.append(Forward(attach(url, hints), depth, owner, True, host))
        out.append(Done(url))

    def _finish(self, job: Job, now: float, outcome: Outcome) -> None:
        """``Frontier.done`` for the job, once (rule 1 of peer/engine/crawler.py)."""
        if job.url in self._marks:
            self._marks[job.url] |= _DONE
        self.frontier.done(job.host, now, outcome, job.url)

    def _requeue(self, job: Job, now: float, not_before: float, out: list[Effect]) -> None:
        if job.url in self._marks:
            self._marks[job.url] |= _REQUEUED
        self.frontier.requeue(job, now, not_before)
        out.append(Requeued(job.url, not_before))

    def _row(self, job: Job, res: FetchResult | None, out: list[Effect], *,
             final_url: str | None = None, title: str | None = None, n_links: int = 0,
             error: str | None = None, links: tuple[str, ...] = (),
             canonical: str | None = None, robots: tuple[bool, bool] | None = None) -> None:
        if job.url in self._marks:
            self._marks[job.url] |= _ROW
        if self._sitemap_jobs and job.url in self._sitemap_jobs:
            # A sitemap never leaves a page row: why it was not read is counted.
            del self._sitemap_jobs[job.url]
            self.summary.sitemap_failed[error or "unknown"] += 1
            return
        hints = self._hints.pop(job.url, None) if self._hints else None
        if res is not None:
            recent = self._recent_rows
            recent[job.url] = None
            if len(recent) > RECENT_ROWS:
                del recent[next(iter(recent))]
        s = self.summary
        s.pages += 1
        site = self.sites.for_host(job.host)
        if res is not None:
            self.requested += 1
            s.requested += 1
            if site.block >= 0:
                s.by_site[f"site[{site.block}]"] += 1
        elif error and error != "internal":
            s.not_requested[error] += 1
        if res is not None and res.status is not None:
            s.fetched += 1
            s.by_status[res.status] += 1
            s.bytes += len(res.body)
        if error:
            s.errors[error] += 1
        out.append(Row(
            url=job.url, final_url=final_url or job.url, host=job.host,
            status=None if res is None else res.status,
            content_type=None if res is None else res.content_type,
            bytes=0 if res is None else len(res.body), title=title, n_links=n_links,
            depth=job.depth, elapsed_ms=0.0 if res is None else res.elapsed * 1000.0, error=error,
            body=res.body if (res is not None and site.store_body) else None,
            links=links if site.store_links else (), canonical=canonical,
            noindex=None if robots is None else robots[0],
            nofollow=None if robots is None else robots[1],
            sitemap_lastmod=None if hints is None else hints.lastmod,
            sitemap_priority=None if hints is None else hints.priority,
            sitemap_changefreq=None if hints is None or hints.changefreq is None else hints.changefreq.value,
        ))

