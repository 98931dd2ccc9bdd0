"""Failed pages queued again by ``--retry-failed``: which rows are failures, and what became of them (pure).

A crawl's retries (``[retry]``, ``peer.core.crawl.outcomes.Retries``) and its
outages (``peer.core.crawl.outages``) end: a page whose host stayed down,
or kept answering 503, is a row with its error, and the seen set keeps it
from being queued again by a link or a seed. A resumed crawl started with
``--retry-failed`` reads the latest row of each URL in this peer's results
file (``peer.results.store.ResultStore.failed_pages``) and queues again the
failed pages among them, as Heritrix's "re-queue failed URIs" and Nutch's
``db.fetch.retry.max`` after a later fetch cycle do:

1. A *failed page* is a row whose error kind the host's policy (``[retry]``,
   or its ``[[site]]`` block's) retries or counts towards a host being down
   (``errors``, ``down_errors``), or ``retry_after`` (a host that asked for
   too long a wait, given up), or whose answer has a status the policy
   retries (``statuses``: the retries ran out). A URL robots.txt disallows,
   one the scope, the rules or a cap left out (no row, or ``robots``), an
   answer of another status (a 404) and the kinds that would fail the same
   way again (``tls``, ``too_large``, ``protocol``...) are not.
2. Only the URL's latest row counts: a URL fetched fine since is not
   queued again.
3. Each URL is queued again once in a run: this part remembers those it
   queued, until their row. One still queued from an earlier run (a
   ``--retry-failed`` run killed before its row came, whose journal queued
   it) is not queued a second time; its row takes the failed one's place too.
4. The scope and the URL rules in force now judge it
   (``peer.core.crawl.discovery`` note 8); in a ring a URL whose host
   another peer owns now goes there with a ``retry`` tail
   (``peer.core.sitemaps.hints``), and that owner queues it though its
   seen set holds it.
5. The row of a URL queued again takes the place of its earlier one in
   this peer's file (``pages`` keeps a URL's latest row; a merge keeps the
   latest of the peers' rows too).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from peer.core.config.retry import RetryConfig
from peer.core.crawl.decisions import Effect, Forward, Queued
from peer.errors import ErrorKind

__all__ = ["FailedPages", "FailedRow", "failure"]

#: One row as the store reads it: (url, host, depth, status, error).
FailedRow = tuple[str, str, int, "int | None", "str | None"]

_GIVEN_UP = ErrorKind.RETRY_AFTER.value


def failure(policy: RetryConfig, status: int | None, error: str | None) -> str | None:
    """The cause a row is a failed page by (its error kind, or its status), or None (rule 1)."""
    if error is not None:
        if error == _GIVEN_UP or error in policy.errors or error in policy.down_errors:
            return error
        return None
    if status is not None and policy.retries_status(status):
        return str(status)
    return None


class FailedPages:
    """The failed pages this peer queued again, and the tally the summary prints (module docstring)."""

    __slots__ = ("_policy_for", "queued", "again", "passed", "refused", "received", "pending")

    def __init__(self, policy_for: Callable[[str], RetryConfig]) -> None:
        self._policy_for = policy_for
        #: URLs queued again here whose row has not come yet (rules 3, 5).
        self.queued: set[str] = set()
        #: Failed pages of our results queued again here, by cause (rule 1).
        self.again: Counter[str] = Counter()
        #: Failed pages of our results sent to their host's owner (rule 4).
        self.passed = 0
        #: Failed pages the scope or the rules refuse now (rule 4).
        self.refused = 0
        #: Failed pages other peers sent us, queued here (rule 4).
        self.received = 0
        #: Failed pages still queued from an earlier run, not queued twice (rule 3).
        self.pending = 0

    def pick(self, rows: Iterable[FailedRow]) -> list[tuple[str, int, str]]:
        """(url, depth, cause) of the rows that are failed pages (rule 1)."""
        policy = self._policy_for
        out = []
        for url, host, depth, status, error in rows:
            cause = failure(policy(host), status, error)
            if cause is not None:
                out.append((url, int(depth or 0), cause))
        return out

    def counted(self, cause: str, effects: Sequence[Effect]) -> None:
        """What became of one failed page of ours: queued, sent on, or refused."""
        if any(type(e) is Queued for e in effects):
            self.again[cause] += 1
        elif any(type(e) is Forward for e in effects):
            self.passed += 1
        elif effects:
            self.refused += 1

    def replaces(self, url: str) -> bool:
        """Whether ``url``'s row is a page queued again, over its earlier row (rule 5); forgotten then."""
        if url in self.queued:
            self.queued.discard(url)
            return True
        return False

    def summary_line(self) -> str:
        """The summary's line: how many failed pages were queued again, by cause."""
        n = sum(self.again.values())
        causes = ", ".join(f"{c} {k}" for c, k in sorted(self.again.items(), key=lambda kv: (-kv[1], kv[0])))
        parts = [f"retry-failed: {n:,} failed page{'s' if n != 1 else ''} queued again"
                 + (f" ({causes})" if causes else "")]
        if self.passed:
            parts.append(f"{self.passed:,} sent to their hosts' owners")
        if self.received:
            parts.append(f"{self.received:,} received from other peers")
        if self.pending:
            parts.append(f"{self.pending:,} still queued from an earlier run")
        if self.refused:
            parts.append(f"{self.refused:,} out of the scope or rules now")
        return "; ".join(parts)
