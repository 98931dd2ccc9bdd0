"""A continuous crawl whose hosts move mid-run: their schedule, cookies and digests go with them.

Two peers crawl the site graph with revisits on, cookies on and duplicate
detection on, on a web whose pages keep state of their visitors
(localweb/sitegraph/statefarm.py): each page sends an ETag and answers a
matching ``If-None-Match`` with a 304, each host sets a cookie. Once the
hosts have been revisited, a third peer joins, and the hosts it gains are
handed to it with their revisit records, cookies and digests
(peer/core/handoff/state.py, ring/statebox.py).

Judged as a site owner would, from the web server's request log, and by
each peer's own ``fetches`` table (which peer made each visit, and of what
kind; the in-process peers share one client address):

- the moved hosts' pages are still revisited after the move, on their
  schedule, by the new owner, and as revisits: conditional, answered 304;
  no page of theirs is fetched as new (a 200) after the move;
- every request of a moved host after the move carries the host's cookie,
  the new owner's first one included;
- the old owner's last visit of a moved host comes before the new owner's
  first: one owner at a time.

Then the third peer leaves gracefully (``ring leave``): its hosts go back
with their state, acked before it exits (its state box is empty at its
end), and the two that stay revisit them, conditionally, with the cookie.

Without the hand-off of the state (the code before it), the old owner
kept the records: each came due there, was passed on as a URL, and the new
owner dropped it as seen, so the moved hosts were never revisited again.
"""

from __future__ import annotations

import time
from collections import defaultdict

import duckdb
import trio

from ringharness import Ring, cluster_text, free_ports, hosts_of
from localweb import SiteGraph, serve_webfarm
from localweb.sitegraph.statefarm import cookie_of

INTERVAL = 3.0  # min_interval = initial_interval: a page is revisited every 3-4.5 s
AFTER_JOIN = 14.0  # seconds the ring of three runs
AFTER_LEAVE = 2 * INTERVAL  # seconds the ring of two runs again after the third left


def _visits(path) -> list[tuple[str, str, float, str, bool, int | None]]:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute("SELECT url, host, epoch(fetched_at), kind, conditional, status FROM fetches").fetchall()


