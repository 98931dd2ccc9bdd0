"""Merge the peers' results files into one DuckDB file.

    python scripts/merge.py --ring cluster.toml -o crawl.duckdb
    python scripts/merge.py data/p1/pages.duckdb data/p2/pages.duckdb -o crawl.duckdb

(``ringcrawl-merge`` is the same command, installed by pip; its command line
is ``peer.commands.merge``.)

Each peer writes ``<data_dir>/pages.duckdb`` (``peer/results/store.py``). The output
has the same tables with the same columns (``peer.results.store.SCHEMA``), so anything
that reads one peer's file reads the merge too:

- ``pages``: one row per ``url``; the newest ``fetched_at`` wins (NULL loses),
  ties broken by ``peer``, then ``final_url``, then the other columns, so the
  winner never depends on the order of the inputs. Always created, empty if
  need be, so queries work.
- ``links``, ``pid_trace``, ``fetches``: distinct rows (a host's visits are
  its owners', in turn, so the peers' ``fetches`` rows never collide: the
  union is every visit of the crawl).
- ``bodies``: one per ``url``: the body from the input whose page row won,
  else from any input (the smallest, to stay deterministic).
- ``items_<name>`` (extraction tables: ``url, fetched_at, peer`` then user
  fields): deduped by ``url`` like ``pages``; the columns are the union of the
  inputs' columns, and a column whose type differs between inputs is an error.

A table absent from every input is not created (except ``pages``). The winner
rules make the merge idempotent: merging again, or merging the merged file
with its inputs, gives the same rows.

**Why a window, not ``ON CONFLICT``.** Measured: ``GROUP BY url`` with
``arg_max`` at 8 s for three 1M-row files, and ``INSERT ... ON CONFLICT`` at twice
the time and three times the size. ``QUALIFY row_number() OVER (PARTITION BY url
ORDER BY ...)`` was as fast as ``arg_max`` here (5-9 s against 8.6-10.4 s on the
same files) and states the full tie-break order explicitly, with ``NULLS LAST``,
which ``arg_max`` over a struct key does not (struct comparison sorts NULL
fields high, so a row without ``fetched_at`` would win).

**Inputs: data directories or files.** An input is a peer's data
directory (``data/p1``, or a copy of it) or a results file. What a peer left
when it stopped cleanly is all in ``pages.duckdb``; one killed (``kill -9``,
a crash, a disk gone read-only) has its last rows elsewhere in the
directory, and a directory is read whole:

- ``pages.duckdb.wal``, DuckDB's write-ahead log: rows committed since the
  last checkpoint (``crawl.results_checkpoint``, 60 s by default). It is
  replayed as DuckDB attaches the file read-only, in memory: the files are
  left as they are. A file given alone is read with its ``.wal`` too when
  one is beside it.
- ``state/``: rows the crawl's journal held that DuckDB had not written
  (peer/state/journal.py rule 5), read from a copy (``peer.state.readcopy``),
  as ``ringcrawl-adopt`` counts them: the pages a merge has are the pages
  adopt tells the others not to fetch again.
- ``stats.json``: the run's configuration and the figures with no row (URLs
  not requested because of the scope or a cap), summed into the cluster's.

**What it read, and --strict.** The summary has a line an input: the path,
its page rows, whether a write-ahead log was replayed, rows from the
journal, whether a stats.json was found. An input is warned about, loudly
on stderr, when it was not left as a clean stop leaves it: a write-ahead log
replayed or journal rows added (nothing is lost, but a copy of the file
alone would lack them), a file without any table (a peer killed before its
first checkpoint, whose rows are in a ``.wal`` that was not copied with it:
skipped), a crawl state that cannot be read, a stats.json of an earlier run
than its rows (a peer killed since its last clean stop), or 0 page rows. With
``strict=True`` (``--strict``) such an input fails the merge
(:class:`Incomplete`, exit status 1) and nothing is written.

**Live peers.** DuckDB refuses to open a file another process holds as a
writer, even read-only. Such an input is copied (with its ``.wal``) and the
copy is read: a snapshot, which the summary reports. If the copy cannot be
read either, the peer must stop first.

**Exports.** ``--export PATH`` writes ``pages`` and every ``items_*`` table
of the merge, one file each, in the format of PATH's extension: ``.jsonl``
(JSON lines, DuckDB's ``FORMAT json``), ``.csv`` (with a header) or
``.parquet``. ``{table}`` in PATH is replaced by each table's name
(``out/{table}.jsonl`` gives ``out/pages.jsonl``, ``out/items_book.jsonl``).
A PATH without it is the ``pages`` file, as given (``out/pages.csv`` is
``out/pages.csv``), and each ``items_*`` table goes beside it with
``.<table>`` before the extension (``out/pages.items_book.csv``): a user who
names a file gets that file, and the other tables cannot overwrite it. Each
file is written whole and renamed into place; an existing one is refused
without ``--force``. The values are the tables', with two exceptions every
reader of the file would otherwise get wrong (:func:`export_select`):

- a 64-bit unsigned column (``simhash``, DuckDB's ``UBIGINT``) is written as
  16 lowercase hex digits, in every format: a JSON number past 2**53 loses
  its low bits in most JSON readers (RFC 8259 §6 warns of exactly that), a
  CSV column with NULLs is read as floats by pandas, and Parquet's UINT64
  becomes a float64 in pandas as soon as a NULL is in the column. ``int(s,
  16)`` in Python and ``('0x' || s)::UBIGINT`` in DuckDB give the value back;
- in CSV, a list or struct column (an items field of a ``*`` rule) is
  written as JSON (``["a","b"]``), not DuckDB's own ``[a, b]``, which no CSV
  reader can split back when a value holds a comma.

**Stats.** A ``stats.json`` beside an input (each peer writes one in its
data_dir at the end of a run, ``peer/core/run/stats.py``; a directory's own,
a file's beside it) is summed into the cluster's: ``<output without
.duckdb>.stats.json`` (``crawl.stats.json``), which ``ringcrawl-report``
reads beside ``crawl.duckdb``. One file is summed once however many inputs
sit beside it.

**WACZ.** With ``wacz``, the peers' WARC files and the merged index are
packaged as one WACZ 1.1.1 file (``peer.results.wacz``), its pages the
merged ``pages`` rows' titles on the index's HTML captures.

**WARC indexes.** The CDXJ indexes of the peers' WARC files (``[warc]``,
docs/warc.md), found in each input's ``warc/`` folder (with ``--ring``: each
peer's ``warc.directory``), are merged into one sorted index beside the
output: ``<output without .duckdb>.cdxj`` (``peer.results.cdxj.merge_indexes``).

**Never a half file.** The merge is built in a temporary directory next to the
output and renamed over it at the end; a failed merge leaves nothing behind.

A user's mistake (missing or foreign file, a directory that is no data_dir,
a foreign ``pages`` table, existing output without ``--force``) is one line on
stderr and exit status 2.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import duckdb

from peer.errors import ConfigError, StateError, first_line
from peer.state.configfile import load_config
from peer.core.run.layout import RESULTS_NAME, DataDir
from peer.core.run.stats import sum_stats
from peer.results.cdxj import MergedIndex, merge_indexes
from peer.results.wacz import WaczSummary, warc_files, write_wacz
from peer.results.schema import quote
from peer.results.mergeinputs import Incomplete, InputRead, Layout, check_inputs, read_input, tables
from peer.results.store import SCHEMA
from ring.durations import duration

__all__ = ["EXPORT_FORMATS", "Incomplete", "InputRead", "MergeSummary", "export_paths", "export_select", "merge",
           "ring_inputs"]  # Incomplete and InputRead: peer.results.mergeinputs's, re-exported

ITEMS_PREFIX = "items_"
#: Tables merged as distinct rows.
DISTINCT_TABLES = ("links", "pid_trace", "fetches")
#: Columns every ``items_*`` table starts with.
ITEMS_KEY = ("url", "fetched_at", "peer")
#: --export's extensions and DuckDB's COPY options for them.
EXPORT_FORMATS = {".jsonl": "FORMAT json", ".ndjson": "FORMAT json", ".csv": "FORMAT csv, HEADER",
                  ".parquet": "FORMAT parquet"}


@dataclass(frozen=True, slots=True)
class MergeSummary:
    """What a merge wrote: the figures its summary prints."""

    output: Path
    inputs: tuple[Path, ...]
    snapshots: tuple[Path, ...]  # inputs held open by a live peer, read from a copy
    rows_in: int  # page rows read from every input
    pages: int
    hosts: int
    statuses: tuple[tuple[int | None, int], ...]  # (status, pages); None: no answer
    peers: tuple[tuple[str | None, int], ...]  # (peer, pages)
    first: datetime | None
    last: datetime | None
    tables: tuple[tuple[str, int], ...]  # other tables written, with their rows
    parquet: tuple[Path, ...]
    exports: tuple[Path, ...] = ()
    # Rows recorded without a request (robots exclusions...), by error; "pages"
    # above counts them, as one row per URL, and the line says how many.
    not_requested: tuple[tuple[str | None, int], ...] = ()
    stats: Path | None = None  # the cluster's stats.json, when inputs had theirs
    stats_from: int = 0  # peers' stats.json summed into it
    cdxj: MergedIndex | None = None  # the peers' WARC indexes merged, when they had some
    read: tuple[InputRead, ...] = ()  # what was read of each input, in order
    wacz: WaczSummary | None = None  # the WACZ package written (--wacz)

    def lines(self) -> list[str]:
        """The human summary, one figure a line."""
        out = [f"merged {len(self.inputs)} file(s) into {self.output}",
               *(f"input      {r.line()}" for r in self.read),
               f"pages      {self.pages:,} ({self.rows_in:,} rows read, "
               f"{self.rows_in - self.pages:,} duplicates dropped)",
               f"hosts      {self.hosts:,}"]
        if self.not_requested:
            n = sum(k for _, k in self.not_requested)
            # After the pages line it qualifies (the input lines come before it).
            out.insert(2 + len(self.read), f"fetched    {self.pages - n:,}; not requested {n:,} ("
                       + ", ".join(f"{e} {k:,}" for e, k in self.not_requested) + ")")
        if self.statuses:
            out.append("status     " + "  ".join(
                f"{'no answer' if s is None else s}: {n:,}" for s, n in self.statuses))
        if self.peers:
            out.append("peers      " + "  ".join(f"{p}: {n:,}" for p, n in self.peers))
        if self.first is not None and self.last is not None:
            out.append(f"time span  {self.first:%Y-%m-%d %H:%M:%S} .. {self.last:%Y-%m-%d %H:%M:%S} UTC "
                       f"({duration((self.last - self.first).total_seconds())})")
        if self.tables:
            out.append("tables     " + "  ".join(f"{t}: {n:,}" for t, n in self.tables))
        if self.parquet:
            out.append(f"parquet    {len(self.parquet)} file(s) in {self.parquet[0].parent}")
        if self.exports:
            out.append("exported   " + "  ".join(str(p) for p in self.exports))
        if self.stats is not None:
            out.append(f"stats      {self.stats} (the sum of {self.stats_from} peer(s)' stats.json)")
        if self.cdxj is not None:
            out.append(f"warc index {self.cdxj.path} ({self.cdxj.lines:,} captures from {self.cdxj.files} .cdxj file(s))")
        if self.wacz is not None:
            out.append(self.wacz.line())
        return out


# ---------------------------------------------------------------------------
# Finding the inputs
# ---------------------------------------------------------------------------


def ring_inputs(ring: str | Path, warn: Callable[[str], None]) -> list[Path]:
    """Every listed peer's data_dir that holds a results file; ``warn`` is told of the others.

    Raises ConfigError for a bad cluster.toml, or when no peer has a file.
    """
    cfg = load_config(ring)
    found = []
    for spec in cfg.peers:
        path = DataDir(cfg.data_dir(spec.id)).results
        if path.is_file():
            found.append(path.parent)
        else:
            warn(f"warning: peer {spec.id}: no results file at {path}; skipped")
    if not found:
        raise ConfigError(str(cfg.path), "", f"none of its {len(cfg.peers)} peer(s) has a results file "
                          f"(<data_dir>/{RESULTS_NAME}); has the crawl run?")
    return found


# ---------------------------------------------------------------------------
# Merging
# ---------------------------------------------------------------------------


def export_paths(pattern: Path, tables: Sequence[str]) -> list[Path]:
    """The file of each table for ``--export PATTERN`` (module docstring); ConfigError if the
    extension is not one of :data:`EXPORT_FORMATS`."""
    suffix = pattern.suffix.lower()
    if suffix not in EXPORT_FORMATS:
        raise ConfigError(str(pattern), "--export", "expected a file name ending in "
                          + ", ".join(EXPORT_FORMATS) + " (e.g. out/{table}.jsonl)")
    name = pattern.name
    if "{table}" in name:
        return [pattern.with_name(name.replace("{table}", t)) for t in tables]
    return [pattern if t == "pages" else pattern.with_name(f"{name[: -len(suffix)]}.{t}{pattern.suffix}")
            for t in tables]


def export_select(con: duckdb.DuckDBPyConnection, table: str, suffix: str) -> str:
    """The query ``--export`` writes ``table`` from, for a file ending in ``suffix`` (module docstring)."""
    cols = con.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ? "
                       "AND schema_name = 'main' AND database_name = current_database() ORDER BY column_index", [table]).fetchall()
    csv = suffix.lower() == ".csv"
    out = []
    for name, kind in cols:
        q = quote(name)
        if kind == "UBIGINT":
            out.append(f"lpad(lower(hex({q})), 16, '0') AS {q}")
        elif csv and (kind.endswith("]") or kind.startswith(("STRUCT", "MAP", "UNION"))):
            out.append(f"CAST(to_json({q}) AS VARCHAR) AS {q}")
        else:
            out.append(q)
    return f"SELECT {', '.join(out)} FROM {quote(table)}"


def merge(inputs: Sequence[Path], output: Path, *, force: bool = False,
          parquet: Path | None = None, export: Path | None = None,
          warc_dirs: Sequence[Path] | None = None, strict: bool = False,
          wacz: Path | None = None) -> MergeSummary:
    """Merge ``inputs`` (data directories or results files) into the DuckDB file ``output``.

    ``wacz``: also package the WARC files and the merged index there (WACZ 1.1.1).

    Raises StateError for an input that cannot be read (naming it),
    ConfigError for a refused output (a ``wacz`` with no WARC index to
    package among them), and with ``strict`` :class:`Incomplete`
    for an input warned about; nothing is written in each case.
    """
    output = Path(output)
    sources = check_inputs(inputs)
    _check_output(output, [s.results for s in sources if s.results is not None], force)
    if parquet is not None and parquet.exists() and not parquet.is_dir():
        raise ConfigError(str(parquet), "--parquet", "is a file, expected a directory")
    try:
        work = Path(tempfile.mkdtemp(prefix=f".{output.name}.", suffix=".merge", dir=output.parent))
    except OSError as exc:
        raise StateError(f"{output.parent}: cannot write here: {exc.strerror or exc}") from None
    con = None
    try:
        con = duckdb.connect(str(work / "merged.duckdb"))
        reads: list[InputRead] = []
        files: list[Path] = []  # what each attached database is called in errors
        aliases: list[str] = []
        for i, src in enumerate(sources):
            read, attached = read_input(con, i, src, work)
            reads.append(read)
            for alias, label in attached:
                aliases.append(alias)
                files.append(label)
        if strict and any(r.warnings for r in reads):
            raise Incomplete(reads)
        snapshots = [r.results for r in reads if r.snapshot and r.results is not None]
        layout = [tables(con, a) for a in aliases]
        plan = _plan(files, layout)
        targets = tuple(parquet / f"{t}.parquet" for t in plan) if parquet is not None else ()
        exported = [t for t in plan if t == "pages" or t.startswith(ITEMS_PREFIX)]
        exports = tuple(export_paths(export, exported)) if export is not None else ()
        if exports and not exports[0].parent.is_dir():
            # As Scrapy's feed exports do: the directory of the export is made.
            try:
                exports[0].parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ConfigError(str(export), "--export", f"cannot create directory {exports[0].parent}: "
                                  f"{exc.strerror or exc}") from None
        stats_in = list(dict.fromkeys(r.stats.resolve() for r in reads if r.stats is not None))
        stats_out = output.with_name(output.stem + ".stats.json") if stats_in else None
        cdxj_out = output.with_name(output.stem + ".cdxj")
        folders = [s.folder / "warc" for s in sources] if warc_dirs is None else list(warc_dirs)
        indexed = (cdxj_out,) if any(d.is_dir() and any(d.glob("*.cdxj")) for d in folders) else ()
        packed = (Path(wacz),) if wacz is not None else ()
        if packed and not indexed:
            raise ConfigError(str(wacz), "--wacz", "the inputs have no WARC files to package "
                              "([warc] enabled = true writes them)")
        if packed and not packed[0].parent.is_dir():
            raise ConfigError(str(wacz), "--wacz", f"directory {packed[0].parent} does not exist")
        if not force and (clash := next((t for t in (*targets, *exports, *indexed, *packed) if t.exists()), None)):
            raise ConfigError(str(clash), "", "exists; pass --force to overwrite it")
        rows_in = _build(con, aliases, layout, plan)
        summary = _summarise(con, output, [r.results for r in reads if r.results is not None],
                             snapshots, rows_in, [t for t in plan if t != "pages"], targets)
        if parquet is not None:
            _export(con, list(plan), parquet)
        for table, path in zip(exported, exports):
            _copy_out(con, table, path)
        if stats_out is not None:
            _write_stats(stats_in, stats_out)
        cdxj = merge_indexes(folders, cdxj_out)
        package = None
        if wacz is not None and cdxj is not None:
            titles = dict(con.execute("SELECT url, title FROM pages WHERE status = 200 AND title IS NOT NULL")
                          .fetchall()) if "pages" in plan else {}
            package = write_wacz(Path(wacz), warc_files(folders), cdxj.path, titles=titles,
                                 title=Path(wacz).stem)
        summary = dataclasses.replace(summary, exports=exports, stats=stats_out,
                                      stats_from=len(stats_in), cdxj=cdxj, read=tuple(reads), wacz=package)
        con.close()
        con = None
        os.replace(work / "merged.duckdb", output)
        # A write-ahead log left by an earlier file of that name would be
        # replayed onto this one the next time it is opened.
        Path(f"{output}.wal").unlink(missing_ok=True)
        return summary
    except duckdb.Error as exc:
        raise StateError(f"{output}: merge failed: {first_line(exc)}") from None
    except OSError as exc:
        raise StateError(f"{output}: merge failed: {exc}") from None
    finally:
        if con is not None:
            con.close()
        shutil.rmtree(work, ignore_errors=True)


def _check_output(output: Path, files: list[Path], force: bool) -> None:
    if output.resolve() in {f.resolve() for f in files}:
        raise ConfigError(str(output), "-o", "is also an input; write the merge to another file")
    if output.is_dir():
        raise ConfigError(str(output), "-o", "is a directory, expected a file name")
    if output.exists() and not force:
        raise ConfigError(str(output), "", "exists; pass --force to overwrite it")
    if not output.parent.is_dir():
        raise ConfigError(str(output), "-o", f"directory {output.parent} does not exist")


def _plan(files: list[Path], layout: list[Layout]) -> dict[str, dict[str, str]]:
    """The output tables and their columns, checked against every input."""
    plan: dict[str, dict[str, str]] = {"pages": dict(SCHEMA["pages"])}
    for path, tables in zip(files, layout):
        if "pages" not in tables:
            raise StateError(f"{path}: has no pages table; is it a ringcrawl results file?")
        for table, cols in tables.items():
            if table in SCHEMA:
                want = dict(SCHEMA[table])
                # An older build's file lacks the columns added since at the
                # end; they are NULL in its rows (union() below).
                if list(cols.items()) != list(want.items())[:len(cols)]:
                    have = ", ".join(f"{c} {t}" for c, t in cols.items())
                    raise StateError(f"{path}: table {table} has columns ({have}), not ringcrawl's "
                                     f"({', '.join(f'{c} {t}' for c, t in want.items())})")
                plan.setdefault(table, want)
            elif table.startswith(ITEMS_PREFIX):
                if missing := [c for c in ITEMS_KEY if c not in cols]:
                    raise StateError(f"{path}: table {table} lacks column(s) {', '.join(missing)}; "
                                     f"an {ITEMS_PREFIX}* table starts with {', '.join(ITEMS_KEY)}")
                merged = plan.setdefault(table, {})
                for c, t in cols.items():
                    if merged.setdefault(c, t) != t:
                        first = next(f for f, ts in zip(files, layout) if ts.get(table, {}).get(c))
                        raise StateError(f"{path}: column {table}.{c} is {t}, but {merged[c]} in {first}; "
                                         "merge files of the same extraction rules")
    # pages first, then SCHEMA's order, then items_* by name: a stable layout.
    order = [*SCHEMA, *sorted(t for t in plan if t not in SCHEMA)]
    return {t: plan[t] for t in order if t in plan}


def _build(con: duckdb.DuckDBPyConnection, aliases: list[str], layout: list[Layout],
           plan: dict[str, dict[str, str]]) -> int:
    """Create and fill every planned table; the page rows read."""
    for table, cols in plan.items():
        con.execute(f"CREATE TABLE {quote(table)} (" + ", ".join(f"{quote(c)} {t}" for c, t in cols.items()) + ")")

    def union(table: str) -> str:
        cols = plan[table]
        parts = []
        for i, tables in enumerate(layout):
            if table in tables:
                have = tables[table]
                sel = ", ".join(quote(c) if c in have else f"NULL::{t} AS {quote(c)}" for c, t in cols.items())
                parts.append(f"SELECT {sel}, {i} AS _src FROM {aliases[i]}.main.{quote(table)}")
        return " UNION ALL ".join(parts)

    page_cols = list(plan["pages"])
    if "bodies" in plan:
        # The winners' input (_src) picks the body that belongs to the page kept.
        con.execute(f"CREATE TEMP TABLE _won AS {_latest(union('pages'), page_cols, keep_src=True)}")
        con.execute(f"INSERT INTO pages SELECT {_cols(page_cols)} FROM _won")
        con.execute(f"""INSERT INTO bodies
            SELECT url, body FROM (
                SELECT b.url, b.body, w._src IS NOT NULL AS won
                FROM ({union('bodies')}) b LEFT JOIN _won w ON b.url = w.url AND b._src = w._src)
            QUALIFY row_number() OVER (PARTITION BY url ORDER BY won DESC, body NULLS LAST) = 1""")
        con.execute("DROP TABLE _won")
    else:
        con.execute(f"INSERT INTO pages {_latest(union('pages'), page_cols, keep_src=False)}")
    for table, cols in plan.items():
        if table in DISTINCT_TABLES:
            con.execute(f"INSERT INTO {table} SELECT DISTINCT {_cols(cols)} FROM ({union(table)})")
        elif table.startswith(ITEMS_PREFIX):
            con.execute(f"INSERT INTO {quote(table)} {_latest(union(table), list(cols), keep_src=False)}")
    return sum(con.execute(f"SELECT count(*) FROM {a}.main.pages").fetchone()[0]  # type: ignore[index]
               for a in aliases)


def _latest(union: str, cols: list[str], *, keep_src: bool) -> str:
    """One row per url: newest fetched_at, then peer, then every other column.

    The last key, the input's index, only ever separates identical rows.
    """
    rest = [c for c in cols if c not in ITEMS_KEY]
    order = ", ".join(["fetched_at DESC NULLS LAST", "peer NULLS LAST",
                       *(f"{quote(c)} NULLS LAST" for c in rest), "_src"])
    return (f"SELECT {_cols(cols)}{', _src' if keep_src else ''} FROM ({union}) "
            f"QUALIFY row_number() OVER (PARTITION BY url ORDER BY {order}) = 1")


def _summarise(con: duckdb.DuckDBPyConnection, output: Path, files: list[Path], snapshots: list[Path],
               rows_in: int, others: list[str], parquet: tuple[Path, ...]) -> MergeSummary:
    def one(sql: str) -> tuple:
        return con.execute(sql).fetchone()  # type: ignore[return-value]

    pages, hosts, first, last = one("SELECT count(*), count(DISTINCT host), min(fetched_at), "
                                    "max(fetched_at) FROM pages")
    return MergeSummary(
        output=output, inputs=tuple(files), snapshots=tuple(snapshots), rows_in=rows_in,
        pages=pages, hosts=hosts, first=first, last=last,
        statuses=tuple(con.execute("SELECT status, count(*) FROM pages GROUP BY status "
                                   "ORDER BY status NULLS LAST").fetchall()),
        peers=tuple(con.execute("SELECT peer, count(*) FROM pages GROUP BY peer "
                                "ORDER BY peer NULLS LAST").fetchall()),
        tables=tuple((t, one(f"SELECT count(*) FROM {quote(t)}")[0]) for t in others),
        parquet=parquet,
        # No request, no status and no measured time (peer/core/run/stats.py, scripts/report.py).
        not_requested=tuple(con.execute(
            "SELECT error, count(*) FROM pages WHERE status IS NULL AND coalesce(elapsed_ms, 0) = 0 "
            "GROUP BY error ORDER BY 2 DESC, 1 NULLS LAST").fetchall()),
    )


def _export(con: duckdb.DuckDBPyConnection, tables: list[str], directory: Path) -> None:
    """``directory/<table>.parquet`` for each table, each written whole then renamed."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StateError(f"{directory}: cannot create the parquet directory: {exc.strerror or exc}") from None
    for table in tables:
        tmp = directory / f".{table}.parquet.tmp"
        con.execute(f"COPY {quote(table)} TO {_lit(tmp)} (FORMAT parquet)")
        os.replace(tmp, directory / f"{table}.parquet")


def _copy_out(con: duckdb.DuckDBPyConnection, table: str, path: Path) -> None:
    """One table to ``path`` in the format of its extension, written whole then renamed."""
    tmp = path.with_name(f".{path.name}.tmp")
    con.execute(f"COPY ({export_select(con, table, path.suffix)}) TO {_lit(tmp)} "
                f"({EXPORT_FORMATS[path.suffix.lower()]})")
    os.replace(tmp, path)


def _write_stats(inputs: list[Path], output: Path) -> None:
    docs = []
    for path in inputs:
        try:
            docs.append(json.loads(path.read_text()))
        except (OSError, ValueError) as exc:
            raise StateError(f"{path}: cannot read stats ({exc})") from None
    tmp = output.with_name(f".{output.name}.tmp")
    tmp.write_text(json.dumps(sum_stats(docs), indent=1) + "\n")
    os.replace(tmp, output)


def _cols(cols: Iterable[str]) -> str:
    return ", ".join(map(quote, cols))


def _lit(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"
