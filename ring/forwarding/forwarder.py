"""Forwarding URLs to their owner: per-peer batches, sequence numbers, acks, resends.

A link that passes scope belongs to ``HashRing.owner(host)``. When that is
another peer, the sender's :class:`Outbox` batches it; the owner's
:class:`ring.forwarding.inbox.Inbox` decides whether a batch that arrives is new. This is the
"URLs travel to their owner" rule of UbiCrawler (Boldi et al. 2004, §3) and
BUbiNG (Boldi et al. 2016), made reliable over a lossy link with the classic
sliding-window pieces: per-destination sequence numbers, acks, resends and a
receiver-side duplicate filter (as in TCP, RFC 9293 §3.4, with batches in
place of bytes). This module is the sender's half of that one protocol;
``ring.forwarding.inbox`` is the receiver's, and the termination counters below are
the two halves' contract. Pure: the zmq edge calls :meth:`Outbox.due` and sends what it
returns, and feeds every :class:`~ring.messages.Ack` to :meth:`Outbox.ack`.

Rules of the Outbox (every transition lives in this file):

1. **Batching.** :meth:`Outbox.add` queues ``(url, depth)`` for its owner. A
   destination's entries (URLs plus hand-off ``seen`` URLs) become a
   batch as soon as they number ``batch_size`` (cut in :meth:`~Outbox.add`,
   numbered and returned by the next :meth:`~Outbox.due`), or when the oldest
   of them is ``max_age`` old: ``due(now)`` with ``now >= first + max_age``.
   ``batch_size`` bounds a frame: at the 4 KiB URL limit of ``peer.core.urls.normalize``,
   up to ~2000 fits the codec's 8 MiB frame.
2. **Numbering.** A batch is numbered when first returned by ``due``:
   ``seq`` counts from 0 per destination, for the life of the process (the
   ``epoch``), and is never reused, even for a peer that left and came back,
   because that peer's Inbox would take a reused number for a replay.
3. **Resends.** A batch not acked ``resend_after`` seconds after its last
   transmission is returned by ``due`` again, unchanged: same ``seq``, same
   content. A number always means one content, which is what makes the
   receiver's duplicate filter and the termination counters exact.
4. **Acks.** :meth:`Outbox.ack` retires a batch. An ack for another epoch, an
   unknown destination or a batch already retired is ignored and counted
   (``stale_acks``): resends make duplicate acks normal.
5. **Ring changes.** :meth:`Outbox.reroute` takes the new ring's
   ``owner_of(url)`` and its ``members``:

   - queued entries not yet numbered move to their new owner, or come back to
     the caller when that is this peer (they go to the local frontier);
   - batches to a destination no longer in ``members`` (dead or left) are
     abandoned and every entry in them moves the same way: nothing queued
     for a dead peer is lost. A dead one's are kept, and sent again,
     unchanged, if it comes back into ``members`` (it refuted: see the
     termination counters below);
   - batches already sent to a *live* peer stay as they are, and are resent
     until acked, even if some of their URLs now belong to someone else.
     Cutting those URLs out would give a sent ``seq`` a second content (the
     peer may hold the first: only its ack was lost), and copying them would
     deliver them twice. The receiver must route what it takes with its own
     ring anyway, since a batch in flight during the change arrives after
     it, so such a URL makes one extra hop instead.

6. **Recently forwarded.** An approximate LRU of ``recent_size`` URLs, each
   with the owner it was forwarded to, drops a repeat of a popular link
   before it is batched (``recent_hits``). A repeat to a *different* owner
   (the ring changed since) is forwarded again. Depth is ignored: the
   owner's Bloom filter would drop the repeat whatever its depth. Dropping
   is safe because the earlier copy is on its way to being taken; so a URL
   that arrived in a batch and must travel on (:meth:`Outbox.relay`) is
   never dropped: it may be that earlier copy itself, come back (sent to
   *o*, the ring moved its host while it travelled, *o* relayed it here, the
   ring moved it back to *o*). The stateful test found that loss.

7. **Coalescing.** The receiver owes an ack for every batch it took or
   recognised as a replay (:meth:`Outbox.owe_ack`); it does not send it at
   once but queues it for the batch's sender like an entry. :meth:`Outbox.messages`
   then sends, per destination, *one* frame for everything due to it: the
   owed acks ride on the batches going back (piggybacking, as TCP's delayed
   ACK rides on data, RFC 9293 §3.8.6.3), resends and aged partials go
   together (a :class:`~ring.messages.Packet`, at most ``batch_size``
   entries a frame, so the frame bound of rule 1 holds), and an ack goes
   alone only when nothing went back within the current batch age. Owed
   acks start a destination's age clock as an entry does, and when their
   deadline comes the destination's partial batch goes with them, so a
   destination gets at most one frame per age plus its full batches. A lone
   batch still goes as a plain :class:`UrlBatch` and a lone ack as a plain
   :class:`Ack`. Acks owed for an older epoch of a destination than one
   seen since are dropped: that process is gone, and a new one ignores them.
8. **Adaptive age.** With ``budget`` (messages per second) set, the batch
   age is recomputed every ``RATE_WINDOW`` seconds from what entered the
   Outbox in the last window (URLs, seen URLs and owed acks: ``R`` per
   second) and the destinations they went to (``D``). A destination fed at
   ``R/D`` and flushed ``age`` after its first entry sends a frame every
   ``age + D/R`` seconds on average, so ``D / (age + D/R)`` frames per
   second in all; setting that to ``budget`` gives ``age = D (1/budget -
   1/R)``, clamped to ``[max_age, max_delay]``. Below the budget (few peers
   or little traffic) the age stays ``max_age``: it adds no latency where it
   saves no messages. ``max_delay`` bounds the latency added, so past
   ``D = budget * max_delay`` the frames per second grow with ``D`` again,
   at ``D / max_delay``. The resend timer of rule 3 gets ``max_delay -
   max_age`` more, since a peer with the same config may hold its ack that
   long.

9. **Window.** With ``window`` set, a destination has at most ``window``
   unacked batches: full batches beyond it wait, unnumbered, until an ack
   makes room (TCP's send window, RFC 9293 §3.8.6, in batches). Without
   it a receiver slower than its senders (a peer on a saturated box) had its
   zmq pipe fill with URL frames, up to the DEALER's HWM, and every probe
   and ack queued behind them: both peers of scripts/bench_scale.py held
   the other suspect with neither event loop stalled, and the resends of the
   unacked batches added to the queue. Resends and aged partial batches
   (at most one a batch age) are not held back.

Termination counters (Mattern's counter method, ``ring.membership.termination``). ``Outbox.sent`` counts the
entries (URLs and seen URLs) of every batch the first time :meth:`Outbox.due`
returns it; resends are not counted again. ``Inbox.received`` counts the
entries of every batch with verdict ``ACCEPT``. Per channel (sender → owner)
a batch is counted once on each side, sent before received, so at every
moment ``sent - received`` is exactly the number of entries in batches sent
and not yet taken: the sums over the live peers are equal only when every
forwarded entry has been received (a hole given up by the window would keep
them apart for good: a hang, not a loss). Entries not yet batched are not
counted; they keep their sender from being :attr:`~Outbox.idle`, and
termination asks for both. The sums must cover the same channels on both
sides, so the driver:

- drops batches from senders that are not live members before ``accept``;
- on a peer dead: ``reroute(..., members=new_ring)`` and ``Inbox.forget(peer)``.
  Both *hide* the channel, they do not zero it: ``sent`` leaves out the
  channel to a destination gone and not ``left``, ``received`` the channel
  from a forgotten sender. A peer declared dead is often alive (a partition,
  a long pause) and comes back as the same process, refuting: then the next
  ``reroute`` with it among ``members`` and ``Inbox.reopen(peer)`` show both
  channels again with what they held, and its batches are taken again (a
  channel closed for good refused them, unacked, for ever: the sender's
  Outbox never went idle and the crawl never ended). The batches abandoned
  at its death leave ``sent`` (their entries went to other owners) and are
  sent again, unchanged, when it is back: it took some before their acks
  were lost and counts them, and now acks them as replays; the others it
  takes now. Either way each is counted once on both sides, and a heal
  leaves the sums exact;
- on a peer left: ``reroute(..., members=new_ring, left=...)``: the channel
  stays summed, less its abandoned batches, as the leaver's counters do;
- on a peer restarted (a new epoch): ``Inbox.forget(peer, before=epoch)``
  (the new epoch's first batch also replaces the channel, but a sender
  that never sends here again would leave its old count behind), and,
  unless that peer restored its Inbox state from disk,
  ``Outbox.forget(peer)`` before anything is sent to the new incarnation;
- never persists ``sent``: it belongs to the process and its epoch.

Memory is what is queued: per destination a partial batch, full chunks waiting
for ``due`` and the unacked batches (plus, for ``resend_after`` after each
send, a small record in the resend queue, dropped lazily); and the LRU.
``now`` must not go backwards (the resend queue is kept in time order).
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Container
from dataclasses import dataclass
from typing import NamedTuple

from ring.messages import MAX_ARRAY, Ack, BatchPart, Message, Packet, UrlBatch

__all__ = [
    "BATCH_AGE",
    "MAX_BATCH_AGE",
    "MESSAGE_BUDGET",
    "SEND_WINDOW",
    "RATE_WINDOW",
    "Entries",
    "Outbox",
    "OutboxStats",
]

#: The defaults of ``[ring] batch_age``, ``max_batch_age``, ``message_budget``
#: (peer/core/config/cluster.py holds the documented keys). Measured with
#: scripts/bench_forward_sim.py at 1,000 pages/s a peer: 200 frames/s keeps
#: a peer's forwarding under a tenth of what one zmq DEALER/ROUTER pair
#: carries here (ring/io/zmqio.py), and 2 s of added latency is small next to
#: a host's politeness delay.
BATCH_AGE = 0.05
MAX_BATCH_AGE = 2.0
MESSAGE_BUDGET = 200.0
#: The default of ``[ring] send_window`` (rule 9): 8 batches of 500 URLs in
#: flight to a peer are ~0.2 s of its receiver's work on the loaded box, so
#: a probe waits behind at most that; and 8 x 500 URLs a round trip carries
#: 20,000 URLs/s to a peer at a 200 ms round trip, far above a crawl's rate.
SEND_WINDOW = 8
#: Seconds over which the entry rate and the destinations are measured (rule 8):
#: long enough that a destination fed one URL a second shows up in most windows.
RATE_WINDOW = 2.0


class Entries(NamedTuple):
    """Forwarded entries: ``(url, depth)`` pairs for a frontier, ``seen`` URLs for a Bloom filter.

    A named tuple rather than a dataclass so ``urls, seen = outbox.reroute(...)`` unpacks.
    """

    urls: list[tuple[str, int]]
    seen: list[str]


@dataclass(frozen=True, slots=True)
class OutboxStats:
    """Counters of an :class:`Outbox` (entries are URLs plus seen URLs)."""

    forwarded: int  # URLs queued by add() (repeats dropped by the LRU excluded)
    recent_hits: int  # URLs add() dropped as recently forwarded to the same owner
    relayed: int  # URLs queued by relay()
    seen_forwarded: int  # seen URLs queued by add_seen()
    batches: int  # batches numbered and sent (resends excluded)
    resent: int  # batch retransmissions
    acked: int  # entries in acked batches
    stale_acks: int  # acks ignored: duplicate, unknown, other epoch
    rerouted: int  # entries moved to another peer by reroute()
    returned: int  # entries reroute() handed back to this peer
    pending: int  # entries not yet in a numbered batch
    unacked: int  # batches sent and not acked
    sent: int  # the termination counter (module docstring)
    messages: int = 0  # frames messages() returned (batches, packets, lone acks)
    acks_piggybacked: int = 0  # owed acks that went with batches
    acks_alone: int = 0  # owed acks that went in frames without batches
    acks_owed: int = 0  # acks waiting to go
    age: float = 0.0  # the batch age in use (rule 8)
    window_waits: int = 0  # times full batches waited for acks: the window was full (rule 9)


#: What a retired _Sent keeps instead of its batch, so the resend queue (emptied
#: lazily) does not hold its URLs: nothing.
_RETIRED = UrlBatch(ring="", sender="", epoch=0, seq=0, urls=())


class _Sent:
    """A numbered batch waiting for its ack."""

    __slots__ = ("batch", "dest", "due", "live", "revived")

    def __init__(self, batch: UrlBatch, dest: str, due: float, revived: bool = False) -> None:
        self.batch = batch
        self.dest = dest
        self.due = due  # next resend time
        self.live = True  # False once acked or abandoned (lazy removal from the queue)
        # Sent again to a destination back from dead (Outbox._revive): its
        # entries went to other owners at the death, so they are no longer ours.
        self.revived = revived


class _Dest:
    """Everything queued for one destination."""

    __slots__ = ("id", "urls", "seen", "since", "run", "ready", "unacked", "seq", "sent",
                 "acks", "ack_epoch", "ack_run", "mark", "hidden", "abandoned")

    def __init__(self, dest_id: str) -> None:
        self.id = dest_id
        self.urls: list[tuple[str, int]] = []  # the partial batch
        self.seen: list[str] = []
        self.since: float | None = None  # arrival of the partial batch's first entry
        self.run = 0  # bumped at each cut: invalidates the partial's age deadline
        self.ready: list[tuple[list[tuple[str, int]], list[str]]] = []  # full, unnumbered
        self.unacked: dict[int, _Sent] = {}
        self.seq = 0
        self.sent = 0  # this channel's share of Outbox.sent
        self.acks: list[int] = []  # seqs of its batches we owe an ack for (rule 7)
        self.ack_epoch = -1  # the epoch those seqs are of
        self.ack_run = 0  # bumped when the owed acks go: invalidates their deadline
        self.mark = -1  # the last rate window it got entries in (rule 8)
        self.hidden = False  # dead: its channel is left out of Outbox.sent until it is back
        self.abandoned: list[UrlBatch] = []  # unacked at its death: sent again if it comes back


def _size(b: UrlBatch) -> int:
    return len(b.urls) + len(b.seen)


class Outbox:
    """The sender side: per-destination batches, numbering, resends, re-routing."""

    __slots__ = (
        "_self", "_ring", "_epoch", "_bs", "_max_age", "_resend_after", "_half",
        "_young", "_old", "_dests", "_ready", "_aging", "_tick", "_resend",
        "_max_delay", "_budget", "_age", "_grace", "_acking", "_win", "_win_end", "_items",
        "_active", "_messages", "_acks_piggybacked", "_acks_alone",
        "_forwarded", "_recent_hits", "_relayed", "_seen_forwarded", "_batches", "_resent",
        "_acked", "_stale_acks", "_rerouted", "_returned", "_window", "_window_waits",
    )

    def __init__(
        self,
        self_id: str,
        ring_name: str,
        *,
        epoch: int,
        batch_size: int = 500,
        max_age: float = 0.05,
        resend_after: float = 1.0,
        recent_size: int = 100_000,
        max_delay: float | None = None,
        budget: float = 0.0,
        window: int = 0,
    ) -> None:
        if not 1 <= batch_size <= MAX_ARRAY:
            raise ValueError(f"batch_size must be in 1..{MAX_ARRAY}, not {batch_size!r}")
        if not max_age >= 0:
            raise ValueError(f"max_age must be >= 0, not {max_age!r}")
        # 0 would resend a batch in the same due() call, forever.
        if not resend_after > 0:
            raise ValueError(f"resend_after must be > 0, not {resend_after!r}")
        if recent_size < 0:
            raise ValueError(f"recent_size must be >= 0, not {recent_size!r}")
        if max_delay is None:
            max_delay = max_age
        if not max_delay >= max_age:
            raise ValueError(f"max_delay must be >= max_age ({max_age!r}), not {max_delay!r}")
        if not budget >= 0:
            raise ValueError(f"budget must be >= 0, not {budget!r}")
        if window < 0:
            raise ValueError(f"window must be >= 0, not {window!r}")
        self._self = self_id
        self._ring = ring_name
        self._epoch = epoch
        self._bs = batch_size
        self._max_age = max_age
        self._resend_after = resend_after
        self._max_delay = max_delay
        self._budget = budget
        self._age = max_age  # the batch age in use (rule 8)
        self._grace = max_delay - max_age  # a peer may hold its ack that much longer
        # (deadline, tick, dest, ack_run): deadlines of owed acks (rule 7).
        self._acking: list[tuple[float, int, _Dest, int]] = []
        self._win = 0  # the rate window (rule 8)
        self._win_end: float | None = None
        self._items = 0  # entries and owed acks queued in this window
        self._active = 0  # destinations they went to
        self._messages = 0
        self._acks_piggybacked = 0
        self._acks_alone = 0
        # Recently forwarded, url -> owner it went to: two generations of plain
        # dicts (the young one becomes the old one when it holds half the
        # size) approximate an LRU at half the cost of an OrderedDict's
        # bookkeeping on every miss, the common case. A hit in the old
        # generation is promoted; it holds the last recent_size/2 to
        # recent_size distinct URLs.
        self._half = (recent_size + 1) // 2
        self._young: dict[str, str] = {}
        self._old: dict[str, str] = {}
        # Destinations are kept for the life of the process, even when gone:
        # their seq must never restart (rule 2), and there are only as many
        # as peers ever seen.
        self._dests: dict[str, _Dest] = {}
        self._ready: list[_Dest] = []  # destinations with full chunks
        # (deadline, tick, dest, run): age deadlines of partial batches. A heap,
        # not a deque: reroute() re-queues entries with their original arrival.
        self._aging: list[tuple[float, int, _Dest, int]] = []
        self._tick = 0
        # Sent batches in order of next resend; sends happen at non-decreasing
        # `now`, so appending keeps it sorted.
        self._resend: deque[_Sent] = deque()
        self._forwarded = 0
        self._recent_hits = 0
        self._relayed = 0
        self._seen_forwarded = 0
        self._batches = 0
        self._resent = 0
        self._acked = 0
        self._stale_acks = 0
        self._rerouted = 0
        self._returned = 0
        self._window = window  # unacked batches a destination may have (rule 9); 0: no bound
        self._window_waits = 0

    # -- queueing --------------------------------------------------------------

    def add(self, url: str, depth: int, owner: str, now: float) -> bool:
        """Queue ``url`` for peer ``owner``; False if dropped as recently forwarded there."""
        young = self._young
        last = young.get(url)
        if last is None:
            last = self._old.get(url)
        if last == owner:
            self._recent_hits += 1
            if url not in young:  # promote: it is popular
                young[url] = owner
                if len(young) >= self._half:
                    self._old = young
                    self._young = {}
            return False
        if self._half:
            young[url] = owner
            if len(young) >= self._half:
                self._old = young
                self._young = {}
        self._forwarded += 1
        # Inlined _put: this is the hot path.
        d = self._dests.get(owner)
        if d is None:
            d = self._dests[owner] = _Dest(owner)
        self._items += 1
        if d.mark != self._win:
            d.mark = self._win
            self._active += 1
        if d.since is None:
            self._start(d, now)
        urls = d.urls
        urls.append((url, depth))
        if len(urls) + len(d.seen) >= self._bs:
            self._cut(d)
        return True

    def relay(self, url: str, depth: int, owner: str, now: float) -> None:
        """Queue ``url``, taken from a batch, for its owner: the ring moved it meanwhile.

        Never dropped as recently forwarded: that copy may be this very one,
        back from a peer that relayed it here (rule 6).
        """
        self._relayed += 1
        if self._half:
            young = self._young
            young[url] = owner
            if len(young) >= self._half:
                self._old = young
                self._young = {}
        self._put(url, depth, owner, now)

    def add_seen(self, url: str, owner: str, now: float) -> None:
        """Queue an already-fetched ``url`` for its new owner's Bloom filter (hand-off)."""
        self._seen_forwarded += 1
        self._put_seen(url, owner, now)

    def _start(self, d: _Dest, now: float) -> None:
        d.since = now
        self._tick += 1
        if self._budget and (self._win_end is None or now >= self._win_end):
            self._measure(now)
        heapq.heappush(self._aging, (now + self._age, self._tick, d, d.run))

    def _measure(self, now: float) -> None:
        """Close the rate window and set the batch age from it (rule 8)."""
        if self._win_end is not None:
            span = now - (self._win_end - RATE_WINDOW)
            rate = self._items / span if span > 0 else 0.0
            age = self._max_age
            if rate > self._budget:
                age = self._active * (1.0 / self._budget - 1.0 / rate)
            self._age = min(self._max_delay, max(self._max_age, age))
        self._win += 1
        self._win_end = now + RATE_WINDOW
        self._items = 0
        self._active = 0

    def _count(self, d: _Dest) -> None:
        self._items += 1
        if d.mark != self._win:
            d.mark = self._win
            self._active += 1

    def owe_ack(self, dest: str, epoch: int, seq: int, now: float) -> None:
        """Queue the ack of batch ``(epoch, seq)`` that ``dest`` sent us (rule 7)."""
        d = self._dests.get(dest)
        if d is None:
            d = self._dests[dest] = _Dest(dest)
        if epoch != d.ack_epoch:
            if epoch < d.ack_epoch:
                return  # its older life's batch: that process is gone
            d.acks = []
            d.ack_epoch = epoch
        self._count(d)
        if not d.acks:
            self._tick += 1
            if self._budget and (self._win_end is None or now >= self._win_end):
                self._measure(now)
            heapq.heappush(self._acking, (now + self._age, self._tick, d, d.ack_run))
        d.acks.append(seq)

    def _cut(self, d: _Dest) -> None:
        """Move the partial batch to the full chunks."""
        if not d.ready:
            self._ready.append(d)
        d.ready.append((d.urls, d.seen))
        d.urls = []
        d.seen = []
        d.since = None
        d.run += 1

    def _put(self, url: str, depth: int, owner: str, since: float) -> None:
        d = self._dests.get(owner)
        if d is None:
            d = self._dests[owner] = _Dest(owner)
        self._count(d)
        if d.since is None:
            self._start(d, since)
        d.urls.append((url, depth))
        if len(d.urls) + len(d.seen) >= self._bs:
            self._cut(d)

    def _put_seen(self, url: str, owner: str, since: float) -> None:
        d = self._dests.get(owner)
        if d is None:
            d = self._dests[owner] = _Dest(owner)
        self._count(d)
        if d.since is None:
            self._start(d, since)
        d.seen.append(url)
        if len(d.urls) + len(d.seen) >= self._bs:
            self._cut(d)

    # -- sending -----------------------------------------------------------------

    def due(self, now: float) -> list[tuple[str, UrlBatch]]:
        """``(destination, batch)`` pairs to send now: resends, full batches, aged ones."""
        out: list[tuple[str, UrlBatch]] = []
        q = self._resend
        if q and q[0].due <= now:
            later = now + self._resend_after + self._grace
            while q and q[0].due <= now:
                s = q.popleft()
                if s.live:
                    s.due = later
                    q.append(s)
                    self._resent += 1
                    out.append((s.dest, s.batch))
        if self._ready:
            window = self._window
            for d in self._ready:
                n = 0
                for urls, seen in d.ready:
                    if window and len(d.unacked) >= window:
                        break  # rule 9: the rest wait for acks; ack() puts d back
                    self._seal(d, urls, seen, now, out)
                    n += 1
                if n < len(d.ready):
                    self._window_waits += 1
                d.ready = d.ready[n:]
            self._ready = []
        aging = self._aging
        while aging and aging[0][0] <= now:
            _, _, d, run = heapq.heappop(aging)
            if d.run == run:  # still the same partial batch
                urls, seen = d.urls, d.seen
                d.urls = []
                d.seen = []
                d.since = None
                d.run += 1
                self._seal(d, urls, seen, now, out)
        return out

    def _seal(
        self,
        d: _Dest,
        urls: list[tuple[str, int]],
        seen: list[str],
        now: float,
        out: list[tuple[str, UrlBatch]],
    ) -> None:
        seq = d.seq
        d.seq = seq + 1
        batch = UrlBatch(self._ring, self._self, self._epoch, seq, tuple(urls), tuple(seen))
        s = _Sent(batch, d.id, now + self._resend_after + self._grace)
        d.unacked[seq] = s
        self._resend.append(s)
        d.sent += len(urls) + len(seen)
        self._batches += 1
        out.append((d.id, batch))

    def messages(self, now: float) -> list[tuple[str, Message]]:
        """``(destination, frame)`` pairs to send now: :meth:`due`'s batches with the owed acks (rule 7).

        One frame a destination where the frame bound allows: batches of at
        most ``batch_size`` entries in all, the acks owed to it on the first.
        """
        acking = self._acking
        owing: list[_Dest] = []
        while acking and acking[0][0] <= now:
            _, _, d, run = heapq.heappop(acking)
            if d.ack_run == run:
                owing.append(d)
                if d.urls or d.seen:
                    self._cut(d)  # the partial batch goes with the acks
        out: list[tuple[str, Message]] = []
        by_dest: dict[str, list[UrlBatch]] = {}
        for dest, b in self.due(now):
            by_dest.setdefault(dest, []).append(b)
        bs = self._bs
        for dest, batches in by_dest.items():
            d = self._dests[dest]
            if len(batches) == 1:
                out.append((dest, self._frame(d, batches, now)))
                continue
            # First fit: a resend and an aged partial share a frame, a full batch goes alone.
            groups: list[list[UrlBatch]] = []
            sizes: list[int] = []
            for b in batches:
                n = _size(b)
                for i, size in enumerate(sizes):
                    if size + n <= bs:
                        groups[i].append(b)
                        sizes[i] += n
                        break
                else:
                    groups.append([b])
                    sizes.append(n)
            for group in groups:
                out.append((dest, self._frame(d, group, now)))
        for d in owing:
            if d.acks and d.id not in by_dest:
                out.append((d.id, self._frame(d, [], now)))
        self._messages += len(out)
        return out

    def _frame(self, d: _Dest, batches: list[UrlBatch], now: float) -> Message:
        """One frame to ``d``: ``batches`` and, if any are owed, its acks."""
        acks = d.acks
        if acks:
            d.acks = acks[MAX_ARRAY:]
            acks = acks[:MAX_ARRAY]
            d.ack_run += 1
            if d.acks:  # past a Packet's bound: the rest go at the next call
                self._tick += 1
                heapq.heappush(self._acking, (now, self._tick, d, d.ack_run))
            if batches:
                self._acks_piggybacked += len(acks)
            else:
                self._acks_alone += len(acks)
                if len(acks) == 1:
                    return Ack(self._ring, self._self, d.ack_epoch, acks[0])
        elif len(batches) == 1:
            return batches[0]
        return Packet(self._ring, self._self, self._epoch,
                      tuple(BatchPart(b.seq, b.urls, b.seen) for b in batches),
                      d.ack_epoch if acks else 0, tuple(acks))

    def next_due_at(self) -> float | None:
        """When :meth:`messages` next has something to return (-inf: now), or None if never."""
        if self._ready:
            return float("-inf")
        aging, resend, acking = self._aging, self._resend, self._acking
        while aging and aging[0][2].run != aging[0][3]:
            heapq.heappop(aging)
        while resend and not resend[0].live:
            resend.popleft()
        while acking and acking[0][2].ack_run != acking[0][3]:
            heapq.heappop(acking)
        times = []
        if aging:
            times.append(aging[0][0])
        if resend:
            times.append(resend[0].due)
        if acking:
            times.append(acking[0][0])
        return min(times) if times else None

    def ack(self, sender: str, epoch: int, seq: int) -> bool:
        """Retire batch ``seq`` sent to ``sender``; False (and counted) if stale or unknown."""
        d = self._dests.get(sender)
        s = d.unacked.pop(seq, None) if d is not None and epoch == self._epoch else None
        if s is None:
            self._stale_acks += 1
            return False
        self._acked += _size(s.batch)
        s.live = False
        s.batch = _RETIRED  # its URLs need not wait in the queue
        if d is not None and d.ready and d not in self._ready:
            self._ready.append(d)  # room in its window (rule 9)
        return True

    # -- ring changes ------------------------------------------------------------

    def reroute(
        self, owner_of: Callable[[str], str], now: float, *, members: Container[str],
        left: Container[str] = (),
    ) -> Entries:
        """Re-route after a ring change (rule 5); returns the entries now owned by this peer.

        ``owner_of(url)`` is the new ring's owner of the URL's host (e.g.
        ``lambda u: ring.owner(host_key(u))``); ``members`` is the new ring's
        peer ids (a ``HashRing`` will do). A destination not in ``members`` is
        gone: its sent batches are abandoned and their entries re-routed.
        ``left``: gone destinations that left gracefully. Their final
        counters stay in the termination sums, so the channel keeps what they
        acked; a dead one's channel is hidden from :attr:`sent` until a
        reroute finds it among ``members`` again (it refuted its death).
        """
        moved: list[tuple[str, int, str]] = []
        moved_seen: list[tuple[str, str]] = []
        for d in self._dests.values():
            gone = d.id not in members
            if d.hidden and not gone:
                self._revive(d, now)
            # A dead destination's channel is hidden, not zeroed: it may come
            # back as the same process, with the count we had (module docstring).
            d.hidden = gone and d.id not in left
            if gone:
                # Abandoned: their entries go to other owners and are counted there.
                d.sent -= sum(_size(s.batch) for s in d.unacked.values())
            if not (d.urls or d.seen or d.ready or (gone and d.unacked)):
                continue
            urls = [p for chunk, _ in d.ready for p in chunk]
            urls += d.urls
            seen = [u for _, chunk in d.ready for u in chunk]
            seen += d.seen
            since = d.since if d.since is not None else now
            d.ready = []
            d.urls = []
            d.seen = []
            d.since = None
            d.run += 1
            if gone:
                for s in d.unacked.values():
                    if not s.revived:  # a revived batch's entries were placed at the first death
                        urls += s.batch.urls
                        seen += s.batch.seen
                    if d.hidden:
                        d.abandoned.append(s.batch)
                    s.live = False
                    s.batch = _RETIRED
                d.unacked.clear()
                for url, depth in urls:
                    moved.append((url, depth, owner_of(url)))
                for url in seen:
                    moved_seen.append((url, owner_of(url)))
                continue
            # Entries that stay keep their arrival time, so their age deadline holds.
            for url, depth in urls:
                o = owner_of(url)
                if o == d.id:
                    self._put(url, depth, o, since)
                else:
                    moved.append((url, depth, o))
            for url in seen:
                o = owner_of(url)
                if o == d.id:
                    self._put_seen(url, o, since)
                else:
                    moved_seen.append((url, o))
        self._ready = [d for d in self._dests.values() if d.ready]

        back = Entries([], [])
        young = self._young
        for url, depth, o in moved:
            if o == self._self:
                back.urls.append((url, depth))
            else:
                if url in young:
                    young[url] = o
                self._put(url, depth, o, now)
        for url, o in moved_seen:
            if o == self._self:
                back.seen.append(url)
            else:
                self._put_seen(url, o, now)
        n_back = len(back.urls) + len(back.seen)
        self._returned += n_back
        self._rerouted += len(moved) + len(moved_seen) - n_back
        return back

    def _revive(self, d: _Dest, now: float) -> None:
        """``d``, dead, is back: send again, unchanged, the batches abandoned at its death.

        It may have taken some before their acks were lost, and counts them;
        the others it never saw. Sent again, each is taken or acked as a
        replay, and counted once on both sides, so the channel is exact
        again. Their entries went to other owners at the death; those the
        receiver owns again reach it twice, and its seen set drops the second.
        They are no longer this Outbox's entries: if the destination dies
        again they are not re-routed a second time (a URL back twice was
        queued twice here), nor listed by :meth:`queued`.
        """
        q = self._resend
        for b in sorted(d.abandoned, key=lambda b: b.seq, reverse=True):
            # At the front, due now: the queue stays in time order (due() pops the front).
            s = _Sent(b, d.id, min(now, q[0].due) if q else now, revived=True)
            q.appendleft(s)
            d.unacked[b.seq] = s
            d.sent += _size(b)
        d.abandoned = []

    def forget(self, peer: str) -> None:
        """Restart the termination count of the channel to ``peer``.

        For a peer that restarted *without* its Inbox state: its new Inbox
        will take again exactly the batches still unacked here, so they are
        what the channel now counts. Exact only if called before anything is
        sent to the new incarnation; persisting the Inbox avoids the need.
        (``reroute`` hides the channel of a dead peer itself.)
        """
        d = self._dests.get(peer)
        if d is not None:
            d.sent = sum(_size(s.batch) for s in d.unacked.values())

    # -- state -------------------------------------------------------------------

    def barrier(self, dest: str) -> int:
        """The ``seq`` the last entry queued so far for ``dest`` will travel in.

        The partial batch is cut now, so the answer is fixed: once
        :meth:`acked_through` of it is True, ``dest`` has taken everything
        queued for it before this call (a hand-off is complete),
        whatever other traffic followed. -1 if nothing was ever queued.
        """
        d = self._dests.get(dest)
        if d is None:
            return -1
        if d.urls or d.seen:
            self._cut(d)
        return d.seq + len(d.ready) - 1

    def acked_through(self, dest: str, seq: int) -> bool:
        """Every batch to ``dest`` up to ``seq`` was numbered, sent and acked."""
        d = self._dests.get(dest)
        if d is None or seq < 0:
            return True
        return d.seq > seq and not any(s <= seq for s in d.unacked)

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing unacked: this peer's part of the termination test."""
        return not any(d.urls or d.seen or d.ready or d.unacked for d in self._dests.values())

    @property
    def sent(self) -> int:
        """Entries in batches sent at least once, over the live channels (module docstring)."""
        return sum(d.sent for d in self._dests.values() if not d.hidden)

    @property
    def epoch(self) -> int:
        return self._epoch

    def queued(self) -> Entries:
        """Every entry this Outbox is still responsible for (queued or unacked), e.g. to persist."""
        out = Entries([], [])
        for d in self._dests.values():
            for chunk, seen in d.ready:
                out.urls.extend(chunk)
                out.seen.extend(seen)
            out.urls.extend(d.urls)
            out.seen.extend(d.seen)
            for s in d.unacked.values():
                if not s.revived:  # its entries are elsewhere already
                    out.urls.extend(s.batch.urls)
                    out.seen.extend(s.batch.seen)
        return out

    def stats(self) -> OutboxStats:
        pending = unacked = owed = 0
        for d in self._dests.values():
            pending += len(d.urls) + len(d.seen) + sum(len(u) + len(s) for u, s in d.ready)
            unacked += len(d.unacked)
            owed += len(d.acks)
        return OutboxStats(
            forwarded=self._forwarded,
            recent_hits=self._recent_hits,
            relayed=self._relayed,
            seen_forwarded=self._seen_forwarded,
            batches=self._batches,
            resent=self._resent,
            acked=self._acked,
            stale_acks=self._stale_acks,
            rerouted=self._rerouted,
            returned=self._returned,
            pending=pending,
            unacked=unacked,
            sent=self.sent,
            messages=self._messages,
            acks_piggybacked=self._acks_piggybacked,
            acks_alone=self._acks_alone,
            acks_owed=owed,
            age=self._age,
            window_waits=self._window_waits,
        )
