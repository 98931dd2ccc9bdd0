"""What one sitemap costs to parse (peer/core/sitemaps/document.py): time and peak memory, by size, gzip or not.

Each case runs in a process of its own, so its peak RSS is its own: the
document is built first, the peak is reset (``/proc/self/clear_refs``), and
the parse is measured alone. Printed per case: the document's size on the
wire and inflated, the best of three parse times, URLs kept and the caps
hit, the peak of Python allocations during one parse (tracemalloc, in a
separate run since tracing slows the parse) and the process's peak RSS over
what it held before the parse.

Cases: 5,000 and 50,000 (the protocol's cap) URLs with lastmod, changefreq
and priority; 500,000 (cut at 50,000); each plain and gzipped; the gzip
bomb of localweb/hostile/sitemaps.py (256 MiB inflated, cut at 50 MiB); 50 MiB of
blanks inside ``<urlset>``; 50,000 entries of 1.1 KiB each (image
extensions), which meet the size cap before the count cap.

    scripts/bench_sitemap.py
    scripts/bench_sitemap.py --cases 50k,bomb
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path


from localweb.hostile import sitemaps as web
from peer.core.sitemaps.document import SitemapLimits, parse

HOST = "bench.test"
CASES = ("5k", "5k.gz", "50k", "50k.gz", "500k", "500k.gz", "bomb", "blanks", "fat50k")
_HEAD = (b'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
         b'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">\n')


def _urls(n: int, extra: bytes = b"") -> bytes:
    entry = (b"<url><loc>http://bench.test/section/%d/page-%d.html</loc><lastmod>2024-05-01T12:00:00+00:00"
             b"</lastmod><changefreq>weekly</changefreq><priority>0.5</priority>%s</url>\n")
    return _HEAD + b"".join(entry % (i % 97, i, extra) for i in range(n)) + b"</urlset>\n"


def document(case: str) -> tuple[bytes, str]:
    """The body of ``case`` and the URL it is fetched from."""
    base, _, packed = case.partition(".")
    url = f"http://{HOST}/sitemap.xml"
    if base == "bomb":
        return web.document(web.HOSTILE_HOST, "/bomb.xml.gz"), f"http://{web.HOSTILE_HOST}/bomb.xml.gz"
    if base == "blanks":
        body = _HEAD + b" " * (50 << 20) + b"</urlset>\n"
    elif base == "fat50k":
        image = b"".join(b"<image:image><image:loc>http://bench.test/img/%d.jpg</image:loc></image:image>" % k
                         for k in range(16))
        body = _urls(50_000, image)
    else:
        body = _urls(int(base.removesuffix("k")) * 1000)
    if packed:
        body = gzip.compress(body, 6)
        url += ".gz"
    return body, url


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def one(case: str) -> dict[str, object]:
    body, url = document(case)
    limits = SitemapLimits()
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        got = parse(body, url, (), limits)
        times.append(time.perf_counter() - t0)
    del got
    tracemalloc.start()
    parse(body, url, (), limits)
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    before = _status("VmRSS")
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
        reset = True
    except OSError:
        reset = False
    got = parse(body, url, (), limits)
    peak = _status("VmHWM") - before if reset else -1
    return {"case": case, "wire": len(body), "inflated": got.size, "seconds": min(times),
            "urls": len(got.urls), "problems": dict(got.problems), "traced": traced, "rss": peak}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    p.add_argument("--one", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        print(json.dumps(one(args.one)))
        return
    cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        print(f"error: unknown case {unknown[0]!r}; choose from {', '.join(CASES)}", file=sys.stderr)
        sys.exit(2)
    print(f"{'case':<9} {'wire':>10} {'inflated':>10} {'parse s':>8} {'URLs/s':>9} {'kept':>7} "
          f"{'traced MiB':>10} {'RSS+ MiB':>8}  caps hit")
    for case in cases:
        out = subprocess.run([sys.executable, __file__, "--one", case], capture_output=True, text=True,
                             timeout=600, check=True)
        r = json.loads(out.stdout)
        rate = r["urls"] / r["seconds"] if r["seconds"] and r["urls"] else 0
        rss = f"{r['rss'] / 2**20:8.1f}" if r["rss"] >= 0 else f"{'n/a':>8}"
        print(f"{case:<9} {r['wire']:>10,} {r['inflated']:>10,} {r['seconds']:>8.3f} {rate:>9,.0f} "
              f"{r['urls']:>7,} {r['traced'] / 2**20:>10.1f} {rss}  "
              f"{', '.join(f'{k} {v}' for k, v in r['problems'].items()) or '-'}")


if __name__ == "__main__":
    main()
