"""peer.results.store: the DuckDB results file, written off the trio loop in batches."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pytest
import trio
import trio.testing

from peer.errors import LockedError, StateError
from peer.core.frontier.frontier import PidSample
from peer.results.store import SCHEMA, PageRow, ResultStore, _locked

T0 = 1_700_000_000.123456  # 2023-11-14 22:13:20.123456 UTC

READ = r"""
import duckdb, json, sys
con = duckdb.connect(sys.argv[1], read_only=True)
out = {}
for (table,) in con.execute("SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall():
    rows = con.execute(f"SELECT * FROM {table}").fetchall()
    out[table] = [[v.hex() if isinstance(v, bytes) else v for v in r] for r in rows]
print(json.dumps(out, default=str))
"""


def read_back(path: Path) -> dict[str, list[list]]:
    """The file's tables, read by a separate Python process."""
    res = subprocess.run([sys.executable, "-c", READ, str(path)], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def row(i: int, **kw) -> PageRow:
    fields = dict(url=f"http://s001.web.test/p{i}.html", final_url=f"http://s001.web.test/p{i}.html",
                  host="s001.web.test", status=200, content_type="text/html", bytes=30_000 + i,
                  title=f"Page {i}", n_links=100, depth=i % 5, fetched_at=T0 + i,
                  elapsed_ms=12.5, error=None, peer="p1")
    fields.update(kw)
    return PageRow.of(**fields)


def store(path: Path, **kw) -> ResultStore:
    kw.setdefault("store_links", False)
    kw.setdefault("store_body", False)
    return ResultStore(path, "p1", **kw)


async def test_rows_round_trip_exactly_through_another_process(tmp_path):
    path = tmp_path / "pages.duckdb"
    async with store(path) as st:
        st.add_page(row(0, title="Café — naïve ☃", depth=0))
        st.add_page(PageRow.of("http://s002.web.test/x", None, "s002.web.test:8080", None, None, 0, None,
                            0, 3, T0, 0.0, "timeout", "",  # peer "" -> the store's id
                            sitemap_lastmod=1714521600.0, sitemap_priority=0.5,
                            sitemap_changefreq="daily"))  # a sitemap's lastmod, priority, changefreq
        st.add_page(row(3, payload_digest="sha1:" + "A" * 32, simhash=2**64 - 1,
                        duplicate_of="http://s001.web.test/p0.html", duplicate_kind="near"))
        st.add_page(row(2, status=404, error="too_large", bytes=2**40, elapsed_ms=1234.5678,
                        canonical="http://s001.web.test/", noindex=True, nofollow=False))
    tables = read_back(path)
    assert sorted(tables) == ["pages", "pid_trace"]  # no links/bodies unless asked
    assert tables["pages"] == [
        ["http://s001.web.test/p0.html", "http://s001.web.test/p0.html", "s001.web.test", 200,
         "text/html", 30000, "Café — naïve ☃", 100, 0, "2023-11-14 22:13:20.123456", 12.5, None, "p1",
         None, None, None, None, None, None, None, None, None, None],
        ["http://s002.web.test/x", None, "s002.web.test:8080", None, None, 0, None, 0, 3,
         "2023-11-14 22:13:20.123456", 0.0, "timeout", "p1", None, None, None,
         "2024-05-01 00:00:00", 0.5, "daily", None, None, None, None],
        # The whole 64 bits of a SimHash: UBIGINT, not BIGINT.
        ["http://s001.web.test/p3.html", "http://s001.web.test/p3.html", "s001.web.test", 200,
         "text/html", 30003, "Page 3", 100, 3, "2023-11-14 22:13:23.123456", 12.5, None, "p1",
         None, None, None, None, None, None, "sha1:" + "A" * 32, 2**64 - 1,
         "http://s001.web.test/p0.html", "near"],
        ["http://s001.web.test/p2.html", "http://s001.web.test/p2.html", "s001.web.test", 404,
         "text/html", 2**40, "Page 2", 100, 2, "2023-11-14 22:13:22.123456", 1234.5678,
         "too_large", "p1", "http://s001.web.test/", True, False, None, None, None,
         None, None, None, None],
    ]
    assert st.stats().pages == 4


async def test_schema_types(tmp_path):
    path = tmp_path / "pages.duckdb"
    async with store(path, store_links=True, store_body=True, store_fetches=True):
        pass
    con = duckdb.connect(str(path), read_only=True)
    try:
        for table, cols in SCHEMA.items():
            got = con.execute(f"DESCRIBE {table}").fetchall()
            assert [(r[0], r[1]) for r in got] == list(cols)
    finally:
        con.close()
    assert [c for c, _ in SCHEMA["pages"]] == [
        "url", "final_url", "host", "status", "content_type", "bytes", "title", "n_links",
        "depth", "fetched_at", "elapsed_ms", "error", "peer", "canonical", "noindex", "nofollow",
        "sitemap_lastmod", "sitemap_priority", "sitemap_changefreq",
        "payload_digest", "simhash", "duplicate_of", "duplicate_kind"]


def test_a_page_row_is_the_cores_row_and_the_two_columns_the_driver_adds():
    # One definition: every pages column is a field of the core's Row of the
    # same name, or one the driver adds; every field of Row is a column but
    # the two that go to their own tables (bodies, links).
    from dataclasses import fields

    from peer.core.crawl.decisions import Row
    from peer.results.schema import DRIVER_COLUMNS, PAGE_COLUMNS, ROW_COLUMNS

    row_fields = [f.name for f in fields(Row)]
    assert set(DRIVER_COLUMNS) == {"fetched_at", "peer"}
    assert [c for c in PAGE_COLUMNS if c not in DRIVER_COLUMNS] == list(ROW_COLUMNS)
    assert set(ROW_COLUMNS) <= set(row_fields)
    assert set(row_fields) - set(ROW_COLUMNS) == {"body", "links"}


def test_a_page_rows_values_are_its_columns_in_order_and_come_back_from_the_journal():
    page = row(4, canonical="http://s001.web.test/", noindex=False, sitemap_lastmod=T0,
               payload_digest="sha1:" + "B" * 32, simhash=7, duplicate_kind="exact")
    values = page.values()
    assert dict(zip([c for c, _ in SCHEMA["pages"]], values)) == {
        "url": page.url, "final_url": page.url, "host": "s001.web.test", "status": 200,
        "content_type": "text/html", "bytes": 30_004, "title": "Page 4", "n_links": 100, "depth": 4,
        "fetched_at": T0 + 4, "elapsed_ms": 12.5, "error": None, "peer": "p1",
        "canonical": "http://s001.web.test/", "noindex": False, "nofollow": None,
        "sitemap_lastmod": T0, "sitemap_priority": None, "sitemap_changefreq": None,
        "payload_digest": "sha1:" + "B" * 32, "simhash": 7, "duplicate_of": None, "duplicate_kind": "exact"}
    assert PageRow.from_values(values) == page
    # A row journaled by an older build (13 columns) takes the later ones' defaults.
    old = PageRow.from_values(values[:13])
    assert old.values()[:13] == values[:13] and old.values()[13:] == [None] * 10
    with pytest.raises(TypeError):
        PageRow.from_values([*values, "one too many"])
    with pytest.raises(TypeError):
        PageRow.from_values(values[:5])


async def test_links_and_bodies_when_enabled(tmp_path):
    path = tmp_path / "pages.duckdb"
    async with store(path, store_links=True, store_body=True) as st:
        st.add_page(row(1), body=b"<html>\x00\xff</html>", links=["http://a.test/", "http://b.test/x"])
        st.add_page(row(2), body=None, links=())
        st.add_page(row(3), body=b"", links=["http://c.test/"])
    tables = read_back(path)
    assert sorted(tables) == ["bodies", "links", "pages", "pid_trace"]
    assert tables["links"] == [
        ["http://s001.web.test/p1.html", "http://a.test/"],
        ["http://s001.web.test/p1.html", "http://b.test/x"],
        ["http://s001.web.test/p3.html", "http://c.test/"],
    ]
    assert tables["bodies"] == [["http://s001.web.test/p1.html", b"<html>\x00\xff</html>".hex()],
                                ["http://s001.web.test/p3.html", ""]]
    stats = st.stats()
    assert (stats.pages, stats.links, stats.bodies) == (3, 3, 2)


async def test_links_and_bodies_ignored_when_disabled(tmp_path):
    path = tmp_path / "pages.duckdb"
    async with store(path) as st:
        st.add_page(row(1), body=b"body", links=["http://a.test/"])
    tables = read_back(path)
    assert sorted(tables) == ["pages", "pid_trace"]
    assert (st.stats().links, st.stats().bodies) == (0, 0)


async def test_pid_trace_rows(tmp_path):
    path = tmp_path / "pages.duckdb"
    async with store(path) as st:
        now = trio.current_time()
        wall = time.time()
        st.add_pid([PidSample("s001.web.test", now - 5.0, 12, 1.25),
                    PidSample("s002.web.test:8080", now, 0, 0.0)], 40.0)
    pid = read_back(path)["pid_trace"]
    assert [(r[0], r[2], r[3], r[4], r[5]) for r in pid] == [
        ("s001.web.test", 12, 1.25, 40.0, "p1"), ("s002.web.test:8080", 0, 0.0, 40.0, "p1")]
    # window_end is on trio's clock; it is stored as the wall-clock UTC time it stands for.
    ends = [datetime.fromisoformat(r[1]).replace(tzinfo=timezone.utc).timestamp() for r in pid]
    assert abs(ends[0] - (wall - 5.0)) < 1.0
    assert abs(ends[1] - wall) < 1.0
    assert st.stats().pid == 2


async def test_pid_trace_rows_carry_each_hosts_own_setpoint(tmp_path):
    # A [[site]] block's rate gives its hosts their own setpoint (peer/core/config/sites.py).
    path = tmp_path / "pages.duckdb"
    async with store(path) as st:
        now = trio.current_time()
        st.add_pid([PidSample("slow.web.test", now, 1, 10.0), PidSample("s001.web.test", now, 40, 1.0)],
                   lambda host: 1.0 if host.startswith("slow.") else 40.0)
    assert [(r[0], r[4]) for r in read_back(path)["pid_trace"]] == [("slow.web.test", 1.0), ("s001.web.test", 40.0)]


async def test_reopen_appends(tmp_path):
    path = tmp_path / "pages.duckdb"
    async with store(path) as st:
        for i in range(3):
            st.add_page(row(i))
    async with store(path) as st:
        for i in range(3, 5):
            st.add_page(row(i))
    pages = read_back(path)["pages"]
    assert [r[0] for r in pages] == [f"http://s001.web.test/p{i}.html" for i in range(5)]


async def test_run_flushes_periodically(tmp_path):
    path = tmp_path / "pages.duckdb"
    async with store(path) as st, trio.open_nursery() as nursery:
        nursery.start_soon(st.run, 0.05)
        for i in range(10):
            st.add_page(row(i))
        with trio.fail_after(10):
            while st.stats().pages < 10:
                await trio.sleep(0.01)
        assert st.stats().buffered == 0
        nursery.cancel_scope.cancel()


async def test_run_flushes_a_full_batch_at_once(tmp_path):
    path = tmp_path / "pages.duckdb"
    async with store(path, batch_rows=50) as st, trio.open_nursery() as nursery:
        nursery.start_soon(st.run, 3600.0)
        await trio.sleep(0.01)
        for i in range(49):
            st.add_page(row(i))
        await trio.sleep(0.2)
        assert st.stats().pages == 0  # not full, not due
        st.add_page(row(49))
        with trio.fail_after(10):
            while st.stats().pages < 50:
                await trio.sleep(0.01)
        nursery.cancel_scope.cancel()


async def test_links_fill_a_batch_too(tmp_path):
    path = tmp_path / "pages.duckdb"
    async with store(path, store_links=True, batch_rows=2) as st, trio.open_nursery() as nursery:
        nursery.start_soon(st.run, 3600.0)
        await trio.sleep(0.01)
        st.add_page(row(0), links=[f"http://l.test/{k}" for k in range(200)])  # > 2 * 64
        with trio.fail_after(10):
            while st.stats().links < 200:
                await trio.sleep(0.01)
        nursery.cancel_scope.cancel()


async def test_cancelling_the_nursery_leaves_every_row_in_the_file(tmp_path):
    path = tmp_path / "pages.duckdb"
    n = 5000
    async with store(path, batch_rows=700) as st:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(st.run, 3600.0)
            await trio.sleep(0.01)
            for i in range(n):
                st.add_page(row(i))
                if i % 500 == 0:
                    await trio.sleep(0)  # let run() start some flushes
            nursery.cancel_scope.cancel()
        # run()'s final, shielded flush wrote the rest before the store closed.
        assert st.stats().pages == n
        assert st.stats().buffered == 0
    pages = read_back(path)["pages"]
    assert sorted(r[0] for r in pages) == sorted(f"http://s001.web.test/p{i}.html" for i in range(n))


async def test_cancelled_flush_still_writes_its_rows(tmp_path):
    path = tmp_path / "pages.duckdb"
    async with store(path) as st:
        for i in range(100):
            st.add_page(row(i))
        with trio.CancelScope() as scope:
            scope.cancel()
            await st.flush()
        assert st.stats().pages == 100
    assert len(read_back(path)["pages"]) == 100


async def test_concurrent_flushes_write_each_row_once_one_thread_at_a_time(tmp_path):
    path = tmp_path / "pages.duckdb"
    active = 0
    peak = 0
    lock = threading.Lock()
    async with store(path) as st:
        real = st._write

        def spy(batch):
            nonlocal active, peak
            with lock:
                active += 1
                peak = max(peak, active)
            try:
                time.sleep(0.02)  # long enough that unserialised writes would overlap
                real(batch)
            finally:
                with lock:
                    active -= 1

        st._write = spy  # type: ignore[method-assign]
        async with trio.open_nursery() as nursery:
            for k in range(20):
                for i in range(k * 50, (k + 1) * 50):
                    st.add_page(row(i))
                nursery.start_soon(st.flush)
                await trio.testing.wait_all_tasks_blocked()  # it has taken its batch
    assert peak == 1
    assert st.stats().flushes == 20
    urls = [r[0] for r in read_back(path)["pages"]]
    assert sorted(urls) == sorted(f"http://s001.web.test/p{i}.html" for i in range(1000))


async def test_large_batch(tmp_path):
    path = tmp_path / "pages.duckdb"
    # One flush of 10,000 pages and 20,000 links: many of DuckDB's 2,048-row
    # vectors a table in one transaction (50,000 took 1.3 s of CPU for the same).
    n = 10_000
    async with store(path, store_links=True, batch_rows=n) as st:
        for i in range(n):
            st.add_page(row(i), links=("http://x.test/a", "http://x.test/b"))
        await st.flush()
        assert st.stats().flushes == 1
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert con.execute("SELECT count(*), count(DISTINCT url), sum(bytes) FROM pages").fetchone() == (
            n, n, sum(30_000 + i for i in range(n)))
        assert con.execute("SELECT count(*) FROM links").fetchone() == (2 * n,)
    finally:
        con.close()


async def test_bad_values_are_repaired_not_fatal(tmp_path):
    path = tmp_path / "pages.duckdb"
    async with store(path) as st:
        st.add_page(row(0))
        st.add_page(row(1, title="bad \ud800 surrogate", fetched_at=math.nan))
        st.add_page(row(2, status=2**40, fetched_at=math.inf))
        st.add_page(row(3))
    pages = read_back(path)["pages"]
    assert [r[0] for r in pages] == [f"http://s001.web.test/p{i}.html" for i in range(4)]
    assert pages[1][6] == "bad ? surrogate" and pages[1][9] is None
    assert pages[2][3] is None and pages[2][9] is None
    assert st.stats().dropped == 0


async def test_closed_store_refuses_rows(tmp_path):
    async with store(tmp_path / "pages.duckdb") as st:
        pass
    with pytest.raises(StateError, match="closed"):
        st.add_page(row(0))


async def test_an_older_builds_file_gets_the_new_columns_and_keeps_its_rows(tmp_path):
    path = tmp_path / "pages.duckdb"
    old = SCHEMA["pages"][:13]  # up to peer: the columns before canonical, noindex, nofollow
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE pages (" + ", ".join(f"{n} {t}" for n, t in old) + ")")
    con.execute("INSERT INTO pages (url, host, status, n_links, depth, bytes, peer) "
                "VALUES ('http://a.test/', 'a.test', 200, 0, 0, 1, 'p0')")
    con.close()
    async with store(path) as st:
        st.add_page(row(1, canonical="http://s001.web.test/", noindex=False, nofollow=True))
    pages = read_back(path)["pages"]
    assert [(r[0], r[13:]) for r in pages] == [
        ("http://a.test/", [None] * 10),
        ("http://s001.web.test/p1.html", ["http://s001.web.test/", False, True] + [None] * 7)]


async def test_foreign_table_is_refused(tmp_path):
    path = tmp_path / "pages.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE pages (url VARCHAR, other INTEGER)")
    con.close()
    with pytest.raises(StateError, match=r"pages\.duckdb: table pages has columns"):
        async with store(path):
            pass


async def test_not_a_database_is_refused(tmp_path):
    path = tmp_path / "pages.duckdb"
    path.write_bytes(b"this is not a duckdb file\n" * 1000)
    with pytest.raises(StateError, match=r"pages\.duckdb: cannot open"):
        async with store(path):
            pass


async def test_a_file_held_by_another_process_is_locked_error_naming_its_pid(tmp_path):
    path = tmp_path / "pages.duckdb"
    with subprocess.Popen(
            [sys.executable, "-c", "import duckdb, sys, time\n"
             "con = duckdb.connect(sys.argv[1])\nprint('open', flush=True)\ntime.sleep(120)\n",
             str(path)], stdout=subprocess.PIPE, text=True) as holder:
        try:
            assert holder.stdout.readline() == "open\n"
            with pytest.raises(LockedError) as info:
                async with store(path):
                    pass
        finally:
            holder.kill()
            holder.wait(timeout=30)
    assert info.value.pid == holder.pid
    assert str(info.value) == (
        f"{path}: the results file is held open by process {holder.pid}; another peer may be "
        "running with this data_dir: stop it first, or give this peer another data_dir")
    async with store(path):  # the holder gone, the file opens
        pass


def test_lock_messages_are_parsed_defensively():
    path = Path("/srv/lock/p1/pages.duckdb")  # "lock" in the path is not a lock error
    assert _locked(path, f'IO Error: Cannot open file "{path}": No such file or directory') is None
    no_pid = _locked(path, "IO Error: Could not set lock on file: Resource temporarily unavailable")
    assert no_pid is not None and no_pid.pid is None and "held open by another process" in str(no_pid)
    odd = _locked(path, "IO Error: Conflicting lock is held in /usr/bin/python3 (PID 12ab)")
    assert odd is not None and odd.pid is None


def test_batch_rows_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="batch_rows"):
        store(tmp_path / "x.duckdb", batch_rows=0)


