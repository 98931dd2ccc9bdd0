"""``python -m ring dashboard``: a live HTML page of a running ring.

It polls the ring's status the way ``python -m ring status`` does (through a
``poll`` function it is given: ring.tools.cli's :func:`~ring.tools.cli.status_source`, so
this module reads no cluster.toml and imports nothing of ``peer``) and serves:

- ``/``            the page: members with state and share, a totals row, errors
                   by kind, the busiest hosts against their setpoint, and two
                   plots over time (pages/s, queued URLs);
- ``/fragment``    the tables alone, which the page's script swaps in each poll;
- ``/series.json`` the plots' numbers;
- ``/static/...``  the page's script and style, and uPlot (below).

Layers: :class:`History` and the ``render_*`` functions are pure (values in,
text out, tested without a socket); :func:`serve_dashboard` is the trio edge:
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
answered, against DNS rebinding (:func:`host_allowed`).

Bounds: the history keeps ``HISTORY`` polls (30 min at the default 2 s); a
request head over 16 KiB (h11's default) or a connection idle for
``REQUEST_TIMEOUT`` is closed; at most ``MAX_CONNECTIONS`` are served at once.
"""

from __future__ import annotations

import html
import json
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from importlib import resources

__all__ = ["History", "Snapshot", "render_fragment", "render_page", "serve_dashboard",
           "HISTORY", "BUSIEST"]

log = logging.getLogger("ring.dashboard")

#: Polls kept for the plots.
HISTORY = 900
#: Busiest hosts listed, cluster-wide.
BUSIEST = 10
REQUEST_TIMEOUT = 10.0
MAX_CONNECTIONS = 16

Rows = list[dict]
Poll = Callable[[], Awaitable["Rows | None"]]

_STATIC = {
    "uPlot.iife.min.js": "application/javascript; charset=utf-8",
    "uPlot.min.css": "text/css; charset=utf-8",
    "dashboard.js": "application/javascript; charset=utf-8",
    "dashboard.css": "text/css; charset=utf-8",
}


# ----------------------------------------------------------------- the core


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One poll: when, and each member's row (None: no peer answered)."""

    at: float
    rows: tuple[Mapping, ...] | None


class History:
    """The last ``maxlen`` polls, and the rates between them."""

    def __init__(self, maxlen: int = HISTORY) -> None:
        self._polls: deque[Snapshot] = deque(maxlen=maxlen)

    def add(self, at: float, rows: Sequence[Mapping] | None) -> None:
        self._polls.append(Snapshot(at, None if rows is None else tuple(rows)))

    @property
    def latest(self) -> Snapshot | None:
        return self._polls[-1] if self._polls else None

    def current_rates(self) -> dict[str, float]:
        """Each member's pages/s between the last two polls that had it."""
        answered = [p for p in self._polls if p.rows is not None]
        if len(answered) < 2:
            return {}
        a, b = answered[-2], answered[-1]
        before = {r["id"]: r["pages"] for r in a.rows}  # type: ignore[union-attr]
        dt = b.at - a.at
        out = {}
        for r in b.rows:  # type: ignore[union-attr]
            if r["id"] in before and dt > 0:
                out[r["id"]] = max(0, r["pages"] - before[r["id"]]) / dt
        return out

    def series(self) -> dict:
        """The plots' data: times, pages/s and queued URLs, in total and per member."""
        answered = [p for p in self._polls if p.rows is not None]
        members = sorted({r["id"] for p in answered for r in p.rows})  # type: ignore[union-attr]
        t: list[float] = []
        rate: dict[str, list[float | None]] = {m: [] for m in members}
        queued: list[int] = []
        total_rate: list[float | None] = []
        prev: dict[str, tuple[float, int]] = {}
        for p in answered:
            rows = {r["id"]: r for r in p.rows}  # type: ignore[union-attr]
            t.append(p.at)
            queued.append(sum(r["frontier"] for r in rows.values()))
            tot: float | None = None
            for m in members:
                r = rows.get(m)
                v: float | None = None
                if r is not None and m in prev and p.at > prev[m][0]:
                    v = max(0, r["pages"] - prev[m][1]) / (p.at - prev[m][0])
                    tot = (tot or 0.0) + v
                rate[m].append(v)
                if r is not None:
                    prev[m] = (p.at, r["pages"])
            total_rate.append(tot)
        return {"t": t, "members": members, "rate": [rate[m] for m in members],
                "total_rate": total_rate, "queued": queued}


