"""The crawl core's sitemaps: found in robots.txt, seeds and indexes, fetched by their host's owner (pure).

``SitemapJobs`` is a part of ``peer.core.crawl.core.CrawlCore``: it owns the
sitemaps found (``peer.core.sitemaps.tracker``), the queued jobs that are
sitemaps, and a sitemap's hints for the URLs queued here until their row;
it reaches the rest of the core through what it is handed (who owns a
host, push a job, discover a URL, the retries). The documents are read by
``peer.core.sitemaps.document`` (in a worker thread: a full one costs about
0.66 s); this module decides what becomes of them.

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
   ``changefreq`` go with it to its owner and into its page row, whichever
   way the URL came first: a URL the owner has seen already (a link
   reached it before the sitemap was read, as it does for most of a site
   whose home page links its sections) keeps them for its next row (a
   first visit still queued or in flight, or a revisit), and a ``Hinted``
   effect has the store fill the row written already, if any. They are
   held until that row, one entry a URL, as for a URL queued now (a URL
   among the last ``RECENT_ROWS`` rows is not held: its row is written).
5. **Counted.** Every problem of a parse (``peer.core.sitemaps.document.Problem``),
   every tracker refusal (``peer.core.sitemaps.tracker.Found``: a cap by its config
   key, ``max_depth``, ``max_per_host``), every sitemap out of scope and
   every malformed entry from a peer is a drop (refused input):
   ``Summary.sitemap_drops``,
   shown by the summary, ``stats.json``, ``ring status`` and the metrics
   as ``sitemap.<problem>``.
"""

from __future__ import annotations

from collections.abc import Callable, KeysView
from typing import TYPE_CHECKING

from peer.core.crawl.decisions import Checking, Discover, Effect, Forward, Hinted, Origin, Queued, Reason, Refused
from peer.core.crawl.outcomes import UNREACHED_KINDS
from peer.core.frontier.frontier import Job, Outcome
from peer.core.frontier.order import sitemap_boost
from peer.core.sitemaps.document import Problem, Sitemap, host_authority, location_authority
from peer.core.sitemaps.hints import MALFORMED, SitemapJob, UrlHints, attach, detach
from peer.core.sitemaps.tracker import Found, SitemapTracker
from peer.core.urls.normalize import host_key, normalize, normalize_link
from peer.errors import URLError

if TYPE_CHECKING:
    from peer.core.config.sitemaps import SitemapsConfig
    from peer.core.crawl.jobs import Jobs
    from peer.core.crawl.limits import Limits
    from peer.core.crawl.outcomes import Retries
    from peer.core.crawl.robots import RobotsCache
    from peer.core.frontier.frontier import Frontier
    from peer.core.http.result import FetchResult
    from peer.core.revisit.recrawl import Recrawl
    from peer.core.run.stats import Summary
    from peer.core.urls.scope import Scope

__all__ = ["BAD_ENTRY", "OUT_OF_SCOPE", "REFUSALS", "SitemapJobs"]

#: The drop of a forwarded entry whose tail is neither form (peer/core/sitemaps/hints.py rule 1).
BAD_ENTRY = "bad_entry"
#: The drop of a sitemap on a host out of the crawl's scope (rule 2).
OUT_OF_SCOPE = "out_of_scope"
#: How a tracker refusal is counted: a cap by its config key (as ``ring.vocabulary``
#: names caps), so an index too deep is not mistaken for a document nested too
#: deep (``Problem.TOO_DEEP``, also ``too_deep``).
REFUSALS = {Found.TOO_DEEP: "max_depth", Found.HOST_CAP: "max_per_host", Found.SEEN: "seen",
            Found.BAD_URL: "bad_url"}

