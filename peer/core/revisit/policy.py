"""Revisits: when a fetched page comes due again, and what to ask its server then (pure).

A page's revisit interval adapts to what each visit saw, as Nutch's
``AdaptiveFetchSchedule`` does (Apache Nutch, ``db.fetch.schedule.adaptive.*``;
StormCrawler's ``AdaptiveScheduler`` follows it): a visit that found the
page changed multiplies the interval by ``dec_factor`` (< 1), one that found
it unchanged by ``inc_factor`` (> 1), always clamped to ``[min_interval,
max_interval]``. A page that changes every T seconds settles into a band
around T: visited faster than it changes, the interval grows; slower, it
shrinks.

Why this rule and not Cho & Garcia-Molina's Poisson estimator ("Estimating
frequency of change", ACM TOIT 3(3), 2003): their estimator
``r = -log((n - X + 0.5) / (n + 0.5)) / I`` reads the change rate from ``X``
changes seen in ``n`` visits at a *fixed* interval ``I``; an adaptive
schedule makes the intervals irregular, and their estimator for irregular
intervals is a maximum-likelihood fit over the whole visit history, which a
peer holding millions of URLs cannot keep per URL. The multiplicative rule
needs the last interval and the last digest: O(1) state, one multiplication
a visit, and it reacts within one visit to a page that starts or stops
changing. What it gives up: it never converges (it oscillates within one
factor of T), and it knows nothing of the page's freshness value. Cho &
Garcia-Molina's other finding ("Effective page refresh policies for Web
crawlers", ACM TODS 28(4), 2003) is that visiting the fastest-changing pages
*most* does not maximise freshness; ``min_interval`` is the cap that keeps
such a page from eating its host's budget, and the host's share between new
URLs and revisits (:mod:`peer.core.revisit.hostmix`) the cap on all of them.
``visits`` and ``changes`` are counted per URL, so the estimator can be
fitted offline from the ``fetches`` table (:mod:`peer.results.fetches`).

Rules:

1. The first interval: a sitemap's ``<changefreq>`` seeds it (``hourly`` is
   one hour, ``always`` is ``min_interval``, ``never`` is ``max_interval``;
   sitemaps.org calls it a hint, so our own observations replace it from the
   second visit on); without one, ``initial_interval``. Clamped.
2. Each visit's answer is classified (:func:`classify`): a 304 is
   ``NOT_MODIFIED`` (unchanged, and cheap: no body); a 2xx, 3xx or 4xx other
   than 404/410 compares the payload digest the caller computed with the
   last one (``UNCHANGED`` / ``CHANGED``; ``FIRST`` when there was no last
   one); 404/410 are ``GONE`` when an earlier visit was answered (the page
   was there and went), ``MISSING`` when none was (it never was there: a
   broken link, not a removal); no answer, a 429 or a 5xx is ``FAILED``.
3. The interval after a visit: ``CHANGED`` x ``dec_factor``; ``UNCHANGED``
   and ``NOT_MODIFIED`` x ``inc_factor``; ``FIRST`` keeps it; ``GONE`` jumps
   to ``max_interval`` (a page removed rarely returns, but may); ``MISSING``
   is not revisited at all (the caller drops the record): a URL that never
   answered with a page is a broken link, and polling each broken link of
   a site every ``max_interval`` would spend its host's budget on nothing;
   ``FAILED``
   keeps it: a failure says nothing of the page's changes, and the host's
   own backoff (peer/core/frontier/pacing.py rule 4) already slows a host that
   answers 429/503, so a second backoff here would punish the page twice.
4. Jitter: the next due time is ``now + interval x (1 + u)``, ``u`` uniform
   in ``[-jitter, +jitter]`` from the caller's seeded ``random.Random``, so
   the pages of a host crawled in one burst do not come due in one burst
   again, visit after visit. The stored interval carries no jitter.
5. A sitemap read again whose ``<lastmod>`` for a URL is newer than our
   last visit makes it due now (:func:`on_sitemap`), but never sooner than
   ``min_interval`` after that visit, and a ``lastmod`` in the future is
   ignored: a sitemap that says "everything changed now" on every read
   cannot make a host's pages be fetched back to back.
6. Conditional GETs (:func:`conditional_headers`, RFC 9110 §13.1): a
   revisit sends ``If-None-Match`` with the stored ETag and
   ``If-Modified-Since`` with the stored Last-Modified, each when known. A
   server evaluates ``If-None-Match`` first and ignores
   ``If-Modified-Since`` when both came (§13.1.3, §13.2.2), so the ETag wins;
   the date still serves a server or cache that keeps no ETags, as browsers
   send both. Validators come from remote headers: one that is not an
   entity-tag (§8.8.3) or an HTTP-date (§5.6.7), or is longer than
   ``max_validator_length``, is not stored (counted by the caller through
   :attr:`VisitResult.dropped`), so a header we send back can never carry a
   CR/LF or a megabyte.
"""

