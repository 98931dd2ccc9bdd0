"""ring.node's RingNode, synchronously: one node's checks, then whole fake rings (tests/support/fakering.py).

What a node returns is ``ring.actions``' values, checked here as they come;
its parts are met here at work (``ring.handoff``'s hand-offs, ``ring.forwarding.routes``'
route checks, ``ring.status``' reply, ``ring.voterwatch``'s voter requests and survival
warnings, ``ring.forgetting``'s answer to ``ring forget``) and alone in their own files.

The fake-ring tests stand in for real-process ones: they judge a crawl by the
fake web's request log (every page fetched exactly once) and finish in
virtual time, so a loaded machine cannot make them flake.
"""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest
from fakering import RING, FakeRing, FakeWeb, host_of

from ring.hashring import HashRing
from ring.messages import (
    Ack,
    BatchPart,
    Digest,
    ForgetOutcome,
    ForgetReply,
    ForgetRequest,
    HandoffDone,
    HostStarts,
    Join,
    LeaseStatus,
    LeaveRequest,
    MemberState,
    Packet,
    StatusReply,
    StatusRequest,
    UrlBatch,
    decode,
    encode,
)
from ring.forwarding.intake import ADOPT_PREFIX
from ring.node import (
    HANDOFF_TIMEOUT,
    MARKER_ROUNDS,
    Count,
    Deliver,
    HandOff,
    Rerouted,
    LeaveAsked,
    Log,
    Released,
    Reply,
    RingNode,
    Send,
    StatusAsked,
    StatusFigures,
)

SEEDS = [("p1", "tcp://a:1", 1.0), ("p2", "tcp://a:2", 1.0), ("p3", "tcp://a:3", 1.0)]
R2 = b"p2/aaaa"
INC = 5000


def node(peer_id: str = "p1", **kw) -> RingNode:  # type: ignore[no-untyped-def]
    return RingNode(peer_id, "tcp://a:1", 1.0, RING, seeds=SEEDS, gossip_interval=0.1,
                    suspect_after=0.5, dead_after=1.5, now=0.0, incarnation=INC, **kw)


def heard(n: RingNode, sender: str = "p2", route: bytes = R2, inc: int = INC) -> None:
    """``sender`` gossips its own record (incarnation ``inc``) to ``n``."""
    other = RingNode(sender, "tcp://a:2", 1.0, RING, seeds=SEEDS, gossip_interval=0.1,
                     suspect_after=0.5, dead_after=1.5, now=0.0, incarnation=inc)
    n.receive(route, other.membership.digest(), 0.0)


def first_ring(n: RingNode, now: float = 0.0) -> list:
    """A round, and the first ring's hand-off (``ring.handoff`` rule 6) read, with nothing fetched here."""
    out = n.tick(now, idle=True, pages=0)
    [first] = n.handoff.records  # made by the first ring: the first gossip heard, or this round
    return out + n.begin_handoff(first.version, 0, {}, now)


def batch(seq: int = 0, sender: str = "p2", epoch: int = INC, ring: str = RING) -> UrlBatch:
    return UrlBatch(ring, sender, epoch, seq, (("http://x.test/a", 1),), ("http://x.test/b",))


# -- one node ------------------------------------------------------------------


def test_an_accepted_batch_is_delivered_and_committed_before_its_ack():
    n = node()
    heard(n)
    out = n.receive(R2, batch(), 0.1)
    # The ack is owed, not sent: it leaves with the next frame, after the Deliver ran.
    assert out == [Deliver((("http://x.test/a", 1),), ("http://x.test/b",), "p2")]
    assert n.inbox.received == 2
    assert n.flush(0.1) == []
    assert n.flush(0.1 + n.outbox.stats().age) == [Send("p2", Ack(RING, "p1", INC, 0))]
    assert n.flush(5.0) == []  # once


def test_a_replay_is_acked_again_and_counted_but_not_delivered():
    n = node()
    heard(n)
    n.receive(R2, batch(), 0.1)
    n.flush(1.0)
    out = n.receive(R2, batch(), 2.0)
    assert out == [Count("replay")]
    assert n.flush(3.0) == [Send("p2", Ack(RING, "p1", INC, 0))]
    assert n.dropped["replay"] == 1


@pytest.mark.parametrize("route, reason", [(b"p3/bbbb", "route_spoof"), (b"anonymous", "route_spoof")])
def test_a_member_message_on_another_members_route_is_dropped(route, reason):
    n = node()
    heard(n)
    for msg in (batch(), Ack(RING, "p2", INC, 0), HandoffDone(RING, "p2", ("p1", "p2", "p3"))):
        assert n.receive(route, msg, 0.1) == [Count(reason)]
    assert n.dropped[reason] == 3 and n.inbox.received == 0


def test_with_curve_the_connections_user_id_must_be_the_sender():
    n = node(curve=True)
    heard(n, route=R2)  # no user id: refused too
    assert n.dropped["wrong_user"] == 1
    assert n.receive(R2, batch(), 0.1, user_id="p3") == [Count("wrong_user")]
    n.receive(R2, Digest(RING, "p2", ()), 0.1, user_id="p2")
    assert n.dropped["wrong_user"] == 2  # only the two impostors


