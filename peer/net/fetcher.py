"""The fetcher: one HTTP GET, bounded in time and memory, its failures as data.

The edge between the engine and the network. :meth:`Fetcher.fetch` makes ONE
attempt at a URL and returns a :class:`FetchResult`; it follows no redirect
(the engine routes ``Location`` through scope, robots.txt and dedupe) and
retries nothing (the engine requeues through the frontier, so politeness
holds). Network trouble never raises: it is the result's ``error`` kind.
Cancellation from outside (``trio.Cancelled``) does propagate.

What httpx does not do for a crawler, measured, and done here:

- **Total deadline.** httpx's timeouts are per operation, so a server that
  drips a byte every 0.3 s never trips one. The whole fetch, DNS and body
  included, runs under ``trio.move_on_after(crawl.timeout)``.
- **Bounded decompression.** httpx inflates without an output limit (a 1 MB
  gzip bomb reached 2 GB through ``.read()``). We send our own
  ``Accept-Encoding: gzip, deflate, br, zstd`` (``crawl.accept_encodings``
  narrows it; a coding whose library is missing is left out), read the raw
  stream and decode it with a decoder asked for at most the room left + 1
  bytes a call (:mod:`peer.core.http.inflate`: zlib's and zstd's ``max_length``,
  brotli's ``output_buffer_limit`` a block at a time), so at most
  ``max_body + 1`` decoded bytes exist at any time (br: 32 KiB more). A
  zstd frame whose window is over ``crawl.zstd_max_window`` (RFC 9659's
  8 MiB) is refused, and stacked codings (``br, gzip``) are decoded last
  first, an inner stream over ``max_body`` being ``too_large``. Measured
  (``scripts/bench_inflate.py``): a 1 GiB bomb cut at the default 2 MiB
  costs 3.5 MiB of peak RSS in gzip (1 MB on the wire), 9.8 in br (1.6 KB:
  brotli's window) and 6.2 in zstd (33 KB); decoding HTML costs 2.6 to 3.1
  ms of CPU per MiB in each coding. ``max_body`` caps the raw bytes too,
  and a Content-Length over it is refused before any body is read.
- **DNS through our cache.** A new connection (:mod:`peer.net.connections`)
  resolves the origin host through :class:`peer.net.resolver.Resolver`
  (cache, one query per name, SSRF guard) and races those addresses (happy
  eyeballs, RFC 8305: IPv6 first, 250 ms apart; :mod:`peer.core.dns.eyeballs`);
  TLS is a ``trio.SSLStream`` given the host name, so SNI and the
  certificate check see the name, not the IP. A connect and a handshake each
  get ``max(1, timeout / 3)`` s, so the next address can still be tried.
- **Proxies.** With ``crawl.proxy`` (or a ``[[site]]`` block's) a new
  connection goes through the proxy (:mod:`peer.net.proxy`: a CONNECT
  tunnel or a SOCKS5 handshake), TLS end to end inside it, and its key in
  the idle pool names the proxy. Without one the cost is one ``is None``.
- **Our own HTTP/1.1 client, not httpx or httpcore + h11.** The wire format
  is :mod:`peer.core.http.http1`, a sans-IO reader that accepts and refuses what h11
  did (its module docstring lists the rules and caps); the I/O is a trio
  stream per connection and :class:`peer.net.connections.IdlePool`, the keep-alive connections per
  origin. Measured before, py-spy on the 49-host crawl of
  ``scripts/bench_polite.py``: httpcore + h11 were 27% of the peer's loop,
  and a fetch through them 56% of its samples (per-event objects, a lock,
  shielded cancel scopes and a scan of the pool's connections per request,
  nested async generators per body). Alternated runs of
  ``scripts/bench_ring.py --only cpu --cpu-peers 1 --cpu-hosts 49
  --cpu-links 20`` (7,043 pages, politeness off): 3.11, 3.28, 3.13 ms of
  peer CPU a page before, 2.17, 2.22, 2.13 after. httpx's own client had
  cost more again (a sequential 4 KiB fetch from nginx: 1048 us through its
  transport, 698 us through httpcore). httpx is still used for its SSL
  context (certifi), and h11 and httpcore only to name their exceptions in
  :func:`error_kind`. The URL is split once
  (:func:`peer.core.http.http1.request_target`) and the head decoded as httpx
  did (ASCII, else UTF-8, else Latin-1).
- **Shards of the idle pool.** ``shards`` (one per
  ``CONNECTIONS_PER_SHARD`` of ``crawl.concurrency``, chosen by a hash of the
  host) split the keep-alive budget: a shard keeps at most 4x its share of
  the concurrency idle, and closes the connection idle longest beyond that
  or past :data:`_KEEPALIVE_EXPIRY`. (With httpcore they were there because
  its pool scanned every connection on every request: one pool at 200
  connections cost 4.8 ms of CPU a request.)
- **Early stops are a close.** A body cut at ``max_body``, refused, or left
  unread is never drained: the connection's socket is closed (synchronously,
  so a deadline cannot leave it half open) and the connection is not reused.
- **Every header parsed totally.** :func:`peer.core.http.head.read_head` (pure)
  reads the status and the fields the crawler uses; a malformed value is
  ignored or clamped, never raised, and its reason counted
  (``Fetcher.stats()["malformed"]``, ``FetchResult.malformed``). That
  module's docstring lists the reasons.
- **No response desync.** Bytes a server sends beyond a response's end in
  the same read stayed in h11's buffer; httpcore put the connection back in
  the pool, and the next URL of the host got them as its response (another
  page's content, whose links were followed). curl closes such a connection
  ("excess found"); so do we (:attr:`peer.core.http.http1.ResponseReader.trailing`).
  Bytes that arrive later on an idle connection make its socket readable,
  and :class:`~peer.net.connections.IdlePool` drops it before reuse.
- **Cookies, when the caller has some.** ``fetch(url, cookie=...)`` adds
  one ``Cookie`` field (the crawl core's jar decides it,
  :mod:`peer.core.http.cookies`); the ``Set-Cookie`` values come back unparsed
  in ``FetchResult.set_cookies``, with the wall time the head came
  (``received``). Without a cookie a request costs one ``is None`` more.
- **A prefix read.** ``fetch(url, max_body=n, prefix_ok=True)`` reads at most
  ``n`` decoded bytes of a longer body and returns them with ``truncated``
  and no error, for robots.txt: RFC 9309 §2.5 says a crawler must parse at
  least the first 500 KiB of it, however long it is.
- **Captures for an archive.** ``Fetcher(capture=True)`` (``[warc]
  enabled``) hands back in ``FetchResult.capture`` the request as sent, the
  final head's bytes as received (a 1xx before it left out) and the body
  before content decoding, de-chunked (``peer.core.warc.record`` frames it
  again), with why it is not whole; without it nothing is kept and a read
  costs one ``is None`` more.

Error kinds (the ``error`` column), mapped in one place,
:func:`peer.net.errorkinds.error_kind` (re-exported here):

===================  ====================================================
``dns``              the name did not resolve (NXDOMAIN, no address, DNS timeout)
``blocked``          the SSRF guard refused every address (no connection made)
``connect``          refused, unreachable, connect timed out
``timeout``          the total deadline ``crawl.timeout`` passed
``reset``            the connection was reset or closed mid-response
``too_large``        Content-Length over ``max_body`` (no body read), or the
                     body cut at ``max_body`` (``truncated``, body kept);
                     never with ``prefix_ok``, where the cut body is the answer;
                     or an inner stream of stacked codings over ``max_body``
``decode``           unknown Content-Encoding, a corrupt gzip/deflate/br/zstd
                     stream, or a zstd window over ``crawl.zstd_max_window``
``protocol``         malformed HTTP: a status line, header or chunk framing
                     :mod:`peer.core.http.http1` refuses (as h11 did), a head over its
                     100 KiB (a 3-digit status outside 100-599 is kept: a 5xx)
``tls_expired``      the server's certificate expired or is not yet valid
``tls_hostname``     the server's certificate is for another host name
``tls_untrusted``    no CA we trust signed it: self-signed, or an unknown CA
                     (``crawl.ca_file``, a ``[[site]]`` block's ``verify``)
``tls_client_cert``  the server asked for a client certificate we did not
                     send (``crawl.client_cert``), or refused ours
``tls``              any other TLS failure: handshake, protocol version,
                     another certificate error (:mod:`peer.net.tls`)
``proxy``            the proxy (``crawl.proxy``) could not be reached, or broke
                     its protocol: a malformed CONNECT answer, a status other
                     than those below, a SOCKS5 exchange cut short
``proxy_auth``       the proxy refused the credentials: CONNECT 407, a SOCKS5
                     login refused or no method accepted
``proxy_refused``    the proxy could not or would not reach the target:
                     CONNECT 403, 502, 503, 504; a SOCKS5 reply code 1-8
                     (:mod:`peer.core.http.tunnel`)
``scope``            a URL httpx cannot fetch at all (scheme, syntax)
``internal``         a bug of ours while reading a response (logged with its
                     traceback): the fetch still returns
===================  ====================================================
"""

