"""ring.node rule 9: a band query or answer is taken only on its member's live route (pure).

Without CurveZMQ anyone who reaches a peer may claim a member's id on a
route of its own (``p2/bad0``). Gossip makes a route live (``Routes.heard``);
a band message, which says no epoch, never does, so it is refused on any
other route and counted as ``near_not_live_route``.
"""

from __future__ import annotations

from fakering import RING

from ring.actions import Count, NearAnswered, NearAsked
from ring.messages import NearAnswer, NearQuery
from ring.node import RingNode

SEEDS = [("p1", "tcp://a:1", 1.0), ("p2", "tcp://a:2", 1.0)]
LIVE, FORGED = b"p2/aaaa", b"p2/bad0"


def _node() -> RingNode:
    n = RingNode("p1", "tcp://a:1", 1.0, RING, seeds=SEEDS, gossip_interval=0.1, suspect_after=0.5,
                 dead_after=1.5, now=0.0, incarnation=5000)
    p2 = RingNode("p2", "tcp://a:2", 1.0, RING, seeds=SEEDS, gossip_interval=0.1, suspect_after=0.5,
                  dead_after=1.5, now=0.0, incarnation=6000)
    n.receive(LIVE, p2.membership.digest(), 0.0)  # p2's gossip: its live route
    return n


QUERY = NearQuery(RING, "p2", (0, 1, 2, 3), 12345, "http://evil.test/x", "p2", 0.0)
ANSWER = NearAnswer(RING, "p2", "http://a.test/", "http://evil.test/x", 0)


def test_a_band_query_or_answer_on_a_route_that_is_not_its_members_live_route_is_refused_and_counted():
    n = _node()
    for msg in (QUERY, ANSWER):
        assert n.receive(FORGED, msg, 0.1) == [Count("near_not_live_route")]
    assert n.dropped["near_not_live_route"] == 2
    assert n.receive(LIVE, QUERY, 0.1) == [NearAsked(QUERY)]
    assert n.receive(LIVE, ANSWER, 0.1) == [NearAnswered(ANSWER)]


def test_a_band_query_does_not_make_its_route_live_and_one_from_a_member_never_heard_is_refused():
    n = RingNode("p1", "tcp://a:1", 1.0, RING, seeds=SEEDS, gossip_interval=0.1, suspect_after=0.5,
                 dead_after=1.5, now=0.0, incarnation=5000)
    # p2 is a seed (a member of the view) but has not gossiped: no route of it is live yet.
    assert n.receive(FORGED, QUERY, 0.1) == [Count("near_not_live_route")]
    assert n.receive(FORGED, QUERY, 0.2) == [Count("near_not_live_route")]


def test_a_restarted_member_is_heard_on_its_new_route_and_its_old_route_is_no_longer_live():
    n = _node()
    p2 = RingNode("p2", "tcp://a:2", 1.0, RING, seeds=SEEDS, gossip_interval=0.1, suspect_after=0.5,
                  dead_after=1.5, now=0.0, incarnation=7000)
    n.receive(b"p2/cccc", p2.membership.digest(), 0.2)  # a later life on a new route
    assert n.receive(b"p2/cccc", QUERY, 0.3) == [NearAsked(QUERY)]
    assert n.receive(LIVE, QUERY, 0.3) == [Count("near_not_live_route")]
