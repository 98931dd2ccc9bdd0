"""The crawl engine's side of continuous crawling: visits recorded, revisits archived (edge).

A part of ``peer.engine.crawler.Crawler``; the schedule itself is the
crawl core's (:mod:`peer.core.revisit.recrawl`, reached through
``PeerCore``). This part does what the core cannot, being pure:

- before a fetch the engine asks the core for the request's validators
  (``If-None-Match``/``If-Modified-Since``, RFC 9110 §13.1): an empty tuple
  for a first visit, so a crawl without revisits pays one test;
- after the fetch this part keeps what the row will need (the payload's
  SHA-1, the answer's ETag and Last-Modified) until the page's ``Row``
  effect, which carries the sitemap's hints that seed a first interval;
  there the visit is recorded: the URL is scheduled again and one
  ``fetches`` row written (peer/results/fetches.py rule 1: in the batch of
  its page row);
- a 304 to a conditional GET keeps the stored ``pages`` row: the page did
  not change and the answer has no body to store over it. Its visit is in
  ``fetches``; with ``[warc]`` on, :meth:`Revisits.archive` writes it as a
  ``revisit`` record (ISO 28500 §6.7), as it does a 200 with the last digest.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

import trio

from peer.core.crawl.decisions import Row
from peer.core.frontier.frontier import Job
from peer.core.http.result import FetchResult
from peer.core.door.peer import PeerCore
from peer.core.revisit.hostmix import Kind
from peer.core.revisit.policy import Change
from peer.core.warc.record import RevisitProfile, digest
from peer.engine.archive import Archive
from peer.results.store import ResultStore
from peer.state.generations import REVISIT_DIR
from peer.state.spill import FileSpill

__all__ = ["Revisits", "payload_digest", "revisit_profile"]

log = logging.getLogger("peer.engine")


def payload_digest(body: bytes) -> str:
    """The payload's digest as WARC writes it (``sha1:`` and base32, ISO 28500 §5.9)."""
    return digest(body)


def revisit_profile(status: int | None, earlier: str | None, digest: str | None) -> RevisitProfile | None:
    """The WARC ``revisit`` profile a revisit's answer is written with, or None for a
    ``response`` record: a 304 is server-not-modified (ISO 28500 §6.7.3); a 200 whose
    body has the last visit's digest is identical-payload-digest (§6.7.2)."""
    if status == 304:
        return RevisitProfile.SERVER_NOT_MODIFIED
    if status == 200 and earlier is not None and digest == earlier:
        return RevisitProfile.IDENTICAL_PAYLOAD
    return None


class Revisits:
    """Visit records of a continuous crawl (module docstring); ``store()`` is the results, once open."""

    def __init__(self, peer: PeerCore, peer_id: str, clock: Callable[[], float],
                 store: Callable[[], ResultStore | None]) -> None:
        self._peer = peer
        self._peer_id = peer_id
        self._clock = clock
        self._store = store
        #: url -> (status, digest, etag, last_modified) of a fetch whose row is to come.
        self._answers: dict[str, tuple[int | None, str | None, str | None, str | None]] = {}
        self._far: FileSpill | None = None   # the due queue's far records (restore)

    def answered(self, job: Job, res: FetchResult) -> None:
        """A fetch of a continuous crawl ended: what its row's visit will need."""
        if not self._peer.revisits:
            return
        digest = None if res.status is None or res.status == 304 or res.error is not None else payload_digest(res.body)
        self._answers[job.url] = (res.status, digest, res.etag, res.last_modified)

    def row(self, e: Row) -> tuple[bool, bool]:
        """Record ``e``'s visit: (write its ``pages`` row, over the URL's earlier one).

        A row of a URL never fetched (robots.txt, scope, a cap) is no visit:
        only fetched URLs are scheduled. A 304 writes no ``pages`` row.
        """
        peer = self._peer
        if not peer.revisits:
            return True, False
        answer = self._answers.pop(e.url, None)
        if answer is None and not peer.is_revisit(e.url):
            return True, False
        status, digest, etag, lm = answer or (None, None, None, None)
        now = self._clock()
        visit = peer.visited(e, now, status, digest, etag, lm)
        assert visit is not None  # revisits are on
        wall = time.time()
        store = self._store()
        if store is not None:
            store.add_fetch((
                e.url, e.host, wall, visit.kind.value, status, visit.change.value,
                visit.change is Change.CHANGED, digest, visit.etag, visit.last_modified,
                visit.conditional, e.bytes, e.elapsed_ms, e.error, visit.interval_before,
                visit.interval_after, None if visit.next_due is None else wall + (visit.next_due - now),
                self._peer_id))
        return visit.change is not Change.NOT_MODIFIED, visit.kind is Kind.REVISIT

    async def archive(self, archive: Archive, job: Job, res: FetchResult) -> None:
        """The WARC records of a page's fetch: a 304 to a revisit is a ``revisit`` record of
        the server-not-modified profile (ISO 28500 §6.7.3) referring to the last capture;
        anything else a ``response`` (peer/engine/archive.py)."""
        peer = self._peer
        if not peer.is_revisit(job.url):
            await archive.keep(res)
            return
        when, earlier = peer.earlier(job.url)
        # The digest ``answered`` took of this fetch's body, not a second one.
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

    async def restore(self, store: ResultStore, state_dir: Path | None = None) -> None:
        """A continuous crawl resumed: its pages' schedule from ``fetches`` (peer/core/revisit/recrawl.py rule 7).

        With ``revisit.memory_window`` > 0 the due queue's far records go to
        segment files in ``state_dir/revisits`` (peer/core/revisit/duequeue.py
        rule 5), emptied here: the schedule is the ``fetches`` table's, read
        in batches so the far ones reach the disk as they come.
        """
        if not self._peer.revisits:
            return
        if state_dir is not None and self._far is None:
            far = await trio.to_thread.run_sync(lambda: FileSpill.open(state_dir / REVISIT_DIR, None))
            if self._peer.disk.attach_revisit_store(far, self._clock()):
                self._far = far
            else:
                far.close()
        n = 0
        async for rows in store.last_visit_batches():
            n += self._peer.disk.restore_visits(rows, self._clock(), time.time())
            await trio.sleep(0)   # a batch at a time: the loop's other tasks run between
        if n:
            log.info("revisits: %d pages of earlier runs scheduled from the fetches table", n)

    def far_line(self) -> str | None:
        """The summary's line on the due queue's far tier, or None if it wrote nothing."""
        f = self._peer.disk.revisit_far()
        if f is None or not f.written:
            return None
        return (f"revisits on disk: {f.far:,} now, {f.written:,} written, {f.loaded:,} taken back as due, "
                f"{f.recalls:,} hosts recalled ({f.recalled:,} records); window {f.window:g} s")

    def close(self) -> None:
        """Close the far tier's files (they hold nothing a restart needs)."""
        if self._far is not None:
            self._far.close()
            self._far = None
