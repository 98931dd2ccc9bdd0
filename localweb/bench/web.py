"""The web a benchmark crawls: the site graph served by nginx or webfarm, and its request log.

The webfarm is one Python process that renders every page on request, so on
a 2-core machine it can use as much CPU as the crawler and hide how peers
scale. :func:`render_site` writes the very same pages (``SiteGraph.render``
of every URL ``SiteGraph.expected_urls`` lists, and each host's robots.txt)
to static files, and :class:`Nginx` serves them from one server block that
answers any ``Host`` (``root <site>/$host``), with the graph's 301s as
``location =`` rules and its 404s as missing files. :class:`Webfarm` runs
``python -m localweb.webfarm`` itself, the fallback when nginx is not
installed (and the server of per-host latency schedules). Both bind
127.0.0.1; nginx also the extra loopback addresses it is given.

:func:`read_requests` reads either server's request log into
:class:`localweb.judges.politeness.Request` rows, each with its start and end, for
:mod:`localweb.judges.politeness` to judge.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from localweb.processes.children import Children, proc_cpu
from localweb.judges.politeness import Request
from localweb.sitegraph.web import SiteGraph

__all__ = [
    "NGINX_HINT", "Nginx", "Request", "Server", "Site", "Webfarm", "find_nginx", "graph_for",
    "read_access_log", "read_requests", "render_site",
]

NGINX_HINT = "apt-get install -y nginx-light (Debian/Ubuntu)"


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
              access_log: bool = False, addresses: Sequence[str] = ("127.0.0.1",), gzip: bool = False) -> Nginx:
        """``gzip``: HTML and text answered gzip, so chunked (the length is not known ahead)."""
        for d in ("tmp", "logs"):
            (work / d).mkdir(parents=True, exist_ok=True)
        log = work / "logs" / "access.log" if access_log else None
        rules = "\n".join(f"        location = {path} {{ return 301 {loc}; }}"
                          for path, loc in site.redirects)
        temp = "\n".join(f"    {kind}_temp_path {work / 'tmp' / kind};"
                         for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        listens = "\n".join(f"        listen {a}:{site.port} default_server backlog=4096;"
                            for a in addresses)
        gzip_on = "    gzip on;\n    gzip_min_length 0;\n    gzip_types text/html text/plain;\n"
        conf = work / "nginx.conf"
        conf.write_text(f"""\
# Written by localweb.bench.web: the site graph as static files, any Host.
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
{gzip_on if gzip else ""}    log_not_found off;
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
        from localweb.sitegraph.server import read_log

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

