"""Measure fetches through proxies (peer/net/proxy.py) against direct ones, on loopback.

    .venv/bin/python scripts/bench_proxy.py [--fetches N]

The site graph's server and localweb's test proxies (``ConnectProxy``,
``Socks5Proxy``) run in this process, so the figures are the whole path's
wall time a fetch, client, proxy and server on one event loop: what a
proxy adds, not what a real one costs. Each way is measured twice: over a
keep-alive connection (the tunnel reused) and with a new connection a fetch
(the idle pool emptied first: a TCP connect to the proxy and its handshake
each time). The first direct round warms the server's page cache and is
printed too. Nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import time

import trio

from localweb import SiteGraph, serve_webfarm
from localweb.services.proxies import ConnectProxy, Socks5Proxy
from peer.core.config.cluster import parse_config
from peer.net.fetcher import Fetcher
from peer.net.resolver import Resolver

WEB = {"*.web.test": "127.0.0.1"}


async def measure(fetches: int) -> None:
    graph = SiteGraph(hosts=1, pages_per_host=20, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        http, socks = ConnectProxy(resolve=WEB), Socks5Proxy(resolve=WEB)
        await nursery.start(http.serve)
        await nursery.start(socks.serve)
        ways = [("direct (warm-up)", ""), ("direct", ""), ("http CONNECT", f"http://{http.address}"),
                ("socks5h", f"socks5h://{socks.address}")]
        print(f"{'way':<18} {'keep-alive':>12} {'new conn':>12}   (us a fetch, wall, {fetches} fetches)")
        for label, proxy in ways:
            keys = f'proxy = "{proxy}"\nproxy_allow_private = true\n' if proxy else ""
            cfg = parse_config(f'[crawl]\nallow_private = true\n{keys}[dns]\nresolve = {{ "*.web.test" = '
                               '"127.0.0.1" }\n[[peer]]\nid = "p1"\n')
            figures = []
            async with Fetcher(cfg.crawl, Resolver(cfg.dns, allow_private=True)) as fetcher:
                url = farm.url("s001.web.test")
                for fresh in (False, True):
                    t0 = time.perf_counter()
                    for _ in range(fetches):
                        if fresh:
                            for idle in fetcher._idle:
                                idle.close()
                        res = await fetcher.fetch(url)
                        assert res.status == 200, res
                    figures.append((time.perf_counter() - t0) / fetches * 1e6)
            print(f"{label:<18} {figures[0]:>12.0f} {figures[1]:>12.0f}")
        nursery.cancel_scope.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fetches", type=int, default=500, help="fetches a way and connection kind (default 500)")
    args = parser.parse_args()
    trio.run(measure, args.fetches)


if __name__ == "__main__":
    main()
