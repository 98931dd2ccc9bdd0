"""Test proxies on loopback: an HTTP CONNECT proxy and a SOCKS5 proxy that log every tunnel.

What a crawl through a proxy is judged by. Each proxy serves on a loopback
port and writes one :class:`TunnelEntry` per request for a tunnel: the
client's address, the target ``host:port`` as asked (a name, with remote
DNS; an address, with ``socks5://``), the user name it presented (never the
password) and the outcome. Its connections to the targets leave from
``source`` (default ``127.0.0.2``, another loopback address), so the web
server's own log tells a request that came through the proxy (client
``127.0.0.2``) from one that did not (``127.0.0.1``).

A proxy resolves target names itself, through ``resolve`` (a mapping of
host globs to an IP, like ``[dns] resolve``): names it cannot map get
``502`` (CONNECT) or reply 4, host unreachable (SOCKS5). With
``credentials=("user", "password")`` it asks for them: a CONNECT without
the right ``Proxy-Authorization: Basic`` gets 407 (RFC 9110 §15.5.8); a
SOCKS5 client must take method 2 and pass RFC 1929's login. ``refuse``
makes the CONNECT proxy answer every request with that status.

Both are small and strict about nothing but what the tests need; they are
test servers, never for real traffic (they bind loopback only).
"""

from __future__ import annotations

import base64
import fnmatch
import ipaddress
import json
import struct
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import trio

__all__ = ["ConnectProxy", "Socks5Proxy", "TunnelEntry"]

_MAX_HEAD = 16 * 1024


@dataclass(frozen=True, slots=True)
class TunnelEntry:
    """One request for a tunnel: who asked, for what, as whom, and what came of it."""

    kind: str      # "connect" or "socks5"
    client: str    # ip:port of the client
    target: str    # host:port as the client asked
    user: str      # the user name presented, "" for none (the password is never logged)
    outcome: str   # "ok", "auth", "refused", "unreachable", "bad"
    upstream: str = ""  # ip:port the proxy's connection to the target left from


