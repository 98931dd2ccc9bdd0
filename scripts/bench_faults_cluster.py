"""bench_faults' ring of peer processes: start, kill, restart them, read their logs, ask their views.

A part of ``scripts/bench_faults.py`` (which documents the benchmark and is
the one to run), as ``bench_ring_forward`` is of ``bench_ring``:
:class:`Cluster` runs the peers of one cluster.toml as trio processes,
:func:`log_lines` parses what they log (and :data:`RESUMED`,
:data:`HANDOFF` the two lines the resume and hand-off figures come from),
:class:`Viewer` asks one peer for its view of the ring as ``python -m ring
status`` does, and :func:`wait_pages` waits on the web's request log.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import time
from collections.abc import Sequence
from ring.tools.logs import parse_stamp
from pathlib import Path

import trio

from localweb import WebFarm
from localweb.bench import free_ports
from peer.state.configfile import load_config
from ring.io.zmqio import SocketType, open_socket
from ring.messages import DecodeError, StatusReply, StatusRequest, decode, encode

#: The checkout: the peers run from it (their relative paths, as a user's would).
ROOT = Path(__file__).resolve().parent.parent
#: Peers' log lines: "2024-11-30T02:57:01.123Z INFO peer.cluster: message" (ring.tools.logs).
LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (\w+) ([\w.]+): (.*)$")
RESUMED = re.compile(r"resuming the crawl from \S+: (\d+) queued URLs, (\d+) to forward, (\d+) result rows restored")
HANDOFF = re.compile(r"hand-off: (\d+) fetched URLs to their new owners, all acked in ([\d.]+)s")


class BenchError(Exception):
    """A run that did not go as the benchmark needs (reported as one line)."""


# -- processes -----------------------------------------------------------------


def log_time(stamp: str) -> float:
    """Epoch seconds of a log line's stamp (UTC, millisecond resolution)."""
    return parse_stamp(stamp)


def log_lines(text: str) -> list[tuple[float, str, str, str]]:
    """(epoch, level, logger, message) of each log line of a peer's stderr."""
    out = []
    for line in text.splitlines():
        m = LOG_LINE.match(line)
        if m:
            out.append((log_time(m[1]), m[2], m[3], m[4]))
    return out


def du(path: Path) -> tuple[int, int, int]:
    """(bytes on disk as du counts them, apparent bytes, files) under ``path``."""
    disk = size = files = 0
    for dirpath, _, names in os.walk(path):
        for name in names:
            st = os.lstat(os.path.join(dirpath, name))
            disk += st.st_blocks * 512
            size += st.st_size
            files += 1
    return disk, size, files


class Cluster:
    """The peers of one cluster.toml as processes; ``close`` kills what is left.

    Not ``PR_SET_PDEATHSIG``: trio starts processes from a worker thread, and
    that signal fires when the *thread* ends, which trio's thread cache does
    after a few idle seconds.
    """

    def __init__(self, work: Path, text: str) -> None:
        work.mkdir(parents=True, exist_ok=True)
        self.work = work
        self.toml = work / "cluster.toml"
        self.toml.write_text(text)
        self.cfg = load_config(self.toml)
        self.procs: dict[str, trio.Process] = {}
        self.runs: dict[str, int] = {}
        self.errs: dict[str, list[Path]] = {}
        self.outs: dict[str, list[Path]] = {}
        self.exited: dict[str, float] = {}

    def command(self, peer: str, *extra: str) -> list[str]:
        return [sys.executable, "-m", "peer", "--ring", str(self.toml), "--id", peer,
                "--progress", "1", *extra]

    async def start(self, peer: str, *extra: str) -> float:
        """Start (or restart) ``peer``; the wall time just before the exec."""
        run = self.runs[peer] = self.runs.get(peer, 0) + 1
        out, err = self.work / f"{peer}-{run}.out", self.work / f"{peer}-{run}.err"
        self.outs.setdefault(peer, []).append(out)
        self.errs.setdefault(peer, []).append(err)
        with out.open("wb") as fout, err.open("wb") as ferr:
            t0 = time.time()
            self.procs[peer] = await trio.lowlevel.open_process(
                self.command(peer, *extra), stdout=fout, stderr=ferr, cwd=str(ROOT))
        return t0

    def kill(self, peer: str) -> None:
        self.procs[peer].send_signal(signal.SIGKILL)

    async def wait(self, *peers: str) -> None:
        for peer in peers or list(self.procs):
            await self.procs[peer].wait()
            self.exited.setdefault(peer, time.time())

    def stderr(self, peer: str, run: int = -1) -> str:
        return self.errs[peer][run].read_text(errors="replace")

    def stdout(self, peer: str, run: int = -1) -> str:
        return self.outs[peer][run].read_text(errors="replace")

    def tails(self, n: int = 1500) -> str:
        return "\n".join(f"--- {p} ---\n{self.stderr(p)[-n:]}" for p in self.procs)

    async def close(self) -> None:
        for p in self.procs.values():
            if p.returncode is None:
                p.kill()
        with trio.CancelScope(shield=True):
            for p in self.procs.values():
                await p.wait()


