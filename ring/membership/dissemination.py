"""The piggyback queue: which changed records ride on a peer's probe messages (pure).

SWIM's dissemination component (Das, Gupta, Motivala, DSN 2002, 4.1):
membership news travels on the pings, ping-reqs and acks a peer sends
anyway, not in messages of its own.

- A record enters the queue when it says something new about membership
  (``ring.membership.records.is_news``: a new member, state, incarnation, address,
  weight or idle flag; not a mere heartbeat or counter).
- Each probe message carries up to :data:`PIGGYBACK` queued records, fewest
  sent first, besides the sender's own record and the receiver's when we hold
  it suspect or dead, so that it refutes (:meth:`PiggybackQueue.updates`).
- A record is sent ``ceil(retransmit_mult * log10(N + 1))`` times
  (:func:`retransmit_limit`: SWIM's lambda log N; the formula is
  hashicorp/memberlist's), then leaves the queue.
- Hearing a queued record back, unchanged, counts as one of its sends:
  Demers et al.'s rumor mongering with feedback ("Epidemic algorithms for
  replicated database maintenance", PODC 1987), so a rumor everyone has
  stops early instead of riding lambda log N more (:meth:`PiggybackQueue.heard`).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from operator import itemgetter

from ring.messages import MAX_UPDATES, Member, MemberState

__all__ = ["PIGGYBACK", "PiggybackQueue", "retransmit_limit"]

PIGGYBACK = 12
"""Queued records a probe message carries besides the sender's and the
receiver's own: about 600 B, under a 1,500 B MTU like memberlist's packets,
and the rate that spreads a 256-peer cold start (bench_membership)."""


def retransmit_limit(n: int, mult: int) -> int:
    """Sends of one queued record at ``n`` members: SWIM's lambda log N (memberlist's form)."""
    return max(1, mult * math.ceil(math.log10(n + 1)))


#: States of a receiver its own record goes along to (it refutes them if it is running).
_TOLD = frozenset((MemberState.SUSPECT, MemberState.DEAD, MemberState.RESTARTING))

class PiggybackQueue:
    """Member id -> transmissions so far of its current record (mutable).

    The queue holds ids, not records: what is sent is the view's record of
    that id at the time, so a newer record replaces an older one in place.
    """

    __slots__ = ("mult", "_sent")

    def __init__(self, mult: int) -> None:
        self.mult = mult
        self._sent: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._sent)

    def limit(self, n: int) -> int:
        """Sends of each queued record at ``n`` members (:func:`retransmit_limit`)."""
        return retransmit_limit(n, self.mult)

    def push(self, mid: str) -> None:
        """``mid``'s record is news: spread it from scratch."""
        self._sent[mid] = 0

    def discard(self, mid: str) -> None:
        """Stop spreading ``mid``'s record (forgotten, or a digest brought a newer one)."""
        self._sent.pop(mid, None)

    def heard(self, mid: str, n: int) -> None:
        """Someone sent us the very record we spread: count it as a send (rumor feedback)."""
        sent = self._sent.get(mid)
        if sent is not None:
            self._count(mid, sent, retransmit_limit(n, self.mult))

    def take(self, room: int, n: int) -> list[str]:
        """The ids of at most ``room`` records to send now, fewest sent first; counts the sends."""
        queue = self._sent
        if not queue:
            return []
        limit = retransmit_limit(n, self.mult)
        picks = (list(queue.items()) if len(queue) <= room
                 else heapq.nsmallest(room, queue.items(), key=itemgetter(1)))
        for mid, sent in picks:
            self._count(mid, sent, limit)
        return [mid for mid, _ in picks]

    def updates(self, me: Member, to: str, members: Mapping[str, Member]) -> tuple[Member, ...]:
        """What a probe message to ``to`` carries: ``me`` (our own record), ``to``'s if we hold
        it suspect, dead or restarting (so a member that is running refutes), and the queued
        records sent least (:meth:`take`: counted as sent)."""
        recs = [me]
        m = members.get(to)
        if m is not None and m.state in _TOLD:
            recs.append(m)
        if self._sent:
            room = min(PIGGYBACK, MAX_UPDATES - len(recs))
            for mid in self.take(room, len(members)):
                if mid != me.id and mid != to:
                    recs.append(members[mid])
        return tuple(recs)

    def _count(self, mid: str, sent: int, limit: int) -> None:
        if sent + 1 >= limit:
            del self._sent[mid]
        else:
            self._sent[mid] = sent + 1