def test_other_rings_unknown_senders_and_future_epochs_are_counted():
    n = node()
    assert n.receive(R2, batch(ring="other"), 0.1) == [Count("other_ring")]
    assert n.receive(b"p9/cc", batch(sender="p9"), 0.1) == [Count("unknown_sender")]
    heard(n)
    assert n.receive(R2, batch(epoch=INC + 1), 0.1) == [Count("future_epoch")]
    assert n.receive(R2, StatusReply(RING, "p2", ()), 0.1) == [Count("unexpected_type")]
    assert n.receive(b"x", StatusRequest("other", "tool"), 0.1) == [Count("other_ring")]
    assert {k: v for k, v in n.dropped_rows()} == {
        "other_ring": 2, "unknown_sender": 1, "future_epoch": 1, "unexpected_type": 1}


def test_an_adopt_batch_bypasses_the_inbox_and_is_acked_on_its_route():
    n = node()
    b = batch(sender=ADOPT_PREFIX + "p3", epoch=7)
    out = n.receive(b"tool-route", b, 0.1)
    assert out == [Deliver(b.urls, b.seen, b.sender),
                   Reply(b"tool-route", Ack(RING, "p1", 7, 0))]
    assert n.inbox.received == 0  # not in any termination sum
    assert n.dropped["adopted_batches"] == 1


def test_a_member_on_a_new_route_is_a_restart_and_its_old_channel_closes():
    n = node()
    heard(n)
    n.receive(R2, batch(), 0.1)
    n.forward("http://y.test/", 0, "p2", 0.1)
    n.flush(0.2)
    assert n.inbox.received == 2 and n.outbox.sent == 1
    # Its new life: a new route nonce and a later incarnation.
    heard(n, route=b"p2/0e0e", inc=INC + 10)
    assert n.dropped["peer_restarts"] == 1
    assert n.outbox.sent == 1  # still unacked: the new life will take it again (Outbox.forget)
    # Without Curve, gossip alone could be forged: the channel closes on the
    # new life's own batch, and the old life's late ones are refused.
    assert n.inbox.received == 2
    assert n.receive(b"p2/0e0e", batch(seq=0, epoch=INC + 10), 0.3)[0] == Deliver(batch().urls, batch().seen, "p2")
    assert n.inbox.received == 2  # the new channel's entries only
    assert n.receive(R2, batch(seq=1), 0.3) == [Count("stale_epoch")]


def test_with_curve_a_restarted_members_gossip_closes_its_old_channel():
    n = node(curve=True)
    other = RingNode("p2", "tcp://a:2", 1.0, RING, seeds=SEEDS, gossip_interval=0.1,
                     suspect_after=0.5, dead_after=1.5, now=0.0, incarnation=INC)
    n.receive(R2, other.membership.digest(), 0.0, user_id="p2")
    n.receive(R2, batch(), 0.1, user_id="p2")
    assert n.inbox.received == 2
    again = RingNode("p2", "tcp://a:2", 1.0, RING, seeds=SEEDS, gossip_interval=0.1,
                     suspect_after=0.5, dead_after=1.5, now=0.0, incarnation=INC + 10)
    n.receive(b"p2/0e0e", again.membership.digest(), 0.2, user_id="p2")
    assert n.dropped["peer_restarts"] == 1
    assert n.inbox.received == 0  # Inbox.forget(before=INC + 10): the old life left the sums


def test_a_late_message_of_an_old_life_or_a_forged_route_closes_nothing():
    n = node()
    heard(n)
    n.receive(R2, batch(), 0.1)
    n.receive(b"p2/f0f0", batch(seq=1), 0.2)  # another route, the same epoch: not a new life
    n.receive(b"p2/f0f0", Ack(RING, "p2", INC, 0), 0.2)
    n.receive(b"p2/f0f0", batch(seq=2, epoch=INC + 99), 0.2)  # a future epoch: refused
    heard(n, route=b"p2/abab", inc=INC + 50)  # a forged new life, without Curve
    assert n.inbox.received == 4  # p2's real channel is still open
    assert n.receive(R2, batch(seq=3), 0.3)[0] == Deliver(batch().urls, batch().seen, "p2")


def test_status_and_leave_requests_become_actions_for_the_driver():
    n = node()
    assert n.receive(b"tool", StatusRequest(RING, "ring-status", 42), 0.1) == [StatusAsked(b"tool", 42)]
    reply = n.status_reply(42, StatusFigures(pages=7, limits={"cap.x": 2}))
    me = next(m for m in reply.members if m.id == "p1")
    assert (reply.nonce, me.pages, dict(me.dropped)) == (42, 7, {"cap.x": 2})
    assert n.receive(b"tool", LeaveRequest(RING, "ring-leave", "p2"), 0.1) == []
    assert n.receive(b"tool", LeaveRequest(RING, "ring-leave", "p1"), 0.1)[-1] == LeaveAsked("ring-leave")


