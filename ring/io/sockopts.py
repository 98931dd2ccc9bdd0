"""The options every ring socket is opened with, and why (the zmq side of ``ring.io.zmqio``).

:func:`apply_options` sets them on a new raw ``zmq.Socket``, before the
caller's ``configure`` hook and before any bind or connect. What they are
built against (measured on this box; ``tests/edges/test_zmqio.py`` and
``tests/e2e/test_hostile.py`` keep each fact tested):

**Losses by socket type.** PUB drops at HWM, so it is not offered
(:class:`SocketType`). PUSH, DEALER and PAIR block at HWM. ROUTER silently drops to
an unknown peer or a full queue unless ``ROUTER_MANDATORY`` is set, which
:func:`~ring.io.zmqio.open_socket` always does: an unknown identity raises
:class:`~ring.io.errors.PeerUnreachable`, a full queue is EAGAIN and the send
waits (backpressure).

**Routes: no takeover.** ROUTER sockets do *not* get ``ROUTER_HANDOVER``. With
it, any connection announcing a live peer's routing id took that route: libzmq
parked the real peer's connection unread, so one spoofed DEALER connecting to
p1 as ``p2`` made p1 hold p2 dead within about 6 s and never hear from it
again (both then crawled p2's hosts: 320 pages fetched twice). Without it,
libzmq ignores a newcomer whose routing id is already connected (its messages
are never delivered) and the first keeps its route. That would lock out a
member that restarts while its old TCP connection still lingers (a host that
vanished without a FIN), so a member's DEALERs use
:func:`~ring.forwarding.routes.member_route` ``b"<member id>/<nonce>"``, a fresh random
nonce each process: a restart is a new route, never a duplicate, and the
member id also travels in every message (``sender``), which the receiver
checks against :func:`~ring.forwarding.routes.route_member` of the route. With CurveZMQ
the connection's ZAP User-Id (the member id of its key, set by
:class:`~ring.io.zap.CurveAuthenticator`) must match as well;
:meth:`~ring.io.zmqio.ZmqSocket.recv_routed` hands it over with each message.
ZMTP heartbeats (``heartbeat=``) close a lingering connection whose other end
answers no PING.

**Receive memory is bounded per connection.** A message larger than the
codec's frame limit (``MAXMSGSIZE`` = :data:`ring.messages.MAX_FRAME`, 8 MiB)
makes libzmq drop the connection as soon as the frame's header arrives, before
any of its body is buffered; a connection holds at most ``rcvhwm`` whole
messages, queued, plus the one being read; and one
:meth:`~ring.io.zmqio.ZmqSocket.recv_batch` takes at most
:data:`~ring.io.zmqio.BATCH_BYTES`. A peer's ROUTER uses ``[ring] recv_queue``
(16): at most 17 x 8 MiB per connection. With libzmq's old limit of 64 MiB and
1,000 messages, ten 50 MB frames took a peer from 123 MB to 883 MB RSS; a
flood of 50 MB and 1 MiB garbage frames from 4 connections now adds 14 MiB
(tests/e2e/test_hostile.py). A queue of 16 costs no measurable rate:
``scripts/bench_zmq.py --rcvhwm 16`` received 168k 1 KB msgs/s against 158k at
1,000, and 16-17k 40 KB msgs/s (a URL batch's size: 8 M URLs/s) against
17-23k, within this box's noise. libzmq counts nothing it refuses this way (no
per-reason event after the handshake): the codec's own counters see only what
gets through.

**Addresses** (:func:`address_options`, before each bind or connect):
``ZMQ_IPV6`` for an IPv6 literal, a name or ``*`` (``ring.addresses``: without
it a bind of ``[::1]`` fails with ENODEV and a connect to it never
completes). A connection to a *name* backs off its reconnects from
``RECONNECT_IVL`` (100 ms) to :data:`NAME_RECONNECT_MAX`: libzmq resolves the
name again at each attempt, in its I/O thread, so an unreachable named peer
costs at most about one lookup a second instead of ten.
"""

from __future__ import annotations

from enum import StrEnum

import zmq

from ring.addresses import is_name, needs_ipv6

__all__ = ["NAME_RECONNECT_MAX", "SocketType", "ZMQ_TYPE", "address_options", "apply_options"]

#: Milliseconds the reconnect interval to a named peer grows to (doubling from
#: 100 ms): at most ~1 DNS lookup a second each, and a peer back at a new
#: address is reached within a second of its start, well inside dead_after.
NAME_RECONNECT_MAX = 1000


class SocketType(StrEnum):
    """The socket types offered. PUB/SUB are not: PUB drops at HWM."""

    ROUTER = "ROUTER"
    DEALER = "DEALER"
    PUSH = "PUSH"
    PULL = "PULL"
    #: The reading end of a socket monitor (``zmq_socket_monitor``): libzmq sends its events on a PAIR.
    PAIR = "PAIR"


ZMQ_TYPE = {
    SocketType.ROUTER: zmq.ROUTER,
    SocketType.DEALER: zmq.DEALER,
    SocketType.PUSH: zmq.PUSH,
    SocketType.PULL: zmq.PULL,
    SocketType.PAIR: zmq.PAIR,
}


def apply_options(sock: zmq.Socket, *, router: bool, linger: int, hwm: int, rcvhwm: int,
                  max_msg: int, heartbeat: tuple[float, float] | None,
                  identity: bytes | None) -> None:
    """Set the options above on ``sock`` (``ZmqSocket``'s arguments, checked already)."""
    sock.setsockopt(zmq.LINGER, linger)
    sock.setsockopt(zmq.SNDHWM, hwm)
    # Receive memory is bounded per connection (module docstring):
    # at most rcvhwm queued messages of at most max_msg bytes each;
    # libzmq drops the connection of a peer sending a larger one,
    # before reading its body.
    sock.setsockopt(zmq.RCVHWM, rcvhwm)
    sock.setsockopt(zmq.MAXMSGSIZE, max_msg)
    if heartbeat is not None:
        ivl, timeout = heartbeat
        sock.setsockopt(zmq.HEARTBEAT_IVL, max(1, round(ivl * 1000)))
        sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, max(1, round(timeout * 1000)))
        # A connect whose SYN is lost (a split, a blackholed route) is given
        # up after the heartbeat's timeout and tried again at once, instead
        # of waiting out the kernel's SYN backoff (1, 2, 4... s, about two
        # minutes in all): a ring heals seconds after its network does.
        sock.setsockopt(zmq.CONNECT_TIMEOUT, max(1, round(timeout * 1000)))
    if identity is not None:
        sock.setsockopt(zmq.ROUTING_ID, identity)
    if router:
        # No ROUTER_HANDOVER: with it, any connection naming a live
        # peer's routing id took that peer's route (module docstring).
        sock.setsockopt(zmq.ROUTER_MANDATORY, 1)


def address_options(sock: zmq.Socket, addr: str) -> None:
    """Set what ``addr`` needs on ``sock`` before a bind or connect to it (module docstring)."""
    if needs_ipv6(addr):
        sock.setsockopt(zmq.IPV6, 1)
    if is_name(addr):
        sock.setsockopt(zmq.RECONNECT_IVL_MAX, NAME_RECONNECT_MAX)
