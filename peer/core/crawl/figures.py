"""The crawl core's figures: the progress line's, ``ring status``'s and the summary's (pure)."""

from __future__ import annotations

from peer.core.run.progress import READY_MOST, ProgressSnapshot
from peer.core.run.stats import requested_errors
from peer.core.crawl.limits import Cap, Hold
from peer.core.dedupe.held import DuplicateSide

__all__ = ["Figures"]


class Figures(DuplicateSide):
    """The figures' part of ``CrawlCore``."""

    def limits_figures(self, now: float, malformed: dict[str, int]) -> dict[str, int]:
        """Non-zero cap hits, held hosts, malformed answers, ceiling holds, internal errors, by name."""
        out = self.limits.figures(now)
        internal = sum(self.summary.internal.values())
        if internal:
            out["error.internal"] = internal
        for reason, n in malformed.items():
            if n:
                out[f"malformed.{reason}"] = int(n)
        for name, n in self.holds.counts.items():
            out[f"hold.{name}"] = n  # peer/core/handoff/holds.py rule 4
        for name, n in self.summary.directives.items():
            if n:
                out[f"directives.{name}"] = n  # what pages said of themselves (peer.core.page.directives)
        if self.summary.invalid_status:
            out["invalid_status"] = self.summary.invalid_status  # answers handled as 5xx (RFC 9110 §15)
        if self.summary.requeued_twice:
            out["frontier.requeued_twice"] = self.summary.requeued_twice  # crawlstate.RECENT_ROWS
        fr = self.frontier
        if fr.ceiling_holds:
            out["polite.ceiling_holds"] = fr.ceiling_holds
        if fr.ip_ceiling_holds:
            out["polite.ip_ceiling_holds"] = fr.ip_ceiling_holds
        if fr.moving:
            out["frontier.moving"] = fr.moving  # spilled URLs of hosts given away, not passed on yet
        sm = self.summary
        if sm.sitemaps_fetched:
            out["sitemaps.fetched"] = sm.sitemaps_fetched
            out["sitemaps.urls"] = sm.sitemap_urls
        for cause, n in sm.sitemap_failed.items():
            out[f"sitemaps.failed.{cause}"] = n
        for problem, n in sm.sitemap_drops.items():
            out[f"sitemap.{problem}"] = n  # refused input: a drop (ring.vocabulary rule 4)
        if self.cookies is not None:
            out.update(self.cookies.counts)  # cookies.* counters, cookie.malformed a drop
        out.update(self.dup_figures())  # dedupe.* counters, dedupe_* drops (peer.core.dedupe.held)
        rc = self.recrawl
        if rc is not None:  # peer/core/revisit/recrawl.py rule 6: counters, and a refused validator a drop
            out.update(rc.figure_pairs())
        if self.bloom.num_slices > 1:
            out["bloom.slices"] = self.bloom.num_slices
        if self.bloom.full:
            out["bloom.full"] = 1
        sv = self.sieve.stats()
        for name, n in (("seen.checked", sv.checked), ("seen.false_positives", sv.false_positives),
                        ("seen.pending", sv.pending)):
            if n:
                out[name] = n
        return out

    def detail_lines(self, malformed: dict[str, int]) -> list[str]:
        """The summary's lines on remote input, politeness and the seen set (only what happened)."""
        lines = []
        if self.recrawl is not None:
            f = self.recrawl.figures()
            fresh = "-" if f.freshness is None else f"{f.freshness:.0%}"
            lines.append(f"revisits: {f.visits_revisit} ({f.conditional} conditional): {f.not_modified} not "
                         f"modified (304), {f.unchanged} unchanged, {f.changed} changed, {f.gone} gone, "
                         f"{f.failed} failed; freshness {fresh}; {f.scheduled} scheduled, {f.due} overdue")
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
        sm = self.summary
        if sm.sitemaps_fetched or sm.sitemap_failed or sm.sitemap_drops:
            line = f"sitemaps: fetched {sm.sitemaps_fetched}, listing {sm.sitemap_urls:,} URLs"
            if sm.sitemap_failed:
                line += "; not read: " + ", ".join(f"{k} {n}" for k, n in sorted(sm.sitemap_failed.items()))
            if sm.sitemap_drops:
                line += "; drops: " + ", ".join(f"{k} {n}" for k, n in sorted(sm.sitemap_drops.items()))
            lines.append(line)
        if self.cookies is not None and self.cookies.counts:
            lines.append("cookies: " + ", ".join(f"{k} {n}" for k, n in sorted(self.cookies.counts.items()))
                         + f"; {len(self.cookies)} kept for {len(self.cookies.hosts())} hosts")
        fr = self.frontier
        if fr.ceiling_holds or fr.ip_ceiling_holds or fr.n_ips:
            lines.append(f"politeness: starts held by the 1 s/5 s ceiling {fr.ceiling_holds} "
                         f"(per IP {fr.ip_ceiling_holds}); IP addresses paced {fr.n_ips}")
        b = self.bloom
        if b.num_slices > 1 or b.full:
            lines.append(f"seen set: {b.count:,} URLs in {b.num_slices} Bloom slices "
                         f"({b.total_capacity:,} capacity{', full' if b.full else ''}), "
                         f"estimated false positives {b.estimated_fpr():.3%} (bound {b.fpr_bound:.3%})")
        sv = self.sieve.stats()
        if sv.exact:
            measured = sv.measured_fpr
            lines.append(
                f"seen set: exact past {self.sieve.disk_after:,} URLs (disk sieve of URL hashes); "
                f"Bloom 'maybe seen' checked {sv.checked:,}, new after all {sv.false_positives:,} "
                f"(measured false-positive rate {'n/a' if measured is None else f'{measured:.3%}'}); "
                f"before that, {sv.bloom_drops:,} 'maybe seen' taken as seen unchecked")
        return lines

    def progress_snapshot(self, now: float, elapsed: float, dns_hit_rate: float,
                          cluster_pages: int) -> ProgressSnapshot:
        """This peer's figures at ``now``, for :mod:`peer.core.run.progress` to format."""
        s = self.summary
        held = self.limits.held(now)
        hits = self.limits.hits
        ready, waiting = self.frontier.host_counts(now, READY_MOST)
        # A held host is counted once, as held: the frontier counts it among
        # the hosts with work, ready or (its requeue's not-before time)
        # waiting, which is not politeness.
        held_hosts = self.limits.held_hosts(now)
        counted = {h for h, _, _ in held_hosts}
        handoff = 0
        if self.holds:  # only while the ring changed: a scan of the queued hosts
            for host in self.frontier.queued_hosts():
                if host not in counted and self.holds.holding(host, now):
                    counted.add(host)
                    handoff += 1
        for host in counted:
            due = self.frontier.host_due(host, now)
            if due is True and ready < READY_MOST:
                ready -= 1
            elif due is False:
                waiting -= 1
        note, note_in = "", 0.0
        if held_hosts:
            host, kind, until = held_hosts[0]
            note = ((self.robots.why(host) or f"robots.txt of {host} unreachable") if kind is Hold.ROBOTS
                    else f"Retry-After of {host}")
            note_in = until - now
        return ProgressSnapshot(
            now=now, elapsed=elapsed, pages=s.requested, items=s.items,
            errors=requested_errors(s.errors, s.not_requested), not_requested=dict(s.not_requested),
            out_of_scope=s.out_of_scope, frontier=len(self.frontier), in_flight=self.in_flight,
            hosts_ready=max(ready, 0), hosts_waiting=max(waiting, 0), held_robots=held[Hold.ROBOTS],
            held_retry_after=held[Hold.RETRY_AFTER], held_handoff=handoff, held_next=note,
            held_next_in=note_in, max_pages=self.cfg.crawl.max_pages,
            cluster_pages=cluster_pages, dns_hit_rate=dns_hit_rate,
            bloom_fill=self.bloom.fill_estimate(), bloom_slices=self.bloom.num_slices,
            capped=sum(hits[c] for c in (Cap.URL_LENGTH, Cap.PATH_REPEAT, Cap.URLS_PER_HOST,
                                         Cap.LINKS_PER_PAGE, Cap.GIVEN_UP)))
