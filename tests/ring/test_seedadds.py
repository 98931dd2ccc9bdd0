"""ring.seedadds and rule 11 of ring.node: ``ring seed add``'s batches at the member that takes them (pure).

The crawl's side (judging the lines) is tests/core/test_seedadd.py; here the node's: what
it asks of the crawl, what it refuses, the bound on waiting batches, and the codec.
"""

from __future__ import annotations

import pytest

from ring.actions import Reply, SeedsAsked
from ring.forwarding.forwarder import Outbox
from ring.messages import (MAX_ARRAY, MAX_STR, DecodeError, EncodeError, SeedAddReply, SeedAddRequest,
                           SeedAddStatus, decode, encode)
from ring.node import RingNode
from ring.seedadds import MAX_ANSWERED, MAX_WAITING, SeedAdds

RING = "r"
SEEDS = [("a", "tcp://127.0.0.1:5001", 1.0), ("b", "tcp://127.0.0.1:5002", 1.0)]
TOOL = b"\x00tool"


def node() -> RingNode:
    return RingNode("a", "tcp://127.0.0.1:5001", 1.0, RING, seeds=SEEDS, gossip_interval=0.1,
                    suspect_after=0.5, dead_after=1.5, now=0.0, incarnation=1)


def ask(nonce: int = 1, lines: tuple[str, ...] = ("http://x.test/",), ring: str = RING) -> SeedAddRequest:
    return SeedAddRequest(ring, "ring-seed-add", nonce, lines)


def test_a_new_batch_is_the_crawls_to_judge_and_one_of_another_ring_is_dropped():
    n = node()
    msg = ask()
    assert n.receive(TOOL, msg, 0.0) == [SeedsAsked(TOOL, msg)]
    assert n.receive(TOOL, ask(ring="other"), 0.0)[-1].reason == "other_ring"  # type: ignore[union-attr]


def test_at_most_max_waiting_batches_wait_for_acks_and_the_next_is_busy():
    n = node()
    n.forward("http://y.test/", 0, "b", 0.0)
    for nonce in range(MAX_WAITING):
        assert n.seeds_taken(TOOL, nonce, {"forwarded": 1}, {"b": 1}, 0.0, 10.0) == []
    out = n.receive(TOOL, ask(nonce=10_000), 0.1)
    assert out == [Reply(TOOL, SeedAddReply(RING, "a", 10_000, SeedAddStatus.BUSY))]
    assert n.dropped["seed_add_batch.busy"] == 1


def test_seed_add_waiting_bounds_the_waiting_batches_and_each_hit_is_counted_by_its_key():
    n = RingNode("a", "tcp://127.0.0.1:5001", 1.0, RING, seeds=SEEDS, gossip_interval=0.1, suspect_after=0.5,
                 dead_after=1.5, now=0.0, incarnation=1, seed_add_waiting=3)
    n.forward("http://y.test/", 0, "b", 0.0)
    for nonce in range(3):
        assert n.receive(TOOL, ask(nonce=nonce), 0.0) == [SeedsAsked(TOOL, ask(nonce=nonce))]
        assert n.seeds_taken(TOOL, nonce, {"forwarded": 1}, {"b": 1}, 0.0, 10.0) == []
    for nonce in (3, 4):  # the fourth and fifth: busy, nothing asked of the crawl
        assert n.receive(TOOL, ask(nonce=nonce), 0.1) == [
            Reply(TOOL, SeedAddReply(RING, "a", nonce, SeedAddStatus.BUSY))]
    assert n.dropped["seed_add_batch.busy"] == 2 and n.dropped["cap.seed_add_waiting"] == 2
    assert dict(n.dropped_rows())["cap.seed_add_waiting"] == 2  # as ring status carries it


def test_seed_add_answers_bounds_the_answers_kept_and_each_one_forgotten_is_counted():
    n = RingNode("a", "tcp://127.0.0.1:5001", 1.0, RING, seeds=SEEDS, gossip_interval=0.1, suspect_after=0.5,
                 dead_after=1.5, now=0.0, incarnation=1, seed_add_answers=2)
    for nonce in range(4):
        [answer] = n.seeds_taken(TOOL, nonce, {"queued": 1}, {}, 0.0, 10.0)
    assert n.dropped["cap.seed_add_answers"] == 2
    assert n.receive(TOOL, ask(nonce=3), 0.1) == [answer]  # kept: answered as before
    assert n.receive(TOOL, ask(nonce=1), 0.1) == [SeedsAsked(TOOL, ask(nonce=1))]  # forgotten: judged anew


def test_a_wait_ends_with_the_acks_through_the_barrier_not_before():
    out = Outbox("a", RING, epoch=1)
    adds = SeedAdds("a", RING, out)
    out.add("http://early.test/", 0, "b", 0.0)  # queued before the batch: under its barrier too
    out.add("http://y.test/", 0, "b", 0.0)
    assert adds.taken(TOOL, 5, {"forwarded": 1}, {"b": 1}, 0.0, 10.0) == []
    [(dest, batch)] = out.due(0.0)
    assert adds.check(1.0) == []  # sent, not acked
    out.ack("b", 1, batch.seq)
    [reply] = adds.check(1.1)
    assert reply == Reply(TOOL, SeedAddReply(RING, "a", 5, SeedAddStatus.ACKED, (("forwarded", 1),)))
    assert adds.waiting == 0 and adds.again(b"\x00new", 5) == [Reply(b"\x00new", reply.msg)]


def test_answers_are_kept_for_the_last_max_answered_batches():
    adds = SeedAdds("a", RING, Outbox("a", RING, epoch=1))
    for nonce in range(MAX_ANSWERED + 1):
        adds.taken(TOOL, nonce, {"queued": 1}, {}, 0.0, 1.0)
    assert adds.again(TOOL, 0) is None and adds.again(TOOL, MAX_ANSWERED) is not None


def test_the_codec_carries_a_batch_and_its_answer_and_bounds_them():
    msg = SeedAddRequest(RING, "ring-seed-add", 2**64 - 1, ("http://x.test/", "", "# c", "é"), 3)
    assert decode(encode(msg)) == msg
    reply = SeedAddReply(RING, "a", 1, SeedAddStatus.DURABLE, (("queued", 3), ("scope", 1)), 2)
    assert decode(encode(reply)) == reply
    with pytest.raises(EncodeError):
        encode(SeedAddRequest(RING, "t", 1, ("x" * (MAX_STR + 1),)))
    with pytest.raises(EncodeError):
        encode(SeedAddRequest(RING, "t", 1, ("x",) * (MAX_ARRAY + 1)))
    frame = bytearray(encode(reply))
    assert frame[1:3] == bytes([4, 31])  # wire version 4, the version seed add came in
    frame[2] = 32  # a code of the range, not a message: an unknown type, dropped and counted
    with pytest.raises(DecodeError) as info:
        decode(bytes(frame))
    assert "unknown message type 32" in str(info.value)
