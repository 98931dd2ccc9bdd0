"""The record the frontier keeps per host: one slotted object, since a peer may keep a million.

Rules:

- One object a host, whatever the concept: the queue's fields
  (peer/core/frontier/frontier.py, peer/core/frontier/spillqueue.py), the scheduler's
  (peer/core/frontier/scheduler.py), the pace's (peer/core/frontier/pacing.py) and the link
  to its IP budget (peer/core/frontier/ipbudget.py) sit side by side, grouped below
  by the module whose rules write them. An object a concept would cost an
  object header and a reference each, a million times over.
- No behaviour here: the modules named above hold the rules that read and
  write these fields.
"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING, Any

from peer.core.frontier.pid import PID

if TYPE_CHECKING:
    from peer.core.frontier.ipbudget import IpBudget
    from peer.core.frontier.pacing import Pace, StartUndo

__all__ = ["NEG_INF", "HostState"]

NEG_INF = float("-inf")


class HostState:
    """Mutable per-host state; small, since there may be a million of them."""

    __slots__ = (
        "name",
        # its queue (frontier.py; spillqueue.py, rules 9, 10)
        "items", "head", "spilled", "tail", "in_flight",
        # its places in the scheduler's heaps (scheduler.py, rules 2, 6)
        "since", "rseq", "rkey", "tseq", "tkey",
        # its pace (pacing.py, rules 1, 3, 4, 7)
        "last_start", "hold_until", "floor", "pid", "penalty", "penalty_at",
        "win_start", "win_n", "backlog", "fresh", "dry", "waiting", "held",
        "starts", "spos", "rguard", "undo", "pace",
        # the IP budget it shares (ipbudget.py, rule 8)
        "ip",
    )

    def __init__(self, name: str, now: float, pid: PID | None, pace: Pace) -> None:
        self.name = name

        # --- its queue (frontier.py, spillqueue.py)
        # url, depth, url, depth, ... from index ``head`` on (one flat list,
        # no tuple per URL; typed Any, as its items alternate).
        self.items: list[Any] = []
        self.head = 0
        self.spilled = 0  # URLs of its queue after ``items``: in the spill store, then ``tail`` (rule 9)
        self.tail: list[Any] | None = None  # url, depth, ... not yet a block (rule 9)
        self.in_flight = 0

        # --- its places in the scheduler's heaps (scheduler.py)
        self.since = now  # when it last became free with work (rule 2)
        self.rseq = 0  # seq of its live ready-heap entry, 0 = none
        self.rkey = 0.0
        self.tseq = 0  # seq of its live timer-heap entry, 0 = none
        self.tkey = 0.0

        # --- its pace (pacing.py)
        self.last_start = NEG_INF
        self.hold_until = NEG_INF
        self.floor = 0.0  # robots.txt Crawl-delay (rule 1)
        self.pid = pid
        self.penalty = 0.0  # backoff delay (rule 4), halved every window
        self.penalty_at = 0.0
        self.win_start = now  # its PID window (rule 3)
        self.win_n = 0
        self.backlog = False
        self.fresh = True  # still in its first window
        self.dry = False  # its queue ran dry since it was created (rule 3)
        self.waiting = False  # URLs waited in this window (rule 3)
        self.held = False  # its cap or its IP, not its delay, held a start back (rule 3)
        self.starts: array[float] | None = None  # ring of start times (rule 7), made at the first start
        self.spos = 0
        self.rguard = False  # its ready time was set by its ceiling (counted at the start)
        # What its latest start changed, to take it back (Outcome.NOT_STARTED);
        # None once that job is done.
        self.undo: StartUndo | None = None
        # Its politeness profile: [politeness] or its [[site]] block's, shared.
        self.pace = pace

        # --- the IP budget it shares (ipbudget.py)
        self.ip: IpBudget | None = None
