"""The fetcher: one HTTP GET, bounded in time and memory, its failures as data.

The edge between the engine and the network. :meth:`Fetcher.fetch` makes ONE
attempt at a URL and returns a :class:`FetchResult`; it follows no redirect
(the engine routes ``Location`` through scope, robots.txt and dedupe) and
retries nothing (the engine requeues through the frontier, so politeness
holds). Network trouble never raises: it is the result's ``error`` kind.
Cancellation from outside (``trio.Cancelled``) does propagate.

What httpx does not do for a crawler, measured in issue 3, and done here:

- **Total deadline.** httpx's timeouts are per operation, so a server that
  drips a byte every 0.3 s never trips one. The whole fetch, DNS and body
  included, runs under ``trio.move_on_after(crawl.timeout)``.
- **Bounded decompression.** httpx inflates without an output limit (a 1 MB
  gzip bomb reached 2 GB through ``.read()``). We send our own
  ``Accept-Encoding: gzip, deflate``, read ``aiter_raw()`` and inflate with
  ``zlib.decompressobj().decompress(data, max_length)``, so at most
  ``max_body + 1`` decoded bytes exist at any time. ``max_body`` caps the raw
  bytes too, and a Content-Length over it is refused before any body is read.
- **DNS through our cache.** A custom ``httpcore.AsyncNetworkBackend`` resolves
  the origin host through :class:`peer.resolver.Resolver` (cache, one query
  per name, SSRF guard) and connects to that IP. httpcore still hands the
  origin host name to ``start_tls``, so SNI and the certificate check see the
  name, not the IP. httpx 0.28 has no ``network_backend=`` argument, so the
  transport's private ``_pool`` is replaced (pinned: httpx <0.29).
- **Sharded pools.** httpx's pool scans every connection on every request:
  one client at 200 connections cost 4.8 ms of CPU a request, one client per
  ~8 connections 1.2-1.8 ms. So there is one pool (an httpx transport) per
  ``CONNECTIONS_PER_SHARD`` of ``crawl.concurrency``, chosen by a hash of the
  host, which also keeps a host's keep-alive connection in one pool. We call
  the transports without an ``AsyncClient`` on top: the client adds cookies,
  auth and redirects, which a crawler does itself or not at all.
- **Early stops without the async-generator trap.** ``aiter_raw()`` is six
  nested async generators (httpx and httpcore). Breaking out of it leaves the
  inner five suspended; when they are garbage collected, trio warns
  ("Async generator ... was garbage collected before it had been exhausted",
  encode/httpx#3777) and ``aclosing()`` on the outer one does not reach them.
  We stop by closing the connection's socket and resuming the iterator: the
  innermost read fails and the error runs out through every generator, which
  so finish (see :func:`_abandon`). The connection was to be dropped anyway,
  its body being unread.

Error kinds (the ``error`` column), mapped in one place, :func:`error_kind`:

=================  =====================================================
``dns``            the name did not resolve (NXDOMAIN, no address, DNS timeout)
``blocked``        the SSRF guard refused every address (no connection made)
``connect``        refused, unreachable, connect timed out
``timeout``        the total deadline ``crawl.timeout`` passed
``reset``          the connection was reset or closed mid-response
``too_large``      Content-Length over ``max_body`` (no body read), or the
                   body cut at ``max_body`` (``truncated``, body kept)
``decode``         unknown Content-Encoding or a corrupt gzip/deflate stream
``protocol``       malformed HTTP, e.g. a header over h11's 16 KiB limit
``tls``            certificate, hostname or handshake failure
``scope``          a URL httpx cannot fetch at all (scheme, syntax)
=================  =====================================================
"""

from __future__ import annotations

import email.utils
import ssl
import time
import zlib
from collections import Counter
from dataclasses import dataclass
from datetime import timezone
from typing import Any

import h11
import httpcore
import httpx
import trio

