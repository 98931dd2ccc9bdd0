"""What a fetch's answer means: rows, discoveries, retries, robots.txt answers (pure).

Two parts of ``peer.core.crawl.core.CrawlCore``: ``Outcomes`` (steps 4-6 of
its path of a URL) and ``Retries`` (the attempts of the URLs retried, shared
with ``peer.core.sitemaps.jobs``). ``Outcomes`` owns nothing but the
exception types seen (rule 8); it is handed the parts it asks (the jobs,
the rows, the retries, the held pages) and three callables (discover a URL,
read a robots.txt's sitemaps, keep a response's cookies). ``fetched`` says whether
to parse, ``on_result`` / ``on_robots`` give the effects (the links' and
redirect target's discoveries before the page's ``Row``: crash ordering
rule 1 of peer/state/journal.py), ``internal`` is rule 8 of
peer/engine/crawler.py. Retries go back through the frontier with a
not-before time (rule 2); 429 and 503 back the host off at once and a
host that keeps asking for too long a wait is given up (rule 6). A status
outside 100-599, or a final 1xx, is retried as a 5xx (RFC 9110 §15) and
its row keeps the code.

What a page says of itself (``peer.core.page.directives``) is read from its head
and its HTML together: its canonical URL (the Link header's, else the
head's ``<link>``), and noindex/nofollow from X-Robots-Tag fields for
our product token and the page's meta tags, which add up. A noindex page
keeps its row and writes no items; a nofollow one follows no links, and
neither does a page whose canonical is another URL when
``crawl.follow_noncanonical`` is false. Each is counted in
``Summary.directives``. A duplicate page (``peer.core.dedupe.held``) follows
no links either, and a page that waits for its band owners' verdict holds
its links and row until it comes. With ``[dedupe]`` on, a page whose
canonical is another URL has that URL discovered (the better copy is
fetched and wins: ``peer.core.dedupe.held`` rules 6, 7), and the links it
follows on its own site lose the session parameters its canonical confirms
(``peer.core.dedupe.precedence.unsessioned``): a session view's links lead
to the pages, not to more session views.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from peer.core.crawl.decisions import Discover, DiscoverLinks, Effect, Items, Origin, Reason, Refused, Warn
from peer.core.crawl.jobs import DONE, REQUEUED, ROBOTS, ROW
from peer.core.config.retry import DEFAULT_ERRORS, RetryConfig
from peer.core.crawl.limits import Hold
from peer.core.crawl.outages import Outages, Verdict
from peer.core.crawl.proxyreach import ProxyReach
from peer.core.dedupe.precedence import unsessioned
from peer.core.dedupe.verdicts import Ask, Kind
from peer.core.frontier.frontier import Job, Outcome
from peer.core.page.directives import x_robots_tag
from peer.core.page.extract import is_html
from peer.core.page.parse import Parsed
from peer.core.urls.normalize import normalize_link
from peer.errors import ErrorKind
from ring.durations import duration

if TYPE_CHECKING:
    from peer.core.config.cluster import ClusterConfig
    from peer.core.crawl.jobs import Jobs, Rows
    from peer.core.crawl.limits import Limits
    from peer.core.crawl.robots import RobotsCache
    from peer.core.dedupe.held import HeldPages
    from peer.core.frontier.frontier import Frontier
    from peer.core.http.result import FetchResult
    from peer.core.page.extract import PageRules
    from peer.core.run.stats import Summary
    from peer.core.urls.rules import ParamRules

__all__ = ["Outcomes", "RequisiteHooks", "Retries", "RETRY_BASE", "MAX_RETRIES", "RETRYABLE", "ROBOTS_FINAL",
           "UNREACHED_KINDS", "cause_words"]

#: The defaults of ``[retry]`` base, times and errors (peer/core/config/retry.py has the policy).
RETRY_BASE = RetryConfig().base
MAX_RETRIES = RetryConfig().times
RETRYABLE = frozenset(DEFAULT_ERRORS)
#: robots.txt failures no retry mends in this run: the name does not resolve
#: (the resolver caches that, too), the SSRF guard refuses every address, or
#: the proxy refuses the credentials read at start.
ROBOTS_FINAL = frozenset({"dns", "blocked", "proxy_auth"})
#: Error kinds of requests that never reached the server (frontier rule 5):
#: a proxy's failure is one, whoever's fault it was.
UNREACHED_KINDS = frozenset({"dns", "blocked", "connect", "proxy", "proxy_auth", "proxy_refused"})
#: Extraction failures logged before they are only counted.
EXTRACT_WARNINGS = 5

def cause_words(res: FetchResult, timeout: float) -> str:
    """Why a fetch failed, as a log line says it: ``connection refused on port 8091``, ``HTTP 503``."""
    status, error = res.status, res.error
    if status is not None and error is None:
        return f"HTTP {status}"
    if error == ErrorKind.CONNECT:
        return f"{res.detail or 'no connection'} on port {_port(res.url)}"
    if error == ErrorKind.TIMEOUT:
        return f"no answer within crawl.timeout ({timeout:g}s)"
    if error == ErrorKind.DNS:
        return "the name does not resolve"
    if error == ErrorKind.BLOCKED:
        return "the SSRF guard refused its address (crawl.allow_private)"
    return f"{error or 'unknown'}" + (f": {res.detail}" if res.detail else "")


def _port(url: str) -> str:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "?"
    return str(port if port is not None else 443 if parts.scheme == "https" else 80)


class RequisiteHooks(Protocol):
    """What a result asks of the page requisites' part (``peer.core.crawl.requisites.RequisiteJobs``)."""

    def is_job(self, url: str) -> bool: ...
    def on_result(self, job: Job, res: FetchResult, parsed: Parsed | None, now: float) -> list[Effect]: ...
    def found(self, urls: tuple[str, ...], level: int, depth: int, now: float, *,
              css: bool = False) -> list[Effect]: ...


