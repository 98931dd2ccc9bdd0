"""A running crawl steered live (``Crawler.adopt_settings``): paused, its rules changed, resumed.

One peer crawls the hostile web's normal site in this process
(:func:`localweb.processes.peerrun.run_in_process`: the same ``Crawler``,
fetcher and store as ``python -m peer``) and is steered from its own event
loop, as the ring's settings epochs steer it. Judged by the server's request
log, as an operator would: while paused no request reaches the server but
those already in flight, and from the rule change on no request breaks the
new rule but those already in flight.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from localweb import HostileWeb, serve_in_thread
from localweb.hostile.site import Site
from localweb.processes.peerrun import cluster_toml, run_in_process
from peer.core.config.livekeys import assign, set_paused

#: How long the crawl stays paused (wall seconds): long next to a request on loopback (ms).
PAUSED_FOR = 1.0
EXCLUDED = re.compile(r"/p/1[0-9]*\.html")


def test_a_paused_crawl_starts_no_request_and_a_new_rule_holds_from_its_change(tmp_path: Path) -> None:
    web = HostileWeb(site=Site(pages=200))
    steps: dict[str, Any] = {}

    def steer(crawler: Any) -> None:
        pages = [e for e in list(web.log) if e.target != "/robots.txt"]
        peer = crawler.peer
        if "paused" not in steps and len(pages) >= 5:
            steps["inflight"] = {url for url, _ in peer.crawl.inflight_urls()}
            steps["paused"] = time.time()
            crawler.adopt_settings(assign(set_paused(peer.settings, True), ['crawl.rules=["exclude:*/p/1*"]']))
        elif "paused" in steps and "resumed" not in steps and time.time() - steps["paused"] >= PAUSED_FOR:
            steps["resumed"] = time.time()
            crawler.adopt_settings(set_paused(peer.settings, False))

    with serve_in_thread(web):
        toml = cluster_toml(tmp_path, [web.url("site.test", "/")])
        run = run_in_process(toml, timeout=60.0, poll=0.01, during=steer)
    assert run.codes == [0] and not run.timed_out
    assert "resumed" in steps, "the crawl ended before it could be paused and resumed"
    url = lambda e: web.url(e.host, e.target)  # noqa: E731
    inflight = steps["inflight"]
    while_paused = [url(e) for e in web.log if steps["paused"] <= e.t < steps["resumed"] and e.target != "/robots.txt"]
    assert set(while_paused) <= inflight, while_paused
    broke = [url(e) for e in web.log if e.t >= steps["paused"] and EXCLUDED.fullmatch(e.path)]
    assert set(broke) <= inflight, broke
    after = [e for e in web.log if e.t >= steps["resumed"]]
    assert after, "nothing was fetched after the resume"
    # Every page reachable through pages the new rule allows was fetched, each once.
    site, fetched = web.site, web.fetched("site.test")
    reach, todo = {"/"}, ["/"]
    while todo:
        for link in site.links(site.page_of(todo.pop()) or 0):
            if link not in reach and not EXCLUDED.fullmatch(link):
                reach.add(link)
                todo.append(link)
    assert {web.url("site.test", p) for p in reach} <= set(fetched) and max(fetched.values()) == 1
    log = run.peers[0].err.read_text()
    assert "paused by ring pause" in log and "resumed: requests start again" in log
    assert "live settings changed: crawl.rules" in log
