"""One owner per host through network partitions: figures from the web's request log (root only).

Each scenario runs the webfarm and real ``python -m peer`` processes, each
in its own network namespace (localweb/netns/ring.py), at the default ring
timings, carries out the scenario's cuts, waits for every peer to exit by
itself (stopping those left at the time limit, or once the web has been
idle for --idle seconds after the last event) and prints the judge's
figures (localweb/judges/owners.py), read from the server's request log alone:

split   3 peers, the 49-host web (~10,100 pages) at 240 pages/min a host;
        p1 isolated from the others (not from the web) 12 s in, for 25 s
short   the same, isolated for 4 s (less than dead_after)
twotwo  4 peers split 2-2 ({p1,p2} | {p3,p4}) 12 s in, for 25 s
flap    3 peers; p1 isolated and healed every 3 s for 30 s, from 12 s in
asym    3 peers; 12 s in, for 25 s, p2 and p3 no longer hear p1's ring
        messages while p1 hears theirs (p1's packets to their ring port
        are dropped)
restart split, and p1 killed (SIGKILL) 8 s into it and started again 4 s
        later, on its data_dir, still cut off
crowd   16 peers, 64 fetches in flight each, politeness off, no cut; the
        same web, time limit 400 s (--burn N adds N CPU-bound processes)
starve  crowd, and from 5 s to 65 s every 2 s one peer stands still
        (SIGSTOP) for 1-12 s: a starved process, a GC pause, a paused VM

Figures: host-seconds in which 2+ peers requested one host (and the
longest run), pages requested twice (robots.txt apart; by two peers),
coverage, hosts requested by 2+ peers over the run, each peer's exit
status and seconds from the last page to its exit.

    sudo .venv/bin/python scripts/bench_partition.py split short
    sudo .venv/bin/python scripts/bench_partition.py crowd --clean
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from localweb.netns.ring import available
from localweb.netns.partition import Event, Web, flapping, pauses, run

BIG_WEB = Web(hosts=49, pages=135, links=100)  # 10,122 expected pages
AT, FOR = 12.0, 25.0


def _split(a: list[str], b: list[str]) -> list[Event]:
    return [*((AT, "cut", x, y) for x in a for y in b), (AT + FOR, "heal_all")]


SCENARIOS: dict[str, dict[str, Any]] = {
    "split": {"n": 3, "schedule": [(AT, "isolate", "p1"), (AT + FOR, "heal_all")]},
    "short": {"n": 3, "schedule": [(AT, "isolate", "p1"), (AT + 4.0, "heal_all")]},
    "twotwo": {"n": 4, "schedule": _split(["p1", "p2"], ["p3", "p4"])},
    "flap": {"n": 3, "schedule": flapping(AT, 30.0, 3.0, ("isolate", "p1"))},
    "asym": {"n": 3, "schedule": [(AT, "unheard", "p1"), (AT + FOR, "heal_all")]},
    "restart": {"n": 3, "schedule": [(AT, "isolate", "p1"), (AT + 8.0, "kill", "p1"),
                                     (AT + 12.0, "restart", "p1"), (AT + FOR, "heal_all")]},
    "crowd": {"n": 16, "schedule": [], "rate": 0.0, "concurrency": 64, "time_limit": 400.0},
    "starve": {"n": 16, "rate": 0.0, "concurrency": 64, "time_limit": 400.0,
               "schedule": pauses(5.0, 60.0, 2.0, [f"p{i}" for i in range(1, 17)], 12.0, seed=1)},
}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench_partition.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenarios", nargs="*", metavar="SCENARIO", default=["split", "short"],
                   help=f"one or more of {', '.join(SCENARIOS)} (default: split short)")
    p.add_argument("--time-limit", type=float, default=240.0,
                   help="seconds from the peers' start before those left are stopped "
                        "(default 240; crowd: 400)")
    p.add_argument("--idle", type=float, default=60.0,
                   help="stop the peers left once the web has had no request for this long "
                        "after the last event (default 60; 0: wait for the time limit)")
    p.add_argument("--ring", action="append", default=[], metavar="KEY=VALUE",
                   help="a [ring] key to override, e.g. --ring dead_after=4 (repeatable; "
                        "a key this tree does not declare is left out)")
    p.add_argument("--burn", type=int, default=0, metavar="N",
                   help="keep N processes spinning on the CPU for each run, so the peers share a "
                        "busy machine (stopped by PID when the run ends; default 0)")
    p.add_argument("--clean", action="store_true",
                   help="delete each run's directory (request log, peers' logs, cluster.toml) after it")
    return p


def _ring(specs: list[str]) -> dict[str, float]:
    out = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        try:
            out[key.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise ValueError(f"--ring {spec!r}: expected KEY=NUMBER")
    return out


def _burners(n: int) -> list[subprocess.Popen[bytes]]:
    """``n`` processes that spin on the CPU until killed (a busy box)."""
    code = "import time\nend = time.monotonic() + 1800\nwhile time.monotonic() < end: pass"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]


def _suspicions(workdir: Path) -> dict[str, int]:
    """Per peer: the suspect and dead events it logged ("member pX: suspect|dead")."""
    out = {}
    for err in sorted(workdir.glob("p*.err")):
        text = err.read_text(errors="replace")
        out[err.stem] = len(re.findall(r"member \S+: (?:suspect|dead) ", text))
    return out


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    bad = [s for s in args.scenarios if s not in SCENARIOS]
    if bad:
        print(f"bench_partition: no scenario {bad[0]!r} (one of {', '.join(SCENARIOS)})", file=sys.stderr)
        return 2
    try:
        ring = _ring(args.ring)
    except ValueError as exc:
        print(f"bench_partition: {exc}", file=sys.stderr)
        return 2
    reason = available()
    if reason is not None:
        print(f"bench_partition: {reason}", file=sys.stderr)
        return 2
    print("$ " + shlex.join([Path(sys.executable).name, *sys.argv]), flush=True)
    for name in args.scenarios:
        sc = dict(SCENARIOS[name])
        workdir = Path(tempfile.mkdtemp(prefix=f"partition-{name}-"))
        burners = _burners(args.burn)
        try:
            out = run(workdir, sc["n"], web=BIG_WEB, schedule=sc["schedule"], ring=ring,
                      rate=sc.get("rate", 240.0), concurrency=sc.get("concurrency", 64),
                      time_limit=sc.get("time_limit", args.time_limit), idle_limit=args.idle)
            events = _suspicions(workdir)
        finally:
            for b in burners:
                b.kill()
                b.wait()
            if args.clean:
                shutil.rmtree(workdir, ignore_errors=True)
        print(f"\n== {name}: {sc['n']} peers, {BIG_WEB.hosts} hosts, "
              f"{sc.get('rate', 240.0):g} pages/min a host, {len(sc['schedule'])} events"
              + (f", {args.burn} CPU burners" if args.burn else ""))
        print(out.report(), flush=True)
        worst = max(events, key=lambda p: events[p]) if events else None
        print(f"suspect/dead events logged: {sum(events.values())} in all"
              + (f", most by {worst}: {events[worst]}" if worst else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
