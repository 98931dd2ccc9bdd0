"""The report's figures: each a function of the open file and its :class:`Facts`.

A plot returns ``(figure, caption)`` or raises :class:`Skip` with the reason
it is not drawn (no pid_trace table, no failed fetch...), which the page shows
instead. Figures are ``matplotlib.figure.Figure`` on the Agg backend, not
pyplot: no global figure registry to leak, no display needed; matplotlib and
numpy are imported when a plot is drawn, so reading a file needs neither.
Every data string passes :func:`_label` first (matplotlib's mathtext would
parse ``$...$``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from peer.core.config.cluster import RingConfig
from peer.core.config.sites import SiteSettings
from peer.core.politeness.ceiling import ceiling
from peer.results.report.facts import REQUESTED, Facts
from peer.state.configfile import load_config
from ring.durations import duration
from ring.hashring import HashRing

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["DPI", "MAX_TOP", "PLOTS", "PoliteSeries", "Setpoints", "Skip", "draw", "politeness_series", "rate_series",
           "ring_shares", "setpoint"]

#: Hosts in the PID figure at most: each takes a row of the figure.
MAX_TOP = 16
MAX_RING_PEERS = 40
#: Rate bins at most; the bin is the first of _BINS (seconds) that keeps under it.
MAX_BINS = 200
_BINS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400)
_PID_COLUMNS = {"host", "window_end", "n", "delay", "setpoint"}
#: Points a host's line in the politeness panel has at most; a longer crawl's
#: 1 s bins are folded, each point the busiest 1 s of its group (an over-limit
#: second must stay visible, which a mean would hide).
MAX_POLITE_POINTS = 1200
DPI = 100


class Skip(Exception):
    """A plot with no data to show; the message is the reason."""


def _label(text: object, limit: int = 40) -> str:
    """A data string made safe for matplotlib: ASCII, no mathtext, no hidden legend entry."""
    s = "".join(c if c.isascii() and c.isprintable() else f"\\x{ord(c):02x}" for c in str(text))
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    # An even number of '$' turns on mathtext, which raises on bad TeX; a
    # leading '_' hides a legend entry.
    s = s.replace("$", r"\$")
    return "\u200b" + s if s.startswith("_") else s


def _time_unit(span: float) -> tuple[float, str]:
    if span <= 600:
        return 1.0, "s"
    if span <= 10 * 3600:
        return 60.0, "min"
    return 3600.0, "h"


def _bin_seconds(span: float) -> int:
    for b in _BINS:
        if span / b <= MAX_BINS:
            return b
    return math.ceil(span / MAX_BINS / 86400) * 86400


def _time_bins(f: Facts) -> tuple[int, float, int, int]:
    """(first fetch in µs, span, bin width in s, bins) of a plot over time; Skip without times."""
    if f.t0_us is None or f.t1_us is None:
        raise Skip("no page has a fetched_at time")
    bin_s = _bin_seconds(f.span)
    return f.t0_us, f.span, bin_s, int(f.span // bin_s) + 1


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def rate_series(con: duckdb.DuckDBPyConnection, f: Facts) -> dict[str, Any]:
    """{peer: requests in each bin of :func:`_time_bins`} (numpy arrays), requests only.

    A row never requested (a robots.txt exclusion, a cap: ``REQUESTED`` in
    facts.py) is a URL the crawl decided about, not a page: counted here, a
    peer that excluded a site's URLs in bulk showed 18 pages/s against the 3
    requests/s the server saw.
    """
    import numpy as np

    t0_us, _, bin_s, nbins = _time_bins(f)
    rows = con.execute(
        "select coalesce(peer, ''), (epoch_us(fetched_at) - ?) // ? as b, count(*) from pages "
        f"where fetched_at is not null and {REQUESTED} group by all", [t0_us, bin_s * 1_000_000]
    ).fetchall()
    series: dict[str, Any] = {}
    for peer, b, n in rows:
        series.setdefault(peer, np.zeros(nbins))[min(int(b), nbins - 1)] += n
    return series


def _plot_rate(con: duckdb.DuckDBPyConnection, f: Facts, **_: Any) -> tuple[Figure, str]:
    import numpy as np

    _t0, span, bin_s, nbins = _time_bins(f)
    series = rate_series(con, f)
    if not series:
        raise Skip("no page was requested (every row is a URL not requested)")
    scale, unit = _time_unit(span)
    x = np.arange(nbins + 1) * bin_s / scale
    fig = _figure(10, 4)
    ax = fig.add_subplot()
    for peer in sorted(series):
        ax.stairs(series[peer] / bin_s, x, label=_label(peer or "(no peer)"), linewidth=1.4)
    if len(series) > 1:
        total = sum(series.values())
        ax.stairs(total / bin_s, x, label="all peers", color="black", linewidth=1.0, linestyle=":")
    ax.set_xlabel(f"time since the first fetch ({unit})")
    ax.set_ylabel("pages / s")
    ax.set_title("Pages per second, per peer")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    if len(series) <= 12:
        ax.legend(loc="upper right", fontsize="small")
    peak = max(float(s.max()) for s in series.values()) / bin_s
    caption = (f"Pages per second in bins of {bin_s} s over {duration(span)}, one line per peer"
               f"{' and their total' if len(series) > 1 else ''}; requests only (failed fetches "
               "included, URLs not requested left out). "
               f"Busiest bin of one peer: {peak:,.1f} pages/s.")
    return fig, caption


def _plot_pid(con: duckdb.DuckDBPyConnection, f: Facts, *, top: int, **_: Any) -> tuple[Figure, str]:
    import numpy as np

    cols = f.tables.get("pid_trace")
    if cols is None:
        raise Skip(f"{f.db.name} has no pid_trace table")
    if missing := _PID_COLUMNS - cols:
        raise Skip(f"pid_trace lacks the column(s) {', '.join(sorted(missing))}")
    if not f.counts.get("pid_trace"):
        raise Skip("pid_trace has no rows (no host had backlog for a whole PID window)")
    ranked = con.execute(
        "select t.host, coalesce(p.n, 0) from (select distinct host from pid_trace "
        "where host is not null) t left join (select host, count(*) as n from pages group by host) p "
        "using (host) order by 2 desc, 1 limit ?", [top]
    ).fetchall()
    if not ranked:
        raise Skip("pid_trace has no host")
    traced = con.execute("select count(distinct host) from pid_trace").fetchone()[0]  # type: ignore[index]
    hosts = [h for h, _ in ranked]
    rows = con.execute(
        "select host, epoch_us(window_end), n, delay, setpoint from pid_trace "
        "where list_contains(?, host) and window_end is not null order by host, window_end", [hosts]
    ).fetchall()
    if not rows:
        raise Skip("pid_trace has no window_end time for the busiest hosts")
    t0 = f.t0_us if f.t0_us is not None else min(r[1] for r in rows)
    span = max(f.span, max((r[1] - t0) / 1e6 for r in rows))
    scale, unit = _time_unit(span)
    by_host: dict[str, list[tuple[Any, ...]]] = {h: [] for h in hosts}
    for r in rows:
        by_host[r[0]].append(r)
    fig = _figure(11, 0.6 + 2.1 * len(hosts))
    axes = fig.subplots(len(hosts), 2, squeeze=False, sharex=True)
    for (host, pages), (left, right) in zip(ranked, axes):
        pts = by_host[host]
        x = np.array([(r[1] - t0) / 1e6 / scale for r in pts])
        n = np.array([np.nan if r[2] is None else r[2] for r in pts], dtype=float)
        delay = np.array([np.nan if r[3] is None else r[3] for r in pts], dtype=float)
        setpoint = np.array([np.nan if r[4] is None else r[4] for r in pts], dtype=float)
        left.plot(x, n, marker="o", markersize=3, label="pages in window")
        left.step(x, setpoint, where="post", linestyle="--", color="tab:red", label="setpoint")
        left.set_ylabel("pages / window")
        left.set_ylim(bottom=0)
        left.set_title(f"{_label(host, 50)} ({pages:,} pages)", fontsize="medium", loc="left")
        right.step(x, delay, where="post", color="tab:green", label="delay after the update")
        right.set_ylabel("delay (s)")
        right.set_ylim(bottom=0)
        for ax in (left, right):
            ax.grid(alpha=0.3)
        if host == hosts[0]:
            left.legend(fontsize="small", loc="lower right")
            right.legend(fontsize="small", loc="upper right")
    for ax in axes[-1]:
        ax.set_xlabel(f"window end, time since the first fetch ({unit})")
    caption = (f"PID trace of the {len(hosts)} host(s) with the most pages among the {traced:,} in "
               "pid_trace: pages fetched in each window against the setpoint (left) and the "
               "delay between request starts set at the end of the window (right). "
               "Hosts: " + ", ".join(hosts) + ".")
    return fig, caption


@dataclass(frozen=True, slots=True)
class PoliteSeries:
    """Requests of the busiest hosts in 1 s bins, counted at request start.

    ``counts[host][k]`` is the answered requests of ``host`` that started in
    ``[t0_us + k s, t0_us + (k + 1) s)``; a request started at ``fetched_at -
    elapsed_ms`` (``fetched_at`` is stamped when the answer is in).
    """

    t0_us: int  # the first request start of the file (every host), epoch microseconds
    bins: int
    hosts: tuple[str, ...]  # busiest first
    pages: dict[str, int]
    counts: dict[str, list[int]]


def politeness_series(con: duckdb.DuckDBPyConnection, top: int) -> PoliteSeries | None:
    """The :class:`PoliteSeries` of the ``top`` hosts with most answered requests; None if none.

    Only rows with a status count: a URL robots.txt forbids or a DNS failure
    never reached the server, and the panel shows what the server saw.
    """
    starts = ("select host, epoch_us(fetched_at) - cast(round(coalesce(elapsed_ms, 0) * 1000) as bigint) "
              "as t from pages where status is not null and fetched_at is not null and host is not null "
              "and (elapsed_ms is null or isfinite(elapsed_ms))")
    one = con.execute(f"select min(t) from ({starts})").fetchone()
    if one is None or one[0] is None:
        return None
    t0 = int(one[0])
    ranked = con.execute(f"select host, count(*) from ({starts}) group by 1 order by 2 desc, 1 limit ?",
                         [top]).fetchall()
    hosts = tuple(h for h, _ in ranked)
    rows = con.execute(f"select host, (t - ?) // 1000000 as b, count(*) from ({starts}) "
                       "where list_contains(?, host) group by all", [t0, list(hosts)]).fetchall()
    bins = max(int(b) for _, b, _ in rows) + 1
    counts = {h: [0] * bins for h in hosts}
    for host, b, n in rows:
        counts[host][int(b)] += n
    return PoliteSeries(t0, bins, hosts, dict(ranked), counts)


@dataclass(frozen=True, slots=True)
class Setpoints:
    """Each host's politeness setpoint in requests per second (None: none to draw), and where they came from.

    A ``[[site]]`` block's ``rate`` is its hosts' setpoint (peer/core/config/sites.py), so a
    host is drawn against its own, not the global one.
    """

    of: Callable[[str], float | None]
    source: str


def _none(_host: str) -> float | None:
    return None


def setpoint(con: duckdb.DuckDBPyConnection, f: Facts, ring_config: Path | None) -> Setpoints:
    """Each host's setpoint: ``--ring``'s politeness (its ``[[site]]`` blocks' included), else pid_trace's."""
    if ring_config is not None:
        cfg = load_config(ring_config)
        rate = cfg.politeness.rate
        sites = SiteSettings(cfg.sites, cfg.crawl, cfg.politeness)

        def of(host: str) -> float | None:
            r = sites.for_host(host).politeness.rate
            return r / 60 if r > 0 else None

        blocks = ", a [[site]] block's rate for its hosts" if any(b.sets("rate") for b in cfg.sites) else ""
        if rate <= 0:
            return Setpoints(of, f"{ring_config} sets politeness.rate = 0 (no rate limit), so no setpoint "
                                 f"is drawn{blocks}")
        return Setpoints(of, f"politeness.rate = {rate:g} pages/min of {ring_config}{blocks}")
    cols = f.tables.get("pid_trace")
    if cols is None or _PID_COLUMNS - cols or not f.counts.get("pid_trace"):
        return Setpoints(_none, "no setpoint known: pass --ring cluster.toml (no usable pid_trace either)")
    one = con.execute(
        "select (select median(setpoint) from pid_trace), (select min(gap) / 1e6 from (select "
        "epoch_us(window_end) - lag(epoch_us(window_end)) over (partition by host order by window_end) "
        "as gap from pid_trace) where gap > 0)").fetchone()
    if one is None or one[0] is None or one[1] is None or not one[1] > 0:
        return Setpoints(_none, ("no setpoint known: pass --ring cluster.toml (pid_trace has no host with two "
                                 "windows, so its window length is unknown)"))
    median, window = float(one[0]), float(one[1])
    # pid_trace holds each host's own setpoint (peer/results/store.py add_pid: its block's).
    own = {h: float(v) for h, v in con.execute(
        "select host, median(setpoint) from pid_trace where setpoint is not null group by 1").fetchall()}

    def traced(host: str) -> float | None:
        return own.get(host, median) / window

    return Setpoints(traced, (f"pid_trace: a setpoint of {median:g} pages a window over windows of "
                              f"{window:g} s (the spacing of a host's window_end), each host its own; "
                              "--ring cluster.toml gives politeness.rate itself"))


def _ceiling(per_s: float | None) -> int | None:
    """The hard ceiling of any 1 s for a setpoint of ``per_s`` requests a second (ceil(1.1 x S) + 1)."""
    return ceiling(per_s * 60.0, 1.0) if per_s is not None else None


def _plot_polite(con: duckdb.DuckDBPyConnection, f: Facts, *, top: int,
                 setpoint: Setpoints, **_: Any) -> tuple[Figure, str]:
    import numpy as np

    series = politeness_series(con, top)
    if series is None:
        raise Skip("no answered request has a fetched_at time")
    source = setpoint.source
    rates = {h: setpoint.of(h) for h in series.hosts}
    one = len(set(rates.values())) == 1  # one setpoint for all: said once, in the caption
    per_s = rates[series.hosts[0]] if one else None
    fold = math.ceil(series.bins / MAX_POLITE_POINTS)
    delays: dict[str, list[tuple[int, float]]] = {}
    cols = f.tables.get("pid_trace")
    if cols is not None and not _PID_COLUMNS - cols and f.counts.get("pid_trace"):
        for host, end, delay in con.execute(
                "select host, epoch_us(window_end), delay from pid_trace where list_contains(?, host) "
                "and window_end is not null and delay is not null order by host, window_end",
                [list(series.hosts)]).fetchall():
            delays.setdefault(host, []).append((end, delay))
    span = series.bins
    scale, unit = _time_unit(span)
    fig = _figure(11, 0.6 + 2.2 * len(series.hosts))
    axes = fig.subplots(len(series.hosts), 1, squeeze=False, sharex=True)[:, 0]
    notes = []
    for host, ax in zip(series.hosts, axes):
        host_s = rates[host]
        limit = _ceiling(host_s)
        c = np.array(series.counts[host], dtype=float)
        pad = (-len(c)) % fold
        shown = np.pad(c, (0, pad)).reshape(-1, fold).max(axis=1)
        x = np.arange(len(shown) + 1) * fold / scale
        ax.stairs(shown, x, color="tab:blue", linewidth=1.2,
                  label="requests in 1 s" if fold == 1 else f"busiest 1 s of each {fold} s")
        if host_s is not None:
            ax.axhline(host_s, color="tab:red", linestyle="--", linewidth=1.2, label=f"setpoint {host_s:g}/s")
            ax.axhline(limit, color="tab:red", linestyle=":", linewidth=1.0,
                       label=f"ceiling {limit} in any 1 s")
        ax.set_ylabel("requests / s")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        peak = int(c.max())
        over = int((c > limit).sum()) if limit is not None else 0
        ax.set_title(f"{_label(host, 50)} ({series.pages[host]:,} requests, busiest 1 s: {peak})",
                     fontsize="medium", loc="left")
        own = "" if one else (f" (setpoint {host_s:g}/s, ceiling {limit})" if host_s is not None else " (no setpoint)")
        notes.append(f"{host}{own}: busiest 1 s {peak}" + (f", {over} s over the ceiling" if limit is not None else ""))
        pts = delays.get(host)
        if pts:
            right = ax.twinx()
            right.step([(e - series.t0_us) / 1e6 / scale for e, _ in pts], [d for _, d in pts],
                       where="post", color="tab:green", linewidth=1.0, label="PID delay")
            right.set_ylabel("delay (s)")
            right.set_ylim(bottom=0)
            if host == series.hosts[0]:
                right.legend(fontsize="small", loc="upper left")
        if host == series.hosts[0]:
            ax.legend(fontsize="small", loc="upper right")
    axes[-1].set_xlabel(f"request start, time since the first ({unit})")
    caption = (f"Requests per second of the {len(series.hosts)} host(s) with the most answered requests, "
               "as the server saw them: 1 s bins counted at request start (fetched_at - elapsed_ms), "
               + (f"each point the busiest 1 s of {fold} s, " if fold > 1 else "")
               + (f"against the setpoint of {per_s:g}/s (dashed) and the ceiling of {_ceiling(per_s)} requests "
                  f"in any 1 s (dotted); setpoint from {source}. " if per_s is not None
                  else "against each host's own setpoint (dashed) and ceiling ceil(1.1 x setpoint) + 1 "
                  f"in any 1 s (dotted), given after its name; setpoints from {source}. " if not one
                  else f"{source}. ")
               + ("The PID's delay after each window is on the right axis. " if delays else
                  "No PID delay: pid_trace is absent or has none of these hosts. ")
               + "; ".join(notes) + ".")
    return fig, caption


def _status_color(code: int | None) -> str:
    if code is None:
        return "tab:gray"
    return {2: "tab:green", 3: "tab:blue", 4: "tab:orange", 5: "tab:red"}.get(code // 100, "tab:purple")


def _plot_status(con: duckdb.DuckDBPyConnection, f: Facts, **_: Any) -> tuple[Figure, str]:
    if not f.status:
        raise Skip("no pages")
    shown = f.status
    if len(shown) > 30:  # status is data: keep the chart legible
        shown = sorted(sorted(f.status, key=lambda r: -r[1])[:30],
                       key=lambda r: (r[0] is None, r[0] or 0))
    labels = ["error" if s is None else str(s) for s, _ in shown]
    counts = [n for _, n in shown]
    fig = _figure(max(6.0, 0.55 * len(shown) + 2), 4)
    ax = fig.add_subplot()
    bars = ax.bar(labels, counts, color=[_status_color(s) for s, _ in shown])
    ax.bar_label(bars, labels=[f"{n:,}" for n in counts], fontsize="small")
    ax.set_xlabel("HTTP status (error: no answer)")
    ax.set_ylabel("pages")
    ax.set_title("Status codes")
    ax.margins(y=0.12)
    ax.tick_params(axis="x", labelrotation=45 if len(shown) > 12 else 0)
    parts = ", ".join(f"{lab}: {n:,}" for lab, n in zip(labels, counts))
    more = f" The {len(f.status) - len(shown)} rarest codes are left out." if shown is not f.status else ""
    return fig, f"Pages by HTTP status; 'error' is a fetch that got no answer (NULL status). {parts}.{more}"


def _plot_latency(con: duckdb.DuckDBPyConnection, f: Facts, **_: Any) -> tuple[Figure, str]:
    import numpy as np

    arr = con.execute(
        "select elapsed_ms from pages where status is not null and elapsed_ms > 0 "
        "and isfinite(elapsed_ms)"
    ).fetchnumpy()["elapsed_ms"]
    arr = np.asarray(arr, dtype=float)
    if arr.size == 0:
        raise Skip("no fetched page (with a status) has an elapsed_ms > 0")
    lo, hi = float(arr.min()), float(arr.max())
    log = hi / lo > 100
    bins = np.geomspace(lo, hi, 60) if log and hi > lo else np.linspace(lo, max(hi, lo + 1e-3), 60)
    fig = _figure(10, 4)
    ax = fig.add_subplot()
    ax.hist(arr, bins=list(bins), histtype="stepfilled", color="tab:blue", alpha=0.8)
    if log:
        from matplotlib.ticker import FuncFormatter, NullFormatter

        ax.set_xscale("log")
        # Plain "10", "1000" labels: the default 10^k labels go through mathtext,
        # which is slower to draw and no easier to read for milliseconds.
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    p50, p90, p99 = np.percentile(arr, [50, 90, 99])
    for value, name, style in ((p50, "median", "-"), (p90, "p90", "--"), (p99, "p99", ":")):
        ax.axvline(value, color="black", linestyle=style, linewidth=1,
                   label=f"{name} {value:,.1f} ms")
    ax.set_xlabel("elapsed (ms" + (", log scale)" if log else ")"))
    ax.set_ylabel("pages")
    ax.set_title("Fetch latency")
    ax.legend(fontsize="small")
    caption = (f"Time per fetch of the {arr.size:,} pages that got an answer: median {p50:,.1f} ms, "
               f"p90 {p90:,.1f} ms, p99 {p99:,.1f} ms, max {hi:,.1f} ms"
               f"{' (log x: the range spans more than two decades)' if log else ''}.")
    return fig, caption


def ring_shares(f: Facts, ring_config: Path | None) -> tuple[dict[str, float], str]:
    """Each peer's share of the hash circle, and where the ring came from."""
    if ring_config is not None:
        cfg = load_config(ring_config)
        ring = HashRing({p.id: p.weight for p in cfg.peers}, vnodes=cfg.ring.vnodes)
        return ring.shares(), (f"the [[peer]] entries of {ring_config}: {len(ring)} peers, "
                               f"their weights, {ring.vnodes} vnodes per unit of weight")
    ids = [p for p, _, _ in f.peers if p]
    if not ids:
        return {}, "no peer ids in pages.peer"
    ring = HashRing(dict.fromkeys(ids, 1.0), vnodes=RingConfig().vnodes)
    return ring.shares(), (f"the {len(ids)} peer(s) found in pages.peer, weight 1 each, "
                           f"{ring.vnodes} vnodes; --ring cluster.toml gives the real weights")


def _plot_ring(con: duckdb.DuckDBPyConnection, f: Facts, *, shares: dict[str, float],
               ring_source: str, **_: Any) -> tuple[Figure, str]:
    import numpy as np

    if not f.pages:
        raise Skip("no pages")
    if not shares:
        raise Skip("pages.peer is empty, so no ring can be built (pass --ring cluster.toml)")
    data = {p: (n, h) for p, n, h in f.peers}
    peers = sorted(set(data) | set(shares))
    left_out = max(0, len(peers) - MAX_RING_PEERS)
    if left_out:  # keep the figure a readable size: the peers with the most pages
        peers = sorted(sorted(peers, key=lambda p: -data.get(p, (0, 0))[0])[:MAX_RING_PEERS])
    host_total = sum(h for _, h in data.values()) or 1
    ring_pc = np.array([100 * shares.get(p, 0.0) for p in peers])
    host_pc = np.array([100 * data.get(p, (0, 0))[1] / host_total for p in peers])
    page_pc = np.array([100 * data.get(p, (0, 0))[0] / f.pages for p in peers])
    x = np.arange(len(peers))
    fig = _figure(max(6.0, 1.2 * len(peers) + 2), 4)
    ax = fig.add_subplot()
    w = 0.27
    for off, values, name, color in ((-w, ring_pc, "share of the ring", "tab:gray"),
                                     (0, host_pc, "share of hosts", "tab:orange"),
                                     (w, page_pc, "share of pages", "tab:blue")):
        bars = ax.bar(x + off, values, w, label=name, color=color)
        ax.bar_label(bars, labels=[f"{v:.1f}" for v in values], fontsize="x-small")
    ax.set_xticks(x, [_label(p or "(no peer)", 16) for p in peers],
                  rotation=45 if len(peers) > 8 else 0)
    ax.set_ylabel("%")
    ax.set_title("Pages per peer against ring share")
    ax.legend(fontsize="small")
    ax.margins(y=0.12)
    outside = [p or "(no peer)" for p in peers if p not in shares]
    absent = [p for p in peers if p in shares and p not in data]
    notes = ""
    if outside:
        notes += f" Not on that ring (joined later?): {', '.join(outside)}."
    if absent:
        notes += f" On the ring but no pages: {', '.join(absent)}."
    if left_out:
        notes += f" The {left_out} peers with the fewest pages are left out."
    caption = (f"Each peer's share of the hash ring, of the hosts and of the pages; the ring is "
               f"{ring_source}. Hosts should track the ring share; pages also depend on how big "
               "each host is." + notes)
    return fig, caption


def _plot_errors(con: duckdb.DuckDBPyConnection, f: Facts, **_: Any) -> tuple[Figure, str]:
    if not f.errors:
        raise Skip("no failed fetch (every error is NULL)" if not f.not_requested
                    else "no failed request (only URLs never requested have an error)")
    shown = [(k, n) for k, n, _ in f.errors[:25]]
    if len(f.errors) > 25:
        shown.append((f"other ({len(f.errors) - 25} kinds)", sum(n for _, n, _ in f.errors[25:])))
    shown.reverse()  # barh draws bottom-up: the commonest kind on top
    fig = _figure(9, max(2.5, 0.35 * len(shown) + 1.2))
    ax = fig.add_subplot()
    bars = ax.barh([_label(k) for k, _ in shown], [n for _, n in shown], color="tab:red")
    ax.bar_label(bars, labels=[f"{n:,}" for _, n in shown], fontsize="small", padding=2)
    ax.set_xlabel("pages")
    ax.set_title("Failed fetches by error kind")
    ax.margins(x=0.12)
    return fig, (f"{f.failed:,} requests failed, {len(f.errors)} kind(s); the table above gives "
                 "an example URL of each. URLs never requested (robots exclusions...) are not here.")


def _plot_progress(con: duckdb.DuckDBPyConnection, f: Facts, **_: Any) -> tuple[Figure, str]:
    import numpy as np

    t0_us, span, bin_s, nbins = _time_bins(f)
    rows = con.execute(
        "select (epoch_us(fetched_at) - ?) // ? as b, count(*), coalesce(sum(n_links), 0) from pages "
        f"where fetched_at is not null and {REQUESTED} group by all", [t0_us, bin_s * 1_000_000]
    ).fetchall()
    pages, links = np.zeros(nbins), np.zeros(nbins)
    for b, n, k in rows:
        pages[min(int(b), nbins - 1)] += n
        links[min(int(b), nbins - 1)] += k
    scale, unit = _time_unit(span)
    x = (np.arange(nbins) + 1) * bin_s / scale
    fig = _figure(10, 4)
    ax = fig.add_subplot()
    ax.plot(x, np.cumsum(pages), label="fetched pages", color="tab:blue", linewidth=1.6)
    ax.plot(x, np.cumsum(links), label="links found on them", color="tab:orange", linewidth=1.2,
            linestyle="--")
    ax.set_xlabel(f"time since the first fetch ({unit})")
    ax.set_ylabel("cumulative count")
    ax.set_title("Progress: fetched pages and discovered links")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize="small")
    caption = (f"Fetched pages and the links they held, cumulative, in bins of {bin_s} s: "
               f"{int(pages.sum()):,} pages, {int(links.sum()):,} links. The frontier is not recorded "
               "in the results; links grow faster than pages while the crawl is still finding its "
               "web, and flatten with it.")
    return fig, caption


