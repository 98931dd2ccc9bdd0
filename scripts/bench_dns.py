#!/usr/bin/env python3
"""What the DNS cache buys: pages/s with and without it, against a slow DNS server.

A lookup that goes to a name server costs its round trip (hundreds of
milliseconds to a distant one) for every fetch, unless it is cached. This
script measures what the cache buys, on loopback:
it starts the local web (scripts/webfarm.py) and :class:`LocalDns`, a tiny
authoritative DNS server answering ``*.web.test -> 127.0.0.1`` after a delay
(300 ms by default), then fetches the same pages through
:class:`peer.net.fetcher.Fetcher` twice, side by side:

- ``cache on``: the peer's resolver (one query per host per TTL, concurrent
  lookups merged);
- ``cache off``: ``Resolver(..., cache=False)``, one query per connection,
  like a client that calls getaddrinfo every time it connects.

Each run fetches ``--pages`` pages spread over ``--hosts`` hosts with
``--concurrency`` workers, in rounds of one page per host, and each round
through a fresh :class:`Fetcher`: a polite crawler comes back to a host after
its delay, by which time the server has closed the keep-alive connection, so
every page here costs a new connection (and, without the cache, a lookup).
``--latency`` adds server think time per page. It prints pages/s of each
run, their ratio and the query counts. Every loop is bounded in count and
time (``--max-seconds`` a run); all traffic stays on loopback.

:class:`LocalDns` (:mod:`localweb.services.nameserver`) is also the DNS server of
tests/edges/test_resolver.py and tests/edges/test_fetcher.py.

Usage::

    python scripts/bench_dns.py [--pages 400] [--hosts 40] [--concurrency 20] [--delay 0.3]
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections import Counter
from collections.abc import Iterator

import trio

from localweb.services.nameserver import LocalDns

__all__ = ["main"]


# ---------------------------------------------------------------------------
# The benchmark


async def _run(urls: list[list[str]], nameserver: str, concurrency: int, cache: bool,
               deadline: float) -> tuple[float, int, Counter[str], int]:
    from peer.core.config.cluster import CrawlConfig, DnsConfig
    from peer.net.fetcher import Fetcher
    from peer.net.resolver import Resolver

    resolver = Resolver(DnsConfig(nameservers=(nameserver,)), allow_private=True, cache=cache)
    crawl = CrawlConfig(concurrency=concurrency, timeout=10.0)
    errors: Counter[str] = Counter()
    done = 0

    async def worker(fetcher: Fetcher, jobs: Iterator[str]) -> None:
        nonlocal done
        for url in jobs:
            result = await fetcher.fetch(url)
            if result.error is not None or result.status != 200:
                errors[result.error or str(result.status)] += 1
            done += 1

    start = time.perf_counter()
    with trio.move_on_after(deadline):
        for batch in urls:
            jobs = iter(batch)
            async with Fetcher(crawl, resolver) as fetcher, trio.open_nursery() as nursery:
                for _ in range(concurrency):
                    nursery.start_soon(worker, fetcher, jobs)
    elapsed = time.perf_counter() - start
    return elapsed, done, errors, resolver.queries


async def _bench(args: argparse.Namespace) -> int:
    from localweb import HostBehaviour, SiteGraph, serve_webfarm

    graph = SiteGraph(hosts=args.hosts, pages_per_host=-(-args.pages // args.hosts), shop=False)
    async with trio.open_nursery() as nursery:
        behaviours = {"*": HostBehaviour(latency=args.latency)} if args.latency > 0 else {}
        farm = await nursery.start(functools.partial(serve_webfarm, graph, keep_log=False,
                                                     behaviours=behaviours))
        server = await nursery.start(LocalDns(delay=args.delay, ttl=300).serve)
        hosts = graph.site_hosts()
        rounds = [[f"http://{host}:{farm.port}/c{(n - 1) // 30}/p{n}.html" for host in hosts]
                  for n in range(1, -(-args.pages // len(hosts)) + 1)]
        rounds[-1] = rounds[-1][: args.pages - len(hosts) * (len(rounds) - 1)]
        print(f"{sum(map(len, rounds))} pages over {len(hosts)} hosts in {len(rounds)} rounds, "
              f"concurrency {args.concurrency}, DNS delay {args.delay * 1000:.0f} ms, "
              f"server latency {args.latency * 1000:.0f} ms")
        rows = {}
        for label, cache in (("cache on", True), ("cache off", False)):
            before_q, before_c = server.total, farm.stats.connections
            elapsed, done, errors, sent = await _run(rounds, server.nameserver, args.concurrency,
                                                     cache, args.max_seconds)
            rows[label] = done / elapsed
            print(f"{label:9}  {done:5d} pages in {elapsed:6.2f} s = {done / elapsed:7.1f} pages/s  "
                  f"DNS queries {server.total - before_q} (resolver sent {sent}), "
                  f"connections {farm.stats.connections - before_c}"
                  + (f", errors {dict(errors)}" if errors else ""))
        print(f"ratio      cache on / cache off = {rows['cache on'] / rows['cache off']:.2f}x")
        nursery.cancel_scope.cancel()
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench_dns.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--pages", type=int, default=400, help="pages fetched per run (default 400)")
    p.add_argument("--hosts", type=int, default=40, help="hosts they are spread over (default 40)")
    p.add_argument("--concurrency", type=int, default=20, help="fetches in flight (default 20)")
    p.add_argument("--delay", type=float, default=0.3, help="DNS answer delay, seconds (default 0.3)")
    p.add_argument("--latency", type=float, default=0.0,
                   help="server think time per page, seconds (default 0)")
    p.add_argument("--max-seconds", type=float, default=120.0,
                   help="stop a run after this long (default 120)")
    args = p.parse_args(argv)
    if not (1 <= args.pages <= 100_000 and 1 <= args.hosts <= 999 and 1 <= args.concurrency <= 1000):
        p.error("expected 1 <= pages <= 100000, 1 <= hosts <= 999, 1 <= concurrency <= 1000")
    return trio.run(_bench, args)


if __name__ == "__main__":
    sys.exit(main())
