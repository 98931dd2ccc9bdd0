"""Connections for the fetcher: an origin's addresses connected to, TLS, the idle keep-alive pool.

:class:`Connector` opens a new connection to ``(scheme, host, port)``: the
host's addresses come from :class:`peer.net.resolver.Resolver` (its cache,
one query per name, and the SSRF guard on every address), and are raced by
happy eyeballs (RFC 8305, :mod:`peer.core.dns.eyeballs`: IPv6 first, the families
interleaved, the next address started when the one before fails or after
250 ms), the first to connect winning and the others cancelled in their
nursery, their sockets closed; a connect and a TLS handshake each get
``connect_timeout`` seconds, so an address that black-holes costs a quarter
of a second, not the fetch's total deadline. A host with one address is
connected to directly, as before (no nursery, no timer). TLS is a
``trio.SSLStream`` given the host name, so
SNI and the certificate check see the name, not the IP; ALPN offers HTTP/1.1
only. :class:`IdlePool` keeps a shard's idle connections by origin (its rules
in its docstring). Through a proxy (``peer.net.proxy``) a connection's key
names the proxy too, and TLS runs end to end over the tunnel. A
:class:`Conn` is closed by closing its socket,
synchronously, so a deadline can never leave one half open.
:func:`certificate_line` opens one to show ``try`` its origin's certificate.
"""

from __future__ import annotations

import ssl
import tempfile
from typing import Any

import trio

from peer.core.dns.eyeballs import ATTEMPT_DELAY, attempt_order
from peer.core.config.proxies import Proxy
from peer.errors import ErrorKind, FetchError
from peer.net.errorkinds import error_detail, error_kind
from peer.net.proxy import ProxyDialer
from peer.net.resolver import Resolver
from peer.net.tls import TlsContexts

__all__ = ["KEEPALIVE_EXPIRY", "Conn", "Connector", "IdlePool", "certificate_line"]

#: Seconds an idle keep-alive connection may wait for its next request.
KEEPALIVE_EXPIRY = 10.0

class Conn:
    """One open connection to an origin (TCP, or TLS over TCP), the address it went to,
    and the addresses tried to open it (in the order their attempts started)."""

    __slots__ = ("stream", "sock", "key", "address", "tried", "idle_since")

    def __init__(self, stream: trio.abc.Stream, sock: Any, key: tuple[Any, ...],
                 address: str | None, tried: tuple[str, ...] = ()) -> None:
        self.stream = stream
        self.sock = sock
        self.key = key
        self.address = address
        self.tried = tried or ((address,) if address else ())
        self.idle_since = 0.0

    def close(self) -> None:
        # The socket, not the stream: synchronous, so it also runs when a
        # deadline cancelled the fetch, and a crawler owes a server whose
        # response it abandons no TLS close_notify (curl also just closes).
        self.sock.close()


class IdlePool:
    """A shard's idle keep-alive connections, by origin, at most ``cap`` of them.

    A connection is taken only if it has been idle under the keep-alive
    expiry and its socket is not readable: bytes on an idle connection are
    the server's close or the start of a response nobody asked for, and the
    next request would read them as its own (httpcore's rule, kept). Over the
    cap, the connection idle longest is closed.
    """

    __slots__ = ("cap", "_by_key", "_order")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._by_key: dict[tuple[Any, ...], list[Conn]] = {}
        self._order: dict[Conn, None] = {}  # insertion order = idle since

    def take(self, key: tuple[Any, ...], now: float) -> Conn | None:
        conns = self._by_key.get(key)
        while conns:
            conn = conns.pop()
            del self._order[conn]
            if not conns:
                del self._by_key[key]
            if now - conn.idle_since > KEEPALIVE_EXPIRY or conn.sock.is_readable():
                conn.close()
                continue
            return conn
        return None

    def put(self, conn: Conn, now: float) -> None:
        conn.idle_since = now
        order = self._order
        while order:
            oldest = next(iter(order))
            if len(order) < self.cap and now - oldest.idle_since <= KEEPALIVE_EXPIRY:
                break
            self._drop(oldest)
        order[conn] = None
        self._by_key.setdefault(conn.key, []).append(conn)

    def _drop(self, conn: Conn) -> None:
        del self._order[conn]
        conns = self._by_key[conn.key]
        conns.remove(conn)
        if not conns:
            del self._by_key[conn.key]
        conn.close()

    def close(self) -> None:
        for conn in list(self._order):
            self._drop(conn)

    def __len__(self) -> int:
        return len(self._order)


