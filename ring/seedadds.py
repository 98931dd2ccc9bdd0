"""An operator's seed batches at the member that took them: their wait for the owners' acks (pure).

``python -m ring seed add`` sends each batch of lines to one live member
(:class:`~ring.messages.SeedAddRequest`). The member's crawl judges every
line as a ``crawl.seeds_file`` line and routes each URL: queued there, or
into the Outbox for its host's owner, journaled and committed first. This
part of ``ring.node.RingNode`` keeps what follows, so the tool's answer
means what it says:

1. **The answer waits for the acks.** A batch that forwarded URLs waits
   until every batch to each of their owners, up to the barrier taken when
   it was routed (:meth:`~ring.forwarding.forwarder.Outbox.barrier`, the
   hand-off's own test), is acked: then ``ACKED`` goes to the tool's
   route. ``wait`` seconds after it was taken it is answered ``DURABLE``
   instead, with the URLs still unacked: they are on this member's disk and
   its Outbox sends them until their owners take them, as any forwarded
   URL (a ring change re-routes them: ``Outbox.reroute``). A batch that
   forwarded nothing is answered at once.
2. **Bounded.** At most ``MAX_WAITING`` batches wait at a time; a request
   beyond is answered ``BUSY`` with nothing taken (the tool asks again a
   moment later), and counted by the caller.
3. **Nothing is taken twice.** The nonce of each batch taken is kept with
   its answer (the last ``MAX_ANSWERED``). A request whose nonce was taken
   is a tool asking again after a lost answer: it gets that answer, or,
   while the batch still waits, the wait moves to the new request's route
   (a tool asks again on a new connection). Nothing is judged again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass

from ring.actions import Action, Reply
from ring.forwarding.forwarder import Outbox
from ring.messages import SeedAddReply, SeedAddStatus

__all__ = ["MAX_ANSWERED", "MAX_WAITING", "SeedAdds"]

#: Batches that may wait for their owners' acks at once (rule 2): at the tool's one
#: batch in flight, 64 tools at a time.
MAX_WAITING = 64
#: Answers kept for a tool that asks again (rule 3): a lost answer is asked for within
#: the tool's timeout, a few batches later at most.
MAX_ANSWERED = 1024


@dataclass(slots=True)
class _Waiting:
    route: bytes
    counts: tuple[tuple[str, int], ...]
    barriers: dict[str, tuple[int, int]]  # owner -> (barrier seq, URLs of this batch forwarded there)
    deadline: float


class SeedAdds:
    """The seed batches this member took (module docstring); mutable, pure."""

    def __init__(self, peer_id: str, ring_name: str, outbox: Outbox) -> None:
        self._me = peer_id
        self._ring = ring_name
        self._outbox = outbox
        self._waiting: dict[int, _Waiting] = {}
        self._answered: OrderedDict[int, SeedAddReply] = OrderedDict()

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    @property
    def full(self) -> bool:
        """Rule 2: no more batches may wait."""
        return len(self._waiting) >= MAX_WAITING

    def reply(self, nonce: int, status: SeedAddStatus, counts: tuple[tuple[str, int], ...] = (),
              unacked: int = 0) -> SeedAddReply:
        return SeedAddReply(self._ring, self._me, nonce, status, counts, unacked)

    def again(self, route: bytes, nonce: int) -> list[Action] | None:
        """Rule 3: what a request with a nonce taken before gets; None for a new nonce."""
        known = self._answered.get(nonce)
        if known is not None:
            return [Reply(route, known)]
        waiting = self._waiting.get(nonce)
        if waiting is not None:
            waiting.route = route
            return []
        return None

    def taken(self, route: bytes, nonce: int, counts: Mapping[str, int], forwarded: Mapping[str, int],
              now: float, wait: float) -> list[Action]:
        """A batch judged and routed, its records committed before what this returns (rule 1).

        ``forwarded``: URLs of this batch put in the Outbox, by owner.
        """
        pairs = tuple(sorted((k, n) for k, n in counts.items() if n))
        barriers = {dest: (self._outbox.barrier(dest), n) for dest, n in forwarded.items() if n}
        if not barriers:
            return self._answer(route, nonce, SeedAddStatus.ACKED, pairs)
        self._waiting[nonce] = _Waiting(route, pairs, barriers, now + wait)
        return self.check(now)

    def check(self, now: float) -> list[Action]:
        """The batches whose owners acked everything, or whose wait ran out (rule 1)."""
        out: list[Action] = []
        for nonce, w in list(self._waiting.items()):
            unacked = sum(n for dest, (seq, n) in w.barriers.items()
                          if not self._outbox.acked_through(dest, seq))
            if unacked and now < w.deadline:
                continue
            del self._waiting[nonce]
            status = SeedAddStatus.DURABLE if unacked else SeedAddStatus.ACKED
            out += self._answer(w.route, nonce, status, w.counts, unacked)
        return out

    def _answer(self, route: bytes, nonce: int, status: SeedAddStatus, counts: tuple[tuple[str, int], ...],
                unacked: int = 0) -> list[Action]:
        msg = self.reply(nonce, status, counts, unacked)
        self._answered[nonce] = msg
        while len(self._answered) > MAX_ANSWERED:
            self._answered.popitem(last=False)
        return [Reply(route, msg)]
