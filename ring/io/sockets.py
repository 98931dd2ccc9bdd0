"""The zmq half of one ring member: its sockets, their tasks and its two clocks (edge).

A thin loop in the shape of trio-websocket's reader task: receive, decode,
and hand each message to the member it serves (:class:`Member`: a peer's
engine around ``peer.core.door.peer.PeerCore``, or ``ring.io.driver.RingDriver``
around a bare ``RingNode``), which decides everything. What is left here is
what only I/O can find out.

- One ROUTER socket bound at this peer's bind address (its advertised
  address unless told otherwise: ``ring.addresses``) receives everything:
  gossip, joins, URL batches, acks, status and leave requests (answered on
  the same socket, to the asker's route: :meth:`MemberSockets.reply`).
- One DEALER per remote member sends to it, owned by a single sender task
  fed by a bounded channel (``SEND_QUEUE``; one socket, one owning task, as
  the trzmq README asks). Every send is bounded in time (``SEND_TIMEOUT``)
  and may be dropped: gossip is repeated every round and URL batches are
  resent until acked (``Outbox``), so a dead or slow peer never blocks the
  others. Our DEALERs connect with ``member_route(id, nonce)``, a fresh
  nonce each process, which the node checks against every member message.
- Each member is spoken to at its wire version, read off the routing id of
  the frames it sends us (``ring.wireversion``): a message of a type its
  version lacks is not sent (``wire.withheld.<type>``), and a reply goes at
  the version of the asker's route.
- Two clocks: a gossip round every ``gossip_interval`` (:meth:`Member.ticked`),
  and the Outbox's next frame due (:meth:`Member.flushed`, woken early by
  :meth:`MemberSockets.wake`).
- No byte from the network ends the peer. A frame that does not decode is
  counted by its ``DecodeError.kind``; a send that cannot go is counted,
  never raised: a reply to a client that has gone (``unreachable``), no room
  in time (``send_timeout``, ``reply_timeout``), a message the codec cannot
  carry (``encode_error``), a gossiped address zmq refuses (``bad_address``),
  a member whose Curve key is not deployed here (``no_curve_key``), a full
  send queue (``send_queue_full``). A connection refused in its handshake
  (no Curve at a Curve ring, a refused key, a bare TCP probe) delivers no
  frame; the ROUTER's monitor counts it (``ring.io.refusedhandshakes``:
  ``handshake.protocol``, ``handshake.auth``, ``handshake.closed``).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any, Protocol

import trio
import zmq

from ring.io.curve import CurveKeys
from ring.io.refusedhandshakes import DRAIN_EVERY, RefusedHandshakes
from ring.errors import RingError
from ring.messages import Ack, DecodeError, EncodeError, Message, Packet, UrlBatch, decode, encode, speaks
from ring.wireversion import WireVersions, marked_nonce, route_version, speak_to
from ring.io.zap import CurveAuthenticator, curve_client, curve_server
from ring.io.zmqio import (
    PeerUnreachable,
    SocketType,
    ZmqSocket,
    member_route,
    open_socket,
)

__all__ = ["DEALER_MAX_MSG", "DELIVER_QUEUE", "Member", "MemberSockets", "SEND_QUEUE", "SEND_TIMEOUT"]

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


class Member(Protocol):
    """What the sockets serve: the member's decisions, asked at each event."""

    @property
    def gossip_interval(self) -> float: ...

    async def received(self, route: bytes, msg: Message, user_id: str | None) -> None:
        """A decoded message came on ``route`` (``user_id``: its Curve key's member)."""
        ...

    def ticked(self) -> None:
        """A gossip round is due (``MemberSockets.now()`` is the member's clock)."""
        ...

    def flushed(self) -> None:
        """The Outbox may have frames due: queue them with ``MemberSockets.send``."""
        ...

    def next_flush_at(self) -> float | None:
        """When the Outbox's next frame is due (the member's clock), or None."""
        ...

    def address_of(self, member: str) -> str | None:
        """Where ``member`` listens, as the membership last heard; None: not a member."""
        ...

    def count(self, reason: str) -> None:
        """Count what the sockets refused or could not send."""
        ...


