"""What else of a host moves with it: its revisit records, cookies and exact-duplicate digests (pure).

A host's URLs go to its new owner in the Outbox's batches, its fetched
ones as ``seen``; the rest of what this peer knows of the host goes in the
ring's state box (``ring.statebox``), acked like the batches, and the new
owner's ``HandoffDone`` waits for both (``ring.handoff`` rule 5). Without
them the new owner would fetch the host's pages as new pages (no
``If-None-Match``, no schedule: peer/core/revisit/recrawl.py rule 8),
without the session the host set (peer/core/http/cookies.py rule 6), and
take copies of its pages for new ones (peer/core/dedupe/digests.py rule 6).

Rules:

1. **What moves.** For each host that moved away (the hand-off's reads:
   the results' hosts and those handed to us before): every revisit
   record of the host (the due queue's ``export_host``), every cookie of
   its host name, and every digest whose first URL is of the host. Each is
   removed here as it is queued: the state box holds the only copy until
   the new owner acks it (``ring.statebox`` rule 2).
2. **Placed by host.** Each record goes to its host's owner in the new
   ring, keyed by the host's placement key, so a later ring change
   re-routes it with the host (``ring.statebox`` rule 4).
3. **Imported by the parts that own them**, each checking what came as
   remote input and keeping the newer record where it holds one already;
   a part that is off here (no ``[revisit]``, cookies off) counts what it
   could not take (``handoff_state.unused``), and the crawl goes on.
4. **Times are wall time on the wire**, moved to and from the crawl's
   clock with the driver's ``wall_offset`` (epoch seconds minus the
   crawl's clock): peers' crawl clocks share no origin.
5. **Durable before acked.** What the new owner took of its revisit
   records and cookies is journaled and committed before the ack goes
   (``peer.core.door.peer`` rule 1h; peer/state/journal.py rule 6), and
   kept in its snapshots until the page's next visit or the jar's next
   save holds it; a restart imports it again (each part keeps the newer).
   Digests are not: the digest table lives in memory, the peer's own
   digests too (docs/dedupe.md).

Cookies are keyed by host name, without the port (RFC 6265 §8.5), where
the ring places ``host:port``: the cookies of a name go with the first of
its host keys that moves. Two ports of one name on two owners is a case
the local test webs have, not the Web.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from peer.core.urls.normalize import host_key, hostname
from peer.errors import URLError
from ring.statebox import Kind, StateRecords

if TYPE_CHECKING:
    from peer.core.crawl.core import CrawlCore

__all__ = ["Queued", "export_state", "import_state", "kept_on_disk"]

#: One record to queue in the state box: (new owner, placement key, kind, wire record).
Queued = tuple[str, str, Kind, Any]


def _host_of(url: str) -> str | None:
    try:
        return host_key(url)
    except URLError:
        return None


def export_state(crawl: CrawlCore, hosts: Iterable[str], owner: Callable[[str], str],
                 wall_offset: float) -> list[Queued]:
    """Rules 1-2: the records of ``hosts`` (moved away; ``owner`` is the new ring's), removed here."""
    moved = {h: owner(h) for h in hosts}
    out: list[Queued] = []
    rc, jar = crawl.recrawl, crawl.cookies
    names: set[str] = set()
    for host, dest in moved.items():
        if rc is not None:
            out += [(dest, host, Kind.REVISIT, r) for r in rc.export_host(host, wall_offset)]
        name = hostname(host)
        if jar is not None and name not in names:
            names.add(name)
            out += [(dest, host, Kind.COOKIE, c) for c in jar.export_host(name)]
    if moved and crawl.cfg.dedupe.enabled:
        for d, url in crawl.dedupe.digests.export_hosts(moved):
            key = _host_of(url)
            assert key is not None  # export_hosts matched it
            out.append((moved[key], key, Kind.DIGEST, (d, url)))
    return out


def kept_on_disk(crawl: CrawlCore, records: StateRecords) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """Rule 5: (revisit records, cookies) of ``records`` the new owner journals before its ack."""
    return (records.revisits if crawl.recrawl is not None else (),
            records.cookies if crawl.cookies is not None else ())


def import_state(crawl: CrawlCore, records: StateRecords, wall_offset: float, wall: float, *,
                 keep_held: bool = False) -> Counter[str]:
    """Rule 3: hand each part its records (``wall``: epoch seconds now); the counts taken and unused.

    ``keep_held``: a restart's import of what its journal kept, under the
    cookie jar's file (``CookieJar.import_records``).
    """
    counts: Counter[str] = Counter()
    rc, jar = crawl.recrawl, crawl.cookies
    if records.revisits:
        if rc is None:
            counts["handoff_state.unused"] += len(records.revisits)
        else:
            counts["handoff_state.revisits_taken"] += rc.import_records(list(records.revisits), wall_offset)
    if records.cookies:
        if jar is None:
            counts["handoff_state.unused"] += len(records.cookies)
        else:
            counts["handoff_state.cookies_taken"] += jar.import_records(records.cookies, wall,
                                                                        keep_held=keep_held)
    if records.digests:
        if not crawl.cfg.dedupe.enabled:
            counts["handoff_state.unused"] += len(records.digests)
        else:
            counts["handoff_state.digests_taken"] += crawl.dedupe.digests.import_digests(records.digests)
    return +counts  # no zero counters: a status reply carries at most 64 names
