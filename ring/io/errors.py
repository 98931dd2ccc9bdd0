"""The exceptions of the ring's sockets, and the one place zmq's errors are translated.

Part of the ``ring.errors`` tree; a zmq error becomes one of these in
:func:`translate` and nowhere else, so nothing past ``ring.io`` sees one::

    RingError
    ├── SocketClosed        the socket was closed (also a trio.ClosedResourceError)
    ├── PeerUnreachable     a ROUTER has no connected peer of that identity
    ├── HandshakeRefused    the peer refused our Curve key, or the handshake failed (ring.io.handshake)
    └── TransportError      any other zmq failure: bad endpoint, address in use...
"""

from __future__ import annotations

import trio
import zmq

from ring.errors import RingError

__all__ = ["CLOSED_ERRNOS", "HandshakeRefused", "PeerUnreachable", "SocketClosed", "TransportError",
           "translate"]

#: The socket is gone (closed here, or its context terminated elsewhere).
CLOSED_ERRNOS = frozenset({zmq.ENOTSOCK, zmq.ETERM})


class SocketClosed(RingError, trio.ClosedResourceError):
    """The socket was closed (by :meth:`ZmqSocket.close` or leaving its ``async with``)."""


class PeerUnreachable(RingError, LookupError):
    """A ROUTER was asked to send to an identity with no connected peer.

    Also raised for a peer whose connection is still handshaking: a ROUTER
    learns a peer's identity only once the peer's connection is up.
    """

    def __init__(self, identity: bytes) -> None:
        super().__init__(f"no connected peer with identity {identity!r}")
        self.identity = identity


class HandshakeRefused(RingError):
    """The peer asked refused our Curve key (its ZAP handler said no), or the handshake failed.

    Raised by a tool's request (``ring.tools.client``) instead of the
    silence a zmq client otherwise gets: no answer can come on that
    connection, and the message says why and what to do.
    """


class TransportError(RingError):
    """A zmq call failed for a reason other than the two above."""


def translate(e: zmq.ZMQError, kind: str, what: str) -> RingError:
    """The error to raise for ``e``, raised by a ``kind`` socket doing ``what``."""
    if e.errno in CLOSED_ERRNOS:
        return SocketClosed(f"{kind} socket is closed ({e.strerror})")
    return TransportError(f"{kind} socket: {what}: {e.strerror}")
