#!/usr/bin/env python3
"""A crawl report: PNG plots and one self-contained ``index.html`` from a results file.

Reads a results file (a peer's ``pages.duckdb`` or the merged file of a
cluster; both have the tables of :data:`peer.results.store.SCHEMA`), read-only, so a
report can be drawn while nothing else holds the file for writing. Writes into
the output directory:

- ``rate.png``: pages per second over time, per peer (the bin widens with the
  span so a long crawl stays readable);
- ``polite.png``: politeness as the site owner sees it: each of the busiest
  hosts' requests per 1 s bin (counted at request start, ``fetched_at -
  elapsed_ms``) against the setpoint per second and the hard ceiling
  ``ceil(1.1 x S) + 1`` of any 1 s, with the PID's delay on a second axis.
  The setpoint comes from ``--ring cluster.toml``'s ``politeness.rate``, else
  from pid_trace (its setpoint over the window its rows are spaced by);
- ``pid.png``: the PID trace of the busiest hosts: pages per window against the
  setpoint, and the delay the controller chose (T_k of peer/core/pid.py's law);
- ``status.png``: status codes, a failed fetch (NULL status) counted as "error";
- ``latency.png``: elapsed_ms of the pages that got an answer, log x when the
  range spans more than two decades;
- ``ring_share.png``: each peer's share of the hash ring against its share of
  hosts and of pages. Ring shares come from ``--ring cluster.toml`` (weights,
  vnodes), else from the peers found in the data with weight 1 and the default
  vnodes. Hosts differ in size, so pages can stray from the ring share while
  hosts should track it (UbiCrawler §3: balance is over hosts);
- ``errors.png``: failed fetches by error kind;
- ``progress.png``: progress over time: fetched pages and the links they
  held (discovered links, counted per page: the frontier is not recorded in
  the rows), cumulative;
- ``depth.png``: fetched pages by depth (links from a seed);
- ``index.html``: a summary, tables of peers, top hosts, failed requests and,
  apart, the URLs recorded without a request (robots exclusions, a
  robots.txt that could not be read, a host given up), item quality (% empty
  per field and sample rows of each ``items_*`` table), the config the run
  used (from the ``stats.json`` beside the file: a peer's data_dir, or
  ``crawl.stats.json`` beside a merged ``crawl.duckdb``; or ``--stats``) and
  the slowest pages, then the figures with captions.

"pages" are fetched pages, requests made (peer/core/progress.py): a row without a
request has no status and no measured time (``status IS NULL AND elapsed_ms
= 0``) and is counted apart.

A plot whose data is absent (no pid_trace table, no failed fetch...) is not
drawn; the page says why instead. Every string from the data (URLs, titles,
hosts, peer ids, error kinds) is hostile input: it is HTML-escaped, shown as
text and never as a link, and sanitised before it reaches matplotlib (whose
mathtext would parse ``$...$``). Figures are drawn with ``matplotlib.figure.
Figure`` on the Agg backend, not pyplot: no global figure registry to leak, no
display needed.

Aggregation happens in DuckDB; only the latencies come back row by row, so a
100k-page file takes a few seconds, most of it matplotlib.

Usage::

    python scripts/report.py data/merged.duckdb -o report/ [--ring cluster.toml] [--top 4]
"""

from __future__ import annotations

import argparse
import html
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from peer.core.config import RingConfig
from peer.state.configfile import load_config
from peer.errors import ConfigError, StateError, cli_main
from ring.hashring import HashRing

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["PoliteSeries", "ReportSummary", "build_report", "main", "politeness_series"]

#: Hosts in the PID figure at most: each takes a row of the figure.
MAX_TOP = 16
MAX_RING_PEERS = 40
TOP_HOSTS_TABLE = 10
SLOWEST_TABLE = 10
#: Rate bins at most; the bin is the first of _BINS (seconds) that keeps under it.
MAX_BINS = 200
_BINS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400)
_PAGES_COLUMNS = {"url", "host", "status", "title", "fetched_at", "elapsed_ms", "error", "peer"}
_PID_COLUMNS = {"host", "window_end", "n", "delay", "setpoint"}
#: A row whose request was made (module docstring).
_REQUESTED = "not (status is null and coalesce(elapsed_ms, 0) = 0)"
#: Sample rows shown of each items table.
ITEM_SAMPLES = 5
#: Points a host's line in the politeness panel has at most; a longer crawl's
#: 1 s bins are folded, each point the busiest 1 s of its group (an over-limit
#: second must stay visible, which a mean would hide).
MAX_POLITE_POINTS = 1200
_DPI = 100