def _e(v: object) -> str:
    return html.escape(str(v), quote=True)


def _td(v: object, cls: str = "") -> str:
    return f'<td class="{cls}">{_e(v)}</td>' if cls else f"<td>{_e(v)}</td>"


_MEMBER_COLUMNS = ("id", "state", "share", "pages", "pages/s now", "queued URLs", "hosts",
                   "fwd out", "fwd in", "dns hit", "bloom fill", "uptime", "address")


def render_fragment(snap: Snapshot | None, rates: Mapping[str, float], ring_name: str,
                    busiest: int = BUSIEST) -> str:
    """The tables (members and totals, errors by kind, busiest hosts), every value escaped."""
    if snap is None:
        return '<p id="note">waiting for the first answer from the ring...</p>'
    stamp = time.strftime("%H:%M:%S", time.localtime(snap.at))
    if snap.rows is None:
        return (f'<p id="note" class="bad">no peer of ring {_e(ring_name)} answered at {_e(stamp)}; '
                "are the peers running?</p>")
    rows = sorted(snap.rows, key=lambda r: str(r["id"]))
    out = [f'<p id="note">ring <b>{_e(ring_name)}</b>: {len(rows)} members, as of '
           f'<span id="asof">{_e(stamp)}</span></p>',
           '<table id="members"><thead><tr>'
           + "".join(f"<th>{_e(h)}</th>" for h in _MEMBER_COLUMNS) + "</tr></thead><tbody>"]
    for r in rows:
        rate = rates.get(r["id"])
        out.append(
            f'<tr class="member state-{_e(r["state"])}" data-id="{_e(r["id"])}">'
            + _td(r["id"]) + _td(r["state"], f"state-{_e(r['state'])}")
            + _td(f"{r['share']:.1%}", "n") + _td(f"{r['pages']:,}", "n")
            + _td("-" if rate is None else f"{rate:.1f}", "n")
            + _td(f"{r['frontier']:,}", "n") + _td(f"{r['hosts']:,}", "n")
            + _td(f"{r['forwarded_out']:,}", "n") + _td(f"{r['forwarded_in']:,}", "n")
            + _td(f"{r['dns_hit_rate']:.0%}", "n") + _td(f"{r['bloom_fill']:.2%}", "n")
            + _td(f"{r['uptime']:.0f} s", "n") + _td(r["address"]) + "</tr>")
    live = sum(r["state"] in ("alive", "suspect") for r in rows)
    total_rate = sum(rates.values()) if rates else None
    out.append(
        '<tr class="total" id="total">' + _td("total") + _td(f"{live} live")
        + _td(f"{sum(r['share'] for r in rows):.1%}", "n")
        + f'<td class="n" id="total-pages">{sum(r["pages"] for r in rows):,}</td>'
        + _td("-" if total_rate is None else f"{total_rate:.1f}", "n")
        + _td(f"{sum(r['frontier'] for r in rows):,}", "n") + _td(f"{sum(r['hosts'] for r in rows):,}", "n")
        + _td(f"{sum(r['forwarded_out'] for r in rows):,}", "n")
        + _td(f"{sum(r['forwarded_in'] for r in rows):,}", "n") + "<td></td>" * 4 + "</tr>")
    out.append("</tbody></table>")

    errors: dict[str, int] = {}
    for r in rows:
        for kind, n in dict(r.get("errors") or {}).items():
            errors[kind] = errors.get(kind, 0) + n
    out.append('<div class="pair"><section><h2>Errors by kind</h2>')
    if errors:
        out.append('<table id="errors"><thead><tr><th>kind</th><th>pages</th></tr></thead><tbody>'
                   + "".join(f"<tr>{_td(k)}{_td(f'{n:,}', 'n')}</tr>"
                             for k, n in sorted(errors.items(), key=lambda kv: (-kv[1], kv[0])))
                   + "</tbody></table>")
    else:
        out.append('<p id="errors">none</p>')
    out.append("</section><section><h2>Busiest hosts (last 5 s)</h2>")
    hosts = sorted(((b[1], str(b[0]), b[2], r["id"]) for r in rows for b in (r.get("busiest") or ())),
                   reverse=True)[:busiest]
    if hosts:
        out.append('<table id="busiest"><thead><tr><th>host</th><th>peer</th><th>pages/min</th>'
                   "<th>setpoint</th><th>of setpoint</th></tr></thead><tbody>")
        for rate, host, setpoint, peer in hosts:
            share = rate / setpoint if setpoint > 0 else 0.0
            cls = "n bad" if share > 1.1 else "n"
            out.append(f"<tr>{_td(host)}{_td(peer)}{_td(f'{rate:.0f}', 'n')}{_td(f'{setpoint:g}', 'n')}"
                       f"{_td(f'{share:.0%}', cls)}</tr>")
        out.append("</tbody></table>")
    else:
        out.append('<p id="busiest">no requests in the last 5 s</p>')
    out.append("</section></div>")
    return "\n".join(out)


