"""The ring side of one peer: a ``ring.node.RingNode`` under a ``ring.io.driver.RingDriver``.

A composition, no policy: it reads ``[ring]`` and ``[[peer]]`` from the
parsed config, loads the Curve keys, builds the pure node (membership,
forwarding, termination, hand-off: ``ring/node.py``) and the zmq driver
(``ring/io/driver.py``), and gives the crawler the few calls it makes on the
ring. The crawler is seen only as a ``ring.crawlport.CrawlPort``: this
module imports nothing of ``peer.engine.crawler``.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import trio

from peer.core.urls import host_key
from ring.crawlport import CrawlPort
from ring.io.curve import CurveKeys, resolve_keys_dir, unauthenticated_warning
from ring.io.driver import RingDriver
from ring.hashring import HashRing
from ring.membership import Membership
from ring.messages import MemberStatus
from ring.node import ADOPT_PREFIX, HANDOFF_TIMEOUT, MARKER_ROUNDS, RingNode, StatusFigures

if TYPE_CHECKING:
    from peer.core.config import ClusterConfig
    from ring.forwarder import Inbox, Outbox

__all__ = ["ADOPT_PREFIX", "ClusterNode", "HANDOFF_TIMEOUT", "MARKER_ROUNDS"]

log = logging.getLogger("peer.cluster")


class ClusterNode:
    """Gossip membership, forwarding and status for one running peer."""

    def __init__(self, cfg: ClusterConfig, peer_id: str, address: str, weight: float,
                 crawler: CrawlPort) -> None:
        self.cfg = cfg
        self.peer_id = peer_id
        self.address = address
        self.crawler = crawler
        rc = cfg.ring
        # The start time as incarnation and epoch: a restarted peer outranks
        # its old life in gossip, and its batch numbers start a new channel.
        self.incarnation = int(time.time() * 1000)
        # CurveZMQ: with [ring] curve_keys, only the ring's keys get in and
        # traffic is encrypted; a missing or bad key file is a RingError the
        # command line turns into one line.
        keys_dir = resolve_keys_dir(rc.curve_keys, cfg.path)
        self.keys = CurveKeys.load(keys_dir, peer_id) if keys_dir is not None else None
        self.node = RingNode(
            peer_id, address, weight, rc.name,
            seeds=[(p.id, p.address, p.weight) for p in cfg.peers],
            gossip_interval=rc.gossip_interval, suspect_after=rc.suspect_after,
            dead_after=rc.dead_after, tombstone_ttl=rc.tombstone_ttl, seed_grace=rc.seed_grace,
            join_seeds=rc.join_seeds, retransmit_mult=rc.retransmit_mult, now=trio.current_time(),
            incarnation=self.incarnation, vnodes=rc.vnodes, max_pages=cfg.crawl.max_pages,
            curve=self.keys is not None, owner_key=host_key, batch_age=rc.batch_age,
            max_batch_age=rc.max_batch_age, message_budget=rc.message_budget,
            send_window=rc.send_window)
        self.driver = RingDriver(self.node, crawler, address, keys=self.keys,
                                 recv_queue=rc.recv_queue, heartbeat=(rc.suspect_after, rc.dead_after),
                                 logger=log)

    # -- what the crawler reads ----------------------------------------------------

    @property
    def membership(self) -> Membership:
        return self.node.membership

    @property
    def outbox(self) -> Outbox:
        return self.node.outbox

    @property
    def inbox(self) -> Inbox:
        return self.node.inbox

    @property
    def page_cap(self) -> int:
        return self.node.page_cap

    @property
    def hold_timeout(self) -> float:
        return self.node.hold_timeout

    @property
    def handoffs(self) -> list[tuple[int, float]]:
        return self.node.handoffs

    @property
    def dropped(self) -> Any:
        return self.node.dropped

    @property
    def route(self) -> bytes:
        return self.driver.route

    def ring(self) -> HashRing:
        return self.node.ring()

    def forward(self, url: str, depth: int, owner: str, *, relay: bool = False) -> None:
        """Queue a URL for its owner (``relay``: one taken from a batch, ``Outbox.relay``)."""
        self.driver.forward(url, depth, owner, relay=relay)

    def idle(self) -> bool:
        return self.node.idle()

    def done(self) -> bool:
        """True once the whole cluster's crawl is over (counter method)."""
        return self.node.done(self.driver.now())

    def leave(self) -> None:
        """Announce that we leave; the ring without us hands everything over."""
        self.driver.leave()

    def left(self) -> bool:
        """Leaving, and everything handed over and acked: the process may end."""
        return self.node.left(self.crawler.locally_idle())

    def others_pages(self) -> int:
        """Pages the other members had requested, as last gossiped."""
        return self.node.others_pages()

    def status(self) -> tuple[MemberStatus, ...]:
        """This peer's view, as ``ring status`` gets it."""
        figures = StatusFigures.of(self.crawler.status_figures(), time.time() - self.driver.started)
        return self.node.status_reply(0, figures).members

    # -- running -----------------------------------------------------------------

    async def run(self, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        if self.keys is not None:
            log.info("CurveZMQ on: %s keys from %s", len(self.keys.members()), self.keys.directory)
        elif warning := unauthenticated_warning([self.address, *(p.address for p in self.cfg.peers)]):
            # One line, and none for a ring whose every address is loopback.
            log.warning("%s", warning)
        await self.driver.run(task_status=task_status)