async def test_recent_starts_are_fetched_at_less_elapsed_for_answered_rows(tmp_path):
    async with store(tmp_path / "pages.duckdb") as st:
        st.add_page(row(0, elapsed_ms=500.0))                 # started T0 - 0.5: too old
        st.add_page(row(3, elapsed_ms=1000.0))                # started T0 + 2
        st.add_page(row(4, elapsed_ms=250.0))                 # started T0 + 3.75
        st.add_page(row(5, status=None, error="connect"))     # never reached the server
        got = sorted(await st.recent_starts(T0 + 1.0))
    assert [h for h, _ in got] == ["s001.web.test", "s001.web.test"]
    assert [round(t - T0, 3) for _, t in got] == [2.0, 3.75]


async def test_a_revisit_replaces_its_page_row_and_every_visit_is_in_fetches(tmp_path):
    """pages keeps the latest visit of a URL; fetches keeps one row a visit (peer/results/fetches.py)."""
    from peer.results.fetches import FETCHES

    path = tmp_path / "pages.duckdb"

    def fetch_row(t: float, kind: str, status: int, change: str) -> tuple:
        row = dict.fromkeys(name for name, _, _ in FETCHES)
        row.update(url="http://a.test/", host="a.test", fetched_at=t, kind=kind, status=status,
                   change=change, changed=change == "changed", conditional=kind == "revisit",
                   bytes=0, elapsed_ms=1.0, interval_before=60.0, interval_after=90.0,
                   next_due=t + 90.0, peer="p1")
        return tuple(row.values())

    async with store(path, store_fetches=True, batch_rows=1) as st:
        st.add_page(PageRow.of("http://a.test/", None, "a.test", 200, "text/html", 10, "old", 0, 0,
                            1_700_000_000.0, 1.0, None))
        st.add_fetch(fetch_row(1_700_000_000.0, "new", 200, "first"))
        await st.flush()
        st.add_page(PageRow.of("http://a.test/", None, "a.test", 200, "text/html", 12, "new", 0, 0,
                            1_700_000_100.0, 1.0, None), replace=True)
        st.add_fetch(fetch_row(1_700_000_100.0, "revisit", 200, "changed"))
        # A revisit's 304 writes no page row: the engine only adds its visit.
        st.add_fetch(fetch_row(1_700_000_200.0, "revisit", 304, "not_modified"))
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert con.execute("SELECT title FROM pages").fetchall() == [("new",)]
        assert con.execute("SELECT kind, status, change, changed FROM fetches ORDER BY fetched_at").fetchall() == [
            ("new", 200, "first", False), ("revisit", 200, "changed", True),
            ("revisit", 304, "not_modified", False)]
    finally:
        con.close()


