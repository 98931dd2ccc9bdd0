"""The due queue: every revisit record of a peer, by host and by the time it comes due (pure).

The driver's questions are per host, because a host's pace decides when
anything of it may start (peer/core/frontier/pacing.py): "has host H a revisit due?",
"give me H's next one", and, globally, "which hosts just got one due?" (to
wake them in the scheduler), "how many are overdue?", "when is the next one
due?". So the records live per host, each host with two heaps:

- ``pending``: records due after the queue's ``now``, by due time;
- ``ready``: records due by ``now``, oldest due first: they are *overdue*,
  waiting for their host's budget (peer/core/revisit/hostmix.py).

and one heap of hosts by their earliest pending due time. :meth:`advance`
moves every record due by ``now`` from ``pending`` to ``ready``, host by
host from that heap, and returns the hosts that had none ready before.
Each record moves once per visit, at O(log n) a heap operation, so a pop of
a due record costs O(log n) amortised whatever the size; nothing is ever
scanned.

Rules:

1. Invariant: a record is in its host's ``ready`` heap exactly when its due
   time is at or before the queue's ``now`` (the latest :meth:`advance`;
   ``now`` never goes back). So "overdue" is one counter kept on every move.
2. One record a URL: scheduling a URL already queued replaces its record.
   Heap items are ``(due, url)``; one is stale when its URL's record has
   another due time or is gone, and is skipped when it surfaces. A host's
   heaps are rebuilt when stale items outnumber its records, so memory
   stays within twice the records.
3. Hand-over: when a ring change gives a host to another peer,
   :meth:`export_host` removes all its records and returns them, oldest due
   first, for the new owner's :meth:`import_records` (or to drop). A host's
   records are always together, so this costs O(its records) alone.
4. Memory is the limit, not time (scripts/bench_revisit.py): each record is
   a frozen :class:`RevisitState` plus its dict slot and one heap tuple.
   The benchmark's figure per record says how many records a peer can
   hold; past that, records due far ahead belong on disk (the results'
   ``fetches``/``pages`` tables) and only the next hours' in this queue.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator

from peer.core.revisit.policy import RevisitState

__all__ = ["DueQueue"]

_Item = tuple[float, str]


class _Host:
    """One host's records and its two heaps (rule 1, rule 2)."""

    __slots__ = ("records", "pending", "ready", "n_ready", "wake")

    def __init__(self) -> None:
        self.records: dict[str, RevisitState] = {}
        self.pending: list[_Item] = []
        self.ready: list[_Item] = []
        self.n_ready = 0
        self.wake = float("inf")   # the due time of this host's live item in the host heap

    def live(self, item: _Item) -> bool:
        rec = self.records.get(item[1])
        return rec is not None and rec.due == item[0]


