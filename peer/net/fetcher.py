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
  ``Accept-Encoding: gzip, deflate``, read the raw stream and inflate with
  ``zlib.decompressobj().decompress(data, max_length)``, so at most
  ``max_body + 1`` decoded bytes exist at any time. ``max_body`` caps the raw
  bytes too, and a Content-Length over it is refused before any body is read.
- **DNS through our cache.** A new connection resolves the origin host
  through :class:`peer.net.resolver.Resolver` (cache, one query per name, SSRF
  guard) and connects to those addresses in order; TLS is a
  ``trio.SSLStream`` given the host name, so SNI and the certificate check
  see the name, not the IP. A connect and a handshake each get
  ``max(1, timeout / 3)`` s, so the next address can still be tried.
- **Our own HTTP/1.1 client, not httpx or httpcore + h11.** The wire format
  is :mod:`peer.core.http1`, a sans-IO reader that accepts and refuses what h11
  did (its module docstring lists the rules and caps); the I/O is a trio
  stream per connection and :class:`_Idle`, the keep-alive connections per
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
  :func:`error_kind`. The URL is split once (:func:`_request_url`) and the
  head decoded as httpx did (ASCII, else UTF-8, else Latin-1).
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
- **Every header parsed totally.** :func:`read_head` (pure) reads the status
  and the fields the crawler uses; a malformed value is ignored or clamped,
  never raised, and its reason counted (``Fetcher.stats()["malformed"]``,
  ``FetchResult.malformed``). Measured before: ``Retry-After: ²`` (a Unicode
  digit, ``str.isdigit()`` but not ``int()``) or 400 digits raised out of
  ``fetch`` and ended the peer, again on every resume. The reasons:

  ====================  ================================================
  ``status``            a code outside 100-599 (RFC 9110 §15): error
                        ``protocol``, no body read
  ``retry_after``       not delta-seconds or an HTTP-date (Unicode digits,
                        signs, fractions, several fields), or clamped to
                        :data:`RETRY_AFTER_MAX` (a date in year 9999)
  ``content_length``    not one run of ASCII digits, or sent with
                        Transfer-Encoding, which wins (RFC 9112 §6.3).
                        :mod:`peer.core.http1` already refuses negative,
                        non-digit, conflicting and over-20-digit values
                        (error ``protocol``), as h11 did
  ``content_type``      not ``type/subtype`` of RFC 9110 tokens, each at
                        most 127 characters (RFC 6838 §4.2), or several
                        fields (the last wins, as in WHATWG Fetch): an
                        invalid one is ``""``, so the body is sniffed
  ``charset``           empty, or not a label of at most 40 characters of
                        ``[a-z0-9_.:+-]``: None. A well-formed label Python
                        does not know is kept: :mod:`peer.core.extract` maps the
                        WHATWG labels Python lacks (``x-user-defined``,
                        ``x-gbk``) and falls back for the rest
  ``location``          empty, over :data:`MAX_LOCATION` characters, with a
                        control character (h11 lets C0 bytes through), or
                        several different fields: None
  ``content_encoding``  a coding we did not ask for, stacked codings, or a
                        garbage list: error ``decode``
  ``excess``            bytes after the end of a response (beyond its
                        Content-Length, or a body on a 204/304): the
                        connection is closed, not reused (see
                        :class:`_Connection`)
  ====================  ================================================

