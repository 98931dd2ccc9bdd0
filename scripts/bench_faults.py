#!/usr/bin/env python3
"""Fault-handling figures of a real ring: detection, resume, hand-off.

Peer processes (``python -m peer``) crawl the local test web, served in this
process by ``localweb.serve_webfarm`` so its request log is the judge, at a
polite rate (default 12 hosts x 60 pages at 120 pages/min a host: about a
minute of crawling), with the ring's default gossip timing. Everything is on
127.0.0.1, each phase is bounded by ``--timeout``, and every process this
script started is killed when it ends, whatever happens.

detect   3 peers; once all see each other and pages flow, ``kill -9`` one
         (a different one each repeat, a fresh cluster each time) and ask
         each survivor for its view every 0.1 s over one DEALER socket each
         (the StatusRequest of ``python -m ring status``). Seconds from the
         kill to the first "suspect" at any survivor and to "dead" at all,
         against the bound ``dead_after + 2 x gossip_interval`` (docs/membership.md).
resume   3 peers; ``kill -9`` p2 a third of the way through, then start it
         again with the same command (no --fresh). Seconds from the process
         start to its "resuming the crawl from" log line (its timestamp) and
         to its first request at the web (web log, hosts p2 owns), the queue
         it recovered, the size of data_dir/state on disk at the kill, and
         the URLs fetched twice in the run against p2's ``concurrency``.
handoff  3 peers; p4 joins a quarter of the way through, p2 leaves with
         ``python -m ring leave`` half way. Every "hand-off: N fetched URLs
         ... all acked in S" line of the peers, the leave command's wall
         time, bytes on the wire per handed-off URL (a seen-only UrlBatch of
         the run's real URLs, 500 a batch as the Outbox cuts them), and the
         run's duplicate fetches and coverage by the web's log.

The machine is small and may be shared; the load average is printed before
and after. The last block is markdown to paste into the README.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import trio

from bench_faults_cluster import (  # this benchmark's peer processes, their logs and views
    HANDOFF,
    RESUMED,
    ROOT,
    BenchError,
    Cluster,
    cluster_text,
    du,
    Viewer,
    log_lines,
    views,
    wait_pages,
)
from localweb import SiteGraph, serve_webfarm
from localweb.bench import free_ports, positive
from peer.core.run.layout import DataDir
from peer.core.urls.normalize import host_key
from peer.state.configfile import load_config
from ring.hashring import HashRing
from ring.io.zmqio import SocketType, open_socket
from ring.messages import UrlBatch, encode

BENCHES = ("detect", "resume", "handoff")
#: How often the detector asks each survivor for its view, s.
POLL = 0.1
#: The Outbox's default batch_size (ring/forwarding/forwarder.py): hand-off batches are cut at this.
BATCH = 500


# -- detect --------------------------------------------------------------------------


@dataclass
class Detection:
    victim: str
    suspect: float  # kill -> first survivor lists it suspect (or dead)
    dead: float  # kill -> every survivor lists it dead
    per_peer: dict[str, float] = field(default_factory=dict)


async def detect_once(args: argparse.Namespace, work: Path, graph: SiteGraph, victim: str) -> Detection:
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        cluster = Cluster(work, cluster_text(work, args, farm.port, 3))
        ids = [p.id for p in cluster.cfg.peers]
        survivors = [p for p in ids if p != victim]
        try:
            with trio.fail_after(args.timeout):
                for p in ids:
                    await cluster.start(p)
                await wait_pages(farm, 40, cluster)
                # Steady state: every peer sees all three alive.
                while True:
                    seen = await views(cluster, ids)
                    if all(v is not None and all(v.get(q) == "alive" for q in ids) for v in seen.values()):
                        break
                    await trio.sleep(0.2)
                result = await _watch_death(cluster, victim, survivors)
        except trio.TooSlowError:
            raise BenchError(f"detect: no verdict within {args.timeout:g}s\n{cluster.tails()}") from None
        finally:
            await cluster.close()
            nursery.cancel_scope.cancel()
    return result


async def _watch_death(cluster: Cluster, victim: str, survivors: list[str]) -> Detection:
    suspect: dict[str, float] = {}
    dead: dict[str, float] = {}
    t_kill = 0.0

    async def watch(peer: str, sock) -> None:  # type: ignore[no-untyped-def]
        viewer = Viewer(sock, cluster.cfg.ring.name)
        while peer not in dead:
            tick = trio.current_time()
            states = await viewer.states()
            now = time.monotonic()
            state = (states or {}).get(victim)
            if state in ("suspect", "dead"):
                suspect.setdefault(peer, now)
            if state == "dead":
                dead[peer] = now
            await trio.sleep_until(tick + POLL)

    async with trio.open_nursery() as n:
        socks = {}
        for p in survivors:
            socks[p] = await n.start(_open_dealer, cluster.cfg.peer(p).address)
        # Each survivor answers once before the kill, so a slow first connect
        # does not count against the detector.
        for p, sock in socks.items():
            if await Viewer(sock, cluster.cfg.ring.name).states(5.0) is None:
                raise BenchError(f"detect: {p} does not answer status requests")
        t_kill = time.monotonic()
        cluster.kill(victim)
        async with trio.open_nursery() as watchers:
            for p, sock in socks.items():
                watchers.start_soon(watch, p, sock)
        n.cancel_scope.cancel()
    await cluster.wait(victim)
    return Detection(victim, min(suspect.values()) - t_kill, max(dead.values()) - t_kill,
                     {p: t - t_kill for p, t in dead.items()})


async def _open_dealer(address: str, task_status=trio.TASK_STATUS_IGNORED) -> None:  # type: ignore[no-untyped-def]
    async with open_socket(SocketType.DEALER, connect=address) as sock:
        task_status.started(sock)
        await trio.sleep_forever()


async def bench_detect(args: argparse.Namespace, work: Path, graph: SiteGraph) -> list[str]:
    runs: list[Detection] = []
    for i in range(args.repeats):
        victim = f"p{i % 3 + 1}"  # a different peer each time, a fresh cluster each time
        runs.append(d := await detect_once(args, work / f"detect-{i + 1}", graph, victim))
        per = ", ".join(f"{p} {t:.2f}s" for p, t in sorted(d.per_peer.items()))
        print(f"  run {i + 1}: kill -9 {d.victim}: first suspect {d.suspect:.2f}s, "
              f"dead everywhere {d.dead:.2f}s ({per})", flush=True)
    cfg_ring = load_config(work / "detect-1" / "cluster.toml").ring
    bound = cfg_ring.dead_after + 2 * cfg_ring.gossip_interval
    sus = [d.suspect for d in runs]
    dead = [d.dead for d in runs]
    within = sum(t <= bound for t in dead)
    print(f"  suspect: median {statistics.median(sus):.2f}s, max {max(sus):.2f}s "
          f"(suspect_after {cfg_ring.suspect_after:g}s)")
    print(f"  dead at every survivor: median {statistics.median(dead):.2f}s, max {max(dead):.2f}s; "
          f"bound dead_after + 2 x gossip_interval = {bound:g}s; {within}/{len(dead)} within it")
    return [
        f"- **Dead peer detected** (`{cmd(args, 'detect')}`; 3 peers, gossip_interval "
        f"{cfg_ring.gossip_interval:g} s, suspect_after {cfg_ring.suspect_after:g} s, dead_after "
        f"{cfg_ring.dead_after:g} s, {len(runs)} kills, each survivor's view polled every {POLL:g} s): "
        f"suspected {statistics.median(sus):.2f} s after `kill -9` (median; max {max(sus):.2f} s), "
        f"dead at every survivor after {statistics.median(dead):.2f} s (max {max(dead):.2f} s), "
        f"against the bound dead_after + 2 x gossip_interval = {bound:g} s ({within}/{len(dead)} within).",
    ]


# -- resume ----------------------------------------------------------------------------


async def bench_resume(args: argparse.Namespace, work: Path, graph: SiteGraph) -> list[str]:
    victim = "p2"
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        expected = graph.expected_urls(farm.port)
        cluster = Cluster(work, cluster_text(work, args, farm.port, 3))
        ids = [p.id for p in cluster.cfg.peers]
        try:
            with trio.fail_after(args.timeout):
                for p in ids:
                    await cluster.start(p)
                await wait_pages(farm, len(expected) // 3, cluster)
                cluster.kill(victim)
                t_kill = time.time()
                await cluster.wait(victim)
                killed_rc = cluster.procs[victim].returncode
                disk, size, files = du(DataDir(cluster.cfg.peer(victim).data_dir).state)
                before = farm.fetched()
                t_start = await cluster.start(victim)  # the same command, no --fresh
                await cluster.wait()
        except trio.TooSlowError:
            raise BenchError(f"resume: the crawl did not end within {args.timeout:g}s\n"
                             f"{cluster.tails()}") from None
        finally:
            await cluster.close()
            nursery.cancel_scope.cancel()

    codes = {p: proc.returncode for p, proc in cluster.procs.items()}
    lines = log_lines(cluster.stderr(victim))
    resumed = next(((t, RESUMED.search(msg)) for t, _, _, msg in lines if RESUMED.search(msg)), None)
    if resumed is None:
        raise BenchError(f"resume: {victim} did not log 'resuming the crawl from'\n{cluster.tails()}")
    t_resume, m = resumed
    queued, forwards, restored = (int(x) for x in m.groups())
    ring3 = HashRing({p: 1.0 for p in ids}, vnodes=cluster.cfg.ring.vnodes)
    port = farm.port

    def owned(e) -> bool:  # type: ignore[no-untyped-def]
        return ring3.owner(host_key(f"http://{e.host}:{port}/")) == victim

    after = sorted((e for e in farm.log if e.t >= t_start and owned(e)), key=lambda e: e.t)
    if not after:
        raise BenchError(f"resume: no request for {victim}'s hosts after its restart")
    first_any = after[0]
    first_page = next((e for e in after if e.target != "/robots.txt"), first_any)
    # Did the others drop p2 from their ring while it was down (then its
    # hosts moved away and back: not the clean restart measured here)?
    dropped = [p for p in ids if p != victim and any(
        t >= t_kill and msg.startswith("ring: ") and victim not in msg[6:].split(", ")
        for t, _, _, msg in log_lines(cluster.stderr(p)))]
    got = farm.fetched()
    twice = {u: n for u, n in got.items() if n > 1}
    fetched_before = all(before[u] >= 1 for u in twice)
    missing = expected - set(got)
    hosts_owned = sum(ring3.owner(host_key(f"http://{h}:{port}/")) == victim for h in graph.site_hosts())
    in_flight_cap = min(args.concurrency, hosts_owned)  # host_concurrency 1

    print(f"  kill -9 {victim} at {len(set(before))} of {len(expected)} URLs (exit {killed_rc}); "
          f"data_dir/state at the kill: {disk / 1024:.0f} KiB on disk (du), {size / 1024:.0f} KiB "
          f"apparent, {files} files")
    print(f"  restarted: 'resuming the crawl from' after {t_resume - t_start:.2f}s "
          f"({queued} queued URLs, {forwards} to forward, {restored} result rows restored)")
    print(f"  first request to its hosts after {first_any.t - t_start:.2f}s ({first_any.target}), "
          f"first page after {first_page.t - t_start:.2f}s")
    print(f"  fetched twice: {len(twice)} URLs (all fetched before the restart: {fetched_before}); "
          f"concurrency {args.concurrency}, {hosts_owned} hosts owned x host_concurrency 1")
    print(f"  coverage {len(expected) - len(missing)}/{len(expected)}; exit codes {codes}; "
          f"dropped from the others' ring while down: {', '.join(dropped) or 'no'}")
    if missing or any(codes.values()):
        print(f"  WARNING: missing {sorted(missing)[:5]}, codes {codes}")
    return [
        f"- **Resume after kill -9** (`{cmd(args, 'resume')}`; p2 of 3 killed a third of the way "
        f"through and started again with the same command): 'resuming the crawl from' "
        f"{t_resume - t_start:.2f} s after the process started, first request at the web "
        f"{first_any.t - t_start:.2f} s after (first page {first_page.t - t_start:.2f} s); it recovered "
        f"{queued} queued URLs and {forwards} to forward from a data_dir/state of {disk / 1024:.0f} KiB "
        f"({files} files); {len(twice)} URLs fetched twice in the whole run (at most the fetches in "
        f"flight at the kill: concurrency {args.concurrency}, here {in_flight_cap} hosts at 1 a host); "
        f"coverage {len(expected) - len(missing)}/{len(expected)}.",
    ]


# -- hand-off --------------------------------------------------------------------------


def bytes_per_seen_url(ring_name: str, urls: Sequence[str]) -> float:
    """Encoded bytes per URL of seen-only UrlBatches of ``urls``, ``BATCH`` a batch."""
    epoch = int(time.time() * 1000)  # a peer's epoch is its start time in ms
    total = 0
    for seq, i in enumerate(range(0, len(urls), BATCH)):
        total += len(encode(UrlBatch(ring_name, "p2", epoch, seq, (), tuple(urls[i:i + BATCH]))))
    return total / len(urls)


async def bench_handoff(args: argparse.Namespace, work: Path, graph: SiteGraph) -> list[str]:
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        expected = graph.expected_urls(farm.port)
        cluster = Cluster(work, cluster_text(work, args, farm.port, 3))
        ids = [p.id for p in cluster.cfg.peers]
        leave_cmd = [sys.executable, "-m", "ring", "leave", "--ring", str(cluster.toml), "--id", "p2",
                     "--timeout", str(args.timeout)]
        try:
            with trio.fail_after(args.timeout):
                for p in ids:
                    await cluster.start(p)
                await wait_pages(farm, len(expected) // 4, cluster)
                p4_port = free_ports(1)[0]
                t_join = await cluster.start("p4", "--address", f"tcp://127.0.0.1:{p4_port}",
                                             "--data-dir", str(work / "p4"))
                await wait_pages(farm, len(expected) // 2, cluster)
                t_leave = time.time()
                gone: dict[str, float] = {}

                async def p2_exit() -> None:
                    await cluster.procs["p2"].wait()
                    gone["p2"] = time.time()

                async with trio.open_nursery() as n:
                    n.start_soon(p2_exit)
                    left = await trio.run_process(leave_cmd, capture_stdout=True, capture_stderr=True,
                                                  check=False, cwd=str(ROOT))
                leave_wall = time.time() - t_leave
                await cluster.wait()
        except trio.TooSlowError:
            raise BenchError(f"handoff: the crawl did not end within {args.timeout:g}s\n"
                             f"{cluster.tails()}") from None
        finally:
            await cluster.close()
            nursery.cancel_scope.cancel()

    codes = {p: proc.returncode for p, proc in cluster.procs.items()}
    handoffs: list[tuple[float, str, int, float]] = []
    warnings: list[str] = []
    for p in cluster.procs:
        for t, _, _, msg in log_lines(cluster.stderr(p)):
            if m := HANDOFF.search(msg):
                handoffs.append((t, p, int(m[1]), float(m[2])))
            elif msg.startswith("hand-off: no ack") or msg.startswith("no hand-off from"):
                warnings.append(f"{p}: {msg}")
    handoffs.sort()
    # The web log's count of what each hand-off should carry: the URLs of the
    # hosts that moved from the sender, requested before its hand-off began
    # (a page done or in flight then is in the hand-off; robots.txt is not).
    ring3 = HashRing({p: 1.0 for p in ids}, vnodes=cluster.cfg.ring.vnodes)
    ring4 = HashRing({p: 1.0 for p in (*ids, "p4")}, vnodes=cluster.cfg.ring.vnodes)
    port = farm.port

    def web_count(sender: str, t_end: float, leave: bool) -> int:
        urls = set()
        for e in farm.log:
            if e.t >= t_end or e.method != "GET" or e.target == "/robots.txt":
                continue
            h = host_key(f"http://{e.host}:{port}/")
            if (ring4.owner(h) == sender) if leave else (ring3.owner(h) == sender and ring4.owner(h) == "p4"):
                urls.add((e.host, e.target))
        return len(urls)

    got = farm.fetched()
    twice = {u: n for u, n in got.items() if n > 1}
    missing = expected - set(got)
    urls = sorted(got)  # the run's real URLs
    bpu = bytes_per_seen_url(cluster.cfg.ring.name, urls)

    print(f"  p4 joined at {len(expected) // 4} pages; `ring leave --id p2` at {len(expected) // 2}: "
          f"exit {left.returncode} in {leave_wall:.2f}s wall ({left.stdout.decode().strip() or left.stderr.decode().strip()}); "
          f"p2 exited {gone.get('p2', math.nan) - t_leave:.2f}s after the leave began")
    for t, p, n, s in handoffs:
        leaving = t >= t_leave
        web = web_count(p, t - s, leaving)
        print(f"  hand-off by {p} ({'leave of p2' if leaving else 'join of p4'}, {t - t_join:+.1f}s from "
              f"the join): {n} fetched URLs, all acked in {s:.2f}s, ~{n * bpu / 1024:.1f} KiB of seen "
              f"batches; the web log has {web} URLs of the moved hosts requested by then")
    for w in warnings:
        print(f"  WARNING {w}")
    print(f"  bytes per handed-off URL: {bpu:.1f} (seen-only UrlBatch of {BATCH}, {len(urls)} real URLs, "
          f"mean URL length {sum(map(len, urls)) / len(urls):.1f})")
    print(f"  fetched twice: {len(twice)}; coverage {len(expected) - len(missing)}/{len(expected)}; "
          f"exit codes {codes}")
    if not handoffs:
        raise BenchError("handoff: no peer logged a hand-off line\n" + cluster.tails())
    join = [h for h in handoffs if h[0] < t_leave]
    leave = [h for h in handoffs if h[0] >= t_leave]

    def summary(hs: list[tuple[float, str, int, float]]) -> str:
        if not hs:
            return "none logged"
        return ", ".join(f"{p} {n} URLs in {s:.2f} s" for _, p, n, s in hs)

    return [
        f"- **Hand-off** (`{cmd(args, 'handoff')}`; p4 joins 3 peers a quarter of the way through, "
        f"`python -m ring leave --id p2` half way): join: {summary(join)}; leave: {summary(leave)}; "
        f"the leave command took {leave_wall:.2f} s wall (exit {left.returncode}); about {bpu:.0f} bytes "
        f"on the wire per handed-off URL (seen-only UrlBatch of {BATCH} of the run's URLs); "
        f"{len(twice)} pages fetched twice, coverage {len(expected) - len(missing)}/{len(expected)}.",
    ]


# -- command line ----------------------------------------------------------------------------


def cmd(args: argparse.Namespace, bench: str) -> str:
    """The command that reproduces one benchmark with this run's settings."""
    out = ["python scripts/bench_faults.py", f"--only {bench}"]
    if bench == "detect":
        out.append(f"--repeats {args.repeats}")
    for name, default in DEFAULTS.items():
        value = getattr(args, name)
        if value != default:
            out.append(f"--{name.replace('_', '-')} {value:g}")
    return " ".join(out)


