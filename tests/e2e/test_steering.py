"""Steering a running ring: ``ring pause``, ``resume`` and ``set``, judged by the web server's log.

One crawl of three peers (in the test's process, tests/support/ringharness.py;
the commands as an operator runs them, each a ``python -m ring`` process):

- after ``ring pause`` returns (every live member runs the paused epoch), no
  request reaches the server until ``ring resume`` is sent, though a peer is
  stopped and started again meanwhile (it starts paused, from its data_dir's
  epoch);
- after ``ring set crawl.rules=...`` returns, no request breaks the new rule;
- after ``ring set politeness.rate=...`` returns, each host's requests are
  spaced by the new rate within one lease;
- each peer journals the last epoch in its data_dir (``settings.json``).

And a peer started with a cluster.toml whose live settings differ from the
running ring's at the same epoch is stopped with one line naming the keys
(``config_mismatch = "refuse"``, the default), or takes the ring's and says
which keys differ (``"adopt"``).
"""

from __future__ import annotations

import json
import signal
import statistics
import sys
import time
from collections import defaultdict

import trio

from ringharness import Ring, cluster_text, wait_pages
from localweb import SiteGraph, serve_webfarm

LEASE = 1.5  # cluster_text's dead_after 3.0 / 2


def starts(farm, after: float, before: float = float("inf")) -> list:  # type: ignore[no-untyped-def]
    """Page requests that reached the server in [after, before) (wall clock)."""
    return [e for e in farm.log if after <= e.t < before and e.target != "/robots.txt"]


