"""Caps on what a hostile web can make one peer queue, wait for or hold.

A pure core (no I/O, ``now`` passed in): the engine asks :class:`Limits`
before it queues a URL and when a server answers with a Retry-After, and
reports the hosts it holds; every hit is counted here, and the engine shows
the counts in the summary, the progress line and ``python -m ring status``.

Rules (config keys in brackets; 0 turns a cap off):

1. **URL** [``crawl.max_url_length``, ``crawl.max_path_repeat``]: a
   normalised URL longer than the cap, or whose path repeats one segment
   more than ``max_path_repeat`` times (:func:`peer.core.urls.normalize.path_repeats`:
   ``/a/a/a/a/``, ``/x/y/x/y/x/y/x/y/``), is dropped. These are the traps
   that relative links grow for ever, bounded otherwise only by
   ``max_depth``; the check is on the URL alone, so it runs before a URL is
   forwarded in a ring.
2. **Host** [``crawl.max_urls_per_host``]: a host's URLs queued on this
   peer (queued plus fetched: the count never goes down) stop at the cap;
   the next ones are dropped. Measured before the caps: four link-farm
   hosts (pages of a million links) queued 2.9 M URLs in 50 s, about 1 GB
   of RSS, and slowed a normal site beside them by about 40 %. With the cap
   the frontier holds at most ``hosts x cap`` URLs. An infinite calendar
   (``?month=`` one further, for ever) repeats no segment; this cap and
   ``max_depth`` are what end it.
3. **Page** [``crawl.max_links_per_page``]: the links of one page after the
   first ``max_links_per_page`` (in document order) are not followed nor
   stored; ``n_links`` in the results keeps the page's real count.
4. **Retry-After** [``politeness.max_retry_after``]: a longer Retry-After
   (``3600``, or an HTTP-date in the year 9999) is cut to the cap and
   counted; the host is then held for the cap each time, its URLs kept,
   until ``[retry] down_give_up`` (``peer.core.crawl.outages`` rules 4, 5).
   A host *given up* (:meth:`Limits.give_up`: down or asking over the cap
   for that long) has its queued URLs recorded by the engine and new URLs
   of it dropped for the rest of the run.
5. **Holds**: a host held (its robots.txt unreachable until a retry, a
   Retry-After, or down: ``peer.core.crawl.outages``) is counted while
   held, so a crawl that waits says what it waits for. A hold ends when
   released or when its time has passed.

What the crawl may *spend* on a host, a ``[[site]]`` block or a registered
domain (pages, bytes) is ``peer.core.crawl.budgets``'s; its hits are
counted here, as ``Cap.BUDGET_*``, beside the caps'.

Memory: one int per host that ever had a URL queued here (the frontier
keeps more than that per queued host), and per held or given-up host a few
dozen bytes.

Drops count discoveries, not distinct URLs: a URL dropped by a cap is not
put in the Bloom filter (a link farm would otherwise fill it), so a link
to it found on ten pages counts ten times.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from peer.core.urls.normalize import path_repeats

if TYPE_CHECKING:
    from peer.core.config.cluster import CrawlConfig, PolitenessConfig

__all__ = ["Cap", "Hold", "Limits"]


class Cap(enum.StrEnum):
    """Which cap a hit was (the value is its config key, or what it counts)."""

    URL_LENGTH = "max_url_length"  # URLs dropped
    PATH_REPEAT = "max_path_repeat"  # URLs dropped
    URLS_PER_HOST = "max_urls_per_host"  # URLs dropped
    LINKS_PER_PAGE = "max_links_per_page"  # links not followed
    PAGES_CUT = "pages_cut"  # pages whose links were cut
    RETRY_AFTER = "max_retry_after"  # Retry-After answers cut
    HOSTS_GIVEN_UP = "hosts_given_up"  # hosts given up (rule 4)
    GIVEN_UP = "given_up"  # URLs of given-up hosts dropped
    # Budgets (peer.core.crawl.budgets): URLs dropped or refused once a budget was spent.
    BUDGET_HOST = "budget_host"
    BUDGET_SITE = "budget_site"
    BUDGET_DOMAIN = "budget_domain"
    BUDGETS_SPENT = "budgets_spent"  # hosts, [[site]] blocks and domains whose budget was spent


class Hold(enum.StrEnum):
    """Why a host is held (rule 5)."""

    ROBOTS = "robots"  # robots.txt unreachable, a retry is due
    RETRY_AFTER = "retry_after"  # the server asked to wait
    DOWN = "down"  # its connections fail: a probe is due (peer.core.crawl.outages)


class Limits:
    """The caps of one peer's crawl and their counts; see the module rules."""

    __slots__ = ("max_url_length", "max_path_repeat", "max_urls_per_host", "max_links_per_page",
                 "max_retry_after", "hits", "held_total", "_per_host", "_given_up", "_holds")

    def __init__(
        self,
        *,
        max_url_length: int = 0,
        max_path_repeat: int = 0,
        max_urls_per_host: int = 0,
        max_links_per_page: int = 0,
        max_retry_after: float = float("inf"),
    ) -> None:
        if min(max_url_length, max_path_repeat, max_urls_per_host, max_links_per_page) < 0:
            raise ValueError("caps must be >= 0 (0: no cap)")
        if not max_retry_after > 0:
            raise ValueError("max_retry_after must be > 0")
        self.max_url_length = max_url_length
        self.max_path_repeat = max_path_repeat
        self.max_urls_per_host = max_urls_per_host
        self.max_links_per_page = max_links_per_page
        self.max_retry_after = max_retry_after
        self.hits: Counter[Cap] = Counter()
        self.held_total: Counter[Hold] = Counter()  # hosts that were ever held, by kind
        self._per_host: dict[str, int] = {}
        self._given_up: set[str] = set()
        self._holds: dict[Hold, dict[str, float]] = {h: {} for h in Hold}

    @classmethod
    def from_config(cls, crawl: CrawlConfig, politeness: PolitenessConfig) -> Limits:
        """The caps of cluster.toml's ``[crawl]`` and ``[politeness]``."""
        return cls(max_url_length=crawl.max_url_length, max_path_repeat=crawl.max_path_repeat,
                   max_urls_per_host=crawl.max_urls_per_host,
                   max_links_per_page=crawl.max_links_per_page,
                   max_retry_after=politeness.max_retry_after)

    # -- rule 1: the URL ---------------------------------------------------------

    def check_url(self, url: str) -> Cap | None:
        """The cap a normalised URL breaks, or None (not counted: the caller counts with :meth:`dropped`)."""
        if self.max_url_length and len(url) > self.max_url_length:
            return Cap.URL_LENGTH
        repeat = self.max_path_repeat
        # A path of n segments repeats none more than n times, and a URL's
        # path has at most its slashes less the two of "//" (most links: 1-3
        # segments, under the default cap of 3): counted in C, no split.
        if repeat and url.count("/") - 2 > repeat and path_repeats(url) > repeat:
            return Cap.PATH_REPEAT
        return None

    # -- rule 2: the host --------------------------------------------------------

    def admit(self, host: str) -> Cap | None:
        """May one more URL of ``host`` be queued? None, or the cap in the way (not counted).

        The caller counts a drop with :meth:`dropped` once it knows the URL
        is new, and an admitted URL with :meth:`queued`.
        """
        if host in self._given_up:
            return Cap.GIVEN_UP
        if self.max_urls_per_host and self._per_host.get(host, 0) >= self.max_urls_per_host:
            return Cap.URLS_PER_HOST
        return None

    def dropped(self, cap: Cap) -> None:
        """A URL was dropped by ``cap`` (from :meth:`check_url`, or a new one from :meth:`admit`)."""
        self.hits[cap] += 1

    def queued(self, host: str, n: int = 1) -> None:
        """``n`` URLs of ``host`` were queued (admitted, resumed or taken back)."""
        self._per_host[host] = self._per_host.get(host, 0) + n

    def host_urls(self, host: str) -> int:
        """URLs of ``host`` queued on this peer so far."""
        return self._per_host.get(host, 0)

    # -- rule 3: the page --------------------------------------------------------

    def cut_links(self, links: Sequence[str], total: int | None = None) -> Sequence[str]:
        """The links of one page that are followed: the first ``max_links_per_page``.

        ``total``: the page's link count when the parser already cut
        ``links`` short (it stops normalising at the cap), so the hit counts
        what the page offered, not what reached us.
        """
        cap = self.max_links_per_page
        offered = len(links) if total is None else max(total, len(links))
        if not cap or offered <= cap:
            return links
        self.hits[Cap.LINKS_PER_PAGE] += offered - cap
        self.hits[Cap.PAGES_CUT] += 1
        return links[:cap]

    # -- rule 4: Retry-After -----------------------------------------------------

    def retry_after(self, host: str, seconds: float | None) -> tuple[float | None, bool]:
        """A 429/503's Retry-After: (seconds to wait, capped; whether it was over the cap, counted)."""
        if seconds is None or seconds <= self.max_retry_after:
            return seconds, False
        self.hits[Cap.RETRY_AFTER] += 1
        return self.max_retry_after, True

    def give_up(self, host: str) -> None:
        """No more URLs of ``host`` for the rest of the run."""
        if host not in self._given_up:
            self._given_up.add(host)
            self.hits[Cap.HOSTS_GIVEN_UP] += 1
        for kind in Hold:
            self._holds[kind].pop(host, None)

    def given_up(self, host: str) -> bool:
        return host in self._given_up

    # -- rule 5: holds -----------------------------------------------------------

    def hold(self, host: str, kind: Hold, until: float) -> None:
        """``host`` is held for ``kind`` until ``until`` (a later hold extends it)."""
        holds = self._holds[kind]
        was = holds.get(host)
        if was is None:
            self.held_total[kind] += 1
            holds[host] = until
        elif until > was:
            holds[host] = until

    def release(self, host: str, kind: Hold) -> None:
        self._holds[kind].pop(host, None)

    def held(self, now: float) -> dict[Hold, int]:
        """Hosts held at ``now``, by kind; holds whose time has passed are forgotten."""
        out = {}
        for kind, holds in self._holds.items():
            if holds:
                for host in [h for h, until in holds.items() if until <= now]:
                    del holds[host]
            out[kind] = len(holds)
        return out

    def held_hosts(self, now: float) -> list[tuple[str, Hold, float]]:
        """Every host held at ``now``: (host, kind, until), soonest first (the progress line)."""
        self.held(now)
        return sorted(((h, kind, until) for kind, holds in self._holds.items()
                       for h, until in holds.items()), key=lambda x: x[2])

    # -- figures -----------------------------------------------------------------

    def figures(self, now: float) -> dict[str, int]:
        """Non-zero counts, named for ``python -m ring status``: ``cap.<key>``, ``held.<kind>``."""
        out = {f"cap.{cap.value}": n for cap, n in self.hits.items() if n}
        out.update({f"held.{kind.value}": n for kind, n in self.held(now).items() if n})
        return out

    def render(self, now: float, reached: Iterable[str] = ()) -> str:
        """One line for the summary: ``reached`` (a limit that stopped the crawl, in
        words, first), what was cut or dropped, and the hosts held."""
        h = self.hits
        parts = [*reached]
        parts += [f"{label} {h[cap]}" for cap, label in (
            (Cap.URL_LENGTH, "long URLs"), (Cap.PATH_REPEAT, "repeating paths"),
            (Cap.URLS_PER_HOST, "over host cap"), (Cap.RETRY_AFTER, "Retry-After cut"),
        ) if h[cap]]
        if h[Cap.LINKS_PER_PAGE]:
            parts.append(f"links cut {h[Cap.LINKS_PER_PAGE]} on {h[Cap.PAGES_CUT]} pages")
        if h[Cap.BUDGETS_SPENT]:
            # peer.core.crawl.budgets rule 3: what was spent, and the URLs it left unrequested.
            over = [f"{cap.value} {h[cap]}" for cap in (Cap.BUDGET_HOST, Cap.BUDGET_SITE, Cap.BUDGET_DOMAIN)
                    if h[cap]]
            parts.append(f"budgets spent {h[Cap.BUDGETS_SPENT]}"
                         + (f" (not requested: {', '.join(over)})" if over else ""))
        if h[Cap.HOSTS_GIVEN_UP]:
            parts.append(f"hosts given up {h[Cap.HOSTS_GIVEN_UP]} ({h[Cap.GIVEN_UP]} URLs dropped)")
        held = self.held(now)
        ever = [f"{k.value} {self.held_total[k]}" + (f" ({held[k]} now)" if held[k] else "")
                for k in Hold if self.held_total[k]]
        if ever:
            parts.append("hosts held: " + ", ".join(ever))
        return "limits: " + ("; ".join(parts) if parts else "none hit")
