"""Continuous crawling: the revisit schedule run through the crawl's own frontier (pure).

Composes the prep's cores for the crawl core: the due queue
(:mod:`peer.core.revisit.duequeue`), the per-host mix of new URLs and revisits
(:mod:`peer.core.revisit.hostmix`) and the interval rules (:mod:`peer.core.revisit.policy`).
The crawl core (:mod:`peer.core.crawl.core`) calls :meth:`Recrawl.feed` before it
asks its frontier for a job and :meth:`Recrawl.started` after each start; the
driver calls :meth:`Recrawl.conditional` before a fetch and
:meth:`Recrawl.visited` with each page row.

Rules:

1. One door back in: a fetched URL re-enters the frontier only from here,
   when its record comes due. The seen set still refuses it as a link, so
   nothing else can make the crawl fetch a page twice.
2. The same frontier, the same politeness: a due revisit is put at the
   *front* of its host's queue (``Frontier.requeue``), so it is that host's
   next start, paced, windowed and capped like any other; no request
   bypasses the host's pace (peer/core/frontier/pacing.py).
3. At most one revisit of a host is in its queue at a time (``_host_handed``
   keyed by host). Which kind a host's next start fetches is the host mix's
   choice (``revisit_share``), asked once per start of that host
   (:meth:`started`); when a host's first record comes due (:meth:`feed`)
   one revisit goes ahead at once, so a host with nothing else queued is
   woken. A host with new URLs queued and revisits due thus alternates by
   its share, never starving either kind.
4. A record leaves the schedule only to be fetched: a visit (answered,
   failed or refused) schedules the URL again from :meth:`visited`, but for
   a page never found (``Change.MISSING``: a 404/410 before any answered
   visit, peer/core/revisit/policy.py rule 3), which leaves the schedule
   for good; a URL whose job left without a row (passed to its host's new
   owner) is dropped by :meth:`forget`.
5. Never idle while scheduled: :attr:`scheduled` is true while records
   wait, so the crawl core neither ends a solo crawl nor reports itself
   idle to the ring's termination (ring/membership/termination.py), which would end
   the cluster's; it sleeps until :meth:`next_due` instead.
6. Counters, not drops (ring/vocabulary.py): visits by kind; what the
   *revisits* found, one count a ``Change``, so the parts add up to the
   revisits (a first visit finds ``FIRST`` by definition and is not among
   them); pages never found, first visits and revisits alike;
   conditional requests sent, validators refused. *Freshness* is the
   share of answered revisits that found the page unchanged (a 304, or the
   same payload digest): the share of stored copies that were still the
   live page when checked.
7. Across a restart the schedule is read back from the results' ``fetches``
   table (each URL's latest row: its due time, interval and validators),
   so the pages fetched before a stop are revisited after it; the journal
   need not carry it, since a visit's ``fetches`` row is written in the
   batch of its ``pages`` row and a visit lost with an unflushed batch is
   one the crawl fetches again as new. The rows come in batches and the
   queue's far tier (duequeue rule 5) takes those due far ahead to disk as
   they come, so a restart of 10 M records stays within the tier's RAM; the
   tier's files are thus not state a restart needs, and start empty.
8. Records move with their host (``ring.statebox``): a hand-off takes the
   records of each host that moved (:meth:`export_host`, through the due
   queue's ``export_host``), and a revisit passed on without a visit
   (:meth:`forget`) is given to the caller to send on, rather than
   dropped. They travel in wall-clock time (peers' crawl clocks differ)
   and keep their due time, interval, validators and counts, so the new
   owner's first request of the page is the revisit it would have been
   here: on schedule and conditional (with ``[warc]`` on, once
   unconditional: rule 9). :meth:`import_records` keeps the
   newer of two records of a URL (by its last visit), so a replay or a
   stale copy (a restarted old owner's) changes nothing, and checks what
   came as remote input: validators as a response's are
   (peer/core/revisit/policy.py rule 6), intervals clamped; one already
   due is handed to the frontier at the next :meth:`feed`. An imported
   record is kept in view (:meth:`handed_records`) until its page's next
   visit here (whose ``fetches`` row then holds it, rule 7) or its host
   moves on: the new owner's journal and snapshots hold it till then
   (peer/state/journal.py rule 6), so a restart before that visit still
   revisits it on schedule.
9. With ``[warc]`` on, a revisit is conditional only while the archive
   holds a capture of the page (``RevisitState.capture``, the record a
   revisit record refers to: peer/core/warc/record.py rule 6). A record
   without one (handed over by the host's previous owner, whose records
   travel without it; restored from a run with WARC off; its last capture
   cut at ``max_body``) sends no validators, so the answer is the page
   whole and its ``response`` record the page's capture in this archive:
   a 304 there would leave a replay nothing to show at that time: one
   unconditional request a page until the archive has its capture.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from collections.abc import Iterable
from typing import Any, Protocol

from peer.core.frontier.spillqueue import SpillStore
from peer.core.revisit.duequeue import DueQueue, FarFigures
from peer.core.revisit.hostmix import HostMix, Kind
from peer.core.revisit.policy import (
    Change,
    RevisitState,
    after_visit,
    conditional_headers,
    first_visit,
    on_sitemap,
    valid_etag,
    valid_http_date,
)
from peer.core.config.revisit import RevisitConfig
from peer.core.sitemaps.document import ChangeFreq
from peer.core.sitemaps.hints import UrlHints
from peer.core.urls.normalize import host_key
from peer.errors import URLError
from ring.messages import RevisitWire

__all__ = ["Recrawl", "RecrawlFigures", "Visit"]

_FREQS = {f.value: f for f in ChangeFreq}


class _Queue(Protocol):
    """What of the frontier this module uses (peer.core.frontier.frontier.Frontier)."""

    def host_queued(self, host: str) -> int: ...


@dataclass(frozen=True, slots=True)
class Visit:
    """What one visit was and did to the schedule: a ``fetches`` row's fields."""

    kind: Kind
    change: Change
    conditional: bool
    interval_before: float
    interval_after: float
    next_due: float | None   # on the crawl's clock; None: not revisited (a page never found)
    etag: str | None
    last_modified: str | None


