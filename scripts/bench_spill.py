"""The frontier in RAM against the frontier with a spill store, side by side.

For N queued URLs over H hosts (each mode in its own process, so RSS is
its own):

* ``ram``    : today's frontier, every URL in RAM;
* ``spill``  : heads of ``--head`` URLs a host in RAM, the rest in segment
               files (peer/state/spill.py);
* ``sqlite`` : the embedded-store alternative, the same per-host FIFO as a
               SQLite table (host, seq) -> (url, depth) WITHOUT ROWID, a
               transaction per 64-URL block, popped by select + delete.

Printed: push and pop rates (pop = pop_ready + done, URLs generated in the
loop for every mode alike), RSS growth per queued URL, and for ``spill`` the
checkpoint (the loop's part and the worker thread's) and recovery of a state
with a journal's worth of work since the checkpoint.

    scripts/bench_spill.py                 # N = 1 M and 5 M, 100 hosts
    scripts/bench_spill.py --n 200000 --modes ram,spill
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def url_of(i: int, hosts: int) -> tuple[str, str]:
    host = f"h{i % hosts:03d}.example.test"
    # ~90 characters, near the measured 119 B per URL string.
    return f"http://{host}/section/{i % 997}/article-{i}-words-of-a-title.html", host


def child(mode: str, n: int, hosts: int, head: int, tmp: str) -> dict:
    import gc

    from peer.core.frontier.frontier import Frontier, Politeness

    gc.disable()  # as in a long crawl's steady state: no cyclic GC pass inside a timed loop
    pol = Politeness(rate=0)
    out: dict = {"mode": mode, "n": n}
    import sqlite3

    from peer.core.seen.bloom import BloomFilter
    from peer.state.journal import PeerState

    if mode == "sqlite":
        base = rss()
        t0 = time.perf_counter()

        con = sqlite3.connect(os.path.join(tmp, "q.db"), isolation_level=None)
        con.execute("pragma journal_mode=wal")
        con.execute("pragma synchronous=normal")
        con.execute("create table q (host int, seq int, url text, depth int, primary key (host, seq)) "
                    "without rowid")
        pending: dict[int, list] = {}
        seqs = [0] * hosts
        for i in range(n):
            u, _ = url_of(i, hosts)
            h = i % hosts
            b = pending.setdefault(h, [])
            b.append((h, seqs[h], u, 1))
            seqs[h] += 1
            if len(b) == 64:
                con.execute("begin")
                con.executemany("insert into q values (?, ?, ?, ?)", b)
                con.execute("commit")
                b.clear()
        con.execute("begin")
        for b in pending.values():
            con.executemany("insert into q values (?, ?, ?, ?)", b)
        con.execute("commit")
        out["push_s"] = time.perf_counter() - t0
        out["rss_per_url"] = (rss() - base) / n
        t0 = time.perf_counter()
        got = 0
        firsts = [0] * hosts
        while True:
            round_got = 0
            for h in range(hosts):
                rows = con.execute("select url, depth from q where host = ? and seq >= ? order by seq "
                                   "limit 64", (h, firsts[h])).fetchall()
                if rows:
                    con.execute("begin")
                    con.execute("delete from q where host = ? and seq < ?", (h, firsts[h] + len(rows)))
                    con.execute("commit")
                    firsts[h] += len(rows)
                    round_got += len(rows)
            got += round_got
            if not round_got:
                break
        out["popped"] = got
        out["pop_s"] = time.perf_counter() - t0
        return out
    spill = None
    if mode == "spill":
        state = PeerState(Path(tmp) / "state", "p1", "bench", spill_block=head)
        state.recover()
        spill = state.open_spill()
        f = Frontier(pol, spill=spill, head_per_host=head)
    else:
        f = Frontier(pol)
    base = rss()
    t0 = time.perf_counter()
    push = f.push
    for i in range(n):
        u, h = url_of(i, hosts)
        push(u, h, 1, 0.0)
    out["push_s"] = time.perf_counter() - t0
    out["rss_per_url"] = (rss() - base) / n
    t0 = time.perf_counter()
    for i in range(n):
        url_of(i, hosts)
    out["gen_s"] = time.perf_counter() - t0
    if spill is not None:
        out["disk_per_url"] = spill.stats().disk_bytes / n
        bloom = BloomFilter(max(n, 1000), 0.001)
        t0 = time.perf_counter()
        f.flush_tails()
        heads = [(j.url, j.depth) for j in f.iter_heads()]
        m = spill.checkpoint()
        out["checkpoint_loop_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        state.begin(bloom, heads, [], {}, m)  # what write_snapshot does in the worker thread
        spill.release(m)
        out["checkpoint_thread_s"] = time.perf_counter() - t0
        out["snapshot_bytes"] = os.path.getsize(Path(tmp) / "state" / "snapshot-1.msgpack")
        # A journal's worth of work after it: 100,000 pages done, 200,000 URLs queued.
        for _ in range(100_000):
            job = f.pop_ready(0.0)
            f.done(job.host, 0.0)
            state.done(job.url, None)
        for i in range(n, n + 200_000):
            u, h = url_of(i, hosts)
            f.push(u, h, 1, 0.0)
            state.queued(u, 1)
        state.commit()
        # kill -9 here: recover as a restarted peer would, and adopt the store.
        t0 = time.perf_counter()
        again = PeerState(Path(tmp) / "state", "p1", "bench", spill_block=head)
        rec = again.recover()
        assert rec is not None and rec.spill is not None
        g = Frontier(pol, spill=rec.spill, head_per_host=head)
        for host in rec.spill.hosts():
            g.adopt(host, 0.0)
        for u, d in rec.queued.items():
            g.push(u, u.split("/")[2], d, 0.0)
        out["recover_s"] = time.perf_counter() - t0
        out["recovered"] = len(g)
        out["recovered_expected"] = n + 200_000 - 100_000
        out["blocks_read"] = rec.blocks_read
        out["disk_bytes"] = rec.spill.stats().disk_bytes
        f = g
    t0 = time.perf_counter()
    pop, done = f.pop_ready, f.done
    k = 0
    while (job := pop(0.0)) is not None:
        done(job.host, 0.0)
        k += 1
    out["pop_s"] = time.perf_counter() - t0
    out["popped"] = k
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, action="append", help="queued URLs (repeatable; default 1 M and 5 M)")
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--head", type=int, default=64)
    ap.add_argument("--modes", default="ram,spill,sqlite")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    ns = a.n or [1_000_000, 5_000_000]
    if a.child:
        import shutil

        tmp = tempfile.mkdtemp(prefix="bench-spill-")
        try:
            print(json.dumps(child(a.child, ns[0], a.hosts, a.head, tmp)))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    print(f"{'mode':7} {'queued':>9} {'push/s':>10} {'pop/s':>10} {'RSS B/URL':>10}  extra")
    for n in ns:
        for mode in a.modes.split(","):
            if mode == "sqlite" and n > 1_000_000:
                continue  # minutes at 5 M; the 1 M row says enough
            r = subprocess.run([sys.executable, __file__, "--child", mode, "--n", str(n),
                                "--hosts", str(a.hosts), "--head", str(a.head)],
                               capture_output=True, text=True, timeout=1200, env=os.environ)
            if r.returncode:
                print(f"{mode:7} {n:>9,} failed: {r.stderr.strip().splitlines()[-1:]}")
                continue
            o = json.loads(r.stdout)
            extra = ""
            if mode == "spill":
                extra = (f"checkpoint loop {o['checkpoint_loop_s'] * 1e3:.0f} ms, thread "
                         f"{o['checkpoint_thread_s'] * 1e3:.0f} ms, snapshot {o['snapshot_bytes'] / 1e6:.2f} MB; "
                         f"recovery {o['recover_s']:.2f} s "
                         f"({o['recovered']:,} queued, {o['recovered_expected']:,} expected, "
                         f"{o['blocks_read']} blocks read); disk {o['disk_per_url']:.0f} B/URL")
            elif "gen_s" in o:
                extra = f"(URL generation alone: {n / o['gen_s']:,.0f}/s)"
            print(f"{mode:7} {n:>9,} {n / o['push_s']:>10,.0f} {o.get('popped', n) / o['pop_s']:>10,.0f} "
                  f"{o['rss_per_url']:>10.1f}  {extra}", flush=True)


if __name__ == "__main__":
    main()