# httpcore's own trio backend does the connecting and maps trio's errors to
# httpcore's; we only choose the address. Private module, pinned with httpx.
from httpcore._backends.trio import TrioBackend

from peer.config import CrawlConfig
from peer.errors import FetchError
from peer.resolver import Resolver

__all__ = [
    "CONNECTIONS_PER_SHARD",
    "FetchResult",
    "Fetcher",
    "error_kind",
    "parse_content_type",
    "parse_retry_after",
]

#: Connections one httpx pool serves before its scan cost shows (issue 3).
CONNECTIONS_PER_SHARD = 8
_ACCEPT = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5"
# Only what we can inflate with a bounded output; httpx's default would add
# br/zstd when those packages happen to be installed.
_ACCEPT_ENCODING = "gzip, deflate"
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# A skipped non-HTML body this small is read and dropped so the keep-alive
# connection survives; a larger one costs the connection instead.
_DRAIN_MAX = 16 * 1024
# Closing a connection is quick but may send a TLS close_notify: bound it.
_CLOSE_TIMEOUT = 1.0
# After the socket is closed only h11's buffer (one 64 KiB read) is left.
_DRAIN_STEPS = 64
_KEEPALIVE_EXPIRY = 10.0


@dataclass(frozen=True, slots=True)
class FetchResult:
    """The outcome of one fetch; ``error`` is None when a response was fully read."""

    url: str
    status: int | None
    content_type: str
    charset: str | None
    location: str | None
    retry_after: float | None
    body: bytes
    raw_bytes: int
    truncated: bool
    error: str | None
    elapsed: float
    address: str | None


# ---------------------------------------------------------------------------
# Pure helpers


