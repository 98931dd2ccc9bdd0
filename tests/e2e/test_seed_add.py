"""``python -m ring seed add``: URLs added to a running ring, routed to their owners, counted by outcome.

The ring of three runs in the test's process (tests/support/ringharness.py),
kept busy by a slow host (a low rate) so it is running when the tool, a real
``python -m ring`` process as an operator runs it, adds URLs: new hosts of
the local web, and lines refused by design. Judged by the web server's log
(each new host's page fetched once) and by what the tool printed and
``ring status --json`` shows.
"""

from __future__ import annotations

import gzip
import json
import re

import trio
from ringharness import Ring, cluster_text, fetched
from localweb import SiteGraph, serve_webfarm

#: New hosts of the local web: the graph below has s001 and s002 only, so no link leads to them.
NEW = [f"s{n:03d}" for n in range(40, 46)]


def busy_text(tmp_path, port: int) -> str:
    """A ring of three whose one seed host is crawled slowly: it runs for ~10 s."""
    return cluster_text(tmp_path, port, 3, rate=120.0).replace(
        "timeout = 5.0", "timeout = 5.0\nrobots_tries = 1\nseed_add_batch = 4")


async def test_urls_added_to_a_running_ring_are_fetched_once_and_refused_ones_counted(tmp_path):
    graph = SiteGraph(hosts=2, pages_per_host=12, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        port = farm.port
        added = [f"http://{h}.web.test:{port}/" for h in NEW]
        lines = ["# new hosts", *added, "", "http://elsewhere.example.org/", "ftp://f.web.test/", "a b",
                 added[0]]
        (tmp_path / "more.txt.gz").write_bytes(gzip.compress("\n".join(lines).encode()))
        async with Ring(tmp_path, busy_text(tmp_path, port)) as ring:
            try:
                with trio.fail_after(120):
                    for p in ("p1", "p2", "p3"):
                        await ring.start_in_process(nursery, p)
                    while fetched(farm, port).total() < 2:  # the ring crawls
                        await trio.sleep(0.05)
                    one = await ring.ring_cmd("seed", "add", added[0])
                    many = await ring.ring_cmd("seed", "add", "--file", str(tmp_path / "more.txt.gz"))
                    status = await ring.ring_cmd("status", "--json")
                    await ring.wait()
            except trio.TooSlowError:
                raise AssertionError(f"the peers did not finish in time\n{ring.tails()}") from None
            codes = {p: proc.returncode for p, proc in ring.procs.items()}
            tails = ring.tails()
        nursery.cancel_scope.cancel()

    assert codes == {"p1": 0, "p2": 0, "p3": 0}, tails
    assert one.returncode == 0, one.stderr.decode()
    out = one.stdout.decode()
    assert "took 1 lines in 1 batches" in out and re.search(r"routed\s+1: (queued|forwarded) 1", out), out
    assert many.returncode == 0, many.stderr.decode()
    out = many.stdout.decode()
    # 11 lines in batches of 4 (crawl.seed_add_batch): 3 batches.
    assert f"took {len(lines)} lines in 3 batches" in out, out
    assert "skipped  2" in out and re.search(r"refused\s+\d+: .*invalid 2.*scope 1", out), out
    members = json.loads(status.stdout)["members"]
    taken: dict[str, int] = {}
    for m in members:
        for k, n in m["seed_add"].items():
            taken[k] = taken.get(k, 0) + n
    # Every line of both runs, counted by outcome at the peers that took them.
    assert sum(taken.values()) == 1 + len(lines), members
    assert taken["invalid"] == 2 and taken["scope"] == 1 and taken["skipped"] == 2, taken
    log = fetched(farm, port)
    for url in added:
        assert log[url] == 1, (url, log)  # added twice (and once more in the file): fetched once
