"""What one Prometheus scrape or status request costs the event loop, by hosts kept.

A scrape runs :func:`peer.engine.metrics.read_figures` on the trio thread (the
frontier's census, busiest hosts and delay quantiles are scans of the hosts it
keeps), then formats the text in the server's thread. This builds a real
Crawler with HOSTS hosts queued, half of them started in the last 5 s, and
prints the median time of each part.

    python scripts/bench_metrics.py [--hosts 1000,10000,100000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio
from prometheus_client import CollectorRegistry, generate_latest

from peer.core.config.cluster import parse_config
from peer.engine.crawler import Crawler
from peer.engine.metrics import PeerCollector, read_figures

REPEATS = 15

CONFIG = """
[[peer]]
id = "p1"
address = "tcp://127.0.0.1:1"
[crawl]
seeds = ["http://h0.bench.test/"]
allow_hosts = ["*.bench.test"]
[politeness]
rate = 60.0
"""


def median_ms(fn) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


async def one(hosts: int) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        cfg = parse_config(CONFIG, Path(tmp) / "cluster.toml")
        crawler = Crawler(cfg, "p1", data_dir=Path(tmp) / "p1")
        fr = crawler.peer.crawl.frontier
        now = trio.current_time()
        for i in range(hosts):
            for j in range(2):
                fr.push(f"http://h{i}.bench.test/{j}", f"h{i}.bench.test", 0, now)
        for _ in range(hosts // 2):
            job = fr.pop_ready(now)
            if job is None:
                break
            fr.done(job.host, now)
        started = time.monotonic()
        read = median_ms(lambda: read_figures(crawler, started))
        status = median_ms(crawler.status_figures)
        registry = CollectorRegistry(auto_describe=False)
        figures = read_figures(crawler, started)
        registry.register(PeerCollector(lambda: figures))
        text = median_ms(lambda: generate_latest(registry))
        return read, status, text


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hosts", default="1000,10000,100000",
                   help="comma-separated host counts (default 1000,10000,100000)")
    args = p.parse_args()
    try:
        sizes = [int(x) for x in args.hosts.split(",")]
    except ValueError:
        print("error: --hosts: expected comma-separated integers", file=sys.stderr)
        sys.exit(2)
    print(f"{'hosts':>8} {'read_figures ms':>16} {'status_figures ms':>18} {'exposition ms':>14}  "
          f"(median of {REPEATS})")
    for n in sizes:
        read, status, text = trio.run(one, n)
        print(f"{n:>8,} {read:>16.2f} {status:>18.2f} {text:>14.2f}")


if __name__ == "__main__":
    main()
