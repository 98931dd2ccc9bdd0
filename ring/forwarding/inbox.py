"""The receiver's half of forwarding: one verdict per URL batch, replays and resends recognised (pure).

``ring.forwarding.forwarder``'s :class:`~ring.forwarding.forwarder.Outbox` numbers each batch per
destination and resends it until acked; the owner's :class:`Inbox` decides
what a batch that arrives is (:meth:`Inbox.accept`, one :class:`Verdict` a
batch), the receiver-side duplicate filter of a sliding window (RFC 9293
§3.4, with batches in place of bytes). ``ring.node`` (rules 3-5) drops
batches from non-members before asking, and carries the verdict out.

Verdicts:

- ``OTHER_RING``: dropped and counted, no ack.
- ``STALE_EPOCH``: a batch from an older epoch of a sender whose newer epoch
  has been seen (it restarted), or from a sender :meth:`Inbox.forget` hid
  as dead and :meth:`Inbox.reopen` did not show again. Dropped, no ack. A
  restarted sender resumes its queue from its own state (peer/state/journal.py
  persists ``Outbox.queued``), so the old frame adds nothing; and this Inbox
  keeps only the newest epoch's sequence state, so it could not tell an old
  frame from a replay.
- ``DUPLICATE``: this (sender, epoch, seq) was taken before: ack again (the
  first ack may have been lost), do not re-add. Per sender the Inbox keeps
  the highest contiguous ``seq`` taken plus the set of those taken above it;
  that set only grows while a batch is missing (lost, soon resent), and if
  it exceeds ``window`` the oldest holes are treated as taken (``floor``
  jumps to the smallest taken ``seq``). A batch arriving that late is then
  acked but not re-added; at 500 URLs a batch, a hole must outlive 2 M later
  URLs from one sender for that to happen, and replay safety wins over it.
- ``ACCEPT``: new: take its entries, routing each with the current ring
  (``Outbox.relay`` for those this peer no longer owns), then ack.
  Persist before acking where crashes matter (peer/state/journal.py).

``Inbox.received`` is the receiver's termination counter: the entries of
every batch accepted, over the open channels. ``ring.forwarding.forwarder``'s
"Termination counters" is the contract it keeps with ``Outbox.sent``, and
when the driver calls :meth:`Inbox.forget` and :meth:`Inbox.reopen`.

Memory: per sender a few ints and at most ``window`` sequence numbers.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ring.messages import UrlBatch

__all__ = ["Inbox", "InboxStats", "Verdict"]


class Verdict(enum.StrEnum):
    """What the receiver does with a batch (module docstring)."""

    ACCEPT = "accept"  # take the entries, then ack
    DUPLICATE = "replay"  # taken before: ack again, take nothing
    OTHER_RING = "other_ring"  # drop, no ack
    STALE_EPOCH = "stale_epoch"  # drop, no ack

    @property
    def ack(self) -> bool:
        """Whether the receiver acks the batch."""
        return self is Verdict.ACCEPT or self is Verdict.DUPLICATE


@dataclass(frozen=True, slots=True)
class InboxStats:
    batches: int  # batches accepted
    received: int  # the termination counter (module docstring)
    dropped: tuple[tuple[str, int], ...]  # (reason, count); reasons are Verdict values


class _Channel:
    """Sequence numbers taken from one sender in its newest epoch."""

    __slots__ = ("epoch", "floor", "above", "count", "closed", "dead")

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.floor = 0  # every seq below is taken
        self.above: set[int] = set()  # taken seqs above floor (there is a hole)
        self.count = 0  # entries accepted: this channel's share of Inbox.received
        self.closed = False  # forget(before=...): this epoch's process is gone for good
        self.dead = False  # forget(): the sender is dead, until reopen()


class Inbox:
    """The receiver side: one verdict per batch, replays and resends recognised."""

    __slots__ = ("_ring", "_window", "_channels", "_batches", "_dropped")

    def __init__(self, ring_name: str, *, window: int = 4096) -> None:
        if window < 1:
            raise ValueError(f"window must be at least 1, not {window!r}")
        self._ring = ring_name
        self._window = window
        self._channels: dict[str, _Channel] = {}
        self._batches = 0
        self._dropped = dict.fromkeys(
            (Verdict.DUPLICATE, Verdict.OTHER_RING, Verdict.STALE_EPOCH), 0
        )

    def accept(self, batch: UrlBatch) -> Verdict:
        """Classify ``batch``; on ACCEPT it is recorded as taken (so take it, then ack)."""
        if batch.ring != self._ring:
            return self._drop(Verdict.OTHER_RING)
        ch = self._channels.get(batch.sender)
        if ch is None or batch.epoch > ch.epoch:
            ch = self._channels[batch.sender] = _Channel(batch.epoch)
        elif batch.epoch < ch.epoch or ch.closed or ch.dead:
            return self._drop(Verdict.STALE_EPOCH)
        seq = batch.seq
        above = ch.above
        if seq < ch.floor or seq in above:
            return self._drop(Verdict.DUPLICATE)
        if seq == ch.floor:
            seq += 1
            while seq in above:
                above.remove(seq)
                seq += 1
            ch.floor = seq
        else:
            above.add(seq)
            if len(above) > self._window:
                # Give up the holes below the oldest taken seq (module docstring).
                seq = min(above)
                while seq in above:
                    above.remove(seq)
                    seq += 1
                ch.floor = seq
        ch.count += len(batch.urls) + len(batch.seen)
        self._batches += 1
        return Verdict.ACCEPT

    def _drop(self, verdict: Verdict) -> Verdict:
        self._dropped[verdict] += 1
        return verdict

    def forget(self, sender: str, *, before: int | None = None) -> None:
        """Hide ``sender``'s channel: it is dead; or (``before``) close it: it restarted.

        Dead, its count leaves :attr:`received` and its batches are refused
        (``STALE_EPOCH``) until :meth:`reopen`: a member declared dead may
        be alive and come back as the same process (a partition that
        healed), and then its channel goes on where it stopped, count and
        sequence numbers kept, so a resend of a batch taken before is a
        replay. With ``before`` (a restarted sender's new epoch), only a
        channel of an older epoch is closed, for good: only a newer epoch
        opens a new channel, so calling it after the new epoch's first
        batch arrived is harmless. The Inbox knows only senders it has
        heard from, so the driver also drops batches from peers that are
        not live members before :meth:`accept` (a dead peer's batch still
        in flight would otherwise open a channel the sums exclude).
        """
        ch = self._channels.get(sender)
        if ch is None:
            return
        if before is None:
            ch.dead = True
        elif ch.epoch < before:
            ch.closed = True
            ch.count = 0
            ch.above = set()

    def reopen(self, sender: str) -> None:
        """``sender``, forgotten as dead, is a live member again: its channel counts again."""
        ch = self._channels.get(sender)
        if ch is not None:
            ch.dead = False

    @property
    def received(self) -> int:
        """Entries in accepted batches, over the open channels (module docstring)."""
        return sum(ch.count for ch in self._channels.values() if not ch.dead)

    @property
    def dropped(self) -> dict[str, int]:
        """Batches refused or already taken, by reason (for ``ring status``)."""
        return {v.value: n for v, n in self._dropped.items()}

    def stats(self) -> InboxStats:
        return InboxStats(self._batches, self.received, tuple(self.dropped.items()))
