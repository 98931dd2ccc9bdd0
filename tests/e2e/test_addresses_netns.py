"""Ring addresses across network namespaces: a bind apart from the advertised address, and a name that moves.

Three "machines" (``localweb.netns.ring.NetRing``: a namespace each on a
bridge) and a fourth for the operator (``w``), each with its own hosts file
(``NetRing.write_hosts``). The members are bare ring nodes in processes of
their own (``localweb.netns.ringnode``: a peer's ring node and sockets,
without the crawl, about a third of a peer's start-up CPU):

- p1 binds ``tcp://0.0.0.0:5555`` and advertises its namespace's address;
- p2 is a plain literal;
- p3 is named ``p3.ring.test`` and resolves the name nowhere itself, as a pod
  whose own DNS record is published only once it is ready (Kubernetes
  without ``publishNotReadyAddresses``): it must listen without resolving it.

p3 is then stopped, its namespace moved to a new address, the hosts files
changed to match, and p3 started again with the same cluster.toml: p1 and p2
must hold its new life alive with a TCP connection to its new address (their
sockets re-resolved the name), and ``python -m ring status`` from the
operator's namespace lists the three alive. Skipped, with its reason, where
namespaces are not available (not root, no ``ip``).
"""

from __future__ import annotations

import io
import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import pytest

from localweb.netns.ring import NetRing, available

pytestmark = pytest.mark.skipif(available() is not None, reason=available() or "")

PORT = 5555
NAME = "p3.ring.test"
#: How long a phase may take at most (not a timed assert: a bound on a wait).
PHASE = 60.0


class Lines:
    """A process's stdout lines, read by a thread; the last ``alive:`` line is its view."""

    def __init__(self, stream: IO[str]) -> None:
        self.view: set[str] = set()
        self._q: queue.Queue[str] = queue.Queue()
        self.reader = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.reader.start()

    def _read(self, stream: IO[str]) -> None:
        with stream:  # closed here at the process's end, by the one thread that reads it
            for line in stream:
                self._q.put(line)

    def update(self) -> set[str]:
        while True:
            try:
                line = self._q.get_nowait()
            except queue.Empty:
                return self.view
            if line.startswith("alive:"):
                self.view = set(line.split()[1:])


