"""The crawl core's side of the ring: ring changes, hand-offs, spilled queues that move (pure).

Boldi et al., UbiCrawler §3: consistent hashing moves only the hosts whose
owner changed. ``set_ring`` passes on the queued URLs of hosts lost
(to a member back from dead too: they merge with its queue there, and its
seen set drops what it fetched); ``hold_from`` holds the hosts gained until
their previous owners' ``HandoffDone``, or a dead one's return or
``takeover_after`` (``peer.core.handoff.holds``); a hand-off reads what was fetched
here of the hosts that moved (``moved_hosts``, ``inflight_urls``,
``handoff_seen``) and their last request starts (``handoff_starts``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from peer.core.crawl.decisions import Effect

if TYPE_CHECKING:
    from ring.hashring import HashRing

from peer.core.crawl.state import _FETCHING, MAX_HOST_KEY, CrawlState

__all__ = ["RingSide"]


class RingSide(CrawlState):
    """The ring's part of ``CrawlCore`` (module docstring)."""

    def set_ring(self, ring: HashRing, now: float) -> list[Effect]:
        """The live member set changed: hosts no longer ours go to their owners."""
        old, self.ring = self.ring, ring
        out: list[Effect] = []
        if len(ring):
            # Hosts are placed by a hash of their name, not of their IP, so
            # this peer owns about its ring share of any IP's hosts: its share
            # of the IP's budget (BUbiNG divides by the number of agents;
            # this is the same for equal weights and follows unequal ones).
            self.frontier.set_default_ip_share(ring.shares().get(self.peer_id, 1.0))
        for host in self.frontier.queued_hosts():
            owner = ring.owner(host)
            if owner != self.peer_id:
                # The heads now; spilled blocks by pass_on_moving (frontier rule 10).
                for job in self.frontier.release_host(host):
                    self._pass_on(job.url, job.depth, owner, job.host, out)
        if old is not None and self.peer_id in ring and set(old) != set(ring):
            # Deaths and returns first: they change the older holds (holds rules 3, 5).
            for gone in sorted(set(old) - set(ring)):
                if self.alive(gone) is False:
                    self.holds.dead(gone, now, self.cfg.ring.takeover_after)
            for back in sorted(set(ring) - set(old)):
                self.holds.back(back, now, self.hold_timeout)
            self.hold_from(old, now)
        return out

    def hold_from(self, old: HashRing, now: float) -> None:
        """Hold the hosts gained from their previous owners until their HandoffDone or return (peer/core/handoff/holds.py)."""
        if len(old):
            self.holds.add(old, old, self.peer_id, now, self.alive, hold_timeout=self.hold_timeout,
                           takeover_after=self.cfg.ring.takeover_after)

    def handoff_done(self, sender: str) -> None:
        self.holds.release(sender)

    def inflight_urls(self) -> list[tuple[str, str]]:
        """(url, host) of the jobs whose page request is on the wire now (admit said ``Fetch``).

        A hand-off calls these fetched. Not the other jobs in flight: one
        started whose task has not run ``admit`` yet, or one waiting for its
        host's robots.txt, comes back to ``admit`` after the ring changed and
        is passed on to its new owner (``PassOn``), which would drop it as
        seen if it were in the hand-off too: a URL fetched by nobody.
        """
        marks = self._marks
        return [(url, hd[0]) for url, hd in self._inflight.items() if marks.get(url, 0) & _FETCHING]

    def handoff_seen(self, rows: Iterable[tuple[str, str]], old: HashRing | None,
                     ring: HashRing) -> list[tuple[str, str]]:
        """(url, new owner) of the fetched URLs whose hosts moved between ``old`` and ``ring``.

        ``rows``: (url, host) of the pages fetched here and in flight. The
        URLs handed to us as fetched go along too: their next owner had them
        only from us.
        """
        me = self.peer_id
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
        me = self.peer_id
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
        me, fr = self.peer_id, self.frontier
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
            if self._owner(host) == self.peer_id:
                by_host.setdefault(host, []).append(t + offset)
        for host, times in by_host.items():
            self.frontier.seed_starts(host, times, now)

    def resume_spilled(self, now: float) -> list[Effect]:
        """Put a recovered spill store back: our hosts' queues into the frontier, the rest on.

        Before the recovered heads and journal are pushed: the store's URLs
        of a host come first (peer/state/journal.py, recovery). Its URLs are in the
        Bloom filter already, like any recovered ones.
        """
        out: list[Effect] = []
        fr = self.frontier
        spill = fr.spill_store
        if spill is None:
            return out
        for host in spill.hosts():
            owner = self._owner(host)
            if owner == self.peer_id:
                self.limits.queued(host, fr.adopt(host, now))
            else:
                fr.release_stored(host)  # passed on by pass_on_moving (frontier rule 10)
        return out

    def pass_on_moving(self, now: float, limit: int) -> list[Effect]:
        """About ``limit`` spilled URLs of hosts that changed owner, passed on (frontier rule 10).

        A host that is ours again (the ring changed back) keeps its blocks.
        """
        out: list[Effect] = []
        fr = self.frontier
        for host, flat in fr.take_moving(limit):
            owner = self._owner(host)
            if owner == self.peer_id:
                fr.reattach(host, now)
                for i in range(0, len(flat), 2):
                    self._push(flat[i], host, flat[i + 1], now)
                continue
            for i in range(0, len(flat), 2):
                self._pass_on(flat[i], flat[i + 1], owner, host, out)
        return out

    def snapshot_queue(self) -> list[tuple[str, int]]:
        """(url, depth) of what a snapshot lists: queued (in RAM, with a spill store) or in flight."""
        fr = self.frontier
        jobs = fr.iter_heads() if fr.spill_store is not None else fr.iter_queued()
        # Not the sitemap jobs: they are found again after a restart (peer/core/sitemaps/jobs.py rule 3).
        sitemaps = self._sitemap_jobs
        queued = [(j.url, j.depth) for j in jobs if j.url not in sitemaps]
        queued += [(url, hd[1]) for url, hd in self._inflight.items() if url not in sitemaps]
        queued += [(p.url, p.depth) for p in self.sieve.pending_urls()]
        return queued
