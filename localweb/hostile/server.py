"""The hostile local web: one raw-socket HTTP/1.1 server on trio for many virtual hosts.

Every host lives on one loopback port; the ``Host`` header picks it (the
crawler maps the names to 127.0.0.1 with ``[dns] resolve``, see
:func:`config_snippet`). Answers come, first match wins, from

1. ``web.program[(host, path)]``: a :class:`~localweb.hostile.wire.Reply` a test set
   (hypothesis draws them), or ``web.program[("*", path)]`` for any host;
2. the normal site (:class:`~localweb.hostile.site.Site`, ``site.test``);
3. the link farm and the traps (:mod:`localweb.hostile.farm`);
4. the hostile hosts (:mod:`localweb.hostile.cases`) and the sitemap hosts
   (:mod:`localweb.hostile.sitemaps`);
5. else 404.

The server itself is bounded, so a runaway crawler cannot take the test
machine down through it: at most ``max_connections`` connections are
served at once (more wait in the kernel's accept queue), a request head is
read up to ``max_head`` bytes (then 431 and close), a connection idle for
``idle_timeout`` is closed, every reply ends after ``max_reply_seconds``,
and the log keeps at most ``max_log`` entries (``log_dropped`` counts the rest).

``web.log`` holds a :class:`LogEntry` per request, appended when its head has
been read (before the answer, so a request whose answer hangs is in it).
Tests read it directly; :func:`serve_in_thread` runs the server in a thread
of its own for synchronous tests and benchmarks that drive real peers.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import socket
import struct
import sys
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import TextIO, cast

import trio

from localweb.hostile import changing as changeweb
from localweb.hostile import styled

from localweb.hostile import sitemaps
from localweb.hostile.cases import route as hostile_route
from localweb.hostile.farm import TRAP_HOST, Farm, trap_page
from localweb.hostile.site import Site
from localweb.hostile.wire import End, Reply, html, parse_request, reply

__all__ = ["DNS", "HostileWeb", "LogEntry", "config_snippet", "in_thread", "main", "serve_in_thread"]

#: The crawler's ``[dns] resolve`` table for this web. refused.test points at
#: a loopback address nobody listens on: every connection to it is refused.
DNS: dict[str, str] = {"*.test": "127.0.0.1", "refused.test": "127.0.0.3"}


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One request: wall time its head was read, Host (no port), method, target, connection id, status."""

    t: float
    host: str
    method: str
    target: str
    conn: int
    status: int

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]


def _field(head: bytes, name: bytes) -> str | None:
    """The first ``name:`` field of a request head (lower-case name), or None."""
    for line in head.split(b"\r\n")[1:]:
        key, colon, value = line.partition(b":")
        if colon and key.strip().lower() == name:
            return value.strip().decode("latin-1")
    return None


