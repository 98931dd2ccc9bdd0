"""What ``ringcrawl-merge`` reads of each input: a data directory whole, or a results file.

A part of :mod:`peer.results.merge` (whose docstring states the rules an
operator sees: "Inputs", "What it read, and --strict", "Live peers"). Each
input is resolved to its results file, crawl state and stats.json
(:func:`check_inputs`), then attached to the merge's DuckDB connection
(:func:`read_input`): the results file read-only (a running peer's from a
copy, :func:`attach`), which replays a write-ahead log beside it in memory
and leaves the files as they are, and the rows only the journal held as an
in-memory database of their own (``peer.state.readcopy.journal_rows``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from peer.core.run.layout import RESULTS_NAME, STATE_NAME
from peer.core.run.stats import STATS_FILE
from peer.errors import ConfigError, StateError, first_line
from peer.results.store import SCHEMA, PageRow, page_cells
from peer.state.readcopy import journal_rows

__all__ = ["COPY_TRIES", "Incomplete", "InputRead", "Layout", "Source", "attach", "check_inputs",
           "read_input", "tables"]

# A live file is copied again if it changed while being copied (a checkpoint
# mid-copy tears the copy); after this many tries the last copy is used.
COPY_TRIES = 3

Layout = dict[str, dict[str, str]]  # table -> column -> type, of one input


@dataclass(frozen=True, slots=True)
class InputRead:
    """What the merge read of one input (peer.results.merge's docstring, "What it read")."""

    given: Path                  # as named: a data directory or a results file
    results: Path | None         # the results file read; None: none there, or skipped
    pages: int                   # page rows it gave, the log's and the journal's included
    wal: bool = False            # a write-ahead log beside the file was replayed
    journal: int = 0             # rows only its crawl state's journal held
    stats: Path | None = None    # its stats.json, when found
    snapshot: bool = False       # held by a running peer: a copy was read
    warnings: tuple[str, ...] = ()  # why it is not as a clean stop leaves it (--strict fails)

    def line(self) -> str:
        """One line of the summary: the path and what came from where."""
        parts = [f"{self.pages:,} pages"]
        if self.results is None:
            parts = ["skipped"]
        elif self.results != self.given:  # a data directory: its file named
            parts[0] += f" from {self.results.name}"
        if self.wal:
            parts.append("write-ahead log replayed")
        if self.journal:
            parts.append(f"{self.journal:,} of them from the journal of {STATE_NAME}/")
        if self.snapshot:
            parts.append("a copy of a running peer's file")
        parts.append(f"stats.json {'read' if self.stats is not None else 'not found'}")
        return f"{self.given}: " + "; ".join(parts)


class Incomplete(StateError):
    """``strict`` and an input was warned about: nothing written; ``reads`` says what was found."""

    def __init__(self, reads: Sequence[InputRead]) -> None:
        self.reads = tuple(reads)
        bad = [r for r in reads if r.warnings]
        super().__init__(f"--strict: {len(bad)} of {len(reads)} input(s) not as a clean stop leaves "
                         "them (warnings above); nothing written")


@dataclass(frozen=True, slots=True)
class Source:
    """An input resolved: where its results, log, crawl state and stats are."""

    given: Path
    results: Path | None
    state: Path | None
    stats: Path | None

    @property
    def folder(self) -> Path:
        """The directory its other files (warc/) are in."""
        return self.given if self.given.is_dir() else self.given.parent


def check_inputs(inputs: Sequence[Path]) -> list[Source]:
    if not inputs:
        raise ConfigError("merge", "", "no input files")
    sources: list[Source] = []
    seen = set()
    for raw in inputs:
        path = Path(raw)
        if not path.exists():
            raise StateError(f"{path}: no such file")
        if path.is_dir():
            src = _directory(path)
        elif path.is_file():
            # A data_dir's own file brings its crawl state; a copy elsewhere
            # (p1.duckdb) has none beside it that is its own.
            state = path.parent / STATE_NAME if path.name == RESULTS_NAME else None
            stats = path.parent / STATS_FILE
            src = Source(path, path, state if state is not None and state.is_dir() else None,
                          stats if stats.is_file() else None)
        else:
            raise StateError(f"{path}: is not a file, expected a results file (.duckdb) or a "
                             "peer's data directory")
        if src.results is not None and not os.access(src.results, os.R_OK):
            raise StateError(f"{src.results}: cannot be read (permission denied)")
        key = (src.results or path).resolve()
        if key not in seen:  # the same file twice adds nothing
            seen.add(key)
            sources.append(src)
    return sources


def _directory(path: Path) -> Source:
    """A data directory (or a copy of one) as an input; StateError if it is none."""
    results = path / RESULTS_NAME
    state = path / STATE_NAME
    stats = path / STATS_FILE
    if not results.is_file():
        raise StateError(f"{path}: holds no {RESULTS_NAME}: expected a peer's data directory "
                         "(or a results file)")
    return Source(path, results, state if state.is_dir() else None,
                   stats if stats.is_file() else None)


def read_input(con: duckdb.DuckDBPyConnection, i: int, src: Source,
                work: Path) -> tuple[InputRead, list[tuple[str, Path]]]:
    """Attach what ``src`` holds: its results file as ``in<i>``, its journal's rows as ``j<i>``.

    Returns what was read and the (alias, name in errors) of each database attached.
    """
    assert src.results is not None
    path = src.results
    wal = Path(f"{path}.wal")
    warnings: list[str] = []
    alias = f"in{i}"
    snapshot = attach(con, alias, path, work)
    replayed = not snapshot and wal.is_file() and wal.stat().st_size > 0
    if replayed:
        warnings.append(f"{path}: its write-ahead log {wal.name} ({wal.stat().st_size:,} bytes) was "
                        "replayed: the peer did not stop cleanly; the rows are merged (the files are "
                        f"left as they are), but a copy of {path.name} without it would lack them")
    attached = [(alias, path)]
    found = tables(con, alias)
    if not found:
        # What a peer killed before its first checkpoint leaves: DuckDB had
        # written its tables and rows to the log only.
        con.execute(f"DETACH {alias}")
        why = ("and its write-ahead log holds none" if replayed else
               f"its rows are in {wal.name}, which was not copied with it")
        warnings.append(f"{path}: has no tables ({why}); skipped: copy the peer's whole data "
                        "directory and merge that (docs/operations.md, Merging the results)")
        return InputRead(src.given, None, 0, replayed, 0, src.stats, snapshot, tuple(warnings)), []
    have = "pages" in found
    pages = con.execute(f"SELECT count(*) FROM {alias}.main.pages").fetchone()[0] if have else 0  # type: ignore[index]
    journal = 0
    if src.state is not None:
        try:
            journaled = journal_rows(src.state)
        except StateError as exc:
            journaled = None
            warnings.append(f"{exc}; the rows only its journal held are not merged")
        if journaled is not None and journaled[1] and have:
            journal = _attach_journal(con, f"j{i}", alias, *journaled)
            if journal:
                attached.append((f"j{i}", src.state))
                warnings.append(f"{src.state}: {journal:,} page row(s) only its journal held were "
                                "added: the peer did not stop cleanly")
    if have and src.stats is not None:
        later = _rows_after(con, [a for a, _ in attached], src.stats)
        if later:
            warnings.append(f"{src.stats}: is an earlier run's ({later[1]}): {later[0]:,} page row(s) "
                            "were fetched after it (the peer did not stop cleanly since); its "
                            "figures are summed but do not count them")
    if have and pages + journal == 0:
        warnings.append(f"{path}: 0 page rows")
    return InputRead(src.given, path, pages + journal, replayed, journal, src.stats, snapshot,
                     tuple(warnings)), attached


def _rows_after(con: duckdb.DuckDBPyConnection, aliases: list[str], stats: Path) -> tuple[int, str] | None:
    """(page rows fetched after ``stats``' finish_time, that time), or None if none or unreadable.

    A peer writes stats.json at each clean stop, so one killed in a later run
    leaves the earlier run's beside rows it never counted.
    """
    try:
        finished = json.loads(stats.read_text()).get("finish_time")
        end = datetime.fromisoformat(finished).astimezone(UTC).replace(tzinfo=None)
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    n = sum(con.execute(f"SELECT count(*) FROM {a}.main.pages WHERE fetched_at > ?", [end]).fetchone()[0]  # type: ignore[index]
            for a in aliases)
    return (int(n), str(finished)) if n else None


def _attach_journal(con: duckdb.DuckDBPyConnection, alias: str, results: str, peer: str,
                    rows: list[list[Any]]) -> int:
    """The journal's rows missing from ``results``'s pages, as ``alias``.pages in memory; how many."""
    cells = []
    for values in rows:
        try:
            cells.append(page_cells(PageRow.from_values(values), peer))
        except TypeError:
            continue  # another build's columns: adopt sends its URL to be fetched again
    if not cells:
        return 0
    con.execute(f"ATTACH ':memory:' AS {alias}")
    con.execute(f"CREATE TABLE {alias}.main.pages ("
                + ", ".join(f"{n} {t}" for n, t in SCHEMA["pages"]) + ")")
    app = con.appender(f"{alias}.main.pages")  # the appender, as the store writes its rows
    app.append_rows(cells)
    app.flush()
    con.execute(f"DELETE FROM {alias}.main.pages WHERE url IN (SELECT url FROM {results}.main.pages)")
    n = con.execute(f"SELECT count(*) FROM {alias}.main.pages").fetchone()[0]  # type: ignore[index]
    if not n:
        con.execute(f"DETACH {alias}")
    return int(n)


def attach(con: duckdb.DuckDBPyConnection, alias: str, path: Path, work: Path) -> bool:
    """Attach ``path`` read-only as ``alias``; True when a copy had to be read."""
    try:
        con.execute(f"ATTACH {_lit(path)} AS {alias} (READ_ONLY)")
        return False
    except duckdb.Error as exc:
        why = first_line(exc)
        if "lock" not in why.lower():
            if "not a valid DuckDB database" in why:
                raise StateError(f"{path}: is not a DuckDB database") from None
            raise StateError(f"{path}: cannot be opened: {why}") from None
    holder = m.group(0) if (m := re.search(r"PID \d+", why)) else "another process"
    copy = work / alias / path.name
    copy.parent.mkdir()
    try:
        _copy_live(path, copy)
        con.execute(f"ATTACH {_lit(copy)} AS {alias} (READ_ONLY)")
    except (OSError, duckdb.Error) as exc:
        why2 = first_line(exc) if isinstance(exc, duckdb.Error) else str(exc)
        raise StateError(f"{path}: is held open by a running peer ({holder}) and a copy of it "
                         f"cannot be read ({why2}); stop that peer, then merge again") from None
    return True


def _copy_live(src: Path, dst: Path) -> None:
    """Copy a file a writer holds open, with its write-ahead log."""
    wal, dst_wal = Path(f"{src}.wal"), Path(f"{dst}.wal")

    def state() -> tuple[tuple[int, int] | None, ...]:
        return tuple((s.st_size, s.st_mtime_ns) if (s := _stat(p)) else None for p in (src, wal))

    for _ in range(COPY_TRIES):
        before = state()
        shutil.copyfile(src, dst)
        dst_wal.unlink(missing_ok=True)
        if wal.exists():
            try:
                shutil.copyfile(wal, dst_wal)
            except FileNotFoundError:  # checkpointed away meanwhile
                pass
        if state() == before:
            return


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except FileNotFoundError:
        return None


def tables(con: duckdb.DuckDBPyConnection, alias: str) -> Layout:
    rows = con.execute(
        "SELECT table_name, column_name, data_type FROM duckdb_columns() "
        "WHERE database_name = ? AND schema_name = 'main' ORDER BY table_name, column_index",
        [alias]).fetchall()
    out: Layout = {}
    for table, column, type_ in rows:
        out.setdefault(table, {})[column] = type_
    return out




def _lit(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"