def test_a_listed_peer_never_heard_from_is_waiting_in_ring_status_not_alive():
    # A [[peer]] that never started is in every view alive at incarnation 0;
    # `ring status` named it "alive" for a minute (seed_grace).
    n = node()
    heard(n)  # p2 is running; p3 never started
    rows = {m.id: m for m in n.status_reply(1, StatusFigures()).members}
    assert (rows["p2"].shown_state, rows["p3"].shown_state) == ("alive", "waiting")
    assert rows["p3"].as_json()["state"] == "waiting" and rows["p3"].as_json()["heard"] is False
    heard(n, "p3", b"p3/bbbb")  # it starts
    rows = {m.id: m for m in n.status_reply(2, StatusFigures()).members}
    assert rows["p3"].shown_state == "alive" and rows["p3"].heard


def _p3_dead_by_p2s_verdict(n: RingNode) -> None:
    """p2, alive, tells ``n`` that its own probes found p3 dead."""
    p2 = RingNode("p2", "tcp://a:2", 1.0, RING, seeds=SEEDS, gossip_interval=0.1,
                  suspect_after=0.5, dead_after=1.5, now=0.0, incarnation=INC)
    p3 = p2.membership.members()["p3"]
    n.receive(R2, Digest(RING, "p2", (p2.membership.me, replace(p3, incarnation=7, state=MemberState.DEAD)),
                         verdicts=True), 0.5)


def test_a_forget_request_drops_a_dead_member_and_refuses_a_live_one_or_ourselves():
    n = node()
    heard(n)
    _p3_dead_by_p2s_verdict(n)
    n.tick(0.6, idle=True, pages=0)
    assert n.lease_state(0.6).quorum == 3  # the dead p3 still counts (ring.membership.lease rule 4)

    def ask(target: str, nonce: int) -> tuple[ForgetOutcome, list[str]]:
        out = n.receive(b"tool", ForgetRequest(RING, "ring-forget", target, nonce), 1.0)
        [reply] = [a for a in out if isinstance(a, Reply)]
        assert reply.route == b"tool" and isinstance(reply.msg, ForgetReply)
        assert (reply.msg.sender, reply.msg.target, reply.msg.nonce) == ("p1", target, nonce)
        return reply.msg.outcome, [a.text for a in out if isinstance(a, Log)]

    outcome, logs = ask("p2", 1)
    assert outcome is ForgetOutcome.ALIVE and "p2" in n.membership.members()
    assert "forget of p2 requested by ring-forget refused: p2 is alive in our view" in logs
    outcome, logs = ask("p1", 2)
    assert outcome is ForgetOutcome.SELF and "refused: that is this peer" in logs[0]
    outcome, logs = ask("p3", 3)
    assert outcome is ForgetOutcome.FORGOTTEN
    assert "p3" not in n.membership.members() and n.lease_state(1.0).quorum == 2
    assert any(line.startswith("forget requested by ring-forget: p3 (dead, incarnation 7) dropped")
               for line in logs)
    assert ask("p3", 4)[0] is ForgetOutcome.NOT_KNOWN  # again: nothing left to forget
    # Stale gossip of p3 cannot bring it back; a new process of it (higher incarnation) can.
    p3 = RingNode("p3", "tcp://a:3", 1.0, RING, seeds=SEEDS, gossip_interval=0.1,
                  suspect_after=0.5, dead_after=1.5, now=0.0, incarnation=7)
    n.receive(b"p3/cccc", p3.membership.digest(), 1.1)
    assert "p3" not in n.membership.members()
    # Another ring's request is dropped before anything is done.
    assert n.receive(b"tool", ForgetRequest("other", "ring-forget", "p2"), 1.2) == [Count("other_ring")]


def test_a_forget_request_refuses_a_suspect_member():
    n = node()
    heard(n)
    p2 = n.membership.members()["p2"]
    n.receive(R2, Digest(RING, "p2", (replace(p2, state=MemberState.SUSPECT),)), 0.1)
    assert n.membership.members()["p2"].state is MemberState.SUSPECT
    out = n.receive(b"tool", ForgetRequest(RING, "ring-forget", "p2", 5), 0.2)
    assert out[0].msg.outcome is ForgetOutcome.SUSPECT and "p2" in n.membership.members()


