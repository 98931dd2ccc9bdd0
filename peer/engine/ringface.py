"""The crawl engine's face to the ring: the sockets serve ``PeerCore``, and the effects that need them (edge).

A part of ``peer.engine.crawler.Crawler``. In a ring, the engine is the
``ring.io.sockets.Member`` its ``MemberSockets`` serve: a frame received,
a gossip round, the Outbox's frames due each become an event of
``peer.core.peer.PeerCore``, and the effects it returns go through the
engine's one table (``Send``, ``Reply``, ``StatusAsked``, ``Commit``,
``Granted``, the hand-off's ``ReadHosts`` and ``ReadFetched`` are carried
out here). The
crawl and the ring meet inside the core, never here.

:func:`ring_node` builds a peer's ``RingNode`` from cluster.toml (the
``[ring]`` table, the Curve keys); the spilled queues of hosts that changed
owner are passed on here too, paced by the Outbox (frontier rule 10).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import trio

from peer.core.config.cluster import ClusterConfig
from peer.engine.parts import CrawlerParts
from peer.core.crawl.core import Origin
from peer.core.peer import Commit, PeerCore, PeerEffect, ReadFetched, ReadHosts
from peer.core.urls.normalize import host_key
from ring.actions import Granted, Log, Reply, Send, StatusAsked
from ring.budget import Grants, grants_to_counters
from ring.io.curve import CurveKeys, resolve_keys_dir, unauthenticated_warning
from ring.io.sockets import MemberSockets
from ring.messages import Message
from ring.node import RingNode
from ring.status import StatusFigures

__all__ = ["MOVE_BACKLOG", "MOVE_CHUNK", "RingFace", "ring_node"]

#: The peer's ring lines ("ring: ...", "hand-off: ...", Curve) go under this
#: name: operators and scripts/bench_*.py read them there.
log = logging.getLogger("peer.cluster")

#: Spilled URLs of hosts that changed owner passed on in one turn of the
#: loop (frontier rule 10; ~30 us a URL: a 15 ms step), and how many may wait
#: in the Outbox for their acks before more are read.
MOVE_CHUNK = 500
MOVE_BACKLOG = 20_000


def ring_node(cfg: ClusterConfig, peer_id: str, address: str, weight: float,
              now: float, resumed: bool = False,
              grants: Grants = ()) -> tuple[RingNode, CurveKeys | None]:
    """This peer's ring node, from ``[ring]`` and ``[[peer]]``, and its Curve keys (None: off).

    The start time is the incarnation and the epoch: a restarted peer
    outranks its old life in gossip, and its batch numbers start a new
    channel. ``resumed``: the peer goes on with a crawl on disk, so its
    former life may have vouched for another ring a moment ago (``ring.lease``
    rule 2); ``grants``: the max_pages budget it gave (``ring.budget``), from
    its disk. With ``[ring] curve_keys`` only the ring's keys get in; a
    missing or bad key file is a RingError the command line turns into one line.
    """
    rc = cfg.ring
    keys_dir = resolve_keys_dir(rc.curve_keys, cfg.path)
    keys = CurveKeys.load(keys_dir, peer_id) if keys_dir is not None else None
    node = RingNode(
        peer_id, address, weight, rc.name,
        seeds=[(p.id, p.address, p.weight) for p in cfg.peers],
        gossip_interval=rc.gossip_interval, suspect_after=rc.suspect_after,
        dead_after=rc.dead_after, tombstone_ttl=rc.tombstone_ttl, seed_grace=rc.seed_grace,
        join_seeds=rc.join_seeds, retransmit_mult=rc.retransmit_mult, now=now,
        incarnation=int(time.time() * 1000), vnodes=rc.vnodes, max_pages=cfg.crawl.max_pages,
        curve=keys is not None, owner_key=host_key, batch_age=rc.batch_age,
        max_batch_age=rc.max_batch_age, message_budget=rc.message_budget,
        send_window=rc.send_window, lease=rc.lease or rc.dead_after / 2, resumed=resumed,
        takeover_after=rc.takeover_after, grants=grants)
    return node, keys


def ring_sockets(member: Any, cfg: ClusterConfig, node: RingNode, address: str,
                 keys: CurveKeys | None) -> MemberSockets:
    """The sockets of ``node`` serving ``member``; logs whether the ring is authenticated."""
    rc = cfg.ring
    if keys is not None:
        log.info("CurveZMQ on: %s keys from %s", len(keys.members()), keys.directory)
    elif warning := unauthenticated_warning([address, *(p.address for p in cfg.peers)]):
        # One line, and none for a ring whose every address is loopback.
        log.warning("%s", warning)
    return MemberSockets(member, node.peer_id, address, keys=keys, recv_queue=rc.recv_queue,
                         heartbeat=(rc.suspect_after, rc.dead_after), logger=log)


class RingFace(CrawlerParts):
    """The ring's side of ``Crawler`` (module docstring)."""

    peer: PeerCore
    node: RingNode | None
    sockets: MemberSockets | None
    _move_kick: trio.Event
    _services: trio.Nursery | None
    _effects: dict[type, Callable[[Any], Awaitable[None] | None]]

    def stop(self) -> None:
        raise NotImplementedError

    # Reporting's, after this part in Crawler's bases: an annotation, not a stub that would shadow it.
    status_figures: Callable[[], StatusFigures]

    # -- ring.io.sockets.Member ---------------------------------------------------------

    @property
    def gossip_interval(self) -> float:
        return self.cfg.ring.gossip_interval

    async def received(self, route: bytes, msg: Message, user_id: str | None) -> None:
        effects = self.peer.receive(route, msg, self.clock(), wall=time.time(), user_id=user_id)
        await self._apply_async(effects)

    def ticked(self) -> None:
        assert self.sockets is not None
        self.peer.stalled = self.sockets.stalled
        self._apply(self.peer.tick(self.clock()))

    def flushed(self) -> None:
        self._apply(self.peer.flush(self.clock()))

    def next_flush_at(self) -> float | None:
        assert self.node is not None
        when = self.node.outbox.next_due_at()
        # The Outbox's times are the ring's clock; MemberSockets adds ``stalled`` back.
        return when

    def address_of(self, member: str) -> str | None:
        assert self.node is not None
        rec = self.node.membership.members().get(member)
        return rec.address if rec is not None else None

    def count(self, reason: str) -> None:
        if self.node is not None:
            self.node.count(reason)

    async def _apply_async(self, effects: Iterable[PeerEffect]) -> None:
        """``_apply`` for a received frame's effects: a ``Reply`` is awaited in its place."""
        handlers = self._effects
        batch: list[PeerEffect] = []
        for effect in effects:
            batch.append(effect)
            if isinstance(effect, Reply | StatusAsked):
                self._apply(batch[:-1])
                batch = []
                got = handlers[type(effect)](effect)
                if got is not None:
                    await got
        self._apply(batch)

    # -- the ring's effects --------------------------------------------------------------

    def _do_send(self, e: Send) -> None:
        assert self.sockets is not None
        self.sockets.send(e.dest, e.msg)

    def _do_reply(self, e: Reply) -> Awaitable[None]:
        assert self.sockets is not None
        return self.sockets.reply(e.route, e.msg)

    def _do_status(self, e: StatusAsked) -> Awaitable[None]:
        assert self.sockets is not None
        figures = StatusFigures.of(self.status_figures(), self.sockets.uptime())
        return self.sockets.reply(e.route, self.peer.status_reply(e.nonce, figures))

    def _do_log(self, e: Log) -> None:
        log.log(e.level, "%s", e.text)

    def _do_granted(self, e: Granted) -> None:
        """Our max_pages grants grew: journaled here, made durable by the ``Commit`` after it."""
        if self._state is not None:
            self._state.counters(grants_to_counters(e.grants))

    def _do_commit(self, e: Commit) -> None:
        """What was taken is on disk before it is acked (peer/state/journal.py)."""
        self.commit_state()

    def _do_read_hosts(self, e: ReadHosts) -> None:
        hosts = self._store.hosts() if self._store is not None else []
        self._apply(self.peer.hosts_read(e.request, hosts, self.clock()))

    def _do_read_fetched(self, e: ReadFetched) -> None:
        assert self._services is not None
        self._services.start_soon(self._read_fetched, e)

    async def _read_fetched(self, e: ReadFetched) -> None:
        """The moved hosts' rows from the store's host index (peer.core.peer rule 3)."""
        rows = await self._store.page_urls(list(e.hosts)) if self._store is not None else []
        self._apply(self.peer.fetched_read(e.request, rows, self.clock(), wall=time.time()))
        if self.sockets is not None:
            self.sockets.wake()  # the seen URLs queued for their new owners

    # -- what the engine and its tests call ----------------------------------------------

    def accept(self, url: str, depth: int) -> None:
        """A URL forwarded to us: route, dedupe, queue."""
        self._did(self.core.discover(url, depth, self.clock(), Origin.RELAY))

    def commit_state(self) -> None:
        """Make what was taken so far survive a kill -9 (before an ack goes out)."""
        if self._state is not None:
            self._state.commit()

    def leave(self) -> None:
        """Leave the ring gracefully: hand everything over, then stop (alone: just stop)."""
        if self.node is None:
            self.stop()
            return
        self._apply(self.peer.leave(self.clock()))

    def locally_idle(self) -> bool:
        return self.core.locally_idle()

    async def _move_spilled(self) -> None:
        """Pass on the spilled queues of hosts that changed owner, MOVE_CHUNK URLs a turn (frontier rule 10).

        Paced by the Outbox: while MOVE_BACKLOG URLs wait for their owners'
        acks, no more are taken off the disk, so the move costs RAM of a
        backlog, not of the queues.
        """
        fr = self.core.frontier
        while True:
            if not fr.moving or self.node is None:
                self._move_kick = trio.Event()
                await self._move_kick.wait()
                continue
            st = self.node.outbox.stats()
            if st.pending + st.unacked * MOVE_CHUNK > MOVE_BACKLOG:
                await trio.sleep(0.05)
                continue
            async with self._turn:
                self._did(self.core.pass_on_moving(self.clock(), MOVE_CHUNK))
                if self._state is not None:
                    self._state.commit()
