"""A peer started with ``--leave`` and stopped by SIGTERM (a service manager's stop) starts again
with the same command: a graceful leave is a clean stop, and the restarted peer rejoins and
resumes (peer/core/run/runs.py rule 4). Its leave is remembered by the peers that stayed, and
by one of them restarted meanwhile (``Membership.remember_left``), so none takes it for a crash.

p1 runs as a real process (``python -m peer`` with its signal handler, as a unit runs it);
the others run in the test's process (tests/support/ringharness.py). The local web's request
log is the judge.
"""

from __future__ import annotations

import signal
from pathlib import Path

import trio

from ringharness import Ring, cluster_text, fetched, wait_pages
from localweb import SiteGraph, serve_webfarm


async def said(log: Path, text: str) -> None:
    """Until ``log`` holds ``text`` (the caller bounds the wait)."""
    while text not in (log.read_text() if log.exists() else ""):
        await trio.sleep(0.1)


async def test_a_peer_stopped_with_leave_starts_again_with_the_same_command(tmp_path):
    graph = SiteGraph(hosts=8, pages_per_host=30, shop=False)
    total = len(graph.expected_urls(8080))
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        # 4 pages/s a host: about 8 s of crawling for 240 pages.
        text = cluster_text(tmp_path, farm.port, 3, rate=240.0, window=2.0, initial_delay=0.2)
        async with Ring(tmp_path, text) as ring:
            try:
                with trio.fail_after(150):
                    for p in ("p2", "p3"):
                        await ring.start_in_process(nursery, p)
                    first = await ring.start("p1", "--leave")
                    await said(tmp_path / "p1-1.err", "member p3: alive")  # it is in the ring
                    await wait_pages(farm, total // 4)
                    first.send_signal(signal.SIGTERM)  # systemctl stop, docker stop
                    await first.wait()
                    left_out = ring.output("p1")
                    # p2 restarts while p1 is gone (a rolling restart): it must
                    # remember p1 left, not wait for it and call it dead.
                    ring.kill("p2", signal.SIGTERM)
                    await ring.wait("p2")
                    await ring.start_in_process(nursery, "p2")
                    await wait_pages(farm, total // 2)
                    again = await ring.start("p1", "--leave")  # the same argv
                    await ring.wait()
            except trio.TooSlowError:
                raise AssertionError(f"the peers did not finish in time\n{ring.tails()}") from None
            second_err = ring.logs["p1"][1].read_text()
            outputs = {p: ring.output(p) for p in ring.procs}
            stayers = {p: ring.logs[p][1].read_text() for p in ("p2", "p3")}
            restarted = (tmp_path / "p2-2.err").read_text()
            codes = {p: proc.returncode for p, proc in ring.procs.items()}
            tails = ring.tails()
        nursery.cancel_scope.cancel()

    assert first.returncode == 0 and "crawl finished (left the ring)" in left_out, tails
    assert again.returncode == 0, tails  # it started, and ended with the crawl
    assert codes == {"p1": 0, "p2": 0, "p3": 0}, tails
    assert "resuming the crawl state" in second_err and "left the ring gracefully" in second_err, second_err
    assert "crawl finished (cluster done)" in outputs["p1"], outputs["p1"]
    for p, log in {**stayers, "p2 restarted": restarted}.items():
        assert "member p1: left (left)" in log, (p, log[-2000:])
        assert "member p1: dead" not in log and "crashed" not in log, (p, log[-3000:])
    # Nothing lost: the URLs it handed over came back with its hosts and were
    # fetched (a seen set that kept them would drop them); nothing twice.
    got = fetched(farm, farm.port)
    expected = graph.expected_urls(farm.port)
    assert set(got) == expected, f"missing {sorted(expected - set(got))[:5]} of {len(expected - set(got))}"
    twice = {u: n for u, n in got.items() if n > 1}
    assert not twice, f"fetched twice: {list(twice)[:5]} of {len(twice)}"
