"""Ring changes and the hand-off of one member (pure): ``RingChanged``, ``HandOff``, the markers.

Boldi et al., UbiCrawler §3: consistent hashing moves only the hosts whose
owner changed. :class:`HandOffs` is a part of ``ring.node.RingNode`` that
owns the ring of the last change and every hand-off record; the node's
docstring ("Hand-off") says what the driver does. Each hand-off is a record
that goes COLLECTING (the driver gathers the moved hosts' fetched URLs and
starts) -> WAITING (a barrier per new owner in the Outbox) -> MARKING
(``HandoffDone`` repeated for ``MARKER_ROUNDS - 1`` rounds), then ends.

It reaches the rest of the node only through what it is given: the
membership as a :class:`Members` (our record, the ring, the states), the
Outbox as a :class:`Sends` (re-routing, barriers, acks) and the Inbox as a
:class:`Channels` (hiding and showing a sender's channel), and the node's
counter of refusals, which it adds its hand-off counts to.

Rules (every one lives in this file):

1. **Channels follow the ring.** At a ring change the Inbox forgets the
   members that died (not those that left: a leaver's counters stay
   summed) and reopens those that came back, and the Outbox re-routes
   (``ring.forwarding.forwarder``, "Termination counters"). A member declared dead is
   often alive: a partition healed, a pause ended, and it refuted as the
   same process. Its channels must go on then: closed for good, its
   batches were refused unacked for ever, so no hand-off to it was ever
   acked and its senders' Outboxes never went idle, and the crawl never
   ended.
2. **Every hand-off ends, completed or given up, counted in ``dropped``.**
   ``handoffs_done``: every new owner acked its barrier and was told.
   ``handoffs_gave_up``: some were not, each counted by why:
   ``handoff_member_gone`` (it died or left before acking: its batches were
   re-routed with the ring, and the next hand-off covers their new owners),
   ``handoff_timeout`` (no ack within ``HANDOFF_TIMEOUT``; logged), or
   ``handoff_unread`` (the driver never answered the reads within it). A
   member is told ``HandoffDone`` only once its own barrier is acked:
   never one whose wait was given up, not even in the repeats, so its holds
   wait for their own timeout rather than release a host whose fetched URLs
   have not arrived.
3. **In order.** A hand-off tells a member only when no older hand-off still
   collects, or still waits for that member: an older one that collected
   late queued its seen URLs after this one's barrier, and a newer
   ``HandoffDone`` releases the older change's holds too (the receiver
   takes any ``HandoffDone`` for its view as "everything of yours is here").
4. **A record saying we are dead re-tells.** Others declared us dead and,
   seeing us back, hold the hosts they own until our ``HandoffDone``
   (``peer.core.handoff.holds`` rule 5): we may have fetched them meanwhile. If our
   own view did not change (we never saw them dead), no hand-off follows,
   so when a record saying we are dead comes, ``HandoffDone`` for the
   current ring is repeated for ``MARKER_ROUNDS`` rounds: we have nothing
   of theirs that is not acked. The current ring's hand-off, if still open,
   repeats its markers to those it tells; with an older one open, its own
   markers follow in order (rule 3). Whether or not we refute it: a death
   declared at an incarnation we had already left (our refutation of a
   suspicion crossed it on a loaded ring), or one of a former process (rule
   6's single marker may have met another view there), is still its
   sender's view, and it sees us back when our record comes. Not for a
   suspicion alone (frequent on a loaded ring): a suspect keeps its hosts,
   and nobody holds anything for it.
5. **State goes first.** The moved hosts' revisit records, cookies and
   digests (``ring.statebox``) are queued by the driver with their seen
   URLs, before :meth:`HandOffs.begin`, which sets a barrier in the state
   box too: a new owner is told ``HandoffDone`` only once it acked both,
   so it has imported a host's schedule, session and digests before it
   fetches the host. A new owner of an older build never acks the state
   (it drops the type): that hand-off ends by ``handoff_timeout``, its
   holds by their own timeout, and the records stay with the sender,
   resent (``ring.statebox`` rule 3). At a ring change the state box is
   re-routed with the Outbox (rule 1), and records whose host is ours
   again come back as ``StateTaken``.
6. **A new process hands over at its first ring.** Its first ring gets a
   hand-off too, from a ring of itself alone: everything its resumed state
   fetched (the results, the URLs handed to it) of hosts that are others'
   now goes to their owners as seen URLs, with their state. A member given
   seen URLs is told ``HandoffDone`` once it acked them (and its state), as
   in any hand-off; a member given none is told at once (only its state,
   if any, is waited for): the Outbox's other URLs for it are the resumed
   queue's, which it dedups when they come, and which a member that still
   holds us dead refuses until it sees us back, so their resend would only
   delay the word by seconds. Its old life may have fetched another
   member's hosts while that member was dead to it (a split, then a crash),
   and a restarted process has no ring change to hand them over by; the
   others, which hold every host they own for a member back from dead
   (``peer.core.handoff.holds`` rule 5), so get its word promptly instead
   of waiting ``hold_timeout`` for a marker that never came. A fresh
   process has fetched nothing and says so the same way. These markers
   are sent once, not repeated: every process starts with one, so a cold
   start of N peers sends N² of them, one ring change's worth without its
   repeats. A restarted process, whose old life others saw die, is told
   so by their gossip and repeats them (rule 4). A member
   not heard from yet is spoken to at wire version 3 (``ring.wireversion``
   rule 3), which drops rule 7's incarnation: it is told once more when
   first heard from (within ``HANDOFF_TIMEOUT``).
7. **A marker may come before its sender's return.** Our ``HandoffDone``
   names our incarnation. A member that still holds an earlier life of us
   dead (its ring lacks us, so the marker names another view) keeps it, the
   last one per sender (counted ``handoff_early``), and takes it once its
   ring is the one the marker names and holds us alive at that
   incarnation: released then, in the same list as the ``RingChanged``
   that brought us back, after it. A later incarnation of the sender in
   its record (it refuted again, or restarted) makes the kept marker
   stale: it is dropped, and the sender's next marker counts. A marker
   of version 3 names none (0) and is never kept, so a returner of
   version 3 is still waited for as before.
"""

