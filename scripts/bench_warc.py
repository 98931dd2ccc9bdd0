"""Measure the WARC writer: records/s and MB/s at 1k, 10k and 100k fetches, and where the time goes.

    .venv/bin/python scripts/bench_warc.py [--counts 1000,10000,100000] [--body-bytes 16384] [--level 2] [--threads 2]

Each fetch is a request and a response record (two gzip members) with a
body of ``--body-bytes`` cut at a seeded offset from this checkout's docs
(prose and markup, which compresses about as HTML does: to 35-40 % at
gzip level 6). The clock runs from the first ``put`` to the end of
``close`` (fsync, the sorted index, the rename); CPU is the process's user
+ system time over the same span, every thread's (the compressing ones
too), which is what a crawl pays. Then one record's costs are timed apart
(building with digests, gzip by zlib and by ISA-L, the SURT key), and warcio's
own writer writes the same 1,000 fetches for comparison. Nothing here
asserts a speed.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import resource
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from peer.core.warc.record import Capture, digest, response_record
from peer.results.cdxj import urlkey
from peer.results.warc import Fetched, WarcConfig, WarcWriter, gzip_member

DOCS = Path(__file__).resolve().parents[1] / "docs"


def captures(count: int, body_bytes: int, seed: int = 7) -> Iterator[Fetched]:
    """Made one at a time: 100k bodies held at once would be 1.6 GB of the benchmark's own."""
    rng = random.Random(seed)
    pool = b"".join(p.read_bytes() for p in sorted(DOCS.glob("*.md")))
    while len(pool) < 4 * body_bytes:
        pool += pool
    for i in range(count):
        start = rng.randrange(0, len(pool) - body_bytes)
        body = pool[start : start + body_bytes]
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: %d\r\n\r\n" % len(body)
        url = f"http://site{i % 500}.example.org/section/{i // 500}/page-{i}.html?ref={i % 13}"
        request = b"GET /section/%d/page-%d.html HTTP/1.1\r\nHost: site%d.example.org\r\nUser-Agent: ringcrawl\r\n\r\n" % (i // 500, i, i % 500)
        yield Fetched(Capture(url, 1.76e9 + i, request, head, body, "192.0.2.10"))


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(count: int, body_bytes: int, level: int, threads: int) -> None:
    raw = 0
    folder = Path(tempfile.mkdtemp(prefix="bench-warc-"))
    try:
        items = list(captures(count, body_bytes)) if count <= 20_000 else captures(count, body_bytes)
        writer = WarcWriter(WarcConfig(enabled=True, gzip_level=level, compress_threads=threads), folder, "bench")
        started, cpu = time.perf_counter(), cpu_seconds()
        for item in items:
            raw += len(item.capture.request) + len(item.capture.response_head) + len(item.capture.body)
            writer.put_blocking(item)
        writer.close()
        took, cpu = time.perf_counter() - started, cpu_seconds() - cpu
        disk = sum(p.stat().st_size for p in folder.iterdir())
        print(
            f"{count:>7,} fetches  gzip {level}  {threads} thread(s)  {took:7.2f} s  {cpu / (2 * count) * 1e6:6.0f} µs CPU a record  "
            f"{2 * count / took:9,.0f} records/s  "
            f"{raw / took / 1e6:6.1f} MB/s in  {disk / took / 1e6:6.1f} MB/s to disk  "
            f"{disk / 1e6:8.1f} MB in {writer.stats.files} file(s)  peak RSS {peak_rss_mb():,.0f} MB"
        )
    finally:
        shutil.rmtree(folder)


def parts(body_bytes: int) -> None:
    [item] = list(captures(1, body_bytes))
    capture = item.capture
    record, _ = response_record(capture, "<urn:uuid:x>")
    n = 500

    def per(fn: object) -> float:
        started = time.perf_counter()
        for _ in range(n):
            fn()  # type: ignore[operator]
        return (time.perf_counter() - started) / n * 1e6

    print(f"one response record of {len(record):,} bytes, µs each:")
    print(f"  build with sha1 digests  {per(lambda: response_record(capture, '<urn:uuid:x>')):8.1f}")
    print(f"  sha1 of the block alone  {per(lambda: digest(record)):8.1f}")
    for level in (1, 2, 3, 6, 9):
        engine = "ISA-L" if 1 <= level <= 3 else "zlib "
        print(f"  gzip level {level} ({engine})     {per(lambda: gzip_member(record, level)):8.1f}")
    print(f"  SURT urlkey              {per(lambda: urlkey(capture.target_uri)):8.1f}")


def warcio_writer(count: int, body_bytes: int) -> None:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    items = list(captures(count, body_bytes))
    out = io.BytesIO()
    writer = WARCWriter(out, gzip=True, warc_version="1.1")
    started = time.perf_counter()
    for item in items:
        c = item.capture
        lines = c.response_head.decode("latin-1").split("\r\n")
        headers = StatusAndHeaders(lines[0].split(" ", 1)[1], [tuple(line.split(": ", 1)) for line in lines[1:] if line], protocol="HTTP/1.1")
        response = writer.create_warc_record(c.target_uri, "response", payload=io.BytesIO(c.body), http_headers=headers)
        request = writer.create_warc_record(c.target_uri, "request", payload=io.BytesIO(c.request))
        writer.write_request_response_pair(request, response)
    took = time.perf_counter() - started
    print(f"warcio 1.8 WARCWriter, {count:,} fetches to memory: {took:.2f} s, {2 * count / took:,.0f} records/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--counts", default="1000,10000,100000")
    parser.add_argument("--body-bytes", type=int, default=16384)
    parser.add_argument("--level", type=int, default=WarcConfig().gzip_level)
    parser.add_argument("--threads", type=int, default=WarcConfig().compress_threads)
    args = parser.parse_args()
    print(f"cpu: {os.cpu_count()} cores; bodies of {args.body_bytes:,} bytes of docs text")
    for count in (int(c) for c in args.counts.split(",")):
        run(count, args.body_bytes, args.level, args.threads)
    run(10_000, args.body_bytes, 6, 1)  # zlib's default level on one thread: the writer before ISA-L
    run(10_000, args.body_bytes, args.level, 1)
    parts(args.body_bytes)
    warcio_writer(1000, args.body_bytes)


if __name__ == "__main__":
    main()
