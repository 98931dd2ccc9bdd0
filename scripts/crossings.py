#!/usr/bin/env python3
"""How far one URL, and one host that changes owner, travel through the tree: module crossings, traced.

    PYTHONPATH=.:tests/support .venv/bin/python scripts/crossings.py [--peers 2] [--json]

docs/architecture.md walks one URL and one ring change through the rooms and
counts the module crossings of each. This script measures them instead of
reading them off the code: it runs a ring in this process (the real engine,
core and zmq sockets on loopback, ``tests/support/ringharness.py``'s
``Ring.start_in_process``) over a small site graph served by webfarm, with a
profile hook on every Python call, and a third peer joins part-way.

A **crossing** is a call from a function of one module of ``peer/`` or
``ring/`` into a function of another, whose arguments (``self`` apart) carry
what the walk follows:

- **one URL**: the URL as a string, or inside a frozen value that carries it
  (a job, an effect, a parse, a batch, a message; not a fetched body's
  bytes) or an encoded frame to or from the ring's sockets; from the first
  call that carries it to the one that writes its row, every page that
  links it included. Counted for the URLs that went from one peer to
  another (their walk passes an ``Outbox``), the median printed.
- **one ring change moving a host**: the host's key, in the calls made from
  the moment the joiner starts until the crawl ends, outside the jobs and
  the scheduler (there the crawl goes on, whoever owns the host). Counted
  for the hosts the joiner took, the median printed.

A crossing into a module of another folder also crosses rooms; a call from a
lower layer back up (``ring.io`` into ``peer.engine``, an effects table into
its handlers, a part into the function it was handed) is still one crossing.
Constructors and protocol methods of values are not steps. The run is a real
crawl, so two runs differ by the odd rediscovery, and a host's walk grows
with the URLs it had queued (each passed on): compare medians, the distinct
crossings (each step once), and two trees side by side in one sitting.
Another checkout is measured by running this script from that checkout's
root with it and its harness first on the path:
``PYTHONPATH=.:tests`` (``tests/ringharness.py``, before the tests had folders).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import trio

from localweb import SiteGraph, serve_webfarm
from ring.hashring import HashRing

try:
    from ringharness import Ring, free_ports
except ImportError:  # pragma: no cover - main() says how, after --help has had its say
    Ring = free_ports = None  # type: ignore[assignment,misc]

#: The modules a crossing joins: this checkout's packages (whatever their inner layout).
OURS = ("peer.", "ring.")
#: Functions whose calls are the crawl going on: a job's task and the scheduler.
CRAWL_GOING_ON = frozenset({"_work", "_handle", "_schedule", "_fetch_page", "_fetch_robots"})
#: The entry points of a ring change's work on the hosts that move, by name (the same in
#: every layout since the hand-off was written): the ring moved, the hand-off's reads,
#: its end, the request starts carried over, the spilled queues passed on, the holds.
MOVE_ENTRIES = frozenset({"set_ring", "hold_from", "hosts_read", "fetched_read", "begin_handoff",
                          "handoff_done", "seed_starts", "pass_on_moving", "move_spilled"})
#: What a move hands from step to step besides the host's key (by type name, as layouts differ).
MOVE_VALUES = frozenset({"RingChanged", "HandOff", "ReadHosts", "ReadFetched", "Released", "HandoffDone",
                         "HostStarts", "SeedStarts", "HashRing"})


def cluster_text(tmp: Path, web_port: int, n: int) -> str:
    """The ring's cluster.toml: timers loose enough for a traced (slower) process, a polite crawl."""
    ports = free_ports(n)
    peers = "".join(f'[[peer]]\nid = "p{i + 1}"\naddress = "tcp://127.0.0.1:{port}"\n'
                    f'data_dir = "{tmp / f"p{i + 1}"}"\n\n' for i, port in enumerate(ports))
    return f"""
[ring]
name = "walk"
gossip_interval = 0.5
suspect_after = 5.0
dead_after = 15.0
lease = 1.0
takeover_after = 2.0

{peers}
[crawl]
seeds = ["http://s001.web.test:{web_port}/"]
allow_hosts = ["*.web.test"]
concurrency = 8
allow_private = true
timeout = 10.0

[politeness]
rate = 120.0
window = 2.0
initial_delay = 0.1
host_concurrency = 1

[dns]
resolve = {{ "*.web.test" = "127.0.0.1" }}
"""


