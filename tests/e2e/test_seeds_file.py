"""``crawl.seeds_file``: thousands of seed lines, each counted by its outcome, the real hosts fetched.

The first test runs a ring of three in the test's process (tests/support/ringharness.py):
a gzip seeds file whose lines are mostly out of scope, unreachable or
invalid by design, and a few of the local web's hosts. The second kills a
real ``python -m peer`` (a kill -9 needs a process) in the middle of a file
and starts it again: judged by the web server's log and the counters, no
line is lost or counted twice.
"""

from __future__ import annotations

import gzip
import re
import signal

import trio
from ringharness import Ring, cluster_text, fetched, free_ports
from localweb import SiteGraph, serve_webfarm

SUMMARY = re.compile(r"seeds_file: ([\d,]+) lines read \(([^)]*)\)")


def counts(text: str) -> dict[str, int]:
    """The outcomes of a peer's last ``seeds_file:`` summary line."""
    found = SUMMARY.findall(text)
    assert found, text[-3000:]
    total, parts = found[-1]
    out = {k: int(v.replace(",", "")) for k, v in (p.rsplit(" ", 1) for p in parts.split(", "))}
    assert sum(out.values()) == int(total.replace(",", ""))
    return out


def seeds_text(tmp_path, port: int, peers: int = 3) -> str:
    """A ring's cluster.toml whose seeds are in seeds.txt.gz; an unreadable robots.txt is tried once."""
    text = cluster_text(tmp_path, port, peers)
    text = text.replace(f'seeds = ["http://s001.web.test:{port}/"]', 'seeds_file = "seeds.txt.gz"')
    return text.replace("timeout = 5.0", "timeout = 5.0\nrobots_tries = 1")


async def test_every_line_of_a_seeds_file_is_counted_and_its_real_hosts_fetched(tmp_path):
    graph = SiteGraph(hosts=3, pages_per_host=6, shop=False)
    [dead] = free_ports(1)  # nothing listens there: unreachable by design
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        port = farm.port
        expected = graph.expected_urls(port)
        roots = sorted({f"http://{SiteGraph.host_of(u)}:{port}/" for u in expected})
        lines = ["# a seeds file", ""]
        lines += [f"http://d{i}.web.test:{dead}/" for i in range(150)]           # unreachable
        lines += [f"http://h{i}.example.org/p{i}" for i in range(3000)]          # out of scope
        lines += [f"ftp://f{i}.web.test/" for i in range(100)] + ["a b c"] * 50  # invalid
        lines += roots + roots                                                   # real, and again
        (tmp_path / "seeds.txt.gz").write_bytes(gzip.compress("\n".join(lines).encode()))
        async with Ring(tmp_path, seeds_text(tmp_path, port)) as ring:
            try:
                with trio.fail_after(120):
                    for p in ("p1", "p2", "p3"):
                        await ring.start_in_process(nursery, p)
                    await ring.wait()
            except trio.TooSlowError:
                raise AssertionError(f"the peers did not finish in time\n{ring.tails()}") from None
            codes = {p: proc.returncode for p, proc in ring.procs.items()}
            reader, others, tails = ring.output("p1"), ring.output("p2") + ring.output("p3"), ring.tails()
        nursery.cancel_scope.cancel()

    assert codes == {"p1": 0, "p2": 0, "p3": 0}, tails
    got = counts(reader)  # p1, the lowest id, read the file; the others did not
    assert "seeds_file:" not in others
    assert sum(got.values()) == len(lines)
    assert got["skipped"] == 2 and got["invalid"] == 150 and got["scope"] == 3000
    # Each of the 150 + 3 + 3 routed lines is queued at p1, forwarded to its owner, or seen already.
    assert got.get("queued", 0) + got.get("forwarded", 0) + got.get("seen", 0) == 150 + 2 * len(roots)
    log = fetched(farm, port)
    assert set(log) == expected and all(n == 1 for n in log.values()), log


async def test_a_kill_mid_file_and_a_restart_neither_lose_nor_repeat_a_line(tmp_path):
    """One peer alone, as a real process: kill -9 while it reads a file of 200,000 lines, then the same command."""
    graph = SiteGraph(hosts=30, pages_per_host=1, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        port = farm.port
        roots = sorted({f"http://{SiteGraph.host_of(u)}:{port}/" for u in graph.expected_urls(port)})
        # The real hosts spread over the file, between lines out of scope.
        lines: list[str] = []
        for i in range(200_000):
            lines.append(roots[i // 2000] if i % 2000 == 0 and i // 2000 < len(roots)
                         else f"http://h{i}.example.org/")
        (tmp_path / "seeds.txt.gz").write_bytes(gzip.compress("\n".join(lines).encode()))
        # The real hosts are in the first 60,000 lines: a kill after a few pages is mid-file.
        async with Ring(tmp_path, seeds_text(tmp_path, port, peers=1)) as ring:
            try:
                with trio.fail_after(150):
                    await ring.start("p1")
                    with trio.move_on_after(60):
                        while ring.procs["p1"].returncode is None and fetched(farm, port).total() < 3:
                            await trio.sleep(0.05)
                    ring.kill("p1", signal.SIGKILL)
                    await ring.wait("p1")
                    killed_rc = ring.procs["p1"].returncode
                    before = fetched(farm, port)
                    await ring.start("p1")
                    await ring.wait("p1")
            except trio.TooSlowError:
                raise AssertionError(f"the peer did not finish in time\n{ring.tails()}") from None
            rc, out, err = ring.procs["p1"].returncode, ring.output("p1"), ring.logs["p1"][1].read_text()
        nursery.cancel_scope.cancel()

    assert killed_rc == -signal.SIGKILL and rc == 0, err[-3000:]
    m = re.search(r"going on from byte ([\d,]+) \(([\d,]+) lines read before\)", err)
    assert m, err[-3000:]  # killed in the middle of the file
    assert 0 < int(m[2].replace(",", "")) < len(lines)
    got = counts(out)
    assert sum(got.values()) == len(lines)  # none lost, none counted twice
    assert got["scope"] == len(lines) - len(roots)
    log = fetched(farm, port)
    assert set(roots) <= set(log)  # every real host's seed fetched (their links too)
    # The only repeats: requests in flight at the kill (journal rule 1), never a seed read twice.
    twice = {u for u, n in log.items() if n > 1}
    assert len(twice) <= 16 and all(before[u] for u in twice), twice
