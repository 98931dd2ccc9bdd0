"""Join and graceful leave with hand-off: full coverage, no page fetched twice.

Three peers crawl the local web at a polite rate, so the crawl is still going
when a fourth peer joins (the owners of the hosts that move to it hand over
their queued and fetched URLs) and, later, when the busiest of the first
three leaves with ``python -m ring leave`` (it hands everything over and exits 0). The local
web's request log is the judge. The peers run in the test's process (the real
engine and zmq sockets on loopback, tests/support/ringharness.py); the leave is asked
by `python -m ring leave`, as an operator asks it.
"""

from __future__ import annotations

import re
from collections import defaultdict

import trio

from ringharness import Ring, busiest_peer, ceiling, cluster_text, fetched, free_ports, wait_pages, worst_window
from localweb import SiteGraph, serve_webfarm

import duckdb


def requests_by_host(farm) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    for entry in farm.log:
        out[entry.host].append(entry.t)
    return {h: sorted(ts) for h, ts in out.items()}


async def test_join_and_graceful_leave_lose_nothing_and_fetch_nothing_twice(tmp_path):
    graph = SiteGraph(hosts=12, pages_per_host=40, shop=False)
    total = len(graph.expected_urls(8080))
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        leaver = busiest_peer(graph, farm.port, ["p1", "p2", "p3"])
        # 5 pages/s per host: about 10 s of crawling for 480 pages.
        text = cluster_text(tmp_path, farm.port, 3, rate=300.0, window=2.0, initial_delay=0.2)
        async with Ring(tmp_path, text) as ring:
            try:
                with trio.fail_after(120):
                    for p in ("p1", "p2", "p3"):
                        await ring.start_in_process(nursery, p)
                    await wait_pages(farm, total // 4)
                    port = free_ports(1)[0]
                    # As `python -m peer --id p4 --address ... --data-dir ...` starts it.
                    await ring.start_in_process(nursery, "p4", address=f"tcp://127.0.0.1:{port}",
                                                data_dir=tmp_path / "p4")
                    await wait_pages(farm, total // 2)
                    left = await ring.ring_cmd("leave", "--id", leaver, "--timeout", "60")
                    await ring.wait()
            except trio.TooSlowError:
                raise AssertionError(f"the peers did not finish in time\n{ring.tails()}") from None
            outputs = {p: ring.output(p) for p in ring.procs}
            leaver_log = ring.logs[leaver][1].read_text()
            stayer_logs = {p: ring.logs[p][1].read_text() for p in ring.procs if p != leaver}
            codes = {p: proc.returncode for p, proc in ring.procs.items()}
            tails = ring.tails()
        nursery.cancel_scope.cancel()

    assert left.returncode == 0, (left.stdout, left.stderr, tails)
    assert codes == {"p1": 0, "p2": 0, "p3": 0, "p4": 0}, tails
    assert "crawl finished (left the ring)" in outputs[leaver]
    for p in sorted({"p1", "p2", "p3", "p4"} - {leaver}):
        assert "crawl finished (cluster done)" in outputs[p], (p, outputs[p])
        # Every peer logs each membership change it sees: who, the new state, why.
        assert f"member {leaver}: left (left)" in stayer_logs[p], (p, stayer_logs[p][-2000:])
    assert any("member p4: alive (joined)" in stayer_logs[p] for p in stayer_logs), tails

    got = fetched(farm, farm.port)
    expected = graph.expected_urls(farm.port)
    assert set(got) == expected, f"missing {sorted(expected - set(got))[:5]}"
    twice = {u: n for u, n in got.items() if n > 1}
    assert not twice, f"fetched twice: {list(twice)[:5]} of {len(twice)}"
    # The leaver handed over what it had fetched (it had hosts: the busiest),
    # and its rows are still in its file.
    handed = [int(n) for n in re.findall(r"hand-off: (\d+) fetched URLs", leaver_log)]
    assert handed and max(handed) > 0, leaver_log[-2000:]
    with duckdb.connect(str(tmp_path / leaver / "pages.duckdb"), read_only=True) as con:
        assert con.execute("select count(*) from pages").fetchone()[0] > 0
    # The joiner, not in the file, took hosts and fetched their pages.
    with duckdb.connect(str(tmp_path / "p4" / "pages.duckdb"), read_only=True) as con:
        assert con.execute("select count(*) from pages where peer = 'p4'").fetchone()[0] > 0
    # Politeness as each site saw it, across both hand-offs (the new owner
    # inherits the host's last request starts): 300 pages/min is 5/s, so no
    # host got more than ceil(1.1 x 5 x W) + 1 requests in any W s window.
    for host, times in requests_by_host(farm).items():
        for w in (1.0, 5.0):
            assert worst_window(times, w) <= ceiling(5.0, w), (host, w)