def test_a_ring_of_two_pauses_when_one_dies_and_goes_on_once_it_is_forgotten():
    """A majority of two is two: the survivor stops starting requests (ring.membership.lease
    rule 4) until ``ring forget`` takes the dead peer out of its quorum."""
    ring = FakeRing(n=2, web=FakeWeb(hosts=8, pages_per_host=30))
    ring.run_until(lambda: len(ring.fetches) >= 20, max_seconds=30)
    survivor, victim = ring.peers["p1"], ring.peers["p2"]
    victim.alive = False
    ring.run_until(lambda: survivor.node.membership.members()["p2"].state is MemberState.DEAD,
                   max_seconds=10)
    ring.run_for(2.0)  # past the grace of the ring change
    state = survivor.core.lease_state(ring.now)
    assert state is not None and not state.held
    assert (state.vouched, state.needed, state.quorum) == (1, 2, 2)
    row = next(m for m in survivor.core.status_reply(1, StatusFigures(lease=state)).members if m.id == "p1")
    assert (row.lease, row.vouched, row.needed, row.quorum) == (LeaseStatus.NO_MAJORITY, 1, 2, 2)
    assert row.ring_fingerprint == survivor.node.membership.lease.ring != 0
    assert row.ring_version == survivor.node.membership.ring_version >= 1
    paused_at = len(ring.fetches)
    ring.run_for(5.0)
    assert len(ring.fetches) == paused_at and not survivor.finished  # paused, for good
    survivor.run(survivor.core.receive(b"tool", ForgetRequest(RING, "ring-forget", "p2", 9), ring.now,
                                       wall=ring.now))
    assert survivor.replies[-1][1].outcome is ForgetOutcome.FORGOTTEN
    ring.run_until(lambda: survivor.finished is not None, max_seconds=60)
    assert survivor.finished == "cluster done"
    assert set(ring.fetch_counts()) == ring.web.all_urls()
    held = survivor.core.lease_state(ring.now)
    assert held is not None and held.held and (held.vouched, held.needed, held.quorum) == (1, 1, 1)


def test_a_handoff_done_counts_only_for_our_view_of_the_ring():
    n = node()
    heard(n)
    n.tick(0.0, idle=True, pages=0)  # the first ring
    assert n.receive(R2, HandoffDone(RING, "p2", ("p1", "p2")), 0.1) == [Count("handoff_other_ring_view")]
    assert n.receive(R2, HandoffDone(RING, "p2", ("p1", "p2", "p3")), 0.1) == [Released("p2")]
    assert n.receive(R2, HostStarts(RING, "p2", (("x.test", 1.0),)), 0.1)[0].starts == (("x.test", 1.0),)


def test_a_leaver_takes_no_url_batch_and_its_sender_reroutes_it_when_it_sees_the_leave():
    # A batch that reaches a leaver is not taken: taken and acked, its URLs
    # would have to reach their new owner before the leaver exits, and a
    # leaver exits once its own hand-off is acked, whatever came after
    # (peer.engine.crawler lingers a few gossip rounds, then ends). Unacked, the
    # batch stays its sender's, which re-routes it when its ring drops the
    # leaver (ring.forwarding.forwarder rule 5).
    leaver = node("p1")
    heard(leaver)
    leaver.tick(0.0, idle=True, pages=0)
    sender = RingNode("p2", "tcp://a:2", 1.0, RING, seeds=SEEDS, gossip_interval=0.1,
                      suspect_after=0.5, dead_after=1.5, now=0.0, incarnation=INC, owner_key=host_of)
    heard(sender, "p1", b"p1/aaaa")
    sender.tick(0.0, idle=True, pages=0)
    url = next(f"http://h{i}.web.test/" for i in range(100)
               if sender.ring().owner(f"h{i}.web.test") == "p1")
    sender.forward(url, 1, "p1", 0.1)
    sent = [a.msg for a in sender.flush(1.0) if isinstance(a.msg, UrlBatch)]
    assert [u for b in sent for u, _ in b.urls] == [url]
    leave_msgs = [a.msg for a in leaver.leave(1.0) if isinstance(a, Send) and a.dest == "p2"]
    out = leaver.receive(R2, sent[0], 1.1)
    assert not any(isinstance(a, Deliver) for a in out)
    assert leaver.dropped["leaving"] == 1
    assert not any(isinstance(a.msg, Ack | Packet) for a in leaver.flush(5.0))  # not acked
    # The sender hears the leave: the URL goes to the host's next owner.
    out = []
    for msg in leave_msgs:
        out += sender.receive(b"p1/aaaa", msg, 1.2)
    taken_back = [u for a in out if isinstance(a, Rerouted) for u, _ in a.urls]
    again = [u for a in sender.flush(5.0) if isinstance(a.msg, UrlBatch) and a.dest != "p1"
             for u, _ in a.msg.urls]
    new_owner = sender.ring().owner(host_of(url))
    assert new_owner != "p1"
    assert (taken_back if new_owner == "p2" else again) == [url]


