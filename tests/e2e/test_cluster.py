"""Several peers on loopback crawl the local web as one cluster.

Most of the ring's behaviour is tested in-process on a fake network
(tests/ring/test_node.py: three peers, joins, leaves, crashes, partitions,
max_pages); the end-to-end tests judged by the local web's request log run
the real engine, ring node and zmq sockets, most of them in the test's
process (tests/support/ringharness.py's ``Ring.start_in_process``): this file's
max_pages, tests/e2e/test_handoff.py (a joiner and a graceful leave),
tests/e2e/test_curve_ring.py (a Curve ring and `ring status`) and
tests/e2e/test_adopt.py (a dead peer's frontier adopted). Real processes judged
by their exit status: tests/e2e/test_crash.py (kill -9 and adoption, a ring of
separate processes) and the demo (tests/project/test_scripts.py).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import trio
from ringharness import Ring, free_ports
from localweb import SiteGraph, serve_webfarm


def cluster_toml(tmp_path: Path, web_port: int, n: int) -> Path:
    ports = free_ports(n)
    peers = "".join(
        f'[[peer]]\nid = "p{i + 1}"\naddress = "tcp://127.0.0.1:{port}"\ndata_dir = "{tmp_path / f"p{i + 1}"}"\n\n'
        for i, port in enumerate(ports))
    path = tmp_path / "cluster.toml"
    path.write_text(f"""
[ring]
name = "test"
gossip_interval = 0.2
suspect_after = 1.0
dead_after = 3.0

{peers}
[crawl]
seeds = ["http://s001.web.test:{web_port}/"]
allow_hosts = ["*.web.test"]
concurrency = 16
allow_private = true
timeout = 5.0

[politeness]
rate = 0.0
host_concurrency = 2

[dns]
resolve = {{ "*.web.test" = "127.0.0.1" }}

[bloom]
capacity = 100000
""")
    return path


async def test_max_pages_is_cluster_wide(tmp_path):
    """Each peer stops when the gossiped total reaches max_pages, never past it (ring.membership.budget)."""
    graph = SiteGraph(hosts=9, pages_per_host=40, shop=False)
    max_pages, concurrency = 60, 4
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        toml = cluster_toml(tmp_path, farm.port, 3)
        # 10 pages/s per host and few fetches in flight, so the limit is
        # reached mid-crawl, well before the 360 pages of the web.
        text = toml.read_text().replace("rate = 0.0", "rate = 600.0\nwindow = 2.0\ninitial_delay = 0.1")
        text = text.replace("concurrency = 16", f"concurrency = {concurrency}\nmax_pages = {max_pages}")
        async with Ring(tmp_path, text) as ring:
            with trio.fail_after(90):
                for p in ("p1", "p2", "p3"):
                    await ring.start_in_process(nursery, p)
                await ring.wait()
            codes = {p: proc.returncode for p, proc in ring.procs.items()}
            outs = {p: ring.output(p) for p in ring.procs}
            tails = ring.tails()
        nursery.cancel_scope.cancel()

    assert codes == {"p1": 0, "p2": 0, "p3": 0}, tails
    for p, out in outs.items():
        assert "crawl finished (max_pages reached)" in out, (p, out)
    rows = 0
    for i in (1, 2, 3):
        with duckdb.connect(str(tmp_path / f"p{i}" / "pages.duckdb"), read_only=True) as con:
            rows += con.execute("select count(*) from pages").fetchone()[0]
    requests = sum(e.target != "/robots.txt" for e in farm.log)
    assert rows == max_pages  # the web has 360 pages: exactly the budget, never more
    assert requests == rows
    assert requests < len(graph.expected_urls(farm.port)) // 2
