"""Two hosts of one registered domain as their owner's log sees them, by ``politeness.group``.

    .venv/bin/python scripts/bench_domaingroup.py [--rate 1200] [--pages 40]

s001.web.test and s002.web.test (one registered domain, web.test) are
served by the local web (localweb's WebFarm, in this process) and crawled by
one peer, by two peers owning one host each, and by two peers of which one
owns both (the web's port is chosen for each placement: ownership hashes
``host:port``), with ``group = "host"`` and ``"domain"``. Printed per run: the
requests to web.test (robots.txt too), their rate, and the worst 1 s and 5 s
windows against the ceilings of ONE host at the rate, ceil(1.1 x rate x W) + 1
(docs/politeness.md, Per registered domain). The peers run in this process
(``Crawler``, zmq on loopback), as tests/e2e/test_domainweb.py runs them.
Nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import tempfile
from functools import partial
from pathlib import Path

import trio

from localweb import SiteGraph, serve_webfarm
from localweb.judges.politeness import ceiling, worst
from localweb.processes.peerrun import free_ports
from peer.core.urls.normalize import host_key
from peer.engine.crawler import Crawler
from peer.state.configfile import load_config
from ring.hashring import HashRing

HOSTS = ("s001.web.test", "s002.web.test")


def port_for(peers: int, split: bool) -> int:
    """A free port on which the two hosts have two owners (``split``) or one, on a ring of ``peers``."""
    ring = HashRing({f"p{i + 1}": 1.0 for i in range(peers)})
    for port in free_ports(32):
        owners = {ring.owner(host_key(f"http://{h}:{port}/")) for h in HOSTS}
        if len(owners) == (2 if split else 1):
            return port
    raise SystemExit("no free port places the hosts as asked")


def toml(tmp: Path, port: int, peers: int, group: str, rate: float) -> Path:
    entries = "".join(f'[[peer]]\nid = "p{i + 1}"\naddress = "tcp://127.0.0.1:{a}"\ndata_dir = "{tmp / f"p{i + 1}"}"\n\n'
                      for i, a in enumerate(free_ports(peers)))
    seeds = ", ".join(f'"http://{h}:{port}/"' for h in HOSTS)
    path = tmp / "cluster.toml"
    path.write_text(f"""[ring]
name = "bench"
gossip_interval = 0.2
suspect_after = 1.0
dead_after = 3.0

{entries}[crawl]
seeds = [{seeds}]
allow_hosts = ["*.web.test"]
allow_private = true
concurrency = 16
timeout = 5.0

[politeness]
rate = {rate}
window = 2.0
host_concurrency = 2
group = "{group}"

[dns]
resolve = {{ "*.web.test" = "127.0.0.1" }}
""")
    return path


async def crawl(peers: int, split: bool, group: str, rate: float, pages: int) -> list[float]:
    graph = SiteGraph(hosts=2, pages_per_host=pages, shop=False, cross_host_ratio=0.0)
    port = port_for(peers, split) if peers > 1 else free_ports(1)[0]
    with tempfile.TemporaryDirectory() as d:
        async with trio.open_nursery() as nursery:
            farm = await nursery.start(partial(serve_webfarm, graph, port=port))
            cfg = load_config(toml(Path(d), port, peers, group, rate))
            with trio.fail_after(300):
                async with trio.open_nursery() as crawls:
                    for spec in cfg.peers:
                        crawler = Crawler(cfg, spec.id, data_dir=Path(spec.data_dir), progress_interval=3600,
                                          cluster=peers > 1)
                        crawls.start_soon(crawler.run)
            nursery.cancel_scope.cancel()
    return sorted(e.t for e in farm.log if e.host.endswith(".web.test"))


async def main(args: argparse.Namespace) -> None:
    per_s = args.rate / 60
    print(f"s001 + s002 of web.test, {args.pages} pages each, rate {args.rate:g}/min, host_concurrency 2; "
          f"one host's ceilings: 1 s {ceiling(per_s, 1.0)}, 5 s {ceiling(per_s, 5.0)}")
    print("| peers | group | requests | rate | worst 1 s | worst 5 s |")
    print("|---|---|---|---|---|---|")
    for peers, split, name in ((1, False, "1"), (2, True, "2, one host each"), (2, False, "2, both hosts on one")):
        for group in ("host", "domain"):
            t = await crawl(peers, split, group, args.rate, args.pages)
            span = t[-1] - t[0]
            print(f"| {name} | {group} | {len(t)} in {span:.1f} s | {len(t) / span:.1f}/s "
                  f"| {worst(t, 1.0)} | {worst(t, 5.0)} |", flush=True)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rate", type=float, default=1200.0, help="politeness.rate, pages/min (default 1200)")
    p.add_argument("--pages", type=int, default=40, help="content pages per host (default 40)")
    trio.run(main, p.parse_args())
