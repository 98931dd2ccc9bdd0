"""Crawl-engine benchmark: one peer against the local test web, politeness off.

    .venv/bin/python scripts/bench.py [--hosts 40] [--pages 300] [--concurrency 64] [--no-scrapy]

The local web runs in its own process, so the figures are the crawler's own:
pages/s, CPU seconds per page and peak RSS of the crawler process (from
``os.wait4``). When Scrapy is installed (``pip install -e '.[bench]'``), the
same graph is crawled in the same run by a Scrapy CrawlSpider with a
LinkExtractor, the same scope, robots.txt obeyed and the same concurrency,
and the ratios are printed. Only loopback traffic; every run is bounded in
time (``--time-limit``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Run:
    name: str
    pages: int
    wall: float
    cpu: float
    max_rss_mb: float

    def line(self) -> str:
        return (f"{self.name:<10} {self.pages:>7} pages {self.wall:7.1f} s  {self.pages / self.wall:8.1f} pages/s  "
                f"{self.cpu / max(self.pages, 1) * 1000:6.2f} ms CPU/page  "
                f"{self.pages / max(self.cpu, 1e-9):8.1f} pages/CPU-s  peak RSS {self.max_rss_mb:6.0f} MB")


def start_farm(hosts: int, pages: int, log: Path) -> tuple[subprocess.Popen, int]:
    farm = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts" / "webfarm.py"), "--port", "0", "--hosts", str(hosts),
         "--pages", str(pages), "--no-shop", "--log", str(log)],
        stdout=subprocess.PIPE, text=True,
    )
    line = farm.stdout.readline()  # "listening on 127.0.0.1:PORT"
    if not line.startswith("listening on"):
        farm.kill()
        raise SystemExit(f"the local web did not start: {line!r}")
    return farm, int(line.rsplit(":", 1)[1])


def run_child(name: str, argv: list[str], time_limit: float, count_pages) -> Run:
    t = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = t + time_limit
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            child.send_signal(signal.SIGINT)
            pid, status, usage = os.wait4(child.pid, 0)
            print(f"  {name}: stopped at the time limit ({time_limit:.0f} s)")
            break
        time.sleep(0.05)
    wall = time.perf_counter() - t
    err = child.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        print(f"  {name} exited {os.waitstatus_to_exitcode(status)}:\n{err[-2000:]}")
    return Run(name, count_pages(), wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def ringcrawl_config(path: Path, port: int, concurrency: int, data: Path) -> None:
    path.write_text(textwrap.dedent(f"""
        [ring]
        name = "bench"
        [[peer]]
        id = "p1"
        address = "tcp://127.0.0.1:5790"
        data_dir = "{data}"
        [crawl]
        seeds = ["http://s001.web.test:{port}/"]
        allow_hosts = ["*.web.test"]
        concurrency = {concurrency}
        allow_private = true
        [politeness]
        rate = 0.0
        host_concurrency = 8
        [dns]
        resolve = {{ "*.web.test" = "127.0.0.1" }}
        [bloom]
        capacity = 1000000
    """))


SCRAPY_SPIDER = '''
import sys
from scrapy.crawler import CrawlerProcess
from scrapy.linkextractors import LinkExtractor
from scrapy.resolver import CachingThreadedResolver
from scrapy.spiders import CrawlSpider, Rule

PORT, CONCURRENCY = int(sys.argv[1]), int(sys.argv[2])


class StaticResolver(CachingThreadedResolver):
    """*.web.test -> 127.0.0.1, as ringcrawl's [dns] resolve does."""

    def getHostByName(self, name, timeout=None):
        if name.endswith(".web.test"):
            from twisted.internet import defer
            return defer.succeed("127.0.0.1")
        return super().getHostByName(name, timeout)


class Bench(CrawlSpider):
    name = "bench"
    allowed_domains = ["web.test"]
    start_urls = [f"http://s001.web.test:{PORT}/"]
    # allow_domains would compare "host:port" with "web.test" and drop every
    # link of a site on a non-default port, so scope is a URL pattern here.
    rules = (Rule(LinkExtractor(allow=[r"^https?://[^/?#]*\\.web\\.test(:[0-9]+)?/"]),
                  callback="parse_item", follow=True),)

    def parse_item(self, response):
        return None


process = CrawlerProcess(settings={
    "TWISTED_DNS_RESOLVER": "__main__.StaticResolver",
    "CONCURRENT_REQUESTS": CONCURRENCY,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
    "ROBOTSTXT_OBEY": True,
    "LOG_LEVEL": "WARNING",
    "TELNETCONSOLE_ENABLED": False,
    "DOWNLOAD_DELAY": 0,
    "COOKIES_ENABLED": False,
    "RETRY_TIMES": 2,
    "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
})
process.crawl(Bench)
process.start()
'''


def count_log(log: Path) -> int:
    """GETs answered by the farm, robots.txt excluded."""
    n = 0
    with log.open() as f:
        for line in f:
            if '"/robots.txt"' not in line:
                n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hosts", type=int, default=40, help="hosts in the local web (default 40)")
    p.add_argument("--pages", type=int, default=300, help="pages per host (default 300)")
    p.add_argument("--concurrency", type=int, default=64, help="fetches in flight (default 64)")
    p.add_argument("--time-limit", type=float, default=600.0, help="seconds per crawler run (default 600)")
    p.add_argument("--no-scrapy", action="store_true", help="skip the Scrapy run")
    args = p.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="ringcrawl-bench-"))
    runs = []
    try:
        for name in ["ringcrawl"] + ([] if args.no_scrapy else ["scrapy"]):
            if name == "scrapy":
                try:
                    import scrapy  # noqa: F401
                except ImportError:
                    print("scrapy is not installed: pip install -e '.[bench]' to compare")
                    break
            log = work / f"{name}.jsonl"
            farm, port = start_farm(args.hosts, args.pages, log)
            try:
                if name == "ringcrawl":
                    cfg = work / "bench.toml"
                    ringcrawl_config(cfg, port, args.concurrency, work / "data")
                    argv_ = [sys.executable, "-m", "peer", "--ring", str(cfg), "--log-level", "WARNING"]
                else:
                    spider = work / "spider.py"
                    spider.write_text(SCRAPY_SPIDER)
                    argv_ = [sys.executable, str(spider), str(port), str(args.concurrency)]
                runs.append(run_child(name, argv_, args.time_limit, lambda log=log: count_log(log)))
            finally:
                farm.send_signal(signal.SIGTERM)
                farm.wait(timeout=30)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"local web: {args.hosts} hosts x {args.pages} pages, concurrency {args.concurrency}, politeness off")
    for r in runs:
        print(r.line())
    if len(runs) == 2:
        ours, theirs = runs
        print(f"ringcrawl / scrapy: {ours.pages / ours.wall / (theirs.pages / theirs.wall):.1f}x pages/s, "
              f"{(ours.pages / ours.cpu) / (theirs.pages / theirs.cpu):.1f}x pages per CPU-second")
    return 0


if __name__ == "__main__":
    sys.exit(main())
