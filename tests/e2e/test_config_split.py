"""Two cluster.toml files started at once: the ring runs one of them, judged by the web server's log.

Four peers (in the test's process, tests/support/ringharness.py) start at the
same moment, p1 and p2 with a file that excludes ``/c1/``, p3 and p4 with one
that excludes ``/c2/``, every one with ``[ring] config_mismatch = "adopt"``.
No file has a majority of the four voters, so the ring settles on the lower
fingerprint (``ring.membership.epochs`` rule 8): the other half takes it and
says which keys differ from its own file; no peer vouches for a member that
runs the other file, so no request ever breaks the rule of the file the ring
settled on, from the first request on. Before epoch 0 was in the vouch, each
half confirmed its own file and both crawled, each under its own rule.
"""

from __future__ import annotations

import json
import signal
import time

import trio

from ringharness import Ring, cluster_text, wait_pages
from localweb import SiteGraph, serve_webfarm


async def test_two_files_started_at_once_run_one_and_no_request_breaks_its_rules(tmp_path):
    graph = SiteGraph(hosts=8, pages_per_host=100, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        text = cluster_text(tmp_path, farm.port, 4, rate=240.0, window=1.0, initial_delay=0.1).replace(
            "[ring]\n", '[ring]\nconfig_mismatch = "adopt"\n')
        files = {}
        for name, excluded in (("a", "c1"), ("b", "c2")):
            files[name] = tmp_path / f"{name}.toml"
            files[name].write_text(text.replace("[crawl]\n", f'[crawl]\nrules = ["exclude:*/{excluded}/*"]\n'))
        t0 = time.time()
        async with Ring(tmp_path, files["a"].read_text()) as ring:
            try:
                with trio.fail_after(120):
                    for p, name in (("p1", "a"), ("p3", "b"), ("p2", "a"), ("p4", "b")):
                        ring.toml = files[name]
                        await ring.start_in_process(nursery, p)
                    await wait_pages(farm, 200)
                    status = json.loads((await ring.ring_cmd("status", "--json")).stdout)
                    for p in ("p1", "p2", "p3", "p4"):
                        ring.procs[p].send_signal(signal.SIGTERM)
                    await ring.wait()
            except trio.TooSlowError:
                raise AssertionError(f"the peers did not finish in time\n{ring.tails()}") from None
            logs = {p: err.read_text() for p, (_, err) in ring.logs.items()}
        nursery.cancel_scope.cancel()

    # One document in the whole ring, said by every member's status row.
    fps = {m["id"]: m["config_fingerprint"] for m in status["members"] if m["state"] == "alive"}
    assert len(fps) == 4 and len(set(fps.values())) == 1, (fps, {p: log[-1500:] for p, log in logs.items()})
    # The half whose file lost took the other's, naming the key; the winners took nothing.
    took = sorted(p for p, log in logs.items() if "settings: now epoch 0" in log)
    assert took in (["p1", "p2"], ["p3", "p4"]), took
    settled, other = ("c2", "c1") if took == ["p1", "p2"] else ("c1", "c2")
    # The server's log, from before the first peer started: no request the settled rule excludes.
    pages = [e for e in farm.log if e.t >= t0 and e.target != "/robots.txt"]
    broken = [(round(e.t - t0, 2), e.host, e.target) for e in pages if f"/{settled}/" in e.target]
    assert broken == [], (len(broken), broken[:10])
    assert any(f"/{other}/" in e.target for e in pages), "the losing file's rule was never put to the test"
    for p in took:
        assert "keys that differ from this peer's cluster.toml: crawl.rules" in logs[p], logs[p][-2000:]
        journal = json.loads((tmp_path / p / "settings.json").read_text())  # resumed after a restart
        assert journal["epoch"] == 0 and journal["file"] != journal["fingerprint"], journal