@dataclass(frozen=True, slots=True)
class ReportSummary:
    """What :func:`build_report` wrote: the page, its PNGs in page order, the plots skipped."""

    index: Path
    figures: tuple[Path, ...]
    skipped: tuple[tuple[str, str], ...]  # (plot title, why)


# ---------------------------------------------------------------------------
# Reading the file
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Facts:
    """Everything the summary needs, read once."""

    db: Path
    tables: dict[str, set[str]]
    pages: int
    answered: int
    failed: int
    hosts: int
    t0_us: int | None  # first and last fetched_at, epoch microseconds (UTC)
    t1_us: int | None
    peers: list[tuple[str, int, int]]  # (peer, pages, hosts)
    status: list[tuple[int | None, int]]
    errors: list[tuple[str, int, str]]  # (kind, count, an example URL)
    top_hosts: list[tuple[str, int, int, str]]  # (host, pages, failed, peers)
    host_median: float
    host_max: int
    slowest: list[tuple[str, int | None, str, float, str]]
    counts: dict[str, int]  # rows of the optional tables present (pid_trace, links, items_*...)
    not_requested: list[tuple[str, int, str]] = ()  # type: ignore[assignment]  # (cause, count, example URL)
    items: list[tuple[str, int, list[tuple[str, float]], list[str], list[tuple]]] = ()  # type: ignore[assignment]

    @property
    def span(self) -> float:
        if self.t0_us is None or self.t1_us is None:
            return 0.0
        return (self.t1_us - self.t0_us) / 1e6


def _open(db: Path) -> duckdb.DuckDBPyConnection:
    if not db.exists():
        raise ConfigError(str(db), "", "no such file (expected a results .duckdb file)")
    if not db.is_file():
        raise ConfigError(str(db), "", "is not a file (expected a results .duckdb file)")
    try:
        return duckdb.connect(str(db), read_only=True)
    except duckdb.Error as exc:
        msg = str(exc)
        if "not a valid DuckDB database" in msg:
            raise StateError(f"{db}: not a DuckDB file") from None
        if "lock" in msg.lower():
            raise StateError(f"{db}: held for writing by another process (a running peer?); "
                             "wait for it to end, or report on a copy (scripts/merge.py takes "
                             "a snapshot of a live file)") from None
        raise StateError(f"{db}: cannot be opened: {_first_line(msg)}") from None


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def _tables(con: duckdb.DuckDBPyConnection) -> dict[str, set[str]]:
    rows = con.execute(
        "select table_name, column_name from information_schema.columns "
        "where table_catalog = current_database() and table_schema = 'main'"
    ).fetchall()
    out: dict[str, set[str]] = {}
    for table, column in rows:
        out.setdefault(table, set()).add(column)
    return out


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _facts(con: duckdb.DuckDBPyConnection, db: Path, tables: dict[str, set[str]]) -> _Facts:
    one = con.execute(
        f"select count(*) filter ({_REQUESTED}), count(status), count(error) filter ({_REQUESTED}), "
        "count(distinct host), min(epoch_us(fetched_at)), max(epoch_us(fetched_at)) from pages"
    ).fetchone()
    assert one is not None
    pages, answered, failed, hosts, t0, t1 = one
    peers = con.execute(
        "select coalesce(peer, ''), count(*), count(distinct host) from pages group by 1 order by 1"
    ).fetchall()
    status = con.execute(
        "select status, count(*) from pages group by 1 order by 1 nulls last"
    ).fetchall()
    errors = con.execute(
        "select error, count(*), coalesce(min(url), '') from pages where error is not null "
        f"and {_REQUESTED} group by 1 order by 2 desc, 1"
    ).fetchall()
    not_requested = con.execute(
        "select coalesce(error, '(none)'), count(*), coalesce(min(url), '') from pages "
        f"where not {_REQUESTED} group by 1 order by 2 desc, 1"
    ).fetchall()
    top_hosts = con.execute(
        "select coalesce(host, ''), count(*), count(error), "
        "coalesce(string_agg(distinct peer, ', ' order by peer), '') "
        "from pages group by 1 order by 2 desc, 1 limit ?", [TOP_HOSTS_TABLE]
    ).fetchall()
    dist = con.execute(
        "select coalesce(median(n), 0), coalesce(max(n), 0) "
        "from (select count(*) as n from pages group by host)"
    ).fetchone()
    assert dist is not None
    slowest = con.execute(
        "select coalesce(url, ''), status, coalesce(title, ''), elapsed_ms, coalesce(peer, '') "
        "from pages where elapsed_ms is not null and isfinite(elapsed_ms) "
        "order by elapsed_ms desc, url limit ?", [SLOWEST_TABLE]
    ).fetchall()
    counts = {
        t: con.execute(f"select count(*) from {_ident(t)}").fetchone()[0]  # type: ignore[index]
        for t in sorted(tables)
        if t in ("pid_trace", "links", "bodies") or t.startswith("items_")
    }
    return _Facts(
        db=db, tables=tables, pages=pages, answered=answered, failed=failed, hosts=hosts,
        t0_us=t0, t1_us=t1, peers=peers, status=status, errors=errors, top_hosts=top_hosts,
        host_median=float(dist[0]), host_max=int(dist[1]), slowest=slowest, counts=counts,
        not_requested=not_requested, items=_item_quality(con, tables, counts),
    )


