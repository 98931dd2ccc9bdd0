"""bench_polite's crawls and output: what its sections (rate, ip, peers3, step, scrapy) share.

A part of ``scripts/bench_polite.py`` (which documents the benchmark and is
the one to run), as ``bench_ring_forward`` is of ``bench_ring``: the
cluster.toml of a crawl with ``--set`` applied (:func:`write_cluster`), one
crawl and what the server saw of it (:func:`crawl_once`, :class:`Run`), the
Markdown tables, and :class:`Ctx`, the state a section is run with (the
nginx web shared by rate, ip and peers3). The judging of the server's log
is :mod:`localweb.judges.politeness`'s.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localweb.bench import (
    NGINX_HINT,
    Children,
    Crawl,
    Nginx,
    Request,
    Server,
    find_nginx,
    free_ports,
    graph_for,
    machine_busy,
    proc_cpu,
    read_requests,
    render_site,
    report_ring,
    run_crawl,
)

WEB_HOSTS = 49
IP_GROUP = tuple(f"s{i:03d}.web.test" for i in range(1, 11))
IP_GROUP_ADDR = "127.0.0.2"
STEP_HOST = "s001.web.test"
#: A peer at or above this share of one core (it is one trio thread) is CPU-bound.
CPU_BOUND = 0.85
#: Crawl length of the sections run at the default window (60 s). A host's
#: first window is no PID sample when its queue ran dry in it (frontier rule
#: 3: the index page is fetched before its links arrive), so on the code this
#: was written against the PID first acts about 120 s in: measured, 0
#: pid_trace rows in a 100 s crawl of the 49 hosts.
LONG = 150.0
SHORT = 90.0


class UsageError(Exception):
    """A mistake in the command line: one line on stderr, exit 2."""


# ---------------------------------------------------------------------------
# Crawls


def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_toml(k)} = {_toml(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"no TOML form for {v!r}")


Sets = list[tuple[str | None, str, str, Any]]  # (section of this bench or None, table, key, value)


def write_cluster(path: Path, n: int, *, seeds: Sequence[str], allow: Sequence[str],
                  politeness: dict[str, Any], resolve: dict[str, str], concurrency: int,
                  sets: Sets, section: str) -> list[str]:
    """A cluster.toml of ``n`` peers with ``--set`` applied; validated; returns the peer ids."""
    tables: dict[str, dict[str, Any]] = {
        "ring": {"name": "bench-polite"},
        "crawl": {"seeds": list(seeds), "allow_hosts": list(allow), "concurrency": concurrency,
                  "allow_private": True, "timeout": 10.0},
        "politeness": dict(politeness),
        "dns": {"resolve": dict(resolve)},
        "bloom": {"capacity": 1_000_000},
    }
    for only, table, key, value in sets:
        if only in (None, section):
            tables.setdefault(table, {})[key] = value
    ids = [f"p{i + 1}" for i in range(n)]
    lines = ["[ring]", *(f"{k} = {_toml(v)}" for k, v in tables.pop("ring").items())]
    for pid, port in zip(ids, free_ports(n)):
        lines += ["", "[[peer]]", f'id = "{pid}"', f'address = "tcp://127.0.0.1:{port}"',
                  f"data_dir = {_toml(str(path.parent / pid))}"]
    for table, keys in tables.items():
        lines += ["", f"[{table}]", *(f"{k} = {_toml(v)}" for k, v in keys.items())]
    path.write_text("\n".join(lines) + "\n")
    from peer.state.configfile import load_config
    from peer.errors import ConfigError

    try:
        load_config(path)
    except ConfigError as exc:
        raise UsageError(f"the crawl's config is refused (check --set): {exc}") from None
    return ids


def set_value(sets: Sets, section: str, table: str, key: str) -> Any:
    """The last ``--set`` of ``table.key`` that applies to ``section``, else None."""
    found = None
    for only, t, k, v in sets:
        if only in (None, section) and (t, k) == (table, key):
            found = v
    return found


@dataclass
class Run:
    """One crawl and what the server saw of it."""

    crawl: Crawl
    reqs: list[Request]
    server_cpu: float
    machine_cores: float  # every process of the machine, cores, over the crawl's wall time
    peak_peer: float = 0.0  # the busiest peer's cores in its busiest 5 s (sampled each second)
    peak_machine: float = 0.0  # the machine's cores in its busiest 5 s

    @property
    def peer_cores(self) -> float:
        """The busiest peer's share of one core."""
        return max((e.cpu for e in self.crawl.exits.values()), default=0.0) / self.crawl.wall

    @property
    def others(self) -> float:
        return max(0.0, self.machine_cores - self.crawl.cpu / self.crawl.wall
                   - self.server_cpu / self.crawl.wall)

    def bound(self) -> str:
        """CPU when the peer used a whole core, or the machine all of its cores, for 5 s."""
        cores = os.cpu_count() or 1
        if self.peak_peer >= CPU_BOUND:
            return f"CPU at times (a peer {self.peak_peer:.2f} cores in its busiest 5 s)"
        if self.peak_machine >= 0.9 * cores:
            return f"CPU at times (machine {self.peak_machine:.2f}/{cores} cores in its busiest 5 s)"
        return f"politeness (peer <= {self.peak_peer:.2f} cores in any 5 s)"