@dataclass(frozen=True, slots=True)
class RecrawlFigures:
    """The schedule's figures for stats.json, the ring status and the metrics (rule 6)."""

    scheduled: int           # URLs with a record (in the queue or handed to the frontier)
    due: int                 # records due now, waiting for their host (overdue)
    handed: int              # revisits in a host's queue or in flight
    visits_new: int
    visits_revisit: int
    # What the revisits found (rule 6): these add up to visits_revisit.
    not_modified: int        # 304s to a conditional GET
    unchanged: int           # same digest as last time
    changed: int
    gone: int                # 404/410 after an answered visit
    failed: int
    conditional: int         # requests sent with If-None-Match or If-Modified-Since
    validators_dropped: int  # ETag/Last-Modified values refused (peer/core/revisit/policy.py rule 6)
    first: int = 0           # revisits that found a payload with none to compare (earlier visits failed)
    missing: int = 0         # revisits that found a 404/410 with no answered visit before
    never_found: int = 0     # visits of either kind that were MISSING: those URLs are not revisited

    @property
    def revisit_parts(self) -> dict[str, int]:
        """What the revisits found, by ``Change`` value: the parts of ``visits_revisit``."""
        return {"not_modified": self.not_modified, "unchanged": self.unchanged, "changed": self.changed,
                "first": self.first, "gone": self.gone, "missing": self.missing, "failed": self.failed}

    @property
    def freshness(self) -> float | None:
        """Answered revisits that found the page unchanged, a share (rule 6); None before any."""
        answered = self.not_modified + self.unchanged + self.changed
        return None if not answered else (self.not_modified + self.unchanged) / answered