def _item_quality(con: duckdb.DuckDBPyConnection, tables: dict[str, set[str]],
                  counts: dict[str, int]) -> list[tuple[str, int, list[tuple[str, float]], list[str], list[tuple]]]:
    """Per items table: (table, rows, [(field, % empty)], fields, sample rows).

    Empty: NULL, an empty or blank string, or an empty list (a ``*`` field
    that matched nothing): what a selector that no longer fits gives.
    """
    out = []
    for table in sorted(t for t in tables if t.startswith("items_")):
        cols = [c for c, in con.execute(
            "select column_name from information_schema.columns where table_catalog = "
            "current_database() and table_schema = 'main' and table_name = ? order by ordinal_position",
            [table]).fetchall()]
        fields = [c for c in cols if c not in ("url", "fetched_at", "peer")]
        n = counts.get(table, 0)
        empty: list[tuple[str, float]] = []
        for c in fields:
            q = _ident(c)
            kind = con.execute(
                "select data_type from information_schema.columns where table_catalog = current_database() "
                "and table_schema = 'main' and table_name = ? and column_name = ?", [table, c]).fetchone()
            is_list = kind is not None and str(kind[0]).endswith("[]")
            test = f"{q} is null or len({q}) = 0" if is_list else f"{q} is null or trim(cast({q} as varchar)) = ''"
            k = con.execute(f"select count(*) filter ({test}) from {_ident(table)}").fetchone()[0]  # type: ignore[index]
            empty.append((c, 100.0 * k / n if n else 0.0))
        shown = ["url", *fields]
        sample = con.execute(f"select {', '.join(map(_ident, shown))} from {_ident(table)} "
                             f"order by url limit {ITEM_SAMPLES}").fetchall()
        out.append((table, n, empty, shown, sample))
    return out


# ---------------------------------------------------------------------------
# The plots. Each returns (figure, caption), or the reason it was skipped.
# ---------------------------------------------------------------------------


class _Skip(Exception):
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


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=_DPI, layout="constrained")


