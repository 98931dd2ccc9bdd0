"""What a fetch's answer means: rows, discoveries, retries, robots.txt answers (pure).

Steps 4-6 of ``peer.core.crawl.core``'s path of a URL: ``fetched`` says whether
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
its links and row until it comes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from peer.core.crawl.decisions import Effect, Items, Origin, Warn
from peer.core.page.directives import x_robots_tag
from peer.errors import ErrorKind
from peer.core.page.extract import is_html
from peer.core.http.head import server_error
from peer.core.frontier.frontier import Job, Outcome
from peer.core.crawl.limits import Hold
from peer.core.urls.normalize import normalize_link

if TYPE_CHECKING:
    from peer.core.http.result import FetchResult

from peer.core.crawl.state import (
    _DONE, _REQUEUED, _ROBOTS, _ROW, EXTRACT_WARNINGS, MAX_RETRIES, RETRYABLE,
    ROBOTS_FINAL, UNREACHED_KINDS,
)
from peer.core.dedupe.verdicts import Ask, Kind
from peer.core.dedupe.held import DuplicateSide
from peer.core.page.parse import Parsed

__all__ = ["Outcomes", "RETRY_BASE", "cause_words"]

#: First retry waits this long (then x2 per attempt, with +-50% jitter).
RETRY_BASE = 1.0


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


class Outcomes(DuplicateSide):
    """The results' part of ``CrawlCore`` (module docstring)."""

    def fetched(self, job: Job, res: FetchResult, now: float) -> bool:
        """The answer came: note the host's address and cookies; whether the body is HTML to parse."""
        self.keep_cookies(res)
        if res.address is not None:
            self.frontier.set_host_ip(job.host, res.address, now)
        # No body, nothing to parse: a body announced over max_body is not
        # read at all (its extraction rules would write a row of NULLs).
        return (res.status is not None and 200 <= res.status < 300 and bool(res.body)
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
        retryable = res.error in RETRYABLE or (status is not None and server_error(status)) or status == 429
        if status is not None and not 200 <= status <= 599:
            self.summary.invalid_status += 1
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
        canonical, robots = self._says(job.url, res, parsed)
        nofollow = robots[1]
        dup = self.dup_check(job, parsed, now) if parsed is not None and 200 <= status < 300 else None
        held: tuple[str, ...] = ()
        if 300 <= status < 400 and res.location:
            target = normalize_link(job.url, res.location, self.params)
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
            crawl = self.cfg.crawl
            if robots[0]:
                self.summary.directives["items_withheld"] += len(parsed.items)
            else:
                self._extracted(job.url, parsed, out)
            title = page.title
            if not nofollow:  # a nofollow page has no links (the meta tag's rule)
                n_links = page.n_links
                links = tuple(limits.cut_links(page.links, page.n_links))
            follow = not nofollow
            if follow and not crawl.follow_noncanonical and canonical not in (None, job.url):
                follow = False
                self.summary.directives["noncanonical_unfollowed"] += 1
            if page.cleaned:
                self.summary.directives["links_params_changed"] += page.cleaned
            if follow and dup is not None and not isinstance(dup, Ask) and dup.kind is Kind.EXACT:
                follow = False  # peer.core.dedupe.held rule 1
                self.dup_unfollowed(len(links))
            if follow and (not crawl.max_depth or job.depth < crawl.max_depth):
                if isinstance(dup, Ask):
                    held = links  # peer.core.dedupe.held rule 2: discovered on the verdict
                for link in () if held else links:
                    out += self.discover(link, job.depth + 1, now, Origin.LINK)
                if page.via:
                    followed = set(links)
                    self.summary.directives.update(
                        f"links_{source}" for link, source in page.via if link in followed)
        self._hops.pop(job.url, None)
        # After its links' Queued: done(page) on disk implies its links are
        # (peer/state/journal.py, crash ordering rule 1).
        at = len(out)
        self._row(job, res, out, final_url=final_url, title=title, n_links=n_links,
                  error=error, links=links, canonical=canonical, robots=robots)
        if dup is not None and parsed is not None:
            self.dup_row(out, at, parsed, dup, held, job.depth)
        return Outcome.FETCHED

    def _says(self, url: str, res: FetchResult, parsed: Parsed | None) -> tuple[str | None, tuple[bool, bool]]:
        """The page's canonical URL and (noindex, nofollow), head and HTML together; counted."""
        page = parsed.page if parsed is not None else None
        canonical = normalize_link(url, res.canonical) if res.canonical is not None else None
        if canonical is None and page is not None:
            canonical = page.canonical
        header = x_robots_tag(res.x_robots, self.page_rules.agent) if res.x_robots else (False, False)
        noindex = header[0] or (page is not None and page.noindex)
        nofollow = header[1] or (page is not None and page.nofollow)
        counts = self.summary.directives
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
        if res.status is not None:
            # Fetched: an answer came. A refused or failed request fetched nothing.
            self.summary.robots_fetches += 1
        if res.address is not None:
            self.frontier.set_host_ip(host, res.address, now)
        self.keep_cookies(res)
        status, error = res.status, res.error
        if status in (429, 503) and res.retry_after is not None:
            # The server said when: ask again then, not after robots_retry
            # (RFC 9110 §10.2.3), cut like any Retry-After.
            self.robots.failed(host, now, ErrorKind.ROBOTS,
                               retry_after=min(res.retry_after, self.limits.max_retry_after))
        elif status is not None and (not 200 <= status < 300 or error is None
                                     or (error == "too_large" and res.truncated)):
            # An answer: its status decides (rules 2-5 of peer/core/crawl/robots.py); a
            # 2xx cut at the limit is the prefix RFC 9309 §2.5 asks us to parse.
            self.robots.loaded(host, status, res.body, now, truncated=res.truncated)
            if 200 <= status < 300:
                out += self.robots_sitemaps(host, res.url, now)  # peer/core/sitemaps/jobs.py rule 1
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
            why = cause_words(res, self.cfg.crawl.timeout)
            final = self.robots.failure(host)
            queued = self.frontier.host_queued(host) + 1
            tries = self.robots.max_failures
            if final is not None:
                # No retry left, or none can help: the host's URLs are
                # recorded with the cause now rather than held (rule 7).
                self.limits.release(host, Hold.ROBOTS)
                # A cause no retry mends (ROBOTS_FINAL) was not tried again.
                after = f" after {failures} tries" if failures > 1 and final not in ROBOTS_FINAL else ""
                out.append(Warn(f"robots.txt {res.url} unreachable{after} ({why}); its {queued} queued "
                                f"URL{'s are' if queued != 1 else ' is'} recorded as '{final}'"))
                self._row(job, None, out, error=final)
                for other in self.frontier.remove_host(host):
                    self._attempts.pop(other.url, None)
                    self._hops.pop(other.url, None)
                    self._row(other, None, out, error=final)
                self._finish(job, now, outcome)
                return out
            retry_at = self.robots.retry_at(host)
            self.limits.hold(host, Hold.ROBOTS, retry_at)
            self.robots.note(host, f"robots.txt of {host} unreachable ({why})")
            wait = f"{retry_at - now:.0f}s" + (" (its Retry-After)" if res.retry_after is not None else "")
            if failures == 1:
                # Said at once and whole: the URL, the cause, what happens
                # next and the keys that govern it (RFC 9309 §2.3.1.4).
                later = self.robots.cause(host) or ErrorKind.ROBOTS
                waits = "s wait" if queued != 1 else " waits"
                out.append(Warn(f"robots.txt {res.url} unreachable: {why}; tried again in {wait} "
                                f"(2 of {tries}), then its URLs are recorded as '{later}' "
                                f"(crawl.robots_retry, crawl.robots_tries); {queued} queued URL{waits}"))
            else:
                out.append(Warn(f"robots.txt of {host} still unreachable ({why}), try {failures} of "
                                f"{tries}; next in {wait}"))
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