async def test_pause_resume_a_rule_and_a_rate_changed_live_judged_by_the_server_log(tmp_path):
    graph = SiteGraph(hosts=6, pages_per_host=100, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        # 4 pages/s a host: the crawl outlasts the commands.
        text = cluster_text(tmp_path, farm.port, 3, rate=240.0, window=1.0, initial_delay=0.1)
        async with Ring(tmp_path, text) as ring:
            try:
                with trio.fail_after(150):
                    for p in ("p1", "p2", "p3"):
                        await ring.start_in_process(nursery, p)
                    await wait_pages(farm, 40)
                    paused = await ring.ring_cmd("pause")
                    t_paused = time.time()
                    # p3 stopped and started again while paused (the ring of the same test,
                    # not a second one: a ring's start costs seconds of the suite's CPU).
                    ring.kill("p3", signal.SIGTERM)
                    await ring.wait("p3")
                    await ring.start_in_process(nursery, "p3")
                    while True:  # until the new p3 runs in the ring again (its lease held)
                        status = json.loads((await ring.ring_cmd("status", "--json")).stdout)
                        row = next(r for r in status["members"] if r["id"] == "p3")
                        if row["lease"] == "held" and row["uptime"] < 60:
                            break
                        await trio.sleep(0.5)
                    t_resume = time.time()
                    resumed = await ring.ring_cmd("resume")
                    await wait_pages(farm, len(starts(farm, 0)) + 20)
                    ruled = await ring.ring_cmd("set", 'crawl.rules=["exclude:*/c1/*"]')
                    t_ruled = time.time()
                    refused = await ring.ring_cmd("set", "ring.lease=3")  # not a live key
                    await trio.sleep(2.0)
                    t_rate_asked = time.time()
                    slowed = await ring.ring_cmd("set", "politeness.rate=30")
                    t_slowed = time.time()
                    await trio.sleep(LEASE + 5.0)
                    t_end = time.time()
                    for p in ("p1", "p2", "p3"):
                        ring.procs[p].send_signal(signal.SIGTERM)  # stop as an operator would
                    await ring.wait()
            except trio.TooSlowError:
                raise AssertionError(f"the peers did not finish in time\n{ring.tails()}") from None
            tails = ring.tails()
            restarted = ring.logs["p3"][1].read_text()  # the second run's
            journals = {p: json.loads((tmp_path / p / "settings.json").read_text()) for p in ("p1", "p2", "p3")}
        nursery.cancel_scope.cancel()

    for done, epoch in ((paused, 1), (resumed, 2), (ruled, 3), (slowed, 4)):
        assert done.returncode == 0, (done.stdout, done.stderr, tails)
        assert f"epoch {epoch}:".encode() in done.stdout, done.stdout
    assert refused.returncode == 2, (refused.stdout, refused.stderr)
    assert refused.stderr.decode().startswith("error: refused by p1: ") and "ring.lease" in refused.stderr.decode()
    assert b"epoch 2: resumed" in resumed.stdout, resumed.stdout
    # Paused: the status says so, and nothing reached the server from the moment the
    # command returned (every live member runs the epoch) until resume was sent.
    assert status["settings"]["paused"] is True and status["settings"]["epoch"] == 1, status["settings"]
    assert all(m["paused"] and m["config_epoch"] == 1 for m in status["members"]), status["members"]
    # The new p3 started from its data_dir's epoch: paused, with nothing fetched.
    assert row["paused"] is True and row["config_epoch"] == 1, row
    assert "paused by ring pause" in restarted, restarted[-2000:]
    during = starts(farm, t_paused, t_resume)
    assert during == [], [(e.t - t_paused, e.host, e.target) for e in during]
    assert starts(farm, t_resume), "the crawl did not resume"
    # The rule, from the epoch's start on: no request under /c1/.
    broken = [e for e in starts(farm, t_ruled) if "/c1/" in e.target]
    assert broken == [], [(e.t - t_ruled, e.host, e.target) for e in broken]
    assert any("/c1/" in e.target for e in starts(farm, 0, t_ruled)), "the rule changed nothing to see"
    # The rate: 4 pages/s a host before, 0.5 after; within one lease of the change each
    # host's spacing is the new one.
    def gaps(after: float, before: float) -> list[float]:
        by_host: dict[str, list[float]] = defaultdict(list)
        for e in starts(farm, after, before):
            by_host[e.host].append(e.t)
        return [b - a for ts in by_host.values() for a, b in zip(ts, ts[1:])]

    fast, slow = gaps(t_ruled, t_rate_asked), gaps(t_slowed + LEASE, t_end)
    assert fast and slow, (fast, slow)
    assert statistics.median(fast) < 0.6 and min(slow) > 1.0, (sorted(fast)[:10], sorted(slow)[:10])
    # Each peer keeps the last epoch in its data_dir: a restart resumes it.
    assert {j["epoch"] for j in journals.values()} == {4}, journals
    assert len({j["doc"] for j in journals.values()}) == 1
    assert json.loads(journals["p1"]["doc"])["politeness.rate"] == 30.0


async def test_a_peer_whose_cluster_toml_differs_is_refused_naming_the_keys_or_adopts(tmp_path):
    graph = SiteGraph(hosts=6, pages_per_host=40, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        text = cluster_text(tmp_path, farm.port, 3, rate=120.0, window=1.0, initial_delay=0.1)
        async with Ring(tmp_path, text) as ring:
            with trio.fail_after(120):
                for p in ("p1", "p2"):
                    await ring.start_in_process(nursery, p)
                await wait_pages(farm, 10)
                # p3's file differs: another rate, and a rule.
                other = tmp_path / "other.toml"
                other.write_text(text.replace("rate = 120.0", "rate = 600.0").replace(
                    "[crawl]\n", '[crawl]\nrules = ["exclude:*/private/*"]\n'))
                refused = await trio.run_process(
                    [sys.executable, "-m", "peer", "--ring", str(other), "--id", "p3"],
                    capture_stdout=True, capture_stderr=True, check=False)
                # The same file, told to adopt: it takes the ring's and crawls.
                adopting = tmp_path / "adopt.toml"
                adopting.write_text(other.read_text().replace("[ring]\n", '[ring]\nconfig_mismatch = "adopt"\n'))
                ring.toml = adopting
                p3 = await ring.start_in_process(nursery, "p3")
                while "settings: now epoch 0" not in ring.logs["p3"][1].read_text():
                    await trio.sleep(0.1)
                log = ring.logs["p3"][1].read_text()
                status = json.loads((await ring.ring_cmd("status", "--json")).stdout)
                for p in ("p1", "p2", "p3"):
                    ring.procs[p].send_signal(signal.SIGTERM)
                await ring.wait()
            del p3
        nursery.cancel_scope.cancel()

    assert refused.returncode == 2, (refused.stdout, refused.stderr)
    err = refused.stderr.decode()
    last = err.strip().splitlines()[-1]  # the log lines before it, then the one line that says why
    assert "Traceback" not in err and last.startswith("error: ") and err.count("error: ") == 1, err
    assert "differ from the ring's at epoch 0" in last, last
    assert "crawl.rules, politeness.rate" in last and 'config_mismatch = "adopt"' in last, last
    assert "keys that differ from this peer's cluster.toml: crawl.rules, politeness.rate" in log, log[-2000:]
    fps = {m["id"]: m["config_fingerprint"] for m in status["members"] if m["state"] == "alive"}
    assert len(set(fps.values())) == 1 and len(fps) == 3, status["members"]