from __future__ import annotations

import enum
import logging
from collections import Counter
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ring.actions import Action, HandOff, Log, Released, Rerouted, RingChanged, Send, StateTaken
from ring.forwarding.forwarder import Entries
from ring.hashring import HashRing
from ring.messages import MAX_ARRAY, Digest, HandoffDone, HostStarts, Member, MemberState, Message, Sync
from ring.durations import duration
from ring.statebox import StateRecords

__all__ = ["HANDOFF_TIMEOUT", "MARKER_ROUNDS", "Channels", "HandOffs", "Members", "Sends"]

#: Rounds a HandoffDone is sent; one that never arrives only makes the new
#: owner wait ``hold_timeout`` before fetching the hosts it gained.
MARKER_ROUNDS = 5
#: Longest a hand-off waits for the driver's reads and the new owners' acks
#: (rule 2). Measured on a 3-peer ring after a split healed: every hand-off
#: acked within ~1 s once channels reopened; this only bounds a stuck peer.
HANDOFF_TIMEOUT = 60.0


class _Phase(enum.Enum):
    COLLECTING = "collecting"  # the driver gathers seen URLs and starts
    WAITING = "waiting"  # barriers set: waiting for each new owner's acks
    MARKING = "marking"  # every owner told or given up; repeating HandoffDone for a few rounds


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
    told: set[str] = field(default_factory=set)  # members sent HandoffDone (the repeats go to them)
    gave_up: bool = False
    state_marks: dict[str, int] = field(default_factory=dict)  # the StateBox's barrier per new owner
    first: bool = False  # the first ring's (rule 6)
    unheard: set[str] = field(default_factory=set)  # told before we heard from them (rule 6)


class Members(Protocol):
    """What a hand-off reads of the membership (``ring.membership.protocol.Membership``)."""

    @property
    def me(self) -> Member: ...
    @property
    def ring_version(self) -> int: ...
    def ring(self, vnodes: int) -> HashRing: ...
    def members(self) -> Mapping[str, Member]: ...
    def live(self) -> dict[str, float]: ...


class Sends(Protocol):
    """What a hand-off asks of the Outbox (``ring.forwarding.forwarder.Outbox``)."""

    def reroute(self, owner_of: Callable[[str], str], now: float, *, members: Container[str],
                left: Container[str] = ...) -> Entries: ...
    def barrier(self, dest: str) -> int: ...
    def acked_through(self, dest: str, seq: int) -> bool: ...


class StateSends(Protocol):
    """What a hand-off asks of the hosts' state on its way (``ring.statebox.StateBox``)."""

    def reroute(self, owner_of: Callable[[str], str], *, members: Container[str]) -> StateRecords: ...
    def barrier(self, dest: str) -> int: ...
    def acked_through(self, dest: str, seq: int) -> bool: ...


