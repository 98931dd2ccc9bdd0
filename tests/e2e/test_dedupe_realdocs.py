"""End to end: real documentation pages and their labelled copies on several hosts, crawled by a ring of three.

The corpus is ``localweb.sitegraph.realdocs`` (Python, PostgreSQL and SQLite
pages from Debian's doc packages; skipped with the reason when they are
missing), served by :func:`localweb.judges.duplicates.docs_web`: originals on
three hosts a site, each copy (exact mirror, date line, session id, print
view, navigation change) on a mirror host, so an original and its copies are
mostly fetched by different peers and judged by the band owners. Three peers
run in this process (``Ring.start_in_process``) with ``[dedupe]`` on; the
judge is the peers' ``pages`` rows: per kind, a copy is found when its row
names a page of its own family; a row naming a page of another family is a
false verdict. The full corpus (25 originals a site, real processes) is
``scripts/judge_dedupe_realdocs.py``.

Exact mirrors on another peer's host are labelled ``near`` until exact
digests are found across the ring; a copy found is counted whatever its
label, and the labels are printed apart.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from ringharness import Ring

from localweb import HostileWeb
from localweb.hostile.wire import reply
from localweb.judges.duplicates import by_verdicts, docs_web
from localweb.processes.peerrun import cluster_toml, read_rows
from localweb.sitegraph.realdocs import SITES, Kind, corpus, missing
from ring.hashring import HashRing

GONE = [m for s in SITES if (m := missing(s))]
pytestmark = pytest.mark.skipif(bool(GONE), reason="; ".join(GONE))
K = 3
PER_SITE = 4  # 12 originals, 60 copies and 12 other pages: the suite's sample


async def test_every_kind_of_copy_is_found_across_three_peers_and_no_other_page(tmp_path: Path) -> None:
    c = corpus(PER_SITE, seed=5, negatives=2 * PER_SITE)
    web = HostileWeb()
    async with trio.open_nursery() as nursery:
        await nursery.start(web.serve)
        dw = docs_web(c, port=web.port)
        for (host, path), body in dw.pages.items():
            web.program[(host, path)] = reply(200, body, content_type="text/html; charset=utf-8")
        toml = cluster_toml(tmp_path, [web.url(h, p) for h, p in dw.seeds], peers=3,
                            sections={"dedupe": {"enabled": True, "k": K}, "crawl": {"max_depth": 2}})
        async with Ring(tmp_path, toml.read_text()) as ring:
            with trio.fail_after(90):
                for p in ("p1", "p2", "p3"):
                    await ring.start_in_process(nursery, p)
                await ring.wait()
            codes = {p: proc.returncode for p, proc in ring.procs.items()}
            tails = ring.tails()
        nursery.cancel_scope.cancel()
    assert codes == {"p1": 0, "p2": 0, "p3": 0}, tails
    rows = {r["url"]: r for p in ("p1", "p2", "p3") for r in read_rows(tmp_path / p)}
    r = by_verdicts(dw, rows, web.url, c)
    assert r.unfetched == 0, r

    ring_ = HashRing({"p1": 1.0, "p2": 1.0, "p3": 1.0}, 256)
    crossed = sum(ring_.owner(f"{h}:{web.port}") != ring_.owner(f"{dw.originals[n][0]}:{web.port}")
                  for (h, _), (n, _) in dw.copies.items())
    lines = [f"{kind.value:<13} found {r.found[kind]}/{r.total[kind]} (recall {r.recall(kind):.2f}), "
             f"labels {dict(r.labels[kind])}" for kind in Kind]
    print("\n" + "\n".join(lines) + f"\nprecision {r.precision():.2f}; {len(r.wrong)} false verdicts; "
          f"{r.originals_marked} originals named copies of their own copy; {crossed} of {len(dw.copies)} "
          f"copies on another peer than their original")
    assert crossed > 0  # the ring's part is tested, not one peer's table (29-51 of 60 in runs)
    assert r.wrong == []  # precision 1.00: no page called a copy of another family's
    for kind in Kind:
        assert r.recall(kind) >= 0.95, lines
