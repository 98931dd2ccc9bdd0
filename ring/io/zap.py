"""CurveZMQ (RFC 26) for the ring's sockets: the ``configure`` hooks, and the ZAP (RFC 27) handler.

:func:`curve_server` and :func:`curve_client` are ``configure`` hooks of
``ring.io.zmqio.open_socket``: CurveZMQ (RFC 26) authenticates both ends and encrypts the traffic,
with the keys of :mod:`ring.io.curve`. Which client keys a server admits is
decided by a ZAP handler (RFC 27), :class:`CurveAuthenticator`: a trio task
on a ROUTER bound to ``inproc://zeromq.zap.01`` of the socket's context (a
ROUTER, which libzmq accepts there as well as a REP, so it is one more
:class:`~ring.io.zmqio.ZmqSocket`; pyzmq's ``ThreadAuthenticator`` would add a thread and an
asyncio loop for the same few lines). libzmq *admits every client key* when
no handler is bound (the "Stonehouse" pattern: encryption without
authentication), so :func:`curve_server` refuses to configure a socket whose
context has no authenticator running, and the authenticator must outlive the
server sockets (nest it outside them). A client with an unknown key fails
its handshake and a client without Curve fails the greeting: either way not
one of its messages reaches the server's recv. The cost on loopback is about
half the message rate (``scripts/bench_curve.py``).

What the handler decides is :class:`ZapPolicy` (a ZAP request's frames in,
the reply's frames out, no socket); :class:`CurveAuthenticator` serves it on
its ROUTER.
"""

from __future__ import annotations

import logging
import sys
import weakref
from collections.abc import Callable
from contextlib import AsyncExitStack
from types import TracebackType
from typing import TYPE_CHECKING

import trio
import zmq
import zmq.utils.z85

from ring.commandnames import spoken
from ring.errors import RingError
from ring.io.errors import PeerUnreachable, TransportError
from ring.io.sockopts import SocketType

from ring.io.zmqio import ZmqSocket

if TYPE_CHECKING:
    from ring.io.curve import CurveKeys

__all__ = ["ZAP_ENDPOINT", "HANDLED", "CurveAuthenticator", "ZapPolicy", "curve_client",
           "curve_keypair", "curve_server"]

log = logging.getLogger("ring.zmqio")

#: Where libzmq sends ZAP requests (RFC 27), one handler per context.
ZAP_ENDPOINT = "inproc://zeromq.zap.01"

#: Contexts with a ZAP handler running (``CurveAuthenticator`` keeps it): curve_server() checks it.
HANDLED: weakref.WeakSet[zmq.Context] = weakref.WeakSet()

# Distinct refused keys logged at WARNING; beyond that, refusals are only
# counted, so a client cycling through random keys cannot flood the log.
_DENIALS_LOGGED = 64


def curve_keypair() -> tuple[bytes, bytes]:
    """A new Curve25519 key pair, (public, secret), each 40 bytes of Z85."""
    return zmq.curve_keypair()


def _check_pair(keys: CurveKeys) -> None:
    # A secret from another pair passes every format check, then fails every
    # handshake without a word: say so when the socket is made instead.
    if zmq.curve_public(keys.secret) != keys.public:
        raise RingError(spoken(f"{keys.directory}/{keys.peer_id}.key_secret: the secret key does not "
                               "belong to its public key (regenerate the pair with python scripts/keys.py --force)",
                               sys.argv[0]))


def curve_server(keys: CurveKeys) -> Callable[[zmq.Socket], None]:
    """A ``configure`` hook making a socket a Curve server with ``keys``' secret.

    Use it on the ROUTER that binds, inside a running :class:`CurveAuthenticator`
    on the same context; without one, opening the socket raises RingError.
    """

    _check_pair(keys)

    def configure(sock: zmq.Socket) -> None:
        if sock.context not in HANDLED:
            raise RingError(
                "a Curve server socket needs a CurveAuthenticator running on its zmq context "
                "(enter it first): without a ZAP handler libzmq admits any client key"
            )
        try:
            sock.setsockopt(zmq.CURVE_SECRETKEY, keys.secret)
            sock.setsockopt(zmq.CURVE_PUBLICKEY, keys.public)
            sock.setsockopt(zmq.CURVE_SERVER, 1)
        except zmq.ZMQError as e:
            raise TransportError(f"Curve keys of {keys.peer_id!r} refused by zmq: {e.strerror}") from None

    return configure


def curve_client(keys: CurveKeys, server_public: bytes) -> Callable[[zmq.Socket], None]:
    """A ``configure`` hook making a socket a Curve client with ``keys``' pair.

    ``server_public`` is the Z85 public key of the peer it connects to
    (``keys.public_key(peer_id)``); a server holding another key fails the
    handshake, so nothing is sent to an impostor.
    """
    _check_pair(keys)

    def configure(sock: zmq.Socket) -> None:
        try:
            sock.setsockopt(zmq.CURVE_SECRETKEY, keys.secret)
            sock.setsockopt(zmq.CURVE_PUBLICKEY, keys.public)
            sock.setsockopt(zmq.CURVE_SERVERKEY, server_public)
        except zmq.ZMQError as e:
            raise TransportError(f"Curve keys of {keys.peer_id!r} refused by zmq: {e.strerror}") from None

    return configure


