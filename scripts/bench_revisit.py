"""What revisiting costs: the due queue's memory and time by size, and the simulated host's visit ratio.

Due queue (peer/core/revisit/duequeue.py), at each size (10k, 100k, 1M records by
default, over one host per 100 URLs): the bytes a record costs, split into
the record itself (a frozen ``RevisitState`` with its URL, digest, ETag and
Last-Modified strings, each distinct, as on the web) and the queue's own
overhead (its dict slot and heap tuple); the time to schedule a record; and
one revisit cycle a record: time advanced in 100 steps over the whole
spread of due times, every host's due records popped and scheduled again
one interval later (what the engine does between visits). Then the same
figures extrapolated to 10M records.

Simulated host (localweb/sims/changes.py): pages that change every 5 s and
pages that never do, behind a pace of one start a second, and the ratio of
their mean visits.

Peak RSS (``--rss``): each size in a process of its own, all in RAM
(``memory_window = 0``, as before the far tier) and with the far tier
(``--window`` seconds, records in the frontier's segment files in a temporary
directory): the process's peak RSS, the time to schedule every record, and
one revisit cycle as above (each record popped when due and scheduled again a
day on, so back to disk).

    scripts/bench_revisit.py
    scripts/bench_revisit.py --sizes 10000,100000
    scripts/bench_revisit.py --rss --sizes 1000000,10000000
"""

from __future__ import annotations

import argparse
import gc
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path


from localweb.sims.changes import SimSpec, simulate
from localweb.judges.politeness import ceiling, worst
from peer.core.revisit.duequeue import DueQueue
from peer.core.revisit.hostmix import Kind
from peer.core.revisit.policy import RevisitState

SPREAD = 86400.0   # due times spread over one day
URLS_PER_HOST = 100


def _records(n: int) -> list[RevisitState]:
    out = []
    for i in range(n):
        host = f"host{i // URLS_PER_HOST}.example.com"
        out.append(RevisitState(
            url=f"http://{host}/section/{i % 97}/page-{i}.html", host=host,
            due=(i * 7919 % n + 0.5) * SPREAD / n, interval=SPREAD, last_visit=0.0,
            digest=f"sha1:{i:032X}", etag=f'"{i:016x}"',
            last_modified=f"Wed, 21 Oct 2015 07:{i % 60:02d}:{i // 60 % 60:02d} GMT", visits=1))
    return out


def _iter_records(n: int) -> Iterator[RevisitState]:
    for i in range(n):
        host = f"host{i // URLS_PER_HOST}.example.com"
        yield RevisitState(
            url=f"http://{host}/section/{i % 97}/page-{i}.html", host=host,
            due=(i * 7919 % n + 0.5) * SPREAD / n, interval=SPREAD, last_visit=0.0,
            digest=f"sha1:{i:032X}", etag=f'"{i:016x}"',
            last_modified=f"Wed, 21 Oct 2015 07:{i % 60:02d}:{i // 60 % 60:02d} GMT", visits=1)


def _child(n: int, window: float) -> None:
    """One size, one mode, in this process: prints "rss_mib schedule_s cycle_s far disk_mib"."""
    from peer.state.spill import FileSpill

    with tempfile.TemporaryDirectory(prefix="bench-revisit-") as tmp:
        q = DueQueue(now=0.0)
        store = None
        if window > 0:
            store = FileSpill.open(Path(tmp) / "revisits", None)
            q.attach_far(store, window, 0.0)
        t0 = time.perf_counter()
        for s in _iter_records(n):
            q.schedule(s)
        q.flush_far()
        schedule_s = time.perf_counter() - t0
        far = q.far
        t0 = time.perf_counter()
        cycled = 0
        for step in range(1, 101):
            now = step * SPREAD / 100
            for host in q.advance(now):
                while (r := q.pop(host)) is not None:
                    q.schedule(RevisitState(r.url, r.host, r.due + SPREAD, r.interval, now, r.digest, r.etag,
                                            r.last_modified, r.visits + 1, r.changes))
                    cycled += 1
        cycle_s = time.perf_counter() - t0
        assert cycled == n and len(q) == n, (cycled, len(q))
        disk = 0 if store is None else store.stats().disk_bytes
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{rss:.0f} {schedule_s:.1f} {cycle_s:.1f} {far} {disk / 2**20:.0f}")


