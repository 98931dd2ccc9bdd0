"""ring.membership.dissemination through Membership: what rides on probe messages, how often, and what is news;
last, PiggybackQueue.updates alone."""

from __future__ import annotations

from ring.membership.dissemination import PIGGYBACK, retransmit_limit
from ring.messages import Digest, Ping, PingAck, PingReq

from membershipnet import DEAD, INTERVAL, RING, answer, heard_cluster, make, rec, seed_list


def carried(out, pid, state):
    """How many messages in ``out`` carry ``pid``'s record in ``state`` as a piggybacked update."""
    return sum(1 for d, msg in out if type(msg) in (Ping, PingReq, PingAck) and d != pid
               and any(r.id == pid and r.state is state for r in msg.updates))


def test_a_change_is_piggybacked_retransmit_limit_times_then_never():
    m = heard_cluster(8)
    assert m.pending_updates() == 0  # a digest's records spread by digests
    m.receive(Digest(RING, "p1", (rec("p5", state=DEAD),)), 0.0)  # a pushed verdict is news
    assert m.pending_updates() == 1
    limit = retransmit_limit(8, 4)
    assert limit == m.retransmits() == 4  # 4 x ceil(log10(9))
    sends, t = 0, 0.0
    for _ in range(20):
        t += INTERVAL
        out = m.tick(t)
        sends += carried(out, "p5", DEAD)
        answer(m, out, t)
    assert sends == limit and m.pending_updates() == 0
    # lambda log N: more members, more sends (memberlist's formula)
    assert [retransmit_limit(n, 4) for n in (8, 64, 256, 512)] == [4, 8, 12, 12]


def test_the_fewest_sent_records_go_first_and_old_news_counts_as_a_send():
    m = heard_cluster(40)
    for i in range(20, 40):  # 20 verdicts, more than a message carries
        m.receive(Digest(RING, "p1", (rec(f"p{i}", state=DEAD),), verdicts=True), 0.0)
    out = m.tick(0.5)
    first = next(msg for d, msg in out if type(msg) is Ping)
    sent_first = {r.id for r in first.updates} - {"p0"}
    assert len(sent_first) == PIGGYBACK
    second = next(msg for d, msg in out if type(msg) is Ping and msg is not first)
    assert {r.id for r in second.updates} - {"p0"} >= {f"p{i}" for i in range(20, 40)} - sent_first
    # Demers et al.'s feedback: a peer telling us what we spread already knew it
    before = m.pending_updates()
    for _ in range(m.retransmits()):
        m.receive(Digest(RING, "p2", (rec("p39", state=DEAD),), verdicts=True), 0.6)
    assert m.pending_updates() == before - 1


def test_heartbeats_and_counters_are_not_news_but_an_idle_flag_is():
    m = heard_cluster(4)
    m.receive(Digest(RING, "p1", (rec("p2", hb=9, sent=5),)), 0.0)
    assert m.pending_updates() == 0
    m.receive(Digest(RING, "p1", (rec("p2", hb=10, idle=True),)), 0.0)
    assert m.pending_updates() == 1


def test_a_probe_message_carries_our_record_the_receivers_if_suspect_or_dead_then_the_least_sent():
    # ring.membership.dissemination.PiggybackQueue.updates alone.
    from ring.membership.dissemination import PiggybackQueue
    from ring.messages import Member, MemberState

    def m(mid, state=MemberState.ALIVE):
        return Member(mid, f"tcp://a/{mid}", 1, state, 1.0)

    members = {"p1": m("p1"), "p2": m("p2", MemberState.SUSPECT), "p3": m("p3")}
    queue = PiggybackQueue(4)
    assert queue.updates(members["p1"], "p3", members) == (members["p1"],)  # nothing queued, p3 alive
    for mid in ("p1", "p2", "p3"):
        queue.push(mid)
    got = queue.updates(members["p1"], "p2", members)
    # Ours first, then the suspect receiver's (it refutes), then the queue less those two.
    assert got == (members["p1"], members["p2"], members["p3"])
