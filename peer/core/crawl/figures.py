"""The crawl core's figures: the progress line's, ``ring status``'s and the summary's (pure).

Plain functions over the parts of ``peer.core.crawl.core.CrawlCore``, read
through :class:`Sources` (the core is one); they change nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from peer.core.crawl.limits import Cap, Hold
from peer.core.run.progress import READY_MOST, ProgressSnapshot
from peer.core.run.stats import requested_errors
from ring.vocabulary import not_requested

if TYPE_CHECKING:
    from collections.abc import Mapping

    from peer.core.config.cluster import ClusterConfig
    from peer.core.crawl.limits import Limits
    from peer.core.crawl.outages import Outages
    from peer.core.crawl.robots import RobotsCache
    from peer.core.frontier.frontier import Frontier
    from peer.core.handoff.holds import Holds
    from peer.core.handoff.leasewaits import LeaseWaits
    from peer.core.http.cookies import CookieJar
    from peer.core.revisit.recrawl import Recrawl, RecrawlFigures
    from peer.core.run.stats import Summary
    from peer.core.seen.bloom import BloomFilter
    from peer.core.seen.sieve import SeenSieve

__all__ = ["Sources", "limits_figures", "detail_lines", "not_requested_now", "progress_snapshot", "revisits_line"]


class Sources(Protocol):
    """What the figures read of the crawl core."""

    @property
    def cfg(self) -> ClusterConfig: ...
    @property
    def summary(self) -> Summary: ...
    @property
    def limits(self) -> Limits: ...
    @property
    def holds(self) -> Holds: ...
    @property
    def outages(self) -> Outages: ...
    @property
    def lease_waits(self) -> LeaseWaits: ...
    @property
    def frontier(self) -> Frontier: ...
    @property
    def robots(self) -> RobotsCache: ...
    @property
    def cookies(self) -> CookieJar | None: ...
    @property
    def recrawl(self) -> Recrawl | None: ...
    @property
    def bloom(self) -> BloomFilter: ...
    @property
    def sieve(self) -> SeenSieve: ...
    @property
    def in_flight(self) -> int: ...
    @property
    def refused_queued(self) -> Mapping[str, int]: ...
    def dup_figures(self) -> dict[str, int]: ...


def limits_figures(core: Sources, now: float, malformed: dict[str, int]) -> dict[str, int]:
    """Non-zero cap hits, held hosts, malformed answers, ceiling holds, internal errors, by name."""
    out = core.limits.figures(now)
    internal = sum(core.summary.internal.values())
    if internal:
        out["error.internal"] = internal
    for reason, n in malformed.items():
        if n:
            out[f"malformed.{reason}"] = int(n)
    for name, n in core.holds.counts.items():
        out[f"hold.{name}"] = n  # peer/core/handoff/holds.py rule 4
    out.update(core.lease_waits.figures())  # moved hosts waiting for their lease
    out.update(core.outages.figures())  # hosts down (peer/core/crawl/outages.py)
    for name, n in core.summary.directives.items():
        if n:
            out[f"directives.{name}"] = n  # what pages said of themselves (peer.core.page.directives)
    if core.summary.invalid_status:
        out["invalid_status"] = core.summary.invalid_status  # answers handled as 5xx (RFC 9110 §15)
    for cause, n in core.refused_queued.items():
        out[f"frontier.refused.{cause}"] = n  # queued, then refused by rules changed live (CrawlCore.admit)
    if core.summary.requeued_twice:
        out["frontier.requeued_twice"] = core.summary.requeued_twice  # peer.core.crawl.jobs.RECENT_ROWS
    fr = core.frontier
    if fr.ceiling_holds:
        out["polite.ceiling_holds"] = fr.ceiling_holds
    if fr.ip_ceiling_holds:
        out["polite.ip_ceiling_holds"] = fr.ip_ceiling_holds
    if fr.moving:
        out["frontier.moving"] = fr.moving  # spilled URLs of hosts given away, not passed on yet
    sm = core.summary
    if sm.sitemaps_fetched:
        out["sitemaps.fetched"] = sm.sitemaps_fetched
        out["sitemaps.urls"] = sm.sitemap_urls
    for cause, n in sm.sitemap_failed.items():
        out[f"sitemaps.failed.{cause}"] = n
    for problem, n in sm.sitemap_drops.items():
        out[f"sitemap.{problem}"] = n  # refused input: a drop (ring.vocabulary rule 4)
    for name, n in sm.requisites.items():
        if n:
            out[f"requisites.{name}"] = n  # page requisites, the caps' hits among them (peer.core.crawl.requisites)
    if core.cookies is not None:
        out.update(core.cookies.counts)  # cookies.* counters, cookie.malformed a drop
    out.update(core.dup_figures())  # dedupe.* counters, dedupe_* drops (peer.core.dedupe.held)
    rc = core.recrawl
    if rc is not None:  # peer/core/revisit/recrawl.py rule 6: counters, and a refused validator a drop
        out.update(rc.figure_pairs())
    if core.bloom.num_slices > 1:
        out["bloom.slices"] = core.bloom.num_slices
    if core.bloom.full:
        out["bloom.full"] = 1
    sv = core.sieve.stats()
    for name, n in (("seen.checked", sv.checked), ("seen.false_positives", sv.false_positives),
                    ("seen.pending", sv.pending)):
        if n:
            out[name] = n
    return out

def revisits_line(f: RecrawlFigures, fresh: str) -> str:
    """The summary's ``revisits:`` line: the revisits, then what they found, parts that add up to
    them (peer/core/revisit/recrawl.py rule 6); first visits and pages never found apart."""
    p = f.revisit_parts
    parts = [f"{p['not_modified']} not modified (304)", f"{p['unchanged']} unchanged",
             f"{p['changed']} changed", f"{p['gone']} gone", f"{p['failed']} failed"]
    if p["first"]:
        parts.append(f"{p['first']} first answer")
    if p["missing"]:
        parts.append(f"{p['missing']} never found")
    line = f"revisits: {f.visits_revisit} ({f.conditional} conditional): {', '.join(parts)}; freshness {fresh}"
    line += f"; first visits {f.visits_new}"
    if f.never_found:
        line += f"; never found (404/410 before any answer, not revisited) {f.never_found}"
    return line + f"; {f.scheduled} scheduled, {f.due} overdue"


def detail_lines(core: Sources, malformed: dict[str, int]) -> list[str]:
    """The summary's lines on remote input, politeness and the seen set (only what happened)."""
    lines = []
    if core.recrawl is not None:
        f = core.recrawl.figures()
        fresh = "-" if f.freshness is None else f"{f.freshness:.0%}"
        lines.append(revisits_line(f, fresh))
    bad = dict(malformed)
    excess = bad.pop("excess", 0)
    if bad or excess:
        parts = []
        if bad:
            parts.append("malformed headers ignored or clamped: "
                         + ", ".join(f"{k} {n}" for k, n in sorted(bad.items())))
        if excess:
            parts.append(f"bytes past a response's end {excess} (connection closed)")
        lines.append("remote input: " + "; ".join(parts))
    sm = core.summary
    if sm.sitemaps_fetched or sm.sitemap_failed or sm.sitemap_drops:
        line = f"sitemaps: fetched {sm.sitemaps_fetched}, listing {sm.sitemap_urls:,} URLs"
        if sm.sitemap_failed:
            line += "; not read: " + ", ".join(f"{k} {n}" for k, n in sorted(sm.sitemap_failed.items()))
        if sm.sitemap_drops:
            line += "; drops: " + ", ".join(f"{k} {n}" for k, n in sorted(sm.sitemap_drops.items()))
        lines.append(line)
    if sm.requisites:
        rq = sm.requisites
        line = (f"requisites: found {rq['found']:,}, fetched {rq['fetched']:,} here, forwarded {rq['forwarded']:,}, "
                f"failed {rq['failed']:,}")
        capped = [f"{k} {rq[k]:,}" for k in ("max_per_page", "max_depth", "refused") if rq[k]]
        if capped:
            line += "; not fetched: " + ", ".join(capped)
        lines.append(line)
    if core.cookies is not None and core.cookies.counts:
        lines.append("cookies: " + ", ".join(f"{k} {n}" for k, n in sorted(core.cookies.counts.items()))
                     + f"; {len(core.cookies)} kept for {len(core.cookies.hosts())} hosts")
    fr = core.frontier
    if core.cfg.politeness.by_domain:  # politeness.group = "domain": the groups are domains, not IPs
        lines.append(f"politeness: starts held by the 1 s/5 s ceiling {fr.ceiling_holds} "
                     f"(per registered domain {fr.ip_ceiling_holds}); registered domains paced {fr.n_domains}")
    elif fr.ceiling_holds or fr.ip_ceiling_holds or fr.n_ips:
        lines.append(f"politeness: starts held by the 1 s/5 s ceiling {fr.ceiling_holds} "
                     f"(per IP {fr.ip_ceiling_holds}); IP addresses paced {fr.n_ips}")
    b = core.bloom
    if b.num_slices > 1 or b.full:
        lines.append(f"seen set: {b.count:,} URLs in {b.num_slices} Bloom slices "
                     f"({b.total_capacity:,} capacity{', full' if b.full else ''}), "
                     f"estimated false positives {b.estimated_fpr():.3%} (bound {b.fpr_bound:.3%})")
    sv = core.sieve.stats()
    if sv.exact:
        measured = sv.measured_fpr
        lines.append(
            f"seen set: exact past {core.sieve.disk_after:,} URLs (disk sieve of URL hashes); "
            f"Bloom 'maybe seen' checked {sv.checked:,}, new after all {sv.false_positives:,} "
            f"(measured false-positive rate {'n/a' if measured is None else f'{measured:.3%}'}); "
            f"before that, {sv.bloom_drops:,} 'maybe seen' taken as seen unchecked")
    return lines

