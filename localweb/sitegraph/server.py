"""The site graph's HTTP server: one trio + h11 server on one loopback port for every host.

:class:`WebFarm` answers for every host of a :class:`~localweb.sitegraph.web.SiteGraph`,
dispatching on the ``Host`` header (the crawler maps ``*.web.test`` to
127.0.0.1 with a static DNS entry, :data:`localweb.webfarm.PEER_CONFIG`).
It speaks HTTP/1.1 with keep-alive, GET and HEAD, per-host latency that may
change over time and a token-bucket rate limit answering 429 with
``Retry-After`` (:class:`HostBehaviour`). ``bad.web.test`` is answered by
:mod:`localweb.sitegraph.endpoints`, whose answers say how they are paced; the
sleeping happens here. ``docs.web.test`` is a documentation site with its
sitemap (:mod:`localweb.sitegraph.docsite`). Every request is logged (:class:`LogEntry`) in
memory and, with ``log_path``, as JSON lines flushed per line: the request
log is what tests judge a crawl by; each entry names the client's address
(``client``), so a test of several peers in their own network namespaces
(:mod:`localweb.netns.ring`) can tell which peer asked. It binds loopback
addresses only, unless told ``private=True`` (a private address such as a
namespace's, never a public one).

Unlike the hostile web (:mod:`localweb.hostile.server`, raw bytes on purpose),
this server sends only well-formed HTTP: h11 writes every response.
"""

from __future__ import annotations

import bisect
import email.utils
import ipaddress
import itertools
import json
import math
import socket
import struct
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import h11
import trio

from localweb.sitegraph import docsite

from localweb.sitegraph import endpoints, statefarm
from localweb.sitegraph.endpoints import BAD_HOST, FILLER, Answer
from localweb.sitegraph.hrefs import port_suffix
from localweb.sitegraph.oracle import normalize
from localweb.sitegraph.web import SiteGraph

__all__ = ["USUAL_HEADERS", "FarmError", "FarmStats", "HostBehaviour", "LogEntry", "WebFarm", "check_loopback", "read_log",
           "serve_webfarm"]



