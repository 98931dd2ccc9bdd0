"""The spill store's seam: where a host's queue beyond its in-RAM head is kept (frontier rule 9).

The frontier (peer/core/frontier.py) keeps a head of each host's queue in
RAM and hands the rest, a block of ``head_per_host`` URLs at a time, to a
:class:`SpillStore`. This module is the seam and its in-RAM double; the
store on disk is peer/state/spill.py.

Rules:

- A block is one call, not a URL's: ``[url, depth, url, depth, ...]``, flat,
  so that a push onto a spilled host costs a list append, and the store is
  called once every ``head_per_host`` pushes.
- A store keeps each host's blocks in order, FIFO, and never looks inside
  one: the frontier decides what a block holds and when it is read back.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

__all__ = ["MemorySpill", "SpillStore"]


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
