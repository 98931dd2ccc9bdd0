"""One member of the ring, without I/O: membership, forwarding, termination, hand-off (pure core).

``RingNode`` composes the ring's cores (``Membership``, the forwarder's
``Outbox``, ``ring.forwarding.inbox``'s ``Inbox``) and its parts, each owning its state
(``ring.handoff``, ``ring.forwarding.routes``, ``ring.membership.budget``), and owns every
decision a running peer makes about ring traffic. It does no I/O and
reads no clock: :meth:`RingNode.receive` and :meth:`RingNode.tick` take a
message or the time and return *actions* (``ring.actions``), frozen
dataclasses carried out in order, as h11's ``Connection`` returns events: in
a peer, ``peer.core.door.peer.PeerCore`` does the crawl's part itself and its
engine the rest; a bare node runs under ``ring.io.driver.RingDriver``::

    Send(dest, msg)          a message to member ``dest`` (over its DEALER)
    Reply(route, msg)        an answer on the ROUTER to a tool's route
    Deliver(urls, seen, sender)  a batch taken: frontier URLs, seen URLs; durable before the ack
    Rerouted(urls, seen)     ours, back from a member now gone: the crawl places them again
    RingChanged(ring, old)   the live member set moved: the crawl re-routes
    HandOff(old, ring, ...)  collect the moved hosts' seen URLs and starts
    Released(sender)         its HandoffDone came: its hosts may be fetched
    Granted(grants)          our max_pages grants grew (ring.membership.budget): durable before what follows
    VotersChanged(record)    our voter record changed (ring.membership.voters): durable before what follows
    SettingsChanged(record, ...)  our config epoch changed (ring.membership.epochs): durable and applied first
    SettingsMismatch(...)    a starting peer's cluster.toml differs from the ring's: it stops (rule 11)
    SeedStarts(starts)       a previous owner's last request starts
    LeaveAsked(sender)       ``ring leave`` asked this peer to leave
    RestartAsked(sender)     ``ring restart`` asked this peer to stop for a planned restart
    Reply(route, ForgetReply)  ``ring forget``: what this peer did (rule 8, ``ring.forgetting``)
    Reply(route, VoterReply)   ``ring voter``: what this peer did (rule 10, ``ring.voterwatch``)
    Reply(route, SettingsReply)  ``ring set|pause|resume``: what this peer did (rule 11, ``ring.epochwatch``)
    StatusAsked(route, ...)  ``ring status`` asked; the driver adds figures
    NearAsked(msg)           a member's band query (``peer.core.dedupe.verdicts``): the crawl answers
    NearAnswered(msg)        a band owner's answer about one of our pages
    Reverdicted(msg)         a member's correction: one of our pages is a copy of a better one
    SeedsAsked(route, msg)   ``ring seed add``'s batch (rule 12): the crawl judges it, then ``seeds_taken``
    Reply(route, SeedAddReply)  ``ring seed add``: what this peer did with a batch (``ring.seedadds``)
    StateTaken(records, sender)  hosts' state to import (``ring.statebox``): before the ack that follows
    Count(reason)            a message refused (already counted in dropped)
    Log(level, text)         what an operator should read in the log

Rules of :meth:`RingNode.receive` (every check lives here, once):

1. **Ring.** A message of another ring is dropped (``other_ring``), after
   the route check for a member's kinds of message.
2. **Route.** A member's message (gossip, batches, acks, hand-off) must come
   on that member's route (``ring.io.zmqio.member_route``), and with CurveZMQ
   on a connection whose ZAP User-Id is that member (``route_spoof``,
   ``wrong_user``). Tools use anonymous routes and send only their kinds:
   status, leave, forget, voter and seed-add requests, and ``adopt:`` URL batches.
3. **Senders.** A URL batch from a sender that is not a live member, or a
   hand-off message from one we never heard of, is dropped
   (``unknown_sender``): the forwarder's termination sums cover members
   only. A batch whose epoch is later than the sender's incarnation is
   forged or early (``future_epoch``): incarnations only grow, so taking it
   would close the sender's real channel.
4. **Restarts.** A member heard on a new route with a later incarnation
   (or batch epoch) than before is a new process of it (each process draws
   a fresh route nonce); a late message of its old life changes nothing. The forwarder's restart duties are
   done there (``ring.forwarding.forwarder`` module docstring): ``Inbox.forget(peer,
   before=epoch)`` closes the channel of its old life, and, since no peer
   restores its Inbox from disk, ``Outbox.forget(peer)`` restarts our count
   to it. Counted as ``peer_restarts``.
5. **Batches.** The Inbox's verdict decides: accepted entries are delivered
   and committed before the ack (a crash must not lose what was acked), a
   replay is acked again and counted, a stale epoch is dropped and counted.
   The ack is owed, not sent (``Outbox.owe_ack``): it leaves with the next
   frame to that member from :meth:`RingNode.flush`, at most the batch age
   later, which the driver runs only after the ``Deliver`` before it. A
   :class:`~ring.messages.Packet` is its acks (taken first) and its batches,
   each judged as a ``UrlBatch`` alone would be.
   An ``adopt:`` batch is not a member's: it bypasses the Inbox (it is in no
   termination sum: the URLs it brings make this peer busy, which is what
   termination must see) and is acked on the route it came by.
6. **Hand-off.** A ``HandoffDone`` counts only for the ring it names: one for
   another view of the ring is dropped (``handoff_other_ring_view``) and
   comes again for ours; one from a later incarnation of its sender than we
   hold (a restart or a refutation whose return we have not seen yet) is
   kept until our ring is the one it names (``ring.handoff`` rule 7,
   counted ``handoff_early``).
7. **Leaving.** From :meth:`RingNode.leave` on, a member's URL batch is not
   taken and not acked (``leaving``): the leaver exits once its own
   hand-off is acked and ``peer.engine.crawler`` has lingered a few gossip rounds,
   so URLs taken later could be acked to their sender and still be in the
   leaver's Outbox when it ends. Unacked, they stay the sender's, which
   re-routes them to their next owner when its ring drops the leaver
   (``Outbox.reroute``: a left destination's unacked batches leave its
   termination sums too). Acks are still taken, in a ``Packet`` as alone.
8. **Forgetting.** A ``ForgetRequest`` (``python -m ring forget``) drops a
   member from our view and our quorum only when our view holds it dead or
   left, and the reply and the log say what was done (``ring.forgetting``).
9. **Band queries.** A ``NearQuery``, ``NearAnswer`` or ``Reverdict`` is a member's
   message (rules 1 and 2) from a member not dead here (``unknown_sender``
   otherwise), on the route that member's newest process was heard on in
   its gossip (``Routes.live``; ``near_not_live_route`` otherwise): the band
   tables answer members only, and an answer from anyone else could only
   mislead. Such a message says no epoch, so it cannot make a route live:
   without CurveZMQ a route of anyone's claiming a member's id is refused. What it says is checked by the crawl
   (``peer.core.dedupe.verdicts``), which counts what it refuses.
10. **Voters.** A ``VoterRequest`` (``python -m ring voter add|retire``) and
   each change of our voter record are ``ring.voterwatch``'s: answered,
   counted, made durable first (``VotersChanged``), logged, and a ring left
   surviving no failure warned once. A member's ``Voters`` record is gossip
   (rules 1 and 2).
11. **Settings.** A ``SettingsRequest`` (``python -m ring set|pause|resume``)
   and each change of our config epoch are ``ring.epochwatch``'s: answered,
   counted, made durable and applied first (``SettingsChanged``), logged with
   the keys that changed. A member's ``Settings`` record is gossip (rules 1
   and 2), sent with each anti-entropy ``Sync``, with the answer to a
   ``Join`` and to a member that joined or restarted. Until our document is
   confirmed as the ring's (``ring.membership.epochs`` rule 5),
   :meth:`RingNode.may_fetch` is False.

12. **Seed batches.** A ``SeedAddRequest`` (``python -m ring seed add``)
   is a tool's (an anonymous route): one whose nonce was taken before is
   answered as it was, nothing taken twice; a leaving member answers
   ``LEAVING`` and one whose waiting batches are full ``BUSY``, taking
   nothing (the cap's hit counted ``cap.seed_add_waiting``); a new one is
   ``SeedsAsked`` of the crawl, which judges and routes its lines, commits, and gives the counts to :meth:`RingNode.seeds_taken`;
   the answer waits for the owners' acks (``ring.seedadds``), checked after
   each frame received (acks come in frames, and gossip every round). Refusals count as ``seed_add_batch.<status>``.

13. **Hosts' state.** A ``HostState`` is a member's message (rules 1 and 2)
   from a member not dead here (``unknown_sender`` otherwise), refused
   while leaving (``leaving``: not acked, its sender re-routes it when the
   ring drops us). Otherwise it is ``StateTaken``, for the crawl to import,
   then its ``HostStateAck`` at once: state is rare and small next to URL
   batches, so its ack rides on nothing. A replay is taken and acked
   again (imports keep the newer record). A ``HostStateAck`` retires the
   message in the state box (``ring.statebox``) and may let a hand-off go on.
   The adopt tool's (``adopt:<id>``: a dead peer's state, read from its
   data_dir) is taken like its URL batches (rule 5): no member check,
   acked on the route it came by.

14. **Operator holds.** A ``HoldRequest`` (``python -m ring restart`` of a
   member that cannot announce its own restart) is a tool's (an anonymous
   route; with CurveZMQ, a key the ring admits): ``Membership.operator_hold``
   decides (``ring.membership.restarts`` rule 7), the reply says what it did,
   and it is counted as ``hold_request.<outcome>``. ``ring status`` shows a
   held member ``restarting``, with its hold's end.

Hand-off (Boldi et al., UbiCrawler §3: consistent hashing moves only the
hosts whose owner changed). A change of the live set gives ``RingChanged``
(the crawl moves its queued URLs of lost hosts) and re-routes the Outbox;
then ``HandOff`` (at the first ring too, from a ring of ourselves alone:
``ring.handoff`` rule 6): the driver collects the moved hosts'
fetched URLs (queued as ``seen`` in the Outbox) and their last request
starts, then calls :meth:`RingNode.begin_handoff`. Each new owner then gets
``HostStarts`` and ``HandoffDone`` once the Outbox says it acked every batch
up to the barrier (:meth:`Outbox.barrier`); one gone meanwhile, or silent
for ``HANDOFF_TIMEOUT``, is given up and counted. The ``HandoffDone`` is
repeated on the next ``MARKER_ROUNDS - 1`` ticks unless the ring moved
again (a newer hand-off has its own markers). ``ring.handoff``'s docstring
has the rules: channels across deaths and refutations, how each hand-off
ends and is counted, their order, and the markers after a refutation.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ring.actions import (
    Action,
    Count,
    StateTaken,
    Deliver,
    Granted,
    HandOff,
    LeaveAsked,
    Log,
    NearAnswered,
    Reverdicted,
    NearAsked,
    Released,
    Rerouted,
    Reply,
    RestartAsked,
    RingChanged,
    SeedStarts,
    SeedsAsked,
    Send,
    SettingsChanged,
    SettingsMismatch,
    StatusAsked,
    VotersChanged,
)
from ring.crawlport import PlainSettings, SettingsPort
from ring.epochwatch import EpochWatch
from ring.membership.epochs import ConfigEpoch
from ring.membership.budget import PageBudget, add_grants
from ring.forwarding.forwarder import BATCH_AGE, MAX_BATCH_AGE, MESSAGE_BUDGET, SEND_WINDOW, Outbox
from ring.handoff import HANDOFF_TIMEOUT, MARKER_ROUNDS, HandOffs
from ring.hashring import HashRing
from ring.forwarding.inbox import Inbox, Verdict
from ring.forwarding.intake import adopted
from ring.membership.hostgate import HostGate
from ring.membership.lease import LeaseState, Pauses
from ring.membership.protocol import Membership
from ring.messages import (
    Ack,
    Digest,
    ForgetRequest,
    HandoffDone,
    HostStarts,
    HostState,
    HostStateAck,
    Join,
    Leave,
    LeaveRequest,
    MemberState,
    Message,
    NearAnswer,
    Reverdict,
    NearQuery,
    Packet,
    Ping,
    PingAck,
    PingReq,
    RestartRequest,
    HoldOutcome,
    HoldReply,
    HoldRequest,
    SeedAddRequest,
    SeedAddStatus,
    StatusReply,
    StatusRequest,
    Settings,
    SettingsRequest,
    Sync,
    UrlBatch,
    VoterRequest,
    Voters,
    speaks,
)
from ring.membership.voters import VoterRecord
from ring.statebox import StateBox, StateRecords
from ring.forgetting import answer_forget
from ring.forwarding.routes import Routes, claimed_epoch
from ring.seedadds import MAX_ANSWERED, MAX_WAITING, WAITING_CAP, SeedAdds
from ring.status import StatusFigures, forwarding_rows, own_row, status_reply, capped_counts
from ring.vocabulary import on_wire
from ring.voterwatch import VoterWatch
from ring.wireversion import WireVersions, said_to

__all__ = [
    "HANDOFF_TIMEOUT",
    "MARKER_ROUNDS",
    "Action",
    "Count",
    "Deliver",
    "Granted",
    "HandOff",
    "LeaveAsked",
    "Log",
    "NearAnswered",
    "NearAsked",
    "Reverdicted",
    "Released",
    "Rerouted",
    "Reply",
    "RestartAsked",
    "RingChanged",
    "RingNode",
    "SeedStarts",
    "SeedsAsked",
    "Send",
    "SettingsChanged",
    "SettingsMismatch",
    "StateTaken",
    "StatusAsked",
    "StatusFigures",
    "VotersChanged",
]

_MEMBER_MESSAGES = (Digest, Join, Leave, UrlBatch, Ack, HandoffDone, HostStarts, Ping, PingReq,
                    PingAck, Sync, Packet, NearQuery, NearAnswer, Reverdict, Voters, Settings, HostState, HostStateAck)


class RingNode:
    """One member's ring logic; the driver feeds it messages and ticks (module docstring).

    Composed of parts that own their state: ``membership`` (``ring.membership.protocol``),
    ``outbox`` and ``inbox`` (``ring.forwarding.forwarder``, ``ring.forwarding.inbox``), ``handoff``
    (``ring.handoff``: ring changes and hand-offs), ``routes`` (``ring.forwarding.routes``:
    rules 2 and 4), ``budget`` (``ring.membership.budget``), ``voter_watch``
    (``ring.voterwatch``: rule 10) and ``wire`` (``ring.wireversion``: what each member
    speaks, :meth:`speaks`); the rules of ``receive``
    and ``tick`` that join them live here.
    """

    def __init__(
        self,
        peer_id: str,
        address: str,
        weight: float,
        ring_name: str,
        *,
        seeds: Sequence[tuple[str, str, float]],
        gossip_interval: float,
        suspect_after: float,
        dead_after: float,
        now: float,
        incarnation: int,
        vnodes: int = 256,
        tombstone_ttl: float = 3600.0,
        seed_grace: float = 60.0,
        join_seeds: int = 3,
        retransmit_mult: int = 4,
        max_pages: int = 0,
        curve: bool = False,
        owner_key: Callable[[str], str] | None = None,
        membership: Membership | None = None,
        outbox: Outbox | None = None,
        batch_age: float = BATCH_AGE,
        max_batch_age: float = MAX_BATCH_AGE,
        message_budget: float = MESSAGE_BUDGET,
        send_window: int = SEND_WINDOW,
        seed_add_waiting: int = MAX_WAITING,
        seed_add_answers: int = MAX_ANSWERED,
        lease: float | None = None,
        resumed: bool = False,
        takeover_after: float = 0.0,
        grants: Sequence[tuple[str, int]] = (),
        left: Mapping[str, int] | None = None,
        voters: VoterRecord | None = None,
        settings: ConfigEpoch | None = None,
        settings_port: SettingsPort | None = None,
        adopt_conflicts: bool = False,
        restart_hold: float = 60.0,
    ) -> None:
        self.peer_id = peer_id
        self.ring_name = ring_name
        self.vnodes = vnodes
        self.max_pages = max_pages
        self._takeover_after = takeover_after  # a budget made by a live change of max_pages
        self.curve = curve
        self.gossip_interval = gossip_interval
        # The key a URL is placed by (peer.core.urls.normalize.host_key); injected so ring never imports peer.
        self._owner_key = owner_key if owner_key is not None else _netloc
        self.membership = membership if membership is not None else Membership(
            peer_id, address, weight, ring_name, seeds=seeds, gossip_interval=gossip_interval,
            suspect_after=suspect_after, dead_after=dead_after, now=now, incarnation=incarnation,
            tombstone_ttl=tombstone_ttl, seed_grace=seed_grace, join_seeds=join_seeds,
            retransmit_mult=retransmit_mult,
            lease=lease if lease is not None else dead_after / 2, resumed=resumed, voters=voters,
            restart_hold=restart_hold)
        # The start time as epoch: our batch numbers start a new channel each life.
        self.outbox = outbox if outbox is not None else Outbox(
            peer_id, ring_name, epoch=incarnation, max_age=batch_age, max_delay=max_batch_age,
            budget=message_budget, window=send_window)
        self.inbox = Inbox(ring_name)
        self.dropped: Counter[str] = Counter()
        # How long a gained host waits for its previous owner's HandoffDone.
        self.hold_timeout = max(5.0, 2 * dead_after)
        #: Our side of the max_pages budget (ring.membership.budget); None: no max_pages.
        self.budget = PageBudget(max_pages, peer_id, self.membership.voters(),
                                 takeover_after=takeover_after) if max_pages else None
        if grants:
            # What a former process of ours gave (peer.engine.durability): before any round.
            self.membership.set_local(grants=tuple(sorted(grants)))
        if left:
            # Seeds a former process of ours saw leave: left, not silent (Membership.remember_left).
            self.membership.remember_left(left, now)
        self.leaving = False
        self._now = now  # the ring's clock at the last call (what the settings' messages say of the lease)
        #: The moved hosts' state on its way to their new owners (``ring.statebox``, rule 13).
        self.statebox = StateBox(peer_id, ring_name, epoch=incarnation)
        #: Stopping for a planned restart (ring.membership.restarts): announced, keeping our hosts.
        self.restarting = False
        self.handoff = HandOffs(peer_id, ring_name, vnodes, members=self.membership, sends=self.outbox,
                                channels=self.inbox, owner_key=self._owner_key, dropped=self.dropped,
                                state=self.statebox, heard=lambda m: self.wire.knows(m))
        self.routes = Routes(curve=curve)
        # The lease as last logged: a pause is logged once; a ring settling after a
        # change is given one lease before its wait is called a partition.
        self._pauses = Pauses(patience=lease if lease else dead_after / 2)
        self.voter_watch = VoterWatch(peer_id, ring_name, self.membership, self.dropped)  # rule 10
        self.seed_adds = SeedAdds(peer_id, ring_name, self.outbox, max_waiting=seed_add_waiting,
                                  max_answered=seed_add_answers, dropped=self.dropped)  # rule 12
        #: The wire version each member speaks, read off the routes we hear it on
        #: (ring.wireversion), for decisions that depend on it: ``speaks``.
        self.wire = WireVersions(lambda m: m in self.membership.members(), curve=curve)
        port = settings_port if settings_port is not None else PlainSettings()
        #: Rule 11: the config epoch this peer runs (``ring.membership.epochs``).
        self.epochs = EpochWatch(peer_id, ring_name, self.membership, self.dropped, port,
                                 settings if settings is not None else ConfigEpoch(0, port.fingerprint(""), ""),
                                 now, adopt_conflicts=adopt_conflicts)

    # -- views -----------------------------------------------------------------

    def ring(self) -> HashRing:
        return self.membership.ring(self.vnodes)

    @property
    def handing_off(self) -> int:
        """Hand-offs still collecting or waiting for acks (``ring.handoff``)."""
        return self.handoff.handing_off

    def begin_handoff(self, version: int, seen: int, starts: Mapping[str, Iterable[tuple[str, float]]],
                      now: float, *, seen_to: Container[str] | None = None) -> list[Action]:
        """The driver queued the moved hosts' seen URLs and state (``HandOff``): set the barriers and wait.

        ``seen_to``: the members given seen URLs (``ring.handoff.HandOffs.begin``)."""
        out = self.handoff.begin(version, seen, starts, now, seen_to=seen_to)
        return self._send_state(now) + out

    def _send_state(self, now: float) -> list[Action]:
        pending = self.statebox.pending_by_dest()
        if pending:  # every round: the table of versions only when some state waits
            heard = self.wire.versions()
            for dest in pending:
                if dest in heard and not self.speaks(dest, HostState):
                    self.statebox.unsupported(dest)  # ring.statebox rule 7: an older build never acks
        return [Send(dest, msg) for dest, msg in self.statebox.messages(now)]

    def status_reply(self, nonce: int, figures: StatusFigures, *, now: float | None = None,
                     wall: float | None = None) -> StatusReply:
        """The answer to ``ring status`` (``ring.status``): full figures for us, gossiped ones for the
        others (``now``, ``wall``: the ring's clock and the epoch time, for when a restarting member's
        hold runs out)."""
        m = self.membership
        members = m.members()
        shares = m.ring(self.vnodes).shares()
        # The crawler's cap hits, held hosts and the like ride along (cap.*,
        # held.*, malformed.*, polite.*), with the Outbox's frame counters and
        # the causes of URLs never requested (ring.vocabulary rule 5).
        dropped = self.dropped_rows({**figures.limits, **forwarding_rows(self.outbox.stats()),
                                     **on_wire(figures.not_requested)})
        own = own_row(members[self.peer_id], shares.get(self.peer_id, 0.0), figures, dropped=dropped,
                      ring_version=max(0, m.ring_version), fingerprint=m.lease.ring if m.lease is not None else 0,
                      voters=m.voter_record, survival=m.survival(), settings=self.epochs.record,
                      settings_waiting=not self.epochs.confirmed)
        back_by: dict[str, float] = {}
        if now is not None and wall is not None:
            for mid, rec in members.items():
                until = m.restart_until(mid) if rec.state is MemberState.RESTARTING else None
                if until is not None:
                    back_by[mid] = max(0.0, wall + until - now)
            held = m.operator_held(now)
            if held:
                # Rule 14: a member held at an operator's word shows as restarting, with its hold's end.
                back_by.update((mid, max(0.0, wall + until - now)) for mid, until in held.items())
                members = {**members, **{mid: replace(members[mid], state=MemberState.RESTARTING)
                                         for mid in held}}
        return status_reply(self.ring_name, self.peer_id, nonce, members, shares, own,
                            unheard=m.waiting_for(), back_by=back_by)

    def dropped_rows(self, extra: Mapping[str, int] | None = None) -> tuple[tuple[str, int], ...]:
        """Every drop counter, ours and the membership's, as the status reply carries them (at most MAX_DROPPED)."""
        return capped_counts(self.dropped + self.membership.dropped + self.statebox.counts
                             + Counter(extra or {}))

    def set_max_pages(self, max_pages: int) -> None:
        """A live change of ``crawl.max_pages`` (``ring set``): the budget resized, made or dropped
        (``ring.membership.budget``, ``PageBudget.resize``)."""
        self.max_pages = max_pages
        if not max_pages:
            self.budget = None
        elif self.budget is None:
            self.budget = PageBudget(max_pages, self.peer_id, self.membership.voters(),
                                     takeover_after=self._takeover_after)
            self.budget.page_cap = self.budget.cap(self.membership.members())
        else:
            self.budget.resize(max_pages, self.membership.members())

    @property
    def page_cap(self) -> int:
        """Our cap of max_pages as of the last round (``ring.membership.budget`` rule 3); 0: no max_pages."""
        return self.budget.page_cap if self.budget is not None else 0

    @property
    def budget_gone(self) -> tuple[str, ...]:
        """The members holding the rest of the budget that will never grant it (``ring.membership.budget``
        rule 6): once any, this peer's crawl ends."""
        return self.budget.gone if self.budget is not None else ()

    def others_pages(self) -> int:
        """Pages the other members had requested, as last gossiped (every member, any state)."""
        return sum(m.pages for mid, m in self.membership.members().items() if mid != self.peer_id)

    def idle(self) -> bool:
        return self.outbox.idle

    def done(self, now: float) -> bool:
        """True once the whole cluster's crawl is over (the counter method)."""
        return self.membership.cluster_idle(now)

    def left(self, locally_idle: bool, now: float | None = None) -> bool:
        """Leaving, and everything handed over and acked: the process may end.

        The hosts' state too (``ring.statebox`` rule 6): acked, or unacked
        for ``HANDOFF_TIMEOUT`` since ``now`` (None: acked, no waiting).
        """
        if not (self.leaving and self.handing_off == 0 and self.outbox.idle and locally_idle):
            return False
        box = self.statebox
        return box.idle or (now is not None and box.settled(now, HANDOFF_TIMEOUT))

    @property
    def settings(self) -> ConfigEpoch:
        """The config epoch this peer runs (rule 11)."""
        return self.epochs.record

    @property
    def settings_confirmed(self) -> bool:
        """Whether our document is the ring's (``ring.membership.epochs`` rule 5): requests may start."""
        return self.epochs.confirmed

    def lease_state(self, real_now: float) -> LeaseState:
        """Whether this peer may start requests at ``real_now`` (``ring.membership.lease``; the real clock)."""
        state = self.membership.lease_state(real_now)
        assert state is not None  # a node always has a lease
        return state

    def host_gate(self, real_now: float) -> HostGate:
        """Which hosts this peer may start requests to at ``real_now``, host by host
        (``ring.membership.hostgate``; the real clock)."""
        return self.membership.host_gate(real_now, self.vnodes)

    def _lease_log(self, now: float) -> list[Action]:
        """A lost majority is logged once when it begins and once when it ends; a forming ring once, as news (``ring.membership.lease.Pauses``)."""
        real = now + self.membership.stalled
        note = self._pauses.seen(self.lease_state(real), real)
        if note is None:
            return []
        return [Log(logging.WARNING if note.warn else logging.INFO, note.line, note.event,
                    (("vouched", note.vouched), ("needed", note.needed), ("quorum", note.quorum)))]

    def count(self, reason: str) -> None:
        """Count a refusal found by the driver (a send that timed out, a bad address...)."""
        self.dropped[reason] += 1

    # -- the crawl's side --------------------------------------------------------

    def forward(self, url: str, depth: int, owner: str, now: float, *, relay: bool = False) -> None:
        """Queue a URL for its owner; ``relay``: one taken from a batch (``Outbox.relay``)."""
        if relay:
            self.outbox.relay(url, depth, owner, now)
        else:
            self.outbox.add(url, depth, owner, now)

    def leave(self, now: float) -> list[Action]:
        """Announce that we leave; the ring without us hands everything over."""
        self.leaving = True
        out: list[Action] = [Send(dest, msg) for dest, msg in self.membership.leave(now)]
        out += self._member_changes()
        out += self.handoff.check(now)
        return out

    def restart(self, now: float) -> list[Action]:
        """Announce a planned restart (``ring.membership.restarts``): we keep our hosts; keep
        ticking until :meth:`announced` (or the driver's bound), then exit."""
        if self.restarting or self.leaving:
            return []
        self.restarting = True
        out: list[Action] = [Send(dest, msg) for dest, msg in self.membership.restart(now)]
        return out + self._member_changes()

    def announced(self) -> bool:
        """Whether every live member has answered our restart's announce."""
        return self.membership.announced()

    def flush(self, now: float) -> list[Action]:
        """Frames due now: URL batches (new, aged or resent) with the acks owed (``Outbox.messages``)."""
        return [Send(dest, msg) for dest, msg in self.outbox.messages(now)]

    # -- driving -----------------------------------------------------------------

    def tick(self, now: float, *, idle: bool, pages: int, in_flight: int = 0) -> list[Action]:
        """One gossip round: our counters, grants, membership, ring changes, hand-off markers, page cap.

        ``pages``: the page requests made here; ``in_flight``: those started
        and not ended (``ring.membership.budget`` rule 4 counts them against the cap).
        """
        out: list[Action] = self._grant(idle, pages, in_flight)
        self.membership.set_local(idle=idle and self.outbox.idle, sent=self.outbox.sent,
                                  received=self.inbox.received, pages=pages)
        self._now = now
        sends = self.membership.tick(now)
        out += [Send(dest, msg) for dest, msg in sends]
        # Rule 11: the settings ride with the anti-entropy Sync, as the voters do.
        out += [Send(dest, self.epochs.message(now)) for dest, msg in sends if isinstance(msg, Sync)]
        out += self.epochs.tick(now)
        out += self._member_changes()
        self.routes.keep(self.membership.members())
        out += self.handoff.check(now)
        out += self._send_state(now)  # new records (re-routed ones too) and resends
        out += self.handoff.progress(now, marker_round=True)
        out += self._lease_log(now)
        return out + self._budget_end(now, pages, in_flight)

    def _grant(self, idle: bool, pages: int, in_flight: int) -> list[Action]:
        """``ring.membership.budget`` rule 5: an idle (or leaving) peer's spare goes to those waiting for it.

        Before this round's messages: they carry the new totals, and the
        ``Granted`` before them is made durable first (a restart must not
        spend what it gave).
        """
        if self.budget is None:
            return []
        amounts = self.budget.granting(self.membership.members(), idle=idle, leaving=self.leaving,
                                       pages=pages, in_flight=in_flight)
        if not amounts:
            return []
        self.membership.set_local(grants=add_grants(self.membership.me.grants, amounts))
        to = ", ".join(f"{n} to {mid}" for mid, n in sorted(amounts.items()))
        why = "leaving" if self.leaving else "nothing to fetch here"
        return [Granted(self.membership.me.grants),
                Log(logging.INFO, f"max_pages budget: granted {to} ({why}; {pages} pages requested here)")]

    def _budget_end(self, now: float, pages: int, in_flight: int) -> list[Action]:
        """``ring.membership.budget`` rule 6: at our cap, and the rest held by members that will not grant it."""
        if self.budget is None:
            return []
        members = self.membership.members()
        holders = self.budget.settle(members, now, pages=pages, in_flight=in_flight)
        if not holders:
            return []
        whose = ", ".join(f"{'dead' if members[h].state is MemberState.DEAD else 'left'} peer {h}" for h in holders)
        return [Log(logging.WARNING, (
            f"max_pages: {self.membership.total_pages():,} of {self.max_pages:,} pages; the rest of the budget "
            f"was held by {whose}, which can no longer grant it (this peer has requested {pages:,}, its cap)"))]

    def speaks(self, member: str, kind: type) -> bool:
        """Whether ``member`` knows message type ``kind`` at the wire version we speak to it
        (``ring.wireversion`` rules 3 and 6: a type it lacks is not sent, so nothing waits for its answer)."""
        return speaks(kind, self.wire.of(member))

    def receive(self, route: bytes, msg: Message, now: float, *, user_id: str | None = None) -> list[Action]:
        """One decoded message that came on ``route`` (rules 1-7 of the module docstring)."""
        self.wire.heard(route, user_id)
        handler = self._HANDLERS.get(type(msg))
        if handler is None:
            return self._drop("unexpected_type")
        out: list[Action] = []
        if isinstance(msg, _MEMBER_MESSAGES) and not (
                isinstance(msg, UrlBatch | HostState) and adopted(msg.sender)):
            reason = self.routes.impostor(route, user_id, msg.sender)
            if reason is not None:
                return self._drop(reason)
            if msg.ring != self.ring_name:
                return self._drop("other_ring")
            out = self._restarted(route, msg)
        elif msg.ring != self.ring_name:
            return self._drop("other_ring")
        out += handler(self, route, msg, now)
        if self.seed_adds.waiting:
            # Rule 12: answered on a received frame (the engine awaits a Reply only
            # there): an ack, or else the gossip that comes every round, past the wait.
            out += self.seed_adds.check(now)
        return out

    def _restarted(self, route: bytes, msg: Message) -> list[Action]:
        """Rule 4: a member heard on a new route, with a later incarnation, is a new process of it."""
        sender = msg.sender
        rec = self.membership.members().get(sender)
        if sender == self.peer_id or rec is None:
            return []  # routes of members only: anyone can make up ids
        epoch = claimed_epoch(msg)
        if epoch is None or (isinstance(msg, UrlBatch | Packet) and epoch > rec.incarnation):
            return []  # says no epoch; or one refused as future_epoch by its handler
        if not self.routes.heard(route, sender, epoch):
            return []
        # Our count to it restarts: no peer restores its Inbox from disk.
        self.outbox.forget(sender)
        if self.curve or isinstance(msg, UrlBatch):
            # Its old life's channel leaves our sums. Only on what the member
            # itself says: without Curve anyone can claim a member's new route
            # and incarnation, and a closed channel refuses that member's real
            # batches until it restarts. (Its first batch of a new epoch
            # replaces the channel anyway: Inbox.accept.)
            self.inbox.forget(sender, before=epoch)
        self.dropped["peer_restarts"] += 1
        return [Count("peer_restarts")]

    def _drop(self, reason: str) -> list[Action]:
        self.dropped[reason] += 1
        return [Count(reason)]

    # -- one handler per message type ----------------------------------------------

    def _member_changes(self) -> list[Action]:
        """One log line per membership change seen: who, the new state, and why; then the voters'."""
        m = self.membership
        events = m.drain_events()
        if self.budget is not None:
            self.budget.saw(events)  # when each member died, for the budget it holds
        out: list[Action] = [Log(logging.WARNING if e.state is MemberState.DEAD else logging.INFO,
                                 f"member {e.id}: {e.state.value} ({e.reason.value}), incarnation {e.incarnation}",
                                 "member", (("member", e.id), ("state", e.state.value), ("reason", e.reason.value),
                                            ("incarnation", e.incarnation)))
                             for e in events]
        first, after = self.voter_watch.saw(events)  # rule 10
        return first + out + after + self.epochs.saw(events, self._now)  # rule 11

    def _on_gossip(self, route: bytes, msg: Digest | Join | Leave | Ping | PingReq | PingAck | Sync | Voters,
                   now: float) -> list[Action]:
        self._now = now
        self.handoff.note_claims(msg)  # ring.handoff rule 4
        replies = self.membership.receive(msg, now)
        # ring.wireversion rule 7: a vouch of leases by host, as an older member must read it.
        lease = self.membership.lease
        plain = lease.plain_of if lease is not None else None
        out: list[Action] = [Send(dest, said_to(reply, self.wire.of(dest), plain)) for dest, reply in replies]
        if isinstance(msg, Join) and any(dest == msg.sender for dest, _ in replies):
            out.append(Send(msg.sender, self.epochs.message(now)))  # rule 11: the ring's settings
        out += self._member_changes()
        return out + self.handoff.check(now)

    def _on_settings(self, route: bytes, msg: Settings, now: float) -> list[Action]:
        """Rule 11: a member's config epoch (``ring.epochwatch``)."""
        self._now = now
        if msg.sender not in self.membership.members():
            return self._drop("unknown_sender")
        return self.epochs.heard(msg, now)

    def _on_settings_request(self, route: bytes, msg: SettingsRequest, now: float) -> list[Action]:
        """Rule 11: an operator's change of the settings (``ring.epochwatch``)."""
        self._now = now
        return self.epochs.request(route, msg, now, leaving=self.leaving)

    def _on_batch(self, route: bytes, msg: UrlBatch, now: float) -> list[Action]:
        if adopted(msg.sender):
            self.dropped["adopted_batches"] += 1  # not a drop: shown with the counters
            return [Deliver(msg.urls, msg.seen, msg.sender),
                    Reply(route, Ack(self.ring_name, self.peer_id, msg.epoch, msg.seq))]
        sender = self.membership.members().get(msg.sender)
        if sender is None or sender.state is MemberState.DEAD:
            return self._drop("unknown_sender")
        if msg.epoch > sender.incarnation:
            return self._drop("future_epoch")
        if self.leaving:
            # Rule 7: not taken, not acked; the sender re-routes it.
            return self._drop("leaving")
        verdict = self.inbox.accept(msg)
        out: list[Action] = []
        if verdict is Verdict.ACCEPT:
            out.append(Deliver(msg.urls, msg.seen, msg.sender))
        else:
            out += self._drop(verdict.value)  # a replay is acked again, but still counted
        if verdict.ack:
            self.outbox.owe_ack(msg.sender, msg.epoch, msg.seq, now)
        return out

    def _on_ack(self, route: bytes, msg: Ack, now: float) -> list[Action]:
        self.outbox.ack(msg.sender, msg.epoch, msg.seq)
        return self.handoff.progress(now) if self.handoff.records else []

    def _on_packet(self, route: bytes, msg: Packet, now: float) -> list[Action]:
        outbox = self.outbox
        for seq in msg.acks:
            outbox.ack(msg.sender, msg.acked_epoch, seq)
        out: list[Action] = []
        for batch in msg.url_batches():
            out += self._on_batch(route, batch, now)
        if msg.acks and self.handoff.records:
            out += self.handoff.progress(now)
        return out

    def _on_handoff_done(self, route: bytes, msg: HandoffDone, now: float) -> list[Action]:
        rec = self.membership.members().get(msg.sender)
        if rec is None:
            return self._drop("unknown_sender")
        ring = self.handoff.ring
        if ring is not None and msg.members == tuple(sorted(ring)):
            return [Released(msg.sender)]
        if msg.incarnation > rec.incarnation:
            # Rule 6: from a life of the sender we have not seen back yet (ring.handoff rule 7).
            self.handoff.early(msg)
            self.dropped["handoff_early"] += 1  # not a drop: shown with the counters
            return []
        return self._drop("handoff_other_ring_view")  # it will say it again for our view

    def _on_host_starts(self, route: bytes, msg: HostStarts, now: float) -> list[Action]:
        if msg.sender not in self.membership.members():
            return self._drop("unknown_sender")
        return [SeedStarts(msg.starts)]

    def _on_host_state(self, route: bytes, msg: HostState, now: float) -> list[Action]:
        """Rule 13: a member's (or the adopt tool's) hosts' state, imported before its ack."""
        if adopted(msg.sender):
            self.dropped["adopted_state"] += 1  # not a drop: shown with the counters
            return [StateTaken(StateRecords.of(msg), msg.sender),
                    Reply(route, HostStateAck(self.ring_name, self.peer_id, msg.epoch, msg.seq))]
        rec = self.membership.members().get(msg.sender)
        if rec is None or rec.state is MemberState.DEAD:
            return self._drop("unknown_sender")
        if self.leaving:
            return self._drop("leaving")
        return [StateTaken(StateRecords.of(msg), msg.sender),
                Send(msg.sender, HostStateAck(self.ring_name, self.peer_id, msg.epoch, msg.seq))]

    def _on_host_state_ack(self, route: bytes, msg: HostStateAck, now: float) -> list[Action]:
        self.statebox.ack(msg.sender, msg.epoch, msg.seq)
        return self.handoff.progress(now) if self.handoff.records else []

    def _on_leave_request(self, route: bytes, msg: LeaveRequest, now: float) -> list[Action]:
        if msg.target != self.peer_id:
            return []
        return [Log(logging.WARNING, f"leave requested by {msg.sender}: handing over and leaving the ring"),
                LeaveAsked(msg.sender)]

    def _on_restart_request(self, route: bytes, msg: RestartRequest, now: float) -> list[Action]:
        if msg.target != self.peer_id:
            return []
        return [Log(logging.WARNING, f"restart requested by {msg.sender}: stopping for a planned restart; "
                                     f"this peer keeps its hosts while it is away"),
                RestartAsked(msg.sender)]

    def _on_hold_request(self, route: bytes, msg: HoldRequest, now: float) -> list[Action]:
        """Rule 14: hold a member at an operator's word (``ring.membership.restarts`` rule 7)."""
        outcome, hold = self.membership.operator_hold(msg.target, now)
        self.dropped[f"hold_request.{outcome.value}"] += 1  # shown with the counters, as seed adds'
        out: list[Action] = [Reply(route, HoldReply(self.ring_name, self.peer_id, msg.target, outcome, hold,
                                                    msg.nonce))]
        if outcome is HoldOutcome.HELD:
            inc = self.membership.members()[msg.target].incarnation
            out.append(Log(logging.WARNING, (
                f"hold requested by {msg.sender}: member {msg.target} held for an operator's restart at "
                f"incarnation {inc} for {hold:g}s (not probed; its hosts wait for it)"),
                "hold", (("member", msg.target), ("incarnation", inc), ("hold", hold), ("by", msg.sender))))
        return out

    def _on_forget_request(self, route: bytes, msg: ForgetRequest, now: float) -> list[Action]:
        """Rule 8: forget a dead (or left) member at an operator's word (``ring.forgetting``)."""
        out, forgotten = answer_forget(self.membership, self.peer_id, self.ring_name, route, msg, now)
        return out + self._member_changes() + self.handoff.check(now) if forgotten else out

    def _on_voter_request(self, route: bytes, msg: VoterRequest, now: float) -> list[Action]:
        """Rule 10: an operator's change of the voters (``ring.voterwatch``)."""
        out, taken = self.voter_watch.request(route, msg, now)
        return out + self._member_changes() if taken else out

    def _on_near(self, route: bytes, msg: NearQuery | NearAnswer | Reverdict, now: float) -> list[Action]:
        """Rule 9: a band query or answer (or a verdict's correction) from a member, for the crawl."""
        rec = self.membership.members().get(msg.sender)
        if rec is None or rec.state is MemberState.DEAD:
            return self._drop("unknown_sender")
        if not self.routes.live(route, msg.sender):
            return self._drop("near_not_live_route")
        if isinstance(msg, Reverdict):
            return [Reverdicted(msg)]
        return [NearAsked(msg) if isinstance(msg, NearQuery) else NearAnswered(msg)]

    def _on_seed_add_request(self, route: bytes, msg: SeedAddRequest, now: float) -> list[Action]:
        """Rule 12: an operator's seed batch (``ring.seedadds``)."""
        again = self.seed_adds.again(route, msg.nonce)
        if again is not None:
            self.dropped["seed_add_batch.asked_again"] += 1
            return again
        status = SeedAddStatus.LEAVING if self.leaving else SeedAddStatus.BUSY if self.seed_adds.full else None
        if status is SeedAddStatus.BUSY:
            self.dropped[WAITING_CAP] += 1  # crawl.seed_add_waiting's hit; the busy answer is counted below
        if status is not None:
            return self.seeds_refused(route, msg.nonce, status)
        return [SeedsAsked(route, msg)]

    def seeds_refused(self, route: bytes, nonce: int, status: SeedAddStatus) -> list[Action]:
        """Rule 12: a seed batch answered with nothing taken (``status``), and counted."""
        self.dropped[f"seed_add_batch.{status.value}"] += 1
        return [Reply(route, self.seed_adds.reply(nonce, status))]

    def seeds_taken(self, route: bytes, nonce: int, counts: Mapping[str, int], forwarded: Mapping[str, int],
                    now: float, wait: float) -> list[Action]:
        """Rule 12: the crawl judged, routed and committed a seed batch; its answer, now or once acked."""
        return self.seed_adds.taken(route, nonce, counts, forwarded, now, wait)

    def _on_status_request(self, route: bytes, msg: StatusRequest, now: float) -> list[Action]:
        return [StatusAsked(route, msg.nonce)]

    _HANDLERS: dict[type, Callable[[RingNode, bytes, Any, float], list[Action]]] = {
        Digest: _on_gossip,
        Join: _on_gossip,
        Leave: _on_gossip,
        Ping: _on_gossip,
        PingReq: _on_gossip,
        PingAck: _on_gossip,
        Sync: _on_gossip,
        UrlBatch: _on_batch,
        Ack: _on_ack,
        Packet: _on_packet,
        HandoffDone: _on_handoff_done,
        HostStarts: _on_host_starts,
        LeaveRequest: _on_leave_request,
        RestartRequest: _on_restart_request,
        HoldRequest: _on_hold_request,
        ForgetRequest: _on_forget_request,
        Voters: _on_gossip,
        VoterRequest: _on_voter_request,
        Settings: _on_settings,
        SettingsRequest: _on_settings_request,
        StatusRequest: _on_status_request,
        SeedAddRequest: _on_seed_add_request,
        NearQuery: _on_near,
        NearAnswer: _on_near,
        Reverdict: _on_near,
        HostState: _on_host_state,
        HostStateAck: _on_host_state_ack,
    }


def _netloc(url: str) -> str:
    """A stand-in placement key (the URL's authority) for rings built without ``owner_key``."""
    rest = url.partition("://")[2]
    return rest.split("/", 1)[0].lower()