class ZapPolicy:
    """Which Curve clients a ZAP handler admits: those whose key is a member's (mutable).

    Members are the ``*.key`` files of ``keys.directory``; the directory is
    re-read whenever its ``*.key`` files change (checked at each handshake),
    so a joiner's key copied in is admitted, and a removed key refused, at
    the next handshake without a restart (connections already up stay up).
    ``accepted`` and ``denied`` count handshakes. A bad key file appearing
    later is logged and the previous allow-list kept.
    """

    def __init__(self, keys: CurveKeys) -> None:
        self.keys = keys
        self.accepted = 0
        self.denied = 0
        self._allowed: dict[bytes, str] = {}
        self._fingerprint: object = None
        self._logged: set[bytes] = set()

    def answer(self, frames: list[bytes]) -> list[bytes] | None:
        """The ZAP reply to one request: [routing id, b"", request frames...] (RFC 27)."""
        if len(frames) < 4 or frames[1] != b"":
            return None  # not a ZAP request envelope: nothing to answer to
        head = [frames[0], b"", b"1.0", frames[3]]
        if len(frames) < 9 or frames[2] != b"1.0":
            return [*head, b"400", b"malformed ZAP request", b"", b""]
        address, mechanism, creds = frames[5], frames[7], frames[8:]
        if mechanism != b"CURVE" or len(creds) != 1 or len(creds[0]) != 32:
            self.denied += 1
            return [*head, b"400", b"CURVE required", b"", b""]
        key = zmq.utils.z85.encode(creds[0])
        if self.keys.fingerprint() != self._fingerprint:
            self.reload()
        peer = self._allowed.get(key)
        if peer is None:
            self.denied += 1
            if key not in self._logged and len(self._logged) < _DENIALS_LOGGED:
                self._logged.add(key)
                log.warning("refused a Curve handshake from %s: key %s is not in %s",
                            address.decode("ascii", "replace"), key.decode("ascii"), self.keys.directory)
            return [*head, b"400", b"unknown key", b"", b""]
        self.accepted += 1
        return [*head, b"200", b"OK", peer.encode(), b""]

    def reload(self) -> None:
        """Read the allow-list again (at start: a bad key file raises; later it is logged)."""
        fingerprint = self.keys.fingerprint()
        try:
            self._allowed = dict(self.keys.members())
        except RingError as e:
            if self._fingerprint is None:
                raise  # at start: a bad key file is the user's to fix now
            log.warning("keeping the previous Curve allow-list: %s", e)
        self._fingerprint = fingerprint


class CurveAuthenticator:
    """The ZAP handler of one zmq context: admits Curve clients whose key is a member's.

    Which keys, and how a change of the keys directory is picked up:
    :class:`ZapPolicy`. Use it around the Curve server sockets::

        async with CurveAuthenticator(keys):
            async with open_socket("ROUTER", bind=addr, configure=curve_server(keys)) as sock:
                ...

    ``accepted`` and ``denied`` count handshakes.
    """

    def __init__(self, keys: CurveKeys, *, ctx: zmq.Context | None = None) -> None:
        self.keys = keys
        self._policy = ZapPolicy(keys)
        self._ctx = ctx
        self._stack: AsyncExitStack | None = None

    @property
    def accepted(self) -> int:
        """Handshakes admitted."""
        return self._policy.accepted

    @property
    def denied(self) -> int:
        """Handshakes refused."""
        return self._policy.denied

    async def __aenter__(self) -> CurveAuthenticator:
        if self._stack is not None:
            raise RuntimeError("a CurveAuthenticator can be entered only once")
        ctx = self._ctx if self._ctx is not None else zmq.Context.instance()
        if ctx in HANDLED:
            raise RingError("a CurveAuthenticator is already running on this zmq context")
        self._policy.reload()
        async with AsyncExitStack() as stack:
            sock = await stack.enter_async_context(ZmqSocket(SocketType.ROUTER, ctx=ctx))
            try:
                sock.bind(ZAP_ENDPOINT)
            except TransportError as e:
                raise RingError(f"cannot start the ZAP handler ({e}): another one is bound "
                                "on this zmq context") from None
            # Closing frees an inproc name only later, in zmq's reaper thread:
            # unbinding frees it now, for the next authenticator on this context.
            stack.callback(sock.unbind, ZAP_ENDPOINT)
            nursery = await stack.enter_async_context(trio.open_nursery())
            stack.callback(nursery.cancel_scope.cancel)  # runs before the nursery waits
            nursery.start_soon(self._serve, sock, name="zmq ZAP handler")
            HANDLED.add(ctx)
            stack.callback(HANDLED.discard, ctx)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        # As ZmqSocket.__aexit__: the body's exception propagates as is, not
        # wrapped by the nursery, which only waits for the cancelled handler.
        assert self._stack is not None  # set by __aenter__
        await self._stack.__aexit__(None, None, None)
        return False

    async def _serve(self, sock: ZmqSocket) -> None:
        while True:
            for frames in await sock.recv_batch(100):
                reply = self._policy.answer(frames)
                if reply is None:
                    continue
                try:
                    await sock.send_multipart(reply)
                except PeerUnreachable:
                    pass  # the connection that asked is already gone
