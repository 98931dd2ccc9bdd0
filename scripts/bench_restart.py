"""A restart at millions of queued URLs: seconds from process start to the first request, peak RSS.

A local web (a thread here: one small page without links per URL, each
answer held ``--delay`` seconds so the first run drains little of its queue)
logs the wall time of every request it receives. One ``python -m peer`` (a
ring of one, on loopback) reads a gzip ``seeds_file`` of ``--urls`` URLs over
``--hosts`` hosts (``hN.web.test``, resolved to 127.0.0.1), so its frontier
holds them all; once the file is read and a snapshot written, the peer is
killed (``kill -9``, or stopped with SIGINT with ``--stop``) and started again
with the same command. Printed, for each restart: the seconds from the new
process's start to the first request the web logged after it, and the CPU
seconds the process had used by then (a figure the machine's load changes
less than the wall time; the load average is printed beside it), the queue it
recovered (its ``resumed`` line), and its peak RSS (VmHWM) ``--settle``
seconds after. Bounded by ``--timeout`` a phase; every peer stopped at the end.

    scripts/bench_restart.py --bytecode               # 2 M URLs, kill -9, then a SIGINT stop
    scripts/bench_restart.py --urls 1000000 --restarts kill
    scripts/bench_restart.py --bytecode --restarts kill --save /tmp/at-kill
    scripts/bench_restart.py --bytecode --from /tmp/at-kill --restarts start,stop

With ``--from`` the first restart starts the saved (killed) state as it is
(``start``); the next ones kill or stop it first.
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from localweb.processes.peerrun import free_ports

SEEDS_DONE = re.compile(r"seeds_file: ([\d,]+) lines read")
RESUMED = re.compile(r"resuming the crawl from [^\n]*")


class Web:
    """The logging web server, in a thread."""

    def __init__(self, delay: float, port: int = 0) -> None:
        self.log: list[float] = []
        lock = threading.Lock()
        log = self.log

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (the http.server name)
                with lock:
                    log.append(time.time())
                time.sleep(delay)
                body = b"<!doctype html><title>p</title><p>no links</p>"
                try:
                    self.send_response(200)
                    self.send_header("content-type", "text/html")
                    self.send_header("content-length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass   # the peer was killed mid-answer

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        # A peer killed mid-request resets its connections: not an error of the bench's.
        self.server.handle_error = lambda request, address: None  # type: ignore[method-assign]
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def first_after(self, t: float) -> float | None:
        return next((x for x in list(self.log) if x >= t), None)


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of ``pid`` so far (/proc/PID/stat), its threads together."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def vm(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def write_first(work: Path, urls: int, hosts: int, port: int) -> None:
    """The seeds file and cluster.toml of a first run."""
    (ring_port,) = free_ports(1)
    with gzip.open(work / "seeds.txt.gz", "wt", compresslevel=1) as f:
        for i in range(urls):
            f.write(f"http://h{i % hosts}.web.test:{port}/p{i}\n")
    (work / "cluster.toml").write_text(f"""[ring]
name = "restart"

[[peer]]
id = "p1"
address = "tcp://127.0.0.1:{ring_port}"
data_dir = "{work / 'p1'}"

[crawl]
seeds_file = "seeds.txt.gz"
allow_hosts = ["*.web.test"]
allow_private = true
obey_robots = false
concurrency = 4
timeout = 10.0

[dns]
resolve = {{ "*.web.test" = "127.0.0.1" }}

