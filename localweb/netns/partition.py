"""A ring of real peers in network namespaces, crawled through a schedule of partitions.

:func:`run` starts, inside a :class:`~localweb.netns.ring.NetRing`, the webfarm
in the web's namespace (``python -m localweb.webfarm --private``, its
request log naming each client) and ``python -m peer --ring cluster.toml``
in each peer's, carries out a schedule of events at their times, waits for
every peer to **exit by itself** up to ``time_limit``, then SIGTERMs (and
``grace`` seconds later SIGKILLs) those left, by PID, and judges the crawl
from the server's log alone (:func:`localweb.judges.owners.judge`).

Events are tuples, ``t`` in seconds from the crawl's first request (the web
server's log): by then the ring has formed and holds its leases, however long
a loaded machine took to start the peers (:data:`FIRST_REQUEST_WAIT` at most;
without a request by then, from the peers' start):

- ``(t, "isolate", "p1")``: p1 cut from every other peer, not from the web;
- ``(t, "cut", "p1", "p2")`` / ``(t, "heal", "p1", "p2")``: both directions;
- ``(t, "deaf", "p1", "p2")``: p2 no longer hears p1's ring messages while
  p1 still hears p2's (:meth:`NetRing.cut_one_way` with p2's ring port: the
  closest honest form of an asymmetric cut for TCP; its docstring says why);
- ``(t, "unheard", "p1")``: no other peer hears p1's ring messages, while p1
  hears every one of theirs (p1 "deaf" to each);
- ``(t, "heal_all")``: every cut removed;
- ``(t, "kill", "p2")``: SIGKILL (a crash); ``(t, "restart", "p2")``: the same
  command again, on the same data_dir;
- ``(t, "stop", "p2")`` / ``(t, "cont", "p2")``: SIGSTOP / SIGCONT: the
  process stands still, as in a long GC pause, a paused VM or a starved
  machine, and then goes on with whatever waited in its sockets.

:func:`flapping` expands "up/down every ``every`` s for ``length`` s" into
such events. :func:`cluster_toml` writes the cluster.toml, each
``[ring]`` override only if this tree's ``peer.core.config.cluster`` declares it
(:func:`localweb.processes.peerrun.supported`), so one harness runs before and after
a key is added.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localweb.netns.ring import WEB, NetRing
from localweb.judges.owners import Exit, Hit, Verdict, judge
from localweb.processes.peerrun import supported, toml_value
from localweb.sitegraph.server import read_log
from localweb.sitegraph.web import SiteGraph

__all__ = ["Event", "FIRST_REQUEST_WAIT", "Outcome", "Web", "check_schedule", "cluster_toml", "flapping",
           "pauses", "run"]

#: Seconds the schedule waits for the crawl's first request before it counts
#: from the peers' start instead.
FIRST_REQUEST_WAIT = 30.0

Event = tuple[Any, ...]
#: The port every peer's ROUTER listens on, in its own namespace.
RING_PORT = 7000
WEB_PORT = 8080
_ACTIONS = {"isolate": 1, "cut": 2, "heal": 2, "deaf": 2, "unheard": 1, "heal_all": 0, "kill": 1, "restart": 1,
            "stop": 1, "cont": 1}


@dataclass(frozen=True, slots=True)
class Web:
    """The site graph to crawl: ``hosts`` x ``pages`` (``links`` a page), no shop."""

    hosts: int = 12
    pages: int = 20
    links: int = 10
    seed: int = 1

    def graph(self) -> SiteGraph:
        return SiteGraph(seed=self.seed, hosts=self.hosts, pages_per_host=self.pages,
                         links_per_page=self.links, shop=False)

    def argv(self) -> list[str]:
        return ["--hosts", str(self.hosts), "--pages", str(self.pages), "--links", str(self.links),
                "--seed", str(self.seed), "--no-shop"]


@dataclass
class Outcome:
    """What a run did: the verdict, each peer's exit, the events done and where the files are."""

    verdict: Verdict
    exits: list[Exit]
    done: list[tuple[float, Event]]
    workdir: Path
    seconds: float
    peers: Mapping[str, str] = field(default_factory=dict)  # address -> peer

    def stderr(self, peer: str, last: int = 3000) -> str:
        path = self.workdir / f"{peer}.err"
        return path.read_text(errors="replace")[-last:] if path.exists() else ""

    def report(self) -> str:
        """The verdict's figures, the events done and each peer's last stderr lines."""
        lines = self.verdict.lines()
        lines += [f"event at {t:6.1f} s: {' '.join(map(str, ev[1:]))}" for t, ev in self.done]
        lines.append(f"wall time {self.seconds:.1f} s; files in {self.workdir}")
        return "\n".join(lines)


