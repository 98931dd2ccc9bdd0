"""The results file: one DuckDB database per peer, written in batches off the loop.

The tables and their columns are ``peer.results.schema``'s: they are
created when absent; an existing file is opened and appended to (the engine
decides whether to refuse one), an older build's file gets the columns added
since at the end of its tables, and a file whose columns differ otherwise is
refused.

**Why this shape.** DuckDB calls block, so every one of them runs in a worker
thread (``trio.to_thread.run_sync``) under this store's own
``CapacityLimiter(1)``: a DuckDB connection is not meant for concurrent use
from several threads, and the limiter makes the calls one at a time, in
order (trio's limiters are FIFO). Rows are appended with DuckDB's appender
(``con.appender(table).append_rows``), never ``executemany``: measured
at 543 rows/s with ``executemany``; through this class the appender
wrote 56-78k page rows/s on the 2-core test box (100k rows, batches of 2000
to 100k, open and close included; converting ``fetched_at`` to a datetime is
~15% of it). Each flush is one transaction, so a batch is in the file
entirely or not at all.

``add_page``/``add_pid`` only append to in-memory lists (the crawl loop never
waits on the disk); :meth:`ResultStore.run` flushes every ``interval`` or as
soon as a batch is full, and once more, shielded from cancellation, when it is
cancelled. A write, once started, is shielded too: cancelling a flush never
loses its rows. ``async with`` flushes and closes the file (which checkpoints
the write-ahead log), so after a clean exit another process can read it.
``run`` also checkpoints every ``checkpoint_every`` seconds (the engine passes
``crawl.results_checkpoint``), and opening checkpoints the tables made: after
a ``kill -9`` the file alone holds every row but those of the last interval,
which are in ``pages.duckdb.wal`` beside it (and in the journal's records).

DuckDB errors are translated here into :class:`~peer.errors.StateError`,
naming the file; a file another process holds open (DuckDB takes an
exclusive lock for a writer) is :class:`~peer.errors.LockedError`, naming
that process.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

import duckdb
import trio

from peer.errors import LockedError, StateError, StorageError, first_line
from peer.core.frontier.frontier import PidSample
# The schema is its own module; SCHEMA and PageRow are re-exported here, where
# the engine, the scripts and the tests have always found them.
from peer.results.fetches import LAST_VISITS_CAPTURE_SQL
from peer.results.schema import ITEM_COLUMNS, PAGE_COLUMNS, SCHEMA, PageRow, quote

__all__ = ["PageRow", "ResultStore", "StoreStats", "SCHEMA", "check_not_held", "page_cells"]

# A batch is also full at this many link rows or body bytes, so store_links
# (~100 links a page) and store_body (up to max_body a page) stay bounded.
LINKS_PER_BATCH_ROW = 64
MAX_BATCH_BODY_BYTES = 32 * 1024 * 1024

_EPOCH = datetime(1970, 1, 1)
# What the appender raises for a value it cannot convert; the row is not taken.
_BAD_VALUE = (duckdb.InvalidInputException, duckdb.ConversionException, TypeError, ValueError)


@dataclass(frozen=True, slots=True)
class StoreStats:
    """Rows written so far, and what waits in memory."""

    pages: int
    links: int
    bodies: int
    pid: int
    flushes: int
    buffered: int  # page rows not yet written
    dropped: int  # rows DuckDB refused even after repair (see _append)
    items: int = 0  # rows written to items_* tables


# DuckDB 2.0's text: 'IO Error: Could not set lock on file "...": Conflicting
# lock is held in /usr/bin/python3.11 (PID 9359). See also ...'. Only the
# word "lock" is relied on; the PID is a bonus when the wording has one.
_LOCK = re.compile(r"\block\b", re.IGNORECASE)
_LOCK_PID = re.compile(r"\bPID\s+(\d+)\b")


#: Each URL's latest row, when it is a failure of some kind (ResultStore.failed_pages).
_FAILED_PAGES_SQL = """
SELECT url, host, depth, status, error FROM (
    SELECT url, host, depth, status, error FROM pages
    QUALIFY row_number() OVER (PARTITION BY url ORDER BY fetched_at DESC) = 1)
