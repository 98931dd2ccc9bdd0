"""``python -m ring seed add``: URLs added to a running ring, routed to their owners, counted by outcome.

The ring of three runs in the test's process (tests/support/ringharness.py),
kept busy by a slow host (a low rate) so it is running when the tool, a real
``python -m ring`` process as an operator runs it, adds URLs: new hosts of
the local web, and lines refused by design. Judged by the web server's log
(each new host's page fetched once) and by what the tool printed and
``ring status --json`` shows.

The second test puts each peer, and the web, in a network namespace of its
own (root only; skipped elsewhere with the reason), so the web's log names
which peer made each request: a new host's page is fetched by the owner
``ring.hashring`` names, whichever peer took the line. About 15 s.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter

import pytest
import trio
from ringharness import Ring, cluster_text, fetched
from localweb import SiteGraph, serve_webfarm
from localweb.netns.partition import WEB_PORT, Web, cluster_toml
from localweb.netns.ring import WEB, NetRing, available
from localweb.sitegraph.server import read_log
from peer.core.urls.normalize import host_key
from ring.hashring import HashRing

#: New hosts of the local web: the graphs below have s001 and s002 only, so no link leads to them.
#: On port 8080 (the namespaces' web) p2, p3, p2, p1, p1, p1 own them: each peer owns some.
NEW = [f"s{n:03d}" for n in range(44, 50)]


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


needs_netns = pytest.mark.skipif(available() is not None, reason=available() or "")


@needs_netns
def test_a_url_added_from_another_machine_is_fetched_by_its_hosts_owner(tmp_path):
    """Peers and the web each in a network namespace of their own, so the web's log names the
    machine of every request (``client``); the tool runs on the web's machine, as an operator's
    laptop would, and each new host's request comes from the owner ``ring.hashring`` names."""
    log_path = tmp_path / "requests.jsonl"
    with NetRing(3) as net:
        toml = tmp_path / "cluster.toml"
        cluster_toml(toml, net, ring={"gossip_interval": 0.2, "suspect_after": 1.0, "dead_after": 3.0},
                     rate=120.0, sections={"crawl": {"robots_tries": 1}})
        with (tmp_path / "web.err").open("ab") as web_err:
            farm = net.popen(WEB, [sys.executable, "-m", "localweb.webfarm", "--host", net.address(WEB),
                                   "--private", "--port", str(WEB_PORT), *Web(hosts=2, pages=12).argv(),
                                   "--log", str(log_path)],
                             stdout=subprocess.PIPE, stderr=web_err, env=dict(os.environ))
        assert farm.stdout is not None
        assert farm.stdout.readline().startswith(b"listening on")
        peers = {}
        for p in ("p1", "p2", "p3"):
            with (tmp_path / f"{p}.err").open("ab") as err:
                peers[p] = net.popen(p, [sys.executable, "-m", "peer", "--ring", str(toml), "--id", p],
                                     stderr=err, env=dict(os.environ))
        deadline = time.monotonic() + 60
        while not (log_path.exists() and log_path.stat().st_size) and time.monotonic() < deadline:
            time.sleep(0.05)  # the ring formed and crawls
        added = [f"http://{h}.web.test:{WEB_PORT}/" for h in NEW]
        tool = net.popen(WEB, [sys.executable, "-m", "ring", "seed", "add", *added, "http://x.example.org/",
                               "ftp://y.web.test/", "--ring", str(toml)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
        out, err = tool.communicate(timeout=60)
        codes = {}
        for p, proc in peers.items():
            try:
                codes[p] = proc.wait(timeout=max(1.0, deadline + 60 - time.monotonic()))
            except subprocess.TimeoutExpired:
                codes[p] = net.kill(proc, 3.0)
        net.kill(farm, 3.0)
        farm.stdout.close()
        address = {p: net.address(p) for p in peers}
    tails = "\n".join((tmp_path / f"{p}.err").read_text(errors="replace")[-2000:] for p in peers)
    assert tool.returncode == 0, err.decode()
    assert re.search(r"routed\s+6:", out.decode()) and re.search(r"refused\s+2: invalid 1, scope 1",
                                                                 out.decode()), out.decode()
    assert codes == {"p1": 0, "p2": 0, "p3": 0}, tails
    ring = HashRing({p: 1.0 for p in peers})
    owners = Counter()
    for url in added:
        hits = [e for e in read_log(str(log_path)) if f"http://{e.host}:{WEB_PORT}{e.target}" == url]
        owner = ring.owner(host_key(url))
        owners[owner] += 1
        assert [e.client for e in hits] == [address[owner]], (url, owner, hits)
    assert set(owners) == {"p1", "p2", "p3"}, owners  # taken at p1: queued there, forwarded to the others