def flapping(start: float, length: float, every: float, event: Event) -> list[Event]:
    """``event`` (without its time, e.g. ``("isolate", "p1")``) on and off every ``every`` s.

    The link is down at ``start``, up ``every`` s later, and so on until
    ``start + length``, where it is healed for good.
    """
    out: list[Event] = []
    t, down = start, True
    while t < start + length - 1e-9:
        out.append((t, *event) if down else (t, "heal_all"))
        t += every
        down = not down
    out.append((start + length, "heal_all"))
    return out


def cluster_toml(path: Path, net: NetRing, *, ring: Mapping[str, Any] | None = None,
                 rate: float = 240.0, concurrency: int = 16,
                 sections: Mapping[str, Mapping[str, Any]] | None = None) -> list[str]:
    """Write ``path`` for the peers of ``net`` and its web; the ring keys not written.

    ``ring`` overrides ``[ring]`` keys (a key this tree does not declare is
    left out and returned); ``rate`` is the politeness setpoint, pages a
    minute a host (0: off); ``sections`` override whole tables' keys.
    """
    skipped = [k for k in (ring or {}) if not supported(f"ring.{k}")]
    tables: dict[str, dict[str, Any]] = {
        "ring": {"name": "partition", **{k: v for k, v in (ring or {}).items() if k not in skipped}},
        "crawl": {"seeds": [f"http://s001.web.test:{WEB_PORT}/"], "allow_hosts": ["*.web.test"],
                  # The web is on a private address: past the SSRF guard.
                  "allow_private": True, "concurrency": concurrency, "timeout": 5.0},
        "politeness": {"rate": rate, "host_concurrency": 1},
        "dns": {"resolve": {"*.web.test": net.address(WEB)}},
        "bloom": {"capacity": 200_000},
    }
    for name, table in (sections or {}).items():
        tables.setdefault(name, {}).update(table)
    text = "".join(f'[[peer]]\nid = "{p}"\naddress = "tcp://{net.address(p)}:{RING_PORT}"\n'
                   f'data_dir = "{path.parent / p}"\n\n' for p in net.names if p != WEB)
    for name, table in tables.items():
        text += f"[{name}]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in table.items()) + "\n"
    path.write_text(text)
    return skipped


def check_schedule(schedule: Sequence[Event], names: Sequence[str]) -> list[Event]:
    """``schedule`` sorted by time; ValueError naming the first bad event."""
    for ev in schedule:
        if len(ev) < 2 or ev[1] not in _ACTIONS or len(ev) != 2 + _ACTIONS[ev[1]]:
            raise ValueError(f"bad event {ev!r}: expected (t, action, peers...) with action one of "
                             f"{', '.join(_ACTIONS)}")
        for name in ev[2:]:
            if name == WEB or name not in names:
                raise ValueError(f"bad event {ev!r}: no peer {name!r}")
    return sorted(schedule, key=lambda ev: float(ev[0]))


class _Peers:
    """The peer processes of one run, restartable, with their exits."""

    def __init__(self, net: NetRing, toml: Path, progress: float) -> None:
        self.net, self.toml, self.progress = net, toml, progress
        self.procs: dict[str, subprocess.Popen[Any]] = {}
        self.exits: dict[str, Exit] = {}
        self.stopping = False

    def start(self, name: str) -> None:
        d = self.toml.parent
        with (d / f"{name}.out").open("ab") as out, (d / f"{name}.err").open("ab") as err:
            self.procs[name] = self.net.popen(
                name, [sys.executable, "-m", "peer", "--ring", str(self.toml), "--id", name,
                       "--progress", str(self.progress)], stdout=out, stderr=err, env=dict(os.environ))
        self.exits.pop(name, None)

    def poll(self) -> None:
        for name, proc in self.procs.items():
            if name not in self.exits and proc.poll() is not None:
                self.exits[name] = Exit(name, proc.returncode, time.time(), not self.stopping)

    def live(self) -> list[str]:
        self.poll()
        return [n for n in self.procs if n not in self.exits]

    def kill(self, name: str) -> None:
        proc = self.procs[name]
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        self.exits[name] = Exit(name, proc.returncode, time.time(), False)


def _do(net: NetRing, peers: _Peers, ev: Event) -> None:
    action, names = ev[1], ev[2:]
    if action == "isolate":
        net.isolate(names[0])
    elif action == "cut":
        net.cut(*names)
    elif action == "heal":
        net.heal(*names)
    elif action == "deaf":
        net.cut_one_way(names[0], names[1], port=RING_PORT)
    elif action == "unheard":
        for other in net.names[1:]:
            if other != names[0]:
                net.cut_one_way(names[0], other, port=RING_PORT)
    elif action == "heal_all":
        net.heal_all()
    elif action == "kill":
        peers.kill(names[0])
    elif action == "restart":
        peers.start(names[0])
    elif action in ("stop", "cont"):
        proc = peers.procs[names[0]]
        if proc.poll() is None:
            proc.send_signal(signal.SIGSTOP if action == "stop" else signal.SIGCONT)


