"""SWIM's failure detector: probes, indirect probes and suspicion timers (pure).

Das, Gupta, Motivala, "SWIM: scalable weakly-consistent infection-style
process group membership protocol" (DSN 2002). ``Membership`` owns the view
and sends the messages; the two timekeepers here say whom to probe and when
a probe or a suspicion has run out, and keep nothing else.

:class:`Prober`, each round:

- probes two members with a :class:`~ring.messages.Ping`: its successor in
  the sorted ids of the live members (so every member is probed every round
  by someone, whatever the peers' clocks, which bounds the time to a first
  failed probe by one round) and the next one of a shuffled round-robin list
  (SWIM 4.3: every member within N-1 rounds, and the random contacts that
  spread the piggybacked news);
- no :class:`~ring.messages.PingAck` within a round: the ping is sent again
  and ``indirect`` others are asked to probe the member
  (:class:`~ring.messages.PingReq`, SWIM 3.1), and again at half of
  ``suspect_after``; no answer either way ``suspect_after`` after the ping:
  :data:`ProbeStep.SUSPECT`;
- relays at most :data:`MAX_RELAYS` ping-reqs of others at a time;
- waits longer when this peer is itself in trouble: Lifeguard's local
  health multiplier (Dadgar et al. 2018, "local health awareness"). Each
  suspicion of us that we had to refute adds one (up to
  :data:`MAX_HEALTH`): others found us slow, so our own view of who is
  slow is suspect too; each probe of ours answered in time takes one away;
  every probe wait is ``(1 + health)`` times longer. A peer on a starved
  machine thus stops suspecting others once the others have suspected it,
  instead of declaring the ring dead around it. A probe that fails does
  not add (Lifeguard's signal for that is a missing nack, which SWIM's
  ping-req here does not send): a real crash is still found within
  ``dead_after`` by a healthy peer.

:class:`Suspicions`: our own suspicion not refuted ``dead_after`` after the
ping: dead, and the verdict is pushed to every live member at once (as a
leave is), so a death is everywhere about one latency later. Until then the
suspect is told every round, so that it refutes. A suspicion we only *heard*
of (not ours) turns dead by our own timer only ``dead_after +
gossip_interval * ceil(log2 N)`` after we heard it: the suspector's verdict
normally comes first; this backup covers a suspector that died too, and
grows with log N because the refutation it waits for spreads in O(log N)
rounds (Lifeguard's scaling, Dadgar et al., "Lifeguard: local health
awareness for more accurate failure detection", 2018). The probe's own wait
does not grow with N: a probe is one hop (three for an indirect one), not an
epidemic.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_right
from collections.abc import Iterator, Mapping
from enum import Enum

from ring.messages import Member
from ring.membership.records import ALIVE, LIVE, SUSPECT

__all__ = ["MAX_HEALTH", "MAX_RELAYS", "Probe", "ProbeStep", "Prober", "SuspicionStep", "Suspicions"]

MAX_HEALTH = 8
"""Lifeguard's S: at most 9 x suspect_after before a suspicion."""
MAX_RELAYS = 64
"""Ping-reqs relayed at once; each costs a dict entry until its ack or suspect_after."""
_EPS = 1e-9  # timers compare sums of floats


class Probe:
    """One probe in flight: whom, since when, and how far it has gone (mutable)."""

    __slots__ = ("target", "sent", "stage")

    def __init__(self, target: str, sent: float) -> None:
        self.target = target
        self.sent = sent
        self.stage = 0  # 0 pinged, 1 pinged again and asked others, 2 pinged a third time


class ProbeStep(Enum):
    """What a probe's timer asks of ``Membership``."""

    RETRY = "retry"  # ping again with the same seq, and ask ``indirect`` others
    SUSPECT = "suspect"  # unanswered suspect_after after the ping: probe_timeout


class SuspicionStep(Enum):
    """What a suspicion's timer asks of ``Membership``."""

    TELL = "tell"  # ping the suspect with its record, so it refutes
    DEAD = "dead"  # not refuted in time: dead_timer


