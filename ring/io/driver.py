"""The ring's zmq driver: carries out what ``ring.node.RingNode`` decides (edge).

A thin loop in the shape of trio-websocket's reader task: receive, decode,
hand the message to the node, and run the actions it returns through one
``{action type: handler}`` table. It holds no policy: every check and
counter is the node's; what is left here is what only I/O can find out.

- One ROUTER socket bound at this peer's address receives everything:
  gossip, joins, URL batches, acks, status and leave requests (answered on
  the same socket, to the asker's route).
- One DEALER per remote member sends to it, owned by a single sender task
  fed by a bounded channel (``SEND_QUEUE``; one socket, one owning task, as
  the trzmq README asks). Every send is bounded in time (``SEND_TIMEOUT``)
  and may be dropped: gossip is repeated every round and URL batches are
  resent until acked (``Outbox``), so a dead or slow peer never blocks the
  others. Our DEALERs connect with ``member_route(id, nonce)``, a fresh
  nonce each driver, which the node checks against every member message.
- No byte from the network ends the peer. A frame that does not decode is
  counted by its ``DecodeError.kind``; a send that cannot go is counted,
  never raised: a reply to a client that has gone (``unreachable``), no room
  in time (``send_timeout``, ``reply_timeout``), a message the codec cannot
  carry (``encode_error``), a gossiped address zmq refuses (``bad_address``),
  a member whose Curve key is not deployed here (``no_curve_key``), a full
  send queue (``send_queue_full``).

:class:`ForwardLink` is the same sending half for a *non-member*
(``scripts/adopt.py``, tests, benchmarks): batches go over one DEALER per
destination on an anonymous route, and the owner acks them on that
connection. A member's acks come back over the owner's own DEALER instead.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import trio

from ring.crawlport import CrawlPort
from ring.io.curve import CurveKeys
from ring.errors import RingError
from ring.messages import Ack, DecodeError, EncodeError, Message, Packet, UrlBatch, decode, encode
from ring.node import (
    Action,
    Count,
    Deliver,
    HandOff,
    LeaveAsked,
    Log,
    Released,
    Rerouted,
    Reply,
    RingChanged,
    RingNode,
    SeedStarts,
    Send,
    StatusAsked,
    StatusFigures,
)
from ring.io.zmqio import (
    CurveAuthenticator,
    PeerUnreachable,
    SocketType,
    ZmqSocket,
    curve_client,
    curve_server,
    member_route,
    open_socket,
)

__all__ = ["ForwardLink", "RingDriver", "SEND_TIMEOUT"]

#: Frames of URLs and their acks; everything else (probes, gossip, hand-off
#: markers) goes first in a send turn.
_URL_FRAMES = (UrlBatch, Packet, Ack)

log = logging.getLogger("ring.driver")

#: A send that cannot be queued within this long is dropped (see module doc).
SEND_TIMEOUT = 0.2
#: Messages waiting for the sender task; beyond this, they are dropped and counted.
SEND_QUEUE = 4096
#: URL batches read and waiting for the deliverer task. Probes and gossip are
#: handled by the receiver as they come; batches wait here and are taken one
#: a turn of the loop (~500 URLs, tens of ms), so a probe never waits behind
#: a batch. Taking the batches of one read in one step had a late-started
#: peer's receiver run 4.2 s without a turn for anyone; taking them one a
#: turn in the receiver left probes unread for seconds behind them (both
#: peers of scripts/bench_scale.py suspected the other with neither event
#: loop stalled). Each sender has at most ``[ring] send_window`` batches in
#: flight, so this fills only with many senders; then the receiver waits.
DELIVER_QUEUE = 64
#: What a DEALER to a peer accepts back: nothing is ever sent back on it (peers
#: answer through their own DEALERs), so one small message, unread, is all a
#: hostile "peer" at a gossiped address can park in our memory. Not less:
#: ZMTP's handshake commands count against MAXMSGSIZE (1 byte fails it).
DEALER_MAX_MSG = 64 * 1024


class RingDriver:
    """Runs one ``RingNode`` over zmq for one crawl (module docstring)."""

    def __init__(self, node: RingNode, crawl: CrawlPort, address: str, *,
                 keys: CurveKeys | None = None, recv_queue: int = 16,
                 heartbeat: tuple[float, float] | None = None,
                 wall: Callable[[], float] | None = None,
                 logger: logging.Logger | None = None) -> None:
        self.node = node
        self.crawl = crawl
        self.address = address
        self.keys = keys
        self.recv_queue = recv_queue
        self.heartbeat = heartbeat
        # Our DEALERs' routing id: who we are, plus a nonce of this process,
        # so a restart never collides with our old connection (ring.io.zmqio).
        self.route = member_route(node.peer_id, os.urandom(8).hex())
        self._wall = wall or time.time
        # The peer's own logger: operators and scripts/bench_*.py read its
        # "ring: ..." and "hand-off: ..." lines under that name.
        self.log = logger or log
        self.started = self._wall()
        # (destination, frame, membership first): see _sender.
        self._send, self._to_send = trio.open_memory_channel[tuple[str, bytes, bool]](SEND_QUEUE)
        self._deliver_in, self._deliver_out = trio.open_memory_channel[tuple[Any, UrlBatch | Packet]](
            DELIVER_QUEUE)
        self._wake_forward = trio.Event()
        self._nursery: trio.Nursery | None = None
        self._router: ZmqSocket | None = None
        #: Seconds this process stood still, beyond a gossip interval a round (``now``).
        self.stalled = 0.0

    # -- what the crawl calls ----------------------------------------------------

    def forward(self, url: str, depth: int, owner: str, *, relay: bool = False) -> None:
        self.node.forward(url, depth, owner, self.now(), relay=relay)
        self._wake_forward.set()

    def wake(self) -> None:
        """Entries were queued in the Outbox directly (hand-off seen URLs)."""
        self._wake_forward.set()

    def leave(self) -> None:
        self._start(self.node.leave(self.now()))

    # -- running -----------------------------------------------------------------

    async def run(self, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        async with AsyncExitStack() as stack:
            if self.keys is not None:
                # Before the ROUTER: libzmq admits any key while no ZAP handler runs.
                await stack.enter_async_context(CurveAuthenticator(self.keys))
            inbound = await stack.enter_async_context(open_socket(
                SocketType.ROUTER, bind=self.address, rcvhwm=self.recv_queue,
                heartbeat=self.heartbeat,
                configure=curve_server(self.keys) if self.keys is not None else None))
            self._router = inbound
            nursery = await stack.enter_async_context(trio.open_nursery())
            self._nursery = nursery
            nursery.start_soon(self._sender)
            nursery.start_soon(self._receiver, inbound)
            nursery.start_soon(self._deliverer)
            nursery.start_soon(self._gossip)
            nursery.start_soon(self._forwarder)
            task_status.started()

    def _start(self, actions: list[Action]) -> None:
        """Run actions from synchronous code (they only queue; a Reply never comes here)."""
        for a in actions:
            got = self._ACTIONS[type(a)](self, a)
            if got is not None:  # pragma: no cover - only receive() returns replies
                raise RuntimeError(f"{a!r} needs the receiver")

    async def _run(self, actions: list[Action]) -> None:
        for a in actions:
            got = self._ACTIONS[type(a)](self, a)
            if got is not None:
                await got

    async def _receiver(self, sock: ZmqSocket) -> None:
        curve = self.keys is not None
        node = self.node
        deliver = self._deliver_in
        while True:
            for got in await sock.recv_routed(1000, user_id=curve):
                if len(got.frames) != 1:
                    node.count("bad_frames")
                    continue
                try:
                    msg = decode(got.frames[0])
                except DecodeError as e:
                    node.count(e.kind)
                    continue
                if isinstance(msg, UrlBatch | Packet):
                    try:
                        deliver.send_nowait((got, msg))  # no turn given up: the probes behind it
                    except trio.WouldBlock:
                        await deliver.send((got, msg))
                    continue
                await self._run(node.receive(got.route, msg, self.now(), user_id=got.user_id))

    async def _deliverer(self) -> None:
        """URL batches, one a turn of the loop, apart from the receiver (DELIVER_QUEUE)."""
        node = self.node
        async for got, msg in self._deliver_out:
            await self._run(node.receive(got.route, msg, self.now(), user_id=got.user_id))
            # It may owe an ack now, due before the forwarder's wake-up.
            self._wake_forward.set()
            await trio.lowlevel.cancel_shielded_checkpoint()

    def now(self) -> float:
        """The node's clock: trio's, less the time this process stood still (``stalled``)."""
        return trio.current_time() - self.stalled

    async def _gossip(self) -> None:
        interval = self.node.gossip_interval
        due = trio.current_time()
        while True:
            # Local health (Lifeguard, Dadgar et al. 2018, "local health
            # awareness"): a round that wakes late found this process not
            # running (a long step, the OS scheduler on a saturated box, a
            # GC pause), so the acks it waited for were not read, and the
            # silence is ours. Lateness past one interval leaves the node's
            # clock: its probe and suspicion timers run on the time this
            # process could listen. (bench_scale, 2 peers on a box at load 6
            # on 2 cores: a round woke up to 3.9 s late, and each peer held
            # the other suspect within seconds.)
            late = trio.current_time() - due - interval
            if late > 0:
                self.stalled += late
                self.node.count("stalled_rounds")
            self._start(self.node.tick(self.now(), idle=self.crawl.locally_idle(),
                                       pages=self.crawl.pages_requested))
            self.crawl.poke()
            due = trio.current_time() + interval
            await trio.sleep(interval)

    async def _forwarder(self) -> None:
        node = self.node
        while True:
            self._start(node.flush(self.now()))
            when = node.outbox.next_due_at()
            self._wake_forward = trio.Event()
            with trio.move_on_at(when + self.stalled if when is not None else trio.current_time() + 1.0):
                await self._wake_forward.wait()

    async def _sender(self) -> None:
        async with AsyncExitStack() as stack:
            # Keyed by address too: a peer that rejoins elsewhere gets a new socket.
            dealers: dict[tuple[str, str], ZmqSocket] = {}
            while True:
                # Everything queued, in one turn of the loop, membership first.
                # A receive from a channel yields to the scheduler each time, so
                # one message a turn had a probe wait behind the URL frames
                # queued before it: 1.3-1.6 s from the probe to its send on the
                # loaded box (scripts/bench_scale.py), most of suspect_after.
                todo = [await self._to_send.receive()]
                while True:
                    try:
                        todo.append(self._to_send.receive_nowait())
                    except trio.WouldBlock:
                        break
                todo.sort(key=lambda item: not item[2])  # stable: the rest keep their order
                for dest, data, _ in todo:
                    await self._send_one(stack, dealers, dest, data)

    async def _send_one(self, stack: AsyncExitStack, dealers: dict[tuple[str, str], ZmqSocket],
                        dest: str, data: bytes) -> None:
        member = self.node.membership.members().get(dest)
        if member is None:
            return
        key = (dest, member.address)
        sock = dealers.get(key)
        if sock is None:
            configure = None
            if self.keys is not None:
                try:
                    configure = curve_client(self.keys, self.keys.public_key(dest))
                except RingError:
                    self.node.count("no_curve_key")  # its .key has not been deployed here
                    return
            try:
                sock = await stack.enter_async_context(open_socket(
                    SocketType.DEALER, connect=member.address, identity=self.route,
                    hwm=10_000, rcvhwm=1, max_msg=DEALER_MAX_MSG, configure=configure))
            except RingError:
                # A gossiped address is remote input: zmq may refuse it.
                self.node.count("bad_address")
                return
            for old in [k for k in dealers if k[0] == dest]:
                dealers.pop(old).close()  # it moved: the old address is dead to us
            dealers[key] = sock
        try:
            with trio.move_on_after(SEND_TIMEOUT) as scope:
                await sock.send_multipart([data])
        except RingError:
            self.node.count("send_failed")
            return
        if scope.cancelled_caught:
            self.node.count("send_timeout")

    # -- one handler per action type ---------------------------------------------

    def _do_send(self, a: Send) -> None:
        try:
            self._send.send_nowait((a.dest, encode(a.msg), not isinstance(a.msg, _URL_FRAMES)))
        except trio.WouldBlock:
            self.node.count("send_queue_full")
        except EncodeError as e:
            self.node.count("encode_error")  # our bug, but no reason to end the peer
            self.log.error("not sent to %s: %s", a.dest, e)

    def _do_reply(self, a: Reply) -> Awaitable[None]:
        return self._reply(a.route, a.msg)

    async def _reply(self, route: bytes, msg: Message) -> None:
        """Answer on the ROUTER; a client that has gone or has no room is counted, never raised."""
        try:
            data = encode(msg)
        except EncodeError as e:
            self.node.count("encode_error")
            self.log.error("reply not sent: %s", e)
            return
        sock = self._router
        assert sock is not None
        try:
            with trio.move_on_after(SEND_TIMEOUT) as scope:
                await sock.send_multipart([route, data])
        except PeerUnreachable:
            # The asker went away while we worked (a `ring status` that timed
            # out during a long stall): ROUTER_MANDATORY says so, here only.
            self.node.count("unreachable")
            return
        except RingError:
            self.node.count("send_failed")
            return
        if scope.cancelled_caught:
            self.node.count("reply_timeout")

    def _do_deliver(self, a: Deliver) -> None:
        crawl = self.crawl
        for url, depth in a.urls:
            crawl.accept(url, depth)
        for url in a.seen:
            crawl.accept_seen(url)
        crawl.commit_state()  # taken is on disk before it is acked

    def _do_rerouted(self, a: Rerouted) -> None:
        crawl = self.crawl
        for url in a.seen:
            crawl.accept_seen(url)
        for url, depth in a.urls:
            crawl.take_back(url, depth)

    def _do_ring_changed(self, a: RingChanged) -> None:
        self.crawl.set_ring(a.ring)

    def _do_handoff(self, a: HandOff) -> None:
        assert self._nursery is not None
        self._nursery.start_soon(self._hand_off, a)

    async def _hand_off(self, a: HandOff) -> None:
        """Collect the moved hosts' seen URLs and starts; the node waits for the acks."""
        n = await self.crawl.handoff_seen(a.old, a.ring)
        starts = self.crawl.handoff_starts(a.old, a.ring)
        self._wake_forward.set()
        self._start(self.node.begin_handoff(a.version, n, starts, self.now()))

    def _do_released(self, a: Released) -> None:
        self.crawl.handoff_done(a.sender)

    def _do_seed_starts(self, a: SeedStarts) -> None:
        self.crawl.seed_host_starts(a.starts)

    def _do_leave_asked(self, a: LeaveAsked) -> None:
        self.crawl.leave()

    def _do_status(self, a: StatusAsked) -> Awaitable[None]:
        figures = StatusFigures.of(self.crawl.status_figures(), self._wall() - self.started)
        return self._reply(a.route, self.node.status_reply(a.nonce, figures))

    def _do_count(self, a: Count) -> None:
        pass  # counted by the node already; a metrics hook would go here

    def _do_log(self, a: Log) -> None:
        self.log.log(a.level, "%s", a.text)

    _ACTIONS: dict[type, Callable[[RingDriver, Any], Awaitable[None] | None]] = {
        Send: _do_send,
        Reply: _do_reply,
        Deliver: _do_deliver,
        Rerouted: _do_rerouted,
        RingChanged: _do_ring_changed,
        HandOff: _do_handoff,
        Released: _do_released,
        SeedStarts: _do_seed_starts,
        LeaveAsked: _do_leave_asked,
        StatusAsked: _do_status,
        Count: _do_count,
        Log: _do_log,
    }