class _Proxy:
    """What both proxies share: serving, the log, resolving, piping."""

    kind = ""

    def __init__(self, *, resolve: Mapping[str, str] | None = None,
                 credentials: tuple[str, str] | None = None, source: str = "127.0.0.2",
                 log_path: str | None = None) -> None:
        self.resolve = dict(resolve or {})
        self.credentials = credentials
        self.source = source
        self.log: list[TunnelEntry] = []
        self._log_path = log_path
        self.port = 0
        self._cancel: trio.CancelScope | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def serve(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Serve on 127.0.0.1 until cancelled; ``nursery.start(proxy.serve)`` waits for the port."""
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        with trio.CancelScope() as self._cancel:
            async with trio.open_nursery() as nursery:
                task_status.started(self.port)
                await trio.serve_listeners(self._handle, listeners, handler_nursery=nursery)

    def stop(self) -> None:
        if self._cancel is not None:
            self._cancel.cancel()

    def _record(self, entry: TunnelEntry) -> None:
        self.log.append(entry)
        if self._log_path:
            with open(self._log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(asdict(entry)) + "\n")

    def _lookup(self, host: str) -> str | None:
        try:
            return str(ipaddress.ip_address(host.strip("[]")))
        except ValueError:
            pass
        for pattern, ip in self.resolve.items():
            if fnmatch.fnmatchcase(host.lower(), pattern.lower()):
                return ip
        return None

    async def _upstream(self, host: str, port: int) -> trio.SocketStream | None:
        ip = self._lookup(host)
        if ip is None:
            return None
        sock = trio.socket.socket(trio.socket.AF_INET6 if ":" in ip else trio.socket.AF_INET)
        try:
            if ":" not in ip:
                await sock.bind((self.source, 0))
            await sock.connect((ip, port))
        except OSError:
            sock.close()
            return None
        return trio.SocketStream(sock)

    async def _handle(self, stream: trio.SocketStream) -> None:
        try:
            client = "%s:%d" % stream.socket.getpeername()[:2]
        except OSError:
            return
        try:
            await self._serve_one(stream, client)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError, ValueError, struct.error):
            pass
        finally:
            await trio.aclose_forcefully(stream)

    async def _serve_one(self, stream: trio.SocketStream, client: str) -> None:
        raise NotImplementedError

    @staticmethod
    async def _pipe(a: trio.SocketStream, b: trio.SocketStream) -> None:
        async def one_way(src: trio.SocketStream, dst: trio.SocketStream) -> None:
            try:
                while data := await src.receive_some(65536):
                    await dst.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass
            nursery.cancel_scope.cancel()

        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(one_way, a, b)
                nursery.start_soon(one_way, b, a)
        finally:
            b.socket.close()  # synchronous: also when the proxy is stopped mid-tunnel


class ConnectProxy(_Proxy):
    """An HTTP proxy that tunnels ``CONNECT host:port`` and nothing else (module docstring)."""

    kind = "connect"

    def __init__(self, *, refuse: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.refuse = refuse

    async def _serve_one(self, stream: trio.SocketStream, client: str) -> None:
        buf = b""
        while b"\r\n\r\n" not in buf:
            data = await stream.receive_some(4096)
            if not data or len(buf) > _MAX_HEAD:
                return
            buf += data
        head = buf.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
        method, target, _ = (head[0].split(" ") + ["", ""])[:3]
        fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:])}
        user, password = "", None
        auth = fields.get("proxy-authorization", "")
        if auth.lower().startswith("basic "):
            try:
                user, _, password = base64.b64decode(auth[6:]).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                user = "?"
        host, _, port = target.rpartition(":")

        def entry(outcome: str, upstream: str = "") -> TunnelEntry:
            return TunnelEntry(self.kind, client, target, user, outcome, upstream)

        if method != "CONNECT" or not host or not port.isdigit():
            self._record(entry("bad"))
            await stream.send_all(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return
        if self.credentials is not None and (user, password) != self.credentials:
            self._record(entry("auth"))
            await stream.send_all(b'HTTP/1.1 407 Proxy Authentication Required\r\n'
                                  b'Proxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n\r\n')
            return
        if self.refuse is not None:
            self._record(entry("refused"))
            await stream.send_all(b"HTTP/1.1 %d Refused\r\nContent-Length: 0\r\n\r\n" % self.refuse)
            return
        up = await self._upstream(host.strip("[]"), int(port))
        if up is None:
            self._record(entry("unreachable"))
            await stream.send_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        self._record(entry("ok", "%s:%d" % up.socket.getsockname()[:2]))
        await stream.send_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await self._pipe(stream, up)


class Socks5Proxy(_Proxy):
    """A SOCKS5 proxy (RFC 1928) with RFC 1929's login when ``credentials`` are set."""

    kind = "socks5"

    async def _exactly(self, stream: trio.SocketStream, n: int) -> bytes:
        out = b""
        while len(out) < n:
            data = await stream.receive_some(n - len(out))
            if not data:
                raise trio.BrokenResourceError("closed")
            out += data
        return out

    async def _serve_one(self, stream: trio.SocketStream, client: str) -> None:
        ver, n = await self._exactly(stream, 2)
        methods = await self._exactly(stream, n)
        if ver != 5:
            return
        want = 2 if self.credentials is not None else 0
        if want not in methods:
            self._record(TunnelEntry(self.kind, client, "", "", "auth"))
            await stream.send_all(b"\x05\xff")
            return
        await stream.send_all(bytes([5, want]))
        user = ""
        if want == 2:
            _, ulen = await self._exactly(stream, 2)
            user = (await self._exactly(stream, ulen)).decode("utf-8", "replace")
            (plen,) = await self._exactly(stream, 1)
            password = (await self._exactly(stream, plen)).decode("utf-8", "replace")
            if (user, password) != self.credentials:
                self._record(TunnelEntry(self.kind, client, "", user, "auth"))
                await stream.send_all(b"\x01\x01")
                return
            await stream.send_all(b"\x01\x00")
        _, cmd, _, atyp = await self._exactly(stream, 4)
        if atyp == 1:
            host = str(ipaddress.IPv4Address(await self._exactly(stream, 4)))
        elif atyp == 4:
            host = str(ipaddress.IPv6Address(await self._exactly(stream, 16)))
        elif atyp == 3:
            (hlen,) = await self._exactly(stream, 1)
            host = (await self._exactly(stream, hlen)).decode("idna")
        else:
            return
        (port,) = struct.unpack("!H", await self._exactly(stream, 2))
        target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        up = await self._upstream(host, port) if cmd == 1 else None
        if up is None:
            self._record(TunnelEntry(self.kind, client, target, user, "unreachable"))
            await stream.send_all(b"\x05\x04\x00\x01" + bytes(6))  # host unreachable
            return
        self._record(TunnelEntry(self.kind, client, target, user, "ok",
                                 "%s:%d" % up.socket.getsockname()[:2]))
        await stream.send_all(b"\x05\x00\x00\x01" + bytes(6))
        await self._pipe(stream, up)
