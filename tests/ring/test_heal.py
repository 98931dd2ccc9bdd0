"""Ring changes that undo themselves: splits that heal, flapping links, one-way cuts, restarts.

Whole fake rings (tests/support/fakering.py) in virtual time, judged by the fake
web's server log (``FakeRing.fetches``: who fetched what, when). A peer cut
off for longer than ``dead_after`` is declared dead by the others and
declares them dead; healed, each side refutes and the ring re-forms. What a
user checks then:

- never two peers on one host at once: when a host's fetcher changes, the
  new one's first request comes at least a lease's grace after the old
  one's last (``ring.membership.lease``: every ring change pauses every peer that long,
  and a side without a majority fetches nothing);
- no page lost, and none fetched twice but where both fetches came before
  the ring re-formed (a split longer than ``takeover_after`` looks like a
  crash: the majority fetches the cut-off peer's hosts again, not at once);
- with the split shorter than ``takeover_after``, no page fetched twice at
  all: a dead owner's hosts are held, not fetched (peer/core/handoff/holds.py);
- every peer ends by itself ("cluster done") within a bounded time;
- every hand-off ended, done or given up with a counted reason
  (ring/handoff.py rule 2).
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from fakering import RING, FakeRing, FakeWeb

from ring.messages import LeaveRequest
#: Seconds after the last fault within which every peer must have ended by itself.
FINISH_WITHIN = 30.0


def ring_of(**kw) -> FakeRing:  # type: ignore[no-untyped-def]
    # About 10 s of crawling for three peers: a split in the middle of it.
    ring = FakeRing(n=3, web=FakeWeb(hosts=24, pages_per_host=60), **kw)
    ring.run_for(1.0)
    return ring


def reformed(ring: FakeRing, max_seconds: float = 20.0) -> float:
    """Run until every running peer's ring holds every peer again; the time it did."""
    everyone = set(ring.peers)
    ring.run_until(lambda: all(set(p.node.ring()) == everyone for p in ring.running()), max_seconds)
    return ring.now


def twice(ring: FakeRing) -> dict[str, list[float]]:
    """url -> the times it was fetched, of the pages fetched more than once."""
    at: dict[str, list[float]] = defaultdict(list)
    for f in ring.fetches:
        at[f.url].append(f.at)
    return {u: ts for u, ts in at.items() if len(ts) > 1}


def changeovers(ring: FakeRing) -> list[tuple[str, str, str, float]]:
    """(host, old fetcher, new fetcher, seconds between) of every change of a host's fetcher."""
    last: dict[str, tuple[str, float]] = {}
    out = []
    for f in sorted(ring.fetches, key=lambda f: f.at):
        host = f.url.partition("://")[2].split("/", 1)[0]
        prev = last.get(host)
        if prev is not None and prev[0] != f.who:
            out.append((host, prev[0], f.who, f.at - prev[1]))
        last[host] = (f.who, f.at)
    return out


def judge(ring: FakeRing, since: float, leavers: frozenset[str] | set[str] = frozenset()) -> dict[str, list[float]]:
    """Every check of the module docstring; returns the pages fetched twice (before ``since``)."""
    grace = 1.25 * ring.dead_after / 2  # the lease's grace (RingNode's default lease)
    at_once = [c for c in changeovers(ring) if c[3] < grace]
    assert at_once == [], "two peers on one host within a grace of each other"
    ring.run_until(ring.all_finished, max_seconds=FINISH_WITHIN)
    assert {p.id: p.finished for p in ring.peers.values() if p.alive} == {
        p: "left the ring" if p in leavers else "cluster done" for p, q in ring.peers.items() if q.alive}
    assert set(ring.fetch_counts()) == ring.web.all_urls(), "pages lost"
    for p in ring.peers.values():
        node = p.node
        ended = node.dropped["handoffs_done"] + node.dropped["handoffs_gave_up"]
        assert node.handing_off == 0 and ended == len(node.handoff.ended), p.id
        reasons = sum(node.dropped[r] for r in ("handoff_member_gone", "handoff_timeout", "handoff_unread"))
        assert reasons >= node.dropped["handoffs_gave_up"], p.id
    late = {u: ts for u, ts in twice(ring).items() if max(ts) >= since}
    assert late == {}, "fetched again after the ring re-formed"
    return twice(ring)


def test_a_split_shorter_than_takeover_after_heals_without_fetching_anything_twice():
    ring = ring_of(takeover_after=20.0)
    ring.net.partition({"p1", "p2"}, {"p3"})
    ring.run_for(4 * ring.dead_after)  # declared dead on both sides, long before this
    assert set(ring.peers["p1"].node.ring()) == {"p1", "p2"}
    assert set(ring.peers["p3"].node.ring()) == {"p3"}
    ring.net.heal()
    since = reformed(ring)
    assert judge(ring, since) == {}
    # The hosts of the side seen dead waited: nobody took any over.
    assert not any(p.crawl.holds.counts for p in ring.peers.values())
    # Each side handed over what it had of the other's hosts, and it was acked.
    for p in ring.peers.values():
        assert p.node.dropped["handoffs_gave_up"] == 0 and p.node.dropped["handoffs_done"] >= 2, p.id
        assert not [e for e in p.log if type(e).__name__ == "Log" and "gave up" in e.text], p.id


