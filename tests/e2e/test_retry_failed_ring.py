"""``--retry-failed`` in a ring of two, in process: a failed page of a host the other peer owns goes to it.

p1's results file holds failed rows (``connect``) of pages on several
hosts, as a crawl whose hosts were down leaves them; some of those hosts
the ring gives to p2 now (p1 had them alone before). Both peers start,
p1 with ``--retry-failed``: judged by the local web's log, each failed page
is requested once, by the peer that owns its host (the proxy-less web
sees no peer, so the rows say who), and p2's summary says it received
them. ``crawl.max_depth = 0`` keeps the seed's links out, so only the
retries bring these pages. A smoke test of the wire's ``retry`` tail; the
rules are judged in tests/core/test_failedpages.py.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import duckdb
import trio

from localweb import SiteGraph, serve_webfarm
from peer.results.schema import SCHEMA
from ring.hashring import HashRing
from ringharness import Ring, cluster_text, fetched


def failed_rows(results: Path, urls: dict[str, str]) -> None:
    """A results file whose rows are these URLs (url -> host), each failed with ``connect``."""
    results.parent.mkdir(parents=True, exist_ok=True)
    cols = SCHEMA["pages"]
    with duckdb.connect(str(results)) as con:
        con.execute("CREATE TABLE pages (" + ", ".join(f"{n} {t}" for n, t in cols) + ")")
        for url, host in urls.items():
            row = {"url": url, "final_url": url, "host": host, "bytes": 0, "n_links": 0, "depth": 0,
                   "fetched_at": datetime(2026, 1, 1), "elapsed_ms": 0.0, "error": "connect", "peer": "p1"}
            con.execute(f"INSERT INTO pages VALUES ({', '.join('?' for _ in cols)})",
                        [row.get(n) for n, _ in cols])


async def test_a_failed_page_of_a_host_another_peer_owns_now_is_fetched_once_by_it(tmp_path):
    graph = SiteGraph(hosts=6, pages_per_host=3, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        port = farm.port
        ring = HashRing({"p1": 1.0, "p2": 1.0})
        pages = sorted(u for u in graph.expected_urls(port) if not u.startswith(f"http://s001.web.test:{port}/"))
        hosts = {u: u.split("/")[2] for u in pages}
        owners = {u: ring.owner(h) for u, h in hosts.items()}
        assert set(owners.values()) == {"p1", "p2"}, owners  # both kinds, or the test says nothing
        failed_rows(tmp_path / "p1" / "pages.duckdb", hosts)
        text = cluster_text(tmp_path, port, 2).replace("timeout = 5.0", "timeout = 5.0\nmax_depth = 0")
        async with Ring(tmp_path, text) as peers:
            with trio.fail_after(60):
                await peers.start_in_process(nursery, "p1", retry_failed=True)
                await peers.start_in_process(nursery, "p2")
                await peers.wait()
            codes = {p: proc.returncode for p, proc in peers.procs.items()}
            out1, out2, tails = peers.output("p1"), peers.output("p2"), peers.tails()
        nursery.cancel_scope.cancel()
    assert codes == {"p1": 0, "p2": 0}, tails
    log = fetched(farm, port)
    assert {u: n for u, n in log.items() if u in owners} == {u: 1 for u in owners}, (log, tails)
    by = {}
    for p in ("p1", "p2"):
        with duckdb.connect(str(tmp_path / p / "pages.duckdb"), read_only=True) as con:
            for url, status, error in con.execute("SELECT url, status, error FROM pages").fetchall():
                by.setdefault(url, []).append((p, status, error))
    # Each fetched by its host's owner; p1's failed row of a page p2 fetched stays in p1's file
    # (a merge keeps the latest); p1's own are replaced.
    answered = {u: (p, status) for u, rows in by.items() for p, status, error in rows if error is None}
    for url, owner in owners.items():
        assert url in answered and answered[url][0] == owner, (url, by[url])  # 200, or the web's 404
        if owner == "p1":
            assert len(by[url]) == 1, by[url]
    mine = sum(o == "p1" for o in owners.values())
    theirs = len(owners) - mine
    assert (f"retry-failed: {mine} failed pages queued again (connect {mine}); "
            f"{theirs} sent to their hosts' owners") in out1, out1
    assert f"retry-failed: 0 failed pages queued again; {theirs} received from other peers" in out2, out2
