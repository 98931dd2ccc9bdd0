"""The exact seen set: RAM and disk per URL, checks/s, and the Bloom filter's measured false positives.

Usage: python scripts/bench_seen.py [--sizes 1e6,1e7] [--bloom 1e6] [--batch 4096]
       [--ram 4e6] [--handoff-rows 1e6] [--dir DIR]

For each size N it runs the crawl core's seen path without the crawl: URLs
go through a Bloom filter of ``--bloom`` capacity (fixed, error rate 0.001,
so past it its false-positive rate climbs, the case the sieve is for), new
ones into peer.core.seen.sieve.SeenSieve and peer.state.sievefile.SieveFiles on disk, every
"maybe seen" into a sieve batch. Each batch of discoveries is 2/3 new URLs
and 1/3 repeats of earlier ones (a crawl rediscovers most links). It
prints the Bloom filter's false-positive rate measured by the sieve, URLs
lost (must be 0), RAM and disk per URL, inserts/s and sieve checks/s.

``--handoff-rows`` builds a results file of that many rows over 1,000
hosts and times the hand-off's seen-URL read before (every row) and after
(the moved hosts' rows, found by the store's host index), for a ring of 8
peers gaining a 9th.
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from peer.core.seen.bloom import BloomFilter
from peer.core.seen.sieve import SeenSieve
from peer.state.sievefile import SieveFiles


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_size(n: int, bloom_capacity: int, batch: int, ram: int, directory: Path) -> None:
    shutil.rmtree(directory, ignore_errors=True)
    bloom = BloomFilter(bloom_capacity, 0.001, max_capacity=bloom_capacity)
    sieve = SeenSieve(disk_after=0, batch=batch, max_wait=1.0)
    files = SieveFiles(directory, ram_hashes=ram)
    files.open()
    rng = random.Random(n)
    made = 0
    dup_checks = 0
    t_apply = 0.0
    checks_applied = 0
    t0 = time.perf_counter()
    c0 = time.process_time()

    def flush() -> None:
        nonlocal t_apply, checks_applied
        b = sieve.take(0.0)
        if b is None:
            return
        t = time.process_time()
        new = files.apply(b)
        t_apply += time.process_time() - t
        checks_applied += len(b.pending)
        for p in sieve.verdicts(b, new, 0.0):
            sieve.add(p.url, 0.0)  # as CrawlCore does once the URL is journaled

    step = 3 * 1024
    while made < n:
        urls = [f"http://h{made + i & 1023}.example/p/{made + i}" for i in range(min(2 * step // 3, n - made))]
        made += len(urls)
        # Repeats of earlier URLs (present for sure): true duplicates.
        repeats = [f"http://h{j & 1023}.example/p/{j}" for j in (rng.randrange(made) for _ in range(len(urls) // 2))]
        for url, is_new in zip(urls, bloom.add_many(urls)):
            if is_new:
                sieve.add(url, 0.0, direct=True)
            else:
                sieve.check(url, "h", 0, 0, 0.0)
        for url in repeats:
            # Always a "maybe" (the filter has no false negatives): waits for the sieve.
            dup_checks += 1
            sieve.check(url, "h", 0, 0, 0.0)
        if sieve.due_at() == 0.0 or sieve.pending >= batch:
            flush()
    flush()
    flush()
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() - c0
    st, fs = sieve.stats(), files.stats()
    # Every new URL is counted once, passed by the Bloom filter or found new by the sieve:
    # fewer is a URL lost as seen, more a repeat called new.
    missing = n - st.new_direct - st.false_positives
    print(f"N = {n:,} URLs (Bloom filter {bloom_capacity:,}, fixed, error_rate 0.001; batch {batch}; "
          f"sieve_ram {ram:,})")
    print(f"  Bloom 'maybe' on new URLs, measured by the sieve: {st.false_positives:,} = "
          f"{st.measured_fpr:.3%} (the filter's own estimate {bloom.estimated_fpr():.3%}); "
          f"new URLs lost: {max(missing, 0):,}; repeats called new: {max(-missing, 0):,} "
          f"(of {dup_checks:,} repeats)")
    print(f"  RAM: Bloom {bloom.nbytes / n:.2f} B/URL + sieve runs in RAM {fs.ram_bytes / n:.2f} B/URL "
          f"({fs.ram_runs} runs); peak RSS {rss_mib():,.0f} MiB")
    print(f"  disk: {fs.disk_bytes / n:.2f} B/URL in {fs.disk_runs} run files ({fs.disk_bytes / 2**20:,.1f} MiB)")
    # CPU seconds, not wall time: the box is shared, and wall time measures the neighbours.
    print(f"  {n / cpu:,.0f} URLs/s per CPU second through Bloom + sieve ({cpu:.1f} CPU s, "
          f"{elapsed:.1f} s wall); sieve passes {st.passes:,}: "
          f"{checks_applied / t_apply if t_apply else 0:,.0f} checks/s per CPU second in apply "
          f"(inserts and merges included: {t_apply:.1f} CPU s)")
    # Checks against the full set, alone: 100k present and 100k absent, one sorted batch.
    import numpy as np

    from peer.core.seen.sieve import url_hash
    probe = [f"http://h{j & 1023}.example/p/{j}" for j in (rng.randrange(n) for _ in range(100_000))]
    probe += [f"http://h{j & 1023}.example/q/{j}" for j in range(100_000)]
    h = np.array([url_hash(u) for u in probe], dtype=np.uint64)
    t = time.process_time()
    found = files.contains(h)
    dt = time.process_time() - t
    assert found[:100_000].all() and not found[100_000:].any()
    print(f"  a batch of 200,000 checks against the whole set: {len(h) / dt:,.0f} checks/s "
          f"({fs.disk_runs} disk runs probed)")
    files.close()
    shutil.rmtree(directory, ignore_errors=True)


def run_handoff(rows: int, directory: Path) -> None:
    import duckdb

    from peer.core.run.layout import DataDir
    from peer.results.store import ResultStore
    from ring.hashring import HashRing

    directory.mkdir(parents=True, exist_ok=True)
    path = DataDir(directory).results
    path.unlink(missing_ok=True)
    store = ResultStore(path, "p0", store_links=False, store_body=False)
    store._open()  # the sync halves: the benchmark needs no event loop
    con = store._con
    assert isinstance(con, duckdb.DuckDBPyConnection)
    con.execute(f"""INSERT INTO pages SELECT 'http://h' || (i % 1000) || '.example/p/' || i,
        'http://h' || (i % 1000) || '.example/p/' || i, 'h' || (i % 1000) || '.example', 200,
        'text/html', 1000, NULL, 10, 1, now()::TIMESTAMP, 5.0, NULL, 'p0', NULL, NULL, NULL
        FROM range({rows}) t(i)""")
    store._close()
    t = time.perf_counter()
    store._open()
    t_open = time.perf_counter() - t
    old = HashRing({f"p{i}": 1.0 for i in range(8)})
    new = HashRing({f"p{i}": 1.0 for i in range(9)})
    t = time.perf_counter()
    moves: dict[str, bool] = {}  # per host, as Handoffs.handoff_seen caches it (peer.core.handoff.moves)

    def moving(h: str) -> bool:
        got = moves.get(h)
        if got is None:
            got = moves[h] = new.owner(h) != "p0" and old.owner(h) != new.owner(h)
        return got

    before = [(u, h) for u, h in store._page_urls() if moving(h)]
    t_before = time.perf_counter() - t
    t = time.perf_counter()
    moved = [h for h in store.hosts() if new.owner(h) != "p0" and old.owner(h) != new.owner(h)]
    after = store._page_urls(moved)
    t_after = time.perf_counter() - t
    assert sorted(before) == sorted(after)
    print(f"hand-off seen URLs at {rows:,} rows over 1,000 hosts, 8 -> 9 peers ({len(moved)} hosts, "
          f"{len(after):,} URLs move): every row {t_before:.2f} s; host index + moved rows "
          f"{t_after:.2f} s (index built at open: {t_open:.2f} s)")
    store._close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e6,1e7")
    ap.add_argument("--bloom", type=float, default=1e6)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--ram", type=float, default=4e6)
    ap.add_argument("--handoff-rows", type=float, default=1e6)
    ap.add_argument("--dir", default="")
    args = ap.parse_args()
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench_seen."))
    try:
        for size in args.sizes.split(","):
            if size:
                run_size(int(float(size)), int(args.bloom), args.batch, int(args.ram), base / "seen")
        if args.handoff_rows:
            run_handoff(int(args.handoff_rows), base)
    finally:
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
