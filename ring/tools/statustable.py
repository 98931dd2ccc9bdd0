"""``python -m ring status``'s table: a row a member, a totals row, the legend (formatting only).

It is apart from ``ring.tools.cli`` (the command line) because it is one
concept with rules of its own: each live member answers ``status`` with its
own row (``ring.messages.MemberStatus``), its figures and its own view of its
lease and ring (``ring.membership.lease``), and the table shows them side by
side, so members that agree on the ring show one fingerprint and the totals
row counts the rings seen. The legend under the table gives each column's
unit, with the figure families' words of ``ring.vocabulary``
(docs/figures.md). The voters' line under the totals is ``ring.tools.voters``'s; a line
after it names the members' wire versions while they differ (an upgrade under way).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from ring.durations import duration
from ring.messages import LeaseStatus, MemberStatus
from ring.tools.epochs import settings_line
from ring.tools.voters import voters_line
from ring.vocabulary import TERMS, Family, words

__all__ = ["STATUS_LEGEND", "format_status", "lease_cells", "rings_seen", "versions_line"]


#: The status table's columns: (header, width, MemberStatus field, format). The
#: legend under the table gives each column's unit.
_COLUMNS = (
    ("share", 6, "share", "{:.1%}"),
    ("pages", 8, "pages", "{:,}"),
    ("pages/s", 8, "rate", "{:.1f}"),
    ("queued", 8, "frontier", "{:,}"),
    ("hosts", 6, "hosts", "{:,}"),
    ("fwd out", 8, "forwarded_out", "{:,}"),
    ("fwd in", 8, "forwarded_in", "{:,}"),
    ("dns hit", 7, "dns_hit_rate", "{:.0%}"),
    ("bloom", 7, "bloom_fill", "{:.2%}"),
    ("uptime", 7, "uptime", duration),
)
#: Columns the totals row sums (the others have no meaningful total).
_SUMMED = ("share", "pages", "rate", "frontier", "hosts", "forwarded_out", "forwarded_in")

STATUS_LEGEND = ("state: alive, suspect, dead, left, restarting (stopped for a planned restart: its "
                 "hosts wait for it until the time shown), or waiting (listed in cluster.toml, not heard "
                 "from yet: not started, or not reached); "
                 "lease: held (requests start), settling (its ring changed a moment ago: the hosts "
                 "that moved wait, the others go on), grace (paused: it resumed, or its voters changed) "
                 "or no-majority (paused), ? if it did not answer; vouch: members vouching for its ring / the "
                 "majority needed / its quorum (members not left, dead ones included); ring: its "
                 "ring's version and fingerprint (members that agree show one fingerprint); "
                 "pages: " + TERMS[Family.PAGES].means + "; pages/s: since the peer started; queued: URLs in its "
                 "frontier; hosts: hosts with queued URLs; fwd out/in: URLs sent to / received from "
                 "their owners; dns hit: DNS cache hit rate; bloom: fill of the seen-URL filter; "
                 + "; ".join(f"{t.words}: {t.means}" for f, t in TERMS.items() if f is not Family.PAGES)
                 + " (docs/figures.md)")

#: The lease and ring columns' widths (after id and state). Their cells hold
#: no spaces, so a row still splits on whitespace into its columns.
_LEASE_W, _VOUCH_W, _RING_W = 11, 7, 12
_LEASE_CELL = {LeaseStatus.UNKNOWN: "?", LeaseStatus.HELD: "held", LeaseStatus.GRACE: "grace",
               LeaseStatus.NO_MAJORITY: "no-majority"}


def _cell(form: str | Callable[[float], str], value: float) -> str:
    """A column's cell: its format string, or its formatter (a duration: ``ring.durations``)."""
    return form(value) if callable(form) else form.format(value)


