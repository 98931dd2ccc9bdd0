"""The crawl core of one peer: every crawl decision, with no I/O (h11's shape).

``CrawlCore`` owns the scope, the Bloom filter, the frontier, the robots
cache, the limits, the retry attempts and redirect hops, and the hand-off
holds (``peer.core.holds``). It imports no trio, zmq, httpx or duckdb: the caller
passes ``now`` and what the network said, and gets decisions back as frozen
dataclasses (``peer.core.decisions``). ``peer/engine/crawler.py`` is the thin trio driver that does what they
say; ``tests/test_crawl.py`` drives this module synchronously.

The path of one URL, as the code reads:

1. ``discover(url, depth, now, origin)`` - scope, the URL caps, the owner
   (another peer's host: a ``Forward``), the per-host cap and the Bloom
   filter; a new URL goes into the frontier and the journal (``Queued``).
2. ``next(now, ring)`` - ``Start(job)`` when the frontier's politeness gate
   and the concurrency (and ``max_pages``) allow one, else ``Sleep(until)``
   or ``Finished(reason)``.
3. ``admit(job, now)`` - just before the request: ``Fetch``, ``FetchRobots``
   (the host's robots.txt first), ``Requeue`` (robots.txt pending, a
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
RELAY         yes [2]    yes              yes        add; already there: drop
ADOPTED       yes [2]    yes              yes        add; already there: drop
HANDED_BACK   no         no [3]           no         add, queued unless handed as seen [3]
HANDED_SEEN   no         no               no         add, never queued [4]
RECOVERED     no         no               no         untouched [5]
============  =========  ===============  =========  =====================================

[1] ``normalize_link`` made it. [2] Remote input from a peer or the adopt
tool. [3] Ours, on its way to a peer now gone (``Outbox.reroute``): it may
be in our filter already (queued here before its host moved), and nobody
else took it; unless a previous owner handed it to us as fetched (a link
forwarded to a leaver that had fetched it, refused by the leaver and
rerouted here): then it is dropped. [4] Fetched by another peer for a host now ours; if it was
already in the filter it may be queued here, and its job is dropped when
it comes up. [5] Recovered from the journal, whose filter holds it.

A URL not ours goes to its owner: ``Forward(relay=False)`` for our own
discoveries (the outbox's recently-forwarded cache may drop a repeat),
``relay=True`` for URLs we were handed (they may be the only copy).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from peer.core.bloom import BloomFilter
from peer.core.seen import SeenSieve, SieveBatch
from peer.core.seen import Verdict as SeenVerdict
from peer.core.config import ClusterConfig
from peer.core.decisions import (
    Admission,
    Checking,
    Done,
    Drop,
    Effect,
    Fetch,
    FetchRobots,
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
from peer.errors import ErrorKind, URLError
from peer.core.extract import Page, decode_html, is_html, parse_page, parse_tree
from peer.core.frontier import CEILING_WINDOWS, Frontier, Job, Outcome
from peer.core.holds import Holds, Liveness
from peer.core.items import ExtractConfig, extract_items
from peer.core.progress import READY_MOST, ProgressSnapshot
from peer.core.stats import render_summary, requested_errors
from peer.core.limits import Cap, Hold, Limits
from peer.core.robots import RobotsCache, Verdict
from peer.core.urls import Scope, host_key, hostname, normalize, normalize_link

if TYPE_CHECKING:
    from peer.net.fetcher import FetchResult
    from ring.hashring import HashRing

__all__ = [
    "CrawlCore", "Origin", "StopReason", "Summary", "Parsed", "parse_response", "RingView",
    "Forward", "Queued", "Checking", "Seen", "Done", "Row", "Items", "Requeued", "Warn", "Effect",
    "Fetch", "FetchRobots", "Requeue", "Drop", "PassOn", "Admission",
    "Start", "Sleep", "Finished", "MAX_RETRIES",
]

#: Attempts after the first for a transient failure (5xx, reset, timeout...).
MAX_RETRIES = 2
#: First retry waits this long (then x2 per attempt, with +-50% jitter).
RETRY_BASE = 1.0
#: Transient error kinds worth a retry; the rest (dns, blocked, tls,
#: too_large, protocol) would fail the same way again.
RETRYABLE = frozenset({"connect", "reset", "timeout"})
#: robots.txt failures no retry mends in this run: the name does not resolve
#: (the resolver caches that, too) or the SSRF guard refuses every address.
ROBOTS_FINAL = frozenset({"dns", "blocked"})
#: Error kinds of requests that never reached the server (frontier rule 5).
UNREACHED_KINDS = frozenset({"dns", "blocked", "connect"})
#: How long a job waits when another task is fetching its host's robots.txt.
ROBOTS_PENDING_WAIT = 0.25
#: How often a job of a host held for a hand-off looks again.
HOLD_POLL = 0.1
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


# -- parsing (pure, for a worker thread) ------------------------------------------


@dataclass(frozen=True, slots=True)
class Parsed:
    """What a worker thread got out of one HTML page."""

    page: Page
    items: list[tuple[str, dict[str, Any]]]
    errors: list[str]


def parse_response(url: str, body: bytes, charset: str | None, ex: ExtractConfig,
                   max_links: int = 0) -> Parsed:
    """Links, title and extraction-rule items of an HTML page; pure, for a worker thread."""
    tree = None
    items: list[tuple[str, dict[str, Any]]] = []
    errors: list[str] = []
    if ex and (ex.module or any(r.matches(url) for r in ex.rules)):
        # One parse for the links and the extraction rules.
        tree = parse_tree(body, charset)
        html = decode_html(body, charset) if ex.module else ""
        items, errors = extract_items(ex, url, html, tree)
    return Parsed(parse_page(url, body, charset, tree=tree, max_links=max_links), items, errors)


@dataclass(slots=True)
class Summary:
    """What a crawl did; printed at the end and returned by ``Crawler.run``."""

    pages: int = 0                       # rows written (fetched or failed)
    fetched: int = 0                     # requests that got an HTTP answer
    bytes: int = 0                       # body bytes kept
    by_status: Counter[int] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    retries: int = 0
    robots_fetches: int = 0
    items: int = 0                       # rows of the extraction rules' tables
    extract_errors: int = 0              # user extraction function failures
    internal: Counter[str] = field(default_factory=Counter)  # exceptions by type (rule 8)
    limits: str = ""                     # Limits.render(): caps hit, hosts held
    details: list[str] = field(default_factory=list)  # remote input, politeness, seen set
    elapsed: float = 0.0
    stop_reason: str = ""

    # "pages" to a user are requests made (peer/core/progress.py); rows recorded
    # without one are counted apart, by cause, and so are links out of scope.
    requested: int = 0                   # rows whose request was made, this run
    not_requested: Counter[str] = field(default_factory=Counter)
    out_of_scope: int = 0
    items_by_table: Counter[str] = field(default_factory=Counter)

    def rate(self) -> float:
        return self.requested / self.elapsed if self.elapsed > 0 else 0.0

    def render(self) -> str:
        return render_summary(self)


def _no_ip(host: str) -> str | None:
    return None


def _unknown(peer: str) -> bool | None:
    return None


class CrawlCore:
    """One peer's crawl decisions (module docstring); mutable, pure, one thread."""

    def __init__(self, cfg: ClusterConfig, peer_id: str, *, rng: random.Random | None = None,
                 peek_ip: Callable[[str], str | None] = _no_ip) -> None:
        self.cfg = cfg
        self.peer_id = peer_id
        crawl, pol = cfg.crawl, cfg.politeness
        self.scope = Scope.from_seeds(crawl.seeds, crawl.allow_hosts, crawl.deny_hosts, crawl.max_depth)
        self.frontier = Frontier(pol)
        b = cfg.bloom
        self.bloom = BloomFilter(b.capacity, b.error_rate, growth=b.growth, max_capacity=b.max_capacity)
        #: The exact seen set's policy behind the Bloom filter (peer/core/seen.py).
        self.sieve = SeenSieve(b.disk_after, b.sieve_batch, b.sieve_wait)
        self.robots = RobotsCache(crawl.user_agent, max_crawl_delay=pol.max_crawl_delay,
                                  error_retry=crawl.robots_retry)
        self.limits = Limits.from_config(crawl, pol)
        self.summary = Summary()
        #: Jitter of the retry waits: injected, so a test sees the same waits.
        self.rng = rng or random.Random()
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
        self._ip_politeness = bool(pol.ip_rate or pol.ip_concurrency)

    # -- discovery -------------------------------------------------------------------

    def discover(self, url: str, depth: int, now: float, origin: Origin, hops: int = 0) -> list[Effect]:
        """A URL arrives from ``origin``; see the module table for each origin's path."""
        out: list[Effect] = []
        if origin is Origin.HANDED_SEEN:
            host = host_key(url)
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
            host = host_key(url)
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
            host = host_key(url)
            owner = self._owner(host)
            # Already in the Bloom filter; the sieve may have lost its hash
            # with the batch open at the crash (peer/state/sievefile.py).
            self.sieve.add(url, now)
            if owner == self.peer_id:
                self._push(url, host, depth, now)
                self.limits.queued(host)
            else:
                self._pass_on(url, depth, owner, out)
            return out
        relay = origin is Origin.RELAY or origin is Origin.ADOPTED
        if relay or origin is Origin.SEED:
            try:
                url = normalize(url)
            except URLError:
                return out
        if not self.scope.allows(url, depth):
            self.summary.out_of_scope += 1
            return out
        limits = self.limits
        if limits.check_url(url) is not None:
            return out  # too long, or a repeating path: the same verdict at any peer
        host = host_key(url)
        if self.ring is not None:
            owner = self.ring.owner(host)
            if owner != self.peer_id:
                # A URL we were handed (relay) must not be dropped by the
                # sender's "recently forwarded" cache: it may be the only copy.
                out.append(Forward(url, depth, owner, relay))
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
            # for the exact sieve (peer/core/seen.py). It is journaled now, before
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
                out.append(Forward(p.url, p.depth, owner, True))  # its host moved while it waited
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
        return out

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

    def _pass_on(self, url: str, depth: int, owner: str, out: list[Effect]) -> None:
        """A URL queued here whose host is now ``owner``'s: it travels on and leaves our queue."""
        out.append(Forward(url, depth, owner, True))
        out.append(Done(url))

    # -- scheduling ------------------------------------------------------------------

    def next(self, now: float, ring: RingView | None = None) -> Start | Sleep | Finished:
        """What the scheduler does now: start a job, sleep, or end (``ring``: the node, in a ring)."""
        if self.stopping:
            return Finished(StopReason.STOPPED)
        max_pages = self.cfg.crawl.max_pages
        done_pages = self.requested
        cap = max_pages
        if ring is not None and max_pages:
            # Cluster-wide: the others' gossiped counts plus ours, and this
            # round's share of the rest (Membership.page_cap).
            done_pages += ring.others_pages()
            cap = ring.page_cap
        if max_pages and done_pages >= max_pages:
            return Finished(StopReason.MAX_PAGES)
        fr = self.frontier
        fr.roll_windows(now)
        # With max_pages, start no more than can still be written, so the
        # overshoot is bounded by the requests that end up retried.
        room = self.cfg.crawl.concurrency - self.in_flight
        if max_pages:
            mine = self.requested if ring is not None else done_pages
            room = min(room, cap - mine - self.in_flight)
        job = fr.pop_ready(now) if room > 0 else None
        if job is not None:
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
        if self.in_flight == 0 and len(fr) == 0 and not self.sieve.pending and not fr.moving:
            if ring is None:
                return Finished(StopReason.FRONTIER_EMPTY)
            if ring.idle() and ring.done():
                return Finished(StopReason.CLUSTER_DONE)
        # Sleep until a host can start, or a fetch ends, or a URL arrives.
        when = fr.next_ready_at() if room > 0 else None
        return Sleep(math.inf if when is None else when)

    def locally_idle(self) -> bool:
        return (self.in_flight == 0 and len(self.frontier) == 0 and not self.sieve.pending
                and not self.frontier.moving)

    def job_ended(self, job: Job) -> None:
        """The job's task is over, whatever happened (the driver's ``finally``)."""
        self._marks.pop(job.url, None)
        self._inflight.pop(job.url, None)
        self.in_flight -= 1

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
        if self.ring is not None and len(self.ring):
            owner = self.ring.owner(job.host)
            if owner != self.peer_id:
                # Came back after its host moved (a retry, a robots.txt
                # wait): it is the new owner's now.
                self._pass_on(job.url, job.depth, owner, out)
                self._finish(job, now, Outcome.NOT_STARTED)
                return PassOn(job, owner, tuple(out))
        if self.limits.given_up(job.host):
            # Came back (a retry, a robots.txt wait) after its host was given up.
            self._row(job, None, out, error="retry_after")
            self._finish(job, now, Outcome.NOT_STARTED)
            return Drop(job, tuple(out))
        if self.holds:
            held, timed_out = self.holds.held(job.host, now, self.alive)
            for prev in timed_out:
                out.append(Warn(f"no hand-off from {prev} after {self.hold_timeout:.0f}s; "
                                "fetching its former hosts"))
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
        return Fetch(job, tuple(out))

    # -- results ---------------------------------------------------------------------

    def fetched(self, job: Job, res: FetchResult, now: float) -> bool:
        """The answer came: note the host's address; whether the body is HTML to parse."""
        if res.address is not None:
            self.frontier.set_host_ip(job.host, res.address, now)
        return (res.status is not None and 200 <= res.status < 300
                and is_html(res.content_type, res.body))

    def on_result(self, job: Job, res: FetchResult, parsed: Parsed | None, now: float) -> list[Effect]:
        """What a fetch result means: rows, discoveries, retries; the job is done."""
        out: list[Effect] = []
        outcome = self._outcome(job, res, now, parsed, out)
        self._finish(job, now, outcome)
        return out

    def _outcome(self, job: Job, res: FetchResult, now: float, parsed: Parsed | None,
                 out: list[Effect]) -> Outcome:
        status = res.status
        host = job.host
        limits = self.limits
        retryable = res.error in RETRYABLE or (status is not None and status >= 500) or status == 429
        retry_after = None
        if retryable and status is not None:
            # Cut to max_retry_after; a host that keeps asking for more is given up.
            retry_after, gave_up = limits.retry_after(host, res.retry_after)
            if gave_up:
                self._give_up(host, res.retry_after, out)
        elif status is not None:
            limits.answered(host)
        given_up = retryable and limits.given_up(host)
        if retryable and not given_up:
            if status in (429, 503):
                self.frontier.backoff(host, now, retry_after)
                if retry_after:
                    limits.hold(host, Hold.RETRY_AFTER, now + retry_after)
            if self._retry(job, now, retry_after, out):
                return Outcome.FETCHED if status is not None else Outcome.FAILED
        self._attempts.pop(job.url, None)
        if status is None:
            self._row(job, res, out, error=res.error or "unknown")
            return Outcome.UNREACHED if res.error in UNREACHED_KINDS else Outcome.FAILED
        title: str | None = None
        n_links = 0
        links: tuple[str, ...] = ()
        final_url = job.url
        error = res.error or ("retry_after" if given_up else None)
        if 300 <= status < 400 and res.location:
            target = normalize_link(job.url, res.location)
            if target is not None:
                final_url = target
                hops = self._hops.pop(job.url, 0) + 1
                if hops > self.cfg.crawl.max_redirects:
                    error = "too_many_redirects"
                else:
                    # Not followed inside the fetch: the target passes scope,
                    # robots and dedupe, and its host's politeness (rule 3).
                    out += self.discover(target, job.depth, now, Origin.REDIRECT, hops)
        elif parsed is not None:
            page = parsed.page
            self._extracted(job.url, parsed, out)
            title, n_links = page.title, page.n_links
            links = tuple(limits.cut_links(page.links, page.n_links))
            max_depth = self.cfg.crawl.max_depth
            if not page.nofollow and (not max_depth or job.depth < max_depth):
                for link in links:
                    out += self.discover(link, job.depth + 1, now, Origin.LINK)
        self._hops.pop(job.url, None)
        # After its links' Queued: done(page) on disk implies its links are
        # (peer/state/journal.py, crash ordering rule 1).
        self._row(job, res, out, final_url=final_url, title=title, n_links=n_links,
                  error=error, links=links)
        return Outcome.FETCHED

    def _retry(self, job: Job, now: float, retry_after: float | None, out: list[Effect]) -> bool:
        n = self._attempts.get(job.url, 0)
        # Leaving, or the host moved while its request was on the wire: the
        # hand-off lists the URL as fetched here (``inflight_urls``), so a
        # retry passed on now would be dropped by the new owner as seen and
        # leave no row anywhere; the failure is recorded here instead.
        if (n >= MAX_RETRIES or self.stopping or self.leaving
                or self._owner(job.host) != self.peer_id):
            return False
        self._attempts[job.url] = n + 1
        # Exponential backoff with jitter, so the retries of many URLs that
        # failed together (a server restart) do not come back together.
        wait = RETRY_BASE * 2**n * self.rng.uniform(0.5, 1.5)
        if retry_after is not None:
            wait = max(wait, retry_after)
        self._requeue(job, now, now + wait, out)
        self.summary.retries += 1
        return True

    def _give_up(self, host: str, asked: float | None, out: list[Effect]) -> None:
        """Rule 6: the host asked for too long a wait too often; its queued URLs get rows."""
        jobs = self.frontier.remove_host(host)
        out.append(Warn(
            f"giving up {host}: Retry-After {asked or 0.0:.0f}s, over politeness.max_retry_after "
            f"({self.limits.max_retry_after:g}s), {self.limits.strikes} times in a row; its "
            f"{len(jobs)} queued URLs are recorded as 'retry_after' and no more of its URLs are queued"))
        for job in jobs:
            self._attempts.pop(job.url, None)
            self._hops.pop(job.url, None)
            self._row(job, None, out, error="retry_after")

    def _extracted(self, url: str, parsed: Parsed, out: list[Effect]) -> None:
        if parsed.items:
            out.append(Items(url, tuple(parsed.items)))
        self.summary.items += len(parsed.items)
        self.summary.items_by_table.update(table for table, _ in parsed.items)
        for err in parsed.errors:
            # A bug in the user's function must not stop the crawl; the first
            # few are logged, all are counted in the summary.
            self.summary.extract_errors += 1
            if self.summary.extract_errors <= EXTRACT_WARNINGS:
                out.append(Warn(f"extraction failed on {url}: {err}"))

    def on_robots(self, job: Job, res: FetchResult, now: float) -> list[Effect]:
        """The host's robots.txt answer (or failure) for the job that asked for it."""
        out: list[Effect] = []
        host = job.host
        self.summary.robots_fetches += 1
        if res.address is not None:
            self.frontier.set_host_ip(host, res.address, now)
        status, error = res.status, res.error
        if status in (429, 503) and res.retry_after is not None:
            # The server said when: ask again then, not after robots_retry
            # (RFC 9110 §10.2.3), cut like any Retry-After.
            self.robots.failed(host, now, ErrorKind.ROBOTS,
                               retry_after=min(res.retry_after, self.limits.max_retry_after))
        elif status is not None and (not 200 <= status < 300 or error is None
                                     or (error == "too_large" and res.truncated)):
            # An answer: its status decides (rules 2-5 of peer/core/robots.py); a
            # 2xx cut at the limit is the prefix RFC 9309 §2.5 asks us to parse.
            self.robots.loaded(host, status, res.body, now, truncated=res.truncated)
        else:
            cause = ErrorKind(error) if error else ErrorKind.UNKNOWN
            self.robots.failed(host, now, cause, final=cause in ROBOTS_FINAL)
        failures = self.robots.failures(host)
        outcome = (Outcome.UNREACHED if error in UNREACHED_KINDS and status is None
                   else Outcome.FETCHED if status is not None else Outcome.FAILED)
        if not failures:
            self.limits.release(host, Hold.ROBOTS)
            delay = self.robots.crawl_delay(host)
            if delay:
                self.frontier.set_min_delay(host, delay, now)
        else:
            why = f"HTTP {status}" if status is not None and error is None else (error or "unknown")
            final = self.robots.failure(host)
            queued = self.frontier.host_queued(host) + 1
            if final is not None:
                # No retry left, or none can help: the host's URLs are
                # recorded with the cause now rather than held (rule 7).
                self.limits.release(host, Hold.ROBOTS)
                out.append(Warn(f"robots.txt of {host} could not be read ({why}, failure {failures}); "
                                f"its {queued} queued URLs are recorded as '{final}'"))
                self._row(job, None, out, error=final)
                for other in self.frontier.remove_host(host):
                    self._attempts.pop(other.url, None)
                    self._hops.pop(other.url, None)
                    self._row(other, None, out, error=final)
                self._finish(job, now, outcome)
                return out
            retry_at = self.robots.retry_at(host)
            self.limits.hold(host, Hold.ROBOTS, retry_at)
            out.append(Warn(f"robots.txt of {host} could not be read ({why}, failure {failures} of "
                            f"{self.robots.max_failures}); its {queued} queued URLs wait for the "
                            f"next try in {retry_at - now:.0f}s"))
        # The robots.txt request took this job's slot; the job goes back to
        # the front of its queue and waits for the host's delay like any other.
        self._requeue(job, now, now, out)
        self._finish(job, now, outcome)
        return out

    def robots_cancelled(self, job: Job) -> None:
        """The robots.txt request was cancelled: the host's next job asks again."""
        self.robots.cancelled(job.host)

    def internal(self, job: Job, exc_type: str, now: float) -> tuple[list[Effect], bool]:
        """Rule 8: an exception escaped the job; its row and done(), once. True: first of its type."""
        self.summary.internal[exc_type] += 1
        first = exc_type not in self._internal_seen
        self._internal_seen.add(exc_type)
        out: list[Effect] = []
        marks = self._marks.get(job.url, 0)
        if marks & _ROBOTS:
            self.robots.cancelled(job.host)  # the next job of the host asks again
        if not marks & (_ROW | _REQUEUED):
            self._attempts.pop(job.url, None)
            self._hops.pop(job.url, None)
            self._row(job, None, out, error="internal")
        if not marks & _DONE:
            self._finish(job, now, Outcome.FAILED)
        return out, first

    def _row(self, job: Job, res: FetchResult | None, out: list[Effect], *,
             final_url: str | None = None, title: str | None = None, n_links: int = 0,
             error: str | None = None, links: tuple[str, ...] = ()) -> None:
        if job.url in self._marks:
            self._marks[job.url] |= _ROW
        s = self.summary
        s.pages += 1
        if res is not None:
            self.requested += 1
            s.requested += 1
        elif error and error != "internal":
            s.not_requested[error] += 1
        if res is not None and res.status is not None:
            s.fetched += 1
            s.by_status[res.status] += 1
            s.bytes += len(res.body)
        if error:
            s.errors[error] += 1
        crawl = self.cfg.crawl
        out.append(Row(
            url=job.url, final_url=final_url or job.url, host=job.host,
            status=None if res is None else res.status,
            content_type=None if res is None else res.content_type,
            bytes=0 if res is None else len(res.body), title=title, n_links=n_links,
            depth=job.depth, elapsed_ms=0.0 if res is None else res.elapsed * 1000.0, error=error,
            body=res.body if (res is not None and crawl.store_body) else None,
            links=links if crawl.store_links else (),
        ))

    # -- the ring's side -------------------------------------------------------------

    def set_ring(self, ring: HashRing, now: float) -> list[Effect]:
        """The live member set changed: hosts no longer ours go to their owners."""
        old, self.ring = self.ring, ring
        out: list[Effect] = []
        if len(ring):
            # Hosts are placed by a hash of their name, not of their IP, so
            # this peer owns about its ring share of any IP's hosts: its share
            # of the IP's budget (BUbiNG divides by the number of agents;
            # this is the same for equal weights and follows unequal ones).
            self.frontier.set_default_ip_share(ring.shares().get(self.peer_id, 1.0))
        for host in self.frontier.queued_hosts():
            owner = ring.owner(host)
            if owner != self.peer_id:
                # The heads now; spilled blocks by pass_on_moving (frontier rule 10).
                for job in self.frontier.release_host(host):
                    self._pass_on(job.url, job.depth, owner, out)
        if old is not None and self.peer_id in ring and set(old) != set(ring):
            self.hold_from(old, now)
        return out

    def hold_from(self, old: HashRing, now: float) -> None:
        """Hold the hosts gained from live previous owners until their HandoffDone (peer/core/holds.py)."""
        if len(old):
            self.holds.add(old, old, self.peer_id, now + self.hold_timeout, self.alive)

    def handoff_done(self, sender: str) -> None:
        self.holds.release(sender)

    def inflight_urls(self) -> list[tuple[str, str]]:
        """(url, host) of the jobs whose page request is on the wire now (admit said ``Fetch``).

        A hand-off calls these fetched. Not the other jobs in flight: one
        started whose task has not run ``admit`` yet, or one waiting for its
        host's robots.txt, comes back to ``admit`` after the ring changed and
        is passed on to its new owner (``PassOn``), which would drop it as
        seen if it were in the hand-off too: a URL fetched by nobody.
        """
        marks = self._marks
        return [(url, hd[0]) for url, hd in self._inflight.items() if marks.get(url, 0) & _FETCHING]

    def handoff_seen(self, rows: Iterable[tuple[str, str]], old: HashRing | None,
                     ring: HashRing) -> list[tuple[str, str]]:
        """(url, new owner) of the fetched URLs whose hosts moved between ``old`` and ``ring``.

        ``rows``: (url, host) of the pages fetched here and in flight. The
        URLs handed to us as fetched go along too: their next owner had them
        only from us.
        """
        me = self.peer_id
        owners: dict[str, tuple[str, bool]] = {}
        out: list[tuple[str, str]] = []
        for url, host in [*rows, *self._seen_in.items()]:
            got = owners.get(host)
            if got is None:
                new = ring.owner(host) if len(ring) else me
                moved = new != me and (old is None or old.owner(host) != new)
                got = owners[host] = (new, moved)
            if got[1]:
                out.append((url, got[0]))
        return out

    def moved_hosts(self, hosts: Iterable[str], old: HashRing | None, ring: HashRing) -> list[str]:
        """Those of ``hosts`` (the results' host index) that move to another peer between ``old`` and ``ring``."""
        me = self.peer_id
        if not len(ring):
            return []
        out = []
        for host in hosts:
            new = ring.owner(host)
            if new != me and (old is None or old.owner(host) != new):
                out.append(host)
        return out

    def handoff_starts(self, old: HashRing | None, ring: HashRing,
                       offset: float) -> dict[str, list[tuple[str, float]]]:
        """{new owner: [(host, request start + ``offset``)]} of the hosts that moved away.

        The frontier keeps a host's starts for the ceiling's horizon after it
        leaves our queue (``remove_host``), so they are still here when the
        hand-off runs; the new owner seeds its ceiling with them (rule 9).
        """
        out: dict[str, list[tuple[str, float]]] = {}
        if not len(ring):
            return out
        me, fr = self.peer_id, self.frontier
        for host in fr.known_hosts():
            new = ring.owner(host)
            if new == me or (old is not None and len(old) and old.owner(host) == new):
                continue
            for t in fr.recent_starts(host):
                if len(host) <= MAX_HOST_KEY:
                    out.setdefault(new, []).append((host, t + offset))
        return out

    def seed_starts(self, starts: Iterable[tuple[str, float]], now: float, offset: float) -> None:
        """Count request starts made before (their time + ``offset`` = this clock) on our hosts."""
        by_host: dict[str, list[float]] = {}
        for host, t in starts:
            if self._owner(host) == self.peer_id:
                by_host.setdefault(host, []).append(t + offset)
        for host, times in by_host.items():
            self.frontier.seed_starts(host, times, now)

    def resume_spilled(self, now: float) -> list[Effect]:
        """Put a recovered spill store back: our hosts' queues into the frontier, the rest on.

        Before the recovered heads and journal are pushed: the store's URLs
        of a host come first (peer/state/journal.py, recovery). Its URLs are in the
        Bloom filter already, like any recovered ones.
        """
        out: list[Effect] = []
        fr = self.frontier
        spill = fr.spill_store
        if spill is None:
            return out
        for host in spill.hosts():
            owner = self._owner(host)
            if owner == self.peer_id:
                self.limits.queued(host, fr.adopt(host, now))
            else:
                fr.release_stored(host)  # passed on by pass_on_moving (frontier rule 10)
        return out

    def pass_on_moving(self, now: float, limit: int) -> list[Effect]:
        """About ``limit`` spilled URLs of hosts that changed owner, passed on (frontier rule 10).

        A host that is ours again (the ring changed back) keeps its blocks.
        """
        out: list[Effect] = []
        fr = self.frontier
        for host, flat in fr.take_moving(limit):
            owner = self._owner(host)
            if owner == self.peer_id:
                fr.reattach(host, now)
                for i in range(0, len(flat), 2):
                    self._push(flat[i], host, flat[i + 1], now)
                continue
            for i in range(0, len(flat), 2):
                self._pass_on(flat[i], flat[i + 1], owner, out)
        return out

    def snapshot_queue(self) -> list[tuple[str, int]]:
        """(url, depth) of what a snapshot lists: queued (in RAM, with a spill store) or in flight."""
        fr = self.frontier
        jobs = fr.iter_heads() if fr.spill_store is not None else fr.iter_queued()
        queued = [(j.url, j.depth) for j in jobs]
        queued += [(url, hd[1]) for url, hd in self._inflight.items()]
        queued += [(p.url, p.depth) for p in self.sieve.pending_urls()]
        return queued

    # -- figures ---------------------------------------------------------------------

    def limits_figures(self, now: float, malformed: dict[str, int]) -> dict[str, int]:
        """Non-zero cap hits, held hosts, malformed answers, ceiling holds, internal errors, by name."""
        out = self.limits.figures(now)
        internal = sum(self.summary.internal.values())
        if internal:
            out["error.internal"] = internal
        for reason, n in malformed.items():
            if n:
                out[f"malformed.{reason}"] = int(n)
        fr = self.frontier
        if fr.ceiling_holds:
            out["polite.ceiling_holds"] = fr.ceiling_holds
        if fr.ip_ceiling_holds:
            out["polite.ip_ceiling_holds"] = fr.ip_ceiling_holds
        if fr.moving:
            out["frontier.moving"] = fr.moving  # spilled URLs of hosts given away, not passed on yet
        if self.bloom.num_slices > 1:
            out["bloom.slices"] = self.bloom.num_slices
        if self.bloom.full:
            out["bloom.full"] = 1
        sv = self.sieve.stats()
        for name, n in (("seen.checked", sv.checked), ("seen.false_positives", sv.false_positives),
                        ("seen.pending", sv.pending)):
            if n:
                out[name] = n
        return out

    def detail_lines(self, malformed: dict[str, int]) -> list[str]:
        """The summary's lines on remote input, politeness and the seen set (only what happened)."""
        lines = []
        bad = dict(malformed)
        excess = bad.pop("excess", 0)
        if bad or excess:
            parts = []
            if bad:
                parts.append("malformed headers ignored or clamped: "
                             + ", ".join(f"{k} {n}" for k, n in sorted(bad.items())))
            if excess:
                parts.append(f"bytes past a response's end {excess} (connection closed)")
            lines.append("remote input: " + "; ".join(parts))
        fr = self.frontier
        if fr.ceiling_holds or fr.ip_ceiling_holds or fr.n_ips:
            lines.append(f"politeness: starts held by the 1 s/5 s ceiling {fr.ceiling_holds} "
                         f"(per IP {fr.ip_ceiling_holds}); IP addresses paced {fr.n_ips}")
        b = self.bloom
        if b.num_slices > 1 or b.full:
            lines.append(f"seen set: {b.count:,} URLs in {b.num_slices} Bloom slices "
                         f"({b.total_capacity:,} capacity{', full' if b.full else ''}), "
                         f"estimated false positives {b.estimated_fpr():.3%} (bound {b.fpr_bound:.3%})")
        sv = self.sieve.stats()
        if sv.exact:
            measured = sv.measured_fpr
            lines.append(
                f"seen set: exact past {self.sieve.disk_after:,} URLs (disk sieve of URL hashes); "
                f"Bloom 'maybe seen' checked {sv.checked:,}, new after all {sv.false_positives:,} "
                f"(measured false-positive rate {'n/a' if measured is None else f'{measured:.3%}'}); "
                f"before that, {sv.bloom_drops:,} 'maybe seen' taken as seen unchecked")
        return lines

    def progress_snapshot(self, now: float, elapsed: float, dns_hit_rate: float,
                          cluster_pages: int) -> ProgressSnapshot:
        """This peer's figures at ``now``, for :mod:`peer.core.progress` to format."""
        s = self.summary
        held = self.limits.held(now)
        hits = self.limits.hits
        ready, waiting = self.frontier.host_counts(now, READY_MOST)
        return ProgressSnapshot(
            now=now, elapsed=elapsed, pages=s.requested, items=s.items,
            errors=requested_errors(s.errors, s.not_requested), not_requested=dict(s.not_requested),
            out_of_scope=s.out_of_scope, frontier=len(self.frontier), in_flight=self.in_flight,
            hosts_ready=ready, hosts_waiting=waiting, held_robots=held[Hold.ROBOTS],
            held_retry_after=held[Hold.RETRY_AFTER], max_pages=self.cfg.crawl.max_pages,
            cluster_pages=cluster_pages, dns_hit_rate=dns_hit_rate,
            bloom_fill=self.bloom.fill_estimate(), bloom_slices=self.bloom.num_slices,
            capped=sum(hits[c] for c in (Cap.URL_LENGTH, Cap.PATH_REPEAT, Cap.URLS_PER_HOST,
                                         Cap.LINKS_PER_PAGE, Cap.GIVEN_UP)))
