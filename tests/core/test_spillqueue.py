"""peer.core.frontier.spillqueue: the frontier's heads in RAM, the rest through a spill store (frontier rule 9).

Driven over ``MemorySpill``, without files; the store on disk (peer/state/spill.py)
is tested in tests/edges/test_spill.py.
"""

from __future__ import annotations

from collections import deque

import pytest
import test_frontier
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule

from peer.errors import PeerError
from peer.core.frontier.frontier import Frontier, MemorySpill, Politeness


# ----------------------------------------------------------------- the frontier with a store


class SpillingFrontierMachine(test_frontier.FrontierMachine):
    """The frontier's state machine, its model unchanged, with heads of 1-3 URLs and a store.

    Order (FIFO per host, a requeue in front) and every politeness check of
    the model must hold whatever sits in the store.
    """

    @initialize(**test_frontier.MACHINE_SETUP, head=st.integers(1, 3))
    def setup(self, rate, window, cap, initial, min_delay, ip_rate, ip_cap, head):
        super().setup(rate, window, cap, initial, min_delay, ip_rate, ip_cap)
        self.spill = MemorySpill()
        self.f = Frontier(self.pol, spill=self.spill, head_per_host=head)

    @rule(host=st.sampled_from([test_frontier.A, test_frontier.B]))
    def remove(self, host):
        jobs = self.f.remove_host(host)
        assert [j.url for j in jobs] == list(self.queues.get(host, ()))
        self.queues[host] = deque()
        # Gone from the model too: a requeued one was popped once already,
        # the others never will be (teardown counts pops against pushes).
        popped = set(self.popped)
        for j in jobs:
            if j.url in popped:
                self.requeued -= 1
            else:
                self.pushed -= 1

    @rule(host=st.sampled_from([test_frontier.A, test_frontier.B]), chunk=st.integers(1, 5))
    def release(self, host, chunk):
        # Rule 10: the heads now, the blocks by take_moving; together the queue, once each.
        jobs = [j.url for j in self.f.release_host(host)]
        assert len(self.f) == sum(len(q) for h, q in self.queues.items() if h != host)
        while self.f.moving:
            for h, flat in self.f.take_moving(chunk):
                assert h == host
                jobs += flat[::2]
        assert sorted(jobs) == sorted(self.queues.get(host, ()))
        self.queues[host] = deque()
        popped = set(self.popped)
        for url in jobs:
            if url in popped:
                self.requeued -= 1
            else:
                self.pushed -= 1

    @rule()
    def checkpoint(self):
        self.f.flush_tails()  # tails become blocks: the order must not change

    @invariant()
    def the_queue_in_order_is_the_models(self):
        got: dict[str, list[str]] = {}
        for job in self.f.iter_queued():
            got.setdefault(job.host, []).append(job.url)
        assert got == {h: list(q) for h, q in self.queues.items() if q}
        assert self.f.spilled >= sum(self.spill.count(h) for h in self.spill.hosts())


TestSpillingFrontierMachine = SpillingFrontierMachine.TestCase
# 100 runs: every rule of the frontier machine runs here again with a store
# (TestFrontierMachine keeps its 150 without one).
TestSpillingFrontierMachine.settings = settings(max_examples=100, stateful_step_count=40, deadline=None)


def test_ram_holds_only_the_heads_and_pops_come_back_in_push_order():
    # FIFO (frontier rule 11's "fifo"): by depth, a lower band than the spill's stays in RAM.
    spill = MemorySpill()
    f = Frontier(Politeness(rate=0), spill=spill, head_per_host=8, order="fifo")
    for i in range(10_000):
        f.push(f"http://a.test/{i}", "a.test", i % 7, 0.0)
    assert len(f) == 10_000 and f.spilled == 10_000 - 8 and f.host_queued("a.test") == 10_000
    got = []
    while (job := f.pop_ready(0.0)) is not None:
        assert f.spilled + 8 >= len(f)  # never more than a head in RAM
        got.append((job.url, job.depth))
        f.done("a.test", 0.0)
    assert got == [(f"http://a.test/{i}", i % 7) for i in range(10_000)]
    assert len(f) == 0 and f.spilled == 0 and f.n_hosts == 0 and spill.hosts() == []


def test_set_spill_after_a_push_and_a_zero_head_are_programming_errors():
    f = Frontier(Politeness(rate=0))
    f.push("http://a.test/", "a.test", 0, 0.0)
    with pytest.raises(PeerError, match="after URLs were queued"):
        f.set_spill(MemorySpill(), 4)
    with pytest.raises(PeerError, match="at least 1"):
        Frontier(Politeness(rate=0), spill=MemorySpill(), head_per_host=0)


