"""The dashboard's page without I/O: the polls kept, the rates between them, the HTML (pure).

``ring.tools.dashboard`` polls the ring and serves what these functions
return: values in, text out, tested without a socket. Every string that came
from the network (host names, error kinds, member ids and addresses) goes
through :func:`html.escape` here; the page's Content-Security-Policy is the
second line of defence (``ring.tools.dashboard``).
"""

from __future__ import annotations

import html
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from ring.vocabulary import Family, words
from ring.durations import duration

__all__ = ["BUSIEST", "HISTORY", "History", "Snapshot", "host_allowed", "is_loopback", "render_fragment",
           "render_page"]

#: Polls kept for the plots.
HISTORY = 900
#: Busiest hosts listed, cluster-wide.
BUSIEST = 10


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


_MEMBER_COLUMNS = ("id", "state", "lease", "vouch", "ring", "share", "pages", "pages/s now", "queued URLs",
                   "hosts", "fwd out", "fwd in", "dns hit", "bloom fill", "uptime", "address")

_LEASE_WORDS = {"held": "held", "grace": "paused: grace", "no_majority": "paused: no majority"}


def _lease_cells(r: Mapping) -> str:
    """A member's own view of its lease and ring (``ring.status``), as three cells.

    ``?`` and ``-`` where the member did not answer for itself. The ring is
    its version and the head of its fingerprint: members that agree on the
    ring show the same one.
    """
    lease = str(r.get("lease") or "unknown")
    if lease not in _LEASE_WORDS:
        return _td("?") + _td("-", "n") + _td("-")
    words = _LEASE_WORDS[lease]
    grace = r.get("grace_left") or 0
    if r.get("lease_open"):
        words = "settling: moved hosts wait"
    if lease == "grace" and grace >= 1:
        words += f" ({duration(grace)})"
    vouch = f"{r.get('vouched', 0)} of {r.get('quorum', 0)}, {r.get('needed', 0)} needed"
    fp = r.get("ring_fingerprint")
    ring = f"v{r.get('ring_version', 0)} {str(fp)[:8]}" if fp else "-"
    return (_td(words, "" if lease == "held" else "bad") + _td(vouch, "n")
            + f'<td class="ring">{_e(ring)}</td>')


def render_fragment(snap: Snapshot | None, rates: Mapping[str, float], ring_name: str,
                    busiest: int = BUSIEST) -> str:
    """The tables (members and totals, failed requests and URLs not requested, busiest hosts),
    every value escaped."""
    if snap is None:
        return '<p id="note">waiting for the first answer from the ring...</p>'
    stamp = datetime.fromtimestamp(snap.at).strftime("%H:%M:%S")  # local time, as time.localtime
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
            + _td(r["id"]) + _td(r["state"], f"state-{_e(r['state'])}") + _lease_cells(r)
            + _td(f"{r['share']:.1%}", "n") + _td(f"{r['pages']:,}", "n")
            + _td("-" if rate is None else f"{rate:.1f}", "n")
            + _td(f"{r['frontier']:,}", "n") + _td(f"{r['hosts']:,}", "n")
            + _td(f"{r['forwarded_out']:,}", "n") + _td(f"{r['forwarded_in']:,}", "n")
            + _td(f"{r['dns_hit_rate']:.0%}", "n") + _td(f"{r['bloom_fill']:.2%}", "n")
            + _td(duration(r['uptime']), "n") + _td(r["address"]) + "</tr>")
    live = sum(r["state"] in ("alive", "suspect") for r in rows)
    total_rate = sum(rates.values()) if rates else None
    held = sum(r.get("lease") == "held" for r in rows)
    rings = len({r["ring_fingerprint"] for r in rows if r.get("ring_fingerprint")})
    split = rings > 1  # members that answered vouch for different rings
    out.append(
        '<tr class="total" id="total">' + _td("total") + _td(f"{live} live") + _td(f"{held} held")
        + _td("") + f'<td id="rings" class="{"bad" if split else ""}">'
        + _e(f"{rings} ring{'s' if rings != 1 else ''}" + (" (split)" if split else "")) + "</td>"
        + _td(f"{sum(r['share'] for r in rows):.1%}", "n")
        + f'<td class="n" id="total-pages">{sum(r["pages"] for r in rows):,}</td>'
        + _td("-" if total_rate is None else f"{total_rate:.1f}", "n")
        + _td(f"{sum(r['frontier'] for r in rows):,}", "n") + _td(f"{sum(r['hosts'] for r in rows):,}", "n")
        + _td(f"{sum(r['forwarded_out'] for r in rows):,}", "n")
        + _td(f"{sum(r['forwarded_in'] for r in rows):,}", "n") + "<td></td>" * 4 + "</tr>")
    out.append("</tbody></table>")

    out.append('<div class="pair"><section>')
    for family, table_id, head in ((Family.FAILED, "errors", "kind"),
                                   (Family.NOT_REQUESTED, "not-requested", "cause")):
        # Summed over the members, named as ring status and the summary name them.
        counts: dict[str, int] = {}
        for r in rows:
            for kind, n in dict(r.get(family.value) or {}).items():
                counts[kind] = counts.get(kind, 0) + n
        out.append(f"<h2>{_e(words(family).capitalize())} by {head}</h2>")
        if counts:
            out.append(f'<table id="{table_id}"><thead><tr><th>{head}</th><th>URLs</th></tr></thead><tbody>'
                       + "".join(f"<tr>{_td(k)}{_td(f'{n:,}', 'n')}</tr>"
                                 for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
                       + "</tbody></table>")
        else:
            out.append(f'<p id="{table_id}">none</p>')
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
    out.extend(_revisit_table(rows))
    return "\n".join(out)


#: The revisit counters the dashboard sums over the members (peer/core/revisit/recrawl.py), in order.
_REVISIT_COLUMNS = (("revisit.due", "due now (overdue)"), ("revisit.scheduled", "scheduled"),
                    ("revisit.visits", "revisits"), ("revisit.not_modified", "304"),
                    ("revisit.unchanged", "unchanged"), ("revisit.changed", "changed"))


def _revisit_table(rows: Sequence[Mapping]) -> list[str]:
    """A continuous crawl's revisits, summed over the members; nothing when no member revisits."""
    sums: dict[str, int] = {}
    for r in rows:
        for name, n in dict(r.get(Family.COUNTERS.value) or {}).items():
            if str(name).startswith("revisit."):
                sums[name] = sums.get(name, 0) + int(n)
    if not sums:
        return []
    fresh = sums.get("revisit.not_modified", 0) + sums.get("revisit.unchanged", 0)
    answered = fresh + sums.get("revisit.changed", 0)
    return ["<h2>Revisits</h2>", '<table id="revisits"><thead><tr>'
            + "".join(f"<th>{_e(h)}</th>" for _, h in _REVISIT_COLUMNS) + "<th>freshness</th></tr></thead><tbody><tr>"
            + "".join(_td(f"{sums.get(k, 0):,}", "n") for k, _ in _REVISIT_COLUMNS)
            + _td("-" if not answered else f"{fresh / answered:.0%}", "n") + "</tr></tbody></table>"]


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




def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine only: localhost, 127/8, ::1."""
    return _loopback(host)


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
