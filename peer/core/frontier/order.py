"""A host's queue served by priority: bands, and the slot that carries a URL's priority.

The frontier serves each host's queue band by band, the lowest band first,
each band first in, first out (frontier rule 11). A URL's band is its depth,
breadth-first as Scrapy's ``DEPTH_PRIORITY`` and Nutch's depth scoring order
a crawl (Najork and Wiener, "Breadth-first crawling yields high-quality
pages", WWW 2001: the pages found early by a breadth-first crawl are the
ones with the most links to them), moved up or down by a *boost*: a sitemap's
``<priority>`` (sitemaps.org: "the priority of this URL relative to other URLs
on your site", 0.5 by default) and the ``[frontier] priority`` rules. So a
URL of boost +1 is served as if it were one level shallower.

Rules:

1. ``band = clamp(min(depth, DEPTH_BANDS - 1) + MAX_BOOST - boost, 0, BANDS - 1)``:
   depths 0 to 11 have a band each, deeper ones share the last; a boost is
   at most :data:`MAX_BOOST` either way, so a boost never hides a URL
   behind every deeper one.
2. A sitemap's priority ``p`` (0.0-1.0) is the boost ``round((p - 0.5) * 4)``:
   the default 0.5 is 0, 1.0 is +2, 0.0 is -2. Sitemap URLs are found at
   depth 0 (peer/core/sitemaps/jobs.py), so among a sitemap's URLs the
   priority alone orders them, and a 0.0 comes with the links two levels down.
3. The *slot* is the int stored after the URL in a queue's flat list
   ``[url, slot, ...]``, in RAM, in the spill store's blocks and in a
   snapshot's heads, so a URL's band survives a spill and a restart with no
   field added anywhere: a URL with no boost has ``slot == depth`` (what
   the flat lists always held, and a small int CPython keeps once), a
   boosted one ``depth + (boost + 8) << 20``. :func:`depth_of` reads the
   depth back wherever a slot leaves the frontier (a :class:`Job`, a hand-off).
   A recovered queue (a snapshot's heads, a restart's re-queued list) may hold
   slots where it says depth: pushed again they keep their band, and a URL
   passed on to another peer leaves with :func:`depth_of` (``CrawlCore._pass_on``).
4. With ``order = "fifo"`` every URL is in band 0: one FIFO a host, as
   before this module.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BANDS", "DEPTH_BANDS", "MAX_BOOST", "band_of", "boost_of", "depth_of", "make_slot",
    "sitemap_boost", "split",
]

#: Bands a host's queue has (rule 1).
BANDS = 16
#: Depths with a band of their own; deeper URLs share the last.
DEPTH_BANDS = 12
#: The largest boost either way (rule 1).
MAX_BOOST = 4
_SHIFT = 20
_BOOSTED = 1 << _SHIFT  # slots from here on carry a boost (rule 3)
_DEPTH_MASK = _BOOSTED - 1
_BIAS = 8
_NEAR = tuple(d + MAX_BOOST for d in range(DEPTH_BANDS))  # the band of a slot below DEPTH_BANDS


def clamp_boost(boost: int) -> int:
    """``boost`` within ``[-MAX_BOOST, MAX_BOOST]``."""
    return -MAX_BOOST if boost < -MAX_BOOST else MAX_BOOST if boost > MAX_BOOST else boost


def make_slot(depth: int, boost: int) -> int:
    """The int stored after a URL (rule 3); ``depth`` may be a slot already (a recovered
    queue's), whose boost ``boost`` adds to."""
    if depth >= _BOOSTED:
        depth, boost = depth & _DEPTH_MASK, boost + (depth >> _SHIFT) - _BIAS
    boost = clamp_boost(boost)
    if boost == 0:
        return depth
    return min(depth, _DEPTH_MASK) + ((boost + _BIAS) << _SHIFT)


def depth_of(slot: int) -> int:
    """The URL's depth from its slot (rule 3)."""
    return slot if slot < _BOOSTED else slot & _DEPTH_MASK


def boost_of(slot: int) -> int:
    """The URL's boost from its slot (rule 3)."""
    return 0 if slot < _BOOSTED else (slot >> _SHIFT) - _BIAS


def band_of(slot: int) -> int:
    """The URL's band (rule 1)."""
    if slot < DEPTH_BANDS:
        return slot + MAX_BOOST
    if slot < _BOOSTED:
        return DEPTH_BANDS - 1 + MAX_BOOST
    b = min(slot & _DEPTH_MASK, DEPTH_BANDS - 1) + MAX_BOOST - ((slot >> _SHIFT) - _BIAS)
    return 0 if b < 0 else BANDS - 1 if b >= BANDS else b


def sitemap_boost(priority: float | None) -> int:
    """A sitemap ``<priority>``'s boost (rule 2); 0 without one."""
    if priority is None:
        return 0
    return clamp_boost(round((priority - 0.5) * 4))


def split(flat: list[Any], fifo: bool) -> tuple[int, list[Any], dict[int, list[Any]] | None, int]:
    """A flat ``[url, slot, ...]`` in queue order as bands: (lowest band, its flat list,
    the other bands' flat lists or None, slots in those).

    Each band keeps the order its URLs had in ``flat``.
    """
    if fifo or not flat:
        return 0, flat, None, 0
    n = len(flat)
    s = flat[1]
    low = _NEAR[s] if s < DEPTH_BANDS else band_of(s)
    for i in range(3, n, 2):  # a block of one band, the usual case, is kept as it is
        s = flat[i]
        if (_NEAR[s] if s < DEPTH_BANDS else band_of(s)) != low:
            break
    else:
        return low, flat, None, 0
    bands: dict[int, list[Any]] = {}
    for i in range(0, n, 2):
        s = flat[i + 1]
        b = _NEAR[s] if s < DEPTH_BANDS else band_of(s)
        q = bands.get(b)
        if q is None:
            bands[b] = [flat[i], s]
        else:
            q.append(flat[i])
            q.append(s)
    low = min(bands)
    items = bands.pop(low)
    return low, items, bands, sum(len(q) for q in bands.values())
