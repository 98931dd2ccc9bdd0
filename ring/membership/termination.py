"""Termination detection over gossiped counters (pure): is the whole crawl over?

Mattern's counter method ("Algorithms for distributed termination
detection", Distributed Computing 2, 1987), read from the records a peer's
membership view holds: every live member idle, the messages sent equal to
those received, in two successive waves with nothing changed in between
(:class:`TerminationDetector` says how a gossip round is a wave, and when
idleness alone ends it). It reads the view and keeps only its own marks, so
``Membership.cluster_idle`` simply hands it the members.

Why it ends in every case: each thing that keeps a peer from idle, or the
sums apart, ends by itself.

1. **Unacked batches** (a peer with one is not idle): a receiver takes a
   live member's batches, also after it declared that member dead and saw
   it refute (``ring.handoff`` rule 1: its channel reopens, where it once
   refused them unacked for ever), and a dead one's are re-routed by the
   sender. A one-way cut delays the acks until it heals or SWIM declares
   one side dead.
2. **Held hosts** (queued, so not idle): until a ``HandoffDone``, at most
   ``hold_timeout``, or a dead owner's return, at most ``takeover_after``
   (``peer.core.handoff.holds``).
3. **A member seen dead**: the crawl is not over until ``takeover_after``
   after its death (holds rule 7): beyond a partition it may have work.
4. **Hand-offs** do not keep a peer busy (only a leaver waits for its own)
   and end by ``HANDOFF_TIMEOUT`` at the latest (``ring.handoff`` rule 2).
5. **Sums after deaths, refutations and restarts**: a dead member's
   channels are hidden on both sides and shown again when it refutes, and
   the batches abandoned at its death are sent to it again
   (``ring.forwarding.forwarder``, "Termination counters"), so a heal balances them
   again; what cannot be made exact (a restarted member's old channel that
   its new life never replaces, a batch a crashed one took and never acked)
   is what the quiescence fallback below ends.
"""

from __future__ import annotations

from collections.abc import Mapping

from ring.messages import Member
from ring.membership.records import DEAD, LIVE, RESTARTING

__all__ = ["TerminationDetector"]


class TerminationDetector:
    """The counter method of termination detection over gossiped counters.

    Mattern ("Algorithms for distributed termination detection", Distributed
    Computing 2, 1987): the work is over when every process is idle and
    the messages sent equal those received, read in two successive waves
    with nothing changed in between. Here a wave is a gossip round: it ends
    when every live member has gossiped a *newer* heartbeat than at its start
    and at least one gossip interval has passed. Any change of a counter, an
    idle flag or the live set restarts the count, so two rounds of unchanged,
    balanced counters are needed. A suspect member's heartbeat does not move,
    so nothing terminates until it is refuted or dead.

    Sums run over the live members and those that left: a leaver hands
    everything over, waits for the acks and keeps gossiping its final
    counters for a few rounds before it exits, so its channels stay exact
    (``Outbox.reroute(left=...)`` keeps what it acked). A dead member's
    channels leave the sums on both sides (``Outbox.reroute`` hides ours to
    it, ``Inbox.forget`` its to us), so its own last counters are left out;
    both come back with their counts when it refutes as the same process
    (``Inbox.reopen``), as its own counters do.

    **Quiescence fallback.** A batch is acked only once its receiver took
    it, and a peer with an unacked batch is not idle (``ring.forwarding.forwarder``), so work in
    flight always has a non-idle peer behind it; idleness that holds still,
    with no counter moving, for ``quiet_rounds`` rounds is therefore the end
    too, balanced or not. It covers what the channel bookkeeping cannot make
    exact: a peer that died between taking a batch and acking it, or came
    back with new counters while a resend was on its way. Balanced sums end
    the crawl after ``rounds``; unbalanced ones after ``quiet_rounds``.
    """

    __slots__ = ("_interval", "_need", "_quiet", "_snapshot", "_marks", "_since", "_rounds",
                 "_balanced")

    def __init__(self, interval: float, rounds: int = 2, quiet_rounds: int = 10) -> None:
        self._interval = interval
        self._need = rounds
        self._quiet = max(quiet_rounds, rounds)
        self._snapshot: dict[str, tuple[int, int, int, bool]] | None = None
        self._marks: dict[str, tuple[int, int]] = {}
        self._since = 0.0
        self._rounds = 0
        self._balanced = False

    @property
    def balanced(self) -> bool:
        """Whether the live members' sums of sent and received agreed at the last observation."""
        return self._balanced

    def observe(self, members: Mapping[str, Member], now: float) -> bool:
        """True once the view has been idle and balanced for ``rounds`` rounds
        (or idle and unchanged for ``quiet_rounds``)."""
        sent = received = 0
        marks: dict[str, tuple[int, int]] = {}
        for m in members.values():
            if m.state is not DEAD:
                sent += m.sent
                received += m.received
            if m.state is RESTARTING:
                # Away for a planned restart (ring.membership.restarts): its hosts and
                # queued URLs wait for it, so the crawl is not over.
                self._snapshot = None
                return False
            if m.state in LIVE:
                if not m.idle:
                    self._snapshot = None
                    return False
                marks[m.id] = (m.incarnation, m.heartbeat)
        if not marks:
            self._snapshot = None
            return False
        self._balanced = sent == received
        # pages too: a member that fetched in between was busy in between
        snapshot = {m.id: (m.sent, m.received, m.pages, m.state in LIVE) for m in members.values()}
        if snapshot != self._snapshot:
            self._snapshot = snapshot
            self._marks = marks
            self._since = now
            self._rounds = 0
            return False
        if (
            self._rounds < self._quiet
            and now - self._since >= self._interval
            and all(marks[k] > self._marks[k] for k in marks)
        ):
            self._rounds += 1
            self._marks = marks
            self._since = now
        return self._rounds >= (self._need if self._balanced else self._quiet)
