"""The records the frontier keeps: one slotted object a host, since a peer may keep a million, and one an IP.

Rules:

- One object a host, whatever the concept: the queue's fields
  (peer/core/frontier/frontier.py, peer/core/frontier/spillqueue.py), the scheduler's
  (peer/core/frontier/scheduler.py), the pace's (peer/core/frontier/pacing.py) and the link
  to its IP budget (peer/core/frontier/ipbudget.py) sit side by side, grouped below
  by the module whose rules write them. An object a concept would cost an
  object header and a reference each, a million times over.
- Two owners, one record: the queue's fields are the frontier's, every
  other field the scheduler's (and the rules it calls). Neither reads the
  other's: the scheduler learns "has work" from the frontier's calls and
  keeps it in ``work``; the frontier learns whose turn it is from the
  scheduler (peer/core/frontier/scheduler.py's interface).
- A host links to its IP's record and the IP's record holds a heap of its
  hosts, and a host's undo names both: the three records are one structure,
  so they live in one module, below every module of rules.
- No behaviour here: the modules named above hold the rules that read and
  write these fields.
"""

from __future__ import annotations

from array import array
from typing import Any, NamedTuple

from peer.core.politeness.ceiling import NEG_INF
from peer.core.politeness.pid import PID
from peer.core.politeness.profile import Pace

__all__ = ["HostState", "IpBudget", "StartUndo"]

#: No concurrency cap: an IP's cap until ``ip_concurrency`` sets one.
_NO_CAP = 1 << 62


class HostState:
    """Mutable per-host state; small, since there may be a million of them."""

    __slots__ = (
        "name",
        # its queue (frontier.py; spillqueue.py, rules 9, 10)
        "items", "head", "spilled", "tail",
        # its bands (frontier.py rule 11, order.py)
        "band", "more", "nmore", "sband",
        # the scheduler's (scheduler.py, rules 2, 6): work and requests, its places in the heaps
        "work", "in_flight", "since", "rseq", "rkey", "tseq", "tkey",
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
        # --- its bands (frontier.py rule 11): ``items`` is band ``band``'s
        # queue, the lowest band with URLs in RAM; ``more`` the higher
        # bands' (flat lists, None while there are none), ``nmore`` their
        # slots; ``sband`` the band at which the host began to spill.
        self.band = 0
        self.more: dict[int, list[Any]] | None = None
        self.nmore = 0
        self.sband = 0

        # --- the scheduler's (scheduler.py)
        self.work = False  # its queue has work: what the frontier last told the scheduler
        self.in_flight = 0
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


class IpBudget:
    """The record of an IP address shared by hosts (rule 8): a budget paced like one host.

    Also the record of a registered domain's hosts with ``politeness.group =
    "domain"``: the same budget, keyed by the domain (``addr``), with ``paces``.

    Its rules are peer/core/frontier/ipbudget.py's; the scheduler keeps one an address.
    """

    __slots__ = (
        "addr", "share", "delay", "cap", "limits", "starts", "spos", "last_start",
        "in_flight", "nref", "heap", "rguard", "rseq", "rkey", "tseq", "tkey", "pinned",
        "paces",
    )

    def __init__(self, addr: str) -> None:
        self.addr = addr
        self.share = 1.0
        self.delay = 0.0
        self.cap = _NO_CAP
        self.limits: tuple[tuple[float, int], ...] = ()
        self.starts: array[float] | None = None
        self.spos = 0
        self.last_start = NEG_INF
        self.in_flight = 0
        self.nref = 0  # hosts whose state is kept and that resolve here
        # (ready_at, seq, host) of its hosts with queued work and a free slot.
        self.heap: list[tuple[float, int, HostState]] = []
        self.rguard = False  # its place in the frontier's heap was set by its ceiling
        self.rseq = 0  # seq of its live entry in the frontier's ready heap, 0 = none
        self.rkey = 0.0
        self.tseq = 0  # seq of its live timer-heap entry, 0 = none
        self.tkey = 0.0
        self.pinned = False  # its share was set for it (set_ip_share), not the ring's
        # A registered domain's group (politeness.group = "domain"): its hosts
        # counted by the profile each is paced by, whose smallest rate is the
        # group's (ipbudget.py); None for an IP address's budget.
        self.paces: dict[Pace, int] | None = None


class StartUndo(NamedTuple):
    """What one start changed (Frontier.pop_ready), for Frontier.done(NOT_STARTED) (pacing rule 1)."""

    url: str
    start: float
    last: float  # the host's last_start before
    slot: float  # the value its ring slot held before
    spos: int  # the host's ring position after the start
    ring: array[float] | None  # the host's ring it wrote to (a rebuilt ring is a new array)
    ip: IpBudget | None
    ip_last: float
    ip_slot: float
    ip_spos: int
    ip_ring: array[float] | None
