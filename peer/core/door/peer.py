"""One peer's core and the engine's one door: the crawl core and the ring node composed (pure).

``PeerCore`` joins ``peer.core.crawl.core.CrawlCore`` and ``ring.node.RingNode``
where they meet, so no driver stands between them (httpcore drives one h11
``Connection``, not two), and it is the only core object the driver
(``peer.engine.crawler``) holds. A link found here whose host is another
peer's is a ``Forward`` the crawl decides and that goes into the ring node's
Outbox here, in the same call; a batch the ring takes goes straight into
``CrawlCore.discover`` with the crawl's own ``Origin``. Every call returns
one ordered list of effects, the crawl's and the ring's alike, whose
``Forward``\\ s are in the Outbox already; the driver carries them out, in
order, through one ``{effect type: handler}`` table without knowing which
inner core made them.

Events (each takes ``now``, the crawl's clock; the ones that need the wall
clock take ``wall``). The ring's timers run on ``now - stalled``: the
seconds this process stood still beyond a gossip interval a round, which
the sockets measure and the driver sets (Lifeguard, Dadgar et al. 2018:
the silence of a process that was not running is its own, not its peers').

- building: ``alone(cfg, peer_id)``; ``join_ring(...)`` once the state is
  recovered (the node's incarnation and grants depend on it);
- URLs: ``seeds``, ``discover``, ``accept`` (a URL handed to us);
- a job: ``next``, ``admit``, ``fetched``, ``on_result``, ``on_robots``,
  ``on_sitemap``, ``robots_cancelled``, ``internal``, ``job_ended``; what
  its request carries (``cookie_header``, ``validators``) and what its
  parse needs (``parse_rules``); the spilled queues of moved hosts
  (``move_spilled``);
- the ring: ``receive(route, msg)`` a decoded frame, ``tick`` a gossip
  round, ``flush`` the Outbox's frames due, ``leave``; ``hosts_read`` /
  ``fetched_read`` the answers to a hand-off's reads.

Two parts take the rest, each its own small interface: ``disk``
(``peer.core.door.persistence``: the recovered state put back, a snapshot's
view, the seen set's batches, the cookie jar's records) and ``figures``
(``peer.core.door.readouts``: the status row, progress, summary, scrape).
What the scheduler asks of the ring is ``peer.core.door.ringgate``'s.

Effects: the crawl's (``peer.core.crawl.decisions``: ``Forward`` is
journaled by the driver, its send is done here), the ring's
(``ring.actions``: ``Released`` is done here, for the record; ``Granted``
the driver journals) and ``Commit``, ``ReadHosts``, ``ReadFetched``
(``peer.core.door.effects``).

Rules:

1. **Durability is a Commit, decided here.** The driver makes the journal
   durable where a ``Commit`` stands and nowhere else but its own I/O
   (a snapshot, the close). A ``Commit`` comes, in the list's order:

   a. after a page's ``Row`` (``routed``, whatever made it): a page done
      but not on disk would be fetched again after a kill, and only those
      in flight may be; its links' records came before it (journal rule 1);
   b. after a ``Drop`` or ``PassOn`` admission: the job left our queue
      (passed on, or fetched by the previous owner);
   c. after a batch taken from the ring (``Deliver``): its discoveries,
      then ``Commit``, then whatever the ring said after it: the adopt
      tool's ``Reply`` ack, and the member's ack owed in the Outbox, which
      leaves only with a later ``flush`` (rule 5 of ``ring.node``);
   d. before a seen-set batch is taken (``sieve_take``): every hash the
      sieve's files will hold has its journal record first, so a crash
      never leaves a URL called seen that was not queued; and after its
      verdicts (``sieve_verdicts``), whose URLs are then queued;
   e. after a chunk of moved spilled queues (``move_spilled``): the URLs
      are in the Outbox and journaled as forwarded;
   f. after a ``Granted`` (``ring.membership.budget`` rule 5), before the round's
      messages that carry the grants: a process killed after them restarts
      with them (a restart that forgot a grant would spend it twice);
   g. after the seeds and after a resume: the start is on disk whole; after
      each batch of a seeds file, with its position (``SeedsAt``) before it
      (peer/core/crawl/seedfeed.py rule 3); after each ``ring seed add``
      batch, with its counts before it and its answer after it (rule 7);
   h. after a host's state handed to us (``StateTaken``): what was taken of
      it journaled (``StateKept``), then ``Commit``, then the
      ``HostStateAck`` the ring said after it: an ack means on disk
      (peer/core/handoff/state.py rule 5).
2. **Origins.** What the ring takes or gives back (``Deliver``,
   ``Rerouted``) reaches the crawl as ``ring.forwarding.intake`` orders it, whose rules
   ``ring.io.driver.RingDriver`` follows too: a member's or the adopt tool's
   batch is ``RELAY`` or ``ADOPTED`` by who sent it, its seen URLs
   ``HANDED_SEEN``, then the ``Commit`` of rule 1c; our own entries rerouted
   back are ``HANDED_SEEN`` then ``HANDED_BACK``, in the order
   ``Outbox.reroute`` gives them.
3. **Hand-off reads** are h11's ``NEED_DATA``: a ``HandOff`` of the ring
   gives ``ReadHosts(request)``; its answer gives ``ReadFetched(request,
   hosts)`` for the moved hosts alone, the jobs whose request is on the wire
   taken at that moment (a fetch that ends during the read writes a row the
   read may not see); its answer puts each moved fetched URL in the Outbox as
   seen, the moved hosts' revisit records, cookies and digests in the state
   box (``peer.core.handoff.state``), and starts the ring's hand-off
   (``RingNode.begin_handoff``). An answer for a request that is not open
   changes nothing. A revisit passed on without a visit (``Done``) sends
   its record after its URL, to the host's owner, by the same state box;
   what the state box brings (``StateTaken``) is imported here. At start,
   once in the ring, the schedule read back from ``fetches`` of hosts now
   others' goes to their owners by the state box too (``pass_on_restored``).
4. **One host key per URL per peer**: ``discover`` computes it once and
   ``Forward`` carries it on; what comes from another peer has it computed
   again there, once.
5. **Band queries** (``peer.core.dedupe.held``): a ``NearAsk`` to this
   peer (or in a ring of one) is answered here, in the same call, and the
   answer fed back to the crawl; one to another member is a ``Send`` of a
   ``NearQuery``. A member's ``NearQuery`` is answered with a ``Send`` of
   the ``NearAnswer`` to its sender (never to the ``reply_to`` it names: a
   query must not aim answers at a third peer); a ``NearAnswer`` goes to
   the crawl, which checks it. A ``Reverdict`` (a page's row corrected:
   ``peer.core.dedupe.held`` rule 6) goes to the engine when this peer owns
   the page's host, else is sent to its owner; a member's ``Reverdict``
   about a host this peer does not own is dropped (``dedupe_stray_reverdicts``).
6. **Moves are paced by the Outbox** (frontier rule 10): ``move_spilled``
   passes on ``MOVE_CHUNK`` spilled URLs of hosts that changed owner a
   call, and none while ``MOVE_BACKLOG`` wait for their owners' acks, so a
   move costs RAM of a backlog, not of the queues. A seeds file is paced the
   same way (``seeds_file_room``): no batch is read while the Outbox or the
   exact seen set's pending batch holds ``MOVE_BACKLOG``.
7. **Seed batches** (``ring seed add``; the ring's ``SeedsAsked``, rule 12
   of ``ring.node``): more lines than ``crawl.seed_add_batch`` are answered
   ``over_cap``, and a batch that finds the backlog of rule 6 full
   ``busy``, nothing taken; otherwise each line is judged as a seeds
   file's (the same checks and words), routed, counted
   (peer/core/crawl/seedadd.py), journaled and committed, and only then
   handed back to the node with the URLs forwarded by owner, whose answer
   waits for their acks up to ``crawl.seed_add_wait`` (``ring.seedadds``).
8. **Live settings** (``adopt_settings``): a settings document
   (``peer.core.config.livekeys``) takes effect at once, in the core alone:
   the rates of every known host from its next start, the URL rules for
   new links and for queued URLs at their turn (``CrawlCore.admit``), the
   ``[[site]]`` blocks, ``max_pages`` in the crawl and the ring's budget,
   and ``paused``, which holds every start (``CrawlCore.next``) as a lost
   lease does. Nothing is journaled here: the document's durability is the
   ring's, which hands it on.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from peer.core.config.cluster import ClusterConfig
from peer.core.config.dedupe import DedupeConfig
from peer.core.config.livekeys import check_document, differing_keys, live_document, set_paused, with_live
from peer.core.config.sites import SiteSettings
from peer.core.crawl.core import CrawlCore
from peer.core.crawl.failedpages import FailedRow
from peer.core.crawl.decisions import (
    Admission,
    Done,
    Drop,
    Effect,
    Finished,
    Forward,
    NearAsk,
    Reverdict,
    Origin,
    PassOn,
    Row,
    Sleep,
    Start,
)
from peer.core.dedupe.bands import NearAnswer, NearQuery
from peer.core.door.effects import Commit, PeerEffect, ReadFetched, ReadHosts, SeedsAt, StateKept
from peer.core.crawl.seedfeed import FileMark, INVALID, SKIPPED, outcome, parse_line
from peer.core.frontier.frontier import Job
from peer.core.http.result import FetchResult
from peer.core.page.extract import PageRules
from peer.core.page.items import ExtractConfig
from peer.core.page.parse import Parsed
from peer.core.door.persistence import Persistence
from peer.core.door.readouts import Readouts
from peer.core.door.settings import LiveSettings, decode_doc
from peer.core.door.settings import initial as initial_settings
from peer.core.revisit.recrawl import Visit
from peer.core.handoff.state import export_state, import_state, kept_on_disk
from peer.core.door.ringgate import RingGate
from peer.core.sitemaps.document import Sitemap
from peer.core.urls.normalize import host_key
from peer.core.urls.rules import ParamRules
from peer.errors import LiveSettingError, URLError
from ring import messages as wire
from ring.actions import (
    Action,
    Count,
    Deliver,
    Granted,
    HandOff,
    Log,
    LeaveAsked,
    NearAnswered,
    NearAsked,
    Reverdicted,
    Released,
    Rerouted,
    RingChanged,
    SeedStarts,
    SeedsAsked,
    Send,
    SettingsChanged,
    StateTaken,
)
from ring.membership.budget import Grants
from ring.membership.lease import LeaseState
from ring.membership.epochs import ConfigEpoch
from ring.membership.voters import VoterRecord
from ring.messages import MemberState, Message, RevisitWire, SeedAddStatus, StatusReply
from ring.forwarding.intake import Source, Take, TakeSeen, intake
from ring.node import RingNode
from ring.statebox import Kind as StateKind
from ring.status import StatusFigures

# The door's effect vocabulary is peer.core.door.effects'; named here too, where
# the driver and the tests meet the door.
__all__ = ["Commit", "MOVE_BACKLOG", "MOVE_CHUNK", "PeerCore", "PeerEffect", "ReadFetched", "ReadHosts",
           "ring_node"]

#: Spilled URLs of hosts that changed owner passed on a call (rule 6; ~30 us
#: a URL: a 15 ms step of the loop), and how many may wait in the Outbox for
#: their acks before more are read.
MOVE_CHUNK = 500
MOVE_BACKLOG = 20_000
#: ``ring.forwarding.intake``'s sources are the crawl's own origins (the ring cannot import them).
_ORIGINS = {Source.RELAY: Origin.RELAY, Source.ADOPTED: Origin.ADOPTED, Source.HANDED_BACK: Origin.HANDED_BACK}


#: The arguments ``peer.core.page.parse.parse_response`` takes after (url, body, charset).
ParseRules = tuple[ExtractConfig, int, ParamRules | None, PageRules, DedupeConfig, bool]


def ring_node(cfg: ClusterConfig, peer_id: str, address: str, weight: float, now: float, *,
              incarnation: int, curve: bool = False, resumed: bool = False,
              grants: Grants = (), left: dict[str, int] | None = None,
              voters: VoterRecord | None = None, settings: ConfigEpoch | None = None) -> RingNode:
    """This peer's ring node from ``[ring]`` and ``[[peer]]``.

    ``incarnation``: the start's wall time in ms, so a restarted peer
    outranks its old life in gossip and its batch numbers start a new
    channel. ``resumed``: the peer goes on with a crawl on disk, so its
    former life may have vouched for another ring a moment ago (``ring.membership.lease``
    rule 2); ``grants``: the max_pages budget it gave (``ring.membership.budget``);
    ``left``: the seeds it saw leave (``ring.membership.protocol.Membership.remember_left``).
    ``voters``: the voter record it last held (``ring.membership.voters``, from its data_dir);
    ``settings``: the config epoch it last ran (``ring.membership.epochs``, from its data_dir),
    else its cluster.toml's (epoch 0).
    """
    rc = cfg.ring
    return RingNode(
        peer_id, address, weight, rc.name,
        seeds=[(p.id, p.address, p.weight) for p in cfg.peers],
        gossip_interval=rc.gossip_interval, suspect_after=rc.suspect_after,
        dead_after=rc.dead_after, tombstone_ttl=rc.tombstone_ttl, seed_grace=rc.seed_grace,
        join_seeds=rc.join_seeds, retransmit_mult=rc.retransmit_mult, now=now,
        incarnation=incarnation, vnodes=rc.vnodes, max_pages=cfg.crawl.max_pages,
        curve=curve, owner_key=host_key, batch_age=rc.batch_age,
        max_batch_age=rc.max_batch_age, message_budget=rc.message_budget,
        send_window=rc.send_window, seed_add_waiting=cfg.crawl.seed_add_waiting,
        seed_add_answers=cfg.crawl.seed_add_answers, lease=rc.lease or rc.dead_after / 2, resumed=resumed,
        takeover_after=rc.takeover_after, grants=grants, left=left, voters=voters,
        settings=settings if settings is not None else initial_settings(cfg), settings_port=LiveSettings(),
        adopt_conflicts=rc.config_mismatch == "adopt", restart_hold=rc.restart_hold)


@dataclass(slots=True)
class _Read:
    """An open hand-off read (rule 3)."""

    handoff: HandOff
    inflight: list[tuple[str, str]] | None = None
    moved: tuple[str, ...] = ()  # the hosts that moved away: their state goes too


class PeerCore:
    """One peer's decisions, crawl and ring (module docstring); mutable, pure, one thread.

    ``node`` is None for a peer alone: every host is its own, nothing is
    forwarded, and the ring's events never come.
    """

    def __init__(self, crawl: CrawlCore, node: RingNode | None = None, *, now: float = 0.0,
                 joining: bool = False) -> None:
        self.crawl = crawl
        self.node: RingNode | None = None
        self._reads: dict[int, _Read] = {}
        self._next_request = 0
        self._stalled = 0.0
        #: What the scheduler asks of the ring (``peer.core.door.ringgate``), once in a ring.
        self._gate: RingGate | None = None
        # The parts the driver reaches through this door, each with its own small interface:
        #: the core's side of the driver's files (``peer.core.door.persistence``),
        self.disk = Persistence(crawl, lambda: self.node, self.routed)
        #: the figures the driver shows (``peer.core.door.readouts``).
        self.figures = Readouts(crawl, lambda: self.node, self.lease_state)
        if node is not None:
            self._attach(node, now, joining)

    @classmethod
    def alone(cls, cfg: ClusterConfig, peer_id: str, *, rng: random.Random | None = None,
              peek_ip: Callable[[str], str | None] | None = None) -> PeerCore:
        """A peer's core before it joins a ring (alone, it never does)."""
        if peek_ip is None:
            return cls(CrawlCore(cfg, peer_id, rng=rng))
        return cls(CrawlCore(cfg, peer_id, rng=rng, peek_ip=peek_ip))

    def join_ring(self, address: str, weight: float, now: float, *, incarnation: int, curve: bool,
                  joining: bool, voters: VoterRecord | None = None, settings: ConfigEpoch | None = None) -> None:
        """Build this peer's ring node (``ring_node``) and join it; after ``disk.restore``.

        ``joining``: a peer not in cluster.toml joins a running ring, and
        every host it owns had an owner before, who hands it over.
        """
        crawl = self.crawl
        disk = self.disk
        node = ring_node(crawl.cfg, crawl.peer_id, address, weight, now, incarnation=incarnation,
                         curve=curve, resumed=disk.resumed, grants=disk.resumed_grants,
                         left=disk.resumed_left, voters=voters, settings=settings)
        self._attach(node, now, joining)

    def pass_on_restored(self) -> int:
        """Rule 3: the state read back at start of hosts the ring gives to others, to their owners now; how many records.

        A restarted peer's ``fetches`` table (and its cookie jar's file) hold
        the schedule of every host it ever fetched, those that moved away while
        it was down (it may have been declared dead: nothing was handed over
        then) or before. Each goes to its host's owner in the state box at
        once, acked, rather than when it comes due here; an owner that visited
        the page since keeps its own newer record.
        """
        node, crawl = self.node, self.crawl
        hosts, self.disk.restored_hosts = self.disk.restored_hosts, set()
        if node is None or not hosts:
            return 0
        ring = node.ring()
        away = [h for h in hosts if ring.owner(h) != crawl.peer_id]
        box = node.statebox
        n = 0
        for dest, key, kind, record in export_state(crawl, away, ring.owner, crawl.wall_offset):
            box.add(dest, key, kind, record)
            n += 1
        return n

    def _attach(self, node: RingNode, now: float, joining: bool) -> None:
        crawl = self.crawl
        self.node = node
        self._gate = RingGate(node, crawl.locally_idle, lambda: self._stalled)
        crawl.alive = self._alive
        crawl.hold_timeout = node.hold_timeout
        crawl.ring = ring = node.ring()
        if joining:
            crawl.handoffs.hold_from(ring.without_peer(crawl.peer_id), now)

    @property
    def in_ring(self) -> bool:
        """Whether this peer has joined a ring (alone: never)."""
        return self.node is not None

    @property
    def stalled(self) -> float:
        """Seconds this process stood still (module docstring): the ring's clock is ``now - stalled``."""
        return self._stalled

    @stalled.setter
    def stalled(self, value: float) -> None:
        self._stalled = value
        if self.node is not None:
            # The lease is measured on the real clock (ring.membership.protocol).
            self.node.membership.stalled = value

    # -- the crawl's own decisions ---------------------------------------------------

    def routed(self, effects: Iterable[Effect], now: float) -> list[PeerEffect]:
        """The crawl's effects: a ``Forward`` queued in the Outbox for its owner (rule 4), a ``Row`` committed (1a)."""
        out: list[PeerEffect] = []
        outbox = self.node.outbox if self.node is not None else None
        recrawl = self.crawl.recrawl
        for e in effects:
            if isinstance(e, NearAsk):
                out += self._near_ask(e, now)
                continue
            if isinstance(e, Reverdict) and self.node is not None:
                # -- which copy wins (rule 5): the row is its host owner's.
                owner = self.crawl.handoffs.owner(host_key(e.url))
                if owner != self.crawl.peer_id:
                    out.append(Send(owner, wire.Reverdict(self.node.ring_name, self.crawl.peer_id, e.url,
                                                          e.duplicate_of, e.kind, e.distance)))
                    continue
            if isinstance(e, Forward) and outbox is not None:
                # A URL we were handed (relay) must not be dropped by the
                # Outbox's "recently forwarded" cache: it may be the only copy.
                if e.relay:
                    outbox.relay(e.url, e.depth, e.owner, now - self.stalled)
                else:
                    outbox.add(e.url, e.depth, e.owner, now - self.stalled)
            elif isinstance(e, Done) and recrawl is not None:
                # Left our queue with no row of ours: its record goes with its URL (rule 3).
                record = recrawl.forget(e.url, self.crawl.wall_offset)
                if record is not None:
                    self._send_on(record)
            out.append(e)
            if isinstance(e, Row):
                out.append(Commit())
        return out

    def _send_on(self, record: RevisitWire) -> None:
        """A revisit record whose job left without a visit: to its host's owner, or kept here."""
        crawl = self.crawl
        host = record[1]
        owner = crawl.handoffs.owner(host)
        if self.node is None or owner == crawl.peer_id:
            assert crawl.recrawl is not None
            crawl.recrawl.import_records([record], crawl.wall_offset)  # it comes due again here
        else:
            self.node.statebox.add(owner, host, StateKind.REVISIT, record)

    def _near_ask(self, e: NearAsk, now: float) -> list[PeerEffect]:
        """Rule 5: a band query, answered here when the bands are ours, else sent."""
        crawl = self.crawl
        me = crawl.peer_id
        if self.node is None or e.owner == me:
            return self.routed(crawl.dup_answer(me, crawl.dedupe.serve(e.query), now), now)
        q = e.query
        return [Send(e.owner, wire.NearQuery(self.node.ring_name, me, q.bands, q.fingerprint, q.url, me,
                                             q.seen_at, q.says, q.digest))]

    def _host_owner(self, url: str) -> str | None:
        """The member the ring gives ``url``'s host (None: no host key): ``peer.core.dedupe.claims`` rule 3."""
        try:
            return self.crawl.handoffs.owner(host_key(url))
        except URLError:
            return None

    def discover(self, url: str, depth: int, now: float, origin: Origin) -> list[PeerEffect]:
        return self.routed(self.crawl.discover(url, depth, now, origin), now)

    def accept(self, url: str, depth: int, now: float) -> list[PeerEffect]:
        """A URL handed to us from outside (a test, a tool): to its owner, or through our Bloom filter."""
        return self.discover(url, depth, now, Origin.RELAY)

    def seeds(self, now: float) -> list[PeerEffect]:
        """The seeds (and the sitemaps they name), then Commit (1g)."""
        return [*self.routed(self.crawl.seeds(now), now), Commit()]

    def retry_failed(self, rows: Iterable[FailedRow], now: float,
                     queued: Container[str] = frozenset()) -> list[PeerEffect]:
        """``--retry-failed``: this peer's failed pages queued again or sent to their owners, then
        Commit; ``queued``: those still queued from an earlier run (CrawlCore.retry_failed)."""
        return [*self.routed(self.crawl.retry_failed(rows, now, queued), now), Commit()]

    def retry_failed_line(self, asked: bool) -> str | None:
        """The summary's line of the failed pages queued again: when ``--retry-failed`` was
        ``asked``, or other peers sent some; else None."""
        fp = self.crawl.failed_pages
        return fp.summary_line() if asked or fp.received else None

    def replaces_row(self, url: str) -> bool:
        """Whether ``url``'s row takes the place of its earlier one: a failed page queued again."""
        fp = self.crawl.failed_pages
        return bool(fp.queued) and fp.replaces(url)

    # -- a seeds file (peer.core.crawl.seedfeed) ----------------------------------------

    def seeds_file_begin(self, mark: FileMark) -> tuple[int, str | None]:
        """Where to start reading the seeds file, and what to say of a changed one (seedfeed rule 4)."""
        return self.crawl.seed_feed.begin(mark)

    @property
    def seeds_file_reading(self) -> bool:
        """Whether the seeds file is being read (begun, not at its end)."""
        return self.crawl.seed_feed.reading

    def seeds_file_summary(self) -> str:
        """The seeds file's one line: lines read, by outcome."""
        return self.crawl.seed_feed.summary()

    def seeds_file_lines(self) -> int:
        """Lines of the seeds file judged so far, in this run and the ones before."""
        return self.crawl.seed_feed.lines

    def seeds_file_room(self) -> bool:
        """Whether another batch may be read: the Outbox's backlog and the sieve's within bounds (rule 6)."""
        if self.crawl.sieve.pending > MOVE_BACKLOG:
            return False
        if self.node is None:
            return True
        st = self.node.outbox.stats()
        return st.pending + st.unacked * MOVE_CHUNK <= MOVE_BACKLOG

    def seeds_file_batch(self, lines: Sequence[bytes], end: int, now: float) -> list[PeerEffect]:
        """One batch of raw lines judged as seeds (seedfeed rules 1-2), its position, then Commit (1g)."""
        feed = self.crawl.seed_feed
        out: list[PeerEffect] = []
        for raw in lines:
            what, effects = self._seed_line(raw, now)
            feed.count(what)
            out += effects
        feed.advance(end)
        return [*out, SeedsAt(tuple(feed.to_counters().items())), Commit()]

    def _seed_line(self, raw: bytes, now: float) -> tuple[str, list[PeerEffect]]:
        """One seed line judged (seedfeed rules 1-2), a seeds file's or ``ring seed add``'s: its outcome
        and its effects, routed."""
        try:
            url = parse_line(raw)
        except ValueError:
            return INVALID, []
        if url is None:
            return SKIPPED, []
        effects = self.crawl.discover(url, 0, now, Origin.SEED)
        return outcome(effects), self.routed(effects, now)

    def _seeds_asked(self, a: SeedsAsked, now: float) -> list[PeerEffect]:
        """Rule 7: ``ring seed add``'s batch judged, routed, counted and committed; then its answer."""
        node = self.node
        assert node is not None
        msg = a.msg
        refused = self._seeds_refused(len(msg.lines) + msg.unreadable)
        if refused is not None:
            return self._ring(node.seeds_refused(a.route, msg.nonce, refused), now, 0.0)
        counts, forwarded, out = self._seed_batch(msg.lines, msg.unreadable, now)
        return out + self._ring(node.seeds_taken(a.route, msg.nonce, counts, forwarded, now - self.stalled,
                                                 self.crawl.cfg.crawl.seed_add_wait), now, 0.0)

    def seeds_alone(self, lines: Sequence[str], unreadable: int, now: float,
                    ) -> tuple[SeedAddStatus, dict[str, int], list[PeerEffect]]:
        """Rule 7 for a ring of one (``peer.engine.observe``): every host is ours, so a batch
        committed is a batch taken (``ACKED``); or why nothing was taken."""
        refused = self._seeds_refused(len(lines) + unreadable)
        if refused is not None:
            return refused, {}, []
        counts, _, out = self._seed_batch(lines, unreadable, now)
        return SeedAddStatus.ACKED, dict(counts), out

    def _seeds_refused(self, size: int) -> SeedAddStatus | None:
        """Rule 7: why a seed batch of ``size`` lines is taken not at all, or None."""
        if size > self.crawl.cfg.crawl.seed_add_batch:
            return SeedAddStatus.OVER_CAP
        return None if self.seeds_file_room() else SeedAddStatus.BUSY

    def _seed_batch(self, lines: Sequence[str], unreadable: int, now: float,
                    ) -> tuple[Counter[str], Counter[str], list[PeerEffect]]:
        """Rule 7: a seed batch judged and routed, counted, then its counts and ``Commit``; the
        counts by outcome, the URLs forwarded by owner, the effects."""
        counts: Counter[str] = Counter()
        forwarded: Counter[str] = Counter()
        if unreadable:
            counts[INVALID] += unreadable  # a line the tool could not carry
        out: list[PeerEffect] = []
        for line in lines:
            what, effects = self._seed_line(line.encode(), now)
            counts[what] += 1
            for e in effects:
                if isinstance(e, Forward):
                    forwarded[e.owner] += 1
            out += effects
        tally = self.crawl.seed_adds
        tally.add(counts)
        out += [SeedsAt(tuple(tally.to_counters().items())), Commit()]
        return counts, forwarded, out

    def seeds_file_give_up(self) -> None:
        """The seeds file broke off mid-way (an I/O error): its position stays where it is."""
        self.crawl.seed_feed.give_up()

    def seeds_file_end(self) -> list[PeerEffect]:
        """The file read to its end: its state journaled, and the reader may go idle."""
        feed = self.crawl.seed_feed
        feed.end()
        return [SeedsAt(tuple(feed.to_counters().items())), Commit()]

    # -- live settings (peer.core.config.livekeys) -------------------------------------

    @property
    def settings(self) -> dict[str, Any]:
        """The live settings in force: ``livekeys.live_document`` of our config, with ``paused``."""
        return set_paused(live_document(self.crawl.cfg), self.crawl.paused)

    @property
    def paused(self) -> bool:
        """Whether ``ring pause`` holds this peer: no request starts (those in flight end)."""
        return self.crawl.paused

    def adopt_settings(self, doc: Mapping[str, Any], now: float) -> list[PeerEffect]:
        """A live settings document (``ring set``, ``pause``, ``resume``) in force from now on (rule 8).

        What changed is logged, one line; a document the config's checks
        refuse (a member of another build, say) changes nothing and is
        logged as a warning: remote input, never an exception.
        """
        try:
            doc = check_document(doc)
        except LiveSettingError as exc:
            return [Log(logging.WARNING, f"live settings refused, nothing changed: {exc}")]
        crawl = self.crawl
        changed = differing_keys(self.settings, doc)
        if not changed:
            return []
        hosts = 0
        if changed != ["paused"]:
            cfg = with_live(crawl.cfg, doc)
            if self.node is not None and cfg.crawl.max_pages != crawl.cfg.crawl.max_pages:
                self.node.set_max_pages(cfg.crawl.max_pages)
            hosts = crawl.adopt(cfg, now)
        crawl.paused = bool(doc["paused"])
        what = ", ".join(k for k in changed if k != "paused")
        words = [f"live settings changed: {what} ({hosts:,} known hosts paced anew)"] if what else []
        if "paused" in changed:
            words.append("paused by ring pause: no request starts until ring resume" if crawl.paused
                         else "resumed: requests start again")
        return [Log(logging.INFO, "; ".join(words))]

    # -- a job ------------------------------------------------------------------------

    def next(self, now: float) -> tuple[Start | Sleep | Finished, list[PeerEffect]]:
        """The scheduler's next step (``CrawlCore.next``), the ring's counts in view, and a Sleep's effects."""
        gate = self._gate
        if gate is not None:
            gate.now = now
        step = self.crawl.next(now, gate)
        return step, self.routed(step.effects, now) if isinstance(step, Sleep) else []

    def admit(self, job: Job, now: float) -> tuple[Admission, list[PeerEffect]]:
        """What to do with ``job`` just before its request, and the effects that go first (1b)."""
        adm = self.crawl.admit(job, now, self._gate)
        effects = self.routed(adm.effects, now)
        if isinstance(adm, Drop | PassOn) and not (effects and isinstance(effects[-1], Commit)):
            effects.append(Commit())  # (a Drop's row has its own: one is enough)
        return adm, effects

    def fetched(self, job: Job, res: FetchResult, now: float) -> bool:
        """Whether ``res`` is to be parsed (``CrawlCore.fetched``)."""
        return self.crawl.fetched(job, res, now)

    def on_result(self, job: Job, res: FetchResult, parsed: Parsed | None, now: float) -> list[PeerEffect]:
        return self.routed(self.crawl.on_result(job, res, parsed, now), now)

    def on_robots(self, job: Job, res: FetchResult, now: float) -> list[PeerEffect]:
        return self.routed(self.crawl.on_robots(job, res, now), now)

    def on_sitemap(self, job: Job, res: FetchResult, sitemap: Sitemap | None, now: float) -> list[PeerEffect]:
        return self.routed(self.crawl.on_sitemap(job, res, sitemap, now), now)

    def robots_cancelled(self, job: Job) -> None:
        self.crawl.robots_cancelled(job)

    def internal(self, job: Job, exc_type: str, now: float) -> tuple[list[PeerEffect], bool]:
        """A bug in ``job`` (the engine's rule 8): its row, and whether the type is new."""
        effects, first = self.crawl.internal(job, exc_type, now)
        return self.routed(effects, now), first

    def job_ended(self, job: Job) -> None:
        self.crawl.job_ended(job)

    def stop(self) -> None:
        """Start no more requests (the ones in flight end)."""
        self.crawl.stopping = True

    # -- what a request carries, what a parse needs ---------------------------------

    @property
    def cookies_on(self) -> bool:
        """Whether any host keeps cookies (else a request never carries one)."""
        return self.crawl.cookies is not None

    def cookie_header(self, url: str, wall: float) -> str | None:
        jar = self.crawl.cookies
        return None if jar is None else jar.header(url, wall)

    @property
    def revisits(self) -> bool:
        """Whether this is a continuous crawl ([revisit] enabled)."""
        return self.crawl.recrawl is not None

    def validators(self, url: str) -> tuple[tuple[str, str], ...]:
        """A revisit's conditional headers (RFC 9110 §13.1); () for a first visit."""
        rc = self.crawl.recrawl
        return () if rc is None else rc.conditional(url)

    @property
    def parse_rules(self) -> ParseRules:
        """``parse_response``'s arguments after (url, body, charset)."""
        crawl = self.crawl
        cfg = crawl.cfg
        return (cfg.extract, cfg.crawl.max_links_per_page, crawl.params, crawl.page_rules, cfg.dedupe,
                crawl.requisite_jobs.enabled)

    def set_wall(self, now: float, wall: float) -> None:
        """The wall clock against ``now``: near-duplicate times and sitemap dates use it."""
        crawl = self.crawl
        crawl.wall_offset = wall - now  # peer.core.dedupe.held
        if crawl.recrawl is not None:
            crawl.recrawl.set_wall(now, wall)

    def is_requisite(self, url: str) -> bool:
        """Whether the job of ``url`` is a page requisite (peer.core.crawl.requisites), not a page."""
        return self.crawl.requisite_jobs.is_job(url)

    # -- a continuous crawl's visits (peer.core.revisit.recrawl) --------------------

    def is_revisit(self, url: str) -> bool:
        rc = self.crawl.recrawl
        return rc is not None and rc.is_revisit(url)

    def capture(self, url: str) -> str | None:
        """The archive's record a revisit of ``url`` refers to, packed (peer.core.warc.record.Refers)."""
        rc = self.crawl.recrawl
        return None if rc is None else rc.capture(url)

    def visited(self, row: Row, now: float, status: int | None, digest: str | None, etag: str | None,
                last_modified: str | None, capture: str | None = None) -> Visit | None:
        """``row``'s fetch recorded as a visit and scheduled again; None without revisits."""
        rc = self.crawl.recrawl
        if rc is None:
            return None
        return rc.visited(row.url, row.host, row.depth, now, status, digest, etag, last_modified,
                          row.sitemap_changefreq, row.sitemap_lastmod, capture)

    # -- spilled queues of hosts that moved (rule 6) ---------------------------------

    def moving(self) -> bool:
        """Whether spilled queues of hosts that changed owner wait to be passed on."""
        return self.node is not None and bool(self.crawl.frontier.moving)

    def move_spilled(self, now: float) -> list[PeerEffect] | None:
        """A chunk of the moving queues passed on, then Commit (1e); None: wait for acks first."""
        if self.node is None:
            return []
        st = self.node.outbox.stats()
        if st.pending + st.unacked * MOVE_CHUNK > MOVE_BACKLOG:
            return None
        return [*self.routed(self.crawl.handoffs.pass_on_moving(now, MOVE_CHUNK), now), Commit()]

    def others_pages(self) -> int:
        """Pages the other members say they requested (0 alone)."""
        return self.node.others_pages() if self.node is not None else 0

    def lease_state(self, now: float) -> LeaseState | None:
        """The ring's lease at ``now`` (the crawl's clock), for status and progress; None alone."""
        return self._gate.lease_state(now) if self._gate is not None else None

    # -- read-outs ----------------------------------------------------------------------

    @property
    def stopping(self) -> bool:
        return self.crawl.stopping

    @property
    def leaving(self) -> bool:
        """Whether this peer is leaving the ring (handing its hosts over)."""
        return self.crawl.leaving

    @property
    def sites(self) -> SiteSettings:
        """Each host's settings: the ``[[site]]`` blocks over the global config (for the fetcher)."""
        return self.crawl.sites

    # -- the ring's events -------------------------------------------------------------

    def receive(self, route: bytes, msg: Message, now: float, *, wall: float,
                user_id: str | None = None) -> list[PeerEffect]:
        """A decoded frame that came on ``route`` (``RingNode.receive``'s rules, then ours)."""
        assert self.node is not None
        return self._ring(self.node.receive(route, msg, now - self.stalled, user_id=user_id), now, wall)

    def tick(self, now: float) -> list[PeerEffect]:
        """A gossip round: our counts, membership, ring changes, hand-off markers."""
        assert self.node is not None
        crawl = self.crawl
        return self._ring(self.node.tick(now - self.stalled, idle=crawl.locally_idle(),
                                         pages=crawl.requested, in_flight=crawl.in_flight), now, 0.0)

    def flush(self, now: float) -> list[PeerEffect]:
        """The Outbox's frames due now (batches with the acks owed)."""
        assert self.node is not None
        return self._ring(self.node.flush(now - self.stalled), now, 0.0)

    def next_flush_at(self) -> float | None:
        """When the Outbox has frames due next (the ring's clock; the sockets add ``stalled`` back)."""
        return self.node.outbox.next_due_at() if self.node is not None else None

    def leave(self, now: float) -> list[PeerEffect]:
        """Leave the ring: fetch nothing more, hand everything over (a second call does nothing)."""
        if self.node is None or self.crawl.leaving:
            return []
        self.crawl.leaving = True
        return self._ring(self.node.leave(now - self.stalled), now, 0.0)

    def restart(self, now: float) -> list[PeerEffect]:
        """Announce a planned restart (``ring.membership.restarts``): our hosts stay ours while we
        are away. The caller stopped the crawl first; alone, or leaving, it does nothing."""
        if self.node is None or self.crawl.leaving:
            return []
        return self._ring(self.node.restart(now - self.stalled), now, 0.0)

    def announced(self) -> bool:
        """Whether every live member answered our restart's announce (alone: nobody to tell)."""
        return self.node is None or self.node.announced()

    def restart_waiting(self) -> list[str]:
        """The live members that have not answered our restart's announce yet."""
        return self.node.membership.restart_waiting() if self.node is not None else []

    def status_reply(self, nonce: int, figures: StatusFigures, *, now: float | None = None,
                     wall: float | None = None) -> StatusReply:
        assert self.node is not None
        return self.node.status_reply(nonce, figures, now=None if now is None else now - self.stalled, wall=wall)

    def address_of(self, member: str) -> str | None:
        """A member's address as the membership knows it."""
        rec = self.node.membership.members().get(member) if self.node is not None else None
        return rec.address if rec is not None else None

    def count(self, reason: str) -> None:
        """A frame the sockets refused, counted with the ring's drops."""
        if self.node is not None:
            self.node.count(reason)

    def _alive(self, peer: str) -> bool | None:
        """The membership's view of ``peer``, for the hand-off holds."""
        m = self.node.membership.members().get(peer) if self.node is not None else None
        if m is None:
            return None
        return m.state is not MemberState.DEAD

    def _ring(self, actions: Sequence[Action], now: float, wall: float) -> list[PeerEffect]:
        """The ring node's actions, those meant for the crawl done here, in their order."""
        out: list[PeerEffect] = []
        crawl = self.crawl
        for a in actions:
            if isinstance(a, (Deliver, Rerouted)):
                # Rule 2: ring.forwarding.intake's steps, in its order; DURABLE is rule 1c.
                for step in intake(a):
                    if isinstance(step, Take):
                        origin = _ORIGINS[step.source]
                        for url, depth in step.urls:
                            out += self.routed(crawl.discover(url, depth, now, origin), now)
                    elif isinstance(step, TakeSeen):
                        for url in step.urls:
                            out += crawl.discover(url, 0, now, Origin.HANDED_SEEN)
                    else:
                        out.append(Commit())
            elif isinstance(a, RingChanged):
                out += self.routed(crawl.handoffs.set_ring(a.ring, now), now)
            elif isinstance(a, HandOff):
                request = self._next_request
                self._next_request += 1
                self._reads[request] = _Read(a)
                out.append(ReadHosts(request))
            elif isinstance(a, Released):
                crawl.handoffs.handoff_done(a.sender)
                out.append(a)  # done; for the record (a log line, a test)
            elif isinstance(a, SeedStarts):
                # Epoch seconds in the message; our clock is ``now``.
                crawl.handoffs.seed_starts(list(a.starts), now, now - wall)
            elif isinstance(a, LeaveAsked):
                out += self.leave(now)
            elif isinstance(a, Granted):
                # Rule 1f: on disk before the round's messages that carry it.
                out += [a, Commit()]
            elif isinstance(a, NearAsked):
                m = a.msg
                # A member's claims judged against this peer's clock and ring (peer.core.dedupe.claims).
                ans = crawl.dedupe.serve_member(NearQuery(m.bands, m.fingerprint, m.url, m.sender, m.seen_at,
                                                          m.says, m.digest), m.sender, wall, self._host_owner)
                assert self.node is not None
                out.append(Send(m.sender, wire.NearAnswer(self.node.ring_name, crawl.peer_id, ans.url,
                                                          ans.duplicate_of, ans.distance, ans.superseded,
                                                          ans.exact, ans.exact_superseded)))
            elif isinstance(a, NearAnswered):
                m2 = a.msg
                out += self.routed(crawl.dup_answer(m2.sender, NearAnswer(m2.url, m2.duplicate_of, m2.distance,
                                                                          m2.superseded, m2.exact,
                                                                          m2.exact_superseded), now), now)
            elif isinstance(a, Reverdicted):
                m3 = a.msg
                out += self.routed(crawl.reverdict(m3.sender, Reverdict(m3.url, m3.duplicate_of, m3.kind,
                                                                        m3.distance)), now)
            elif isinstance(a, SeedsAsked):
                out += self._seeds_asked(a, now)
            elif isinstance(a, SettingsChanged):
                # ring.membership.epochs rule 7: in force here before any later action vouches
                # for it, then journaled by the driver (the action itself), before the sends.
                doc = decode_doc(a.record.doc)
                if doc is not None:
                    out += self.adopt_settings(doc, now)
                out.append(a)
            elif isinstance(a, StateTaken):
                # Rule 1h: imported, journaled and committed before the ack after it.
                assert self.node is not None
                self.node.dropped.update(import_state(crawl, a.records, crawl.wall_offset,
                                                      now + crawl.wall_offset))
                revisits, cookies = kept_on_disk(crawl, a.records)
                if revisits or cookies:
                    out += [StateKept(revisits, cookies), Commit()]
            elif isinstance(a, Count):
                pass  # counted by the node already
            else:
                out.append(a)
        return out

    # -- a hand-off's reads (rule 3) ------------------------------------------------------

    def hosts_read(self, request: int, hosts: Iterable[str], now: float) -> list[PeerEffect]:
        """The hosts the results hold: ask for the fetched URLs of those that moved."""
        read = self._reads.get(request)
        if read is None or read.inflight is not None:
            return []
        h = read.handoff
        read.inflight = self.crawl.inflight_urls()  # before the read: see rule 3
        handoffs = self.crawl.handoffs
        moved = handoffs.moved_hosts(hosts, h.old, h.ring)
        # Hosts handed to us before and not fetched here since have state here too.
        handed = {host for _, host in handoffs.handed()}.difference(moved)
        read.moved = (*moved, *handoffs.moved_hosts(handed, h.old, h.ring))
        return [ReadFetched(request, tuple(moved))]

    def fetched_read(self, request: int, rows: Iterable[tuple[str, str]], now: float, *,
                     wall: float) -> list[PeerEffect]:
        """(url, host) of the moved hosts' fetched pages: hand them over, start the ring's hand-off."""
        read = self._reads.get(request)
        if read is None or read.inflight is None:
            return []
        del self._reads[request]
        assert self.node is not None
        h = read.handoff
        crawl = self.crawl
        moved = crawl.handoffs.handoff_seen([*rows, *read.inflight], h.old, h.ring)
        outbox = self.node.outbox
        for url, owner in moved:
            outbox.add_seen(url, owner, now)
        box = self.node.statebox
        for dest, key, kind, record in export_state(crawl, read.moved, h.ring.owner, crawl.wall_offset):
            box.add(dest, key, kind, record)
        # Request starts travel in epoch seconds (HostStarts).
        starts = crawl.handoffs.handoff_starts(h.old, h.ring, wall - now)
        return self._ring(self.node.begin_handoff(h.version, len(moved), starts, now - self.stalled,
                                                  seen_to={owner for _, owner in moved}), now, wall)
