"""The ring's say on the crawl's scheduling: the page budget, the end of the crawl, the lease (pure).

A part of ``peer.core.door.peer.PeerCore`` in a ring: it answers what
``CrawlCore.next`` and ``CrawlCore.admit`` ask of the ring
(``peer.core.crawl.decisions.RingView``) from the ring node, on the ring's
clock (``now - stalled``, PeerCore's docstring), and keeps the lease's host
gate (``ring.membership.hostgate``) as last computed, so that the scheduler,
which asks before every start, does not recompute it each time.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ring.membership.hostgate import CLOSED, HostGate
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
        # The host gate as last computed, and until when it holds for sure (may_start).
        self._gate: HostGate = CLOSED
        self._gate_sure = -math.inf
        self._gate_ring = 0

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

    def _host_gate(self, now: float) -> HostGate:
        """The host gate at ``now``, taken as it is until its evidence would run out or the
        ring moves (``HostGate.until``, at most ``LEASE_SURE``: the scheduler asks before
        every start); a closed one is asked again."""
        node = self._node
        lease = node.membership.lease
        fp = lease.ring if lease is not None else 0
        if now >= self._gate_sure or fp != self._gate_ring:
            self._gate = gate = node.host_gate(now)
            self._gate_ring = fp
            self._gate_sure = min(gate.until, now + LEASE_SURE) if gate.open else -math.inf
        return self._gate

    def may_start(self, now: float) -> bool:
        """Whether a request may start at ``now`` (the crawl's clock): a majority vouches for
        rings we can read, so the hosts they agree on may go (:meth:`may_fetch` says which),
        and our settings are confirmed as the ring's (``ring.membership.epochs`` rule 5)."""
        return self._host_gate(now).open and self._node.settings_confirmed

    def may_fetch(self, host: str, now: float) -> bool:
        """Whether a request to ``host`` may start at ``now``: its lease holds (every ring a
        counted vouch lists gives it to us; a host that moved waits out the grace)."""
        return self._host_gate(now).may(host)

    def lease_state(self, now: float) -> LeaseState:
        """The ring's lease at ``now`` (the crawl's clock)."""
        return self._node.lease_state(now)
