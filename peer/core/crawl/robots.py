"""Per-host robots.txt policy (RFC 9309, the Robots Exclusion Protocol).

A pure core: the engine asks :meth:`RobotsCache.check` before every fetch and
does what the :class:`Verdict` says; it fetches ``robots_url(host)`` through
the host's politeness gate when told ``FETCH`` and reports the answer with
:meth:`~RobotsCache.loaded` or :meth:`~RobotsCache.failed`. Time is passed in.

Rules (RFC 9309 sections in brackets):

1. The rules are protego's (Scrapy's parser): groups by user agent, longest
   match wins with Allow on a tie, ``*`` and ``$`` patterns, percent-encoding
   normalised [§2.2.2]. The group is chosen by the crawler's *product token*,
   the leading letters, ``_`` and ``-`` of the user agent (``ringcrawl`` from
   ``ringcrawl/0.1 (+https://...)``), case-insensitively; failing that, ``*``
   [§2.2.1]. ``/robots.txt`` itself is always allowed [§2.2.2].
2. 2xx: the body is parsed, at most :data:`MAX_ROBOTS_BYTES` (500 KiB, the
   least a parser must handle [§2.5]); a cut file ends at its last whole
   line, so a rule is never read half-written. The engine fetches only that
   prefix of a longer file (``truncated``), so a 2 MiB robots.txt is read,
   not refused as too large.
3. 4xx ("unavailable"): allow everything [§2.3.1.3]. Except 429, which
   is the server asking for less load, not saying there is no file: it is
   treated like a 5xx (as Google's crawler does).
4. 5xx, 429 or a network failure ("unreachable"): disallow everything
   [§2.3.1.4] and ask for robots.txt again later, :func:`retry_wait`: after
   ``error_retry`` seconds, doubling at each failure in a row, at most
   :data:`RETRY_CAP` (or after the answer's Retry-After, when the caller
   passes one, already capped: the server said when it expects to be back).
   If an earlier answer is cached, it stays in force instead: §2.4 lets a
   crawler use a cached copy past its lifetime while the file is unreachable.
   While unreachable, checks say ``UNREACHABLE``: the caller holds the URL
   until :meth:`~RobotsCache.retry_at` rather than dropping it, since the
   server may be down for a minute. After ``max_failures`` failed fetches in
   a row (tries) the verdict becomes a final ``DISALLOW``, so a dead host
   cannot keep a crawl alive for ever. A failure that no retry can mend in
   this run (the name does not resolve, the SSRF guard refuses every
   address) is reported ``final``: the verdict is the final ``DISALLOW`` at
   once, for ``ttl``. :meth:`~RobotsCache.failure` names the cause of a
   final ``DISALLOW`` (``dns``, ``blocked``, ``connect``..., or ``robots``
   for a 5xx/429), so the caller records the host's URLs with it rather
   than as disallowed by rules.

   Why 30 s doubling, 4 tries (``crawl.robots_retry``, ``crawl.robots_tries``)
   and not a fixed 10 minutes: a first crawl of a wrong port or a host that
   is down waited 20 minutes, nearly silent, for a verdict a few seconds
   told. §2.3.1.4 only says a crawler may try again, not when. Waits of 30,
   60 and 120 s hold a dead host at most 210 s plus the tries themselves
   (4 x ``crawl.timeout``, 15 s each by default): 3.5 minutes for a refused
   connection, 4.5 for one that times out; a server restarting for a
   minute still comes back in time. A host given up this way has its URLs
   recorded with the cause (``connect``, ``timeout``, ``robots``), so a
   later run can see and retry them.
5. 3xx: the engine's fetcher follows no redirects (each hop is routed like a
   link), and a robots.txt redirect is not a page to crawl, so a 3xx is taken
   as "unavailable": allow all. §2.3.1.2 says a crawler SHOULD follow five
   hops and MAY then assume unavailable; we assume it at once. A caller that
   follows the Location itself reports the final answer to ``loaded``.
6. An answer is cached for ``ttl`` seconds, 24 h by default, the most §2.4
   allows; then the next check says ``FETCH``.
7. One fetch per host at a time: after a ``FETCH`` verdict the host is
   *pending* and other checks say ``PENDING`` (the caller requeues), or use
   the expired copy when refreshing one (the rules rarely change, and the
   host's queue should not stall for a refresh). A pending fetch that never
   reports (a cancelled task) is forgotten after ``pending_timeout`` seconds,
   or at once with :meth:`~RobotsCache.cancelled`.
8. ``Crawl-delay`` of the chosen group (a de facto extension; RFC 9309 does
   not define it) is returned capped at ``max_crawl_delay``.
9. At most ``max_size`` hosts are cached, least recently checked evicted.

The cache is keyed by host key (``host[:port]``), so ``http`` and ``https``
of one host share one robots.txt, where §2.3 scopes a file to its scheme too:
the engine asks for the scheme of the URL that first needed it.
"""

