"""What a peer keeps on disk, as its core sees it: the recovered state, a snapshot's view, the seen set (pure).

A part of ``peer.core.door.peer.PeerCore`` (its ``disk``): the driver's files
(``peer.state``: the journal, snapshots, the spill store, the exact seen
set's runs, the cookie jar's file; the ``fetches`` table) are written and
read by the engine, and this part is the core's side of each, so that the
engine reaches the crawl core and the ring node through nothing else.
Where the disk must hold something before what follows, the list it
returns says so with a ``Commit`` (``peer.core.door.peer`` rule 1d, 1g):

- ``restore(recovered)`` before the journal begins again (the seen set,
  the page count, the grants), and ``forget_handed_over`` after a graceful
  leave; ``resume(recovered, starts)`` once the ring is joined, then ``Commit``;
- ``attach_spill``, ``flush_tails``, ``snapshot_view``, ``counters``: the
  spill store and what a snapshot writes;
- ``sieve_take`` (``Commit`` first: every hash the sieve's files will hold
  has its journal record), ``sieve_verdicts`` (then ``Commit``),
  ``sieve_readd``, ``sieve_off``;
- the cookie jar's records, a continuous crawl's earlier visits.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from peer.core.crawl.core import CrawlCore
from peer.core.crawl.decisions import Effect, Origin
from peer.core.crawl.seedadd import SeedTally
from peer.core.crawl.seedfeed import SeedFeed
from peer.core.door.effects import Commit, PeerEffect
from peer.core.frontier.spillqueue import SpillStore
from peer.core.handoff.state import import_state
from ring.statebox import StateRecords
from peer.core.revisit.duequeue import FarFigures
from peer.core.seen.bloom import BloomFilter
from peer.core.seen.sieve import SieveBatch
from ring.membership.budget import Grants, grants_from_counters, grants_to_counters
from ring.node import RingNode

__all__ = ["Persistence", "Resumable", "SnapshotView"]


class Resumable(Protocol):
    """What a recovered crawl state gives back (``peer.state.recovery.Recovered`` is one)."""

    @property
    def bloom(self) -> BloomFilter: ...
    @property
    def counters(self) -> dict[str, float]: ...
    @property
    def queued(self) -> dict[str, int]: ...
    @property
    def forwards(self) -> list[tuple[str, int]]: ...


@dataclass(frozen=True, slots=True)
class SnapshotView:
    """One moment's state for a snapshot written off the loop (journal rule 4)."""

    bloom: BloomFilter                   # a copy: the crawl goes on adding to its own
    queued: list[tuple[str, int]]        # with a spill store: the heads, and the jobs in flight
    forwards: list[tuple[str, int]]      # the Outbox's unacked URLs
    counters: dict[str, float]
    handed: list[tuple[str, str]] = field(default_factory=list)  # (url, host) handed to us as fetched
    #: (revisit records, cookies) handed to us with their hosts and on no other disk yet
    #: (peer/core/handoff/state.py rule 5).
    handed_state: tuple[list[Any], list[Any]] = field(default_factory=lambda: ([], []))
    #: With a spill store: (host, flat head) of the frontier's heads, packed by the writer.
    heads: list[tuple[str, list[Any]]] = field(default_factory=list)
    #: A recovered journal's URLs not yet put back (CrawlCore.defer_recovered).
    recovering: list[tuple[str, int]] = field(default_factory=list)


#: A seed seen leaving, as a persisted counter: ``left:<id>`` = the incarnation it left with (0: none).
LEFT_PREFIX = "left:"


def left_to_counters(left: dict[str, int]) -> dict[str, float]:
    """Tombstones as counters; a 0 clears one a former process wrote (counters replace by name).
    Incarnations are epoch milliseconds, exact in a float (below 2**53)."""
    return {LEFT_PREFIX + mid: float(inc) for mid, inc in left.items()}


def left_from_counters(counters: dict[str, float]) -> dict[str, int]:
    return {name[len(LEFT_PREFIX):]: int(v) for name, v in counters.items()
            if name.startswith(LEFT_PREFIX) and v > 0}