DEFAULTS = {"hosts": 12, "pages": 60, "rate": 120.0, "concurrency": 8}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bench_faults.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example: .venv/bin/python scripts/bench_faults.py --only detect --repeats 5")
    p.add_argument("--only", action="append", choices=BENCHES,
                   help="run this benchmark (repeatable; default all three)")
    p.add_argument("--repeats", type=positive(int), default=3, help="kills of the detect benchmark (default 3)")
    p.add_argument("--hosts", type=positive(int), default=DEFAULTS["hosts"], help="hosts of the local web (default 12)")
    p.add_argument("--pages", type=positive(int), default=DEFAULTS["pages"], help="content pages a host (default 60)")
    p.add_argument("--rate", type=positive(float), default=DEFAULTS["rate"],
                   help="politeness.rate, pages/min a host (default 120)")
    p.add_argument("--concurrency", type=positive(int), default=DEFAULTS["concurrency"],
                   help="crawl.concurrency of each peer (default 8)")
    p.add_argument("--timeout", type=positive(float), default=300.0,
                   help="hard limit of each cluster run, s (default 300)")
    p.add_argument("--keep", action="store_true", help="keep the work directory (configs, peer logs, results)")
    return p


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


async def run(args: argparse.Namespace, work: Path) -> list[str]:
    graph = SiteGraph(hosts=args.hosts, pages_per_host=args.pages, shop=False)
    n = len(graph.expected_urls(8080))
    print(f"local web: {args.hosts} hosts x {args.pages} pages ({n} URLs), {args.rate:g} pages/min a host "
          f"(~{n / args.hosts / (args.rate / 60):.0f} s a host at that rate)", flush=True)
    out: list[str] = []
    for bench, fn in (("detect", bench_detect), ("resume", bench_resume), ("handoff", bench_handoff)):
        if bench in args.only:
            print(f"\n## {bench}: {cmd(args, bench)}", flush=True)
            out += await fn(args, work / bench, graph)
    return out