async def test_a_moved_host_is_revisited_on_schedule_by_its_new_owner_with_its_cookie(tmp_path):
    graph = SiteGraph(hosts=20, pages_per_host=3, links_per_page=3, shop=False)
    extra = f"""
[revisit]
enabled = true
min_interval = {INTERVAL}
initial_interval = {INTERVAL}
max_interval = {1.5 * INTERVAL}
jitter = 0.0

[dedupe]
enabled = true
# The site graph's pages are runs of one pool of text blocks: 19 pairs of
# these 120 share 81-99% of their 3-word shingles and come within k = 3 of
# each other, and a near duplicate's links are not followed, so a moved host
# could go undiscovered. This test is of the state a host's move carries
# (digests among it), not of near duplicates: only identical fingerprints.
k = 0
"""
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(lambda task_status: serve_webfarm(
            graph, validators=True, cookies=True, task_status=task_status))
        moved = hosts_of(graph, farm.port, ["p1", "p2", "p3"], "p3")
        assert moved, "p3 gains no host on this port: make the web bigger"
        text = cluster_text(tmp_path, farm.port, 2, rate=600.0, concurrency=8).replace(
            "allow_private = true", "allow_private = true\ncookies = true") + extra
        async with Ring(tmp_path, text) as ring:
            try:
                with trio.fail_after(120):
                    for p in ("p1", "p2"):
                        await ring.start_in_process(nursery, p)
                    # Every page found (none new for two intervals), and every moved
                    # host revisited (a 304), before the join.
                    known, still = 0, 0.0
                    while still < 2 * INTERVAL or not moved <= {e.host for e in farm.log if e.status == 304}:
                        await trio.sleep(0.5)
                        n = len({(e.host, e.target) for e in farm.log})
                        known, still = n, (still + 0.5 if n == known else 0.0)
                    t_join = time.time()
                    port = free_ports(1)[0]
                    await ring.start_in_process(nursery, "p3", address=f"tcp://127.0.0.1:{port}",
                                                data_dir=tmp_path / "p3")
                    await trio.sleep(AFTER_JOIN)
                    # p3 leaves gracefully (what `ring leave --id p3` asks): its hosts, and
                    # their state, go back to p1 and p2, acked before it exits.
                    t_leave = time.time()
                    ring.procs["p3"].crawler.leave()
                    await ring.wait("p3")
                    t_left = time.time()
                    await trio.sleep(AFTER_LEAVE)
                    for p in ("p1", "p2"):
                        ring.kill(p, 15)
                    await ring.wait()
            except trio.TooSlowError:
                raise AssertionError(f"the peers did not finish in time\n{ring.tails()}") from None
            codes = {p: proc.returncode for p, proc in ring.procs.items()}
            nodes = {p: proc.crawler.peer.node for p, proc in ring.procs.items()}
            logs = {p: ring.logs[p][1].read_text() for p in ring.procs}
            tails = ring.tails()
        nursery.cancel_scope.cancel()
    assert codes == {"p1": 0, "p2": 0, "p3": 0}, tails
    before = {(e.host, e.target) for e in farm.log if e.t <= t_join and e.status == 200}
    after = [e for e in farm.log if e.host in moved and e.t > t_join]
    by_target: dict[tuple[str, str], list[float]] = defaultdict(list)
    for e in after:
        fields = dict(e.headers)
        # Every request of a moved host carries its cookie, handed over with it.
        assert cookie_of(e.host) in fields.get("cookie", ""), (e, tails)
        if e.target != "/robots.txt" and (e.host, e.target) in before:
            # No page fetched as new: a revisit sends its validator and gets a 304.
            assert e.status != 200, (e, tails)
            if e.status == 304:
                assert "if-none-match" in fields, e
            by_target[(e.host, e.target)].append(e.t)
    # On schedule: each moved host's pages are revisited after the move, again and again.
    assert {h for h, _ in by_target} == moved, (sorted(by_target), tails)
    assert all(len(ts) >= 2 for ts in by_target.values()), by_target

    visits = {p: _visits(tmp_path / p / "pages.duckdb") for p in ("p1", "p2", "p3")}
    # After the leave, the hosts are back with p1 and p2 and revisited there, as revisits, on
    # the schedule p3 handed back (each page's record went with it: none fetched as new).
    back = [v for p in ("p1", "p2") for v in visits[p] if v[1].split(":")[0] in moved and v[2] > t_left]
    assert {v[1].split(":")[0] for v in back} == moved, (back, tails)
    assert all(kind == "revisit" and cond and status == 304 for _, _, _, kind, cond, status in back), back
    mine = [v for v in visits["p3"] if v[1].split(":")[0] in moved]
    assert mine and all(kind == "revisit" and cond and status == 304 for _, _, _, kind, cond, status in mine), mine
    assert {v[1].split(":")[0] for v in mine} == moved
    # One owner at a time: the old owner's last visit of a moved host before the new owner's first.
    for host in moved:
        first_new = min(t for _, h, t, *_ in mine if h.split(":")[0] == host)
        old = [t for p in ("p1", "p2") for _, h, t, *_ in visits[p] if h.split(":")[0] == host and t < t_leave]
        assert old and max(old) < first_new, (host, max(old), first_new)
    # The state went with its hosts, acked, and the new owner took each kind.
    taken = nodes["p3"].dropped
    assert all(taken[f"handoff_state.{k}_taken"] > 0 for k in ("revisits", "cookies", "digests")), taken
    assert taken["handoff_state.unused"] == 0
    assert nodes["p1"].statebox.idle and nodes["p2"].statebox.idle  # acked: nothing kept for p3
    # The leaver's state went back, acked before it exited.
    back_taken = nodes["p1"].dropped + nodes["p2"].dropped
    assert back_taken["handoff_state.revisits_taken"] > 0 and back_taken["handoff_state.cookies_taken"] > 0, back_taken
    assert nodes["p3"].statebox.idle and nodes["p3"].statebox.counts["handoff_state.acked"] > 0
    assert all("hand-off" in logs[p] for p in ("p1", "p2") if nodes[p].statebox.counts), logs