class Retries:
    """The attempts of the URLs retried: a transient failure goes back through the frontier (rule 2).

    Exponential backoff with jitter, at most ``[retry] times`` a URL, each
    wait at most ``[retry] cap`` (``policy``). ``keeps(host)``: whether this
    peer still keeps the host's jobs (not stopping nor leaving, and still its owner).
    """

    __slots__ = ("policy", "_policy_for", "_jobs", "_summary", "_rng", "_keeps", "_attempts")

    def __init__(self, jobs: Jobs, summary: Summary, rng: random.Random, keeps: Callable[[str], bool],
                 policy: RetryConfig | None = None, policy_for: Callable[[str], RetryConfig] | None = None) -> None:
        self.policy = policy if policy is not None else RetryConfig()
        # A [[site]] block's retry_times and retry_statuses (peer/core/config/sites.py), else [retry]'s.
        self._policy_for = policy_for
        self._jobs = jobs
        self._summary = summary
        self._rng = rng
        self._keeps = keeps
        self._attempts: dict[str, int] = {}  # url -> retries so far (only retried URLs)

    def retry(self, job: Job, now: float, retry_after: float | None, out: list[Effect]) -> bool:
        """Requeue ``job`` for another attempt, if it has one left; False: its failure is final."""
        n = self._attempts.get(job.url, 0)
        # Leaving, or the host moved while its request was on the wire: the
        # hand-off lists the URL as fetched here (``inflight_urls``), so a
        # retry passed on now would be dropped by the new owner as seen and
        # leave no row anywhere; the failure is recorded here instead.
        policy = self._policy_for(job.host) if self._policy_for is not None else self.policy
        if n >= policy.times or not self._keeps(job.host):
            return False
        self._attempts[job.url] = n + 1
        # Exponential backoff with jitter, so the retries of many URLs that
        # failed together (a server restart) do not come back together.
        wait = policy.wait(n, self._rng.uniform(0.5, 1.5))
        if retry_after is not None:
            wait = max(wait, retry_after)
        self._jobs.requeue(job, now, now + wait, out)
        self._summary.retries += 1
        return True

    def retryable(self, res: FetchResult, host: str) -> bool:
        """Is ``res``'s failure one the policy of ``host`` retries (``[retry]`` statuses and errors)?"""
        policy = self._policy_for(host) if self._policy_for is not None else self.policy
        return policy.retries_error(res.error) or (res.status is not None and policy.retries_status(res.status))

    def held(self, job: Job, now: float, until: float, out: list[Effect]) -> bool:
        """The job's host is down or asked for a wait (peer/core/crawl/outages.py): requeued, charged
        no retry, not before ``until``; False when this peer no longer keeps the host (see :meth:`retry`)."""
        if not self._keeps(job.host):
            return False
        self._jobs.requeue(job, now, until, out)
        self._summary.retries += 1
        return True

    def forget(self, url: str) -> None:
        """``url`` has its row, or none is coming: its attempts are over."""
        self._attempts.pop(url, None)

    def side_job(self, job: Job, res: FetchResult, now: float, limits: Limits, frontier: Frontier,
                 out: list[Effect]) -> bool:
        """A side job's transient failure (a sitemap's, a page requisite's) requeued as a page's
        is: back through the host's queue and pace, a 429/503's Retry-After held (rule 2).
        False: not transient, or no attempt left; its failure is final."""
        status = res.status
        if not self.retryable(res, job.host):
            return False
        retry_after = None
        if status in (429, 503):
            retry_after, _ = limits.retry_after(job.host, res.retry_after)
            frontier.backoff(job.host, now, retry_after)
            if retry_after:
                limits.hold(job.host, Hold.RETRY_AFTER, now + retry_after)
        return self.retry(job, now, retry_after, out)