class Channels(Protocol):
    """What a ring change asks of the Inbox (``ring.forwarding.inbox.Inbox``): rule 1."""

    def forget(self, sender: str) -> None: ...
    def reopen(self, sender: str) -> None: ...


class HandOffs:
    """One member's ring changes and hand-offs: a part of ``RingNode`` (module docstring)."""

    __slots__ = ("peer_id", "ring_name", "vnodes", "ring", "ended", "_members", "_sends", "_channels",
                 "_owner_key", "_dropped", "_records", "_version", "_incarnation_seen", "_told_dead",
                 "_state", "_early", "_heard")

    def __init__(self, peer_id: str, ring_name: str, vnodes: int, *, members: Members, sends: Sends,
                 channels: Channels, owner_key: Callable[[str], str], dropped: Counter[str],
                 state: StateSends | None = None, heard: Callable[[str], bool] | None = None) -> None:
        self.peer_id = peer_id
        self.ring_name = ring_name
        self.vnodes = vnodes
        #: The ring of the last ``RingChanged`` (None before the first).
        self.ring: HashRing | None = None
        #: Each hand-off ended: (seen URLs sent, seconds until all acked or given up).
        self.ended: list[tuple[int, float]] = []
        self._members = members
        self._sends = sends
        self._channels = channels
        self._owner_key = owner_key  # the key a URL is placed by
        self._dropped = dropped  # the node's counters: rule 2 counts here
        self._state = state  # the hosts' state on its way (rule 5)
        self._records: list[_HandOff] = []
        self._version = -1  # the membership's ring_version at the last change
        #: Our incarnation at the last ring check: a move is a refutation (rule 4).
        self._incarnation_seen = -1
        #: A record saying we are dead came since the last ring check (rule 4).
        self._told_dead = False
        #: Markers of a sender's later life than our record of it holds (rule 7): sender -> the last.
        self._early: dict[str, HandoffDone] = {}
        #: Whether a member was heard from, so a frame to it is encoded at its own wire
        #: version (``ring.wireversion`` rule 3): rule 6's markers wait for it to carry rule 7's field.
        self._heard: Callable[[str], bool] = heard if heard is not None else (lambda m: True)

    @property
    def handing_off(self) -> int:
        """Hand-offs still collecting or waiting for acks."""
        return sum(1 for h in self._records if h.phase is not _Phase.MARKING)

    @property
    def records(self) -> Sequence[_HandOff]:
        """The hand-offs not over yet (their markers included), oldest first."""
        return tuple(self._records)

    def check(self, now: float) -> list[Action]:
        """After any membership change: a new ring gives ``RingChanged``, the channels' moves
        (rule 1), ``Rerouted`` and a new hand-off (rule 6 for the first); a refutation with none
        open re-tells (rule 4); a marker kept for this view is taken (rule 7)."""
        inc = self._members.me.incarnation
        # Rule 4: any record saying we are dead, whether or not our incarnation moved
        # because of it: one at an incarnation we had already left behind (we refuted a
        # suspicion meanwhile, or it names a former process) is still its sender's view,
        # and that sender sees us back from dead when our record reaches it.
        refuted = self._told_dead and self._incarnation_seen >= 0
        self._incarnation_seen = inc
        self._told_dead = False
        version = self._members.ring_version
        if version == self._version:
            return (self._retell(now) if refuted else []) + self._take_early()
        self._version = version
        old, ring = self.ring, self._members.ring(self.vnodes)
        self.ring = ring
        out: list[Action] = [Log(logging.INFO, "ring: " + (", ".join(sorted(ring)) or "(empty)"))]
        if not len(ring):
            return out  # the last peer left: nobody to hand anything to
        out.append(RingChanged(ring, old))
        # Rule 1. A leaver's channels stay: it is still handing over, and its
        # counters stay summed.
        members = self._members.members()
        left = {m for m, rec in members.items() if rec.state is MemberState.LEFT}
        before = set(old or ())
        for gone in before - set(ring) - left:
            if gone != self.peer_id:
                self._channels.forget(gone)
        for back in set(ring) - before:
            self._channels.reopen(back)
        key = self._owner_key
        urls, seen = self._sends.reroute(lambda u: ring.owner(key(u)), now, members=ring, left=left)
        if urls or seen:
            out.append(Rerouted(tuple(urls), tuple(seen)))
        if self._state is not None:
            ours = self._state.reroute(ring.owner, members=ring)
            if len(ours):
                out.append(StateTaken(ours, self.peer_id))
        # Rule 2: a member gone now had its batches re-routed just above, so a
        # barrier on it could only be passed by batches of a later life.
        gave_up = False
        for h in self._records:
            if h.phase is _Phase.WAITING:
                for d in [d for d in h.marks if d not in ring]:
                    self._give_up(h, d, "handoff_member_gone")
                    gave_up = True
        if gave_up:
            out += self.progress(now)
        if old is not None:
            self._records.append(_HandOff(version, tuple(sorted(ring)), began=now))
            out.append(HandOff(old, ring, version))
        elif self.peer_id in ring:
            # Rule 6: before this process, every host it holds anything of was its own.
            # Told once (again once heard from, if told before), not repeated: every member
            # gets one, so at a ring's cold start this is about N^2 markers (a ring change's
            # repeats make it 5 N^2); a lost one costs only the hold_timeout wait of before.
            self._records.append(_HandOff(version, tuple(sorted(ring)), began=now, first=True, repeats=0))
            out.append(HandOff(HashRing({self.peer_id: 1.0}, self.vnodes), ring, version))
        return out + self._take_early()

    def early(self, msg: HandoffDone) -> None:
        """Rule 7: ``msg`` came from a later life of its sender than our record holds; kept."""
        self._early[msg.sender] = msg

    def _take_early(self) -> list[Action]:
        """Rule 7: the kept markers our ring and records now match, released; the stale ones dropped."""
        if not self._early or self.ring is None:
            return []
        members = self._members.members()
        view = tuple(sorted(self.ring))
        out: list[Action] = []
        for sender, msg in list(self._early.items()):
            rec = members.get(sender)
            if rec is None or rec.incarnation > msg.incarnation:
                del self._early[sender]  # forgotten, or a later incarnation: its own markers count
            elif (rec.incarnation == msg.incarnation and rec.state is not MemberState.DEAD
                  and msg.members == view):
                del self._early[sender]
                out.append(Released(sender))
        return out

    def note_claims(self, msg: Message) -> None:
        """Rule 4: whether ``msg`` (gossip, before it is merged) says we are dead."""
        me = self.peer_id
        if isinstance(msg, Sync):
            told = any(e[0] == me and e[2] is MemberState.DEAD for e in msg.summary)
        else:
            recs = msg.members if isinstance(msg, Digest) else getattr(msg, "updates", ())
            told = any(m.id == me and m.state is MemberState.DEAD for m in recs)
        self._told_dead = self._told_dead or told

    def _retell(self, now: float) -> list[Action]:
        """Rule 4: a record said we are dead: repeat HandoffDone for the current ring.

        The current ring's own hand-off, still open or over, repeats its markers to
        those it told (or will tell); with none, a marker record is made, unless an
        older hand-off is still open (rule 3: its new owners are told in order).
        """
        if self.ring is None or not len(self.ring):
            return []
        h = next((h for h in self._records if h.version == self._version), None)
        if h is None:
            if self.handing_off:
                return []
            members = tuple(sorted(self.ring))
            h = _HandOff(self._version, members, phase=_Phase.MARKING, began=now,
                         told={d for d in members if d != self.peer_id})
            self._records.append(h)
        h.repeats = MARKER_ROUNDS  # to those it told: never one it gave up on (rule 2)
        return []

    def begin(self, version: int, seen: int, starts: Mapping[str, Iterable[tuple[str, float]]],
              now: float, *, seen_to: Container[str] | None = None) -> list[Action]:
        """The driver queued the moved hosts' seen URLs: set the barriers and start waiting.

        ``seen_to``: the members it queued seen URLs for (None: it does not say). At the
        first ring (rule 6) a member given none has no URL barrier: what the Outbox holds
        for it is a resumed queue's URLs, which it takes when it has seen us back, and
        which no page of its hosts waits for (its state still has its barrier).
        """
        h = next((h for h in self._records if h.version == version and h.phase is _Phase.COLLECTING),
                 None)
        if h is None:
            return []
        h.phase = _Phase.WAITING
        h.began = now
        h.seen = seen
        h.starts = {d: list(s) for d, s in starts.items()}
        free = () if seen_to is None or not h.first else {d for d in h.members if d not in seen_to}
        h.marks = {d: -1 if d in free else self._sends.barrier(d) for d in h.members if d != self.peer_id}
        if self._state is not None:
            h.state_marks = {d: self._state.barrier(d) for d in h.marks}
        return self.progress(now)

    def _state_acked(self, h: _HandOff, dest: str) -> bool:
        """Rule 5: ``dest`` acked the hosts' state queued for it up to this hand-off's barrier."""
        return self._state is None or self._state.acked_through(dest, h.state_marks.get(dest, -1))

    def _give_up(self, h: _HandOff, dest: str, reason: str) -> None:
        del h.marks[dest]
        h.gave_up = True
        self._dropped[reason] += 1

    def progress(self, now: float, marker_round: bool = False) -> list[Action]:
        """Tell each new owner whose acks are all in (rules 2, 3); give up late waits; repeat markers."""
        out: list[Action] = []
        live = self._members.live()
        current = self._members.ring_version
        inc = self._members.me.incarnation  # rule 7
        # Rule 3: what older hand-offs still wait for, in order of version.
        collecting = False
        waiting: set[str] = set()
        for h in self._records:
            late = now - h.began >= HANDOFF_TIMEOUT
            if h.phase is _Phase.COLLECTING:
                if late:
                    h.phase = _Phase.MARKING
                    h.repeats = 0
                    h.gave_up = True
                    self._dropped["handoff_unread"] += 1
                    out += self._ended(h, now)
                else:
                    collecting = True
                continue
            if h.phase is _Phase.WAITING:
                for d in list(h.marks):
                    if d not in live:
                        self._give_up(h, d, "handoff_member_gone")
                    elif (not collecting and d not in waiting and self._sends.acked_through(d, h.marks[d])
                          and self._state_acked(h, d)):
                        del h.marks[d]
                        h.told.add(d)
                        if h.first and not self._heard(d):
                            h.unheard.add(d)  # rule 6: once more when heard from
                        if h.starts.get(d):
                            # Before HandoffDone, on the same connection: the new
                            # owner counts them before it releases the hosts.
                            out.append(Send(d, HostStarts(self.ring_name, self.peer_id,
                                                          tuple(h.starts[d][:MAX_ARRAY]))))
                        out.append(Send(d, HandoffDone(self.ring_name, self.peer_id, h.members, inc)))
                if h.marks and late:
                    out.append(Log(logging.WARNING, f"hand-off: gave up waiting for acks from "
                                                    f"{', '.join(sorted(h.marks))} after "
                                                    f"{HANDOFF_TIMEOUT:.0f}s"))
                    for d in list(h.marks):
                        self._give_up(h, d, "handoff_timeout")
                if h.marks:
                    waiting |= set(h.marks)
                else:
                    h.phase = _Phase.MARKING
                    out += self._ended(h, now)
            elif h.phase is _Phase.MARKING:
                # Rule 6: a member told before we heard from it was told at wire version 3,
                # without our incarnation (rule 7): told again once heard, within HANDOFF_TIMEOUT.
                for d in sorted(h.unheard):
                    if current != h.version or d not in live or late:
                        h.unheard.discard(d)
                    elif self._heard(d):
                        h.unheard.discard(d)
                        out.append(Send(d, HandoffDone(self.ring_name, self.peer_id, h.members, inc)))
                if not marker_round or h.repeats <= 0:
                    continue  # (kept for ``unheard`` alone, its repeats over)
                if current != h.version:
                    h.repeats = 0  # a newer ring has its own hand-off and markers
                    continue
                h.repeats -= 1
                out += [Send(d, HandoffDone(self.ring_name, self.peer_id, h.members, inc))
                        for d in sorted(h.told) if d in live]
        self._records = [h for h in self._records
                         if h.phase is not _Phase.MARKING or h.repeats > 0 or h.unheard]
        return out

    def _ended(self, h: _HandOff, now: float) -> list[Action]:
        """Rule 2: one hand-off over, counted by how it ended."""
        elapsed = now - h.began
        self.ended.append((h.seen, elapsed))
        if h.gave_up:
            self._dropped["handoffs_gave_up"] += 1
            return [Log(logging.WARNING, f"hand-off: {h.seen} fetched URLs to their new owners; "
                                         f"gave up on some after {duration(elapsed)}")]
        self._dropped["handoffs_done"] += 1
        if h.seen:
            return [Log(logging.INFO, f"hand-off: {h.seen} fetched URLs to their new owners, "
                                      f"all acked in {duration(elapsed)}")]
        return []
