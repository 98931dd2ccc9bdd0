"""Crawl state at scale: 2 real peers on an endless web until their frontiers pass 5 M URLs.

The web (``--serve``, a process of its own): localweb/hostile/endless.py,
``--hosts`` hosts; every page links to 200 URLs never seen before, so the
supply never ends.

The crawl: ``python -m peer`` x 2 on loopback, politeness off (rate 0,
4 fetches a host), the cluster-wide ``max_pages`` set so that the
frontiers pass ``--target`` queued URLs before the peers stop by
themselves. Printed: peak RSS per peer (VmHWM), RAM per queued URL, the
longest event-loop stall (the largest gap between two progress lines,
asked for every second, less that second), ``ring status`` latency
sampled throughout (the command an operator runs), whether either peer
was ever suspect or dead (status, and the peers' logs), the exit codes.
Bounded by ``--timeout``: past it the peers are sent SIGINT, then killed.

    scripts/bench_scale.py                       # 5 M queued URLs, ~10 min on 2 cores
    scripts/bench_scale.py --target 1000000 --max-pages 8000
    scripts/bench_scale.py --max-pages 30000 --kill-at 2000000   # kill -9 p1 at 2 M queued, restart it
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from localweb.hostile.endless import LINKS
from localweb.processes.peerrun import free_ports
from ring.tools.logs import parse_stamp


# ------------------------------------------------------------------ the endless web


def serve(hosts: int, port_file: Path) -> None:
    import trio

    from localweb.hostile.endless import serve_endless

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            web = await nursery.start(serve_endless, hosts)
            port_file.write_text(str(web.port))

    trio.run(main)


# ------------------------------------------------------------------ the crawl


def cluster_toml(tmp: Path, web_port: int, max_pages: int, head: int) -> str:
    p1, p2 = free_ports(2)
    return f"""
[ring]
name = "scale"

[[peer]]
id = "p1"
address = "tcp://127.0.0.1:{p1}"
data_dir = "{tmp / 'p1'}"

[[peer]]
id = "p2"
address = "tcp://127.0.0.1:{p2}"
data_dir = "{tmp / 'p2'}"

[crawl]
seeds = ["http://h000.web.test:{web_port}/p/0"]
allow_hosts = ["*.web.test"]
concurrency = 64
allow_private = true
obey_robots = false
max_pages = {max_pages}
max_urls_per_host = 0
timeout = 10.0

[politeness]
rate = 0.0
host_concurrency = 4

[dns]
resolve = {{ "*.web.test" = "127.0.0.1" }}

[frontier]
head_per_host = {head}
"""


class Probe:
    """Asks the ring for its status every ``every`` seconds from a thread, as ``ring status`` does
    (ring.tools.client.cluster_status), without an interpreter's start-up in the figure."""

    def __init__(self, toml: Path, every: float) -> None:
        import threading

        from peer.state.configfile import load_config
        from ring.tools.client import Contact

        cfg = load_config(toml)
        self.ring = cfg.ring.name
        self.seeds = [Contact(p.id, p.address) for p in cfg.peers]
        self.every = every
        self.latencies: list[float] = []
        self.unanswered = 0
        self.states: dict[str, set[str]] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        import trio

        from ring.tools.client import cluster_status

        async def main() -> None:
            while not self.stop.is_set():
                t = time.monotonic()
                rows = await cluster_status(self.ring, self.seeds, timeout=5.0)
                if rows is None:
                    self.unanswered += 1
                else:
                    self.latencies.append(time.monotonic() - t)
                    for r in rows:
                        self.states.setdefault(r.id, set()).add(str(r.state.value))
                await trio.sleep(self.every)

        trio.run(main)


