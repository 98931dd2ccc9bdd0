"""Measure the scalable Bloom filter past its capacity, against a fixed one.

    .venv/bin/python scripts/bench_bloom.py [--quick] [--capacity N] [--error-rate P]

Prints, at 1x, 2x, 5x and 10x the configured capacity, the measured
false-positive rate (fresh probes) and the bytes of bits per inserted URL of a
fixed filter (``max_capacity = capacity``: the filter before growth existed)
and of the growing one (growth 2 and 4); then add and lookup times with one
slice and with three. Timings are medians of several repeats within this one
run: compare them with each other, not with another machine. Nothing here
asserts a speed.
"""

from __future__ import annotations

import argparse
import logging
import sys

from localweb.bench import REPEATS, median_time
from peer.core.seen.bloom import BloomFilter



def urls(n: int, tag: str, start: int = 0) -> list[str]:
    return [f"http://s{i % 1000:04d}.web.test/{tag}/{i}.html?q={i * 7}" for i in range(start, start + n)]


def bench_rates(capacity: int, p: float, probes: list[str]) -> None:
    print(f"\n## False-positive rate past capacity ({capacity:,} URLs, p = {p:g}, "
          f"{len(probes):,} fresh probes; bound of the growing filter {2 * p:g})")
    print(f"{'inserted':>10}  {'fixed fpr':>9} {'B/URL':>6}   {'s=2 fpr':>9} {'B/URL':>6} {'slices':>6}"
          f"   {'s=4 fpr':>9} {'B/URL':>6} {'slices':>6}")
    variants = {
        "fixed": BloomFilter(capacity, p, max_capacity=capacity),
        "s2": BloomFilter(capacity, p, growth=2),
        "s4": BloomFilter(capacity, p, growth=4),
    }
    done = 0
    for times in (1, 2, 5, 10):
        batch = urls(times * capacity - done, "page", done)
        done = times * capacity
        row = [f"{done:>10,}"]
        for name, bf in variants.items():
            bf.add_many(batch)
            fpr = sum(bf.contains_many(probes)) / len(probes)
            cell = f"{fpr:9.4f} {bf.nbytes / done:6.2f}"
            row.append(cell if name == "fixed" else f"{cell} {bf.num_slices:>6}")
        print("  ".join(row))


def bench_speed(capacity: int, p: float) -> None:
    print(f"\n## add and lookup, µs per URL (capacity {capacity:,}, p = {p:g}, growth 2)")
    print(f"{'slices':>6}  {'add':>6} {'add_many':>8}  {'in (absent)':>11} {'in (present)':>12} "
          f"{'contains_many':>13}")
    # Keys timed per repeat; each repeat adds fresh ones so adds stay adds.
    n = capacity // (2 * REPEATS)
    for slices, prefill in ((1, capacity // 4), (3, 3 * capacity + capacity // 4)):
        def filled() -> BloomFilter:
            bf = BloomFilter(capacity, p)
            bf.add_many(urls(prefill, "pre"))
            return bf

        bf = filled()
        assert bf.num_slices == slices
        fresh = iter([urls(n, f"one{r}") for r in range(REPEATS)])
        add1 = median_time(lambda: [bf.add(u) for u in next(fresh)]) / n
        bf = filled()
        fresh = iter([urls(n, f"many{r}") for r in range(REPEATS)])
        addn = median_time(lambda: bf.add_many(next(fresh))) / n
        assert bf.num_slices == slices, "a timed add grew the filter; use a bigger --capacity"
        absent = urls(n, "absent")
        present = urls(n, "pre", prefill - n)
        miss = median_time(lambda: [u in bf for u in absent]) / n
        hit = median_time(lambda: [u in bf for u in present]) / n
        many = median_time(lambda: bf.contains_many(absent)) / n
        print(f"{slices:>6}  {add1 * 1e6:6.2f} {addn * 1e6:8.2f}  {miss * 1e6:11.2f} {hit * 1e6:12.2f} "
              f"{many * 1e6:13.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="10x smaller inputs, for a smoke run")
    ap.add_argument("--capacity", type=int, default=100_000, help="configured capacity (default 100000)")
    ap.add_argument("--error-rate", type=float, default=0.01, help="configured error rate (default 0.01)")
    args = ap.parse_args(argv)
    if args.capacity < 1_000 or not 0 < args.error_rate < 0.5:
        ap.error("--capacity must be >= 1000 and --error-rate in (0, 0.5)")
    capacity = args.capacity // 10 if args.quick else args.capacity
    logging.disable(logging.WARNING)  # one growth warning per slice is not a figure
    print(f"ringcrawl Bloom filter benchmark (python {sys.version.split()[0]}, median of {REPEATS})")
    bench_rates(capacity, args.error_rate, urls(2 * capacity, "probe"))
    bench_speed(capacity, args.error_rate)
    return 0


if __name__ == "__main__":
    sys.exit(main())