class ForwardLink:
    """A non-member's URL batches to members, acked on the same connection (module docstring).

    One task owns each DEALER (opens it, reads its acks, closes it when the
    link closes), so a socket closes only after its reader stopped; sends
    come from the caller's task, which ``ring.io.zmqio`` allows. ``on_ack`` gets
    every :class:`Ack` of ``ring_name`` that comes back; anything else on the
    connection is ignored. ``configure(dest)`` gives a DEALER's socket hook
    (a Curve client, ``ring.io.zmqio.curve_client``).
    """

    def __init__(self, ring_name: str, on_ack: Callable[[Ack], None], *,
                 configure: Callable[[str], Any] | None = None, hwm: int = 16,
                 send_timeout: float = SEND_TIMEOUT) -> None:
        self.ring_name = ring_name
        self.on_ack = on_ack
        self.configure = configure
        self.hwm = hwm
        self.send_timeout = send_timeout
        self.timeouts = 0  # sends given up after send_timeout (the resend brings them)
        self._sockets: dict[tuple[str, str], ZmqSocket] = {}
        self._nursery: trio.Nursery | None = None
        self._cm: Any = None

    async def __aenter__(self) -> ForwardLink:
        self._cm = trio.open_nursery()
        self._nursery = await self._cm.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        assert self._nursery is not None
        self._nursery.cancel_scope.cancel()
        return await self._cm.__aexit__(*exc)  # type: ignore[no-any-return]

    async def send(self, dest: str, address: str, batch: UrlBatch) -> bool:
        """Send ``batch`` to ``dest`` at ``address``; False if it found no room in time."""
        key = (dest, address)
        sock = self._sockets.get(key)
        if sock is None:
            assert self._nursery is not None, "use ForwardLink as an async context manager"
            sock = self._sockets[key] = await self._nursery.start(self._own, dest, address)
        with trio.move_on_after(self.send_timeout) as scope:
            await sock.send_multipart([encode(batch)])
        if scope.cancelled_caught:
            self.timeouts += 1
            return False
        return True

    async def _own(self, dest: str, address: str, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        configure = self.configure(dest) if self.configure is not None else None
        async with open_socket(SocketType.DEALER, connect=address, configure=configure,
                               hwm=self.hwm) as sock:
            task_status.started(sock)
            while True:
                for frames in await sock.recv_batch(1000):
                    try:
                        msg = decode(frames[-1])
                    except DecodeError:
                        continue
                    if isinstance(msg, Ack) and msg.ring == self.ring_name:
                        self.on_ack(msg)
