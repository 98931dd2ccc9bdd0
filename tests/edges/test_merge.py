"""scripts/merge.py: the peers' results files merged into one, as a user checks it."""

import dataclasses
import contextlib
import io
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest

import peer.commands.merge as merge_command
import peer.results.mergeinputs as mergeinputs
from peer.results.merge import merge
from peer.errors import ConfigError, StateError
from peer.results.store import SCHEMA

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2025, 3, 1, 12, 0, 0)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def page(url: str, fetched_at: datetime | None, peer: str, status: int | None = 200,
         final_url: str | None = None, error: str | None = None, canonical: str | None = None,
         noindex: bool | None = False, nofollow: bool | None = False,
         sitemap: tuple = (None, None, None), dup: tuple = (None, None, None, None)) -> tuple:
    host = url.split("/")[2]
    return (url, final_url, host, status, "text/html", 100, f"title of {url}", 3, 1,
            fetched_at, 12.5, error, peer, canonical, noindex, nofollow, *sitemap, *dup)


def make_db(path: Path, pages=(), *, links=None, bodies=None, pid=None, items=None) -> Path:
    """A results file like a peer's; a table is created only when its rows are given."""
    con = duckdb.connect(str(path))
    given = {"pages": pages, "links": links, "bodies": bodies, "pid_trace": pid}
    for table, rows in given.items():
        if rows is None:
            continue
        cols = SCHEMA[table]
        con.execute(f"CREATE TABLE {table} (" + ", ".join(f"{n} {t}" for n, t in cols) + ")")
        _append(con, table, rows)
    for table, (cols, rows) in (items or {}).items():
        con.execute(f"CREATE TABLE {table} ({cols})")
        _append(con, table, rows)
    con.close()
    return path


def _append(con: duckdb.DuckDBPyConnection, table: str, rows) -> None:
    if rows:  # the appender, like the store: executemany takes seconds for 600 rows
        app = con.appender(table)
        app.append_rows(list(rows))
        app.flush()


