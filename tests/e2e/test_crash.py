"""kill -9 and restart: the peer resumes from data_dir/state and nothing is lost.

Three peers crawl the local web politely; one is killed with SIGKILL part-way
and started again with the same command. Judged by the local web's log: every
expected URL fetched, and the only repeats are the fetches that were in
flight at the kill (at most the peer's ``concurrency``).

The victim is a real ``python -m peer`` process (a kill -9 needs one, and so
the ring between processes is crossed); the peers that live on run in the
test's process (tests/support/ringharness.py), the same engine without the seconds a
loaded machine takes to start each.
"""

from __future__ import annotations

import re
import signal
from collections import Counter
from functools import partial

import duckdb
import trio
from ringharness import Ring, busiest_peer, cluster_text, fetched, hosts_of, wait_pages
from localweb import HostBehaviour, SiteGraph, serve_webfarm

CONCURRENCY = 4


async def test_a_peer_killed_with_sigkill_resumes_and_loses_nothing(tmp_path):
    graph = SiteGraph(hosts=9, pages_per_host=20, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        expected = graph.expected_urls(farm.port)
        v = busiest_peer(graph, farm.port, ["p1", "p2", "p3"])  # the one killed
        # Its own hosts: it is killed a quarter into its own share, however
        # long it took to start (on a loaded machine the others once fetched a
        # quarter of the web before it fetched anything, and it had no state).
        own = hosts_of(graph, farm.port, ["p1", "p2", "p3"], v)
        share = sum(SiteGraph.host_of(u) in own for u in expected)
        # 5 pages/s per host, so the victim is mid-crawl when it is killed
        # (at 10 a quiet machine's victim had sometimes fetched all it owned)
        # (the resume line's queued count below says it had work left);
        # dead_after long enough that it is back before the others take its
        # hosts, even on a loaded machine where starting Python takes seconds.
        # The lease apart from it (by default half of dead_after): a peer
        # started again starts no request for 1.25 leases (ring/membership/lease.py's
        # grace), which at 15 s was 19 of the test's 31 s.
        text = cluster_text(tmp_path, farm.port, 3, rate=300.0, window=2.0, initial_delay=0.1,
                            concurrency=CONCURRENCY, dead_after=30.0, lease=1.0)
        async with Ring(tmp_path, text) as ring:
            try:
                with trio.fail_after(120):
                    await ring.start(v)
                    for p in sorted({"p1", "p2", "p3"} - {v}):
                        await ring.start_in_process(nursery, p)
                    await wait_pages(farm, share // 4, hosts=own)
                    ring.kill(v, signal.SIGKILL)
                    await ring.wait(v)
                    killed_rc = ring.procs[v].returncode
                    before = fetched(farm, farm.port)
                    await ring.start(v)          # the same command, no --fresh
                    await ring.wait()
            except trio.TooSlowError:
                raise AssertionError(f"the peers did not finish in time\n{ring.tails()}") from None
            codes = {p: proc.returncode for p, proc in ring.procs.items()}
            out2, tails = ring.output(v), ring.tails()
            err2 = ring.logs[v][1].read_text()
        nursery.cancel_scope.cancel()

    assert killed_rc == -signal.SIGKILL
    assert codes == {"p1": 0, "p2": 0, "p3": 0}, tails
    assert "crawl finished (cluster done)" in out2, tails
    m = re.search(r"resuming the crawl from \S+: (\d+) queued URLs", err2)
    assert m and int(m[1]) > 0, err2[-2000:]  # killed with work left
    got = fetched(farm, farm.port)
    assert set(got) == expected, f"missing {sorted(expected - set(got))[:5]}"
    twice = {u: n for u, n in got.items() if n > 1}
    # Only what the victim had in flight when it died may have been fetched again.
    assert len(twice) <= CONCURRENCY, twice
    assert all(before[u] >= 1 for u in twice)
    # Its results file holds a row per page fetched in either life: a page
    # done before the kill is there even if DuckDB had not flushed it (the
    # journal had its row), and only a refetched page can have two.
    with duckdb.connect(str(tmp_path / v / "pages.duckdb"), read_only=True) as con:
        rows = con.execute("select url, count(*) from pages where status is not null "
                           "group by url").fetchall()
    assert rows and all(n == 1 or url in twice for url, n in rows)
    ours = {u for u, _ in rows}
    for p in {"p1", "p2", "p3"} - {v}:
        with duckdb.connect(str(tmp_path / p / "pages.duckdb"), read_only=True) as con:
            ours |= {u for (u,) in con.execute("select url from pages").fetchall()}
    assert ours >= expected


async def test_a_peer_lost_for_good_is_adopted_and_coverage_is_complete(tmp_path):
    """kill -9, never restarted: the others take its hosts, adopt.py brings its frontier.

    On this web the others would find its queued pages again by re-crawling
    its hosts, so coverage alone does not prove the adoption; the adopted
    counts do, and tests/e2e/test_adopt.py shows adopted URLs that nothing else
    links to being fetched.
    """
    import sys

    from ring.messages import MemberState

    graph = SiteGraph(hosts=9, pages_per_host=20, shop=False)
    # Until adopt.py is done the others' hosts answer in 1 s, and the victim's
    # too from the kill, so the others are surely still crawling while they
    # declare the victim dead (suspect_after + dead_after, 3 s) and adopt.py
    # sends. (With only the victim's hosts slowed from the kill, the others
    # once finished their own hosts while its process was still starting, and
    # the crawl ended before adopt.py ran.)
    gate = {"held": False, "adopted": False}
    own: set[str] = set()

    def latency(host: str) -> float:
        if gate["adopted"]:
            return 0.0
        return 1.0 if gate["held"] or host not in own else 0.0

    behaviours = {h: HostBehaviour(latency=lambda _t, h=h: latency(h)) for h in graph.site_hosts()}
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(partial(serve_webfarm, graph, behaviours=behaviours))
        expected = graph.expected_urls(farm.port)
        v = busiest_peer(graph, farm.port, ["p1", "p2", "p3"])  # the one lost
        rest = sorted({"p1", "p2", "p3"} - {v})
        # Lost a quarter into its own hosts' pages, however long its process
        # took to start beside the others: it has fetched and queued both.
        own |= hosts_of(graph, farm.port, ["p1", "p2", "p3"], v)
        share = sum(SiteGraph.host_of(u) in own for u in expected)
        # 10 pages/s per host: the victim (the busiest) has work queued at the kill.
        text = cluster_text(tmp_path, farm.port, 3, rate=600.0, window=2.0, initial_delay=0.1,
                            concurrency=CONCURRENCY, dead_after=2.0)
        async with Ring(tmp_path, text) as ring:
            try:
                with trio.fail_after(150):
                    await ring.start(v)
                    for p in rest:
                        await ring.start_in_process(nursery, p)
                    await wait_pages(farm, share // 4, hosts=own)
                    gate["held"] = True
                    ring.kill(v, signal.SIGKILL)
                    await ring.wait(v)
                    # Until both others have declared it dead (the view `ring status` prints).
                    while any(ring.procs[p].crawler.peer.node.membership.members()[v].state
                              is not MemberState.DEAD for p in rest):
                        await trio.sleep(0.1)
                    adopted = await trio.run_process(
                        [sys.executable, "scripts/adopt.py", str(tmp_path / v),
                         "--ring", str(ring.toml)],
                        capture_stdout=True, capture_stderr=True, check=False)
                    assert all(ring.procs[p].returncode is None for p in rest), \
                        f"the crawl ended before the adoption\n{ring.tails()}"
                    gate["adopted"] = True
                    await ring.wait(*rest)
            except trio.TooSlowError:
                raise AssertionError(f"the peers did not finish in time\n{ring.tails()}") from None
            codes = {p: ring.procs[p].returncode for p in rest}
            tails = ring.tails()
        nursery.cancel_scope.cancel()

    assert adopted.returncode == 0, (adopted.stdout, adopted.stderr)
    # It found the lost peer's frontier and its fetched URLs, and every batch was acked.
    m = re.search(v.encode() + rb": adopted: (\d+) queued URLs and (\d+) fetched URLs", adopted.stdout)
    assert m and int(m[1]) > 0 and int(m[2]) > 0, adopted.stdout
    assert codes == {p: 0 for p in rest}, tails
    got = fetched(farm, farm.port)
    assert set(got) == expected, f"missing {sorted(expected - set(got))[:5]}"


async def test_kill_9_with_a_large_spilled_frontier_resumes_with_nothing_lost(tmp_path):
    """A frontier of ~40,000 URLs at the kill, most in segment files, survives kill -9.

    Judged by the web's log and the state left at the end: every URL the
    peer discovered (the seed and the links of every page it fetched, known
    without fetching: localweb/hostile/endless.py) was fetched or is still queued,
    and only what was in flight at the kill was fetched twice.
    """
    from localweb.hostile.endless import links, serve_endless, url

    from peer.state.journal import PeerState

    # The first checkpoint comes at about 200 pages (1 MiB of journal: a run
    # showed it at 186 pages, 37,000 URLs queued); the kill 50 pages later
    # must come before max_pages ends the crawl: at ~300 pages/s on a quiet
    # machine the snapshot came at ~300 pages and 400 ended the crawl before the
    # kill, so 600. Each page links to 200 new URLs, so the queue at the end is
    # far past the 50,000 asserted.
    hosts, max_pages, concurrency = 20, 600, 8
    async with trio.open_nursery() as nursery:
        web = await nursery.start(lambda task_status: serve_endless(hosts, log=True, task_status=task_status))
        text = cluster_text(tmp_path, web.port, 1, concurrency=concurrency, extra=(
            "[frontier]\nhead_per_host = 8\nsegment_mb = 1\ncheckpoint_mb = 1\n"))
        text = text.replace('seeds = ["http://s001.web.test:', 'seeds = ["http://h000.web.test:').replace(
            f'{web.port}/"]', f'{web.port}/p/0"]').replace(
            "[crawl]\n", f"[crawl]\nmax_pages = {max_pages}\nmax_urls_per_host = 0\nobey_robots = false\n").replace(
            # A false positive of the seen set would look like a lost URL (at the
            # default 100,000 / 0.001 a run had 746 of 626,000). Sized like this
            # (8 MiB), ~626,000 URLs fill a third of it: (1 - e^(-kn/m))^k < 1e-16.
            "capacity = 100000", "capacity = 2000000\nerror_rate = 1e-7")
        async with Ring(tmp_path, text) as ring:
            try:
                with trio.fail_after(240):
                    await ring.start("p1")
                    # Killed after a checkpoint (the frontier then is in named
                    # blocks) and after pages done since (their blocks are read).
                    while "state snapshot" not in ring.logs["p1"][1].read_text():
                        await trio.sleep(0.1)
                    at = len(web.log)
                    while len(web.log) < at + 50 and ring.procs["p1"].returncode is None:
                        await trio.sleep(0.05)
                    assert ring.procs["p1"].returncode is None, f"p1 ended before the kill\n{ring.tails()}"
                    ring.kill("p1", signal.SIGKILL)
                    await ring.wait("p1")
                    killed_rc = ring.procs["p1"].returncode
                    before = list(web.log)
                    # Resumed in process: what is judged is the engine's recovery
                    # of a spilled frontier (the command line's resume after a
                    # kill -9 is the test above's).
                    await ring.start_in_process(nursery, "p1")
                    await ring.wait("p1")
            except trio.TooSlowError:
                raise AssertionError(f"the peer did not finish in time\n{ring.tails()}") from None
            rc, err2, tails = ring.procs["p1"].returncode, ring.logs["p1"][1].read_text(), ring.tails()
        nursery.cancel_scope.cancel()

    assert killed_rc == -signal.SIGKILL
    assert rc == 0, tails
    m = re.search(r"resuming the crawl from \S+: (\d+) queued URLs \((\d+) of them on disk", err2)
    assert m and int(m[1]) > 20_000 and int(m[2]) > int(m[1]) / 2, err2[-3000:]
    got = Counter(web.log)
    twice = {k for k, n in got.items() if n > 1}
    assert len(twice) <= concurrency and twice <= set(before), twice
    rec = PeerState(tmp_path / "p1" / "state", "p1", "test").recover()
    assert rec is not None
    queued = {u for u, _ in rec.all_queued()}
    rec.spill.close()
    fetched = {url(k, hosts, web.port) for k in got}
    discovered = {url(0, hosts, web.port)} | {url(j, hosts, web.port) for k in got for j in links(k)}
    assert not fetched & queued  # nothing fetched is queued again
    lost = discovered - fetched - queued
    assert not lost, (len(lost), sorted(lost)[:5])
    assert len(queued) > 50_000