def parse_content_type(value: str | None) -> tuple[str, str | None]:
    """``text/HTML; charset="UTF-8"`` -> ``("text/html", "utf-8")``; ``("", None)`` if absent."""
    if not value:
        return "", None
    media, _, params = value.partition(";")
    charset = None
    while params:
        param, _, params = params.partition(";")
        key, eq, val = param.partition("=")
        if eq and key.strip().lower() == "charset":
            charset = val.strip().strip('"\'').strip().lower() or None
            break
    return media.strip().lower(), charset


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a Retry-After value (RFC 9110 §10.2.3) at wall time ``now``.

    Either delta-seconds or an HTTP-date (a date in the past means 0); None
    when absent or unreadable.
    """
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(int(value))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - now)


_CLOSED_EARLY = ("server disconnected", "peer closed connection")


def error_kind(exc: BaseException) -> str | None:
    """The error kind of a foreign exception from a fetch; None if it is not a network error.

    The one place where httpx, httpcore, h11, trio, ssl, zlib and OSError
    errors become kinds. A TLS error anywhere in the cause chain wins:
    httpcore reports a failed handshake as a ConnectError.
    """
    if isinstance(exc, FetchError):
        return exc.kind
    cause: BaseException | None = exc
    for _ in range(8):
        if cause is None:
            break
        if isinstance(cause, ssl.SSLError):
            return "tls"
        cause = cause.__cause__ or cause.__context__
    if isinstance(exc, httpx.ConnectTimeout):
        return "connect"
    if isinstance(exc, httpx.TimeoutException):
        return "timeout"
    if isinstance(exc, httpx.ConnectError):
        return "connect"
    if isinstance(exc, (httpx.ReadError, httpx.WriteError, trio.BrokenResourceError,
                        trio.ClosedResourceError)):
        return "reset"
    if isinstance(exc, (httpx.RemoteProtocolError, h11.RemoteProtocolError)):
        # httpcore's and h11's words for a connection closed before the end.
        return "reset" if str(exc).lower().startswith(_CLOSED_EARLY) else "protocol"
    if isinstance(exc, (httpx.ProtocolError, h11.ProtocolError)):
        return "protocol"
    if isinstance(exc, (httpx.UnsupportedProtocol, httpx.InvalidURL)):
        return "scope"
    if isinstance(exc, (httpx.DecodingError, zlib.error)):
        return "decode"
    if isinstance(exc, (httpx.TransportError, OSError)):
        return "connect"
    return None


# What fetch() turns into an error kind; anything else is a bug and propagates.
_NETWORK_ERRORS = (httpx.HTTPError, httpx.InvalidURL, OSError, trio.BrokenResourceError,
                   trio.ClosedResourceError, h11.ProtocolError, zlib.error)


def _shard_key(url: str) -> bytes:
    """The authority of an absolute URL (host[:port]), lower-cased."""
    start = url.find("//") + 2
    end = url.find("/", start)
    return url[start:end if end >= 0 else None].lower().encode()


class _Inflater:
    """gzip/deflate decoding with a bounded output per call."""

    __slots__ = ("_z", "_raw_fallback", "_head")

    def __init__(self, coding: str) -> None:
        # wbits 47 = 32 + 15: zlib detects a gzip or zlib header itself.
        self._z = zlib.decompressobj(47)
        # RFC 9110 §8.4.1.2: "deflate" is zlib-wrapped, but some servers send
        # raw deflate; browsers accept both, so retry raw on a header error.
        self._raw_fallback = coding == "deflate"
        self._head = b""

    def feed(self, data: bytes, max_out: int) -> bytes:
        z = self._z
        if z.eof:
            return b""  # trailing bytes after the stream end are ignored, like browsers do
        try:
            out = z.decompress(data, max_out)
        except zlib.error:
            if not self._raw_fallback:
                raise
            self._raw_fallback = False
            self._z = z = zlib.decompressobj(-15)
            out = z.decompress(self._head + data, max_out)
        if self._raw_fallback:
            if out or len(self._head) > 64:
                self._raw_fallback = False  # the header was fine
                self._head = b""
            else:
                self._head += data
        return out


def _decoder(content_encoding: str | None) -> _Inflater | None:
    """None for identity; FetchError("decode") for a coding we did not ask for."""
    if not content_encoding:
        return None
    codings = [c.strip().lower() for c in content_encoding.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return None
    if len(codings) == 1 and codings[0] in ("gzip", "x-gzip", "deflate"):
        return _Inflater(codings[0])
    raise FetchError("decode", f"unsupported Content-Encoding {content_encoding!r}")


class _Progress:
    """What one fetch has learnt so far (kept when a deadline cuts it short)."""

    __slots__ = ("status", "content_type", "charset", "location", "retry_after",
                 "parts", "size", "raw", "truncated", "error", "address")

    def __init__(self) -> None:
        self.status: int | None = None
        self.content_type = ""
        self.charset: str | None = None
        self.location: str | None = None
        self.retry_after: float | None = None
        self.parts: list[bytes] = []
        self.size = 0
        self.raw = 0
        self.truncated = False
        self.error: str | None = None
        self.address: str | None = None


# ---------------------------------------------------------------------------
# The network backend: DNS through the resolver


class _ResolvingBackend(httpcore.AsyncNetworkBackend):
    """connect_tcp(host) = Resolver.resolve(host), then connect to an address.

    The addresses are tried in order; the first that accepts wins. The guard
    already ran in the resolver, so we connect to exactly the address it saw.
    """

    def __init__(self, resolver: Resolver) -> None:
        self._resolver = resolver
        self._inner = TrioBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        addresses = await self._resolver.resolve(host)
        last: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(address, port, timeout=timeout,
                                                     local_address=local_address,
                                                     socket_options=socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        raise httpcore.UnsupportedProtocol("a crawler does not connect to unix sockets")

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)


async def _abandon(response: httpx.Response, chunks: Any) -> None:
    """Stop reading a body midway without leaving suspended async generators.

    Closing the socket makes the innermost read fail; resuming the iterator
    lets that error run out through every nested generator (see the module
    docstring). Shielded, so a deadline cannot leave the chain half-closed.
    """
    stream = response.extensions.get("network_stream")
    with trio.move_on_after(_CLOSE_TIMEOUT) as scope:
        scope.shield = True
        if stream is not None:
            await stream.aclose()
        for _ in range(_DRAIN_STEPS):
            try:
                await chunks.__anext__()
            except StopAsyncIteration:
                return
            except _NETWORK_ERRORS:
                return  # the read on the closed socket: every generator has finished
        await chunks.aclose()  # pragma: no cover - only if a read kept succeeding


async def _close(response: httpx.Response) -> None:
    """Release the response's connection; trouble while closing changes no outcome."""
    with trio.move_on_after(_CLOSE_TIMEOUT) as scope:
        scope.shield = True
        try:
            await response.aclose()
        except _NETWORK_ERRORS:
            pass