def not_requested_now(core: Sources) -> dict[str, int]:
    """URLs never requested so far, by cause: the rows', the scope's, the URL rules' and
    file types' and the caps' (``ring.vocabulary`` rule 3). The one count that the
    progress line and ``ring status`` both show, so that they agree."""
    s = core.summary
    return not_requested(s.not_requested, s.out_of_scope, {str(c): n for c, n in core.limits.hits.items()},
                         s.excluded)


def progress_snapshot(core: Sources, now: float, elapsed: float, dns_hit_rate: float,
                      cluster_pages: int) -> ProgressSnapshot:
    """This peer's figures at ``now``, for :mod:`peer.core.run.progress` to format."""
    s = core.summary
    held = core.limits.held(now)
    hits = core.limits.hits
    ready, waiting = core.frontier.host_counts(now, READY_MOST)
    # A held host is counted once, as held: the frontier counts it among
    # the hosts with work, ready or (its requeue's not-before time)
    # waiting, which is not politeness.
    held_hosts = core.limits.held_hosts(now)
    counted = {h for h, _, _ in held_hosts}
    handoff = 0
    if core.holds:  # only while the ring changed: a scan of the queued hosts
        for host in core.frontier.queued_hosts():
            if host not in counted and core.holds.holding(host, now):
                counted.add(host)
                handoff += 1
    for host in counted:
        due = core.frontier.host_due(host, now)
        if due is True and ready < READY_MOST:
            ready -= 1
        elif due is False:
            waiting -= 1
    note, note_in = "", 0.0
    if held_hosts:
        host, kind, until = held_hosts[0]
        if kind is Hold.ROBOTS:
            # Which try comes next, and the key that bounds them: a proxy or a
            # host that is down is waited for that many tries, not forever.
            tried, most = core.robots.failures(host), core.robots.max_failures
            note = ((core.robots.why(host) or f"robots.txt of {host} unreachable")
                    + (f", try {tried + 1} of {most} (crawl.robots_tries)" if 0 < tried < most else ""))
        else:
            note = f"{host} down" if kind is Hold.DOWN else f"Retry-After of {host}"
        note_in = until - now
    return ProgressSnapshot(
        now=now, elapsed=elapsed, pages=s.requested, items=s.items,
        errors=requested_errors(s.errors, s.not_requested), not_requested=not_requested_now(core),
        frontier=len(core.frontier), in_flight=core.in_flight,
        hosts_ready=max(ready, 0), hosts_waiting=max(waiting, 0), held_robots=held[Hold.ROBOTS],
        held_retry_after=held[Hold.RETRY_AFTER], held_down=held[Hold.DOWN],
        hosts_down=core.outages.hosts_down(), held_handoff=handoff, held_next=note,
        held_next_in=note_in, max_pages=core.cfg.crawl.max_pages,
        cluster_pages=cluster_pages, dns_hit_rate=dns_hit_rate,
        bloom_fill=core.bloom.fill_estimate(), bloom_slices=core.bloom.num_slices,
        # The URL caps' hits are URLs not requested, counted there (as ring status does).
        links_cut=hits[Cap.LINKS_PER_PAGE])
