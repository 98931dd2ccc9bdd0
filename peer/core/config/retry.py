"""``[retry]``: what is tried again, how often and how soon, and how long a host that is down is waited for (pure).

A section of cluster.toml in a module of its own (``peer.core.config.keys``),
listed in ``peer.core.config.cluster.SECTIONS``. Two policies:

- **A URL's retries** (``peer.core.crawl.outcomes.Retries``): a fetch that
  failed with a status of ``statuses`` or an error kind of ``errors`` goes
  back through its host's queue, at most ``times`` times, the n-th time
  after ``base x 2^(n-1)`` seconds (+-50 % jitter), at most ``cap`` (Scrapy's
  ``RETRY_TIMES`` and ``RETRY_HTTP_CODES``; the backoff of RFC 9110 §15.6.4's
  "retry after some delay").
- **A host that is down** (``peer.core.crawl.outages``): a host that answered
  in this run and then fails ``down_after`` requests in a row with an error
  kind of ``down_errors`` is held, its URLs kept, and probed again after
  ``down_wait`` seconds, doubled at each failed probe up to ``down_max_wait``;
  a host whose Retry-After is over ``politeness.max_retry_after`` is held for
  that cap each time. After ``down_give_up`` seconds down its URLs are
  recorded with their error and no more are queued, so a crawl ends by itself.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from peer.core.config.keys import at_least_one, key, non_negative
from peer.errors import ErrorKind

__all__ = ["RetryConfig", "DEFAULT_ERRORS", "DEFAULT_STATUSES", "check_statuses"]

#: Transient error kinds worth a retry (a proxy down or overloaded, or its
#: upstream, is too); the rest (dns, blocked, the tls kinds, too_large,
#: protocol, proxy_auth) would fail the same way again.
DEFAULT_ERRORS = ("connect", "reset", "timeout", "proxy", "proxy_refused")
#: 429 and every 5xx; "5xx" also stands for a status outside 100-599 and a
#: final 1xx, which RFC 9110 §15 says to handle as a 5xx.
DEFAULT_STATUSES = ("429", "5xx")
_KINDS = frozenset(k.value for k in ErrorKind)


def check_statuses(v: Any) -> str | None:
    """The check of a list of statuses retried (``[retry] statuses``, a ``[[site]]``'s ``retry_statuses``)."""
    bad = [s for s in v if not re.fullmatch(r"[1-5]xx|[1-5][0-9][0-9]", s)]
    return None if not bad else 'a list of statuses, "503" or a class "5xx"'


def _kinds(v: Any) -> str | None:
    bad = [s for s in v if s not in _KINDS]
    return None if not bad else f"a list of error kinds of {', '.join(sorted(_KINDS))}"


def _seconds(v: Any) -> str | None:
    return None if math.isfinite(v) and v > 0 else "a number of seconds > 0"


@dataclass(frozen=True, slots=True)
class RetryConfig:
    """``[retry]``: the retry policy of a URL, and of a host that is down (module docstring)."""

    times: int = key(int, 2, "retries of a URL after its first fetch failed with a status of statuses or an error of errors; 0: none", non_negative)
    statuses: tuple[str, ...] = key(list, list(DEFAULT_STATUSES), "HTTP statuses retried, as strings: \"503\", or a class \"5xx\" (which also covers a status outside 100-599, RFC 9110 §15)", check_statuses)
    errors: tuple[str, ...] = key(list, list(DEFAULT_ERRORS), "error kinds retried (the results' error column: connect, reset, timeout, proxy, proxy_refused, dns...)", _kinds)
    base: float = key(float, 1.0, "seconds before a URL's first retry, doubled at each next one, +-50% jitter; a 429/503's Retry-After, capped, wins", _seconds)
    cap: float = key(float, 60.0, "longest wait before one retry of a URL, seconds (the backoff's cap; a Retry-After is capped by politeness.max_retry_after)", _seconds)
    down_after: int = key(int, 3, "requests in a row failing with an error of down_errors after which a host that answered before in this run is down: held, its URLs kept, not retried URL by URL", at_least_one)
    down_errors: tuple[str, ...] = key(list, ["connect", "dns", "timeout"], "error kinds that count towards a host being down", _kinds)
    down_wait: float = key(float, 15.0, "seconds a host that went down is held before one of its URLs probes it, doubled at each failed probe up to down_max_wait", _seconds)
    down_max_wait: float = key(float, 300.0, "longest hold of a down host between two probes, seconds", _seconds)
    down_give_up: float = key(float, 3600.0, "seconds a host may stay down (or keep asking for a Retry-After over politeness.max_retry_after) before its URLs are recorded with their error and no more of them are queued; the crawl then ends by itself", _seconds)

    def __post_init__(self) -> None:
        if self.down_max_wait < self.down_wait:
            raise ValueError(f"[retry] down_max_wait must be >= down_wait, not {self.down_max_wait!r}")

    def retries_status(self, status: int) -> bool:
        """Is an answer with ``status`` retried? (a status outside 100-599, or a final 1xx, as a 5xx)."""
        if not 200 <= status <= 599:
            return "5xx" in self.statuses
        return str(status) in self.statuses or f"{status // 100}xx" in self.statuses

    def retries_error(self, kind: str | None) -> bool:
        """Is a failure of error kind ``kind`` retried?"""
        return kind is not None and kind in self.errors

    def wait(self, n: int, jitter: float) -> float:
        """The wait before retry ``n + 1`` (``n`` retries so far), ``jitter`` in [0.5, 1.5]."""
        return float(min(self.cap, self.base * 2**n * jitter))

    def describe(self) -> str:
        """One line for ``--check``: the policy as it will run."""
        waits = ", ".join(f"{self.wait(n, 1.0):g}s" for n in range(min(self.times, 6)))
        return (f"retry: {self.times} times ({waits or 'none'}, +-50%) on statuses {', '.join(self.statuses) or 'none'} "
                f"and errors {', '.join(self.errors) or 'none'}; a host down after {self.down_after} "
                f"{'/'.join(self.down_errors) or 'never'} failures in a row is held {self.down_wait:g}s, "
                f"doubled up to {self.down_max_wait:g}s, given up after {self.down_give_up:g}s")
