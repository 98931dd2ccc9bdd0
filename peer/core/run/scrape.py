"""What one metrics scrape exports, as a frozen copy of a peer's figures (pure).

``peer.engine.metrics`` reads the crawler's figures into a :class:`PeerFigures`
on the trio thread and turns it into Prometheus metric families; the figures
themselves, and the delay quantiles among them, are plain values computed here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["DELAY_QUANTILES", "PeerFigures", "quantiles"]

#: Quantiles of the hosts' delays between request starts that are exported.
DELAY_QUANTILES = (0.5, 0.9, 0.99, 1.0)


@dataclass(frozen=True, slots=True)
class PeerFigures:
    """What one scrape exports: a copy of the crawler's figures at one moment."""

    peer: str
    ring: str
    uptime: float
    # pages, failed, not_requested and drops are ring.vocabulary's families.
    pages: int                      # pages fetched: requests made (what max_pages counts)
    bytes: int
    by_status: Mapping[int, int]
    failed: Mapping[str, int]       # failed requests by kind
    not_requested: Mapping[str, int]  # URLs never requested, by cause
    retries: int
    robots_fetches: int
    items: int
    extract_errors: int
    frontier: int                   # URLs queued
    in_flight: int
    hosts: Mapping[str, int]        # hosts with queued work, by state (HostCensus)
    held: Mapping[str, int]         # hosts held, by reason (robots, retry_after)
    dns: Mapping[str, int]          # DnsStats counters
    dns_hit_ratio: float
    bloom_urls: int
    bloom_fill: float
    bloom_slices: int
    bloom_fpr: float
    bloom_bytes: int
    forwarded_out: int
    forwarded_in: int
    drops: Mapping[str, int]        # refused input, by reason (as `ring status` shows them)
    delay_quantiles: Mapping[float, float] = field(default_factory=dict)
    ceiling_holds: int = 0
    ip_ceiling_holds: int = 0
    # The ring's lease (ring.membership.lease); a ring of one holds its own, 1 of 1.
    lease_held: bool = True
    lease_vouched: int = 1
    lease_needed: int = 1
    lease_quorum: int = 1
    lease_grace_seconds: float = 0.0
    ring_version: int = 0
    # The WARC writer's counters ([warc]; peer/engine/archive.py): {} when off.
    warc: Mapping[str, int] = field(default_factory=dict)
    seeds_file: Mapping[str, int] = field(default_factory=dict)  # lines by outcome (peer/core/crawl/seedfeed.py)
    seed_add: Mapping[str, int] = field(default_factory=dict)  # ring seed add's lines by outcome (seedadd.py)
    # ring seed add's batches answered without being taken, by why (seed_add_batch.*: ring/seedadds.py),
    # and the hits of its caps by config key (cap.seed_add_waiting, cap.seed_add_answers).
    seed_add_untaken: Mapping[str, int] = field(default_factory=dict)
    seed_add_caps: Mapping[str, int] = field(default_factory=dict)
    # A continuous crawl's schedule (peer/core/revisit/recrawl.py); empty / None when [revisit] is off.
    revisits_due: int = 0
    revisits_scheduled: int = 0
    revisit_visits: Mapping[str, int] = field(default_factory=dict)   # revisits by what they found
    revisit_freshness: float | None = None


def quantiles(values: list[float], qs: tuple[float, ...] = DELAY_QUANTILES) -> dict[float, float]:
    """Nearest-rank quantiles of ``values`` (empty: none)."""
    if not values:
        return {}
    xs = sorted(values)
    n = len(xs)
    return {q: xs[min(n, max(1, math.ceil(q * n))) - 1] for q in qs}
