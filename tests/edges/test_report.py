"""scripts/report.py: plots and index.html from a results file, as a user reads them."""

from __future__ import annotations

import contextlib
import html
import io
import random
import re
import struct
import subprocess
import sys
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest
from peer.commands import report as report_command
from peer.results import report

from peer.errors import ConfigError, StateError
from peer.results.store import SCHEMA
from ring.hashring import HashRing

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 1, 2, 3, 4, 5)
PEERS = ("p1", "p2", "p3")
HOSTS = tuple(f"s{i:03d}.web.test:8080" for i in range(12))
HOSTILE_URL = 'http://evil.test/"><script>alert("url")</script>'
HOSTILE_TITLE = "<script>alert('title')</script>"
HOSTILE_ERROR = "<img src=x onerror=alert(1)>$\\frac{$"
CONFIG_WEIGHTS = {"p1": 2.0, "p2": 1.0, "p3": 1.0, "p9": 1.0}
ALL_PNGS = {"rate.png", "polite.png", "pid.png", "status.png", "latency.png", "ring_share.png", "errors.png",
            "progress.png", "depth.png"}
POLITE = "Politeness: requests per second of the busiest hosts"


def make_db(path: Path, *, n_pages: int = 360, pid: bool = True, errors: bool = True,
            extra: bool = True) -> list[tuple]:
    """A crawl of 3 peers over ~60 s; returns its page rows."""
    rnd = random.Random(7)
    ring = HashRing(dict.fromkeys(PEERS, 1.0))
    rows = []
    for i in range(n_pages):
        host = rnd.choices(HOSTS, weights=range(1, len(HOSTS) + 1))[0]
        status, error = rnd.choices(
            [(200, None), (404, None), (301, None), (500, None), (None, "timeout"), (None, "dns")],
            weights=[80, 8, 5, 3, 3, 1] if errors else [80, 8, 5, 3, 0, 0])[0]
        rows.append((f"http://{host}/p{i}", None, host, status, "text/html", 1000, f"page {i}", 5, 1,
                     T0 + timedelta(seconds=60 * i / n_pages), rnd.lognormvariate(3, 1.5), error,
                     ring.owner(host), None, None, None))  # no sitemap hints
    if n_pages:
        # The slowest page, so the report's "slowest pages" table shows it.
        rows.append((HOSTILE_URL, None, HOSTS[0], 200, "text/html", 10, HOSTILE_TITLE, 0, 1,
                     T0 + timedelta(seconds=30), 99_999.0,
                     HOSTILE_ERROR if errors else None, ring.owner(HOSTS[0]), None, None, None))
    con = duckdb.connect(str(path))
    tables = ["pages"] + (["pid_trace"] if pid else []) + (["links"] if extra else [])
    for table in tables:
        con.execute(f"create table {table} ({', '.join(f'{c} {t}' for c, t in SCHEMA[table])})")
    app = con.appender("pages")
    app.append_rows([r + (None,) * (len(SCHEMA["pages"]) - len(r)) for r in rows])  # later columns NULL
    app.flush()
    if pid:
        con.executemany("insert into pid_trace values (?, ?, ?, ?, ?, ?)", [
            (h, T0 + timedelta(seconds=w), 8 + (w // 10 + k) % 5, 0.1 * (w // 10), 10.0, ring.owner(h))
            for k, h in enumerate(HOSTS) for w in range(10, 70, 10)])
    if extra:
        con.execute("insert into links values ('http://a/', 'http://b/'), ('http://a/', 'http://c/')")
        con.execute("create table items_products (url varchar, name varchar)")
        con.execute("insert into items_products select 'http://x/' || i, 'n' from range(7) t(i)")
    con.close()
    return rows


def png_dimensions(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name} is not a PNG"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert (length, kind) == (13, b"IHDR")
    return struct.unpack(">II", data[16:24])


def summary_cell(page: str, key: str) -> str:
    m = re.search(rf'<tr id="s-{key}"><th>[^<]*</th><td>([^<]*)</td></tr>', page)
    assert m, f"no summary row {key}"
    return m.group(1)


def img_sources(page: str) -> list[str]:
    return re.findall(r'<img src="([^"]+)"', page)


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("full")
    rows = make_db(tmp / "crawl.duckdb")
    # DuckDB refuses a read-write connection to a file this process holds
    # read-only, so this also checks that the report opens it read-only.
    reader = duckdb.connect(str(tmp / "crawl.duckdb"), read_only=True)
    try:
        summary = report.build_report(tmp / "crawl.duckdb", tmp / "out", top=2)
    finally:
        reader.close()
    return rows, summary, summary.index.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def sparse(tmp_path_factory):
    """No pid_trace, no errors, a stale pid.png in the output, ring shares from a cluster.toml."""
    tmp = tmp_path_factory.mktemp("sparse")
    make_db(tmp / "c.duckdb", n_pages=150, pid=False, errors=False, extra=False)
    toml = tmp / "cluster.toml"
    toml.write_text("[ring]\nvnodes = 64\n" + "".join(
        f'[[peer]]\nid = "{p}"\naddress = "tcp://127.0.0.1:{5701 + i}"\nweight = {w}\n'
        for i, (p, w) in enumerate(CONFIG_WEIGHTS.items())))
    out = tmp / "out"
    out.mkdir()
    (out / "pid.png").write_bytes(b"stale plot of an earlier report")
    summary = report.build_report(tmp / "c.duckdb", out, ring_config=toml)
    return toml, summary, summary.index.read_text(encoding="utf-8")


def test_index_shows_exactly_the_pngs_written_and_each_is_a_real_image(full):
    _, summary, page = full
    out = summary.index.parent
    assert summary.index == out / "index.html"
    assert summary.skipped == ()
    assert {p.name for p in summary.figures} == ALL_PNGS
    assert sorted(img_sources(page)) == sorted(p.name for p in out.glob("*.png"))
    assert sorted(img_sources(page)) == sorted(ALL_PNGS)
    from matplotlib.image import imread

    for png in summary.figures:
        width, height = png_dimensions(png)
        assert width > 100 and height > 100, png.name
        assert png.stat().st_size > 5_000, png.name
        assert imread(png).shape[:2] == (height, width)


def test_summary_numbers_match_the_data(full):
    rows, _, page = full
    assert summary_cell(page, "pages") == f"{len(rows):,}"
    assert summary_cell(page, "hosts") == str(len({r[2] for r in rows}))
    assert summary_cell(page, "peers") == str(len({r[12] for r in rows}))
    failed = Counter(r[11] for r in rows if r[11] is not None)
    cell = html.unescape(summary_cell(page, "failed"))
    assert sum(int(part.rsplit(": ", 1)[1]) for part in cell.split(" · ")) == sum(failed.values())
    assert f"timeout: {failed['timeout']}" in cell
    assert summary_cell(page, "answered") == f"{sum(r[3] is not None for r in rows):,}"
    assert summary_cell(page, "span") == "1m00s"
    assert summary_cell(page, "first") == "2026-01-02 03:04:05 UTC"
    statuses = Counter("error" if r[3] is None else str(r[3]) for r in rows)
    for code, n in statuses.items():
        assert f"{code}: {n:,}" in summary_cell(page, "status")
    assert summary_cell(page, "items") == "items_products: 7 rows"
    assert summary_cell(page, "links") == "2 rows"
    assert summary_cell(page, "bodies") == "absent"
    assert summary_cell(page, "pid_trace") == f"{6 * len(HOSTS)} rows"


def test_pid_plot_shows_the_busiest_hosts(full):
    rows, _, page = full
    busiest = [h for h, _ in Counter(r[2] for r in rows).most_common()]
    caption = page.split('src="pid.png"', 1)[1].split("</figcaption>", 1)[0]
    assert "the 2 host(s) with the most pages" in caption
    assert busiest[0] in caption and busiest[1] in caption
    assert not any(h in caption for h in busiest[2:])


def test_strings_from_the_data_are_escaped(full):
    _, summary, page = full
    assert "<script" not in page
    assert "<img src=x" not in page
    assert html_escaped(HOSTILE_TITLE) in page
    assert html_escaped(HOSTILE_URL) in page
    assert html_escaped(HOSTILE_ERROR) in page
    # The error kind with mathtext in it was drawn, not a crash or a skip.
    assert summary.index.parent / "errors.png" in summary.figures


def html_escaped(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace(
        '"', "&quot;").replace("'", "&#x27;")


def test_ring_share_without_config_is_equal_weights(full):
    _, _, page = full
    shares = HashRing(dict.fromkeys(PEERS, 1.0), vnodes=256).shares()
    for peer in PEERS:
        assert re.search(rf"<td>{peer}</td>.*?<td class=\"num\">{100 * shares[peer]:.1f}%</td></tr>", page)


def test_ring_share_from_cluster_toml_uses_its_weights_and_vnodes(sparse):
    toml, _, page = sparse
    shares = HashRing(CONFIG_WEIGHTS, vnodes=64).shares()
    for peer in PEERS:
        assert re.search(rf"<td>{peer}</td>.*?<td class=\"num\">{100 * shares[peer]:.1f}%</td></tr>", page)
    assert "On the ring but no pages: p9." in page
    assert str(toml) in summary_cell(page, "ring")


def test_missing_pid_trace_and_errors_skip_those_plots_and_say_why(sparse):
    _, summary, page = sparse
    out = summary.index.parent
    assert dict(summary.skipped) == {
        "PID trace of the busiest hosts": "c.duckdb has no pid_trace table",
        "Errors by kind": "no failed fetch (every error is NULL)",
    }
    assert "PID trace of the busiest hosts: not drawn, c.duckdb has no pid_trace table." in page
    assert "Errors by kind: not drawn, no failed fetch (every error is NULL)." in page
    assert sorted(img_sources(page)) == sorted(ALL_PNGS - {"pid.png", "errors.png"})
    # The stale pid.png of an earlier report is gone: the directory matches the page.
    assert sorted(p.name for p in out.glob("*.png")) == sorted(img_sources(page))
    assert summary_cell(page, "pid_trace") == "absent"
    assert summary_cell(page, "items") == "none"


def test_an_empty_pages_table_draws_nothing_and_says_so(tmp_path):
    make_db(tmp_path / "c.duckdb", n_pages=0, pid=False)
    summary = report.build_report(tmp_path / "c.duckdb", tmp_path / "out")
    page = summary.index.read_text()
    assert summary.figures == () and not list((tmp_path / "out").glob("*.png"))
    assert len(summary.skipped) == len(ALL_PNGS)
    assert page.count("not drawn, c.duckdb has no pages.") == len(ALL_PNGS)
    assert summary_cell(page, "pages") == "0"
    assert summary_cell(page, "span") == "n/a"


def test_a_file_a_running_peer_holds_is_one_clear_error(tmp_path):
    db = tmp_path / "c.duckdb"
    make_db(db, n_pages=5)
    hold = "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('open', flush=True); sys.stdin.read()"
    with subprocess.Popen([sys.executable, "-c", hold, str(db)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as writer:
        try:
            assert writer.stdout is not None and writer.stdout.readline() == "open\n"
            with pytest.raises(StateError, match="held for writing by another process"):
                report.build_report(db, tmp_path / "out")
        finally:
            writer.communicate(timeout=30)


@pytest.mark.parametrize("case", ["missing", "not duckdb", "no pages table", "out is a file", "top"])
def test_bad_inputs_raise_one_line_errors(tmp_path, case):
    db, out, top = tmp_path / "c.duckdb", tmp_path / "out", 4
    expected: tuple[type, str]
    if case == "missing":
        expected = (ConfigError, "no such file")
    elif case == "not duckdb":
        db.write_text("pages,hosts\n1,2\n")
        expected = (StateError, "not a DuckDB file")
    elif case == "no pages table":
        duckdb.connect(str(db)).execute("create table other (x int)").close()
        expected = (StateError, r"has no pages table \(tables: other\)")
    elif case == "out is a file":
        make_db(db, n_pages=5)
        out.write_text("")
        expected = (ConfigError, "exists and is not a directory")
    else:
        make_db(db, n_pages=5)
        top = 0
        expected = (ConfigError, "expected an integer from 1 to 16")
    with pytest.raises(expected[0], match=expected[1]) as info:
        report.build_report(db, out, top=top)
    assert "\n" not in str(info.value)
    assert not out.is_dir()  # nothing created on a mistake


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "scripts/report.py", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def call_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``report_command.main(args)`` in this process, as run_cli would see it: exit status, stdout, stderr.

    The same main() the script runs; a process start and the imports cost
    more than the report itself. run_cli keeps the script's own entry point tested.
    """
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = report_command.main(list(args))
        except SystemExit as stop:  # argparse's --help and usage errors, cli_main's exit 2
            code = stop.code if isinstance(stop.code, int) else 1
    return subprocess.CompletedProcess(["report.py", *args], code, out.getvalue(), err.getvalue())


@pytest.mark.parametrize("case", ["missing", "no pages table", "out is a file"])
def test_cli_mistakes_exit_2_with_one_line(tmp_path, case):
    db, out = tmp_path / "c.duckdb", tmp_path / "out"
    if case == "no pages table":
        duckdb.connect(str(db)).close()
    elif case == "out is a file":
        make_db(db, n_pages=5)
        out.write_text("")
    # "missing" as the real script, the others in process: the same main().
    res = (run_cli if case == "missing" else call_cli)(str(db), "-o", str(out))
    assert res.returncode == 2
    assert res.stdout == ""
    assert len(res.stderr.splitlines()) == 1 and res.stderr.startswith("error: "), res.stderr
    assert str(db if case != "out is a file" else out) in res.stderr


def test_cli_help_says_the_output_directory_is_overwritten():
    res = call_cli("--help")
    assert res.returncode == 0
    assert "overwritten" in res.stdout and "example:" in res.stdout


def caption_of(page: str, png: str) -> str:
    return page.split(f'src="{png}"', 1)[1].split("</figcaption>", 1)[0]


def make_short_crawl(path: Path) -> None:
    """Two hosts at 1 page/s for 20 s (a demo-sized crawl); fast.web.test has a burst of
    5 requests started in second 10. Requests start at fetched_at - elapsed_ms."""
    con = duckdb.connect(str(path))
    for table in ("pages", "pid_trace"):
        con.execute(f"create table {table} ({', '.join(f'{c} {t}' for c, t in SCHEMA[table])})")
    rows = []

    def add(host: str, start: float, elapsed_ms: float, status: int | None = 200,
            error: str | None = None) -> None:
        fetched = T0 + timedelta(seconds=start + elapsed_ms / 1000)
        rows.append((f"http://{host}/{len(rows)}", None, host, status, "text/html", 100, "t", 0, 1,
                     fetched, elapsed_ms, error, "p1", None, None, None))

    for k in range(20):
        add("fast.web.test", k + 0.5, 50.0)
        add("slow.web.test", k, 400.0)
    for start in (10.1, 10.3, 10.6, 10.8):
        add("fast.web.test", start, 50.0)
    # Answered in second 11, started in second 10: counted at its start.
    add("slow.web.test", 10.9, 300.0)
    # Never reached the server: not a request.
    add("fast.web.test", 3.1, 0.0, status=None, error="robots")
    app = con.appender("pages")
    app.append_rows([r + (None,) * (len(SCHEMA["pages"]) - len(r)) for r in rows])  # later columns NULL
    app.flush()
    con.executemany("insert into pid_trace values (?, ?, ?, ?, ?, ?)", [
        (h, T0 + timedelta(seconds=w), 5, 0.9 + w / 100, 5.0, "p1")
        for h in ("fast.web.test", "slow.web.test") for w in (5, 10, 15, 20)])
    con.close()


def test_politeness_bins_count_requests_at_their_start_and_show_a_second_over_the_setpoint(tmp_path):
    make_short_crawl(tmp_path / "c.duckdb")
    with duckdb.connect(str(tmp_path / "c.duckdb"), read_only=True) as con:
        series = report.politeness_series(con, top=2)
    assert series is not None
    assert series.hosts == ("fast.web.test", "slow.web.test")
    assert series.pages == {"fast.web.test": 24, "slow.web.test": 21}
    # The first request started at +0 s (slow's): bin k is [k, k + 1).
    fast, slow = series.counts["fast.web.test"], series.counts["slow.web.test"]
    assert series.bins == 20 and len(fast) == len(slow) == 20
    assert sum(fast) == 24 and sum(slow) == 21
    # The setpoint is 1/s: the burst's second is over it, and over the 1 s ceiling ceil(1.1) + 1 = 3.
    assert [k for k, n in enumerate(fast) if n > 3] == [10] and fast[10] == 5
    assert set(fast[:10] + fast[11:]) == {1}
    # +10.9 ended at +11.2: it is counted in second 10, where it started.
    assert slow[10] == 2 and slow[11] == 1


def test_politeness_panel_is_drawn_for_a_short_crawl_with_the_setpoint_from_the_config(tmp_path):
    make_short_crawl(tmp_path / "c.duckdb")
    toml = tmp_path / "cluster.toml"
    toml.write_text('[[peer]]\nid = "p1"\naddress = "tcp://127.0.0.1:5701"\n'
                    "[politeness]\nrate = 60.0\n")
    summary = report.build_report(tmp_path / "c.duckdb", tmp_path / "out", ring_config=toml, top=2)
    page = summary.index.read_text()
    assert tmp_path / "out" / "polite.png" in summary.figures
    caption = caption_of(page, "polite.png")
    assert f"setpoint of 1/s (dashed) and the ceiling of 3 requests in any 1 s (dotted); " \
           f"setpoint from politeness.rate = 60 pages/min of {toml}" in caption
    assert "fast.web.test: busiest 1 s 5, 1 s over the ceiling; slow.web.test: busiest 1 s 2, 0 s over" in caption
    assert "The PID&#x27;s delay after each window is on the right axis." in caption
    # Without --ring the setpoint comes from pid_trace: 5 pages a window, windows 5 s apart.
    # Only the caption is judged: report.captions is build_report's text without the PNGs.
    caption = report.captions(tmp_path / "c.duckdb", top=1)["polite.png"]
    assert "setpoint of 1/s" in caption
    assert "pid_trace: a setpoint of 5 pages a window over windows of 5 s" in caption


def test_politeness_panel_without_answered_requests_is_skipped_with_a_reason(tmp_path):
    db = tmp_path / "c.duckdb"
    con = duckdb.connect(str(db))
    con.execute(f"create table pages ({', '.join(f'{c} {t}' for c, t in SCHEMA['pages'])})")
    con.execute("insert into pages (url, host, status, fetched_at, elapsed_ms, error, peer) values "
                "('http://a.test/x', 'a.test', null, ?, 0.0, 'robots', 'p1')", [T0])
    con.close()
    summary = report.build_report(db, tmp_path / "out")
    assert dict(summary.skipped)[POLITE] == "no answered request has a fetched_at time"
    assert f"{POLITE}: not drawn, no answered request has a fetched_at time." in summary.index.read_text()
    # No rows at all: skipped too, with the file's reason.
    make_db(tmp_path / "e.duckdb", n_pages=0, pid=False)
    summary = report.build_report(tmp_path / "e.duckdb", tmp_path / "out2")
    assert dict(summary.skipped)[POLITE] == "e.duckdb has no pages"


# -- what a run did: pages apart from URLs never requested, depth, progress, items, config ------


@pytest.fixture(scope="module")
def a_run(tmp_path_factory):
    """A peer's data_dir: fetched pages at depths 0-2, robots exclusions, an items table
    with empty fields, and the stats.json the peer wrote."""
    import json

    tmp = tmp_path_factory.mktemp("run")
    db = tmp / "pages.duckdb"
    con = duckdb.connect(str(db))
    con.execute(f"create table pages ({', '.join(f'{c} {t}' for c, t in SCHEMA['pages'])})")
    rows = []
    for i in range(30):
        depth = 0 if i == 0 else 1 if i < 10 else 2
        rows.append((f"http://a.test/{i}", None, "a.test", 200 if i % 10 else 500, "text/html", 100,
                     f"t{i}", 4, depth, T0 + timedelta(seconds=i), 12.0, None if i % 10 else "http_5xx", "p1",
                     None, None, None))
    for i in range(7):  # disallowed by robots.txt: no request, no status, no time
        rows.append((f"http://a.test/private/{i}", None, "a.test", None, None, 0, None, 0, 2,
                     T0 + timedelta(seconds=30), 0.0, "robots", "p1", None, None, None))
    app = con.appender("pages")
    app.append_rows([r + (None,) * (len(SCHEMA["pages"]) - len(r)) for r in rows])  # later columns NULL
    app.flush()
    con.execute("create table items_book (url varchar, fetched_at timestamp, peer varchar, "
                "title varchar, authors varchar[])")
    con.execute("insert into items_book values ('http://a.test/1', null, 'p1', 'One', ['x']), "
                "('http://a.test/2', null, 'p1', '', []), ('http://a.test/3', null, 'p1', ' ', ['y']),"
                "('http://a.test/4', null, 'p1', 'Four <b>', null)")
    con.close()
    # Links out of scope leave no row: the report reads them from stats.json.
    (tmp / "stats.json").write_text(json.dumps({"pages": 30, "not_requested": {"robots": 7, "scope": 2},
                                                "run_config": {
        "crawl": {"seeds": ["http://a.test/0"], "allow_hosts": ["<a.test>"]}, "politeness": {"rate": 60.0}}}))
    # Through the command line (in process), into a directory that does not exist yet.
    res = call_cli(str(db), "-o", str(tmp / "report" / "new"), "--top", "3")
    assert res.returncode == 0, res.stderr
    return res, tmp / "report" / "new" / "index.html"


def test_cli_writes_the_report_and_prints_where(a_run):
    res, index = a_run
    assert res.stdout.splitlines()[-1] == f"report: {index}"
    assert "skipped: PID trace of the busiest hosts: pages.duckdb has no pid_trace table" in res.stdout
    assert index.is_file()


def run_page(a_run) -> str:
    return a_run[1].read_text(encoding="utf-8")


def test_pages_are_requests_and_urls_never_requested_are_apart(a_run):
    page = run_page(a_run)
    assert summary_cell(page, "pages") == "30"
    assert summary_cell(page, "not-requested") == "robots: 7 · scope: 2"
    assert summary_cell(page, "failed") == "http_5xx: 3"  # not the robots exclusions
    errors = page.split('id="errors"', 1)[1].split('id="not-requested"', 1)[0]
    assert "http_5xx" in errors and "robots" not in errors
    apart = page.split('id="not-requested"', 1)[1].split('id="items"', 1)[0]
    assert "<td>robots</td><td class=\"num\">7</td>" in apart


def test_progress_over_time_and_the_depth_histogram(a_run):
    page = run_page(a_run)
    assert "30 pages, 120 links" in caption_of(page, "progress.png")
    assert "the deepest is 2" in caption_of(page, "depth.png")


def test_item_quality_is_percent_empty_per_field_and_sample_rows(a_run):
    items = run_page(a_run).split('id="items"', 1)[1].split('id="config"', 1)[0]
    assert "4 rows" in items
    assert re.search(r"<td>title</td><td class=\"num\">50\.0%</td>", items)   # '' and ' '
    assert re.search(r"<td>authors</td><td class=\"num\">50\.0%</td>", items)  # [] and NULL
    assert "Four &lt;b&gt;" in items and "<b>" not in items  # a sample row, escaped


def test_the_config_the_run_used_comes_from_stats_json(a_run):
    cfg = run_page(a_run).split('id="config"', 1)[1]
    assert "<td>crawl.allow_hosts</td><td>[&quot;&lt;a.test&gt;&quot;]</td>" in cfg
    assert "<td>politeness.rate</td><td>60.0</td>" in cfg


def test_without_stats_json_the_page_says_where_it_would_be(full):
    _, _, page = full
    assert "No stats.json beside the results file" in page


def test_peer_shares_and_top_hosts_count_requests_only(tmp_path):
    # The Peers and Top-hosts tables counted rows never requested (robots
    # exclusions) that the page count leaves out: shares added up to 116%,
    # and exclusions showed as failures.
    from peer.results.report.facts import read_facts, table_columns

    db = tmp_path / "r.duckdb"
    con = duckdb.connect(str(db))
    con.execute(f"create table pages ({', '.join(f'{c} {t}' for c, t in SCHEMA['pages'])})")
    rows = [("http://a.test/1", "a.test", 200, 10.0, None, "p1"),
            ("http://a.test/2", "a.test", 200, 10.0, None, "p1"),
            ("http://a.test/3", "a.test", 503, 10.0, "http_5xx", "p1"),
            ("http://a.test/x", "a.test", None, 0.0, "robots", "p1"),
            ("http://a.test/y", "a.test", None, 0.0, "robots", "p1"),
            ("http://b.test/1", "b.test", 200, 10.0, None, "p2"),
            ("http://c.test/z", "c.test", None, 0.0, "robots", "p2")]
    for url, host, status, ms, err, peer in rows:
        con.execute("insert into pages (url, host, status, fetched_at, elapsed_ms, error, peer) "
                    "values (?, ?, ?, ?, ?, ?, ?)", [url, host, status, T0, ms, err, peer])
    facts = read_facts(con, db, table_columns(con))
    con.close()
    assert facts.pages == 4
    assert facts.peers == [("p1", 3, 1), ("p2", 1, 1)]
    assert sum(n for _, n, _ in facts.peers) == facts.pages  # shares add up to 100 %
    hosts = {h: (n, failed) for h, n, failed, _ in facts.top_hosts}
    assert hosts == {"a.test": (3, 1), "b.test": (1, 0)}  # c.test: nothing requested


def test_the_rate_plot_counts_requests_not_the_rows_never_requested(tmp_path):
    # A peer that recorded 15 robots exclusions and made 3 requests in one
    # second was drawn at 18 pages/s; the server saw 3.
    from peer.results.report.facts import read_facts, table_columns
    from peer.results.report.plots import rate_series

    db = tmp_path / "r.duckdb"
    con = duckdb.connect(str(db))
    con.execute(f"create table pages ({', '.join(f'{c} {t}' for c, t in SCHEMA['pages'])})")
    rows = [(f"http://a.test/{i}", 200, 10.0, None) for i in range(3)]
    rows += [(f"http://a.test/x{i}", None, 0.0, "robots") for i in range(15)]
    for url, status, ms, err in rows:
        con.execute("insert into pages (url, host, status, fetched_at, elapsed_ms, error, peer) "
                    "values (?, 'a.test', ?, ?, ?, ?, 'p1')", [url, status, T0, ms, err])
    facts = read_facts(con, db, table_columns(con))
    series = rate_series(con, facts)
    con.close()
    assert set(series) == {"p1"}
    assert series["p1"].sum() == 3 == facts.pages


# -- a continuous crawl: pages and visits apart, every run kept ------------------------------------


def test_a_continuous_crawl_shows_its_pages_and_its_visits_and_every_run(tmp_path):
    import json

    from peer.core.run.stats import keep_earlier_runs

    db = tmp_path / "pages.duckdb"
    con = duckdb.connect(str(db))
    for table in ("pages", "fetches"):
        con.execute(f"create table {table} ({', '.join(f'{c} {t}' for c, t in SCHEMA[table])})")
    urls = [f"http://a.test/{i}" for i in range(21)]
    visits = []
    for k in range(4):   # 21 pages, each visited 4 times: 21 first visits, 63 revisits, over two runs
        for i, url in enumerate(urls):
            visits.append((url, "a.test", T0 + timedelta(minutes=10 * k, seconds=i), "new" if k == 0 else "revisit",
                           200, "first" if k == 0 else "unchanged", False, "sha1:X", None, None, k > 0, 100,
                           5.0, None, 10.0, 15.0, None, "p1", None, None, None))  # no [warc]
    app = con.appender("fetches")
    app.append_rows(visits)
    app.flush()
    last = [(u, None, "a.test", 200, "text/html", 100, "t", 0, 0, T0 + timedelta(minutes=30, seconds=i), 5.0,
             None, "p1") for i, u in enumerate(urls)]
    app = con.appender("pages")
    app.append_rows([r + (None,) * (len(SCHEMA["pages"]) - len(r)) for r in last])
    app.flush()
    con.close()
    runs = []
    for n, (pages, revisits) in enumerate(((42, 21), (42, 42)), start=1):
        runs.append({"format": 1, "peer": "p1", "run": n, "start_time": f"2026-01-02T0{2 + n}:00:00+00:00",
                     "finish_time": f"2026-01-02T0{2 + n}:20:00+00:00", "finish_reason": "interrupted",
                     "pages": pages, "revisit": {"visits_revisit": revisits}, "run_config": {}})
    (tmp_path / "stats.json").write_text(json.dumps(keep_earlier_runs(runs[1], runs[0])))
    summary = report.build_report(db, tmp_path / "out")
    page = summary.index.read_text(encoding="utf-8")
    assert summary_cell(page, "pages") == "21"
    assert summary_cell(page, "visits") == "84: 21 first visits, 63 revisits, of 21 URLs"
    assert summary_cell(page, "first") == "2026-01-02 03:04:05 UTC"   # the first run's first visit
    assert summary_cell(page, "span") == "30m20s"
    table = page.split('id="runs"', 1)[1].split('id="peers"', 1)[0]
    cells = [c for row in re.findall(r"<tr>(.*?)</tr>", table) if (c := re.findall(r"<td[^>]*>([^<]*)</td>", row))]
    assert [(c[0], c[5], c[6]) for c in cells] == [("1", "42", "21"), ("2", "42", "42"), ("all", "84", "63")]


def test_a_merged_stats_json_lists_every_peers_runs_and_sums_the_last():
    from peer.core.run.stats import keep_earlier_runs, sum_stats
    from peer.results.report.page import run_rows

    def run(peer: str, n: int, pages: int) -> dict:
        return {"peer": peer, "run": n, "start_time": f"2026-01-0{n}T00:00:00+00:00", "finish_time": "",
                "finish_reason": "interrupted", "pages": pages, "revisit": {"visits_revisit": pages // 2}}

    merged = sum_stats([keep_earlier_runs(run("p1", 2, 10), run("p1", 1, 4)),
                        keep_earlier_runs(run("p2", 2, 20), run("p2", 1, 6))])
    rows = run_rows(merged)
    assert [(r[0], r[1], r[5], r[6]) for r in rows] == [
        ("1", "p1", 4, 2), ("1", "p2", 6, 3), ("last", "p1, p2", 30, 15), ("all", "", 40, 20)]


def test_politeness_panel_draws_each_host_s_own_setpoint_from_its_site_block(tmp_path):
    # slow.web.test runs at its [[site]] block's 2/s, not the global 1/s: its setpoint and
    # ceiling are its own (before, every host was drawn against the global setpoint).
    make_short_crawl(tmp_path / "c.duckdb")
    toml = tmp_path / "cluster.toml"
    toml.write_text('[[peer]]\nid = "p1"\naddress = "tcp://127.0.0.1:5701"\n'
                    "[politeness]\nrate = 60.0\n"
                    '[[site]]\nhosts = ["slow.web.test"]\nrate = 120.0\nmax_delay = 30.0\n')
    caption = report.captions(tmp_path / "c.duckdb", ring_config=toml, top=2)["polite.png"]
    assert "fast.web.test (setpoint 1/s, ceiling 3): busiest 1 s 5, 1 s over the ceiling" in caption
    assert "slow.web.test (setpoint 2/s, ceiling 4): busiest 1 s 2, 0 s over" in caption
    assert f"politeness.rate = 60 pages/min of {toml}, a [[site]] block's rate for its hosts" in caption
    # From pid_trace, each host's own setpoint too: slow.web.test's windows hold 10 pages.
    con = duckdb.connect(str(tmp_path / "c.duckdb"))
    con.execute("update pid_trace set setpoint = 10.0 where host = 'slow.web.test'")
    con.close()
    caption = report.captions(tmp_path / "c.duckdb", top=2)["polite.png"]
    assert "fast.web.test (setpoint 1/s, ceiling 3)" in caption
    assert "slow.web.test (setpoint 2/s, ceiling 4)" in caption
