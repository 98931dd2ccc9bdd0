"""ring.status: our own row from the crawl's figures, the others' from gossip, the reply, the lease in words.

Pure functions, values in and rows out; ``RingNode.status_reply`` (tests/ring/test_node.py)
gathers their arguments from the node's parts.
"""

from ring.forwarding.forwarder import OutboxStats
from ring.membership.lease import LeaseState, PauseReason
from ring.messages import MAX_BUSIEST, MAX_DROPPED, LeaseStatus, Member, MemberState, StatusReply, decode, encode
from ring.status import (StatusFigures, capped_counts, forwarding_rows, gossiped_row, lease_status, lease_words,
                         own_row, status_reply)

ME = Member("p1", "tcp://a:1", 5, MemberState.ALIVE, 1.0, pages=3, sent=4, received=5)
P2 = Member("p2", "tcp://a:2", 6, MemberState.SUSPECT, 1.0, pages=9, sent=2, received=1)
HELD = LeaseState(True, 3, 2, 3, None, 0.0, 12.0)


def test_our_row_carries_the_crawls_figures_our_counters_lease_and_ring():
    figures = StatusFigures(pages=7, rate=1.5, frontier=4, hosts=2, forwarded_out=3, forwarded_in=1,
                            dns_hit_rate=0.5, bloom_fill=0.01, uptime=9.0, errors={"timeout": 2},
                            busiest=tuple((f"h{i}", 6.0, 6.0) for i in range(MAX_BUSIEST + 3)), lease=HELD)
    row = own_row(ME, 0.5, figures, dropped=(("garbage", 1),), ring_version=4, fingerprint=0xAB)
    assert (row.id, row.address, row.state, row.share) == ("p1", "tcp://a:1", MemberState.ALIVE, 0.5)
    assert (row.pages, row.rate, row.frontier, row.hosts, row.forwarded_out, row.forwarded_in) == (7, 1.5, 4, 2, 3, 1)
    assert (row.dns_hit_rate, row.bloom_fill, row.uptime) == (0.5, 0.01, 9.0)
    assert row.dropped == (("garbage", 1),) and row.errors == (("timeout", 2),)
    assert len(row.busiest) == MAX_BUSIEST  # the wire's bound
    assert (row.lease, row.vouched, row.needed, row.quorum) == (LeaseStatus.HELD, 3, 2, 3)
    assert (row.ring_version, row.ring_fingerprint) == (4, 0xAB)
    assert not row.lease_open
    settling = LeaseState(False, 1, 2, 3, PauseReason.GRACE, 2.0, 0.0, open=True)
    row = own_row(ME, 0.5, StatusFigures(lease=settling), dropped=(), ring_version=5, fingerprint=0xAC)
    assert row.lease is LeaseStatus.GRACE and row.lease_open and row.as_json()["lease_open"] is True


def test_another_members_row_is_what_gossip_says_and_its_lease_is_unknown():
    row = gossiped_row(P2, 0.25)
    assert (row.id, row.state, row.share, row.pages, row.forwarded_out, row.forwarded_in) == (
        "p2", MemberState.SUSPECT, 0.25, 9, 2, 1)
    assert (row.rate, row.frontier, row.uptime, row.lease) == (0.0, 0, 0.0, LeaseStatus.UNKNOWN)


def test_the_reply_holds_every_member_by_id_ours_as_given_and_survives_the_codec():
    own = own_row(ME, 0.5, StatusFigures(pages=7), dropped=(), ring_version=1, fingerprint=1)
    reply = status_reply("r", "p1", 42, {"p2": P2, "p1": ME}, {"p1": 0.5, "p2": 0.5}, own)
    assert [m.id for m in reply.members] == ["p1", "p2"] and reply.members[0] is own
    assert reply.nonce == 42
    back = decode(encode(reply))
    assert isinstance(back, StatusReply) and back == reply  # one row type, on the wire as in the tools


def test_counters_beyond_the_wires_bound_are_summed_as_other():
    few = capped_counts({"b": 2, "a": 1})
    assert few == (("a", 1), ("b", 2))
    many = capped_counts({f"k{i:03d}": i + 1 for i in range(MAX_DROPPED + 5)})
    assert len(many) == MAX_DROPPED and many[-1][0] == "other"
    assert sum(n for _, n in many) == sum(range(1, MAX_DROPPED + 6))  # nothing lost, only merged


def test_the_outboxs_frame_counters_shown_are_those_not_zero():
    stats = OutboxStats(forwarded=0, recent_hits=0, relayed=0, seen_forwarded=0, batches=3, resent=0, acked=0,
                        stale_acks=0, rerouted=0, returned=0, pending=0, unacked=0, sent=0, messages=2,
                        acks_alone=1, age=0.05)
    assert forwarding_rows(stats) == {"fwd.frames": 2, "fwd.batches": 3, "fwd.acks_alone": 1, "fwd.age_ms": 50}


def test_a_lease_in_a_status_row_and_in_words():
    assert lease_status(None) is LeaseStatus.UNKNOWN
    assert lease_status(HELD) is LeaseStatus.HELD
    assert lease_status(LeaseState(False, 1, 2, 3, PauseReason.GRACE, 2.0, 0.0)) is LeaseStatus.GRACE
    assert lease_status(LeaseState(False, 1, 2, 3, PauseReason.NO_MAJORITY, 0.0, 0.0)) is LeaseStatus.NO_MAJORITY
    assert lease_words(LeaseStatus.UNKNOWN, 0, 0, 0, 0.0) == "unknown"
    assert lease_words(LeaseStatus.GRACE, 0, 2, 3, 0.5) == "paused: grace"
    assert lease_words(LeaseStatus.NO_MAJORITY, 1, 2, 3, 0.0) == "paused: no majority (1 of 3 vouch, 2 needed)"
    # Hosts that kept their owner go on after a ring change (ring.membership.hostgate).
    assert lease_words(LeaseStatus.GRACE, 1, 2, 3, 2.0, open=True) == "settling: moved hosts wait (2.0s left)"
    assert lease_words(LeaseStatus.NO_MAJORITY, 1, 2, 3, 0.0, open=True) == "settling: moved hosts wait"


def test_the_crawls_figures_from_a_mapping_or_an_object():
    got = StatusFigures.of({"pages": 3, "limits": {"cap.x": 1}, "busiest": [("h", 1, 2)]}, 5.0)
    assert (got.pages, got.uptime, dict(got.limits), got.busiest) == (3, 5.0, {"cap.x": 1}, (("h", 1.0, 2.0),))
    assert StatusFigures.of(StatusFigures(pages=4, uptime=1.0), 6.0) == StatusFigures(pages=4, uptime=6.0)
