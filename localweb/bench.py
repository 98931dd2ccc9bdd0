"""What the benchmarks share: options, timing, child processes, the web they crawl, crawls.

``scripts/bench_*.py`` and ``scripts/sim_polite.py`` import this module and
no other benchmark (each one a script, none a library of another), as the
tests import :mod:`localweb.peerrun`. It is one module rather than five
small ones so that a benchmark has one place to look; its banners are its
seams:

- Options and timing: :func:`positive` (an argparse ``type``),
  :func:`median_time`, :func:`count_in` and :func:`sliding_max` over sorted
  request times (politeness is counted at the request's start, as the
  frontier paces starts).
- Processes: :class:`Children` starts every process of a benchmark (peers,
  servers, a forwarding receiver) in its own session, with
  ``PR_SET_PDEATHSIG`` so none outlives the benchmark even if it is killed,
  and ends them all on exit; :func:`proc_cpu` reads a live process's CPU
  seconds from ``/proc/<pid>/stat`` (a child's own CPU comes from
  ``os.wait4`` when it exits); :func:`tcp_bytes` counts TCP payload with
  ``ss``.
- The web: the webfarm is one Python process that renders every page on
  request, so on a 2-core machine it can use as much CPU as the crawler and
  hide how peers scale. :func:`render_site` writes the very same pages
  (``SiteGraph.render`` of every URL ``SiteGraph.expected_urls`` lists, and
  each host's robots.txt) to static files, and :class:`Nginx` serves them
  from one server block that answers any ``Host`` (``root <site>/$host``),
  with the graph's 301s as ``location =`` rules and its 404s as missing
  files. :class:`Webfarm` runs ``python -m localweb.webfarm`` itself, the
  fallback when nginx is not installed (and the server of per-host latency
  schedules). Both bind 127.0.0.1; nginx also the extra loopback addresses
  it is given. :func:`read_requests` reads either server's request log
  with each request's start and end.
- Crawls: :func:`write_toml` and :func:`run_crawl` run ``python -m peer``
  processes to their end (SIGINT at a time limit), then :func:`page_rows`,
  :func:`pid_rows` and :func:`report_ring` read what they left.
- Frames: :func:`sample_frames`, encoded URL batches of a given size for the
  zmq and Curve benchmarks.

Linux only (``/proc``, ``prctl``), as the benchmarks are; nothing here runs
at import.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import duckdb

from localweb.peerrun import free_ports
from localweb.sitegraph import SiteGraph
from peer.core.layout import DataDir
from ring.messages import UrlBatch, encode

__all__ = [
    "END_FRAME", "NGINX_HINT", "REPEATS", "Children", "Crawl", "Exited", "Nginx", "Request", "Server",
    "Site", "Webfarm", "count_in", "find_nginx", "free_ports", "graph_for", "machine_busy",
    "median_time", "page_rows", "pid_rows", "positive", "proc_cpu", "read_access_log", "read_requests",
    "render_site", "report_ring", "ring_changes", "run_crawl", "sample_frames", "sliding_max",
    "tcp_bytes", "write_toml",
]

_TICK = os.sysconf("SC_CLK_TCK")
_PR_SET_PDEATHSIG = 1
NGINX_HINT = "apt-get install -y nginx-light (Debian/Ubuntu)"
#: Repeats of a timed call; the median is reported.
REPEATS = 5
#: The frame that ends a run of :func:`sample_frames` in the zmq benchmarks.
END_FRAME = b"end"


# ---------------------------------------------------------------------------
# Options and timing


def positive(kind):  # type: ignore[no-untyped-def]
    """An argparse ``type`` accepting numbers of ``kind`` > 0, for the benchmarks' options."""
    def check(value: str):  # type: ignore[no-untyped-def]
        try:
            v = kind(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, not {value!r}") from None
        if not v > 0:
            raise argparse.ArgumentTypeError(f"expected a number > 0, not {value!r}")
        return v
    return check


def median_time(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    """Median wall time of ``fn()`` in seconds."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def count_in(times: list[float], lo: float, hi: float) -> int:
    """How many of ``times`` (sorted) fall in ``[lo, hi)``."""
    return bisect.bisect_left(times, hi) - bisect.bisect_left(times, lo)


def sliding_max(times: list[float], w: float, lo: float, hi: float) -> int:
    """Most of ``times`` (sorted) in any half-open ``[t, t + w)`` inside ``[lo, hi)``."""
    ts = times[bisect.bisect_left(times, lo):bisect.bisect_left(times, hi)]
    best = j = 0
    for i, t in enumerate(ts):
        while ts[j] <= t - w:
            j += 1
        best = max(best, i - j + 1)
    return best


# ---------------------------------------------------------------------------
# Processes


def proc_cpu(pid: int) -> float:
    """User + system CPU seconds of a live process (0.0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return 0.0
    # Fields 14 and 15 of proc(5), counted after "pid (comm)".
    return (int(fields[11]) + int(fields[12])) / _TICK


def machine_busy() -> float:
    """CPU seconds all processes of the machine have used since boot (every core, idle excluded)."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal [guest guest_nice, already in user/nice]
    return (sum(ticks[:8]) - ticks[3] - ticks[4]) / _TICK


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: SIGKILL it when we die.
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass
class Exited:
    """How a child ended: exit code, CPU seconds (``os.wait4``), peak RSS (MB)."""

    code: int
    cpu: float
    rss_mb: float


class Children:
    """Every process a benchmark starts; ``close()`` (or leaving ``with``) ends them all."""

    def __init__(self) -> None:
        self._live: dict[int, subprocess.Popen] = {}

    def __enter__(self) -> Children:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self, argv: Sequence[str], *, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
              cwd: Path | None = None) -> subprocess.Popen:
        proc = subprocess.Popen(list(argv), stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL,
                                cwd=cwd, start_new_session=True, preexec_fn=_die_with_parent)
        self._live[proc.pid] = proc
        return proc

    def live(self) -> list[subprocess.Popen]:
        return list(self._live.values())

    def poll(self, proc: subprocess.Popen) -> Exited | None:
        """Reap ``proc`` if it has exited (with its rusage), else None."""
        if proc.pid not in self._live:
            raise ValueError(f"pid {proc.pid} is not a live child")
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if not pid:
            return None
        del self._live[proc.pid]
        proc.returncode = os.waitstatus_to_exitcode(status)
        return Exited(proc.returncode, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)

    def signal(self, proc: subprocess.Popen, signum: int) -> None:
        if proc.pid in self._live:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signum)

    def stop(self, proc: subprocess.Popen, grace: float = 10.0) -> Exited:
        """SIGTERM, then SIGKILL after ``grace`` seconds; the way it ended."""
        self.signal(proc, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while True:
            done = self.poll(proc)
            if done is not None:
                return done
            if time.monotonic() > deadline:
                self.signal(proc, signal.SIGKILL)
                deadline = float("inf")
            time.sleep(0.02)

    def close(self) -> None:
        for proc in list(self._live.values()):
            self.signal(proc, signal.SIGTERM)
        deadline = time.monotonic() + 10.0
        while self._live and time.monotonic() < deadline:
            for proc in list(self._live.values()):
                self.poll(proc)
            time.sleep(0.02)
        for proc in list(self._live.values()):
            self.signal(proc, signal.SIGKILL)
            os.waitpid(proc.pid, 0)
            del self._live[proc.pid]


def tcp_bytes(ports: set[int], pids: set[int] | None = None) -> int | None:
    """TCP payload bytes, both ways, of established connections to ``ports``.

    Each connection is counted at its connecting end (destination port in
    ``ports``), and, with ``pids``, only if a process in ``pids`` owns that
    end. None when ``ss`` is missing.
    """
    if shutil.which("ss") is None:
        return None
    argv = ["ss", "-tinH" + ("p" if pids else ""), "state", "established"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout
    total = 0
    header = ""
    for line in out.splitlines():
        if line and not line[0].isspace():
            header = line
            continue
        fields = header.split()
        if len(fields) < 4:
            continue
        try:
            dport = int(fields[3].rsplit(":", 1)[1])
        except (IndexError, ValueError):
            continue
        if dport not in ports:
            continue
        if pids and not any(f"pid={p}," in header for p in pids):
            continue
        stats = dict(kv.split(":", 1) for kv in line.split() if kv.startswith(("bytes_sent:", "bytes_received:")))
        total += int(stats.get("bytes_sent", 0)) + int(stats.get("bytes_received", 0))
    return total


# ---------------------------------------------------------------------------
# The web


@dataclass(frozen=True, slots=True)
class Site:
    """A rendered copy of a site graph: files per host and the 301 rules."""

    root: Path
    port: int
    hosts: int
    files: int
    bytes: int
    expected: int  # URLs a correct crawl requests (robots.txt excluded)
    redirects: tuple[tuple[str, str], ...]  # (path, Location with "$host" for the host)
    seconds: float


def graph_for(hosts: int, pages: int, links: int = 100) -> SiteGraph:
    return SiteGraph(hosts=hosts, pages_per_host=pages, links_per_page=links, shop=False)


def render_site(graph: SiteGraph, port: int, root: Path) -> Site:
    """Write every page a crawl of ``graph`` on ``port`` requests under ``root/<host>/``."""
    t = time.perf_counter()
    expected = graph.expected_urls(port)
    suffix = f":{port}"
    paths: set[tuple[str, str]] = set()
    for url in expected:
        authority, path = url.split("/", 3)[2:]
        paths.add((authority.removesuffix(suffix), "/" + path.partition("?")[0]))
    files = size = 0
    redirects: dict[str, str] = {}
    made: set[Path] = set()

    def write(host: str, path: str, body: bytes) -> None:
        nonlocal files, size
        rel = path[1:] + ("index.html" if path.endswith("/") else "")
        dest = root / host / rel
        if dest.parent not in made:
            dest.parent.mkdir(parents=True, exist_ok=True)
            made.add(dest.parent)
        dest.write_bytes(body)
        files += 1
        size += len(body)

    for host, path in sorted(paths):
        page = graph.render(host, path, port)
        if page.status == 200:
            write(host, path, page.body)
        elif page.status in (301, 302):
            location = dict(page.headers)["location"].replace(f"//{host}{suffix}/", f"//$host{suffix}/")
            if redirects.setdefault(path, location) != location:
                raise RuntimeError(f"{path}: the graph redirects it differently per host; "
                                   "one nginx rule per path cannot serve it")
        elif page.status != 404:
            raise RuntimeError(f"{host}{path}: status {page.status} has no static form")
    for host in graph.site_hosts():
        text = graph.robots_txt(host)
        if text is not None:
            write(host, "/robots.txt", text.encode())
    # nginx workers may run as another user: the tree must be readable.
    for d in [root, *made]:
        d.chmod(0o755)
    return Site(root, port, len(graph.site_hosts()), files, size, len(expected),
                tuple(sorted(redirects.items())), time.perf_counter() - t)


def find_nginx() -> str | None:
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None)


class Server:
    """A running web server: its process, port and CPU clock."""

    name = "server"

    def __init__(self, children: Children, proc: subprocess.Popen, port: int,
                 log: Path | None) -> None:
        self.children = children
        self.proc = proc
        self.port = port
        self.log = log

    def cpu(self) -> float:
        return proc_cpu(self.proc.pid)

    def stop(self) -> None:
        self.children.stop(self.proc)


class Nginx(Server):
    """nginx serving a :class:`Site` (``master_process off``: one process, our child)."""

    name = "nginx"

    @classmethod
    def start(cls, children: Children, binary: str, site: Site, work: Path,
              access_log: bool = False, addresses: Sequence[str] = ("127.0.0.1",)) -> Nginx:
        for d in ("tmp", "logs"):
            (work / d).mkdir(parents=True, exist_ok=True)
        log = work / "logs" / "access.log" if access_log else None
        rules = "\n".join(f"        location = {path} {{ return 301 {loc}; }}"
                          for path, loc in site.redirects)
        temp = "\n".join(f"    {kind}_temp_path {work / 'tmp' / kind};"
                         for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        listens = "\n".join(f"        listen {a}:{site.port} default_server backlog=4096;"
                            for a in addresses)
        conf = work / "nginx.conf"
        conf.write_text(f"""\
# Written by localweb.bench: the site graph as static files, any Host.
daemon off;
master_process off;
pid {work / 'nginx.pid'};
error_log {work / 'logs' / 'error.log'} warn;
events {{ worker_connections 8192; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    charset utf-8;
{temp}
    # $msec is logged when the answer ends; $request_time (ms resolution)
    # takes it back to the request's first byte (read_requests).
    log_format bench '$msec $request_time $server_addr $host $status $request_uri';
    access_log {f'{log} bench buffer=256k flush=1s' if log else 'off'};
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    server_tokens off;
    log_not_found off;
    sendfile on;
    open_file_cache max=1000 inactive=20s;  # descriptors held open: keep far below ulimit -n
    server {{
{listens}
        server_name _;
        root {site.root}/$host;
        absolute_redirect off;
{rules}
    }}
}}
""")
        argv = [binary, "-p", str(work), "-c", str(conf), "-e", str(work / "logs" / "error.log")]
        check = subprocess.run([*argv, "-t", "-q"], capture_output=True, text=True, timeout=30)
        if check.returncode != 0:
            raise RuntimeError(f"nginx -t failed: {(check.stderr or check.stdout).strip()[-500:]}")
        proc = children.start(argv)
        _wait_listening(children, proc, site.port, "nginx")
        return cls(children, proc, site.port, log)


class Webfarm(Server):
    """The webfarm command itself (``python -m localweb.webfarm``: pages rendered on request)."""

    name = "webfarm"

    @classmethod
    def start(cls, children: Children, hosts: int, pages: int, port: int, work: Path,
              access_log: bool = False, links: int = 100, latency: Sequence[str] = ()) -> Webfarm:
        """``latency``: webfarm ``--latency`` values (``HOST=T:S,T:S``, times from its start)."""
        work.mkdir(parents=True, exist_ok=True)
        log = work / "webfarm.jsonl" if access_log else None
        argv = [sys.executable, "-m", "localweb.webfarm", "--port", str(port),
                "--hosts", str(hosts), "--pages", str(pages), "--links", str(links), "--no-shop"]
        if log:
            argv += ["--log", str(log)]
        for spec in latency:
            argv += ["--latency", spec]
        proc = children.start(argv)
        _wait_listening(children, proc, port, "webfarm")
        return cls(children, proc, port, log)


def _wait_listening(children: Children, proc: subprocess.Popen, port: int, name: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if children.poll(proc) is not None:
            raise RuntimeError(f"{name} exited at start (exit {proc.returncode})")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.05)
    children.stop(proc)
    raise RuntimeError(f"{name} did not listen on 127.0.0.1:{port} within 30 s")


class Request(NamedTuple):
    """One request of a server's log: start and end (epoch s), address it came in on, host..."""

    start: float
    end: float
    addr: str  # the server address it reached ("" when the log does not say)
    host: str
    status: int
    target: str


def read_requests(server: Server) -> list[Request]:
    """Every request the server logged, in log order, with its start and end.

    nginx logs ``$msec`` when the answer ends and ``$request_time`` since its
    first byte was read; webfarm logs ``t`` at arrival and ``dur``.
    """
    if server.log is None or not server.log.exists():
        return []
    out = []
    if isinstance(server, Nginx):
        for line in server.log.read_text().splitlines():
            parts = line.split(" ", 5)
            if len(parts) == 6:
                end = float(parts[0])
                out.append(Request(end - float(parts[1]), end, parts[2], parts[3], int(parts[4]), parts[5]))
    else:
        from localweb.server import read_log

        out = [Request(e.t, e.t + e.dur, "", e.host, e.status, e.target) for e in read_log(str(server.log))]
    return out


def read_access_log(server: Server) -> list[tuple[float, str, int, str]]:
    """(time, host, status, target) of every request the server logged, in log order.

    nginx's time is the answer's end, webfarm's the request's arrival: on
    loopback with small pages the two differ by about a millisecond
    (:func:`read_requests` has both).
    """
    if isinstance(server, Nginx):
        return [(r.end, r.host, r.status, r.target) for r in read_requests(server)]
    return [(r.start, r.host, r.status, r.target) for r in read_requests(server)]


# ---------------------------------------------------------------------------
# Crawls


def write_toml(path: Path, n: int, web_port: int, hosts: int, *, concurrency: int,
               politeness: dict[str, float], ring: dict[str, float] | None = None) -> list[str]:
    """A cluster.toml of ``n`` peers crawling from every host's index; returns the peer ids."""
    ids = [f"p{i + 1}" for i in range(n)]
    seeds = ", ".join(f'"http://s{h:03d}.web.test:{web_port}/"' for h in range(1, hosts + 1))
    lines = ["[ring]", 'name = "bench-ring"', *(f"{k} = {v!r}" for k, v in (ring or {}).items())]
    for pid, port in zip(ids, free_ports(n)):
        lines += ["", "[[peer]]", f'id = "{pid}"', f'address = "tcp://127.0.0.1:{port}"',
                  f'data_dir = "{path.parent / pid}"']
    lines += ["", "[crawl]", f"seeds = [{seeds}]", 'allow_hosts = ["*.web.test"]',
              f"concurrency = {concurrency}", "allow_private = true", "timeout = 10.0",
              "", "[politeness]", *(f"{k} = {v!r}" for k, v in politeness.items()),
              "", "[dns]", 'resolve = { "*.web.test" = "127.0.0.1" }',
              "", "[bloom]", "capacity = 1000000", ""]
    path.write_text("\n".join(lines))
    return ids


@dataclass
class Crawl:
    """One crawl by ``len(ids)`` peer processes."""

    ids: list[str]
    toml: Path
    started: float = 0.0  # time.time() when the first peer was started
    stopped: float = 0.0  # time.time() of the SIGINT (stop_after or time limit), 0 if none
    wall: float = 0.0  # first start -> last exit, seconds
    exits: dict[str, Exited] = field(default_factory=dict)
    timed_out: bool = False
    errors: list[str] = field(default_factory=list)

    def data(self, pid: str) -> Path:
        return DataDir(self.toml.parent / pid).results

    @property
    def ok(self) -> bool:
        return not self.timed_out and all(e.code == 0 for e in self.exits.values())

    @property
    def cpu(self) -> float:
        return sum(e.cpu for e in self.exits.values())


def run_crawl(children: Children, toml: Path, ids: list[str], *, time_limit: float,
              stop_after: float | None = None, while_running=None) -> Crawl:  # type: ignore[no-untyped-def]
    """Start the peers, wait for all to exit (SIGINT at ``stop_after`` or the limit)."""
    crawl = Crawl(ids, toml)
    logs = toml.parent / "logs"
    logs.mkdir(exist_ok=True)
    procs = {}
    crawl.started = time.time()
    t0 = time.monotonic()
    for pid in ids:
        with (logs / f"{pid}.out").open("wb") as out, (logs / f"{pid}.err").open("wb") as err:
            procs[pid] = children.start(
                [sys.executable, "-m", "peer", "--ring", str(toml), "--id", pid, "--fresh", "--yes",
                 "--log-level", "INFO"], stdout=out, stderr=err)
    interrupted = killed = False
    next_poll = 0.0
    while len(crawl.exits) < len(ids):
        for pid, proc in procs.items():
            if pid not in crawl.exits:
                done = children.poll(proc)
                if done is not None:
                    crawl.exits[pid] = done
        elapsed = time.monotonic() - t0
        limit_hit = elapsed > time_limit
        if not interrupted and (limit_hit or (stop_after is not None and elapsed > stop_after)):
            interrupted = True
            crawl.timed_out = limit_hit
            crawl.stopped = time.time()
            for proc in procs.values():
                children.signal(proc, signal.SIGINT)
        if interrupted and not killed and elapsed > max(time_limit, stop_after or 0) + 20:
            killed = True
            for proc in procs.values():
                children.signal(proc, signal.SIGKILL)
        if while_running is not None and elapsed >= next_poll:
            next_poll = elapsed + while_running(elapsed)
        time.sleep(0.02)
    crawl.wall = time.monotonic() - t0
    for pid, e in crawl.exits.items():
        if e.code != 0:
            tail = (logs / f"{pid}.err").read_text(errors="replace")[-800:]
            crawl.errors.append(f"{pid} exited {e.code}: {tail}")
    if crawl.timed_out:
        crawl.errors.append(f"stopped at the time limit ({time_limit:.0f} s)")
    return crawl


def ring_changes(crawl: Crawl) -> list[str]:
    """Each peer's "ring: ..." log lines (the live member set it routes by), timed from the start."""
    out = []
    for pid in crawl.ids:
        path = crawl.toml.parent / "logs" / f"{pid}.err"
        for line in path.read_text(errors="replace").splitlines() if path.exists() else ():
            if " peer.cluster: ring: " in line:
                stamp = time.mktime(time.strptime(line[:19], "%Y-%m-%d %H:%M:%S")) + int(line[20:23]) / 1e3
                out.append(f"{stamp - crawl.started:+.1f} s {pid} sees [{line.split('ring: ', 1)[1]}]")
    return sorted(out, key=lambda s: float(s.split()[0]))


def report_ring(crawl: Crawl) -> int:
    """Print, and count, ring changes after a peer first saw the full ring.

    Each peer starts alone and sees every peer within a second or two; a
    later change is a peer suspected or declared dead (missed heartbeats,
    e.g. a starved event loop), after which two peers may fetch one host.
    """
    if len(crawl.ids) < 2:
        return 0
    full = ", ".join(sorted(crawl.ids))
    settled: set[str] = set()
    extra = []
    for line in ring_changes(crawl):
        _, _, pid, _, members = line.split(" ", 4)
        if pid in settled:
            extra.append(line)
        elif members == f"[{full}]":
            settled.add(pid)
    missing = sorted(set(crawl.ids) - settled)
    if extra or missing:
        print(f"      ! ring changes after the ring formed: {len(extra)}"
              + (f"; never saw the full ring: {', '.join(missing)}" if missing else "")
              + "".join(f"\n        {line}" for line in extra[:10])
              + ("\n        ..." if len(extra) > 10 else ""), flush=True)
    return len(extra)


def page_rows(crawl: Crawl) -> list[tuple[str, str, int, float, str, float]]:
    """(url, host, status, fetched_at epoch s, peer, elapsed ms) of every answered request, all peers."""
    rows = []
    for pid in crawl.ids:
        path = crawl.data(pid)
        if path.exists():
            with duckdb.connect(str(path), read_only=True) as con:
                rows += con.execute(
                    "select url, host, status, epoch_us(fetched_at) / 1e6, peer, elapsed_ms from pages "
                    "where status is not null").fetchall()
    return rows


def pid_rows(crawl: Crawl) -> list[tuple[str, float, int, float, float]]:
    """(host, window_end epoch s, n, delay, setpoint) of every PID update, all peers."""
    rows = []
    for pid in crawl.ids:
        path = crawl.data(pid)
        if path.exists():
            with duckdb.connect(str(path), read_only=True) as con:
                rows += con.execute("select host, epoch_us(window_end) / 1e6, n, delay, setpoint "
                                    "from pid_trace").fetchall()
    return rows


# ---------------------------------------------------------------------------
# Frames


def sample_frames(size: int, count: int = 8) -> list[bytes]:
    """``count`` encoded URL batches of about ``size`` bytes each."""
    frames = []
    for seq in range(count):
        urls: list[tuple[str, int]] = []
        while True:
            frame = encode(UrlBatch(ring="bench", sender="p1", epoch=1, seq=seq, urls=tuple(urls)))
            if len(frame) >= size:
                break
            urls.append((f"https://s{len(urls):03d}.web.test:8080/page/{seq}/{len(urls) * 7919}.html", 2))
        frames.append(frame)
    return frames
