"""The crawls of a benchmark: ``python -m peer`` processes run to their end, and what they left.

:func:`write_toml` writes a cluster.toml of ``n`` peers crawling the site
graph; :func:`run_crawl` starts them as :class:`localweb.processes.children.Children`,
waits for all to exit (SIGINT at ``stop_after`` or the time limit, SIGKILL
20 s later) and returns a :class:`Crawl`; then :func:`page_rows`,
:func:`pid_rows` and :func:`report_ring` read what the peers left (their
result stores and their logs).
"""

from __future__ import annotations

import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from localweb.processes.children import Children, Exited
from localweb.processes.peerrun import free_ports
from ring.tools.logs import parse_stamp
from peer.core.run.layout import DataDir

__all__ = ["Crawl", "page_rows", "pid_rows", "report_ring", "ring_changes", "run_crawl", "write_toml"]


def write_toml(path: Path, n: int, web_port: int, hosts: int, *, concurrency: int,
               politeness: dict[str, float], ring: dict[str, float] | None = None, extra: str = "") -> list[str]:
    """A cluster.toml of ``n`` peers crawling from every host's index; returns the peer ids.

    ``extra``: TOML appended as it is (whole sections, e.g. ``[warc]`` with
    ``enabled = true``), for a crawl with a feature on.
    """
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
    path.write_text("\n".join(lines) + (f"\n{extra}\n" if extra else ""))
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
              stop_after: float | None = None, while_running=None,  # type: ignore[no-untyped-def]
              tree: Path | None = None) -> Crawl:
    """Start the peers, wait for all to exit (SIGINT at ``stop_after`` or the limit).

    ``tree``: a checkout whose ``peer`` package the peers run (``python -m``
    puts the working directory first on the path), for side-by-side runs.
    """
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
                 "--log-level", "INFO"], stdout=out, stderr=err, cwd=tree)
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
                stamp = parse_stamp(line.split(" ", 1)[0])
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
    return _every_peers(crawl, "select url, host, status, epoch_us(fetched_at) / 1e6, peer, elapsed_ms "
                               "from pages where status is not null")


def pid_rows(crawl: Crawl) -> list[tuple[str, float, int, float, float]]:
    """(host, window_end epoch s, n, delay, setpoint) of every PID update, all peers."""
    return _every_peers(crawl, "select host, epoch_us(window_end) / 1e6, n, delay, setpoint from pid_trace")


def _every_peers(crawl: Crawl, sql: str) -> list[Any]:
    """The rows ``sql`` selects from each peer's results file that exists, read-only."""
    rows = []
    for pid in crawl.ids:
        path = crawl.data(pid)
        if path.exists():
            with duckdb.connect(str(path), read_only=True) as con:
                rows += con.execute(sql).fetchall()
    return rows

