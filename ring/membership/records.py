"""Member records: how two views of one member merge, and the local state machine (pure).

A :class:`~ring.messages.Member` is one member's record as some peer holds
it. Merging two records of one member (the order is a total order, so
merging is a commutative, associative, idempotent join and all views
converge)::

    key = (incarnation, FINAL[state], SOFT[state], heartbeat)   greater wins;
                                                                ties: the rest
    state       FINAL  SOFT   meaning
    alive         0     0     answers probes
    suspect       0     1     "no answer since this heartbeat"
    restarting    0     2     announced a planned restart: keeps its hosts,
                              is not probed until its hold runs out
                              (ring.membership.restarts)
    dead          1     0     a suspicion not refuted in time: owns no hosts
    left          2     0     announced a graceful leave: owns no hosts

    rule                                              why
    1 higher incarnation wins, whatever the states    a restarted peer (its start
                                                      epoch is its incarnation) or
                                                      a refuting one comes back alive
    2 same incarnation: dead and left are sticky,     a verdict must not be undone by a
      left beats dead                                 stale record; a leave is not
                                                      a crash
    3 same incarnation: suspect beats alive,          SWIM's order: only its subject clears
      whatever the heartbeats; one state: the         a suspicion. Heartbeats travel with
      higher heartbeat wins; restarting beats         the subject's own messages, so a peer
      both (only its subject says it, and a           that suspects holds an older one than
      suspicion begun as it stopped must not          others: with "newer heartbeat wins"
      undo it), and dead beats it (its hold ran       any stale copy undid the suspicion
      out: it dies as any silent member)
    4 a record about *us* that beats our own is       the SWIM refutation; we never
      refuted: incarnation := its incarnation + 1     adopt a verdict on ourselves

Local events (anything else raises :class:`IllegalTransition`, our bug)::

    from        event          to          when
    alive       probe_timeout  suspect     no ack, direct or indirect, suspect_after after a ping
    suspect     dead_timer     dead        not refuted dead_after after the ping (backup:
                                           dead_after + interval * ceil(log2 N) after hearing it)
    alive       leave          left        leave(): self only, once
    alive       restart        restarting  restart(): self only, once (a planned restart)
    restarting  hold_over      dead        not back restart_hold after we first held it
                                           restarting (ring.membership.restarts)
    alive       refute         alive       rule 4 (self only)
    left        refute         left        rule 4 while handing off after a leave
    restarting  refute         restarting  rule 4 while announcing a restart

Every change of a member's state in a peer's view (and a restart) is also an
event, :class:`MemberEvent` (who, the new state, :class:`ChangeReason`), for
the driver to log (``Membership.drain_events``).

A record is *news*, worth piggybacking (``ring.membership.dissemination``), when it says
something new about membership: a new member, state, incarnation, address,
weight, idle flag or page-budget grants (``ring.membership.budget``: a grant waits in
no queue, its recipient may be at its cap); not a mere heartbeat or counter
(:func:`is_news`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from ring.errors import RingError
from ring.messages import Member, MemberState

__all__ = [
    "ALIVE",
    "SUSPECT",
    "DEAD",
    "LEFT",
    "LIVE",
    "OWNERS",
    "RESTARTING",
    "FINAL",
    "SOFT",
    "MAX_INCARNATION",
    "REFUTABLE",
    "MAX_WEIGHT",
    "ChangeReason",
    "IllegalTransition",
    "LocalEvent",
    "MemberEvent",
    "is_news",
    "merge_key",
    "merge_members",
    "merge_order",
    "next_state",
    "usable",
]

ALIVE, SUSPECT, DEAD, LEFT, RESTARTING = (
    MemberState.ALIVE,
    MemberState.SUSPECT,
    MemberState.DEAD,
    MemberState.LEFT,
    MemberState.RESTARTING,
)
LIVE = frozenset((ALIVE, SUSPECT))
"""States that answer probes (and are probed, and sent to): a suspect keeps
its hosts until declared dead, so a lost packet or two never moves hosts
(SWIM's reason for suspicion)."""
OWNERS = frozenset((ALIVE, SUSPECT, RESTARTING))
"""States that own hosts, what the hash ring is built of: the live ones, and a
member away for a planned restart (``ring.membership.restarts``), whose
hosts wait for it with no ring change."""

FINAL = {ALIVE: 0, SUSPECT: 0, RESTARTING: 0, DEAD: 1, LEFT: 2}
SOFT = {ALIVE: 0, SUSPECT: 1, RESTARTING: 2, DEAD: 0, LEFT: 0}
MAX_INCARNATION = 2**64 - 2  # a claim at 2**64-1 could not be refuted on the wire
REFUTABLE = MAX_INCARNATION - 2**32
"""Highest incarnation a record about a member may carry when another peer
sends it: a claim above it is refused, so its subject always has 2**32
numbers left to refute with (its own records may go up to MAX_INCARNATION)."""
MAX_WEIGHT = 10.0
"""Largest member weight: a member gets ``round(vnodes * weight)`` ring points,
so a gossiped weight of 1e9 would build 256e9 of them. At 10, a full view
(``MAX_MEMBERS``) at the default 256 vnodes is at most 2.6 M points."""


class IllegalTransition(RingError):
    """A local event the membership state machine does not allow (our bug)."""


class LocalEvent(StrEnum):
    """What this peer itself does to a record (the local events table)."""

    PROBE_TIMEOUT = "probe_timeout"
    DEAD_TIMER = "dead_timer"
    LEAVE = "leave"
    REFUTE = "refute"
    RESTART = "restart"
    HOLD_OVER = "hold_over"


class ChangeReason(StrEnum):
    """Why a member's state changed in our view (:class:`MemberEvent`)."""

    JOINED = "joined"  # first heard of: a Join, or its first real record
    SILENCE = "silence"  # our own probe went unanswered (suspect), then our timer (dead)
    REPORTED = "reported"  # another peer's suspicion or verdict reached us
    REFUTED = "refuted"  # a suspect or dead member proved alive (it, or we about us)
    RESTARTED = "restarted"  # a live member came back at a higher incarnation
    LEFT = "left"  # announced a graceful leave
    RESTARTING = "restarting"  # announced a planned restart: its hosts wait for it
    NOT_BACK = "not_back"  # restarting, and not back within restart_hold: dead
    EXPIRED = "expired"  # a tombstone outlived tombstone_ttl and was forgotten


@dataclass(frozen=True, slots=True)
class MemberEvent:
    """One membership change as this peer saw it: ``id`` is now ``state`` because ``reason``."""

    at: float
    id: str
    state: MemberState
    reason: ChangeReason
    incarnation: int
    previous: MemberState | None = None  # None: first heard of


_EVENTS: dict[tuple[MemberState, LocalEvent], MemberState] = {
    (ALIVE, LocalEvent.PROBE_TIMEOUT): SUSPECT,
    (SUSPECT, LocalEvent.DEAD_TIMER): DEAD,
    (ALIVE, LocalEvent.LEAVE): LEFT,
    (ALIVE, LocalEvent.REFUTE): ALIVE,
    (LEFT, LocalEvent.REFUTE): LEFT,
    (ALIVE, LocalEvent.RESTART): RESTARTING,
    (RESTARTING, LocalEvent.HOLD_OVER): DEAD,
    (RESTARTING, LocalEvent.REFUTE): RESTARTING,
}


def next_state(state: MemberState, event: LocalEvent) -> MemberState:
    """The state ``event`` leads to from ``state``; :class:`IllegalTransition` if none."""
    try:
        return _EVENTS[state, event]
    except KeyError:
        raise IllegalTransition(f"no transition {event.value!r} from {state.value!r}") from None


def merge_key(m: Member) -> tuple[int, int, int, int]:
    """The merge order's key (the table above): greater wins."""
    return (m.incarnation, FINAL[m.state], SOFT[m.state], m.heartbeat)


def merge_order(m: Member) -> tuple[object, ...]:
    """:func:`merge_key` and the tie-breaking rest: the total order of records."""
    # The tail only breaks ties an honest owner never produces (it bumps its
    # heartbeat whenever its counters change), keeping the merge commutative.
    return (*merge_key(m), m.address, m.weight, m.idle, m.sent, m.received, m.pages, m.grants)


def merge_members(a: Member, b: Member) -> Member:
    """The record that wins when two views of one member meet (the table above)."""
    return b if merge_order(b) > merge_order(a) else a


def usable(m: Member) -> bool:
    """Whether a received record can enter a view at all."""
    # The codec lets weight 0.0 through; HashRing refuses it.
    return bool(m.id) and 0.0 < m.weight <= MAX_WEIGHT and m.incarnation <= MAX_INCARNATION


def is_news(old: Member, new: Member) -> bool:
    """Whether ``new`` says something about membership ``old`` did not (worth piggybacking)."""
    return (
        old.state is not new.state
        or old.incarnation != new.incarnation
        or old.address != new.address
        or old.weight != new.weight
        or old.idle != new.idle
        or old.grants != new.grants
    )
