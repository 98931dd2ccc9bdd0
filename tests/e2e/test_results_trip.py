"""A peer killed with kill -9: its results survive the trip to another machine, and its figures its restart.

- Never restarted: its data directory, copied whole as docs/operations.md
  says ("Merging the results"), merged with the others', holds a row for
  every page the web server answered it, and nothing else; and the merge
  says what it read. The victim is told apart in the server's log by a
  User-Agent of its own (its cluster.toml differs from the others' in that
  key alone). It is killed once every page the server answered it is one it
  has processed: the web then holds every new request (a latency of 1000 s),
  and the test waits until the victim's page count, as the others hear it
  gossiped, equals its answered requests in the log (the count goes up in
  the same step that commits the page's row to the journal).
- Restarted: ``ring status`` and /metrics count its pages across both lives
  (the figure both read, ``StatusFigures.pages``), as they do after a
  SIGTERM.

The victim is a real ``python -m peer`` process (kill -9 needs one); the
others, and the restarted peer, run in the test's process
(tests/support/ringharness.py). A slow file: about 20 s on the 2-core box.
"""

from __future__ import annotations

import shutil
import signal
from functools import partial

import duckdb
import trio
from clirun import run_main
from ringharness import Ring, busiest_peer, cluster_text, fetched, hosts_of, wait_pages

from localweb import HostBehaviour, SiteGraph, serve_webfarm

AGENT = "victim-bot/1"


def victim_pages(farm, port: int) -> set[str]:
    """URLs of the pages the server answered the victim (its User-Agent)."""
    return {f"http://{e.host}:{port}{e.target}" for e in farm.log
            if e.agent == AGENT and e.method == "GET" and e.target != "/robots.txt" and e.status}


def urls(db, where: str = "") -> set[str]:
    with duckdb.connect(str(db), read_only=True) as con:
        return {u for (u,) in con.execute(f"SELECT url FROM pages {where}").fetchall()}


async def test_a_killed_peers_copied_data_dir_merges_every_page_the_server_answered_it(tmp_path):
    from peer.commands.merge import main as merge_main

    # No redirects: each answered request is one page row.
    graph = SiteGraph(hosts=9, pages_per_host=20, shop=False, redirect_ratio=0.0)
    gate = {"held": False}
    held = HostBehaviour(latency=lambda _t: 1000.0 if gate["held"] else 0.0)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(partial(serve_webfarm, graph, behaviours={"*": held}))
        peers = ["p1", "p2", "p3"]
        v = busiest_peer(graph, farm.port, peers)
        rest = sorted(set(peers) - {v})
        own = hosts_of(graph, farm.port, peers, v)
        # dead_after 30 s: nobody takes the victim's hosts before the test
        # stops the others, so no later fetch can hide a row it lost.
        text = cluster_text(tmp_path, farm.port, 3, rate=300.0, window=2.0, initial_delay=0.1,
                            concurrency=4, dead_after=30.0)
        victim_toml = tmp_path / "victim.toml"
        victim_toml.write_text(text.replace("[crawl]\n", f'[crawl]\nuser_agent = "{AGENT}"\n', 1)
                               .replace("timeout = 5.0", "timeout = 60.0"))
        async with Ring(tmp_path, text) as ring:
            try:
                with trio.fail_after(120):
                    await ring.start(v, "--ring", str(victim_toml))
                    for p in rest:
                        await ring.start_in_process(nursery, p)
                    await wait_pages(farm, 15, hosts=own)
                    gate["held"] = True
                    views = [ring.procs[p].crawler.peer.node.membership for p in rest]
                    while not all(m.members()[v].pages == len(victim_pages(farm, farm.port))
                                  for m in views):
                        await trio.sleep(0.05)
                    ring.kill(v, signal.SIGKILL)
                    await ring.wait(v)
                    for p in rest:
                        ring.kill(p, signal.SIGTERM)
                    await ring.wait(*rest)
            except trio.TooSlowError:
                raise AssertionError(f"the peers did not stop in time\n{ring.tails()}") from None
            answered = victim_pages(farm, farm.port)
            codes = {p: ring.procs[p].returncode for p in peers}
            tails = ring.tails()
        nursery.cancel_scope.cancel()
    assert codes == {v: -signal.SIGKILL, **{p: 0 for p in rest}}, tails
    assert len(answered) >= 15

    # Copied to the merging machine as the docs say: the whole data directory.
    copy = tmp_path / "copied" / v
    shutil.copytree(tmp_path / v, copy)
    out = tmp_path / "crawl.duckdb"
    res = run_main(merge_main, [str(copy), *(str(tmp_path / p) for p in rest), "-o", str(out)])
    assert res.returncode == 0, res.stderr
    assert urls(out, f"WHERE peer = '{v}'") == answered  # every page it was answered, nothing else
    assert urls(out) >= answered
    # It says what it read of each input, the victim's log replayed among it.
    lines = res.stdout.splitlines()
    mine = next(line for line in lines if line.startswith(f"input      {copy}: "))
    assert mine.startswith(f"input      {copy}: {len(answered)} pages from pages.duckdb; ")
    assert "stats.json not found" in mine  # a killed peer writes none
    for p in rest:  # (in-process peers write no stats.json: the command line does)
        assert any(line.startswith(f"input      {tmp_path / p}: ") for line in lines), lines
    # What copying pages.duckdb alone (the old advice) would have given.
    bare = tmp_path / "bare" / "p.duckdb"
    bare.parent.mkdir()
    shutil.copy(copy / "pages.duckdb", bare)
    alone = run_main(merge_main, [str(bare), "-o", str(tmp_path / "bare.duckdb")])
    if alone.returncode == 0:
        assert len(urls(tmp_path / "bare.duckdb")) < len(answered)


async def test_figures_count_the_pages_of_a_peer_killed_with_sigkill_after_its_restart(tmp_path):
    graph = SiteGraph(hosts=6, pages_per_host=20, shop=False, redirect_ratio=0.0)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        text = cluster_text(tmp_path, farm.port, 1, rate=300.0, window=2.0, initial_delay=0.1,
                            concurrency=4)
        async with Ring(tmp_path, text) as ring:
            try:
                with trio.fail_after(120):
                    await ring.start("p1")
                    await wait_pages(farm, 30)
                    ring.kill("p1", signal.SIGKILL)
                    await ring.wait("p1")
                    first = sum(fetched(farm, farm.port).values())
                    again = await ring.start_in_process(nursery, "p1")
                    await again.wait()
            except trio.TooSlowError:
                raise AssertionError(f"the peer did not finish in time\n{ring.tails()}") from None
            figures = again.crawler.status_figures()
            tails = ring.tails()
        nursery.cancel_scope.cancel()
    got = fetched(farm, farm.port)
    assert again.returncode == 0, tails
    assert first >= 30
    # Each URL requested once across both lives (a page in flight at the kill
    # was requested again, and counted then): ring status's and /metrics'
    # pages are all of them, not the restarted run's alone.
    assert figures.pages == len(got), (figures.pages, len(got), first)
