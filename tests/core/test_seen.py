"""peer.core.seen.sieve: the sieve's policy and the crawl core that uses it, driven synchronously.

Its runs on disk (peer.state.sievefile) are tested in tests/edges/test_sievefile.py,
a crawl through it in tests/e2e/test_seenweb.py.
"""

from __future__ import annotations

import random

import pytest

from peer.core.crawl.core import Checking, CrawlCore, Finished, Forward, Origin, Queued, Reason, Refused, Sleep
from peer.core.seen.sieve import MERGE_RATIO, SeenSieve, Verdict, plan_merge, url_hash
from peer.state.sievefile import SieveFiles
from ring.hashring import HashRing
from tests.core.test_crawl import config

SITE = "http://site.web.test"


# -- the policy ------------------------------------------------------------------------


def test_url_hash_is_64_bits_stable_and_not_the_bloom_filters():
    import mmh3

    h = url_hash(f"{SITE}/a")
    assert 0 <= h < 2**64 and h == url_hash(f"{SITE}/a") and h != url_hash(f"{SITE}/b")
    assert h != mmh3.hash128(f"{SITE}/a") & (2**64 - 1)  # independent of the Bloom filter's h1


@pytest.mark.parametrize(("sizes", "merge"), [
    ([], 0), ([10], 0), ([100, 10], 0), ([10, 10], 2), ([39, 10], 2), ([40, 10], 0),
    ([1000, 30, 10, 10], 3), ([1000, 300, 100, 10, 10], 2), ([1000, 300, 100, 30, 10], 5),
])
def test_plan_merge_is_size_tiered(sizes, merge):
    assert MERGE_RATIO == 4
    assert plan_merge(sizes) == merge


def test_plan_merge_keeps_the_runs_logarithmic():
    runs: list[int] = []
    for _ in range(10_000):
        runs.append(1)
        n = plan_merge(runs)
        if n:
            runs[-n:] = [sum(runs[-n:])]
        assert all(a >= b for a, b in zip(runs, runs[1:]))
    assert sum(runs) == 10_000 and len(runs) <= 2 * 8  # about log4(10,000) tiers


def test_below_disk_after_a_maybe_is_final_and_counted():
    s = SeenSieve(disk_after=3, batch=10, max_wait=1.0)
    assert s.check(f"{SITE}/a", "site", 0, 0, 0.0) is Verdict.SEEN
    assert s.stats().bloom_drops == 1 and s.pending == 0 and not s.exact
    s.note_size(3)
    assert s.exact
    assert s.check(f"{SITE}/a", "site", 0, 0, 0.0) is Verdict.PENDING
    assert s.check(f"{SITE}/a", "site", 0, 0, 0.0) is Verdict.DUPLICATE
    assert s.pending == 1 and s.is_pending(f"{SITE}/a")


def test_a_batch_is_due_when_full_or_old_and_one_is_out_at_a_time():
    s = SeenSieve(disk_after=0, batch=3, max_wait=0.5)
    assert s.due_at() is None and s.take(0.0) is None and not s.take_kick()
    s.check(f"{SITE}/1", "site", 0, 0, 10.0)
    assert s.take_kick() and not s.take_kick()   # work arrived: once
    assert s.due_at() == 10.5                    # the oldest waits max_wait at most
    s.check(f"{SITE}/2", "site", 0, 0, 10.1)
    s.check(f"{SITE}/3", "site", 0, 0, 10.2)
    assert s.take_kick() and s.due_at() == 10.0  # full: due at once
    batch = s.take(10.2)
    assert batch is not None and len(batch.checks) == 24 and [p.url for p in batch.pending] == [
        f"{SITE}/1", f"{SITE}/2", f"{SITE}/3"]
    s.check(f"{SITE}/4", "site", 0, 0, 10.3)
    assert s.check(f"{SITE}/2", "site", 0, 0, 10.3) is Verdict.DUPLICATE  # still out
    assert s.take(10.3) is None                  # the previous batch is not answered yet
    new = s.verdicts(batch, [True, False, True], 10.4)
    assert [p.url for p in new] == [f"{SITE}/1", f"{SITE}/3"]
    assert s.take_kick()                         # /4 waited meanwhile
    st = s.stats()
    assert (st.checked, st.false_positives, st.pending, st.passes) == (3, 2, 1, 1)
    with pytest.raises(ValueError):
        s.verdicts(batch, [True], 10.5)


def test_measured_fpr_is_false_positives_over_new_urls_judged_exactly():
    s = SeenSieve(disk_after=0, batch=100, max_wait=1.0)
    for i in range(98):
        s.add(f"{SITE}/{i}", 0.0, direct=True)
    s.add(f"{SITE}/handed", 0.0)                 # a hand-off is not a Bloom verdict
    s.check(f"{SITE}/x", "site", 0, 0, 0.0)
    s.check(f"{SITE}/y", "site", 0, 0, 0.0)
    batch = s.take(0.0)
    s.verdicts(batch, [True, False], 0.0)
    assert s.stats().measured_fpr == pytest.approx(1 / 99)


