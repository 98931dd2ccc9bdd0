"""The max_pages budget: the pure rule (ring.membership.budget), then whole rings in the fake network.

A ring's crawl is judged by what a user checks: the page requests of every
peer together, against ``max_pages`` (exactly it when the web has more pages).
"""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakering import FakeRing, FakeWeb
from ring.membership.budget import (
    PageBudget,
    add_grants,
    base,
    cap_of,
    caps,
    grants_from_counters,
    grants_to_counters,
    held_by_gone,
    merge_grants,
    split,
)
from ring.messages import Member, MemberState
from peer.core.door.peer import Commit
from ring.node import Granted, Log, Send

ALIVE, DEAD, LEFT = MemberState.ALIVE, MemberState.DEAD, MemberState.LEFT
VOTERS = ("p1", "p2", "p3")


def member(mid: str, *, pages: int = 0, grants=(), idle: bool = False, state=ALIVE) -> Member:
    return Member(mid, f"fake://{mid}", 1, state, 1.0, 0, idle, 0, 0, pages, tuple(grants))


def view(*members: Member) -> dict[str, Member]:
    return {m.id: m for m in members}


# --------------------------------------------------------------------------
# the rule


@pytest.mark.parametrize("max_pages", [1, 2, 57, 58, 200, 201])
def test_the_bases_split_max_pages_over_the_configured_peers_by_sorted_id(max_pages):
    bases = [base(max_pages, VOTERS, p) for p in VOTERS]
    assert sum(bases) == max_pages
    assert bases == sorted(bases, reverse=True) and bases[0] - bases[-1] <= 1
    assert base(max_pages, VOTERS, "joiner") == 0


def test_a_cap_is_the_base_plus_what_others_gave_less_what_it_gave():
    v = view(member("p1", grants=[("p2", 5), ("p4", 2)]), member("p2", grants=[("p1", 1)]),
             member("p3"), member("p4"))
    assert cap_of(60, VOTERS, v, "p1") == 20 + 1 - 7
    assert cap_of(60, VOTERS, v, "p2") == 20 + 5 - 1
    assert cap_of(60, VOTERS, v, "p4") == 0 + 2  # a joiner lives on grants
    assert sum(cap_of(60, VOTERS, v, p) for p in v) == 60
    assert caps(60, VOTERS, v) == {p: cap_of(60, VOTERS, v, p) for p in v}


def test_grants_only_grow_and_merge_by_the_higher_total():
    g = add_grants((), {"p2": 3, "p3": 0})
    assert g == (("p2", 3),)
    g = add_grants(g, {"p1": 2, "p2": 1})
    assert g == (("p1", 2), ("p2", 4))
    assert merge_grants(g, (("p2", 3), ("p3", 1))) == (("p1", 2), ("p2", 4), ("p3", 1))
    assert grants_from_counters({"pages": 9.0, **grants_to_counters(g)}) == g


def test_spare_goes_evenly_to_the_members_waiting_the_remainder_to_the_lowest_ids():
    assert split(7, ["p3", "p2", "p1"]) == {"p1": 3, "p2": 2, "p3": 2}
    assert split(1, ["p3", "p2"]) == {"p2": 1}
    assert split(5, []) == {} and split(0, ["p1"]) == {}


def test_an_idle_peer_grants_only_to_live_members_that_wait_at_their_cap():
    b = PageBudget(30, "p1", VOTERS)
    v = view(member("p1", idle=True), member("p2", pages=10), member("p3", pages=4))
    assert b.grant(v, 10, leaving=False) == {"p2": 10}  # p3 still has 6 of its own
    v["p2"] = member("p2", pages=10, idle=True)
    assert b.grant(v, 10, leaving=False) == {}  # idle: it would only give it back
    v["p3"] = member("p3", pages=10, state=DEAD)
    assert b.grant(v, 10, leaving=False) == {}
    # Leaving, it gives what it will not use to whoever is live.
    assert b.grant(v, 10, leaving=True) == {"p2": 10}


def test_a_cap_keeps_a_grant_once_seen_though_the_givers_record_is_forgotten():
    b = PageBudget(30, "p1", VOTERS)
    v = view(member("p1"), member("p2", grants=[("p1", 4)]))
    assert b.cap(v) == 14
    del v["p2"]  # its tombstone expired, or an operator forgot it
    assert b.cap(v) == 14


grants_st = st.dictionaries(st.sampled_from(["p1", "p2", "p3", "p4"]), st.integers(1, 20), max_size=3)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 300), st.lists(grants_st, min_size=4, max_size=4),
       st.lists(st.lists(st.booleans(), min_size=4, max_size=4), min_size=4, max_size=4))
