"""Hosts that are down, or ask for a wait over the cap: held and probed again, then given up (pure).

A part of ``peer.core.crawl.core.CrawlCore``, asked by
``peer.core.crawl.outcomes.Outcomes`` for each result of a page's fetch. The
keys are ``[retry]``'s (``peer.core.config.retry``). A URL's own retries
(``Retries``) are for a page that failed once; an outage is the host's, and
charging it to each URL gave up every page queued during a restart of a few
seconds. So:

1. **Answered.** A host that gave any HTTP answer in this run is known to
   exist and be reachable; an answer ends its failure streak and, if it was
   down, its outage (counted ``recovered``).
2. **Down.** A host that answered before and then fails ``down_after``
   requests in a row with an error of ``down_errors`` is down: the failing
   URL goes back to the front of its host's queue, charged no retry, and the
   host is held ``down_wait`` seconds. A host that never answered (a dead
   link's host, a wrong port) is not held: its URLs fail after their own
   retries, so a typo does not keep a crawl running for ``down_give_up``.
   A timeout is the one kind a single page can earn alone (a slow search
   page, retried at the front of its host's queue): a timeout of the URL
   whose failure the streak counted last does not count again, so one slow
   page is recorded after its own retries and does not hold its host.
3. **Probe.** When the hold ends the host's next request is a probe; one
   that fails doubles the hold, up to ``down_max_wait`` (exponential
   backoff, RFC 9110 §15.6.4's "retry after some delay"). A failure of a
   request started before the hold (another request in flight) keeps the
   hold as it is.
4. **Retry-After over the cap.** A 429/503 asking for longer than
   ``politeness.max_retry_after`` holds the host for the cap, each time,
   and charges no retry: the server said when, and we come back at the
   latest moment our cap allows.
5. **Give up.** A host down (or asking over the cap) for ``down_give_up``
   seconds since its outage began is given up: the caller records its
   queued URLs with their error and drops new ones, so the crawl ends by
   itself.

Memory: a set entry per host that answered, and a few dozen bytes per host
failing or down.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from peer.core.config.retry import RetryConfig

__all__ = ["Down", "Outages", "Verdict"]


class Verdict(enum.Enum):
    """What an outage asks of a failed result."""

    RETRY = "retry"  # not an outage: the URL's own retries (rule 2)
    HOLD = "hold"  # requeue, charged no retry, not before ``until`` (rules 2-4)
    GIVE_UP = "give_up"  # the host is given up (rule 5)


@dataclass(slots=True)
class Down:
    """One host's outage: when it began, its hold and whether it was a Retry-After."""

    since: float
    wait: float
    until: float
    retry_after: bool


class Outages:
    """The hosts down on this peer and their counts; see the module rules."""

    __slots__ = ("_policy", "_answered", "_streak", "_down", "went_down", "recovered", "gave_up", "probes")

    def __init__(self, policy: RetryConfig) -> None:
        self._policy = policy
        self._answered: set[str] = set()
        self._streak: dict[str, tuple[int, str]] = {}  # host -> (failures in a row, the last one's URL)
        self._down: dict[str, Down] = {}
        self.went_down = 0  # outages begun (a host down twice counts twice)
        self.recovered = 0  # outages ended by an answer
        self.gave_up = 0  # hosts given up (rule 5)
        self.probes = 0  # requests of a down host that failed again

    def answered(self, host: str) -> None:
        """Rule 1: ``host`` gave an HTTP answer (not an over-cap Retry-After)."""
        self._answered.add(host)
        if self._streak:
            self._streak.pop(host, None)
        if self._down and self._down.pop(host, None) is not None:
            self.recovered += 1

    def failed(self, host: str, now: float, url: str = "", kind: str = "") -> tuple[Verdict, float]:
        """Rules 2, 3, 5: a request of ``url`` to ``host`` failed with ``kind``, an error of
        ``down_errors``; (verdict, until)."""
        if host not in self._answered:
            return Verdict.RETRY, now
        down = self._down.get(host)
        if down is None:
            n, last = self._streak.get(host, (0, ""))
            if kind == "timeout" and url and url == last:
                return Verdict.RETRY, now  # rule 2: one slow page's own retries
            n += 1
            if n < self._policy.down_after:
                self._streak[host] = (n, url)
                return Verdict.RETRY, now
            self._streak.pop(host, None)
            wait = self._policy.down_wait
            self._down[host] = Down(now, wait, now + wait, False)
            self.went_down += 1
            return Verdict.HOLD, now + wait
        if now - down.since >= self._policy.down_give_up:
            return self._give_up(host), now
        if now >= down.until:  # a probe (rule 3)
            self.probes += 1
            down.wait = min(down.wait * 2, self._policy.down_max_wait)
            down.until = now + down.wait
            down.retry_after = False
        return Verdict.HOLD, down.until

    def asked_wait(self, host: str, now: float, cap: float) -> tuple[Verdict, float]:
        """Rules 4, 5: ``host`` answered a Retry-After over the cap; hold it ``cap`` seconds, or give it up."""
        self._answered.add(host)
        self._streak.pop(host, None)
        down = self._down.get(host)
        if down is None:
            self._down[host] = Down(now, cap, now + cap, True)
            self.went_down += 1
            return Verdict.HOLD, now + cap
        if now - down.since >= self._policy.down_give_up:
            return self._give_up(host), now
        down.wait, down.until, down.retry_after = cap, max(down.until, now + cap), True
        return Verdict.HOLD, down.until

    def _give_up(self, host: str) -> Verdict:
        del self._down[host]
        self.gave_up += 1
        return Verdict.GIVE_UP

    def down(self, host: str) -> Down | None:
        """``host``'s outage, or None."""
        return self._down.get(host)

    def hosts_down(self) -> int:
        """Hosts down now (held, or probing)."""
        return len(self._down)

    def figures(self) -> dict[str, int]:
        """Non-zero counts for ``python -m ring status``: ``outage.<name>``."""
        out = {"outage.hosts_down": len(self._down), "outage.went_down": self.went_down,
               "outage.recovered": self.recovered, "outage.gave_up": self.gave_up}
        return {k: v for k, v in out.items() if v}

    def render(self) -> str:
        """One line for the summary, or "" when no host went down."""
        if not self.went_down:
            return ""
        now = f", {len(self._down)} down now" if self._down else ""
        return (f"outages: {self.went_down} host outage{'s' if self.went_down != 1 else ''}, "
                f"{self.recovered} recovered, {self.gave_up} given up{now}")
