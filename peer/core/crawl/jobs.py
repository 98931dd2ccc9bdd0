"""The jobs in flight and the row each leaves: two parts of ``peer.core.crawl.core.CrawlCore`` (pure).

``Jobs`` holds what the core knows of the jobs started and not ended: their
marks for rule 8 of peer/engine/crawler.py (after an exception, a job gets
the row and the ``Frontier.done`` it still needs, and nothing twice), the
redirect hops that led to a URL, and the URLs of the last
:data:`RECENT_ROWS` requests. It makes the two frontier moves every part
of a job's life makes, ``finish`` and ``requeue``, so that each is marked.

``Rows`` makes a job's ``Row`` and counts it in the ``Summary``: pages,
requests (``requested``, ``max_pages``'s count), statuses, errors and the
causes of rows written without a request. A sitemap job never leaves a
page row (``peer.core.sitemaps.jobs`` rule 3): its failure is counted there
instead; a URL a sitemap listed takes its hints into its row.
"""

from __future__ import annotations

from collections.abc import ItemsView
from typing import TYPE_CHECKING, Protocol

from peer.core.crawl.decisions import Effect, Requeued, Row
from peer.core.frontier.frontier import Frontier, Job, Outcome

if TYPE_CHECKING:
    from peer.core.config.sites import SiteSettings
    from peer.core.http.result import FetchResult
    from peer.core.run.stats import Summary
    from peer.core.sitemaps.hints import UrlHints

__all__ = ["Jobs", "Rows", "RowHooks", "RECENT_ROWS", "DONE", "ROW", "REQUEUED", "ROBOTS", "FETCHING"]

#: Requests remembered so that one URL queued twice here is not fetched twice
#: (``CrawlCore.admit``): a URL may come back by two paths when hosts move
#: twice in a moment (one of ours re-routed back, and the same URL relayed by
#: a leaver), and the Bloom filter cannot say whether a URL it holds is
#: queued here. About 100 B a URL: 6.5 MB.
RECENT_ROWS = 65_536

# What happened to a job so far, for rule 8. FETCHING: admit said Fetch, so
# the page's own request is (or was) on the wire; a hand-off calls only those
# jobs fetched (``Jobs.fetching``). Plain ints, not an IntFlag: a job is
# marked three or four times, and ``int |= IntFlag`` takes the flag's slow
# reflected ``__ror__``.
DONE, ROW, REQUEUED, ROBOTS, FETCHING = 1, 2, 4, 8, 16