def rows_of_file_alone(path: Path, tmp: Path) -> int | None:
    """Page rows of a copy of ``path`` without its write-ahead log (None: no pages table):
    what an operator has who copied pages.duckdb alone off a dead peer's disk."""
    copy = tmp / f"alone-{time.monotonic_ns()}.duckdb"
    copy.write_bytes(path.read_bytes())
    with duckdb.connect(str(copy), read_only=True) as con:
        if not con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'pages'").fetchone()[0]:
            return None
        return int(con.execute("SELECT count(*) FROM pages").fetchone()[0])


async def test_the_file_alone_holds_its_tables_at_once_and_its_rows_up_to_the_last_checkpoint(tmp_path):
    # A peer killed before DuckDB checkpointed (by itself: only past 16 MiB of
    # log) left a pages.duckdb without even a pages table, its rows all in the .wal.
    path = tmp_path / "pages.duckdb"
    async with store(path) as st:
        assert rows_of_file_alone(path, tmp_path) == 0  # the tables: checkpointed at open
        st.add_page(row(1))
        await st.flush()
        assert rows_of_file_alone(path, tmp_path) == 0  # the row: in the log only
        await st.checkpoint()
        assert rows_of_file_alone(path, tmp_path) == 1


async def test_run_checkpoints_every_interval(tmp_path):
    path = tmp_path / "pages.duckdb"
    async with store(path) as st, trio.open_nursery() as nursery:
        nursery.start_soon(st.run, 0.05, 0.2)
        st.add_page(row(1))
        with trio.fail_after(10):
            while rows_of_file_alone(path, tmp_path) != 1:
                await trio.sleep(0.05)
        nursery.cancel_scope.cancel()


