"""Judge duplicate detection end to end: real documentation pages and labelled copies, three peer processes.

Usage: python scripts/judge_dedupe_realdocs.py [--per-site 25] [--negatives 100] [--seed 1]
       [--peers 3] [--k 3] [--visible-text]

Serves ``localweb.sitegraph.realdocs``'s corpus (Python, PostgreSQL and
SQLite pages from Debian's doc packages: ``apt-get install python3-doc
postgresql-doc-15 sqlite3-doc``) with ``localweb.judges.duplicates.docs_web``:
originals on three hosts a site, each copy (exact mirror, date line, session
id, print view, navigation change) on a mirror host, and ``--negatives``
other pages a site without copies. ``--peers`` ``python -m peer`` processes
crawl it with ``[dedupe]`` on; the judge is their ``pages`` rows
(``by_verdicts``): per kind, found and recall with the ``exact``/``near``
label split, precision, verdicts naming another family's page, originals
named copies of their own copy. ``--visible-text`` fingerprints all visible
text (``main_content = false``: the fingerprint before main-content
extraction), for comparison. The suite's version is
tests/e2e/test_dedupe_realdocs.py (4 originals a site, in process).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from localweb import HostileWeb, serve_in_thread
from localweb.hostile.wire import reply
from localweb.judges.duplicates import by_verdicts, docs_web, table
from localweb.processes.peerrun import cluster_toml, run_peers, supported
from localweb.sitegraph.realdocs import SITES, Kind, corpus, missing
from ring.hashring import HashRing


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-site", type=int, default=25)
    ap.add_argument("--negatives", type=int, default=100, help="other pages a site, served without copies")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--peers", type=int, default=3)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--visible-text", action="store_true", help="main_content = false: the old fingerprint")
    a = ap.parse_args(argv)
    gone = [m for s in SITES if (m := missing(s))]
    for m in gone:
        print(f"judge_dedupe_realdocs: {m}", file=sys.stderr)
    if len(gone) == len(SITES):
        return 2
    c = corpus(a.per_site, seed=a.seed, negatives=a.per_site + a.negatives)
    dedupe: dict[str, object] = {"enabled": True, "k": a.k}
    if a.visible_text:
        if not supported("dedupe.main_content"):
            print("judge_dedupe_realdocs: --visible-text: this tree has no [dedupe] main_content", file=sys.stderr)
            return 2
        dedupe["main_content"] = False
    with tempfile.TemporaryDirectory(prefix="judge-realdocs-") as tmp:
        web = HostileWeb()
        with serve_in_thread(web):
            dw = docs_web(c, port=web.port)
            for (host, path), body in dw.pages.items():
                web.program[(host, path)] = reply(200, body)
            toml = cluster_toml(Path(tmp), [web.url(h, p) for h, p in dw.seeds], peers=a.peers,
                                sections={"dedupe": dedupe, "crawl": {"max_depth": 2}})
            t0 = time.monotonic()
            run = run_peers(toml, peers=a.peers, timeout=600, rss_kill_mb=1500)
            wall = time.monotonic() - t0
        if run.timed_out or any(run.codes):
            print(f"judge_dedupe_realdocs: the crawl did not end cleanly (codes {run.codes})\n{run.stderr()}",
                  file=sys.stderr)
            return 1
        rows = run.by_url()
    r = by_verdicts(dw, rows, web.url, c)
    ring = HashRing({f"p{i + 1}": 1.0 for i in range(a.peers)}, 256)
    crossed = sum(ring.owner(f"{h}:{web.port}") != ring.owner(f"{dw.originals[n][0]}:{web.port}")
                  for (h, _), (n, _) in dw.copies.items())
    print(f"{len(c.originals)} originals ({a.per_site} a site, seed {a.seed}), {len(dw.copies)} copies, "
          f"{len(dw.others)} other pages; {len(rows)} pages crawled by {a.peers} peers in {wall:.0f} s; "
          f"{crossed} copies on another peer than their original; fingerprint: "
          f"{'all visible text' if a.visible_text else 'main content'}, k = {a.k}\n")
    print(table([[kind.value, f"{r.found[kind]}/{r.total[kind]}", f"{r.recall(kind):.2f}",
                  ", ".join(f"{n} {lab}" for lab, n in sorted(r.labels[kind].items())) or "-"]
                 for kind in Kind], ["kind", "found", "recall", "labels"]))
    print(f"\nprecision {r.precision():.2f}: {len(r.wrong)} verdicts naming another family's page; "
          f"{len(r.same_content)} naming a page that says the same (content Jaccard >= 0.8); "
          f"{r.originals_marked} originals named a copy of their own copy; {r.unfetched} corpus pages not crawled")
    for u, dup in r.wrong:
        print(f"  wrong: {u} -> {dup}")
    for u, dup, j in r.same_content:
        print(f"  same content ({j:.2f}): {u} -> {dup}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