class Jobs:
    """The jobs in flight: their marks, their hosts and depths, redirect hops, recent rows."""

    __slots__ = ("_frontier", "count", "_marks", "_inflight", "_hops", "_recent")

    def __init__(self, frontier: Frontier) -> None:
        self._frontier = frontier
        #: Jobs started and not ended (``CrawlCore.in_flight``).
        self.count = 0
        self._marks: dict[str, int] = {}                 # url in flight -> DONE | ROW | ...
        self._inflight: dict[str, tuple[str, int]] = {}  # url in flight -> (host, depth)
        self._hops: dict[str, int] = {}                  # url -> redirects that led to it
        self._recent: dict[str, None] = {}               # the last RECENT_ROWS rows' URLs, oldest first

    # -- a job's life --------------------------------------------------------------

    def started(self, job: Job) -> None:
        self.count += 1
        self._inflight[job.url] = (job.host, job.depth)
        self._marks[job.url] = 0

    def ended(self, job: Job) -> None:
        self._marks.pop(job.url, None)
        self._inflight.pop(job.url, None)
        self.count -= 1

    def mark(self, url: str, flag: int) -> None:
        """Note ``flag`` for the job of ``url``, if it is one in flight."""
        marks = self._marks
        if url in marks:
            marks[url] |= flag

    def marks(self, url: str) -> int:
        """What happened to the job of ``url`` so far (0: nothing, or not in flight)."""
        return self._marks.get(url, 0)

    def finish(self, job: Job, now: float, outcome: Outcome) -> None:
        """``Frontier.done`` for the job, once (rule 1 of peer/engine/crawler.py)."""
        self.mark(job.url, DONE)
        self._frontier.done(job.host, now, outcome, job.url)

    def requeue(self, job: Job, now: float, not_before: float, out: list[Effect]) -> None:
        """The job back to its host's queue, not before ``not_before``."""
        self.mark(job.url, REQUEUED)
        self._frontier.requeue(job, now, not_before)
        out.append(Requeued(job.url, not_before))

    def fetching(self) -> list[tuple[str, str]]:
        """(url, host) of the jobs whose page request is on the wire now (admit said ``Fetch``).

        A hand-off calls these fetched (``CrawlCore.inflight_urls``). Not the
        other jobs in flight: one started whose task has not run ``admit``
        yet, or one waiting for its host's robots.txt, comes back to
        ``admit`` after the ring changed and is passed on to its new owner
        (``PassOn``), which would drop it as seen if it were in the hand-off
        too: a URL fetched by nobody.
        """
        marks = self._marks
        return [(url, hd[0]) for url, hd in self._inflight.items() if marks.get(url, 0) & FETCHING]

    def in_flight(self) -> ItemsView[str, tuple[str, int]]:
        """(url, (host, depth)) of every job in flight."""
        return self._inflight.items()

    # -- redirect hops -------------------------------------------------------------

    def set_hops(self, url: str, hops: int) -> None:
        """``url`` was queued at the end of ``hops`` redirects."""
        self._hops[url] = hops

    def take_hops(self, url: str) -> int:
        """The redirects that led to ``url`` (0: none), forgotten."""
        return self._hops.pop(url, 0)

    # -- recent rows ---------------------------------------------------------------

    def requested(self, url: str) -> None:
        """A request for ``url`` wrote a row."""
        recent = self._recent
        recent[url] = None
        if len(recent) > RECENT_ROWS:
            del recent[next(iter(recent))]

    def recently_requested(self, url: str) -> bool:
        """Whether one of the last :data:`RECENT_ROWS` requests with a row was ``url``'s."""
        return url in self._recent


class RowHooks(Protocol):
    """What a row asks of the sitemap jobs (``peer.core.sitemaps.jobs.SitemapJobs``)."""

    def failed(self, url: str, error: str | None) -> bool: ...
    def take_hints(self, url: str) -> UrlHints | None: ...


class Rows:
    """A job's ``Row``, counted in the ``Summary``; ``requested`` is ``max_pages``'s count."""

    __slots__ = ("_summary", "_sites", "_jobs", "_sitemaps", "requested")

    def __init__(self, summary: Summary, sites: SiteSettings, jobs: Jobs, sitemaps: RowHooks) -> None:
        self._summary = summary
        self._sites = sites
        self._jobs = jobs
        self._sitemaps = sitemaps
        #: Page rows whose request was made (``max_pages``); set on recovery.
        self.requested = 0

    def rescope(self, sites: SiteSettings) -> None:
        """The ``[[site]]`` blocks in force from now on (a live change: ``CrawlCore.adopt``)."""
        self._sites = sites

    def row(self, job: Job, res: FetchResult | None, out: list[Effect], *,
            final_url: str | None = None, title: str | None = None, n_links: int = 0,
            error: str | None = None, links: tuple[str, ...] = (),
            canonical: str | None = None, robots: tuple[bool, bool] | None = None) -> None:
        """The job's row into ``out`` (``res`` None: no request was made), counted."""
        self._jobs.mark(job.url, ROW)
        if self._sitemaps.failed(job.url, error):
            return  # a sitemap never leaves a page row: why it was not read is counted
        hints = self._sitemaps.take_hints(job.url)
        if res is not None:
            self._jobs.requested(job.url)
        s = self._summary
        s.pages += 1
        site = self._sites.for_host(job.host)
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
            s.wire_bytes += res.raw_bytes
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