class MemberSockets:
    """The sockets and tasks of one ring member (module docstring)."""

    def __init__(self, member: Member, peer_id: str, address: str, *, bind: str = "",
                 keys: CurveKeys | None = None, recv_queue: int = 16,
                 heartbeat: tuple[float, float] | None = None,
                 wall: Callable[[], float] | None = None,
                 logger: logging.Logger | None = None) -> None:
        self.member = member
        self.address = address
        #: Where the ROUTER listens: ``bind``, else ``address`` (a caller gives the
        #: default of ``ring.addresses.bind_address``, which depends on config).
        self.bind = bind or address
        self.keys = keys
        self.recv_queue = recv_queue
        self.heartbeat = heartbeat
        # Our DEALERs' routing id: who we are, plus a nonce of this process,
        # so a restart never collides with our old connection (ring.io.zmqio),
        # marked with our wire version (ring.wireversion rule 1).
        self.route = member_route(peer_id, marked_nonce(os.urandom(8).hex()))
        #: The wire version each member speaks, from the routes we hear it on.
        self.versions = WireVersions(lambda m: member.address_of(m) is not None, curve=keys is not None)
        self._wall = wall or time.time
        self.log = logger or log
        self.started = self._wall()
        # (destination, frame, membership first): see _sender.
        self._send, self._to_send = trio.open_memory_channel[tuple[str, bytes, bool]](SEND_QUEUE)
        self._deliver_in, self._deliver_out = trio.open_memory_channel[tuple[Any, UrlBatch | Packet]](
            DELIVER_QUEUE)
        self._wake_forward = trio.Event()
        self._router: ZmqSocket | None = None
        #: Seconds this process stood still, beyond a gossip interval a round (``now``).
        self.stalled = 0.0

    def uptime(self) -> float:
        return self._wall() - self.started

    def wake(self) -> None:
        """Entries were queued in the Outbox (or an ack is owed): look at it now."""
        self._wake_forward.set()

    async def run(self, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        async with AsyncExitStack() as stack:
            if self.keys is not None:
                # Before the ROUTER: libzmq admits any key while no ZAP handler runs.
                await stack.enter_async_context(CurveAuthenticator(self.keys))
            watch = RefusedHandshakes()
            stack.callback(watch.close)  # after the ROUTER closes (the stack unwinds in reverse)
            curve = curve_server(self.keys) if self.keys is not None else None

            def configure(sock: zmq.Socket) -> None:
                if curve is not None:
                    curve(sock)
                watch.attach(sock)

            inbound = await stack.enter_async_context(open_socket(
                SocketType.ROUTER, bind=self.bind, rcvhwm=self.recv_queue,
                heartbeat=self.heartbeat, configure=configure))
            self._router = inbound
            nursery = await stack.enter_async_context(trio.open_nursery())
            nursery.start_soon(self._handshakes, watch)
            nursery.start_soon(self._sender)
            nursery.start_soon(self._receiver, inbound)
            nursery.start_soon(self._deliverer)
            nursery.start_soon(self._gossip)
            nursery.start_soon(self._forwarder)
            task_status.started()

    async def _receiver(self, sock: ZmqSocket) -> None:
        curve = self.keys is not None
        member = self.member
        deliver = self._deliver_in
        while True:
            for got in await sock.recv_routed(1000, user_id=curve):
                if len(got.frames) != 1:
                    member.count("bad_frames")
                    continue
                try:
                    msg = decode(got.frames[0])
                except DecodeError as e:
                    member.count(e.kind)
                    continue
                self.versions.heard(got.route, got.user_id)
                if isinstance(msg, UrlBatch | Packet):
                    try:
                        deliver.send_nowait((got, msg))  # no turn given up: the probes behind it
                    except trio.WouldBlock:
                        await deliver.send((got, msg))
                    continue
                await member.received(got.route, msg, got.user_id)

    async def _handshakes(self, watch: RefusedHandshakes) -> None:
        """Count the connections the ROUTER refused in their handshake (ring.io.refusedhandshakes)."""
        while True:
            for name, n in watch.drain().items():
                for _ in range(n):
                    self.member.count(name)
            await trio.sleep(DRAIN_EVERY)

    async def _deliverer(self) -> None:
        """URL batches, one a turn of the loop, apart from the receiver (DELIVER_QUEUE)."""
        member = self.member
        async for got, msg in self._deliver_out:
            await member.received(got.route, msg, got.user_id)
            # It may owe an ack now, due before the forwarder's wake-up.
            self._wake_forward.set()
            await trio.lowlevel.cancel_shielded_checkpoint()

    def now(self) -> float:
        """The node's clock: trio's, less the time this process stood still (``stalled``)."""
        return trio.current_time() - self.stalled


    async def _gossip(self) -> None:
        interval = self.member.gossip_interval
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
                self.member.count("stalled_rounds")
            self.member.ticked()
            due = trio.current_time() + interval
            await trio.sleep(interval)

    async def _forwarder(self) -> None:
        member = self.member
        while True:
            member.flushed()
            when = member.next_flush_at()
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
        address = self.member.address_of(dest)
        if address is None:
            return
        key = (dest, address)
        sock = dealers.get(key)
        if sock is None:
            configure = None
            if self.keys is not None:
                try:
                    configure = curve_client(self.keys, self.keys.public_key(dest))
                except RingError:
                    self.member.count("no_curve_key")  # its .key has not been deployed here
                    return
            try:
                sock = await stack.enter_async_context(open_socket(
                    SocketType.DEALER, connect=address, identity=self.route,
                    hwm=10_000, rcvhwm=1, max_msg=DEALER_MAX_MSG, configure=configure))
            except RingError:
                # A gossiped address is remote input: zmq may refuse it.
                self.member.count("bad_address")
                return
            for old in [k for k in dealers if k[0] == dest]:
                dealers.pop(old).close()  # it moved: the old address is dead to us
            dealers[key] = sock
        try:
            with trio.move_on_after(SEND_TIMEOUT) as scope:
                await sock.send_multipart([data])
        except RingError:
            self.member.count("send_failed")
            return
        if scope.cancelled_caught:
            self.member.count("send_timeout")

    # -- one handler per action type ---------------------------------------------

    def send(self, dest: str, msg: Message) -> None:
        """Queue ``msg`` for member ``dest`` at its wire version (membership first in a send turn); never raises."""
        version = self.versions.for_message(dest, type(msg))
        if not speaks(type(msg), version):
            self.member.count(f"wire.withheld.{type(msg).__name__}")  # ring.wireversion rule 6
            return
        try:
            self._send.send_nowait((dest, encode(msg, version), not isinstance(msg, _URL_FRAMES)))
        except trio.WouldBlock:
            self.member.count("send_queue_full")
        except EncodeError as e:
            self.member.count("encode_error")  # our bug, but no reason to end the peer
            self.log.error("not sent to %s: %s", dest, e)

    async def reply(self, route: bytes, msg: Message) -> None:
        """Answer on the ROUTER at the asker's wire version (``ring.wireversion`` rule 5); a client that
        has gone or has no room is counted, never raised."""
        version = speak_to(route_version(route))
        if not speaks(type(msg), version):
            self.member.count(f"wire.withheld.{type(msg).__name__}")
            return
        try:
            data = encode(msg, version)
        except EncodeError as e:
            self.member.count("encode_error")
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
            self.member.count("unreachable")
            return
        except RingError:
            self.member.count("send_failed")
            return
        if scope.cancelled_caught:
            self.member.count("reply_timeout")