@dataclass(slots=True)
class HostileWeb:
    """The server's configuration, its programmed answers and its request log."""

    site: Site = field(default_factory=Site)
    farm: Farm = field(default_factory=Farm)
    max_connections: int = 256
    max_head: int = 32 * 1024
    idle_timeout: float = 15.0
    max_reply_seconds: float = 60.0
    max_log: int = 2_000_000
    log_path: str | None = None
    program: dict[tuple[str, str], Reply] = field(default_factory=dict)
    log: list[LogEntry] = field(default_factory=list)
    log_dropped: int = 0
    port: int = 0
    connections: int = 0
    _log_file: TextIO | None = None

    # -- for tests -------------------------------------------------------------

    def url(self, host: str, path: str = "/") -> str:
        return f"http://{host}:{self.port}{path}"

    def fetched(self, host: str | None = None) -> Counter[str]:
        """URL -> requests of it (robots.txt left out), of one host or all."""
        return Counter(self.url(e.host, e.target) for e in list(self.log)
                       if e.target != "/robots.txt" and (host is None or e.host == host))

    def requests(self, host: str) -> list[LogEntry]:
        return [e for e in list(self.log) if e.host == host]

    # -- answers -----------------------------------------------------------------

    def answer(self, host: str, path: str) -> Reply:
        programmed = self.program.get((host, path)) or self.program.get(("*", path))
        if programmed is not None:
            return programmed
        if host in self.site.hosts:
            return self.site.render(host, path)
        if self.farm.owns(host):
            return self.farm.render(host, path)
        if host == TRAP_HOST:
            return trap_page(path)
        if host in sitemaps.HOSTS:
            return sitemaps.route(host, path, self.port) or reply(404, html("not found"))
        if host in styled.HOSTS:
            return styled.route(host, path, self.port) or reply(404, html("not found"))
        return hostile_route(host, path) or reply(404, html(f"no host {host}"))

    # -- serving -----------------------------------------------------------------

    async def serve(self, host: str = "127.0.0.1", port: int = 0, *,
                    task_status: trio.TaskStatus[HostileWeb] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen on loopback ``host:port`` until cancelled; ``started(self)`` once bound."""
        if not host.startswith("127."):
            raise ValueError(f"the hostile web binds loopback addresses only, not {host!r}")
        listener = (await trio.open_tcp_listeners(port, host=host))[0]
        self.port = listener.socket.getsockname()[1]
        slots = trio.Semaphore(self.max_connections)
        ids = iter(range(1, 2**62))
        with contextlib.ExitStack() as files:
            if self.log_path:
                self._log_file = files.enter_context(open(self.log_path, "a", encoding="utf-8"))
            async with listener, trio.open_nursery() as nursery:
                task_status.started(self)
                while True:
                    await slots.acquire()
                    try:
                        stream = await listener.accept()
                    except BaseException:
                        slots.release()
                        raise
                    nursery.start_soon(self._connection, stream, next(ids), slots)

    def _record(self, entry: LogEntry) -> None:
        if len(self.log) < self.max_log:
            self.log.append(entry)
        else:
            self.log_dropped += 1
        if self._log_file is not None:
            self._log_file.write(json.dumps(asdict(entry)) + "\n")
            self._log_file.flush()

    async def _connection(self, stream: trio.SocketStream, conn: int, slots: trio.Semaphore) -> None:
        self.connections += 1
        end = End.CLOSE
        try:
            buf = b""
            while True:
                head = None
                with trio.move_on_after(self.idle_timeout):
                    head, buf = await self._read_head(stream, buf)
                if head is None:
                    return
                req = parse_request(head)
                if req is None:
                    await stream.send_all(reply(400, html("bad request"), end=End.CLOSE).head)
                    return
                if req.method != "GET":
                    answer = reply(405, b"", end=End.CLOSE)
                elif req.host == changeweb.CHANGE_HOST:  # conditional GETs: the validators count
                    answer = changeweb.answer(req.path, time.time(), _field(head, b"if-none-match"),
                                              _field(head, b"if-modified-since"))
                else:
                    answer = self.answer(req.host, req.path)
                self._record(LogEntry(time.time(), req.host, req.method, req.target, conn, answer.status))
                end = await self._send(stream, answer)
                if end is not End.KEEP:
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            slots.release()
            if end is End.RESET:
                with contextlib.suppress(OSError):
                    stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            await trio.aclose_forcefully(stream)

    async def _read_head(self, stream: trio.SocketStream, buf: bytes) -> tuple[bytes | None, bytes]:
        """The next request head and what followed it; (None, b"") at EOF; 431 over max_head."""
        while True:
            end = buf.find(b"\r\n\r\n")
            if end >= 0:
                return buf[:end], buf[end + 4:]
            if len(buf) > self.max_head:
                await stream.send_all(reply(431, html("request head too large"), end=End.CLOSE).head)
                return None, b""
            data = await stream.receive_some(65536)
            if not data:
                return None, b""
            buf += data

    async def _send(self, stream: trio.SocketStream, answer: Reply) -> End:
        with trio.move_on_after(self.max_reply_seconds) as scope:
            chunks = answer.chunks()
            first = next(chunks, b"")
            # Head and first chunk in one write, so bytes past a body's end
            # reach the client with it.
            await stream.send_all(answer.head + first)
            for chunk in chunks:
                if answer.drip:
                    await trio.sleep(answer.drip)
                if chunk:
                    await stream.send_all(chunk)
        return End.CLOSE if scope.cancelled_caught else answer.end


@contextlib.contextmanager
def in_thread(serve: Callable[..., Awaitable[object]]) -> Iterator[None]:
    """Run ``await serve(task_status=...)`` in a thread with its own trio loop for the ``with`` block.

    Entered once ``serve`` called ``task_status.started()``; cancelled on
    exit. An error of the server is raised here, in the caller's thread.
    """
    ready = threading.Event()
    box: dict[str, object] = {}

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            box["token"] = trio.lowlevel.current_trio_token()
            box["cancel"] = nursery.cancel_scope.cancel
            await nursery.start(serve)
            ready.set()

    def run() -> None:
        try:
            trio.run(main)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            box["error"] = exc
        finally:
            ready.set()

    thread = threading.Thread(target=run, name="localweb", daemon=True)
    thread.start()
    ready.wait()
    if "error" in box:
        raise RuntimeError(f"the server did not start: {box['error']!r}")
    try:
        yield
    finally:
        trio.from_thread.run_sync(cast(Callable[[], None], box["cancel"]),
                                  trio_token=cast(trio.lowlevel.TrioToken, box["token"]))
        thread.join(10)
    if "error" in box:
        raise RuntimeError(f"the server failed: {box['error']!r}")


@contextlib.contextmanager
def serve_in_thread(web: HostileWeb, host: str = "127.0.0.1", port: int = 0) -> Iterator[HostileWeb]:
    """Serve ``web`` from a thread of its own for the ``with`` block; ``web.port`` is set on entry."""
    with in_thread(functools.partial(web.serve, host, port)):
        yield web


def config_snippet(port: int | str = "PORT", seeds: Sequence[str] = ()) -> str:
    """The cluster.toml lines a crawler needs to crawl this web on ``port``."""
    resolve = ", ".join(f'"{k}" = "{v}"' for k, v in DNS.items())
    seed_list = ", ".join(f'"{s}"' for s in seeds) or f'"http://site.test:{port}/"'
    return (f"[crawl]\nseeds = [{seed_list}]\nallow_hosts = [\"*.test\"]\n"
            f"allow_private = true   # the web is on 127.0.0.1: the SSRF guard must let it through\n\n"
            f"[dns]\nresolve = {{ {resolve} }}\n")


def _parser() -> argparse.ArgumentParser:
    from localweb.hostile.cases import CASES

    cases = "\n".join(f"  {c.name:<20} {', '.join(c.seeds[:2])}{' ...' if len(c.seeds) > 2 else ''}"
                      for c in CASES)
    p = argparse.ArgumentParser(
        prog="python -m localweb.hostile",
        description="Serve the hostile local web (normal site, link farms, traps, broken HTTP) on loopback.",
        epilog=("A crawler needs these cluster.toml lines (PORT is --port):\n\n"
                + config_snippet() + "\nHosts and their seeds (http://HOST:PORT/PATH):\n"
                + f"  {'normal site':<20} site.test/\n" + cases),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free one)")
    p.add_argument("--site-pages", type=int, default=200, help="pages of site.test (default 200)")
    p.add_argument("--farm-hosts", type=int, default=4, help="link-farm hosts farm1..N.test (default 4)")
    p.add_argument("--farm-links", type=int, default=1_000_000, help="links a farm page (default 1000000)")
    p.add_argument("--log", metavar="PATH", help="append every request as a JSON line here")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not 0 <= args.port <= 65535 or args.site_pages < 1 or args.farm_hosts < 1 or args.farm_links < 1:
        print("error: --port must be 0-65535 and the sizes >= 1", file=sys.stderr)
        return 2
    web = HostileWeb(site=Site(pages=args.site_pages), farm=Farm(args.farm_hosts, args.farm_links),
                     log_path=args.log)

    async def run() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(web.serve, "127.0.0.1", args.port)
            print(f"listening on 127.0.0.1:{web.port}\n\n{config_snippet(web.port)}", flush=True)

    try:
        trio.run(run)
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        print(f"error: cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
