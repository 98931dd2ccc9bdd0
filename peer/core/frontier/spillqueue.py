"""The spilled part of the hosts' queues: tails, the spill store's blocks, hosts given away.

The frontier (peer/core/frontier/frontier.py) keeps a head of each host's queue in
RAM; with a :class:`SpillStore` attached, the rest goes through a
:class:`SpillQueue` to the store. The rules keep the frontier's numbers:

9. Spill (Mercator's frontier, whose per-host queues are "stored on disk"
   apart from a buffer at each end; BUbiNG's workbench virtualizer): with
   a :class:`SpillStore` attached (:meth:`Frontier.set_spill`), a host keeps at most ``head_per_host``
   URLs of its queue in RAM, the *head*; a push onto a full head, or onto
   a host that has spilled URLs already, goes to its *tail*, and a tail of
   ``head_per_host`` URLs goes to the store as one block (one call a
   block, not a URL: the push path stays as fast as without a store). When
   a pop empties the head it is refilled at once, from the store's first
   block or, with none left, from the tail, so a host with work always has
   a non-empty head and rules 1-8 read only the head; the one exception is
   a host adopted from a recovered store (:meth:`Frontier.adopt`), whose
   head is read at its first start, not at the restart: an empty head with
   ``spilled`` URLs is work too. Order is unchanged:
   head, the store's blocks, tail; a requeue goes in front of the head as
   before. :meth:`Frontier.flush_tails` hands every tail to the store (a
   checkpoint: then the store and the heads hold the whole queue). The store is the only I/O seam: the frontier calls
   it and stays pure (:class:`MemorySpill` for tests, peer/state/spill.py on
   disk).
10. Moving (a host changed owner): :meth:`Frontier.release_host` gives back
   only what is in RAM, the head and the tail, and leaves the host's blocks
   in the store, *moving*; :meth:`Frontier.take_moving` hands them out a few
   blocks at a time for the driver to pass on, so a ring change costs the
   loop the heads, not the queue (passing on 3 M spilled URLs at once stalled
   a peer 72 s, past dead_after: scripts/bench_scale.py). Moving URLs count
   in :attr:`Frontier.moving`, not in ``len()``; a moving host that becomes
   ours again (a push, or :meth:`Frontier.reattach`) takes its blocks back
   as spilled ones, behind its head.

A block is flat, ``[url, depth, url, depth, ...]``: no tuple a URL. A store
keeps each host's blocks in order and never looks inside one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from peer.core.frontier.hoststate import HostState
from peer.errors import PeerError

__all__ = ["MemorySpill", "SpillQueue", "SpillStore"]


class SpillStore(Protocol):
    """Per-host FIFO queues of blocks of (url, depth) behind the in-RAM heads (rule 9)."""

    def put(self, host: str, flat: list[Any]) -> None:
        """Queue a block, flat ``[url, depth, url, depth, ...]``, at the end of ``host``'s queue
        (the store keeps the list)."""

    def take(self, host: str) -> list[Any]:
        """``host``'s first block, flat; only when :meth:`count` is not 0."""

    def drop(self, host: str) -> list[tuple[str, int]]:
        """Remove and return every URL spilled for ``host``, in order."""

    def iter_host(self, host: str) -> Iterator[tuple[str, int]]:
        """``host``'s spilled URLs in order, left in place."""

    def count(self, host: str) -> int:
        """URLs spilled for ``host``."""

    def hosts(self) -> list[str]:
        """Hosts with spilled URLs."""


class MemorySpill:
    """A :class:`SpillStore` in RAM (for the pure tests)."""

    def __init__(self) -> None:
        self._q: dict[str, list[list[Any]]] = {}
        self.takes = 0

    def put(self, host: str, flat: list[Any]) -> None:
        if flat:
            self._q.setdefault(host, []).append(flat)

    def take(self, host: str) -> list[Any]:
        q = self._q[host]
        self.takes += 1
        out = q.pop(0)
        if not q:
            del self._q[host]
        return out

    def drop(self, host: str) -> list[tuple[str, int]]:
        blocks = self._q.pop(host, [])
        return [p for b in blocks for p in zip(b[::2], b[1::2])]

    def iter_host(self, host: str) -> Iterator[tuple[str, int]]:
        for b in self._q.get(host, ()):
            yield from zip(b[::2], b[1::2])

    def count(self, host: str) -> int:
        return sum(len(b) for b in self._q.get(host, ())) // 2

    def hosts(self) -> list[str]:
        return list(self._q)