WHERE error IS NOT NULL OR status = 429 OR status NOT BETWEEN 200 AND 499
ORDER BY depth, url"""


def _locked(path: Path, message: str) -> LockedError | None:
    """The LockedError for DuckDB's ``message``, or None if it is not about a lock."""
    if not _LOCK.search(message.replace(str(path), "")):  # a directory may be called lock
        return None
    m = _LOCK_PID.search(message)
    pid = int(m[1]) if m else None
    who = f"process {pid}" if pid is not None else "another process"
    return LockedError(f"{path}: the results file is held open by {who}; another peer may be "
                       f"running with this data_dir: stop it first, or give this peer another "
                       f"data_dir", pid)


def _write_error(path: Path, what: str, exc: duckdb.Error) -> StateError:
    """The error of a failed write: a StorageError when the disk refused it.

    DuckDB raises ``IOException`` for what the operating system refused (its
    text ends with the OS's reason, "Read-only file system", "No space left on
    device"), ``FatalException`` once such a failure has invalidated the
    database, and a ``TransactionException`` naming the file it could not
    write when a commit's log write failed; anything else is the file's own
    fault.
    """
    if isinstance(exc, (duckdb.IOException, duckdb.FatalException)) or _OS_FAILURE.search(str(exc)):
        return StorageError(f"{path}: {what}: {first_line(exc)}")
    return StateError(f"{path}: {what}: {exc}")


# A commit whose log write failed is DuckDB 2.0's TransactionException: 'Failed
# to commit: Could not write file ".../pages.duckdb.wal": No space left on
# device' (measured on a full 1.2 MB tmpfs); the OS's words are what tell it
# from a transaction's own fault.
_OS_FAILURE = re.compile(r"Could not (?:write|open|create|truncate|sync|fsync)|No space left|"
                         r"Read-only file system|Input/output error|Disk quota exceeded")


def check_not_held(path: Path) -> None:
    """Raise LockedError if another process holds the results file ``path`` open.

    For ``--fresh``, before it deletes a data_dir: unlinking the files of a
    running peer succeeds on POSIX and would leave it writing to a deleted
    file. A read-only open takes DuckDB's shared lock, so it fails exactly
    when a writer holds the file, and changes nothing.
    """
    try:
        duckdb.connect(str(path), read_only=True).close()
    except duckdb.IOException as exc:
        err = _locked(path, str(exc))
        if err is not None:
            raise err from None
    except duckdb.Error:
        pass  # not a database (or a damaged one): nobody is writing it


def _ts(seconds: float) -> datetime | None:
    """Epoch seconds -> naive UTC datetime (microseconds), None if not a time."""
    try:
        return _EPOCH + timedelta(seconds=seconds)
    except (OverflowError, ValueError, TypeError):
        return None


_INT_RANGE = {"INTEGER": 2**31, "BIGINT": 2**63}


def _repair(row: tuple[Any, ...], types: tuple[str, ...]) -> tuple[Any, ...]:
    """A row DuckDB refused: lone surrogates replaced, out-of-range integers nulled."""
    out = []
    for v, t in zip(row, types):
        if isinstance(v, str):
            v = v.encode("utf-8", "replace").decode("utf-8")
        elif isinstance(v, int) and t in _INT_RANGE and not -_INT_RANGE[t] <= v < _INT_RANGE[t]:
            v = None
        out.append(v)
    return tuple(out)


def _clean(v: Any) -> Any:
    if isinstance(v, str):
        return v.encode("utf-8", "replace").decode("utf-8")
    if isinstance(v, list):
        return [_clean(x) for x in v]
    return v


#: The columns of ``pages`` held as epoch seconds until written, and the peer's.
_TIMES = tuple(i for i, (_, kind) in enumerate(SCHEMA["pages"]) if kind == "TIMESTAMP")
_PEER = PAGE_COLUMNS.index("peer")


