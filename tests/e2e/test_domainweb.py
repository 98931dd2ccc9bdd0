"""``politeness.group = "domain"`` as a site owner sees it: the hosts of one registered
domain, together, within one setpoint's ceilings in the local web's request log.

Every host of the local web is a name under ``web.test`` (one registered
domain: ``test`` is a public suffix by the list's default rule), so s001 and
s002 are two hosts of one owner. The judge is the server's log of both hosts
merged (robots.txt included: it is a request too), in any 1 s and 5 s window,
against the ceiling of ONE host at the setpoint, ceil(1.1 x rate x W) + 1.
Paced per host (the default), the two hosts together reach twice that rate
and the same judge fails (``scripts/bench_domaingroup.py`` runs these crawls
both ways: 40 requests in the worst second against a ceiling of 23).

Two peers: the web's port is chosen so that s001 and s002 hash to different
peers on the ring (ownership stays by host); each paces the domain at its
ring share of the setpoint (docs/politeness.md, Per registered domain).
"""

from __future__ import annotations

import trio

from localweb import SiteGraph, serve_webfarm
from peer.engine.crawler import Crawler
from ringharness import Ring, ceiling, cluster_text, fetched, free_ports, hosts_of, worst_window
from test_engine import make_config

RATE = 1200.0  # pages/min: 20 a second for the whole domain
HOSTS = ("s001.web.test", "s002.web.test")


def domain_starts(farm) -> list[float]:
    """Every request to a host of web.test (robots.txt too), sorted: what the owner's logs show."""
    return sorted(e.t for e in list(farm.log) if e.host.endswith(".web.test"))


def assert_every_page_once(graph, farm) -> None:
    got = fetched(farm, farm.port)
    assert set(got) == set(graph.expected_urls(farm.port)) and max(got.values()) == 1

def assert_within_one_setpoint(farm) -> None:
    times = domain_starts(farm)
    for w in (1.0, 5.0):
        assert worst_window(times, w) <= ceiling(RATE / 60, w), (w, worst_window(times, w), len(times))


async def crawl_one_peer(tmp_path, group: str = "domain"):
    """s001 and s002 crawled by one peer; the (graph, farm) to judge."""
    graph = SiteGraph(hosts=2, pages_per_host=40, shop=False, cross_host_ratio=0.0)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        seeds = [f"http://{h}:{farm.port}/" for h in HOSTS]
        cfg = make_config(tmp_path, farm.port, seeds=seeds,
                          politeness={"rate": RATE, "group": group, "host_concurrency": 2})
        with trio.fail_after(60):
            await Crawler(cfg, "p1", progress_interval=3600).run()
        nursery.cancel_scope.cancel()
    return graph, farm


def _port(split: bool) -> int:
    """A free port on which s001 and s002 have different owners on the ring of p1 and p2
    (``split``), or one owner."""
    for port in free_ports(16):
        owners = [p for p in ("p1", "p2") if hosts_of(SiteGraph(hosts=2, shop=False), port, ["p1", "p2"], p)]
        if len(owners) == (2 if split else 1):
            return port
    raise AssertionError("no port of 16 places the two hosts as asked")  # (1/2)^16


async def crawl_two_peers(tmp_path, group: str = "domain", split: bool = True):
    """s001 and s002 crawled by two peers in process, one host each (or both on one: not
    ``split``); the (graph, farm) to judge."""
    graph = SiteGraph(hosts=2, pages_per_host=40, shop=False, cross_host_ratio=0.0)
    port = _port(split)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(lambda task_status: serve_webfarm(graph, port=port, task_status=task_status))
        owned = {p: hosts_of(graph, port, ["p1", "p2"], p) for p in ("p1", "p2")}
        assert bool(owned["p1"] and owned["p2"]) is split, owned
        text = cluster_text(tmp_path, port, 2, rate=RATE, window=2.0).replace(
            "[politeness]\n", f'[politeness]\ngroup = "{group}"\nhost_concurrency = 2\n', 1).replace(
            "host_concurrency = 1\n", "", 1).replace(
            f'seeds = ["http://s001.web.test:{port}/"]',
            f'seeds = ["http://s001.web.test:{port}/", "http://s002.web.test:{port}/"]', 1)
        async with Ring(tmp_path, text) as ring:
            try:
                with trio.fail_after(90):
                    for p in ("p1", "p2"):
                        await ring.start_in_process(nursery, p)
                    await ring.wait()
            except BaseException:
                print(ring.tails())
                raise
        nursery.cancel_scope.cancel()
    return graph, farm


async def test_one_peer_paces_two_hosts_of_one_domain_as_one_host(tmp_path):
    graph, farm = await crawl_one_peer(tmp_path)
    assert_every_page_once(graph, farm)
    assert_within_one_setpoint(farm)


async def test_two_peers_owning_one_domains_hosts_keep_one_setpoint_together(tmp_path):
    graph, farm = await crawl_two_peers(tmp_path)
    assert_every_page_once(graph, farm)
    assert_within_one_setpoint(farm)