def test_a_handoff_tells_each_new_owner_once_its_batches_are_acked():
    n = node()
    heard(n)
    first_ring(n)
    p2 = RingNode("p2", "tcp://a:2", 1.0, RING, seeds=SEEDS, gossip_interval=0.1,
                  suspect_after=0.5, dead_after=1.5, now=0.0, incarnation=INC)
    p2.tick(1.9, idle=True, pages=0)
    # p2 is alive and declared p3 dead (its probes of p3 went unanswered):
    # p3's hosts move, and p1 hands over what it fetched of them.
    p3 = p2.membership.members()["p3"]
    verdict = Digest(RING, "p2", (p2.membership.me, replace(p3, state=MemberState.DEAD)), verdicts=True)
    out = n.receive(R2, verdict, 1.9) + n.tick(2.0, idle=True, pages=0)
    handoff = next(a for a in out if type(a).__name__ == "HandOff")
    n.outbox.add_seen("http://moved.test/", "p2", 2.0)
    out = n.begin_handoff(handoff.version, 1, {"p2": [("moved.test", 1.5)]}, 2.0)
    assert not any(isinstance(a, Send) and isinstance(a.msg, HandoffDone) for a in out)
    assert n.handing_off == 1 and not n.left(True)
    sent = [a for a in n.flush(2.1) if isinstance(a.msg, UrlBatch)]
    assert sent and sent[0].msg.seen == ("http://moved.test/",)
    out = n.receive(R2, Ack(RING, "p2", INC, sent[0].msg.seq), 2.2)
    kinds = [type(a.msg).__name__ for a in out if isinstance(a, Send)]
    assert kinds == ["HostStarts", "HandoffDone"]
    assert n.handoff.ended[-1] == (1, pytest.approx(0.2)) and n.handing_off == 0


def declared(n: RingNode, who: str, state: MemberState, inc: int, at: float) -> list:
    """p2 (or p3, for p2) tells ``n`` that ``who`` is ``state`` at incarnation ``inc``."""
    teller = "p3" if who == "p2" else "p2"
    rec = replace(n.membership.members()[who], state=state, incarnation=inc)
    # A death as its finder's verdict (a relayed one would be hearsay: ring.membership.view).
    msg = Digest(RING, teller, (rec,), verdicts=state is MemberState.DEAD)
    return n.receive(f"{teller}/aaaa".encode(), msg, at)


def test_a_member_declared_dead_and_back_as_the_same_process_has_its_batches_taken_again():
    n = node()
    heard(n)
    n.tick(0.0, idle=True, pages=0)
    assert isinstance(n.receive(R2, batch(0), 0.1)[0], Deliver)
    declared(n, "p2", MemberState.DEAD, INC, 1.0)
    assert "p2" not in n.ring() and n.inbox.received == 0  # its channel left the sums
    assert n.receive(R2, batch(1), 1.1) == [Count("unknown_sender")]  # dead: not taken, not acked
    declared(n, "p2", MemberState.ALIVE, INC + 1, 2.0)  # it refuted: a partition healed
    assert "p2" in n.ring() and n.inbox.received == 2
    assert n.receive(R2, batch(1), 2.1)[0] == Deliver(batch().urls, batch().seen, "p2")
    assert n.receive(R2, batch(0), 2.2) == [Count("replay")]  # taken before it died
    assert n.inbox.received == 4 and n.dropped["stale_epoch"] == 0


def test_a_handoff_to_a_member_that_dies_before_acking_is_given_up_and_counted():
    n = node()
    heard(n)
    first_ring(n)
    [handoff] = [a for a in declared(n, "p3", MemberState.DEAD, INC, 1.0) if isinstance(a, HandOff)]
    n.outbox.add_seen("http://moved.test/", "p2", 1.1)
    n.begin_handoff(handoff.version, 1, {}, 1.1)
    assert n.flush(1.2) and n.handing_off == 1
    out = declared(n, "p2", MemberState.DEAD, INC, 1.3)  # before its ack
    assert n.handoff.ended[-1] == (1, pytest.approx(0.2))  # ended, given up
    assert (n.dropped["handoff_member_gone"], n.dropped["handoffs_gave_up"]) == (1, 1)
    assert [type(a) for a in out if isinstance(a, HandOff)] == [HandOff]  # the next one, for p1 alone


def test_a_handoff_without_acks_or_reads_is_given_up_after_the_timeout_and_counted():
    n = node()
    heard(n)
    first_ring(n)
    declared(n, "p3", MemberState.DEAD, INC, 1.0)
    [first] = [h for h in n.handoff.records if h.version == n.membership.ring_version]
    n.outbox.add_seen("http://moved.test/", "p2", 1.0)
    n.begin_handoff(first.version, 1, {}, 1.0)
    n.flush(1.1)  # sent, never acked
    declared(n, "p3", MemberState.ALIVE, INC + 1, 2.0)  # a second hand-off, never read
    out = n.tick(2.0 + HANDOFF_TIMEOUT, idle=True, pages=0)
    assert n.handing_off == 0 and len(n.handoff.ended) == 3  # the first ring's too
    assert (n.dropped["handoff_timeout"], n.dropped["handoff_unread"], n.dropped["handoffs_gave_up"]) == (1, 1, 2)
    assert any(type(a) is Log and "gave up waiting for acks from p2" in a.text for a in out)
    # p2, given up on, is never told HandoffDone, not even in the repeats.
    later = [a for t in range(5) for a in n.tick(63.0 + t, idle=True, pages=0)]
    assert not any(isinstance(a, Send) and isinstance(a.msg, HandoffDone) and a.dest == "p2" for a in later)