class Recrawl:
    """The schedule of one peer's fetched pages; ``now`` is the crawl core's clock."""

    def __init__(self, config: RevisitConfig, rng: random.Random, archived: bool = False) -> None:
        self.config = config
        self._rng = rng
        self.archived = archived   # [warc] on: rule 9
        self.queue = DueQueue()
        self.mix = HostMix(config.revisit_share)
        self._handed: dict[str, RevisitState] = {}   # url -> record, in a queue or in flight
        self._host_handed: dict[str, str] = {}       # host -> its revisit in its queue, not started
        self._depth: dict[str, int] = {}             # url -> the depth its first visit had
        self._imported: dict[str, str] = {}          # url -> host: handed to us, not visited here since (rule 8)
        self._wake: set[str] = set()                 # hosts given an overdue record by an import (rule 8)
        self.counts: Counter[str] = Counter()
        self._wall: float | None = None   # wall time less the crawl's clock (set_wall)

    # -- read-outs -------------------------------------------------------------

    @property
    def scheduled(self) -> bool:
        """Records wait (rule 5)."""
        return bool(len(self.queue) or self._handed)

    def next_due(self) -> float | None:
        """When the next pending record comes due; None when none is pending."""
        return self.queue.next_due()

    def is_revisit(self, url: str) -> bool:
        """``url``'s job is a revisit, not a first visit."""
        return url in self._handed

    def capture(self, url: str) -> str | None:
        """The archive's record a revisit of ``url`` refers to (``RevisitState.capture``);
        None for a first visit or when there is none."""
        state = self._handed.get(url)
        return None if state is None else state.capture

    def conditional(self, url: str) -> tuple[tuple[str, str], ...]:
        """The request header fields a fetch of ``url`` adds (peer/core/revisit/policy.py rule 6), none
        when the archive holds no capture of the page for its 304 to refer to (rule 9)."""
        state = self._handed.get(url)
        return () if state is None else self._validators(state)

    def _validators(self, state: RevisitState) -> tuple[tuple[str, str], ...]:
        if self.archived and state.capture is None:
            return ()
        return conditional_headers(state)

    def figures(self) -> RecrawlFigures:
        c = self.counts
        return RecrawlFigures(
            scheduled=len(self.queue) + len(self._handed), due=self.queue.overdue,
            handed=len(self._handed), visits_new=c["new"], visits_revisit=c["revisit"],
            not_modified=c[Change.NOT_MODIFIED.value], unchanged=c[Change.UNCHANGED.value],
            changed=c[Change.CHANGED.value], gone=c[Change.GONE.value], failed=c[Change.FAILED.value],
            conditional=c["conditional"], validators_dropped=c["validators_dropped"],
            first=c[Change.FIRST.value], missing=c[Change.MISSING.value], never_found=c["never_found"])

    def figure_pairs(self) -> dict[str, int]:
        """The figures as a status reply's named pairs: ``revisit.*`` counters (ring/vocabulary.py
        rule 4), freshness in percent; a refused ETag/Last-Modified is ``revisit_validator``, a drop."""
        f = self.figures()
        out = {"revisit.scheduled": f.scheduled, "revisit.due": f.due,
               "revisit.visits": f.visits_revisit, "revisit.not_modified": f.not_modified,
               "revisit.unchanged": f.unchanged, "revisit.changed": f.changed,
               "revisit.gone": f.gone, "revisit.failed": f.failed, "revisit.conditional": f.conditional,
               "revisit.first": f.first, "revisit.missing": f.missing, "revisit.never_found": f.never_found}
        if f.freshness is not None:
            out["revisit.freshness_pct"] = round(100 * f.freshness)
        if f.validators_dropped:
            out["revisit_validator"] = f.validators_dropped
        return out

    # -- the frontier's side (rules 1-3) -----------------------------------------

    def feed(self, now: float) -> list[tuple[str, str, int]]:
        """Revisits to put at the front of their hosts' queues now: ``(url, host, depth)``.

        One for each host whose first record just came due and that has no
        revisit queued; the caller pushes them (rule 2). Its later revisits
        come from :meth:`started`, one start at a time, by the host's mix.
        """
        out: list[tuple[str, str, int]] = []
        hosts = self.queue.advance(now)
        if self._wake:
            # Records imported overdue went straight to their host's ready heap,
            # which advance() reports only when a record moves there from pending.
            hosts = [*hosts, *self._wake.difference(hosts)]
            self._wake.clear()
        for host in hosts:
            if host not in self._host_handed:
                self._hand(host, out)
        return out

    def started(self, url: str, host: str, queued: _Queue) -> tuple[str, str, int] | None:
        """A job of ``host`` started: the revisit its next start fetches, if the mix says so (rule 3)."""
        if self._host_handed.get(host) == url:
            del self._host_handed[host]
        if host in self._host_handed or not self.queue.due_count(host):
            return None
        kind = self.mix.take(host, queued.host_queued(host) > 0, True)
        if kind is not Kind.REVISIT:
            return None
        out: list[tuple[str, str, int]] = []
        self._hand(host, out, asked=True)
        return out[0] if out else None

    def _hand(self, host: str, out: list[tuple[str, str, int]], asked: bool = False) -> None:
        if not asked and self.mix.take(host, False, True) is not Kind.REVISIT:
            return
        state = self.queue.pop(host)
        if state is None:
            return
        self._handed[state.url] = state
        self._host_handed[host] = state.url
        out.append((state.url, host, self._depth.get(state.url, 0)))

    # -- the driver's side ---------------------------------------------------------

    def visited(self, url: str, host: str, depth: int, now: float, status: int | None,
                digest: str | None, etag: str | None, last_modified: str | None,
                changefreq: str | None = None, lastmod: float | None = None,
                capture: str | None = None) -> Visit:
        """A visit of ``url`` ended at ``now`` with this answer (status None: none); scheduled again (rule 4).

        ``changefreq``/``lastmod`` are the sitemap's hints a first visit is
        seeded with (peer/core/revisit/policy.py rule 1); later they are ignored.
        ``capture`` is the archive's record the next revisit refers to (kept as given).
        """
        state = self._handed.pop(url, None)
        if self._host_handed.get(host) == url:
            del self._host_handed[host]
        self._imported.pop(url, None)  # its fetches row holds it from now on (rule 8)
        kind = Kind.NEW if state is None else Kind.REVISIT
        if state is None:
            state = self.queue.discard(url, host)   # a URL fetched again as new: one record
        if state is None:
            freq = _FREQS.get(changefreq) if changefreq is not None else None
            hints = None if freq is None and lastmod is None else UrlHints(lastmod=lastmod, changefreq=freq)
            state = first_visit(url, host, now, hints, self.config)
            self._depth[url] = depth
        sent = bool(self._validators(state)) and kind is Kind.REVISIT
        result = after_visit(state, now, status, digest, etag, last_modified, self.config, self._rng,
                             capture)
        missing = result.change is Change.MISSING
        if missing:
            self._depth.pop(url, None)   # never found: out of the schedule for good (rule 4)
        else:
            self.queue.schedule(result.state)
        c = self.counts
        c[kind.value] += 1
        if kind is Kind.REVISIT:
            c[result.change.value] += 1   # the revisits' parts (rule 6)
        c["never_found"] += missing
        c["conditional"] += sent
        c["validators_dropped"] += result.dropped
        new = result.state
        return Visit(kind, result.change, sent, state.interval, new.interval, None if missing else new.due,
                     new.etag, new.last_modified)

    def sitemap_hint(self, url: str, hints: UrlHints, now: float) -> bool:
        """A sitemap listed ``url`` with ``hints``: due sooner if its ``<lastmod>`` is after our visit.

        peer/core/revisit/policy.py rule 5: never sooner than ``min_interval`` after
        that visit, a future ``lastmod`` ignored. ``lastmod`` is wall time,
        moved to the crawl's clock by :meth:`set_wall`'s offset. True when
        the record came due sooner.
        """
        try:
            host = host_key(url)
        except URLError:
            return False
        state = self.queue.get(url, host)
        if state is None or hints.lastmod is None or self._wall is None:
            return False
        hint = UrlHints(lastmod=hints.lastmod - self._wall, priority=hints.priority,
                        changefreq=hints.changefreq)
        new = on_sitemap(state, hint, now, self.config)
        if new is state:
            return False
        self.queue.schedule(new)
        self.counts["sitemap_due"] += 1
        return True

    def set_wall(self, now: float, wall: float) -> None:
        """The wall-clock time of the crawl clock's ``now``, to read sitemap dates (epoch seconds)."""
        self._wall = wall - now

    def attach_far(self, store: SpillStore, now: float) -> None:
        """Keep the records due beyond ``memory_window`` in ``store`` (peer/core/revisit/duequeue.py rule 5)."""
        if self.config.memory_window > 0:
            self.queue.attach_far(store, self.config.memory_window, now)

    def far_figures(self) -> FarFigures:
        """The due queue's far tier, for the summary."""
        return self.queue.far_figures()

    def restore(self, rows: Iterable[tuple[Any, ...]], now: float, wall: float) -> int:
        """Schedule the pages a previous run fetched, from their last ``fetches`` rows (rule 7).

        ``rows`` are :meth:`peer.results.store.ResultStore.last_visits`'s;
        due times are wall-clock there and move to the crawl's clock here
        (``now`` and ``wall`` the same instant). A URL already scheduled by
        this run keeps its record. Returns the records added.
        """
        n = 0
        for url, host, fetched_at, next_due, interval, digest, etag, lm, visits, changes, *rest in rows:
            if not isinstance(url, str) or not isinstance(host, str) or self.queue.get(url, host) is not None:
                continue
            capture = rest[0] if rest and isinstance(rest[0], str) else None
            state = RevisitState(url=url, host=host, due=now + (float(next_due) - wall),
                                 interval=self.config.clamp(float(interval)),
                                 last_visit=now + (float(fetched_at) - wall), digest=digest or None, etag=etag,
                                 last_modified=lm, visits=int(visits or 0), changes=int(changes or 0),
                                 capture=capture)
            self.queue.schedule(state)
            n += 1
        self.queue.flush_far()   # a restart's far records to disk now, not a tail's worth later
        self.counts["restored"] += n
        return n

    def forget(self, url: str, wall_offset: float) -> RevisitWire | None:
        """``url`` left this peer without a visit (its host moved): its record leaves the schedule
        (rule 4), returned to be sent to the host's owner (rule 8); None if it was no revisit."""
        state = self._handed.pop(url, None)
        self._imported.pop(url, None)
        if state is None:
            return None
        if self._host_handed.get(state.host) == url:
            del self._host_handed[state.host]
        return self._wire(state, self._depth.pop(url, 0), wall_offset)

    # -- records that move with their host (rule 8) ----------------------------------

    @staticmethod
    def _wire(s: RevisitState, depth: int, offset: float) -> RevisitWire:
        return (s.url, s.host, max(0.0, s.due + offset), s.interval,
                0.0 if s.last_visit is None else max(0.0, s.last_visit + offset), s.digest or "",
                s.etag or "", s.last_modified or "", s.visits, s.changes, depth)

    def export_host(self, host: str, wall_offset: float) -> list[RevisitWire]:
        """Every record of ``host``, removed, as it travels (``wall_offset``: epoch minus our clock)."""
        depth, imported = self._depth, self._imported
        out = []
        for s in self.queue.export_host(host):
            imported.pop(s.url, None)
            out.append(self._wire(s, depth.pop(s.url, 0), wall_offset))
        return out

    def handed_records(self, wall_offset: float) -> list[RevisitWire]:
        """The records handed to us whose pages were not visited here since, as they travel (rule 8)."""
        out = []
        for url, host in list(self._imported.items()):
            state = self._handed.get(url) or self.queue.get(url, host)
            if state is None:
                del self._imported[url]  # left the schedule another way
                continue
            out.append(self._wire(state, self._depth.get(url, 0), wall_offset))
        return out

    def import_records(self, records: list[RevisitWire], wall_offset: float) -> int:
        """Schedule records a host's previous owner handed over; how many were taken (rule 8).

        A URL with a record here whose last visit is as recent keeps it; one
        being revisited now keeps its visit. Remote input: a value of the
        wrong type skips the record, a validator that fails the checks of
        a response's is not kept, and the interval is clamped.
        """
        cfg, n = self.config, 0
        for r in records:
            try:
                url, host, due, interval, last, digest, etag, lm, visits, changes, depth = r
            except (TypeError, ValueError):
                self.counts["import_malformed"] += 1
                continue
            if not (isinstance(url, str) and isinstance(host, str) and url and host
                    and all(isinstance(x, float | int) for x in (due, interval, last))
                    and all(isinstance(x, int) for x in (visits, changes, depth))):
                self.counts["import_malformed"] += 1
                continue
            if url in self._handed:
                continue
            last_visit = None if not last else float(last) - wall_offset
            held = self.queue.get(url, host)
            if held is not None and (last_visit is None or (held.last_visit is not None
                                                            and held.last_visit >= last_visit)):
                continue
            state = RevisitState(
                url=url, host=host, due=float(due) - wall_offset, interval=cfg.clamp(float(interval)),
                last_visit=last_visit, digest=digest or None,
                etag=valid_etag(etag or None, cfg.max_validator_length),
                last_modified=valid_http_date(lm or None, cfg.max_validator_length),
                visits=max(0, visits), changes=max(0, changes))
            self.queue.import_records([state])
            if state.due <= self.queue.now:
                self._wake.add(host)  # overdue: the next feed() hands it, as advance() would
            self._depth[url] = max(0, depth)
            self._imported[url] = host
            n += 1
        self.counts["imported"] += n
        return n
