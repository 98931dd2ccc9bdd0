"""``python -m ring dashboard``: a live HTML page of a running ring.

It polls the ring's status the way ``python -m ring status`` does (through a
``poll`` function it is given: ring.tools.cli's :func:`~ring.tools.cli.status_source`, so
this module reads no cluster.toml and imports nothing of ``peer``) and serves:

- ``/``            the page: members with state, lease (each member's own view:
                   held or paused, its vouches, its ring's version and
                   fingerprint) and share, a totals row, errors
                   by kind, the busiest hosts against their setpoint, and two
                   plots over time (pages/s, queued URLs);
- ``/fragment``    the tables alone, which the page's script swaps in each poll;
- ``/series.json`` the plots' numbers;
- ``/static/...``  the page's script and style, and uPlot (below).

Layers: :mod:`ring.tools.dashpage` holds the pure part (:class:`History`, the
``render_*`` functions, :func:`host_allowed`: values in, text out, tested
without a socket); this module, :func:`serve_dashboard`, is the trio edge:
one task polls, one serves HTTP/1.1 parsed by h11 (httpcore's own parser),
one connection a request.

Crawl data is remote input: host names and error kinds come from web
servers, member ids and addresses from gossip. Every such string is written
into the page through :func:`html.escape`, and the page's
Content-Security-Policy allows scripts from this server's files only, so a
host named ``<script>...`` is shown as text, and would not run even if an
escape were missed. The script inserts only this server's escaped fragments
and numbers; uPlot writes its labels with ``textContent``.

Plots: uPlot 1.6.32 (MIT, ring/tools/static/LICENSE.uPlot), vendored as its
51 KB minified IIFE build from the npm registry, SHA-256 in
ring/tools/static/README.md. Chosen over Chart.js (about 200 KB) and server-side
matplotlib SVGs (an import of about a second, a redraw each poll, and a
dependency the ring tool otherwise does not need): it draws thousands of
points on a canvas in a few milliseconds and has no dependencies.

On loopback (the default) only requests naming a loopback Host are
answered, against DNS rebinding (:func:`host_allowed`). Given a ``token``,
every request but the page's static files needs it, as a bearer header or
the cookie a browser gets from the login form (:mod:`ring.tools.dashauth`);
``ring.tools.cli`` refuses a non-loopback address without one.

When a poll finds nobody, the page says so; ``silence`` (if given) says why
in the poller's own words: a ring of one is not "the peers", and its line
names the data_dir and the command that starts it (``ring.tools.cli``).

Bounds: the history keeps ``HISTORY`` polls (30 min at the default 2 s); a
request head over 16 KiB (h11's default) or a connection idle for
``REQUEST_TIMEOUT`` is closed; at most ``MAX_CONNECTIONS`` are served at once.
"""

from __future__ import annotations

import html
import json
import logging
import time
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from importlib import resources

from ring.tools.dashauth import MAX_LOGIN_BODY, authorized, login_token, matches, render_login, set_cookie
from ring.tools.dashpage import (
    BUSIEST,
    HISTORY,
    History,
    Snapshot,
    host_allowed,
    render_fragment,
    render_page,
)

__all__ = ["History", "Snapshot", "TokenProblem", "read_token", "render_fragment", "render_page",
           "serve_dashboard", "HISTORY", "BUSIEST"]

log = logging.getLogger("ring.dashboard")

REQUEST_TIMEOUT = 10.0
MAX_CONNECTIONS = 16

#: Each member's row as ``ring status --json`` lists it (``ring.messages.MemberStatus.as_json``).
Rows = list[dict]
Poll = Callable[[], Awaitable["Rows | None"]]
#: Why the last poll found nobody, in the poller's words (None: the page's own words).
Silence = Callable[[], "str | None"]

_STATIC = {
    "uPlot.iife.min.js": "application/javascript; charset=utf-8",
    "uPlot.min.css": "text/css; charset=utf-8",
    "dashboard.js": "application/javascript; charset=utf-8",
    "dashboard.css": "text/css; charset=utf-8",
}


class TokenProblem(ValueError):
    """The dashboard's token cannot be had, or is needed and missing: one line for the user."""


