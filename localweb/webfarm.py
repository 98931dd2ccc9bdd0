"""The ``webfarm`` command (``python scripts/webfarm.py``): serve the site graph on loopback.

::

    python scripts/webfarm.py --port 8080 --hosts 20 --pages 300 --seed 1 \
        [--log requests.jsonl] [--latency [HOST=]T:S,T:S] [--rate-limit [HOST=]R[/B]] \
        [--validators] [--cookies]

prints ``listening on 127.0.0.1:PORT`` (flushed, the first line: scripts
wait for it), the seed, and the cluster.toml lines a peer needs to crawl
this web (:func:`peer_config`), then serves until SIGINT or SIGTERM and
exits 0. ``--help`` shows the same lines. ``--private`` lets ``--host`` be a
private address (a network namespace's), never a public one. ``--print-expected`` prints the
expected URL set for ``--port`` and exits. A port it cannot bind or a log
file it cannot open is one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import functools
import signal
import sys
from ring.commandnames import Command, command, spoken
from collections.abc import Sequence
from typing import Any

import trio

from localweb.sitegraph.graph import DEFAULT_ALLOW
from localweb.sitegraph.server import FarmError, HostBehaviour, WebFarm, check_loopback, serve_webfarm
from localweb.sitegraph.web import SiteGraph
from peer.errors import user_error

__all__ = ["main", "peer_config"]


def peer_config(port: int | str = "PORT", host: str = "127.0.0.1") -> str:
    """The cluster.toml lines a peer needs to crawl this web on ``host:port``, as TOML."""
    seed = f"http://s001.web.test{'' if port == 80 else f':{port}'}/"
    allow = ", ".join(f'"{p}"' for p in DEFAULT_ALLOW)
    lines = [
        ("[crawl]", ""),
        (f'seeds = ["{seed}"]', ""),
        (f"allow_hosts = [{allow}]", "every host of this web"),
        ("allow_private = true", "the web is on loopback: let it past the SSRF guard"),
        ("", ""),
        ("[dns]", ""),
        (f'resolve = {{ "*.web.test" = "{host}" }}', "every host of the web is this address"),
    ]
    width = max(len(code) for code, _ in lines) + 3
    return "".join(f"{code:<{width}}# {why}\n" if why else f"{code}\n" for code, why in lines)


def _parse_hostspec(value: str) -> tuple[str, str]:
    host, sep, rest = value.partition("=")
    return (host.strip().lower(), rest) if sep else ("*", value)


def _parse_latency(value: str) -> float | tuple[tuple[float, float], ...]:
    if ":" not in value:
        return float(value)
    steps = []
    for step in value.split(","):
        t, _, s = step.partition(":")
        steps.append((float(t), float(s)))
    return tuple(steps)


def _behaviours(args: argparse.Namespace) -> dict[str, HostBehaviour]:
    latency: dict[str, Any] = {}
    rates: dict[str, tuple[float, float]] = {}
    for spec in args.latency or ():
        host, rest = _parse_hostspec(spec)
        latency[host] = _parse_latency(rest)
    for spec in args.rate_limit or ():
        host, rest = _parse_hostspec(spec)
        rate_text, _, burst_text = rest.partition("/")
        rates[host] = (float(rate_text), float(burst_text or 1))
    out = {}
    for host in set(latency) | set(rates):
        rate, burst = rates.get(host, (0.0, 1.0))
        out[host] = HostBehaviour(latency=latency.get(host, 0.0), rate=rate, burst=burst,
                                  retry_after=args.retry_after)
    return out


def _arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=command(Command.WEBFARM, sys.argv[0]),
        description="Serve ringcrawl's local test web (*.web.test) on one loopback port.",
        epilog=("A peer crawls this web with these cluster.toml lines (PORT is --port; the\n"
                "server prints them again, with its port, when it starts):\n\n"
                + peer_config()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1",
                   help="loopback address to bind (default 127.0.0.1); a private one needs --private")
    p.add_argument("--private", action="store_true",
                   help="allow --host to be a private address (a network namespace's, "
                        "localweb/netns/ring.py), never a public one")
    p.add_argument("--port", type=int, default=8080, help="port; 0 picks a free one (default 8080)")
    p.add_argument("--seed", type=int, default=1, help="graph seed (default 1)")
    p.add_argument("--hosts", type=int, default=20, help="number of sNNN.web.test hosts (default 20)")
    p.add_argument("--pages", type=int, default=300, help="content pages per host (default 300)")
    p.add_argument("--links", type=int, default=100, help="links per content page (default 100)")
    p.add_argument("--shop-products", type=int, default=40, help="products of shop.web.test (default 40)")
    p.add_argument("--no-shop", action="store_true", help="leave out shop.web.test")
    p.add_argument("--link-bad", action="store_true",
                   help="link bad.web.test's endpoints from s001's index (slows a crawl on purpose)")
    p.add_argument("--crawl-delay", action="append", metavar="HOST=SECONDS",
                   help="add a Crawl-delay to HOST's robots.txt (repeatable)")
    p.add_argument("--latency", action="append", metavar="[HOST=]S|T:S,T:S",
                   help="added latency in seconds, or steps t:seconds since start (repeatable)")
    p.add_argument("--rate-limit", action="append", metavar="[HOST=]RATE[/BURST]",
                   help="token bucket per host, requests/s; over it: 429 (repeatable)")
    p.add_argument("--retry-after", type=int, default=None, help="fixed Retry-After seconds for 429s")
    p.add_argument("--validators", action="store_true",
                   help="send an ETag with every page and answer a matching If-None-Match with 304")
    p.add_argument("--cookies", action="store_true",
                   help="every host sets a cookie (farm=HOST) on a page asked without it")
    p.add_argument("--log", metavar="FILE", help="append every request to FILE as JSON lines")
    p.add_argument("--print-expected", action="store_true",
                   help="print the URLs a correct crawl of --port requests, one a line, and exit")
    # Commands named as the user started this one (installed, or from a checkout).
    p.description, p.epilog = spoken(p.description or "", sys.argv[0]), spoken(p.epilog or "", sys.argv[0])
    return p


async def _run(graph: SiteGraph, args: argparse.Namespace,
               behaviours: dict[str, HostBehaviour]) -> None:
    # The receiver is open before the port is printed, so a SIGTERM sent as
    # soon as a parent reads that line is handled, not fatal.
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            farm: WebFarm = await nursery.start(functools.partial(
                serve_webfarm, graph, host=args.host, port=args.port, private=args.private,
                log_path=args.log, validators=args.validators, cookies=args.cookies,
                keep_log=False, behaviours=behaviours))
            print(f"listening on {farm.host}:{farm.port}", flush=True)
            print(f"seed {graph.seeds(farm.port)[0]} ; {len(graph.hosts())} hosts", flush=True)
            print(f"\na peer crawls it with these cluster.toml lines:\n\n{peer_config(farm.port, farm.host)}",
                  flush=True)
            async for _ in signals:
                break
            nursery.cancel_scope.cancel()
    st = farm.stats
    print(f"served {st.requests} requests on {st.connections} connections, "
          f"{st.bytes_sent} body bytes; status {dict(sorted(st.status.items()))}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    args = _arg_parser().parse_args(argv)
    try:
        check_loopback(args.host, private=args.private)
        delays = {}
        for spec in args.crawl_delay or ():
            host, _, secs = spec.partition("=")
            delays[host.strip().lower()] = float(secs)
        graph = SiteGraph(seed=args.seed, hosts=args.hosts, pages_per_host=args.pages,
                          links_per_page=args.links, shop=not args.no_shop,
                          shop_products=args.shop_products, link_bad=args.link_bad,
                          crawl_delay=delays)
        behaviours = _behaviours(args)
    except ValueError as exc:
        print(f"webfarm: {exc}", file=sys.stderr)
        return 2
    if args.print_expected:
        if args.port == 0:
            print("webfarm: --print-expected needs a fixed --port", file=sys.stderr)
            return 2
        for url in sorted(graph.expected_urls(args.port)):
            print(url)
        return 0
    try:
        trio.run(_run, graph, args, behaviours)
    except BaseException as exc:  # trio wraps a FarmError in a group; user_error() unwraps it
        err = user_error(exc, (FarmError,))
        if err is None:
            raise
        print(f"webfarm: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
