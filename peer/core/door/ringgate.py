"""The ring's say on the crawl's scheduling: the page budget, the end of the crawl, the lease (pure).

A part of ``peer.core.door.peer.PeerCore`` in a ring: it answers what
``CrawlCore.next`` asks of the ring (``peer.core.crawl.decisions.RingView``)
from the ring node, on the ring's clock (``now - stalled``, PeerCore's
docstring), and keeps the lease as last computed, so that the scheduler,
which asks before every start, does not recompute it each time.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ring.membership.lease import LeaseState
from ring.node import RingNode

__all__ = ["RingGate"]

#: The longest a held lease is taken as it is before it is asked again (seconds).
LEASE_SURE = 0.1


class RingGate:
    """``RingView`` of one ring node; ``locally_idle`` and ``stalled`` are the peer core's."""

    def __init__(self, node: RingNode, locally_idle: Callable[[], bool], stalled: Callable[[], float]) -> None:
        self._node = node
        self._locally_idle = locally_idle
        self._stalled = stalled
        #: The crawl's clock at the scheduler's last question (``done`` needs it).
        self.now = 0.0
        # The lease as last computed, and until when it holds for sure (may_start).
        self._lease: LeaseState | None = None
        self._lease_sure = -math.inf
        self._lease_ring = 0

    @property
    def page_cap(self) -> int:
        return self._node.page_cap

    def others_pages(self) -> int:
        return self._node.others_pages()

    def budget_gone(self) -> bool:
        return bool(self._node.budget_gone)

    def idle(self) -> bool:
        return self._node.idle()

    def done(self) -> bool:
        return self._node.done(self.now - self._stalled())

    def left(self) -> bool:
        return self._node.left(self._locally_idle(), self.now - self._stalled())

    def may_start(self, now: float) -> bool:
        """Whether a request may start at ``now`` (the crawl's clock): the ring's lease holds, and
        our settings are confirmed as the ring's (``ring.membership.epochs`` rule 5).

        A held lease is taken as it is until it would run out or the ring
        moves (``LeaseState.until``, at most ``LEASE_SURE``: the scheduler
        asks before every start); a lost one is asked again.
        """
        node = self._node
        ring = node.membership.lease
        fp = ring.ring if ring is not None else 0
        if self._lease is None or now >= self._lease_sure or fp != self._lease_ring:
            self._lease = state = node.lease_state(now)
            self._lease_ring = fp
            self._lease_sure = min(state.until, now + LEASE_SURE) if state.held else -math.inf
        # ring.membership.epochs rule 5: not before our settings are the ring's.
        return self._lease.held and node.settings_confirmed

    def lease_state(self, now: float) -> LeaseState:
        """The ring's lease at ``now`` (the crawl's clock)."""
        return self._node.lease_state(now)
