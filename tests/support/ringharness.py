"""Peers on loopback for the multi-peer tests: real processes, or the real engine in process.

A :class:`Ring` writes a cluster.toml for the local web on ``web_port``,
starts ``python -m peer`` processes with their output in files, and kills
whatever is left when the test ends. Everything is bounded in time by the
caller's ``trio.fail_after``.

:meth:`Ring.start_in_process` runs a peer as ``peer.engine.crawler.Crawler`` in the
test's own trio loop instead: the same engine, ring node, zmq sockets on
loopback and results files, without the ~1.1 s of imports a process costs
and the seconds a loaded machine takes to start one. Its log lines and
summary go to the same pN-K.err/.out files a process writes, so a test reads
them the same way. Only what needs a process stays one: kill -9, exit
status, the ring between separate processes.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import math
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

import trio

from localweb.processes.peerrun import crawl_to_files, free_ports
from ring.tools.logs import TextFormatter


WEBFARM = Path(__file__).resolve().parents[2] / "scripts" / "webfarm.py"


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
                 ring: str = "test", dead_after: float = 3.0, takeover_after: float = 1.0,
                 lease: float = 0.0, extra: str = "") -> str:
    # takeover_after: the tests that kill a peer for good wait a second for
    # its hosts to be taken over, not the default's half minute. lease: 0 is
    # the default, half of dead_after; a peer started again waits 1.25 leases
    # (ring/membership/lease.py's grace) before its first request.
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
takeover_after = {takeover_after}
lease = {lease}

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


def tree_env(tree: Path | None) -> dict[str, Any]:
    """A process's ``cwd`` and ``env`` to run source ``tree`` (first on its path); none for this one."""
    if tree is None:
        return {}
    return {"cwd": str(tree), "env": {**os.environ, "PYTHONPATH": str(tree)}}


#: The in-process peer whose task (and the tasks it starts) is running: which log file a line goes to.
_PEER: contextvars.ContextVar[str] = contextvars.ContextVar("ringharness_peer", default="")


class _PeerLog(logging.Handler):
    """One in-process peer's log lines (INFO and up), in ``python -m peer``'s format."""

    def __init__(self, peer: str, path: Path) -> None:
        super().__init__(logging.INFO)
        self.peer = peer
        self.stream = path.open("a", encoding="utf-8")
        self.setFormatter(TextFormatter())

    def filter(self, record: logging.LogRecord) -> bool:
        return _PEER.get() == self.peer

    def emit(self, record: logging.LogRecord) -> None:
        self.stream.write(self.format(record) + "\n")
        self.stream.flush()

    def close(self) -> None:
        self.stream.close()
        super().close()


class InProcessPeer:
    """A peer run by :meth:`Ring.start_in_process`, shaped like the ``trio.Process`` of a real one.

    ``returncode`` is what ``python -m peer`` would exit with: 0 when the
    crawl returned, 1 when it raised (the traceback is in its .err file).
    SIGTERM stops it as the real peer's signal handler does; a kill -9 needs
    a real process.
    """

    def __init__(self, crawler, log: _PeerLog, out: Path, err: Path) -> None:  # type: ignore[no-untyped-def]
        self.crawler = crawler
        self.returncode: int | None = None
        self.scope = trio.CancelScope()
        self._log, self._out, self._err = log, out, err
        self._ended = trio.Event()

    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:  # type: ignore[no-untyped-def]
        _PEER.set(self._log.peer)
        task_status.started()
        try:
            with self.scope:
                self.returncode = await crawl_to_files(self.crawler, self._out, self._err)
        finally:
            if self.returncode is None:
                self.returncode = -signal.SIGKILL  # cancelled: what the test's clean-up did
            logging.getLogger().removeHandler(self._log)
            self._log.close()
            self._ended.set()

    def send_signal(self, sig: int) -> None:
        if sig != signal.SIGTERM:
            raise ValueError("an in-process peer takes SIGTERM only: kill -9 needs a real process")
        self.crawler.restart()  # a stop without --leave: a planned restart in a ring, a stop alone

    def kill(self) -> None:
        self.scope.cancel()

    async def wait(self) -> int:
        await self._ended.wait()
        assert self.returncode is not None
        return self.returncode