async def test_sitemap_hints_read_after_a_row_fill_it_and_a_revisit_keeps_them(tmp_path):
    path = tmp_path / "pages.duckdb"
    lastmod = datetime(2024, 5, 1, tzinfo=timezone.utc).timestamp()
    async with store(path) as st:
        st.add_page(row(1))
        st.add_page(row(2))
        await st.flush()
        # The sitemap is read after p1's row was written, and before p3's is: p1's row is filled,
        # and a hint for a URL with no row yet does nothing (its row brings its own).
        st.add_hints(row(1).url, lastmod, 0.8, "daily")
        st.add_hints(row(3).url, lastmod, 0.1, "never")
        await st.flush()
        # A revisit's row, without hints of its own, keeps the URL's; p2 gets none it never had.
        st.add_page(row(1, title="again"), replace=True)
        st.add_page(row(2, title="again"), replace=True)
        await st.flush()
        # Twice in one batch: the last row keeps what the first was given.
        st.add_page(row(4, sitemap_priority=0.4))
        st.add_page(row(4, title="again"), replace=True)
    con = duckdb.connect(str(path), read_only=True)
    try:
        got = con.execute("SELECT url, title, epoch(sitemap_lastmod), sitemap_priority, sitemap_changefreq "
                          "FROM pages ORDER BY url").fetchall()
    finally:
        con.close()
    assert got == [(row(1).url, "again", lastmod, 0.8, "daily"), (row(2).url, "again", None, None, None),
                   (row(4).url, "again", None, 0.4, None)]
