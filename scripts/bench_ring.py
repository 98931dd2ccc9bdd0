#!/usr/bin/env python3
"""Ring benchmarks: scaling over peers, politeness held, forwarding cost.

Three benchmarks, each bounded in time, all on 127.0.0.1, every process
ended at the end whatever happens:

cpu      The same local web (100 hosts x 100 pages of 20-40 KB, politeness
         off: rate 0, delays 0, concurrency 64 a peer) crawled by 1, 2 and 3
         peer processes, alternately, ``--repeats`` times. Per run: pages/s
         over the crawl (answered pages / (last - first ``fetched_at``) of the
         merged results) and over the wall time (first peer started -> last
         exited, start-up and termination included), CPU ms per page of the
         peers (``os.wait4``) and of the server (``/proc``). Then medians and
         the 2/1 and 3/1 ratios. On 2 cores the server's own CPU counts: the
         web is pre-rendered to static files and served by nginx when it is
         installed (about 0.1 ms of server CPU a page, against about 1 ms for
         webfarm.py, which renders every page in Python: a quarter of what a
         peer spends); otherwise webfarm.py, with a warning.
polite   200 hosts x 150 pages (20 links a page, so that parsing does not
         make the peers CPU-bound), politeness on: ``rate`` 120 pages/min a host
         (400 pages/s in all), ``window`` 5 s (setpoint 10 pages a window),
         host_concurrency 1, the PID on; the peers are stopped after
         ``--polite-seconds``. Achieved pages/s over the steady part against
         the limit, and each host's pages per window against its setpoint:
         as the PID counted them (pid_trace), as results rows in the same
         windows, and as the server logged them (same windows, and sliding).
         Fetch times and CPU shares say whether the rate was CPU-bound.
forward  URLs/s and bytes per URL between two processes through the real
         ring.forwarding.forwarder Outbox/Inbox, codec and ring.io.zmqio sockets; then a
         real 2-peer crawl: URLs forwarded (``ring status``) and the TCP bytes
         between the peers (``ss``) per forwarded URL.

Every crawl also reports ring changes after the ring formed (a live peer
declared dead, e.g. when its event loop starves): then two peers fetch the
same hosts, so such cpu runs are left out of the medians. The machine is
small and may be shared: each run prints the CPU the peers, the server and
every other process used; compare ratios within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import trio

from bench_ring_forward import run_forward  # this benchmark's forwarding half (its receiver process)
from localweb.bench.ringsetup import BENCHES, UsageError, cmd, ring_keys, start_server  # its options and web
from localweb.bench.ringsetup import parser as setup_parser
from localweb.bench import (
    Children,
    count_in,
    machine_busy,
    page_rows,
    pid_rows,
    read_access_log,
    report_ring,
    run_crawl,
    sliding_max,
    tcp_bytes,
    write_toml,
)

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------
# cpu


@dataclass
class CpuRun:
    peers: int
    pages: int
    dups: int
    span: float
    wall: float
    cpu: float
    per_peer: dict[str, tuple[int, float]]  # id -> (pages, cpu s)
    server_cpu: float
    ok: bool  # every peer exited 0, no URL fetched twice, the ring never changed once formed
    others: float  # cores used by other processes of the machine during the run

    @property
    def rate(self) -> float:
        return self.pages / self.span if self.span > 0 else 0.0

    @property
    def wall_rate(self) -> float:
        return self.pages / self.wall


def bench_cpu(args: argparse.Namespace, children: Children, work: Path) -> list[str]:
    print(f"\n## cpu: {args.cpu_hosts} hosts x {args.cpu_pages} pages, politeness off, "
          f"concurrency {args.concurrency} a peer, peers {args.cpu_peers}, {args.repeats} repeats",
          flush=True)
    server = start_server(children, args.server, args.cpu_hosts, args.cpu_pages, work,
                          links=args.cpu_links)
    print(f"  server: {server.name} on 127.0.0.1:{server.port}", flush=True)
    pol = {"rate": 0.0, "initial_delay": 0.0, "min_delay": 0.0,
           "host_concurrency": args.host_concurrency}
    runs: list[CpuRun] = []
    print(f"  {'run':>3} {'peers':>5} {'pages':>6} {'dup':>4} {'span s':>7} {'pages/s':>8} {'wall s':>7} "
          f"{'wall p/s':>8} {'peer ms/page':>12} {'per peer ms/page':>22} {'srv ms/page':>11} "
          f"{'srv cores':>9} {'peer cores':>10} {'others':>6}", flush=True)
    for rep in range(args.repeats):
        for n in args.cpu_peers:
            d = work / f"cpu-{rep}-{n}"
            d.mkdir()
            ids = write_toml(d / "cluster.toml", n, server.port, args.cpu_hosts,
                             concurrency=args.concurrency, politeness=pol, ring=ring_keys(args))
            s0, m0 = server.cpu(), machine_busy()
            crawl = run_crawl(children, d / "cluster.toml", ids, time_limit=args.crawl_timeout)
            server_cpu = server.cpu() - s0
            others = max(0.0, machine_busy() - m0 - server_cpu - crawl.cpu) / crawl.wall
            rows = page_rows(crawl)
            times = [r[3] for r in rows]
            per_peer = {}
            for pid in ids:
                e = crawl.exits[pid]
                per_peer[pid] = (sum(1 for r in rows if r[4] == pid), e.cpu)
            run = CpuRun(n, len(rows), len(rows) - len({r[0] for r in rows}),
                         max(times) - min(times) if times else 0.0, crawl.wall, crawl.cpu,
                         per_peer, server_cpu, crawl.ok, others)
            runs.append(run)
            pp = " ".join(f"{c / max(p, 1) * 1e3:.2f}" for p, c in per_peer.values())
            print(f"  {rep + 1:>3} {n:>5} {run.pages:>6} {run.dups:>4} {run.span:>7.1f} {run.rate:>8.1f} "
                  f"{run.wall:>7.1f} {run.wall_rate:>8.1f} {run.cpu / max(run.pages, 1) * 1e3:>12.2f} "
                  f"{pp:>22} {server_cpu / max(run.pages, 1) * 1e3:>11.2f} "
                  f"{server_cpu / run.wall:>9.2f} {run.cpu / run.wall:>10.2f} {others:>6.2f}", flush=True)
            for err in crawl.errors:
                print(f"      ! {err}", flush=True)
            if report_ring(crawl) or run.dups:
                run.ok = False
                print("      ! left out of the medians: the ring split, so hosts were fetched twice", flush=True)
            if not args.keep:
                shutil.rmtree(d, ignore_errors=True)
    server.stop()

    good = [r for r in runs if r.ok]
    figures = {
        "rate": lambda r: r.rate, "wall_rate": lambda r: r.wall_rate,
        "cpu_ms": lambda r: r.cpu / r.pages * 1e3, "srv_ms": lambda r: r.server_cpu / r.pages * 1e3,
        "srv_cores": lambda r: r.server_cpu / r.wall, "pages": lambda r: r.pages,
        "others": lambda r: r.others,
    }
    med: dict[int, dict[str, float]] = {}
    for n in args.cpu_peers:
        rs = [r for r in good if r.peers == n and r.pages]
        if rs:
            med[n] = {k: statistics.median(f(r) for r in rs) for k, f in figures.items()}
            med[n]["runs"] = len(rs)
    print("  (peer cores, others: CPU cores used during the run by the peers, and by every other "
          "process of the machine;\n   on a shared machine compare runs with similar 'others')")
    print(f"\n  medians ({server.name}; pages/s over the crawl span, and over the wall time "
          "start -> all exited)", flush=True)
    print(f"  {'peers':>5} {'runs':>4} {'pages':>6} {'pages/s':>8} {'x 1 peer':>8} {'wall p/s':>8} "
          f"{'x 1 peer':>8} {'peer CPU ms/page':>16} {'server ms/page':>14} {'server cores':>12}")
    base = med.get(1)
    for n, m in med.items():
        x = f"{m['rate'] / base['rate']:.2f}" if base else "-"
        xw = f"{m['wall_rate'] / base['wall_rate']:.2f}" if base else "-"
        print(f"  {n:>5} {m['runs']:>4} {m['pages']:>6.0f} {m['rate']:>8.1f} {x:>8} {m['wall_rate']:>8.1f} "
              f"{xw:>8} {m['cpu_ms']:>16.2f} {m['srv_ms']:>14.2f} {m['srv_cores']:>12.2f}")
    if base:
        cores = os.cpu_count() or 1
        bound = {n: min(n, cores) / m["cpu_ms"] * 1e3 for n, m in med.items()}
        print(f"  bound from CPU per page alone, on an idle {cores}-core machine (min(peers, cores) / "
              "peer CPU per page): " + ", ".join(
                  f"{n} peer{'s' if n > 1 else ''} {b:.0f} pages/s ({b / bound[1]:.2f}x)" for n, b in bound.items()))
    # Ratios within each repeat too: neighbours in time share the machine's noise.
    for n in args.cpu_peers:
        if n != 1 and base:
            pairs = []
            for rep in range(args.repeats):
                one = runs[rep * len(args.cpu_peers) + args.cpu_peers.index(1)] if 1 in args.cpu_peers else None
                this = runs[rep * len(args.cpu_peers) + args.cpu_peers.index(n)]
                if one and one.ok and this.ok:
                    pairs.append(this.rate / one.rate)
            print(f"  {n}/1 per repeat: " + ", ".join(f"{p:.2f}" for p in pairs))
    lines = []
    if base and 2 in med:
        r2 = med[2]["rate"] / base["rate"]
        verdict = "meets" if r2 >= 1.7 else "misses"
        print(f"  target 2 peers >= 1.7 x 1 peer: {r2:.3f}x, {verdict} it")
    if med:
        parts = []
        for n, m in med.items():
            x = f" ({m['rate'] / base['rate']:.2f}x)" if base and n != 1 else ""
            parts.append(f"{n} peer{'s' if n > 1 else ''} {m['rate']:.0f} pages/s{x}, "
                         f"{m['cpu_ms']:.2f} ms CPU/page")
        lines.append(
            f"- `{cmd(args, 'cpu')}`: {args.cpu_hosts} hosts x {args.cpu_pages} pages, politeness off, "
            f"served by {server.name} ({statistics.median(m['srv_ms'] for m in med.values()):.2f} ms "
            f"CPU/page), median of {args.repeats}: " + "; ".join(parts)
            + f" (other processes used {statistics.median(r.others for r in good):.1f} of the 2 cores meanwhile)")
    return lines


# ---------------------------------------------------------------------------
# polite


def bench_polite(args: argparse.Namespace, children: Children, work: Path) -> list[str]:
    rate, w, hosts = args.polite_rate, args.polite_window, args.polite_hosts
    limit = hosts * rate / 60
    setpoint = rate * w / 60
    print(f"\n## polite: {hosts} hosts x {args.polite_pages} pages ({args.polite_links} links a page), rate {rate:g} pages/min a host "
          f"(limit {limit:.0f} pages/s), window {w:g} s (setpoint {setpoint:g} pages), "
          f"host_concurrency 1, {args.polite_seconds:g} s a crawl", flush=True)
    server = start_server(children, args.server, hosts, args.polite_pages, work, access_log=True,
                          links=args.polite_links)
    print(f"  server: {server.name} on 127.0.0.1:{server.port}, request log on", flush=True)
    print(textwrap.indent(textwrap.dedent(f"""\
        measured: pages/s = answered results rows in the steady part / its length; per window:
          n = fetches the frontier counted in each pid_trace window (robots.txt and retried attempts
          included), rows = results rows with fetched_at in that window, server log = requests the
          server logged for the host in that window ({'answer end' if server.name == 'nginx' else 'arrival'} time), sliding = most requests
          logged for one host in any {w:g} s interval"""), "  "), flush=True)
    pol = {"rate": rate, "window": w, "host_concurrency": 1, "initial_delay": 60 / rate,
           "kp": args.polite_kp, "ki": args.polite_ki}
    lines = []
    for n in args.polite_peers:
        d = work / f"polite-{n}"
        d.mkdir()
        ids = write_toml(d / "cluster.toml", n, server.port, hosts, concurrency=max(64, 2 * hosts),
                         politeness=pol, ring=ring_keys(args))
        s0, m0 = server.cpu(), machine_busy()
        crawl = run_crawl(children, d / "cluster.toml", ids, time_limit=args.polite_seconds + 60,
                          stop_after=args.polite_seconds)
        server_cpu = server.cpu() - s0
        others = max(0.0, machine_busy() - m0 - server_cpu - crawl.cpu) / crawl.wall
        time.sleep(1.5)  # nginx flushes its request log every second
        rows = page_rows(crawl)
        trace = pid_rows(crawl)
        log = [e for e in read_access_log(server) if crawl.started <= e[0]]
        for err in crawl.errors:
            if "time limit" not in err:
                print(f"      ! {err}", flush=True)
        changes = report_ring(crawl)
        if not rows:
            print("  no pages fetched", flush=True)
            continue
        by_host: dict[str, list[float]] = defaultdict(list)
        for _, host, _, t, _, _ in rows:
            by_host[host.partition(":")[0]].append(t)
        srv_host: dict[str, list[float]] = defaultdict(list)
        for t, host, _, _ in log:
            srv_host[host].append(t)
        for ts in (*by_host.values(), *srv_host.values()):
            ts.sort()
        elapsed = sorted(r[5] for r in rows)
        first = min(r[3] for r in rows)
        lo = first + args.skip_windows * w
        hi = crawl.stopped or max(r[3] for r in rows)
        span = hi - lo
        n_rows = sum(count_in(ts, lo, hi) for ts in by_host.values())
        n_srv = sum(count_in(ts, lo, hi) for ts in srv_host.values())
        busy = sum(1 for ts in by_host.values() if count_in(ts, hi - w, hi) > 0)
        per_host = sorted(count_in(ts, lo, hi) / span for ts in by_host.values())
        # Windows as the PID saw them: each pid_trace row is [window_end - w, window_end).
        worst_n = (0.0, "", 0.0)
        worst_rows = (0.0, "", 0.0)
        worst_srv = (0.0, "", 0.0)
        over = {"pid": 0, "rows": 0, "srv": 0}
        for host, end, cnt, _, sp in trace:
            key = host.partition(":")[0]
            for kind, value in (("pid", cnt),
                                ("rows", count_in(by_host.get(key, []), end - w, end)),
                                ("srv", count_in(srv_host.get(key, []), end - w, end))):
                ratio = value / sp
                if ratio > 1.10:
                    over[kind] += 1
                if kind == "pid" and ratio > worst_n[0]:
                    worst_n = (ratio, key, end)
                elif kind == "rows" and ratio > worst_rows[0]:
                    worst_rows = (ratio, key, end)
                elif kind == "srv" and ratio > worst_srv[0]:
                    worst_srv = (ratio, key, end)
        hist = defaultdict(int)
        for _, _, cnt, _, _ in trace:
            hist[cnt] += 1
        hist_text = "  ".join(f"{k}: {v}" for k, v in sorted(hist.items()))
        delays = sorted(r[3] for r in trace) or [0.0]
        sliding = max(((sliding_max(ts, w, lo, hi), h) for h, ts in srv_host.items()), default=(0, ""))
        sliding_all = max(((sliding_max(ts, w, 0, float("inf")), h) for h, ts in srv_host.items()),
                          default=(0, ""))
        achieved = n_rows / span
        print(textwrap.indent(textwrap.dedent(f"""\
            {n} peer{'s' if n > 1 else ''}: {len(rows)} pages in {crawl.wall:.0f} s (stopped at {args.polite_seconds:g} s);
            CPU cores used: peers {crawl.cpu / crawl.wall:.2f}, server {server_cpu / crawl.wall:.2f}, other processes of the machine {others:.2f}
            fetch time as the peers saw it: median {statistics.median(elapsed):.0f} ms, 95th percentile {elapsed[int(0.95 * (len(elapsed) - 1))]:.0f} ms
              (with host_concurrency 1 a host cannot go faster than one page per fetch time);
            ring changes after the ring formed: {changes}
            steady part: from {args.skip_windows} windows after the first page to the stop ({span:.1f} s):
              pages/s (results rows)     {achieved:7.1f}  = {achieved / limit:6.1%} of the {limit:.0f} limit
              requests/s (server log)    {n_srv / span:7.1f}  = {n_srv / span / limit:6.1%}  (robots.txt, retries included)
              per host pages/s           min {per_host[0]:.2f}  median {statistics.median(per_host):.2f}  max {per_host[-1]:.2f}  (setpoint {rate / 60:.2f})
              hosts still fetched in the last window: {busy} of {hosts}
            pages per host per window, setpoint {setpoint:g}; windows are the PID's own
            ([window_end - {w:g} s, window_end) of each of {len(trace)} pid_trace rows):
              as the PID counted (n)        worst {worst_n[0] * setpoint:4.0f} = {worst_n[0] - 1:+6.1%} ({worst_n[1]}, {worst_n[2] - first:.0f} s in); windows > +10%: {over['pid']}
                windows by n: {hist_text}
                PID delay after each window: min {delays[0]:.3f} s, median {statistics.median(delays):.3f} s, max {delays[-1]:.3f} s (60 / rate = {60 / rate:.3f} s)
              results rows, same windows    worst {worst_rows[0] * setpoint:4.0f} = {worst_rows[0] - 1:+6.1%} ({worst_rows[1]}, {worst_rows[2] - first:.0f} s in); windows > +10%: {over['rows']}
              server log, same windows      worst {worst_srv[0] * setpoint:4.0f} = {worst_srv[0] - 1:+6.1%} ({worst_srv[1]}, {worst_srv[2] - first:.0f} s in); windows > +10%: {over['srv']}
              server log, any {w:g} s window (sliding): steady part worst {sliding[0]} ({sliding[1]}), whole run {sliding_all[0]} ({sliding_all[1]})
            targets: >= 95% of the limit: {'met' if achieved >= 0.95 * limit else 'MISSED'};
                     no host > setpoint + 10% in any PID window: {'met' if over['pid'] == 0 and over['srv'] == 0 else 'MISSED'}
            """), "  "), flush=True)
        lines.append(
            f"- `{cmd(args, 'polite')}`: {hosts} hosts at {rate:g} pages/min, window {w:g} s, "
            f"{n} peer{'s' if n > 1 else ''}: {achieved:.0f} pages/s = {achieved / limit:.1%} of the "
            f"{limit:.0f} pages/s limit over {span:.0f} s; worst host window {worst_n[0] * setpoint:.0f} "
            f"pages (PID count) / {worst_srv[0] * setpoint:.0f} (server log) against a setpoint of "
            f"{setpoint:g} ({len(trace)} windows, {over['pid']} over +10%)")
        if not args.keep:
            shutil.rmtree(d, ignore_errors=True)
    server.stop()
    return lines


# ---------------------------------------------------------------------------
# forward


def bench_forward(args: argparse.Namespace, children: Children, work: Path) -> list[str]:
    print(f"\n## forward: {args.fwd_urls} URLs p1 -> p2 through ring.forwarding.forwarder Outbox/Inbox, the "
          f"codec and ring.io.zmqio on 127.0.0.1 (2 processes, <= {args.fwd_window} batches unacked), "
          f"{args.repeats} repeats", flush=True)
    results = []
    for _ in range(args.repeats):
        try:
            r = trio.run(lambda: run_forward(children, args.fwd_urls, window=args.fwd_window,
                                             max_seconds=args.crawl_timeout))
        except (trio.TooSlowError, RuntimeError) as exc:
            print(f"      ! forwarding run failed: {exc!r}", flush=True)
            continue
        results.append(r)
        tcp = f"{r.tcp_bytes / r.urls:6.1f}" if r.tcp_bytes is not None else "   n/a"
        print(f"  {r.rate:>9,.0f} URLs/s  sender {r.sender_cpu / r.urls * 1e6:5.2f} us CPU/URL  receiver "
              f"{r.receiver_cpu / r.urls * 1e6:5.2f} us CPU/URL  msgpack {r.frame_bytes / r.urls:5.1f} B/URL  "
              f"TCP {tcp} B/URL  ({r.batches} batches, {r.resent} resent)", flush=True)
    if not results:
        return []
    rate = statistics.median(r.rate for r in results)
    frame = statistics.median(r.frame_bytes / r.urls for r in results)
    tcps = [r.tcp_bytes / r.urls for r in results if r.tcp_bytes is not None]
    tcp = statistics.median(tcps) if tcps else None
    print(f"  median: {rate:,.0f} URLs/s; {frame:.1f} bytes/URL as msgpack frames (batches + acks), "
          + (f"{tcp:.1f} as TCP payload" if tcp else "TCP bytes not measured (no `ss`)")
          + f"; mean URL {results[0].mean_url:.1f} characters")
    lines = [f"- `{cmd(args, 'forward')}`: {rate:,.0f} URLs/s forwarded between two processes "
             f"(Outbox -> zmq -> Inbox -> ack), {tcp or frame:.1f} bytes/URL on the wire "
             f"(URLs of {results[0].mean_url:.0f} characters, acks and ZMTP framing included), median of "
             f"{args.repeats}"]
    if args.no_crawl_forward:
        return lines

    hosts, pages = args.fwd_hosts, args.fwd_pages
    print(f"\n  in a real 2-peer crawl ({hosts} hosts x {pages} pages, politeness off), `ring status` "
          "and `ss` sampled every 2 s:", flush=True)
    server = start_server(children, args.server, hosts, pages, work)
    d = work / "forward-crawl"
    d.mkdir()
    toml = d / "cluster.toml"
    ids = write_toml(toml, 2, server.port, hosts, concurrency=args.concurrency,
                     politeness={"rate": 0.0, "initial_delay": 0.0, "host_concurrency": args.host_concurrency},
                     ring=ring_keys(args))
    peer_ports = {int(line.rsplit(":", 1)[1].strip('"\n'))
                  for line in toml.read_text().splitlines() if line.startswith("address")}
    last: dict[str, int] = {}
    peer_pids: set[int] = set()

    def sample(_elapsed: float) -> float:
        if not peer_pids:
            peer_pids.update(p.pid for p in children.live() if str(toml) in p.args)
        st = subprocess.run([sys.executable, "-m", "ring", "status", "--ring", str(toml), "--json"],
                            capture_output=True, text=True, timeout=10, cwd=ROOT)
        # Both only grow while the peers' connections are open (they close as
        # the peers end, while status may still answer): keep the largest.
        tb = tcp_bytes(peer_ports, peer_pids)
        if tb is not None:
            last["tcp"] = max(tb, int(last.get("tcp", 0)))
        if st.returncode == 0:
            members = json.loads(st.stdout)["members"]
            last["forwarded"] = max(sum(m["forwarded_in"] for m in members), int(last.get("forwarded", 0)))
        return 2.0

    crawl = run_crawl(children, toml, ids, time_limit=args.crawl_timeout, while_running=sample)
    server.stop()
    rows = page_rows(crawl)
    for err in crawl.errors:
        print(f"      ! {err}", flush=True)
    report_ring(crawl)
    fwd = int(last.get("forwarded", 0))
    if not rows or not fwd:
        print("  no forwarding figures (no status answer)", flush=True)
        return lines
    times = [r[3] for r in rows]
    span = max(times) - min(times)
    tb = last.get("tcp")
    per = f"{tb / fwd:.1f}" if tb else "n/a"
    print(f"  {len(rows)} pages in {span:.1f} s; {fwd} URLs forwarded ({fwd / len(rows):.1f} per page, "
          f"{fwd / span:,.0f}/s on average); {per} TCP bytes between the peers per forwarded URL "
          "(gossip, acks and ZMTP framing included)", flush=True)
    lines.append(f"- same command, a real 2-peer crawl of {hosts} x {pages} pages: {fwd / len(rows):.1f} "
                 f"URLs forwarded per page ({fwd / span:,.0f}/s), {per} bytes on the wire per forwarded URL")
    if not args.keep:
        shutil.rmtree(d, ignore_errors=True)
    return lines


# ---------------------------------------------------------------------------
# CLI


def parser() -> argparse.ArgumentParser:
    """The options (localweb.bench.ringsetup's), this docstring the description --help prints."""
    return setup_parser(__doc__)



def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parser().parse_args(argv)
        if args.polite_hosts > 999 or args.cpu_hosts > 999 or args.fwd_hosts > 999:
            raise UsageError("the local web has at most 999 hosts")
        if args.skip_windows < 0:
            raise UsageError("--skip-windows must be >= 0")
    except UsageError as exc:
        print(f"bench_ring.py: error: {exc}", file=sys.stderr)
        return 2
    # SIGTERM unwinds like Ctrl-C, so every child is ended below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = Path(tempfile.mkdtemp(prefix="ringcrawl-bench-ring-"))
    work.chmod(0o755)
    benches = [b for b in BENCHES if b in (args.only or BENCHES)]
    print(f"bench_ring: {', '.join(benches)}; {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.2f} at the start; work directory {work}", flush=True)
    figures: list[str] = []
    try:
        with Children() as children:
            for bench in benches:
                fn = {"cpu": bench_cpu, "polite": bench_polite, "forward": bench_forward}[bench]
                figures += fn(args, children, work)
    except UsageError as exc:
        print(f"bench_ring.py: error: {exc}", file=sys.stderr)
        return 2
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\n## figures (load average {os.getloadavg()[0]:.2f} at the end; markdown for the README)\n")
    print("\n".join(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
