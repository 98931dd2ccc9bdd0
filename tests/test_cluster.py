"""Several real peer processes on loopback crawl the local web as one cluster."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import duckdb
import trio
from ringharness import free_ports
from localweb import SiteGraph, serve_webfarm

from peer.urls import host_key
from ring.hashring import HashRing


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


async def test_three_peers_crawl_as_one_cluster_and_exit_by_themselves(tmp_path):
    graph = SiteGraph(hosts=6, pages_per_host=30, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        toml = cluster_toml(tmp_path, farm.port, 3)
        logs = [(tmp_path / f"p{i}.out", tmp_path / f"p{i}.err") for i in (1, 2, 3)]
        procs = []
        for i, (out, err) in zip((1, 2, 3), logs):
            with out.open("wb") as fout, err.open("wb") as ferr:
                procs.append(await trio.lowlevel.open_process(
                    [sys.executable, "-m", "peer", "--ring", str(toml), "--id", f"p{i}", "--progress", "1"],
                    stdout=fout, stderr=ferr))
        status = None
        try:
            with trio.fail_after(90):
                while sum(e.target != "/robots.txt" for e in farm.log) < 30:
                    await trio.sleep(0.05)
                status = await trio.run_process(
                    [sys.executable, "-m", "ring", "status", "--ring", str(toml), "--json"],
                    capture_stdout=True, capture_stderr=True, check=False)
                for p in procs:
                    await p.wait()
        except trio.TooSlowError:
            tails = "\n".join(f"--- p{i} ---\n" + err.read_text()[-1500:] for i, (_, err) in zip((1, 2, 3), logs))
            raise AssertionError(f"the peers did not all finish in time\n{tails}") from None
        finally:
            for p in procs:
                if p.returncode is None:
                    p.kill()
        outs = [(p.returncode, out.read_bytes(), err.read_bytes()) for p, (out, err) in zip(procs, logs)]
        nursery.cancel_scope.cancel()

    for rc, out, err in outs:
        assert rc == 0, err.decode()[-3000:]
        assert b"crawl finished (cluster done)" in out, (out, err.decode()[-2000:])

    expected = graph.expected_urls(farm.port)
    fetched = Counter(f"http://{e.host}:{farm.port}{e.target}" for e in farm.log
                      if e.method == "GET" and e.target != "/robots.txt")
    assert set(fetched) == expected
    assert max(fetched.values()) == 1, [u for u, n in fetched.items() if n > 1][:5]

    ring = HashRing({"p1": 1.0, "p2": 1.0, "p3": 1.0})
    for i in (1, 2, 3):
        with duckdb.connect(str(tmp_path / f"p{i}" / "pages.duckdb"), read_only=True) as con:
            for url, peer in con.execute("select url, peer from pages").fetchall():
                assert peer == f"p{i}"
                assert ring.owner(host_key(url)) == peer, url

    assert status is not None and status.returncode == 0, status.stderr
    members = json.loads(status.stdout)["members"]
    assert sorted(m["id"] for m in members) == ["p1", "p2", "p3"]
    assert all(m["state"] == "alive" for m in members)
    assert abs(sum(m["share"] for m in members) - 1.0) < 1e-9


async def test_a_peer_not_in_the_file_joins_a_running_ring(tmp_path):
    """--id p3 --address ... --data-dir ...: the ring learns it by gossip and it takes hosts."""
    graph = SiteGraph(hosts=8, pages_per_host=40, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        toml = cluster_toml(tmp_path, farm.port, 2)
        # 5 pages/s per host, about 8 s of crawling: slow enough that p3, which
        # starts after 40 pages and takes a few seconds to join on a loaded
        # machine, joins mid-crawl, takes hosts and gets their hand-off.
        text = toml.read_text().replace("rate = 0.0", "rate = 300.0\nwindow = 2.0\ninitial_delay = 0.2")
        toml.write_text(text)
        join_port = free_ports(1)[0]
        argvs = [
            ["--id", "p1"], ["--id", "p2"],
            ["--id", "p3", "--address", f"tcp://127.0.0.1:{join_port}", "--data-dir", str(tmp_path / "p3")],
        ]
        procs, logs = [], []
        try:
            with trio.fail_after(90):
                for n, extra in enumerate(argvs):
                    if n == 2:
                        while sum(e.target != "/robots.txt" for e in farm.log) < 40:
                            await trio.sleep(0.05)
                    out, err = tmp_path / f"{extra[1]}.out", tmp_path / f"{extra[1]}.err"
                    logs.append((out, err))
                    with out.open("wb") as fout, err.open("wb") as ferr:
                        procs.append(await trio.lowlevel.open_process(
                            [sys.executable, "-m", "peer", "--ring", str(toml), *extra, "--progress", "1"],
                            stdout=fout, stderr=ferr))
                for p in procs:
                    await p.wait()
        except trio.TooSlowError:
            tails = "\n".join(err.read_text()[-1500:] for _, err in logs)
            raise AssertionError(f"the peers did not all finish in time\n{tails}") from None
        finally:
            for p in procs:
                if p.returncode is None:
                    p.kill()
        nursery.cancel_scope.cancel()

    for p, (out, err) in zip(procs, logs):
        assert p.returncode == 0, err.read_text()[-2000:]
        assert "crawl finished (cluster done)" in out.read_text()
    fetched = {f"http://{e.host}:{farm.port}{e.target}" for e in farm.log
               if e.method == "GET" and e.target != "/robots.txt"}
    assert fetched == graph.expected_urls(farm.port)
    with duckdb.connect(str(tmp_path / "p3" / "pages.duckdb"), read_only=True) as con:
        assert con.execute("select count(*) from pages where peer = 'p3'").fetchone()[0] > 0


async def test_max_pages_is_cluster_wide(tmp_path):
    """Each peer stops when the gossiped total reaches max_pages; overshoot <= fetches in flight."""
    graph = SiteGraph(hosts=9, pages_per_host=40, shop=False)
    max_pages, concurrency = 60, 4
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        toml = cluster_toml(tmp_path, farm.port, 3)
        # 10 pages/s per host and few fetches in flight, so the limit is
        # reached mid-crawl, well before the 360 pages of the web.
        text = toml.read_text().replace("rate = 0.0", "rate = 600.0\nwindow = 2.0\ninitial_delay = 0.1")
        text = text.replace("concurrency = 16", f"concurrency = {concurrency}\nmax_pages = {max_pages}")
        toml.write_text(text)
        logs = [(tmp_path / f"p{i}.out", tmp_path / f"p{i}.err") for i in (1, 2, 3)]
        procs = []
        try:
            with trio.fail_after(90):
                for i, (out, err) in zip((1, 2, 3), logs):
                    with out.open("wb") as fout, err.open("wb") as ferr:
                        procs.append(await trio.lowlevel.open_process(
                            [sys.executable, "-m", "peer", "--ring", str(toml), "--id", f"p{i}"],
                            stdout=fout, stderr=ferr))
                for p in procs:
                    await p.wait()
        finally:
            for p in procs:
                if p.returncode is None:
                    p.kill()
        nursery.cancel_scope.cancel()

    for p, (out, err) in zip(procs, logs):
        assert p.returncode == 0, err.read_text()[-2000:]
        assert "crawl finished (max_pages reached)" in out.read_text(), out.read_text()
    rows = 0
    for i in (1, 2, 3):
        with duckdb.connect(str(tmp_path / f"p{i}" / "pages.duckdb"), read_only=True) as con:
            rows += con.execute("select count(*) from pages").fetchone()[0]
    requests = sum(e.target != "/robots.txt" for e in farm.log)
    assert max_pages <= rows <= max_pages + 3 * concurrency, rows
    assert requests == rows
    assert requests < len(graph.expected_urls(farm.port)) // 2