# -- the crawl core with the sieve -----------------------------------------------------


def saturated_core(disk_after: int) -> CrawlCore:
    """A core whose Bloom filter (8 URLs, fixed) calls nearly every URL "maybe seen"."""
    cfg = config(obey_robots=False)
    cfg = type(cfg)(**{**{f: getattr(cfg, f) for f in cfg.__dataclass_fields__},
                       "bloom": type(cfg.bloom)(capacity=8, error_rate=0.01, max_capacity=8,
                                                disk_after=disk_after, sieve_batch=64)})
    return CrawlCore(cfg, "p1", rng=random.Random(1))


def drain(c: CrawlCore, files: SieveFiles, now: float = 0.0) -> list:
    out = []
    while (batch := c.sieve.take(now)) is not None:
        out += c.sieve_verdicts(batch, files.apply(batch), now)
    return out


def test_past_disk_after_no_new_url_is_dropped_by_a_saturated_bloom_filter():
    c = saturated_core(disk_after=0)
    files = SieveFiles(None, ram_hashes=10**6)
    urls = [f"{SITE}/p{i}" for i in range(1_000)]
    effects = [c.discover(u, 1, 0.0, Origin.LINK) for u in urls]
    # Each is journaled at once: queued, or waiting for the sieve (judged again after a crash).
    assert all(e in ([Queued(u, 1)], [Checking(u, 1)]) for u, e in zip(urls, effects))
    assert c.sieve.pending > 900             # the filter is full: most wait for the sieve
    assert not c.locally_idle()
    queue = {u for u, _ in c.snapshot_queue()}
    assert queue == set(urls)                # a snapshot holds the waiting ones too
    # Again, while they wait and after: duplicates, never queued twice.
    for u in urls[:50]:
        assert c.discover(u, 1, 0.0, Origin.LINK) in ([Refused(u, Reason.SEEN)], [Checking(u, 1)])
    effects = drain(c, files)
    for u in urls[:50]:
        c.discover(u, 1, 0.0, Origin.LINK)
    effects += drain(c, files)
    assert len(c.frontier) == 1_000
    assert {j.url for j in c.frontier.iter_queued()} == set(urls)
    # The new ones are journaled queued by the verdict; a duplicate leaves no record.
    queued = [e.url for e in effects if isinstance(e, Queued)]
    assert len(queued) == len(set(queued)) == 1_000 - c.sieve.stats().new_direct
    assert all(isinstance(e, Queued) for e in effects)
    st = c.sieve.stats()
    assert st.false_positives == 1_000 - st.new_direct and st.measured_fpr > 0.9
    assert any("measured false-positive rate" in line for line in c.detail_lines({}))
    assert c.limits_figures(0.0, {})["seen.false_positives"] == st.false_positives


def test_below_disk_after_the_same_filter_drops_new_urls_as_seen():
    # The failure the sieve exists for: without it, the filter silently drops.
    c = saturated_core(disk_after=10**9)
    for i in range(1_000):
        c.discover(f"{SITE}/p{i}", 1, 0.0, Origin.LINK)
    assert len(c.frontier) < 100 and c.sieve.pending == 0
    assert c.sieve.stats().bloom_drops > 900


def test_the_crawl_waits_for_pending_verdicts_and_a_moved_host_is_forwarded():
    c = saturated_core(disk_after=0)
    files = SieveFiles(None, ram_hashes=10**6)
    for i in range(30):
        c.discover(f"{SITE}/p{i}", 1, 0.0, Origin.LINK)
    c.frontier.remove_host("site.web.test")       # as if the few passed at once were fetched
    assert len(c.frontier) == 0 and c.sieve.pending > 0
    assert isinstance(c.next(0.0), Sleep)          # verdicts outstanding: not finished
    drain(c, files)
    assert len(c.frontier) == c.sieve.stats().false_positives > 0
    c.frontier.remove_host("site.web.test")
    assert isinstance(c.next(0.0), Finished)
    ring = HashRing({"p1": 1.0, "p2": 1.0})
    theirs = next(f"h{i}.web.test" for i in range(100) if ring.owner(f"h{i}.web.test") == "p2")
    c2 = saturated_core(disk_after=0)
    for i in range(20):
        c2.discover(f"http://{theirs}/p{i}", 1, 0.0, Origin.LINK)
    c2.ring = ring                                    # the host moved while its URLs waited
    fwd = [e for e in drain(c2, files) if isinstance(e, Forward)]
    assert fwd and all(e.owner == "p2" and e.relay for e in fwd)


def test_handoff_reads_only_moved_hosts_from_the_index():
    c = saturated_core(disk_after=10**9)
    both = HashRing({"p1": 1.0, "p2": 1.0})
    hosts = [f"h{i}.web.test" for i in range(50)]
    moved = c.handoffs.moved_hosts(hosts, HashRing({"p1": 1.0}), both)
    assert moved == [h for h in hosts if both.owner(h) == "p2"] and 0 < len(moved) < 50
    assert c.handoffs.moved_hosts(hosts, both, both) == []