class Persistence:
    """The core's side of a peer's files (module docstring).

    ``node()`` is the ring node (None alone); ``routed`` puts the crawl's
    effects through the peer core (their Forwards into the Outbox).
    """

    def __init__(self, crawl: CrawlCore, node: Callable[[], RingNode | None],
                 routed: Callable[[Iterable[Effect], float], list[PeerEffect]]) -> None:
        self._crawl = crawl
        self._node = node
        self._routed = routed
        #: Whether a crawl on disk was resumed, and the max_pages grants its former process gave.
        self.resumed = False
        self.resumed_grants: Grants = ()
        #: Seeds its former process saw leave: id -> incarnation (``Membership.remember_left``).
        self.resumed_left: dict[str, int] = {}
        #: The hosts whose schedule was read back from ``fetches`` (``PeerCore.pass_on_restored``).
        self.restored_hosts: set[str] = set()

    # -- the state recovered ------------------------------------------------------------

    def restore(self, rec: Resumable) -> None:
        """A recovered state's seen set and counters, before the journal begins again."""
        crawl = self._crawl
        crawl.bloom = rec.bloom
        # The file holds the policy it was written with; the config now in
        # force decides (an operator raises max_capacity and restarts).
        b = crawl.cfg.bloom
        crawl.bloom.set_policy(b.growth, b.max_capacity)
        crawl.requested = int(rec.counters.get("pages", 0))
        crawl.budgets.restore(rec.counters)  # each host's pages and bytes spent (budgets rule 5)
        crawl.seed_feed = SeedFeed.from_counters(rec.counters)  # its position and counts (seedfeed rule 3)
        crawl.seed_adds = SeedTally.from_counters(rec.counters)  # ring seed add's counts (seedadd rule 2)
        # The URLs other peers handed us as fetched: a copy still queued must not run,
        # and they go on with their hosts' next move (a resumed peer forgot them before).
        handed: dict[str, str] = getattr(rec, "handed", {})
        spill = getattr(rec, "spill", None)
        spilled = set(spill.hosts()) if spill is not None and handed else set()
        crawl.handoffs.restore_handed(handed, lambda url, host: url in rec.queued or host in spilled)
        # What this peer gave of the max_pages budget (ring.membership.budget): never spent again.
        self.resumed_grants = grants_from_counters(rec.counters)
        self.resumed_left = left_from_counters(rec.counters)
        self.resumed = True

    def forget_handed_over(self, fetched: Iterable[str]) -> None:
        """After a graceful leave: the seen set is what this peer ``fetched`` (its rows), no more.

        A leaver handed the URLs it had queued to their hosts' new owners; its
        Bloom filter still holds them (a Bloom filter forgets nothing). When
        it rejoins, the owners hand its hosts back with those URLs, and that
        filter would drop them as seen: lost. A filter of its own rows keeps
        it from fetching its pages again; the rest comes back by hand-off.
        """
        crawl, b = self._crawl, self._crawl.cfg.bloom
        bloom = BloomFilter(b.capacity, b.error_rate, growth=b.growth, max_capacity=b.max_capacity)
        bloom.add_many(fetched)
        crawl.bloom = bloom

    def resume(self, rec: Resumable, starts: Iterable[tuple[str, float]], now: float, *,
               wall: float) -> list[PeerEffect]:
        """Put a recovered queue back: ours into the frontier, the rest to its owners; then Commit (1g).

        ``starts``: the hosts' request starts of the last ceiling horizon, in
        epoch seconds (the engine's rule 9).
        """
        crawl, routed = self._crawl, self._routed
        # The spilled queues first, each host's snapshot head in front of its
        # blocks: they came before what the journal queued.
        heads: dict[str, list[Any]] = dict(getattr(rec, "heads", {}))
        out = routed(crawl.handoffs.resume_spilled(now, heads), now)
        # Heads of hosts no longer ours (or with no store): on to their owners, or queued.
        out += routed(crawl.recovered((pair for head in heads.values()
                                       for pair in zip(head[::2], head[1::2])), now), now)
        # What the journal queued since: put back after the first requests (drain_recovered).
        crawl.defer_recovered(list(rec.queued.items()))
        for url, depth in rec.forwards:
            # Like any URL handed to us: to its owner, or through our Bloom filter.
            out += routed(crawl.discover(url, depth, now, Origin.RELAY), now)
        crawl.handoffs.seed_starts(starts, now, now - wall)
        out.append(Commit())
        return out

    def drain_recovered(self, now: float, limit: int) -> list[PeerEffect]:
        """Up to ``limit`` of a recovered journal's queued URLs put back (CrawlCore.defer_recovered)."""
        return self._routed(self._crawl.drain_recovered(now, limit), now)

    def recovering(self) -> int:
        """Recovered URLs still to put back."""
        return self._crawl.recovering

    # -- the spill store and snapshots --------------------------------------------------

    def attach_spill(self, spill: SpillStore, head_per_host: int) -> None:
        """Keep at most ``head_per_host`` URLs a host in RAM, the rest in ``spill`` (frontier rule 9)."""
        self._crawl.frontier.set_spill(spill, head_per_host)

    def flush_tails(self) -> None:
        """Hand every host's tail to the spill store, before it is checkpointed."""
        self._crawl.frontier.flush_tails()

    def counters(self) -> dict[str, float]:
        """What a snapshot and the journal's last record keep: the page count, the grants, the seeds file's position."""
        node = self._node()
        grants = node.membership.me.grants if node is not None else self.resumed_grants
        left = node.membership.tombstones() if node is not None else self.resumed_left
        return {"pages": self._crawl.requested, **grants_to_counters(grants), **left_to_counters(left),
                **self._crawl.seed_feed.to_counters(), **self._crawl.seed_adds.to_counters(),
                **self._crawl.budgets.counters()}

    def row_counters(self, host: str) -> dict[str, float]:
        """What the journal keeps with a page row of ``host``: the page count, and the host's
        budget counts when a budget is set (peer.core.crawl.budgets rule 5)."""
        crawl = self._crawl
        out: dict[str, float] = {"pages": crawl.requested}
        if crawl.budgets.active:
            out.update(crawl.budgets.counters(host))
        return out

    def snapshot_view(self) -> SnapshotView:
        """One moment's state for a snapshot; the spill store's tails flushed (its checkpoint next)."""
        crawl, node = self._crawl, self._node()
        view = SnapshotView(copy.deepcopy(crawl.bloom), crawl.snapshot_queue(),
                            node.outbox.queued().urls if node is not None else [], self.counters(),
                            crawl.handoffs.handed(), self.handed_state(), crawl.snapshot_heads(),
                            crawl.snapshot_recovering())
        self.flush_tails()  # so the store and the heads hold the whole queue
        return view

    # -- the exact seen set's files (peer.core.seen.sieve) --------------------------------

    def sieve_off(self) -> None:
        """No disk sieve (numpy missing): the seen set stays a Bloom filter alone."""
        sieve = self._crawl.sieve
        sieve.disk_after = 2**63
        sieve.exact = False

    @property
    def sieve_exact(self) -> bool:
        return bool(self._crawl.sieve.exact)

    def sieve_readd(self, urls: Iterable[str], now: float) -> None:
        """The hashes of the rows a resume put back, which the sieve's files may lack."""
        crawl = self._crawl
        crawl.sieve_readd(urls, now)
        crawl.sieve.note_size(crawl.bloom.count)

    def sieve_due_at(self) -> float | None:
        return self._crawl.sieve.due_at()

    def sieve_kicked(self) -> bool:
        """Whether a sieve batch filled since last asked (its loop should look now)."""
        return self._crawl.sieve.take_kick()

    def sieve_take(self, now: float) -> tuple[SieveBatch | None, list[PeerEffect]]:
        """A batch for the sieve's files, and the Commit that comes before they hold it (1d)."""
        return self._crawl.sieve.take(now), [Commit()]

    def sieve_verdicts(self, batch: SieveBatch, new: list[bool], now: float) -> list[PeerEffect]:
        """The files' answers for ``batch``: the new URLs queued, then Commit (1d)."""
        return [*self._routed(self._crawl.sieve_verdicts(batch, new, now), now), Commit()]

    def handed_state(self) -> tuple[list[Any], list[Any]]:
        """(revisit records, cookies) handed to us that only the journal holds on disk (state.py rule 5)."""
        crawl = self._crawl
        rc, jar = crawl.recrawl, crawl.cookies
        return (rc.handed_records(crawl.wall_offset) if rc is not None else [],
                list(jar.handed_records()) if jar is not None else [])

    def restore_state(self, revisits: list[Any], cookies: list[Any], wall: float) -> int:
        """A resumed crawl's handed records (``Recovered.handed_state``), after the ``fetches``
        schedule and the jar's file, each part keeping the newer; how many were taken."""
        crawl = self._crawl
        got = import_state(crawl, StateRecords(tuple(revisits), tuple(cookies)), crawl.wall_offset, wall,
                           keep_held=True)
        return got["handoff_state.revisits_taken"] + got["handoff_state.cookies_taken"]

    def cookies_saved(self, changes: int) -> None:
        """The jar's file was written as the jar stood at ``changes`` (``cookie_changes``)."""
        jar = self._crawl.cookies
        if jar is not None:
            jar.saved(changes)

    # -- the cookie jar's file, a continuous crawl's visits ----------------------------

    def cookie_changes(self) -> int:
        """Grows with every change of the jar (0 without one)."""
        jar = self._crawl.cookies
        return 0 if jar is None else jar.changes

    def cookie_records(self) -> list[list[object]]:
        jar = self._crawl.cookies
        return [] if jar is None else jar.records()

    def restore_cookies(self, records: Iterable[object], wall: float) -> tuple[int, int]:
        """A resumed jar: (cookies kept, their hosts)."""
        jar = self._crawl.cookies
        if jar is None:
            return 0, 0
        kept = jar.restore(records, wall)
        return kept, len(jar.hosts())

    def restore_visits(self, rows: Iterable[tuple[object, ...]], now: float, wall: float) -> int:
        """Schedule the pages of earlier runs from their last ``fetches`` rows (recrawl rule 7)."""
        rc = self._crawl.recrawl
        if rc is None:
            return 0
        self.restored_hosts.update(row[1] for row in rows if len(row) > 1 and isinstance(row[1], str))
        return rc.restore(rows, now, wall)

    def attach_revisit_store(self, store: SpillStore, now: float) -> bool:
        """The due queue's far records go to ``store`` (duequeue rule 5); False without revisits."""
        rc = self._crawl.recrawl
        if rc is None or rc.config.memory_window <= 0:
            return False
        rc.attach_far(store, now)
        return True

    def revisit_far(self) -> FarFigures | None:
        """The due queue's far tier's figures; None without one."""
        rc = self._crawl.recrawl
        return None if rc is None or rc.config.memory_window <= 0 else rc.far_figures()
