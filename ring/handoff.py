"""Ring changes and the hand-off of one member (pure): ``RingChanged``, ``HandOff``, the markers.

Boldi et al., UbiCrawler §3: consistent hashing moves only the hosts whose
owner changed. ``HandOffs`` is a part of ``ring.node.RingNode``; the rules
are in that module's docstring ("Hand-off"). Each hand-off is a record that
goes COLLECTING (the driver gathers the moved hosts' fetched URLs and
starts) -> WAITING (a barrier per new owner in the Outbox) -> MARKING
(``HandoffDone`` repeated for ``MARKER_ROUNDS - 1`` rounds), then ends.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from ring.forwarder import Inbox, Outbox
from ring.hashring import HashRing
from ring.membership import Membership
from ring.messages import MAX_ARRAY, HandoffDone, HostStarts, MemberState
from ring.actions import Action, HandOff, Log, Rerouted, RingChanged, Send

__all__ = ["HANDOFF_TIMEOUT", "MARKER_ROUNDS", "HandOffs"]

#: Rounds a HandoffDone is sent; one that never arrives only makes the new
#: owner wait ``hold_timeout`` before fetching the hosts it gained.
MARKER_ROUNDS = 5
#: Longest a hand-off waits for the new owners' acks.
HANDOFF_TIMEOUT = 60.0


class _Phase(enum.Enum):
    COLLECTING = "collecting"  # the driver gathers seen URLs and starts
    WAITING = "waiting"  # barriers set: waiting for each new owner's acks
    MARKING = "marking"  # every owner told; repeating HandoffDone for a few rounds


@dataclass(slots=True)
class _HandOff:
    version: int
    members: tuple[str, ...]
    phase: _Phase = _Phase.COLLECTING
    marks: dict[str, int] = field(default_factory=dict)
    starts: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    began: float = 0.0
    seen: int = 0
    repeats: int = MARKER_ROUNDS - 1



class HandOffs:
    """The ring-change and hand-off part of ``RingNode`` (module docstring)."""

    peer_id: str
    ring_name: str
    vnodes: int
    membership: Membership
    outbox: Outbox
    inbox: Inbox
    handoffs: list[tuple[int, float]]
    _handoffs: list[_HandOff]
    _ring_version: int
    _ring: HashRing | None
    _owner_key: Callable[[str], str]

    @property
    def handing_off(self) -> int:
        """Hand-offs still collecting or waiting for acks."""
        return sum(1 for h in self._handoffs if h.phase is not _Phase.MARKING)

    def _check_ring(self, now: float) -> list[Action]:
        version = self.membership.ring_version
        if version == self._ring_version:
            return []
        self._ring_version = version
        old, ring = self._ring, self.membership.ring(self.vnodes)
        self._ring = ring
        out: list[Action] = [Log(logging.INFO, "ring: " + (", ".join(sorted(ring)) or "(empty)"))]
        if not len(ring):
            return out  # the last peer left: nobody to hand anything to
        out.append(RingChanged(ring, old))
        # Channels with a dead peer leave the termination sums on both sides
        # (TerminationDetector): reroute drops ours to it, forget drops its to
        # us (and its late batches are refused). A leaver's stay: it is still
        # handing over, and its counters stay summed.
        members = self.membership.members()
        left = {m for m, rec in members.items() if rec.state is MemberState.LEFT}
        for gone in set(old or ()) - set(ring) - left:
            if gone != self.peer_id:
                self.inbox.forget(gone)
        key = self._owner_key
        urls, seen = self.outbox.reroute(lambda u: ring.owner(key(u)), now, members=ring, left=left)
        if urls or seen:
            out.append(Rerouted(tuple(urls), tuple(seen)))
        if old is not None:
            self._handoffs.append(_HandOff(version, tuple(sorted(ring))))
            out.append(HandOff(old, ring, version))
        return out

    def begin_handoff(self, version: int, seen: int, starts: Mapping[str, Iterable[tuple[str, float]]],
                      now: float) -> list[Action]:
        """The driver queued the moved hosts' seen URLs: set the barriers and start waiting."""
        h = next((h for h in self._handoffs if h.version == version and h.phase is _Phase.COLLECTING),
                 None)
        if h is None:
            return []
        h.phase = _Phase.WAITING
        h.began = now
        h.seen = seen
        h.starts = {d: list(s) for d, s in starts.items()}
        h.marks = {d: self.outbox.barrier(d) for d in h.members if d != self.peer_id}
        return self._progress(now)

    def _progress(self, now: float, marker_round: bool = False) -> list[Action]:
        """Tell each new owner whose acks are all in; give up late waits; repeat markers."""
        out: list[Action] = []
        live = self.membership.live()
        current = self.membership.ring_version
        for h in self._handoffs:
            if h.phase is _Phase.WAITING:
                for d in list(h.marks):
                    if d not in live or self.outbox.acked_through(d, h.marks[d]):
                        del h.marks[d]
                        if d in live:
                            if h.starts.get(d):
                                # Before HandoffDone, on the same connection: the new
                                # owner counts them before it releases the hosts.
                                out.append(Send(d, HostStarts(self.ring_name, self.peer_id,
                                                              tuple(h.starts[d][:MAX_ARRAY]))))
                            out.append(Send(d, HandoffDone(self.ring_name, self.peer_id, h.members)))
                timed_out = now - h.began >= HANDOFF_TIMEOUT
                if h.marks and timed_out:
                    out.append(Log(logging.WARNING, f"hand-off: no ack from {', '.join(sorted(h.marks))} "
                                                    f"within {HANDOFF_TIMEOUT:.0f}s"))
                if not h.marks or timed_out:
                    elapsed = now - h.began
                    self.handoffs.append((h.seen, elapsed))
                    if h.seen:
                        out.append(Log(logging.INFO, f"hand-off: {h.seen} fetched URLs to their new "
                                                     f"owners, all acked in {elapsed:.2f}s"))
                    h.marks = {}
                    h.phase = _Phase.MARKING
            elif h.phase is _Phase.MARKING and marker_round:
                if current != h.version:
                    h.repeats = 0  # a newer ring has its own hand-off and markers
                    continue
                h.repeats -= 1
                out += [Send(d, HandoffDone(self.ring_name, self.peer_id, h.members))
                        for d in h.members if d != self.peer_id]
        self._handoffs = [h for h in self._handoffs if h.phase is not _Phase.MARKING or h.repeats > 0]
        return out

