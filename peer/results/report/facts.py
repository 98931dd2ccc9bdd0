"""A results file, read once into :class:`Facts`: the report's numbers, queried in DuckDB.

Rules: the file is opened read-only (a live peer's file is refused, not
waited for); aggregation happens in SQL, so only small result sets come back;
every string read is the crawl's, hostile input for the layers above
(:mod:`peer.results.report.plots` sanitises it for matplotlib,
:mod:`peer.results.report.page` escapes it for HTML).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from peer.errors import ConfigError, StateError, first_line
from peer.results.schema import quote

__all__ = ["Facts", "PAGES_COLUMNS", "REQUESTED", "Visits", "open_results",
           "read_facts", "read_visits", "table_columns"]

TOP_HOSTS_TABLE = 10
SLOWEST_TABLE = 10
PAGES_COLUMNS = {"url", "host", "status", "title", "fetched_at", "elapsed_ms", "error", "peer"}
#: A row whose request was made (the package docstring says which rows are not).
REQUESTED = "not (status is null and coalesce(elapsed_ms, 0) = 0)"
#: Sample rows shown of each items table.
ITEM_SAMPLES = 5


@dataclass(frozen=True, slots=True)
class Facts:
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
    visits: Visits | None = None  # a continuous crawl's (the fetches table); None without it

    @property
    def span(self) -> float:
        if self.t0_us is None or self.t1_us is None:
            return 0.0
        return (self.t1_us - self.t0_us) / 1e6


@dataclass(frozen=True, slots=True)
class Visits:
    """A continuous crawl's visits, from its ``fetches`` table: one row a fetch, every run's.

    ``pages`` holds one row a URL (a revisit's row replaces the earlier one),
    so it counts pages, not visits, and its times are each page's last
    visit; these are every visit the file holds, earlier runs' included.
    """

    total: int
    new: int       # first visits
    revisit: int
    urls: int      # distinct URLs visited
    t0_us: int | None  # the first and last visit, epoch microseconds (UTC)
    t1_us: int | None

    @property
    def span(self) -> float:
        if self.t0_us is None or self.t1_us is None:
            return 0.0
        return (self.t1_us - self.t0_us) / 1e6


def read_visits(con: duckdb.DuckDBPyConnection, tables: dict[str, set[str]]) -> Visits | None:
    """The ``fetches`` table's visits, or None when the file has none (no continuous crawl)."""
    if not {"url", "kind", "fetched_at"} <= tables.get("fetches", set()):
        return None
    row = con.execute(
        "select count(*), count(*) filter (kind = 'new'), count(*) filter (kind = 'revisit'), "
        "count(distinct url), min(epoch_us(fetched_at)), max(epoch_us(fetched_at)) from fetches").fetchone()
    assert row is not None
    return Visits(*row) if row[0] else None


def open_results(db: Path) -> duckdb.DuckDBPyConnection:
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
        raise StateError(f"{db}: cannot be opened: {first_line(exc)}") from None


def table_columns(con: duckdb.DuckDBPyConnection) -> dict[str, set[str]]:
    rows = con.execute(
        "select table_name, column_name from information_schema.columns "
        "where table_catalog = current_database() and table_schema = 'main'"
    ).fetchall()
    out: dict[str, set[str]] = {}
    for table, column in rows:
        out.setdefault(table, set()).add(column)
    return out


def read_facts(con: duckdb.DuckDBPyConnection, db: Path, tables: dict[str, set[str]]) -> Facts:
    one = con.execute(
        f"select count(*) filter ({REQUESTED}), count(status), count(error) filter ({REQUESTED}), "
        "count(distinct host), min(epoch_us(fetched_at)), max(epoch_us(fetched_at)) from pages"
    ).fetchone()
    assert one is not None
    pages, answered, failed, hosts, t0, t1 = one
    # Requests only, as ``pages`` counts them: each peer's share of it, and
    # the hosts it requested (rows never requested are "not requested").
    peers = con.execute(
        "select coalesce(peer, ''), count(*), count(distinct host) from pages "
        f"where {REQUESTED} group by 1 order by 1"
    ).fetchall()
    status = con.execute(
        "select status, count(*) from pages group by 1 order by 1 nulls last"
    ).fetchall()
    errors = con.execute(
        "select error, count(*), coalesce(min(url), '') from pages where error is not null "
        f"and {REQUESTED} group by 1 order by 2 desc, 1"
    ).fetchall()
    not_requested = con.execute(
        "select coalesce(error, '(none)'), count(*), coalesce(min(url), '') from pages "
        f"where not {REQUESTED} group by 1 order by 2 desc, 1"
    ).fetchall()
    top_hosts = con.execute(
        "select coalesce(host, ''), count(*), count(error), "
        "coalesce(string_agg(distinct peer, ', ' order by peer), '') "
        f"from pages where {REQUESTED} group by 1 order by 2 desc, 1 limit ?", [TOP_HOSTS_TABLE]
    ).fetchall()
    dist = con.execute(
        "select coalesce(median(n), 0), coalesce(max(n), 0) "
        f"from (select count(*) as n from pages where {REQUESTED} group by host)"
    ).fetchone()
    assert dist is not None
    slowest = con.execute(
        "select coalesce(url, ''), status, coalesce(title, ''), elapsed_ms, coalesce(peer, '') "
        "from pages where elapsed_ms is not null and isfinite(elapsed_ms) "
        "order by elapsed_ms desc, url limit ?", [SLOWEST_TABLE]
    ).fetchall()
    counts = {
        t: con.execute(f"select count(*) from {quote(t)}").fetchone()[0]  # type: ignore[index]
        for t in sorted(tables)
        if t in ("pid_trace", "links", "bodies") or t.startswith("items_")
    }
    return Facts(
        db=db, tables=tables, pages=pages, answered=answered, failed=failed, hosts=hosts,
        t0_us=t0, t1_us=t1, peers=peers, status=status, errors=errors, top_hosts=top_hosts,
        host_median=float(dist[0]), host_max=int(dist[1]), slowest=slowest, counts=counts,
        not_requested=not_requested, items=item_quality(con, tables, counts),
        visits=read_visits(con, tables),
    )


def item_quality(con: duckdb.DuckDBPyConnection, tables: dict[str, set[str]],
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
            q = quote(c)
            kind = con.execute(
                "select data_type from information_schema.columns where table_catalog = current_database() "
                "and table_schema = 'main' and table_name = ? and column_name = ?", [table, c]).fetchone()
            is_list = kind is not None and str(kind[0]).endswith("[]")
            test = f"{q} is null or len({q}) = 0" if is_list else f"{q} is null or trim(cast({q} as varchar)) = ''"
            k = con.execute(f"select count(*) filter ({test}) from {quote(table)}").fetchone()[0]  # type: ignore[index]
            empty.append((c, 100.0 * k / n if n else 0.0))
        shown = ["url", *fields]
        sample = con.execute(f"select {', '.join(map(quote, shown))} from {quote(table)} "
                             f"order by url limit {ITEM_SAMPLES}").fetchall()
        out.append((table, n, empty, shown, sample))
    return out
