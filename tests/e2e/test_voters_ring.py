"""A joiner made a voter keeps a ring of two listed peers fetching when one of them dies.

The issue's ring: cluster.toml lists p1 and p2, p3 joins later. Before the
voters could change, a joiner did not vote, so the majority was 2 of 2 and
a dead listed peer paused the whole ring (``no-majority 1/2/2``). Here the
operator runs ``python -m ring voter add p3`` (no cluster.toml edited),
``ring status --json`` says the ring now survives one voter failure, p1 is
killed (its task cancelled: no leave, no goodbye), and the two left crawl on
without a pause: every expected URL is fetched, and neither logs a lost
majority after the kill. The peers run in the test's process
(tests/support/ringharness.py); the commands as an operator runs them.
"""

from __future__ import annotations

import json
import re

import trio

from ringharness import Ring, cluster_text, fetched, free_ports, wait_pages
from localweb import SiteGraph, serve_webfarm


async def test_a_joiner_made_a_voter_keeps_the_ring_going_when_a_listed_peer_dies(tmp_path):
    graph = SiteGraph(hosts=9, pages_per_host=30, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        total = len(graph.expected_urls(farm.port))
        # 4 pages/s per host: the crawl outlasts the change and the kill.
        text = cluster_text(tmp_path, farm.port, 2, rate=240.0, window=2.0, initial_delay=0.2)
        async with Ring(tmp_path, text) as ring:
            try:
                with trio.fail_after(150):
                    for p in ("p1", "p2"):
                        await ring.start_in_process(nursery, p)
                    port = free_ports(1)[0]
                    await ring.start_in_process(nursery, "p3", address=f"tcp://127.0.0.1:{port}",
                                                data_dir=tmp_path / "p3")
                    await wait_pages(farm, total // 6)
                    before = json.loads((await ring.ring_cmd("status", "--json")).stdout)
                    added = await ring.ring_cmd("voter", "add", "p3", "--timeout", "60")
                    after = json.loads((await ring.ring_cmd("status", "--json")).stdout)
                    seen = {p: len(ring.logs[p][1].read_text()) for p in ("p2", "p3")}
                    ring.procs["p1"].kill()  # a crash: no leave
                    await ring.wait("p2", "p3")
            except trio.TooSlowError:
                raise AssertionError(f"the peers did not finish in time\n{ring.tails()}") from None
            logs = {p: ring.logs[p][1].read_text() for p in ("p2", "p3")}
            codes = {p: ring.procs[p].returncode for p in ("p2", "p3")}
            tails = ring.tails()
            voters_file = (tmp_path / "p3" / "voters.json").read_text()
        nursery.cancel_scope.cancel()

    # Before: two voters of two, the ring survives no failure, and says so.
    assert before["voters"]["voters"] == ["p1", "p2"] and before["voters"]["survives"] == 0, before["voters"]
    assert before["voters"]["warning"], before["voters"]
    assert added.returncode == 0, (added.stdout, added.stderr, tails)
    assert b"p3 is a voter at every live member" in added.stdout, added.stdout
    assert after["voters"]["voters"] == ["p1", "p2", "p3"] and after["voters"]["survives"] == 1, after["voters"]
    assert after["voters"]["version"] == 2 and after["voters"]["warning"] is None
    assert json.loads(voters_file) == {"version": 2, "voters": ["p1", "p2", "p3"], "joint": []}
    assert codes == {"p2": 0, "p3": 0}, tails
    for p in ("p2", "p3"):
        since = logs[p][seen[p]:]
        assert "member p1: dead" in since, since[-2000:]
        # The kill leaves 2 of 3 voters: a majority, and a warning that one more loss pauses.
        # The ring change costs its grace and a vouch's round trip (docs/membership.md, "What
        # it costs"), never the wait for a majority that is gone (before: for good).
        pauses = re.findall(r"partition: no majority", since)
        overs = [float(s) for s in re.findall(r"partition over: a majority again \(2 of 3\) after ([\d.]+)s", since)]
        assert len(overs) >= len(pauses) and all(s < 3.0 for s in overs), since[-3000:]
        assert "voters: the ring now survives no failure: 2 of 3 voters alive" in since, since[-2000:]
    got = fetched(farm, farm.port)
    expected = graph.expected_urls(farm.port)
    assert set(got) == expected, f"missing {sorted(expected - set(got))[:5]}"
