"""The node's side of the config epochs: records heard, taken, confirmed, made at an operator's word (pure).

``ring.membership.epochs`` has the rules of the ring's live settings (one
document, versioned by epochs, fenced by the lease); :class:`EpochWatch` is
the part of ``ring.node.RingNode`` that applies them for one peer, as
``ring.voterwatch`` does for the voters. It owns the record this peer runs,
whether it is confirmed (rule 5) and the conflicts already said, and turns
each into actions (``ring.actions``):

- a record taken (rule 2, or made: rule 4) is a ``SettingsChanged`` ahead
  of every other action of its call (rule 7: on disk, and applied to the
  crawl, before anything vouches for it), a log line naming the keys that
  changed, and the lease told (``Membership.set_config``: a new vouch, no
  grace, the quorum asked again at once);
- a ``SettingsRequest`` (``python -m ring set|pause|resume``) is answered
  with what was done (``SettingsOutcome``) and counted when refused
  (``settings_<outcome>``), and a new epoch is pushed to every live member;
- a starting peer whose cluster.toml differs from a running member's
  document at its epoch stops (``SettingsMismatch``) or takes it, as
  ``[ring] config_mismatch`` says (rule 6);
- at epoch 0 it keeps the fingerprint each member said (its cluster.toml,
  or the one it took) and settles which the ring runs (rule 8): while it
  has heard another than its own and does not run, it goes on asking a few
  members a round, so every peer comes to hear every voter.

Remote input is data: a record whose document does not match its
fingerprint, or does not fit, is dropped and counted (``bad_settings``).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence

from ring.actions import Action, Count, Log, Reply, Send, SettingsChanged, SettingsMismatch
from ring.crawlport import SettingsPort
from ring.membership.epochs import REFUSED, ConfigEpoch, Heard, Settled, compare, fits, record_of, settle_zero, split_doc
from ring.membership.protocol import Membership
from ring.membership.records import ChangeReason, LEFT, MemberEvent
from ring.messages import MemberState, Settings, SettingsOutcome, SettingsReply, SettingsRequest

__all__ = ["ASK_AT_ONCE", "EpochWatch"]

#: Members a peer not yet confirmed asks for their record each round (rule 5): a
#: few, in turn, so a ring's start costs O(N) messages a round, not O(N^2).
ASK_AT_ONCE = 3
#: Distinct epoch-0 documents kept for rule 8 (a ring has one file, or a few by
#: mistake); a member saying another past these is counted (``settings_docs_full``).
MAX_ZERO_DOCS = 16


class EpochWatch:
    """One peer's config epoch (module docstring). Times are the ring's clock (``now``)."""

    __slots__ = ("_peer_id", "_ring_name", "_membership", "_dropped", "_port", "record", "confirmed",
                 "_adopt_conflicts", "_held_since", "_said", "_asked", "_zero", "_docs", "_ran", "_stopped",
                 "_waits_said", "_first")

    def __init__(self, peer_id: str, ring_name: str, membership: Membership, dropped: Counter[str],
                 port: SettingsPort, record: ConfigEpoch, now: float, *, adopt_conflicts: bool = False) -> None:
        self._peer_id = peer_id
        self._ring_name = ring_name
        self._membership = membership
        self._dropped = dropped
        self._port = port
        #: The record this peer runs (rule 1): its cluster.toml's, or the last it took (its data_dir).
        self.record = record
        #: Rule 5: the document is the ring's, so requests may start under it.
        self.confirmed = False
        self._adopt_conflicts = adopt_conflicts
        self._held_since: float | None = None  # since when our lease is held, while not confirmed
        self._said: set[int] = set()  # fingerprints of conflicts already logged
        self._asked = 0  # rounds of asking while not confirmed
        #: Rule 8: member -> (the fingerprint it said at epoch 0, whether it said it runs).
        self._zero: dict[str, tuple[int, bool]] = {}
        self._docs: dict[int, ConfigEpoch] = {}  # fingerprint -> an epoch-0 record heard (rule 8)
        self._ran = False  # held our lease, confirmed, once in this process: never refuses since
        self._stopped = False  # refused (rule 6): the driver stops us; said once
        self._waits_said: set[frozenset[int]] = set()  # rule 8's waits already logged (by the files in it)
        self._first = record  # the record we started with: at epoch 0, our cluster.toml's (its words in logs)
        # Our vouch names our record, epoch 0 too (rule 3): the file's, or resumed from the data_dir.
        self._tell_lease(record)
        membership.set_config(record.ident(), now)

    # -- views -------------------------------------------------------------------

    @property
    def paused(self) -> bool:
        """Whether our document pauses the crawl."""
        return self._port.paused(self.record.doc)

    def running(self, now: float) -> bool:
        """Rule 2's "runs": confirmed, and our lease held (the real clock is ``now + stalled``)."""
        if not self.confirmed:
            return False
        m = self._membership
        state = m.lease_state(now + m.stalled)
        held = state is not None and state.held
        self._ran = self._ran or held
        return held

    def _tell_lease(self, record: ConfigEpoch) -> None:
        lease = self._membership.lease
        if lease is not None:
            lease.plain = record.epoch == 0  # an older peer's vouch counts at epoch 0 (rule 3)

    def message(self, now: float) -> Settings:
        """Our record as gossip carries it."""
        r = self.record
        return Settings(self._ring_name, self._peer_id, r.epoch, r.fingerprint, split_doc(r.doc),
                        self.running(now), self.confirmed)

    # -- gossip --------------------------------------------------------------------

    def heard(self, msg: Settings, now: float) -> list[Action]:
        """A member's record (rules 2, 5, 6): taken, answered, confirmed, or a conflict said.

        A sender that is not confirmed asks for our record: it is answered
        (once a message: only a confirmed peer's word confirms another, and it
        does not ask back, so two peers never answer each other forever)."""
        theirs = record_of(msg)
        if not fits(theirs.doc) or self._port.fingerprint(theirs.doc) != theirs.fingerprint:
            self._dropped["bad_settings"] += 1
            return [Count("bad_settings")]
        ours = self.record
        if theirs.epoch == 0:
            self._note_zero(msg.sender, theirs, msg.running)
        case = compare(theirs, ours)
        # A conflict is answered only by a confirmed peer, to one that is not, or by a running
        # peer to one that does not run: two that are not would answer each other forever.
        answer: list[Action] = ([Send(msg.sender, self.message(now))] if self.confirmed and (
            not msg.confirmed or (not msg.running and self.running(now))) else [])
        if case is Heard.SAME:
            self.confirmed = True
            return [Send(msg.sender, self.message(now))] if not msg.confirmed else []
        if case is Heard.BEHIND:
            return [Send(msg.sender, self.message(now))]
        if case is Heard.LATER:
            # Epochs only grow (rule 2); the sender's word confirms it only if its own is confirmed.
            return self._take(theirs, msg.sender, now, confirm=msg.confirmed)
        # A conflict: another document at our epoch.
        if self.running(now):
            self._dropped["settings_conflict"] += 1
            return [Count("settings_conflict"), *answer, *self._say_conflict(theirs, msg.sender)]
        if ours.epoch == 0:
            return answer + self._say_conflict(theirs, msg.sender) + self._settle(now)
        if not msg.confirmed or (self.confirmed and not msg.running):
            # Neither is the ring's for sure: wait for a member whose document is.
            return answer + self._say_conflict(theirs, msg.sender)
        if self.confirmed or self._adopt_conflicts:
            return self._take(theirs, msg.sender, now, confirm=True)
        keys = tuple(self._port.differing(ours.doc, theirs.doc))
        self._said.add(theirs.fingerprint)  # never confirmed by waiting now (rule 5): it stops
        return [SettingsMismatch(theirs, ours, msg.sender, keys)]

    def _say_conflict(self, theirs: ConfigEpoch, sender: str) -> list[Action]:
        if theirs.fingerprint in self._said:
            return []
        self._said.add(theirs.fingerprint)
        keys = ", ".join(self._port.differing(self.record.doc, theirs.doc)) or "none"
        return [Log(logging.WARNING, (
            f"settings: member {sender} runs another document at {self.record.describe()}: "
            f"{theirs.describe()}; keys that differ: {keys}"), "settings.conflict",
            (("member", sender), ("epoch", theirs.epoch), ("keys", keys)))]

    # -- epoch 0: which cluster.toml the ring runs (rule 8) ------------------------

    def _note_zero(self, sender: str, record: ConfigEpoch, running: bool) -> None:
        if record.fingerprint not in self._docs:
            if len(self._docs) >= MAX_ZERO_DOCS:
                held = {fp for fp, _ in self._zero.values()} | {self.record.fingerprint}
                self._docs = {fp: r for fp, r in self._docs.items() if fp in held}
            if len(self._docs) >= MAX_ZERO_DOCS:
                self._dropped["settings_docs_full"] += 1
                return
            self._docs[record.fingerprint] = record
        self._zero[sender] = (record.fingerprint, running)

    def _conflicted(self) -> bool:
        ours = self.record.fingerprint
        return self.record.epoch == 0 and any(fp != ours for fp, _ in self._zero.values())

    def verdict(self) -> Settled:
        """Rule 8 as this peer has heard it (for status and tests)."""
        held = {mid: fp for mid, (fp, _) in self._zero.items()}
        if self.record.epoch == 0:
            held[self._peer_id] = self.record.fingerprint
        runners = {fp for fp, running in self._zero.values() if running}
        # One member that says it runs names the ring's (rule 3); two that disagree
        # (an older peer's vouch counts for any file) name nothing: the tally decides.
        return settle_zero(held, self._membership.quorums(), runners.pop() if len(runners) == 1 else None)

    def _settle(self, now: float) -> list[Action]:
        """Rule 8 for a peer at epoch 0 that does not run: take the ring's file, stop, or wait."""
        if self._stopped or self.record.epoch != 0 or self.running(now):
            return []
        verdict = self.verdict()
        ours = self.record
        if verdict.fingerprint is None:
            return []  # a voter not heard yet could make a majority; the conflict itself was said
        if verdict.fingerprint == ours.fingerprint:
            # Ours: the others take it ("adopt"), or, with no majority, none will ("refuse").
            if verdict.majority or self._adopt_conflicts:
                return []
            return self._say_wait(verdict, 'config_mismatch = "refuse" takes no file a majority does not hold')
        winner = self._docs.get(verdict.fingerprint)
        if winner is None:
            return []
        source = min(mid for mid, (fp, _) in self._zero.items() if fp == winner.fingerprint)
        if self._ran or self._adopt_conflicts:
            return self._take(winner, source, now, confirm=True)
        if not verdict.majority:
            return self._say_wait(verdict, 'config_mismatch = "refuse" takes no file a majority does not hold')
        self._stopped = True
        self.confirmed = False
        keys = tuple(self._port.differing(ours.doc, winner.doc))
        return [SettingsMismatch(winner, ours, source, keys)]

    def _say_wait(self, verdict: Settled, why: str) -> list[Action]:
        files = frozenset(fp for fp, _ in verdict.counts)
        if files in self._waits_said:
            return []
        self._waits_said.add(files)
        said = "; ".join(f"{fp:016x}: {n} voter{'s' if n != 1 else ''}" for fp, n in verdict.counts)
        return [Log(logging.WARNING, (
            f"settings: the voters' cluster.toml files differ at epoch 0 ({said}) and none has a majority: "
            f"no request starts until one has ({why})"), "settings.split", (("files", said),))]

    def _take(self, record: ConfigEpoch, source: str, now: float, *, confirm: bool,
              push: bool = False) -> list[Action]:
        """Make ``record`` ours: durable and applied first (rule 7), then the lease told."""
        before = self.record
        starting = not self.confirmed
        self.record = record
        self.confirmed = self.confirmed or confirm
        self._held_since = None
        keys = tuple(self._port.differing(before.doc, record.doc))
        what = "this peer's cluster.toml" if before is self._first and before.epoch == 0 else before.describe()
        out: list[Action] = [SettingsChanged(record, before, keys), Log(
            logging.WARNING if starting else logging.INFO,
            (f"settings: now {record.describe()} from {source}"
             f"{' (paused)' if self._port.paused(record.doc) else ''}; keys that differ from "
             f"{what}: {', '.join(keys) or 'none'}"),
            "settings.epoch", (("epoch", record.epoch), ("source", source), ("keys", ", ".join(keys))))]
        if push:
            # Made here (rule 4): to every live member, ahead of the renewal pings below, so
            # each takes the epoch before it answers them (one connection keeps its order).
            msg = self.message(now)
            out += [Send(dest, msg) for dest in self._live_others()]
        self._tell_lease(record)
        out += [Send(dest, msg) for dest, msg in self._membership.set_config(record.ident(), now)]
        return out

    def saw(self, events: Sequence[MemberEvent], now: float) -> list[Action]:
        """A member that joined, restarted or refuted may run an older record: tell it ours."""
        return [Send(e.id, self.message(now)) for e in events
                if e.id != self._peer_id and e.state is MemberState.ALIVE
                and e.reason in (ChangeReason.JOINED, ChangeReason.RESTARTED, ChangeReason.REFUTED)]

    def tick(self, now: float) -> list[Action]:
        """While not confirmed (rule 5): ask a few live members for their record each round; and
        confirm alone in the ring, or after a whole lease held with no member's word."""
        if self.confirmed:
            # Rule 8: a file that differs is settled by every voter's word; until we run,
            # we go on telling a few members ours (and hearing theirs in answer).
            if not self._conflicted() or self.running(now):
                return []
            return self._ask(now) + self._settle(now)
        m = self._membership
        others = self._live_others()
        out: list[Action] = self._ask(now) + (self._settle(now) if self._conflicted() else [])
        if self._stopped:
            return out
        real = now + m.stalled
        state = m.lease_state(real)
        if state is None or not state.held:
            self._held_since = None
            return out
        if self._held_since is None:
            self._held_since = real
        lease = m.lease
        if others and (lease is None or real - self._held_since < lease.lease or self._said):
            return out
        self.confirmed = True
        if not others:
            return out
        return out + [Log(logging.INFO, (f"settings: no member said its settings within a lease; running "
                                         f"{self.record.describe()} (members of an older build say none)"))]

    def _ask(self, now: float) -> list[Action]:
        """A few live members, in turn, sent our record: they answer with theirs (rules 5, 8)."""
        others = self._live_others()
        if not others or self._stopped:
            return []
        self._asked += 1
        start = self._asked * ASK_AT_ONCE
        picked = {others[(start + i) % len(others)] for i in range(min(ASK_AT_ONCE, len(others)))}
        msg = self.message(now)
        return [Send(dest, msg) for dest in sorted(picked)]

    # -- an operator's change (rule 4) ------------------------------------------

    def request(self, route: bytes, msg: SettingsRequest, now: float, *, leaving: bool) -> list[Action]:
        """``python -m ring set|pause|resume``: the next epoch made here, or refused; answered and counted."""
        outcome, detail, made = self._change(msg, now, leaving)
        record = self.record
        out: list[Action] = []
        if made is not None:
            out += self._take(made, f"{msg.sender} ({msg.action.value})", now, confirm=True, push=True)
        out.append(Reply(route, SettingsReply(self._ring_name, self._peer_id, outcome, self.record.epoch,
                                              detail, msg.nonce)))
        if outcome in REFUSED:
            self._dropped[f"settings_{outcome.value}"] += 1
            out += [Count(f"settings_{outcome.value}"), Log(logging.WARNING, (
                f"settings {msg.action.value} {' '.join(msg.assignments)} requested by {msg.sender} refused: "
                f"{outcome.value}{': ' + detail if detail else ''} (ours: {record.describe()}, the "
                f"request's base: epoch {msg.base})"))]
        return out

    def _change(self, msg: SettingsRequest, now: float,
                leaving: bool) -> tuple[SettingsOutcome, str, ConfigEpoch | None]:
        m = self._membership
        record = self.record
        if leaving or m.me.state is LEFT:
            return SettingsOutcome.LEAVING, "", None
        if msg.base != record.epoch:
            return SettingsOutcome.STALE, "", None
        if not self.running(now):
            return SettingsOutcome.NO_LEASE, "", None
        if min(m.live()) != self._peer_id:
            # One writer at a time (rule 4), as for the voters.
            return SettingsOutcome.NOT_STEWARD, "", None
        try:
            doc = self._port.assign(record.doc, msg.action, msg.assignments)
        except ValueError as e:
            return SettingsOutcome.INVALID, str(e)[:1000], None
        if not fits(doc):
            return SettingsOutcome.INVALID, "the settings document would not fit a message", None
        fp = self._port.fingerprint(doc)
        if fp == record.fingerprint:
            return SettingsOutcome.ALREADY, "", None
        return SettingsOutcome.CHANGED, "", ConfigEpoch(record.epoch + 1, fp, doc)

    def _live_others(self) -> list[str]:
        return sorted(mid for mid in self._membership.live() if mid != self._peer_id)