def page_cells(r: PageRow, peer: str) -> tuple[Any, ...]:
    """``r``'s cells as the appender takes them: times as datetimes, "" as the store's peer."""
    # Any: a time's cell becomes the datetime DuckDB's appender takes.
    cells: list[Any] = r.values()
    for i in _TIMES:
        if cells[i] is not None:
            cells[i] = _ts(cells[i])
    if not cells[_PEER]:
        cells[_PEER] = peer
    return tuple(cells)


#: The sitemap hint columns of ``pages`` (peer.core.sitemaps.jobs rule 4): what a sitemap said of
#: the URL, not of one visit, so a revisit's row keeps them when it has none of its own.
_HINTS = tuple(PAGE_COLUMNS.index(c) for c in ("sitemap_lastmod", "sitemap_priority", "sitemap_changefreq"))


def _keep_hints(pages: list[tuple[Any, ...]], old: Mapping[str, list[Any]]) -> list[tuple[Any, ...]]:
    """``pages`` with each row that has no sitemap hints given those of the row it replaces."""
    if not old:
        return pages
    out = []
    for cells in pages:
        hints = old.get(cells[0])
        if hints is not None and all(cells[i] is None for i in _HINTS):
            row = list(cells)
            for i, v in zip(_HINTS, hints):
                row[i] = v
            cells = tuple(row)
        out.append(cells)
    return out


class _Batch:
    __slots__ = ("pages", "links", "bodies", "pid", "items", "fetches", "replace", "hints", "verdicts")

    def __init__(self) -> None:
        self.pages: list[PageRow] = []
        self.links: list[tuple[str, str]] = []
        self.bodies: list[tuple[str, bytes]] = []
        self.pid: list[tuple[str, datetime | None, int, float, float, str]] = []
        self.items: dict[str, list[tuple[str, float, Mapping[str, Any]]]] = {}
        self.fetches: list[tuple[Any, ...]] = []
        self.replace: set[str] = set()   # revisited URLs: their older pages row goes
        # url -> (lastmod, priority, changefreq): a sitemap's hints for a row written before it was read
        self.hints: dict[str, tuple[datetime | None, float | None, str | None]] = {}
        # Corrected duplicate verdicts (peer.core.dedupe.held rule 6): url -> (duplicate_of, kind).
        self.verdicts: dict[str, tuple[str, str]] = {}

    def __bool__(self) -> bool:
        return bool(self.pages or self.links or self.bodies or self.pid or self.items or self.fetches
                    or self.hints or self.verdicts)


