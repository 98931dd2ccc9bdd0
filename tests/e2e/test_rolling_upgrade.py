"""A rolling restart of a 5-peer ring with two peers of the previous release: no ring-wide pause.

p4 and p5 run the previous release's tree (tests/support/previousrelease.py,
wire version 3), p1-p3 today's. Each peer in turn stops, stays down longer
than ``dead_after`` and is started again on its data_dir:

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
local web's request log: while each peer is away the hosts the other four
own keep being fetched (no host waits the returner's hand-off hold; each
restart's worst gap is printed: under 2 s on a quiet machine), no log of
either release says a member died, every page is fetched once, and every
peer exits 0 at the end (p1's restart with 75, ``EXIT_RESTART``).

Without the operator's hold the stop of an older peer was a death: the
ring moved twice, and the older peers paused all their hosts for a grace
at each change (the test fails with ``hold=False`` below: "member p4:
dead" in the logs).

Slow (a crawl that outlasts five restarts, five peer processes): about
80 s of wall time.
"""

from __future__ import annotations

import signal
import time

import pytest
import trio
from previousrelease import find, materialise
from ringharness import Ring, cluster_text, fetched, hosts_of, pages_fetched
from rollingrestart import address_of, gaps_while_away, wait_until

from localweb import SiteGraph, serve_webfarm
from peer.errors import EXIT_RESTART
from ring.messages import HoldOutcome
from ring.tools.client import Contact, RestartOutcome, request_restart

COMMIT, WHY = find()
pytestmark = pytest.mark.skipif(COMMIT is None, reason=WHY)

PEERS = [f"p{i}" for i in range(1, 6)]
OLD = ("p4", "p5")  # the previous release's peers
UPGRADED = "p5"  # comes back on today's tree
DOWN = 3.5  # seconds each peer stays down: longer than dead_after (3 s)
#: As tests/e2e/test_rolling_restart.py: a death's hand-off hold (hold_timeout, 6 s here)
#: tells a death from a planned restart under any load; quiet, the worst gap is under 2 s.
MAX_GAP = 6.0


async def test_a_rolling_restart_with_two_peers_of_the_previous_release_pauses_no_host_of_the_others(tmp_path):
    assert COMMIT is not None
    tree = materialise(COMMIT, tmp_path / "previous")
    graph = SiteGraph(hosts=10, pages_per_host=130, shop=False)
    expected = graph.expected_urls(8080)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        # 2 pages/s a host: ~65 s of crawling per host, longer than five restarts of 8-12 s.
        text = cluster_text(tmp_path, farm.port, 5, rate=120.0, window=2.0, initial_delay=0.2)
        owned = {p: hosts_of(graph, farm.port, PEERS, p) for p in PEERS}
        windows: list[tuple[str, float, float]] = []
        first_codes: dict[str, int] = {}
        holds: dict[str, tuple] = {}
        async with Ring(tmp_path, text) as ring:
            try:
                with trio.fail_after(150):
                    for p in PEERS:
                        await ring.start(p, tree=tree if p in OLD else None)
                    await wait_until(lambda: pages_fetched(farm) >= len(expected) // 8)
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
                        other = "p2" if p == "p1" else "p1"
                        said = len(ring.logs[other][1].read_text())
                        await ring.start(p, tree=tree if p in OLD and p != UPGRADED else None)
                        back = time.time()
                        await wait_until(lambda: f"member {p}: alive (" in ring.logs[other][1].read_text()[said:],
                                         limit=30.0)
                        seen = time.time()
                        await wait_until(lambda: any(e.t > back for e in farm.log if e.host in owned[p])
                                         or time.time() - seen > 5.0)
                        windows.append((p, stop, time.time()))
                    await ring.wait()
            except trio.TooSlowError:
                raise AssertionError(f"the peers did not finish in time\n{ring.tails()}") from None
            codes = {p: proc.returncode for p, proc in ring.procs.items()}
            logs = {p: (tmp_path / f"{p}-1.err").read_text() + (tmp_path / f"{p}-2.err").read_text()
                    for p in PEERS}
            summaries = {p: (tmp_path / f"{p}-2.out").read_text() for p in PEERS}
            tails = ring.tails()
        nursery.cancel_scope.cancel()

    # The three peers of today's tree held each older one (the other older one cannot).
    assert holds == {p: (("p1", HoldOutcome.HELD), ("p2", HoldOutcome.HELD), ("p3", HoldOutcome.HELD))
                     for p in OLD}, holds
    assert first_codes == {p: EXIT_RESTART if p == "p1" else 0 for p in PEERS}, (first_codes, tails)
    assert codes == {p: 0 for p in PEERS}, (codes, tails)
    assert all("crawl finished (cluster done)" in out for out in summaries.values()), summaries
    for p, start, end in windows:
        others = set().union(*(owned[q] for q in PEERS if q != p))
        worst = gaps_while_away(farm, others, start, end)
        print(f"while {p} restarted: the worst gap of the others' hosts {max(worst.values(), default=0.0):.2f}s")
        late = {h: round(g, 2) for h, g in worst.items() if g >= MAX_GAP}
        assert not late, f"while {p} restarted ({end - start:.1f}s), hosts of the others waited: {late}\n{tails}"
    for p, log in logs.items():
        for q in PEERS:
            assert f"member {q}: dead" not in log, (p, q, log[-3000:])
    got = fetched(farm, farm.port)
    want = graph.expected_urls(farm.port)
    assert set(got) == want, f"missing {sorted(want - set(got))[:5]} of {len(want - set(got))}"
    twice = {u: n for u, n in got.items() if n > 1}
    assert not twice, f"fetched twice: {list(twice)[:5]} of {len(twice)}"
