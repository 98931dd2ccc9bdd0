"""Measure the pure cores and print the figures quoted in the README.

    .venv/bin/python scripts/bench_cores.py [--quick]

Every timing is the median of several repeats, measured in this one run, so
the figures can be compared with each other on a noisy shared machine. Nothing
here asserts a speed: the tests assert behaviour, this prints numbers.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import tracemalloc
from collections import Counter

from localweb.bench import REPEATS, median_time
from peer.core.seen.bloom import BloomFilter
from peer.core.dns.cache import DnsCache, Miss
from peer.core.frontier.frontier import Frontier, MemorySpill, Politeness
from peer.core.urls.normalize import join, normalize, normalize_link
from ring.hashring import HashRing
from ring.messages import UrlBatch, decode, encode

def section(title: str) -> None:
    print(f"\n## {title}")


def bench_ring(n_hosts: int) -> None:
    section(f"HashRing: balance over {n_hosts:,} hostnames, 256 vnodes")
    hosts = [f"s{i:06d}.site{i % 997}.example.org" for i in range(n_hosts)]
    print("peers  max/mean  join moves (ideal 1/(N+1))  leave moves only the leaver's  lookup µs")
    for n in (3, 8, 32):
        ring = HashRing({f"p{i}": 1.0 for i in range(1, n + 1)})
        owners = [ring.owner(h) for h in hosts]
        load = Counter(owners)
        bigger = ring.with_peer(f"p{n + 1}")
        moved = sum(1 for h, o in zip(hosts, owners) if bigger.owner(h) != o)
        smaller = ring.without_peer("p1")
        leave_ok = all(smaller.owner(h) == o for h, o in zip(hosts, owners) if o != "p1")
        per = median_time(lambda: [ring.owner(h) for h in hosts[:20_000]]) / 20_000
        print(f"{n:>5}  {max(load.values()) / (n_hosts / n):8.3f}  "
              f"{moved / n_hosts:6.4f} ({1 / (n + 1):.4f})            {str(leave_ok):<29} {per * 1e6:8.2f}")


def bench_bloom(n: int) -> None:
    section(f"BloomFilter: {n:,} URLs at capacity, p = 0.01")
    urls = [f"http://s{i % 1000:04d}.web.test/page/{i}.html?q={i * 7}" for i in range(n)]
    others = [f"http://s{i % 1000:04d}.web.test/other/{i}.html" for i in range(n)]
    bf = BloomFilter(n, 0.01)
    t = time.perf_counter()
    for u in urls:
        bf.add(u)
    add_s = time.perf_counter() - t
    fp = sum(1 for u in others if u in bf) / n
    t = time.perf_counter()
    for u in others:
        _ = u in bf
    probe_s = time.perf_counter() - t
    bf2 = BloomFilter(n, 0.01)
    t = time.perf_counter()
    bf2.add_many(urls)
    batch_s = time.perf_counter() - t
    print(f"bits {bf.num_bits:,} ({bf.num_bits / 8 / 2**20:.1f} MiB), hashes {bf.num_hashes}")
    print(f"measured false-positive rate {fp:.4f} (target 0.0100, {abs(fp - 0.01) / 0.01:.0%} off); "
          f"estimated {bf.estimated_fpr():.4f}")
    print(f"add one by one   {n / add_s:12,.0f} ops/s  ({add_s / n * 1e6:.2f} µs)")
    print(f"add_many batched {n / batch_s:12,.0f} ops/s  ({batch_s / n * 1e6:.2f} µs)")
    print(f"lookup (absent)  {n / probe_s:12,.0f} ops/s  ({probe_s / n * 1e6:.2f} µs)")


def bench_frontier(n_urls: int, n_hosts: int) -> None:
    section(f"Frontier: {n_urls:,} URLs over {n_hosts:,} hosts")
    urls = [f"http://h{i % n_hosts:05d}.web.test/p/{i}.html" for i in range(n_urls)]
    hosts = [f"h{i % n_hosts:05d}.web.test" for i in range(n_urls)]
    pol = Politeness(rate=0.0, host_concurrency=1)

    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    fr = Frontier(pol)
    for u, h in zip(urls, hosts):
        fr.push(u, h, 1, 0.0)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    print(f"memory: {grown / n_urls:.0f} bytes per queued URL beyond the URL string itself "
          f"(tracemalloc; the URL strings were allocated before)")

    def cycle(depths: list[int], spill: bool = False) -> None:
        f = Frontier(pol, MemorySpill(), 64) if spill else Frontier(pol)
        now = 0.0
        for u, h, d in zip(urls, hosts, depths):
            f.push(u, h, d, now)
        popped = 0
        while popped < n_urls:
            job = f.pop_ready(now)
            if job is None:
                now += 0.001
                continue
            f.done(job.host, now)
            popped += 1

    s = median_time(lambda: cycle([1] * n_urls), 3)
    print(f"push + pop_ready + done: {n_urls / s:,.0f} URLs/s ({s / n_urls * 1e6:.2f} µs per URL)")

    # Depths 0-5 mixed in each host's queue (the order of its bands matters, a
    # FIFO's does not), and with a spill store and 64-URL heads (RAM beyond the
    # heads goes to the store: frontier rule 9).
    depths = [(i * 7) % 6 for i in range(n_urls)]
    s = median_time(lambda: cycle(depths), 3)
    print(f"push + pop_ready + done, depths 0-5 mixed: {n_urls / s:,.0f} URLs/s ({s / n_urls * 1e6:.2f} µs per URL)")
    s = median_time(lambda: cycle(depths, spill=True), 3)
    print(f"the same with a spill store (MemorySpill, 64-URL heads): {n_urls / s:,.0f} URLs/s "
          f"({s / n_urls * 1e6:.2f} µs per URL)")
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    fr = Frontier(pol)
    for u, h, d in zip(urls, hosts, depths):
        fr.push(u, h, d, 0.0)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    print(f"memory, depths 0-5 mixed: {grown / n_urls:.0f} bytes per queued URL beyond the URL string itself")


def bench_urls(n: int) -> None:
    section(f"URL normalisation and joining: {n:,} links")
    rng = random.Random(1)
    base = "http://s001.web.test:8080/dir/sub/page7.html"
    forms = ["page{i}.html", "../up{i}.html", "/abs/{i}.html", "http://S{h}.Web.Test:8080/x/{i}.html",
             "//s{h}.web.test:8080/p{i}.html#frag", "?q={i}&amp;b=2", "page{i}.html#top",
             "/a/./b/../c{i}.html", "/%7euser/{i}"]
    hrefs = [rng.choice(forms).format(i=i, h=i % 50) for i in range(n)]
    absolute = [join(base, h) for h in hrefs]
    s = median_time(lambda: [normalize(u) for u in absolute])
    print(f"peer.core.urls.normalize.normalize: {n / s:12,.0f} /s ({s / n * 1e6:.2f} µs)")
    s = median_time(lambda: [join(base, h) for h in hrefs])
    print(f"peer.core.urls.normalize.join:      {n / s:12,.0f} /s ({s / n * 1e6:.2f} µs)")
    # The crawl's URL rules (peer/core/urls/rules.py) at their defaults, and
    # with three rules; then links of which every third carries tracking tags.
    from types import SimpleNamespace

    from peer.core.urls.rules import DEFAULT_SKIP_EXTENSIONS, DEFAULT_STRIP_PARAMS, parse_url_rules

    rules = parse_url_rules(SimpleNamespace(  # type: ignore[arg-type]
        rules=(), skip_extensions=DEFAULT_SKIP_EXTENSIONS, strip_params=DEFAULT_STRIP_PARAMS,
        sort_query=False), "bench")
    params = rules.params
    s = median_time(lambda: [normalize_link(base, h) for h in hrefs])
    print(f"normalize_link, no params:        {n / s:12,.0f} /s ({s / n * 1e6:.2f} µs)")
    s = median_time(lambda: [normalize_link(base, h, params) for h in hrefs])
    print(f"normalize_link, default params:   {n / s:12,.0f} /s ({s / n * 1e6:.2f} µs)")
    tracked = [h if i % 3 else f"{h.partition('#')[0]}{'&' if '?' in h else '?'}utm_source=n{i % 7}&fbclid=x{i}"
               for i, h in enumerate(hrefs)]
    s = median_time(lambda: [normalize_link(base, h, params) for h in tracked])
    print(f"  a third with utm_/fbclid:       {n / s:12,.0f} /s ({s / n * 1e6:.2f} µs)")
    s = median_time(lambda: [rules.excluded(u) for u in absolute])
    print(f"URL rules, default extensions:    {n / s:12,.0f} /s ({s / n * 1e6:.2f} µs)")
    three = parse_url_rules(SimpleNamespace(  # type: ignore[arg-type]
        rules=("exclude:re:[?&]q=", "exclude:*/private/*", "include:*.web.test*"),
        skip_extensions=DEFAULT_SKIP_EXTENSIONS, strip_params=(), sort_query=False), "bench")
    s = median_time(lambda: [three.excluded(u) for u in absolute])
    print(f"  and three rules:                {n / s:12,.0f} /s ({s / n * 1e6:.2f} µs)")
    try:
        from yarl import URL
    except ImportError:  # pragma: no cover - yarl is a test dependency
        return
    b = URL(base)
    s = median_time(lambda: [str(b.join(URL(h)).with_fragment(None)) for h in hrefs])
    print(f"yarl join (side by side, no scope/IDNA checks): {n / s:12,.0f} /s ({s / n * 1e6:.2f} µs)")


def bench_links(n_pages: int) -> None:
    section(f"The per-link path: {n_pages:,} pages of the 49-host bench web, one peer")
    # A page's links one by one (CrawlCore.discover, Origin.LINK) and in one
    # batch (discover_links: the same verdicts), on a fresh core each; links
    # drawn as the bench web draws them (20 or 100 a page among its 4,900 pages).
    from pathlib import Path

    from peer.core.config.cluster import parse_config
    from peer.core.crawl.core import CrawlCore, Origin

    text = ('[ring]\nname = "bench"\n[[peer]]\nid = "p1"\naddress = "tcp://127.0.0.1:5799"\n'
            '[crawl]\nseeds = ["http://s001.web.test:8080/"]\nallow_hosts = ["*.web.test"]\n')
    cfg = parse_config(text, Path("bench.toml"))
    rng = random.Random(1)
    print("links a page   one by one µs   batch µs   (a link)")
    for per_page in (20, 100):
        pages = []
        for i in range(n_pages):
            h = i % 49
            pages.append(tuple(dict.fromkeys(
                f"http://s{(h if rng.random() < 0.9 else rng.randrange(49)) + 1:03d}.web.test:8080"
                f"/c{(j := rng.randrange(100)) // 25}/p{j}.html" for _ in range(per_page))))
        links = sum(map(len, pages))

        cores = iter([CrawlCore(cfg, "p1", rng=random.Random(1)) for _ in range(2 * REPEATS)])

        def one() -> None:
            discover = next(cores).discover
            for page in pages:
                for link in page:
                    discover(link, 1, 0.0, Origin.LINK)

        def batch() -> None:
            discover_links = next(cores).discover_links
            for page in pages:
                discover_links(page, 1, 0.0)

        print(f"{per_page:>15} {median_time(one) / links * 1e6:15.2f} {median_time(batch) / links * 1e6:10.2f}")


def bench_dns(n: int) -> None:
    section(f"DnsCache policy: {n:,} lookups over 1,000 names")
    names = [f"h{i % 1000}.web.test" for i in range(n)]

    def run() -> None:
        cache = DnsCache(min_ttl=30, max_ttl=3600, negative_ttl=60, max_size=100_000)
        for i, name in enumerate(names):
            if isinstance(cache.lookup(name, i * 1e-4), Miss):
                cache.resolved(name, ("127.0.0.1",), 300, i * 1e-4)

    s = median_time(run)
    print(f"lookup: {n / s:,.0f} /s ({s / n * 1e6:.2f} µs)")


def bench_codec(n_batches: int) -> None:
    section(f"Wire codec: {n_batches:,} URL batches of 500")
    urls = tuple((f"http://s{i % 300:03d}.web.test:8080/dir/page{i}.html", i % 7) for i in range(500))
    batch = UrlBatch(ring="demo", sender="p1", epoch=1, seq=1, urls=urls)
    data = encode(batch)
    mean_url = sum(len(u) for u, _ in urls) / len(urls)
    print(f"bytes per forwarded URL: {len(data) / 500:.1f} (mean URL length {mean_url:.1f})")
    s = median_time(lambda: [encode(batch) for _ in range(n_batches)])
    print(f"encode: {n_batches / s:,.0f} batches/s ({n_batches * 500 / s:,.0f} URLs/s)")
    s = median_time(lambda: [decode(data) for _ in range(n_batches)])
    print(f"decode: {n_batches / s:,.0f} batches/s ({n_batches * 500 / s:,.0f} URLs/s)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="smaller inputs (about 10x), for a smoke run")
    args = p.parse_args(argv)
    k = 10 if args.quick else 1
    print(f"ringcrawl core benchmarks (python {sys.version.split()[0]}, median of {REPEATS})")
    bench_ring(100_000 // k)
    bench_bloom(1_000_000 // k)
    bench_frontier(200_000 // k, 2_000 // k)
    bench_urls(50_000 // k)
    bench_links(5_000 // k)
    bench_dns(200_000 // k)
    bench_codec(2_000 // k)
    return 0


if __name__ == "__main__":
    sys.exit(main())