class Ring:
    """Peers of one cluster.toml as processes or in process; ``async with`` kills leftovers."""

    def __init__(self, tmp_path: Path, text: str) -> None:
        self.tmp = tmp_path
        self.toml = tmp_path / "cluster.toml"
        self.toml.write_text(text)
        self.procs: dict[str, trio.Process | InProcessPeer] = {}
        self.runs: dict[str, int] = Counter()
        self.logs: dict[str, tuple[Path, Path]] = {}
        self._levels: dict[str, int] | None = None

    async def __aenter__(self) -> Ring:
        return self

    async def __aexit__(self, *exc: object) -> None:
        for p in self.procs.values():
            if p.returncode is None:
                p.kill()
        with trio.CancelScope(shield=True):
            for p in self.procs.values():
                await p.wait()
        if self._levels is not None:
            for name, level in self._levels.items():
                logging.getLogger(name or None).setLevel(level)

    async def start_in_process(self, nursery: trio.Nursery, peer: str, *, address: str | None = None,
                               data_dir: Path | None = None, retry_failed: bool = False) -> InProcessPeer:
        """Start ``peer`` as a ``Crawler`` in ``nursery`` (``address``/``data_dir``: a joiner's --address,
        --data-dir; ``retry_failed``: --retry-failed)."""
        from peer.state.configfile import load_config
        from peer.engine.crawler import Crawler

        if self._levels is None:
            # What peer.commands.cli sets up: INFO and up, without httpx's line per request.
            names = ("", "httpx", "httpcore")
            self._levels = {n: logging.getLogger(n or None).level for n in names}
            logging.getLogger().setLevel(logging.INFO)
            for n in names[1:]:
                logging.getLogger(n).setLevel(logging.WARNING)
        self.runs[peer] += 1
        out = self.tmp / f"{peer}-{self.runs[peer]}.out"
        err = self.tmp / f"{peer}-{self.runs[peer]}.err"
        out.touch()
        err.touch()
        self.logs[peer] = (out, err)
        cfg = load_config(self.toml)
        cluster = len(cfg.peers) > 1 or address is not None
        crawler = Crawler(cfg, peer, data_dir=data_dir or Path(cfg.peer(peer).data_dir), progress_interval=1.0,
                          cluster=cluster, address=address, retry_failed=retry_failed)
        log = _PeerLog(peer, err)
        logging.getLogger().addHandler(log)
        proc = InProcessPeer(crawler, log, out, err)
        self.procs[peer] = proc
        await nursery.start(proc.run)
        return proc

    async def start(self, peer: str, *extra: str, tree: Path | None = None) -> trio.Process:
        """Start (or restart) ``peer``; its output goes to pN-K.out/.err. ``tree``: run that
        source tree's ``peer`` instead of this one's (the previous release: tests/support/previousrelease.py)."""
        self.runs[peer] += 1
        out = self.tmp / f"{peer}-{self.runs[peer]}.out"
        err = self.tmp / f"{peer}-{self.runs[peer]}.err"
        self.logs[peer] = (out, err)
        with out.open("wb") as fout, err.open("wb") as ferr:
            proc = await trio.lowlevel.open_process(
                [sys.executable, "-m", "peer", "--ring", str(self.toml), "--id", peer,
                 "--progress", "1", *extra],
                stdout=fout, stderr=ferr, **tree_env(tree))
        self.procs[peer] = proc
        return proc

    def kill(self, peer: str, sig: int = signal.SIGKILL) -> None:
        self.procs[peer].send_signal(sig)

    async def wait(self, *peers: str) -> None:
        for peer in peers or list(self.procs):
            await self.procs[peer].wait()

    async def ring_cmd(self, *args: str, tree: Path | None = None) -> trio.CompletedProcess:
        """``python -m ring ARGS --ring cluster.toml`` of this tree, or of ``tree``."""
        return await trio.run_process(
            [sys.executable, "-m", "ring", *args, "--ring", str(self.toml)],
            capture_stdout=True, capture_stderr=True, check=False, **tree_env(tree))

    def tails(self) -> str:
        return "\n".join(f"--- {peer} ---\n" + err.read_text()[-2500:]
                         for peer, (_, err) in self.logs.items())

    def output(self, peer: str) -> str:
        return self.logs[peer][0].read_text()