def read_token(host: str, token_file: str | None, token_env: str | None,
               environ: dict[str, str] | None = None) -> str | None:
    """The token of ``--token-file`` or ``--token-env`` (None: none given); :class:`TokenProblem`
    if it cannot be read, or if ``host`` is not loopback and there is none.

    A routable address without a token is refused: the page shows the
    ring's members, addresses, key fingerprints and busy hosts, read with
    the operator's key (ring.tools.dashauth).
    """
    import os

    from ring.tools.dashpage import is_loopback

    env = os.environ if environ is None else environ
    token = None
    if token_file and token_env:
        raise TokenProblem("--token-file and --token-env: give one of them")
    if token_env:
        token = env.get(token_env, "").strip() or None
        if token is None:
            raise TokenProblem(f"--token-env: the environment variable {token_env} is not set or empty")
    elif token_file:
        try:
            with open(token_file, encoding="utf-8") as f:
                token = f.readline().strip() or None
        except OSError as exc:
            raise TokenProblem(f"--token-file: cannot read {token_file}: {exc.strerror or exc}") from None
        if token is None:
            raise TokenProblem(f"--token-file: {token_file} is empty (its first line is the token)")
    if token is None and not is_loopback(host):
        raise TokenProblem(f"--host {host} is not loopback: pass --token-file or --token-env (the page "
                           "shows the ring's members, addresses and busy hosts to anyone who reaches it)")
    return token


def static_file(name: str) -> tuple[bytes, str] | None:
    """(content, media type) of one of the page's files, or None."""
    kind = _STATIC.get(name)
    if kind is None:
        return None
    return resources.files("ring.tools").joinpath("static", name).read_bytes(), kind


# ----------------------------------------------------------------- the edge


