"""Run real ``python -m peer`` processes against the hostile web and judge what they did.

- :func:`cluster_toml` writes a cluster.toml of ``n`` peers for the web on
  ``port``. Keys given in ``caps`` (``"crawl.max_links_per_page"``...) are
  written only if this tree's ``peer.core.config.cluster`` declares them, so one test or
  benchmark runs before and after the caps are added; :func:`supported`
  says which were.
- :class:`PeerProcess` starts a peer with its output in files and, while it
  runs, polls its RSS from ``/proc/<pid>/status``. :func:`run_peers` waits
  for the peers, stops them (SIGTERM) when ``stop_when()`` says so or when
  the time is up, and kills one whose RSS passes ``rss_kill_mb``: the judged
  crawl must not take the shared machine down with it.
- :func:`run_in_process` runs one peer's crawl in this process instead (the
  same ``Crawler`` and fetcher over real sockets, without an interpreter to
  start): for the tests that judge what one peer does with the bytes it is
  sent, not its process (exit status, signals, RSS).
- :func:`read_rows` reads a peer's ``pages`` table read-only after it exited.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localweb.hostile.server import DNS

__all__ = ["InProcessPeer", "PeerProcess", "Run", "cluster_toml", "crawl_to_files", "free_ports", "read_rows",
           "rss_mb", "run_in_process", "run_peers", "supported", "toml_value"]


def toml_value(v: Any) -> str:
    """``v`` as a TOML value (bool, str, number, list, inline table)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + " }"
    return repr(v)


def supported(key: str) -> bool:
    """True if ``section.name`` is a key of this tree's cluster.toml."""
    from peer.core.config.cluster import SECTIONS

    section, _, name = key.partition(".")
    cls = SECTIONS.get(section)
    return cls is not None and name in {f.name for f in dataclasses.fields(cls)}


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports free on 127.0.0.1 right now (bound to 0, then released).

    The one copy: the tests (tests/support/ringharness.py) and the benchmarks
    (scripts/bench_ring_web.py) import it from here.
    """
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def cluster_toml(tmp: Path, seeds: Sequence[str], *, peers: int = 1,
                 sections: Mapping[str, Mapping[str, Any]] | None = None,
                 caps: Mapping[str, Any] | None = None) -> Path:
    """Write ``tmp/cluster.toml`` for the hostile web; ``sections`` override the defaults."""
    tables: dict[str, dict[str, Any]] = {
        "ring": {"name": "hostile", "gossip_interval": 0.2, "suspect_after": 1.0, "dead_after": 3.0},
        "crawl": {"seeds": list(seeds), "allow_hosts": ["*.test"], "allow_private": True,
                  "concurrency": 32, "timeout": 3.0},
        "politeness": {"rate": 0.0, "initial_delay": 0.0, "host_concurrency": 1, "window": 2.0},
        "dns": {"resolve": dict(DNS)},
        "bloom": {"capacity": 1_000_000},
    }
    for key, value in (caps or {}).items():
        if supported(key):
            section, _, name = key.partition(".")
            tables.setdefault(section, {})[name] = value
    # A test's own sections win over the caps it shares with the others.
    for name, table in (sections or {}).items():
        tables.setdefault(name, {}).update(table)
    text = "".join(f'[[peer]]\nid = "p{i + 1}"\naddress = "tcp://127.0.0.1:{port}"\n'
                   f'data_dir = "{tmp / f"p{i + 1}"}"\n\n'
                   for i, port in enumerate(free_ports(peers)))
    for name, table in tables.items():
        text += f"[{name}]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in table.items()) + "\n"
    path = tmp / "cluster.toml"
    path.write_text(text)
    return path


def rss_mb(pid: int) -> float:
    """Resident set size of a live process in MB (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


@dataclass
class _PeerOutput:
    """What every run peer leaves: its output files, times, peak RSS and why it was stopped."""

    id: str
    out: Path
    err: Path
    data_dir: Path
    started: float
    peak_rss_mb: float = 0.0
    ended: float | None = None
    killed: str = ""           # "", "rss" or "time"

    @property
    def seconds(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def stderr(self) -> str:
        return self.err.read_text(errors="replace")

    def stdout(self) -> str:
        return self.out.read_text(errors="replace")


@dataclass
class PeerProcess(_PeerOutput):
    """One running peer: its process, output files and the peak RSS seen."""

    proc: subprocess.Popen = field(kw_only=True)

    @property
    def code(self) -> int | None:
        return self.proc.returncode


@dataclass
class InProcessPeer(_PeerOutput):
    """One peer's crawl run by :func:`run_in_process`: its log, summary and outcome.

    ``code`` is what ``python -m peer`` would have exited with: 0 when the crawl
    returned, 1 when it raised (the traceback is in ``err``, as on a real
    peer's stderr). ``peak_rss_mb`` is not measured in process: tests of
    memory run real processes.
    """

    code: int | None = None


@dataclass
class Run:
    """What a crawl did: the peers, and whether it was stopped from outside."""

    peers: list[PeerProcess] | list[InProcessPeer]
    stopped: bool = False      # SIGTERM because stop_when() said so
    timed_out: bool = False    # SIGTERM because the time was up
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def codes(self) -> list[int | None]:
        return [p.code for p in self.peers]

    @property
    def peak_rss_mb(self) -> float:
        return max((p.peak_rss_mb for p in self.peers), default=0.0)

    def stderr(self) -> str:
        return "\n".join(f"--- {p.id} stderr (last 3000 chars) ---\n{p.stderr()[-3000:]}" for p in self.peers)

    def by_url(self) -> dict[str, dict[str, Any]]:
        return {r["url"]: r for r in self.rows}


def start_peer(toml: Path, peer_id: str, data_dir: Path, *, progress: float = 1.0) -> PeerProcess:
    out, err = toml.parent / f"{peer_id}.out", toml.parent / f"{peer_id}.err"
    with out.open("wb") as fout, err.open("wb") as ferr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "peer", "--ring", str(toml), "--id", peer_id,
             "--progress", str(progress)],
            stdout=fout, stderr=ferr, stdin=subprocess.DEVNULL, env=dict(os.environ))
    return PeerProcess(peer_id, out, err, data_dir, time.monotonic(), proc=proc)


