"""peer.core.crawl.discovery: a page's links in one batch (``discover_links``), judged as one by one.

Two cores built alike take the same pages: one each link through ``discover``
with ``Origin.LINK``, the other each page through ``discover_links``. Every
verdict, in order, every count, the queue and the seen set must be the same,
through each step that can say no (scope, depth, the URL rules, the URL caps,
the ring, the host cap, a given-up host, a spent budget), a Bloom filter that
grows in the middle of a page, and a sieve that turns exact in the middle of one;
and a page's links judged before, when the rules, the ring or the filter changed since.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from peer.core.config.cluster import ClusterConfig, parse_config
from peer.core.crawl.core import CrawlCore, Origin, Refused
from peer.core.crawl.limits import Cap
from peer.core.seen.bloom import BloomFilter
from peer.core.urls.rules import parse_rules
from ring.hashring import HashRing
from tests.core.test_crawl import owned_by


def config(*, disk_after: int, params: bool) -> ClusterConfig:
    text = ('[ring]\nname = "test"\n[[peer]]\nid = "p1"\naddress = "tcp://127.0.0.1:5799"\n'
            '[[peer]]\nid = "p2"\naddress = "tcp://127.0.0.1:5798"\n'
            '[crawl]\nseeds = ["http://h0.web.test/"]\nallow_hosts = ["*.web.test"]\nconcurrency = 8\n'
            'obey_robots = false\nmax_depth = 3\nmax_url_length = 80\nmax_path_repeat = 2\n'
            'max_urls_per_host = 40\nmax_pages_per_host = 3\nrules = ["exclude:*/private/*"]\n'
            + ('' if params else 'strip_params = []\n')
            + '[politeness]\nrate = 0.0\nhost_concurrency = 1\n'
            f'[bloom]\ncapacity = 50\nerror_rate = 0.01\ndisk_after = {disk_after}\nsieve_batch = 100000\n')
    return parse_config(text, Path("/nonexistent/cluster.toml"))


def pool(rng: random.Random, ours: list[str], theirs: list[str]) -> list[str]:
    """Links of every kind a page can hold, most of them on our hosts."""
    hosts = ours + theirs
    urls = []
    for _ in range(300):
        h = rng.choice(ours[:4] if rng.random() < 0.7 else hosts)
        scheme = rng.choice(["http", "http", "https"])
        urls.append(f"{scheme}://{h}/c{rng.randrange(4)}/p{rng.randrange(60)}.html")
    urls += [
        "http://elsewhere.example/x", "https://www.example.org/", "ftp://h0.web.test/f",
        f"http://{ours[0]}/private/a", f"http://{ours[0]}/doc.pdf", f"http://{ours[0]}/doc.PDF;v=1",
        f"http://{ours[0]}/" + "x" * 90, f"http://{ours[0]}/a/a/a/", f"http://{ours[0]}/a/b/a/b/a/",
        f"http://{ours[0]}/p?utm_source=x", f"http://{ours[0]}/p?utm_source=x&b=1", f"http://{ours[0]}/p?b=1",
        f"http://{ours[1]}:8080/port", f"http://{ours[1]}:80/default-port", f"http://{ours[1]}",
        f"http://{ours[1].upper()}/upper", f"http://{theirs[0]}/theirs",
        *(f"http://{ours[4]}/{i}" for i in range(3)),   # given up
        *(f"http://{ours[5]}/{i}" for i in range(3)),   # its page budget spent
    ]
    return urls


@pytest.mark.parametrize(("disk_after", "params", "seed"), [(0, True, 1), (150, True, 2), (10**6, False, 3)])
def test_a_pages_links_in_one_batch_are_judged_as_one_by_one(disk_after, params, seed):
    cores = [CrawlCore(config(disk_after=disk_after, params=params), "p1", rng=random.Random(seed))
             for _ in range(2)]
    ring = HashRing({"p1": 1.0, "p2": 1.0})
    ours, theirs = owned_by(ring, "p1", 6), owned_by(ring, "p2", 3)
    for c in cores:
        c.handoffs.set_ring(ring, 0.0)
        c.limits.give_up(ours[4])
        for _ in range(3):
            c.budgets.page(ours[5])
    one, batch = cores
    rng = random.Random(seed)
    links = pool(rng, ours, theirs)
    verdicts = 0
    for page in range(120):
        # What the judgements of earlier pages were made under changes: the
        # rules (a live change), the ring (a peer left), the filter (recovery).
        if page == 40:
            rules = parse_rules(["exclude:*/c1/*"], "test", "crawl.rules")
            for c in cores:
                c.discovery.rescope(dataclasses.replace(c.urlrules, rules=rules), c.sites)
        if page == 60:
            for c in cores:
                c.handoffs.set_ring(HashRing({"p1": 1.0}), 0.0)
        if page == 90:
            assert one.bloom == batch.bloom and one.bloom.num_slices > 1  # grew on the way
            for c in cores:
                c.bloom = BloomFilter(50, 0.01)
        depth = rng.randrange(1, 5)
        # Distinct links (as a parsed page's are), or not (a caller's own list).
        chosen = rng.sample(links, rng.randrange(0, 40))
        if page % 7 == 0:
            chosen += chosen[:3]
        now = float(page)
        expected = []
        for url in chosen:
            expected += one.discover(url, depth, now, Origin.LINK)
        got = batch.discover_links(chosen, depth, now)
        assert got == expected, page
        verdicts += len(got)
    assert verdicts > 2000
    # Every step said no at least once, and the counts agree.
    reasons = {e.reason for e in expected if isinstance(e, Refused)}
    assert one.summary.out_of_scope == batch.summary.out_of_scope > 0
    assert one.summary.excluded == batch.summary.excluded
    assert set(one.summary.excluded) == {"rules", "skip_extensions"}
    assert one.limits.hits == batch.limits.hits
    assert {Cap.URL_LENGTH, Cap.PATH_REPEAT, Cap.GIVEN_UP, Cap.BUDGET_HOST} <= set(one.limits.hits), one.limits.hits
    assert one.limits.hits[Cap.URLS_PER_HOST] > 0 or disk_after != 0, reasons
    # The same queue, in the same order, and the same seen set.
    assert [j.url for j in one.frontier.iter_queued()] == [j.url for j in batch.frontier.iter_queued()]
    assert len(one.frontier) > 100
    assert one.bloom == batch.bloom
    assert one.sieve.stats() == batch.sieve.stats()
    if disk_after:
        assert one.sieve.stats().bloom_drops > 0
    else:
        assert one.sieve.stats().pending > 0


def test_a_link_with_a_tail_sends_the_page_one_by_one():
    # A space: a sitemap's hints or job (peer.core.sitemaps.hints), never a parsed link; still the same.
    cores = [CrawlCore(config(disk_after=10**6, params=True), "p1", rng=random.Random(1)) for _ in range(2)]
    links = ["http://h1.web.test/a", "http://h1.web.test/b retry", "http://h1.web.test/c"]
    expected = []
    for url in links:
        expected += cores[0].discover(url, 1, 0.0, Origin.LINK)
    assert cores[1].discover_links(links, 1, 0.0) == expected
    assert len(expected) == 2 or len(expected) == 3
