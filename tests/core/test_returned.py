"""A member back from dead, in the peers' cores: its word at its first ring, and the holds it ends.

peer/core/handoff/holds.py rule 5 holds every host a peer owns when a member
comes back from dead, until that member's ``HandoffDone``: its old life may
have fetched them while this peer was dead to it. A restarted process (kill
-9, a crash) tells it at its first ring (``ring.handoff`` rule 6), after
handing over what its results hold of others' hosts, and the marker, which
may come before its return is seen, is kept until then (rule 7). Driven
through ``PeerCore``, synchronously, as the engine drives it.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from peer.core.crawl.core import CrawlCore
from peer.core.crawl.decisions import Origin
from peer.core.door.effects import ReadHosts
from peer.core.door.peer import PeerCore
from peer.core.urls.normalize import host_key
from ring.actions import Released, Send
from ring.messages import Ack, Digest, HandoffDone, MemberState, UrlBatch
from ring.node import RingNode
from tests.core.test_crawl import config

RING = "test"
SEEDS = [("p1", "tcp://127.0.0.1:5799", 1.0), ("p2", "tcp://127.0.0.1:5798", 1.0),
         ("p3", "tcp://127.0.0.1:5797", 1.0)]
ADDRESS = dict((s[0], s[1]) for s in SEEDS)
INC = 5000
BACK = INC + 60_000  # the restarted process's incarnation: its start, in ms
MEMBERS = ("p1", "p2", "p3")


def node(peer_id: str, incarnation: int = INC) -> RingNode:
    return RingNode(peer_id, ADDRESS[peer_id], 1.0, RING, seeds=SEEDS, gossip_interval=0.1,
                    suspect_after=0.5, dead_after=1.5, now=0.0, incarnation=incarnation,
                    owner_key=host_key)


def core(peer_id: str = "p1", incarnation: int = INC) -> PeerCore:
    crawl = CrawlCore(config(obey_robots=False), peer_id, rng=random.Random(1))
    return PeerCore(crawl, node(peer_id, incarnation), now=0.0)


def route(peer_id: str, incarnation: int = INC) -> bytes:
    return f"{peer_id}/{incarnation:x}".encode()


def host_of(p: PeerCore, owner: str) -> str:
    ring = p.node.ring()  # type: ignore[union-attr]
    return next(h for h in (f"h{i}.web.test" for i in range(200)) if ring.owner(h) == owner)


def survivor() -> PeerCore:
    """p1, in a ring of three, its first ring read; then p3 tells it p2 is dead (p2 was killed)."""
    p1 = core()
    [ask] = [e for e in p1.tick(0.0) if isinstance(e, ReadHosts)]
    [fetch] = p1.hosts_read(ask.request, [], 0.0)
    p1.fetched_read(fetch.request, [], 0.0, wall=0.0)
    for sender in ("p2", "p3"):
        p1.receive(route(sender), node(sender).membership.digest(), 0.1, wall=0.1)
    p2 = p1.node.membership.members()["p2"]  # type: ignore[union-attr]
    p1.receive(route("p3"), Digest(RING, "p3", (replace(p2, state=MemberState.DEAD),), verdicts=True),
               1.0, wall=1.0)
    assert set(p1.crawl.handoffs.ring) == {"p1", "p3"}
    return p1


def back(p1: PeerCore, at: float) -> list:
    """p2's new process is heard: its own record, alive at its new incarnation."""
    return p1.receive(route("p2", BACK), node("p2", BACK).membership.digest(), at, wall=at)


def test_a_restarted_member_whose_marker_came_first_holds_none_of_our_hosts_when_it_is_back():
    p1 = survivor()
    mine = host_of(p1, "p1")
    # Its first ring's marker, before p1 has heard it is back: another view, kept.
    early = p1.receive(route("p2", BACK), HandoffDone(RING, "p2", MEMBERS, BACK), 2.0, wall=2.0)
    assert not any(isinstance(e, Released) for e in early)
    assert p1.node.dropped["handoff_early"] == 1  # type: ignore[union-attr]
    out = back(p1, 2.1)
    assert set(p1.crawl.handoffs.ring) == set(MEMBERS) and Released("p2") in out
    # Released after the ring change that held our hosts for p2 (done inside the call),
    # or the hold would have come after it and waited hold_timeout.
    assert not p1.crawl.handoffs.holds.holding(mine, 2.2)
    assert "p2" not in p1.crawl.handoffs.holds.waiting_for()


@pytest.mark.parametrize("incarnation", [0, INC], ids=["version 3", "its old life"])
def test_a_marker_that_names_no_later_life_is_not_kept_and_our_hosts_wait_for_the_returner(incarnation):
    # A returner of wire version 3 names no incarnation (0); a marker of the life that
    # died is no word about the new one. Either way our hosts wait, as before (rule 5).
    p1 = survivor()
    mine = host_of(p1, "p1")
    p1.receive(route("p2", BACK), HandoffDone(RING, "p2", MEMBERS, incarnation), 2.0, wall=2.0)
    assert p1.node.dropped["handoff_other_ring_view"] == 1  # type: ignore[union-attr]  # as before
    out = back(p1, 2.1)
    assert set(p1.crawl.handoffs.ring) == set(MEMBERS) and Released("p2") not in out
    assert p1.crawl.handoffs.holds.holding(mine, 2.2)
    # Its marker for our view, once it is back, ends the wait.
    p1.receive(route("p2", BACK), HandoffDone(RING, "p2", MEMBERS, incarnation), 2.5, wall=2.5)
    assert not p1.crawl.handoffs.holds.holding(mine, 2.6)


def test_a_new_process_hands_over_what_it_fetched_of_others_hosts_before_it_tells_them():
    # p2's new process: its results hold a page of a host that is p1's now (its old
    # life fetched it while p1 was dead to it). p1 is told only once it acked that URL.
    p2 = core("p2", BACK)
    theirs, mine = host_of(p2, "p1"), host_of(p2, "p2")
    # Its resumed queue held a link of p3's: forwarded, unfetched. p3 need not wait for it.
    p2.discover(f"http://{host_of(p2, 'p3')}/queued", 1, 0.0, Origin.LINK)
    [ask] = [e for e in p2.tick(0.0) if isinstance(e, ReadHosts)]
    [fetch] = p2.hosts_read(ask.request, [theirs, mine], 0.0)
    assert fetch.hosts == (theirs,)  # only what is others' now
    url = f"http://{theirs}/fetched-in-the-old-life"
    out = p2.fetched_read(fetch.request, [(url, theirs)], 0.1, wall=0.1)
    told = {e.dest: e.msg for e in out if isinstance(e, Send) and isinstance(e.msg, HandoffDone)}
    assert told == {"p3": HandoffDone(RING, "p2", MEMBERS, BACK)}  # nothing of p3's: at once
    assert p2.node.outbox.queued().urls  # type: ignore[union-attr]  # p3's link: unacked
    [batch] = [e.msg for e in p2.flush(5.0) if isinstance(e, Send) and e.dest == "p1"]
    assert isinstance(batch, UrlBatch) and batch.seen == (url,)
    out = p2.receive(route("p1"), Ack(RING, "p1", batch.epoch, batch.seq), 5.1, wall=5.1)
    told = {e.dest: e.msg for e in out if isinstance(e, Send) and isinstance(e.msg, HandoffDone)}
    assert told == {"p1": HandoffDone(RING, "p2", MEMBERS, BACK)}