def lease_cells(r: MemberStatus) -> tuple[str, str, str]:
    """A member's lease, vouches and ring as ``status`` shows them (``-`` where it did not say)."""
    known = r.lease is not LeaseStatus.UNKNOWN
    vouch = f"{r.vouched}/{r.needed}/{r.quorum}" if known else "-"
    # The fingerprint's first 8 hex digits, as the dashboard shows them: enough to tell rings apart by eye.
    ring = f"v{r.ring_version}:{r.ring_fingerprint >> 32:08x}" if r.ring_fingerprint else "-"
    # A peer settling after a ring change: its moved hosts wait, the others go on.
    return ("settling" if r.lease_open else _LEASE_CELL[r.lease]), vouch, ring


def hhmmss(epoch: float) -> str:
    """An epoch time as this machine's local HH:MM:SS (a restarting member's ``back_by``)."""
    return time.strftime("%H:%M:%S", time.localtime(epoch))


def rings_seen(rows: Sequence[MemberStatus]) -> int:
    """How many rings the members that answered vouch for (more than one: they disagree)."""
    return len({r.ring_fingerprint for r in rows if r.ring_fingerprint})


def versions_line(rows: Sequence[MemberStatus]) -> str:
    """The wire versions the members say they speak, when they are not all one ("" then):
    a ring in the middle of an upgrade (docs/operations.md, "Upgrading a ring")."""
    by: dict[int, list[str]] = {}
    for r in rows:
        if r.wire_version:
            by.setdefault(r.wire_version, []).append(r.id)
    if len(by) < 2:
        return ""
    return ("wire versions: " + ", ".join(f"{v} ({', '.join(ids)})" for v, ids in sorted(by.items(), reverse=True))
            + ": an upgrade under way")


def format_status(rows: Sequence[MemberStatus]) -> str:
    """The text of ``python -m ring status``: a row a member, a totals row, the units."""
    head = (f"{'id':<10} {'state':<8} {'lease':<{_LEASE_W}} {'vouch':>{_VOUCH_W}} {'ring':<{_RING_W}}"
            + "".join(f" {h:>{w}}" for h, w, _, _ in _COLUMNS) + "  address")
    out = [head]
    for r in rows:
        lease, vouch, ring = lease_cells(r)
        out.append(f"{r.id:<10} {r.shown_state:<8} {lease:<{_LEASE_W}} {vouch:>{_VOUCH_W}} {ring:<{_RING_W}}"
                   + "".join(f" {_cell(f, getattr(r, k)):>{w}}" for _, w, k, f in _COLUMNS)
                   + f"  {r.address}")
        if r.paused:
            out.append(f"{'':<10} paused: by ring pause (no request starts until ring resume)")
        if r.back_by:
            out.append(f"{'':<10} restarting (back by {hhmmss(r.back_by)}): its hosts wait for it; "
                       f"not back by then, it is dead")
        if r.budget_wait:
            out.append(f"{'':<10} paused: waiting for a page-budget grant (its max_pages cap, "
                       f"{r.page_cap:,} pages, is spent)")
        split = r.families
        for family, pairs in ((Family.FAILED, r.errors), (Family.NOT_REQUESTED, split.not_requested),
                              (Family.DROPS, split.drops), (Family.COUNTERS, split.counters)):
            if pairs:
                out.append(f"{'':<10} {words(family)}: " + ", ".join(f"{k} {v}" for k, v in sorted(pairs)))
    live = [r for r in rows if r.live and r.heard]
    held = sum(r.lease is LeaseStatus.HELD for r in rows)
    n_rings = rings_seen(rows)
    rings = f"{n_rings} ring{'s' if n_rings != 1 else ''}" + ("!" if n_rings > 1 else "")
    total = (f"{'total':<10} {f'{len(live)} live':<8} {f'{held} held':<{_LEASE_W}} {'':>{_VOUCH_W}} "
             f"{rings:<{_RING_W}}")
    for _, w, k, f in _COLUMNS:
        total += f" {_cell(f, sum(getattr(r, k) for r in rows)) if k in _SUMMED else '':>{w}}"
    out.append(total.rstrip())
    line = voters_line(rows)
    if line:
        out.append(line)
    line = versions_line(rows)
    if line:
        out.append(line)
    line = settings_line(rows)  # the config epoch each member runs (ring.membership.epochs)
    if line:
        out.append(line)
    out += ["", STATUS_LEGEND]
    return "\n".join(out)