from __future__ import annotations

import enum
import math
import random
import re
from dataclasses import dataclass, replace
from email.utils import parsedate_to_datetime

from peer.core.config.revisit import RevisitConfig
from peer.core.sitemaps.document import ChangeFreq
from peer.core.sitemaps.hints import UrlHints

__all__ = [
    "CHANGEFREQ_SECONDS", "Change", "RevisitConfig", "RevisitState", "VisitResult", "after_visit",
    "classify", "conditional_headers", "first_visit", "on_sitemap", "seed_interval", "valid_etag",
    "valid_http_date",
]

_HOUR = 3600.0
_DAY = 86400.0


#: What each ``<changefreq>`` means in seconds (rule 1). ALWAYS and NEVER are
#: the clamps' ends, whatever they are set to: None here.
CHANGEFREQ_SECONDS: dict[ChangeFreq, float | None] = {
    ChangeFreq.ALWAYS: None,
    ChangeFreq.HOURLY: _HOUR,
    ChangeFreq.DAILY: _DAY,
    ChangeFreq.WEEKLY: 7 * _DAY,
    ChangeFreq.MONTHLY: 30 * _DAY,
    ChangeFreq.YEARLY: 365 * _DAY,
    ChangeFreq.NEVER: None,
}


class Change(enum.Enum):
    """What one visit found (rule 2)."""

    FIRST = "first"                # an answer with a digest, none to compare with
    CHANGED = "changed"            # another digest than last time
    UNCHANGED = "unchanged"        # the same digest
    NOT_MODIFIED = "not_modified"  # a 304 to our conditional GET
    GONE = "gone"                  # 404 or 410 after an answered visit: the page went
    MISSING = "missing"            # 404 or 410 with no answered visit before: never there (not revisited)
    FAILED = "failed"              # no answer, 429, 5xx, or no digest to compare


@dataclass(frozen=True, slots=True)
class RevisitState:
    """One URL's revisit record: when it is due, and what its last visit saw."""

    url: str
    host: str                          # host[:port] (peer.core.urls.normalize.host_key): the queue's and the ring's key
    due: float                         # epoch seconds: the next visit
    interval: float                    # seconds, clamped, without jitter
    last_visit: float | None = None    # epoch seconds of the last answered visit
    digest: str | None = None          # the last payload's digest, opaque (e.g. "sha1:...")
    etag: str | None = None            # validated (rule 6)
    last_modified: str | None = None   # validated, kept verbatim to send back
    visits: int = 0                    # visits that were answered
    changes: int = 0                   # visits that found it CHANGED
    #: The archive's record holding the page's payload, opaque here: what the
    #: WARC revisit record of the next visit refers to (peer.core.warc.record
    #: rule 6, ``Refers.pack``); None without WARC or with nothing to refer to.
    capture: str | None = None


@dataclass(frozen=True, slots=True)
class VisitResult:
    """:func:`after_visit`'s answer: the new record, what the visit found, validators dropped."""

    state: RevisitState
    change: Change
    dropped: int = 0   # ETag/Last-Modified values refused (rule 6), for the caller's counter


# ---------------------------------------------------------------------------
# Validators (rule 6)

# entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE; etagc = %x21 / %x23-7E / obs-text (RFC 9110 §8.8.3).
_ETAG = re.compile(r'(?:W/)?"[\x21\x23-\x7e\x80-\xff]*"')


def valid_etag(value: str | None, max_length: int) -> str | None:
    """``value`` if it is one entity-tag within ``max_length`` bytes, else None."""
    if value is None or len(value) > max_length or _ETAG.fullmatch(value) is None:
        return None
    return value


def valid_http_date(value: str | None, max_length: int) -> str | None:
    """``value`` if it is an HTTP-date (RFC 9110 §5.6.7) within ``max_length``, else None.

    Kept verbatim: §13.1.3 asks a client to send back the server's own
    Last-Modified, not one it reformatted.
    """
    if value is None or len(value) > max_length or not value.isprintable() or not value.isascii():
        return None
    try:
        parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return value


def conditional_headers(state: RevisitState) -> tuple[tuple[str, str], ...]:
    """The validators to send on a revisit of ``state``'s URL (rule 6); empty when none."""
    headers: list[tuple[str, str]] = []
    if state.etag is not None:
        headers.append(("If-None-Match", state.etag))
    if state.last_modified is not None:
        headers.append(("If-Modified-Since", state.last_modified))
    return tuple(headers)