class ResultStore:
    """``data_dir/pages.duckdb`` of one peer; see the module docstring."""

    def __init__(self, path: Path, peer_id: str, *, store_links: bool, store_body: bool,
                 batch_rows: int = 2000,
                 item_tables: Mapping[str, tuple[tuple[str, str], ...]] | None = None,
                 store_fetches: bool = False) -> None:
        if batch_rows < 1:
            raise ValueError(f"batch_rows must be >= 1, not {batch_rows}")
        self.path = Path(path)
        self.peer_id = peer_id
        self.store_links = store_links
        self.store_body = store_body
        self.store_fetches = store_fetches
        self.batch_rows = batch_rows
        self._limiter = trio.CapacityLimiter(1)
        self._con: duckdb.DuckDBPyConnection | None = None
        self._appenders: dict[str, Any] = {}
        self._batch = _Batch()
        self._body_bytes = 0
        self._full = trio.Event()
        self._closed = False
        self._written = {"pages": 0, "links": 0, "bodies": 0, "pid_trace": 0, "items": 0, "fetches": 0}
        # items table -> its field columns: declared by the rules, or learnt
        # from a user function's rows (then grown by ALTER TABLE).
        self._item_cols: dict[str, list[tuple[str, str]]] = {
            t: list(cols) for t, cols in (item_tables or {}).items()}
        self._item_ready: set[str] = set()
        self._flushes = 0
        self._dropped = 0
        # The hand-off index: rows per host of ``pages``, buffered ones
        # included. A ring change asks it which hosts moved and reads only
        # their rows (page_urls(hosts)), never every row (module docstring).
        self._hosts: dict[str, int] = {}

    # -- lifecycle ---------------------------------------------------------------

    async def __aenter__(self) -> ResultStore:
        await trio.to_thread.run_sync(self._open, limiter=self._limiter)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        with trio.CancelScope(shield=True):
            try:
                await self.flush()
            finally:
                self._closed = True
                await trio.to_thread.run_sync(self._close, limiter=self._limiter)

    def _open(self) -> None:
        tables = ["pages", "pid_trace"]
        if self.store_links:
            tables.append("links")
        if self.store_body:
            tables.append("bodies")
        if self.store_fetches:
            tables.append("fetches")
        try:
            con = duckdb.connect(str(self.path))
        except duckdb.IOException as exc:
            raise _locked(self.path, str(exc)) or StateError(
                f"{self.path}: cannot open the results database: {exc}") from None
        except duckdb.Error as exc:
            raise StateError(f"{self.path}: cannot open the results database: {exc}") from None
        try:
            for table in tables:
                cols = SCHEMA[table]
                con.execute(f"CREATE TABLE IF NOT EXISTS {table} ("
                            + ", ".join(f"{n} {t}" for n, t in cols) + ")")
                query = ("SELECT column_name, data_type FROM information_schema.columns "
                         "WHERE table_schema = 'main' AND table_name = ? ORDER BY ordinal_position")
                found = con.execute(query, [table]).fetchall()
                if 0 < len(found) < len(cols) and [tuple(c) for c in found] == list(cols[:len(found)]):
                    # An older build's file: the columns added since go at the end.
                    for name, kind in cols[len(found):]:
                        con.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
                    found = con.execute(query, [table]).fetchall()
                if [tuple(c) for c in found] != list(cols):
                    have = ", ".join(f"{n} {t}" for n, t in found)
                    raise StateError(
                        f"{self.path}: table {table} has columns ({have}), not ringcrawl's; "
                        "move the file away or use another data_dir")
                self._appenders[table] = con.appender(table)
            # One pass over the host column when the file is opened, then kept
            # up to date by add_page: ~0.1 s at 1 M rows, once.
            self._hosts = dict(con.execute("SELECT host, count(*) FROM pages GROUP BY host").fetchall())
            # The tables into the file itself, not only its write-ahead log: a
            # copy of the file alone is a results file from the first second.
            con.execute("CHECKPOINT")
        except duckdb.Error as exc:
            con.close()
            raise StateError(f"{self.path}: cannot prepare the results tables: {exc}") from None
        except BaseException:
            con.close()
            raise
        self._con = con

    def _close(self) -> None:
        self._appenders.clear()
        if self._con is not None:
            con, self._con = self._con, None
            try:
                con.close()
            except duckdb.Error as exc:
                raise StateError(f"{self.path}: cannot close the results database: {exc}") from None

    # -- adding rows (non-blocking) ------------------------------------------------

    def add_page(self, row: PageRow, body: bytes | None = None, links: Sequence[str] = (),
                 replace: bool = False) -> None:
        """Queue a page row, with its body and links when those tables are kept.

        ``replace``: a revisit's row, which takes the place of the URL's
        earlier one (``pages`` keeps the latest visit; ``fetches`` every one).
        """
        if self._closed:
            raise StateError(f"{self.path}: results store is closed")
        b = self._batch
        b.pages.append(row)
        if replace:
            b.replace.add(row.url)
        else:
            self._hosts[row.host] = self._hosts.get(row.host, 0) + 1
        if self.store_links and links:
            src = row.url
            b.links.extend([(src, to) for to in links])
        if self.store_body and body is not None:
            b.bodies.append((row.url, body))
            self._body_bytes += len(body)
        if (len(b.pages) >= self.batch_rows
                or len(b.links) >= self.batch_rows * LINKS_PER_BATCH_ROW
                or self._body_bytes >= MAX_BATCH_BODY_BYTES):
            self._full.set()

    def add_hints(self, url: str, lastmod: float | None, priority: float | None, changefreq: str | None) -> None:
        """A sitemap's hints for ``url``, read after its row may have been written: the row's
        ``sitemap_*`` columns take them at the next flush (no row yet: nothing to do, the row
        brings them itself; peer.core.sitemaps.jobs rule 4)."""
        if self._closed:
            raise StateError(f"{self.path}: results store is closed")
        self._batch.hints[url] = (None if lastmod is None else _ts(lastmod), priority, changefreq)

    def reverdict(self, url: str, duplicate_of: str, kind: str) -> None:
        """Queue a correction of ``url``'s duplicate verdict: a better copy came after it
        (``peer.core.dedupe.held`` rule 6). Its row keeps every other column."""
        if self._closed:
            raise StateError(f"{self.path}: results store is closed")
        had = self._batch.verdicts.get(url)
        if had is None or had[1] != "exact" or kind == "exact":  # an exact correction is not undone
            self._batch.verdicts[url] = (duplicate_of, kind)

    def add_fetch(self, row: tuple[Any, ...]) -> None:
        """Queue one ``fetches`` row, its columns in peer.results.fetches' order (epoch floats for times)."""
        if self._closed:
            raise StateError(f"{self.path}: results store is closed")
        if self.store_fetches:
            self._batch.fetches.append(row)

    def add_pid(self, samples: Sequence[PidSample], setpoint: float | Callable[[str], float]) -> None:
        """Queue PID samples. Their ``window_end`` is on trio's clock (the
        frontier's time); it is stored as the wall-clock time it stands for.
        ``setpoint``: pages a window, or a host's (its ``[[site]]`` block's)."""
        if self._closed:
            raise StateError(f"{self.path}: results store is closed")
        offset = time.time() - trio.current_time()
        peer = self.peer_id
        of = setpoint if callable(setpoint) else (lambda _host: setpoint)
        self._batch.pid.extend(
            [(s.host, _ts(s.window_end + offset), s.n, s.delay, of(s.host), peer) for s in samples])
        if len(self._batch.pid) >= self.batch_rows:
            self._full.set()

    def add_item(self, table: str, url: str, fetched_at: float, row: Mapping[str, Any]) -> None:
        """Queue one extracted item (:func:`peer.core.page.items.extract_items`) for ``items_*``."""
        if self._closed:
            raise StateError(f"{self.path}: results store is closed")
        self._batch.items.setdefault(table, []).append((url, fetched_at, row))

    # -- writing -----------------------------------------------------------------

    async def flush(self) -> None:
        """Write everything queued so far, in a worker thread, as one transaction."""
        batch = self._batch
        if not batch:
            return
        self._batch = _Batch()
        self._body_bytes = 0
        self._full = trio.Event()
        # Shielded: the rows are taken, so the write must happen. A batch
        # costs milliseconds, which is all a cancellation waits.
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(self._write, batch, limiter=self._limiter)

    async def run(self, interval: float = 1.0, checkpoint_every: float = 0.0) -> None:
        """Flush every ``interval`` seconds or when a batch fills, until cancelled; and
        :meth:`checkpoint` every ``checkpoint_every`` seconds (0: never here)."""
        last = trio.current_time()
        try:
            while True:
                with trio.move_on_after(interval):
                    await self._full.wait()
                await self.flush()
                if checkpoint_every > 0 and trio.current_time() - last >= checkpoint_every:
                    await self.checkpoint()
                    last = trio.current_time()
        finally:
            with trio.CancelScope(shield=True):
                await self.flush()

    async def checkpoint(self) -> None:
        """Move the rows written so far from the write-ahead log into the file itself.

        DuckDB does so by itself only when the log passes 16 MiB
        (``checkpoint_threshold``) and at a clean close; in between, the rows
        of a peer killed with ``kill -9`` are only in ``pages.duckdb.wal``, and
        a copy of ``pages.duckdb`` alone lacks them (a short crawl's file had
        not even its ``pages`` table). Shielded, as a flush is.
        """
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(self._checkpoint, limiter=self._limiter)

    def _checkpoint(self) -> None:
        con = self._con
        if con is None:
            return
        try:
            con.execute("CHECKPOINT")
        except duckdb.Error as exc:
            raise _write_error(self.path, "cannot checkpoint results", exc) from None

    def hosts(self) -> dict[str, int]:
        """{host: page rows} of every row, buffered ones included: the hand-off index."""
        return dict(self._hosts)

    async def page_urls(self, hosts: Sequence[str] | None = None) -> list[tuple[str, str]]:
        """(url, host) of the page rows of ``hosts`` (None: all), buffered ones included.

        With ``hosts`` (a hand-off's moved hosts, from :meth:`hosts`) DuckDB
        filters the host column and builds only those rows: 0.19 s for 1/8 of
        1 M rows against 1.28 s for all of them (scripts/bench_seen.py
        --handoff). DuckDB 2.0's ART index is not used for this (its plan
        stays a sequential scan, measured), so there is none.
        """
        if hosts is not None and not hosts:
            return []
        await self.flush()
        return await trio.to_thread.run_sync(self._page_urls, hosts, limiter=self._limiter)

    def _page_urls(self, hosts: Sequence[str] | None = None) -> list[tuple[str, str]]:
        if hosts is None:
            return self._read("SELECT url, host FROM pages")
        return self._read("SELECT url, host FROM pages WHERE host IN (SELECT unnest(?))", [list(hosts)])

    async def failed_pages(self) -> list[tuple[str, str, int, int | None, str | None]]:
        """(url, host, depth, status, error) of each URL whose latest row holds an error or a
        status of 429 or outside 200-499: the candidates ``--retry-failed`` judges
        (peer/core/crawl/failedpages.py rule 1; a URL fetched fine since is not among them, rule 2)."""
        await self.flush()
        return await trio.to_thread.run_sync(self._read, _FAILED_PAGES_SQL, limiter=self._limiter)

    def _read(self, sql: str, params: list[Any] | None = None) -> list[Any]:
        """The rows of ``sql`` (in the writer's thread); a DuckDB error is a StateError naming the file."""
        con = self._con
        if con is None:
            raise StateError(f"{self.path}: results store is not open")
        try:
            return con.execute(sql, params).fetchall()
        except duckdb.Error as exc:
            raise StateError(f"{self.path}: cannot read results: {exc}") from None

    async def recent_starts(self, since: float) -> list[tuple[str, float]]:
        """(host, request start in epoch seconds) of the rows whose request started after ``since``.

        A row's start is ``fetched_at - elapsed_ms``: politeness counts a
        request when it starts, and a restarted peer seeds its per-host
        ceilings from these so a host sees no burst across the restart.
        """
        await self.flush()
        return await trio.to_thread.run_sync(self._recent_starts, since, limiter=self._limiter)

    async def last_visits(self) -> list[tuple[Any, ...]]:
        """Each URL's latest ``fetches`` row: (url, host, fetched_at, next_due (epoch s), interval_after,
        digest, etag, last_modified, visits, changes, the WARC record a revisit refers to packed as
        ``peer.core.warc.record.Refers.pack`` or None); [] without the table. A restarted
        continuous crawl schedules its pages from them (peer/core/revisit/recrawl.py)."""
        out: list[tuple[Any, ...]] = []
        async for rows in self.last_visit_batches():
            out += rows
        return out

    async def last_visit_batches(self, size: int = 50_000) -> AsyncIterator[list[tuple[Any, ...]]]:
        """:meth:`last_visits` in batches of ``size`` rows, so a restart of 10 M records never
        holds them all at once (the due queue takes the far ones to disk as they come)."""
        if not self.store_fetches:
            return
        await self.flush()
        cur = await trio.to_thread.run_sync(self._last_visits_cursor, limiter=self._limiter)
        try:
            while True:
                rows = await trio.to_thread.run_sync(self._fetch_some, cur, size, limiter=self._limiter)
                if not rows:
                    return
                yield rows
        finally:
            cur.close()

    def _last_visits_cursor(self) -> Any:
        con = self._con
        if con is None:
            raise StateError(f"{self.path}: results store is not open")
        try:
            # A cursor of its own: the writer's statements between batches leave it be.
            return con.cursor().execute(LAST_VISITS_CAPTURE_SQL)
        except duckdb.Error as exc:
            raise StateError(f"{self.path}: cannot read results: {exc}") from None

    def _fetch_some(self, cur: Any, size: int) -> list[tuple[Any, ...]]:
        try:
            return list(cur.fetchmany(size))
        except duckdb.Error as exc:
            raise StateError(f"{self.path}: cannot read results: {exc}") from None

    def _recent_starts(self, since: float) -> list[tuple[str, float]]:
        return self._read("SELECT host, epoch(fetched_at) - elapsed_ms / 1000.0 AS t FROM pages "
                          "WHERE status IS NOT NULL AND fetched_at >= ? AND t > ?", [_ts(since), since])

    def stats(self) -> StoreStats:
        w = self._written
        return StoreStats(w["pages"], w["links"], w["bodies"], w["pid_trace"], self._flushes,
                          len(self._batch.pages), self._dropped, w["items"])

    def _write(self, batch: _Batch) -> None:
        con = self._con
        if con is None:
            raise StateError(f"{self.path}: results store is not open")
        peer = self.peer_id
        pages = [page_cells(r, peer) for r in batch.pages]
        # The hints of rows replaced within this batch (newer than the file's).
        dropped: dict[str, list[Any]] = {}
        if batch.replace:
            # A URL visited twice in one batch keeps its last row (pages: the latest).
            last = {r[0]: i for i, r in enumerate(pages) if r[0] in batch.replace}
            dropped = {r[0]: [r[j] for j in _HINTS] for i, r in enumerate(pages)
                       if r[0] in last and last[r[0]] != i and any(r[j] is not None for j in _HINTS)}
            pages = [r for i, r in enumerate(pages) if r[0] not in batch.replace or last[r[0]] == i]
        fetches = [r[:2] + (_ts(r[2]),) + r[3:16] + (None if r[16] is None else _ts(r[16]),) + r[17:]
                   for r in batch.fetches]
        work: list[tuple[str, list[Any]]] = [("pages", pages), ("links", batch.links),
                                             ("bodies", batch.bodies), ("pid_trace", batch.pid),
                                             ("fetches", fetches)]
        taken = {}
        items = 0
        try:
            con.begin()
            if batch.replace:
                gone = con.execute("DELETE FROM pages WHERE list_contains(?, url) RETURNING url, "
                                   "sitemap_lastmod, sitemap_priority, sitemap_changefreq",
                                   [sorted(batch.replace)]).fetchall()
                pages[:] = _keep_hints(pages, {**{u: h for u, *h in gone if h != [None, None, None]}, **dropped})
            for table, rows in work:
                if rows:
                    taken[table] = self._append(table, rows)
            for table, entries in batch.items.items():
                items += self._write_items(con, table, entries)
            if batch.hints:
                urls = list(batch.hints)
                lastmod, priority, freq = zip(*batch.hints.values())
                con.execute(
                    "UPDATE pages SET sitemap_lastmod = h.lastmod, sitemap_priority = h.priority, "
                    "sitemap_changefreq = h.freq FROM (SELECT unnest(?::VARCHAR[]) AS url, "
                    "unnest(?::TIMESTAMP[]) AS lastmod, unnest(?::DOUBLE[]) AS priority, "
                    "unnest(?::VARCHAR[]) AS freq) h WHERE pages.url = h.url",
                    [urls, list(lastmod), list(priority), list(freq)])
            if batch.verdicts:
                # After the appends: a row in this batch is corrected too.
                # A correction demotes an original, or says a near copy is exact; a row that
                # is a copy already keeps its verdict (peer.core.dedupe.held rule 6).
                con.executemany("UPDATE pages SET duplicate_of = ?, duplicate_kind = ? WHERE url = ? AND "
                                "(duplicate_of IS NULL OR (? = 'exact' AND duplicate_kind = 'near'))",
                                [[dup, kind, url, kind] for url, (dup, kind) in batch.verdicts.items()])
            con.commit()
        except duckdb.Error as exc:
            for app in self._appenders.values():
                app.clear()
            try:
                con.rollback()
            except duckdb.Error:
                pass
            raise _write_error(self.path, "cannot write results", exc) from None
        for table, rows in work:
            if rows:
                self._written[table] += taken[table]
                self._dropped += len(rows) - taken[table]
        self._written["items"] += items
        self._flushes += 1

    def _write_items(self, con: duckdb.DuckDBPyConnection, table: str,
                     entries: list[tuple[str, float, Mapping[str, Any]]]) -> int:
        """Append items to ``table``, creating it or adding columns as rows need."""
        cols = self._item_cols.setdefault(table, [])
        known = {c for c, _ in cols}
        for _, _, row in entries:
            for k, v in row.items():
                if k not in known:
                    known.add(k)
                    cols.append((k, "VARCHAR[]" if isinstance(v, list) else "VARCHAR"))
                    if table in self._item_ready:
                        con.execute(f"ALTER TABLE {quote(table)} ADD COLUMN {quote(k)} {cols[-1][1]}")
                        self._appenders.pop(table, None)
        if table not in self._item_ready:
            con.execute(f"CREATE TABLE IF NOT EXISTS {quote(table)} ("
                        + ", ".join(f"{n} {t}" for n, t in ITEM_COLUMNS)
                        + "".join(f", {quote(c)} {t}" for c, t in cols) + ")")
            have = {r[0] for r in con.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = 'main' AND table_name = ?", [table]).fetchall()}
            for c, t in cols:
                if c not in have:  # a resumed crawl whose rules gained a field
                    con.execute(f"ALTER TABLE {quote(table)} ADD COLUMN {quote(c)} {t}")
            self._item_ready.add(table)
        # Column order as the table has it (an older file may differ from ours).
        order = [r[0] for r in con.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = 'main' AND table_name = ? ORDER BY ordinal_position",
            [table]).fetchall()]
        peer = self.peer_id
        rows = []
        for url, fetched_at, row in entries:
            base = {"url": url, "fetched_at": _ts(fetched_at), "peer": peer}
            rows.append(tuple(base[c] if c in base else row.get(c) for c in order))
        app = self._appenders.get(table)
        if app is None:
            app = self._appenders[table] = con.appender(table)
        try:
            app.append_rows(rows)
        except _BAD_VALUE:
            # Text from pages can hold lone surrogates DuckDB refuses: repair
            # and go row by row, so one odd item costs at most itself.
            app.clear()
            n = 0
            for r in rows:
                try:
                    app.append_row(*(_clean(v) for v in r))
                    n += 1
                except _BAD_VALUE:
                    self._dropped += 1
            app.flush()
            return n
        app.flush()
        return len(rows)

    def _append(self, table: str, rows: list[Any]) -> int:
        """Append and flush ``rows``; the number DuckDB took."""
        app = self._appenders[table]
        taken = len(rows)
        try:
            app.append_rows(rows)
        except _BAD_VALUE:
            # One bad value (a lone surrogate, an out-of-range number) must not
            # cost the batch: redo it row by row, repairing what DuckDB refuses.
            app.clear()
            types = tuple(t for _, t in SCHEMA[table])
            for row in rows:
                try:
                    app.append_row(*row)
                except _BAD_VALUE:
                    try:
                        app.append_row(*_repair(row, types))
                    except _BAD_VALUE:
                        taken -= 1
        app.flush()
        return taken
