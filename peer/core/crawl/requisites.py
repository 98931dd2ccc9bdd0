"""Page requisites: what a captured page embeds, fetched for the archive by its host's owner (pure).

``RequisiteJobs`` is a part of ``peer.core.crawl.core.CrawlCore``, on with
``[warc] requisites``. A page archived without its stylesheets, images and
fonts replays as bare text; an archiver fetches them with the page
(Heritrix's embed hops, wget's ``-p``, Browsertrix's browser). The URLs
come from ``peer.core.page.requisites``; this part decides their path.

Rules (``[warc]`` keys in brackets):

1. **Found.** A page answered 2xx and parsed as HTML yields its requisites
   at level 1; a requisite that is a stylesheet (``@import``, ``url()``) or
   an HTML frame yields its own at its level + 1, up to
   [``requisites_depth``]; deeper ones are counted (``max_depth``). One
   page or stylesheet gives at most [``requisites_per_page``]; the rest are
   counted (``max_per_page``). A requisite's redirect target is a
   requisite at the same level (an image behind a redirect is still the
   page's image; the seen set ends a loop). Nothing else of a requisite
   is read: an image or a script has no links, and a frame's links are
   not followed from here (``crawl.follow_frames`` makes them links of
   the page, followed as pages).
2. **Judged like a URL, but for scope.** A requisite is discovered with
   ``Origin.REQUISITE``: ``skip_extensions`` and include rules do not
   refuse it (they say which pages to crawl, not what a page needs),
   ``deny_hosts``, a matching exclude rule and the URL caps do
   (``peer.core.crawl.discovery`` note 7); [``requisites_other_hosts``]
   says whether a host outside ``allow_hosts`` may serve one (a CDN's).
   It goes through the Bloom filter like any URL, so a stylesheet shared
   by a thousand pages is fetched once, and a URL already crawled as a
   page is not fetched again.
3. **Owned and paced like a page.** A requisite whose host another peer
   owns is forwarded to it with its level as a tail (``<url> requisite
   <level>``, ``peer.core.sitemaps.hints``); the owner queues it in the
   host's frontier queue, so it waits for the host's delay, its
   ``host_concurrency``, its IP's budget and robots.txt, as every request
   does: requisites never raise a host's rate, they take turns in it.
4. **Not a page.** A requisite leaves no ``pages`` row and does not count
   toward ``max_pages`` (a real archiver's page budget counts pages, not
   the files that draw them); its record in the WARC file is its
   result, and the journal marks it done (``Done``). When ``max_pages``
   ends a crawl, the requisites still queued are not fetched.
5. **Counted.** ``Summary.requisites``: ``found`` (taken from a page or a
   stylesheet), ``queued`` here, ``forwarded`` to an owner, ``fetched``
   (an answer came), ``failed`` (none came), ``redirects``, ``css`` (found
   in stylesheets), ``refused`` (by the scope or a rule), and the caps'
   hits ``max_per_page``, ``max_depth``: the summary's ``requisites:``
   line, ``stats.json``, ``ring status`` and the metrics as
   ``requisites.<name>``.

A crash loses the marks of the requisites queued and not yet fetched: the
journal holds them as queued URLs, so a restarted peer fetches them as
pages (each with a row). That costs a few rows, never a missing file.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from peer.core.crawl.decisions import Checking, Discover, Done, Effect, Forward, Origin, Queued, Refused, Reason
from peer.core.crawl.jobs import ROW
from peer.core.crawl.outcomes import UNREACHED_KINDS
from peer.core.frontier.frontier import Job, Outcome
from peer.core.page.requisites import css_requisites, decode_css, is_css
from peer.core.sitemaps.hints import Requisite, attach
from peer.core.urls.normalize import normalize, normalize_link
from peer.errors import URLError

if TYPE_CHECKING:
    from peer.core.config.warc import WarcConfig
    from peer.core.crawl.jobs import Jobs
    from peer.core.crawl.limits import Limits
    from peer.core.crawl.outcomes import Retries
    from peer.core.frontier.frontier import Frontier
    from peer.core.http.result import FetchResult
    from peer.core.page.parse import Parsed
    from peer.core.urls.rules import ParamRules

__all__ = ["RequisiteJobs"]


class RequisiteJobs:
    """The requisites' part of ``CrawlCore`` (module docstring)."""

    __slots__ = ("enabled", "counts", "_per_page", "_depth", "_params", "_discover", "_jobs", "_retries",
                 "_limits", "_frontier", "_queued")

    def __init__(self, cfg: WarcConfig, *, params: ParamRules | None, discover: Discover, jobs: Jobs,
                 retries: Retries, limits: Limits, frontier: Frontier, counts: Counter[str]) -> None:
        #: ``[warc] requisites``: whether pages give requisites at all.
        self.enabled = cfg.enabled and cfg.requisites
        #: Rule 5's figures (``Summary.requisites``).
        self.counts = counts
        self._per_page = cfg.requisites_per_page
        self._depth = cfg.requisites_depth
        self._params = params
        self._discover = discover
        self._jobs = jobs
        self._retries = retries
        self._limits = limits
        self._frontier = frontier
        # Requisites queued here (or waiting for the exact seen set), by level: a
        # job among them is fetched as a requisite, not as a page (rule 4).
        self._queued: dict[str, int] = {}

    def is_job(self, url: str) -> bool:
        """Whether the queued ``url`` is a requisite to fetch, not a page."""
        return bool(self._queued) and url in self._queued

    def take_level(self, url: str) -> Requisite | None:
        """The mark of the requisite ``url``, which leaves this peer (its host moved), or None."""
        level = self._queued.pop(url, None) if self._queued else None
        return None if level is None else Requisite(level)

    # -- found and arrived (rules 1-3) ----------------------------------------------------

    def found(self, urls: tuple[str, ...], level: int, depth: int, now: float, *, css: bool = False) -> list[Effect]:
        """Requisites at ``level`` of a page found at ``depth`` (rule 1): discovered, or counted."""
        if not self.enabled or not urls:
            return []
        counts = self.counts
        if level > self._depth:
            counts["max_depth"] += len(urls)
            return []
        take = urls[:self._per_page]
        if len(urls) > len(take):
            counts["max_per_page"] += len(urls) - len(take)
        counts["found"] += len(take)
        if css:
            counts["css"] += len(take)
        out: list[Effect] = []
        for url in take:
            self._take(url, level, depth, now, out, relay=False)
        return out

    def arrived(self, url: str, level: int, depth: int, now: float) -> list[Effect]:
        """A requisite forwarded to us (remote input: normalised again) or put back (rule 3)."""
        try:
            url = normalize(url, self._params)
        except URLError:
            return [Refused(url, Reason.BAD_URL)]
        out: list[Effect] = []
        self._take(url, level, depth, now, out, relay=True)
        return out

    def _take(self, url: str, level: int, depth: int, now: float, out: list[Effect], *, relay: bool) -> None:
        counts = self.counts
        for e in self._discover(url, depth, now, Origin.REQUISITE):
            if isinstance(e, Queued):
                self._queued[e.url] = level
                counts["queued"] += 1
            elif isinstance(e, Checking):
                self._queued[e.url] = level  # queued by the sieve's verdict, if new
            elif isinstance(e, Forward):
                counts["forwarded"] += 1
                # Handed to us, it may be the only copy: the Outbox must not drop it as a repeat.
                e = Forward(attach(e.url, Requisite(level)), e.depth, e.owner, relay or e.relay, e.host)
            elif isinstance(e, Refused) and e.reason is not Reason.SEEN:
                counts["refused"] += 1
            out.append(e)

    # -- fetched (rules 1, 4) -------------------------------------------------------------

    def on_result(self, job: Job, res: FetchResult, parsed: Parsed | None, now: float) -> list[Effect]:
        """A requisite's answer: what it loads in turn (a stylesheet's, a frame's), and its ``Done``."""
        out: list[Effect] = []
        level = self._queued.pop(job.url, 1)
        status = res.status
        jobs = self._jobs
        # Retried as a page is: back through the host's queue and its pace.
        if self._retries.side_job(job, res, now, self._limits, self._frontier, out):
            self._queued[job.url] = level
            jobs.finish(job, now, Outcome.FETCHED if status is not None else Outcome.FAILED)
            return out
        self._retries.forget(job.url)
        counts = self.counts
        jobs.mark(job.url, ROW)  # its record is this Done: an exception from here on writes no page row
        jobs.requested(job.url)
        if status is None:
            counts["failed"] += 1
            out.append(Done(job.url))
            jobs.finish(job, now, Outcome.UNREACHED if res.error in UNREACHED_KINDS else Outcome.FAILED)
            return out
        counts["fetched"] += 1
        if 300 <= status < 400 and res.location:
            target = normalize_link(job.url, res.location, self._params)
            if target is not None:
                counts["redirects"] += 1
                self._take(target, level, job.depth, now, out, relay=False)
        elif 200 <= status < 300:
            if parsed is not None:
                out += self.found(parsed.requisites, level + 1, job.depth, now)
            elif res.body and is_css(res.content_type, job.url):
                text = decode_css(res.body, res.charset)
                out += self.found(css_requisites(job.url, text, self._params), level + 1, job.depth, now,
                                  css=True)
        out.append(Done(job.url))
        jobs.finish(job, now, Outcome.FETCHED)
        return out