[bloom]
capacity = {max(urls * 2, 100_000)}
""")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--urls", type=int, default=2_000_000)
    ap.add_argument("--hosts", type=int, default=20_000)
    ap.add_argument("--delay", type=float, default=1.0, help="seconds the web holds each answer")
    ap.add_argument("--restarts", default="kill,stop", help="kill (-9) and/or stop (SIGINT), in order")
    ap.add_argument("--settle", type=float, default=15.0, help="seconds after the first request to read VmHWM")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds a phase may take")
    ap.add_argument("--keep", action="store_true", help="keep the working directory")
    ap.add_argument("--save", metavar="DIR", help="copy the working directory to DIR after the first "
                    "kill or stop, before the restart: a state to profile restarts from (py-spy)")
    ap.add_argument("--from", dest="origin", metavar="DIR",
                    help="restart from a copy of a directory --save wrote (no first run)")
    ap.add_argument("--bytecode", action="store_true",
                    help="let the peer use .pyc files, as an installed peer does (compiled "
                         "first, under PYTHONPYCACHEPREFIX in the temporary directory)")
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-restart-"))
    toml = work / "cluster.toml"
    if a.origin:
        shutil.copytree(a.origin, work, dirs_exist_ok=True)
        text = toml.read_text()
        old = re.search(r'data_dir = "(.*)/p1"', text)
        assert old is not None, "no data_dir in the saved cluster.toml"
        toml.write_text(text.replace(old[1], str(work)))
        with gzip.open(work / "seeds.txt.gz", "rt") as f:
            port = int(re.search(r":(\d+)/", f.readline())[1])  # type: ignore[index]
        web = Web(a.delay, port)
    else:
        web = Web(a.delay)
    if not a.origin:
        write_first(work, a.urls, a.hosts, web.port)
    cmd = [sys.executable, "-m", "peer", "--ring", str(toml), "--id", "p1", "--progress", "5"]
    env = dict(os.environ)
    if a.bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        # Compiled once, outside the source tree, before anything is timed.
        env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "ringcrawl-bench-pycache")
        subprocess.run([sys.executable, "-c", "import peer.commands.cli, peer.engine.crawler, ring.io"],
                       env=env, check=True, cwd=work)
    proc: subprocess.Popen[bytes] | None = None
    err_path = work / "p1.err"

    def start() -> tuple[subprocess.Popen[bytes], float, int]:
        offset = err_path.stat().st_size if err_path.exists() else 0
        t = time.time()
        with err_path.open("ab") as err:
            # cwd: ``python -m`` puts the working directory first on sys.path, so a peer started
            # in a source tree would import that tree, whatever PYTHONPATH names.
            return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=work), t, offset

    def err_since(offset: int) -> str:
        with err_path.open("rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")

    try:
        print(f"web on port {web.port}; working in {work}", flush=True)
        if not a.origin:
            proc, t0, off = start()
            deadline = time.monotonic() + a.timeout
            while not SEEDS_DONE.search(err_since(off)):
                if proc.poll() is not None or time.monotonic() > deadline:
                    print("the first run ended or timed out before the seeds were read:\n"
                          + err_since(off)[-3000:])
                    return 1
                time.sleep(1.0)
            print(f"first run: {a.urls:,} URLs over {a.hosts:,} hosts; seeds read in {time.time() - t0:.0f} s; "
                  f"peak RSS {vm(proc.pid, 'VmHWM') / 2**20:.0f} MiB; {len(web.log):,} requests so far",
                  flush=True)
            time.sleep(12.0)   # a checkpoint (snapshot) after the last seeds, as a running peer has
        for step, how in enumerate(a.restarts.split(",")):
            stopped = 0.0
            if proc is not None:
                if how == "kill":
                    proc.kill()
                else:
                    proc.send_signal(signal.SIGINT)
                stopping = time.monotonic()
                try:
                    proc.wait(timeout=a.timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                stopped = time.monotonic() - stopping
            if a.save and step == 0:   # the first stop's state only, not a later one of the same kind
                shutil.copytree(work, a.save, dirs_exist_ok=True)
            proc, t0, off = start()
            deadline = time.monotonic() + a.timeout
            first = None
            cpu = 0.0
            while first is None and time.monotonic() < deadline and proc.poll() is None:
                cpu = cpu_seconds(proc.pid)   # read before the log: CPU up to the first request
                first = web.first_after(t0)
                time.sleep(0.01)
            if first is None:
                print(f"{how}: no request after the restart:\n" + err_since(off)[-3000:])
                return 1
            time.sleep(a.settle)
            text = err_since(off)
            resumed = RESUMED.search(text)
            print(f"{how:>5}: stopped in {stopped:.1f} s; first request {first - t0:.2f} s after the new "
                  f"process started ({cpu:.2f} CPU s; load average {os.getloadavg()[0]:.1f} on "
                  f"{os.cpu_count()} CPUs); peak RSS {vm(proc.pid, 'VmHWM') / 2**20:.0f} MiB; "
                  f"{resumed[0][:160] if resumed else 'no resumed line'}", flush=True)
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        web.server.shutdown()
        if not a.keep:
            subprocess.run(["rm", "-rf", str(work)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
