"""Several peers on one machine: ``python -m peer --id m`` runs a ``[[peer]] workers = 2`` entry.

Process smoke tests (each runs a supervisor and its two peer processes, about
3 s of CPU): the supervisor and both workers exit 0 at the end of a crawl of
the local web, judged from the web's request log and the supervisor's lines;
SIGTERM to the supervisor alone reaches both workers, and each stops cleanly.
How a worker's failure becomes the supervisor's status is tested on stand-in
children in tests/edges/test_supervise.py, without a crawl.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from clirun import web_thread

ROOT = Path(__file__).resolve().parents[2]


def two_free_ports() -> int:
    """A port p of 127.0.0.1 such that p and p + 1 are free now (workers take consecutive ports)."""
    for _ in range(50):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
            if port >= 65535:
                continue
            with socket.socket() as b:
                try:
                    b.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
        return port
    raise AssertionError("no two consecutive free ports")


def machine_toml(tmp_path: Path, web_port: int, *, rate: float = 0.0, hosts: int = 2) -> Path:
    toml = tmp_path / "cluster.toml"
    seeds = ", ".join(f'"http://s{i + 1:03d}.web.test:{web_port}/"' for i in range(hosts))
    toml.write_text(f"""
[ring]
name = "machines"
gossip_interval = 0.2
suspect_after = 1.0
dead_after = 3.0
takeover_after = 1.0

[[peer]]
id = "m"
address = "tcp://127.0.0.1:{two_free_ports()}"
data_dir = "{tmp_path / "m"}"
workers = 2

[crawl]
seeds = [{seeds}]
allow_hosts = ["*.web.test"]
concurrency = 8
allow_private = true
timeout = 5.0
user_agent = "ringcrawl-test/1 ({{machine}})"

[politeness]
rate = {rate}
window = 2.0
host_concurrency = 1

[dns]
resolve = {{ "*.web.test" = "127.0.0.1" }}

[bloom]
capacity = 100000
""")
    return toml


def supervisor(toml: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "peer", "--ring", str(toml), "--id", "m", "--progress", "1"],
                            cwd=ROOT, env=os.environ, stdin=subprocess.DEVNULL, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(proc: subprocess.Popen[str], timeout: float = 90) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_one_command_runs_two_peers_to_the_end_of_a_crawl_and_all_exit_0(tmp_path):
    with web_thread(hosts=2) as web:
        toml = machine_toml(tmp_path, web.port)
        proc = supervisor(toml)
        out, err = finish(proc)
        log = web.requests()
    assert proc.returncode == 0, err
    assert "supervisor: m-0 exited with status 0" in err and "supervisor: m-1 exited with status 0" in err, err
    assert "supervisor: 2 worker(s) ended; exit status 0" in err
    # Each worker printed its own summary; the two data directories hold the results.
    assert out.count("crawl finished") == 2, out
    assert (tmp_path / "m" / "0" / "pages.duckdb").exists() and (tmp_path / "m" / "1" / "pages.duckdb").exists()
    pages = [r for r in log if not r.target.endswith("robots.txt")]
    assert pages, log
    twice = [k for k, n in Counter((r.host, r.target) for r in pages).items() if n > 1]
    assert twice == []
    # The site saw one User-Agent comment, the machine's, from both workers.
    assert {r.agent for r in log} == {"ringcrawl-test/1 (m)"}


def test_sigterm_to_the_supervisor_reaches_both_workers_and_each_stops_cleanly(tmp_path):
    # 2 pages a second a host over 2 hosts of ~18 pages: far from over when stopped.
    with web_thread(hosts=2) as web:
        toml = machine_toml(tmp_path, web.port, rate=120.0)
        proc = supervisor(toml)
        try:
            deadline = time.monotonic() + 60
            # Both workers running (their results files made) and the crawl begun.
            made = [tmp_path / "m" / str(k) / "pages.duckdb" for k in (0, 1)]
            while time.monotonic() < deadline and not (all(p.exists() for p in made) and len(web.farm.log) > 2):
                time.sleep(0.1)
            time.sleep(0.5)
            proc.send_signal(signal.SIGTERM)
            out, err = finish(proc, timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0, err
    assert "supervisor: m-0 exited with status 0" in err and "supervisor: m-1 exited with status 0" in err, err
    assert err.count("SIGTERM: stopping") == 2, err
    assert out.count("crawl finished (stopped)") == 2 and out.count("results:") == 2, out


def test_workers_that_fail_make_the_supervisor_exit_with_their_status(tmp_path):
    # Every flag reaches every worker: a bad --progress is each worker's usage error.
    # No --id: the file's only entry is the machine's workers.
    toml = machine_toml(tmp_path, 9)
    res = subprocess.run([sys.executable, "-m", "peer", "--ring", str(toml), "--progress", "0"],
                         cwd=ROOT, env=os.environ, stdin=subprocess.DEVNULL, text=True,
                         capture_output=True, timeout=60)
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("error: --progress: expected a number of seconds > 0") == 2, res.stderr
    assert "supervisor: m-0 exited with status 2" in res.stderr and "supervisor: m-1 exited with status 2" in res.stderr


def test_try_sends_the_user_agent_of_the_machine_that_would_fetch_the_url(tmp_path):
    from clirun import run_main

    from peer.commands.trial import main as try_main

    with web_thread(hosts=2) as web:
        toml = machine_toml(tmp_path, web.port)
        url = f"http://s001.web.test:{web.port}/"
        res = run_main(try_main, [url, "--ring", str(toml)])
        log = web.requests()
    assert res.returncode == 0, res.stderr
    assert log and {r.agent for r in log} == {"ringcrawl-test/1 (m)"}
