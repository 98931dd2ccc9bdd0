"""Hosts' state on its way to their new owner: numbered, acked, resent, re-routed (pure).

A host that changes owner takes its URLs along in the Outbox's batches
(``ring.forwarding.forwarder``); what else a peer knows of the host goes
here: its revisit records (when each page is due again, its interval and
validators), its cookies and the exact-duplicate digests of its pages.
Without them the new owner would fetch the host's pages as new (no
``If-None-Match``), without the session the host set, and take its copies
for new pages.

Why a box of its own and not a third kind of entry in the Outbox's
batches: a ``UrlBatch`` with one more field would be refused whole by a
peer of an older build (``ring.messages`` checks the field count), which
never acks it, so its URLs would stop too. In :class:`~ring.messages.HostState`
messages of their own, an older peer drops only them (an unknown type),
and the URLs go on as before.

Rules (every one lives in this file):

1. **Records by host.** Each record is queued with the placement key of
   its host (``ring.hashring.HashRing.owner``'s argument) and one of three
   kinds; a destination's records go in :class:`~ring.messages.HostState`
   messages of at most ``chunk`` records, numbered ``seq`` from 0 per
   destination for the life of the process (``epoch``), never reused.
2. **Acked, then dropped.** A message stays until its
   :class:`~ring.messages.HostStateAck` comes: the sender holds the only
   copy of those records until then. A new owner imports before it acks
   (``ring.node`` rule 13), and its import keeps the newer of two records,
   so a replay is harmless and is acked again.
3. **Resent, less and less often.** A message not acked is sent again
   after ``resend_after``, doubling each time up to ``max_resend``: a peer
   of an older build drops it as an unknown type and never acks, so its
   records stay here, sent again every ``max_resend`` seconds (a few
   frames a minute), until the host moves again or the process ends.
4. **Ring changes.** :meth:`StateBox.reroute` moves every record queued or
   unacked for a destination no longer among the members to its host's
   owner in the new ring (new messages, new numbers); the records whose
   host is ours again come back to the caller to import. A message already
   sent to a live member stays as it is (one ``seq``, one content), like
   the Outbox's batches.
5. **Barriers.** :meth:`barrier` seals what is queued for a destination and
   names the last ``seq``; :meth:`acked_through` says when every message up
   to it was acked. A hand-off tells its new owner ``HandoffDone`` only
   then (``ring.handoff`` rule 2), so the new owner has the hosts' state
   before it fetches them.
6. **A leaver waits for its acks.** A peer that leaves ends only once the
   box is :meth:`settled`: everything acked (what went after its
   hand-off's barrier too: a revisit passed on with its URL), or sent
   ``handoff_timeout`` ago to a member that never acks it (an older
   build), whose records then end with the leaver (``ring.node``'s
   ``left``).
7. **A member that cannot take them.** A destination known to speak wire
   version 3 (``ring.wireversion``) has no ``HostState``: nothing would
   ever ack it, so :meth:`unsupported` drops what is queued or unacked for
   it, counted ``handoff_state.unsupported``, and its barriers are met at
   once. Its hosts' URLs still go (``UrlBatch`` is version 3's): the new
   owner re-learns their schedule, cookies and digests as a fresh crawl
   would, and the hand-off does not wait ``handoff_timeout`` for an ack
   that cannot come.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Callable, Container
from dataclasses import dataclass
from typing import Any

from ring.messages import CookieWire, DigestWire, HostState, RevisitWire

__all__ = ["MAX_RESEND", "RESEND_AFTER", "STATE_CHUNK", "Kind", "StateBox", "StateRecords"]

#: Records a HostState carries at most. A revisit record is ~200 bytes and
#: a cookie at most 8 KiB, so 500 stay far under the 8 MiB frame.
STATE_CHUNK = 500
#: First resend after this many seconds without an ack; then doubled up to MAX_RESEND (rule 3).
RESEND_AFTER = 1.0
MAX_RESEND = 30.0


class Kind(enum.Enum):
    """What a record is; the index of its field in a HostState."""

    REVISIT = 0
    COOKIE = 1
    DIGEST = 2


@dataclass(frozen=True, slots=True)
class StateRecords:
    """Records taken from a HostState, or given back by :meth:`StateBox.reroute`."""

    revisits: tuple[RevisitWire, ...] = ()
    cookies: tuple[CookieWire, ...] = ()
    digests: tuple[DigestWire, ...] = ()

    def __len__(self) -> int:
        return len(self.revisits) + len(self.cookies) + len(self.digests)

    @classmethod
    def of(cls, msg: HostState) -> StateRecords:
        return cls(msg.revisits, msg.cookies, msg.digests)


_Entry = tuple[str, Kind, Any]   # (placement key, kind, wire record)


class _Sent:
    __slots__ = ("msg", "entries", "due", "sends", "first")

    def __init__(self, msg: HostState, entries: list[_Entry]) -> None:
        self.msg = msg
        self.entries = entries
        self.due = float("-inf")  # sent by the next messages()
        self.sends = 0
        self.first = float("inf")  # when it was first sent (rule 6)


class _Dest:
    __slots__ = ("queued", "unacked", "seq")

    def __init__(self) -> None:
        self.queued: list[_Entry] = []
        self.unacked: dict[int, _Sent] = {}
        self.seq = 0


class StateBox:
    """One member's outgoing host state (module docstring); ``counts`` are ``handoff_state.*``."""

    __slots__ = ("_self", "_ring", "_epoch", "_chunk", "_resend_after", "_max_resend", "_dests", "counts")

    def __init__(self, self_id: str, ring_name: str, *, epoch: int, chunk: int = STATE_CHUNK,
                 resend_after: float = RESEND_AFTER, max_resend: float = MAX_RESEND) -> None:
        if chunk < 1:
            raise ValueError(f"chunk must be >= 1, not {chunk!r}")
        if not 0 < resend_after <= max_resend:
            raise ValueError(f"need 0 < resend_after <= max_resend, not {resend_after!r}, {max_resend!r}")
        self._self = self_id
        self._ring = ring_name
        self._epoch = epoch
        self._chunk = chunk
        self._resend_after = resend_after
        self._max_resend = max_resend
        self._dests: dict[str, _Dest] = {}
        self.counts: Counter[str] = Counter()

    # -- queueing (rule 1) -------------------------------------------------------

    def add(self, dest: str, key: str, kind: Kind, record: Any) -> None:
        """Queue ``record`` of the host placed by ``key`` for member ``dest``."""
        d = self._dests.get(dest)
        if d is None:
            d = self._dests[dest] = _Dest()
        d.queued.append((key, kind, record))
        self.counts[f"handoff_state.{kind.name.lower()}s_out"] += 1

    def barrier(self, dest: str) -> int:
        """Seal what is queued for ``dest``; the last ``seq`` it travels in (-1: nothing ever) (rule 5)."""
        d = self._dests.get(dest)
        if d is None:
            return -1
        self._seal(d)
        return d.seq - 1

    def acked_through(self, dest: str, seq: int) -> bool:
        """Every message to ``dest`` up to ``seq`` was acked (rule 5)."""
        d = self._dests.get(dest)
        if d is None or seq < 0:
            return True
        return d.seq > seq and not any(s <= seq for s in d.unacked)

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing unacked."""
        return not any(d.queued or d.unacked for d in self._dests.values())

    def settled(self, now: float, give_up_after: float) -> bool:
        """Rule 6: nothing queued, and nothing unacked but what was first sent ``give_up_after`` ago or more."""
        return not any(d.queued or any(now - s.first < give_up_after for s in d.unacked.values())
                       for d in self._dests.values())

    def pending_by_dest(self) -> dict[str, int]:
        """Records queued or unacked, by destination (those with any)."""
        out = {dest: len(d.queued) + sum(len(s.entries) for s in d.unacked.values())
               for dest, d in self._dests.items()}
        return {dest: n for dest, n in out.items() if n}

    def pending(self) -> int:
        """Records queued or unacked, over every destination."""
        return sum(len(d.queued) + sum(len(s.entries) for s in d.unacked.values())
                   for d in self._dests.values())

    # -- sending (rules 1-3) --------------------------------------------------------

    def _seal(self, d: _Dest) -> None:
        """Number what is queued, in messages of at most ``chunk`` records, due at once."""
        queued, d.queued = d.queued, []
        for i in range(0, len(queued), self._chunk):
            entries = queued[i:i + self._chunk]
            parts: tuple[list[Any], list[Any], list[Any]] = ([], [], [])
            for _, kind, record in entries:
                parts[kind.value].append(record)
            msg = HostState(self._ring, self._self, self._epoch, d.seq, tuple(parts[0]), tuple(parts[1]),
                            tuple(parts[2]))
            d.unacked[d.seq] = _Sent(msg, entries)
            d.seq += 1

    def messages(self, now: float) -> list[tuple[str, HostState]]:
        """``(destination, message)`` pairs to send now: new ones and resends (rule 3)."""
        out: list[tuple[str, HostState]] = []
        for dest, d in self._dests.items():
            if d.queued:
                self._seal(d)
            for s in d.unacked.values():
                if s.due <= now:
                    if s.sends:
                        self.counts["handoff_state.resent"] += 1
                    s.due = now + min(self._max_resend, self._resend_after * 2 ** min(s.sends, 32))
                    s.first = min(s.first, now)
                    s.sends += 1
                    out.append((dest, s.msg))
        return out

    def ack(self, sender: str, epoch: int, seq: int) -> bool:
        """Drop message ``seq`` acked by ``sender`` (rule 2); False for a stale or unknown ack."""
        d = self._dests.get(sender)
        s = d.unacked.pop(seq, None) if d is not None and epoch == self._epoch else None
        if s is None:
            return False  # a duplicate: a replay of ours was acked twice
        self.counts["handoff_state.acked"] += len(s.entries)
        return True

    def unsupported(self, dest: str) -> int:
        """Rule 7: drop every record queued or unacked for ``dest``; how many."""
        d = self._dests.get(dest)
        if d is None:
            return 0
        n = len(d.queued) + sum(len(s.entries) for s in d.unacked.values())
        self._seal(d)  # numbered, so a barrier taken before stays meetable
        d.unacked.clear()
        if n:
            self.counts["handoff_state.unsupported"] += n
        return n

    # -- ring changes (rule 4) ------------------------------------------------------------

    def reroute(self, owner_of: Callable[[str], str], *, members: Container[str]) -> StateRecords:
        """Records for members gone, to their hosts' owners in the new ring; ours come back."""
        moved: list[_Entry] = []
        for dest, d in self._dests.items():
            if dest in members:
                continue
            moved += d.queued
            d.queued = []
            for s in d.unacked.values():
                moved += s.entries
            d.unacked.clear()
        back: tuple[list[Any], list[Any], list[Any]] = ([], [], [])
        for key, kind, record in moved:
            owner = owner_of(key)
            if owner == self._self:
                back[kind.value].append(record)
            else:
                to = self._dests.get(owner)
                if to is None:
                    to = self._dests[owner] = _Dest()
                to.queued.append((key, kind, record))
        return StateRecords(tuple(back[0]), tuple(back[1]), tuple(back[2]))
