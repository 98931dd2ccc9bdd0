"""The progress line: a pure formatter over a snapshot of a peer's figures.

The engine builds a :class:`ProgressSnapshot` every ``--progress`` seconds and
asks :meth:`Progress.line` for the line to log; this module keeps the previous
snapshot, so:

- the rate is the current one, pages over the last interval, not the
  cumulative average (which hides a stall behind an hour of good minutes);
- the % and the ETA toward ``max_pages`` use the cluster-wide count the
  ``max_pages`` arithmetic uses, at the current cluster-wide rate; a solo
  peer whose queue (frontier and in flight) holds fewer URLs than
  ``max_pages`` leaves counts its ETA toward that queue, as its crawl ends
  when the queue does (an ETA toward ``max_pages`` said a minute four seconds
  before the end); an ETA beyond :data:`ETA_MOST` says so rather than
  print a number no one can use (a huge ``max_pages`` gave millions of hours),
  and one without a rate (no page in the last interval) reads ``ETA unknown``;
- a line whose figures (all but the elapsed time) equal the last one logged
  is not logged again: a ring winding down prints one line, not one every
  five seconds. The first change prints again. A held host is never such a
  repeat: the line names the next one to be tried and counts down to its
  try, so a crawl waiting on a dead host's robots.txt says so every line;
- hosts with queued work are counted once each: *ready* (a start due now),
  *waiting on politeness* (their delay, ceiling or a free slot) or *held*
  (a robots.txt retry, a Retry-After, a hand-off from the host's previous
  owner), never held and waiting both.

"pages" are fetched pages, as everywhere (summary, ``ring status``, report):
requests made, whatever their answer. URLs never requested are counted apart
as *not requested*, by cause, the same causes and counts as ``ring status``
(``peer.core.crawl.figures.not_requested_now``): rows recorded without a request
(robots exclusions, a robots.txt that could not be read, a host given up) and
links refused before any queue (out of scope, left out by ``crawl.rules`` or
``skip_extensions``, cut by a URL cap). The causes without a row count links met,
not distinct URLs (``ring.vocabulary`` rule 3).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ring.durations import duration
from ring.vocabulary import Family, not_requested, words

__all__ = ["ETA_MOST", "Progress", "ProgressSnapshot", "READY_MOST"]

#: Ready hosts are counted up to this many (``Frontier.host_counts``): the
#: count walks the due part of a heap, and 10,000 keeps it near 20 ms.
READY_MOST = 10_000

#: An ETA beyond this many seconds (a week) is shown as ``ETA over a week``: at
#: the current rate the crawl would run longer than anyone watches a line.
ETA_MOST = 7 * 86_400.0


@dataclass(frozen=True, slots=True)
class ProgressSnapshot:
    """A peer's figures at one moment (``now`` on the engine's clock, seconds)."""

    now: float
    elapsed: float                      # seconds since this run began
    pages: int                          # requests made this run
    items: int = 0
    errors: Mapping[str, int] = field(default_factory=dict)        # failed requests by kind
    not_requested: Mapping[str, int] = field(default_factory=dict)  # URLs never requested, by cause
    out_of_scope: int = 0               # links dropped by scope, if not among not_requested
    frontier: int = 0
    in_flight: int = 0
    hosts_ready: int = 0                # with work, a start due now (counted up to READY_MOST)
    hosts_waiting: int = 0              # with work, waiting on politeness or a free slot
    held_robots: int = 0                # hosts held: robots.txt unreadable, a retry due
    held_retry_after: int = 0           # hosts held: Retry-After
    held_down: int = 0                  # hosts held: down, a probe due (peer/core/crawl/outages.py)
    hosts_down: int = 0                 # hosts down: held or probing
    held_handoff: int = 0               # hosts held: their previous owner's hand-off (peer/core/handoff/holds.py)
    held_next: str = ""                 # the held host tried next, in words ("robots.txt of h unreachable (...)")
    held_next_in: float = 0.0           # seconds until that try
    max_pages: int = 0                  # cluster-wide limit, 0 = none
    cluster_pages: int = 0              # cluster-wide pages toward max_pages (this peer alone: pages)
    dns_hit_rate: float = 0.0
    bloom_fill: float = 0.0
    bloom_slices: int = 1
    links_cut: int = 0                  # links not followed past crawl.max_links_per_page
    paused: str = ""                    # why no request starts: the lease, or a page-budget grant waited for
    solo: bool = False                  # a solo peer: its queue is the whole crawl's

    def log_fields(self) -> dict[str, object]:
        """The fields of the progress line's record in a JSON log (ring.tools.logs)."""
        return {"pages": self.pages, "frontier": self.frontier, "in_flight": self.in_flight,
                "elapsed": round(self.elapsed, 3), "paused": self.paused or None}