def pauses(start: float, length: float, every: float, peers: Sequence[str], longest: float,
           seed: int = 0) -> list[Event]:
    """Every ``every`` s for ``length`` s from ``start``, one random peer stopped for a
    random 1..``longest`` s (SIGSTOP, then SIGCONT); each peer stands still once at a time."""
    rng = random.Random(seed)
    out: list[Event] = []
    busy: dict[str, float] = {}
    t = start
    while t < start + length:
        free = [p for p in peers if busy.get(p, -1.0) < t]
        if free:
            p = rng.choice(free)
            d = rng.uniform(1.0, longest)
            out += [(t, "stop", p), (t + d, "cont", p)]
            busy[p] = t + d
        t += every
    return sorted(out, key=lambda ev: float(ev[0]))


def run(workdir: Path, n: int, *, web: Web = Web(), schedule: Sequence[Event] = (),
        ring: Mapping[str, Any] | None = None, rate: float = 240.0, concurrency: int = 16,
        sections: Mapping[str, Mapping[str, Any]] | None = None, time_limit: float = 120.0,
        idle_limit: float = 0.0, grace: float = 10.0, progress: float = 5.0,
        poll: float = 0.05) -> Outcome:
    """Crawl ``web`` with ``n`` peers through ``schedule`` (module docstring); the outcome.

    ``time_limit`` counts from the peers' start: a peer still running then
    is stopped (SIGTERM, SIGKILL ``grace`` s later) and its exit is marked
    not by itself. With ``idle_limit``, peers are stopped so too once the
    schedule is done and neither a request nor an event came for that long: a peer
    that has not ended by then has already failed "ends by itself within
    ``idle_limit`` of the last page", and waiting longer only costs time.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    log_path = workdir / "requests.jsonl"
    graph = web.graph()
    expected = graph.expected_urls(WEB_PORT)
    began = time.monotonic()
    with NetRing(n) as net:
        events = check_schedule(schedule, net.names)
        toml = workdir / "cluster.toml"
        cluster_toml(toml, net, ring=ring, rate=rate, concurrency=concurrency, sections=sections)
        with (workdir / "web.err").open("ab") as web_err:
            farm = net.popen(WEB, [sys.executable, "-m", "localweb.webfarm", "--host", net.address(WEB),
                                   "--private", "--port", str(WEB_PORT), *web.argv(), "--log", str(log_path)],
                             stdout=subprocess.PIPE, stderr=web_err, env=dict(os.environ))
        assert farm.stdout is not None
        first = farm.stdout.readline().decode(errors="replace")
        if not first.startswith("listening on"):
            raise RuntimeError(f"the webfarm did not start: {first!r}; see {workdir / 'web.err'}")
        peers = _Peers(net, toml, progress)
        t0 = time.monotonic()
        for p in net.names[1:]:
            peers.start(p)
        # Events count from the first request: a split "2.5 s into the crawl"
        # must not come before a slow start has formed the ring.
        events_t0 = t0
        while time.monotonic() - t0 < FIRST_REQUEST_WAIT and peers.live():
            if log_path.exists() and log_path.stat().st_size > 0:
                events_t0 = time.monotonic()
                break
            time.sleep(poll)
        done: list[tuple[float, Event]] = []
        pending = list(events)
        size, grew = -1, 0.0
        while True:
            now = time.monotonic() - t0
            if idle_limit:
                new = log_path.stat().st_size if log_path.exists() else 0
                if new != size:
                    size, grew = new, now
                elif not pending and now - grew > idle_limit:
                    break
            while pending and float(pending[0][0]) <= time.monotonic() - events_t0:
                ev = pending.pop(0)
                _do(net, peers, ev)
                done.append((time.monotonic() - events_t0, ev))
                grew = now  # the idle wait counts from the last event too (a heal)
            if not peers.live() and not pending:
                break
            if now > time_limit:
                break
            time.sleep(poll)
        peers.stopping = True
        for name in peers.live():
            peers.procs[name].send_signal(signal.SIGCONT)  # a stopped one must hear the SIGTERM
            net.kill(peers.procs[name], grace)
        peers.poll()
        net.kill(farm, grace)
        farm.stdout.close()
        addresses = {net.address(p): p for p in net.names}
    hits = [Hit(e.t, e.host, e.target, e.method, e.client) for e in read_log(str(log_path))]
    exits = [peers.exits[p] for p in sorted(peers.exits, key=lambda s: int(s[1:]))]
    verdict = judge(hits, addresses, expected=expected, port=WEB_PORT, exits=exits)
    return Outcome(verdict, exits, done, workdir, time.monotonic() - began, addresses)