def _plot_rate(con: duckdb.DuckDBPyConnection, f: _Facts, **_: Any) -> tuple[Figure, str]:
    import numpy as np

    if f.t0_us is None or f.t1_us is None:
        raise _Skip("no page has a fetched_at time")
    span = f.span
    bin_s = _bin_seconds(span)
    nbins = int(span // bin_s) + 1
    rows = con.execute(
        "select coalesce(peer, ''), (epoch_us(fetched_at) - ?) // ? as b, count(*) from pages "
        "where fetched_at is not null group by all", [f.t0_us, bin_s * 1_000_000]
    ).fetchall()
    series: dict[str, Any] = {}
    for peer, b, n in rows:
        series.setdefault(peer, np.zeros(nbins))[min(int(b), nbins - 1)] += n
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
    caption = (f"Pages per second in bins of {bin_s} s over {_duration(span)}, one line per peer"
               f"{' and their total' if len(series) > 1 else ''}; failed fetches included. "
               f"Busiest bin of one peer: {peak:,.1f} pages/s.")
    return fig, caption


def _plot_pid(con: duckdb.DuckDBPyConnection, f: _Facts, *, top: int, **_: Any) -> tuple[Figure, str]:
    import numpy as np

    cols = f.tables.get("pid_trace")
    if cols is None:
        raise _Skip(f"{f.db.name} has no pid_trace table")
    if missing := _PID_COLUMNS - cols:
        raise _Skip(f"pid_trace lacks the column(s) {', '.join(sorted(missing))}")
    if not f.counts.get("pid_trace"):
        raise _Skip("pid_trace has no rows (no host had backlog for a whole PID window)")
    ranked = con.execute(
        "select t.host, coalesce(p.n, 0) from (select distinct host from pid_trace "
        "where host is not null) t left join (select host, count(*) as n from pages group by host) p "
        "using (host) order by 2 desc, 1 limit ?", [top]
    ).fetchall()
    if not ranked:
        raise _Skip("pid_trace has no host")
    traced = con.execute("select count(distinct host) from pid_trace").fetchone()[0]  # type: ignore[index]
    hosts = [h for h, _ in ranked]
    rows = con.execute(
        "select host, epoch_us(window_end), n, delay, setpoint from pid_trace "
        "where list_contains(?, host) and window_end is not null order by host, window_end", [hosts]
    ).fetchall()
    if not rows:
        raise _Skip("pid_trace has no window_end time for the busiest hosts")
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


def _setpoint(con: duckdb.DuckDBPyConnection, f: _Facts,
              ring_config: Path | None) -> tuple[float | None, str]:
    """(setpoint in requests per second or None, where it came from)."""
    if ring_config is not None:
        rate = load_config(ring_config).politeness.rate
        if rate <= 0:
            return None, f"{ring_config} sets politeness.rate = 0 (no rate limit), so no setpoint is drawn"
        return rate / 60, f"politeness.rate = {rate:g} pages/min of {ring_config}"
    cols = f.tables.get("pid_trace")
    if cols is None or _PID_COLUMNS - cols or not f.counts.get("pid_trace"):
        return None, "no setpoint known: pass --ring cluster.toml (no usable pid_trace either)"
    one = con.execute(
        "select (select median(setpoint) from pid_trace), (select min(gap) / 1e6 from (select "
        "epoch_us(window_end) - lag(epoch_us(window_end)) over (partition by host order by window_end) "
        "as gap from pid_trace) where gap > 0)").fetchone()
    if one is None or one[0] is None or one[1] is None or not one[1] > 0:
        return None, ("no setpoint known: pass --ring cluster.toml (pid_trace has no host with two "
                      "windows, so its window length is unknown)")
    setpoint, window = float(one[0]), float(one[1])
    return setpoint / window, (f"pid_trace: a setpoint of {setpoint:g} pages a window over windows of "
                               f"{window:g} s (the spacing of a host's window_end); --ring cluster.toml "
                               "gives politeness.rate itself")


def _plot_polite(con: duckdb.DuckDBPyConnection, f: _Facts, *, top: int,
                 setpoint: tuple[float | None, str], **_: Any) -> tuple[Figure, str]:
    import numpy as np

    series = politeness_series(con, top)
    if series is None:
        raise _Skip("no answered request has a fetched_at time")
    per_s, source = setpoint
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
    limit = math.ceil(round(1.1 * per_s, 9)) + 1 if per_s is not None else None
    fig = _figure(11, 0.6 + 2.2 * len(series.hosts))
    axes = fig.subplots(len(series.hosts), 1, squeeze=False, sharex=True)[:, 0]
    notes = []
    for host, ax in zip(series.hosts, axes):
        c = np.array(series.counts[host], dtype=float)
        pad = (-len(c)) % fold
        shown = np.pad(c, (0, pad)).reshape(-1, fold).max(axis=1)
        x = np.arange(len(shown) + 1) * fold / scale
        ax.stairs(shown, x, color="tab:blue", linewidth=1.2,
                  label="requests in 1 s" if fold == 1 else f"busiest 1 s of each {fold} s")
        if per_s is not None:
            ax.axhline(per_s, color="tab:red", linestyle="--", linewidth=1.2, label=f"setpoint {per_s:g}/s")
            ax.axhline(limit, color="tab:red", linestyle=":", linewidth=1.0,
                       label=f"ceiling {limit} in any 1 s")
        ax.set_ylabel("requests / s")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        peak = int(c.max())
        over = int((c > limit).sum()) if limit is not None else 0
        ax.set_title(f"{_label(host, 50)} ({series.pages[host]:,} requests, busiest 1 s: {peak})",
                     fontsize="medium", loc="left")
        notes.append(f"{host}: busiest 1 s {peak}" + (f", {over} s over the ceiling" if limit is not None else ""))
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
               + (f"against the setpoint of {per_s:g}/s (dashed) and the ceiling of {limit} requests "
                  f"in any 1 s (dotted); setpoint from {source}. " if per_s is not None else f"{source}. ")
               + ("The PID's delay after each window is on the right axis. " if delays else
                  "No PID delay: pid_trace is absent or has none of these hosts. ")
               + "; ".join(notes) + ".")
    return fig, caption


