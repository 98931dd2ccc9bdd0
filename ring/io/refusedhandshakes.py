"""Connections a ROUTER refused during the ZMTP handshake, counted (edge).

A client that fails the handshake never delivers a message, so the codec's
drop counters (``ring.errors.DropKind``) never see it: on a Curve ring that is
every message of a client without Curve or with a key the ZAP handler
refuses (``ring.io.zap``), however many it queued. libzmq reports each such
connection on the socket's monitor (``zmq_socket_monitor``, one event a
connection), which :class:`RefusedHandshakes` reads and names:

=======================  ===============================================================
``handshake.protocol``   not our protocol or mechanism: a client without Curve at a Curve
                         ring (or with Curve at a plain one), a ZMTP greeting it garbled
``handshake.auth``       a Curve key the ZAP handler refused (RFC 27 status 400)
``handshake.closed``     closed or timed out before the handshake ended: a TCP connect
                         probe, a port scan, a client that gave up
=======================  ===============================================================

They are drops (``ring.vocabulary`` rule 4: refused input), shown with the
others by ``ring status`` and the metrics.

What libzmq does *not* report: a frame over ``MAXMSGSIZE`` after the
handshake (``ring.io.sockopts``) closes its connection with the same
``DISCONNECTED`` event as a client that hung up (libzmq 4.3's
``stream_engine_base_t::error`` emits no reason after the handshake;
measured: the two event sequences are identical), so such a frame cannot be
told apart from a normal close and is not counted here.

The monitor is an inproc PAIR socket libzmq writes to from its I/O thread;
:meth:`RefusedHandshakes.drain` reads it without blocking, and the owner calls
it often (``ring.io.sockets``: every ``DRAIN_EVERY`` seconds), so the events
of a connection flood wait in a queue of at most the PAIR's high-water mark.
"""

from __future__ import annotations

from collections import Counter

import zmq
from zmq.utils.monitor import parse_monitor_message

__all__ = ["DRAIN_EVERY", "HANDSHAKE_DROPS", "RefusedHandshakes"]

#: Monitor event -> the drop it counts (module docstring).
HANDSHAKE_DROPS: dict[int, str] = {
    zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL: "handshake.protocol",
    zmq.EVENT_HANDSHAKE_FAILED_AUTH: "handshake.auth",
    zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL: "handshake.closed",
}
#: Seconds between two drains of the monitor by its owner.
DRAIN_EVERY = 0.1
#: Events read in one drain at most: one call stays short whatever a flood queued.
_MAX_DRAIN = 1000


class RefusedHandshakes:
    """The handshake failures of one socket; :meth:`attach` is a ``configure`` hook."""

    def __init__(self) -> None:
        self._pair: zmq.Socket | None = None

    def attach(self, sock: zmq.Socket) -> None:
        """Start watching ``sock`` (before it binds, so no connection is missed)."""
        mask = 0
        for event in HANDSHAKE_DROPS:
            mask |= event
        self._pair = sock.get_monitor_socket(events=mask)

    def drain(self) -> Counter[str]:
        """The failures reported since the last drain, by drop name (never blocks)."""
        got: Counter[str] = Counter()
        pair = self._pair
        if pair is None:
            return got
        for _ in range(_MAX_DRAIN):
            try:
                frames = pair.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
            except zmq.ZMQError:
                break  # the watched socket is gone
            try:
                event = parse_monitor_message(frames)["event"]
            except (ValueError, KeyError, IndexError):
                continue
            name = HANDSHAKE_DROPS.get(int(event))
            if name is not None:
                got[name] += 1
        return got

    def close(self) -> None:
        if self._pair is not None:
            self._pair.close(linger=0)
            self._pair = None
