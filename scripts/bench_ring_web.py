"""The edges of scripts/bench_ring.py: child processes, CPU clocks, and the web it crawls.

- :class:`Children` starts every process of a benchmark (peers, servers, the
  forwarding receiver) in its own session, with ``PR_SET_PDEATHSIG`` so none
  outlives the benchmark even if it is killed, and ends them all on exit.
- :func:`proc_cpu` reads a live process's CPU seconds from ``/proc/<pid>/stat``
  (a peer's own CPU comes from ``os.wait4`` when it exits).
- The web: webfarm.py is one Python process that renders every page on
  request, so on a 2-core machine it can use as much CPU as the crawler and
  hide how peers scale. :func:`render_site` writes the very same pages
  (``SiteGraph.render`` of every URL ``SiteGraph.expected_urls`` lists, and
  each host's robots.txt) to static files, and :class:`Nginx` serves them
  from one server block that answers any ``Host`` (``root <site>/$host``),
  with the graph's 301s as ``location =`` rules and its 404s as missing
  files. :class:`Webfarm` runs scripts/webfarm.py itself, the fallback when
  nginx is not installed (and the server of per-host latency schedules).
  Both bind 127.0.0.1; nginx also the extra loopback addresses it is given.
- :func:`read_requests` reads either server's request log with each
  request's start and end: politeness is counted at the request's start, as
  the frontier paces starts.
"""

from __future__ import annotations

import argparse

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from localweb import SiteGraph  # noqa: E402

from localweb.peerrun import free_ports  # noqa: E402  (re-exported for the benchmarks)

_TICK = os.sysconf("SC_CLK_TCK")
_PR_SET_PDEATHSIG = 1
NGINX_HINT = "apt-get install -y nginx-light (Debian/Ubuntu)"


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
# Written by scripts/bench_ring.py: the site graph as static files, any Host.
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
    """scripts/webfarm.py itself (pages rendered on request)."""

    name = "webfarm"

    @classmethod
    def start(cls, children: Children, hosts: int, pages: int, port: int, work: Path,
              access_log: bool = False, links: int = 100, latency: Sequence[str] = ()) -> Webfarm:
        """``latency``: webfarm.py ``--latency`` values (``HOST=T:S,T:S``, times from its start)."""
        work.mkdir(parents=True, exist_ok=True)
        log = work / "webfarm.jsonl" if access_log else None
        argv = [sys.executable, str(ROOT / "scripts" / "webfarm.py"), "--port", str(port),
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
        from localweb import read_log

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