class Connector:
    """Opens connections: ``await connector.connect(scheme, host, port) -> Conn``."""

    def __init__(self, resolver: Resolver, *, connect_timeout: float, tls: TlsContexts,
                 proxies: ProxyDialer | None = None) -> None:
        self.resolver = resolver
        self.proxies = proxies
        self._connect_timeout = connect_timeout
        # The contexts by host (peer/net/tls.py): without TLS options, one made
        # at the first https URL; ALPN offers HTTP/1.1 only, as httpcore did.
        self.tls = tls

    def ssl_context(self, host: str = "") -> ssl.SSLContext:
        """The TLS context for ``host`` (peer/net/tls.py's rules)."""
        return self.tls.for_host(host)

    async def connect(self, scheme: str, host: str, port: int, proxy: Proxy | None = None,
                      tried: list[str] | None = None) -> Conn:
        """A new connection: the resolver's addresses raced, the first to connect wins.

        The SSRF guard already ran in the resolver, and the race connects to
        a subset of exactly the addresses it saw; SNI and the certificate
        check see the host name. ``tried``, if given, gets each address as
        its attempt starts (kept when every attempt fails). With ``proxy``,
        through it (its key in the idle pool names the proxy).
        """
        if proxy is not None:
            return await self._proxied(scheme, host, port, proxy)
        order = attempt_order(await self.resolver.resolve(host))
        if tried is None:
            tried = []
        if len(order) == 1:
            address = order[0]
            tried.append(address)
            tcp = await self._attempt(address, port)
        else:
            tcp, address = await self._race(order, port, tried)
        stream: trio.abc.Stream = await self._tls(tcp, host) if scheme == "https" else tcp
        return Conn(stream, tcp.socket, (scheme, host, port), address, tuple(tried))

    async def _attempt(self, address: str, port: int) -> trio.SocketStream:
        """One TCP connect to an IP literal, bounded by ``connect_timeout``."""
        with trio.move_on_after(self._connect_timeout):
            return await trio.open_tcp_stream(address, port)
        raise FetchError(ErrorKind.CONNECT, f"connect to {address} timed out")

    async def _race(self, order: tuple[str, ...], port: int,
                    tried: list[str]) -> tuple[trio.SocketStream, str]:
        """RFC 8305 §5 over ``order``: the first to connect wins; else the last failure raises.

        trio's ``open_tcp_stream(happy_eyeballs_delay=...)`` races the same
        way, but resolves the name itself, around our cache and guard; this
        is its loop over our addresses.
        """
        won: list[tuple[trio.SocketStream, str]] = []
        failures: list[Exception] = []

        async def attempt(address: str, failed: trio.Event, nursery: trio.Nursery) -> None:
            try:
                tcp = await self._attempt(address, port)
            except (OSError, FetchError) as exc:
                failures.append(exc)
                failed.set()
                return
            if won:  # two connected before the cancel reached this one: one is kept
                tcp.socket.close()
                return
            won.append((tcp, address))
            nursery.cancel_scope.cancel()

        try:
            async with trio.open_nursery() as nursery:
                for address in order:
                    failed = trio.Event()
                    tried.append(address)
                    nursery.start_soon(attempt, address, failed, nursery)
                    with trio.move_on_after(ATTEMPT_DELAY):
                        await failed.wait()
        except BaseException:
            # Cancelled from outside (the fetch's deadline) after a winner
            # connected: nobody will close its socket but us.
            for tcp, _ in won:
                tcp.socket.close()
            raise
        if won:
            return won[0]
        raise failures[-1]

    async def _tls(self, tcp: trio.SocketStream, host: str) -> trio.abc.Stream:
        """TLS over ``tcp`` to ``host`` (SNI and the certificate check see the name)."""
        sock = tcp.socket
        stream = trio.SSLStream(tcp, self.tls.for_host(host), server_hostname=host, https_compatible=True)
        done = False
        try:
            with trio.move_on_after(self._connect_timeout):
                await stream.do_handshake()
                done = True
        finally:
            if not done:
                sock.close()
        if not done:
            raise FetchError(ErrorKind.CONNECT, "TLS handshake timed out")
        return stream

    async def _proxied(self, scheme: str, host: str, port: int, proxy: Proxy) -> Conn:
        """A new connection through ``proxy`` (peer.net.proxy); TLS end to end over it."""
        assert self.proxies is not None, "a proxy without a dialer: the Fetcher makes both"
        tcp, address = await self.proxies.open(proxy, host, port)
        stream: trio.abc.Stream = await self._tls(tcp, host) if scheme == "https" else tcp
        return Conn(stream, tcp.socket, (scheme, host, port, proxy.url), address)


async def certificate_line(connector: Connector, host: str, port: int, verify: bool,
                           proxy: Any = None) -> str:
    """What ``python -m peer try`` says of an https origin's certificate: subject,
    issuer and expiry, and which check applied; or why the handshake failed.
    Through ``proxy`` (a ``peer.core.config.proxies.Proxy``) if the host has one, as the fetch goes."""
    try:
        conn = await connector.connect("https", host, port, proxy)
    except Exception as exc:  # a connect's failures are shown, as the fetch's are
        kind = error_kind(exc)
        return f"handshake failed: {kind or type(exc).__name__}: {error_detail(exc)}"
    try:
        stream = conn.stream
        assert isinstance(stream, trio.SSLStream)
        cert = stream.getpeercert() if verify else _decode(stream.getpeercert(binary_form=True))
        checked = ("verified (certificate and host name)" if verify
                   else "NOT verified ([[site]] verify = false)")
        if not cert:
            return f"{checked}; certificate not readable"

        def name(field: str) -> str:
            rdns = cert.get(field, ())
            return ", ".join(f"{k}={v}" for rdn in rdns for k, v in rdn) or "?"

        names = ", ".join(v for k, v in cert.get("subjectAltName", ()) if k == "DNS") or "none"
        return (f"{checked}; {stream.version()}, ALPN {stream.selected_alpn_protocol() or 'none'}; "
                f"subject {name('subject')}; names {names}; issuer {name('issuer')}; "
                f"expires {cert.get('notAfter', '?')}")
    finally:
        conn.close()


def _decode(der: bytes | None) -> dict[str, Any]:
    """An unverified certificate's fields: OpenSSL parses only verified ones for
    getpeercert(), so the DER goes through the decoder CPython's own tests use."""
    if not der:
        return {}
    decode = getattr(ssl, "_ssl", None) and getattr(ssl._ssl, "_test_decode_cert", None)  # type: ignore[attr-defined]
    if decode is None:
        return {}
    with tempfile.NamedTemporaryFile("w", suffix=".pem") as f:
        f.write(ssl.DER_cert_to_PEM_cert(der))
        f.flush()
        return dict(decode(f.name))
