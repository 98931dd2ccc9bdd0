"""A ring in the middle of an upgrade: today's peers and the previous release's crawl as one.

Three peers of one cluster.toml: two run today's tree (in the test's
process), the one with the most hosts runs the previous release's
(tests/support/previousrelease.py: the tree of its git tag, as a ``python -m
peer`` process with ``PYTHONPATH`` on it), one wire version older
(ring/wireversion.py). The local web's request
log judges the crawl: every page fetched once, by a ring whose members
forward to each other across the two versions; every peer exits 0. While it
crawls, ``ring status`` of both trees answers for all three members; today's
says which version each speaks, and that no peer dropped a frame for its
version or layout.

Slow for an e2e test (one peer process and two tool processes: about 17 s).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from functools import partial
from pathlib import Path

import pytest
import trio
from previousrelease import find, materialise
from ringharness import Ring, busiest_peer, cluster_text, fetched, hosts_of, wait_pages

from localweb import HostBehaviour, SiteGraph, serve_webfarm
from ring.messages import VERSION

COMMIT, WHY = find()
pytestmark = pytest.mark.skipif(COMMIT is None, reason=WHY)

PEERS = ["p1", "p2", "p3"]


def tree_version(tree: Path) -> int | None:
    """The wire version of a tree: ``VERSION`` in its codec (ring/messages.py before ring/wirecodec.py)."""
    for name in ("wirecodec.py", "messages.py"):
        path = tree / "ring" / name
        found = re.search(r"^VERSION = (\d+)", path.read_text(), re.M) if path.exists() else None
        if found:
            return int(found.group(1))
    return None


async def status(ring: Ring, tree: Path | None = None) -> tuple[int, dict[str, dict]]:
    """``ring status --json`` of today's tree (``tree`` None) or of ``tree``: exit status, rows by id."""
    got = await ring.ring_cmd("status", "--json", tree=tree)
    try:
        rows = {m["id"]: m for m in json.loads(got.stdout)["members"]}
    except (ValueError, KeyError):
        rows = {}
    return got.returncode, rows


async def test_a_ring_of_this_release_and_the_previous_one_crawls_as_one(tmp_path):
    assert COMMIT is not None
    tree = materialise(COMMIT, tmp_path / "previous")
    # The test is of an upgrade across one version: the previous release is one back.
    assert tree_version(tree) == VERSION - 1

    graph = SiteGraph(hosts=6, pages_per_host=8, shop=False)
    # While the tools ask, the web answers slowly, so the crawl is still going
    # however long a loaded machine takes to start them.
    gate = {"held": False}
    slow = HostBehaviour(latency=lambda _t: 3.0 if gate["held"] else 0.0)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(partial(serve_webfarm, graph, behaviours={"*": slow}))
        text = cluster_text(tmp_path, farm.port, 3, rate=300.0, window=2.0, initial_delay=0.2)
        # The previous release runs the peer with the most hosts (the hash ring
        # places hosts by port too), so it surely has hosts besides the seed's.
        old = busiest_peer(graph, farm.port, PEERS)
        async with Ring(tmp_path, text) as ring:
            try:
                with trio.fail_after(120):
                    await ring.start(old, tree=tree)
                    for p in sorted(set(PEERS) - {old}):
                        await ring.start_in_process(nursery, p)
                    await wait_pages(farm, 8)
                    gate["held"] = True
                    # Today's tool: each member's own row, so each one's version.
                    while True:
                        assert all(p.returncode is None for p in ring.procs.values()), \
                            f"a peer ended before the status\n{ring.tails()}"
                        new_code, new_rows = await status(ring)
                        if {r.get("wire_version") for r in new_rows.values()} == {VERSION, VERSION - 1}:
                            break
                        await trio.sleep(0.2)
                    old_code, old_rows = await status(ring, tree)
                    asked = farm.log[-1].t
                    gate["held"] = False
                    await ring.wait()
            except trio.TooSlowError:
                raise AssertionError(f"the peers did not finish in time\n{ring.tails()}") from None
            codes = {p: proc.returncode for p, proc in ring.procs.items()}
            outputs = {p: ring.output(p) for p in ring.procs}
            tails = ring.tails()
        nursery.cancel_scope.cancel()

    assert codes == {"p1": 0, "p2": 0, "p3": 0}, tails
    assert asked < farm.log[-1].t  # both tools asked while the ring crawled
    for p, out in outputs.items():
        assert "crawl finished (cluster done)" in out, (p, out)

    # The web server's log: every page once, the old peer's hosts included.
    assert {"t", "host", "target", "status", "client"} <= {f.name for f in dataclasses.fields(farm.log[0])}
    got = fetched(farm, farm.port)
    expected = graph.expected_urls(farm.port)
    assert set(got) == expected, f"missing {sorted(expected - set(got))[:5]}"
    twice = {u: n for u, n in got.items() if n > 1}
    assert not twice, f"fetched twice: {list(twice)[:5]} of {len(twice)}"
    old_hosts = hosts_of(graph, farm.port, PEERS, old)
    by_host = Counter(e.host for e in farm.log if e.target != "/robots.txt")
    seed_host = graph.hosts(special=False)[0]
    # URLs of its hosts reached it from today's peers (only the seed's host needs none).
    assert any(by_host[h] for h in old_hosts - {seed_host}), (old_hosts, by_host)

    # Today's `ring status`: all three alive, each at its own version, and no
    # frame dropped for its version, its type or its layout anywhere.
    assert new_code == 0 and set(new_rows) == {"p1", "p2", "p3"}, new_rows
    assert {p: r["wire_version"] for p, r in new_rows.items()} == {
        p: VERSION - 1 if p == old else VERSION for p in PEERS}
    for p, r in new_rows.items():
        assert r["state"] == "alive", r
        bad = {k: n for k, n in r["drops"].items() if k in ("version", "unknown_type", "malformed")}
        assert not bad, (p, bad)
    # The previous release's `ring status` reads today's peers too.
    assert old_code == 0 and set(old_rows) == {"p1", "p2", "p3"}, old_rows
    assert all(r["state"] == "alive" for r in old_rows.values()), old_rows
    assert {p: r["heard"] for p, r in old_rows.items()} == {"p1": True, "p2": True, "p3": True}