def fetched(farm, port: int) -> Counter[str]:
    """URL -> GET requests of it in the local web's log (robots.txt left out)."""
    return Counter(f"http://{e.host}:{port}{e.target}" for e in farm.log
                   if e.method == "GET" and e.target != "/robots.txt")


def pages_fetched(farm, hosts: Collection[str] | None = None) -> int:
    """Page requests in the local web's log (robots.txt left out), of ``hosts`` only if given."""
    return sum(e.target != "/robots.txt" and (hosts is None or e.host in hosts) for e in farm.log)


async def wait_pages(farm, n: int, hosts: Collection[str] | None = None) -> None:
    while pages_fetched(farm, hosts) < n:
        await trio.sleep(0.05)


def hosts_of(graph, port: int, peers: list[str], peer: str) -> set[str]:
    """The web's hosts ``peer`` owns on an equal-weight ring of ``peers`` (as busiest_peer counts them)."""
    from peer.core.urls.normalize import host_key
    from ring.hashring import HashRing

    ring = HashRing({p: 1.0 for p in peers})
    return {h for h in graph.hosts(special=False) if ring.owner(host_key(f"http://{h}:{port}/")) == peer}


def busiest_peer(graph, port: int, peers: list[str]) -> str:
    """The peer of ``peers`` that owns the most of the web's hosts on an equal-weight ring.

    A test that kills or removes one peer picks this one, so the victim
    surely had hosts to crawl (with a dozen hosts, a peer owning none is a
    few-percent event).
    """
    from peer.core.urls.normalize import host_key
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


class RingMember:
    """A peer's ring node built from cluster.toml as a peer builds it, over zmq, with a stand-in crawl.

    ``peer.core.door.peer.ring_node`` makes the node (``[ring]``) and
    ``peer.engine.ringface.curve_keys`` reads its Curve keys; ``ring.io.driver.RingDriver`` runs it over the same
    ``ring.io.sockets.MemberSockets`` a peer's engine uses, and hands what
    the ring delivers to ``crawl`` (a ``ring.crawlport.CrawlPort``). For the
    tests of the ring's sockets and tools without a crawl behind them.
    """

    def __init__(self, cfg, peer_id: str, crawl) -> None:  # type: ignore[no-untyped-def]
        from peer.core.config.cluster import bind_address
        from peer.core.door.peer import ring_node
        from peer.engine.ringface import curve_keys
        from ring.io.driver import RingDriver

        spec = cfg.peer(peer_id)
        rc = cfg.ring
        self.address = spec.address
        keys = curve_keys(cfg, peer_id)
        self.node = ring_node(cfg, peer_id, spec.address, spec.weight, trio.current_time(),
                              incarnation=int(time.time() * 1000), curve=keys is not None)
        self.driver = RingDriver(self.node, crawl, spec.address, bind=bind_address(spec), keys=keys,
                                 recv_queue=rc.recv_queue,
                                 heartbeat=(rc.suspect_after, rc.dead_after))
        self.membership = self.node.membership
        self.dropped = self.node.dropped
        self.incarnation = self.node.membership.me.incarnation
        self.route = self.driver.route

    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:  # type: ignore[no-untyped-def]
        await self.driver.run(task_status=task_status)
