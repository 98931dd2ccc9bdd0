"""python -m peer (and webfarm.py): a peer that cannot start says why in one line, exit 2.

Every case runs the real command line in a subprocess, as a user would, and
checks what the user sees: exit status 2, no traceback, and a last line that
names the thing at fault and the way out. trio hands these errors over
wrapped in exception groups; peer.errors.user_error unwraps them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ringharness import cluster_text, free_ports

ROOT = Path(__file__).resolve().parent.parent
WEBFARM = ROOT / "scripts" / "webfarm.py"


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    # os.environ carries PYTHONPATH, so the child imports this tree.
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT,
                          env=os.environ, stdin=subprocess.DEVNULL, timeout=timeout)


def error_line(res: subprocess.CompletedProcess, prefix: str = "error: ") -> str:
    """The one error line of a command that could not start (log lines may precede it)."""
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr and "Exception Group" not in res.stderr, res.stderr
    lines = res.stderr.strip().splitlines()
    assert lines and lines[-1].startswith(prefix), res.stderr
    assert sum(line.startswith(prefix) for line in lines) == 1, res.stderr
    return lines[-1]


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
        res = run("-m", "peer", "--ring", str(toml), "--id", "p1")
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
        res = run("-m", "peer", "--ring", str(toml), "--id", "p3", "--data-dir",
                  str(tmp_path / "p3"), "--address", f"tcp://127.0.0.1:{port}")
    line = error_line(res)
    assert f"peer p3 cannot listen on tcp://127.0.0.1:{port}" in line
    assert "in use by another process" in line and "pass another --address" in line


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
    res = run("-m", "peer", "--ring", str(toml), "--id", "p1")
    line = error_line(res)
    assert f"cannot listen on tcp://192.0.2.1:{port}" in line
    assert "192.0.2.1 is not an address of this machine" in line
    assert f"correct its address in {toml}" in line


# --- the data_dir of an earlier crawl ----------------------------------------------------


@pytest.fixture(scope="module")
def crawled(tmp_path_factory) -> Path:
    """The data_dir of a finished solo crawl of ring "other" (results and crawl state)."""
    tmp = tmp_path_factory.mktemp("crawled")
    with subprocess.Popen(
            [sys.executable, str(WEBFARM), "--port", "0", "--hosts", "1", "--pages", "4",
             "--links", "3", "--no-shop"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=os.environ) as web:
        try:
            first = web.stdout.readline()  # type: ignore[union-attr]
            assert first.startswith("listening on 127.0.0.1:"), first
            port = int(first.rsplit(":", 1)[1])
            toml = tmp / "cluster.toml"
            toml.write_text(cluster_text(tmp, port, 1, ring="other"))
            res = run("-m", "peer", "--ring", str(toml), "--progress", "1", timeout=120)
            assert res.returncode == 0 and "crawl finished" in res.stdout, res.stderr
        finally:
            web.send_signal(signal.SIGTERM)
            web.wait(timeout=30)
    assert any((tmp / "p1" / "state").glob("snapshot-*.msgpack"))
    return tmp / "p1"


def resume(tmp_path: Path, crawled: Path, ring: str = "other") -> tuple[Path, Path]:
    """A copy of ``crawled`` and a cluster.toml of ring ``ring`` whose p1 resumes it."""
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
    res = run("-m", "peer", "--ring", str(toml))
    line = error_line(res)
    assert str(snap) in line and "not a complete snapshot" in line
    assert "--fresh" in line and f"move {data / 'state'} away" in line
    assert snap.read_bytes() == b"not a snapshot at all"  # nothing "repaired" behind the user's back


def test_state_of_another_ring_is_one_line(tmp_path, crawled):
    toml, data = resume(tmp_path, crawled, ring="test")
    res = run("-m", "peer", "--ring", str(toml))
    line = error_line(res)
    assert "state of peer 'p1' in ring 'other'" in line
    assert "this is peer 'p1' in ring 'test'" in line
    assert "--fresh" in line


def test_a_results_file_held_by_a_live_process_names_its_pid(tmp_path, crawled):
    toml, data = resume(tmp_path, crawled)
    results = data / "pages.duckdb"
    with held_open(results) as holder:
        res = run("-m", "peer", "--ring", str(toml))
    line = error_line(res)
    assert str(results) in line
    assert f"held open by process {holder.pid}" in line
    assert "another peer may be running with this data_dir" in line


def test_fresh_deletes_nothing_a_live_process_holds(tmp_path, crawled):
    toml, data = resume(tmp_path, crawled)
    results = data / "pages.duckdb"
    before = sorted(p.name for p in data.rglob("*"))
    with held_open(results) as holder:
        res = run("-m", "peer", "--ring", str(toml), "--fresh", "--yes")
    line = error_line(res)
    assert f"held open by process {holder.pid}" in line and "nothing deleted" in line
    assert sorted(p.name for p in data.rglob("*")) == before


# --- the local web ------------------------------------------------------------------------


def test_webfarm_on_a_busy_port_is_one_line(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        res = run(str(WEBFARM), "--port", str(port), timeout=30)
    line = error_line(res, "webfarm: ")
    assert f"cannot listen on 127.0.0.1:{port}" in line and "in use" in line
    assert "another --port" in line


def test_webfarm_with_an_unwritable_log_is_one_line(tmp_path):
    log = tmp_path / "missing-dir" / "requests.jsonl"
    res = run(str(WEBFARM), "--port", "0", "--log", str(log), timeout=30)
    line = error_line(res, "webfarm: ")
    assert f"cannot open the request log {log}" in line


def test_a_joining_peer_with_a_weight_over_the_limit_is_one_line(tmp_path):
    toml = two_peers(tmp_path, f"tcp://127.0.0.1:{free_ports(1)[0]}")
    (port,) = free_ports(1)
    res = run("-m", "peer", "--ring", str(toml), "--id", "p3", "--data-dir", str(tmp_path / "p3"),
              "--address", f"tcp://127.0.0.1:{port}", "--weight", "50")
    assert "--weight" in error_line(res) and "<= 10" in error_line(res)