from __future__ import annotations

import enum
import math
import re
from collections import OrderedDict
from collections.abc import Callable

from protego import Protego

from peer.errors import ErrorKind

__all__ = ["MAX_ROBOTS_BYTES", "RETRY_CAP", "ROBOTS_TTL", "RobotsCache", "Verdict", "product_token",
           "retry_wait"]

#: Bytes of a robots.txt parsed (RFC 9309 §2.5: at least 500 KiB).
MAX_ROBOTS_BYTES = 500 * 1024
#: Seconds an answer is cached (RFC 9309 §2.4: SHOULD NOT exceed 24 hours).
ROBOTS_TTL = 24 * 3600.0
#: The longest wait between tries of an unreachable robots.txt (rule 4): the
#: old fixed wait, reached only when ``crawl.robots_tries`` is raised.
RETRY_CAP = 600.0

_TOKEN = re.compile(r"[A-Za-z_\-]+")


class Verdict(enum.StrEnum):
    """What :meth:`RobotsCache.check` tells the caller to do with a URL."""

    ALLOW = "allow"  # fetch it
    DISALLOW = "disallow"  # never fetch it (record it as error "robots")
    FETCH = "fetch"  # fetch robots_url(host) first, report it, then check again
    PENDING = "pending"  # another task is fetching this host's robots.txt: requeue
    UNREACHABLE = "unreachable"  # robots.txt could not be read: hold until retry_at(host)


# Entry modes.
_RULES, _ALLOW_ALL, _DISALLOW_ALL = 1, 2, 3


class _Entry:
    __slots__ = ("mode", "parser", "delay", "expires", "pending_since", "failures", "cause", "why")

    def __init__(self) -> None:
        self.mode = 0  # 0: nothing known yet
        self.parser: Protego | None = None
        self.delay: float | None = None
        self.expires = -math.inf
        self.pending_since: float | None = None
        self.failures = 0  # failed fetches in a row
        self.cause: ErrorKind | None = None  # why the last fetch failed
        self.why = ""  # the caller's words for it, for the progress line


def product_token(user_agent: str) -> str:
    """The robots.txt name of a crawler: ``ringcrawl`` for ``ringcrawl/0.1 (+url)``.

    RFC 9309 §2.2.1: letters, ``_`` and ``-``; lower-cased. ``""`` if the
    user agent starts with none of them (then only ``*`` groups apply).
    """
    m = _TOKEN.match(user_agent.strip())
    return m.group().lower() if m else ""


def retry_wait(first: float, failures: int) -> float:
    """Seconds before the next try after ``failures`` failed tries in a row (rule 4).

    ``first`` after the first failure, doubled at each later one, at most
    :data:`RETRY_CAP` (or ``first``, if that is longer).
    """
    n = max(failures, 1) - 1
    return first if n == 0 else min(first * 2.0 ** min(n, 60), max(first, RETRY_CAP))