class Outcomes:
    """The results' part of ``CrawlCore`` (module docstring)."""

    __slots__ = ("_cfg", "_summary", "_limits", "_frontier", "_robots", "_page_rules", "_params", "_jobs",
                 "_rows", "_retries", "_outages", "_held", "_discover", "_discover_links", "_robots_sitemaps", "_keep_cookies",
                 "_internal_seen", "_requisites", "_proxies")

    def __init__(self, cfg: ClusterConfig, *, summary: Summary, limits: Limits, frontier: Frontier,
                 robots: RobotsCache, page_rules: PageRules, params: ParamRules | None, jobs: Jobs,
                 rows: Rows, retries: Retries, held: HeldPages, discover: Discover,
                 discover_links: DiscoverLinks,
                 outages: Outages | None = None,
                 robots_sitemaps: Callable[[str, str, float], list[Effect]],
                 keep_cookies: Callable[[FetchResult], None], requisites: RequisiteHooks,
                 proxies: ProxyReach | None = None) -> None:
        self._cfg = cfg
        self._summary = summary
        self._limits = limits
        self._frontier = frontier
        self._robots = robots
        self._page_rules = page_rules
        self._params = params
        self._jobs = jobs
        self._rows = rows
        self._retries = retries
        self._outages = outages if outages is not None else Outages(retries.policy)
        self._held = held
        self._discover = discover
        self._discover_links = discover_links
        self._robots_sitemaps = robots_sitemaps
        self._keep_cookies = keep_cookies
        self._internal_seen: set[str] = set()  # exception types logged once (rule 8)
        self._requisites = requisites
        #: Which proxies answered in this run; None without a proxy (peer/core/crawl/proxyreach.py).
        self._proxies = proxies

    def fetched(self, job: Job, res: FetchResult, now: float) -> bool:
        """The answer came: note the host's address and cookies; whether the body is HTML to parse."""
        self._keep_cookies(res)
        if res.address is not None:
            self._frontier.set_host_ip(job.host, res.address, now)
        # No body, nothing to parse: a body announced over max_body is not
        # read at all (its extraction rules would write a row of NULLs).
        return (res.status is not None and 200 <= res.status < 300 and bool(res.body)
                and is_html(res.content_type, res.body))

    def on_result(self, job: Job, res: FetchResult, parsed: Parsed | None, now: float) -> list[Effect]:
        """What a fetch result means: rows, discoveries, retries; the job is done."""
        if self._proxies is not None:
            self._proxies.saw(job.host, res.error)
        if self._requisites.is_job(job.url):
            return self._requisites.on_result(job, res, parsed, now)  # no row: peer.core.crawl.requisites rule 4
        out: list[Effect] = []
        outcome = self._outcome(job, res, now, parsed, out)
        self._jobs.finish(job, now, outcome)
        return out

    def _outcome(self, job: Job, res: FetchResult, now: float, parsed: Parsed | None,
                 out: list[Effect]) -> Outcome:
        status = res.status
        host = job.host
        limits = self._limits
        retryable = self._retries.retryable(res, host)
        if retryable and self._proxies is not None:
            down = self._proxies.unreached(host, res.error)
            if down is not None:  # not retried: its proxy never answered (proxyreach rule 2)
                retryable = False
                said = self._proxies.warning(*down, res.detail)
                if said is not None:
                    out.append(Warn(said))
        if status is not None and not 200 <= status <= 599:
            self._summary.invalid_status += 1
        retry_after = None
        # An outage is the host's, not the URL's (peer/core/crawl/outages.py).
        verdict, until = Verdict.RETRY, now
        if status is None:
            if res.error in self._retries.policy.down_errors and not limits.given_up(host):
                verdict, until = self._outages.failed(host, now, job.url, res.error or "")
        else:
            over = False
            if retryable:
                # Cut to max_retry_after; a host that keeps asking for more is held (outages rule 4).
                retry_after, over = limits.retry_after(host, res.retry_after)
            if over and not limits.given_up(host):
                verdict, until = self._outages.asked_wait(host, now, limits.max_retry_after)
            else:
                self._outages.answered(host)
        if verdict is Verdict.GIVE_UP:
            self._give_up(host, res, out)
        elif verdict is Verdict.HOLD:
            if status in (429, 503):
                self._frontier.backoff(host, now, retry_after)
            limits.hold(host, Hold.DOWN if status is None else Hold.RETRY_AFTER, until)
            if self._retries.held(job, now, until, out):
                return Outcome.FETCHED if status is not None else Outcome.FAILED
        given_up = retryable and limits.given_up(host)
        if retryable and not given_up and verdict is Verdict.RETRY:
            if status in (429, 503):
                self._frontier.backoff(host, now, retry_after)
                if retry_after:
                    limits.hold(host, Hold.RETRY_AFTER, now + retry_after)
            if self._retries.retry(job, now, retry_after, out):
                return Outcome.FETCHED if status is not None else Outcome.FAILED
        self._retries.forget(job.url)
        if status is None:
            self._rows.row(job, res, out, error=res.error or "unknown")
            return Outcome.UNREACHED if res.error in UNREACHED_KINDS else Outcome.FAILED
        title: str | None = None
        n_links = 0
        links: tuple[str, ...] = ()
        final_url = job.url
        error = res.error or ("retry_after" if given_up else None)
        canonical, robots = self._says(job.url, res, parsed)
        nofollow = robots[1]
        dup = self._held.check(job, parsed, now, canonical) if parsed is not None and 200 <= status < 300 else None
        held: tuple[str, ...] = ()
        if 300 <= status < 400 and res.location:
            target = normalize_link(job.url, res.location, self._params)
            if target is not None:
                final_url = target
                hops = self._jobs.take_hops(job.url) + 1
                if hops > self._cfg.crawl.max_redirects:
                    error = "too_many_redirects"
                    # Counted by the row's error; a value too, so that a driver
                    # (``python -m peer try``) names the core's own reason.
                    out.append(Refused(target, Reason.REDIRECTS))
                else:
                    # Not followed inside the fetch: the target passes scope,
                    # robots and dedupe, and its host's politeness (rule 3).
                    out += self._discover(target, job.depth, now, Origin.REDIRECT, hops)
        elif parsed is not None:
            page = parsed.page
            crawl = self._cfg.crawl
            if robots[0]:
                self._summary.directives["items_withheld"] += len(parsed.items)
            else:
                self._extracted(job.url, parsed, out)
            title = page.title
            if not nofollow:  # a nofollow page has no links (the meta tag's rule)
                n_links = page.n_links
                links = tuple(limits.cut_links(page.links, page.n_links))
            follow = not nofollow
            if follow and not crawl.follow_noncanonical and canonical not in (None, job.url):
                follow = False
                self._summary.directives["noncanonical_unfollowed"] += 1
            if page.cleaned:
                self._summary.directives["links_params_changed"] += page.cleaned
            if follow and dup is not None and not isinstance(dup, Ask) and dup.kind is Kind.EXACT:
                follow = False  # peer.core.dedupe.held rule 1
                self._held.unfollowed(len(links))
            to_follow = links
            if dup is not None and self._cfg.dedupe.enabled and not nofollow and canonical not in (None, job.url):
                # -- the better copy (module docstring; peer.core.dedupe.held rule 7)
                assert canonical is not None
                out += self._discover(canonical, job.depth, now, Origin.LINK)
                to_follow = unsessioned(job.url, canonical, links)
            if follow and (not crawl.max_depth or job.depth < crawl.max_depth):
                if isinstance(dup, Ask):
                    held = to_follow  # peer.core.dedupe.held rule 2: discovered on the verdict
                else:
                    out += self._discover_links(to_follow, job.depth + 1, now)
                if page.via:
                    followed = set(links)
                    self._summary.directives.update(
                        f"links_{source}" for link, source in page.via if link in followed)
        if parsed is not None and parsed.requisites and 200 <= status < 300:
            # Whatever the page said of its links: requisites are part of its capture, not links to follow.
            out += self._requisites.found(parsed.requisites, 1, job.depth, now)
        self._jobs.take_hops(job.url)
        # After its links' Queued: done(page) on disk implies its links are
        # (peer/state/journal.py, crash ordering rule 1).
        at = len(out)
        self._rows.row(job, res, out, final_url=final_url, title=title, n_links=n_links,
                       error=error, links=links, canonical=canonical, robots=robots)
        if dup is not None and parsed is not None:
            self._held.row(out, at, parsed, dup, held, job.depth, now)
        return Outcome.FETCHED

    def _says(self, url: str, res: FetchResult, parsed: Parsed | None) -> tuple[str | None, tuple[bool, bool]]:
        """The page's canonical URL and (noindex, nofollow), head and HTML together; counted."""
        page = parsed.page if parsed is not None else None
        canonical = normalize_link(url, res.canonical) if res.canonical is not None else None
        if canonical is None and page is not None:
            canonical = page.canonical
        header = x_robots_tag(res.x_robots, self._page_rules.agent) if res.x_robots else (False, False)
        noindex = header[0] or (page is not None and page.noindex)
        nofollow = header[1] or (page is not None and page.nofollow)
        counts = self._summary.directives
        if canonical is not None:
            counts["canonical"] += 1
            if canonical != url:
                counts["noncanonical"] += 1
        if noindex:
            counts["noindex"] += 1
        if nofollow:
            counts["nofollow"] += 1
        if header[0] or header[1]:
            counts["x_robots_tag"] += 1
        return canonical, (noindex, nofollow)

    def _give_up(self, host: str, res: FetchResult, out: list[Effect]) -> None:
        """Outages rule 5: the host was down, or asked for too long a wait, for ``[retry] down_give_up``;
        its queued URLs get rows with the error of its last answer, and no more of them are queued."""
        self._limits.give_up(host)
        jobs = self._frontier.remove_host(host)
        error = res.error or "retry_after"
        why = (f"Retry-After {res.retry_after or 0.0:.0f}s, over politeness.max_retry_after "
               f"({self._limits.max_retry_after:g}s)" if res.status is not None
               else cause_words(res, self._cfg.crawl.timeout))
        out.append(Warn(
            f"giving up {host}: down or asking to wait for retry.down_give_up "
            f"({self._retries.policy.down_give_up:g}s), last {why}; its "
            f"{len(jobs)} queued URLs are recorded as '{error}' and no more of its URLs are queued"))
        for job in jobs:
            self._retries.forget(job.url)
            self._jobs.take_hops(job.url)
            self._rows.row(job, None, out, error=error)

    def _extracted(self, url: str, parsed: Parsed, out: list[Effect]) -> None:
        if parsed.items:
            out.append(Items(url, tuple(parsed.items)))
        self._summary.items += len(parsed.items)
        self._summary.items_by_table.update(table for table, _ in parsed.items)
        for err in parsed.errors:
            # A bug in the user's function must not stop the crawl; the first
            # few are logged, all are counted in the summary.
            self._summary.extract_errors += 1
            if self._summary.extract_errors <= EXTRACT_WARNINGS:
                out.append(Warn(f"extraction failed on {url}: {err}"))

    def on_robots(self, job: Job, res: FetchResult, now: float) -> list[Effect]:
        """The host's robots.txt answer (or failure) for the job that asked for it."""
        out: list[Effect] = []
        host = job.host
        if res.status is not None:
            # Fetched: an answer came. A refused or failed request fetched nothing.
            self._summary.robots_fetches += 1
        if res.address is not None:
            self._frontier.set_host_ip(host, res.address, now)
        self._keep_cookies(res)
        status, error = res.status, res.error
        down: tuple[str, str] | None = None  # the host's proxy, down since the run began
        if status in (429, 503) and res.retry_after is not None:
            # The server said when: ask again then, not after robots_retry
            # (RFC 9110 §10.2.3), cut like any Retry-After.
            self._robots.failed(host, now, ErrorKind.ROBOTS,
                                retry_after=min(res.retry_after, self._limits.max_retry_after))
        elif status is not None and (not 200 <= status < 300 or error is None
                                     or (error == "too_large" and res.truncated)):
            # An answer: its status decides (rules 2-5 of peer/core/crawl/robots.py); a
            # 2xx cut at the limit is the prefix RFC 9309 §2.5 asks us to parse.
            self._robots.loaded(host, status, res.body, now, truncated=res.truncated)
            if 200 <= status < 300:
                out += self._robots_sitemaps(host, res.url, now)  # peer/core/sitemaps/jobs.py rule 1
        else:
            cause = ErrorKind(error) if error else ErrorKind.UNKNOWN
            # A proxy that has not answered in this run is not waited for (proxyreach rule 2).
            down = self._proxies.unreached(host, error) if self._proxies is not None else None
            self._robots.failed(host, now, cause, final=cause in ROBOTS_FINAL or down is not None)
            if down is not None:
                said = self._proxies.warning(*down, res.detail) if self._proxies is not None else None
                if said is not None:
                    out.append(Warn(said))
        if self._proxies is not None:
            self._proxies.saw(host, error)
        failures = self._robots.failures(host)
        outcome = (Outcome.UNREACHED if error in UNREACHED_KINDS and status is None
                   else Outcome.FETCHED if status is not None else Outcome.FAILED)
        if not failures:
            self._limits.release(host, Hold.ROBOTS)
            delay = self._robots.crawl_delay(host)
            if delay:
                self._frontier.set_min_delay(host, delay, now)
        else:
            why = cause_words(res, self._cfg.crawl.timeout)
            final = self._robots.failure(host)
            queued = self._frontier.host_queued(host) + 1
            tries = self._robots.max_failures
            if final is not None:
                # No retry left, or none can help: the host's URLs are
                # recorded with the cause now rather than held (rule 7).
                self._limits.release(host, Hold.ROBOTS)
                # A cause no retry mends (ROBOTS_FINAL) was not tried again.
                after = (f" after {failures} tries" if failures > 1 and final not in ROBOTS_FINAL
                         and down is None else "")
                if down is None:  # a proxy down: its one warning says it for every host behind it
                    out.append(Warn(f"robots.txt {res.url} unreachable{after} ({why}); its {queued} queued "
                                    f"URL{'s are' if queued != 1 else ' is'} recorded as '{final}'"))
                self._rows.row(job, None, out, error=final)
                for other in self._frontier.remove_host(host):
                    self._retries.forget(other.url)
                    self._jobs.take_hops(other.url)
                    self._rows.row(other, None, out, error=final)
                self._jobs.finish(job, now, outcome)
                return out
            retry_at = self._robots.retry_at(host)
            self._limits.hold(host, Hold.ROBOTS, retry_at)
            self._robots.note(host, f"robots.txt of {host} unreachable ({why})")
            wait = duration(retry_at - now) + (" (its Retry-After)" if res.retry_after is not None else "")
            if failures == 1:
                # Said at once and whole: the URL, the cause, what happens
                # next and the keys that govern it (RFC 9309 §2.3.1.4).
                later = self._robots.cause(host) or ErrorKind.ROBOTS
                waits = "s wait" if queued != 1 else " waits"
                out.append(Warn(f"robots.txt {res.url} unreachable: {why}; tried again in {wait} "
                                f"(2 of {tries}), then its URLs are recorded as '{later}' "
                                f"(crawl.robots_retry, crawl.robots_tries); {queued} queued URL{waits}"))
            else:
                out.append(Warn(f"robots.txt of {host} still unreachable ({why}), try {failures} of "
                                f"{tries}; next in {wait}"))
        # The robots.txt request took this job's slot; the job goes back to
        # the front of its queue and waits for the host's delay like any other.
        self._jobs.requeue(job, now, now, out)
        self._jobs.finish(job, now, outcome)
        return out

    def robots_cancelled(self, job: Job) -> None:
        """The robots.txt request was cancelled: the host's next job asks again."""
        self._robots.cancelled(job.host)

    def internal(self, job: Job, exc_type: str, now: float) -> tuple[list[Effect], bool]:
        """Rule 8: an exception escaped the job; its row and done(), once. True: first of its type."""
        self._summary.internal[exc_type] += 1
        first = exc_type not in self._internal_seen
        self._internal_seen.add(exc_type)
        out: list[Effect] = []
        marks = self._jobs.marks(job.url)
        if marks & ROBOTS:
            self._robots.cancelled(job.host)  # the next job of the host asks again
        if not marks & (ROW | REQUEUED):
            self._retries.forget(job.url)
            self._jobs.take_hops(job.url)
            self._rows.row(job, None, out, error="internal")
        if not marks & DONE:
            self._jobs.finish(job, now, Outcome.FAILED)
        return out, first

