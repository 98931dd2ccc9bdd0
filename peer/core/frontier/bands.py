"""A host's URLs in RAM, band by band (frontier rule 11): the operations on its record.

The frontier (peer/core/frontier/frontier.py) keeps the band it serves in
the host's ``items`` (read from ``head`` on) and the higher bands in
``more``, a dict of flat ``[url, slot, ...]`` lists made only when a host
has two bands in RAM, so that a host of one band costs what it did before
bands (peer/core/frontier/hoststate.py); ``nmore`` counts their slots.
These functions keep that shape: every band in ``more`` is above
``band``, none is empty, and ``more`` is None when it would be empty. The
band a URL is in comes from its slot (peer/core/frontier/order.py).

Push's common case (the URL's band is the one served) and pop are the
frontier's own, inline: these are the rarer steps, a call away.
"""

from __future__ import annotations

from typing import Any

from peer.core.frontier.hoststate import HostState
from peer.core.frontier.order import split

__all__ = ["clear", "insert", "promote", "ram", "ram_slots", "reband", "top"]


def ram_slots(hs: HostState) -> int:
    """Slots (two a URL) of the host's queue in RAM."""
    return len(hs.items) - hs.head + hs.nmore


def top(hs: HostState) -> int:
    """The highest band the host holds in RAM."""
    return max(hs.more) if hs.more else hs.band


def insert(hs: HostState, url: str, slot: int, b: int) -> None:
    """Queue a URL of band ``b`` in RAM, ``b`` not the band served (``hs.band``) or RAM empty."""
    items = hs.items
    if hs.head == len(items):
        items.append(url)
        items.append(slot)
        hs.band = b
        return
    more = hs.more
    if more is None:
        more = hs.more = {}
    if b > hs.band:
        q = more.get(b)
        if q is None:
            more[b] = [url, slot]
        else:
            q.append(url)
            q.append(slot)
        hs.nmore += 2
        return
    # A lower band than the one served: it is served first, and the band
    # served until now waits in ``more``.
    rest = items[hs.head:]
    more[hs.band] = rest
    hs.nmore += len(rest)
    hs.items = [url, slot]
    hs.head = 0
    hs.band = b


def promote(hs: HostState) -> None:
    """The band served ran out: the next one is served (``more`` not empty)."""
    m = hs.more
    assert m
    b = min(m)
    hs.items = m.pop(b)
    hs.nmore -= len(hs.items)
    hs.head = 0
    hs.band = b
    if not m:
        hs.more = None


def reband(hs: HostState, fifo: bool) -> None:
    """``items``, RAM's only list (a refill, an adopted head), split into its bands."""
    if fifo:
        hs.band = 0
        return
    hs.band, hs.items, hs.more, hs.nmore = split(hs.items, False)


def ram(hs: HostState) -> list[Any]:
    """A copy of the host's URLs in RAM, flat ``[url, slot, ...]``, its bands in order."""
    flat = hs.items[hs.head:]
    if hs.more:
        for b in sorted(hs.more):
            flat += hs.more[b]
    return flat


def clear(hs: HostState) -> None:
    """The host's URLs in RAM gone (a host handed away)."""
    hs.items.clear()
    hs.head = 0
    hs.more = None
    hs.nmore = 0
