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
2. **Bounded.** At most ``max_waiting`` batches (``crawl.seed_add_waiting``,
   default :data:`MAX_WAITING`) wait at a time; a request beyond is answered
   ``BUSY`` with nothing taken (the tool asks again a moment later), and
   counted by the caller, as ``seed_add_batch.busy`` and as the cap's hit
   ``cap.seed_add_waiting``.
3. **Nothing is taken twice.** The nonce of each batch taken is kept with
   its answer (the last ``max_answered``: ``crawl.seed_add_answers``, default
   :data:`MAX_ANSWERED`; each one forgotten to keep that bound counts
   ``cap.seed_add_answers``, and a tool asking again for it has its batch
   judged anew, as at another peer). A request whose nonce was taken
   is a tool asking again after a lost answer: it gets that answer, or,
   while the batch still waits, the wait moves to the new request's route
   (a tool asks again on a new connection). Nothing is judged again.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass

from ring.actions import Action, Reply
from ring.forwarding.forwarder import Outbox
from ring.messages import SeedAddReply, SeedAddStatus

__all__ = ["ANSWERS_CAP", "CAPS", "MAX_ANSWERED", "MAX_WAITING", "UNTAKEN", "SeedAdds", "WAITING_CAP"]

#: The default of ``crawl.seed_add_waiting``: batches that may wait for their owners'
#: acks at once (rule 2): eight tools at the tool's default eight batches in flight.
MAX_WAITING = 64
#: The default of ``crawl.seed_add_answers``: answers kept for a tool that asks again
#: (rule 3): a lost answer is asked for within the tool's timeout, a window of
#: batches later at most, so 1,024 covers 128 tools at the default window.
MAX_ANSWERED = 1024
#: The counters of the caps' hits, named by their config keys as every ``cap.*`` is.
WAITING_CAP = "cap.seed_add_waiting"
ANSWERS_CAP = "cap.seed_add_answers"
CAPS = (WAITING_CAP, ANSWERS_CAP)
#: The counters of batches answered without being taken, by why (``ring.node`` rule 11).
UNTAKEN = "seed_add_batch."


@dataclass(slots=True)
class _Waiting:
    route: bytes
    counts: tuple[tuple[str, int], ...]
    barriers: dict[str, tuple[int, int]]  # owner -> (barrier seq, URLs of this batch forwarded there)
    deadline: float


class SeedAdds:
    """The seed batches this member took (module docstring); mutable, pure."""

    def __init__(self, peer_id: str, ring_name: str, outbox: Outbox, *, max_waiting: int = MAX_WAITING,
                 max_answered: int = MAX_ANSWERED, dropped: Counter[str] | None = None) -> None:
        self._me = peer_id
        self._ring = ring_name
        self._outbox = outbox
        self.max_waiting = max_waiting
        self.max_answered = max_answered
        #: The node's counters (``RingNode.dropped``): the caps' hits go there (rules 2 and 3).
        self.dropped: Counter[str] = dropped if dropped is not None else Counter()
        self._waiting: dict[int, _Waiting] = {}
        self._answered: OrderedDict[int, SeedAddReply] = OrderedDict()

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    @property
    def full(self) -> bool:
        """Rule 2: no more batches may wait (the caller counts the hit, :data:`WAITING_CAP`)."""
        return len(self._waiting) >= self.max_waiting

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
        while len(self._answered) > self.max_answered:
            self._answered.popitem(last=False)
            self.dropped[ANSWERS_CAP] += 1
        return [Reply(route, msg)]