# ---------------------------------------------------------------------------
# The fetcher


class Fetcher:
    """Fetches URLs for the engine: ``async with Fetcher(...) as f: await f.fetch(url)``."""

    def __init__(self, crawl: CrawlConfig, resolver: Resolver, *, shards: int | None = None,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        if shards is None:
            shards = -(-crawl.concurrency // CONNECTIONS_PER_SHARD)
        if shards < 1:
            raise ValueError(f"shards must be >= 1, not {shards}")
        self._timeout = crawl.timeout
        self._max_body = crawl.max_body
        self.resolver = resolver
        self._headers = httpx.Headers({"user-agent": crawl.user_agent, "accept": _ACCEPT,
                                       "accept-encoding": _ACCEPT_ENCODING})
        # httpcore reads per-operation timeouts from the request. The total
        # deadline is ours; only a hanging connect gets one of its own, so the
        # next address of a host can still be tried.
        self._extensions = {"timeout": {"connect": max(1.0, crawl.timeout / 3), "read": None,
                                        "write": None, "pool": None}}
        # One context for all shards: loading the CA bundle costs ~20 ms.
        context = ssl_context if ssl_context is not None else httpx.create_ssl_context()
        backend = _ResolvingBackend(resolver)
        # Idle keep-alive connections a shard keeps: its share of the
        # concurrency, times 4 for the unevenness of hashing hosts to shards.
        keepalive = 4 * -(-crawl.concurrency // shards)
        self._transports = [self._transport(backend, context, keepalive) for _ in range(shards)]
        self._requests = 0
        self._bytes = 0
        self._truncated = 0
        self._errors: Counter[str] = Counter()

    @staticmethod
    def _transport(backend: _ResolvingBackend, context: ssl.SSLContext,
                   keepalive: int) -> httpx.AsyncHTTPTransport:
        # A shard is an httpx transport, not an AsyncClient: the client layer
        # adds cookies, auth and redirect handling, which a crawler does itself
        # or not at all, and it cost 0.1-0.2 ms of CPU a fetch here (1.27-1.39 ms
        # through AsyncClient.send, 1.05-1.28 ms without, 8 keep-alive connections).
        transport = httpx.AsyncHTTPTransport(verify=context, trust_env=False)
        transport._pool = httpcore.AsyncConnectionPool(
            ssl_context=context,
            max_connections=None,  # the engine bounds concurrency; a limit here would only queue
            max_keepalive_connections=keepalive,
            keepalive_expiry=_KEEPALIVE_EXPIRY,
            http1=True, http2=False,
            network_backend=backend,
        )
        return transport

    @property
    def shards(self) -> int:
        return len(self._transports)

    async def __aenter__(self) -> Fetcher:
        for transport in self._transports:
            await transport.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        with trio.CancelScope(shield=True):
            for transport in self._transports:
                await transport.aclose()

    def stats(self) -> dict[str, Any]:
        """Counters for the summary: requests, raw body bytes, truncated bodies, errors by kind."""
        return {"requests": self._requests, "bytes": self._bytes, "truncated": self._truncated,
                "errors": dict(self._errors)}

    async def fetch(self, url: str, *, accept_html_only: bool = False) -> FetchResult:
        """One GET of ``url``; never raises for network trouble (see the module docstring).

        With ``accept_html_only`` a response whose Content-Type is present and
        not HTML is not read: ``body`` is empty and ``error`` None.
        """
        start = trio.current_time()
        p = _Progress()
        with trio.move_on_after(self._timeout) as deadline:
            try:
                await self._fetch(url, p, accept_html_only)
            except _NETWORK_ERRORS as exc:
                kind = error_kind(exc)
                if kind is None:  # pragma: no cover - _NETWORK_ERRORS are all mapped
                    raise
                p.error = kind
            except FetchError as exc:
                p.error = exc.kind
        if deadline.cancelled_caught:
            p.error = "timeout"
        body = p.parts[0] if len(p.parts) == 1 else b"".join(p.parts)
        self._requests += 1
        self._bytes += p.raw
        self._truncated += p.truncated
        if p.error is not None:
            self._errors[p.error] += 1
        return FetchResult(
            url=url, status=p.status, content_type=p.content_type, charset=p.charset,
            location=p.location, retry_after=p.retry_after, body=body, raw_bytes=p.raw,
            truncated=p.truncated, error=p.error, elapsed=trio.current_time() - start,
            address=p.address,
        )

    async def _fetch(self, url: str, p: _Progress, html_only: bool) -> None:
        shards = self._transports
        transport = shards[zlib.crc32(_shard_key(url)) % len(shards)] if len(shards) > 1 else shards[0]
        request = httpx.Request("GET", url, headers=self._headers, extensions=self._extensions)
        response = await transport.handle_async_request(request)
        response.request = request
        try:
            self._read_head(response, p)
            length = response.headers.get("content-length")
            length = int(length) if length is not None and length.isdigit() else None
            if length is not None and length > self._max_body:
                p.error = "too_large"  # refused up front: not one body byte read
                return
            if html_only and p.content_type and p.content_type not in _HTML_TYPES:
                if length is not None and length <= _DRAIN_MAX:
                    await self._read_body(response, p, None, keep=False)
                return
            decoder = _decoder(response.headers.get("content-encoding"))
            await self._read_body(response, p, decoder, keep=True)
        finally:
            await _close(response)

    @staticmethod
    def _read_head(response: httpx.Response, p: _Progress) -> None:
        p.status = status = response.status_code
        headers = response.headers
        p.content_type, p.charset = parse_content_type(headers.get("content-type"))
        if 300 <= status < 400:
            p.location = headers.get("location")
        if status in (429, 503) or "retry-after" in headers:
            p.retry_after = parse_retry_after(headers.get("retry-after"), time.time())
        stream = response.extensions.get("network_stream")
        if stream is not None:
            peer = stream.get_extra_info("server_addr")
            if peer:
                p.address = str(peer[0])

    async def _read_body(self, response: httpx.Response, p: _Progress,
                         decoder: _Inflater | None, *, keep: bool) -> None:
        limit = self._max_body
        parts = p.parts
        chunks = response.aiter_raw()
        async for chunk in chunks:
            p.raw += len(chunk)
            if not keep:
                continue
            room = limit - p.size
            try:
                # room + 1: getting that many says there is more than max_body.
                out = chunk if decoder is None else decoder.feed(chunk, room + 1)
            except zlib.error as exc:
                await _abandon(response, chunks)
                raise FetchError("decode", f"corrupt compressed body: {exc}") from None
            if len(out) > room:
                out = out[:room]
                p.truncated = True
            if out:
                parts.append(out)
                p.size += len(out)
            if p.truncated or p.raw > limit:
                p.truncated = True
                p.error = "too_large"
                await _abandon(response, chunks)
                return