from __future__ import annotations

import logging
import ssl
import time
import zlib
from collections import Counter
from dataclasses import dataclass
from typing import Any

import trio

from peer.core.config.cluster import CrawlConfig
from peer.errors import ErrorKind, FetchError
# The head's reading is pure and lives in the core; its names are re-exported
# here, and Fetcher calls read_head through this module's global (so a test
# can replace it here).
from peer.core.http.head import (MAX_LOCATION, RETRY_AFTER_MAX, Head, parse_content_type,
                            parse_retry_after, read_head)
from peer.core.http.http1 import Head1, ResponseReader, head_lines, request_bytes, request_target
from peer.core.http.inflate import Inflater, accept_encoding, decoder
from peer.core.config.proxies import ProxyRoutes
from peer.core.config.sites import SiteSettings
from peer.core.http.result import FetchResult
from peer.core.warc.record import BodyFraming, Capture, truncation
from peer.net.connections import Connector, IdlePool
from peer.net.errorkinds import NETWORK_ERRORS, error_detail, error_kind
from peer.net.proxy import ProxyDialer, proxy_routes
from peer.net.resolver import Resolver
from peer.net.tls import TlsContexts

__all__ = [
    "CONNECTIONS_PER_SHARD",
    "MAX_LOCATION",
    "RETRY_AFTER_MAX",
    "Fetcher",
    "Head",
    "error_kind",
    "parse_content_type",
    "parse_retry_after",
    "read_head",
]

