"""The crawl engine's side of continuous crawling: conditional GETs, visits recorded, ``run_for`` (edge).

A part of ``peer.engine.crawler.Crawler``; the schedule itself is the
crawl core's (:mod:`peer.core.revisit.recrawl`). This part does three things the
core cannot, being pure:

- before a fetch it asks for the request's validators
  (``If-None-Match``/``If-Modified-Since``, RFC 9110 §13.1): an empty tuple
  for a first visit, so a crawl without revisits pays one ``is None``;
- after the fetch it keeps what the row will need (the payload's SHA-1,
  the answer's ETag and Last-Modified) until the page's ``Row`` effect,
  which carries the sitemap's hints that seed a first interval; there the
  visit is recorded: the URL is scheduled again and one ``fetches`` row
  written (peer/results/fetches.py rule 1: in the batch of its page row);
- a 304 to a conditional GET keeps the stored ``pages`` row: the page did
  not change and the answer has no body to store over it. Its visit is in
  ``fetches``; with ``[warc]`` on, :meth:`Revisits._archive` writes it as a
  ``revisit`` record (ISO 28500 §6.7), as it does a 200 with the last digest.

``revisit.run_for`` stops the crawl after that many seconds (0: never;
SIGINT/SIGTERM stop it as any crawl).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import trio

from peer.core.crawl.decisions import Row
from peer.core.frontier.frontier import Job
from peer.core.revisit.hostmix import Kind
from peer.core.revisit.policy import Change
from peer.core.warc.record import digest
from peer.engine.parts import CrawlerParts
from peer.core.http.result import FetchResult

__all__ = ["Revisits", "payload_digest", "revisit_profile"]

log = logging.getLogger("peer.engine")


def payload_digest(body: bytes) -> str:
    """The payload's digest as WARC writes it (``sha1:`` and base32, ISO 28500 §5.9)."""
    return digest(body)


def revisit_profile(status: int | None, earlier: str | None, digest: str | None) -> Any:
    """The WARC ``revisit`` profile a revisit's answer is written with, or None for a
    ``response`` record: a 304 is server-not-modified (ISO 28500 §6.7.3); a 200 whose
    body has the last visit's digest is identical-payload-digest (§6.7.2)."""
    from peer.core.warc.record import RevisitProfile

    if status == 304:
        return RevisitProfile.SERVER_NOT_MODIFIED
    if status == 200 and earlier is not None and digest == earlier:
        return RevisitProfile.IDENTICAL_PAYLOAD
    return None


class Revisits(CrawlerParts):
    """Conditional GETs and visit records of a continuous crawl (module docstring)."""

    #: url -> (status, digest, etag, last_modified) of a fetch whose row is to come.
    _answers: dict[str, tuple[int | None, str | None, str | None, str | None]]
    archive: Any  # peer.engine.archive.Archive | None: the crawler's

    def _revisit_headers(self, job: Job) -> tuple[tuple[str, str], ...]:
        rc = self.core.recrawl
        return () if rc is None else rc.conditional(job.url)

    def _revisit_answer(self, job: Job, res: FetchResult) -> None:
        if self.core.recrawl is None:
            return
        digest = None if res.status is None or res.status == 304 or res.error is not None else payload_digest(res.body)
        self._answers[job.url] = (res.status, digest, res.etag, res.last_modified)

    def _revisit_row(self, e: Row) -> tuple[bool, bool]:
        """Record ``e``'s visit: (write its ``pages`` row, over the URL's earlier one).

        A row of a URL never fetched (robots.txt, scope, a cap) is no visit:
        only fetched URLs are scheduled. A 304 writes no ``pages`` row.
        """
        rc = self.core.recrawl
        if rc is None:
            return True, False
        answer = self._answers.pop(e.url, None)
        if answer is None and not rc.is_revisit(e.url):
            return True, False
        status, digest, etag, lm = answer or (None, None, None, None)
        now = self.clock()
        visit = rc.visited(e.url, e.host, e.depth, now, status, digest, etag, lm,
                           e.sitemap_changefreq, e.sitemap_lastmod)
        wall = time.time()
        if self._store is not None:
            self._store.add_fetch((
                e.url, e.host, wall, visit.kind.value, status, visit.change.value,
                visit.change is Change.CHANGED, digest, visit.etag, visit.last_modified,
                visit.conditional, e.bytes, e.elapsed_ms, e.error, visit.interval_before,
                visit.interval_after, wall + (visit.next_due - now), self.peer_id))
        return visit.change is not Change.NOT_MODIFIED, visit.kind is Kind.REVISIT

    async def _archive(self, job: Job, res: FetchResult) -> None:
        """The WARC records of a page's fetch: a 304 to a revisit is a ``revisit`` record of
        the server-not-modified profile (ISO 28500 §6.7.3) referring to the last capture;
        anything else a ``response`` (peer/engine/archive.py)."""
        archive = self.archive
        assert archive is not None
        rc = self.core.recrawl
        if rc is None or not rc.is_revisit(job.url):
            await archive.keep(res)
            return
        when, earlier = rc.earlier(job.url)
        # The digest _revisit_answer took of this fetch's body, not a second one.
        answered = self._answers.get(job.url)
        profile = revisit_profile(res.status, earlier, None if answered is None else answered[1])
        if profile is None:
            await archive.keep(res)
        else:
            # The earlier digest is of the decoded body (peer/core/revisit/policy.py);
            # the record's own WARC-Payload-Digest is the writer's, of the
            # payload as received, so only a 304 names the earlier one.
            await archive.keep_revisit(res, profile, job.url, time.time() if when is None else when,
                                       earlier if res.status == 304 else None)

    def _revisit_forget(self, url: str) -> None:
        rc = self.core.recrawl
        if rc is not None:
            rc.forget(url)

    async def _revisit_restore(self, store: Any) -> None:
        """A continuous crawl resumed: its pages' schedule from ``fetches`` (peer/core/revisit/recrawl.py rule 7)."""
        rc = self.core.recrawl
        if rc is None:
            return
        rc.set_wall(self.clock(), time.time())   # sitemap <lastmod> dates against the schedule
        n = rc.restore(await store.last_visits(), self.clock(), time.time())
        if n:
            log.info("revisits: %d pages of earlier runs scheduled from the fetches table", n)

    async def _run_for(self, seconds: float) -> None:
        await trio.sleep(seconds)
        self._stop_run()

    def _stop_run(self) -> None:
        raise NotImplementedError

    def _revisit_status(self) -> dict[str, Any] | None:
        rc = self.core.recrawl
        if rc is None:
            return None
        f = rc.figures()
        return {"scheduled": f.scheduled, "due": f.due, "handed": f.handed, "visits_new": f.visits_new,
                "visits_revisit": f.visits_revisit, "not_modified": f.not_modified,
                "unchanged": f.unchanged, "changed": f.changed, "gone": f.gone, "failed": f.failed,
                "conditional": f.conditional, "validators_dropped": f.validators_dropped,
                "freshness": f.freshness}
