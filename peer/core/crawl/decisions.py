"""What the crawl core decides: the vocabulary between ``peer.core.crawl.core`` and its driver.

Frozen values only, no behaviour (h11's ``_events.py``). Three kinds:

- **effects** the driver carries out, in the order given: ``Forward`` a URL
  to its owner, journal records (``Queued``, ``Seen``, ``Done``), a result
  ``Row``, extraction ``Items``, ``Requeued`` (done by the core's frontier
  already; for the record), ``Warn`` a line for the operator, and
  ``Refused``: a URL the core did not take, and its ``Reason`` (counted by
  the core already; a driver shows it or ignores it);
- **admissions**, what to do with a job just before its request:
  ``Fetch``, ``FetchRobots``, ``FetchSitemap``, ``Requeue``, ``Drop``,
  ``PassOn``; each
  carries the effects that go with it;
- **the scheduler's answers**: ``Start(job)``, ``Sleep(until)``,
  ``Finished(reason)``.

``Origin`` says where a URL came from (peer/core/crawl/core.py's table has what each
origin means for the Bloom filter); ``StopReason`` why a crawl ended;
``Discover`` is the one call the parts of the core are handed to discover a
URL.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple, Protocol

from peer.core.frontier.frontier import Job
from peer.core.dedupe.bands import NearQuery
from peer.core.sitemaps.document import Authority

__all__ = [
    "Origin", "StopReason", "RingView", "Discover", "DiscoverLinks", "Reason",
    "Forward", "Queued", "Checking", "Seen", "Done", "Row", "Items", "Requeued", "Warn", "NearAsk", "Refused", "Hinted", "Reverdict",
    "Effect",
    "Fetch", "FetchRobots", "FetchSitemap", "Requeue", "Drop", "PassOn", "Admission",
    "Start", "Sleep", "Finished",
]


class Origin(StrEnum):
    """Where a URL came from; decides its path through ``discover`` (module table)."""

    SEED = "seed"
    LINK = "link"
    REDIRECT = "redirect"
    SITEMAP = "sitemap"
    RELAY = "relay"
    ADOPTED = "adopted"
    HANDED_BACK = "handed-back"
    HANDED_SEEN = "handed-seen"
    RECOVERED = "recovered"
    REQUISITE = "requisite"  # a page's stylesheet, image, script, font or frame ([warc] requisites)
    RETRY = "retry"  # a failed page queued again (--retry-failed: peer/core/crawl/failedpages.py)


class StopReason(StrEnum):
    """Why a crawl ended (``Summary.stop_reason``, the summary's first line)."""

    FRONTIER_EMPTY = "frontier empty"
    CLUSTER_DONE = "cluster done"
    MAX_PAGES = "max_pages reached"
    LEFT = "left the ring"
    STOPPED = "stopped"


class Reason(StrEnum):
    """Why the core refused a URL (``Refused``); the value is the key that says so.

    Counted once, by ``peer.core.crawl.core.CrawlCore``: ``HOST`` and
    ``DEPTH`` as ``Summary.out_of_scope``, ``EXTENSION`` and ``RULES`` in
    ``Summary.excluded``, the caps by ``Limits`` (``cap.<key>``); ``SEEN``
    by the seen set's own figures, ``REDIRECTS`` by its page's row
    (``too_many_redirects``); ``BAD_URL`` is not counted.
    """

    BAD_URL = "bad_url"                  # normalisation refused it, or it names no host
    HOST = "host"                        # crawl.allow_hosts / deny_hosts
    DEPTH = "max_depth"                  # deeper than crawl.max_depth
    EXTENSION = "skip_extensions"        # peer.core.urls.rules.Cause.EXTENSION
    RULES = "rules"                      # crawl.rules, or its [[site]] block's
    URL_LENGTH = "max_url_length"        # peer.core.crawl.limits rule 1
    PATH_REPEAT = "max_path_repeat"      # peer.core.crawl.limits rule 1
    URLS_PER_HOST = "max_urls_per_host"  # peer.core.crawl.limits rule 2
    GIVEN_UP = "given_up"                # its host was given up (peer.core.crawl.limits rule 4)
    BUDGET_HOST = "budget_host"          # its host's budget was spent (peer.core.crawl.budgets rule 3)
    BUDGET_SITE = "budget_site"          # its [[site]] block's budget was spent
    BUDGET_DOMAIN = "budget_domain"      # its registered domain's budget was spent
    SEEN = "seen"                        # in the seen set, or handed over as fetched
    REDIRECTS = "max_redirects"          # a redirect's target past crawl.max_redirects


# -- effects: what the driver does for the core --------------------------------


@dataclass(frozen=True, slots=True)
class Forward:
    """Send ``url`` to its owner (and journal it as forwarded); ``host``: its host key, known here."""

    url: str
    depth: int
    owner: str
    relay: bool
    host: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class Queued:
    """Journal: ``url`` entered this peer's frontier."""

    url: str
    depth: int


@dataclass(frozen=True, slots=True)
class Checking:
    """Journal: ``url`` waits for the exact seen set's verdict (peer/core/seen/sieve.py).

    Journaled as forwarded to ourselves: recovery sends it through
    ``discover`` again, so it is judged again rather than queued blindly.
    """

    url: str
    depth: int


@dataclass(frozen=True, slots=True)
class Seen:
    """Journal: ``url`` entered the Bloom filter without being queued (a hand-off)."""

    url: str


@dataclass(frozen=True, slots=True)
class Done:
    """Journal: ``url`` left the queue with no row of ours (passed on, fetched by another)."""

    url: str


@dataclass(frozen=True, slots=True)
class Row:
    """A result row for ``url`` (the driver adds the wall-clock time and the peer)."""

    url: str
    final_url: str
    host: str
    status: int | None
    content_type: str | None
    bytes: int
    title: str | None
    n_links: int
    depth: int
    elapsed_ms: float
    error: str | None
    # builtins.bytes: the field above is named bytes (PageRow's column).
    body: builtins.bytes | None = field(default=None, repr=False)
    links: tuple[str, ...] = field(default=(), repr=False)
    canonical: str | None = None  # the pages columns of peer.results.schema
    noindex: bool | None = None
    nofollow: bool | None = None
    # What a sitemap said of the URL (peer.core.sitemaps.hints.UrlHints), else None.
    sitemap_lastmod: float | None = None
    sitemap_priority: float | None = None
    sitemap_changefreq: str | None = None
    # Duplicate content (peer.core.dedupe.held rule 5), else None.
    payload_digest: str | None = None
    simhash: int | None = None
    duplicate_of: str | None = None
    duplicate_kind: str | None = None


@dataclass(frozen=True, slots=True)
class Items:
    """The extraction rules' rows of one page: ``(table, row)`` pairs."""

    url: str
    items: tuple[tuple[str, dict[str, Any]], ...]


@dataclass(frozen=True, slots=True)
class Requeued:
    """``url`` goes back to its host's queue, not before ``at`` (a retry, a robots.txt wait)."""

    url: str
    at: float


@dataclass(frozen=True, slots=True)
class Warn:
    """A line for the operator's log."""

    text: str


@dataclass(frozen=True, slots=True)
class Hinted:
    """A sitemap listed ``url``, already seen here: its hints for the URL's row if it is written
    already (the store fills its ``sitemap_*`` columns); a row to come takes them itself
    (``peer.core.sitemaps.jobs`` rule 4)."""

    url: str
    lastmod: float | None     # epoch seconds, UTC
    priority: float | None
    changefreq: str | None


@dataclass(frozen=True, slots=True)
class NearAsk:
    """Ask band owner ``owner`` about a page (``peer.core.dedupe.held``); ``PeerCore`` sends or answers it."""

    owner: str
    query: NearQuery


@dataclass(frozen=True, slots=True)
class Reverdict:
    """``url``'s row is corrected: it is a ``kind`` copy of ``duplicate_of``, a better copy
    that came after it (``peer.core.dedupe.held`` rule 6). ``PeerCore`` sends it to the
    owner of ``url``'s host when that is another peer; the engine updates the row."""

    url: str
    duplicate_of: str
    kind: str
    distance: int = 0


class Refused(NamedTuple):
    """The core took no ``url``, for ``reason`` (counted already; nothing to do).

    A NamedTuple, not a frozen dataclass: one is made for most links a page
    has (most are seen or another site's). Measured on the 2-core box, a
    frozen dataclass is made in ~300 ns (its ``__init__`` goes through
    ``object.__setattr__``), this in ~125 ns by ``tuple.__new__``
    (``peer.core.crawl.discovery`` makes them so) or ~200 by its own ``__new__``.
    """

    url: str
    reason: Reason


Effect = Forward | Queued | Checking | Seen | Done | Row | Items | Requeued | Warn | NearAsk | Refused | Hinted | Reverdict


# -- admissions: what to do with a job the frontier handed out -----------------


@dataclass(frozen=True, slots=True)
class Fetch:
    job: Job
    effects: tuple[Effect, ...] = ()


@dataclass(frozen=True, slots=True)
class FetchRobots:
    """Fetch the host's robots.txt at ``url`` first; the job waits in its queue."""

    job: Job
    url: str
    effects: tuple[Effect, ...] = ()


@dataclass(frozen=True, slots=True)
class FetchSitemap:
    """Fetch the job, a sitemap, read at most ``max_bytes``; parse it with ``granted`` (peer.core.sitemaps.document)."""

    job: Job
    max_bytes: int
    granted: tuple[Authority, ...] = ()
    effects: tuple[Effect, ...] = ()


@dataclass(frozen=True, slots=True)
class Requeue:
    job: Job
    at: float
    effects: tuple[Effect, ...] = ()


@dataclass(frozen=True, slots=True)
class Drop:
    job: Job
    effects: tuple[Effect, ...] = ()


@dataclass(frozen=True, slots=True)
class PassOn:
    job: Job
    owner: str
    effects: tuple[Effect, ...] = ()


Admission = Fetch | FetchRobots | FetchSitemap | Requeue | Drop | PassOn


# -- the scheduler's answers ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Start:
    job: Job


@dataclass(frozen=True, slots=True)
class Sleep:
    """Nothing to start before ``until`` (inf: until something happens)."""

    until: float
    effects: tuple[Effect, ...] = ()


@dataclass(frozen=True, slots=True)
class Finished:
    reason: StopReason


class Discover(Protocol):
    """``CrawlCore.discover``, as the core's parts are handed it."""

    def __call__(self, url: str, depth: int, now: float, origin: Origin, hops: int = 0, /, *,
                 boost: int = 0) -> list[Effect]: ...


class DiscoverLinks(Protocol):
    """``CrawlCore.discover_links``: a page's links, as ``Discover`` with ``Origin.LINK`` takes them."""

    def __call__(self, links: Sequence[str], depth: int, now: float, /) -> list[Effect]: ...


class RingView(Protocol):
    """What the scheduler asks of the ring (``peer.core.door.peer.PeerCore``)."""

    @property
    def page_cap(self) -> int: ...
    def others_pages(self) -> int: ...
    def budget_gone(self) -> bool: ...
    def idle(self) -> bool: ...
    def done(self) -> bool: ...
    def left(self) -> bool: ...
    def may_start(self, now: float) -> bool: ...
    def may_fetch(self, host: str, now: float) -> bool: ...