def _bench_error(exc: BaseException) -> BenchError | None:
    """The BenchError in ``exc``, which trio's nurseries wrap in exception groups."""
    if isinstance(exc, BenchError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for sub in exc.exceptions:
            if (found := _bench_error(sub)) is not None:
                return found
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.only = args.only or list(BENCHES)
    work = Path(tempfile.mkdtemp(prefix="bench-faults-"))
    load0 = loadavg()
    print(f"bench_faults: python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load0}; "
          f"work dir {work}", flush=True)
    ok = False
    try:
        lines = trio.run(run, args, work)
        ok = True
    except (BenchError, BaseExceptionGroup) as exc:
        err = _bench_error(exc)
        if err is None:
            raise
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; every peer was killed", file=sys.stderr)
        return 1
    finally:
        if args.keep or not ok:
            print(f"work dir kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    load1 = loadavg()
    print(f"\nload average before {load0}, after {load1}\n")
    print("```markdown")
    print(f"Fault handling, measured with `scripts/bench_faults.py` on {os.cpu_count()} cores "
          f"(load average {load0} before, {load1} after): peer processes crawl the local web "
          f"({args.hosts} hosts x {args.pages} pages, {args.rate:g} pages/min a host), judged by its request log.")
    print()
    for line in lines:
        print(line)
    print("```")
    return 0


if __name__ == "__main__":
    sys.exit(main())