def test_stale_views_never_add_up_to_more_than_max_pages(max_pages, true_grants, stale):
    """Each peer knows its own grants and any older version of the others': the caps the
    peers act on, each from its own view, sum to at most max_pages."""
    ids = ["p1", "p2", "p3", "p4"]  # p4 a joiner
    newest = {}
    older = {}
    for mid, g in zip(ids, true_grants):
        g = {k: v for k, v in g.items() if k != mid}
        newest[mid] = add_grants((), g)
        older[mid] = add_grants((), {k: v // 2 for k, v in g.items()})  # an earlier record
    acted = []
    for i, me in enumerate(ids):
        # Peer ``me`` sees its own newest record and, per other, the newest or an older one.
        v = view(*(member(mid, grants=newest[mid] if mid == me or not stale[i][j] else older[mid])
                   for j, mid in enumerate(ids)))
        acted.append(cap_of(max_pages, VOTERS, v, me))
    truth = view(*(member(mid, grants=newest[mid]) for mid in ids))
    assert sum(caps(max_pages, VOTERS, truth).values()) == max_pages
    assert sum(acted) <= max_pages
    assert all(c <= cap_of(max_pages, VOTERS, truth, mid) for c, mid in zip(acted, ids))


def test_the_rest_held_only_by_gone_members_ends_the_wait_and_a_live_holder_does_not():
    v = view(member("p1", pages=10), member("p2", pages=10), member("p3", pages=2, state=DEAD))
    assert held_by_gone(30, VOTERS, v, "p1", gone={"p3"}) == ["p3"]
    assert held_by_gone(30, VOTERS, v, "p1", gone=set()) == []  # not dead long enough yet
    v["p2"] = member("p2", pages=7)  # a live member still holds 3: it spends or grants them
    assert held_by_gone(30, VOTERS, v, "p1", gone={"p3"}) == []
    v = view(member("p1", pages=10), member("p2", pages=10), member("p3", pages=10, state=DEAD))
    assert held_by_gone(30, VOTERS, v, "p1", gone={"p3"}) == []  # all spent: the total ends it


def test_a_peers_budget_across_rounds_grants_when_idle_and_ends_on_a_member_gone_long_enough():
    # PageBudget as RingNode's part: granting before a round, settle after it, saw with the events.
    from ring.membership.records import ChangeReason, MemberEvent

    b = PageBudget(30, "p1", VOTERS, takeover_after=5.0)
    v = view(member("p1", pages=4), member("p2", pages=10), member("p3", pages=2))
    assert b.granting(v, idle=False, leaving=False, pages=4, in_flight=0) == {}  # busy: keeps its own
    assert b.granting(v, idle=True, leaving=False, pages=4, in_flight=2) == {"p2": 4}  # its spare, less in flight
    v = view(member("p1", pages=10), member("p2", pages=10), member("p3", pages=2, state=DEAD))
    b.saw([MemberEvent(1.0, "p3", DEAD, ChangeReason.SILENCE, 1)])
    assert b.settle(v, 3.0, pages=10, in_flight=0) == [] and b.page_cap == 10  # dead 2 s: not yet gone
    assert b.settle(v, 6.0, pages=10, in_flight=1) == []  # a request in flight: not at the cap yet
    assert b.settle(v, 6.0, pages=10, in_flight=0) == ["p3"] and b.gone == ("p3",)
    assert b.settle(v, 7.0, pages=10, in_flight=0) == []  # said once
    again = PageBudget(30, "p1", VOTERS, takeover_after=5.0)
    again.saw([MemberEvent(1.0, "p3", DEAD, ChangeReason.SILENCE, 1),
               MemberEvent(8.0, "p3", ALIVE, ChangeReason.REFUTED, 1),  # back: its clock restarts
               MemberEvent(9.0, "p3", DEAD, ChangeReason.SILENCE, 1)])
    assert again.settle(v, 13.0, pages=10, in_flight=0) == []
    assert again.settle(v, 14.0, pages=10, in_flight=0) == ["p3"]


# --------------------------------------------------------------------------
# whole rings, in virtual time

BIG = FakeWeb(hosts=40, pages_per_host=20)  # 800 pages, more than any max_pages here
ONE_HOST = FakeWeb(hosts=1, pages_per_host=300)  # every page one peer's: the others idle


def requested(ring: FakeRing) -> int:
    return sum(p.crawl.requested for p in ring.peers.values())


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("max_pages", [20, 57, 58, 201])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_ring_requests_exactly_max_pages_of_a_larger_web(n, max_pages, seed):
    ring = FakeRing(n=n, seed=seed, max_pages=max_pages, web=BIG)
    ring.run_until(ring.all_finished, 300)
    assert requested(ring) == len(ring.fetches) == max_pages
    assert {p.finished for p in ring.peers.values()} == {"max_pages reached"}


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("max_pages", [21, 58])
def test_the_idle_peers_grant_their_budget_to_the_one_that_owns_every_host(n, max_pages):
    ring = FakeRing(n=n, max_pages=max_pages, web=ONE_HOST)
    ring.run_until(ring.all_finished, 300)
    assert requested(ring) == max_pages
    owner = max(ring.peers.values(), key=lambda p: p.crawl.requested)
    assert owner.crawl.requested == max_pages
    # Every other base came to it by grants, each in its giver's record.
    gave = {p.id: p.node.membership.me.grants for p in ring.peers.values() if p is not owner}
    assert gave == {pid: ((owner.id, base(max_pages, ring.peers, pid)),) for pid in gave}
    assert {p.finished for p in ring.peers.values()} == {"max_pages reached"}


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.parametrize("web", [BIG, ONE_HOST], ids=["big", "one-host"])
def test_drops_and_delays_make_no_peer_overshoot(seed, web):
    ring = FakeRing(n=3, seed=seed, max_pages=57, drop=0.2, delay=(0.001, 0.3), web=web)
    ring.run_until(ring.all_finished, 300)
    assert requested(ring) == len(ring.fetches) == 57


@pytest.mark.parametrize("web", [BIG, ONE_HOST], ids=["big", "one-host"])
def test_a_peer_killed_and_restarted_spends_neither_its_pages_nor_its_grants_twice(web):
    ring = FakeRing(n=3, max_pages=57, web=web)
    ring.run_until(lambda: requested(ring) >= 25, 60)
    victim = "p2" if web is BIG else "p3"  # one-host: an idle peer that granted its base
    ring.crash(victim)
    ring.run_for(0.4)  # back before it is declared dead
    ring.restart(victim)
    ring.run_until(ring.all_finished, 300)
    assert len(ring.fetches) == requested(ring) == 57


def test_a_granting_peer_whose_disk_lost_its_grants_learns_them_from_its_old_record():
    ring = FakeRing(n=2, max_pages=290, web=ONE_HOST)
    ring.run_until(lambda: any(p.granted for p in ring.peers.values()), 60)
    giver = next(p for p in ring.peers.values() if p.granted)
    gave = giver.granted
    ring.crash(giver.id)
    ring.run_for(1.0)
    giver.granted = ()  # as if its disk had lost the grant
    back = ring.restart(giver.id)
    assert back.node.membership.me.grants == ()
    # The owner's view keeps the higher totals and tells the new process.
    ring.run_until(lambda: back.node.membership.me.grants == gave, 1.0)
    ring.run_until(ring.all_finished, 300)
    assert len(ring.fetches) == requested(ring) == 290


def test_a_peer_waiting_on_the_budget_of_a_dead_member_ends_and_says_whose_it_was():
    ring = FakeRing(n=3, max_pages=60, web=ONE_HOST)
    ring_of = ring.peers["p1"].crawl.ring
    assert ring_of is not None
    host_owner = ring_of.owner("h0.web.test")
    dead = next(pid for pid in ring.peers if pid != host_owner)
    ring.crash(dead)  # before its first round: it holds its whole base, 20
    ring.run_until(ring.all_finished, 300)
    assert requested(ring) == 40 == len(ring.fetches)
    assert ring.peers[host_owner].finished == "max_pages reached"
    lines = [e.text for e in ring.peers[host_owner].log if isinstance(e, Log) and e.level == logging.WARNING]
    assert any(f"max_pages: 40 of 60 pages; the rest of the budget was held by dead peer {dead}" in t
               for t in lines), lines


def test_a_peer_at_its_cap_with_urls_queued_says_it_waits_for_a_grant():
    # It fetches nothing until a grant comes: the progress line and `ring status`
    # say so, not just "0 ready, 0 held".
    ring = FakeRing(n=3, max_pages=60, web=ONE_HOST)
    owner_id = ring.peers["p1"].crawl.ring.owner("h0.web.test")  # type: ignore[union-attr]
    owner = ring.peers[owner_id]
    waited: list[tuple[str, bool, int]] = []

    def watch() -> bool:
        figures = owner.core.figures
        if figures.budget_wait() is not None:
            waited.append((figures.pause_words(ring.now), figures.status(ring.now, elapsed=1.0, dns_hit_rate=0.0,
                                                                         limits={}).budget_wait,
                           owner.crawl.requested))
        return ring.all_finished()

    ring.run_until(watch, 300)
    assert waited, "the owner never waited at its cap"
    words, in_status, pages = waited[0]
    assert words.startswith("paused: waiting for a page-budget grant (its max_pages cap, 20 pages, is spent")
    assert in_status and pages == 20
    assert owner.core.figures.budget_wait() is None  # the crawl ended: nothing to wait for
    assert requested(ring) == 60


def records_sent(effects, who):
    """The records of ``who`` in the gossip messages among ``effects``."""
    for e in effects:
        if isinstance(e, Send):
            yield from (m for m in getattr(e.msg, "updates", getattr(e.msg, "members", ()))
                        if isinstance(m, Member) and m.id == who)


def test_a_grant_is_on_disk_before_any_message_carries_it():
    ring = FakeRing(n=2, max_pages=40, web=ONE_HOST)
    ring.run_until(lambda: any(p.granted for p in ring.peers.values()), 60)
    giver = next(p for p in ring.peers.values() if p.granted)
    at = next(i for i, e in enumerate(giver.log) if isinstance(e, Granted))
    assert isinstance(giver.log[at + 1], Commit)
    assert not any(m.grants for m in records_sent(giver.log[:at], giver.id))
    ring.run_for(0.5)
    assert any(m.grants == giver.granted for m in records_sent(giver.log[at:], giver.id))