class Prober:
    """The probes in flight, the ping-reqs we relay, and the probe order (mutable)."""

    __slots__ = ("_interval", "_suspect_after", "_probes", "_relays", "_seq", "_rr", "health")

    def __init__(self, gossip_interval: float, suspect_after: float) -> None:
        self._interval = gossip_interval
        self._suspect_after = suspect_after
        self._probes: dict[int, Probe] = {}
        # our seq -> (asker, asker's seq, target, at)
        self._relays: dict[int, tuple[str, int, str, float]] = {}
        self._seq = 0
        self._rr: list[str] = []
        #: Lifeguard's local health multiplier (module docstring), 0..MAX_HEALTH.
        self.health = 0

    def worse(self) -> None:
        """A sign of our own trouble: we had to refute a suspicion of us."""
        self.health = min(MAX_HEALTH, self.health + 1)

    def better(self) -> None:
        """A probe of ours was answered in time."""
        self.health = max(0, self.health - 1)

    def next_seq(self) -> int:
        """A new sequence number for a ping or ping-req of ours."""
        self._seq += 1
        return self._seq

    def start(self, target: str, now: float) -> int:
        """A timed probe of ``target`` begins now; its seq."""
        seq = self.next_seq()
        self._probes[seq] = Probe(target, now)
        return seq

    def targets(self, candidates: list[str], self_id: str, members: Mapping[str, Member],
                rng: random.Random) -> list[str]:
        """This round's probe targets among ``candidates`` (sorted): successor, then round-robin."""
        if not candidates:
            return []
        probing = {p.target for p in self._probes.values()}
        # Successor: the first id after ours, wrapping (every member has one prober a round).
        i = bisect_right(candidates, self_id)
        succ = candidates[i % len(candidates)]
        targets = [] if succ in probing else [succ]
        for _ in range(2):
            while self._rr:
                t = self._rr.pop()
                m = members.get(t)
                if m is not None and m.state in LIVE and t != succ and t not in probing:
                    targets.append(t)
                    return targets
            if len(candidates) <= 1:
                break
            self._rr = [c for c in candidates if c != succ]
            rng.shuffle(self._rr)
        return targets

    def due(self, now: float, members: Mapping[str, Member]) -> Iterator[tuple[int, Member, ProbeStep]]:
        """The probes whose timer has run, one at a time: ``(seq, member, step)``.

        A generator, read as ``Membership`` acts: each step sees the view as
        the steps before it left it.
        """
        scale = 1 + self.health
        suspect_after = self._suspect_after * scale
        for seq, probe in list(self._probes.items()):
            m = members.get(probe.target)
            if m is None or m.state not in LIVE:
                del self._probes[seq]
                continue
            age = now - probe.sent
            if age >= suspect_after - _EPS:
                del self._probes[seq]
                if m.state is ALIVE:
                    yield seq, m, ProbeStep.SUSPECT
            elif probe.stage == 0 and age >= self._interval * scale / 2:
                # Unanswered for a round: ping again (same seq) and ask
                # ``indirect`` others (SWIM 3.1); at half of suspect_after, ping
                # and ask once more. At 10% loss one ping and one ask fail 0.8%
                # of probes (19% x 0.34^3); three pings and two asks, 0.001%
                # (0.19^3 x 0.34^6). With one ask, a 256-peer cold start
                # suspected 0-7 running peers, and their refutations held up
                # convergence by up to 3 s; with two, none in eight starts.
                probe.stage = 1
                yield seq, m, ProbeStep.RETRY
            elif probe.stage == 1 and age >= suspect_after / 2:
                probe.stage = 2
                yield seq, m, ProbeStep.RETRY

    def relay(self, asker: str, asker_seq: int, target: str, now: float) -> int | None:
        """Our seq for probing ``target`` on ``asker``'s behalf; None when :data:`MAX_RELAYS` are out."""
        if len(self._relays) >= MAX_RELAYS:
            return None
        seq = self.next_seq()
        self._relays[seq] = (asker, asker_seq, target, now)
        return seq

    def acked(self, seq: int, target: str, sender: str) -> tuple[str, int] | None:
        """An ack for ``seq``: ends our probe, or names the ``(asker, asker's seq)`` to pass it to."""
        probe = self._probes.get(seq)
        if probe is not None and probe.target == target:
            del self._probes[seq]
            self.better()
            return None
        relay = self._relays.get(seq)
        if relay is not None and relay[2] == target == sender:
            del self._relays[seq]
            return relay[0], relay[1]
        return None  # late: the probe has timed out, or a reconnect ping's answer

    def expire_relays(self, now: float) -> None:
        """Forget relays unanswered for ``suspect_after``: the asker has given up by then."""
        for seq, (_, _, _, at) in list(self._relays.items()):
            if now - at >= self._suspect_after * (1 + self.health):
                del self._relays[seq]


class Suspicions:
    """Member id -> (local time its suspicion began here, whether it is ours) (mutable)."""

    __slots__ = ("_interval", "_suspect_after", "_dead_after", "_since")

    def __init__(self, gossip_interval: float, suspect_after: float, dead_after: float) -> None:
        self._interval = gossip_interval
        self._suspect_after = suspect_after
        self._dead_after = dead_after
        self._since: dict[str, tuple[float, bool]] = {}

    def note(self, m: Member, now: float, ours: bool) -> None:
        """``m`` entered the view: start its timer if it is a new suspicion (or ours), else stop it."""
        if m.state is SUSPECT:
            if m.id not in self._since or ours:
                self._since[m.id] = (now, ours)
        else:
            self._since.pop(m.id, None)

    def due(self, now: float, members: Mapping[str, Member]) -> Iterator[tuple[Member, SuspicionStep]]:
        """The suspects to declare dead or to tell, one at a time (a generator, as :meth:`Prober.due`)."""
        if not self._since:
            return
        # The suspector's clock started at suspect_after past the ping; the
        # backup is longer by log N rounds (module docstring).
        ours_wait = self._dead_after - self._suspect_after
        backup = self._dead_after + self._interval * math.ceil(math.log2(max(2, len(members))))
        for mid, (since, ours) in list(self._since.items()):
            m = members.get(mid)
            if m is None or m.state is not SUSPECT:
                self._since.pop(mid, None)
                continue
            if now - since >= (ours_wait if ours else backup) - _EPS:
                yield m, SuspicionStep.DEAD
            elif ours:
                # Tell it every round: one lost message must not cost a member its hosts.
                yield m, SuspicionStep.TELL