def read(path: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def contents(path: Path) -> dict[str, list[tuple]]:
    """Every table of a file, its rows sorted: what "the same result" means."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        names = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall()]
        return {n: con.execute(f'SELECT * FROM "{n}" ORDER BY ALL').fetchall() for n in names}
    finally:
        con.close()


def columns(path: Path, table: str) -> list[tuple[str, str]]:
    return [tuple(r) for r in read(path, "SELECT column_name, data_type FROM duckdb_columns() "
                                         f"WHERE table_name = '{table}' ORDER BY column_index")]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """scripts/merge.py as a real process: kept for the script's own entry point."""
    return subprocess.run([sys.executable, "scripts/merge.py", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def call_cli(*args: str) -> subprocess.CompletedProcess:
    """``merge_command.main(args)`` in this process, seen as run_cli sees it: exit status, stdout, stderr.

    The same main() the script runs, without a process start and its imports
    (about 0.7 s of CPU each).
    """
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = merge_command.main(list(args))
        except SystemExit as stop:  # argparse's usage errors
            code = stop.code if isinstance(stop.code, int) else 1
    return subprocess.CompletedProcess(["merge.py", *args], code, out.getvalue(), err.getvalue())


def leftovers(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.startswith(".")]


@pytest.fixture(scope="module")
def three_template(tmp_path_factory) -> list[Path]:
    """Three peers' files with every table, overlaps, a tie and a NULL time."""
    tmp_path = tmp_path_factory.mktemp("inputs")
    a = make_db(tmp_path / "a.duckdb", [
        page("http://h1.test/1", at(10), "p1"),
        page("http://h1.test/2", at(50), "p1", status=301, final_url="http://h1.test/2b"),
        page("http://h2.test/tie", at(30), "p1"),
        page("http://h3.test/nul", None, "p1"),
    ], links=[("http://h1.test/1", "http://h1.test/2"), ("http://h1.test/1", "http://h2.test/tie")],
        bodies=[("http://h1.test/1", b"a stale body"), ("http://h1.test/2", b"a2")],
        pid=[("h1.test", at(60), 2, 1.0, 1.0, "p1")],
        items={"items_product": ("url VARCHAR, fetched_at TIMESTAMP, peer VARCHAR, name VARCHAR, "
                                 "tags VARCHAR[]",
                                 [("http://h1.test/1", at(10), "p1", "old", ["x"])])})
    b = make_db(tmp_path / "b.duckdb", [
        page("http://h1.test/1", at(20), "p2", status=404, error=None,
             sitemap=(at(-3600), 0.7, "weekly")),
        page("http://h2.test/tie", at(30), "p2", status=500),
        page("http://h3.test/nul", at(5), "p2", status=503),
        page("http://h2.test/only-b", at(40), "p2"),
    ], links=[("http://h1.test/1", "http://h1.test/2"), ("http://h2.test/only-b", "http://h1.test/1")],
        bodies=[("http://h1.test/1", b"fresh body"), ("http://h1.test/2", b"b2, not the winner's")],
        pid=[("h1.test", at(60), 2, 1.0, 1.0, "p1"), ("h2.test", at(60), 1, 2.0, 1.0, "p2")],
        items={"items_product": ("url VARCHAR, fetched_at TIMESTAMP, peer VARCHAR, name VARCHAR, "
                                 "tags VARCHAR[], price VARCHAR",
                                 [("http://h1.test/1", at(20), "p2", "new", ["y", "z"], "9.99")])})
    c = make_db(tmp_path / "c.duckdb", [
        page("http://h1.test/2", at(45), "p3"),
        page("http://h4.test/", at(70), "p3", status=None, error="timeout"),
    ])
    return [a, b, c]


@pytest.fixture
def three(three_template, tmp_path) -> list[Path]:
    """A fresh copy of the three files for each test (building them costs more)."""
    return [Path(shutil.copy(f, tmp_path / f.name)) for f in three_template]


# -- winner rules ---------------------------------------------------------------


def test_newest_fetch_wins_and_its_peer_is_kept(three, tmp_path):
    out = tmp_path / "crawl.duckdb"
    merge(three, out)
    got = {r[0]: r for r in read(out, "SELECT url, peer, status, fetched_at FROM pages")}
    assert got["http://h1.test/1"] == ("http://h1.test/1", "p2", 404, at(20))  # b is newer
    assert got["http://h1.test/2"][1:3] == ("p1", 301)  # a (t=50) beats c (t=45)
    assert got["http://h3.test/nul"][1:] == ("p2", 503, at(5))  # a time beats no time
    # Equal fetched_at: the peer decides, not the order of the files.
    assert got["http://h2.test/tie"][1:3] == ("p1", 200)
    out2 = tmp_path / "reversed.duckdb"
    merge(three[::-1], out2)
    assert contents(out2) == contents(out)
    # Every column of the winner is its own, not mixed from the losers.
    assert read(out, "SELECT final_url FROM pages WHERE url = 'http://h1.test/2'") == [("http://h1.test/2b",)]
    # A sitemap's hints go with their row.
    assert read(out, "SELECT sitemap_lastmod, sitemap_priority, sitemap_changefreq FROM pages "
                     "WHERE url = 'http://h1.test/1'") == [(at(-3600), 0.7, "weekly")]


def test_ties_go_to_the_lower_peer_then_final_url_whatever_the_file_order(tmp_path):
    when = at(100)
    x = make_db(tmp_path / "x.duckdb", [
        *(page(f"http://t.test/{k}", when, "p2" if k % 2 else "p1") for k in range(20)),
        *(page(f"http://r.test/{k}", when, "p1", final_url=f"http://r.test/{k}/{'b' if k % 2 else 'a'}")
          for k in range(20))])
    y = make_db(tmp_path / "y.duckdb", [
        *(page(f"http://t.test/{k}", when, "p1" if k % 2 else "p2") for k in range(20)),
        *(page(f"http://r.test/{k}", when, "p1", final_url=f"http://r.test/{k}/{'a' if k % 2 else 'b'}")
          for k in range(20))])
    for i, files in enumerate(([x, y], [y, x])):
        out = tmp_path / f"out{i}.duckdb"
        merge(files, out)
        assert read(out, "SELECT DISTINCT peer FROM pages") == [("p1",)]
        assert read(out, "SELECT count(*) FROM pages WHERE host = 'r.test' AND final_url LIKE '%/a'") == [(20,)]


def test_dedupe_count_is_exact_and_the_summary_says_so(tmp_path):
    sets = [range(0, 300), range(200, 500), range(450, 460)]
    files = [make_db(tmp_path / f"p{i}.duckdb",
                     [page(f"http://h{k % 7}.test/{k}", at(i * 1000 + k), f"p{i}") for k in keys])
             for i, keys in enumerate(sets)]
    summary = merge(files, tmp_path / "out.duckdb")
    urls = set().union(*map(set, sets))
    assert read(tmp_path / "out.duckdb", "SELECT count(*), count(DISTINCT url) FROM pages") == [(500, 500)]
    assert (summary.pages, summary.rows_in, summary.hosts) == (len(urls), 610, 7)
    # Newest wins: 200-299 from p1 (t=1000+k), 450-459 from p2 (t=2000+k).
    assert dict(summary.peers) == {"p0": 200, "p1": 290, "p2": 10}
    assert summary.statuses == ((200, 500),)
    assert (summary.first, summary.last) == (at(0), at(2459))
    text = "\n".join(summary.lines())
    assert "500 (610 rows read, 110 duplicates dropped)" in text
    assert "p0: 200  p1: 290  p2: 10" in text
    assert "2025-03-01 12:00:00 .. 2025-03-01 12:40:59 UTC (40m59s)" in text
    # The not-requested line qualifies the pages line: right after it, never among the inputs.
    lines = dataclasses.replace(summary, not_requested=(("robots", 3),)).lines()
    at_pages = next(i for i, line in enumerate(lines) if line.startswith("pages "))
    assert lines[at_pages + 1] == "fetched    497; not requested 3 (robots 3)"
    assert all(line.startswith("input ") for line in lines[1:at_pages])


def test_pages_is_always_created_with_the_store_schema(tmp_path):
    empty = make_db(tmp_path / "empty.duckdb", [])
    summary = merge([empty], tmp_path / "out.duckdb")
    assert columns(tmp_path / "out.duckdb", "pages") == list(SCHEMA["pages"])
    assert contents(tmp_path / "out.duckdb") == {"pages": []}  # absent tables are not created
    assert (summary.pages, summary.first, summary.tables) == (0, None, ())


# -- optional tables ----------------------------------------------------------------


def test_links_bodies_pid_trace_and_items_are_merged(three, tmp_path):
    out = tmp_path / "crawl.duckdb"
    summary = merge(three, out)
    assert read(out, "SELECT * FROM links ORDER BY ALL") == [
        ("http://h1.test/1", "http://h1.test/2"), ("http://h1.test/1", "http://h2.test/tie"),
        ("http://h2.test/only-b", "http://h1.test/1")]
    assert read(out, "SELECT host, n FROM pid_trace ORDER BY ALL") == [("h1.test", 2), ("h2.test", 1)]
    # The body kept is the one from the file whose page row won (b for /1, a for /2).
    assert read(out, "SELECT url, body FROM bodies ORDER BY url") == [
        ("http://h1.test/1", b"fresh body"), ("http://h1.test/2", b"a2")]
    # items_*: newest per url; the columns are the union, types kept.
    assert columns(out, "items_product") == [
        ("url", "VARCHAR"), ("fetched_at", "TIMESTAMP"), ("peer", "VARCHAR"), ("name", "VARCHAR"),
        ("tags", "VARCHAR[]"), ("price", "VARCHAR")]
    assert read(out, "SELECT url, peer, name, tags, price FROM items_product") == [
        ("http://h1.test/1", "p2", "new", ["y", "z"], "9.99")]
    assert dict(summary.tables) == {"links": 3, "bodies": 2, "pid_trace": 2, "items_product": 1}
    assert columns(out, "bodies") == list(SCHEMA["bodies"])


def test_items_columns_of_different_types_are_refused(tmp_path):
    a = make_db(tmp_path / "a.duckdb", [], items={"items_x": ("url VARCHAR, fetched_at TIMESTAMP, "
                                                              "peer VARCHAR, f VARCHAR", [])})
    b = make_db(tmp_path / "b.duckdb", [], items={"items_x": ("url VARCHAR, fetched_at TIMESTAMP, "
                                                              "peer VARCHAR, f VARCHAR[]", [])})
    with pytest.raises(StateError, match=r"items_x\.f is VARCHAR\[\], but VARCHAR in .*a\.duckdb"):
        merge([a, b], tmp_path / "out.duckdb")
    assert not (tmp_path / "out.duckdb").exists()


# -- idempotence and refusals ------------------------------------------------------


def test_merging_again_gives_the_same_rows(three, tmp_path):
    first, again, remerged = tmp_path / "m1.duckdb", tmp_path / "m2.duckdb", tmp_path / "m3.duckdb"
    merge(three, first)
    merge(three, again)
    assert contents(again) == contents(first)
    # The merged file merged with its own inputs again: nothing changes.
    merge([first, *three], remerged)
    assert contents(remerged) == contents(first)
    assert set(contents(first)) == {"pages", "links", "bodies", "pid_trace", "items_product"}


def test_existing_output_is_kept_without_force_and_replaced_with_it(three, tmp_path, capsys):
    out = tmp_path / "crawl.duckdb"
    make_db(out, [page("http://old.test/", at(0), "old")])
    before = out.read_bytes()
    with pytest.raises(ConfigError, match="exists; pass --force"):
        merge(three, out)
    assert out.read_bytes() == before
    res = call_cli(*map(str, three), "-o", str(out))
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.splitlines() == [f"error: {out}: exists; pass --force to overwrite it"]
    assert out.read_bytes() == before

    assert merge_command.main([*map(str, three), "-o", str(out), "--force"]) == 0
    assert "pages      6 (10 rows read, 4 duplicates dropped)" in capsys.readouterr().out
    assert ("http://old.test/",) not in read(out, "SELECT url FROM pages")
    assert read(out, "SELECT count(*) FROM pages") == [(6,)]
    assert leftovers(tmp_path) == []


def test_output_that_is_an_input_is_refused(three, tmp_path):
    before = three[0].read_bytes()
    with pytest.raises(ConfigError, match="is also an input"):
        merge(three, three[0], force=True)
    assert three[0].read_bytes() == before


@pytest.mark.parametrize("kind", ["junk", "empty", "no_pages", "missing", "directory", "foreign_pages"])
def test_a_bad_input_is_one_error_naming_it_and_writes_nothing(three, tmp_path, kind):
    bad = tmp_path / f"{kind}.duckdb"
    if kind == "junk":
        bad.write_text("not a database at all\n")
    elif kind == "empty":
        bad.write_bytes(b"")
    elif kind == "no_pages":
        make_db(bad, None, links=[])
    elif kind == "directory":
        bad.mkdir()
    elif kind == "foreign_pages":
        con = duckdb.connect(str(bad))
        con.execute("CREATE TABLE pages (url VARCHAR, html VARCHAR)")
        con.close()
    expected = {"junk": "is not a DuckDB database", "empty": "is not a DuckDB database",
                "no_pages": "has no pages table", "missing": "no such file",
                "directory": "holds no pages.duckdb", "foreign_pages": "table pages has columns (url VARCHAR"}[kind]
    with pytest.raises(StateError, match=re.escape(expected)) as info:
        merge([three[0], bad], tmp_path / "out.duckdb")
    assert str(bad) in str(info.value)
    assert not (tmp_path / "out.duckdb").exists() and leftovers(tmp_path) == []


def test_cli_bad_input_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "notes.duckdb"
    bad.write_text("hello\n")
    res = run_cli(str(bad), "-o", str(tmp_path / "out.duckdb"))
    assert res.returncode == 2
    assert res.stderr.splitlines() == [f"error: {bad}: is not a DuckDB database"]
    assert not (tmp_path / "out.duckdb").exists() and leftovers(tmp_path) == []


def test_help_describes_the_command_with_examples(capsys):
    with pytest.raises(SystemExit) as info:
        merge_command.main(["--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    assert "newest fetch wins" in text
    assert "python scripts/merge.py --ring cluster.toml -o crawl.duckdb" in text


# -- parquet -----------------------------------------------------------------------


def test_parquet_export_matches_the_merged_tables(three, tmp_path):
    out, pq = tmp_path / "crawl.duckdb", tmp_path / "pq"
    summary = merge(three, out, parquet=pq)
    merged = contents(out)
    assert sorted(p.name for p in pq.iterdir()) == sorted(f"{t}.parquet" for t in merged)
    assert set(summary.parquet) == {pq / f"{t}.parquet" for t in merged}
    con = duckdb.connect()
    for table, rows in merged.items():
        got = con.execute(f"SELECT * FROM read_parquet('{pq / table}.parquet') ORDER BY ALL").fetchall()
        assert got == rows, table
    con.close()
    # The parquet files are outputs too: kept without --force.
    with pytest.raises(ConfigError, match=r"pages\.parquet: exists"):
        merge(three, tmp_path / "other.duckdb", parquet=pq)
    assert not (tmp_path / "other.duckdb").exists()


# -- --ring ------------------------------------------------------------------------


def test_ring_mode_merges_each_peers_data_dir_and_warns_of_missing_ones(tmp_path, capsys):
    toml = tmp_path / "cluster.toml"
    toml.write_text("".join(f'[[peer]]\nid = "p{i}"\naddress = "tcp://127.0.0.1:570{i}"\n'
                            f'data_dir = "d{i}"\n' for i in (1, 2, 3)))
    for i in (1, 2):
        (tmp_path / f"d{i}").mkdir()
        make_db(tmp_path / f"d{i}" / "pages.duckdb", [page(f"http://h{i}.test/", at(i), f"p{i}")])
    out = tmp_path / "crawl.duckdb"
    res = call_cli("--ring", str(toml), "-o", str(out), "--quiet")
    assert res.returncode == 0, res.stderr
    assert res.stdout == ""
    assert res.stderr.splitlines() == [
        f"warning: peer p3: no results file at {tmp_path / 'd3' / 'pages.duckdb'}; skipped"]
    assert read(out, "SELECT peer, url FROM pages ORDER BY peer") == [
        ("p1", "http://h1.test/"), ("p2", "http://h2.test/")]

    for i in (1, 2):
        (tmp_path / f"d{i}" / "pages.duckdb").unlink()
    assert merge_command.main(["--ring", str(toml), "-o", str(tmp_path / "none.duckdb")]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"error: {toml}: none of its 3 peer(s) has a results file (<data_dir>/pages.duckdb); "
        "has the crawl run?")
    assert not (tmp_path / "none.duckdb").exists()


# -- live peers ----------------------------------------------------------------------

WRITER = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
# A row only in the write-ahead log: the copy must carry the .wal too.
con.execute("INSERT INTO pages (url, host, fetched_at, peer) VALUES "
            "('http://live.test/new', 'live.test', TIMESTAMP '2025-03-01 13:00:00', 'live')")
open(sys.argv[2], "w").write("ready")
time.sleep(30)
"""


@pytest.fixture
def live_writer(tmp_path):
    """A second process holding a results file open as a writer, like a running peer."""
    procs = []

    def start(path: Path) -> None:
        ready = tmp_path / "writer.ready"
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(ready)])
        procs.append(proc)
        deadline = time.monotonic() + 20
        while not ready.exists():
            assert proc.poll() is None, "the writer process died"
            assert time.monotonic() < deadline, "the writer process did not open the file"
            time.sleep(0.05)

    yield start
    for proc in procs:
        proc.kill()
        proc.wait(timeout=10)


def test_a_file_held_by_a_live_peer_is_read_from_a_copy(three, tmp_path, live_writer):
    live = three[2]
    live_writer(live)
    with pytest.raises(duckdb.IOException, match="lock"):  # what a plain read-only open meets
        duckdb.connect(str(live), read_only=True)
    out = tmp_path / "crawl.duckdb"
    summary = merge(three, out)
    assert summary.snapshots == (live,)
    assert read(out, "SELECT peer FROM pages WHERE url = 'http://live.test/new'") == [("live",)]
    assert leftovers(tmp_path) == []

    res = call_cli(*map(str, three), "-o", str(tmp_path / "cli.duckdb"))
    assert res.returncode == 0, res.stderr
    assert res.stderr.splitlines() == [
        f"note: {live} is held open by a running peer; merged a copy of it (a snapshot)"]
    assert contents(tmp_path / "cli.duckdb") == contents(out)


def test_a_live_file_whose_copy_is_unreadable_says_to_stop_the_peer(three, tmp_path, live_writer,
                                                                     monkeypatch):
    live = three[1]
    live_writer(live)
    monkeypatch.setattr(mergeinputs, "_copy_live", lambda src, dst: dst.write_bytes(b"torn" * 1000))
    with pytest.raises(StateError) as info:
        merge(three, tmp_path / "crawl.duckdb")
    msg = str(info.value)
    assert msg.startswith(f"{live}: is held open by a running peer (PID ")
    assert msg.endswith("stop that peer, then merge again") and "\n" not in msg
    assert not (tmp_path / "crawl.duckdb").exists() and leftovers(tmp_path) == []


# -- --export and the cluster's stats ----------------------------------------------------------


@pytest.mark.parametrize("ext", [".jsonl", ".csv", ".parquet"])
def test_export_writes_pages_and_each_items_table_through_the_command_line(three, tmp_path, ext):
    import csv
    import json

    out = tmp_path / "out"  # not made first: the export makes its directory
    res = call_cli(*map(str, three), "-o", str(tmp_path / "crawl.duckdb"), "--export",
                  str(out / f"{{table}}{ext}"))
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in out.iterdir()) == [f"items_product{ext}", f"pages{ext}"]
    assert f"exported   {out / f'pages{ext}'}" in res.stdout
    merged = tmp_path / "crawl.duckdb"
    for table in ("pages", "items_product"):
        path = out / f"{table}{ext}"
        want = sorted(r[0] for r in read(merged, f"SELECT url FROM {table}"))
        if ext == ".jsonl":
            rows = [json.loads(line) for line in path.read_text().splitlines()]
        elif ext == ".csv":
            rows = list(csv.DictReader(path.read_text().splitlines()))
        else:
            con = duckdb.connect()
            rows = [{"url": u} for (u,) in con.execute(f"SELECT url FROM read_parquet('{path}')").fetchall()]
            con.close()
        assert sorted(r["url"] for r in rows) == want, table
    if ext == ".jsonl":  # a list field stays a list
        items = [json.loads(line) for line in (out / "items_product.jsonl").read_text().splitlines()]
        assert {tuple(i["tags"]) for i in items} == {("y", "z")}


def test_an_export_path_without_table_is_the_pages_file_as_given(three, tmp_path):
    out = tmp_path / "out"
    res = call_cli(*map(str, three), "-o", str(tmp_path / "crawl.duckdb"), "--export", str(out / "pages.csv"))
    assert res.returncode == 0, res.stderr
    # The file the user named, not pages.pages.csv; the items table beside it.
    assert sorted(p.name for p in out.iterdir()) == ["pages.csv", "pages.items_product.csv"]
    assert f"exported   {out / 'pages.csv'}  {out / 'pages.items_product.csv'}" in res.stdout
    assert (out / "pages.csv").read_text().startswith("url,final_url,")
    with pytest.raises(ConfigError, match=r"pages\.csv: exists; pass --force"):
        merge(three, tmp_path / "again.duckdb", export=out / "pages.csv")
    assert not (tmp_path / "again.duckdb").exists()


@pytest.mark.parametrize("ext", [".jsonl", ".csv", ".parquet"])
def test_an_export_keeps_every_bit_of_simhash_and_writes_lists_as_json(tmp_path, ext):
    import csv
    import json

    big, small = 0xFEDCBA9876543211, 0x0000000000000FF1   # past 2**63 and 2**53; leading zeros
    db = make_db(tmp_path / "p.duckdb", [
        page("http://h.test/a", at(1), "p1", dup=("sha1:A", big, None, None)),
        page("http://h.test/b", at(2), "p1", dup=("sha1:B", small, "http://h.test/a", "near")),
        page("http://h.test/c", at(3), "p1"),   # no simhash: NULL
    ], items={"items_x": ("url VARCHAR, fetched_at TIMESTAMP, peer VARCHAR, tags VARCHAR[]",
                          [("http://h.test/a", at(1), "p1", ["a", "b, c", 'say "hi"'])])})
    summary = merge([db], tmp_path / "crawl.duckdb", export=tmp_path / f"{{table}}{ext}")
    pages_file, items_file = summary.exports
    if ext == ".jsonl":
        rows = [json.loads(line) for line in pages_file.read_text().splitlines()]
        items = [json.loads(line) for line in items_file.read_text().splitlines()]
    elif ext == ".csv":
        rows = list(csv.DictReader(pages_file.read_text().splitlines()))
        items = list(csv.DictReader(items_file.read_text().splitlines()))
    else:
        con = duckdb.connect()
        rows = [{"url": u, "simhash": h} for u, h in
                con.execute(f"SELECT url, simhash FROM read_parquet('{pages_file}')").fetchall()]
        items = [{"tags": t} for (t,) in con.execute(f"SELECT tags FROM read_parquet('{items_file}')").fetchall()]
        con.close()
    got = {r["url"]: r["simhash"] for r in rows}
    assert got["http://h.test/a"] == "fedcba9876543211" and int(got["http://h.test/a"], 16) == big
    assert got["http://h.test/b"] == "0000000000000ff1"
    assert got["http://h.test/c"] in (None, "")   # NULL (CSV has no NULL but the empty cell)
    tags = items[0]["tags"]
    assert (json.loads(tags) if ext == ".csv" else list(tags)) == ["a", "b, c", 'say "hi"']


def test_an_export_directory_that_cannot_be_made_is_one_line(three, tmp_path):
    (tmp_path / "file").write_text("a file, not a directory")
    res = call_cli(*map(str, three), "-o", str(tmp_path / "crawl.duckdb"), "--export",
                  str(tmp_path / "file" / "out" / "{table}.jsonl"))
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert "--export: cannot create directory" in res.stderr and res.stderr.count("\n") == 1
    assert not (tmp_path / "crawl.duckdb").exists()


def test_export_of_an_unknown_format_is_one_line(three, tmp_path):
    res = call_cli(*map(str, three), "-o", str(tmp_path / "crawl.duckdb"), "--export",
                  str(tmp_path / "items.xml"))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "--export: expected a file name ending in .jsonl, .ndjson, .csv, .parquet" in res.stderr
    assert not (tmp_path / "crawl.duckdb").exists()


def test_the_peers_stats_are_summed_into_the_clusters(tmp_path):
    import json

    from peer.core.run.stats import STATS_FILE

    inputs = []
    for i, (pages, start, end) in enumerate([(10, "2025-03-01T12:00:00+00:00", "2025-03-01T12:00:30+00:00"),
                                             (5, "2025-03-01T12:00:10+00:00", "2025-03-01T12:01:00+00:00")]):
        d = tmp_path / f"p{i + 1}"
        d.mkdir()
        inputs.append(make_db(d / "pages.duckdb", [page(f"http://h{i}.test/", at(i), f"p{i + 1}")]))
        (d / STATS_FILE).write_text(json.dumps({
            "format": 1, "peer": f"p{i + 1}", "ring": "r", "start_time": start, "finish_time": end,
            "finish_reason": "cluster done", "pages": pages, "status_counts": {"200": pages},
            "errors": {"timeout": i}, "run_config": {"crawl": {"seeds": ["http://h0.test/"]}}}))
    res = call_cli(*map(str, inputs), "-o", str(tmp_path / "crawl.duckdb"))
    assert res.returncode == 0, res.stderr
    total = json.loads((tmp_path / "crawl.stats.json").read_text())
    assert total["pages"] == 15 and total["status_counts"] == {"200": 15}
    assert total["errors"] == {"timeout": 1} and total["peers"] == ["p1", "p2"]
    assert total["elapsed_seconds"] == 60.0 and total["pages_per_second"] == 0.25
    assert total["run_config"] == {"crawl": {"seeds": ["http://h0.test/"]}}
    assert "(the sum of 2 peer(s)' stats.json)" in res.stdout


def test_the_pages_columns_are_carried_and_an_older_builds_file_merges_with_nulls(tmp_path):
    new = make_db(tmp_path / "new.duckdb", [page("http://a.test/x", at(1), "p1", canonical="http://a.test/",
                                                 noindex=True, nofollow=False,
                                                 dup=("sha1:AB", 2**64 - 1, "http://a.test/", "near"))])
    old_path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(old_path))
    con.execute("CREATE TABLE pages (" + ", ".join(f"{n} {t}" for n, t in SCHEMA["pages"][:13]) + ")")
    _append(con, "pages", [page("http://b.test/y", at(2), "p2")[:13]])
    con.close()
    out = tmp_path / "out.duckdb"
    merge([new, old_path], out)
    assert read(out, "SELECT url, canonical, noindex, nofollow FROM pages ORDER BY url") == [
        ("http://a.test/x", "http://a.test/", True, False), ("http://b.test/y", None, None, None)]
    assert read(out, "SELECT url, payload_digest, simhash, duplicate_of, duplicate_kind FROM pages ORDER BY url") == [
        ("http://a.test/x", "sha1:AB", 2**64 - 1, "http://a.test/", "near"), ("http://b.test/y", None, None, None, None)]


def test_fetches_are_the_union_of_the_peers_visits_and_pages_keeps_the_latest(tmp_path):
    """A continuous crawl's files: every visit kept (fetches), one page row a URL, the newest."""
    def visit(url: str, t: float, kind: str, status: int, change: str, peer: str) -> tuple:
        return (url, url.split("/")[2], at(t), kind, status, change, change == "changed", None, None,
                None, kind == "revisit", 0, 1.0, None, 60.0, 90.0, at(t + 90), peer)

    url = "http://h1.test/a"
    a = make_db(tmp_path / "a.duckdb", [page(url, at(0), "p1")])
    b = make_db(tmp_path / "b.duckdb", [page(url, at(100), "p2")])
    warc = ("<urn:uuid:1>", "2025-11-24T16:00:00.000000Z", "sha1:A")   # with [warc] on
    # a: an older build's file, without the warc_* columns added since (NULL in its rows).
    for path, rows in ((a, [visit(url, 0, "new", 200, "first", "p1")]),
                       (b, [visit(url, 100, "revisit", 200, "changed", "p2") + warc,
                            visit(url, 200, "revisit", 304, "not_modified", "p2") + warc])):
        con = duckdb.connect(str(path))
        cols = SCHEMA["fetches"][:len(rows[0])]
        con.execute("CREATE TABLE fetches (" + ", ".join(f"{n} {t}" for n, t in cols) + ")")
        _append(con, "fetches", rows)
        con.close()
    out = tmp_path / "out.duckdb"
    merge([a, b], out)
    assert read(out, "SELECT peer FROM pages") == [("p2",)]
    assert read(out, "SELECT kind, status, change, warc_record_id FROM fetches ORDER BY fetched_at") == [
        ("new", 200, "first", None), ("revisit", 200, "changed", warc[0]), ("revisit", 304, "not_modified", warc[0])]


# -- what a killed peer leaves: its log, its journal, its stats -------------------------------

KILLED = """
import os, sys, duckdb
con = duckdb.connect(sys.argv[1])
con.execute(sys.argv[2])  # CREATE TABLE pages: in the write-ahead log only, as a kill -9 leaves it
for i in range(3):
    con.execute("INSERT INTO pages (url, host, status, fetched_at, elapsed_ms, peer) VALUES "
                "(?, 'k.test', 200, TIMESTAMP '2025-03-01 12:00:00', 5.0, 'p9')", [f"http://k.test/{i}"])
os.kill(os.getpid(), 9)
"""


def killed_data_dir(d: Path, *, journal: int = 0) -> Path:
    """``d`` as a peer killed before its first checkpoint leaves it: pages.duckdb without a
    table, its 3 rows in pages.duckdb.wal; and ``journal`` rows only the journal held."""
    from peer.core.seen.bloom import BloomFilter
    from peer.results.schema import PageRow
    from peer.state.journal import PeerState

    d.mkdir()
    ddl = "CREATE TABLE pages (" + ", ".join(f"{n} {t}" for n, t in SCHEMA["pages"]) + ")"
    proc = subprocess.run([sys.executable, "-c", KILLED, str(d / "pages.duckdb"), ddl], timeout=60)
    assert proc.returncode == -9
    assert (d / "pages.duckdb.wal").stat().st_size > 0
    state = PeerState(d / "state", "p9", "r")
    state.begin(BloomFilter(1000, 0.01), [], [], {})
    for i in range(journal):
        row = PageRow.of(url=f"http://k.test/j{i}", final_url=None, host="k.test", status=200,
                         content_type="text/html", bytes=10, title=None, n_links=0, depth=1,
                         error=None, elapsed_ms=4.0, fetched_at=1_740_830_400.0 + i)
        state.done(f"http://k.test/j{i}", row.values())
    state.commit()  # on disk, never closed: a kill -9
    return d


def files_of(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_a_killed_peers_directory_is_merged_with_its_log_and_journal_and_left_as_it_was(tmp_path):
    d = killed_data_dir(tmp_path / "p9", journal=2)
    before = files_of(d)
    out = tmp_path / "crawl.duckdb"
    res = call_cli(str(d), "-o", str(out))
    assert res.returncode == 0, res.stderr
    urls = [u for (u,) in read(out, "SELECT url FROM pages ORDER BY url")]
    assert urls == [f"http://k.test/{i}" for i in range(3)] + ["http://k.test/j0", "http://k.test/j1"]
    assert read(out, "SELECT DISTINCT peer FROM pages") == [("p9",)]
    # It says what it read, and warns that the peer did not stop cleanly.
    assert (f"input      {d}: 5 pages from pages.duckdb; write-ahead log replayed; 2 of them from "
            "the journal of state/; stats.json not found") in res.stdout.splitlines()
    assert "pages.duckdb.wal" in res.stderr and "2 page row(s) only its journal held" in res.stderr
    assert files_of(d) == before  # the operator's copy is left as it was

    # The file given alone, its .wal beside it: the same rows from the file (no journal).
    res = call_cli(str(d / "pages.duckdb"), "-o", str(tmp_path / "file.duckdb"))
    assert res.returncode == 0, res.stderr
    assert read(tmp_path / "file.duckdb", "SELECT count(*) FROM pages") == [(5,)]
    assert files_of(d) == before


def test_a_lone_file_whose_rows_are_in_a_log_not_copied_is_warned_of_and_fails_strict(tmp_path):
    d = killed_data_dir(tmp_path / "p9")
    other = make_db(tmp_path / "p1.duckdb", [page("http://h1.test/", at(1), "p1")])
    lone = Path(shutil.copy(d / "pages.duckdb", tmp_path / "p9.duckdb"))  # the .wal left behind
    out = tmp_path / "crawl.duckdb"
    res = call_cli(str(other), str(lone), "-o", str(out))
    assert res.returncode == 0, res.stderr
    assert (f"warning: {lone}: has no tables (its rows are in p9.duckdb.wal, which was not copied "
            "with it); skipped") in res.stderr
    assert f"input      {lone}: skipped; stats.json not found" in res.stdout.splitlines()
    assert read(out, "SELECT url FROM pages") == [("http://h1.test/",)]

    res = call_cli(str(other), str(lone), "-o", str(tmp_path / "strict.duckdb"), "--strict")
    assert res.returncode == 1
    assert res.stderr.splitlines()[-1] == ("error: --strict: 1 of 2 input(s) not as a clean stop "
                                           "leaves them (warnings above); nothing written")
    assert not (tmp_path / "strict.duckdb").exists() and leftovers(tmp_path) == []


def test_strict_fails_on_a_file_with_0_page_rows(tmp_path):
    empty = make_db(tmp_path / "empty.duckdb", [])
    other = make_db(tmp_path / "p1.duckdb", [page("http://h1.test/", at(1), "p1")])
    res = call_cli(str(other), str(empty), "-o", str(tmp_path / "crawl.duckdb"))
    assert res.returncode == 0 and f"warning: {empty}: 0 page rows" in res.stderr.splitlines()
    res = call_cli(str(other), str(empty), "-o", str(tmp_path / "strict.duckdb"), "--strict")
    assert res.returncode == 1 and f"warning: {empty}: 0 page rows" in res.stderr.splitlines()
    assert not (tmp_path / "strict.duckdb").exists()
    clean = call_cli(str(other), "-o", str(tmp_path / "clean.duckdb"), "--strict")
    assert clean.returncode == 0, clean.stderr


def test_a_data_directorys_stats_json_is_read_and_summed_once(tmp_path):
    import json

    from peer.core.run.stats import STATS_FILE

    d = tmp_path / "p1"
    d.mkdir()
    make_db(d / "pages.duckdb", [page("http://h1.test/", at(1), "p1")])
    (d / STATS_FILE).write_text(json.dumps({"peer": "p1", "pages": 7, "not_requested": {"robots": 4},
                                            "run_config": {"crawl": {"seeds": ["http://h1.test/"]}}}))
    res = call_cli(str(d), str(d / "pages.duckdb"), "-o", str(tmp_path / "crawl.duckdb"))
    assert res.returncode == 0, res.stderr
    total = json.loads((tmp_path / "crawl.stats.json").read_text())
    assert total["pages"] == 7 and total["not_requested"] == {"robots": 4}
    assert total["run_config"] == {"crawl": {"seeds": ["http://h1.test/"]}}
    assert f"input      {d}: 1 pages from pages.duckdb; stats.json read" in res.stdout.splitlines()


def test_an_earlier_runs_stats_json_beside_newer_rows_is_warned_of(tmp_path):
    import json

    from peer.core.run.stats import STATS_FILE

    d = tmp_path / "p1"
    d.mkdir()
    make_db(d / "pages.duckdb", [page("http://h1.test/a", at(-60), "p1"), page("http://h1.test/b", at(60), "p1")])
    (d / STATS_FILE).write_text(json.dumps({"peer": "p1", "pages": 1, "finish_time": "2025-03-01T12:00:00+00:00"}))
    res = call_cli(str(d), "-o", str(tmp_path / "crawl.duckdb"))
    assert res.returncode == 0, res.stderr
    assert (f"warning: {d / STATS_FILE}: is an earlier run's (2025-03-01T12:00:00+00:00): 1 page row(s) "
            "were fetched after it") in res.stderr


# -- --wacz (peer/results/wacz.py; docs/warc.md "WACZ") -----------------------------------


def test_wacz_without_warc_files_is_one_line_and_writes_nothing(three, tmp_path):
    res = call_cli(*map(str, three), "-o", str(tmp_path / "out.duckdb"), "--wacz", str(tmp_path / "out.wacz"))
    assert res.returncode == 2, res
    assert res.stderr.splitlines() == [f"error: {tmp_path / 'out.wacz'}: --wacz: the inputs have no WARC files "
                                       "to package ([warc] enabled = true writes them)"]
    assert not (tmp_path / "out.duckdb").exists() and not (tmp_path / "out.wacz").exists()


def test_wacz_holds_the_warc_files_stored_the_merged_index_the_pages_and_their_hashes(three, tmp_path):
    import hashlib
    import json
    import zipfile

    warc = tmp_path / "warc"
    warc.mkdir()
    (warc / "ringcrawl-p1-20251124160000000-00000.warc.gz").write_bytes(b"\x1f\x8b not read by the packager")
    line = ('com,h1)/1 20251124160000 {"url": "http://h1.test/1", "mime": "text/html", "status": "200", '
            '"digest": "sha1:X", "length": "10", "offset": "0", "filename": "ringcrawl-p1-20251124160000000-00000.warc.gz"}\n')
    css = line.replace("/1 ", "/s.css ").replace("h1.test/1", "h1.test/s.css").replace("text/html", "text/css")
    (warc / "ringcrawl-p1-20251124160000000-00000.cdxj").write_text(line + css)
    out, wacz = tmp_path / "out.duckdb", tmp_path / "out.wacz"
    res = call_cli(*map(str, three), "-o", str(out), "--wacz", str(wacz))
    assert res.returncode == 0, res.stderr
    assert f"wacz {wacz} (1 WARC file(s), 2 captures, 1 pages" in res.stdout
    with zipfile.ZipFile(wacz) as z:
        package = json.loads(z.read("datapackage.json"))
        assert package["wacz_version"] == "1.1.1" and package["profile"] == "data-package"
        digest = json.loads(z.read("datapackage-digest.json"))
        assert digest["hash"] == "sha256:" + hashlib.sha256(z.read("datapackage.json")).hexdigest()
        for r in package["resources"]:
            data = z.read(r["path"])
            assert (r["bytes"], r["hash"]) == (len(data), "sha256:" + hashlib.sha256(data).hexdigest()), r
        assert z.getinfo("archive/ringcrawl-p1-20251124160000000-00000.warc.gz").compress_type == zipfile.ZIP_STORED
        assert z.read("indexes/index.cdx").decode() == line + css
        pages = [json.loads(x) for x in z.read("pages/pages.jsonl").decode().splitlines()]
        assert pages[0]["format"] == "json-pages-1.0"
        assert [(p["url"], p["ts"]) for p in pages[1:]] == [("http://h1.test/1", "2025-11-24T16:00:00Z")]
    again = call_cli(*map(str, three), "-o", str(tmp_path / "again.duckdb"), "--wacz", str(wacz))
    assert again.returncode == 2 and again.stderr.splitlines() == [f"error: {wacz}: exists; pass --force to overwrite it"]
