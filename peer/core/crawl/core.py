"""The crawl core of one peer: every crawl decision, with no I/O (h11's shape).

``CrawlCore`` owns the scope, the Bloom filter, the frontier, the robots
cache, the limits, the retry attempts and redirect hops, and the hand-off
holds (``peer.core.handoff.holds``). It imports no trio, zmq, httpx or duckdb: the caller
passes ``now`` and what the network said, and gets decisions back as frozen
dataclasses (``peer.core.crawl.decisions``). ``peer/engine/crawler.py`` is the thin trio driver that does what they
say; ``tests/core/test_crawl.py`` drives this module synchronously.

This module holds steps 1-3 below (discovery, scheduling, admission); the
rest of the class comes from mixins over ``peer.core.crawl.state.CrawlState``:
``peer.core.crawl.outcomes`` (steps 4-6), ``peer.core.sitemaps.jobs`` (sitemaps:
found, fetched by their host's owner, read), ``peer.core.handoff.moves`` (ring
changes, hand-offs) and ``peer.core.crawl.figures``; ``peer.core.page.parse`` is the worker
thread's parse and ``peer.core.run.stats`` the ``Summary``.

The path of one URL, as the code reads:

1. ``discover(url, depth, now, origin)`` - scope (hosts, then the URL
   rules of ``peer.core.urls.rules``), the URL caps, the owner
   (another peer's host: a ``Forward``), the per-host cap and the Bloom
   filter; a new URL goes into the frontier and the journal (``Queued``).
2. ``next(now, ring)`` - ``Start(job)`` when the frontier's politeness gate
   and the concurrency (and ``max_pages``: in a ring, this peer's cap of
   the budget, ``ring.budget``) allow one, else ``Sleep(until)`` or
   ``Finished(reason)``.
3. ``admit(job, now)`` - just before the request: ``Fetch``, ``FetchRobots``
   (the host's robots.txt first), ``FetchSitemap`` (a sitemap job), ``Requeue`` (robots.txt pending, a
   hand-off hold), ``Drop`` (a row: disallowed, given up, fetched by the
   previous owner) or ``PassOn`` (its host moved to another peer).
4. The driver fetches; ``fetched(job, res, now)`` says whether to parse;
   the driver parses in a thread (``parse_response``).
5. ``on_result(job, res, parsed, now)`` / ``on_robots(job, res, now)`` -
   the effects: the discoveries of its links or redirect target, the
   ``Row``, the extraction ``Items``, retries (``Requeued``), warnings.
6. ``job_ended(job)`` - always, whatever happened (``internal`` first if
   the job raised: rule 8 of peer/engine/crawler.py).

How each origin of a URL treats the Bloom filter (``discover``), once:

============  =========  ===============  =========  =====================================
origin        normalise  scope, URL caps  host cap   Bloom filter
============  =========  ===============  =========  =====================================
SEED          yes        yes              yes        add; already there: drop
LINK          no [1]     yes              yes        add; already there: drop
REDIRECT      no [1]     yes              yes        add; already there: drop
SITEMAP       no [6]     yes              yes        add; already there: drop
RELAY         yes [2]    yes              yes        add; already there: drop
ADOPTED       yes [2]    yes              yes        add; already there: drop
HANDED_BACK   no         no [3]           no         add, queued unless handed as seen [3]
HANDED_SEEN   no         no               no         add, never queued [4]
RECOVERED     no         no               no         untouched [5]
============  =========  ===============  =========  =====================================

[1] ``normalize_link`` made it, with the core's ``params`` (strip_params,
sort_query), which are applied again (a no-op then). [2] Remote input from a peer or the adopt
tool. [3] Ours, on its way to a peer now gone (``Outbox.reroute``): it may
be in our filter already (queued here before its host moved), and nobody
else took it; unless a previous owner handed it to us as fetched (a link
forwarded to a leaver that had fetched it, refused by the leaver and
rerouted here): then it is dropped. [4] Fetched by another peer for a host now ours; if it was
already in the filter it may be queued here, and its job is dropped when
it comes up. [5] Recovered from the journal, whose filter holds it.
[6] ``peer.core.sitemaps.document.parse`` normalised it (a URL a sitemap lists:
``peer.core.sitemaps.jobs`` rule 4).

A URL with a tail after a space (any origin but LINK and REDIRECT) is a
sitemap job or a URL with a sitemap's hints (``peer.core.sitemaps.hints``):
``discover_entry`` takes it apart first.

A URL not ours goes to its owner: ``Forward(relay=False)`` for our own
discoveries (the outbox's recently-forwarded cache may drop a repeat),
``relay=True`` for URLs we were handed (they may be the only copy).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from peer.core.seen.sieve import SieveBatch
from peer.core.seen.sieve import Verdict as SeenVerdict
from peer.core.crawl.decisions import (
    Admission,
    Checking,
    Done,
    Drop,
    Effect,
    Fetch,
    FetchRobots,
    FetchSitemap,
    Finished,
    Forward,
    Items,
    Origin,
    PassOn,
    Queued,
    Requeue,
    Requeued,
    RingView,
    Row,
    Seen,
    Sleep,
    Start,
    StopReason,
    Warn,
)
from peer.errors import URLError
from peer.core.frontier.frontier import Job, Outcome
from peer.core.crawl.robots import Verdict
from peer.core.urls.normalize import host_key, normalize
from peer.core.crawl.state import (
    _FETCHING, _ROBOTS, CEILING_HORIZON, HOLD_POLL, MAX_RETRIES, ROBOTS_PENDING_WAIT,
)
from peer.core.crawl.figures import Figures
from peer.core.crawl.outcomes import RETRY_BASE
from peer.core.page.parse import Parsed, parse_response
from peer.core.handoff.moves import RingSide
from peer.core.sitemaps.jobs import SitemapSide
from peer.core.run.stats import Summary

__all__ = [
    "CrawlCore", "Origin", "StopReason", "Summary", "Parsed", "parse_response", "RingView",
    "Forward", "Queued", "Checking", "Seen", "Done", "Row", "Items", "Requeued", "Warn", "Effect",
    "Fetch", "FetchRobots", "FetchSitemap", "Requeue", "Drop", "PassOn", "Admission",
    "Start", "Sleep", "Finished", "MAX_RETRIES", "CEILING_HORIZON", "RETRY_BASE", "HOLD_POLL",
    "ROBOTS_PENDING_WAIT",
]


class CrawlCore(SitemapSide, RingSide, Figures):
    """One peer's crawl decisions (module docstring); mutable, pure, one thread."""

    # -- discovery -------------------------------------------------------------------

    def discover(self, url: str, depth: int, now: float, origin: Origin, hops: int = 0, *,
                 host: str | None = None) -> list[Effect]:
        """A URL arrives from ``origin``; see the module table for each origin's path.

        ``host``: the URL's ``host_key`` when the caller knows it (never for
        the origins that normalise the URL first); else it is computed here,
        once, and travels on with the URL (``Forward.host``).
        """
        if " " in url:
            # A tail after the URL: a sitemap job or a sitemap's hints (peer/core/sitemaps/hints.py).
            return self.discover_entry(url, depth, now, origin, hops)
        out: list[Effect] = []
        if origin is Origin.HANDED_SEEN:
            host = host or host_key(url)
            self.handoffs_in += 1
            self._seen_in[url] = host
            out.append(Seen(url))
            self.sieve.add(url, now)
            if not self.bloom.add(url):
                # Already here: queued (it came by another path before the
                # hand-off did), in flight, or done. A queued one must not run.
                self._handed_seen.add(url)
            return out
        if origin is Origin.HANDED_BACK:
            host = host or host_key(url)
            if self.ring is not None and len(self.ring) and self.ring.owner(host) != self.peer_id:
                return self.discover(url, depth, now, Origin.RELAY)
            if url in self._seen_in:
                return out  # fetched by the host's previous owner, which handed it over [3]
            self.bloom.add(url)
            self.sieve.add(url, now)
            self._push(url, host, depth, now)
            self.limits.queued(host)
            out.append(Queued(url, depth))
            return out
        if origin is Origin.RECOVERED:
            host = host or host_key(url)
            owner = self._owner(host)
            # Already in the Bloom filter; the sieve may have lost its hash
            # with the batch open at the crash (peer/state/sievefile.py).
            self.sieve.add(url, now)
            if owner == self.peer_id:
                self._push(url, host, depth, now)
                self.limits.queued(host)
            else:
                self._pass_on(url, depth, owner, host, out)
            return out
        relay = origin is Origin.RELAY or origin is Origin.ADOPTED
        params = self.params
        if relay or origin is Origin.SEED:
            try:
                url = normalize(url, params)
            except URLError:
                return out
            host = None  # the normalised URL's, below
        elif params is not None:
            # normalize_link with the same rules made it, unless a link source
            # forgot them: the seen set must never hold two spellings [1].
            url = params.clean(url)
        if host is None:
            try:
                host = host_key(url)
            except URLError:
                host = None
        if host is None or not self.scope.allows(url, depth, host=host):
            self.summary.out_of_scope += 1
            return out
        rules = self.urlrules if not self.sites else self.sites.for_host(host).urlrules
        if rules:
            cause = rules.excluded(url)
            if cause is not None:
                self.summary.excluded[cause] += 1  # peer/core/urls/rules.py: rules, skip_extensions
                return out
        limits = self.limits
        if limits.check_url(url) is not None:
            return out  # too long, or a repeating path: the same verdict at any peer
        if self.ring is not None:
            owner = self.ring.owner(host)
            if owner != self.peer_id:
                # A URL we were handed (relay) must not be dropped by the
                # sender's "recently forwarded" cache: it may be the only copy.
                out.append(Forward(url, depth, owner, relay, host))
                return out
        cap = limits.admit(host)
        if cap is not None:
            # Not put in the Bloom filter (a link farm would fill it); a URL
            # queued before is no drop.
            if url not in self.bloom:
                limits.dropped(cap)
            return out
        if not self.bloom.add(url):
            # "Maybe seen": final below bloom.disk_after, else the URL waits
            # for the exact sieve (peer/core/seen/sieve.py). It is journaled now, before
            # its page's row (peer/state/journal.py rule 1), as a URL recovery judges
            # again (Checking): not as queued, since it may be a duplicate of
            # one queued here, whose record a "done" would then cancel.
            if self.sieve.check(url, host, depth, hops, now) is SeenVerdict.PENDING:
                out.append(Checking(url, depth))
            return out
        self.sieve.add(url, now, direct=True)
        self.sieve.note_size(self.bloom.count)
        limits.queued(host)
        out.append(Queued(url, depth))
        if hops:
            self._hops[url] = hops
        self._push(url, host, depth, now)
        return out

    def sieve_verdicts(self, batch: SieveBatch, new: list[bool], now: float) -> list[Effect]:
        """The sieve's answer for ``batch``: new URLs are queued after all; duplicates are dropped."""
        out: list[Effect] = []
        for p in self.sieve.verdicts(batch, new, now):
            owner = self._owner(p.host)
            if owner != self.peer_id:
                out.append(Forward(p.url, p.depth, owner, True, p.host))  # its host moved while it waited
                continue
            # Into the sieve with the next batch, after this Queued is
            # committed: the sieve never holds a URL the journal does not.
            self.sieve.add(p.url, now)
            out.append(Queued(p.url, p.depth))
            self.limits.queued(p.host)
            if p.hops:
                self._hops[p.url] = p.hops
            self._push(p.url, p.host, p.depth, now)
        return out

    def sieve_readd(self, urls: Iterable[str], now: float) -> None:
        """Hashes the sieve may have lost in a crash (the recovered journal's rows)."""
        for url in urls:
            self.sieve.add(url, now)

    def seeds(self, now: float) -> list[Effect]:
        out: list[Effect] = []
        for seed in self.cfg.crawl.seeds:
            out += self.discover(seed, 0, now, Origin.SEED)
        return out + self.sitemap_seeds(now)

    # -- scheduling ------------------------------------------------------------------

    def next(self, now: float, ring: RingView | None = None) -> Start | Sleep | Finished:
        """What the scheduler does now: start a job, sleep, or end (``ring``: the node, in a ring)."""
        # Held pages decided first: at their deadline, or all when the crawl ends
        # (peer.core.dedupe.held rule 4); their effects before anything else.
        due = self.dup_due(now, ending=self.stopping or self._at_max_pages(ring))
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
            # crawl; our cap of the budget bounds our starts (ring.budget).
            done_pages += ring.others_pages()
            cap = ring.page_cap
            gone = ring.budget_gone()
        if max_pages and (done_pages >= max_pages or gone):
            return Finished(StopReason.MAX_PAGES)
        fr = self.frontier
        fr.roll_windows(now)
        # With max_pages, start no more than the cap: requested + in flight
        # never pass it (ring.budget rule 4), so no peer ever overshoots.
        room = self.cfg.crawl.concurrency - self.in_flight
        if max_pages:
            mine = self.requested if ring is not None else done_pages
            room = min(room, cap - mine - self.in_flight)
        # Without the ring's lease no request starts (ring.lease): a split or a
        # starved process must cost time, never a second owner of a host.
        paused = ring is not None and not ring.may_start(now)
        rc = self.recrawl
        if rc is not None:  # due revisits to the front of their hosts' queues (peer/core/revisit/recrawl.py)
            for url, host, depth in rc.feed(now):
                fr.requeue(Job(url, host, depth), now, now)
        job = fr.pop_ready(now) if room > 0 and not paused else None
        if job is not None:
            if rc is not None and (nxt := rc.started(job.url, job.host, fr)) is not None:
                fr.requeue(Job(*nxt), now, now)
            self.in_flight += 1
            self._inflight[job.url] = (job.host, job.depth)
            self._marks[job.url] = 0
            return Start(job)
        if self.leaving:
            # Fetch nothing more. What comes back to the frontier (a job
            # that waited on robots.txt) goes to its owner like the rest.
            effects: list[Effect] = []
            if len(fr) and self.ring is not None:
                effects = self.set_ring(self.ring, now)
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
        dup = self.dup_next()
        if dup is not None:
            when = dup if when is None else min(when, dup)
        revisit_at = None if rc is None else rc.next_due()  # a revisit coming due wakes the loop
        if revisit_at is not None and (when is None or revisit_at < when):
            when = revisit_at
        return Sleep(math.inf if when is None else when)

    def _at_max_pages(self, ring: RingView | None) -> bool:
        """``next``'s max_pages test, for the held pages (peer.core.dedupe.held rule 4)."""
        max_pages = self.cfg.crawl.max_pages
        if not max_pages or not self.dup_waiting():
            return False
        done = self.requested + (ring.others_pages() if ring is not None else 0)
        return done >= max_pages or (ring is not None and ring.budget_gone())

    def locally_idle(self) -> bool:
        # A continuous crawl is never idle while revisits are scheduled
        # (peer/core/revisit/recrawl.py rule 5): neither done alone nor in the ring.
        rc = self.recrawl
        return (self.in_flight == 0 and len(self.frontier) == 0 and not self.sieve.pending
                and not self.frontier.moving and not self.dup_waiting()
                and (rc is None or self.leaving or not rc.scheduled))

    def job_ended(self, job: Job) -> None:
        """The job's task is over, whatever happened (the driver's ``finally``)."""
        self._marks.pop(job.url, None)
        self._inflight.pop(job.url, None)
        self.in_flight -= 1

    # -- admission -------------------------------------------------------------------

    def admit(self, job: Job, now: float) -> Admission:
        """What to do with a job the frontier handed out, before any request."""
        out: list[Effect] = []
        if self._handed_seen and job.url in self._handed_seen:
            # Fetched by the host's previous owner, which handed it over.
            self._handed_seen.discard(job.url)
            out.append(Done(job.url))
            self._finish(job, now, Outcome.NOT_STARTED)
            return Drop(job, tuple(out))
        if job.url in self._recent_rows and (self.recrawl is None or not self.recrawl.is_revisit(job.url)):
            # Requested here a moment ago and queued a second time (RECENT_ROWS); a
            # revisit comes back on purpose, through its schedule (peer/core/revisit/recrawl.py).
            self.summary.requeued_twice += 1
            out.append(Done(job.url))
            self._finish(job, now, Outcome.NOT_STARTED)
            return Drop(job, tuple(out))
        if self.ring is not None and len(self.ring):
            owner = self.ring.owner(job.host)
            if owner != self.peer_id:
                # Came back after its host moved (a retry, a robots.txt
                # wait): it is the new owner's now.
                self._pass_on(job.url, job.depth, owner, job.host, out)
                self._finish(job, now, Outcome.NOT_STARTED)
                return PassOn(job, owner, tuple(out))
        if self.limits.given_up(job.host):
            # Came back (a retry, a robots.txt wait) after its host was given up.
            self._row(job, None, out, error="retry_after")
            self._finish(job, now, Outcome.NOT_STARTED)
            return Drop(job, tuple(out))
        if self.holds:
            held, expired = self.holds.held(job.host, now)
            out += [Warn(e.text) for e in expired]
            if held:
                self._requeue(job, now, now + HOLD_POLL, out)
                self._finish(job, now, Outcome.UNREACHED)
                return Requeue(job, now + HOLD_POLL, tuple(out))
        if self.cfg.crawl.obey_robots:
            verdict = self.robots.check(job.host, job.url, now)
            if verdict is Verdict.FETCH:
                if job.url in self._marks:
                    self._marks[job.url] |= _ROBOTS
                scheme = job.url.split(":", 1)[0]
                return FetchRobots(job, self.robots.robots_url(job.host, scheme), tuple(out))
            if verdict is Verdict.PENDING or verdict is Verdict.UNREACHABLE:
                # Held, not dropped: the robots.txt answer is on its way, or
                # the server may be back by the retry (RFC 9309 §2.3.1.4).
                later = now + ROBOTS_PENDING_WAIT
                if verdict is Verdict.UNREACHABLE:
                    later = max(later, self.robots.retry_at(job.host))
                self._requeue(job, now, later, out)
                self._finish(job, now, Outcome.UNREACHED)
                return Requeue(job, later, tuple(out))
            if verdict is Verdict.DISALLOW:
                # By the rules, or because robots.txt could not be read (rule 7).
                self._row(job, None, out, error=self.robots.failure(job.host) or "robots")
                # No request: the host's next URL need not wait a delay for it.
                self._finish(job, now, Outcome.NOT_STARTED)
                return Drop(job, tuple(out))
            delay = self.robots.crawl_delay(job.host)
            if delay:
                # Again at every start: the frontier forgets idle hosts, and
                # their Crawl-delay floor with them.
                self.frontier.set_min_delay(job.host, delay, now)
        if job.url in self._marks:
            self._marks[job.url] |= _FETCHING
        if self._sitemap_jobs and job.url in self._sitemap_jobs:
            return FetchSitemap(job, self.cfg.sitemaps.max_bytes,
                                tuple(sorted(self.sitemaps.authorities(job.url))), tuple(out))
        return Fetch(job, tuple(out))

