"""A client socket's connection and handshake, watched: did the peer refuse our key?

A zmq client learns nothing of a failed CurveZMQ handshake: its sends
queue, its recv waits, and libzmq retries in the background. A tool whose
key the ring refused (its ``.key`` not in the peers' keys directory) then
looks exactly like a tool facing a dead ring. libzmq does say what
happened, on the socket's monitor (``zmq_socket_monitor``, libzmq 4.3):

- ``HANDSHAKE_FAILED_AUTH`` with the ZAP status code (RFC 27: 400) when
  the server's ZAP handler refused our key (:class:`~ring.io.zap.ZapPolicy`);
- ``HANDSHAKE_FAILED_PROTOCOL`` when one end speaks Curve and the other
  not, ``HANDSHAKE_FAILED_NO_DETAIL`` when the server's key is not the one we
  hold for it (both measured here on libzmq 4.3.5, each within 2 ms on
  loopback);
- ``CONNECT_RETRIED`` with no ``CONNECTED`` before it when nothing accepts
  the TCP connection (refused, or no route).

:func:`request` sends one request on a DEALER with a monitor on it, reads
the events on a PAIR of the same context, connected before the DEALER
connects (events sent before the PAIR is there would be lost) and polled
every :data:`POLL_EVERY` seconds, and waits for an answer. The monitor is
stopped before the PAIR closes: libzmq's I/O thread sends events with a
blocking send, and one sent to a PAIR with no reader stalled that thread,
and so every socket of the context (seen here as a peer in the same process
answering nothing after a tool's request). A refusal or a failed handshake ends the wait at once, since
no answer can come, and its :class:`HandshakeWatch` says which.
"""

from __future__ import annotations

import enum
import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import trio
import zmq
from zmq.utils.monitor import parse_monitor_message

from ring.io.sockopts import SocketType
from ring.io.zmqio import ZmqSocket

__all__ = ["POLL_EVERY", "Handshake", "HandshakeWatch", "request"]

_T = TypeVar("_T")

_EVENTS = (zmq.EVENT_CONNECTED | zmq.EVENT_CONNECT_RETRIED | zmq.EVENT_HANDSHAKE_SUCCEEDED
           | zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
           | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL)
_NAMES = itertools.count()

#: Seconds between reads of a request's monitor events.
POLL_EVERY = 0.01


def _drain(events: zmq.Socket) -> list[list[bytes]]:
    """The monitor events queued on ``events`` now (each two frames: event and value, endpoint)."""
    out: list[list[bytes]] = []
    while True:
        try:
            msg = [events.recv(zmq.NOBLOCK)]
            while events.getsockopt(zmq.RCVMORE):
                msg.append(events.recv(zmq.NOBLOCK))
        except zmq.Again:
            return out
        out.append(msg)


class Handshake(enum.Enum):
    """What the watch has seen of the connection so far (the last word wins, a failure stays)."""

    UNKNOWN = "unknown"              # nothing yet
    NOTHING_LISTENS = "nothing listens"  # the TCP connection was not accepted; zmq retries
    CONNECTED = "connected"          # TCP is up; the handshake is under way
    SUCCEEDED = "succeeded"          # the handshake (Curve, or none) is done
    REFUSED = "refused"              # the server's ZAP handler refused our key
    MISMATCH = "mismatch"            # the handshake failed: Curve on one end only, or another server key

    @property
    def failed(self) -> bool:
        """No answer can come on this connection (:func:`request` stops waiting)."""
        return self in (Handshake.REFUSED, Handshake.MISMATCH)


@dataclass(slots=True)
class HandshakeWatch:
    """The connection to ``address`` as its socket's monitor reports it."""

    address: str
    state: Handshake = Handshake.UNKNOWN
    status: int = 0  # the ZAP status code of a refusal (RFC 27: 400)

    def _seen(self, event: int, value: int) -> None:
        if self.state.failed:
            return
        if event == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
            self.state, self.status = Handshake.REFUSED, value
        elif event in (zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL, zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL):
            self.state = Handshake.MISMATCH
        elif event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
            self.state = Handshake.SUCCEEDED
        elif event == zmq.EVENT_CONNECTED:
            self.state = Handshake.CONNECTED
        elif event == zmq.EVENT_CONNECT_RETRIED and self.state is not Handshake.SUCCEEDED:
            self.state = Handshake.NOTHING_LISTENS


async def request(address: str, frames: list[bytes], accept: Callable[[list[bytes]], _T | None],
                  timeout: float, *, configure: Callable[[zmq.Socket], None] | None = None,
                  ctx: zmq.Context | None = None) -> tuple[_T | None, HandshakeWatch]:
    """Send ``frames`` on a DEALER connected to ``address``; the first reply ``accept`` takes.

    Returns (the value ``accept`` made of a reply, or None when none came within
    ``timeout`` or the handshake failed; the watch of the connection). The
    monitor PAIR is connected before the DEALER, so no event is missed, and
    a failed handshake ends the wait within :data:`POLL_EVERY`. ``configure`` is
    :func:`~ring.io.zmqio.open_socket`'s (Curve keys). A zmq error is raised
    as itself (a :class:`~ring.errors.RingError`), not in an exception group.
    """
    endpoint = f"inproc://ringcrawl-monitor-{os.getpid()}-{next(_NAMES)}"
    watch = HandshakeWatch(address)
    answer: _T | None = None

    monitored: list[zmq.Socket] = []

    def hook(sock: zmq.Socket) -> None:
        if configure is not None:
            configure(sock)
        sock.monitor(endpoint, _EVENTS)
        monitored.append(sock)

    ctx = ctx if ctx is not None else zmq.Context.instance()
    with trio.move_on_after(timeout):
        async with ZmqSocket(SocketType.DEALER, configure=hook, ctx=ctx) as sock:
            # The monitor's PAIR is read by polling, not by a second watched ZmqSocket: a
            # handshake sends a handful of events and its outcome matters at a human
            # timescale, so a request keeps one socket, one watcher task (ring.io.zmqio).
            events = ctx.socket(zmq.PAIR)
            try:
                events.setsockopt(zmq.LINGER, 0)
                events.connect(endpoint)
                sock.connect(address)
                async with trio.open_nursery() as nursery:

                    async def watching() -> None:
                        while True:
                            for event in _drain(events):
                                msg = parse_monitor_message(event)
                                watch._seen(int(msg["event"]), int(msg["value"]))
                            if watch.state.failed:
                                nursery.cancel_scope.cancel()  # no answer can come
                                return
                            await trio.sleep(POLL_EVERY)

                    async def exchange() -> None:
                        nonlocal answer
                        await sock.send_multipart(frames)
                        while answer is None:
                            answer = accept(await sock.recv_multipart())
                        nursery.cancel_scope.cancel()

                    nursery.start_soon(watching)
                    nursery.start_soon(exchange)
            except BaseExceptionGroup as group:
                # One task failed (a zmq error): raise it as the caller would see it without tasks.
                if len(group.exceptions) == 1 and isinstance(group.exceptions[0], Exception):
                    raise group.exceptions[0] from None
                raise
            finally:
                # The monitor stops before its reader closes: libzmq's I/O thread sends each
                # event with a blocking send, so an event (a reconnect's CONNECT_RETRIED) sent
                # to a PAIR whose reader is gone stalled every socket of the context.
                for raw in monitored:
                    raw.disable_monitor()
                events.close(linger=0)
    return answer, watch
