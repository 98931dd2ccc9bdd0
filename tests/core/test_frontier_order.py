"""Frontier rule 11 (peer.core.frontier.order, peer.core.frontier.bands, peer.core.urls.priority): each host's queue served by band (depth, moved by a boost), each band FIFO."""

from __future__ import annotations

import pytest

from peer.core.frontier.frontier import Frontier, MemorySpill, Politeness
from peer.core.frontier.order import band_of, boost_of, depth_of, make_slot, sitemap_boost
from peer.core.urls.priority import parse_priority_rules
from peer.errors import ConfigError, PeerError


def drain(f: Frontier) -> list[tuple[str, int]]:
    out = []
    while (job := f.pop_ready(0.0)) is not None:
        out.append((job.url, job.depth))
        f.done(job.host, 0.0)
    return out


def test_a_host_is_served_shallowest_first_each_depth_in_the_order_found():
    f = Frontier(Politeness(rate=0))
    pushed = [(f"http://a.test/{i}", d) for i, d in enumerate([3, 1, 2, 1, 0, 3, 2, 0, 1])]
    for u, d in pushed:
        f.push(u, "a.test", d, 0.0)
    assert drain(f) == sorted(pushed, key=lambda p: p[1])  # sorted() is stable: FIFO within a depth


def test_fifo_order_serves_in_the_order_found():
    f = Frontier(Politeness(rate=0), order="fifo")
    pushed = [(f"http://a.test/{i}", d) for i, d in enumerate([3, 1, 2, 1, 0])]
    for u, d in pushed:
        f.push(u, "a.test", d, 0.0)
    assert drain(f) == pushed
    with pytest.raises(PeerError, match="order"):
        Frontier(order="random")


def test_a_boost_moves_a_url_by_levels_and_its_depth_is_kept():
    f = Frontier(Politeness(rate=0))
    f.push("http://a.test/d2", "a.test", 2, 0.0)
    f.push("http://a.test/d1", "a.test", 1, 0.0)
    f.push("http://a.test/d3+2", "a.test", 3, 0.0, boost=2)   # as if depth 1, behind d1
    f.push("http://a.test/d0-1", "a.test", 0, 0.0, boost=-1)  # as if depth 1, behind d3+2
    f.push("http://a.test/d2+9", "a.test", 2, 0.0, boost=9)   # capped at +4
    assert drain(f) == [("http://a.test/d2+9", 2), ("http://a.test/d1", 1), ("http://a.test/d3+2", 3),
                        ("http://a.test/d0-1", 0), ("http://a.test/d2", 2)]


def test_slots_carry_depth_and_boost():
    for depth in (0, 1, 11, 12, 500, 70_000):
        for boost in range(-4, 5):
            s = make_slot(depth, boost)
            assert depth_of(s) == depth and boost_of(s) == boost
            assert band_of(s) == max(0, min(15, min(depth, 11) + 4 - boost))
    assert make_slot(3, 0) == 3  # no boost: the slot is the depth, as before
    assert [sitemap_boost(p) for p in (None, 0.0, 0.2, 0.5, 0.8, 1.0)] == [0, -2, -1, 0, 1, 2]


def test_with_a_spill_store_every_band_below_the_spill_is_served_first():
    spill = MemorySpill()
    f = Frontier(Politeness(rate=0), spill=spill, head_per_host=4)
    deep = [(f"http://a.test/deep{i}", 3) for i in range(40)]
    shallow = [(f"http://a.test/shallow{i}", 1) for i in range(10)]
    for u, d in deep + shallow:
        f.push(u, "a.test", d, 0.0)
    assert f.spilled == 36  # the deep ones past a head spilled; the shallow ones stayed in RAM
    got = drain(f)
    assert got == shallow + deep
    assert f.overflow == 0 and spill.hosts() == []


def test_ram_beyond_four_heads_spills_and_counts_the_urls_out_of_order():
    f = Frontier(Politeness(rate=0), spill=MemorySpill(), head_per_host=4)
    for i in range(10):
        f.push(f"http://a.test/deep{i}", "a.test", 3, 0.0)
    for i in range(30):
        f.push(f"http://a.test/s{i}", "a.test", 1, 0.0)
    assert f.overflow == 30 - 12  # 16 URLs in RAM at most: 4 deep, 12 shallow
    got = drain(f)
    assert sorted(got) == sorted([(f"http://a.test/deep{i}", 3) for i in range(10)]
                                 + [(f"http://a.test/s{i}", 1) for i in range(30)])
    assert got[:12] == [(f"http://a.test/s{i}", 1) for i in range(12)]