def _start(net: NetRing, peer: str, toml: Path, env: dict[str, str],
           started: list[tuple[subprocess.Popen[Any], Lines]]) -> tuple[subprocess.Popen[Any], Lines]:
    proc = net.popen(peer, [sys.executable, "-m", "localweb.netns.ringnode", "--ring", str(toml), "--id", peer],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    started.append((proc, Lines(io.TextIOWrapper(proc.stdout))))
    return started[-1]


def _incarnation(view: set[str], peer: str) -> int:
    return max((int(v.split("@")[1]) for v in view if v.split("@")[0] == peer), default=-1)


def _ids(view: set[str]) -> set[str]:
    return {v.split("@")[0] for v in view}


def _wait(procs: dict[str, tuple[subprocess.Popen[Any], Lines]], done: Any, what: str) -> None:
    deadline = time.monotonic() + PHASE
    while time.monotonic() < deadline:
        views = {p: lines.update() for p, (_, lines) in procs.items()}
        if done(views):
            return
        for p, (proc, _) in procs.items():
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""  # type: ignore[union-attr]
                pytest.fail(f"{p} exited {proc.returncode} while waiting for {what}: {err[-2000:]}")
        time.sleep(0.1)
    pytest.fail(f"not within {PHASE:g} s: {what}; views {views}")


def _peer_at(address: str, ss: str) -> bool:
    """``ss -tn`` lists a connection whose far end is ``address``:PORT (plain or v4-mapped)."""
    return any(re.fullmatch(rf"(\[::ffff:)?{re.escape(address)}\]?:{PORT}", line.split()[-1])
               for line in ss.splitlines() if line.split())


def _ns(net: NetRing, name: str, *argv: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(["ip", "netns", "exec", net.netns(name), *argv], capture_output=True, text=True,
                          timeout=60, env=env, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_bound_address_apart_from_the_advertised_one_and_a_name_that_moves(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    started: list[tuple[subprocess.Popen[Any], Lines]] = []
    try:
        _walk(tmp_path, env, started)
    finally:  # NetRing has ended every process: their pipes are at their end
        for proc, lines in started:
            lines.reader.join(10)
            if proc.stderr is not None:
                proc.stderr.close()


def _walk(tmp_path: Path, env: dict[str, str], started: list[tuple[subprocess.Popen[Any], Lines]]) -> None:
    with NetRing(3) as net:
        others = ["w", "p1", "p2"]
        net.write_hosts({NAME: net.address("p3")}, others)
        net.write_hosts({}, ["p3"])  # p3 cannot resolve its own name
        toml = tmp_path / "cluster.toml"
        toml.write_text(
            '[ring]\nname = "moves"\ngossip_interval = 0.2\nsuspect_after = 1.0\ndead_after = 3.0\n\n'
            f'[[peer]]\nid = "p1"\naddress = "tcp://{net.address("p1")}:{PORT}"\nbind = "tcp://0.0.0.0:{PORT}"\n\n'
            f'[[peer]]\nid = "p2"\naddress = "tcp://{net.address("p2")}:{PORT}"\n\n'
            f'[[peer]]\nid = "p3"\naddress = "tcp://{NAME}:{PORT}"\n')
        before = toml.read_text()
        procs = {p: _start(net, p, toml, env, started) for p in ("p1", "p2", "p3")}
        _wait(procs, lambda v: all(_ids(view) == {"p1", "p2", "p3"} for view in v.values()), "the ring formed")

        first = _incarnation(procs["p1"][1].view, "p3")
        # (a) p1 listens on every interface of its machine, and is known by its address alone.
        assert f"0.0.0.0:{PORT}" in _ns(net, "p1", "ss", "-ltnH")
        # p3's bind is every interface on its name's port, both families.
        assert f"*:{PORT}" in _ns(net, "p3", "ss", "-ltnH")
        status = _ns(net, "w", sys.executable, "-m", "ring", "status", "--ring", str(toml), "--timeout", "5",
                     env=env)
        assert f"tcp://{net.address('p1')}:{PORT}" in status and "0.0.0.0" not in status, status
        assert f"tcp://{NAME}:{PORT}" in status, status

        # (b) p3 is back at another address, under the same name; cluster.toml untouched.
        old = net.address("p3")
        net.kill(procs["p3"][0])
        new = net.readdress("p3", 150)
        net.write_hosts({NAME: new}, others)
        procs["p3"] = _start(net, "p3", toml, env, started)
        # Its new life has a later incarnation (its start's wall time, ms).
        _wait(procs, lambda v: all(_ids(view) == {"p1", "p2", "p3"} and _incarnation(view, "p3") > first
                                   for view in v.values()),
              "p1, p2 and p3's second life held each other alive")
        # Their own sockets reached the new address: the name was resolved again.
        for p in ("p1", "p2"):
            deadline = time.monotonic() + PHASE
            # ss shows a connection of a socket with ZMQ_IPV6 (a name's) as [::ffff:a.b.c.d].
            while not _peer_at(new, conns := _ns(net, p, "ss", "-tnH", "state", "established")):
                assert time.monotonic() < deadline, f"{p} never connected to {new}:{PORT}: {conns}"
                time.sleep(0.2)
            assert not _peer_at(old, conns), conns
        status = _ns(net, "w", sys.executable, "-m", "ring", "status", "--ring", str(toml), "--timeout", "5",
                     env=env)
        rows = [line for line in status.splitlines() if line[:2] in ("p1", "p2", "p3")]
        assert len(rows) == 3 and all(" alive " in r for r in rows), status
        assert toml.read_text() == before