def crawl_once(children: Children, server: Server, d: Path, n: int, *, seconds: float, sets: Sets,
               section: str, seeds: Sequence[str], allow: Sequence[str], politeness: dict[str, Any],
               resolve: dict[str, str], concurrency: int = 128, stop_at: float | None = None) -> Run:
    d.mkdir(parents=True)
    toml = d / "cluster.toml"
    ids = write_cluster(toml, n, seeds=seeds, allow=allow, politeness=politeness, resolve=resolve,
                        concurrency=concurrency, sets=sets, section=section)
    s0, m0 = server.cpu(), machine_busy()
    stop_after = seconds if stop_at is None else max(1.0, stop_at - time.time())
    pids: list[int] = []
    samples: list[tuple[float, list[float], float]] = []

    def sample(_elapsed: float) -> float:
        if not pids:
            pids.extend(p.pid for p in children.live() if str(toml) in p.args)
        samples.append((time.monotonic(), [proc_cpu(pid) for pid in pids], machine_busy()))
        return 1.0

    crawl = run_crawl(children, toml, ids, time_limit=stop_after + 60, stop_after=stop_after,
                      while_running=sample)
    server_cpu, machine = server.cpu() - s0, machine_busy() - m0
    peak_peer = peak_machine = 0.0
    for (t0, c0, b0), (t1, c1, b1) in zip(samples, samples[5:]):
        if t1 > t0 and len(c0) == len(c1):
            # A peer gone by t1 reads 0.0: skip its negative difference.
            peak_peer = max([peak_peer, *((b - a) / (t1 - t0) for a, b in zip(c0, c1) if b >= a)])
            peak_machine = max(peak_machine, (b1 - b0) / (t1 - t0))
    time.sleep(1.5)  # nginx flushes its request log every second
    reqs = [r for r in read_requests(server)
            if crawl.started - 1 <= r.start <= crawl.started + crawl.wall + 1]
    for err in crawl.errors:
        if "time limit" not in err:
            print(f"> ! {err.strip()}", flush=True)
    report_ring(crawl)
    return Run(crawl, reqs, server_cpu, machine / crawl.wall, peak_peer, peak_machine)


# ---------------------------------------------------------------------------
# Output


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def over(got: int, limit: int) -> str:
    return f"**{got}** > {limit}" if got > limit else f"{got} <= {limit}"


def fmt(v: float | None, spec: str = ".2f") -> str:
    return "n/a" if v is None else format(v, spec)


@dataclass
class Ctx:
    args: argparse.Namespace
    children: Children
    work: Path
    sets: Sets
    command: str
    figures: list[str] = field(default_factory=list)
    _web: Server | None = None
    _step: list[dict[str, Any]] = field(default_factory=list)

    def web(self) -> Server:
        """nginx over the 49-host web, on 127.0.0.1 and 127.0.0.2 (started once)."""
        if self._web is None:
            binary = find_nginx()
            if binary is None:
                raise UsageError(f"nginx is not installed ({NGINX_HINT}); the rate, ip and "
                                 "peers3 sections need its request log")
            port = free_ports(1)[0]
            graph = graph_for(WEB_HOSTS, self.args.pages, self.args.links)
            site = render_site(graph, port, self.work / "site")
            print(f"> rendered {site.files} files of {WEB_HOSTS} hosts x {self.args.pages} pages "
                  f"({self.args.links} links a page) in {site.seconds:.1f} s; nginx on 127.0.0.1 "
                  f"and {IP_GROUP_ADDR}, port {port}\n", flush=True)
            self._web = Nginx.start(self.children, binary, site, self.work / "nginx", access_log=True,
                                    addresses=("127.0.0.1", IP_GROUP_ADDR))
        return self._web

    def section_cmd(self, section: str) -> str:
        return f"{self.command} --only {section}"


def seeds_for(hosts: Iterable[str], port: int) -> list[str]:
    return [f"http://{h}:{port}/" for h in hosts]
