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
   a frozen :class:`RevisitState` plus its dict slot and one heap tuple,
   about 650 bytes with a URL, digest, ETag and Last-Modified. So records
   due far ahead live on disk (rule 5), as the frontier's queues beyond
   their heads do (peer/core/frontier/spillqueue.py rule 9).
5. The far tier (:meth:`attach_far`): with a store attached, a record whose
   due time falls in a *bucket* (``floor(due / window)``) after the bucket
   of ``now + window`` is *far*. It waits in one shared *tail*, in its
   host's ``records`` but in no heap; a tail of ``FAR_BLOCK`` records is
   sorted by bucket and handed to the store, one block a bucket and host
   shard (``put(key, [block_id, n, host, url, due, ...])``, flat as the
   frontier's blocks). The queue keeps in RAM only, per far record, its
   URL's ``hash()`` in its host's bytes for that bucket (8 bytes, searched
   with ``bytes.find``): the exact answer to "may this URL have a record on
   disk?" (a hash collision costs a needless recall, never a wrong answer).
   :meth:`advance` takes a bucket's blocks back (``take``) as soon as
   ``now + window`` reaches it, before any of its records is due, and moves
   tail records it reaches into the heaps. So RAM holds the records due
   within about two windows, the tail, and 8 bytes a far record. Rule 2
   holds across the tiers: an operation on one URL (:meth:`get`,
   :meth:`discard`, :meth:`schedule` of a URL not in RAM,
   :meth:`export_host`) whose host may have a far record of it first
   *recalls* the host: its far records are read back (``iter_host`` of its
   buckets' keys for its shard, left in place) into its heaps, and every
   block written before is dead for that
   host (``since``: the first block id live for it), so a recalled or
   exported record is never loaded twice. The hot paths never recall: a
   visit reschedules a URL just popped (its one record was in RAM, so none
   is on disk: the host's ``out`` set says so without a search), and a new
   URL's hash is in no far bytes. Block ids only grow, and a host made anew
   starts at the next one, so a record is live on disk exactly when its
   block id is at or past its host's ``since``. The store is not durable
   state: recovery schedules the records from the results' ``fetches``
   table (peer/core/revisit/recrawl.py rule 7), so a restart starts with
   an empty store.
"""

from __future__ import annotations

import heapq
import math
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from peer.core.frontier.spillqueue import SpillStore
from peer.core.revisit.policy import RevisitState

__all__ = ["FAR_BLOCK", "FAR_SHARDS", "DueQueue", "FarFigures"]

_Item = tuple[float, str]

#: Far records gathered before they go to the store (rule 5): about 1 MB of
#: tail, and blocks of a few dozen records a bucket and shard.
FAR_BLOCK = 4096
#: A bucket's blocks are split by host into this many keys, so a recall
#: reads one shard of each of the host's buckets, not whole buckets.
FAR_SHARDS = 16
_KEY = struct.Struct("<q")
# host, url, due, interval, last_visit, digest, etag, last_modified, visits, changes, capture and
# a pad: the store reads a block as pairs (peer.core.frontier.spillqueue.SpillStore.iter_host).
_FIELDS = 12


class _Host:
    """One host's records and its two heaps (rule 1, rule 2), and its far records' hashes (rule 5)."""

    __slots__ = ("records", "pending", "ready", "n_ready", "wake", "far", "since", "out")

    def __init__(self, since: int = 0) -> None:
        self.records: dict[str, RevisitState] = {}
        self.pending: list[_Item] = []
        self.ready: list[_Item] = []
        self.n_ready = 0
        self.wake = float("inf")   # the due time of this host's live item in the host heap
        # bucket -> hash(url) of its records on disk, 8 bytes each: searched with
        # bytes.find (memchr speed; an array's ``in`` boxes every item, 250 ns each).
        self.far: dict[int, bytearray] | None = None
        self.since = since         # the first block id whose records of this host are live
        self.out: set[str] | None = None   # URLs popped and not scheduled again: none on disk

    def may_have_far(self, url: str) -> bool:
        far = self.far
        if not far:
            return False
        out = self.out
        if out is not None and url in out:
            return False   # popped from RAM, so its one record was there (rule 2)
        key = _KEY.pack(hash(url))
        for buf in far.values():
            i = buf.find(key)
            while i >= 0:
                if not i & 7:
                    return True
                i = buf.find(key, i + 1)
        return False

    def live(self, item: _Item) -> bool:
        rec = self.records.get(item[1])
        return rec is not None and rec.due == item[0]


@dataclass(frozen=True, slots=True)
class FarFigures:
    """The far tier's figures (rule 5), for the summary and the metrics."""

    window: float        # seconds; 0: no far tier
    far: int             # records on disk
    tail: int            # far records in RAM, not yet handed to the store
    buckets: int         # buckets with records on disk
    written: int         # records handed to the store
    loaded: int          # records taken back as their bucket came near
    recalls: int         # hosts recalled for a one-URL operation or an export
    recalled: int        # records those recalls read back


class DueQueue:
    """Revisit records by host and due time; ``now`` comes in through :meth:`advance`."""

    __slots__ = ("_hosts", "_wakes", "_now", "_size", "_overdue", "_store", "_window", "_tail",
                 "_tail_min", "_buckets", "_bucket_heap", "_far", "_next_block", "_counts", "_from", "_block", "_near_b")

    def __init__(self, now: float = float("-inf")) -> None:
        self._hosts: dict[str, _Host] = {}
        self._wakes: list[_Item] = []      # (earliest pending due, host): rule 1's host heap
        self._now = now
        self._size = 0
        self._overdue = 0
        # rule 5: the far tier, off until attach_far()
        self._store: SpillStore | None = None
        self._window = 0.0
        self._tail: list[RevisitState] = []
        self._tail_min = math.inf
        self._buckets: dict[int, int] = {}   # bucket -> records written to it and not taken
        self._bucket_heap: list[int] = []
        self._far = 0                        # live records on disk
        self._next_block = 0
        self._counts = [0, 0, 0, 0]          # written, loaded, recalls, recalled
        self._from = float("-inf")           # rule 5 reckons from max(now, this)
        self._block = FAR_BLOCK
        self._near_b = 0

    def attach_far(self, store: SpillStore, window: float, now: float, block: int = FAR_BLOCK) -> None:
        """Keep the records due beyond ``now + window`` (a bucket's worth more) in ``store`` (rule 5).

        ``store`` must be empty; ``window`` > 0 seconds; ``now`` the clock's
        time, which rule 5 reckons from until :meth:`advance` gives a later one;
        ``block`` the tail's records handed over at once.
        """
        if not window > 0 or not math.isfinite(window):
            raise ValueError(f"due queue: the far window must be a number of seconds > 0, not {window!r}")
        if self._store is not None or store.hosts():
            raise ValueError("due queue: attach_far() twice, or with a store that holds blocks")
        self._store = store
        self._window = float(window)
        self._from = now
        self._block = max(1, block)
        self._near_b = self._near()
        for h in self._hosts.values():   # records queued before: far ones go to the tail
            for state in h.records.values():
                if self._is_far(state.due):
                    self._tail.append(state)
                    self._tail_min = min(self._tail_min, state.due)
        if len(self._tail) >= self._block:
            self.flush_far()

    def far_figures(self) -> FarFigures:
        w, lo, rc, rd = self._counts
        return FarFigures(self._window, self._far, len(self._tail), len(self._buckets), w, lo, rc, rd)

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

    @property
    def far(self) -> int:
        """Records on disk (rule 5)."""
        return self._far

    def due_count(self, host: str) -> int:
        """Records of ``host`` due by ``now`` and not yet popped."""
        h = self._hosts.get(host)
        return 0 if h is None else h.n_ready

    def host_count(self) -> int:
        """Hosts with records."""
        return len(self._hosts)

    def get(self, url: str, host: str) -> RevisitState | None:
        """The record of ``url`` (of ``host``), or None (a far one is recalled first, rule 5)."""
        h = self._hosts.get(host)
        if h is None:
            return None
        state = h.records.get(url)
        if state is None and h.may_have_far(url):
            self._recall(host, h)
            state = h.records.get(url)
        return state

    def next_due(self) -> float | None:
        """When the earliest pending record comes due (None: none pending): the driver's sleep.

        With far records (rule 5) it may be earlier: when the first far
        bucket or tail record comes near, so :meth:`advance` takes it in.
        """
        wakes = self._wakes
        out = None
        while wakes:
            due, host = wakes[0]
            h = self._hosts.get(host)
            if h is not None and h.wake == due:
                if h.pending and h.pending[0][0] == due and h.live(h.pending[0]):
                    out = due
                    break
                heapq.heappop(wakes)   # its earliest item went stale: find its next one
                self._rewake(h, host)
            else:
                heapq.heappop(wakes)
        if self._store is not None:
            near = self._near_time()
            if near is not None and (out is None or near < out):
                out = near
        return out

    def hosts_due(self) -> Iterator[str]:
        """Hosts with records due by ``now``: a scan of every host, for read-outs.

        The driver keeps its own set from :meth:`advance`'s answers instead.
        """
        return (host for host, h in self._hosts.items() if h.n_ready)

    # -- changes -------------------------------------------------------------

    def schedule(self, state: RevisitState) -> None:
        """Queue ``state``, replacing its URL's record if queued (rule 2; on disk too, rule 5)."""
        h = self._hosts.get(state.host)
        if h is None:
            h = self._hosts[state.host] = _Host(self._next_block)
        old = h.records.get(state.url)
        if old is None and h.far and h.may_have_far(state.url):
            self._recall(state.host, h)
            old = h.records.get(state.url)
        if h.out:
            h.out.discard(state.url)
        if old is None:
            self._size += 1
        elif old.due <= self._now:
            h.n_ready -= 1
            self._overdue -= 1
        h.records[state.url] = state
        if self._store is not None and self._is_far(state.due):
            self._tail.append(state)    # in no heap until it comes near or goes to disk
            if state.due < self._tail_min:
                self._tail_min = state.due
            if len(self._tail) >= self._block:
                self.flush_far()
            return
        self._push(h, state)

    def _push(self, h: _Host, state: RevisitState, now: float | None = None) -> None:
        item = (state.due, state.url)
        if state.due <= (self._now if now is None else now):
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
        """Move every record due by ``now`` to its host's ready heap; the hosts that had none ready.

        With a far tier (rule 5) the buckets and tail records that ``now +
        window`` reached are taken into the heaps first.
        """
        if now <= self._now:
            return []
        before, self._now = self._now, now
        if self._store is not None:
            self._near_b = self._near()
            # Into the pending heaps as of the time before: a record due by ``now`` then
            # moves to ready below, with any equal item of its URL (rule 2), once.
            self._bring_near(before)
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
        if not h.records and not h.far:
            del self._hosts[host]
        elif h.far:
            if h.out is None:
                h.out = set()
            h.out.add(state.url)
        return state

    def discard(self, url: str, host: str) -> RevisitState | None:
        """Remove ``url``'s record (a page dropped from the crawl); its heap items go stale."""
        h = self._hosts.get(host)
        if h is None:
            return None
        state = h.records.pop(url, None)
        if state is None and h.may_have_far(url):
            self._recall(host, h)
            state = h.records.pop(url, None)
        if state is None:
            return None
        self._size -= 1
        if state.due <= self._now:
            h.n_ready -= 1
            self._overdue -= 1
        if not h.records and not h.far:
            del self._hosts[host]
        return state

    def export_host(self, host: str) -> list[RevisitState]:
        """Remove every record of ``host`` and return them, oldest due first (rule 3); those on
        disk too (rule 5: recalled first)."""
        h = self._hosts.get(host)
        if h is None:
            return []
        if h.far:
            self._recall(host, h)
        del self._hosts[host]
        self._size -= len(h.records)
        self._overdue -= h.n_ready
        return sorted(h.records.values(), key=lambda s: (s.due, s.url))

    def _compact(self, h: _Host) -> None:
        h.pending = [i for i in h.pending if h.live(i) and i[0] > self._now]
        h.ready = [i for i in h.ready if h.live(i) and i[0] <= self._now]
        heapq.heapify(h.pending)
        heapq.heapify(h.ready)

    # -- the far tier (rule 5) -------------------------------------------------

    def _bucket(self, t: float) -> int:
        return math.floor(t / self._window)

    def _near(self) -> int:
        """The last bucket kept in RAM: that of ``now + window``."""
        return self._bucket(max(self._now, self._from) + self._window)

    def _is_far(self, due: float) -> bool:
        # The near bucket is kept (_near_b, set where ``now`` moves): this runs a schedule.
        return due // self._window > self._near_b

    def _near_time(self) -> float | None:
        """When ``now + window`` reaches the first far bucket or tail record."""
        first = math.inf
        heap = self._bucket_heap
        while heap and heap[0] not in self._buckets:
            heapq.heappop(heap)
        if heap:
            first = heap[0] * self._window
        if self._tail:
            first = min(first, self._bucket(self._tail_min) * self._window)
        return None if first == math.inf else max(first - self._window, self._now, self._from)

    def flush_far(self) -> int:
        """Hand the tail's far records to the store, one block a bucket and shard; returns them."""
        store = self._store
        tail, self._tail = self._tail, []
        self._tail_min = math.inf
        if store is None or not tail:
            return 0
        groups: dict[tuple[int, int], list[Any]] = {}
        hosts = self._hosts
        near = self._near()
        for state in tail:
            h = hosts.get(state.host)
            if h is None or h.records.get(state.url) is not state:
                continue   # replaced, popped, discarded or exported since
            b = self._bucket(state.due)
            if b <= near:   # came near while it waited (rule 5): into the heaps
                self._push(h, state)
                continue
            del h.records[state.url]
            key = (b, hash(state.host) % FAR_SHARDS)
            flat = groups.get(key)
            if flat is None:
                flat = groups[key] = [0, 0]
            flat += (state.host, state.url, state.due, state.interval, state.last_visit, state.digest,
                     state.etag, state.last_modified, state.visits, state.changes, state.capture, None)
            far = h.far
            if far is None:
                far = h.far = {}
            keys = far.get(b)
            if keys is None:
                keys = far[b] = bytearray()
            keys += _KEY.pack(hash(state.url))
        n = 0
        for (b, shard), flat in sorted(groups.items()):
            flat[0] = self._next_block
            self._next_block += 1
            k = (len(flat) - 2) // _FIELDS
            flat[1] = k
            store.put(_key(b, shard), flat)
            if b not in self._buckets:
                self._buckets[b] = 0
                heapq.heappush(self._bucket_heap, b)
            self._buckets[b] += k
            n += k
        self._far += n
        self._counts[0] += n
        return n

    def _bring_near(self, before: float) -> None:
        """Take every bucket ``now + window`` reached from the store, and tail records it reached.

        They are pushed as of ``before``, the time :meth:`advance` moves from:
        pushed straight to ready, a record rescheduled while its recalled
        twin waited in a pending heap was counted ready twice.
        """
        store = self._store
        assert store is not None
        near = self._near()
        heap = self._bucket_heap
        while heap and heap[0] <= near:
            b = heapq.heappop(heap)
            if self._buckets.pop(b, None) is None:
                continue
            touched: set[str] = set()
            for shard in range(FAR_SHARDS):
                key = _key(b, shard)
                while store.count(key):
                    self._load_block(store.take(key), b, touched, before)
            for host in touched:
                h = self._hosts.get(host)
                if h is not None and h.far:
                    h.far.pop(b, None)
        if self._tail and self._bucket(self._tail_min) <= near:
            keep: list[RevisitState] = []
            low = math.inf
            for state in self._tail:
                h = self._hosts.get(state.host)
                if h is None or h.records.get(state.url) is not state:
                    continue
                if self._bucket(state.due) <= near:
                    self._push(h, state, before)
                else:
                    keep.append(state)
                    low = min(low, state.due)
            self._tail, self._tail_min = keep, low

    def _load_block(self, flat: list[Any], b: int, touched: set[str], before: float) -> None:
        block = flat[0]
        hosts = self._hosts
        n = 0
        for i in range(2, len(flat), _FIELDS):
            host = flat[i]
            h = hosts.get(host)
            if h is None or block < h.since or not h.far or b not in h.far:
                continue   # recalled or exported since it was written
            state = _decode(flat, i)
            h.records[state.url] = state
            self._push(h, state, before)
            touched.add(host)
            n += 1
        self._far -= n
        self._counts[1] += n

    def _recall(self, host: str, h: _Host) -> None:
        """Read ``host``'s far records back into RAM (rule 5); its blocks are dead for it after."""
        store = self._store
        far = h.far
        if store is None or not far:
            return
        shard = hash(host) % FAR_SHARDS
        n = 0
        for b in far:
            block = -1
            got = 0
            it: Iterator[tuple[Any, Any]] = store.iter_host(_key(b, shard))
            for a, c in it:
                if isinstance(c, int) and not isinstance(a, str):   # a block's head: id, count
                    block = a
                    continue
                # a record is 6 pairs: (host, url), (due, interval), (last_visit, digest),
                # (etag, last_modified), (visits, changes), (capture, None)
                rest = [next(it) for _ in range(5)]
                if a != host or block < h.since:
                    continue
                state = RevisitState(url=c, host=a, due=rest[0][0], interval=rest[0][1],
                                     last_visit=rest[1][0], digest=rest[1][1], etag=rest[2][0],
                                     last_modified=rest[2][1], visits=rest[3][0], changes=rest[3][1],
                                     capture=rest[4][0])
                h.records[state.url] = state
                self._push(h, state)
                got += 1
            n += got
            left = self._buckets.get(b, 0) - got
            if left > 0:
                self._buckets[b] = left
            elif b in self._buckets:
                # Every record of the bucket was recalled: its blocks hold none live.
                del self._buckets[b]
                for s in range(FAR_SHARDS):
                    store.drop(_key(b, s))
        h.far = None
        h.since = self._next_block
        self._far -= n
        self._counts[2] += 1
        self._counts[3] += n


def _key(bucket: int, shard: int) -> str:
    return f"{bucket}/{shard}"


def _decode(flat: list[Any], i: int) -> RevisitState:
    return RevisitState(url=flat[i + 1], host=flat[i], due=flat[i + 2], interval=flat[i + 3],
                        last_visit=flat[i + 4], digest=flat[i + 5], etag=flat[i + 6],
                        last_modified=flat[i + 7], visits=flat[i + 8], changes=flat[i + 9],
                        capture=flat[i + 10])