def vm(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def progress_gaps(err: str) -> tuple[float, str]:
    """The largest gap between two progress lines (seconds) and the line after it."""
    times = []
    for line in err.splitlines():
        if " peer.engine: " in line and "pages " in line and "frontier " in line:
            try:
                times.append((parse_stamp(line.split(" ", 1)[0]), line))
            except ValueError:
                pass
    best, at = 0.0, ""
    for (a, _), (b, line) in zip(times, times[1:]):
        if b - a > best:
            best, at = b - a, line
    return best, at


def frontier_series(err: str) -> list[tuple[float, int]]:
    """(time, queued URLs) from a peer's progress lines: its own frontier, whatever the ring's view."""
    out = []
    for line in err.splitlines():
        m = re.search(r" peer\.engine: .*\bfrontier ([\d,]+),", line)
        if m:
            try:
                t = parse_stamp(line.split(" ", 1)[0])
            except ValueError:
                continue
            out.append((t, int(m[1].replace(",", ""))))
    return out


def peak_together(series: list[list[tuple[float, int]]]) -> tuple[int, list[int]]:
    """The most URLs queued on all peers at once (each at its last progress line), and each's share then."""
    events = sorted((t, i, n) for i, s in enumerate(series) for t, n in s)
    now = [0] * len(series)
    best, at = 0, list(now)
    for _, i, n in events:
        now[i] = n
        if sum(now) > best:
            best, at = sum(now), list(now)
    return best, at


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", type=int, default=5_000_000, help="queued URLs, both frontiers together")
    ap.add_argument("--max-pages", type=int, default=28_000, help="cluster-wide pages, then the peers stop")
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--head", type=int, default=64, help="[frontier] head_per_host")
    ap.add_argument("--timeout", type=float, default=1200.0, help="seconds, then SIGINT")
    ap.add_argument("--status-every", type=float, default=10.0, help="seconds between `ring status` commands")
    ap.add_argument("--keep", action="store_true", help="keep the data directories")
    ap.add_argument("--kill-at", type=int, default=0, metavar="URLS",
                    help="kill -9 p1 once its own frontier passes URLS, restart it with the same "
                         "command and report the recovery (0: no kill)")
    ap.add_argument("--serve", metavar="PORT_FILE", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve:
        serve(a.hosts, Path(a.serve))
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    env = dict(os.environ)
    port_file = tmp / "web.port"
    web = subprocess.Popen([sys.executable, __file__, "--serve", str(port_file), "--hosts", str(a.hosts)],
                           env=env)
    procs: dict[str, subprocess.Popen] = {}
    try:
        for _ in range(200):
            if port_file.exists() and port_file.read_text():
                break
            time.sleep(0.05)
        web_port = int(port_file.read_text())
        toml = tmp / "cluster.toml"
        toml.write_text(cluster_toml(tmp, web_port, a.max_pages, a.head))
        logs = {}
        def start(p: str) -> subprocess.Popen:
            out, err = open(tmp / f"{p}.out", "ab"), open(tmp / f"{p}.err", "ab")
            logs[p] = (out, err)
            return subprocess.Popen([sys.executable, "-m", "peer", "--ring", str(toml), "--id", p,
                                     "--progress", "1"], stdout=out, stderr=err, env=env)

        for p in ("p1", "p2"):
            procs[p] = start(p)
        kill: dict[str, float] = {}
        t0 = time.monotonic()
        time.sleep(2.0)  # the peers' sockets bound
        probe = Probe(toml, 1.0)
        peak = {p: 0 for p in procs}
        peak_queued = 0
        at_peak: dict[str, tuple[int, int]] = {}
        latencies: list[float] = []
        failed_status = 0
        states_seen: dict[str, set[str]] = {p: set() for p in procs}
        next_status = time.monotonic() + 3.0
        interrupted = False
        while any(pr.poll() is None for pr in procs.values()):
            now = time.monotonic()
            if a.kill_at and "killed" not in kill:
                s1 = frontier_series((tmp / "p1.err").read_text(errors="replace"))
                if s1 and s1[-1][1] >= a.kill_at:
                    procs["p1"].kill()
                    procs["p1"].wait()
                    kill["killed"] = time.time()
                    kill["frontier_before"] = s1[-1][1]
                    kill["t"] = now - t0
                    for f in logs["p1"]:
                        f.close()
                    procs["p1"] = start("p1")
                    kill["restarted"] = time.time()
            if now - t0 > a.timeout and not interrupted:
                for pr in procs.values():
                    if pr.poll() is None:
                        pr.send_signal(signal.SIGINT)
                interrupted = True
            if now - t0 > a.timeout + 60:
                break
            for p, pr in procs.items():
                peak[p] = max(peak[p], vm(pr.pid, "VmHWM"))
            if now >= next_status:
                next_status = now + a.status_every
                ts = time.monotonic()
                r = subprocess.run([sys.executable, "-m", "ring", "status", "--ring", str(toml), "--json"],
                                   capture_output=True, text=True, timeout=60, env=env)
                lat = time.monotonic() - ts
                if r.returncode != 0:
                    failed_status += 1
                    continue
                latencies.append(lat)
                members = json.loads(r.stdout)["members"]
                total = 0
                for m in members:
                    states_seen.setdefault(m["id"], set()).add(m["state"])
                    total += int(m.get("frontier") or 0)
                if total > peak_queued:
                    peak_queued = total
                    at_peak = {m["id"]: (int(m.get("frontier") or 0),
                                         vm(procs[m["id"]].pid, "VmRSS") if m["id"] in procs else 0)
                               for m in members}
                print(f"{now - t0:6.0f}s  queued {total:>10,}  status {lat:.2f}s  "
                      + "  ".join(f"{m['id']} {m['state']} {m['pages']:,} pages "
                                  f"{vm(procs[m['id']].pid, 'VmRSS') / 2**20:.0f} MiB"
                                  for m in members if m["id"] in procs), flush=True)
            time.sleep(0.5)
        codes = {}
        for p, pr in procs.items():
            try:
                codes[p] = pr.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pr.kill()
                codes[p] = pr.wait()
        for out, err in logs.values():
            out.close()
            err.close()
        elapsed = time.monotonic() - t0
        probe.stop.set()
    finally:
        for pr in procs.values():
            if pr.poll() is None:
                pr.kill()
                pr.wait()
        web.kill()
        web.wait()

    series = [frontier_series((tmp / f"{p}.err").read_text(errors="replace")) for p in procs]
    together, shares = peak_together(series)
    if together > peak_queued:
        peak_queued = together
        at_peak = {p: (q, at_peak.get(p, (0, 0))[1]) for p, q in zip(procs, shares)}
    print()
    print(f"bench_scale: 2 peers, {a.hosts} hosts, {LINKS} new links a page, head_per_host {a.head}, "
          f"max_pages {a.max_pages:,}; {elapsed:.0f} s")
    print(f"  most queued URLs (both frontiers at once, from their progress lines): {peak_queued:,} "
          f"(target {a.target:,}: {'passed' if peak_queued >= a.target else 'NOT reached'})")
    for p, s_ in zip(procs, series):
        q = at_peak.get(p, (0, 0))[0]
        most = max((n for _, n in s_), default=0)
        per = f", {peak[p] / most:.0f} B of peak RSS per URL of its most queued" if most else ""
        print(f"  {p}: peak RSS {peak[p] / 2**20:,.0f} MiB; {q:,} queued at the joint peak, "
              f"{most:,} at its own{per}")
    suspected = False
    for p in procs:
        err = (tmp / f"{p}.err").read_text(errors="replace")
        gap, line = progress_gaps(err)
        sus = [ln for ln in err.splitlines() if re.search(r"\b(suspect|dead)\b", ln)]
        suspected |= bool(sus)
        print(f"  {p}: longest gap between progress lines {gap:.2f} s (stall ~{max(gap - 1, 0):.2f} s); "
              f"log lines saying suspect/dead: {len(sus)}{(' e.g. ' + sus[0][:160]) if sus else ''}")
        snaps = [ln for ln in err.splitlines() if "state snapshot" in ln]
        if snaps:
            print(f"  {p}: {len(snaps)} snapshots; last: {snaps[-1][snaps[-1].find('SnapshotStats'):][:220]}")
        summ = [ln for ln in (tmp / f"{p}.out").read_text(errors="replace").splitlines() if "frontier:" in ln]
        if summ:
            print(f"  {p}: {summ[-1].strip()}")
    ever = {p: sorted(s) for p, s in states_seen.items()}
    suspected |= any(set(s) - {"alive"} for s in ever.values())
    if latencies:
        lat = sorted(latencies)
        print(f"  `ring status` command (interpreter start-up included): {len(lat)} samples, median "
              f"{lat[len(lat) // 2]:.2f} s, max {lat[-1]:.2f} s, {failed_status} failed")
    if probe.latencies:
        lat = sorted(probe.latencies)
        print(f"  status asked in-process every 1 s: {len(lat)} answers, median {lat[len(lat) // 2]:.3f} s, "
              f"max {lat[-1]:.3f} s, {probe.unanswered} unanswered; states {dict((k, sorted(v)) for k, v in probe.states.items())}")
        for s_ in probe.states.values():
            suspected |= bool(s_ - {"alive"})
    print(f"  states seen in status: {ever}; suspected or dead ever: {'yes' if suspected else 'no'}")
    print(f"  exit codes: {codes}")
    if kill:
        err = (tmp / "p1.err").read_text(errors="replace")
        resumed = re.search(r"^(\S+) WARNING peer\.engine: resuming the crawl from \S+: (\d+) queued "
                            r"URLs \((\d+) of them on disk, (\d+) blocks read\)", err, re.M)
        after = [t for t, _ in frontier_series(err) if t > kill["restarted"]]
        if resumed:
            at = parse_stamp(resumed[1])
            print(f"  kill -9 of p1 at {kill['t']:.0f} s with {kill['frontier_before']:,} queued (its last "
                  f"progress line): resumed {int(resumed[2]):,} queued ({int(resumed[3]):,} on disk, "
                  f"{int(resumed[4]):,} blocks read) {at - kill['restarted']:.1f} s after the restart "
                  f"(interpreter start-up included), first progress line after "
                  f"{(after[0] - kill['restarted']) if after else float('nan'):.1f} s; "
                  f"{'none lost' if int(resumed[2]) >= kill['frontier_before'] else 'FEWER than before'}")
        else:
            print("  kill -9 of p1: no 'resuming the crawl' line after the restart")
    disk = sum(f.stat().st_size for f in tmp.rglob("seg-*.dat"))
    print(f"  frontier segments left on disk: {disk / 2**20:,.0f} MiB")
    if not a.keep:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"  kept: {tmp}")
    ok = (peak_queued >= a.target and not suspected and all(c == 0 for c in codes.values())
          and all(v <= 1.5 * 2**30 for v in peak.values()) and probe.latencies
          and max(probe.latencies) <= 2.0 and not probe.unanswered)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