def _carries(value: Any, text: str, raw: bytes, depth: int = 0) -> bool:
    """Whether ``value`` holds ``text``: itself, in a container or a frozen value, or (bytes) encoded."""
    if isinstance(value, str):
        return value == text
    if isinstance(value, (bytes, bytearray, memoryview)):
        return raw in bytes(value)
    if depth > 4:
        return False
    if isinstance(value, (tuple, list, set, frozenset)):
        return any(_carries(v, text, raw, depth + 1) for v in value)
    if isinstance(value, dict):
        return any(_carries(k, text, raw, depth + 1) or _carries(v, text, raw, depth + 1)
                   for k, v in value.items())
    fields = getattr(type(value), "__dataclass_fields__", None) or getattr(type(value), "_fields", None)
    if fields:  # a frozen value (dataclass or NamedTuple): what it carries is its fields, but
        # a body's bytes: a page that links the URL is not the URL (its parse, with the link, is)
        return any(_carries(v, text, raw, depth + 1) for f in fields
                   if not isinstance(v := getattr(value, f, None), (bytes, bytearray, memoryview)))
    return False


class Tracer:
    """Records every call between two modules of ours: when, caller, callee, function, arguments, in a job."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, str, str, str, tuple[Any, ...], bool, bool]] = []
        self.on = False

    def hook(self, frame: Any, event: str, arg: Any) -> None:
        if event != "call" or not self.on:
            return
        callee = frame.f_globals.get("__name__", "")
        if not callee.startswith(OURS) or frame.f_code.co_name.startswith("__"):
            return  # a constructor or a protocol method (len, bool, in) of a value: no step
        back = frame.f_back
        caller = back.f_globals.get("__name__", "") if back is not None else ""
        if caller == callee or not caller.startswith(OURS):
            return
        code = frame.f_code
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        loc = frame.f_locals
        args = tuple(loc.get(n) for n in names if n not in ("self", "cls"))
        going_on, moving = False, code.co_name in MOVE_ENTRIES
        f = back
        while f is not None:
            name = f.f_code.co_name
            if name in CRAWL_GOING_ON:
                going_on = True
            elif name in MOVE_ENTRIES:
                moving = True
            f = f.f_back
        self.calls.append((time.monotonic(), caller, callee, code.co_name, args, going_on, moving))

    def __enter__(self) -> Tracer:
        sys.setprofile(self.hook)
        threading.setprofile(self.hook)
        self.on = True
        return self

    def __exit__(self, *exc: object) -> None:
        self.on = False
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


def _pure(module: str) -> bool:
    return module.startswith(("peer.core.", "ring.")) and not module.startswith(("ring.io", "ring.tools"))


def room(module: str) -> str:
    return module.rpartition(".")[0]


Call = tuple[float, str, str, str, tuple[Any, ...], bool, bool]


def walk_of(calls: Iterable[Call], text: str) -> list[tuple[str, str, str]]:
    """The crossings whose arguments carry ``text`` (one URL's walk)."""
    raw = text.encode()
    return [(caller, callee, fn) for _, caller, callee, fn, args, _, _ in calls
            if any(_carries(a, text, raw) for a in args)]


def _moves(value: Any, host: str, depth: int = 0) -> bool:
    """Whether ``value`` carries ``host``'s key or what a move hands on (``MOVE_VALUES``)."""
    if type(value).__name__ in MOVE_VALUES:
        return True
    if isinstance(value, str):
        return value == host
    if depth > 3:
        return False
    if isinstance(value, (tuple, list, set, frozenset)):
        return any(_moves(v, host, depth + 1) for v in value)
    if isinstance(value, dict):
        return any(_moves(k, host, depth + 1) or _moves(v, host, depth + 1) for k, v in value.items())
    fields = getattr(type(value), "__dataclass_fields__", None) or getattr(type(value), "_fields", None)
    return bool(fields) and any(_moves(getattr(value, f, None), host, depth + 1) for f in fields)


def move_walk(calls: Iterable[Call], host: str, since: float) -> list[tuple[str, str, str]]:
    """The crossings of a ring change's work (``MOVE_ENTRIES``) that carry ``host`` or the change itself."""
    return [(caller, callee, fn) for t, caller, callee, fn, args, going_on, moving in calls
            if t >= since and moving and not going_on and any(_moves(a, host) for a in args)]


def url_walk(steps: list[tuple[str, str, str]]) -> list[tuple[str, str, str]] | None:
    """A URL's steps up to its row (None: no row, or it never went between peers)."""
    end = next((i for i, (_, _, fn) in enumerate(steps) if fn == "add_page"), None)
    if end is None:
        return None
    steps = steps[:end + 1]
    if not any(callee.endswith("forwarder") for _, callee, _ in steps):
        return None
    return steps


def summary(walks: dict[str, list[tuple[str, str, str]]]) -> dict[str, Any]:
    if not walks:
        return {"walks": 0}
    counts = {k: len(v) for k, v in walks.items()}
    median = statistics.median(counts.values())
    key = min(counts, key=lambda k: (abs(counts[k] - median), k))
    steps = walks[key]
    return {"walks": len(walks), "median_crossings": median,
            "median_room_crossings": statistics.median(
                sum(room(a) != room(b) for a, b, _ in w) for w in walks.values()),
            "distinct_crossings": statistics.median(len(set(w)) for w in walks.values()),
            "modules_entered": statistics.median(len({b for _, b, _ in w}) for w in walks.values()),
            # The pure modules the driver calls into on the way (its doors into the core).
            "driver_doors": sorted({b for w in walks.values() for a, b, _ in w
                                    if a.startswith("peer.engine") and _pure(b)}),
            "example": key, "steps": [f"{a} -> {b}.{fn}" for a, b, fn in steps]}


async def run_ring(tmp: Path, peers: int, tracer: Tracer) -> tuple[dict[str, list[str]], float]:
    graph = SiteGraph(hosts=12, pages_per_host=6, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        async with Ring(tmp, cluster_text(tmp, farm.port, peers)) as ring:
            with tracer, trio.fail_after(240):
                for p in (f"p{i + 1}" for i in range(peers)):
                    await ring.start_in_process(nursery, p)
                await trio.sleep(4.0)
                joined = time.monotonic()
                port = free_ports(1)[0]
                joiner = f"p{peers + 1}"
                await ring.start_in_process(nursery, joiner, address=f"tcp://127.0.0.1:{port}",
                                            data_dir=tmp / joiner)
                await ring.wait()
        nursery.cancel_scope.cancel()
    by_host: dict[str, list[str]] = defaultdict(list)
    for url in sorted(graph.expected_urls(farm.port)):
        by_host[url.split("/")[2]].append(url)
    return by_host, joined


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="crossings.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--peers", type=int, default=2, choices=range(2, 5), metavar="N",
                   help="peers before the join (2-4; default 2)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = p.parse_args(argv)
    if Ring is None:
        p.exit(2, "crossings.py: error: the ring harness is not importable: run with PYTHONPATH=.:tests/support\n")
    root = Path.cwd()
    tracer = Tracer()
    with tempfile.TemporaryDirectory(prefix="crossings-") as d:
        by_host, joined = trio.run(run_ring, Path(d), args.peers, tracer)
    calls = tracer.calls
    # One URL: every expected URL's walk; those that went between peers count.
    url_walks = {}
    for urls in by_host.values():
        for url in urls:
            w = url_walk(walk_of(calls, url))
            if w is not None:
                url_walks[url] = w
    # One moved host (one the joiner owns now): what the ring change's work hands on of it.
    before = HashRing({f"p{i + 1}": 1.0 for i in range(args.peers)})
    after = before.with_peer(f"p{args.peers + 1}")
    host_walks = {host: move_walk(calls, host, joined) for host in by_host
                  if before.owner(host) != after.owner(host)}
    out = {"tree": str(root), "calls_traced": len(calls), "one_url": summary(url_walks),
           "one_moved_host": summary(host_walks)}
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"{out['tree']}: {len(calls):,} calls between modules traced")
    for name in ("one_url", "one_moved_host"):
        s = out[name]
        print(f"\n{name.replace('_', ' ')}: {s['walks']} walks")
        if s["walks"]:
            print(f"  crossings (median) {s['median_crossings']}, of rooms {s['median_room_crossings']}; "
                  f"distinct {s['distinct_crossings']}, modules entered {s['modules_entered']}; "
                  f"the median one, {s['example']}:")
            print(f"  the pure modules the driver calls into: {', '.join(s['driver_doors']) or 'none'}")
            for step, n in Counter(s["steps"]).most_common():
                print(f"    {n:3d} x {step}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
