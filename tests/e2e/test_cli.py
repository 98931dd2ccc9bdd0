"""python -m peer (and webfarm.py): a peer that cannot start says why in one line, exit 2.

Every case runs the command's ``main(argv)`` in this process (tests/support/clirun.py),
as a user would run the command, and checks what the user sees: exit status
2, no traceback, and a last line that names the thing at fault and the way
out. trio hands these errors over wrapped in exception groups;
peer.errors.user_error unwraps them. One crawl runs as a real ``python -m
peer`` process, asked on a real terminal (a pty).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from clirun import Result, WebThread, error_line, run_main, solo_toml, web_thread
from ringharness import cluster_text, free_ports
from peer.core.urls.rules import DEFAULT_SKIP_EXTENSIONS
from ring.tools.logs import parse_stamp

ROOT = Path(__file__).resolve().parents[2]
#: The smallest cluster.toml (tests/core/test_config.py's).
MINIMAL = """
[[peer]]
id = "p1"
address = "tcp://127.0.0.1:5701"
"""


def peer(*args: str, tty: bool = False, answers: str = "") -> Result:
    """``python -m peer ARGS``, in this process."""
    from peer.commands.cli import main

    return run_main(main, args, tty=tty, answers=answers)


def webfarm(*args: str) -> Result:
    """``scripts/webfarm.py ARGS``, in this process (its main is localweb.webfarm's)."""
    from localweb.webfarm import main

    return run_main(main, args)


def two_peers(tmp_path: Path, p1: str) -> Path:
    """A cluster.toml of p1 at ``p1`` and p2 on a free loopback port; no web is needed."""
    (other,) = free_ports(1)
    toml = tmp_path / "cluster.toml"
    toml.write_text(f"""
[ring]
name = "test"

[[peer]]
id = "p1"
address = "{p1}"
data_dir = "{tmp_path / 'p1'}"

[[peer]]
id = "p2"
address = "tcp://127.0.0.1:{other}"
data_dir = "{tmp_path / 'p2'}"

[crawl]
seeds = ["http://s001.web.test/"]
""")
    return toml


# --- the ring's address ---------------------------------------------------------------


def test_a_ring_port_in_use_is_one_line_naming_the_port(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        toml = two_peers(tmp_path, f"tcp://127.0.0.1:{port}")
        res = peer("--ring", str(toml), "--id", "p1")
    line = error_line(res)
    assert f"peer p1 cannot listen on tcp://127.0.0.1:{port}" in line
    assert f"port {port} is in use by another process" in line
    assert f"correct its address in {toml}" in line


def test_a_joining_peer_on_a_busy_port_is_told_to_pass_another_address(tmp_path):
    toml = two_peers(tmp_path, f"tcp://127.0.0.1:{free_ports(1)[0]}")
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        res = peer("--ring", str(toml), "--id", "p3", "--data-dir",
                   str(tmp_path / "p3"), "--address", f"tcp://127.0.0.1:{port}")
    line = error_line(res)
    assert f"peer p3 cannot listen on tcp://127.0.0.1:{port}" in line
    assert "in use by another process" in line and "pass another --address" in line


def test_a_bind_in_use_is_one_line_naming_the_bind(tmp_path):
    # p1 is advertised at one port and binds another, which is taken: the
    # line names where it listens and the key to correct (before: no bind key).
    (advertised,) = free_ports(1)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        toml = two_peers(tmp_path, f"tcp://127.0.0.1:{advertised}")
        toml.write_text(toml.read_text().replace(
            f'address = "tcp://127.0.0.1:{advertised}"\n',
            f'address = "tcp://127.0.0.1:{advertised}"\nbind = "tcp://127.0.0.1:{port}"\n', 1))
        res = peer("--ring", str(toml), "--id", "p1")
    line = error_line(res)
    assert f"peer p1 cannot listen on tcp://127.0.0.1:{port}" in line
    assert f"port {port} is in use by another process" in line
    assert f"correct its bind in {toml}" in line


def test_a_joining_peer_binding_a_busy_port_is_told_to_pass_another_bind(tmp_path):
    toml = two_peers(tmp_path, f"tcp://127.0.0.1:{free_ports(1)[0]}")
    (advertised,) = free_ports(1)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        res = peer("--ring", str(toml), "--id", "p3", "--data-dir", str(tmp_path / "p3"),
                   "--address", f"tcp://127.0.0.1:{advertised}", "--bind", f"tcp://127.0.0.1:{port}")
    line = error_line(res)
    assert f"peer p3 cannot listen on tcp://127.0.0.1:{port}" in line and "pass another --bind" in line


@pytest.mark.parametrize("bind", ["0.0.0.0:5555", "tcp://a..b:5555", "tcp://[::g]:5555"])
def test_a_joining_peer_with_a_bad_bind_is_one_line(tmp_path, bind):
    toml = two_peers(tmp_path, f"tcp://127.0.0.1:{free_ports(1)[0]}")
    res = peer("--ring", str(toml), "--id", "p3", "--data-dir", str(tmp_path / "p3"),
               "--address", "tcp://ringcrawl-3.ringcrawl:5555", "--bind", bind)
    line = error_line(res)
    assert line.startswith("error: --bind") and repr(bind) in line


def test_an_address_not_on_this_machine_is_one_line(tmp_path):
    # 192.0.2.0/24 is TEST-NET-1 (RFC 5737): on no machine. p1 *binds* it (a
    # peer binds its own address and connects only to the others), so bind()
    # fails at once with EADDRNOTAVAIL and no packet leaves.
    (port,) = free_ports(1)
    with socket.socket() as probe:
        try:
            probe.bind(("192.0.2.1", port))
        except OSError as e:
            assert e.errno == errno.EADDRNOTAVAIL
        else:
            pytest.skip("this machine has 192.0.2.1")
    toml = two_peers(tmp_path, f"tcp://192.0.2.1:{port}")
    res = peer("--ring", str(toml), "--id", "p1")
    line = error_line(res)
    assert f"cannot listen on tcp://192.0.2.1:{port}" in line
    assert "192.0.2.1 is not an address of this machine" in line
    assert f"correct its address in {toml}" in line


# --- the data_dir of an earlier crawl ----------------------------------------------------


@pytest.fixture(scope="module")
def crawled(tmp_path_factory) -> Path:
    """The data_dir of a finished solo crawl of ring "other" (results and crawl state)."""
    tmp = tmp_path_factory.mktemp("crawled")
    with web_thread(hosts=1, pages=4, links=3, shop=False) as web:
        toml = tmp / "cluster.toml"
        toml.write_text(cluster_text(tmp, web.port, 1, ring="other"))
        res = peer("--ring", str(toml), "--progress", "1")
    assert res.returncode == 0 and "crawl finished" in res.stdout, res.stderr
    assert any((tmp / "p1" / "state").glob("snapshot-*.msgpack"))
    return tmp / "p1"


def resume(tmp_path: Path, crawled: Path, ring: str = "other") -> tuple[Path, Path]:
    """A copy of ``crawled`` and a cluster.toml of ring ``ring`` whose p1 resumes it (--resume:
    the crawl finished, and its seed's port differs)."""
    data = tmp_path / "p1"
    shutil.copytree(crawled, data)
    toml = tmp_path / "cluster.toml"
    # Port 9 (discard): nothing is fetched, the error comes first.
    toml.write_text(cluster_text(tmp_path, 9, 1, ring=ring))
    return toml, data


@contextlib.contextmanager
def held_open(results: Path) -> Iterator[subprocess.Popen]:
    """A live process that holds ``results`` open for writing, as a running peer does."""
    with subprocess.Popen(
            [sys.executable, "-c", "import duckdb, sys, time\n"
             "con = duckdb.connect(sys.argv[1])\nprint('open', flush=True)\ntime.sleep(120)\n",
             str(results)], stdout=subprocess.PIPE, text=True, env=os.environ) as holder:
        try:
            assert holder.stdout.readline() == "open\n"  # type: ignore[union-attr]
            yield holder
        finally:
            holder.kill()
            holder.wait(timeout=30)


def test_a_corrupt_state_file_is_one_line_naming_the_file(tmp_path, crawled):
    toml, data = resume(tmp_path, crawled)
    (snap,) = (data / "state").glob("snapshot-*.msgpack")
    snap.write_bytes(b"not a snapshot at all")
    res = peer("--ring", str(toml), "--resume")
    line = error_line(res)
    assert str(snap) in line and "not a complete snapshot" in line
    assert "--fresh" in line and f"move {data / 'state'} away" in line
    assert snap.read_bytes() == b"not a snapshot at all"  # nothing "repaired" behind the user's back


def test_state_of_another_ring_is_one_line(tmp_path, crawled):
    toml, data = resume(tmp_path, crawled, ring="test")
    res = peer("--ring", str(toml), "--resume")
    line = error_line(res)
    assert "state of peer 'p1' in ring 'other'" in line
    assert "this is peer 'p1' in ring 'test'" in line
    assert "--fresh" in line


def test_a_results_file_held_by_a_live_process_names_its_pid(tmp_path, crawled):
    toml, data = resume(tmp_path, crawled)
    results = data / "pages.duckdb"
    with held_open(results) as holder:
        res = peer("--ring", str(toml), "--resume")
    line = error_line(res)
    assert str(results) in line
    assert f"held open by process {holder.pid}" in line
    assert "another peer may be running with this data_dir" in line


def test_a_second_copy_of_a_running_peer_is_refused_before_it_says_anything_of_the_state(
        tmp_path, crawled):
    # It said "resuming ... was interrupted (killed or crashed)" first, then
    # refused: the crawl was neither interrupted nor resumed.
    toml, data = resume(tmp_path, crawled)
    with held_open(data / "pages.duckdb") as holder:
        res = peer("--ring", str(toml), "--resume")
    assert res.returncode != 0
    assert f"held open by process {holder.pid}" in error_line(res)
    assert "resuming" not in res.stderr and "interrupted" not in res.stderr, res.stderr


def test_fresh_deletes_nothing_a_live_process_holds(tmp_path, crawled):
    toml, data = resume(tmp_path, crawled)
    results = data / "pages.duckdb"
    before = sorted(p.name for p in data.rglob("*"))
    with held_open(results) as holder:
        res = peer("--ring", str(toml), "--fresh", "--yes")
    line = error_line(res)
    assert f"held open by process {holder.pid}" in line and "nothing changed" in line
    assert sorted(p.name for p in data.rglob("*")) == before


# --- the local web ------------------------------------------------------------------------


def test_webfarm_on_a_busy_port_is_one_line(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        res = webfarm("--port", str(port))
    line = error_line(res, "webfarm: ")
    assert f"cannot listen on 127.0.0.1:{port}" in line and "in use" in line
    assert "another --port" in line


def test_webfarm_with_an_unwritable_log_is_one_line(tmp_path):
    log = tmp_path / "missing-dir" / "requests.jsonl"
    res = webfarm("--port", "0", "--log", str(log))
    line = error_line(res, "webfarm: ")
    assert f"cannot open the request log {log}" in line


def test_a_joining_peer_with_a_weight_over_the_limit_is_one_line(tmp_path):
    toml = two_peers(tmp_path, f"tcp://127.0.0.1:{free_ports(1)[0]}")
    (port,) = free_ports(1)
    res = peer("--ring", str(toml), "--id", "p3", "--data-dir", str(tmp_path / "p3"),
               "--address", f"tcp://127.0.0.1:{port}", "--weight", "50")
    assert "--weight" in error_line(res) and "<= 10" in error_line(res)


def test_a_joining_peer_with_a_bad_metrics_address_is_one_line(tmp_path):
    toml = two_peers(tmp_path, f"tcp://127.0.0.1:{free_ports(1)[0]}")
    (port,) = free_ports(1)
    res = peer("--ring", str(toml), "--id", "p3", "--data-dir", str(tmp_path / "p3"),
               "--address", f"tcp://127.0.0.1:{port}", "--metrics-address", "http://127.0.0.1:9101")
    line = error_line(res)
    assert line.startswith("error: --metrics-address: expected host:port such as '127.0.0.1:9101'"), line


@pytest.mark.parametrize("flags", [["--data-dir", "elsewhere"], ["--weight", "2"],
                                   ["--data-dir", "elsewhere", "--weight", "2"],
                                   ["--bind", "tcp://0.0.0.0:5555"],
                                   ["--metrics-address", "127.0.0.1:9101"]])
def test_join_flags_without_address_are_refused_not_ignored(tmp_path, flags):
    # A listed peer takes data_dir and weight from cluster.toml: these were
    # silently ignored, and the results went where the user did not look.
    toml = two_peers(tmp_path, f"tcp://127.0.0.1:{free_ports(1)[0]}")
    res = peer("--ring", str(toml), "--id", "p1", *flags)
    assert res.returncode == 2
    line = error_line(res)
    assert "only for a peer joining with --address" in line
    assert all(f in line for f in flags if f.startswith("--"))
    assert not (tmp_path / "elsewhere").exists()


# --- runs: resume, fresh, ask or refuse (peer/core/run/runs.py) ------------------------------------


@pytest.fixture(scope="module")
def web() -> Iterator[WebThread]:
    """The local web (one host and its shop) on a free port, with its request log."""
    with web_thread(hosts=1) as w:
        yield w


def requested(web: WebThread, since: int = 0) -> list[str]:
    """Page URLs the server saw (robots.txt left out), from request ``since`` of its log."""
    return [f"http://{r.host}:{web.port}{r.target}" for r in web.requests()[since:]
            if not r.target.startswith("/robots.txt")]


def log_lines(web: WebThread) -> int:
    return len(web.requests())


def crawl(toml: Path, *flags: str) -> Result:
    return peer("--ring", str(toml), "--progress", "0.5", *flags)


def test_a_solo_crawl_counts_only_requests_as_pages_and_writes_stats(tmp_path, web):
    import json

    port = web.port
    since = log_lines(web)
    # 20 pages a second: the crawl lasts about a second, so the progress
    # line (every 0.05 s) is written; unpaced it could end before the first.
    res = crawl(solo_toml(tmp_path, port, rate=1200.0), "--progress", "0.05")
    assert res.returncode == 0, res.stderr
    assert "curve_keys" not in res.stderr  # a solo peer has no ring to warn about
    seen = requested(web, since)
    stats = json.loads((tmp_path / "solo" / "stats.json").read_text())
    # The server's log is the judge: "pages" are the requests it saw.
    assert stats["pages"] == len(seen) > 0
    assert f"{len(seen)} pages fetched this run" in res.stdout
    assert f"{len(seen):,} pages in all, {len(seen):,} fetched this run" in res.stdout
    # Robots exclusions are counted apart, and were never requested.
    import duckdb

    with duckdb.connect(str(tmp_path / "solo" / "pages.duckdb"), read_only=True) as con:
        robots = [u for (u,) in con.execute("select url from pages where error = 'robots'").fetchall()]
    assert robots and stats["not_requested"].get("robots") == len(robots)
    assert not set(robots) & set(seen)
    assert f"not requested: robots {len(robots)}" in res.stdout
    assert stats["finish_reason"] == "frontier empty" and stats["run"] == 1
    assert sum(stats["status_counts"].values()) == stats["responses"] == len(seen)
    assert stats["items"] == {} and stats["items_total"] == 0  # no [extract] rules here
    assert stats["run_config"]["crawl"]["allow_hosts"] == ["*.web.test"]
    assert "dropped" not in stats and stats["start_time"] <= stats["finish_time"]
    # The progress line: pages, elapsed time, hosts; never the same line twice in a row.
    progress = [line.split("peer.engine: ", 1)[1] for line in res.stderr.splitlines()
                if "peer.engine: " in line and ": pages " in line]
    assert progress and all("/s now)" in p and "waiting on politeness" in p for p in progress)
    bodies = [p.split(": ", 1)[1] for p in progress]
    assert all(a != b for a, b in zip(bodies, bodies[1:]))


def _stamp(line: str) -> float:
    """Epoch seconds of a log line's stamp (``2026-12-02T01:21:00.123Z ...``: UTC, with its zone)."""
    return parse_stamp(line.split(" ", 1)[0])


def test_a_seed_with_nothing_listening_is_said_at_once_and_given_up_after_the_tries(tmp_path):
    # A wrong port: one warning, then 20 minutes of suppressed progress lines
    # (robots_retry 600 s, twice) and an exit with 0 pages, naming nothing.
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    toml = solo_toml(tmp_path, port, extra="robots_retry = 0.3\nrobots_tries = 3")
    began = time.monotonic()
    res = crawl(toml, "--progress", "0.2")
    took = time.monotonic() - began
    lines = res.stderr.splitlines()
    url = f"http://s001.web.test:{port}/robots.txt"
    said = [ln for ln in lines if f"robots.txt {url} unreachable: connection refused on port {port}" in ln]
    assert len(said) == 1, res.stderr
    assert "tried again in 0.3s (2 of 3), then its URLs are recorded as 'connect' " \
        "(crawl.robots_retry, crawl.robots_tries)" in said[0]
    assert _stamp(said[0]) - _stamp(lines[0]) < 1.0  # at once, not after the first retry
    # One short line for the second try, one for the end; no more.
    robots = [ln for ln in lines if "robots.txt" in ln and "WARNING" in ln]
    assert [("still unreachable" in ln, "after 3 tries" in ln) for ln in robots] == \
        [(False, False), (True, False), (False, True)], res.stderr
    assert "its 1 queued URL is recorded as 'connect'" in robots[-1]
    # While it waits, the progress line names it (0.3 s, then 0.6 s of waits).
    held = [ln for ln in lines if ": pages " in ln and "1 held: robots.txt of s001.web.test" in ln]
    assert held and all(re.search(rf"\(connection refused on port {port}\), try [23] of 3 "
                                  r"\(crawl.robots_tries\), retry in", ln) for ln in held), held
    assert took < 30, took  # 0.9 s of waits; generous for a loaded machine
    import duckdb

    with duckdb.connect(str(tmp_path / "solo" / "pages.duckdb"), read_only=True) as con:
        assert con.execute("select url, error from pages").fetchall() == [
            (f"http://s001.web.test:{port}/", "connect")]


def test_a_finished_crawl_is_not_resumed_without_a_terminal(tmp_path, web):
    port = web.port
    toml = solo_toml(tmp_path, port)
    assert crawl(toml).returncode == 0
    results = tmp_path / "solo" / "pages.duckdb"
    before = results.stat().st_mtime_ns
    since = log_lines(web)
    line = error_line(crawl(toml))
    assert "the last run finished (frontier empty" in line
    assert "pass --resume to continue it, or --fresh" in line
    assert results.stat().st_mtime_ns == before and log_lines(web) == since  # nothing touched


def test_resume_separates_this_runs_pages_from_the_files_total(tmp_path, web):
    port = web.port
    toml = solo_toml(tmp_path, port, extra="max_pages = 4")
    first = crawl(toml)
    assert first.returncode == 0 and "(max_pages reached)" in first.stdout
    toml.write_text(toml.read_text().replace("max_pages = 4", "max_pages = 7"))
    since = log_lines(web)
    res = crawl(toml, "--resume")
    assert res.returncode == 0, res.stderr
    n = len(requested(web, since))
    assert n == 3  # max_pages counts the state's pages: 4 before, 3 now
    assert "resuming the crawl state in" in res.stderr and "the last run finished (max_pages reached, 4 pages)" in res.stderr
    assert "7 pages in all, 3 fetched this run, 4 by 1 earlier run(s)" in res.stdout


def test_a_changed_scope_is_noticed_and_reported(tmp_path, web):
    port = web.port
    toml = solo_toml(tmp_path, port, allow='["s001.web.test"]')
    assert crawl(toml).returncode == 0
    toml.write_text(toml.read_text().replace('["s001.web.test"]', '["*.web.test"]'))
    line = error_line(crawl(toml))
    assert "since then: crawl.allow_hosts +[*.web.test] -[s001.web.test]" in line
    res = crawl(toml, "--resume")
    assert res.returncode == 0
    assert "WARNING peer: the scope changed since this crawl state was written: crawl.allow_hosts" in res.stderr
    assert "--fresh recrawls with the new scope" in res.stderr


def test_an_interrupted_run_resumes_without_a_terminal(tmp_path, web):
    import json

    port = web.port
    toml = solo_toml(tmp_path, port)
    assert crawl(toml).returncode == 0
    record = tmp_path / "solo" / "state" / "run.json"
    doc = json.loads(record.read_text())
    doc.update(ended=None, stop_reason="")  # as a kill -9 leaves it
    record.write_text(json.dumps(doc))
    res = crawl(toml)
    assert res.returncode == 0, res.stderr
    assert "resuming the crawl state" in res.stderr and "was interrupted" in res.stderr
    assert json.loads(record.read_text())["runs"] == 2


def test_a_terminal_is_asked_and_fresh_starts_over(tmp_path, web):
    import pty

    port = web.port
    toml = solo_toml(tmp_path, port)
    assert crawl(toml).returncode == 0
    since = log_lines(web)
    leader, follower = pty.openpty()
    try:
        os.write(leader, b"f\n")
        res = subprocess.run([sys.executable, "-m", "peer", "--ring", str(toml)], stdin=follower,
                             capture_output=True, text=True, cwd=ROOT, env=os.environ, timeout=120)
    finally:
        os.close(leader)
        os.close(follower)
    assert res.returncode == 0, res.stderr
    assert "[r]esume it, start [f]resh" in res.stdout
    assert len(requested(web, since)) > 0  # crawled again from the start
    assert "pages in all" in res.stdout and "earlier run" not in res.stdout


def test_fresh_and_resume_together_is_one_line(tmp_path, web):
    port = web.port
    line = error_line(crawl(solo_toml(tmp_path, port), "--fresh", "--resume"))
    assert "--fresh and --resume" in line


# --- --check warnings -------------------------------------------------------------------


def check_warnings(toml: Path, *, unreachable: bool = True) -> list[str]:
    """The warnings of ``--check``; without ``unreachable``, not those of seed hosts where
    nothing listens (the tests that judge the config alone point at no web)."""
    res = peer("--ring", str(toml), "--check")
    assert res.returncode == 0, res.stderr
    return [line for line in res.stdout.splitlines() if line.startswith("warning: ")
            and (unreachable or "nothing answers" not in line)]


def test_check_warns_about_no_seeds(tmp_path):
    (w,) = check_warnings(solo_toml(tmp_path, 9, seeds="[]"))
    assert "crawl.seeds is empty" in w and "0 pages" in w


def test_check_warns_about_a_seed_out_of_scope(tmp_path):
    toml = solo_toml(tmp_path, 9, seeds='["http://s001.web.test/", "http://other.example/"]')
    (w,) = check_warnings(toml, unreachable=False)
    assert "crawl.seeds[1] 'http://other.example/' is out of scope" in w
    assert "matches no crawl.allow_hosts pattern" in w


def test_check_prints_the_url_rules_and_warns_of_a_seed_they_exclude(tmp_path):
    toml = solo_toml(tmp_path, 9, seeds='["http://s001.web.test/?utm_source=x", "http://s001.web.test/a.PDF", '
                     '"http://s001.web.test/search?q=1", "http://s001.web.test/library/"]',
                     extra='rules = ["exclude:re:[?&]q=", "include:*/library/*"]\nsort_query = true')
    res = peer("--ring", str(toml), "--check")
    assert res.returncode == 0, res.stderr
    (line,) = [x for x in res.stdout.splitlines() if x.startswith("   url rules: ")]
    assert line == ("   url rules: exclude 're:[?&]q=', include '*/library/*'; matching none: excluded; "
                    f"the default {len(DEFAULT_SKIP_EXTENSIONS)} extensions skipped; params stripped: the default "
                    "17 (utm_*, fbclid, gclid...); query sorted")
    warned = [w for w in check_warnings(toml, unreachable=False) if "out of scope" in w]
    assert warned == [
        f"warning: {toml}: crawl.seeds[0] 'http://s001.web.test/?utm_source=x' is out of scope (excluded by "
        "crawl.rules: no rule matches, and the list has include rules): it will not be crawled",
        f"warning: {toml}: crawl.seeds[1] 'http://s001.web.test/a.PDF' is out of scope (excluded by "
        "crawl.skip_extensions ('pdf')): it will not be crawled",
        f"warning: {toml}: crawl.seeds[2] 'http://s001.web.test/search?q=1' is out of scope (excluded by "
        "crawl.rules[0] 're:[?&]q='): it will not be crawled",
    ]


def test_check_prints_the_content_codings_asked_for(tmp_path):
    res = peer("--ring", str(solo_toml(tmp_path, 9)), "--check")
    assert res.returncode == 0, res.stderr
    assert ("   content codings: Accept-Encoding gzip, deflate, br, zstd (crawl.accept_encodings), "
            "zstd window up to 8,388,608 bytes") in res.stdout.splitlines()
    res = peer("--ring", str(solo_toml(tmp_path, 9, extra='accept_encodings = []')), "--check")
    assert "   content codings: Accept-Encoding identity (crawl.accept_encodings), " in res.stdout


@pytest.mark.parametrize("extra, key, words", [
    ('accept_encodings = ["gzip", "compress"]', "crawl.accept_encodings",
     "expected a list of distinct codings among gzip, deflate, br, zstd"),
    ('zstd_max_window = 100', "crawl.zstd_max_window", "expected bytes from 1024 to 2147483648"),
    ('rules = ["include:*/a/*", "exclude:re:(unclosed"]', "crawl.rules[1]", "expected a valid regex after 're:'"),
    ('rules = ["deny:*/a/*"]', "crawl.rules[0]", "expected 'include:<glob>'"),
    ('skip_extensions = ["pdf", ""]', "crawl.skip_extensions[1]", "expected a file extension"),
    ('strip_params = ["utm_source=x"]', "crawl.strip_params[0]", "expected a parameter name or glob"),
    ('rules = "exclude:*.cgi"', "crawl.rules", "expected a list of strings"),
])
def test_a_bad_url_rule_is_one_line_naming_its_key_and_exit_2(tmp_path, extra, key, words):
    toml = solo_toml(tmp_path, 9, extra=extra)
    for args in (("--ring", str(toml), "--check"), ("try", "http://s001.web.test/", "--ring", str(toml))):
        res = peer(*args)
        assert res.returncode == 2
        assert res.stderr.startswith(f"error: {toml}: {key}: {words}") and res.stderr.count("\n") == 1, res.stderr
        assert "Traceback" not in res.stderr


def test_check_warns_about_a_seed_the_ssrf_guard_blocks(tmp_path):
    toml = solo_toml(tmp_path, 9)
    toml.write_text(toml.read_text().replace("allow_private = true", "allow_private = false"))
    (w,) = check_warnings(toml, unreachable=False)
    assert "crawl.seeds[0]" in w and "127.0.0.1" in w and "SSRF guard" in w
    assert "crawl.allow_private = true" in w


def test_check_warns_that_a_ring_of_two_stops_with_either_peer_and_how_to_go_on(tmp_path):
    from ringharness import cluster_text

    def ring_warnings(toml: Path) -> list[str]:
        # (One seed host: the peers that do not own it are warned of too.)
        return [w for w in check_warnings(toml, unreachable=False) if "none of the seed hosts" not in w]

    toml = tmp_path / "cluster.toml"
    toml.write_text(cluster_text(tmp_path, 9, 2))
    (w,) = ring_warnings(toml)
    assert "a ring of two peers stops when either peer stops" in w
    assert f"python -m ring forget --ring {toml} --id p2" in w
    toml.write_text(cluster_text(tmp_path, 9, 4))
    (w,) = ring_warnings(toml)
    assert "a ring of 4 peers split in two halves of 2 pauses on both sides" in w
    toml.write_text(cluster_text(tmp_path, 9, 3))
    assert ring_warnings(toml) == []


def test_check_of_the_shipped_solo_toml_is_clean():
    assert check_warnings(ROOT / "solo.toml", unreachable=False) == []


def test_a_data_dir_deleted_mid_crawl_stops_the_peer_with_one_line_and_exit_1(tmp_path, web):
    # `rm -rf` of the data_dir 10 s into a crawl: the summary said "0 pages in
    # all, 73 fetched this run" with exit 0, and the file did not exist.
    import time

    toml = solo_toml(tmp_path, web.port, rate=120.0)  # 2 pages a second: far from over
    results = tmp_path / "solo" / "pages.duckdb"
    proc = subprocess.Popen([sys.executable, "-m", "peer", "--ring", str(toml), "--fresh", "--yes"],
                            cwd=ROOT, env=os.environ, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not results.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)
        shutil.rmtree(tmp_path / "solo")
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, err.decode()
    last = err.decode().strip().splitlines()[-1]
    assert last.startswith(f"error: {results} was deleted while the crawl ran"), last
    assert b"pages in all" not in out and b"fetched this run" not in out




def test_check_names_the_owner_of_each_seed_host_and_warns_of_an_idle_peer(tmp_path):
    # A 2-peer ring with both seed sites on one peer: the other fetched
    # nothing for 104 s, and neither --check nor the start said so.
    import re

    from peer.state.configfile import load_config
    from ring.hashring import HashRing

    toml = two_peers(tmp_path, f"tcp://127.0.0.1:{free_ports(1)[0]}")
    cfg = load_config(toml)
    ring = HashRing({p.id: p.weight for p in cfg.peers}, cfg.ring.vnodes)
    busy, idle = cfg.peers[0].id, cfg.peers[1].id
    one = [h for h in (f"site{i}.example" for i in range(100)) if ring.owner(h) == busy][:2]
    seeds = ", ".join(f'"http://{h}/"' for h in one)
    toml.write_text(re.sub(r"seeds = \[.*?\]", lambda _: f"seeds = [{seeds}]", toml.read_text(), count=1))
    res = peer("--ring", str(toml), "--check")
    assert res.returncode == 0, res.stderr
    assert f"seed hosts: {one[0]} -> {busy}, {one[1]} -> {busy}" in res.stdout
    assert f"{idle} owns none of the seed hosts" in res.stdout


def test_a_solo_crawl_that_fetched_nothing_says_why_and_fails(tmp_path, web):
    # A local site: the SSRF guard refused 127.0.0.1, and the crawl fetched
    # 0 pages in 0.2 s and exited 0, blaming robots.txt.
    toml = solo_toml(tmp_path, web.port)
    toml.write_text(toml.read_text().replace("allow_private = true", "allow_private = false"))
    res = crawl(toml)
    assert res.returncode == 3, res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("error: the crawl ended without fetching anything: http://s001.web.test:")
    assert "SSRF guard" in last and "crawl.allow_private = true" in last


def test_a_solo_crawl_whose_seeds_are_all_out_of_scope_says_so_and_fails(tmp_path, web):
    toml = solo_toml(tmp_path, web.port, allow='["*.elsewhere.test"]')
    res = crawl(toml)
    assert res.returncode == 3, res.stderr
    assert "every seed is out of scope" in res.stderr.strip().splitlines()[-1]


def test_results_without_crawl_state_are_refused_unless_they_hold_no_row(tmp_path, crawled):
    # A peer killed after it made its results file and before its first journal
    # record left a file of no rows and no state: its next start refused it.
    toml, data = resume(tmp_path, crawled)
    # Its seed is on port 9, where nothing answers: one quick robots.txt try, not 3.5 minutes.
    toml.write_text(toml.read_text().replace("[crawl]\n", "[crawl]\nrobots_retry = 0.1\nrobots_tries = 1\n"))
    shutil.rmtree(data / "state")
    line = error_line(peer("--ring", str(toml), "--progress", "1"))
    assert "holds an earlier crawl but no crawl state to resume" in line  # rows: refused
    import duckdb

    with duckdb.connect(str(data / "pages.duckdb")) as con:
        con.execute("DELETE FROM pages")
    res = peer("--ring", str(toml), "--progress", "1")
    assert "no crawl state to resume" not in res.stderr and "crawl finished" in res.stdout, res.stderr


def test_check_says_what_every_request_carries_without_header_values(tmp_path):
    toml = solo_toml(tmp_path, 9, extra='headers = { From = "ops@example.test", Authorization = "Bearer s3cret" }')
    res = peer("--ring", str(toml), "--check")
    line = next(x for x in res.stdout.splitlines() if x.strip().startswith("requests:"))
    assert "User-Agent 'ringcrawl/" in line and "robots.txt token 'ringcrawl'" in line
    assert "extra headers: From, Authorization" in line and "cookies off" in line and "no proxy" in line
    assert "s3cret" not in res.stdout and "ops@example.test" not in res.stdout


# --- cluster.toml on the command line: exit 2, one line, no traceback (peer.core.config.cluster) ---


def run_peer(*args: str) -> Result:
    """``python -m peer ARGS`` in this process (tests/support/clirun.py); the real entry point is
    tests/edges/test_errors.py's."""
    from peer.commands.cli import main

    return run_main(main, args)


def test_cli_bad_config_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "cluster.toml"
    bad.write_text(MINIMAL + "[crawl]\nconcurency = 8\n")
    res = run_peer("--ring", str(bad), "--check")
    assert res.returncode == 2
    assert res.stderr == f"error: {bad}: crawl.concurency: unknown key; did you mean 'concurrency'?\n"
    assert "Traceback" not in res.stderr


def test_cli_missing_file_exit_2(tmp_path):
    res = run_peer("--ring", str(tmp_path / "x.toml"), "--check")
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "no such file" in res.stderr


def test_cli_unknown_id_exit_2():
    res = run_peer("--ring", str(ROOT / "cluster.toml"), "--id", "p7", "--check")
    assert res.returncode == 2 and "no peer with id 'p7'" in res.stderr


def test_cli_check_describes_the_ring():
    res = run_peer("--ring", str(ROOT / "cluster.toml"), "--id", "p2", "--check")
    assert res.returncode == 0, res.stderr
    assert "ring 'demo', 3 peer(s)" in res.stdout
    assert re.search(r"^ \* p2 ", res.stdout, re.M)


def test_cli_help_documents_every_option():
    res = run_peer("--help")
    assert res.returncode == 0
    for opt in ("--ring", "--id", "--check", "--fresh", "--yes", "--progress", "--log-level"):
        assert opt in res.stdout