def test_a_refutation_with_no_ring_change_tells_handoff_done_again():
    # Others declared us dead, and hold their hosts until our HandoffDone
    # (peer/core/handoff/holds.py rule 5); our view never changed: nothing to hand over.
    n = node()
    heard(n)
    first_ring(n)
    me = n.membership.me
    n.receive(R2, Digest(RING, "p2", (replace(me, state=MemberState.DEAD),)), 1.0)
    assert n.membership.me.incarnation == INC + 1  # refuted
    told = [a.dest for t in range(MARKER_ROUNDS + 2) for a in n.tick(1.1 + t / 10, idle=True, pages=0)
            if isinstance(a, Send) and isinstance(a.msg, HandoffDone)]
    assert sorted(told) == sorted(["p2", "p3"] * MARKER_ROUNDS)
    # A refuted suspicion moves no host: nobody waits for anything of ours.
    me = n.membership.me
    n.receive(R2, Digest(RING, "p2", (replace(me, state=MemberState.SUSPECT),)), 2.0)
    assert n.membership.me.incarnation == INC + 2
    assert not any(isinstance(a, Send) and isinstance(a.msg, HandoffDone)
                   for t in range(3) for a in n.tick(2.1 + t / 10, idle=True, pages=0))


def test_two_nodes_piggyback_acks_on_the_batches_they_trade():
    n, p2 = node(), node("p2")
    heard(n)
    heard(p2, "p1", b"p1/bbbb")
    n.forward("http://to-p2.test/", 1, "p2", 0.0)
    [to_p2] = n.flush(1.0)
    assert isinstance(to_p2.msg, UrlBatch)
    out = p2.receive(b"p1/bbbb", to_p2.msg, 1.0)
    assert isinstance(out[0], Deliver) and not any(isinstance(a, Send) for a in out)
    p2.forward("http://to-p1.test/", 2, "p1", 1.01)
    [back] = p2.flush(1.01 + p2.outbox.stats().age)  # one frame: its batch and its ack
    assert isinstance(back.msg, Packet) and back.msg.acks == (to_p2.msg.seq,)
    assert not n.outbox.idle
    out = n.receive(R2, decode(encode(back.msg)), 1.2)
    assert out == [Deliver((("http://to-p1.test/", 2),), (), "p2")]
    assert n.outbox.idle  # the piggybacked ack retired its batch
    assert n.inbox.received == 1
    [ack] = n.flush(2.0)
    assert ack.msg == Ack(RING, "p1", INC, back.msg.batches[0].seq)  # nothing went back: alone
    me = next(m for m in n.status_reply(1, StatusFigures()).members if m.id == "p1")
    rows = dict(me.dropped)  # what `ring status` shows with the counters
    assert (rows["fwd.frames"], rows["fwd.acks_alone"], rows["fwd.age_ms"]) == (2, 1, 50)


def test_a_packet_from_an_impostor_changes_nothing():
    n = node()
    heard(n)
    n.forward("http://to-p2.test/", 1, "p2", 0.0)
    [sent] = n.flush(1.0)
    forged = Packet(RING, "p2", INC, (BatchPart(0, (("http://x.test/a", 1),)),), INC, (sent.msg.seq,))
    assert n.receive(b"p3/bbbb", forged, 1.1) == [Count("route_spoof")]
    assert not n.outbox.idle and n.inbox.received == 0


def test_a_packet_of_a_future_epoch_still_delivers_its_acks_but_not_its_batches():
    n = node()
    heard(n)
    n.forward("http://to-p2.test/", 1, "p2", 0.0)
    [sent] = n.flush(1.0)
    early = Packet(RING, "p2", INC + 5, (BatchPart(0, (("http://x.test/a", 1),)),), INC, (sent.msg.seq,))
    assert n.receive(R2, early, 1.1) == [Count("future_epoch")]
    assert n.outbox.idle and n.inbox.received == 0


# -- fake rings ------------------------------------------------------------------


def assert_every_page_fetched_once(ring: FakeRing) -> None:
    counts = ring.fetch_counts()
    assert set(counts) == ring.web.all_urls(), "pages missing"
    assert {u: c for u, c in counts.items() if c > 1} == {}, "pages fetched twice"


def test_three_peers_crawl_every_page_once_and_stop_by_themselves():
    ring = FakeRing(n=3)
    ring.run_until(ring.all_finished, max_seconds=60)
    assert_every_page_fetched_once(ring)
    assert {p.finished for p in ring.peers.values()} == {"cluster done"}
    # Peers that trade URLs ack on the batches going back.
    assert sum(p.node.outbox.stats().acks_piggybacked for p in ring.peers.values()) > 0
    # Every page was fetched by the owner of its host, and each peer had some.
    owners = HashRing({"p1": 1.0, "p2": 1.0, "p3": 1.0}, vnodes=64)
    assert all(owners.owner(host_of(url)) == who for who, url, _ in ring.fetches)
    assert all(p.fetched for p in ring.peers.values())
    # Status, as `ring status` would get it from p1: three alive members sharing the ring.
    p1 = ring.peers["p1"]
    p1.run(p1.core.receive(b"tool", StatusRequest(RING, "ring-status", 1), ring.now, wall=ring.now))
    (_, reply), = p1.replies
    assert [(m.id, m.state.value) for m in reply.members] == [(p, "alive") for p in ("p1", "p2", "p3")]
    assert sum(m.share for m in reply.members) == pytest.approx(1.0)
    assert next(m for m in reply.members if m.id == "p1").pages == len(p1.fetched)


