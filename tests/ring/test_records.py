"""ring.membership.records: the merge rules as a total order, the local state machine, and the events it reports."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ring.errors import RingError
from ring.messages import Digest, Join, Leave, Member, MemberState
from ring.membership.records import ChangeReason, IllegalTransition, merge_members

from membershipnet import ALIVE, DEAD, LEFT, RING, SUSPECT, make, seed_list


def test_leaving_twice_is_an_illegal_transition():
    m = make("p0", seed_list(2))
    m.leave(0.0)
    with pytest.raises(IllegalTransition) as exc:
        m.leave(0.5)
    assert isinstance(exc.value, RingError)
    assert m.me.state is LEFT


def test_left_beats_a_dead_verdict_at_the_same_incarnation():
    m = make("p0", seed_list(2))
    base = m.members()["p1"]
    m.receive(Digest(RING, "p1", (Member("p1", base.address, 7, DEAD, 1.0, 3),)), 0.0)
    m.receive(Leave(RING, "p1", 7), 0.0)
    assert m.members()["p1"].state is LEFT
    m.receive(Digest(RING, "p1", (Member("p1", base.address, 7, DEAD, 1.0, 9),)), 0.0)
    assert m.members()["p1"].state is LEFT


# --------------------------------------------------------------------------
# the merge rules themselves


STATES = st.sampled_from(list(MemberState))
MEMBERS = st.builds(
    Member,
    id=st.just("x"),
    address=st.sampled_from(["a", "b"]),
    incarnation=st.integers(0, 3),
    state=STATES,
    weight=st.sampled_from([1.0, 2.0]),
    heartbeat=st.integers(0, 3),
    idle=st.booleans(),
    sent=st.integers(0, 2),
)


@settings(max_examples=300, deadline=None)
@given(MEMBERS, MEMBERS, MEMBERS)
def test_merge_is_a_join_so_views_converge(a, b, c):
    assert merge_members(a, b) == merge_members(b, a)
    assert merge_members(merge_members(a, b), c) == merge_members(a, merge_members(b, c))
    assert merge_members(a, a) == a
    assert merge_members(a, b) in (a, b)


@pytest.mark.parametrize(
    ("local", "remote", "winner"),
    [
        # rule 1: higher incarnation wins whatever the states
        ((1, DEAD, 9), (2, ALIVE, 0), "remote"),
        ((1, LEFT, 9), (2, ALIVE, 0), "remote"),
        ((2, ALIVE, 0), (1, LEFT, 9), "local"),
        # rule 2: dead and left are sticky in an incarnation; left beats dead
        ((1, DEAD, 3), (1, ALIVE, 9), "local"),
        ((1, LEFT, 3), (1, SUSPECT, 9), "local"),
        ((1, DEAD, 9), (1, LEFT, 3), "remote"),
        # rule 3: a suspicion beats alive in its incarnation whatever the heartbeats
        ((1, SUSPECT, 3), (1, ALIVE, 4), "local"),
        ((1, ALIVE, 3), (1, SUSPECT, 3), "remote"),
        ((1, ALIVE, 4), (1, SUSPECT, 3), "remote"),
        ((1, SUSPECT, 3), (1, SUSPECT, 4), "remote"),
    ],
)
def test_merge_table(local, remote, winner):
    a = Member("x", "a", local[0], local[1], 1.0, local[2])
    b = Member("x", "a", remote[0], remote[1], 1.0, remote[2])
    assert merge_members(a, b) is (a if winner == "local" else b)


def test_a_peer_refutes_a_suspicion_or_death_of_itself():
    m = make("p0", seed_list(2), incarnation=10)
    m.tick(0.5)
    me = m.me
    assert (me.incarnation, me.heartbeat) == (10, 1)
    # any suspicion in our incarnation is refuted, whatever its heartbeat (SWIM)
    out = m.receive(Digest(RING, "p1", (Member("p0", me.address, 10, SUSPECT, 1.0, 0),)), 0.5)
    assert (m.me.incarnation, m.me.state) == (11, ALIVE)
    # and whoever said so hears it at once
    assert [(d, type(msg), msg.members) for d, msg in out] == [("p1", Digest, (m.me,))]
    # a claim about an older incarnation is old news
    assert m.receive(Digest(RING, "p1", (Member("p0", me.address, 10, DEAD, 1.0, 0),)), 0.5) == []
    assert m.me.incarnation == 11
    m.receive(Digest(RING, "p1", (Member("p0", me.address, 11, DEAD, 1.0, 0),)), 0.5)
    assert (m.me.incarnation, m.me.state) == (12, ALIVE)
    mine = [(e.state, e.reason, e.incarnation) for e in m.drain_events() if e.id == "p0"]
    assert mine == [(ALIVE, ChangeReason.REFUTED, 11), (ALIVE, ChangeReason.REFUTED, 12)]


def test_every_membership_change_is_an_event_with_who_what_and_why():
    m = make("p0", seed_list(2))
    m.receive(Join(RING, "j1", "tcp://j:1", 1.0, 10), 1.0)
    m.receive(Digest(RING, "j1", (Member("j2", "tcp://j:2", 5, ALIVE, 1.0, 1),)), 1.0)
    m.receive(Digest(RING, "j1", (Member("j2", "tcp://j:2", 5, DEAD, 1.0, 1),), verdicts=True), 2.0)
    m.receive(Digest(RING, "j2", (Member("j2", "tcp://j:2", 6, ALIVE, 1.0, 1),)), 3.0)
    m.receive(Digest(RING, "j2", (Member("j2", "tcp://j:2", 9, ALIVE, 1.0, 1),)), 3.5)
    m.receive(Leave(RING, "j1", 10), 4.0)
    got = [(e.at, e.id, e.state, e.reason, e.previous) for e in m.drain_events()]
    assert got == [
        (1.0, "j1", ALIVE, ChangeReason.JOINED, None),
        (1.0, "j2", ALIVE, ChangeReason.JOINED, None),
        (2.0, "j2", DEAD, ChangeReason.REPORTED, ALIVE),
        (3.0, "j2", ALIVE, ChangeReason.REFUTED, DEAD),
        (3.5, "j2", ALIVE, ChangeReason.RESTARTED, ALIVE),
        (4.0, "j1", LEFT, ChangeReason.LEFT, ALIVE),
    ]
    assert m.drain_events() == []  # drained
    assert {r.value for r in ChangeReason} >= {"silence", "refuted", "left", "joined"}