def cluster_text(work: Path, args: argparse.Namespace, web_port: int, n: int) -> str:
    """cluster.toml for ``n`` peers on free ports; [ring] timing left at its defaults."""
    peers = "".join(
        f'[[peer]]\nid = "p{i + 1}"\naddress = "tcp://127.0.0.1:{port}"\n'
        f'data_dir = "{work / f"p{i + 1}"}"\n\n' for i, port in enumerate(free_ports(n)))
    return f"""[ring]
name = "bench-faults"

{peers}[crawl]
seeds = ["http://s001.web.test:{web_port}/"]
allow_hosts = ["*.web.test"]
concurrency = {args.concurrency}
allow_private = true
timeout = 5.0

[politeness]
rate = {args.rate}
window = 2.0
initial_delay = {60.0 / args.rate:g}
host_concurrency = 1

[dns]
resolve = {{ "*.web.test" = "127.0.0.1" }}

[bloom]
capacity = 100000
"""


def pages(farm: WebFarm) -> int:
    return sum(e.target != "/robots.txt" for e in farm.log)


async def wait_pages(farm: WebFarm, n: int, cluster: Cluster) -> None:
    while pages(farm) < n:
        for peer, p in cluster.procs.items():
            if p.returncode is not None:
                raise BenchError(f"{peer} exited ({p.returncode}) before the web saw {n} pages\n"
                                 + cluster.tails())
        await trio.sleep(0.05)


# -- the ring's views ------------------------------------------------------------


class Viewer:
    """One DEALER to one peer: its view of every member's state, on request.

    The StatusRequest that ``python -m ring status`` sends (ring/tools/client.py),
    over a socket kept open so that polling every 0.1 s costs no reconnects.
    """

    def __init__(self, sock, ring_name: str) -> None:  # type: ignore[no-untyped-def]
        self.sock = sock
        self.ring = ring_name
        self.nonce = int.from_bytes(os.urandom(3), "big")

    async def states(self, timeout: float = 1.0) -> dict[str, str] | None:
        self.nonce += 1
        await self.sock.send_multipart([encode(StatusRequest(self.ring, "bench-faults", self.nonce))])
        with trio.move_on_after(timeout):
            while True:
                frames = await self.sock.recv_multipart()
                try:
                    reply = decode(frames[-1])
                except DecodeError:
                    continue
                if isinstance(reply, StatusReply) and reply.nonce == self.nonce:
                    return {m.id: m.state.value for m in reply.members}
        return None


async def views(cluster: Cluster, peers: Sequence[str]) -> dict[str, dict[str, str] | None]:
    out: dict[str, dict[str, str] | None] = {}

    async def one(peer: str) -> None:
        async with open_socket(SocketType.DEALER, connect=cluster.cfg.peer(peer).address) as sock:
            out[peer] = await Viewer(sock, cluster.cfg.ring.name).states()

    async with trio.open_nursery() as n:
        for p in peers:
            n.start_soon(one, p)
    return out