# Seeds whose losses hit URL batches (the last assert): seed 2 lost only markers and gossip.
@pytest.mark.parametrize("seed", [1, 3, 4])
def test_lost_and_late_messages_lose_no_page_and_fetch_none_twice(seed):
    ring = FakeRing(n=3, seed=seed, drop=0.1, delay=(0.001, 0.08))
    ring.run_until(ring.all_finished, max_seconds=120)
    assert_every_page_fetched_once(ring)
    assert ring.net.stats["dropped"] > 0
    assert sum(p.node.outbox.stats().resent for p in ring.peers.values()) > 0


def test_a_peer_not_in_the_seeds_joins_mid_crawl_and_takes_hosts():
    ring = FakeRing(n=2, web=FakeWeb(hosts=16, pages_per_host=10))
    ring.run_for(0.5)
    joiner = ring.add("p9")
    ring.run_until(ring.all_finished, max_seconds=120)
    assert_every_page_fetched_once(ring)
    assert joiner.fetched, "the joiner fetched nothing"
    assert set(joiner.released) == {"p1", "p2"}  # both previous owners handed over
    assert all(p.finished == "cluster done" for p in ring.peers.values())


def test_a_graceful_leave_mid_crawl_hands_everything_over():
    ring = FakeRing(n=3, web=FakeWeb(hosts=16, pages_per_host=10))
    ring.run_for(0.6)
    leaver = ring.peers["p2"]
    before = len(leaver.fetched)
    leaver.run(leaver.core.receive(b"tool", LeaveRequest(RING, "ring-leave", "p2"), ring.now, wall=ring.now))
    ring.run_until(ring.all_finished, max_seconds=120)
    assert leaver.finished == "left the ring"
    assert len(leaver.fetched) == before  # it fetched nothing once asked to leave
    assert_every_page_fetched_once(ring)
    assert leaver.node.handoff.ended and leaver.node.handoff.ended[-1][0] == before


def test_a_crashed_peer_is_declared_dead_and_its_unacked_batches_are_rerouted():
    ring = FakeRing(n=3, web=FakeWeb(hosts=16, pages_per_host=10))
    ring.run_for(0.4)
    ring.peers["p3"].alive = False  # kill -9: nothing more from it
    ring.run_until(ring.all_finished, max_seconds=120)
    for p in ("p1", "p2"):
        assert ring.peers[p].node.membership.members()["p3"].state.value == "dead"
        assert set(ring.peers[p].node.ring()) == {"p1", "p2"}
    # What p3 had queued is lost with it (scripts/adopt.py brings it back);
    # nothing the survivors took is fetched twice.
    counts = ring.fetch_counts()
    survivors = [u for who, u, _ in ring.fetches if who != "p3"]
    assert len(survivors) == len(set(survivors))
    assert counts


def test_a_partition_splits_the_ring_and_healing_joins_it_again():
    ring = FakeRing(n=4)
    for p in ring.peers.values():
        p.busy = True  # nobody finishes meanwhile (a finished peer exits)
    # First they hear of each other: a seed never heard from is not probed
    # for ring.seed_grace (a rolling start), so a split at the start moves nothing.
    ring.run_for(1.0)
    ring.net.partition({"p1", "p2"}, {"p3", "p4"})
    ring.run_for(2.5)
    assert set(ring.peers["p1"].node.ring()) == {"p1", "p2"}
    assert set(ring.peers["p4"].node.ring()) == {"p3", "p4"}
    ring.net.heal()
    ring.run_for(3.0)
    for p in ring.peers.values():
        assert not p.finished
        assert set(p.node.ring()) == {"p1", "p2", "p3", "p4"}, p.id


def test_max_pages_is_cluster_wide():
    ring = FakeRing(n=3, web=FakeWeb(hosts=16, pages_per_host=20), max_pages=40)
    ring.run_for(10)
    fetched = len(ring.fetches)
    # Each round the rest is split among the busy peers (Membership.page_cap);
    # a peer's view of the others is at most a round old, so each can
    # overshoot by at most a round of its fetches (10 here: a page each
    # 10 ms step, gossip every 100 ms). Measured: 54.
    per_round = round(ring.gossip_interval / ring.step_seconds) * ring.pages_per_step
    assert 40 <= fetched <= 40 + ring.n * per_round, fetched
    assert len({f.who for f in ring.fetches}) == 3
    assert fetched < len(ring.web.all_urls()) // 2