def test_a_split_longer_than_takeover_after_fetches_twice_only_while_split():
    ring = ring_of(takeover_after=3.0)
    ring.net.partition({"p1", "p2"}, {"p3"})
    ring.run_for(4 * ring.dead_after)
    ring.net.heal()
    since = reformed(ring)
    overlaps = judge(ring, since)
    # The majority took p3's hosts over after takeover_after, as after a
    # crash: pages p3 fetched before the split were fetched again, later.
    assert overlaps, "the majority took the cut-off peer's hosts over"
    # Taken over once per death seen, and counted: p1 and p2 took p3's
    # hosts; p3, without a majority, fetched nothing and took nothing.
    assert ring.peers["p1"].crawl.holds.counts["takeovers"] == 1
    assert ring.peers["p3"].crawl.holds.counts["takeovers"] == 0


@pytest.mark.parametrize("down, up", [(0.5, 0.5), (1.3, 0.5)])
def test_a_flapping_link_ends_and_fetches_nothing_twice_after_it_settles(down, up):
    # Down and up every dead_after / 2 (suspicions, refuted), or down a bit
    # longer than dead_after each time (deaths, refuted), for ~5 x dead_after.
    ring = ring_of(takeover_after=20.0)
    end = ring.now + 5 * ring.dead_after
    deaths = 0
    while ring.now < end:
        ring.net.partition({"p1", "p2"}, {"p3"})
        ring.run_for(down * ring.dead_after)
        deaths += "p3" not in ring.peers["p1"].node.ring()
        ring.net.heal()
        ring.run_for(up * ring.dead_after)
    assert (deaths > 1) is (down > 1)
    since = reformed(ring)
    assert judge(ring, since) == {}


def test_an_asymmetric_partition_heals_and_ends():
    ring = ring_of(takeover_after=20.0)
    ring.net.block("p3", "p1")  # p3 hears p1; p1 never hears p3
    ring.net.block("p3", "p2")
    ring.run_for(4 * ring.dead_after)
    assert "p3" not in ring.peers["p1"].node.ring()  # p1 and p2 declared it dead
    ring.net.heal()
    since = reformed(ring)
    assert judge(ring, since) == {}


def test_a_peer_restarted_during_a_split_rejoins_and_the_ring_ends():
    ring = ring_of(takeover_after=20.0)
    ring.net.partition({"p1", "p2"}, {"p3"})
    ring.run_for(2 * ring.dead_after)
    ring.crash("p3")
    ring.run_for(1.0)
    ring.restart("p3")
    ring.run_for(2 * ring.dead_after)
    ring.net.heal()
    since = reformed(ring)
    assert judge(ring, since) == {}
    assert ring.peers["p1"].node.dropped["peer_restarts"] == 1


def test_a_member_that_dies_again_while_a_handoff_to_it_waits_is_given_up_and_counted():
    ring = ring_of(takeover_after=20.0)
    ring.net.partition({"p1", "p2"}, {"p3"})
    ring.run_for(4 * ring.dead_after)
    ring.net.heal()
    # The moment p1's hand-off to the returning p3 begins, p3 is cut off again.
    p1 = ring.peers["p1"]
    ring.run_until(lambda: any("p3" in h.marks for h in p1.node.handoff.records), max_seconds=10)
    ring.net.partition({"p1", "p2"}, {"p3"})
    ring.run_for(4 * ring.dead_after)
    assert p1.node.dropped["handoff_member_gone"] >= 1
    assert p1.node.handing_off == 0
    ring.net.heal()
    since = reformed(ring)
    assert judge(ring, since) == {}


def test_a_member_that_leaves_while_a_handoff_to_it_waits_is_given_up_and_counted():
    ring = ring_of(takeover_after=20.0)
    ring.net.partition({"p1", "p2"}, {"p3"})
    ring.run_for(4 * ring.dead_after)
    ring.net.heal()
    p1, p3 = ring.peers["p1"], ring.peers["p3"]
    ring.run_until(lambda: any("p3" in h.marks for h in p1.node.handoff.records), max_seconds=10)
    p3.run(p3.core.receive(b"tool", LeaveRequest(RING, "ring-leave", "p3"), ring.now, wall=ring.now))
    ring.run_until(lambda: "p3" not in p1.node.ring(), max_seconds=10)
    assert p1.node.dropped["handoff_member_gone"] >= 1 and p1.node.handing_off <= 1
    judge(ring, ring.now, leavers={"p3"})  # p3's hand-off of its own moved hosts included


@pytest.mark.parametrize("seed", [2, 3])
def test_splits_heal_on_a_lossy_network(seed):
    ring = ring_of(takeover_after=20.0, seed=seed, drop=0.05, delay=(0.001, 0.03))
    ring.net.partition({"p1"}, {"p2", "p3"})
    ring.run_for(4 * ring.dead_after)
    ring.net.heal()
    since = reformed(ring)
    assert judge(ring, since) == {}
