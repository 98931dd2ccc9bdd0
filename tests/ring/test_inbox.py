"""ring.forwarding.inbox: the receiver's verdicts (accept, replay, other ring, stale epoch), forgetting and reopening."""

import pytest

from ring.forwarding.inbox import Inbox, Verdict
from ring.messages import UrlBatch

RING = "r"


def batch(seq, *, sender="p1", epoch=7, ring=RING, n=2, seen=()):
    return UrlBatch(ring, sender, epoch, seq,
                    tuple((f"http://{sender}.test/{seq}/{i}", 0) for i in range(n)), seen)


def test_inbox_accepts_new_batches_and_counts_their_entries():
    ib = Inbox(RING)
    assert ib.accept(batch(0)) is Verdict.ACCEPT
    assert ib.accept(batch(1, seen=("http://x.test/s",))) is Verdict.ACCEPT
    assert ib.accept(batch(0, sender="p2", n=5)) is Verdict.ACCEPT
    assert ib.received == 2 + 3 + 5
    assert ib.stats().batches == 3


def test_a_resent_or_replayed_batch_is_acked_but_not_taken_again():
    ib = Inbox(RING)
    assert ib.accept(batch(0)) is Verdict.ACCEPT
    v = ib.accept(batch(0))
    assert v is Verdict.DUPLICATE and v.ack
    assert ib.received == 2
    assert ib.dropped == {"replay": 1, "other_ring": 0, "stale_epoch": 0}


def test_out_of_order_batches_are_each_taken_once():
    ib = Inbox(RING)
    for seq in [2, 0, 3]:
        assert ib.accept(batch(seq)) is Verdict.ACCEPT
    for seq in [0, 2, 3]:
        assert ib.accept(batch(seq)) is Verdict.DUPLICATE
    assert ib.accept(batch(1)) is Verdict.ACCEPT  # the hole, resent late
    assert ib.accept(batch(1)) is Verdict.DUPLICATE
    assert ib.accept(batch(4)) is Verdict.ACCEPT
    assert ib.received == 10


def test_other_ring_is_dropped_without_ack():
    ib = Inbox(RING)
    v = ib.accept(batch(0, ring="other"))
    assert v is Verdict.OTHER_RING and not v.ack
    assert ib.received == 0
    assert ib.accept(batch(0)) is Verdict.ACCEPT  # it did not poison the channel
    assert ib.dropped["other_ring"] == 1


def test_a_restarted_sender_starts_a_new_channel_and_its_old_epoch_is_stale():
    ib = Inbox(RING)
    assert ib.accept(batch(0, epoch=7)) is Verdict.ACCEPT
    assert ib.accept(batch(1, epoch=7)) is Verdict.ACCEPT
    assert ib.accept(batch(0, epoch=9)) is Verdict.ACCEPT  # seq 0 again: a new epoch
    assert ib.received == 2  # the old epoch's channel left the sum with its process
    v = ib.accept(batch(2, epoch=7))  # a late frame of the old process
    assert v is Verdict.STALE_EPOCH and not v.ack
    assert ib.accept(batch(1, epoch=7)) is Verdict.STALE_EPOCH
    assert ib.dropped["stale_epoch"] == 2
    assert ib.accept(batch(0, epoch=9)) is Verdict.DUPLICATE


def test_forget_closes_the_senders_epoch():
    ib = Inbox(RING)
    ib.accept(batch(0))
    ib.accept(batch(0, sender="p2"))
    ib.forget("p1")
    ib.forget("nobody")
    assert ib.received == 2
    assert ib.accept(batch(1)) is Verdict.STALE_EPOCH
    assert ib.accept(batch(0, epoch=8)) is Verdict.ACCEPT  # it restarted
    assert ib.received == 4


def test_a_dead_senders_channel_is_hidden_until_reopened_with_its_count_and_sequence():
    ib = Inbox(RING)
    ib.accept(batch(0))
    ib.accept(batch(1))
    ib.forget("p1")  # declared dead
    assert ib.received == 0
    assert ib.accept(batch(2)) is Verdict.STALE_EPOCH  # (the driver drops these first)
    ib.reopen("p1")  # it refuted: the same process, the same channel
    assert ib.received == 4
    assert ib.accept(batch(1)) is Verdict.DUPLICATE  # a resend of one taken before it died
    assert ib.accept(batch(2)) is Verdict.ACCEPT
    assert ib.received == 6
    ib.forget("p1", before=9)
    ib.reopen("p1")  # a restart's channel stays closed
    assert ib.received == 0 and ib.accept(batch(3)) is Verdict.STALE_EPOCH


def test_forget_before_closes_only_an_older_epoch():
    ib = Inbox(RING)
    ib.accept(batch(0, epoch=7))
    ib.forget("p1", before=9)  # it restarted with epoch 9 and has not sent here yet
    assert ib.received == 0
    assert ib.accept(batch(1, epoch=7)) is Verdict.STALE_EPOCH
    assert ib.accept(batch(0, epoch=9)) is Verdict.ACCEPT
    ib.forget("p1", before=9)  # told late: the new channel stays open
    assert ib.accept(batch(1, epoch=9)) is Verdict.ACCEPT
    assert ib.received == 4


def test_window_overflow_gives_up_the_oldest_hole():
    ib = Inbox(RING, window=3)
    for seq in [1, 2, 3]:
        assert ib.accept(batch(seq)) is Verdict.ACCEPT
    assert ib.accept(batch(5)) is Verdict.ACCEPT  # 4 taken above the hole at 0: overflow
    # seq 0 is now taken to be taken (the documented trade-off), 4 is still a hole.
    assert ib.accept(batch(0)) is Verdict.DUPLICATE
    assert ib.accept(batch(4)) is Verdict.ACCEPT
    assert ib.accept(batch(6)) is Verdict.ACCEPT


def test_inbox_rejects_a_bad_window():
    with pytest.raises(ValueError):
        Inbox(RING, window=0)