class DueQueue:
    """Revisit records by host and due time; ``now`` comes in through :meth:`advance`."""

    __slots__ = ("_hosts", "_wakes", "_now", "_size", "_overdue")

    def __init__(self, now: float = float("-inf")) -> None:
        self._hosts: dict[str, _Host] = {}
        self._wakes: list[_Item] = []      # (earliest pending due, host): rule 1's host heap
        self._now = now
        self._size = 0
        self._overdue = 0

    # -- read-outs -----------------------------------------------------------

    def __len__(self) -> int:
        return self._size

    @property
    def now(self) -> float:
        """The time of the latest :meth:`advance`."""
        return self._now

    @property
    def overdue(self) -> int:
        """Records due by ``now`` and not yet popped, over all hosts."""
        return self._overdue

    def due_count(self, host: str) -> int:
        """Records of ``host`` due by ``now`` and not yet popped."""
        h = self._hosts.get(host)
        return 0 if h is None else h.n_ready

    def host_count(self) -> int:
        """Hosts with records."""
        return len(self._hosts)

    def get(self, url: str, host: str) -> RevisitState | None:
        """The record of ``url`` (of ``host``), or None."""
        h = self._hosts.get(host)
        return None if h is None else h.records.get(url)

    def next_due(self) -> float | None:
        """When the earliest pending record comes due (None: none pending): the driver's sleep."""
        wakes = self._wakes
        while wakes:
            due, host = wakes[0]
            h = self._hosts.get(host)
            if h is not None and h.wake == due:
                if h.pending and h.pending[0][0] == due and h.live(h.pending[0]):
                    return due
                heapq.heappop(wakes)   # its earliest item went stale: find its next one
                self._rewake(h, host)
            else:
                heapq.heappop(wakes)
        return None

    def hosts_due(self) -> Iterator[str]:
        """Hosts with records due by ``now``: a scan of every host, for read-outs.

        The driver keeps its own set from :meth:`advance`'s answers instead.
        """
        return (host for host, h in self._hosts.items() if h.n_ready)

    # -- changes -------------------------------------------------------------

    def schedule(self, state: RevisitState) -> None:
        """Queue ``state``, replacing its URL's record if queued (rule 2)."""
        h = self._hosts.get(state.host)
        if h is None:
            h = self._hosts[state.host] = _Host()
        old = h.records.get(state.url)
        if old is None:
            self._size += 1
        elif old.due <= self._now:
            h.n_ready -= 1
            self._overdue -= 1
        h.records[state.url] = state
        item = (state.due, state.url)
        if state.due <= self._now:
            heapq.heappush(h.ready, item)
            h.n_ready += 1
            self._overdue += 1
        else:
            heapq.heappush(h.pending, item)
            if state.due < h.wake:
                h.wake = state.due
                heapq.heappush(self._wakes, (state.due, state.host))
        if len(h.pending) + len(h.ready) > 2 * len(h.records) + 16:
            self._compact(h)

    def import_records(self, records: Iterable[RevisitState]) -> None:
        """Queue records handed over by a host's previous owner (rule 3)."""
        for state in records:
            self.schedule(state)

    def advance(self, now: float) -> list[str]:
        """Move every record due by ``now`` to its host's ready heap; the hosts that had none ready."""
        if now <= self._now:
            return []
        self._now = now
        woken: list[str] = []
        wakes = self._wakes
        while wakes and wakes[0][0] <= now:
            due, host = heapq.heappop(wakes)
            h = self._hosts.get(host)
            if h is None or h.wake != due:
                continue   # stale: the host left, or an earlier item of it came first
            before = h.n_ready
            pending = h.pending
            last = None
            while pending and pending[0][0] <= now:
                item = heapq.heappop(pending)
                # A URL scheduled A, B, then A again has two live items, equal,
                # so they surface one after the other: move one (rule 2).
                if item != last and h.live(item):
                    heapq.heappush(h.ready, item)
                    h.n_ready += 1
                    last = item
            self._overdue += h.n_ready - before
            if before == 0 and h.n_ready:
                woken.append(host)
            self._rewake(h, host)
        return woken

    def _rewake(self, h: _Host, host: str) -> None:
        """Put ``host`` back in the host heap at its earliest live pending item, if any."""
        pending = h.pending
        while pending and not h.live(pending[0]):
            heapq.heappop(pending)
        h.wake = float("inf")
        if pending:
            h.wake = pending[0][0]
            heapq.heappush(self._wakes, (h.wake, host))

    def pop(self, host: str) -> RevisitState | None:
        """``host``'s record that came due first, removed; None when it has none due."""
        h = self._hosts.get(host)
        if h is None or not h.n_ready:
            return None
        ready = h.ready
        while True:
            item = heapq.heappop(ready)
            if h.live(item):
                break
        state = h.records.pop(item[1])
        h.n_ready -= 1
        self._overdue -= 1
        self._size -= 1
        if not h.records:
            del self._hosts[host]
        return state

    def discard(self, url: str, host: str) -> RevisitState | None:
        """Remove ``url``'s record (a page dropped from the crawl); its heap items go stale."""
        h = self._hosts.get(host)
        state = None if h is None else h.records.pop(url, None)
        if h is None or state is None:
            return None
        self._size -= 1
        if state.due <= self._now:
            h.n_ready -= 1
            self._overdue -= 1
        if not h.records:
            del self._hosts[host]
        return state

    def export_host(self, host: str) -> list[RevisitState]:
        """Remove every record of ``host`` and return them, oldest due first (rule 3)."""
        h = self._hosts.pop(host, None)
        if h is None:
            return []
        self._size -= len(h.records)
        self._overdue -= h.n_ready
        return sorted(h.records.values(), key=lambda s: (s.due, s.url))

    def _compact(self, h: _Host) -> None:
        h.pending = [i for i in h.pending if h.live(i) and i[0] > self._now]
        h.ready = [i for i in h.ready if h.live(i) and i[0] <= self._now]
        heapq.heapify(h.pending)
        heapq.heapify(h.ready)