class SpillQueue:
    """The spilled part of every host's queue (rule 9) and the blocks of hosts given away (rule 10).

    It keeps the tails, the moving hosts and the store, and a host's
    ``spilled``: its URLs here, in the store's blocks and then in its
    ``tail``. The frontier keeps the counts over all hosts (queued URLs,
    spilled URLs, hosts with work): a push onto a spilled host, most pushes
    of a large crawl, appends to the tail and counts without a call here.
    """

    __slots__ = ("store", "head_max", "refills", "tailed", "moving", "moving_urls")

    def __init__(self, store: SpillStore, head_per_host: int) -> None:
        if head_per_host < 1:
            raise PeerError(f"frontier: head_per_host must be at least 1, not {head_per_host}")
        self.store = store
        self.head_max = 2 * head_per_host  # in slots of ``HostState.items``: url, depth
        self.refills = 0  # heads refilled from the store
        self.tailed: dict[str, HostState] = {}  # hosts that may have a tail
        # Hosts given away whose blocks are still in the store (rule 10): URLs left.
        self.moving: dict[str, int] = {}
        self.moving_urls = 0

    # ------------------------------------------------------------ rule 9

    def new_tail(self, hs: HostState) -> list[Any]:
        """A tail for the host, noted for :meth:`flush_tails` (the frontier appends to it)."""
        tail: list[Any] = []
        hs.tail = tail
        self.tailed[hs.name] = hs
        return tail

    def put_tail(self, hs: HostState) -> None:
        """The host's tail is a block's worth: to the store, and a new tail begins."""
        assert hs.tail is not None
        self.store.put(hs.name, hs.tail)
        hs.tail = []

    def refill(self, hs: HostState) -> int:
        """The host's head ran empty: its next URLs into it, the store's first block or its tail.

        Returns how many URLs came back into RAM.
        """
        tail = hs.tail
        if tail and len(tail) == 2 * hs.spilled:
            chunk, hs.tail = tail, []  # no block left: the tail is next
        else:
            chunk = self.store.take(hs.name)
            self.refills += 1
        got = len(chunk) // 2
        if got == 0:
            raise PeerError(f"frontier: the spill store lost {hs.spilled} URLs of {hs.name!r}")
        hs.items[:] = chunk
        hs.head = 0
        hs.spilled -= got
        return got

    def adopt(self, hs: HostState, n: int, head: list[Any] | None = None) -> None:
        """The host's ``n`` URLs in a recovered store become its queue behind ``head`` (flat,
        the list kept): no block is read until the head runs out, or, with no head, until
        the host's first start (rule 9's lazy head), so a restart at millions of queued
        URLs over thousands of hosts reads none of them before its first request."""
        if hs.head < len(hs.items) or hs.spilled:
            raise PeerError(f"frontier: adopt({hs.name!r}) of a host with queued URLs")
        if head:
            hs.items[:] = head
            hs.head = 0
        hs.spilled = n

    def flush_tails(self) -> int:
        """Hand every host's tail to the store as a block; returns how many."""
        n = 0
        for hs in self.tailed.values():
            if hs.tail:
                self.store.put(hs.name, hs.tail)
                n += 1
            hs.tail = None
        self.tailed.clear()
        return n

    def iter_spilled(self, hs: HostState) -> Iterator[tuple[str, int]]:
        """The host's spilled URLs in order (the store's, then its tail's), left in place."""
        yield from self.store.iter_host(hs.name)
        tail = hs.tail or ()
        for i in range(0, len(tail), 2):
            yield tail[i], tail[i + 1]

    def drop(self, hs: HostState) -> list[tuple[str, int]]:
        """Take the host's spilled URLs out, in order."""
        out = self.store.drop(hs.name)
        tail = hs.tail or []
        out += [(tail[i], tail[i + 1]) for i in range(0, len(tail), 2)]
        hs.tail = None
        hs.spilled = 0
        return out

    def forget(self, host: str) -> None:
        """The frontier forgot the host (frontier rule 6)."""
        if self.tailed:
            self.tailed.pop(host, None)

    # ------------------------------------------------------------ rule 10

    def release(self, hs: HostState) -> list[tuple[str, int]]:
        """The host changed owner: its tail's URLs out, its blocks left in the store, moving."""
        tail = hs.tail or []
        out = [(tail[i], tail[i + 1]) for i in range(0, len(tail), 2)]
        hs.tail = None
        stored = hs.spilled - len(tail) // 2
        hs.spilled = 0
        if stored:
            self.moving[hs.name] = self.moving.get(hs.name, 0) + stored
            self.moving_urls += stored
        return out

    def release_stored(self, host: str) -> int:
        """Mark a recovered store's queue of ``host`` (not in the frontier) moving; returns its URLs."""
        if host in self.moving:
            return 0
        n = self.store.count(host)
        if n:
            self.moving[host] = n
            self.moving_urls += n
        return n

    def take_moving(self, limit: int) -> list[tuple[str, list[Any]]]:
        """Blocks of moving hosts, ``(host, [url, depth, ...])``, about ``limit`` URLs in all."""
        out: list[tuple[str, list[Any]]] = []
        got = 0
        while got < limit and self.moving:
            host = next(iter(self.moving))
            chunk = self.store.take(host)
            n = len(chunk) // 2
            left = self.moving[host] - n
            if n == 0 or left <= 0:
                del self.moving[host]
                self.moving_urls -= n + max(left, 0)
            else:
                self.moving[host] = left
                self.moving_urls -= n
            if n:
                out.append((host, chunk))
                got += n
        return out

    def unmove(self, host: str) -> int:
        """The host is ours again: how many of its URLs were moving (no longer counted so)."""
        n = self.moving.pop(host, 0)
        self.moving_urls -= n
        return n

    def reattach(self, hs: HostState, n: int) -> None:
        """``n`` URLs of the host's blocks, moving until now, queue behind its head again."""
        hs.spilled += n
        if hs.tail:
            self.tailed[hs.name] = hs

    def park_tail(self, hs: HostState) -> None:
        """A host with no head: its tail goes behind its blocks in the store (before an adopt)."""
        if hs.tail:
            self.store.put(hs.name, hs.tail)
            hs.tail = None
