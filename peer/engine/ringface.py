"""The crawl engine's face to the ring: the sockets serve ``PeerCore``, and the effects that need them (edge).

A part of ``peer.engine.crawler.Crawler`` that owns the ring's sockets. In a
ring, it is the ``ring.io.sockets.Member`` its ``MemberSockets`` serve: a
frame received, a gossip round, the Outbox's frames due each become an event
of ``peer.core.door.peer.PeerCore``, and the effects it returns go through the
engine's one table, of which this part does ``Send``, ``Reply``,
``StatusAsked``, ``Log`` and the hand-off's ``ReadHosts`` and
``ReadFetched``. The crawl and the ring meet inside the core, never here.

It also passes on the spilled queues of hosts that changed owner, a chunk
at a time as the core allows (``PeerCore.move_spilled``, its rule 6).

:func:`curve_keys` reads a peer's Curve keys (``[ring] curve_keys``): the
one file the ring node's building needs that the core cannot read.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable

import trio

from peer.core.config.cluster import ClusterConfig
from peer.core.door.peer import PeerCore, PeerEffect, ReadFetched, ReadHosts
from peer.results.store import ResultStore
from ring.actions import Log, Reply, Send, StatusAsked
from ring.io.curve import CurveKeys, resolve_keys_dir, unauthenticated_warning
from ring.io.sockets import MemberSockets
from ring.messages import Message
from ring.status import StatusFigures

__all__ = ["RingFace", "curve_keys"]

#: The peer's ring lines ("ring: ...", "hand-off: ...", Curve) go under this
#: name: operators and scripts/bench_*.py read them there.
log = logging.getLogger("peer.cluster")

#: How long the move waits for the Outbox's backlog to drain before it asks again.
MOVE_WAIT = 0.05


def curve_keys(cfg: ClusterConfig, peer_id: str) -> CurveKeys | None:
    """``peer_id``'s Curve keys from ``[ring] curve_keys`` (None: the ring is not authenticated).

    A missing or bad key file is a RingError the command line turns into one line.
    """
    keys_dir = resolve_keys_dir(cfg.ring.curve_keys, cfg.path)
    return CurveKeys.load(keys_dir, peer_id) if keys_dir is not None else None


class RingFace:
    """The ring's side of ``Crawler`` (module docstring); idle until :meth:`open` (alone: never)."""

    def __init__(self, cfg: ClusterConfig, peer: PeerCore, clock: Callable[[], float], *,
                 carry: Callable[[Iterable[PeerEffect]], None],
                 carry_async: Callable[[Iterable[PeerEffect]], Awaitable[None]],
                 status: Callable[[], StatusFigures], turn: trio.Lock) -> None:
        self._cfg = cfg
        self._peer = peer
        self._clock = clock
        self._carry = carry
        self._carry_async = carry_async
        self._status = status
        self._turn = turn
        self.sockets: MemberSockets | None = None
        self._store: ResultStore | None = None
        self._services: trio.Nursery | None = None
        self._move_kick = trio.Event()

    def open(self, peer_id: str, address: str, keys: CurveKeys | None, store: ResultStore,
             services: trio.Nursery, *, bind: str = "") -> MemberSockets:
        """The sockets serving this part, reached at ``address``, listening at ``bind`` (default: ``address``).

        Logs whether the ring is authenticated, and where it listens when that is not its address.
        """
        rc = self._cfg.ring
        if keys is not None:
            log.info("CurveZMQ on: %s keys from %s", len(keys.members()), keys.directory)
        elif warning := unauthenticated_warning([address, bind or address, *(p.address for p in self._cfg.peers)]):
            # One line, and none for a ring whose every address is loopback.
            log.warning("%s", warning)
        self._store = store
        self._services = services
        if bind and bind != address:
            log.info("ring: listening at %s, reached at %s", bind, address)
        self.sockets = MemberSockets(self, peer_id, address, bind=bind, keys=keys, recv_queue=rc.recv_queue,
                                     heartbeat=(rc.suspect_after, rc.dead_after), logger=log)
        return self.sockets

    # -- ring.io.sockets.Member ---------------------------------------------------------

    @property
    def gossip_interval(self) -> float:
        return self._cfg.ring.gossip_interval

    async def received(self, route: bytes, msg: Message, user_id: str | None) -> None:
        effects = self._peer.receive(route, msg, self._clock(), wall=time.time(), user_id=user_id)
        await self._carry_async(effects)

    def ticked(self) -> None:
        assert self.sockets is not None
        self._peer.stalled = self.sockets.stalled
        self._carry(self._peer.tick(self._clock()))

    def flushed(self) -> None:
        self._carry(self._peer.flush(self._clock()))

    def next_flush_at(self) -> float | None:
        return self._peer.next_flush_at()

    def address_of(self, member: str) -> str | None:
        return self._peer.address_of(member)

    def count(self, reason: str) -> None:
        self._peer.count(reason)

    # -- the ring's effects --------------------------------------------------------------

    def wake(self) -> None:
        """URLs went into the Outbox: the sender looks now, not at its next timer."""
        if self.sockets is not None:
            self.sockets.wake()

    def send(self, e: Send) -> None:
        assert self.sockets is not None
        self.sockets.send(e.dest, e.msg)

    def reply(self, e: Reply) -> Awaitable[None]:
        assert self.sockets is not None
        return self.sockets.reply(e.route, e.msg)

    def status(self, e: StatusAsked) -> Awaitable[None]:
        assert self.sockets is not None
        figures = StatusFigures.of(self._status(), self.sockets.uptime())
        return self.sockets.reply(e.route, self._peer.status_reply(e.nonce, figures, now=self._clock(),
                                                                   wall=time.time()))

    def log_line(self, e: Log) -> None:
        log.log(e.level, "%s", e.text, extra=e.extra())

    def read_hosts(self, e: ReadHosts) -> None:
        hosts = self._store.hosts() if self._store is not None else []
        self._carry(self._peer.hosts_read(e.request, hosts, self._clock()))

    def read_fetched(self, e: ReadFetched) -> None:
        assert self._services is not None
        self._services.start_soon(self._read_fetched, e)

    async def _read_fetched(self, e: ReadFetched) -> None:
        """The moved hosts' rows from the store's host index (``peer.core.door.peer`` rule 3)."""
        rows = await self._store.page_urls(list(e.hosts)) if self._store is not None else []
        self._carry(self._peer.fetched_read(e.request, rows, self._clock(), wall=time.time()))
        self.wake()  # the seen URLs queued for their new owners

    # -- the spilled queues of hosts that moved ------------------------------------------

    def kick_moves(self) -> None:
        """Spilled queues of hosts that changed owner may wait."""
        self._move_kick.set()

    async def move_spilled(self) -> None:
        """Pass on the spilled queues of hosts that changed owner, a chunk a turn (``PeerCore`` rule 6)."""
        peer = self._peer
        while True:
            if not peer.moving():
                self._move_kick = trio.Event()
                await self._move_kick.wait()
                continue
            async with self._turn:
                effects = peer.move_spilled(self._clock())
                if effects is not None:
                    self._carry(effects)
            if effects is None:  # the Outbox's backlog is full: wait for acks
                await trio.sleep(MOVE_WAIT)
