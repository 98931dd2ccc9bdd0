"""The crawl core's side of the ring: who owns a host, ring changes, hand-offs, spilled queues that move (pure).

Boldi et al., UbiCrawler §3: consistent hashing moves only the hosts whose
owner changed. ``Handoffs`` is a part of ``peer.core.crawl.core.CrawlCore``:
it owns the ring, the hand-off holds (``peer.core.handoff.holds``) and the
URLs handed to this peer as fetched, and reaches the rest of the core
through the frontier, the limits and two callables it is handed (pass a
queued URL on, push one). ``set_ring`` passes on the queued URLs of hosts
lost (to a member back from dead too: they merge with its queue there, and
its seen set drops what it fetched); ``hold_from`` holds the hosts gained
until their previous owners' ``HandoffDone``, or a dead one's return or
``takeover_after``; a hand-off reads what was fetched here of the hosts
that moved (``moved_hosts``, ``handoff_seen``; the jobs in flight are
``peer.core.crawl.jobs.Jobs.fetching``) and their last request starts
(``handoff_starts``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from peer.core.crawl.decisions import Effect
from peer.core.handoff.holds import Holds, Liveness

if TYPE_CHECKING:
    from peer.core.crawl.limits import Limits
    from peer.core.frontier.frontier import Frontier
    from ring.hashring import HashRing

__all__ = ["Handoffs", "MAX_HOST_KEY", "PassOn"]

#: Longest host key a HostStarts message carries (ring.messages.MAX_NAME).
MAX_HOST_KEY = 256

#: Pass a URL queued here on to its host's new owner: (url, depth, owner, host, out).
PassOn = Callable[[str, int, str, str, list[Effect]], None]


def _unknown(peer: str) -> bool | None:
    return None


class Handoffs:
    """The ring's part of ``CrawlCore`` (module docstring)."""

    __slots__ = ("ring", "holds", "alive", "hold_timeout", "handoffs_in", "_me", "_frontier", "_limits",
                 "_takeover_after", "_pass_on", "_push", "_handed_seen", "_seen_in")

    def __init__(self, me: str, frontier: Frontier, limits: Limits, *, takeover_after: float,
                 pass_on: PassOn, push: Callable[[str, str, int, float], None]) -> None:
        self._me = me
        self._frontier = frontier
        self._limits = limits
        self._takeover_after = takeover_after
        self._pass_on = pass_on
        self._push = push
        #: The ring of live members, or None alone (every host is ours).
        self.ring: HashRing | None = None
        self.holds = Holds()
        #: Whether a peer is alive (True), dead (False) or unknown (None): the
        #: ring node's membership; hand-off holds ask it.
        self.alive: Liveness = _unknown
        #: How long a gained host waits for its previous owner's HandoffDone.
        self.hold_timeout = 0.0
        #: Seen URLs taken from hand-offs.
        self.handoffs_in = 0
        # Handed-over URLs that were already queued here when they came:
        # dropped when their job comes up instead of fetched again.
        self._handed_seen: set[str] = set()
        # URLs handed to us as fetched (url -> host): passed on with our own
        # rows when their hosts move again, since only we hold them now.
        self._seen_in: dict[str, str] = {}

    def owner(self, host: str) -> str:
        """The peer that fetches ``host`` now (this one when alone)."""
        ring = self.ring
        return ring.owner(host) if ring is not None and len(ring) else self._me

    # -- URLs handed to us as fetched -----------------------------------------------------

    def handed_in(self, url: str, host: str, *, queued: bool) -> None:
        """``url`` was handed to us as fetched; ``queued``: it was in our Bloom filter already."""
        self.handoffs_in += 1
        self._seen_in[url] = host
        if queued:
            # Queued (it came by another path before the hand-off did), in
            # flight, or done. A queued one must not run.
            self._handed_seen.add(url)

    def handed(self) -> list[tuple[str, str]]:
        """(url, host) of every URL handed to us as fetched, for a snapshot."""
        return list(self._seen_in.items())

    def restore_handed(self, handed: dict[str, str], queued: Callable[[str, str], bool]) -> None:
        """A resumed crawl's URLs handed to us as fetched (``peer.state.recovery``).

        Each goes on with its host's next move; one the recovered queue may
        hold (``queued(url, host)``: a copy queued before the hand-off came,
        which the previous owner fetched) is dropped when its job comes up.
        """
        self._seen_in.update(handed)
        self._handed_seen.update(url for url, host in handed.items() if queued(url, host))

    def was_handed_in(self, url: str) -> bool:
        """Whether ``url`` was handed to us as fetched by its host's previous owner."""
        return url in self._seen_in

    def fetched_elsewhere(self, url: str) -> bool:
        """Whether the queued ``url`` was fetched by its host's previous owner (a snapshot leaves
        it out: its job is dropped when it comes up, and would run after a restart)."""
        return url in self._handed_seen

    @property
    def any_fetched_elsewhere(self) -> bool:
        """Whether some queued URL was fetched by its host's previous owner (:meth:`fetched_elsewhere`)."""
        return bool(self._handed_seen)

    def take_fetched_elsewhere(self, url: str) -> bool:
        """Whether the queued ``url`` was fetched by its host's previous owner (forgotten: its job is dropped)."""
        if self._handed_seen and url in self._handed_seen:
            self._handed_seen.discard(url)
            return True
        return False

    # -- ring changes ---------------------------------------------------------------------

    def set_ring(self, ring: HashRing, now: float) -> list[Effect]:
        """The live member set changed: hosts no longer ours go to their owners."""
        old, self.ring = self.ring, ring
        me, fr = self._me, self._frontier
        out: list[Effect] = []
        if len(ring):
            # Hosts are placed by a hash of their name, not of their IP, so
            # this peer owns about its ring share of any IP's hosts: its share
            # of the IP's budget (BUbiNG divides by the number of agents;
            # this is the same for equal weights and follows unequal ones).
            # Every known IP takes it too: one first seen before the ring
            # formed would otherwise keep a lone peer's whole budget.
            fr.set_ring_ip_share(ring.shares().get(me, 1.0), now)
        for host in fr.queued_hosts():
            owner = ring.owner(host)
            if owner != me:
                # The heads now; spilled blocks by pass_on_moving (frontier rule 10).
                for job in fr.release_host(host):
                    self._pass_on(job.url, job.depth, owner, job.host, out)
        if old is not None and me in ring and set(old) != set(ring):
            # Deaths and returns first: they change the older holds (holds rules 3, 5).
            for gone in sorted(set(old) - set(ring)):
                if self.alive(gone) is False:
                    self.holds.dead(gone, now, self._takeover_after)
            for back in sorted(set(ring) - set(old)):
                self.holds.back(back, now, self.hold_timeout)
            self.hold_from(old, now)
        return out

    def hold_from(self, old: HashRing, now: float) -> None:
        """Hold the hosts gained from their previous owners until their HandoffDone or return (peer/core/handoff/holds.py)."""
        if len(old):
            self.holds.add(old, old, self._me, now, self.alive, hold_timeout=self.hold_timeout,
                           takeover_after=self._takeover_after)

    def handoff_done(self, sender: str) -> None:
        self.holds.release(sender)

    # -- a hand-off's reads -----------------------------------------------------------------

    def handoff_seen(self, rows: Iterable[tuple[str, str]], old: HashRing | None,
                     ring: HashRing) -> list[tuple[str, str]]:
        """(url, new owner) of the fetched URLs whose hosts moved between ``old`` and ``ring``.

        ``rows``: (url, host) of the pages fetched here and in flight. The
        URLs handed to us as fetched go along too: their next owner had them
        only from us.
        """
        me = self._me
        owners: dict[str, tuple[str, bool]] = {}
        out: list[tuple[str, str]] = []
        for url, host in [*rows, *self._seen_in.items()]:
            got = owners.get(host)
            if got is None:
                new = ring.owner(host) if len(ring) else me
                moved = new != me and (old is None or old.owner(host) != new)
                got = owners[host] = (new, moved)
            if got[1]:
                out.append((url, got[0]))
        return out

    def moved_hosts(self, hosts: Iterable[str], old: HashRing | None, ring: HashRing) -> list[str]:
        """Those of ``hosts`` (the results' host index) that move to another peer between ``old`` and ``ring``."""
        me = self._me
        if not len(ring):
            return []
        out = []
        for host in hosts:
            new = ring.owner(host)
            if new != me and (old is None or old.owner(host) != new):
                out.append(host)
        return out

    def handoff_starts(self, old: HashRing | None, ring: HashRing,
                       offset: float) -> dict[str, list[tuple[str, float]]]:
        """{new owner: [(host, request start + ``offset``)]} of the hosts that moved away.

        The frontier keeps a host's starts for the ceiling's horizon after it
        leaves our queue (``remove_host``), so they are still here when the
        hand-off runs; the new owner seeds its ceiling with them (rule 9).
        """
        out: dict[str, list[tuple[str, float]]] = {}
        if not len(ring):
            return out
        me, fr = self._me, self._frontier
        for host in fr.known_hosts():
            new = ring.owner(host)
            if new == me or (old is not None and len(old) and old.owner(host) == new):
                continue
            for t in fr.recent_starts(host):
                if len(host) <= MAX_HOST_KEY:
                    out.setdefault(new, []).append((host, t + offset))
        return out

    def seed_starts(self, starts: Iterable[tuple[str, float]], now: float, offset: float) -> None:
        """Count request starts made before (their time + ``offset`` = this clock) on our hosts."""
        by_host: dict[str, list[float]] = {}
        for host, t in starts:
            if self.owner(host) == self._me:
                by_host.setdefault(host, []).append(t + offset)
        for host, times in by_host.items():
            self._frontier.seed_starts(host, times, now)

    def resume_spilled(self, now: float, heads: dict[str, list[Any]] | None = None) -> list[Effect]:
        """Put a recovered spill store back: our hosts' queues into the frontier, the rest on.

        Before the recovered journal is pushed: a host's snapshot head (taken
        from ``heads``, flat) and then its store's URLs come first
        (peer/state/recovery.py). The heads of hosts no longer ours stay in
        ``heads`` for the caller to pass on. Its URLs are in the Bloom filter
        already, like any recovered ones.
        """
        out: list[Effect] = []
        fr = self._frontier
        spill = fr.spill_store
        if spill is None:
            return out
        heads = {} if heads is None else heads
        for host in spill.hosts():
            owner = self.owner(host)
            if owner == self._me:
                self._limits.queued(host, fr.adopt(host, now, heads.pop(host, None)))
            else:
                fr.release_stored(host)  # passed on by pass_on_moving (frontier rule 10)
        return out

    def pass_on_moving(self, now: float, limit: int) -> list[Effect]:
        """About ``limit`` spilled URLs of hosts that changed owner, passed on (frontier rule 10).

        A host that is ours again (the ring changed back) keeps its blocks.
        """
        out: list[Effect] = []
        fr = self._frontier
        for host, flat in fr.take_moving(limit):
            owner = self.owner(host)
            if owner == self._me:
                fr.reattach(host, now)
                for i in range(0, len(flat), 2):
                    self._push(flat[i], host, flat[i + 1], now)
                continue
            for i in range(0, len(flat), 2):
                self._pass_on(flat[i], flat[i + 1], owner, host, out)
        return out
