"""Poisoned gossip: one message must not poison a view (ring.membership.view "Hearsay", ring.membership.protocol "Senders").

Pure tests through ``Membership.receive``, each rule alone, then a few
Memberships on tests/support/membershipnet.py's ``FakeNet`` that a poisoned message
reaches: the member it slanders stays alive in every view, never left,
and its own refutation wins everywhere. The same attack on a running ring
of two peers, with and without CurveZMQ, is in tests/e2e/test_poison_ring.py.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from membershipnet import RING, FakeNet, make, rec, seed_list

from ring.messages import Digest, Join, Leave, Member, MemberState, Ping, PingAck, PingReq, Sync
from ring.membership.records import MAX_INCARNATION, REFUTABLE

ALIVE, SUSPECT, DEAD, LEFT, RESTARTING = MemberState
CAP = 2**64 - 2  # MAX_INCARNATION: the highest a record may carry at all
assert CAP == MAX_INCARNATION


def three(lease: float | None = None):
    """p0's Membership, p1 and p2 heard from (alive at incarnation 3), at time 1."""
    m = make("p0", seed_list(3), lease=lease)
    m.receive(Digest(RING, "p1", (rec("p1"),)), 1.0)
    m.receive(Digest(RING, "p2", (rec("p2"),)), 1.0)
    assert {mid: r.state for mid, r in m.members().items()} == {"p0": ALIVE, "p1": ALIVE,
                                                                "p2": ALIVE}
    m.dropped.clear()
    m.drain_events()
    return m


def snapshot(m):
    return dict(m.members()), m.ring_version


# -- senders that are not members ---------------------------------------------------


def poison_records():
    """What a stranger would like p0 to believe: p1 dead, p2 left, a member of its own."""
    return (rec("p1", 3, DEAD, 9), rec("p2", CAP, LEFT, 9), rec("p7", 5), rec("p9", 1))


@pytest.mark.parametrize("make_msg", [
    lambda recs: Digest(RING, "p7", recs),
    lambda recs: Digest(RING, "p7", recs, verdicts=True),
    lambda recs: Digest(RING, "p7", recs, want_reply=True),
    lambda recs: Ping(RING, "p7", 7, "p0", recs[:4]),
    lambda recs: PingReq(RING, "p7", 7, "p1", recs[:4]),
    lambda recs: PingAck(RING, "p7", 7, "p7", recs[:4], vouch=1234),
    lambda recs: Leave(RING, "p7", 5),
    lambda recs: Sync(RING, "p7", (("p1", 3, 1, 9),)),
], ids=["digest", "verdicts", "pull", "ping", "ping_req", "ack", "leave", "sync"])
def test_a_non_member_s_message_is_refused_before_any_record_in_it_is_applied(make_msg):
    m = three(lease=2.0)
    before = snapshot(m)
    queued = m.pending_updates()
    out = m.receive(make_msg(poison_records()), 2.0)
    assert out == []  # no answer either: a stranger learns nothing of the view
    assert snapshot(m) == before
    assert m.pending_updates() == queued
    assert m.dropped == {"unknown_sender": 1}
    assert m.drain_events() == []


def test_a_join_is_the_one_message_a_non_member_may_send_and_it_brings_only_itself():
    m = three()
    out = m.receive(Join(RING, "p3", "tcp://127.0.0.1:7003", 1.0, 7), 2.0)
    assert [dst for dst, _ in out] == ["p3"]  # the answer: our digest
    assert m.members()["p3"].state is ALIVE and m.members()["p3"].incarnation == 7
    # Now a member, its digest is taken as a member's: its claims are hearsay.
    m.receive(Digest(RING, "p3", (rec("p3", 7), rec("p1", 3, DEAD, 9))), 3.0)
    assert m.members()["p1"].state is SUSPECT


# -- "p2 left", from a member and from a non-member -------------------------------------


def test_p2_left_at_the_cap_from_a_member_is_refused():
    m = three()
    before = snapshot(m)
    assert m.receive(Digest(RING, "p1", (rec("p2", CAP, LEFT, 9),)), 2.0) == []
    assert snapshot(m) == before
    assert m.dropped == {"bad_member": 1}


@pytest.mark.parametrize("inc", [CAP, REFUTABLE + 1, REFUTABLE, 4, 3])
@pytest.mark.parametrize("carrier", ["digest", "ping", "ack"])
def test_p2_left_said_by_another_member_never_makes_p2_left(inc, carrier):
    m = three()
    claim = (rec("p1", 3), rec("p2", inc, LEFT, 9))
    msg = {"digest": Digest(RING, "p1", claim),
           "ping": Ping(RING, "p1", 5, "p0", claim),
           "ack": PingAck(RING, "p1", 5, "p1", claim)}[carrier]
    m.receive(msg, 2.0)
    p2 = m.members()["p2"]
    assert p2.state is not LEFT and p2.state is not DEAD
    assert "p2" in m.live() and "p2" in m.quorum()
    assert p2.incarnation == 3  # only p2 raises its own number
    if inc > REFUTABLE:
        assert p2.state is ALIVE and m.dropped["bad_member"] == 1
    else:
        assert p2.state is SUSPECT and m.dropped["hearsay_left"] == 1
        assert m.dropped["clamped"] == (inc > 3)
    # p2's own word at its next incarnation clears it; at the cap claims can't outbid it.
    m.receive(Digest(RING, "p2", (rec("p2", 4, ALIVE, 10),)), 3.0)
    assert m.members()["p2"].state is ALIVE and m.members()["p2"].incarnation == 4