log = logging.getLogger("peer.fetcher")

#: Connections a shard of the idle pool is sized for (module docstring).
CONNECTIONS_PER_SHARD = 8
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# A skipped non-HTML body this small is read and dropped so the keep-alive
# connection survives; a larger one costs the connection instead.
_DRAIN_MAX = 16 * 1024
# httpcore's read size: a 4-64 KiB page comes in one or two reads.
_READ_SIZE = 64 * 1024
# Unexpected exceptions logged with their traceback; the rest are only counted.
_LOGGED_BUGS = 5


class _Progress:
    """What one fetch has learnt so far (kept when a deadline cuts it short)."""

    __slots__ = ("status", "content_type", "charset", "location", "retry_after",
                 "parts", "size", "raw", "truncated", "error", "address", "malformed", "detail",
                 "head", "tried", "received", "wire", "request", "head_raw", "began", "complete")

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
        self.error: ErrorKind | None = None
        self.address: str | None = None
        self.malformed: tuple[str, ...] = ()
        self.detail = ""
        self.head: Head | None = None
        self.tried: list[str] | tuple[str, ...] = ()
        self.received = 0.0
        # For a WARC record (Fetcher(capture=True)); wire stays None otherwise.
        self.wire: list[bytes] | None = None
        self.request = b""
        self.head_raw: bytes | None = None
        self.began = 0.0
        self.complete = False


# ---------------------------------------------------------------------------
# The fetcher


