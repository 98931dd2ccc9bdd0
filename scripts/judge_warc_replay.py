"""Judge a continuous crawl's archive as an archivist would: warcio check, and pywb at every capture time.

    .venv/bin/python scripts/judge_warc_replay.py [--run-for 20] [--hosts 2] [--pages 30] [--out DIR]

One peer (in process) crawls the site graph served by nginx with ``gzip on``
(so every page comes gzip and chunked, with an ETag, and a revisit gets a
304; redirects and 404s come back with the same bytes, identical-payload
revisits) with ``[revisit]`` and ``[warc]`` on for ``--run-for`` seconds.
Then, with tools nobody here wrote: ``warcio check`` on every file (records
checked, failures), each revisit's reference checked against the record it
names (a response, its exact WARC-Date, its payload digest), and pywb
(tests/support/replay.py installs it) asked for every 200 response and every
304 revisit at its own 14-digit time, through pywb's own index and through
ours: a capture counts as replayed when pywb answers 200 with the original
response's bytes and that capture's own Memento-Datetime. Nothing here
asserts; it prints the figures. Needs nginx (``apt-get install nginx-light``).
"""

from __future__ import annotations

import argparse
import email.utils
import gzip
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _records(warcs: list[Path]) -> list[dict[str, Any]]:
    from warcio.archiveiterator import ArchiveIterator

    out = []
    for path in warcs:
        with path.open("rb") as f:
            for r in ArchiveIterator(f):
                if r.rec_type not in ("response", "revisit", "metadata"):
                    continue
                fields: dict[str, Any] = dict(r.rec_headers.headers)
                http = r.http_headers
                fields["status"] = http.get_statuscode() if http else None
                fields["chunked"] = bool(http and http.get_header("X-Crawler-Transfer-Encoding"))
                fields["body"] = r.content_stream().read() if r.rec_type == "response" else None
                out.append(fields)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--run-for", type=float, default=20.0, help="seconds of continuous crawl (revisit.run_for)")
    ap.add_argument("--hosts", type=int, default=2)
    ap.add_argument("--pages", type=int, default=30, help="pages a host")
    ap.add_argument("--out", type=Path, help="keep the crawl here (default: a temporary directory)")
    args = ap.parse_args()

    sys.path.insert(0, str(ROOT / "tests" / "support"))
    from replay import Wayback, tools
    from ringharness import cluster_text, free_ports

    from localweb.bench.web import NGINX_HINT, Nginx, find_nginx, graph_for, render_site
    from localweb.processes.children import Children
    from localweb.processes.peerrun import run_in_process
    from peer.results.cdxj import merge_cdxj

    binary = find_nginx()
    found = tools()
    if binary is None or found is None:
        print("needs nginx (" + NGINX_HINT + ") and pywb (tests/support/replay.py could not install it)")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        work = args.out or Path(tmp)
        [port] = free_ports(1)
        site = render_site(graph_for(args.hosts, args.pages, 20), port, work / "site")
        with Children() as children:
            # gzip on: gzip answers go out chunked, the case warcio check failed on; nginx's
            # ETags make revisits conditional GETs, answered 304.
            Nginx.start(children, binary, site, work, gzip=True)
            extra = ("\n[warc]\nenabled = true\n[revisit]\nenabled = true\nmin_interval = 2.0\n"
                     f"max_interval = 8.0\ninitial_interval = 3.0\nrun_for = {args.run_for}\n")
            toml = work / "cluster.toml"
            toml.write_text(cluster_text(work, port, 1, rate=1200.0, initial_delay=0.05, concurrency=8, extra=extra))
            began = time.monotonic()
            run = run_in_process(toml, timeout=args.run_for + 60)
            print(f"crawl: {time.monotonic() - began:.1f} s, exit {run.codes}")
        folder = work / "p1" / "warc"
        warcs = sorted(folder.glob("*.warc.gz"))
        cli = Path(sys.executable).with_name("warcio")
        checked = failed = 0
        for w in warcs:
            out = subprocess.run([str(cli), "check", "-v", str(w)], capture_output=True, text=True, timeout=600).stdout
            checked += out.count("WARC-Record-ID")
            failed += out.count("failed")
        records = _records(warcs)
        kinds: dict[str, int] = {}
        for r in records:
            kind = f"{r['WARC-Type']} {r.get('WARC-Profile', '').rsplit('/', 1)[-1]} {r['status'] or ''}".split()
            kinds[" ".join(kind)] = kinds.get(" ".join(kind), 0) + 1
        print(f"warcio check: {checked} records in {len(warcs)} file(s), {failed} failed; "
              f"{sum(r['chunked'] for r in records if r['WARC-Type'] == 'response')} responses were chunked")
        print("records: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
        by_id = {r["WARC-Record-ID"]: r for r in records}
        revisits = [r for r in records if r["WARC-Type"] == "revisit"]
        wrong = 0
        for r in revisits:
            original = by_id.get(r.get("WARC-Refers-To", ""))
            wrong += (original is None or original["WARC-Type"] != "response"
                      or original["WARC-Date"] != r.get("WARC-Refers-To-Date")
                      or original["WARC-Payload-Digest"] != r.get("WARC-Payload-Digest"))
        print(f"revisits: {len(revisits)}, {wrong} not naming the response that holds the page")
        asked = [r for r in records if (r["WARC-Type"] == "response" and r["status"] == "200")
                 or r.get("WARC-Profile", "").endswith("server-not-modified")]
        ours = work / "ours.cdxj"
        merge_cdxj(sorted(folder.glob("*.cdxj")), ours)
        for name, index in (("pywb's index", None), ("our index", ours)):
            good = 0
            with Wayback(found, work / name.split()[0].strip("'s"), warcs, index=index) as wayback:
                for r in asked:
                    original = r if r["WARC-Type"] == "response" else by_id.get(r.get("WARC-Refers-To", ""))
                    stamp = "".join(c for c in r["WARC-Date"] if c.isdigit())[:14]
                    got = wayback.get(r["WARC-Target-URI"], stamp)
                    body = gzip.decompress(got.body) if got.headers.get("content-encoding") == "gzip" else got.body
                    when = got.headers.get("memento-datetime")
                    at = email.utils.parsedate_to_datetime(when).strftime("%Y%m%d%H%M%S") if when else ""
                    good += got.status == 200 and original is not None and body == original["body"] and at == stamp
            print(f"pywb through {name}: {good} of {len(asked)} captures (200 responses and 304 revisits) "
                  "replay as the page at their own time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