def _plot_depth(con: duckdb.DuckDBPyConnection, f: Facts, **_: Any) -> tuple[Figure, str]:
    rows = con.execute(f"select depth, count(*) from pages where {REQUESTED} and depth is not null "
                       "group by 1 order by 1").fetchall()
    if not rows:
        raise Skip("no fetched page has a depth")
    fig = _figure(8, 3.5)
    ax = fig.add_subplot()
    bars = ax.bar([str(d) for d, _ in rows], [n for _, n in rows], color="tab:green")
    ax.bar_label(bars, labels=[f"{n:,}" for _, n in rows], fontsize="small", padding=2)
    ax.set_xlabel("depth (links from a seed)")
    ax.set_ylabel("fetched pages")
    ax.set_title("Pages by depth")
    ax.margins(y=0.15)
    deepest = rows[-1][0]
    return fig, (f"Fetched pages by depth, 0 being the seeds; the deepest is {deepest}. "
                 "crawl.max_depth cuts this off.")


PLOTS: tuple[tuple[str, str, Callable[..., tuple[Figure, str]]], ...] = (
    ("rate.png", "Pages per second", _plot_rate),
    ("polite.png", "Politeness: requests per second of the busiest hosts", _plot_polite),
    ("pid.png", "PID trace of the busiest hosts", _plot_pid),
    ("status.png", "Status codes", _plot_status),
    ("latency.png", "Latency", _plot_latency),
    ("ring_share.png", "Pages per peer against ring share", _plot_ring),
    ("errors.png", "Errors by kind", _plot_errors),
    ("progress.png", "Progress over time", _plot_progress),
    ("depth.png", "Depth histogram", _plot_depth),
)


def draw(con: duckdb.DuckDBPyConnection, facts: Facts, **kw: Any) -> list[tuple[str, str, Any]]:
    """Each plot as (file name, title, (figure, caption) or the reason it was skipped)."""
    import matplotlib

    # Nothing here needs a display, and the figures are drawn without pyplot.
    # If a caller's pyplot is already up, leave its backend alone: switching
    # would close that caller's figures.
    if "matplotlib.pyplot" not in sys.modules:
        matplotlib.use("Agg")
    drawn: list[tuple[str, str, Any]] = []
    for name, title, plot in PLOTS:
        if not facts.pages and not facts.not_requested:
            drawn.append((name, title, f"{facts.db.name} has no pages"))
            continue
        try:
            drawn.append((name, title, plot(con, facts, **kw)))
        except Skip as why:
            drawn.append((name, title, str(why)))
    return drawn