class RobotsCache:
    """robots.txt state of every host this peer crawls; see the module rules."""

    __slots__ = ("_token", "_tokens", "_max_delay", "_error_retry", "_max_size", "_ttl", "_pending_timeout",
                 "_max_failures", "_hosts")

    def __init__(
        self,
        user_agent: str,
        *,
        max_crawl_delay: float,
        error_retry: float = 30.0,
        max_size: int = 100_000,
        ttl: float = ROBOTS_TTL,
        pending_timeout: float = 120.0,
        max_failures: int = 4,
        tokens: Callable[[str], str] | None = None,
    ) -> None:
        if max_size < 1:
            raise ValueError(f"max_size must be >= 1, not {max_size}")
        self._token = product_token(user_agent)
        # A host's own agent's token, when [[site]] blocks give some hosts
        # another user_agent (peer/core/config/sites.py); else ``user_agent``'s for all.
        self._tokens = tokens
        self._max_delay = max_crawl_delay
        self._error_retry = error_retry
        self._max_size = max_size
        self._ttl = ttl
        self._pending_timeout = pending_timeout
        self._max_failures = max_failures
        self._hosts: OrderedDict[str, _Entry] = OrderedDict()

    @property
    def token(self) -> str:
        """The product token matched against ``User-agent`` lines (a host's own: :meth:`token_for`)."""
        return self._token

    def token_for(self, host: str) -> str:
        """The product token ``host``'s robots.txt group is chosen by (rule 1)."""
        return self._token if self._tokens is None else self._tokens(host)

    def __len__(self) -> int:
        return len(self._hosts)

    def robots_url(self, host_key: str, scheme: str) -> str:
        """``scheme://host[:port]/robots.txt`` [§2.3]."""
        return f"{scheme}://{host_key}/robots.txt"

    def check(self, host: str, url: str, now: float) -> Verdict:
        """May ``url`` (on ``host``, a host key) be fetched now? See :class:`Verdict`."""
        hosts = self._hosts
        e = hosts.get(host)
        if e is None:
            e = hosts[host] = _Entry()
            if len(hosts) > self._max_size:
                hosts.popitem(last=False)
            e.pending_since = now
            return Verdict.FETCH
        hosts.move_to_end(host)
        if e.pending_since is not None:
            if now - e.pending_since >= self._pending_timeout:
                e.pending_since = now  # the fetch never reported: ask again
                return Verdict.FETCH
            if e.mode != _RULES and e.mode != _ALLOW_ALL:
                return Verdict.PENDING
        elif now >= e.expires:
            e.pending_since = now
            return Verdict.FETCH
        mode = e.mode
        if mode == _ALLOW_ALL:
            return Verdict.ALLOW
        if mode == _RULES:
            assert e.parser is not None
            return Verdict.ALLOW if e.parser.can_fetch(url, self.token_for(host)) else Verdict.DISALLOW
        if e.failures < self._max_failures:
            return Verdict.UNREACHABLE
        return Verdict.DISALLOW

    def retry_at(self, host: str) -> float:
        """When an unreachable host's robots.txt will be asked for again."""
        e = self._hosts.get(host)
        return e.expires if e is not None else -math.inf

    def loaded(self, host: str, status: int, body: bytes, now: float, *, truncated: bool = False) -> None:
        """Report the HTTP answer to ``robots_url(host)``; ``truncated``: ``body`` is a prefix."""
        if 200 <= status < 300:
            e = self._entry(host)
            e.parser = self._parse(body, truncated)
            e.mode = _RULES
            e.delay = self._cap(e.parser.crawl_delay(self.token_for(host)))
        elif 300 <= status < 500 and status != 429:
            e = self._entry(host)
            e.mode, e.parser, e.delay = _ALLOW_ALL, None, None
        else:
            self.failed(host, now)
            return
        e.expires = now + self._ttl
        e.pending_since = None
        e.failures = 0
        e.cause = None
        e.why = ""

    def failed(self, host: str, now: float, cause: ErrorKind = ErrorKind.ROBOTS, *, final: bool = False,
               retry_after: float | None = None) -> None:
        """robots.txt was unreachable (timeout, network error, 5xx, 429).

        ``cause``: the fetcher's error kind, or ``robots`` for an HTTP answer.
        ``final``: no retry can help in this run (rule 4). ``retry_after``:
        the answer's Retry-After in seconds, capped by the caller; the next
        try comes then instead of after :func:`retry_wait`.
        """
        e = self._entry(host)
        e.failures = max(e.failures + 1, self._max_failures if final else 0)
        e.cause = cause
        if e.mode == 0:
            e.mode = _DISALLOW_ALL
        # else: the cached answer stays in force (§2.4) until the retry.
        wait = retry_wait(self._error_retry, e.failures) if retry_after is None else max(0.0, retry_after)
        e.expires = now + (self._ttl if final else wait)
        e.pending_since = None

    def failures(self, host: str) -> int:
        """Failed fetches of the host's robots.txt in a row."""
        e = self._hosts.get(host)
        return 0 if e is None else e.failures

    @property
    def max_failures(self) -> int:
        """Tries before an unreachable robots.txt becomes a final ``DISALLOW`` (rule 4)."""
        return self._max_failures

    def failure(self, host: str) -> ErrorKind | None:
        """The cause of a final ``DISALLOW`` for failures (rule 4); None for rules or none yet."""
        e = self._hosts.get(host)
        if e is None or e.mode != _DISALLOW_ALL or e.failures < self._max_failures:
            return None
        return e.cause or ErrorKind.ROBOTS

    def cause(self, host: str) -> ErrorKind | None:
        """Why the host's last robots.txt fetch failed (None after an answer): its URLs'
        error once the tries run out."""
        e = self._hosts.get(host)
        return None if e is None else e.cause

    def note(self, host: str, why: str) -> None:
        """The caller's words for the host's failure, kept until an answer comes (:meth:`why`)."""
        e = self._hosts.get(host)
        if e is not None:
            e.why = why

    def why(self, host: str) -> str:
        """What :meth:`note` kept for the host ("" after an answer)."""
        e = self._hosts.get(host)
        return "" if e is None else e.why

    def cancelled(self, host: str) -> None:
        """The robots.txt fetch for ``host`` ended without an answer; the next check asks again."""
        e = self._hosts.get(host)
        if e is not None and e.pending_since is not None:
            e.pending_since = None
            if e.mode == 0:
                del self._hosts[host]

    def crawl_delay(self, host: str) -> float | None:
        """The host's ``Crawl-delay`` for our group, capped at ``max_crawl_delay``."""
        e = self._hosts.get(host)
        return None if e is None else e.delay

    def sitemaps(self, host: str) -> tuple[str, ...]:
        """The ``Sitemap:`` URLs of the host's robots.txt as written (unchecked: remote input)."""
        e = self._hosts.get(host)
        return () if e is None or e.parser is None else tuple(e.parser.sitemaps)

    # -- internals -------------------------------------------------------------

    def _entry(self, host: str) -> _Entry:
        e = self._hosts.get(host)
        if e is None:  # evicted while its fetch was in flight, or never checked
            e = self._hosts[host] = _Entry()
            if len(self._hosts) > self._max_size:
                self._hosts.popitem(last=False)
        return e

    def _cap(self, delay: float | None) -> float | None:
        # protego drops negative, NaN and infinite values already.
        if delay is None:
            return None
        delay = min(delay, self._max_delay)
        return delay if delay > 0 else None

    @staticmethod
    def _parse(body: bytes, truncated: bool = False) -> Protego:
        if truncated or len(body) > MAX_ROBOTS_BYTES:
            body = body[:MAX_ROBOTS_BYTES]
            cut = body.rfind(b"\n")
            body = body[: cut + 1] if cut >= 0 else b""
        # §2.2: the file is UTF-8; a BOM is allowed and means nothing.
        text = body.decode("utf-8", "replace")
        if text.startswith("\ufeff"):
            text = text[1:]
        try:
            return Protego.parse(text)
        except Exception:  # noqa: BLE001 - a parser bug must not stop the crawl
            # §2.2: lines that cannot be parsed are ignored; a file of none
            # has no rules.
            return Protego.parse("")
