"""What a live settings change costs the event loop, by hosts kept (``PeerCore.adopt_settings``).

Builds a peer's core with HOSTS hosts queued (rate 60 a minute), then times:
a change of ``politeness.rate`` (the call itself: profiles marked, no host
touched), the chunks the scheduling loop then paces the hosts anew in
(``REPACE_CHUNK`` a step: the longest step, and all of them), and a change of
``crawl.rules`` (no host repaced). Pure core, no network: what the numbers
say is the loop's time, which a gossip round waits behind.

``--crawl``: one peer crawls the hostile web's normal site in this process at
600 pages a minute, and after 40 requests its rate is set to 120; the spacing
of its requests before and after the change, from the server's log.

    python scripts/bench_livesettings.py [--hosts 10000,100000] [--crawl]
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path
from typing import Any

from peer.core.config.cluster import parse_config
from peer.core.config.livekeys import assign
from peer.core.crawl.core import REPACE_CHUNK, CrawlCore
from peer.core.crawl.decisions import Origin
from peer.core.door.peer import PeerCore

CONFIG = """
[[peer]]
id = "p1"
address = "tcp://127.0.0.1:1"
[crawl]
seeds = ["http://h0.bench.test/"]
allow_hosts = ["*.bench.test"]
obey_robots = false
max_urls_per_host = 0
[politeness]
rate = 60.0
[bloom]
capacity = 2000000
"""


def bench(hosts: int) -> str:
    core = PeerCore(CrawlCore(parse_config(CONFIG, Path("/nonexistent/cluster.toml")), "p1",
                              rng=random.Random(1)))
    for i in range(hosts):
        core.discover(f"http://h{i}.bench.test/", 1, 0.0, Origin.LINK)
    fr = core.crawl.frontier
    doc = assign(core.settings, ["politeness.rate=30"])
    t = time.perf_counter()
    core.adopt_settings(doc, 1.0)
    change = time.perf_counter() - t
    steps: list[float] = []
    while fr.stale:
        t = time.perf_counter()
        fr.refresh(1.0, REPACE_CHUNK)
        steps.append(time.perf_counter() - t)
    doc = assign(core.settings, ['crawl.rules=["exclude:*/private/*"]'])
    t = time.perf_counter()
    core.adopt_settings(doc, 1.0)
    rules = time.perf_counter() - t
    return (f"{hosts:>9,} hosts: rate change {change * 1e3:.1f} ms, then {len(steps)} chunks of "
            f"{REPACE_CHUNK}: longest {max(steps, default=0) * 1e3:.1f} ms, all {sum(steps) * 1e3:.0f} ms "
            f"({sum(steps) / max(hosts, 1) * 1e6:.1f} us a host); rules change {rules * 1e3:.1f} ms")


def crawl() -> str:
    import statistics
    import tempfile

    from localweb import HostileWeb, serve_in_thread
    from localweb.hostile.site import Site
    from localweb.processes.peerrun import cluster_toml, run_in_process

    web = HostileWeb(site=Site(pages=120))
    changed: list[float] = []

    def steer(crawler: Any) -> None:
        if not changed and sum(1 for e in list(web.log) if e.target != "/robots.txt") >= 40:
            changed.append(time.time())
            crawler.adopt_settings(assign(crawler.peer.settings, ["politeness.rate=120", "politeness.max_delay=5"]))

    with tempfile.TemporaryDirectory() as d, serve_in_thread(web):
        toml = cluster_toml(Path(d), [web.url("site.test", "/")], sections={"politeness": {"rate": 600.0, "window": 60.0}})
        run = run_in_process(toml, timeout=60.0, poll=0.01, during=steer)
    pages = [e.t for e in web.log if e.target != "/robots.txt"]
    t0 = changed[0]
    before = [b - a for a, b in zip(pages, pages[1:]) if b < t0]
    after = [b - a for a, b in zip(pages, pages[1:]) if a >= t0]
    across = min(t for t in pages if t >= t0) - max(t for t in pages if t < t0)
    return (f"exit {run.codes}, {len(pages)} requests: before the change a median gap of "
            f"{statistics.median(before):.3f} s ({len(before)} gaps), after {statistics.median(after):.3f} s "
            f"(min {min(after):.3f} s, {len(after)} gaps); the gap across the change {across:.3f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", default="10000,100000", help="comma-separated host counts")
    ap.add_argument("--crawl", action="store_true", help="also a crawl whose rate changes (the server's log)")
    args = ap.parse_args()
    for n in (int(x) for x in args.hosts.split(",") if x):
        print(bench(n), flush=True)
    if args.crawl:
        print(crawl(), flush=True)


if __name__ == "__main__":
    main()
