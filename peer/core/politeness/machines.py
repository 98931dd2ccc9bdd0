"""Per machine: the peers of one machine are one client to a site.

A site that limits each client address (a rate limiter, nginx's
``limit_conn``) sees a machine, not its peers: every worker of a
``[[peer]] workers = N`` entry connects from the machine's address. The rules
(docs/politeness.md, Per machine):

1. Rate. ``politeness.ip_rate`` is a budget of the whole ring, and each peer
   paces an IP at its ring share of it (peer/core/frontier/ipbudget.py rule 8,
   peer/core/handoff/moves.py). A machine's workers together pace it at the
   sum of their shares (:func:`machine_shares`): what one peer with the
   machine's whole weight would, and at most ``ip_rate`` however the ring is
   spread over machines. Nothing is added per machine: the ring-wide budget
   already bounds every machine.
2. Concurrency. A peer keeps at least one fetch in flight per IP whatever
   its share (``max(1, floor(ip_concurrency x share))``): a peer that owns a
   host must be able to fetch it. So the workers of a machine may together
   hold more fetches to one IP than one peer of the machine's weight would,
   when ``ip_concurrency x`` a worker's share is below 1. Workers in separate
   processes cannot share one slot without talking to each other, so this is
   not capped: :func:`crowded` names each such machine, and the start and
   ``--check`` warn of it with the ``ip_concurrency`` that avoids it.
3. Bursts. Each peer's 1 s and 5 s ceilings round up by one start, so N
   workers may put up to N - 1 more starts in a window than one peer of their
   weight (the same bound as N peers on N machines, docs/politeness.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Crowded", "crowded", "machine_shares"]


def machine_shares(shares: Mapping[str, float], machine_of: Mapping[str, str]) -> dict[str, float]:
    """Machine -> the sum of its peers' ring shares (a peer not in ``machine_of`` is its own machine)."""
    out: dict[str, float] = {}
    for peer, share in shares.items():
        m = machine_of.get(peer, peer)
        out[m] = out.get(m, 0.0) + share
    return out


@dataclass(frozen=True, slots=True)
class Crowded:
    """A machine whose workers may hold more fetches to one IP than its share of ``ip_concurrency``."""

    machine: str
    workers: int
    in_flight: int       # the most its workers may hold to one IP together
    share_cap: int       # what one peer of the machine's share would hold: max(1, floor(C x share))
    enough: int          # the least ip_concurrency that gives each worker a slot of its own


def crowded(ip_concurrency: int, shares: Mapping[str, float], machine_of: Mapping[str, str]) -> list[Crowded]:
    """Machines of several peers whose per-IP fetches in flight exceed one peer's of their weight (rule 2)."""
    if ip_concurrency <= 0:
        return []
    by_machine: dict[str, list[float]] = {}
    for peer, share in shares.items():
        by_machine.setdefault(machine_of.get(peer, peer), []).append(share)
    out = []
    for m, parts in sorted(by_machine.items()):
        if len(parts) < 2:
            continue
        held = sum(_cap(ip_concurrency, s) for s in parts)
        mine = _cap(ip_concurrency, sum(parts))
        if held > mine:
            # Each worker's floor(C x s) >= 1 needs C >= 1/s for its smallest share.
            out.append(Crowded(m, len(parts), held, mine, math.ceil(1 / min(parts) - 1e-9)))
    return out


def _cap(c: int, share: float) -> int:
    # peer/core/frontier/ipbudget.py configure(): the cap of one peer.
    return max(1, math.floor(c * share + 1e-9))