_SECURITY_HEADERS = [
    # Scripts from this server's files only: no inline script, so markup that
    # slipped into a page could not run (defence in depth behind the escaping).
    (b"content-security-policy",
     b"default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
     b"img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]
#: The login page's: no script at all, and its form posts here only.
_LOGIN_HEADERS = [
    (b"content-security-policy",
     b"default-src 'none'; style-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"),
    *_SECURITY_HEADERS[1:],
]
_TEXT = "text/plain; charset=utf-8"
_HTML = "text/html; charset=utf-8"


class Dashboard:
    """The dashboard's state: the history and how to answer each path."""

    def __init__(self, poll: Poll, ring_name: str, interval: float, clock: Callable[[], float] = time.time,
                 listen_host: str = "127.0.0.1", silence: Silence | None = None, token: str | None = None):
        self.poll = poll
        self.token = token
        self.silence = silence
        self.ring_name = ring_name
        self.interval = interval
        self.clock = clock
        self.listen_host = listen_host
        self.history = History()
        self.polls = 0

    async def poll_forever(self) -> None:
        import trio

        while True:
            started = trio.current_time()
            rows = await self.poll()
            self.history.add(self.clock(), rows)
            self.polls += 1
            await trio.sleep_until(started + self.interval)

    def fragment(self) -> str:
        latest = self.history.latest
        if latest is not None and latest.rows is None and self.silence is not None:
            why = self.silence()
            if why:
                stamp = time.strftime("%H:%M:%S", time.localtime(latest.at))
                return f'<p id="note" class="bad">{html.escape(why)} (at {stamp})</p>'
        return render_fragment(self.history.latest, self.history.current_rates(), self.ring_name)

    def answer(self, path: str) -> tuple[int, bytes, str]:
        """(status, body, media type) for a GET of ``path``."""
        path = path.split("?", 1)[0]
        if path == "/":
            return 200, render_page(self.ring_name, self.fragment(), self.interval).encode(), \
                "text/html; charset=utf-8"
        if path == "/fragment":
            return 200, self.fragment().encode(), "text/html; charset=utf-8"
        if path == "/series.json":
            return 200, json.dumps(self.history.series()).encode(), "application/json"
        if path.startswith("/static/"):
            got = static_file(path.removeprefix("/static/"))
            if got is not None:
                return 200, got[0], got[1]
        return 404, b"not found\n", "text/plain; charset=utf-8"


Reply = tuple[int, bytes, str, list[tuple[bytes, bytes]]]


async def _respond(dash: Dashboard, conn, stream, event) -> Reply:  # type: ignore[no-untyped-def]
    """(status, body, media type, headers) for one request (``ring.tools.dashauth`` decides who)."""
    headers = dict(event.headers)
    path = event.target.decode("ascii", "replace").split("?", 1)[0]
    if not host_allowed(dash.listen_host, headers.get(b"host")):
        return 403, b"not this Host\n", _TEXT, _SECURITY_HEADERS
    if dash.token and path == "/login" and event.method == b"POST":
        given = login_token(await _read_body(conn, stream))
        if given is not None and matches(dash.token, given):
            return 303, b"", _TEXT, [(b"location", b"/"), (b"set-cookie", set_cookie(dash.token).encode()),
                                      *_SECURITY_HEADERS]
        return 401, render_login(dash.ring_name, True).encode(), _HTML, _LOGIN_HEADERS
    if event.method not in (b"GET", b"HEAD"):
        return 405, b"only GET\n", _TEXT, _SECURITY_HEADERS
    if not path.startswith("/static/") and not authorized(
            dash.token, _text(headers.get(b"authorization")), _text(headers.get(b"cookie"))):
        challenge = (b"www-authenticate", b'Bearer realm="ringcrawl dashboard"')
        if path == "/":
            return 401, render_login(dash.ring_name, False).encode(), _HTML, [challenge, *_LOGIN_HEADERS]
        return 401, b"log in at / first, or send Authorization: Bearer <token>\n", _TEXT, \
            [challenge, *_SECURITY_HEADERS]
    status, body, kind = dash.answer(path)
    return status, body, kind, _SECURITY_HEADERS


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("latin-1")


async def _read_body(conn, stream) -> bytes:  # type: ignore[no-untyped-def]
    """A request's body, at most MAX_LOGIN_BODY bytes (b"" beyond: refused as no token)."""
    import h11

    body = b""
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            data = await stream.receive_some(16384)
            if not data:
                return b""
            conn.receive_data(data)
        elif isinstance(event, h11.Data):
            body += event.data
            if len(body) > MAX_LOGIN_BODY:
                return b""
        else:
            return body  # EndOfMessage (or the connection's end)


async def _serve_connection(dash: Dashboard, stream, limiter) -> None:  # type: ignore[no-untyped-def]
    import h11
    import trio

    async with limiter:
        conn = h11.Connection(h11.SERVER)
        with trio.move_on_after(REQUEST_TIMEOUT):
            try:
                while True:
                    event = conn.next_event()
                    if event is h11.NEED_DATA:
                        data = await stream.receive_some(16384)
                        conn.receive_data(data)
                        continue
                    if isinstance(event, h11.Request):
                        status, body, kind, extra = await _respond(dash, conn, stream, event)
                        headers = [(b"content-type", kind.encode()), (b"content-length", str(len(body)).encode()),
                                   (b"connection", b"close"), *extra]
                        await stream.send_all(conn.send(h11.Response(
                            status_code=status, headers=headers, reason=HTTPStatus(status).phrase.encode())))
                        if event.method != b"HEAD":
                            await stream.send_all(conn.send(h11.Data(data=body)))
                        await stream.send_all(conn.send(h11.EndOfMessage()))
                    return  # one request a connection; anything else ends it too
            except h11.RemoteProtocolError as exc:
                # A malformed request is the client's, answered once and closed.
                try:
                    await stream.send_all(conn.send(h11.Response(
                        status_code=exc.error_status_hint,
                        headers=[(b"content-length", b"0"), (b"connection", b"close")])))
                except (h11.LocalProtocolError, trio.BrokenResourceError, trio.ClosedResourceError):
                    pass
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
    await stream.aclose()


async def serve_dashboard(poll: Poll, *, ring_name: str, host: str = "127.0.0.1", port: int = 0,
                          interval: float = 2.0, silence: Silence | None = None, token: str | None = None,
                          task_status=None) -> None:  # type: ignore[no-untyped-def]
    """Poll with ``poll`` every ``interval`` seconds and serve the page until cancelled.

    ``silence()``: why the last poll found nobody (module docstring);
    ``token``: what a request must carry (``ring.tools.dashauth``).

    Prints ``dashboard: http://HOST:PORT/`` on stdout once it listens (the
    demo and the tests read it); a port that cannot be bound is a RingError.
    """
    import functools

    import trio

    from ring.errors import RingError

    dash = Dashboard(poll, ring_name, interval, listen_host=host, silence=silence, token=token)
    limiter = trio.CapacityLimiter(MAX_CONNECTIONS)
    try:
        listeners = await trio.open_tcp_listeners(port, host=host)
    except OSError as exc:
        raise RingError(f"dashboard cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sockname = listeners[0].socket.getsockname()
    shown = f"[{sockname[0]}]" if ":" in sockname[0] else sockname[0]
    url = f"http://{shown}:{sockname[1]}/"
    print(f"dashboard: {url} (ring {ring_name!r}, polled every {interval:g}s; Ctrl-C to stop)", flush=True)
    if task_status is not None:
        task_status.started(url)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(dash.poll_forever)
        await trio.serve_listeners(functools.partial(_serve_connection, dash, limiter=limiter), listeners)