# ---------------------------------------------------------------------------
# Intervals


def seed_interval(hints: UrlHints | None, config: RevisitConfig) -> float:
    """The first interval of a URL (rule 1)."""
    freq = None if hints is None else hints.changefreq
    if freq is None:
        return config.clamp(config.initial_interval)
    if freq is ChangeFreq.ALWAYS:
        return config.min_interval
    if freq is ChangeFreq.NEVER:
        return config.max_interval
    seconds = CHANGEFREQ_SECONDS[freq]
    assert seconds is not None
    return config.clamp(seconds)


def _due(now: float, interval: float, config: RevisitConfig, rng: random.Random) -> float:
    if config.jitter == 0.0:
        return now + interval
    return now + interval * (1.0 + rng.uniform(-config.jitter, config.jitter))


def first_visit(url: str, host: str, now: float, hints: UrlHints | None, config: RevisitConfig) -> RevisitState:
    """A record for a URL fetched for the first time: due now, its interval seeded (rule 1)."""
    return RevisitState(url=url, host=host, due=now, interval=seed_interval(hints, config))


def classify(status: int | None, digest: str | None, previous: str | None, found: bool = True) -> Change:
    """What a visit found (rule 2): ``status`` None when no answer came; ``found``: an earlier
    visit of the URL was answered, so a 404/410 is ``GONE`` rather than ``MISSING``."""
    if status is None or status == 429 or status >= 500 or status < 100:
        return Change.FAILED
    if status == 304:
        return Change.NOT_MODIFIED
    if status in (404, 410):
        return Change.GONE if found else Change.MISSING
    if digest is None:
        return Change.FAILED
    if previous is None:
        return Change.FIRST
    return Change.UNCHANGED if digest == previous else Change.CHANGED


def after_visit(state: RevisitState, now: float, status: int | None, digest: str | None,
                etag: str | None, last_modified: str | None, config: RevisitConfig,
                rng: random.Random, capture: str | None = None) -> VisitResult:
    """The record after a visit at ``now`` answered ``status`` (rules 2-4, 6).

    ``capture`` is what the archive says the next visit's revisit record
    refers to (:attr:`RevisitState.capture`), kept as given.

    ``digest`` is the payload's digest (None for a 304 or no body); ``etag``
    and ``last_modified`` are the answer's headers as received (None when
    absent). A 304 keeps the stored digest and, per RFC 9110 §15.4.5, takes
    any validators it carries.
    """
    change = classify(status, digest, state.digest, state.last_visit is not None)
    if change is Change.FAILED:
        return VisitResult(replace(state, due=_due(now, state.interval, config, rng), capture=capture), change)
    if change is Change.CHANGED:
        interval = config.clamp(state.interval * config.dec_factor)
    elif change in (Change.UNCHANGED, Change.NOT_MODIFIED):
        interval = config.clamp(state.interval * config.inc_factor)
    elif change in (Change.GONE, Change.MISSING):
        interval = config.max_interval
    else:
        interval = config.clamp(state.interval)
    cap = config.max_validator_length
    new_etag, new_lm = valid_etag(etag, cap), valid_http_date(last_modified, cap)
    dropped = (etag is not None and new_etag is None) + (last_modified is not None and new_lm is None)
    if change is Change.NOT_MODIFIED:
        # A 304 need not repeat the validators; absent ones keep the stored ones.
        new_etag = new_etag if new_etag is not None else state.etag
        new_lm = new_lm if new_lm is not None else state.last_modified
        new_digest = state.digest
    elif change in (Change.GONE, Change.MISSING):
        new_etag = new_lm = new_digest = None
    else:
        new_digest = digest
    return VisitResult(
        RevisitState(url=state.url, host=state.host, due=_due(now, interval, config, rng),
                     interval=interval, last_visit=now, digest=new_digest, etag=new_etag,
                     last_modified=new_lm, visits=state.visits + 1,
                     changes=state.changes + (change is Change.CHANGED), capture=capture),
        change, dropped)


def on_sitemap(state: RevisitState, hints: UrlHints, now: float, config: RevisitConfig) -> RevisitState:
    """``state`` after a sitemap listed its URL again with ``hints`` (rule 5)."""
    lastmod = hints.lastmod
    if lastmod is None or state.last_visit is None or not lastmod > state.last_visit or lastmod > now:
        return state
    due = max(now, state.last_visit + config.min_interval)
    return replace(state, due=due) if due < state.due else state