def _kinds(counts: Mapping[str, int], most: int = 3) -> str:
    top = sorted(((n, k) for k, n in counts.items() if n), key=lambda x: (-x[0], x[1]))
    shown = ", ".join(f"{k} {n}" for n, k in top[:most])
    return shown + (", ..." if len(top) > most else "")


def _eta(snap: ProgressSnapshot, left: int, rate: float) -> str:
    """The ETA words: toward ``max_pages``, or a solo peer's queue when that ends first."""
    if not left:
        return "done"
    queued = snap.frontier + snap.in_flight
    work, toward = (queued, f" (the {queued:,} queued)") if snap.solo and queued < left else (left, "")
    if rate <= 0:
        # No page in the last interval (a stall, or a first line after a resume): no rate, no ETA.
        return "ETA unknown"
    seconds = work / rate
    if seconds > ETA_MOST:
        return "ETA over a week"
    return f"ETA {duration(seconds)}{toward}"


class Progress:
    """Formats snapshots into lines; remembers the last one for rates and repeats."""

    def __init__(self) -> None:
        self._last: ProgressSnapshot | None = None
        self._last_key: tuple[object, ...] | None = None

    def line(self, snap: ProgressSnapshot) -> str | None:
        """The line for ``snap``, or None when it would repeat the last one logged."""
        last, self._last = self._last, snap
        dt = snap.now - last.now if last is not None else snap.elapsed
        rate = (snap.pages - (last.pages if last else 0)) / dt if dt > 0 else 0.0
        # Cluster-wide pages include earlier runs of a resumed crawl (and the
        # others'): a rate needs two lines, the first has none.
        c_rate = (snap.cluster_pages - last.cluster_pages) / dt if last is not None and dt > 0 else 0.0
        parts = [f"pages {snap.pages:,} ({rate:.1f}/s now)"]
        if snap.max_pages:
            done = min(snap.cluster_pages, snap.max_pages)
            left = snap.max_pages - done
            parts.append(f"{done / snap.max_pages:.0%} of max_pages {snap.max_pages:,}, "
                         f"{_eta(snap, left, c_rate)}")
        parts.append(f"items {snap.items:,}")
        # The vocabulary of every figure (ring.vocabulary): failed requests by
        # kind; URLs not requested by cause, links out of scope among them.
        n_err = sum(snap.errors.values())
        parts.append(f"{words(Family.FAILED)} {n_err:,}" + (f" ({_kinds(snap.errors)})" if n_err else ""))
        causes = not_requested(snap.not_requested, snap.out_of_scope)
        n_not = sum(causes.values())
        if n_not:
            parts.append(f"{words(Family.NOT_REQUESTED)} {n_not:,} ({_kinds(causes)})")
        parts.append(f"frontier {snap.frontier:,}, in flight {snap.in_flight}")
        ready = f"{snap.hosts_ready:,}" + ("+" if snap.hosts_ready >= READY_MOST else "")
        n_held = snap.held_robots + snap.held_retry_after + snap.held_down + snap.held_handoff
        hosts = f"hosts {ready} ready, {snap.hosts_waiting:,} waiting on politeness, {n_held:,} held"
        if n_held > 1:
            kinds = _kinds({"robots.txt": snap.held_robots, "Retry-After": snap.held_retry_after,
                            "down": snap.held_down, "hand-off": snap.held_handoff})
            nxt = f"; next {snap.held_next}, retry in {duration(snap.held_next_in)}" if snap.held_next else ""
            hosts += f" ({kinds}{nxt})"
        elif n_held and snap.held_next:
            hosts += f": {snap.held_next}, retry in {duration(snap.held_next_in)}"
        parts.append(hosts)
        if snap.hosts_down:
            parts.append(f"{snap.hosts_down:,} host{'s' if snap.hosts_down != 1 else ''} down, retrying")
        parts.append(f"dns hit rate {snap.dns_hit_rate:.0%}, bloom fill {snap.bloom_fill:.2%}"
                     + (f" (slice {snap.bloom_slices})" if snap.bloom_slices > 1 else ""))
        if snap.links_cut:
            parts.append(f"links cut {snap.links_cut:,}")
        if snap.paused:
            parts.append(snap.paused)
        body = ", ".join(parts)
        key = (body,)
        if key == self._last_key:
            return None
        self._last_key = key
        return f"{duration(snap.elapsed)}: {body}"