def test_a_snapshot_head_and_the_store_give_the_same_order_after_a_restart():
    """heads() and adopt(): what a checkpoint keeps and a kill -9 resume reads back (rules 9, 11)."""
    spill = MemorySpill()
    f = Frontier(Politeness(rate=0), spill=spill, head_per_host=4)
    pushed = [(f"http://a.test/{i}", d, b) for i, (d, b) in
              enumerate([(2, 0), (1, 0), (3, 0), (1, 1), (0, 0), (2, 0), (3, 0), (4, 0), (4, 0), (5, 0), (1, 0)])]
    for u, d, b in pushed:
        f.push(u, "a.test", d, 0.0, b)
    f.flush_tails()
    heads = dict(f.heads())
    expected = [(j.url, j.depth) for j in f.iter_queued()]
    g = Frontier(Politeness(rate=0), spill=spill, head_per_host=4)
    assert g.adopt("a.test", 0.0, heads["a.test"]) == len(pushed)
    assert drain(g) == expected == [(u, d) for u, d, _ in sorted(
        pushed, key=lambda p: band_of(make_slot(p[1], p[2])))]


def test_moved_blocks_leave_with_depths_not_slots():
    spill = MemorySpill()
    f = Frontier(Politeness(rate=0), spill=spill, head_per_host=2)
    for i in range(10):
        f.push(f"http://a.test/{i}", "a.test", 5, 0.0, boost=2)
    f.release_host("a.test")
    got = f.take_moving(100)
    assert got and all(d == 5 for _, flat in got for d in flat[1::2])


def test_priority_rules_give_the_first_matching_boost_and_bad_ones_name_the_entry():
    rules = parse_priority_rules(["+2:*/docs/*", "-1:re:/archive/", "3:*"], "c.toml")
    assert rules.boost("http://a.test/docs/x") == 2
    assert rules.boost("http://a.test/archive/2001") == -1
    assert rules.boost("http://a.test/other") == 3
    assert str(rules.first("http://a.test/docs/x")) == "frontier.priority[0] '*/docs/*'"
    for bad in ("docs", "+5:*", "x:*", "+1:", "+1:re:("):
        with pytest.raises(ConfigError, match=r"frontier\.priority\[0\]"):
            parse_priority_rules([bad], "c.toml")


def test_a_recovered_host_learns_its_spill_band_from_its_head_at_its_first_start():
    """A restart adopts a host's queue lazily (its head is the store's front, read at its
    first start): until then a push goes behind the spill, as in a FIFO; from then on one
    of a band below the head's highest is served before the spill."""
    spill = MemorySpill()
    spill.put("a.test", ["http://a.test/h0", 1, "http://a.test/h1", 2])  # the snapshot's head
    spill.put("a.test", ["http://a.test/b0", 3, "http://a.test/b1", 3])  # a block
    f = Frontier(Politeness(rate=0), spill=spill, head_per_host=2)
    assert f.adopt("a.test", 0.0) == 4 and spill.takes == 0
    f.push("http://a.test/early", "a.test", 0, 0.0)  # before the first start: behind the spill
    job = f.pop_ready(0.0)
    assert job is not None and job.url == "http://a.test/h0"
    f.done(job.host, 0.0)
    f.push("http://a.test/new0", "a.test", 0, 0.0)
    f.push("http://a.test/new3", "a.test", 3, 0.0)  # as deep as the spill: behind it
    f.push("http://a.test/new1", "a.test", 1, 0.0)
    assert [u for u, _ in drain(f)] == ["http://a.test/new0", "http://a.test/new1", "http://a.test/h1",
                                        "http://a.test/b0", "http://a.test/b1", "http://a.test/early",
                                        "http://a.test/new3"]
    from peer.core.frontier.frontier import Job

    spill.put("b.test", ["http://b.test/h0", 1])
    assert f.adopt("b.test", 0.0) == 1
    f.requeue(Job("http://b.test/again", "b.test", 2), 0.0, 0.0)
    assert [u for u, _ in drain(f)] == ["http://b.test/again", "http://b.test/h0"]
