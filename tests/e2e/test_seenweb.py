"""The seen set end to end: a crawl whose Bloom filter is full fetches every URL once through the sieve.

The engine in the test's process crawls the site graph with a Bloom filter of
8 URLs (peer.core.seen.sieve judges each "maybe seen" exactly,
peer.state.sievefile keeps the runs), judged by the server's request log;
without the sieve (disk_after past the crawl) the same filter drops most of
the web as "seen".
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import trio
from localweb import SiteGraph, serve_webfarm

from tests.e2e.test_engine import crawl, make_config


@pytest.mark.parametrize("exact", [True, False])
async def test_a_crawl_with_a_full_bloom_filter_fetches_every_url_once_with_the_sieve(tmp_path, exact):
    graph = SiteGraph(hosts=3, pages_per_host=40, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        cfg = make_config(tmp_path, farm.port)
        bloom = type(cfg.bloom)(capacity=8, error_rate=0.01, max_capacity=8,
                                disk_after=0 if exact else 10**9, sieve_batch=16, sieve_wait=0.05,
                                sieve_ram=64)
        cfg = type(cfg)(**{**{f: getattr(cfg, f) for f in cfg.__dataclass_fields__}, "bloom": bloom})
        crawler, summary = await crawl(cfg)
        nursery.cancel_scope.cancel()
    expected = graph.expected_urls(farm.port)
    fetched = Counter(f"http://{e.host}:{farm.port}{e.target}" for e in farm.log
                      if e.method == "GET" and e.target != "/robots.txt")
    if not exact:
        assert len(expected - set(fetched)) > len(expected) // 2  # dropped as "seen"
        return
    assert set(fetched) == expected, sorted(expected - set(fetched))[:5]
    assert max(fetched.values()) == 1
    assert summary.stop_reason == "frontier empty"
    text = "\n".join(summary.details)
    assert "measured false-positive rate" in text and "seen set on disk:" in text
    seen_dir = Path(cfg.peers[0].data_dir) / "seen"
    assert list(seen_dir.glob("run-*.u64"))         # sieve_ram 64: runs went to disk
