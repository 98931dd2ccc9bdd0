"""Anti-entropy and joining: the slow, whole-view repairs under SWIM's piggybacking (pure).

Piggybacking (``ring.membership.dissemination``) spreads news fast but carries only
news; the full-state gossip of van Renesse, Minsky, Hayden ("A gossip-style
failure detection service", Middleware 1998) stays as a slow repair, by
summary and delta (Demers et al.'s anti-entropy). ``Membership`` keeps the
view and sends; this module decides what a summary holds, what answers
one, and when to join, sync and greet.

**Repairs.** Every ``ceil(D / SYNC_MEMBERS)`` rounds (D: the records our
digest holds; 8 rounds at 256 peers; :func:`sync_every`) a peer sends a
:class:`~ring.messages.Sync` to ONE random live member: our ``(id,
incarnation, state, heartbeat)`` of each member (23 B each against a
record's 51; :func:`summary`), answered by a :class:`~ring.messages.Digest`
of the records that beat ours (a pull, :func:`answer_sync`; memberlist's
push/pull sends both whole views). The summary is O(N), its period O(N), so
its cost per peer is flat; it brings the heartbeats and counters that
termination and ``max_pages`` read, which are not news (to an asker that
lacks members, those members alone: the heartbeats wait for its next sync).
A digest that asks a reply is answered with what beats the sender's
(:func:`answer_pull`). A short digest that asks none is a push (our
verdicts of one round, a "you are suspect"): its news is piggybacked on
(:func:`is_push`); a full view (a Join's answer, a Sync's) spreads itself.

**Joining.** The seeds (``[[peer]]``) start in every view as ``alive`` at
incarnation 0, so every peer starts with the same ring; their placeholders
are left out of digests (every peer has them). Until a member has answered
us, every :data:`JOIN_EVERY` rounds we send a :class:`~ring.messages.Join`
to ``join_seeds`` random seeds not yet heard from (not to all of them: each
answer is a full digest, 13 KB at 256 peers; :func:`join_targets`). Once
answered, a Sync to one such seed every :data:`JOIN_EVERY_AFTER` rounds, so
two groups of a rolling start that joined each other cannot stay apart,
and a greeting (an untimed ping, backing off: :class:`Greetings`) to
:data:`HELLO_SEEDS` of them a round.

**Seeds.** A seed not yet heard from is not probed for ``seed_grace``
seconds after our start (:meth:`Repairs.grace_over`): a rolling start
longer than ``dead_after`` does not declare the seeds that have not started
dead. After it, a seed never heard from is probed like anyone and dies if
it never answers, and is greeted no more.

:class:`Repairs` is this module's part of ``ring.membership.protocol.Membership``:
it owns when we were first answered, the next sync's round, the partner of
the last one and the greetings, and says whom to join, sync with and greet;
the membership builds and sends the messages, with its own random source
(one source, drawn in one order, keeps a seeded run reproducible).

Why heartbeat gossip alone is gone: every member in every digest is 67 B x N
per message; at 256 peers that was 206 KB/s a peer, and a start-up Join to
every seed cost 1.16 GB (docs/membership.md has today's figures).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence

from ring.messages import Digest, Member, MemberState
from ring.membership.records import FINAL, SOFT, merge_key

__all__ = [
    "HELLO_BACKOFF",
    "HELLO_DENSE",
    "HELLO_SEEDS",
    "JOIN_EVERY",
    "JOIN_EVERY_AFTER",
    "PUSH_RECORDS",
    "SYNC_MEMBERS",
    "Greetings",
    "Repairs",
    "Summary",
    "answer_pull",
    "answer_sync",
    "is_push",
    "join_due",
    "join_targets",
    "summary",
    "sync_every",
]

SYNC_MEMBERS = 32
"""Members per round of anti-entropy: a Sync every ceil(D / 32) rounds, so a
peer sends about 32 summary entries a round whatever N is. At 256 peers, 10%
loss: 4.0 KB/s a peer and a cold start converged in 15 s; at 16, 2.6 KB/s
and 21 s (bench_membership)."""
PUSH_RECORDS = 4
"""A digest of at most this many records that asks no reply is a push (our
verdicts of one round, a "you are suspect"): its news is piggybacked on."""
JOIN_EVERY = 2
"""Rounds between Join attempts until one is answered: an answer takes a round trip."""
JOIN_EVERY_AFTER = 8
"""Rounds between syncs with a seed not heard from once we are in (no more
Joins: each answer is the whole view, 13 MB of a 256-peer cold start's 23).
They bridge two groups of a rolling start that joined each other; a ping
instead, answered with a few records, left the cold start unconverged 8 s
longer."""
HELLO_SEEDS = 2
"""Seeds not heard from that a peer pings each round once it is in, with no
probe timer: the ack brings the seed's real record, the ping ours, so a seed
never heard from costs a ping, not a suspicion (``seed_grace`` still holds).
Without them the last records of a cold start came by anti-entropy, every
``ceil(D / SYNC_MEMBERS)`` rounds (8 at 256 peers), and one lost answer in
five (10% loss each way) cost a straggler 4 s: at 256 peers, 10% loss, the
last 1% of the pairs took 6 of the 15 s and 5.6 of the 16.7 MB; greeting 2
a round, 10 s and 12.0 MB. 1 a round was slower, 3 no faster and less
steady (bench_membership, docs/membership.md)."""
HELLO_DENSE, HELLO_BACKOFF = 4, 16
"""A seed not heard from is greeted in each of ``HELLO_DENSE`` rounds, then
after 2, 4, 8, then every ``HELLO_BACKOFF`` rounds: 13 times in the default
60 s of grace. A real DEALER queues what it sends to an address nobody
listens on (zmq delivers it on connect), so without a backoff a seed that
started last would find 240 pings from every peer waiting. No seed of a
256-peer cold start was greeted more than 4 times by one peer; doubling the
waits from the first greeting on, every peer had heard of every seed 1.1 s
later (bench_membership)."""

Summary = tuple[tuple[str, int, MemberState, int], ...]
"""A Sync's summary: ``(id, incarnation, state, heartbeat)`` of each member."""


def summary(members: Iterable[Member]) -> Summary:
    """What a :class:`~ring.messages.Sync` says of our digest's records."""
    return tuple((m.id, m.incarnation, m.state, m.heartbeat) for m in members)


def sync_every(entries: int) -> int:
    """Rounds until the next Sync after one of ``entries`` entries (:data:`SYNC_MEMBERS`)."""
    # Its period follows the digest's size, not N: at a cold start the
    # digests are short (placeholders are left out) and go every round, so
    # the seeds learn each other in a few rounds for little.
    return max(1, math.ceil(entries / SYNC_MEMBERS))


def answer_sync(ours: Iterable[Member], theirs: Summary) -> tuple[Member, ...]:
    """The records of ``ours`` (our digest) that beat the asker's ``theirs``."""
    keys = {e[0]: (e[1], FINAL[e[2]], SOFT[e[2]], e[3]) for e in theirs}
    news: list[Member] = []
    beats: list[Member] = []
    for m in ours:
        k = keys.get(m.id)
        key = merge_key(m)
        if k is None or key[:3] > k[:3]:
            news.append(m)  # a member, incarnation or state the asker lacks
        elif key > k:
            beats.append(m)  # the same member, state and incarnation, a newer heartbeat
    # An asker that lacks members gets those alone: the heartbeats and
    # counters (termination, max_pages) come with its next sync, by then
    # one with nothing else to say. At a 256-peer cold start with 10%
    # loss, 131 k of the answers' 200 k records were heartbeats only:
    # 6.7 of 21.6 MB (bench_membership).
    return tuple(news) if news else tuple(beats)


def answer_pull(ours: Iterable[Member], theirs: Iterable[Member]) -> tuple[Member, ...]:
    """Push-pull: the records of ``ours`` (merged with ``theirs`` already) that differ from the asker's."""
    # After the merge every record of ours that differs from its copy is
    # newer. At a 256-peer cold start the full answer was 40% of the bytes.
    copies = {r.id: r for r in theirs}
    return tuple(m for m in ours if copies.get(m.id) != m)


def is_push(msg: Digest, sync_partner: str) -> bool:
    """Whether a digest's news is to be piggybacked on (a push), not a view that spreads itself."""
    # A full view (a Join's answer, anti-entropy) spreads itself: its news
    # is not queued, or a cold start of N peers queued N records at each,
    # each for lambda log N sends (at 256 peers, half the start-up bytes).
    # A short one (a verdict pushed, a "you are suspect") is news.
    # (A Sync's answer can be short too: it is the answer, not news.)
    return not msg.want_reply and len(msg.members) <= PUSH_RECORDS and msg.sender != sync_partner


def join_due(ticks: int, contacted: bool) -> bool:
    """Whether round ``ticks`` joins (or, once in, syncs with) seeds not heard from."""
    every = JOIN_EVERY if not contacted else JOIN_EVERY_AFTER
    return ticks % every == 1 % every


def join_targets(unheard: Sequence[str], contacted: bool, join_seeds: int,
                 rng: random.Random) -> list[str]:
    """The seeds not heard from (sorted, live) to send a Join to, or, once in, the one to sync with."""
    if not unheard:
        return []
    if contacted:
        # In already: a Sync, whose answer is only what we lack (a Join's
        # is the whole view: 13 MB of a 256-peer cold start's 23 went so).
        return [rng.choice(unheard)]
    return rng.sample(unheard, min(join_seeds, len(unheard)))


class Greetings:
    """Seed not heard from -> (round of its next greeting, greetings so far) (mutable).

    Only the seeds the caller names as unheard are read, so a seed heard from
    keeps its entry, unread: at most one per seed.
    """

    __slots__ = ("_next",)

    def __init__(self) -> None:
        self._next: dict[str, tuple[int, int]] = {}

    def pick(self, unheard: Iterable[str], members: Mapping[str, Member], ticks: int,
             rng: random.Random) -> list[str]:
        """The :data:`HELLO_SEEDS` seeds to greet in round ``ticks``, among those due and alive."""
        hello = self._next
        due = [sid for sid in unheard
               if members[sid].state is MemberState.ALIVE and hello.get(sid, (0, 0))[0] <= ticks]
        picked = rng.sample(due, min(HELLO_SEEDS, len(due)))
        for sid in picked:
            k = hello.get(sid, (0, 0))[1] + 1  # this greeting's number
            wait = 1 if k < HELLO_DENSE else min(2 ** (k - HELLO_DENSE + 1), HELLO_BACKOFF)
            hello[sid] = (ticks + wait, k)
        return picked


class Repairs:
    """When this peer joins, syncs and greets (module docstring) (mutable)."""

    __slots__ = ("contacted", "partner", "_start", "_seed_grace", "_join_seeds", "_greetings", "_next_sync")

    def __init__(self, now: float, *, seed_grace: float, join_seeds: int, contacted: bool) -> None:
        #: A member has answered us (a seed is answered from the start): we are in.
        self.contacted = contacted
        #: The member of our last Sync: its answer is a pull, not a push (:func:`is_push`).
        self.partner = ""
        self._start = now
        self._seed_grace = seed_grace
        self._join_seeds = join_seeds
        self._greetings = Greetings()
        self._next_sync = 0  # the round of the next Sync

    def grace_over(self, now: float) -> bool:
        """``seed_grace`` has run since our start: seeds not heard from are probed like anyone."""
        return now - self._start >= self._seed_grace

    def join_due(self, ticks: int) -> bool:
        """Whether round ``ticks`` joins (or, once in, syncs with) seeds not heard from."""
        return join_due(ticks, self.contacted)

    def joins(self, unheard: Sequence[str], rng: random.Random) -> list[str]:
        """Of the seeds not heard from (sorted, live), those to send our Join, or, once in, the
        one to sync with (:func:`join_targets`)."""
        return join_targets(unheard, self.contacted, self._join_seeds, rng)

    def greet(self, ticks: int, now: float, unheard: Iterable[str], members: Mapping[str, Member],
              rng: random.Random) -> list[str]:
        """The seeds not heard from to greet with an untimed ping this round: once in, within
        the grace (past it they are probed like anyone)."""
        if self.grace_over(now):
            return []
        return self._greetings.pick(sorted(unheard), members, ticks, rng)

    def sync_due(self, ticks: int) -> bool:
        """Whether round ``ticks`` sends a Sync (:func:`sync_every` rounds after the last)."""
        return ticks >= self._next_sync

    def synced(self, ticks: int, entries: int, partner: str) -> None:
        """A Sync of ``entries`` summary entries went to ``partner`` in round ``ticks``."""
        self._next_sync = ticks + sync_every(entries)
        self.partner = partner