def _rss(sizes: list[int], window: float) -> None:
    print(f"peak RSS by size, each run in a process of its own (window {window:g} s, due times over a day)")
    print(f"{'records':>11} {'mode':>14} {'peak RSS MiB':>13} {'schedule s':>11} {'cycle s':>8} "
          f"{'on disk':>11} {'disk MiB':>9}")
    for n in sizes:
        for w in (0.0, window):
            out = subprocess.run([sys.executable, __file__, "--child", str(n), str(w)],
                                 capture_output=True, text=True, check=True).stdout.split()
            rss, sched, cycle, far, disk = out
            mode = "all in RAM" if w == 0 else f"far on disk"
            print(f"{n:>11,} {mode:>14} {float(rss):>13,.0f} {float(sched):>11.1f} {float(cycle):>8.1f} "
                  f"{int(far):>11,} {float(disk):>9,.0f}", flush=True)


def _memory(n: int) -> tuple[float, float]:
    """(bytes a record, bytes of queue overhead a record)."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    recs = _records(n)
    made = tracemalloc.get_traced_memory()[0]
    q = DueQueue(now=0.0)
    for s in recs:
        q.schedule(s)
    queued = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del q, recs
    return (made - base) / n, (queued - made) / n


def _times(n: int) -> tuple[float, float, float]:
    """(µs to schedule a record, µs a revisit cycle a record, ms to export one host)."""
    recs = _records(n)
    q = DueQueue(now=0.0)
    t0 = time.perf_counter()
    for s in recs:
        q.schedule(s)
    schedule_us = (time.perf_counter() - t0) / n * 1e6
    hosts = sorted({s.host for s in recs})
    del recs
    t0 = time.perf_counter()
    cycled = 0
    for step in range(1, 101):
        now = step * SPREAD / 100
        # Every host is emptied of due records at each step, so the hosts
        # advance() wakes are all that have any (the driver's own set).
        for host in q.advance(now):
            while (r := q.pop(host)) is not None:
                q.schedule(RevisitState(r.url, r.host, r.due + SPREAD, r.interval, now, r.digest, r.etag,
                                        r.last_modified, r.visits + 1, r.changes))
                cycled += 1
    cycle_us = (time.perf_counter() - t0) / max(cycled, 1) * 1e6
    assert cycled == n and len(q) == n, (cycled, len(q))
    t0 = time.perf_counter()
    moved = q.export_host(hosts[len(hosts) // 2])
    export_ms = (time.perf_counter() - t0) * 1e3
    assert len(moved) == min(URLS_PER_HOST, n)
    return schedule_us, cycle_us, export_ms


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated record counts")
    ap.add_argument("--rss", action="store_true", help="peak RSS and times, all in RAM and with the far tier")
    ap.add_argument("--window", type=float, default=3600.0, help="the far tier's window in seconds (--rss)")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(int(args.child[0]), float(args.child[1]))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.rss:
        _rss(sizes, args.window)
        return
    print("due queue: records over one host per 100 URLs, due times spread over a day")
    print(f"{'records':>9} {'B/record':>9} {'B/queue':>8} {'schedule µs':>12} {'cycle µs':>9} {'export ms':>10}")
    per = over = 0.0
    for n in sizes:
        per, over = _memory(n)
        sched, cycle, export = _times(n)
        print(f"{n:>9,} {per:>9.0f} {over:>8.0f} {sched:>12.2f} {cycle:>9.2f} {export:>10.3f}")
    if sizes:
        total = (per + over) * 10_000_000 / 2**30
        print(f"10M records at the last size's figures: {total:.1f} GiB "
              f"({per * 1e7 / 2**30:.1f} GiB records, {over * 1e7 / 2**30:.1f} GiB queue)")

    spec = SimSpec()
    t0 = time.perf_counter()
    res = simulate(spec)
    wall = time.perf_counter() - t0
    fast, static = res.mean_visits("/fast/"), res.mean_visits("/static/")
    starts = [r.start for r in res.requests]
    print(f"\nsimulated host: {spec.fast_pages} pages changing every {spec.fast_period:g} s, "
          f"{spec.static_pages} never changing, {spec.new_pages} new URLs, one start every "
          f"{spec.delay:g} s for {spec.duration:g} s ({wall * 1e3:.0f} ms)")
    print(f"  mean visits: changing {fast:.1f}, unchanging {static:.1f}, ratio {fast / static:.1f}")
    print(f"  starts: {len(starts)} ({res.kinds.get(Kind.NEW, 0)} new, {res.kinds.get(Kind.REVISIT, 0)} revisits); "
          f"visits by outcome: " + ", ".join(f"{c.value} {k}" for c, k in sorted(
              res.changes.items(), key=lambda kv: kv[0].value)))
    per_s = 1 / spec.delay
    print(f"  most starts in any 1 s: {worst(starts, 1.0)} (ceiling {ceiling(per_s, 1.0)}), "
          f"in any 5 s: {worst(starts, 5.0)} (ceiling {ceiling(per_s, 5.0)}); most overdue at once: "
          f"{res.overdue_max}")


if __name__ == "__main__":
    main()
