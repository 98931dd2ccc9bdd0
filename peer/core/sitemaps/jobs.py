"""The crawl core's sitemaps: found in robots.txt, seeds and indexes, fetched by their host's owner (pure).

A part of ``peer.core.crawl.core.CrawlCore`` (a mixin over
``peer.core.crawl.outcomes.Outcomes``, whose retries it shares). The
documents are read by ``peer.core.sitemaps.document`` (in a worker thread: a full one
costs about 0.66 s) and tracked by ``peer.core.sitemaps.tracker``; this module
decides what becomes of them.

Rules (``[sitemaps]`` config keys in brackets):

1. **Found.** A robots.txt answered 2xx names sitemaps in ``Sitemap:``
   lines [``from_robots``]: each is found at depth 0 with the authority of
   that robots.txt, the whole origin of the URL actually fetched
   (``host_authority``: the protocol's scope is per scheme, though the
   crawler reads one robots.txt for both). At most ``max_per_host`` lines
   of one robots.txt are read; the rest are ``host_cap``. The sitemap seeds
   [``seeds``] are found at depth 0 with their location's authority alone,
   at the start of every run. An index's children are found at its depth + 1
   with its authorities (those granted it and its own directory's).
2. **Owned.** A sitemap is fetched by the owner of *its* host: one found
   elsewhere is a ``Forward`` whose entry carries its depth and grants
   (``peer.core.sitemaps.hints``). A sitemap on a host out of the crawl's
   scope is not fetched (``out_of_scope``): the crawler requests no host
   the scope leaves out. The owner's ``SitemapTracker`` then says whether
   to fetch it (once; ``max_depth``; ``max_per_host``).
3. **Fetched as a job of its host.** A sitemap to fetch is queued in its
   host's frontier queue, so it waits for the host's pace and
   ``host_concurrency`` and is admitted like a page: robots.txt read first,
   a disallowed sitemap not requested. Admission says ``FetchSitemap``:
   the engine reads at most ``max_bytes`` (compressed; the parse bounds the
   inflated size) and parses it in a worker thread. It is never journaled
   nor given a row: a restarted peer finds it again (rule 1: its host's
   robots.txt is read again, the seeds found again). Its outcome is
   counted apart from pages (``sitemaps_fetched``, ``sitemap_failed`` by
   cause); 5xx, 429 and transport errors are retried like a page's.
4. **URLs.** Each URL a sitemap lists is discovered with ``Origin.SITEMAP``,
   through the same scope, caps, Bloom filter and ownership as a link, at
   depth 0: a site's own list of its pages is a list of starting points,
   so ``crawl.max_depth`` counts links followed from them (index nesting
   has its own cap, ``max_depth`` here). Its ``lastmod``, ``priority`` and
   ``changefreq`` go with it to its owner and into its page row.
5. **Counted.** Every problem of a parse (``peer.core.sitemaps.document.Problem``),
   every tracker refusal (``peer.core.sitemaps.tracker.Found``: a cap by its config
   key, ``max_depth``, ``max_per_host``), every sitemap out of scope and
   every malformed entry from a peer is a drop (refused input):
   ``Summary.sitemap_drops``,
   shown by the summary, ``stats.json``, ``ring status`` and the metrics
   as ``sitemap.<problem>``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from peer.core.crawl.state import RETRYABLE, UNREACHED_KINDS
from peer.core.crawl.decisions import Checking, Effect, Forward, Origin, Queued
from peer.core.frontier.frontier import Job, Outcome
from peer.core.crawl.limits import Hold
from peer.core.crawl.outcomes import Outcomes
from peer.core.sitemaps.document import Problem, Sitemap, host_authority, location_authority
from peer.core.sitemaps.hints import MALFORMED, SitemapJob, UrlHints, attach, detach
from peer.core.sitemaps.tracker import Found
from peer.core.urls.normalize import host_key, normalize, normalize_link
from peer.errors import URLError

if TYPE_CHECKING:
    from peer.core.http.result import FetchResult

__all__ = ["BAD_ENTRY", "OUT_OF_SCOPE", "REFUSALS", "SitemapSide"]

#: The drop of a forwarded entry whose tail is neither form (peer/core/sitemaps/hints.py rule 1).
BAD_ENTRY = "bad_entry"
#: The drop of a sitemap on a host out of the crawl's scope (rule 2).
OUT_OF_SCOPE = "out_of_scope"
#: How a tracker refusal is counted: a cap by its config key (as ``ring.vocabulary``
#: names caps), so an index too deep is not mistaken for a document nested too
#: deep (``Problem.TOO_DEEP``, also ``too_deep``).
REFUSALS = {Found.TOO_DEEP: "max_depth", Found.HOST_CAP: "max_per_host", Found.SEEN: "seen",
            Found.BAD_URL: "bad_url"}


class SitemapSide(Outcomes):
    """The sitemaps' part of ``CrawlCore`` (module docstring)."""

    def sitemap_seeds(self, now: float) -> list[Effect]:
        """The ``[sitemaps] seeds``, found at depth 0 (rule 1)."""
        out: list[Effect] = []
        for url in self.cfg.sitemaps.seeds:
            out += self.found_sitemap(url, SitemapJob(0), now)
        return out

    def robots_sitemaps(self, host: str, robots_url: str, now: float) -> list[Effect]:
        """The ``Sitemap:`` lines of ``host``'s robots.txt, just read from ``robots_url`` (rule 1)."""
        out: list[Effect] = []
        if not self.cfg.sitemaps.from_robots:
            return out
        grant = host_authority(robots_url)
        job = SitemapJob(0, frozenset([grant]) if grant is not None else frozenset())
        cap = self.cfg.sitemaps.max_per_host
        lines = self.robots.sitemaps(host)
        for url in lines[:cap]:
            out += self.found_sitemap(url, job, now)
        if len(lines) > cap:
            self.summary.sitemap_drops[REFUSALS[Found.HOST_CAP]] += len(lines) - cap
        return out

    def found_sitemap(self, url: str, job: SitemapJob, now: float, *, relay: bool = False) -> list[Effect]:
        """A sitemap found (rule 1): forwarded to its host's owner, or tracked and queued here (rule 2)."""
        drops = self.summary.sitemap_drops
        try:
            url = normalize(url)
            host = host_key(url)
        except URLError:
            drops[REFUSALS[Found.BAD_URL]] += 1
            return []
        if not self.scope.allows(url, 0, host=host):
            drops[OUT_OF_SCOPE] += 1
            return []
        owner = self._owner(host)
        if owner != self.peer_id:
            return [Forward(attach(url, job), job.depth, owner, relay, host)]
        decision = self.sitemaps.found(url, job.granted, job.depth, now)
        if decision is not Found.NEW:
            drops[REFUSALS[decision]] += 1
            return []
        self._sitemap_jobs[url] = job
        self._push(url, host, job.depth, now)
        return []

    def is_sitemap_job(self, url: str) -> bool:
        """Whether the queued ``url`` is a sitemap to fetch, not a page."""
        return url in self._sitemap_jobs

    def discover_entry(self, entry: str, depth: int, now: float, origin: Origin, hops: int = 0) -> list[Effect]:
        """A URL with a tail (peer/core/sitemaps/hints.py): a sitemap job, or a URL with hints."""
        url, tail = detach(entry)
        if tail is None or tail is MALFORMED:
            self.summary.sitemap_drops[BAD_ENTRY] += 1
            return []
        if isinstance(tail, SitemapJob):
            # Handed to us (a peer's batch, a reroute, the journal): it may be
            # the only copy, so the Outbox must not drop it as a repeat.
            return self.found_sitemap(url, tail, now, relay=True)
        assert isinstance(tail, UrlHints)
        return self.hinted(url, tail, depth, now, origin, hops)

    def hinted(self, url: str, hints: UrlHints, depth: int, now: float, origin: Origin,
               hops: int = 0) -> list[Effect]:
        """Discover ``url``; its ``hints`` are kept for its row here, or travel with it (rule 4)."""
        out = self.discover(url, depth, now, origin, hops)
        if not hints:
            return out
        if self.recrawl is not None and hints.lastmod is not None and not any(isinstance(e, Forward) for e in out):
            self.recrawl.sitemap_hint(url, hints, now)  # a seen URL's <lastmod> may make it due (revisit rule 5)
        for i, e in enumerate(out):
            if isinstance(e, (Queued, Checking)):
                self._hints[e.url] = hints
            elif isinstance(e, Forward):
                out[i] = Forward(attach(e.url, hints), e.depth, e.owner, e.relay, e.host)
        return out

    def on_sitemap(self, job: Job, res: FetchResult, sitemap: Sitemap | None, now: float) -> list[Effect]:
        """The sitemap's answer and its parse (None: not parsed, not a 2xx with a body): rules 3-5."""
        out: list[Effect] = []
        s = self.summary
        sj = self._sitemap_jobs.pop(job.url, None) or SitemapJob(job.depth)
        if res.address is not None:
            self.frontier.set_host_ip(job.host, res.address, now)
        status = res.status
        if res.error in RETRYABLE or (status is not None and (status >= 500 or status == 429)):
            retry_after = None
            if status in (429, 503):
                retry_after, _ = self.limits.retry_after(job.host, res.retry_after)
                self.frontier.backoff(job.host, now, retry_after)
                if retry_after:
                    self.limits.hold(job.host, Hold.RETRY_AFTER, now + retry_after)
            if self._retry(job, now, retry_after, out):
                self._sitemap_jobs[job.url] = sj
                self._finish(job, now, Outcome.FETCHED if status is not None else Outcome.FAILED)
                return out
        self._attempts.pop(job.url, None)
        if status is None:
            s.sitemap_failed[res.error or "unknown"] += 1
            self._finish(job, now, Outcome.UNREACHED if res.error in UNREACHED_KINDS else Outcome.FAILED)
            return out
        if 300 <= status < 400 and res.location:
            # Followed as a sitemap found again: the tracker ends a loop (rule 1 there).
            target = normalize_link(job.url, res.location)
            if target is not None:
                out += self.found_sitemap(target, SitemapJob(sj.depth, self.sitemaps.authorities(job.url)), now)
        elif not 200 <= status < 300 or sitemap is None:
            s.sitemap_failed[f"http_{status}" if not 200 <= status < 300 else "empty"] += 1
        else:
            s.sitemaps_fetched += 1
            s.sitemap_drops.update(sitemap.problems)
            if res.truncated and not sitemap.problems[Problem.TOO_LARGE]:
                s.sitemap_drops[Problem.TOO_LARGE.value] += 1  # cut by the fetch at max_bytes
            granted = set(self.sitemaps.authorities(job.url))
            own = location_authority(job.url)
            if own is not None:
                granted.add(own)
            child = SitemapJob(sj.depth + 1, frozenset(granted))
            for ref in sitemap.sitemaps:
                out += self.found_sitemap(ref.loc, child, now)
            for u in sitemap.urls:
                s.sitemap_urls += 1
                out += self.hinted(u.loc, UrlHints(u.lastmod, u.priority, u.changefreq), 0, now,
                                   Origin.SITEMAP)
        self._finish(job, now, Outcome.FETCHED)
        return out
