"""Real peer processes on loopback for the multi-process tests.

A :class:`Ring` writes a cluster.toml for the local web on ``web_port``,
starts ``python -m peer`` processes with their output in files, and kills
whatever is left when the test ends. Everything is bounded in time by the
caller's ``trio.fail_after``.
"""

from __future__ import annotations

import contextlib
import math
import os

import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import trio

from localweb.peerrun import free_ports


WEBFARM = Path(__file__).resolve().parent.parent / "scripts" / "webfarm.py"


@contextlib.contextmanager
def webfarm_process(log: Path, *, hosts: int) -> Iterator[int]:
    """``scripts/webfarm.py`` as a user runs it, on a free port (yielded), its requests in ``log``."""
    with subprocess.Popen(
            [sys.executable, str(WEBFARM), "--port", "0", "--hosts", str(hosts), "--pages", "6",
             "--links", "3", "--shop-products", "3", "--log", str(log)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=os.environ) as proc:
        try:
            assert proc.stdout is not None
            first = proc.stdout.readline()
            assert first.startswith("listening on 127.0.0.1:"), first
            yield int(first.rsplit(":", 1)[1])
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)


def cluster_text(tmp_path: Path, web_port: int, n: int, *, rate: float = 0.0,
                 window: float = 2.0, initial_delay: float = 0.0, concurrency: int = 16,
                 ring: str = "test", dead_after: float = 3.0, extra: str = "") -> str:
    ports = free_ports(n)
    peers = "".join(
        f'[[peer]]\nid = "p{i + 1}"\naddress = "tcp://127.0.0.1:{port}"\n'
        f'data_dir = "{tmp_path / f"p{i + 1}"}"\n\n'
        for i, port in enumerate(ports))
    return f"""
[ring]
name = "{ring}"
gossip_interval = 0.2
suspect_after = 1.0
dead_after = {dead_after}

{peers}
[crawl]
seeds = ["http://s001.web.test:{web_port}/"]
allow_hosts = ["*.web.test"]
concurrency = {concurrency}
allow_private = true
timeout = 5.0

[politeness]
rate = {rate}
window = {window}
initial_delay = {initial_delay}
host_concurrency = 1

[dns]
resolve = {{ "*.web.test" = "127.0.0.1" }}

[bloom]
capacity = 100000
{extra}
"""


class Ring:
    """Peers of one cluster.toml as processes; ``async with`` kills leftovers."""

    def __init__(self, tmp_path: Path, text: str) -> None:
        self.tmp = tmp_path
        self.toml = tmp_path / "cluster.toml"
        self.toml.write_text(text)
        self.procs: dict[str, trio.Process] = {}
        self.runs: dict[str, int] = Counter()
        self.logs: dict[str, tuple[Path, Path]] = {}

    async def __aenter__(self) -> Ring:
        return self

    async def __aexit__(self, *exc: object) -> None:
        for p in self.procs.values():
            if p.returncode is None:
                p.kill()
        with trio.CancelScope(shield=True):
            for p in self.procs.values():
                await p.wait()

    async def start(self, peer: str, *extra: str) -> trio.Process:
        """Start (or restart) ``peer``; its output goes to pN-K.out/.err."""
        self.runs[peer] += 1
        out = self.tmp / f"{peer}-{self.runs[peer]}.out"
        err = self.tmp / f"{peer}-{self.runs[peer]}.err"
        self.logs[peer] = (out, err)
        with out.open("wb") as fout, err.open("wb") as ferr:
            proc = await trio.lowlevel.open_process(
                [sys.executable, "-m", "peer", "--ring", str(self.toml), "--id", peer,
                 "--progress", "1", *extra],
                stdout=fout, stderr=ferr)
        self.procs[peer] = proc
        return proc

    def kill(self, peer: str, sig: int = signal.SIGKILL) -> None:
        self.procs[peer].send_signal(sig)

    async def wait(self, *peers: str) -> None:
        for peer in peers or list(self.procs):
            await self.procs[peer].wait()

    async def ring_cmd(self, *args: str) -> trio.CompletedProcess:
        return await trio.run_process(
            [sys.executable, "-m", "ring", *args, "--ring", str(self.toml)],
            capture_stdout=True, capture_stderr=True, check=False)

    def tails(self) -> str:
        return "\n".join(f"--- {peer} ---\n" + err.read_text()[-2500:]
                         for peer, (_, err) in self.logs.items())

    def output(self, peer: str) -> str:
        return self.logs[peer][0].read_text()


def fetched(farm, port: int) -> Counter[str]:
    """URL -> GET requests of it in the local web's log (robots.txt left out)."""
    return Counter(f"http://{e.host}:{port}{e.target}" for e in farm.log
                   if e.method == "GET" and e.target != "/robots.txt")


def pages_fetched(farm) -> int:
    return sum(e.target != "/robots.txt" for e in farm.log)


async def wait_pages(farm, n: int) -> None:
    while pages_fetched(farm) < n:
        await trio.sleep(0.05)


def busiest_peer(graph, port: int, peers: list[str]) -> str:
    """The peer of ``peers`` that owns the most of the web's hosts on an equal-weight ring.

    A test that kills or removes one peer picks this one, so the victim
    surely had hosts to crawl (with a dozen hosts, a peer owning none is a
    few-percent event).
    """
    from peer.urls import host_key
    from ring.hashring import HashRing

    ring = HashRing({p: 1.0 for p in peers})
    owned = Counter(ring.owner(host_key(f"http://{h}:{port}/")) for h in graph.hosts(special=False))
    return max(peers, key=lambda p: (owned[p], p))


def worst_window(times: list[float], w: float) -> int:
    """Most of ``times`` (sorted) in any half-open window of ``w`` seconds: what a site's log shows."""
    best, lo = 0, 0
    for hi, t in enumerate(times):
        while times[lo] <= t - w:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def ceiling(per_second: float, w: float) -> int:
    """The politeness ceiling of a W-second window: ceil(1.1 x rate x W) + 1 requests."""
    return math.ceil(1.1 * per_second * w) + 1
