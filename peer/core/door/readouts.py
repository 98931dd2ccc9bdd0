"""What a running peer shows: its status row, progress line, summary and scrape, read from its cores (pure).

A part of ``peer.core.door.peer.PeerCore`` (its ``figures``): it reads the crawl
core and, in a ring, the ring node, and adds what only the driver measures,
passed in as values (the wall-clock time since the start, the resolver's
hit rate, the fetcher's malformed-header counts, the WARC writer's
counters). Every figure is named as ``ring.vocabulary`` names it, in the
status row, the progress line, the summary, stats.json and the metrics alike.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping

from peer.core.crawl.core import CrawlCore
from peer.core.crawl.decisions import StopReason
from peer.core.crawl.figures import not_requested_now
from peer.core.crawl.limits import Limits
from peer.core.frontier.frontier import PidSample
from peer.core.run.progress import ProgressSnapshot
from peer.core.run.scrape import PeerFigures, quantiles
from peer.core.run.stats import Summary
from peer.core.seen.bloom import BloomFilter
from ring.membership.lease import LeaseState
from ring.node import RingNode
from ring.seedadds import CAPS as SEED_ADD_CAPS, UNTAKEN as SEED_ADD_UNTAKEN
from ring.status import StatusFigures, lease_status, lease_words
from ring.vocabulary import NOT_REQUESTED_CAPS, failed, split_pairs

__all__ = ["Readouts"]


class Readouts:
    """The figures of one peer (module docstring); ``node()`` is its ring node, None alone."""

    def __init__(self, crawl: CrawlCore, node: Callable[[], RingNode | None],
                 lease: Callable[[float], LeaseState | None]) -> None:
        self._crawl = crawl
        self._node = node
        self._lease = lease
        #: Most queued URLs on disk seen by a progress line or the summary (frontier rule 9).
        self.spill_peak = 0

    @property
    def summary(self) -> Summary:
        return self._crawl.summary

    @property
    def requested(self) -> int:
        """Page rows whose request was made (what max_pages counts)."""
        return self._crawl.requested

    @property
    def in_flight(self) -> int:
        return self._crawl.in_flight

    @property
    def handoffs_in(self) -> int:
        """Seen URLs taken from hand-offs."""
        return self._crawl.handoffs_in

    @property
    def bloom(self) -> BloomFilter:
        return self._crawl.bloom

    @property
    def limits_state(self) -> Limits:
        """The caps' and holds' state (its ``hits``, for stats.json and the tests)."""
        return self._crawl.limits

    def pid_trace(self) -> tuple[list[PidSample], Callable[[str], float]]:
        """The PID samples since last asked, and each host's setpoint (its ``[[site]]`` block's)."""
        crawl = self._crawl
        sites = crawl.sites
        default = crawl.cfg.politeness.setpoint
        return crawl.frontier.drain_trace(), ((lambda h: sites.for_host(h).politeness.setpoint) if sites
                                              else (lambda _h: default))

    def forwarded(self) -> tuple[int, int]:
        """URLs forwarded to their owners, and received from other peers (0, 0 alone)."""
        node = self._node()
        return (node.outbox.stats().forwarded, node.inbox.received) if node is not None else (0, 0)

    def limits(self, now: float, malformed: Mapping[str, int]) -> dict[str, int]:
        """Non-zero cap hits, held hosts, malformed answers, ceiling holds, internal errors, by name;
        a seeds file's lines by outcome (``seeds_file.<outcome>``, peer/core/crawl/seedfeed.py rule 2)."""
        return {**self._crawl.limits_figures(now, dict(malformed)), **self._crawl.seed_feed.figures(),
                **self._crawl.seed_adds.figures()}

    def status(self, now: float, *, elapsed: float, dns_hit_rate: float,
               limits: Mapping[str, int]) -> StatusFigures:
        """This peer's row of ``ring status`` (the ring driver fills in its own uptime).

        ``limits``: :meth:`limits` and the driver's own counters (``warc.*``).
        """
        crawl = self._crawl
        s = crawl.summary
        fr = crawl.frontier
        out, received = self.forwarded()
        return StatusFigures(
            pages=crawl.requested, rate=s.requested / max(elapsed, 1e-9), frontier=len(fr),
            hosts=fr.n_hosts, forwarded_out=out, forwarded_in=received,
            dns_hit_rate=dns_hit_rate, bloom_fill=crawl.bloom.fill_estimate(),
            uptime=max(elapsed, 1e-9),
            # Caps hit and hosts held (cap.<key>, held.<kind>) and internal
            # errors: counters the ring sends with the status reply; the caps
            # whose hits are URLs never requested are counted there instead.
            limits={k: n for k, n in limits.items() if k.removeprefix("cap.") not in NOT_REQUESTED_CAPS},
            # Named by ring.vocabulary, as the summary and stats.json name them.
            errors=failed(s.errors, s.not_requested),
            not_requested=not_requested_now(crawl),
            busiest=tuple(fr.busiest(now, 10)),
            # The ring's lease now (None alone): whether requests start, and why not.
            lease=self._lease(now),
            page_cap=self.page_cap(), budget_wait=self.budget_wait() is not None,
            paused=crawl.paused,
        )

    def page_cap(self) -> int:
        """Our cap of ``max_pages`` now (``ring.membership.budget`` rule 3); 0: alone, or no max_pages."""
        node = self._node()
        return node.page_cap if node is not None else 0

    def budget_wait(self) -> int | None:
        """Our cap when this peer waits for a page-budget grant, else None.

        It waits when it has spent its cap (``ring.membership.budget`` rule 4)
        with URLs still queued, and the ring's total is short of ``max_pages``:
        nothing starts until another member grants it budget (rule 5). A
        rejoined peer often does: the others spent its share while it was away.
        """
        crawl, node = self._crawl, self._node()
        max_pages = crawl.cfg.crawl.max_pages
        if node is None or node.budget is None or not max_pages or not len(crawl.frontier):
            return None
        cap = node.page_cap
        if cap == 0 and node.budget.base > 0:
            return None  # not settled yet: the first gossip round sets it
        if crawl.requested + crawl.in_flight < cap or crawl.requested + node.others_pages() >= max_pages:
            return None
        return cap

    def pause_words(self, now: float) -> str:
        """Why no request starts, as the progress line says it ("" while requests start):
        ``ring pause`` first, then the lease, then the ring's settings not heard yet, then a
        page-budget grant waited for."""
        if self._crawl.paused:
            return "paused: by ring pause (no request starts until ring resume)"
        state = self._lease(now)
        if state is not None and not state.held:
            return lease_words(lease_status(state), state.vouched, state.needed, state.quorum,
                               state.grace_left, state.open)
        node = self._node()
        if node is not None and not node.settings_confirmed:
            # ring.membership.epochs rule 5: a peer just started has not heard the ring's settings.
            return "paused: waiting to hear the ring's settings from a member"
        cap = self.budget_wait()
        if cap is not None:
            return (f"paused: waiting for a page-budget grant (its max_pages cap, {cap:,} pages, "
                    f"is spent; another peer grants it more when that one runs idle)")
        return ""

    def progress(self, now: float, elapsed: float, dns_hit_rate: float) -> ProgressSnapshot:
        """This peer's figures now, for peer/core/run/progress.py."""
        crawl = self._crawl
        node = self._node()
        cluster = crawl.requested + (node.others_pages() if node is not None else 0)
        self.spill_peak = max(self.spill_peak, crawl.frontier.spilled)
        snap = crawl.progress_snapshot(now, elapsed, dns_hit_rate, cluster)
        return dataclasses.replace(snap, paused=self.pause_words(now), solo=node is None)

    def final_summary(self, now: float, malformed: Mapping[str, int]) -> Summary:
        """The crawl's summary at its end, the core's lines and figures filled in."""
        crawl = self._crawl
        s = crawl.summary
        limits = crawl.limits
        # The crawl's own limit, when it stopped there: never "none hit" beside "max_pages reached".
        reached = ([f"max_pages {crawl.cfg.crawl.max_pages:,} reached"] if s.stop_reason == StopReason.MAX_PAGES
                   else [])
        s.limits = limits.render(now, reached)
        s.caps = Counter({str(cap): n for cap, n in limits.hits.items() if n})
        s.details = crawl.detail_lines(dict(malformed))
        if crawl.outages.went_down:
            s.details.append(crawl.outages.render())
        if crawl.seed_feed.mark is not None:
            s.details.append(crawl.seed_feed.summary())
        if crawl.seed_adds.lines:
            s.details.append(crawl.seed_adds.summary())
        s.dedupe = crawl.dup_figures()
        rc = crawl.recrawl
        if rc is not None:
            f = rc.figures()
            s.revisit = {**dataclasses.asdict(f), "freshness": f.freshness}  # stats.json's "revisit"
        else:
            s.revisit = {}
        self.spill_peak = max(self.spill_peak, crawl.frontier.spilled)
        return s

    @property
    def order_overflow(self) -> int:
        """URLs spilled out of their band's order, a host's RAM being full (frontier rule 11)."""
        return self._crawl.frontier.overflow

    @property
    def head_per_host(self) -> int:
        """URLs a host keeps in RAM before the rest spill (0 without a spill store)."""
        return self._crawl.frontier.head_per_host

    def scrape(self, now: float, status: StatusFigures, *, peer: str, ring: str, uptime: float,
               dns: Mapping[str, int], dns_hit_ratio: float, warc: Mapping[str, int]) -> PeerFigures:
        """One metrics scrape's copy of the figures (``peer.engine.metrics``); ``status``: :meth:`status`'s."""
        crawl = self._crawl
        s = crawl.summary
        fr = crawl.frontier
        census = fr.census(now)
        bloom = crawl.bloom
        node = self._node()
        # The pairs a status reply carries, split as `ring status` splits them.
        pairs = Counter(status.limits)
        if node is not None:
            pairs += node.dropped + node.membership.dropped
        split = split_pairs(pairs.items())
        out = PeerFigures(
            peer=peer, ring=ring, uptime=uptime,
            pages=crawl.requested, bytes=s.bytes, by_status=dict(s.by_status),
            failed=dict(status.errors), not_requested=dict(status.not_requested), retries=s.retries,
            robots_fetches=s.robots_fetches, items=s.items, extract_errors=s.extract_errors,
            frontier=len(fr), in_flight=crawl.in_flight,
            hosts={"ready": census.ready, "waiting": census.waiting, "held": census.held,
                   "busy": census.busy},
            held={k.value: v for k, v in crawl.limits.held(now).items()},
            dns=dict(dns), dns_hit_ratio=dns_hit_ratio,
            # status' fill: one popcount of the newest slice a scrape, not two.
            bloom_urls=bloom.count, bloom_fill=status.bloom_fill, bloom_slices=bloom.num_slices,
            bloom_fpr=bloom.estimated_fpr(), bloom_bytes=bloom.nbytes,
            forwarded_out=status.forwarded_out, forwarded_in=status.forwarded_in,
            drops=dict(split.drops),
            delay_quantiles=quantiles(fr.delays()),
            ceiling_holds=fr.ceiling_holds, ip_ceiling_holds=fr.ip_ceiling_holds,
            warc=dict(warc), seeds_file=dict(crawl.seed_feed.counts), seed_add=dict(crawl.seed_adds.counts),
            seed_add_untaken={k.removeprefix(SEED_ADD_UNTAKEN): n for k, n in split.counters
                              if k.startswith(SEED_ADD_UNTAKEN)},
            seed_add_caps={k.removeprefix("cap."): n for k, n in split.counters if k in SEED_ADD_CAPS},
            paused=crawl.paused,
            lease_moved_waiting=crawl.lease_waits.waiting, lease_moved_waits=crawl.lease_waits.waits,
        )
        rc = crawl.recrawl
        if rc is not None:
            rf = rc.figures()
            out = dataclasses.replace(
                out, revisits_due=rf.due, revisits_scheduled=rf.scheduled, revisit_freshness=rf.freshness,
                revisit_visits=rf.revisit_parts)
        lease = status.lease
        if lease is None or node is None:
            return out  # a ring of one: PeerFigures' defaults
        return dataclasses.replace(
            out, lease_held=lease.held, lease_vouched=lease.vouched, lease_needed=lease.needed,
            lease_quorum=lease.quorum, lease_grace_seconds=lease.grace_left, lease_open=lease.open,
            ring_version=max(0, node.membership.ring_version), config_epoch=node.settings.epoch)
