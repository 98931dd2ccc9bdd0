"""ZeroMQ sockets under trio: the adapter every socket of the ring is.

Only ``ring.io`` imports ``zmq``: this module, the options it opens sockets
with (``sockopts``), its errors (``errors``) and the Curve hooks (``zap``).

pyzmq has no trio integration and no maintained bridge exists (zmq-anyio
managed about 8k msg/s here), so this is a small adapter over pyzmq's
*blocking* ``zmq.Socket`` used only with ``NOBLOCK``. What it is built
against (measured on this box; ``tests/edges/test_zmqio.py`` keeps each fact tested):

**zmq's FD is edge-triggered.** ``ZMQ_FD`` signals "the socket's state may
have changed", and any send, recv or read of ``ZMQ_EVENTS`` can consume that
signal (libzmq processes its command mailbox and resets the FD). The naive
loop (recv NOBLOCK, on EAGAIN ``wait_readable(fd)``) hung after 168 of
100,000 round trips when another task sent on the same socket: the send ate
the edge the receiver slept on. So, as the trzmq README advises:

- one *watcher* task per socket is the only waiter on the FD; each time it
  fires, it reads ``EVENTS`` (which re-arms the FD) and wakes the tasks whose
  condition holds: receivers on ``POLLIN``, senders on ``POLLOUT``;
- every other task parks in a :class:`trio.lowlevel.ParkingLot`, never on
  the FD;
- every successful send or recv, when anyone is parked, reads ``EVENTS`` and
  wakes whom it concerns: the call may have consumed the edge the parked task
  was waiting for. (Reading ``EVENTS`` once instead of waking everyone saves
  a useless task switch per operation in the send-while-receiving case.)
- after EAGAIN a task reads ``EVENTS`` again before parking: that read may
  itself have processed the command that made the socket ready.

**Cancellation never falls between consuming a message and handing it
over.** One version lost 50,253 of 200,000 messages under random cancel
scopes. Every call checks for cancellation *before* touching the socket
(``checkpoint_if_cancelled``) and may be cancelled while parked (nothing
consumed yet); after a successful recv or send its only await is
``cancel_shielded_checkpoint``, taken every :data:`YIELD_EVERY` operations so
a hot loop that always finds data does not starve the other tasks. So a
cancelled ``recv*`` received nothing and a cancelled ``send_multipart`` sent
nothing.

**What a socket drops, and how much it may hold** (no ``PUB``; ``ROUTER_MANDATORY``
and no ``ROUTER_HANDOVER``; ``MAXMSGSIZE`` and ``RCVHWM``): ``ring.io.sockopts``,
with the figures each option was chosen by. On top of those bounds, one
:meth:`~ZmqSocket.recv_batch` takes at most :data:`BATCH_BYTES`.

A ROUTER's ``POLLOUT`` means "*some* peer has room", which cannot tell a
waiting sender that *its* peer has. A ROUTER send that finds its peer full
therefore retries once after each wake and parks again, and ROUTER senders
take turns waiting (a lock, held only on that slow path): with two of them
parked, one's EAGAIN could otherwise swallow the wake meant for the other.
Sends to peers with room never touch the lock; a sender queued behind one
waiting for a stuck peer waits too, so give such sends a timeout, or use
one DEALER per destination where a slow peer must not hold others up.

**Throughput.** :meth:`ZmqSocket.recv_batch` drains up to ``max_n`` messages
with NOBLOCK and waits only when there are none: 100–150k msgs/s between two
processes for 1 KB msgpack messages, against about 77k for one
await per message (``scripts/bench_zmq.py`` prints both).

Errors: ``ring.io.errors`` (``SocketClosed``, ``PeerUnreachable``,
``TransportError``; zmq errors are translated there and nowhere else).

Socket options beyond the few here go in the ``configure`` hook, which gets
the raw ``zmq.Socket`` before any bind or connect; a hook that needs zmq
constants belongs in ``ring.io`` (``ring.io.zap``'s Curve hooks are such).
``CurveAuthenticator``, the ZAP handler (RFC 27) those hooks need on a
server's context, is one more :class:`ZmqSocket` (``ring.io.zap``).
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import NamedTuple, TypeVar, cast

import trio
import zmq
from trio.lowlevel import (
    ParkingLot,
    cancel_shielded_checkpoint,
    checkpoint_if_cancelled,
    notify_closing,
    wait_readable,
)
from zmq import NOBLOCK, POLLIN, POLLOUT, RCVMORE

from ring.errors import RingError
from ring.io.errors import CLOSED_ERRNOS, PeerUnreachable, SocketClosed, TransportError, translate
from ring.io.sockopts import ZMQ_TYPE, SocketType, address_options, apply_options
from ring.messages import MAX_FRAME
from ring.forwarding.routes import member_route, route_member

_T = TypeVar("_T")

__all__ = [
    "SocketType",
    "ZmqSocket",
    "open_socket",
    "SocketClosed",
    "PeerUnreachable",
    "TransportError",
    "YIELD_EVERY",
    "BATCH_BYTES",
    "Routed",
    "member_route",
    "route_member",
]

# A trip through trio's scheduler costs 5-7 µs here, several NOBLOCK recvs'
# worth; yielding every 32 operations keeps that near 0.2 µs a message while
# the other tasks still get the CPU every 100 µs or so.
YIELD_EVERY = 32

#: Bytes one :meth:`ZmqSocket.recv_batch` / :meth:`~ZmqSocket.recv_routed`
#: takes at most (the message that crosses it is the last): a batch is a
#: Python list, and 1,000 frames of up to MAX_FRAME would be 8 GiB of it.
BATCH_BYTES = 2 * MAX_FRAME

class Routed(NamedTuple):
    """One message a ROUTER received (:meth:`ZmqSocket.recv_routed`).

    ``frames`` are zero-copy views of the body frames (valid for as long as
    they are referenced); ``user_id`` is the ZAP User-Id libzmq attached to
    the connection (RFC 27: the Curve authenticator sets it to the member id
    of the client's key), None without one.
    """

    route: bytes
    frames: list[memoryview]
    user_id: str | None


_MECHANISMS: dict[int, str] = {zmq.NULL: "NULL", zmq.PLAIN: "PLAIN", zmq.CURVE: "CURVE", zmq.GSSAPI: "GSSAPI"}


def _as_list(addrs: str | Iterable[str]) -> list[str]:
    return [addrs] if isinstance(addrs, str) else list(addrs)


class ZmqSocket:
    """A zmq socket driven from trio; see the module docstring for the rules.

    Create it with :func:`open_socket` and use it as ``async with``: entering
    creates, configures, binds and connects the socket and starts its watcher;
    leaving closes it. Any number of tasks may send and receive on it at once.
    """

    __slots__ = (
        "kind", "_type", "_binds", "_connects", "_identity", "_hwm", "_rcvhwm", "_max_msg",
        "_heartbeat", "_linger", "_configure", "_ctx", "_sock", "_fd", "_closed", "_recv_lot",
        "_send_lot",
        "_router_wait", "_parked", "_ops", "_nursery_cm",
    )

    def __init__(
        self,
        kind: SocketType | str,
        *,
        bind: str | Iterable[str] = (),
        connect: str | Iterable[str] = (),
        identity: bytes | None = None,
        hwm: int = 1000,
        rcvhwm: int | None = None,
        max_msg: int = MAX_FRAME,
        heartbeat: tuple[float, float] | None = None,
        linger: int = 0,
        configure: Callable[[zmq.Socket], None] | None = None,
        ctx: zmq.Context | None = None,
    ) -> None:
        self.kind = SocketType(kind)
        self._type = ZMQ_TYPE[self.kind]
        if hwm < 0 or (rcvhwm is not None and rcvhwm < 0):
            raise ValueError(f"hwm and rcvhwm must be >= 0 (0 = no limit), got {hwm}, {rcvhwm}")
        if not 0 < max_msg <= MAX_FRAME:
            raise ValueError(f"max_msg must be in 1..{MAX_FRAME}, got {max_msg}")
        if heartbeat is not None and not 0 < heartbeat[0] <= heartbeat[1]:
            raise ValueError(f"heartbeat must be (interval, timeout) with 0 < interval <= timeout, got {heartbeat}")
        self._rcvhwm = hwm if rcvhwm is None else rcvhwm
        self._max_msg = max_msg
        self._heartbeat = heartbeat
        self._binds = _as_list(bind)
        self._connects = _as_list(connect)
        self._identity = identity
        self._hwm = hwm
        self._linger = linger
        self._configure = configure
        self._ctx = ctx
        self._sock: zmq.Socket | None = None
        self._fd = -1
        # Closed until entered: a ZmqSocket that was never entered owns nothing.
        self._closed = True
        self._recv_lot = ParkingLot()
        self._send_lot = ParkingLot()
        self._router_wait = trio.Lock()
        self._parked = 0  # tasks in either lot; cheaper to test than the lots
        self._ops = 0
        self._nursery_cm: AbstractAsyncContextManager[trio.Nursery] | None = None

    # ---------------------------------------------------------------- lifecycle
    #
    # Opening and closing are protected from KeyboardInterrupt (trio's KI
    # protection): a Ctrl-C landing half-way through would leave the
    # watcher's nursery open ("Nursery stack corrupted") or the socket
    # unclosed. It is raised at the next checkpoint outside them instead.

    @trio.lowlevel.enable_ki_protection
    async def __aenter__(self) -> ZmqSocket:
        if self._sock is not None:
            raise RuntimeError("a ZmqSocket can be entered only once")
        self._open()
        try:
            self._nursery_cm = trio.open_nursery()
            nursery = await self._nursery_cm.__aenter__()
            nursery.start_soon(self._watch, name=f"zmq watcher {self.kind}")
        except BaseException:
            self.close()
            raise
        return self

    @trio.lowlevel.enable_ki_protection
    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        self.close()
        # The body's own exception is not handed to the nursery, which would
        # wrap it in an ExceptionGroup; the nursery only waits for the watcher,
        # which close() has just woken, and the body's exception propagates as is.
        assert self._nursery_cm is not None  # set by __aenter__
        await self._nursery_cm.__aexit__(None, None, None)
        return False

    def _open(self) -> None:
        ctx = self._ctx if self._ctx is not None else zmq.Context.instance()
        sock = ctx.socket(self._type)
        try:
            apply_options(sock, router=self._type == zmq.ROUTER, linger=self._linger,
                          hwm=self._hwm, rcvhwm=self._rcvhwm, max_msg=self._max_msg,
                          heartbeat=self._heartbeat, identity=self._identity)
            if self._configure is not None:
                self._configure(sock)
            self._sock = sock
            self._closed = False
            for addr in self._binds:
                self.bind(addr)
            for addr in self._connects:
                self.connect(addr)
            self._fd = sock.getsockopt(zmq.FD)
        except BaseException:
            self._closed = True
            sock.close(linger=0)
            raise

    @trio.lowlevel.enable_ki_protection
    def close(self) -> None:
        """Close the socket now; parked and later calls raise :class:`SocketClosed`.

        Idempotent. Unsent messages follow ``linger`` (default 0: dropped).
        """
        if self._closed:
            return
        self._closed = True
        # Before the FD goes away: the watcher's wait_readable gets
        # ClosedResourceError instead of waiting on a reused descriptor.
        if self._fd >= 0:
            notify_closing(self._fd)
        self._recv_lot.unpark_all()
        self._send_lot.unpark_all()
        if self._sock is not None:  # closed before it was opened: nothing to close
            self._sock.close(linger=self._linger)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def mechanism(self) -> str:
        """The security mechanism: ``"NULL"`` (none) or ``"CURVE"`` (also ``"PLAIN"``, ``"GSSAPI"``)."""
        return _MECHANISMS.get(cast(int, self._live().getsockopt(zmq.MECHANISM)), "UNKNOWN")

    # ----------------------------------------------------------- endpoints

    def bind(self, addr: str) -> str:
        """Bind to ``addr``; returns the actual endpoint (``tcp://127.0.0.1:*`` picks a port).

        IPv6 literals, names and ``*`` work as ``ring.addresses`` says (``ZMQ_IPV6`` set for them).
        """
        sock = self._live()
        try:
            address_options(sock, addr)
            sock.bind(addr)
        except zmq.ZMQError as e:
            raise self._translate(e, f"cannot bind {addr}") from None
        return sock.getsockopt_string(zmq.LAST_ENDPOINT)

    def connect(self, addr: str) -> None:
        """Connect to ``addr``. zmq connects (and reconnects) in the background.

        A name is resolved by libzmq at each attempt, reconnects included (``ring.addresses``).
        """
        sock = self._live()
        try:
            address_options(sock, addr)
            sock.connect(addr)
        except zmq.ZMQError as e:
            raise self._translate(e, f"cannot connect to {addr}") from None

    def unbind(self, addr: str) -> None:
        """Stop listening on ``addr`` (an endpoint :meth:`bind` returned); an inproc name is free again at once."""
        try:
            self._live().unbind(addr)
        except zmq.ZMQError as e:
            raise self._translate(e, f"cannot unbind {addr}") from None

    def disconnect(self, addr: str) -> None:
        """Drop the connection to ``addr`` made by :meth:`connect`."""
        try:
            self._live().disconnect(addr)
        except zmq.ZMQError as e:
            raise self._translate(e, f"cannot disconnect from {addr}") from None

    # ----------------------------------------------------------------- sending

    async def send_multipart(self, frames: Sequence[bytes]) -> None:
        """Send one multipart message, waiting while the queue is full.

        On a ROUTER the first frame is the peer's identity; an identity with no
        connected peer raises :class:`PeerUnreachable`. If cancelled, nothing
        was sent.
        """
        await checkpoint_if_cancelled()
        if not self._try_send(frames):
            if self._type == zmq.ROUTER:
                async with self._router_wait:
                    await self._send_wait(frames, router=True)
            else:
                await self._send_wait(frames, router=False)
        if self._done(1):
            await cancel_shielded_checkpoint()

    def _try_send(self, frames: Sequence[bytes]) -> bool:
        sock = self._live()
        try:
            if len(frames) == 1:
                # Most messages are one frame; pyzmq's send_multipart first
                # type-checks every part (so a bad part cannot leave half a
                # message behind), which one frame does not need.
                sock.send(frames[0], NOBLOCK)
            elif frames:
                sock.send_multipart(frames, NOBLOCK)
            else:
                raise ValueError("a message needs at least one frame")
        except zmq.Again:
            return False
        except zmq.ZMQError as e:
            if e.errno == errno.EHOSTUNREACH:
                raise PeerUnreachable(frames[0]) from None
            raise self._translate(e, "send failed") from None
        return True

    async def _send_wait(self, frames: Sequence[bytes], router: bool) -> None:
        while True:
            events = self._events(wake=POLLIN)
            if events & POLLOUT:
                if self._try_send(frames):
                    return
                if not router:
                    # DEALER/PUSH POLLOUT means a pipe with room, and a failed
                    # write drops its pipe from the ready set: look again.
                    continue
            await self._park(self._send_lot)
            if self._try_send(frames):
                return

    # --------------------------------------------------------------- receiving

    async def recv_multipart(self) -> list[bytes]:
        """Receive one multipart message (a ROUTER's starts with the sender's identity).

        If cancelled, nothing was received.
        """
        await checkpoint_if_cancelled()
        while True:
            sock = self._live()
            try:
                msg = sock.recv_multipart(NOBLOCK)
                break
            except zmq.Again:
                pass
            except zmq.ZMQError as e:
                raise self._translate(e, "recv failed") from None
            if not self._events(wake=POLLOUT) & POLLIN:
                await self._park(self._recv_lot)
        if self._done(1):
            await cancel_shielded_checkpoint()
        return msg

    async def recv_batch(self, max_n: int = 1000, max_bytes: int = BATCH_BYTES) -> list[list[bytes]]:
        """Receive between 1 and ``max_n`` multipart messages, in arrival order.

        Takes what is queued without waiting and waits only when nothing is;
        stops early once the batch holds ``max_bytes``. If cancelled, nothing
        was received.
        """

        def read(sock: zmq.Socket) -> tuple[list[bytes], int]:
            # recv_multipart inlined: a multipart message is delivered
            # whole, so once its first frame is in, the rest are too.
            recv, more = sock.recv, sock.getsockopt
            msg = [recv(NOBLOCK)]
            while more(RCVMORE):
                msg.append(recv(NOBLOCK))
            return msg, sum(map(len, msg))

        return await self._recv_many(read, max_n, max_bytes)

    async def recv_routed(self, max_n: int = 1000, max_bytes: int = BATCH_BYTES,
                          *, user_id: bool = False) -> list[Routed]:
        """A ROUTER's :meth:`recv_batch`: each message as a :class:`Routed`, without copying its body.

        ``user_id``: also read each message's ZAP User-Id (a Curve server's
        check that a sender is who its key says; None when libzmq has none).
        """
        if self._type != zmq.ROUTER:
            raise TypeError("recv_routed is for ROUTER sockets")

        def read(sock: zmq.Socket) -> tuple[Routed, int]:
            recv, more = sock.recv, sock.getsockopt
            route = recv(NOBLOCK)
            frames: list[zmq.Frame] = []
            while more(RCVMORE):
                frames.append(recv(NOBLOCK, copy=False))
            uid = None
            if user_id and frames:
                try:
                    uid = cast("str | None", frames[0].get("User-Id"))
                except zmq.ZMQError:
                    uid = None  # no ZAP handler spoke for this connection
            return Routed(route, [f.buffer for f in frames], uid), sum(len(f) for f in frames)

        return await self._recv_many(read, max_n, max_bytes)

    async def _recv_many(self, read: Callable[[zmq.Socket], tuple[_T, int]], max_n: int,
                         max_bytes: int) -> list[_T]:
        """The loop of both receives: ``read`` takes one whole message (and its size) or raises Again."""
        if max_n < 1:
            raise ValueError(f"max_n must be >= 1, got {max_n}")
        await checkpoint_if_cancelled()
        while True:
            sock = self._live()
            batch: list[_T] = []
            size = 0
            try:
                for _ in range(max_n):
                    item, n = read(sock)
                    batch.append(item)
                    size += n
                    if size >= max_bytes:
                        break
            except zmq.Again:
                pass
            except zmq.ZMQError as e:
                if not batch:
                    raise self._translate(e, "recv failed") from None
                # Hand over what was taken; the next call meets the error again.
            if batch:
                break
            if not self._events(wake=POLLOUT) & POLLIN:
                await self._park(self._recv_lot)
        if self._done(len(batch)):
            await cancel_shielded_checkpoint()
        return batch

    # --------------------------------------------------------------- internals

    def _live(self) -> zmq.Socket:
        sock = self._sock
        if self._closed or sock is None:
            if sock is None:
                raise SocketClosed(f"{self.kind} socket not open: use 'async with open_socket(...)'")
            raise SocketClosed(f"{self.kind} socket is closed")
        return sock

    def _events(self, wake: int) -> int:
        """Read EVENTS (re-arming the FD) and wake the parked tasks ``wake`` selects."""
        events = cast(int, self._live().getsockopt(zmq.EVENTS))
        if events & wake & POLLIN and self._recv_lot:
            self._recv_lot.unpark_all()
        if events & wake & POLLOUT and self._send_lot:
            self._send_lot.unpark_all()
        return events

    async def _park(self, lot: ParkingLot) -> None:
        self._parked += 1
        try:
            await lot.park()
        finally:
            self._parked -= 1

    def _done(self, n: int) -> bool:
        """After ``n`` messages moved: wake whom it concerns; True when it is time to yield.

        The caller then yields with ``cancel_shielded_checkpoint``: the
        messages have moved, so nothing may raise Cancelled any more.
        """
        if self._parked:
            self._events(wake=POLLIN | POLLOUT)
        self._ops += n
        if self._ops >= YIELD_EVERY:
            self._ops = 0
            return True
        return False

    async def _watch(self) -> None:
        """The one task that waits on the FD."""
        try:
            while not self._closed:
                await wait_readable(self._fd)
                if self._closed:
                    return
                self._events(wake=POLLIN | POLLOUT)
        except trio.ClosedResourceError:
            return  # close() ran while we waited
        except zmq.ZMQError as e:
            if e.errno not in CLOSED_ERRNOS:
                raise self._translate(e, "watching the socket failed") from None
            self.close()  # context terminated under us: fail the parked tasks

    def _translate(self, e: zmq.ZMQError, what: str) -> RingError:
        return translate(e, self.kind, what)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<ZmqSocket {self.kind} {state} bind={self._binds} connect={self._connects}>"


def open_socket(
    kind: SocketType | str,
    *,
    bind: str | Iterable[str] = (),
    connect: str | Iterable[str] = (),
    identity: bytes | None = None,
    hwm: int = 1000,
    rcvhwm: int | None = None,
    max_msg: int = MAX_FRAME,
    heartbeat: tuple[float, float] | None = None,
    linger: int = 0,
    configure: Callable[[zmq.Socket], None] | None = None,
    ctx: zmq.Context | None = None,
) -> ZmqSocket:
    """A zmq socket for ``async with``::

        async with open_socket("ROUTER", bind="tcp://127.0.0.1:5701", identity=b"p1") as sock:
            batch = await sock.recv_batch()

    ``kind``: a :class:`SocketType` or its name (callers need not import zmq).
    ``hwm`` sets both send and receive high-water marks (messages per peer);
    ``rcvhwm``, if given, the receive one alone. ``max_msg`` is the largest
    message accepted (default and ceiling: the codec's ``MAX_FRAME``): a
    connection sending more is dropped. ``heartbeat`` = (interval, timeout)
    seconds turns on ZMTP heartbeats (RFC 37): a connection that answers no
    PING for ``timeout`` is closed.
    ``linger`` (ms) is how long unsent messages outlive :meth:`ZmqSocket.close`
    in the background. ``configure`` runs on the raw socket after these options
    and before any bind or connect (Curve keys must be set there). ``ctx``
    defaults to pyzmq's process-wide ``Context.instance()``.
    """
    return ZmqSocket(
        kind, bind=bind, connect=connect, identity=identity, hwm=hwm, rcvhwm=rcvhwm,
        max_msg=max_msg, heartbeat=heartbeat, linger=linger, configure=configure, ctx=ctx,
    )