@dataclass(frozen=True, slots=True)
class HostBehaviour:
    """How one host misbehaves on purpose.

    ``latency``: seconds added before answering; a number, a schedule of
    ``(t, seconds)`` steps (``t`` = seconds since the server started, each
    step holds until the next), or a callable of that elapsed time.
    ``rate``: requests per second a token bucket of ``burst`` tokens allows
    (0 = unlimited); over it the answer is 429 with ``Retry-After``
    (``retry_after`` seconds, or the time until a token is free, rounded up).
    """

    latency: float | tuple[tuple[float, float], ...] | Callable[[float], float] = 0.0
    rate: float = 0.0
    burst: float = 1.0
    retry_after: int | None = None
    _steps: tuple[float, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        lat = self.latency
        if isinstance(lat, (list, tuple)):
            steps = tuple(sorted((float(t), float(s)) for t, s in lat))
            if any(s < 0 for _, s in steps):
                raise ValueError("latency must be >= 0")
            object.__setattr__(self, "latency", steps)
            object.__setattr__(self, "_steps", tuple(t for t, _ in steps))
        elif not callable(lat) and lat < 0:
            raise ValueError("latency must be >= 0")
        if self.rate < 0 or self.burst < 1:
            raise ValueError("rate must be >= 0 and burst >= 1")

    def latency_at(self, elapsed: float) -> float:
        """Seconds of latency ``elapsed`` seconds after the server started."""
        lat = self.latency
        if isinstance(lat, tuple):
            i = bisect.bisect_right(self._steps, elapsed) - 1
            return lat[i][1] if i >= 0 else 0.0
        if callable(lat):
            return max(0.0, float(lat(elapsed)))
        return lat


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One request: wall time it arrived, host (no port), method, target
    (path+query as sent), status (0: connection reset), body bytes sent,
    connection id, seconds taken and the client's IP address ("" in logs
    written before it was recorded), its User-Agent (``agent``) and its other
    headers beyond those every crawler request carries (``headers``: (name
    lower-cased, value) pairs, none of :data:`USUAL_HEADERS`), so a test sees
    what a site owner would of a per-site agent or header. Appended when the
    answer ends (so a drip is logged when its client leaves)."""

    t: float
    host: str
    method: str
    target: str
    status: int
    bytes: int
    conn: int
    dur: float
    client: str = ""
    agent: str = ""
    headers: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        # JSON has lists where the log had tuples: read back, an entry is equal.
        if not isinstance(self.headers, tuple):
            object.__setattr__(self, "headers", tuple((str(k), str(v)) for k, v in self.headers))

    def to_json(self) -> str:
        return json.dumps({"t": round(self.t, 6), "host": self.host, "method": self.method,
                           "target": self.target, "status": self.status, "bytes": self.bytes,
                           "conn": self.conn, "dur": round(self.dur, 6), "client": self.client,
                           "agent": self.agent, "headers": self.headers})


#: Request headers a log entry leaves out of ``headers``: the ones every request has.
USUAL_HEADERS = frozenset({"host", "user-agent", "accept", "accept-encoding", "connection"})


def read_log(path: str) -> list[LogEntry]:
    """The entries of a JSON-lines request log (a torn last line is skipped).

    Keys this version does not know are ignored and missing optional ones
    (``client``, in older logs) take their default, so old and new logs read.
    """
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                d = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(d, dict):
                continue
            try:
                out.append(LogEntry(**{k: v for k, v in d.items() if k in _LOG_KEYS}))
            except TypeError:
                continue
    return out


_LOG_KEYS = frozenset(LogEntry.__dataclass_fields__)


class FarmStats:
    """Counters of a running farm (mutable; read them, don't write)."""

    __slots__ = ("requests", "status", "bytes_sent", "connections", "open_connections",
                 "inflight", "max_inflight", "per_host")

    def __init__(self) -> None:
        self.requests = 0
        self.status: Counter[int] = Counter()
        self.bytes_sent = 0
        self.connections = 0
        self.open_connections = 0
        self.inflight: Counter[str] = Counter()
        self.max_inflight: Counter[str] = Counter()  # per host, ever
        self.per_host: Counter[str] = Counter()


class FarmError(OSError):
    """The server cannot start: its port cannot be bound, or its log file not opened.

    An OSError, as before, for callers that catch that; the CLI prints it as
    one line and exits 2.
    """


def check_loopback(host: str, *, private: bool = False) -> None:
    """ValueError unless ``host`` is a loopback address (or localhost).

    With ``private``, a private address (RFC 1918, RFC 4193: a network
    namespace's, a LAN's) is allowed too; a public one never is: this web
    answers for any ``Host`` and must not be served to the Internet.
    """
    if host == "localhost":
        return
    try:
        addr = ipaddress.ip_address(host)
        ok = addr.is_loopback or (private and addr.is_private and not addr.is_unspecified)
    except ValueError:
        ok = False
    if not ok:
        what = "loopback or private" if private else "loopback"
        raise ValueError(f"webfarm binds {what} addresses only, not {host!r}")


class WebFarm:
    """The HTTP server of a :class:`SiteGraph`.

    ``log`` keeps every :class:`LogEntry` in memory when ``keep_log`` (a
    list: tests need all of it; ~200 bytes an entry); ``log_path`` appends
    them as JSON lines. ``behaviours`` maps a host, or ``"*"`` for all, to a
    :class:`HostBehaviour`; it may be changed while serving. ``validators``
    and ``cookies``: the pages keep state of their visitors
    (:mod:`localweb.sitegraph.statefarm`): an ETag and 304s, a cookie per host.
    """

    def __init__(self, graph: SiteGraph, *, behaviours: Mapping[str, HostBehaviour] | None = None,
                 log_path: str | None = None, keep_log: bool = True, cache_pages: int = 1024,
                 idle_timeout: float = 60.0, validators: bool = False, cookies: bool = False) -> None:
        self.graph = graph
        self.validators = validators
        self.cookies = cookies
        self.behaviours: dict[str, HostBehaviour] = dict(behaviours or {})
        self.log: list[LogEntry] = []
        self.stats = FarmStats()
        self.port = 0
        self.host = ""
        self.started = 0.0  # trio clock when serving began
        self._keep_log = keep_log
        self._log_path = log_path
        self._log_file: Any = None
        self._cache: OrderedDict[tuple[str, str], Answer] = OrderedDict()
        self._cache_size = cache_pages
        self._idle = idle_timeout
        self._conn_ids = itertools.count(1)
        self._buckets: dict[str, list[float]] = {}
        self._date = b""
        self._date_sec = -1

    # -- public helpers ---------------------------------------------------------

    def url(self, host: str, path: str = "/") -> str:
        return f"http://{host}{port_suffix(self.port)}{path}"

    def fetched(self, method: str = "GET") -> Counter[str]:
        """How often each URL was requested with ``method``, normalised; robots.txt excluded."""
        out: Counter[str] = Counter()
        for e in self.log:
            if e.method == method and e.target != "/robots.txt":
                raw = f"http://{e.host}{port_suffix(self.port)}{e.target}"
                try:
                    out[normalize(raw)] += 1
                except ValueError:
                    out[raw] += 1
        return out

    # -- serving ------------------------------------------------------------------

    async def serve(self, host: str = "127.0.0.1", port: int = 0, *, private: bool = False,
                    task_status: trio.TaskStatus[WebFarm] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen on ``host:port`` and serve until cancelled; ``started(self)``.

        ``private`` allows a private address besides loopback (:func:`check_loopback`).
        """
        check_loopback(host, private=private)
        if host == "localhost":
            host = "127.0.0.1"  # one listener, so port 0 means one port
        try:
            listeners = await trio.open_tcp_listeners(port, host=host)
        except OSError as e:
            raise FarmError(f"cannot listen on {host}:{port}: {e.strerror or e}; stop the process "
                            "that holds it, or pick another --port (0 picks a free one)") from e
        self.port = listeners[0].socket.getsockname()[1]
        self.host = host
        self.started = trio.current_time()
        if self._log_path:
            try:
                self._log_file = open(self._log_path, "a", encoding="utf-8")  # noqa: SIM115
            except OSError as e:
                for listener in listeners:
                    await listener.aclose()
                raise FarmError(f"cannot open the request log {self._log_path}: "
                                f"{e.strerror or e}") from e
        try:
            task_status.started(self)
            await trio.serve_listeners(self._connection, listeners)
        finally:
            if self._log_file is not None:
                self._log_file.close()
                self._log_file = None

    def _record(self, entry: LogEntry) -> None:
        st = self.stats
        st.requests += 1
        st.status[entry.status] += 1
        st.bytes_sent += entry.bytes
        if self._keep_log:
            self.log.append(entry)
        if self._log_file is not None:
            self._log_file.write(entry.to_json() + "\n")
            self._log_file.flush()

    async def _connection(self, stream: trio.SocketStream) -> None:
        cid = next(self._conn_ids)
        try:
            client = str(stream.socket.getpeername()[0])
        except OSError:
            client = ""  # reset before we asked
        st = self.stats
        st.connections += 1
        st.open_connections += 1
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                event = await self._next_event(stream, conn)
                if not isinstance(event, h11.Request):
                    return
                request = event
                while not isinstance(event, h11.EndOfMessage):
                    event = await self._next_event(stream, conn)
                    if event is None or isinstance(event, h11.ConnectionClosed):
                        return
                if not await self._respond(stream, conn, request, cid, client):
                    return
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    return
                conn.start_next_cycle()
        except h11.RemoteProtocolError as exc:
            if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                try:
                    data = conn.send(h11.Response(status_code=exc.error_status_hint, headers=[
                        (b"content-length", b"0"), (b"connection", b"close")]))
                    await stream.send_all(data or b"")
                except (h11.LocalProtocolError, trio.BrokenResourceError, trio.ClosedResourceError):
                    pass
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        except h11.LocalProtocolError:
            pass  # e.g. a /status/302?to= value h11 will not put in a header
        finally:
            st.open_connections -= 1
            await trio.aclose_forcefully(stream)

    async def _next_event(self, stream: trio.SocketStream, conn: h11.Connection) -> Any:
        while True:
            event = conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            with trio.move_on_after(self._idle):
                conn.receive_data(await stream.receive_some(65536))
                continue
            return None

    def _http_date(self) -> bytes:
        now = int(time.time())
        if now != self._date_sec:
            self._date_sec = now
            self._date = email.utils.formatdate(now, usegmt=True).encode()
        return self._date

    def _rate_limited(self, host: str, b: HostBehaviour, now: float) -> int | None:
        """None if the request may go on, else the Retry-After seconds."""
        bucket = self._buckets.get(host)
        if bucket is None:
            bucket = self._buckets[host] = [b.burst, now]
        tokens = min(b.burst, bucket[0] + (now - bucket[1]) * b.rate)
        bucket[1] = now
        if tokens >= 1.0:
            bucket[0] = tokens - 1.0
            return None
        bucket[0] = tokens
        return b.retry_after if b.retry_after is not None else max(1, math.ceil((1.0 - tokens) / b.rate))

    async def _respond(self, stream: trio.SocketStream, conn: h11.Connection,
                       request: h11.Request, cid: int, client: str) -> bool:
        t_wall = time.time()
        t0 = trio.current_time()
        method = request.method.decode("ascii", "replace")
        target = request.target.decode("ascii", "replace")
        host = agent = ""
        extra: list[tuple[str, str]] = []
        for name, value in request.headers:
            if name == b"host":
                host = value.decode("ascii", "replace").lower()
            elif name == b"user-agent":
                agent = value.decode("latin-1")
            elif name.decode("ascii", "replace") not in USUAL_HEADERS:
                extra.append((name.decode("ascii", "replace"), value.decode("latin-1")))
        if target.startswith(("http://", "https://")):  # absolute-form (RFC 9112 §3.2.2)
            rest = target.split("//", 1)[1]
            slash = rest.find("/")
            host, target = (rest, "/") if slash < 0 else (rest[:slash].lower(), rest[slash:])
        if host.startswith("["):
            host = host[: host.find("]") + 1]
        else:
            host = host.partition(":")[0].rstrip(".")
        st = self.stats
        st.per_host[host] += 1
        st.inflight[host] += 1
        if st.inflight[host] > st.max_inflight[host]:
            st.max_inflight[host] = st.inflight[host]
        sent = [0, 0]  # status, body bytes
        try:
            reply = None
            b = self.behaviours.get(host) or self.behaviours.get("*")
            if b is not None:
                if b.rate > 0:
                    retry = self._rate_limited(host, b, trio.current_time())
                    if retry is not None:
                        reply = Answer(429, ((b"content-type", b"text/plain; charset=utf-8"),
                                             (b"retry-after", str(retry).encode())), b"slow down\n")
                if reply is None:
                    delay = b.latency_at(trio.current_time() - self.started)
                    if delay > 0:
                        await trio.sleep(delay)
            if reply is None:
                if not host:
                    reply = Answer(400, ((b"content-type", b"text/plain"),), b"no Host header\n")
                elif method not in ("GET", "HEAD"):
                    reply = Answer(405, ((b"allow", b"GET, HEAD"),))
                elif host == BAD_HOST:
                    reply = endpoints.answer(target, next((v for n, v in extra if n == "cookie"), ""))
                    if reply.delay > 0:
                        await trio.sleep(reply.delay)
                elif host == docsite.DOCS_HOST:
                    reply = docsite.answer(target, self.port)
                else:
                    reply = self._page(host, target)
                    if self.validators or self.cookies:
                        fields = dict(extra)
                        reply = statefarm.keep_state(
                            reply, host, if_none_match=fields.get("if-none-match"), cookie=fields.get("cookie"),
                            validators=self.validators, cookies=self.cookies)
            return await self._send(stream, conn, reply, method == "HEAD", sent)
        finally:
            st.inflight[host] -= 1
            self._record(LogEntry(t_wall, host, method, target, sent[0], sent[1], cid,
                                  trio.current_time() - t0, client, agent, tuple(extra)))

    def _page(self, host: str, target: str) -> Answer:
        path, _, _ = target.partition("?")
        if "%" in path:
            path = unquote(path)
        key = (host, path)
        answer = self._cache.get(key)
        if answer is None:
            page = self.graph.render(host, path, self.port)
            headers: tuple[tuple[bytes, bytes], ...] = ((b"content-type", page.content_type.encode()),)
            headers += tuple((k.encode(), v.encode()) for k, v in page.headers)
            answer = self._cache[key] = Answer(page.status, headers, page.body)
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        return answer

    async def _send(self, stream: trio.SocketStream, conn: h11.Connection, reply: Answer,
                    head: bool, sent: list[int]) -> bool:
        """Send a reply; False when the connection must now close."""
        headers = [*reply.headers, (b"server", b"webfarm"), (b"date", self._http_date())]
        status = reply.status
        if reply.reset_after >= 0:
            sent[0] = 0
            if reply.reset_after > 0:
                await stream.send_all(conn.send(h11.Response(status_code=200, headers=headers)))
                sent[0] = 200
                if not head:
                    await stream.send_all(FILLER[: reply.reset_after])
                    sent[1] = reply.reset_after
            # SO_LINGER (on, 0 s): close() sends RST instead of FIN.
            stream.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            await trio.aclose_forcefully(stream)
            return False
        if reply.stream is not None:
            return await self._send_stream(stream, conn, reply, headers, head, sent)
        bodyless = head or status in (204, 304)
        if status not in (204, 304):
            headers.append((b"content-length", str(len(reply.body)).encode()))
        data = conn.send(h11.Response(status_code=status, headers=headers))
        sent[0] = status
        if not bodyless and reply.body:
            data += conn.send(h11.Data(data=reply.body))
        data += conn.send(h11.EndOfMessage())
        await stream.send_all(data)
        if not bodyless:
            sent[1] = len(reply.body)
        return conn.our_state is h11.DONE

    async def _send_stream(self, stream: trio.SocketStream, conn: h11.Connection, reply: Answer,
                           headers: list[tuple[bytes, bytes]], head: bool, sent: list[int]) -> bool:
        headers.append((b"connection", b"close"))
        await stream.send_all(conn.send(h11.Response(status_code=reply.status, headers=headers)))
        sent[0] = reply.status
        if head:
            await stream.send_all(conn.send(h11.EndOfMessage()))
            return False
        assert reply.stream is not None
        chunks = reply.stream()

        async def pump(cancel: trio.CancelScope) -> None:
            try:
                for i, chunk in enumerate(chunks):
                    if i and reply.interval > 0:
                        await trio.sleep(reply.interval)
                    await stream.send_all(conn.send(h11.Data(data=chunk)))
                    sent[1] += len(chunk)
                await stream.send_all(conn.send(h11.EndOfMessage()))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
            finally:
                close = getattr(chunks, "close", None)
                if close is not None:
                    close()
                cancel.cancel()

        async def watch(cancel: trio.CancelScope) -> None:
            # A client that hangs up must stop the stream now, not when a
            # send finally fails (a drip sends 1 byte per interval).
            try:
                while await stream.receive_some(4096):
                    pass
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
            cancel.cancel()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump, nursery.cancel_scope)
            nursery.start_soon(watch, nursery.cancel_scope)
        return False


async def serve_webfarm(graph: SiteGraph, *, host: str = "127.0.0.1", port: int = 0,
                        private: bool = False,
                        task_status: trio.TaskStatus[WebFarm] = trio.TASK_STATUS_IGNORED,
                        **farm_options: Any) -> None:
    """Serve ``graph`` until cancelled: ``farm = await nursery.start(serve_webfarm, graph)``.

    ``farm.port`` is the bound port; ``farm_options`` go to :class:`WebFarm`;
    ``private`` allows a private address (:func:`check_loopback`).
    """
    farm = WebFarm(graph, **farm_options)
    await farm.serve(host, port, private=private, task_status=task_status)