class Fetcher:
    """Fetches URLs for the engine: ``async with Fetcher(...) as f: await f.fetch(url)``."""

    def __init__(self, crawl: CrawlConfig, resolver: Resolver, *, shards: int | None = None,
                 ssl_context: ssl.SSLContext | None = None, sites: SiteSettings | None = None,
                 capture: bool = False) -> None:
        if shards is None:
            shards = -(-crawl.concurrency // CONNECTIONS_PER_SHARD)
        if shards < 1:
            raise ValueError(f"shards must be >= 1, not {shards}")
        self._timeout = crawl.timeout
        # [warc] enabled: keep the bytes of each exchange (FetchResult.capture).
        self._capture = capture
        self._max_body = crawl.max_body
        self.resolver = resolver
        # Built once; the request line and Host come from the URL. [[site]]
        # blocks (peer/core/config/sites.py) give their hosts their own, built once a
        # block; without blocks a request costs no lookup more.
        self._encodings = accept_encoding(crawl.accept_encodings)
        self._zstd_window = crawl.zstd_max_window
        self._headers = head_lines(crawl.user_agent, tuple(crawl.headers.items()), self._encodings)
        self._sites = sites if sites else None
        self._site_heads: dict[int, bytes] = {}
        # The total deadline is ours; only a hanging connect or TLS handshake
        # gets one of its own, so the next address of a host can still be tried.
        # Proxies (peer/net/proxy.py): None unless one is configured, credentials read now.
        self._proxies = proxy_routes(crawl, sites)
        dialer = None if self._proxies is None else ProxyDialer(
            resolver, connect_timeout=max(1.0, crawl.timeout / 3),
            allow_private=crawl.proxy_allow_private, user_agent=crawl.user_agent)
        self.connector = Connector(resolver, connect_timeout=max(1.0, crawl.timeout / 3),
                                   tls=TlsContexts(crawl, sites, ssl_context=ssl_context), proxies=dialer)
        # Idle keep-alive connections a shard keeps: its share of the
        # concurrency, times 4 for the unevenness of hashing hosts to shards.
        keepalive = 4 * -(-crawl.concurrency // shards)
        self._idle = [IdlePool(keepalive) for _ in range(shards)]
        self._requests = 0
        self._bytes = 0
        self._truncated = 0
        self._errors: Counter[str] = Counter()
        self._malformed: Counter[str] = Counter()
        self._bugs = 0

    @property
    def proxies(self) -> ProxyRoutes | None:
        """Which proxy each host goes through; None when no proxy is configured."""
        return self._proxies

    @property
    def shards(self) -> int:
        return len(self._idle)

    async def __aenter__(self) -> Fetcher:
        await trio.lowlevel.checkpoint()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for idle in self._idle:
            idle.close()
        # trio's rule: an async call is a checkpoint (the server's side of a
        # test gets to run before the test looks at its log).
        await trio.lowlevel.cancel_shielded_checkpoint()

    def stats(self) -> dict[str, Any]:
        """Counters for the summary: requests, raw body bytes, truncated bodies, errors by
        kind, and malformed response parts by reason (the module docstring lists them)."""
        return {"requests": self._requests, "bytes": self._bytes, "truncated": self._truncated,
                "errors": dict(self._errors), "malformed": dict(self._malformed)}

    async def fetch(self, url: str, *, accept_html_only: bool = False, max_body: int | None = None,
                    prefix_ok: bool = False, cookie: str | None = None,
                    headers: tuple[tuple[str, str], ...] = ()) -> FetchResult:
        """One GET of ``url``; never raises for anything a server sends (module docstring).

        With ``accept_html_only`` a response whose Content-Type is present and
        not HTML is not read: ``body`` is empty and ``error`` None.
        ``max_body`` replaces ``crawl.max_body`` for this fetch. With
        ``prefix_ok`` a longer body (by Content-Length or as read) is read up
        to ``max_body`` decoded bytes and returned with ``truncated`` and
        ``error`` None; its connection is closed, the rest being unread.
        ``cookie`` is the value of a ``Cookie`` field to send (the crawl
        core's jar, peer/core/http/cookies.py), None for none. ``headers`` are
        more fields for this request alone (a revisit's ``If-None-Match``,
        peer/core/revisit/recrawl.py), values already checked by their maker.
        Only cancellation from outside propagates (and ValueError for a
        ``max_body`` under 1: the caller's mistake, not the server's).
        """
        limit = self._max_body if max_body is None else max_body
        if limit < 1:
            raise ValueError(f"max_body must be >= 1, not {limit}")
        start = trio.current_time()
        p = _Progress()
        if self._capture:
            p.wire, p.began = [], time.time()
        with trio.move_on_after(self._timeout) as deadline:
            try:
                await self._fetch(url, p, accept_html_only, limit, prefix_ok, cookie, headers)
            except FetchError as exc:
                p.error = exc.kind
                p.detail = error_detail(exc)
            except NETWORK_ERRORS as exc:
                kind = error_kind(exc)
                if kind is None:  # pragma: no cover - _NETWORK_ERRORS are all mapped
                    kind = ErrorKind.INTERNAL
                p.error = kind
                p.detail = error_detail(exc)
            except Exception:
                # A bug of ours that some response reached: one bad page must
                # not end the peer (and on resume meet the same page again).
                # trio.Cancelled is a BaseException and passes.
                p.error = ErrorKind.INTERNAL
                self._bugs += 1
                if self._bugs <= _LOGGED_BUGS:
                    log.exception("internal error while fetching %s", url)
        if deadline.cancelled_caught:
            p.error = ErrorKind.TIMEOUT
        body = p.parts[0] if len(p.parts) == 1 else b"".join(p.parts)
        self._requests += 1
        self._bytes += p.raw
        self._truncated += p.truncated
        if p.error is not None:
            self._errors[p.error] += 1
        self._malformed.update(p.malformed)
        return FetchResult(
            url=url, status=p.status, content_type=p.content_type, charset=p.charset,
            location=p.location, retry_after=p.retry_after, body=body, raw_bytes=p.raw,
            truncated=p.truncated, error=p.error, elapsed=trio.current_time() - start,
            address=p.address, malformed=p.malformed, detail=p.detail,
            x_robots=p.head.x_robots if p.head else (), canonical=p.head.canonical if p.head else None,
            tried=tuple(p.tried), set_cookies=p.head.set_cookies if p.head else (),
            received=p.received, capture=None if p.head_raw is None else _capture(url, p),
            etag=p.head.etag if p.head else None,
            last_modified=p.head.last_modified if p.head else None)

    async def _fetch(self, url: str, p: _Progress, html_only: bool, limit: int,
                     prefix_ok: bool, cookie: str | None, headers: tuple[tuple[str, str], ...] = ()) -> None:
        scheme, host, port, target, field = request_target(url)
        extra = self._headers if self._sites is None else self._site_head(host)
        if cookie is not None:
            # The jar's values came through a head reader (no CR or LF) and
            # peer.core.http.cookies refused any other control character.
            extra += b"Cookie: " + cookie.encode("utf-8", "replace") + b"\r\n"
        for name, value in headers:
            # Validators peer.core.revisit.policy checked: an entity-tag or an HTTP-date, no CR/LF.
            extra += f"{name}: {value}\r\n".encode("latin-1", "replace")
        request = request_bytes(target, field, extra)
        if p.wire is not None:
            p.request = request
        key: tuple[Any, ...] = (scheme, host, port)
        proxy = None
        if self._proxies is not None:
            proxy = self._proxies.for_host(host)
            if proxy is not None:
                key = (scheme, host, port, proxy.url)
        shards = self._idle
        idle = shards[zlib.crc32(host.encode()) % len(shards)] if len(shards) > 1 else shards[0]
        conn = idle.take(key, trio.current_time())
        if conn is None:
            p.tried = []  # filled as the attempts start: kept when none connects
            conn = await self.connector.connect(scheme, host, port, proxy, p.tried)
        p.address, p.tried = conn.address, conn.tried
        reader = ResponseReader()
        keep = False
        try:
            stream = conn.stream
            await stream.send_all(request)
            if p.wire is None:
                while (response := reader.head()) is None:
                    reader.feed(await stream.receive_some(_READ_SIZE))
            else:
                response = await _head_kept(stream, reader, p)
            head = self._read_head(response, p)
            # RFC 9110 §6.4.1: no body follows a 1xx, 204 or 304, whatever
            # Content-Length says (a 304's is the size of the 200's body).
            length = head.length if head.status >= 200 and head.status not in (204, 304) else None
            if length is not None and length > limit and not prefix_ok:
                p.error = ErrorKind.TOO_LARGE  # refused up front: not one body byte read
                return
            if html_only and p.content_type and p.content_type not in _HTML_TYPES:
                if length is not None and length <= _DRAIN_MAX:
                    await self._read_body(stream, reader, p, None, limit, prefix_ok, keep=False)
            else:
                inflater = decoder(head.codings, max_window=self._zstd_window, max_stream=limit)
                await self._read_body(stream, reader, p, inflater, limit, prefix_ok, keep=True)
            if reader.trailing and response.keep_alive:
                # curl's "excess found": close, or the next URL of the host
                # gets these bytes as its response (module docstring).
                self._malformed["excess"] += 1
            keep = reader.reusable
        finally:
            p.complete = reader.done
            if keep:
                idle.put(conn, trio.current_time())
            else:
                conn.close()

    def _site_head(self, host: str) -> bytes:
        """The header lines of ``host``'s requests: its [[site]] block's agent and headers."""
        assert self._sites is not None
        s = self._sites.for_host(host)
        head = self._site_heads.get(s.block)
        if head is None:
            head = self._site_heads[s.block] = head_lines(s.user_agent, s.headers, self._encodings)
        return head

    @staticmethod
    def _read_head(response: Head1, p: _Progress) -> Head:
        p.received = now = time.time()
        head = read_head(response.status, response.fields, now)
        p.status = head.status
        p.content_type, p.charset = head.content_type, head.charset
        p.location, p.retry_after = head.location, head.retry_after
        p.malformed, p.head = head.reasons, head
        return head

    @staticmethod
    async def _read_body(stream: trio.abc.Stream, reader: ResponseReader, p: _Progress,
                         decoder: Inflater | None, limit: int, prefix_ok: bool, *,
                         keep: bool) -> None:
        parts = p.parts
        while True:
            chunk = reader.read()
            if chunk is None:
                return
            if not chunk:
                reader.feed(await stream.receive_some(_READ_SIZE))
                continue
            p.raw += len(chunk)
            if p.wire is not None:
                p.wire.append(chunk)
            if not keep:
                continue
            room = limit - p.size
            # room + 1: getting that many says there is more than max_body. A
            # corrupt stream raises FetchError("decode") (peer.core.http.inflate).
            out = chunk if decoder is None else decoder.feed(chunk, room + 1)
            if len(out) > room:
                out = out[:room]
                p.truncated = True
            if out:
                parts.append(out)
                p.size += len(out)
            if p.truncated or p.raw > limit:
                # The rest is not read; unless the message happened to end
                # here, the connection is closed (reader.reusable is False).
                p.truncated = True
                p.error = None if prefix_ok else ErrorKind.TOO_LARGE
                return


# ---------------------------------------------------------------------------
# Captures for WARC records (Fetcher(capture=True)); without it, never called


async def _head_kept(stream: trio.abc.Stream, reader: ResponseReader, p: _Progress) -> Head1:
    """The response head, its raw bytes kept in ``p.head_raw`` (1xx interim heads left out)."""
    fed: list[bytes] = []
    while (response := reader.head()) is None:
        data = await stream.receive_some(_READ_SIZE)
        fed.append(bytes(data))
        reader.feed(data)
    start, end = reader.head_span
    p.head_raw = b"".join(fed)[start:end]
    return response


def _capture(url: str, p: _Progress) -> Capture:
    """What the WARC writer needs of this fetch (peer.core.warc.record.Capture).

    The body is as ``ResponseReader.read`` gave it: the transfer-coding
    removed (chunk framing is not kept), the content-coding intact;
    ``BodyFraming.TRANSFER_DECODED`` tells the record builder so: under a
    head that says chunked it is stored as it is, the head's framing lines
    adjusted (peer/core/warc/record.py rule 1).
    """
    assert p.head_raw is not None and p.wire is not None
    return Capture(
        target_uri=url, date=p.began, request=p.request, response_head=p.head_raw,
        body=b"".join(p.wire), ip_address=p.address, framing=BodyFraming.TRANSFER_DECODED,
        truncated=truncation(p.complete, p.truncated, p.error))