def run_peers(toml: Path, *, peers: int = 1, timeout: float = 60.0, rss_kill_mb: float = 1200.0,
              stop_when: Callable[[], bool] | None = None, grace: float = 20.0,
              poll: float = 0.1) -> Run:
    """Start ``peers`` peers of ``toml``, wait (bounded) for them to end, read their rows."""
    procs = [start_peer(toml, f"p{i + 1}", toml.parent / f"p{i + 1}") for i in range(peers)]
    run = Run(procs)
    deadline = time.monotonic() + timeout
    term_at: float | None = None
    try:
        while any(p.proc.poll() is None for p in procs):
            now = time.monotonic()
            for p in procs:
                if p.proc.poll() is None:
                    p.peak_rss_mb = max(p.peak_rss_mb, rss_mb(p.proc.pid))
                    if p.peak_rss_mb > rss_kill_mb:
                        p.killed = "rss"
                        p.proc.kill()
                elif p.ended is None:
                    p.ended = now
            if term_at is None and (now > deadline or (stop_when is not None and stop_when())):
                run.timed_out = now > deadline
                run.stopped = not run.timed_out
                term_at = now
                for p in procs:
                    if p.proc.poll() is None:
                        p.proc.send_signal(signal.SIGTERM)
            if term_at is not None and now > term_at + grace:
                for p in procs:
                    if p.proc.poll() is None:
                        p.killed = p.killed or "time"
                        p.proc.kill()
            time.sleep(poll)
    finally:
        for p in procs:
            if p.proc.poll() is None:
                p.proc.kill()
            p.proc.wait()
            p.ended = p.ended or time.monotonic()
    for p in procs:
        run.rows += read_rows(p.data_dir)
    return run