def _status_color(code: int | None) -> str:
    if code is None:
        return "tab:gray"
    return {2: "tab:green", 3: "tab:blue", 4: "tab:orange", 5: "tab:red"}.get(code // 100, "tab:purple")


def _plot_status(con: duckdb.DuckDBPyConnection, f: _Facts, **_: Any) -> tuple[Figure, str]:
    if not f.status:
        raise _Skip("no pages")
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


def _plot_latency(con: duckdb.DuckDBPyConnection, f: _Facts, **_: Any) -> tuple[Figure, str]:
    import numpy as np

    arr = con.execute(
        "select elapsed_ms from pages where status is not null and elapsed_ms > 0 "
        "and isfinite(elapsed_ms)"
    ).fetchnumpy()["elapsed_ms"]
    arr = np.asarray(arr, dtype=float)
    if arr.size == 0:
        raise _Skip("no fetched page (with a status) has an elapsed_ms > 0")
    lo, hi = float(arr.min()), float(arr.max())
    log = hi / lo > 100
    bins = np.geomspace(lo, hi, 60) if log and hi > lo else np.linspace(lo, max(hi, lo + 1e-3), 60)
    fig = _figure(10, 4)
    ax = fig.add_subplot()
    ax.hist(arr, bins=bins, histtype="stepfilled", color="tab:blue", alpha=0.8)
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


def _ring(f: _Facts, ring_config: Path | None) -> tuple[dict[str, float], str]:
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


def _plot_ring(con: duckdb.DuckDBPyConnection, f: _Facts, *, shares: dict[str, float],
               ring_source: str, **_: Any) -> tuple[Figure, str]:
    import numpy as np

    if not f.pages:
        raise _Skip("no pages")
    if not shares:
        raise _Skip("pages.peer is empty, so no ring can be built (pass --ring cluster.toml)")
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


def _plot_errors(con: duckdb.DuckDBPyConnection, f: _Facts, **_: Any) -> tuple[Figure, str]:
    if not f.errors:
        raise _Skip("no failed fetch (every error is NULL)" if not f.not_requested
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


def _plot_progress(con: duckdb.DuckDBPyConnection, f: _Facts, **_: Any) -> tuple[Figure, str]:
    import numpy as np

    if f.t0_us is None or f.t1_us is None:
        raise _Skip("no page has a fetched_at time")
    span = f.span
    bin_s = _bin_seconds(span)
    nbins = int(span // bin_s) + 1
    rows = con.execute(
        "select (epoch_us(fetched_at) - ?) // ? as b, count(*), coalesce(sum(n_links), 0) from pages "
        f"where fetched_at is not null and {_REQUESTED} group by all", [f.t0_us, bin_s * 1_000_000]
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


def _plot_depth(con: duckdb.DuckDBPyConnection, f: _Facts, **_: Any) -> tuple[Figure, str]:
    rows = con.execute(f"select depth, count(*) from pages where {_REQUESTED} and depth is not null "
                       "group by 1 order by 1").fetchall()
    if not rows:
        raise _Skip("no fetched page has a depth")
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


_PLOTS: tuple[tuple[str, str, Callable[..., tuple[Figure, str]]], ...] = (
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


# ---------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _cut(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{int(seconds // 60)} min {int(seconds % 60)} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60)} min"


def _when(us: int | None) -> str:
    if us is None:
        return "n/a"
    return datetime.fromtimestamp(us / 1e6, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]], num: frozenset[int] = frozenset()) -> str:
    """An HTML table; every cell escaped, the columns in ``num`` right-aligned."""
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f'<td class="num">{_e(c)}</td>' if i in num else f"<td>{_e(c)}</td>"
                         for i, c in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_CSS = """
body { font-family: system-ui, sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: 0.5rem 0 1.5rem; font-size: 0.92rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.6rem; text-align: left; vertical-align: top; }
thead th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td { word-break: break-all; }
figure { margin: 1.5rem 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 0.92rem; color: #444; margin-top: 0.3rem; }
p.skipped { color: #8a5a00; background: #fff6e0; padding: 0.4rem 0.6rem; }
"""


def _summary_rows(f: _Facts, ring_source: str) -> list[tuple[str, str, str]]:
    span = f.span
    rate = f"{f.pages / span:,.1f}" if span > 0 else "n/a"
    status = " · ".join(f"{'error' if s is None else s}: {n:,}" for s, n in f.status) or "none"
    errors = " · ".join(f"{k}: {n:,}" for k, n, _ in f.errors[:5]) or "none"
    items = "; ".join(f"{t}: {n:,} rows" for t, n in f.counts.items() if t.startswith("items_"))
    optional = []
    for t in ("pid_trace", "links", "bodies"):
        optional.append((f"s-{t}", t, f"{f.counts[t]:,} rows" if t in f.counts else "absent"))
    return [
        ("s-source", "results file", str(f.db)),
        ("s-pages", "pages (fetched: requests made)", f"{f.pages:,}"),
        ("s-not-requested", "not requested (robots exclusions, robots.txt unreadable, hosts given up)",
         " · ".join(f"{k}: {n:,}" for k, n, _ in f.not_requested) or "none"),
        ("s-answered", "answered (with a status)", f"{f.answered:,}"),
        ("s-failed", "failed (with an error kind)", f"{f.failed:,}"),
        ("s-hosts", "hosts", f"{f.hosts:,}"),
        ("s-peers", "peers", f"{len(f.peers):,}"),
        ("s-first", "first fetch", _when(f.t0_us)),
        ("s-last", "last fetch", _when(f.t1_us)),
        ("s-span", "time span", _duration(span) if f.t0_us is not None else "n/a"),
        ("s-rate", "pages/s (mean over the span)", rate),
        ("s-status", "status codes", status),
        ("s-errors", "top errors", errors),
        ("s-per-host", "pages per host", f"median {f.host_median:,.1f}, max {f.host_max:,}"),
        ("s-ring", "ring shares from", ring_source),
        *optional,
        ("s-items", "items tables", items or "none"),
    ]


def _items_html(f: _Facts) -> list[str]:
    out = []
    for table, n, empty, shown, sample in f.items:
        out.append(f"<h3>{_e(table)}</h3><p>{n:,} rows. Empty: NULL, blank, or an empty list.</p>")
        out.append(_table(["field", "% empty"], [(c, f"{pct:.1f}%") for c, pct in empty],
                          num=frozenset({1})))
        out.append(_table(shown, [[_cut(str(v), 80) for v in row] for row in sample]))
    return out


def _config_html(cfg: tuple[str, dict[str, Any]] | None) -> str:
    if cfg is None:
        return ("<p>No stats.json beside the results file (a peer writes one in its data_dir at the "
                "end of a run; merge.py sums them into OUT.stats.json); --stats names one.</p>")
    import json

    source, doc = cfg
    rows = []
    for section, values in doc.items():
        if isinstance(values, dict):
            rows.extend((f"{section}.{k}", json.dumps(v)) for k, v in values.items())
        else:
            rows.append((section, json.dumps(values)))
    return f"<p>From {_e(source)}.</p>" + _table(["key", "value"], [(k, _cut(v, 200)) for k, v in rows])


def _html(f: _Facts, ring_source: str, shares: dict[str, float],
          sections: list[tuple[str, str, str | None, str]],
          run_cfg: tuple[str, dict[str, Any]] | None = None) -> str:
    """``sections``: (title, png name, caption or None when skipped, why skipped)."""
    out = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>ringcrawl report: {_e(f.db.name)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>ringcrawl report: {_e(f.db.name)}</h1>",
        f"<p>Generated {_e(datetime.now(UTC).strftime('%Y-%m-%d %H:%M:%S UTC'))}. "
        "Times are UTC. Strings from the crawl are shown as text, never as links.</p>",
        '<h2 id="summary">Summary</h2>',
        '<table class="summary"><tbody>',
        *(f'<tr id="{rid}"><th>{_e(k)}</th><td>{_e(v)}</td></tr>' for rid, k, v in _summary_rows(f, ring_source)),
        "</tbody></table>",
        '<h2 id="peers">Peers</h2>',
        _table(["peer", "pages", "share of pages", "hosts", "share of the ring"],
               [(p or "(no peer)", f"{n:,}", f"{100 * n / f.pages:.1f}%" if f.pages else "n/a", f"{h:,}",
                 f"{100 * shares[p]:.1f}%" if p in shares else "not on the ring")
                for p, n, h in f.peers], num=frozenset({1, 2, 3, 4})),
        f'<h2 id="hosts">Top hosts</h2><p>The {len(f.top_hosts)} hosts with the most pages, of '
        f"{f.hosts:,}.</p>",
        _table(["host", "pages", "failed", "peer(s)"],
               [(h, f"{n:,}", f"{e:,}", p) for h, n, e, p in f.top_hosts], num=frozenset({1, 2})),
        '<h2 id="errors">Errors</h2><p>Failed requests, by kind.</p>',
        _table(["error kind", "pages", "example URL"],
               [(k, f"{n:,}", _cut(u)) for k, n, u in f.errors], num=frozenset({1}))
        if f.errors else "<p>No failed fetch.</p>",
        '<h2 id="not-requested">Not requested</h2><p>URLs recorded without a request: '
        "<code>robots</code> is robots.txt's exclusion; another cause is why a host's robots.txt "
        "could not be read, or <code>retry_after</code> a host given up. Not failures, not pages.</p>",
        _table(["cause", "URLs", "example URL"],
               [(k, f"{n:,}", _cut(u)) for k, n, u in f.not_requested], num=frozenset({1}))
        if f.not_requested else "<p>None: every URL recorded was requested.</p>",
        '<h2 id="items">Item quality</h2>',
        *(_items_html(f) or ["<p>No items tables.</p>"]),
        '<h2 id="config">Run config</h2>',
        _config_html(run_cfg),
        f'<h2 id="slowest">Slowest pages</h2><p>The {len(f.slowest)} fetches that took longest.</p>',
        _table(["URL", "status", "title", "elapsed ms", "peer"],
               [(_cut(u), "error" if s is None else s, _cut(t, 80), f"{ms:,.1f}", p)
                for u, s, t, ms, p in f.slowest], num=frozenset({3})),
        '<h2 id="figures">Figures</h2>',
    ]
    for title, name, caption, why in sections:
        if caption is None:
            out.append(f'<p class="skipped">{_e(title)}: not drawn, {_e(why)}.</p>')
        else:
            out.append(f'<figure><img src="{_e(name)}" alt="{_e(title)}">'
                       f"<figcaption><b>{_e(title)}.</b> {_e(caption)}</figcaption></figure>")
    out.append("</body></html>\n")
    return "\n".join(out)


# ---------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------


def _run_config(db: Path, stats: Path | None) -> tuple[str, dict[str, Any]] | None:
    """(source, run_config) from ``stats`` or the stats.json beside ``db``; None if there is none."""
    import json

    candidates = [stats] if stats is not None else [db.with_name(db.stem + ".stats.json"),
                                                    db.parent / "stats.json"]
    for path in candidates:
        if path is None or not path.is_file():
            if stats is not None:
                raise ConfigError(str(stats), "--stats", "no such file")
            continue
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise StateError(f"{path}: cannot read stats ({exc})") from None
        cfg = doc.get("run_config") if isinstance(doc, dict) else None
        return (str(path), cfg) if isinstance(cfg, dict) and cfg else None
    return None


def _read(db: Path, ring_config: Path | None,
          top: int) -> tuple[_Facts, dict[str, float], str, list[tuple[str, str, Any]]]:
    """The file's facts, ring shares and each plot drawn (not yet saved), or why it is skipped."""
    con = _open(db)
    try:
        try:
            tables = _tables(con)
            if "pages" not in tables:
                found = ", ".join(sorted(tables)) or "none"
                raise StateError(f"{db}: has no pages table (tables: {found}); is it a ringcrawl results file?")
            if missing := _PAGES_COLUMNS - tables["pages"]:
                raise StateError(f"{db}: the pages table lacks the column(s) {', '.join(sorted(missing))}")
            facts = _facts(con, db, tables)
            shares, ring_source = _ring(facts, ring_config)
            drawn = _draw(con, facts, top=top, shares=shares, ring_source=ring_source,
                          setpoint=_setpoint(con, facts, ring_config))
        except duckdb.Error as exc:
            raise StateError(f"{db}: cannot be read: {_first_line(str(exc))}") from None
    finally:
        con.close()
    return facts, shares, ring_source, drawn


def captions(db: Path, *, ring_config: Path | None = None, top: int = 4) -> dict[str, str]:
    """Each plot's caption, or the reason it is skipped, by file name: what build_report
    would write under each PNG of the page, without rendering or writing anything.

    Rendering the figures (``savefig``) is most of a report's cost: 13.4 of
    15.1 s of one profiled 9-plot report.
    """
    db = Path(db)
    if not 1 <= top <= MAX_TOP:
        raise ConfigError("--top", "", f"expected an integer from 1 to {MAX_TOP}, got {top!r}")
    _, _, _, drawn = _read(db, ring_config, top)
    out: dict[str, str] = {}
    for name, _, result in drawn:
        if isinstance(result, str):
            out[name] = result
        else:
            out[name] = result[1]
    return out


def build_report(db: Path, out: Path, *, ring_config: Path | None = None, top: int = 4,
                 stats: Path | None = None) -> ReportSummary:
    """Write the PNGs and ``out/index.html`` for the results file ``db``.

    ``out`` is created if absent; files of an earlier report there are
    overwritten, and a plot this run skips has its old PNG removed. Raises
    :class:`ConfigError` (bad argument, unreadable cluster.toml, ``out`` is a
    file) or :class:`StateError` (not a DuckDB file, no pages table).
    """
    db, out = Path(db), Path(out)
    if not 1 <= top <= MAX_TOP:
        raise ConfigError("--top", "", f"expected an integer from 1 to {MAX_TOP}, got {top!r}")
    if out.exists() and not out.is_dir():
        raise ConfigError(str(out), "", "exists and is not a directory (-o takes a directory)")
    run_cfg = _run_config(db, stats)
    facts, shares, ring_source, drawn = _read(db, ring_config, top)
    try:
        out.mkdir(parents=True, exist_ok=True)
        written: list[Path] = []
        sections: list[tuple[str, str, str | None, str]] = []
        for name, title, result in drawn:
            path = out / name
            if isinstance(result, str):
                if path.is_file():  # a stale plot of an earlier report would contradict the page
                    path.unlink()
                sections.append((title, name, None, result))
                continue
            fig, caption = result
            fig.savefig(path, dpi=_DPI)
            written.append(path)
            sections.append((title, name, caption, ""))
        index = out / "index.html"
        index.write_text(_html(facts, ring_source, shares, sections, run_cfg), encoding="utf-8",
                         errors="replace")
    except OSError as exc:
        raise ConfigError(str(out), "", f"cannot write the report: {exc.strerror or exc}") from None
    return ReportSummary(
        index=index, figures=tuple(written),
        skipped=tuple((title, why) for title, _, caption, why in sections if caption is None),
    )


def _draw(con: duckdb.DuckDBPyConnection, facts: _Facts, **kw: Any) -> list[tuple[str, str, Any]]:
    """Each plot as (file name, title, (figure, caption) or the reason it was skipped)."""
    import matplotlib

    # Nothing here needs a display, and the figures are drawn without pyplot.
    # If a caller's pyplot is already up, leave its backend alone: switching
    # would close that caller's figures.
    if "matplotlib.pyplot" not in sys.modules:
        matplotlib.use("Agg")
    drawn: list[tuple[str, str, Any]] = []
    for name, title, plot in _PLOTS:
        if not facts.pages and not facts.not_requested:
            drawn.append((name, title, f"{facts.db.name} has no pages"))
            continue
        try:
            drawn.append((name, title, plot(con, facts, **kw)))
        except _Skip as why:
            drawn.append((name, title, str(why)))
    return drawn


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="report.py",
        description=(
            "Draw a crawl report from a results file (a peer's pages.duckdb or a merged file):\n"
            "PNG plots of pages/s per peer, requests/s of the busiest hosts against their\n"
            "setpoint, the PID trace of the busiest hosts, status codes,\n"
            "latency, pages per peer against ring share, errors by kind, progress over time and\n"
            "pages by depth, and an index.html with summary tables (failed requests and, apart,\n"
            "URLs never requested; item quality; the run's config from stats.json). The file is opened read-only. A plot with no data is left\n"
            "out and the page says why."
        ),
        epilog=(
            "example:\n"
            "  python scripts/report.py data/p1/pages.duckdb -o report/ --ring cluster.toml\n"
            "  then open report/index.html\n\n"
            "OUT is created if absent; files of an earlier report in it are overwritten, and the\n"
            "PNG of a plot this run leaves out is deleted. Exit status 2 on a usage mistake\n"
            "(missing or unreadable file, no pages table, OUT is a file, bad cluster.toml)."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("db", type=Path, help="results file (.duckdb) with a pages table")
    p.add_argument("-o", "--out", type=Path, required=True, metavar="OUT",
                   help="output directory for index.html and the PNGs")
    p.add_argument("--ring", type=Path, metavar="cluster.toml",
                   help="take ring shares from this config's [[peer]] weights and ring.vnodes, "
                        "and the politeness panel's setpoint from its politeness.rate "
                        "(default: the peers in the data, weight 1, 256 vnodes; pid_trace's setpoint)")
    p.add_argument("--stats", type=Path, metavar="stats.json",
                   help="the stats.json whose run_config the page shows (default: DB's stem + "
                        ".stats.json, else stats.json, beside DB)")
    p.add_argument("--top", type=int, default=4, metavar="N",
                   help=f"hosts in the politeness and PID trace plots, 1 to {MAX_TOP} (default 4)")
    return p


@cli_main
def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        summary = build_report(args.db, args.out, ring_config=args.ring, top=args.top,
                               stats=args.stats)
    except ImportError as exc:
        raise ConfigError("report.py", "", f"{exc.name or exc} is not installed; "
                          "pip install -e '.[report]'") from None
    for title, why in summary.skipped:
        print(f"skipped: {title}: {why}")
    print(f"wrote {len(summary.figures)} plot(s) to {summary.index.parent}")
    print(f"report: {summary.index.resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
