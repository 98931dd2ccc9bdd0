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
  ``fetches``. A 304 to a URL's first request (a server that ignores that
  the request had no validators) has no stored row to keep: its row is
  written, status 304 and no body, so every fetched URL has one;
- with ``[warc]`` on, :meth:`Revisits.archive` writes a 304 to a revisit
  and a 200 whose payload digest is the original's as ``revisit`` records
  (ISO 28500 §6.7) referring to the ``response`` record that holds the page
  (peer/core/warc/record.py rule 6). Which record that is travels with the
  URL's revisit record (``RevisitState.capture``) and is written in each
  ``fetches`` row (``warc_record_id``, ``warc_date``,
  ``warc_payload_digest``), so the revisits of a restarted crawl refer to
  the records of the run before. A host handed to another peer goes
  without it (``ring.messages.RevisitWire`` has no field for it): the new
  owner's first 304 of a page is a ``response`` record, its first 200 the
  new original.
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
from peer.core.warc.record import Refers, digest, payload_digest as warc_payload_digest
from peer.core.warc.refers import refers_after, revisit_profile
from peer.engine.archive import Archive
from peer.results.store import ResultStore
from peer.state.generations import REVISIT_DIR
from peer.state.spill import FileSpill

__all__ = ["Revisits", "payload_digest"]

log = logging.getLogger("peer.engine")


def payload_digest(body: bytes) -> str:
    """The payload's digest as WARC writes it (``sha1:`` and base32, ISO 28500 §5.9)."""
    return digest(body)


class Revisits:
    """Visit records of a continuous crawl (module docstring); ``store()`` is the results, once open."""

    def __init__(self, peer: PeerCore, peer_id: str, clock: Callable[[], float],
                 store: Callable[[], ResultStore | None]) -> None:
        self._peer = peer
        self._peer_id = peer_id
        self._clock = clock
        self._store = store
        #: url -> (status, digest, etag, last_modified, capture) of a fetch whose row is to come;
        #: capture: the archive's record its next revisit refers to (``Refers.pack``).
        self._answers: dict[str, tuple[int | None, str | None, str | None, str | None, str | None]] = {}
        self._far: FileSpill | None = None   # the due queue's far records (restore)

    def answered(self, job: Job, res: FetchResult) -> None:
        """A fetch of a continuous crawl ended: what its row's visit will need."""
        if not self._peer.revisits:
            return
        digest = None if res.status is None or res.status == 304 or res.error is not None else payload_digest(res.body)
        # The record a revisit refers to stays the earlier one unless archive() says otherwise.
        self._answers[job.url] = (res.status, digest, res.etag, res.last_modified, self._peer.capture(job.url))

    def row(self, e: Row) -> tuple[bool, bool]:
        """Record ``e``'s visit: (write its ``pages`` row, over the URL's earlier one).

        A row of a URL never fetched (robots.txt, scope, a cap) is no visit:
        only fetched URLs are scheduled. A 304 to a revisit writes no ``pages`` row.
        """
        peer = self._peer
        if not peer.revisits:
            return True, False
        answer = self._answers.pop(e.url, None)
        if answer is None and not peer.is_revisit(e.url):
            return True, False
        status, digest, etag, lm, capture = answer or (None, None, None, None, peer.capture(e.url))
        now = self._clock()
        visit = peer.visited(e, now, status, digest, etag, lm, capture)
        assert visit is not None  # revisits are on
        wall = time.time()
        store = self._store()
        if store is not None:
            refers = Refers.unpack(capture)
            store.add_fetch((
                e.url, e.host, wall, visit.kind.value, status, visit.change.value,
                visit.change is Change.CHANGED, digest, visit.etag, visit.last_modified,
                visit.conditional, e.bytes, e.elapsed_ms, e.error, visit.interval_before,
                visit.interval_after, None if visit.next_due is None else wall + (visit.next_due - now),
                self._peer_id,
                *((refers.record_id, refers.date, refers.payload_digest) if refers else (None, None, None))))
        # A revisit's 304 keeps the stored row; a 304 to a first request has none to keep.
        first = visit.kind is Kind.NEW
        return visit.change is not Change.NOT_MODIFIED or first, not first

    async def archive(self, archive: Archive, job: Job, res: FetchResult) -> None:
        """The WARC records of a page's fetch (peer/core/warc/record.py rule 6): a 304, or an
        answer with the original's payload digest, is a ``revisit`` record referring to the
        ``response`` record that holds the page; anything else a ``response``, which becomes
        the record the URL's next revisit refers to if it stands for the page."""
        capture = res.capture
        if not self._peer.revisits or capture is None:
            await archive.keep(res)
            return
        earlier = Refers.unpack(self._peer.capture(job.url))
        payload = warc_payload_digest(capture, archive.algorithm)
        profile = revisit_profile(capture, earlier, payload)
        record_id = archive.new_record_id()
        if profile is None:
            await archive.keep(res, record_id)
        else:
            assert earlier is not None  # revisit_profile: no revisit without an original
            await archive.keep_revisit(res, profile, earlier)
        after = refers_after(earlier, capture, profile, record_id, payload)
        answer = self._answers.get(job.url)
        if answer is not None:
            self._answers[job.url] = (*answer[:4], None if after is None else after.pack())

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