def test_adopt_queues_a_recovered_store_in_its_order_before_new_pushes():
    spill = MemorySpill()
    for i in range(0, 10, 3):
        spill.put("a.test", [x for j in range(i, min(i + 3, 10)) for x in (f"http://a.test/{j}", 1)])
    f = Frontier(Politeness(rate=0), spill=spill, head_per_host=3)
    assert f.adopt("a.test", 0.0) == 10 and f.adopt("b.test", 0.0) == 0
    f.push("http://a.test/new", "a.test", 2, 0.0)
    order = []
    while (job := f.pop_ready(0.0)) is not None:
        order.append(job.url)
        f.done(job.host, 0.0)
    assert order == [f"http://a.test/{i}" for i in range(10)] + ["http://a.test/new"]


def test_adopt_reads_no_block_before_the_host_s_first_start_and_keeps_a_recovered_head_in_front():
    """Rule 9's lazy head: a restart adopts thousands of hosts without a read; a snapshot's
    head goes back in RAM in front of the blocks, a requeue in front of both."""
    spill = MemorySpill()
    for i in range(0, 9, 3):
        spill.put("a.test", [x for j in range(i, i + 3) for x in (f"http://a.test/{j}", 1)])
        spill.put("b.test", [x for j in range(i, i + 3) for x in (f"http://b.test/{j}", 1)])
    f = Frontier(Politeness(rate=0), spill=spill, head_per_host=3)
    head = [x for j in ("h0", "h1") for x in (f"http://a.test/{j}", 0)]
    assert f.adopt("a.test", 0.0, head) == 11 and f.adopt("b.test", 0.0) == 9
    assert spill.takes == 0 and len(f) == 20 and f.host_queued("b.test") == 9
    assert sorted(f.queued_hosts()) == ["a.test", "b.test"]     # hand-off sees a host with no head yet
    f.push("http://b.test/new", "b.test", 2, 0.0)
    from peer.core.frontier.frontier import Job
    f.requeue(Job("http://b.test/again", "b.test", 1), 0.0, 0.0)
    order: dict[str, list[str]] = {"a.test": [], "b.test": []}
    while (job := f.pop_ready(0.0)) is not None:
        order[job.host].append(job.url)
        f.done(job.host, 0.0)
    assert order["a.test"] == ["http://a.test/h0", "http://a.test/h1"] + [f"http://a.test/{i}" for i in range(9)]
    assert order["b.test"] == ["http://b.test/again"] + [f"http://b.test/{i}" for i in range(9)] + ["http://b.test/new"]
    assert len(f) == 0 and f.spilled == 0


def test_a_released_host_gives_its_heads_now_and_its_blocks_a_chunk_at_a_time():
    spill = MemorySpill()
    f = Frontier(Politeness(rate=0), spill=spill, head_per_host=4, order="fifo")  # RAM: a head, a tail
    urls = [f"http://a.test/{i}" for i in range(1_000)]
    for i, u in enumerate(urls):
        f.push(u, "a.test", i % 3, 0.0)
    f.push("http://b.test/", "b.test", 0, 0.0)
    now = [j.url for j in f.release_host("a.test")]
    assert len(now) <= 8  # a head and a tail: what was in RAM, not the queue
    assert f.moving == 1_000 - len(now) and len(f) == 1 and f.spilled == 0
    taken = spill.takes
    got = f.take_moving(100)
    assert spill.takes - taken <= 100 // 4 + 1 and 100 <= sum(len(b) // 2 for _, b in got) < 104
    while f.moving:
        got += f.take_moving(100)
    assert sorted(now + [u for _, b in got for u in b[::2]]) == sorted(urls)
    assert spill.hosts() == [] and f.take_moving(100) == []


def test_a_moving_host_that_is_ours_again_takes_its_blocks_back_once_each():
    spill = MemorySpill()
    f = Frontier(Politeness(rate=0), spill=spill, head_per_host=4)
    urls = [f"http://a.test/{i}" for i in range(100)]
    for u in urls:
        f.push(u, "a.test", 1, 0.0)
    head = [j.url for j in f.release_host("a.test")]
    first = [u for _, b in f.take_moving(10) for u in b[::2]]
    moving = f.moving
    f.push("http://a.test/new", "a.test", 1, 0.0)  # the ring changed back: a push reattaches
    assert f.moving == 0 and len(f) == moving + 1
    order = []
    while (job := f.pop_ready(0.0)) is not None:
        order.append(job.url)
        f.done(job.host, 0.0)
    assert order[-1] == "http://a.test/new"
    assert sorted(head + first + order[:-1]) == sorted(urls)
    assert len(f) == 0 and f.spilled == 0 and spill.hosts() == []
