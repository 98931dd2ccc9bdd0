"""An endless web: every page links to 200 pages never linked before, over a fixed set of hosts.

Page ``/p/<k>`` on host ``hNNN.web.test`` links to the pages
``LINKS*k + 1 ... LINKS*k + LINKS``; page j is on host ``j mod hosts``. So
the links of a page are known without fetching it (:func:`links`), no URL
is linked twice and the supply never ends: the web for frontiers of
millions of URLs (scripts/bench_scale.py, tests/e2e/test_crash.py). No
robots.txt (404). A tiny trio + h11 server with keep-alive.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import h11
import trio

__all__ = ["LINKS", "EndlessWeb", "links", "page", "serve_endless", "url"]

LINKS = 200
_PAGE = re.compile(r"/p/(\d{1,18})")


def url(k: int, hosts: int, port: int) -> str:
    """The URL of page ``k``."""
    return f"http://h{k % hosts:03d}.web.test:{port}/p/{k}"


def links(k: int) -> range:
    """The pages page ``k`` links to."""
    return range(LINKS * k + 1, LINKS * k + LINKS + 1)


def page(k: int, hosts: int, port: int) -> bytes:
    body = "".join(f'<a href="{url(j, hosts, port)}">{j}</a>\n' for j in links(k))
    return f"<!doctype html><html><head><title>page {k}</title></head><body>\n{body}</body></html>".encode()


@dataclass
class EndlessWeb:
    """The server's port and, if ``log`` was asked for, the page numbers served in order."""

    hosts: int
    port: int = 0
    log: list[int] | None = field(default=None)


async def _handle(stream: trio.SocketStream, web: EndlessWeb) -> None:
    conn = h11.Connection(h11.SERVER)
    try:
        while True:
            ev = conn.next_event()
            if ev is h11.NEED_DATA:
                data = await stream.receive_some(65536)
                conn.receive_data(data)
                if not data and conn.their_state is not h11.MUST_CLOSE:
                    return
                continue
            if isinstance(ev, h11.Request):
                m = _PAGE.fullmatch(ev.target.decode("ascii", "replace"))
                if m:
                    k = int(m[1])
                    body, status = page(k, web.hosts, web.port), 200
                    if web.log is not None:
                        web.log.append(k)
                else:
                    body, status = b"not found", 404
                headers = [("content-type", "text/html; charset=utf-8"), ("content-length", str(len(body)))]
                await stream.send_all(conn.send(h11.Response(status_code=status, headers=headers))
                                      + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage()))
            elif isinstance(ev, h11.EndOfMessage):
                if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
                    conn.start_next_cycle()
                else:
                    return
            else:  # ConnectionClosed, PAUSED
                return
    except (h11.RemoteProtocolError, h11.LocalProtocolError, trio.BrokenResourceError,
            trio.ClosedResourceError):
        return
    finally:
        await stream.aclose()


async def serve_endless(hosts: int = 100, *, log: bool = False, host: str = "127.0.0.1",
                        task_status: trio.TaskStatus[EndlessWeb] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve the endless web on ``host``, any free port; ``nursery.start`` gives the :class:`EndlessWeb`."""
    listeners = await trio.open_tcp_listeners(0, host=host)
    web = EndlessWeb(hosts, listeners[0].socket.getsockname()[1], [] if log else None)
    task_status.started(web)

    async def handle(stream: trio.SocketStream) -> None:
        await _handle(stream, web)

    await trio.serve_listeners(handle, listeners)