async def crawl_to_files(crawler: Any, out: Path, err: Path) -> int:
    """``await crawler.run()`` as ``python -m peer`` would end it: the exit status.

    The summary goes to ``out``; an exception's traceback to ``err`` and 1
    (cancellation propagates). The one copy for the peers the tests run in
    their own process (:func:`run_in_process`, tests/support/ringharness.py).
    """
    import traceback

    try:
        summary = await crawler.run()
    except Exception:
        with err.open("a") as f:
            f.write(traceback.format_exc())
        return 1
    out.write_text(summary.render() + "\n")
    from peer.errors import EXIT_RESTART

    return EXIT_RESTART if getattr(crawler, "exit_for_restart", False) else 0


def run_in_process(toml: Path, *, timeout: float = 60.0, stop_when: Callable[[], bool] | None = None,
                   grace: float = 20.0, poll: float = 0.1, during: Callable[[Any], None] | None = None) -> Run:
    """Crawl as the one peer of ``toml`` in this process, bounded as :func:`run_peers` is.

    When the time is up or ``stop_when()`` says so the crawl is stopped as
    SIGTERM would stop it; ``grace`` seconds later its fetches are cancelled.
    The peer's log (INFO and up, the format of ``python -m peer``) goes to
    ``p1.err`` and its summary to ``p1.out``, beside ``toml``. ``during``, if
    given, is called with the ``Crawler`` at every poll, on its event loop
    (a test steering the crawl: ``Crawler.adopt_settings``, say).
    """
    import logging

    import trio

    from peer.state.configfile import load_config
    from peer.engine.crawler import Crawler
    from ring.tools.logs import TextFormatter

    cfg = load_config(toml)
    (spec,) = cfg.peers
    peer = InProcessPeer(spec.id, toml.parent / f"{spec.id}.out", toml.parent / f"{spec.id}.err",
                         Path(spec.data_dir), time.monotonic())
    run = Run([peer])
    root = logging.getLogger()
    handler = logging.FileHandler(peer.err, encoding="utf-8")
    handler.setFormatter(TextFormatter())  # as python -m peer writes its log: UTC stamps
    handler.setLevel(logging.INFO)
    level = root.level
    root.addHandler(handler)
    root.setLevel(min(level, logging.INFO) if level else logging.INFO)
    crawler = Crawler(cfg, spec.id, data_dir=peer.data_dir, progress_interval=1.0)

    async def watch(cancel: trio.CancelScope) -> None:
        deadline = trio.current_time() + timeout
        while trio.current_time() < deadline and not (stop_when is not None and stop_when()):
            if during is not None:
                during(crawler)
            await trio.sleep(poll)
        run.timed_out = trio.current_time() >= deadline
        run.stopped = not run.timed_out
        crawler.stop()
        await trio.sleep(grace / 2)
        crawler.cancel_in_flight()
        await trio.sleep(grace / 2)
        peer.killed = "time"
        cancel.cancel()

    async def main() -> int:
        code = 0  # stopped by watch() at the time limit: as a peer stopped by a signal
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch, nursery.cancel_scope)
            code = await crawl_to_files(crawler, peer.out, peer.err)
            nursery.cancel_scope.cancel()
        return code

    peer.out.write_text("\n")  # no summary unless the crawl ends by itself
    try:
        peer.code = trio.run(main)
    finally:
        peer.ended = time.monotonic()
        root.removeHandler(handler)
        root.setLevel(level)
        handler.close()
    run.rows = read_rows(peer.data_dir)
    return run


def read_rows(data_dir: Path) -> list[dict[str, Any]]:
    """The ``pages`` rows of a peer that has exited ([] if it left no results file)."""
    import duckdb

    from peer.core.run.layout import DataDir

    path = DataDir(data_dir).results
    if not path.exists():
        return []
    try:
        with duckdb.connect(str(path), read_only=True) as con:
            cur = con.execute("select * from pages")
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]
    except duckdb.Error:
        return []  # a peer killed mid-write: no readable results