- **No response desync.** Bytes a server sends beyond a response's end in
  the same read stayed in h11's buffer; httpcore put the connection back in
  the pool, and the next URL of the host got them as its response (another
  page's content, whose links were followed). curl closes such a connection
  ("excess found"); so do we (:attr:`peer.core.http1.ResponseReader.trailing`).
  Bytes that arrive later on an idle connection make its socket readable,
  and :class:`_Idle` drops it before reuse.
- **A prefix read.** ``fetch(url, max_body=n, prefix_ok=True)`` reads at most
  ``n`` decoded bytes of a longer body and returns them with ``truncated``
  and no error, for robots.txt: RFC 9309 §2.5 says a crawler must parse at
  least the first 500 KiB of it, however long it is.

Error kinds (the ``error`` column), mapped in one place, :func:`error_kind`:

=================  =====================================================
``dns``            the name did not resolve (NXDOMAIN, no address, DNS timeout)
``blocked``        the SSRF guard refused every address (no connection made)
``connect``        refused, unreachable, connect timed out
``timeout``        the total deadline ``crawl.timeout`` passed
``reset``          the connection was reset or closed mid-response
``too_large``      Content-Length over ``max_body`` (no body read), or the
                   body cut at ``max_body`` (``truncated``, body kept);
                   never with ``prefix_ok``, where the cut body is the answer
``decode``         unknown Content-Encoding or a corrupt gzip/deflate stream
``protocol``       malformed HTTP: a status line, header or chunk framing
                   :mod:`peer.core.http1` refuses (as h11 did), a head over its
                   100 KiB, a status outside 100-599
``tls``            certificate, hostname or handshake failure
``scope``          a URL httpx cannot fetch at all (scheme, syntax)
``internal``       a bug of ours while reading a response (logged with its
                   traceback): the fetch still returns
=================  =====================================================
"""

from __future__ import annotations

import email.utils
import logging
import math
import re
import ssl
import sys
import time
import zlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timezone
from typing import Any

import trio

from peer.core.config import CrawlConfig
from peer.errors import ErrorKind, FetchError
from peer.core.http1 import Head1, ResponseReader, request_bytes
from peer.net.resolver import Resolver

__all__ = [
    "CONNECTIONS_PER_SHARD",
    "MAX_LOCATION",
    "RETRY_AFTER_MAX",
    "FetchResult",
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
_ACCEPT = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5"
# Only what we can inflate with a bounded output; httpx's default would add
# br/zstd when those packages happen to be installed.
_ACCEPT_ENCODING = "gzip, deflate"
_CODINGS = frozenset({"gzip", "x-gzip", "deflate"})
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# A skipped non-HTML body this small is read and dropped so the keep-alive
# connection survives; a larger one costs the connection instead.
_DRAIN_MAX = 16 * 1024
# httpcore's read size: a 4-64 KiB page comes in one or two reads.
_READ_SIZE = 64 * 1024
_KEEPALIVE_EXPIRY = 10.0
#: The longest Retry-After we return, in seconds (10 years): only so that a
#: date in the year 9999 or a 400-digit delta stays a finite float. The
#: engine applies its own, much lower, ``politeness.max_retry_after``.
RETRY_AFTER_MAX = 10 * 365 * 86400.0
#: The longest Location kept: RFC 9110 §4.1 asks every recipient to support
#: URIs of at least 8000 octets, so a longer one is no link anyone relies on.
MAX_LOCATION = 8000
# Unexpected exceptions logged with their traceback; the rest are only counted.
_LOGGED_BUGS = 5


@dataclass(frozen=True, slots=True)
class FetchResult:
    """The outcome of one fetch; ``error`` is None when a response was fully read
    (with ``prefix_ok``: or its first ``max_body`` bytes, ``truncated`` set)."""

    url: str
    status: int | None
    content_type: str
    charset: str | None
    location: str | None
    retry_after: float | None
    body: bytes
    raw_bytes: int
    truncated: bool
    error: ErrorKind | None
    elapsed: float
    address: str | None
    #: Why a header of this response was ignored or clamped (module docstring).
    malformed: tuple[str, ...] = ()


# ---------------------------------------------------------------------------
# Pure helpers


# RFC 9110 §5.6.2 token characters (lower case: values are lowered first).
_TOKEN = r"[!#$%&'*+.^_`|~0-9a-z-]"
# RFC 6838 §4.2: type and subtype names are at most 127 characters.
_MEDIA_TYPE = re.compile(rf"{_TOKEN}{{1,127}}/{_TOKEN}{{1,127}}")
# The characters of IANA charset names, and peer.core.extract's 40-character bound.
_CHARSET = re.compile(r"[a-z0-9_.:+\-]{1,40}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# An HTTP-date is 29 characters (RFC 9110 §5.6.7); a longer value is not one.
_DATE_MAX = 64
_DATE_ERRORS = (TypeError, ValueError, IndexError, OverflowError)


def _content_type(value: str) -> tuple[str, str | None, list[str]]:
    """(media type, charset, reasons) of one Content-Type value; never raises."""
    reasons = []
    # split, not a partition loop: 100 KiB of ";" must cost linear time.
    media, *params = value.split(";")
    media = media.strip().lower()
    if not _MEDIA_TYPE.fullmatch(media):
        # WHATWG MIME Sniffing §7.1: an invalid supplied type means "sniff".
        reasons.append("content_type")
        media = ""
    charset = None
    for param in params:
        key, eq, val = param.partition("=")
        if eq and key.strip().lower() == "charset":
            label = val.strip().strip('"\'').strip().lower()
            if _CHARSET.fullmatch(label):
                charset = label
            else:
                reasons.append("charset")
            break
    return media, charset, reasons


def parse_content_type(value: str | None) -> tuple[str, str | None]:
    """``text/HTML; charset="UTF-8"`` -> ``("text/html", "utf-8")``; ``("", None)`` if absent.

    An invalid media type is ``""`` and an invalid charset label None.
    """
    if not value:
        return "", None
    media, charset, _ = _content_type(value)
    return media, charset


def _retry_after(value: str, now: float) -> tuple[float | None, bool]:
    """(seconds or None, whether the value was well-formed and in range)."""
    value = value.strip()
    # isascii(): "²".isdigit() is True, but int("²") raises.
    if value.isascii() and value.isdigit():
        if len(value) > 9:  # 10**9 s is over RETRY_AFTER_MAX: no int() of 400 digits
            return RETRY_AFTER_MAX, False
        seconds = float(value)
        return min(seconds, RETRY_AFTER_MAX), seconds <= RETRY_AFTER_MAX
    if not value or len(value) > _DATE_MAX:
        return None, False
    try:
        when = email.utils.parsedate_to_datetime(value)
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        seconds = when.timestamp() - now
    except _DATE_ERRORS:
        return None, False
    if not math.isfinite(seconds):  # pragma: no cover - a datetime is finite
        return None, False
    if seconds > RETRY_AFTER_MAX:
        return RETRY_AFTER_MAX, False
    return max(0.0, seconds), True


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a Retry-After value (RFC 9110 §10.2.3) at wall time ``now``.

    Either delta-seconds or an HTTP-date (a date in the past means 0); None
    when absent or unreadable. Always finite: at most :data:`RETRY_AFTER_MAX`.
    """
    if not value:
        return None
    return _retry_after(value, now)[0]


@dataclass(frozen=True, slots=True)
class Head:
    """What the fetcher uses of a response head, every value checked.

    ``status`` is None for a code outside 100-599; ``length`` is the
    Content-Length when it frames the body; ``codings`` the content codings
    other than identity, lower-cased; ``reasons`` what was malformed.
    """

    status: int | None
    content_type: str
    charset: str | None
    location: str | None
    retry_after: float | None
    length: int | None
    codings: tuple[str, ...]
    reasons: tuple[str, ...]


def read_head(status: int, fields: Iterable[tuple[str, str]], now: float) -> Head:
    """Read a status code and header fields (lower-case names, in order) at wall time ``now``.

    Total: no value makes it raise; each malformed one is ignored or clamped
    and named in ``reasons`` (the module docstring lists them).
    """
    reasons: list[str] = []
    wanted: dict[str, list[str]] = {"content-type": [], "location": [], "retry-after": [],
                                    "content-length": [], "content-encoding": [],
                                    "transfer-encoding": []}
    for name, value in fields:
        if name in wanted:
            wanted[name].append(value)
    code: int | None = status
    if not 100 <= status <= 599:
        reasons.append("status")
        code = None

    content_type, charset = "", None
    types = wanted["content-type"]
    if types:
        if len(set(types)) > 1:
            reasons.append("content_type")
        content_type, charset, why = _content_type(types[-1])
        reasons += why

    location = None
    locations = wanted["location"]
    if locations and 300 <= status < 400:
        value = locations[0].strip()
        if len(set(locations)) > 1 or not value or len(value) > MAX_LOCATION or _CONTROL.search(value):
            reasons.append("location")
        else:
            location = value

    retry_after = None
    retry = wanted["retry-after"]
    if retry:
        if len(set(retry)) > 1:
            reasons.append("retry_after")
        else:
            retry_after, ok = _retry_after(retry[0], now)
            if not ok:
                reasons.append("retry_after")

    length = None
    lengths = wanted["content-length"]
    if lengths:
        value = lengths[0].strip()
        if wanted["transfer-encoding"]:
            # RFC 9112 §6.3: Transfer-Encoding overrides Content-Length, and
            # a message with both "ought to be handled as an error";
            # peer.core.http1 (as h11) frames it as chunked, so the length is only ignored.
            reasons.append("content_length")
        elif len(set(lengths)) > 1 or not (value.isascii() and value.isdigit()) or len(value) > 20:
            reasons.append("content_length")
        else:
            length = int(value)

    codings: tuple[str, ...] = ()
    encodings = wanted["content-encoding"]
    if encodings:
        listed = [c.strip().lower() for value in encodings for c in value.split(",")]
        codings = tuple(c for c in listed if c and c != "identity")
        if len(codings) > 1 or (codings and codings[0] not in _CODINGS):
            reasons.append("content_encoding")

    return Head(status=code, content_type=content_type, charset=charset, location=location,
                retry_after=retry_after, length=length, codings=codings, reasons=tuple(reasons))


_CLOSED_EARLY = ("server disconnected", "peer closed connection")


def error_kind(exc: BaseException) -> ErrorKind | None:
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
            return ErrorKind.TLS
        cause = cause.__cause__ or cause.__context__
    if isinstance(exc, (trio.BrokenResourceError, trio.ClosedResourceError)):
        return ErrorKind.RESET
    if isinstance(exc, zlib.error):
        return ErrorKind.DECODE
    kind = _library_kind(exc)
    if kind is not None:
        return kind
    if isinstance(exc, OSError):
        return ErrorKind.CONNECT
    return None


def _library_kind(exc: BaseException) -> ErrorKind | None:
    """The kind of an httpx, httpcore or h11 error, for callers that use those libraries.

    The fetcher itself meets only trio's, ssl's, zlib's and OSError
    (peer.core.http1 raises FetchError); the dashboard speaks h11 and scripts use
    httpx. An exception of a library can only exist once the library is
    imported, so the libraries are looked up in ``sys.modules`` instead of
    imported here: a peer starts without loading them (about 60 ms of
    start-up, measured with ``python -X importtime``).
    """
    httpx, httpcore, h11 = (sys.modules.get(m) for m in ("httpx", "httpcore", "h11"))

    def of(module: Any, *names: str) -> tuple[type[BaseException], ...]:
        return tuple(getattr(module, n) for n in names) if module is not None else ()

    if isinstance(exc, of(httpx, "ConnectTimeout") + of(httpcore, "ConnectTimeout")):
        return ErrorKind.CONNECT
    if isinstance(exc, of(httpx, "TimeoutException") + of(httpcore, "TimeoutException")):
        return ErrorKind.TIMEOUT
    if isinstance(exc, of(httpx, "ConnectError") + of(httpcore, "ConnectError")):
        return ErrorKind.CONNECT
    if isinstance(exc, of(httpx, "ReadError", "WriteError") + of(httpcore, "ReadError", "WriteError")):
        return ErrorKind.RESET
    if isinstance(exc, of(httpx, "RemoteProtocolError") + of(httpcore, "RemoteProtocolError")
                  + of(h11, "RemoteProtocolError")):
        # httpcore's and h11's words for a connection closed before the end.
        return ErrorKind.RESET if str(exc).lower().startswith(_CLOSED_EARLY) else ErrorKind.PROTOCOL
    if isinstance(exc, of(httpx, "ProtocolError") + of(httpcore, "ProtocolError") + of(h11, "ProtocolError")):
        return ErrorKind.PROTOCOL
    if isinstance(exc, of(httpx, "UnsupportedProtocol", "InvalidURL") + of(httpcore, "UnsupportedProtocol")):
        return ErrorKind.SCOPE
    if isinstance(exc, of(httpx, "DecodingError")):
        return ErrorKind.DECODE
    if isinstance(exc, of(httpx, "TransportError")
                  + of(httpcore, "NetworkError", "ConnectionNotAvailable")):
        return ErrorKind.CONNECT
    return None


# What fetch() turns into an error kind; anything else is a bug and propagates.
_NETWORK_ERRORS = (OSError, trio.BrokenResourceError, trio.ClosedResourceError, zlib.error)


def _request_url(url: str) -> tuple[str, str, int, str, str]:
    """(scheme, host, port, target, Host field of RFC 9110 §7.2) of an absolute http(s) URL.

    peer.core.urls hands us normalised ASCII URLs (punycode hosts, percent-encoded
    paths); anything else is no URL this fetcher can send: error ``scope``,
    as httpx's own parser would have said.
    """
    if not url.isascii():
        raise FetchError(ErrorKind.SCOPE, f"not an ASCII URL: {url[:100]!r}")
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in ("http", "https"):
        raise FetchError(ErrorKind.SCOPE, f"not an http(s) URL: {url[:100]!r}")
    cut = len(rest)
    for mark in "/?#":
        i = rest.find(mark)
        if 0 <= i < cut:
            cut = i
    authority, target = rest[:cut], rest[cut:].partition("#")[0]
    if "@" in authority:
        raise FetchError(ErrorKind.SCOPE, "a URL with user info is not fetched")
    host, port = authority, None
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            raise FetchError(ErrorKind.SCOPE, f"bad IPv6 literal in {url[:100]!r}")
        host, tail = authority[1:end], authority[end + 1:]
        if tail:
            if not tail.startswith(":"):
                raise FetchError(ErrorKind.SCOPE, f"bad authority in {url[:100]!r}")
            port = tail[1:]
    elif ":" in authority:
        host, _, port = authority.rpartition(":")
    if not host:
        raise FetchError(ErrorKind.SCOPE, f"no host in {url[:100]!r}")
    default = 443 if scheme == "https" else 80
    number = default
    if port:
        if not (port.isdigit() and len(port) <= 5 and int(port) <= 65535):
            raise FetchError(ErrorKind.SCOPE, f"bad port in {url[:100]!r}")
        number = int(port)
    if not target.startswith("/"):
        target = "/" + target
    host = host.lower()
    shown = f"[{host}]" if ":" in host else host
    field = shown if number == default else f"{shown}:{number}"
    return scheme, host, number, target, field


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


def _decoder(codings: tuple[str, ...]) -> _Inflater | None:
    """None for identity; FetchError("decode") for a coding we did not ask for."""
    if not codings:
        return None
    if len(codings) == 1 and codings[0] in _CODINGS:
        return _Inflater(codings[0])
    # A 100 KiB header need not be in the message (nobody reads it whole).
    shown = ", ".join(codings)
    raise FetchError(ErrorKind.DECODE, f"unsupported Content-Encoding {shown[:200]!r}")


class _Progress:
    """What one fetch has learnt so far (kept when a deadline cuts it short)."""

    __slots__ = ("status", "content_type", "charset", "location", "retry_after",
                 "parts", "size", "raw", "truncated", "error", "address", "malformed")

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


# ---------------------------------------------------------------------------
# Connections: DNS through the resolver, keep-alive per origin


class _Conn:
    """One open connection to an origin (TCP, or TLS over TCP) and the address it went to."""

    __slots__ = ("stream", "sock", "key", "address", "idle_since")

    def __init__(self, stream: trio.abc.Stream, sock: Any, key: tuple[str, str, int],
                 address: str) -> None:
        self.stream = stream
        self.sock = sock
        self.key = key
        self.address = address
        self.idle_since = 0.0

    def close(self) -> None:
        # The socket, not the stream: synchronous, so it also runs when a
        # deadline cancelled the fetch, and a crawler owes a server whose
        # response it abandons no TLS close_notify (curl also just closes).
        self.sock.close()


class _Idle:
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
        self._by_key: dict[tuple[str, str, int], list[_Conn]] = {}
        self._order: dict[_Conn, None] = {}  # insertion order = idle since

    def take(self, key: tuple[str, str, int], now: float) -> _Conn | None:
        conns = self._by_key.get(key)
        while conns:
            conn = conns.pop()
            del self._order[conn]
            if not conns:
                del self._by_key[key]
            if now - conn.idle_since > _KEEPALIVE_EXPIRY or conn.sock.is_readable():
                conn.close()
                continue
            return conn
        return None

    def put(self, conn: _Conn, now: float) -> None:
        conn.idle_since = now
        order = self._order
        while order:
            oldest = next(iter(order))
            if len(order) < self.cap and now - oldest.idle_since <= _KEEPALIVE_EXPIRY:
                break
            self._drop(oldest)
        order[conn] = None
        self._by_key.setdefault(conn.key, []).append(conn)

    def _drop(self, conn: _Conn) -> None:
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
        # Built once; the request line and Host come from the URL.
        agent = "".join(" " if c in "\r\n\x00" else c for c in crawl.user_agent)  # no header injection
        self._headers = (b"User-Agent: " + agent.encode("latin-1", "replace") + b"\r\n"
                         + b"Accept: " + _ACCEPT.encode() + b"\r\n"
                         + b"Accept-Encoding: " + _ACCEPT_ENCODING.encode() + b"\r\n")
        # The total deadline is ours; only a hanging connect or TLS handshake
        # gets one of its own, so the next address of a host can still be tried.
        self._connect_timeout = max(1.0, crawl.timeout / 3)
        # One context for all fetches; httpx's default is made at the first
        # https URL (loading the CA bundle costs ~20 ms, httpx's import 60 ms more).
        if ssl_context is not None:
            ssl_context.set_alpn_protocols(["http/1.1"])  # as httpcore did: no h2 offered
        self._ssl_context = ssl_context
        # Idle keep-alive connections a shard keeps: its share of the
        # concurrency, times 4 for the unevenness of hashing hosts to shards.
        keepalive = 4 * -(-crawl.concurrency // shards)
        self._idle = [_Idle(keepalive) for _ in range(shards)]
        self._requests = 0
        self._bytes = 0
        self._truncated = 0
        self._errors: Counter[str] = Counter()
        self._malformed: Counter[str] = Counter()
        self._bugs = 0

    @property
    def shards(self) -> int:
        return len(self._idle)

    def _ssl(self) -> ssl.SSLContext:
        """The TLS context: the caller's, or httpx's defaults (certifi's CA bundle, or
        SSL_CERT_FILE / SSL_CERT_DIR); ALPN offers HTTP/1.1 only, as httpcore did."""
        if self._ssl_context is None:
            import httpx

            self._ssl_context = httpx.create_ssl_context()
            self._ssl_context.set_alpn_protocols(["http/1.1"])
        return self._ssl_context

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
                    prefix_ok: bool = False) -> FetchResult:
        """One GET of ``url``; never raises for anything a server sends (module docstring).

        With ``accept_html_only`` a response whose Content-Type is present and
        not HTML is not read: ``body`` is empty and ``error`` None.
        ``max_body`` replaces ``crawl.max_body`` for this fetch. With
        ``prefix_ok`` a longer body (by Content-Length or as read) is read up
        to ``max_body`` decoded bytes and returned with ``truncated`` and
        ``error`` None; its connection is closed, the rest being unread.
        Only cancellation from outside propagates (and ValueError for a
        ``max_body`` under 1: the caller's mistake, not the server's).
        """
        limit = self._max_body if max_body is None else max_body
        if limit < 1:
            raise ValueError(f"max_body must be >= 1, not {limit}")
        start = trio.current_time()
        p = _Progress()
        with trio.move_on_after(self._timeout) as deadline:
            try:
                await self._fetch(url, p, accept_html_only, limit, prefix_ok)
            except FetchError as exc:
                p.error = exc.kind
            except _NETWORK_ERRORS as exc:
                kind = error_kind(exc)
                if kind is None:  # pragma: no cover - _NETWORK_ERRORS are all mapped
                    kind = ErrorKind.INTERNAL
                p.error = kind
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
            address=p.address, malformed=p.malformed,
        )

    async def _connect(self, scheme: str, host: str, port: int) -> _Conn:
        """A new connection: the resolver's addresses in order, the first that accepts wins.

        The SSRF guard already ran in the resolver, so we connect to exactly
        the address it saw; SNI and the certificate check see the host name.
        """
        addresses = await self.resolver.resolve(host)
        last: BaseException | None = None
        for address in addresses:
            tcp = None
            try:
                with trio.move_on_after(self._connect_timeout):
                    tcp = await trio.open_tcp_stream(address, port)
            except OSError as exc:
                last = exc
                continue
            if tcp is None:
                last = FetchError(ErrorKind.CONNECT, f"connect to {address} timed out")
                continue
            sock = tcp.socket
            stream: trio.abc.Stream = tcp
            if scheme == "https":
                stream = trio.SSLStream(tcp, self._ssl(), server_hostname=host, https_compatible=True)
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
            return _Conn(stream, sock, (scheme, host, port), address)
        if last is None:  # pragma: no cover - the resolver returns an address or raises
            last = FetchError(ErrorKind.DNS, f"no address for {host}")
        raise last

    async def _fetch(self, url: str, p: _Progress, html_only: bool, limit: int,
                     prefix_ok: bool) -> None:
        scheme, host, port, target, field = _request_url(url)
        request = request_bytes(target, field, self._headers)
        key = (scheme, host, port)
        shards = self._idle
        idle = shards[zlib.crc32(host.encode()) % len(shards)] if len(shards) > 1 else shards[0]
        conn = idle.take(key, trio.current_time())
        if conn is None:
            conn = await self._connect(scheme, host, port)
        p.address = conn.address
        reader = ResponseReader()
        keep = False
        try:
            stream = conn.stream
            await stream.send_all(request)
            while (response := reader.head()) is None:
                reader.feed(await stream.receive_some(_READ_SIZE))
            head = self._read_head(response, p)
            if head.status is None:
                p.error = ErrorKind.PROTOCOL  # not read: the connection is dropped
                return
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
                await self._read_body(stream, reader, p, _decoder(head.codings), limit, prefix_ok,
                                      keep=True)
            if reader.trailing and response.keep_alive:
                # curl's "excess found": close, or the next URL of the host
                # gets these bytes as its response (module docstring).
                self._malformed["excess"] += 1
            keep = reader.reusable
        finally:
            if keep:
                idle.put(conn, trio.current_time())
            else:
                conn.close()

    @staticmethod
    def _read_head(response: Head1, p: _Progress) -> Head:
        head = read_head(response.status, response.fields, time.time())
        p.status = head.status
        p.content_type, p.charset = head.content_type, head.charset
        p.location, p.retry_after = head.location, head.retry_after
        p.malformed = head.reasons
        return head

    @staticmethod
    async def _read_body(stream: trio.abc.Stream, reader: ResponseReader, p: _Progress,
                         decoder: _Inflater | None, limit: int, prefix_ok: bool, *,
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
            if not keep:
                continue
            room = limit - p.size
            try:
                # room + 1: getting that many says there is more than max_body.
                out = chunk if decoder is None else decoder.feed(chunk, room + 1)
            except zlib.error as exc:
                raise FetchError(ErrorKind.DECODE, f"corrupt compressed body: {exc}") from None
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