class SitemapJobs:
    """The sitemaps' part of ``CrawlCore`` (module docstring)."""

    __slots__ = ("tracker", "_cfg", "_scope", "_summary", "_robots", "_frontier", "_limits", "_jobs",
                 "_retries", "_me", "_owner", "_push", "_discover", "_recrawl", "_queued", "_hints")

    def __init__(self, cfg: SitemapsConfig, *, me: str, scope: Scope, summary: Summary,
                 robots: RobotsCache, frontier: Frontier, limits: Limits, jobs: Jobs, retries: Retries,
                 recrawl: Recrawl | None, owner: Callable[[str], str],
                 push: Callable[[str, str, int, float], None], discover: Discover) -> None:
        self._cfg = cfg
        #: The sitemaps found of the hosts we own (``CrawlCore.sitemaps``).
        self.tracker = SitemapTracker(cfg.limits())
        self._me = me
        self._scope = scope
        self._summary = summary
        self._robots = robots
        self._frontier = frontier
        self._limits = limits
        self._jobs = jobs
        self._retries = retries
        self._recrawl = recrawl
        self._owner = owner
        self._push = push
        self._discover = discover
        # Queued jobs that are sitemaps, not pages: fetched apart, never a row.
        self._queued: dict[str, SitemapJob] = {}
        # A sitemap's hints for URLs queued here, until their row.
        self._hints: dict[str, UrlHints] = {}

    # -- found (rules 1, 2) ---------------------------------------------------------

    def seeds(self, now: float) -> list[Effect]:
        """The ``[sitemaps] seeds``, found at depth 0 (rule 1)."""
        out: list[Effect] = []
        for url in self._cfg.seeds:
            out += self.found(url, SitemapJob(0), now)
        return out

    def robots_sitemaps(self, host: str, robots_url: str, now: float) -> list[Effect]:
        """The ``Sitemap:`` lines of ``host``'s robots.txt, just read from ``robots_url`` (rule 1)."""
        out: list[Effect] = []
        if not self._cfg.from_robots:
            return out
        grant = host_authority(robots_url)
        job = SitemapJob(0, frozenset([grant]) if grant is not None else frozenset())
        cap = self._cfg.max_per_host
        lines = self._robots.sitemaps(host)
        for url in lines[:cap]:
            out += self.found(url, job, now)
        if len(lines) > cap:
            self._summary.sitemap_drops[REFUSALS[Found.HOST_CAP]] += len(lines) - cap
        return out

    def found(self, url: str, job: SitemapJob, now: float, *, relay: bool = False) -> list[Effect]:
        """A sitemap found (rule 1): forwarded to its host's owner, or tracked and queued here (rule 2)."""
        drops = self._summary.sitemap_drops
        try:
            url = normalize(url)
            host = host_key(url)
        except URLError:
            drops[REFUSALS[Found.BAD_URL]] += 1
            return []
        if not self._scope.allows(url, 0, host=host):
            drops[OUT_OF_SCOPE] += 1
            return []
        owner = self._owner(host)
        if owner != self._me:
            return [Forward(attach(url, job), job.depth, owner, relay, host)]
        decision = self.tracker.found(url, job.granted, job.depth, now)
        if decision is not Found.NEW:
            drops[REFUSALS[decision]] += 1
            return []
        self._queued[url] = job
        self._push(url, host, job.depth, now)
        return []

    # -- the queued jobs and the hints, for the rest of the core -----------------------

    def is_job(self, url: str) -> bool:
        """Whether the queued ``url`` is a sitemap to fetch, not a page."""
        return url in self._queued

    def queued(self) -> KeysView[str]:
        """The URLs of the sitemap jobs queued or in flight."""
        return self._queued.keys()

    def take_job(self, url: str) -> SitemapJob | None:
        """The sitemap job of ``url``, which leaves this peer (its host moved), or None."""
        return self._queued.pop(url, None) if self._queued else None

    def take_hints(self, url: str) -> UrlHints | None:
        """The hints a sitemap gave for ``url``, for its row or its journey on, or None."""
        return self._hints.pop(url, None) if self._hints else None

    def failed(self, url: str, error: str | None) -> bool:
        """A row is due for ``url``: True if it is a sitemap job, whose failure is counted instead (rule 3)."""
        if self._queued and url in self._queued:
            del self._queued[url]
            self._summary.sitemap_failed[error or "unknown"] += 1
            return True
        return False

    # -- entries and URLs (rule 4) ----------------------------------------------------

    def entry(self, entry: str, depth: int, now: float, origin: Origin, hops: int = 0) -> list[Effect]:
        """A URL with a tail (peer/core/sitemaps/hints.py): a sitemap job, or a URL with hints."""
        url, tail = detach(entry)
        if tail is None or tail is MALFORMED:
            self._summary.sitemap_drops[BAD_ENTRY] += 1
            return []
        if isinstance(tail, SitemapJob):
            # Handed to us (a peer's batch, a reroute, the journal): it may be
            # the only copy, so the Outbox must not drop it as a repeat.
            return self.found(url, tail, now, relay=True)
        assert isinstance(tail, UrlHints)
        return self.hinted(url, tail, depth, now, origin, hops)

    def hinted(self, url: str, hints: UrlHints, depth: int, now: float, origin: Origin,
               hops: int = 0) -> list[Effect]:
        """Discover ``url``; its ``hints`` are kept for its row here, or travel with it (rule 4)."""
        # Its <priority> orders its host's queue (frontier rule 11), where it is queued.
        out = self._discover(url, depth, now, origin, hops, boost=sitemap_boost(hints.priority))
        if not hints:
            return out
        if self._recrawl is not None and hints.lastmod is not None and not any(isinstance(e, Forward) for e in out):
            self._recrawl.sitemap_hint(url, hints, now)  # a seen URL's <lastmod> may make it due (revisit rule 5)
        late: list[Effect] = []
        for i, e in enumerate(out):
            if isinstance(e, (Queued, Checking)):
                self._hints[e.url] = hints
            elif isinstance(e, Forward):
                out[i] = Forward(attach(e.url, hints), e.depth, e.owner, e.relay, e.host)
            elif isinstance(e, Refused) and e.reason is Reason.SEEN:
                # Seen first (rule 4): for its row to come, unless it is written, and for the row written.
                if not self._jobs.recently_requested(e.url):
                    self._hints[e.url] = hints
                late.append(Hinted(e.url, hints.lastmod, hints.priority,
                                   None if hints.changefreq is None else hints.changefreq.value))
        return out + late if late else out

    # -- fetched (rules 3-5) ------------------------------------------------------------

    def on_sitemap(self, job: Job, res: FetchResult, sitemap: Sitemap | None, now: float) -> list[Effect]:
        """The sitemap's answer and its parse (None: not parsed, not a 2xx with a body): rules 3-5."""
        out: list[Effect] = []
        s = self._summary
        jobs = self._jobs
        sj = self._queued.pop(job.url, None) or SitemapJob(job.depth)
        if res.address is not None:
            self._frontier.set_host_ip(job.host, res.address, now)
        status = res.status
        if self._retries.side_job(job, res, now, self._limits, self._frontier, out):
            self._queued[job.url] = sj
            jobs.finish(job, now, Outcome.FETCHED if status is not None else Outcome.FAILED)
            return out
        self._retries.forget(job.url)
        if status is None:
            s.sitemap_failed[res.error or "unknown"] += 1
            jobs.finish(job, now, Outcome.UNREACHED if res.error in UNREACHED_KINDS else Outcome.FAILED)
            return out
        if 300 <= status < 400 and res.location:
            # Followed as a sitemap found again: the tracker ends a loop (rule 1 there).
            target = normalize_link(job.url, res.location)
            if target is not None:
                out += self.found(target, SitemapJob(sj.depth, self.tracker.authorities(job.url)), now)
        elif not 200 <= status < 300 or sitemap is None:
            s.sitemap_failed[f"http_{status}" if not 200 <= status < 300 else "empty"] += 1
        else:
            s.sitemaps_fetched += 1
            s.sitemap_drops.update(sitemap.problems)
            if res.truncated and not sitemap.problems[Problem.TOO_LARGE]:
                s.sitemap_drops[Problem.TOO_LARGE.value] += 1  # cut by the fetch at max_bytes
            granted = set(self.tracker.authorities(job.url))
            own = location_authority(job.url)
            if own is not None:
                granted.add(own)
            child = SitemapJob(sj.depth + 1, frozenset(granted))
            for ref in sitemap.sitemaps:
                out += self.found(ref.loc, child, now)
            for u in sitemap.urls:
                s.sitemap_urls += 1
                out += self.hinted(u.loc, UrlHints(u.lastmod, u.priority, u.changefreq), 0, now,
                                   Origin.SITEMAP)
        jobs.finish(job, now, Outcome.FETCHED)
        return out
