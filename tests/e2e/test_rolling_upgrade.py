"""A rolling restart of a 5-peer ring with two peers of the previous release: no ring-wide pause.

p4 and p5 run the previous release's tree (tests/support/previousrelease.py,
wire version 3), p1-p3 today's. Each peer in turn stops, stays down longer
than ``dead_after`` (7.5 s; ``dead_after`` is 6 s) and is started again on
its data_dir:

- p1 by ``ring restart``'s request, p2 and p3 by SIGTERM: planned restarts
  (``ring.membership.restarts`` rules 1-6; the older peers read the
  restarting member as alive, and their probes of it are answered by the
  members that hold it, rule 6);
- p4 and p5 cannot announce a restart (their SIGTERM just stops them): ``ring
  restart`` sees their wire version and asks p1-p3 to hold them at the
  operator's word (rule 7), then the test stops them with SIGTERM. p4 comes
  back on the previous release; p5 comes back on today's tree, an upgrade
  in place, as an operator upgrades a ring one peer at a time.

Judged as tests/e2e/test_rolling_restart.py judges today's ring, from the
local web's request log (tests/support/rollingrestart.py): while each peer
is away the hosts the other four own keep being fetched (no host waits the
returner's hand-off hold; each restart's worst gap is printed: under 2 s on
a quiet machine), no log of either release says a member died, every page
is fetched once, and every peer exits 0 at the end (p1's restart with 75,
``EXIT_RESTART``).

Without the operator's hold the stop of an older peer was a death: the
ring moved twice, and the older peers paused all their hosts for a grace
at each change (with the holds switched off the test fails: "member p4:
dead" in the logs).

A slow test: about 70 s of wall time alone. Its own file, so that another
worker runs it beside test_rolling_restart.py.
"""

from __future__ import annotations

import functools
import signal
import time

import pytest
import trio
from previousrelease import find, materialise
from ringharness import Ring, hosts_of, pages_fetched
from rollingrestart import DOWN, PEERS, Pace, address_of, judge, ring_text, start_again, under_way, wait_until

from localweb import HostBehaviour, SiteGraph, serve_webfarm
from ring.messages import HoldOutcome
from ring.tools.client import Contact, RestartOutcome, request_restart

PREVIOUS, WHY = find()  # the previous release (tests/support/previousrelease.py)

OLD = ("p4", "p5")  # the previous release's peers
UPGRADED = "p5"  # comes back on today's tree


@pytest.mark.skipif(PREVIOUS is None, reason=WHY)
async def test_a_rolling_restart_with_two_peers_of_the_previous_release_pauses_no_host_of_the_others(tmp_path):
    assert PREVIOUS is not None
    tree = materialise(PREVIOUS, tmp_path / "previous")
    # ~140 pages a host at about one a second while the web is slow: over two minutes of
    # crawling, longer than five restarts of 10-20 s each on the loaded box.
    graph = SiteGraph(hosts=10, pages_per_host=100, links_per_page=20, shop=False)
    expected = graph.expected_urls(8080)
    pace = Pace()
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(functools.partial(serve_webfarm, graph,
                                                     behaviours={"*": HostBehaviour(latency=pace)}))
        text = ring_text(tmp_path, farm.port)
        owned = {p: hosts_of(graph, farm.port, PEERS, p) for p in PEERS}
        windows: list[tuple[str, float, float]] = []
        first_codes: dict[str, int] = {}
        holds: dict[str, tuple] = {}
        async with Ring(tmp_path, text) as ring:
            try:
                with trio.fail_after(200):
                    for p in PEERS:
                        await ring.start(p, tree=tree if p in OLD else None)
                    await wait_until(lambda: under_way(farm, graph))
                    pace.slow()
                    for p in PEERS:
                        assert pages_fetched(farm) < len(expected) * 0.9, "the crawl ends before the restarts"
                        stop = time.time()
                        seeds = [Contact(q, address_of(text, q)) for q in PEERS if q != p]
                        if p in OLD:
                            # `ring restart` sees its wire version and has it held; on a loaded box
                            # a holder may answer late: asked again with --hold, as the command says.
                            result = await request_restart("test", seeds, p, 20.0)
                            for _ in range(2):
                                if result.outcome is RestartOutcome.HELD:
                                    break
                                print(f"ring restart --id {p}: {result}; asked again with --hold")
                                result = await request_restart("test", seeds, p, 20.0, hold=True)
                            assert result.outcome is RestartOutcome.HELD, result
                            holds[p] = result.holders
                            ring.kill(p, signal.SIGTERM)  # the previous release just stops
                        elif p == "p1":
                            result = await request_restart("test", seeds, p, 20.0)
                            assert result.outcome is RestartOutcome.RESTARTING, result
                        else:
                            ring.kill(p, signal.SIGTERM)
                        first_codes[p] = await ring.procs[p].wait()
                        await trio.sleep(max(0.0, stop + DOWN - time.time()))
                        await start_again(ring, farm, p, owned[p],
                                          tree=tree if p in OLD and p != UPGRADED else None)
                        windows.append((p, stop, time.time()))
                    pace.stop()  # the restarts are over: the rest of the crawl at full speed
                    await ring.wait()
            except trio.TooSlowError:
                raise AssertionError(f"the peers did not finish in time\n{ring.tails()}") from None
            codes = {p: proc.returncode for p, proc in ring.procs.items()}
            tails = ring.tails()
        nursery.cancel_scope.cancel()

    # The three peers of today's tree held each older one (the other older one cannot).
    assert holds == {p: (("p1", HoldOutcome.HELD), ("p2", HoldOutcome.HELD), ("p3", HoldOutcome.HELD))
                     for p in OLD}, holds
    judge(tmp_path, farm, graph, owned, windows, first_codes, codes, tails)