def test_p2_left_from_p2_itself_is_believed():
    m = three()
    m.receive(Leave(RING, "p2", 3), 2.0)
    assert m.members()["p2"].state is LEFT and "p2" not in m.quorum()
    m2 = three()
    m2.receive(Digest(RING, "p2", (rec("p2", 3, LEFT, 9),)), 2.0)
    assert m2.members()["p2"].state is LEFT


def test_a_stale_or_impossible_leave_is_refused():
    m = three()
    m.receive(Leave(RING, "p2", 2), 2.0)  # an earlier process of it
    m.receive(Leave(RING, "p2", 2**64 - 1), 2.0)  # past the cap: nobody could refute it
    assert m.members()["p2"].state is ALIVE
    assert m.dropped == {"stale": 2}


def slandered(n: int, seed: int, claim: Member, victims: list[str], *, sender: str = "p0",
              rounds: int = 60):
    """``n`` peers converge; then ``sender``'s digest of ``claim`` (about p2) reaches ``victims``.

    Every round after, p2 must be alive or suspect in every view, never left
    or dead, and at the end alive everywhere at the incarnation p2 gossips.
    """
    net = FakeNet(seed)
    seeds = seed_list(n)
    for i in range(n):
        net.add(make(f"p{i}", seeds, rng=random.Random(seed * 100 + i), lease=2.0))
    net.run_until_converged(40)
    for v in victims:
        net.peers[v].receive(Digest(RING, sender, (claim,)), net.now)
    for _ in range(rounds):
        net.step()
        for pid, m in net.peers.items():
            state = m.members()["p2"].state
            assert state is ALIVE or state is SUSPECT, (net.round, pid, state)
    assert net.converged(), {p: net.peers[p].members()["p2"] for p in net.peers}
    truth = net.peers["p2"].me.incarnation
    assert truth <= REFUTABLE
    return net, truth


@pytest.mark.parametrize("inc", [CAP, 1002 + 5, 1002])
def test_a_left_claim_reaching_the_others_leaves_p2_alive_everywhere(inc):
    claim = Member("p2", "tcp://127.0.0.1:7002", inc, LEFT, 1.0, 99)
    net, truth = slandered(4, seed=inc % 7, claim=claim, victims=["p1", "p3"])
    # The claim was clamped to the number p2 had: p2 moved on by one at most.
    assert truth <= 1002 + 1


def test_a_left_claim_reaching_p2_itself_is_refuted_above_the_claim():
    # A peer that had not heard of p2 may hold the claim at its number, so
    # p2 outbids the number, not its own (the others clamped it: no harm).
    claim = Member("p2", "tcp://127.0.0.1:7002", 1002 + 10**6, LEFT, 1.0, 99)
    net, truth = slandered(3, seed=2, claim=claim, victims=["p2"])
    assert truth == 1002 + 10**6 + 1
    assert net.peers["p2"].dropped["clamped"] == 0


# -- a relayed dead -----------------------------------------------------------------


def test_a_relayed_dead_is_a_suspicion_that_p2_refutes():
    m = three()
    m.receive(Digest(RING, "p1", (rec("p2", 3, DEAD, 9),)), 2.0)
    assert m.members()["p2"].state is SUSPECT and "p2" in m.live()
    assert m.dropped == {"hearsay_dead": 1}
    m.receive(Digest(RING, "p2", (rec("p2", 4, ALIVE, 10),)), 3.0)
    assert m.members()["p2"].state is ALIVE


def test_a_dead_is_believed_from_its_finder_s_verdicts_or_when_we_suspect_it_already():
    m = three()
    m.receive(Digest(RING, "p1", (rec("p2", 3, DEAD, 9),), verdicts=True), 2.0)
    assert m.members()["p2"].state is DEAD and "p2" not in m.live()
    assert "p2" in m.quorum()  # dead, not left: still counted for leases
    m2 = three()
    m2.receive(Digest(RING, "p1", (rec("p2", 3, SUSPECT, 9),)), 2.0)
    m2.receive(Digest(RING, "p1", (rec("p2", 3, DEAD, 9),)), 2.5)
    assert m2.members()["p2"].state is DEAD


def test_a_verdict_above_the_known_incarnation_is_clamped_and_refutable():
    m = three()
    m.receive(Digest(RING, "p1", (rec("p2", REFUTABLE, DEAD, 9),), verdicts=True), 2.0)
    p2 = m.members()["p2"]
    assert p2.state is DEAD and p2.incarnation == 3 and m.dropped["clamped"] == 1
    m.receive(Digest(RING, "p2", (rec("p2", 4, ALIVE, 10),)), 3.0)
    assert m.members()["p2"].state is ALIVE


