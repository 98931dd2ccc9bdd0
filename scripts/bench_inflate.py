"""What decoding a response body costs (peer/core/http/inflate.py): per MiB, by coding, and a bomb's peak memory.

Pages: the HTML pages of a seeded site graph (localweb.SiteGraph, 4 hosts),
each encoded as a server would (gzip level 6, br quality 5, zstd level 3)
and decoded as the fetcher decodes it (64 KiB reads, asking for the room
left + 1). Printed per coding: the ratio, and the best of five runs in
milliseconds of CPU per decoded MiB and microseconds per page.

Bombs: 1 GiB of zeros in each coding (and br inside gzip, stacked), decoded
with the default ``max_body`` (2 MiB) until the bound is met, each in a
process of its own: its size on the wire, the time to the cut, the peak of
Python allocations (tracemalloc, a run of its own) and the process's peak
RSS over what it held before (``/proc/self/clear_refs``; the decoders'
windows are C allocations, which tracemalloc does not see).

    scripts/bench_inflate.py
    scripts/bench_inflate.py --only bombs
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import time
import tracemalloc
import zlib
from pathlib import Path


from peer.core.http.inflate import brotli, decoder, zstd

MiB = 1 << 20
READ = 64 * 1024
MAX_BODY = 2 * MiB
BOMBS = ("gzip", "br", "zstd", "br, gzip")


def encode(coding: str, data: bytes) -> bytes:
    if coding == "gzip":
        return gzip.compress(data, 6)
    if coding == "br":
        return bytes(brotli.compress(data, quality=5))
    return bytes(zstd.compress(data, 3))


def drain(codings: tuple[str, ...], data: bytes, limit: int) -> int:
    """Decode ``data`` as the fetcher does; the decoded size (limit + 1 when cut)."""
    d = decoder(codings)
    assert d is not None
    size = 0
    for i in range(0, len(data), READ):
        size += len(d.feed(data[i:i + READ], limit - size + 1))
        if size > limit:
            break
    return size


def pages() -> None:
    from localweb import SiteGraph

    graph = SiteGraph(hosts=4, pages_per_host=60, shop=False)
    bodies = [graph.render(h, graph.page_path(i), 8080).body
              for h in graph.site_hosts() for i in range(50)]
    total = sum(map(len, bodies))
    print(f"{len(bodies)} pages, {total / MiB:.1f} MiB of HTML, {total // len(bodies):,} bytes a page")
    print(f"{'coding':<8} {'ratio':>6} {'ms CPU/MiB':>11} {'us/page':>8}")
    for coding in ("gzip", "br", "zstd"):
        encoded = [encode(coding, b) for b in bodies]
        best = float("inf")
        for _ in range(5):
            t0 = time.process_time()
            for body, data in zip(bodies, encoded, strict=True):
                assert drain((coding,), data, len(body)) == len(body)
            best = min(best, time.process_time() - t0)
        ratio = total / sum(map(len, encoded))
        print(f"{coding:<8} {ratio:>6.1f} {best * 1000 / (total / MiB):>11.2f} {best * 1e6 / len(bodies):>8.0f}")


def make_bomb(coding: str, size: int = 1 << 30) -> bytes:
    zeros = bytes(MiB)
    if coding == "gzip":
        z = zlib.compressobj(9, zlib.DEFLATED, 31)
        return b"".join(z.compress(zeros) for _ in range(size // MiB)) + z.flush()
    if coding == "br":
        b = brotli.Compressor(quality=5)
        return b"".join(b.process(zeros) for _ in range(size // MiB)) + b.finish()
    if coding == "zstd":
        c = zstd.ZstdCompressor(level=3)
        return b"".join(c.compress(zeros) for _ in range(size // MiB)) + c.flush()
    return gzip.compress(make_bomb("br", size))  # "br, gzip": br first, then gzip


def _rss(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def one_bomb(coding: str) -> dict[str, float]:
    """Run in a child process: one bomb, cut at MAX_BODY."""
    data = make_bomb(coding)
    codings = tuple(c.strip() for c in coding.split(","))
    # RSS first: a run before it would leave its freed heap for this one to reuse.
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    before = _rss("VmRSS")
    t0 = time.perf_counter()
    size = drain(codings, data, MAX_BODY)
    elapsed = time.perf_counter() - t0
    rss = _rss("VmHWM") - before
    tracemalloc.start()
    drain(codings, data, MAX_BODY)
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"wire": len(data), "decoded": size, "ms": elapsed * 1000, "traced": traced, "rss": rss}


def bombs() -> None:
    print(f"\n1 GiB bombs cut at max_body = {MAX_BODY // MiB} MiB (each in a process of its own)")
    print(f"{'coding':<10} {'on the wire':>12} {'decoded':>10} {'ms':>7} {'traced peak':>12} {'RSS peak':>10}")
    for coding in BOMBS:
        out = subprocess.run([sys.executable, __file__, "--bomb", coding], check=True,
                             capture_output=True, text=True).stdout
        r = json.loads(out)
        print(f"{coding:<10} {r['wire']:>12,} {r['decoded']:>10,} {r['ms']:>7.1f} "
              f"{r['traced'] / MiB:>9.1f} MiB {r['rss'] / MiB:>6.1f} MiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--only", choices=("pages", "bombs"))
    ap.add_argument("--bomb", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.bomb:
        print(json.dumps(one_bomb(args.bomb)))
        return
    if args.only != "bombs":
        pages()
    if args.only != "pages":
        bombs()


if __name__ == "__main__":
    main()
