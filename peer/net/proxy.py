"""Connections through a proxy: an HTTP CONNECT tunnel or a SOCKS5 handshake (edge).

:func:`proxy_routes` reads the credentials (an environment variable or a
file, ``peer.core.config.proxies`` rule 3) once, at start, and says which proxy
each host goes through; None when no proxy is configured, so the fetcher's
default path costs one ``is None`` check. :class:`ProxyDialer` opens a TCP
stream to an origin through a proxy; TLS, if the origin is https, is
``peer.net.connections``'s, end to end over the tunnel, SNI and the
certificate check seeing the origin's name.

- **SOCKS5** is python-socks's handshake (RFC 1928, RFC 1929 login) on its
  trio backend, a library kept by others and tested against real servers,
  given the proxy's *address*: its own resolver never runs, so the proxy's
  name goes through ours (``[dns]``, the cache) and the guard below.
- **HTTP CONNECT** is ours, a few lines over :mod:`peer.core.http.tunnel` and
  :class:`peer.core.http.http1.ResponseReader`: python-socks reads a CONNECT
  answer in one ``recv`` and parses its first line only, so a head split
  over two segments leaves its end on the socket, where the TLS handshake
  or the response would read it (the desync the fetcher's docstring
  describes); it also sends its own User-Agent, where ours names the crawler.
  The reader applies h11's rules and a 16 KiB cap to the answer.
- **The guards.** The proxy's addresses are refused unless public or
  ``crawl.proxy_allow_private`` (rows ``proxy``; a literal or static one was
  already refused at start). The target: with ``socks5`` it is resolved
  here and guarded as a direct connection is, and its first address sent;
  with ``socks5h`` and
  ``http`` the proxy resolves it, and the guard sees only what is known
  without asking DNS (an IP literal, a ``[dns] resolve`` entry, a cached
  answer): a name whose public DNS answer is private is beyond it, and the
  proxy's own policy must stop it (docs/configuration.md, Proxies).
- **A name ``[dns] resolve`` pins** goes to every kind of proxy as its
  pinned address (``CONNECT 127.0.0.1:8080``, a SOCKS5 request for the
  address): the pin is the user's word on where that name leads, and a
  proxy that resolves names itself cannot know a name only this machine
  maps (it answered 502, or SOCKS5 "host unreachable", to every request).
  Only the tunnel's end changes: the request's Host field and TLS's SNI
  and certificate check, which travel inside the tunnel, still name the
  host, so a virtual host or a certificate for the name is served as
  without a proxy (curl's ``--connect-to`` does the same). The address is
  the proxy's view of it: a proxy on another machine reaches 127.0.0.1 as
  itself, which the row's ``proxy_refused`` detail names.
- **Whose fault.** Only a proxy address that cannot be connected to moves
  on to the proxy's next address; any answer is final. Failures are
  :func:`peer.net.errorkinds.proxy_error`'s kinds: ``proxy``,
  ``proxy_auth``, ``proxy_refused``. Credentials appear in no message.
- **The address** a fetch reports (per-IP politeness, the results'
  ``address``) is the target's IP when known here (``socks5``), else none:
  the proxy's would put every host behind it in one IP budget.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import trio

from peer.core.dns.guard import filter_public
from peer.core.config.proxies import Credentials, Proxy, ProxyRoutes, ProxyScheme, ProxySpec, parse_credentials
from peer.core.http.http1 import ResponseReader
from peer.core.http.tunnel import MAX_CONNECT_HEAD, connect_request, connect_verdict
from peer.errors import ConfigError, ErrorKind, FetchError
from peer.net.errorkinds import proxy_error
from peer.net.resolver import Resolver

__all__ = ["ProxyDialer", "load_credentials", "proxy_routes"]


def load_credentials(spec: ProxySpec, environ: Mapping[str, str] | None = None) -> Credentials | None:
    """The credentials ``spec`` names, read now; ConfigError (one line, no secret) if unreadable."""
    env = os.environ if environ is None else environ
    if spec.auth_env:
        text = env.get(spec.auth_env)
        if text is None:
            raise ConfigError(f"${spec.auth_env}", "", f"not set: it should hold user:password for the proxy {spec.url}")
        return parse_credentials(text, f"${spec.auth_env}")
    if spec.auth_file:
        try:
            with open(os.path.expanduser(spec.auth_file), encoding="utf-8") as f:
                text = f.read(4096)
        except (OSError, UnicodeDecodeError) as exc:
            why = getattr(exc, "strerror", None) or type(exc).__name__
            raise ConfigError(spec.auth_file, "", f"cannot read the proxy's credentials: {why}") from None
        return parse_credentials(text, spec.auth_file)
    return None


def proxy_routes(crawl: Any, sites: Any = None, environ: Mapping[str, str] | None = None) -> ProxyRoutes | None:
    """Which proxy each host goes through (credentials read now), or None if there is none.

    ``crawl`` is the ``[crawl]`` config, ``sites`` the ``SiteSettings`` of
    its ``[[site]]`` blocks, if any.
    """
    from peer.core.config.proxies import parse_proxy

    def proxy_of(text: str, env: str, file: str, block: bool) -> Proxy | None:
        spec = parse_proxy(text, "cluster.toml", "proxy", auth_env=env, auth_file=file, block=block)
        return None if spec is None else Proxy(spec, load_credentials(spec, environ))

    default = proxy_of(crawl.proxy, crawl.proxy_auth_env, crawl.proxy_auth_file, False)
    blocks = sites.blocks if sites else ()
    by_block = {i: proxy_of(b.proxy, b.proxy_auth_env or "", b.proxy_auth_file or "", True)
                for i, b in enumerate(blocks) if b.proxy is not None}
    if default is None and not any(by_block.values()):
        return None
    return ProxyRoutes(default, by_block, sites if by_block else None)


class ProxyDialer:
    """Opens TCP streams to origins through proxies: ``await dialer.open(proxy, host, port)``."""

    def __init__(self, resolver: Resolver, *, connect_timeout: float, allow_private: bool,
                 user_agent: str) -> None:
        self.resolver = resolver
        self._timeout = connect_timeout
        self._allow_private = allow_private  # crawl.proxy_allow_private: the proxy's own address
        self._user_agent = user_agent

    async def open(self, proxy: Proxy, host: str, port: int) -> tuple[trio.SocketStream, str | None]:
        """A stream to ``host:port`` through ``proxy``, and the target's IP if known here."""
        spec = proxy.spec
        shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        if spec.scheme.remote_dns:
            self.resolver.known(host)  # the guard on what can be known (module docstring)
            pinned = self.resolver.static(host)
            if pinned:
                # A name [dns] resolve pins: the proxy gets its address (module docstring).
                target = address = pinned[0]
                shown = f"{shown} ({address} by [dns] resolve)"
            else:
                target, address = host, None
        else:
            target = address = (await self.resolver.resolve(host))[0]
        last: BaseException | None = None
        for proxy_address in await self._addresses(spec):
            try:
                if spec.scheme is ProxyScheme.HTTP:
                    stream = await self._connect(proxy, proxy_address, target, port, shown)
                else:
                    stream = await self._socks(proxy, proxy_address, target, port, shown)
            except _Unreachable as exc:
                last = exc.__cause__
                continue
            return stream, address
        raise proxy_error(last or OSError("no address"), spec.url, shown)

    async def _addresses(self, spec: ProxySpec) -> tuple[str, ...]:
        try:
            addresses = await self.resolver.resolve(spec.host, guard=False)
        except FetchError as exc:
            raise FetchError(ErrorKind.PROXY, f"{spec.url}: {str(exc).split(': ', 1)[-1]}") from None
        if self._allow_private:
            return addresses
        public = filter_public(addresses)
        if not public:
            raise FetchError(ErrorKind.PROXY, f"{spec.url} is at {', '.join(addresses)}, not a public address "
                             "(set crawl.proxy_allow_private to allow)")
        return public

    async def _connect(self, proxy: Proxy, address: str, host: str, port: int, shown: str) -> trio.SocketStream:
        """An HTTP proxy's CONNECT tunnel (peer.core.http.tunnel)."""
        tcp = None
        try:
            with trio.move_on_after(self._timeout):
                tcp = await trio.open_tcp_stream(address, proxy.spec.port)
        except OSError as exc:
            raise _Unreachable() from exc
        if tcp is None:
            raise _Unreachable() from TimeoutError("connect timed out")
        ok = False
        try:
            with trio.move_on_after(self._timeout) as scope:
                await tcp.send_all(connect_request(host, port, self._user_agent, proxy.credentials))
                reader = ResponseReader(MAX_CONNECT_HEAD)
                while (head := reader.head()) is None:
                    reader.feed(await tcp.receive_some(MAX_CONNECT_HEAD))
                error = connect_verdict(head.status, proxy.url, shown)
                if error is not None:
                    raise error
                # RFC 9110 §9.3.6: a 2xx's framing fields are ignored; any byte after its
                # head came before we spoke, which no tunnel carries.
                if reader.trailing or (not reader.done and reader.read()):
                    raise FetchError(ErrorKind.PROXY, f"{proxy.url} sent bytes into the tunnel before its client")
                ok = True
            if scope.cancelled_caught:
                raise FetchError(ErrorKind.PROXY, f"{proxy.url} did not answer CONNECT in time")
        except (FetchError, OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            if isinstance(exc, FetchError) and exc.kind in (ErrorKind.PROTOCOL, ErrorKind.RESET):
                raise FetchError(ErrorKind.PROXY, f"{proxy.url}: {str(exc).split(': ', 1)[-1]}") from None
            raise proxy_error(exc, proxy.url, shown) from None
        finally:
            if not ok:
                tcp.socket.close()
        return tcp

    async def _socks(self, proxy: Proxy, address: str, host: str, port: int, shown: str) -> trio.SocketStream:
        """A SOCKS5 handshake: python-socks's, given the proxy's address (module docstring)."""
        from python_socks import ProxyConnectionError, ProxyError, ProxyTimeoutError, ProxyType
        from python_socks.async_.trio import Proxy as TrioProxy

        creds = proxy.credentials
        dialer = TrioProxy(ProxyType.SOCKS5, address, proxy.spec.port,
                           username=creds.username if creds else None,
                           password=creds.password if creds else None,
                           rdns=proxy.spec.scheme is ProxyScheme.SOCKS5H)
        try:
            sock = await dialer.connect(host, port, timeout=self._timeout)
        except ProxyConnectionError as exc:
            raise _Unreachable() from exc
        except (ProxyError, ProxyTimeoutError, OSError, trio.BrokenResourceError) as exc:
            raise proxy_error(exc, proxy.url, shown) from None
        return trio.SocketStream(sock)


class _Unreachable(Exception):
    """This proxy address could not be connected to; its cause says why. The next one is tried."""