def render_page(ring_name: str, fragment: str, interval: float) -> str:
    """The whole page around a fragment; the script polls /fragment and /series.json."""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>ringcrawl: ring {_e(ring_name)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/static/uPlot.min.css">
<link rel="stylesheet" href="/static/dashboard.css">
</head><body data-interval="{interval:g}">
<h1>ringcrawl dashboard: ring <span id="ring">{_e(ring_name)}</span></h1>
<div id="tables">{fragment}</div>
<div class="pair"><section><h2>Pages per second</h2><div id="plot-rate"></div></section>
<section><h2>Queued URLs</h2><div id="plot-queued"></div></section></div>
<p class="foot">Polls <code>python -m ring status</code> every {interval:g} s; pages/s is measured
between polls. Updated <span id="updates">0</span> times since this page loaded.</p>
<script src="/static/uPlot.iife.min.js"></script>
<script src="/static/dashboard.js"></script>
</body></html>
"""


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


def _loopback(host: str) -> bool:
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_allowed(listen_host: str, header: bytes | None) -> bool:
    """Whether a request's Host header may be answered.

    Listening on loopback, only a loopback Host is: a web page the operator
    visits could otherwise point a name of its own at 127.0.0.1 (DNS
    rebinding) and read the ring's figures through the browser.
    """
    if not _loopback(listen_host):
        return True
    if not header:
        return False
    name = header.decode("ascii", "replace")
    name = name[1:name.index("]")] if name.startswith("[") and "]" in name else name.rsplit(":", 1)[0]
    return _loopback(name)


class Dashboard:
    """The dashboard's state: the history and how to answer each path."""

    def __init__(self, poll: Poll, ring_name: str, interval: float, clock: Callable[[], float] = time.time,
                 listen_host: str = "127.0.0.1"):
        self.poll = poll
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
                        host = dict(event.headers).get(b"host")
                        if not host_allowed(dash.listen_host, host):
                            status, body, kind = 403, b"not this Host\n", "text/plain; charset=utf-8"
                        elif event.method not in (b"GET", b"HEAD"):
                            status, body, kind = 405, b"only GET\n", "text/plain; charset=utf-8"
                        else:
                            status, body, kind = dash.answer(event.target.decode("ascii", "replace"))
                        headers = [(b"content-type", kind.encode()), (b"content-length", str(len(body)).encode()),
                                   (b"connection", b"close"), *_SECURITY_HEADERS]
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
                          interval: float = 2.0, task_status=None) -> None:  # type: ignore[no-untyped-def]
    """Poll with ``poll`` every ``interval`` seconds and serve the page until cancelled.

    Prints ``dashboard: http://HOST:PORT/`` on stdout once it listens (the
    demo and the tests read it); a port that cannot be bound is a RingError.
    """
    import functools

    import trio

    from ring.errors import RingError

    dash = Dashboard(poll, ring_name, interval, listen_host=host)
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