def test_every_membership_change_is_a_log_line_with_who_the_state_and_why():
    n = node()
    out = n.receive(R2, Join(RING, "p2", "tcp://a:2", 1.0, INC), 0.0)
    assert "member p2: alive (joined), incarnation 5000" in [a.text for a in out if type(a) is Log]
    p3 = n.membership.members()["p3"]
    out = n.receive(R2, Digest(RING, "p2", (replace(p3, incarnation=7, state=MemberState.DEAD),),
                               verdicts=True), 0.5)
    [line] = [a for a in out if type(a) is Log and a.text.startswith("member p3")]
    assert line.text == "member p3: dead (reported), incarnation 7" and line.level == logging.WARNING


def test_a_voter_request_is_answered_and_a_refused_one_counted_where_status_shows_it():
    from ring.messages import VoterAction, VoterOutcome, VoterReply, VoterRequest, Voters
    from ring.node import VotersChanged
    from ring.membership.voters import VoterRecord

    n = node()
    heard(n)

    def ask(target: str, base: int, nonce: int) -> tuple[VoterReply, list]:
        out = n.receive(b"tool", VoterRequest(RING, "ring-voter", VoterAction.ADD, target, base, nonce), 0.2)
        [reply] = [a for a in out if isinstance(a, Reply)]
        assert reply.route == b"tool" and isinstance(reply.msg, VoterReply) and reply.msg.nonce == nonce
        return reply.msg, out

    # No lease yet (nobody vouched): refused, said and counted, nothing changed.
    reply, out = ask("p2", 0, 1)
    assert reply.outcome is VoterOutcome.NO_LEASE and reply.version == 0
    assert Count("voter_no_lease") in out
    assert any(isinstance(a, Log) and "refused: no_lease" in a.text for a in out)
    reply, out = ask("p2", 9, 2)  # stale: the operator saw another version
    assert reply.outcome is VoterOutcome.STALE and Count("voter_stale") in out
    reply, out = ask(" p2", 0, 3)  # not a member id as the ring spells it
    assert reply.outcome is VoterOutcome.STALE and Count("voter_malformed") in out
    drops = dict(n.status_reply(1, StatusFigures()).members[0].dropped)
    assert {k: drops[k] for k in ("voter_no_lease", "voter_stale", "voter_malformed")} == {
        "voter_no_lease": 1, "voter_stale": 1, "voter_malformed": 1}
    assert n.membership.voter_record.version == 0
    # A member's record at a higher version is taken: durable first, then logged.
    out = n.receive(R2, Voters(RING, "p2", 1, ("p1", "p2", "p3", "p4"), ("p1", "p2", "p3")), 0.3)
    assert out[0] == VotersChanged(VoterRecord(1, ("p1", "p2", "p3", "p4"), ("p1", "p2", "p3")))
    assert any(isinstance(a, Log) and a.text == "voters: p1, p2, p3 -> p1, p2, p3, p4 (version 1, changing)"
               for a in out)
    row = n.status_reply(2, StatusFigures()).members[0]
    assert (row.voters_version, row.voters, row.voters_joint) == (1, ("p1", "p2", "p3", "p4"), ("p1", "p2", "p3"))
    # In p1's view p1, p2, p3 are alive and p4 never heard of: 3 of 3 and 3 of 4, 2 and 3 needed.
    assert (row.voters_alive, row.voters_needed) == (3, 3)
    # A record from a tool (not on a member's route) is refused as any member message would be.
    assert n.receive(b"tool", Voters(RING, "p2", 3, ("p1",), ("p1", "p2")), 0.4)[0] == Count("route_spoof")
    assert n.membership.voter_record.version == 1


def test_a_change_that_leaves_the_ring_surviving_no_failure_is_warned_once():
    from ring.messages import Leave

    n = node()
    heard(n)
    heard(n, "p3", b"p3/cccc")
    out = n.tick(0.1, idle=True, pages=0)
    assert not any(isinstance(a, Log) and a.text.startswith("voters:") for a in out)  # 3 of 3: survives 1
    assert n.membership.survival().survives == 1
    out = n.receive(b"p3/cccc", Leave(RING, "p3", INC), 0.2)  # a voter leaves: 2 of 2 left
    warned = [a for a in out if isinstance(a, Log) and a.text.startswith("voters:")]
    assert [(a.level, a.text) for a in warned] == [(logging.WARNING, (
        "voters: the ring now survives no failure: 2 of 2 voters alive, 2 needed; make a live member a "
        "voter (python -m ring voter add ID) or retire a dead one (python -m ring voter retire ID)"))]
    for t in (0.3, 0.4, 0.5):  # once: not again each round
        assert not any(isinstance(a, Log) and a.text.startswith("voters:")
                       for a in n.tick(t, idle=True, pages=0))
    row = n.status_reply(1, StatusFigures()).members[0]
    assert (row.voters_alive, row.voters_needed) == (2, 2) and row.as_json()["survives"] == 0