def test_a_relayed_dead_among_running_peers_never_makes_p2_dead():
    claim = Member("p2", "tcp://127.0.0.1:7002", 1002, DEAD, 1.0, 99)
    slandered(3, seed=4, claim=claim, victims=["p1"])


# -- claims about ourselves ---------------------------------------------------------


@pytest.mark.parametrize("inc,state", [(REFUTABLE, SUSPECT), (REFUTABLE, DEAD), (REFUTABLE, LEFT),
                                       (1000 + 50, DEAD)])
def test_a_claim_about_us_is_refuted_above_its_number_and_ours(inc, state):
    m = three()
    mine = m.me.incarnation
    out = m.receive(Digest(RING, "p1", (rec("p0", inc, state, 9),)), 2.0)
    assert m.me.state is ALIVE and m.me.incarnation == max(inc, mine) + 1
    # The sender hears the refutation at once, and takes it: it is p0's own word.
    told = [msg for dst, msg in out if dst == "p1"]
    assert told and told[0].members[0] == m.me
    p1 = make("p1", seed_list(3))
    p1.receive(Digest(RING, "p0", (m.me,)), 2.0)
    assert p1.members()["p0"] == m.me


@pytest.mark.parametrize("inc", [REFUTABLE + 1, CAP])
def test_a_claim_about_us_above_refutable_is_refused_not_refuted(inc):
    m = three()
    me = m.me
    assert m.receive(Digest(RING, "p1", (rec("p0", inc, DEAD, 9),)), 2.0) == []
    assert m.me == me and m.dropped == {"bad_member": 1}


def slander_before_heard(claim: Member, *, joiner: bool = False, rounds: int = 60):
    """p0's claim about p2 reaches p1 before p1 heard of p2; then the ring runs.

    ``delay=1``: a reply goes out the next round, so a refutation storm (each
    answer provoking another) is bounded by the rounds run.
    """
    net = FakeNet(3, delay=1)
    seeds = seed_list(2 if joiner else 3)
    for i in range(3):
        net.add(make(f"p{i}", seeds, rng=random.Random(30 + i), lease=2.0))
    net.peers["p1"].receive(Digest(RING, "p0", (rec("p0", 1000), claim)), 0.0)
    assert net.peers["p1"].members()["p2"].incarnation == claim.incarnation
    net.run(rounds)
    return net


def test_an_unheard_seed_slandered_at_refutable_outbids_the_claim_everywhere():
    net = slander_before_heard(rec("p2", REFUTABLE, SUSPECT))
    assert net.peers["p2"].me.incarnation > REFUTABLE  # what it takes to outbid
    assert net.converged(), {p: net.peers[p].members()["p2"] for p in net.peers}


def test_a_joiner_whose_id_was_slandered_before_it_started_can_still_join():
    net = slander_before_heard(rec("p2", REFUTABLE, DEAD), joiner=True)
    assert net.converged(), {p: net.peers[p].members()["p2"] for p in net.peers}


# -- forgotten members ----------------------------------------------------------------


def test_a_forgotten_member_stays_forgotten_until_it_speaks_for_itself():
    m = three(lease=2.0)
    assert m.forget("p2", 2.0)
    assert "p2" not in m.members() and "p2" not in m.quorum()
    assert not m.forget("p2", 2.0) and not m.forget("p0", 2.0)
    # Gossip of a peer that has not forgotten it yet: refused.
    m.receive(Digest(RING, "p1", (rec("p1"), rec("p2", 3, ALIVE, 50))), 3.0)
    assert "p2" not in m.members()
    assert m.dropped["forgotten"] == 1
    # Its own messages other than a Join: a sender that is not a member.
    m.receive(Ping(RING, "p2", 1, "p0", (rec("p2", 3, ALIVE, 51),)), 3.0)
    assert m.dropped["unknown_sender"] == 1 and "p2" not in m.members()
    # Its own Join, at any incarnation (one forged high before it was
    # forgotten must not shut its next process out): a member again.
    m.receive(Join(RING, "p2", "tcp://127.0.0.1:7002", 1.0, 3), 4.0)
    assert m.members()["p2"].state is ALIVE and "p2" in m.quorum()


def test_a_forgotten_member_s_records_from_others_at_a_later_incarnation_bring_it_back():
    m = three()
    m.forget("p2", 2.0)
    m.receive(Digest(RING, "p1", (rec("p2", 4, ALIVE, 1),)), 3.0)
    assert m.members()["p2"].incarnation == 4


def test_forget_of_a_claim_s_subject_cannot_be_undone_by_a_claim_at_the_same_number():
    m = three()
    m.forget("p2", 2.0)
    for state in (ALIVE, SUSPECT, DEAD, LEFT):
        m.receive(Digest(RING, "p1", (replace(rec("p2", 3, state, 70)),)), 3.0)
    assert "p2" not in m.members()
