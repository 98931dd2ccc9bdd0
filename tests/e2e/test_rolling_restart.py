"""A rolling restart of a 5-peer ring, each peer down longer than ``dead_after``: no ring-wide pause.

Each peer in turn stops for a planned restart (``ring.membership.restarts``:
p1 by ``ring restart``'s request, as an upgrade asks it, the others by
SIGTERM without ``--leave``, as a service manager's restart), stays down
7.5 s (``dead_after`` is 6 s) and is started again on its data_dir. Judged
from the local web's request log: while each peer is away, the hosts the
other four own keep being fetched (no host waits the returner's hand-off
hold, and the worst gap of each restart is printed: under 2 s on a quiet
machine), every page is fetched once, and every peer ends with exit 0
(p1's restart with 75, ``EXIT_RESTART``, which a service manager restarts
on).

Before planned restarts each such stop was a death: the ring moved twice,
and when the peer came back every other peer held its own hosts until the
returner's hand-off (peer/core/handoff/holds.py rule 5), a gap of
``hold_timeout`` (12 s here) on every host at each restart.

The peers are real processes (``python -m peer`` with its signal handler,
as a service manager runs them): in the test's process, five peers sharing
one loop lost their majority for a second at a time on the loaded box, and
a resumed peer's start stalled the others for seconds. The timings and the
web that paces the crawl are tests/support/rollingrestart.py's (shared with
tests/e2e/test_rolling_upgrade.py, the same with two peers of the previous
release). A slow test: about 70 s of wall time alone, 25 s of CPU.
"""

from __future__ import annotations

import functools
import signal
import time

import trio
from ringharness import Ring, hosts_of, pages_fetched
from rollingrestart import DOWN, PEERS, Pace, address_of, judge, ring_text, start_again, under_way, wait_until

from localweb import HostBehaviour, SiteGraph, serve_webfarm
from ring.tools.client import Contact, RestartOutcome, request_restart


async def test_a_rolling_restart_pauses_no_host_of_the_other_peers(tmp_path):
    # ~140 pages a host at about one a second while the web is slow: over two minutes of
    # crawling, longer than five restarts of 10-20 s each on the loaded box.
    graph = SiteGraph(hosts=12, pages_per_host=100, links_per_page=20, shop=False)
    expected = graph.expected_urls(8080)
    pace = Pace()
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(functools.partial(serve_webfarm, graph,
                                                     behaviours={"*": HostBehaviour(latency=pace)}))
        text = ring_text(tmp_path, farm.port)
        owned = {p: hosts_of(graph, farm.port, PEERS, p) for p in PEERS}
        windows: list[tuple[str, float, float]] = []
        first_codes: dict[str, int] = {}
        async with Ring(tmp_path, text) as ring:
            try:
                with trio.fail_after(200):
                    for p in PEERS:
                        await ring.start(p)
                    await wait_until(lambda: under_way(farm, graph))
                    pace.slow()
                    for p in PEERS:
                        assert pages_fetched(farm) < len(expected) * 0.9, "the crawl ends before the restarts"
                        stop = time.time()
                        if p == "p1":
                            cfg_seeds = [Contact(q, address_of(text, q)) for q in PEERS if q != p]
                            result = await request_restart("test", cfg_seeds, p, 20.0)
                            assert result.outcome is RestartOutcome.RESTARTING, result
                        else:
                            ring.kill(p, signal.SIGTERM)
                        first_codes[p] = await ring.procs[p].wait()
                        await trio.sleep(max(0.0, stop + DOWN - time.time()))
                        await start_again(ring, farm, p, owned[p])
                        windows.append((p, stop, time.time()))
                    pace.stop()  # the restarts are over: the rest of the crawl at full speed
                    await ring.wait()
            except trio.TooSlowError:
                raise AssertionError(f"the peers did not finish in time\n{ring.tails()}") from None
            codes = {p: proc.returncode for p, proc in ring.procs.items()}
            tails = ring.tails()
        nursery.cancel_scope.cancel()

    judge(tmp_path, farm, graph, owned, windows, first_codes, codes, tails)
