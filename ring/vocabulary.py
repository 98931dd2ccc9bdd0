"""The words of a crawl's figures: one table that every surface names them by (pure).

The end-of-run summary, ``stats.json``, ``python -m ring status`` (and its
``--json``), the dashboard, the Prometheus metrics and the report all show
the same figures of a crawl. Each figure belongs to one family of
:data:`TERMS`, and every surface takes its key, its words and its metric
name from there, so that one crawl reads the same everywhere
(docs/figures.md shows the table).

It lives at the top of ``ring`` because ``ring status`` and the dashboard
render it and ``ring`` imports nothing of ``peer``; ``peer`` imports it.

Rules:

1. ``pages`` are the requests made for pages, each leaving a row: an answer
   of any status (a 404 is a page fetched) or a failure. robots.txt requests
   are apart (``robots_fetches``). It is what ``crawl.max_pages`` counts.
2. ``failed`` counts, by kind, the requests made or attempted that failed:
   :func:`failed` keeps the error rows that were requests. ``internal`` (a bug
   of ours) is a kind too, whether or not its request was made.
3. ``not_requested`` counts, by cause, URLs that were never requested: rows
   recorded without a request (``robots``; a robots.txt that could not be read,
   by its failure kind; ``retry_after``, a host given up), plus URLs refused
   before any queue, which leave no row (:data:`NO_ROW_CAUSES`: ``scope``, and
   the caps by their config key). A cause is never a failure. A cause with a
   row counts URLs (one row each); a cause without one counts the links met,
   a URL once for each page that links it, not distinct URLs: the refusal
   comes before the seen set, which must not fill with another site's URLs,
   and a URL refused at two peers would count twice anyway. Text says so
   (:func:`per_link`).
4. ``drops`` are refused input only: malformed frames, bad gossip, oversized
   batches, header values ignored or clamped. An exclusion is never a drop, and
   a healthy counter (:data:`COUNTER_PREFIXES`: forwarding frames, holds...)
   is never one either.
5. On the wire a status reply carries one list of named pairs besides the
   failures (``MemberStatus.dropped``): not-requested causes ride in it as
   ``not_requested.<cause>``, counters by their prefix, drops bare;
   :func:`split_pairs` takes them apart.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["COUNTER_PREFIXES", "Family", "NOT_REQUESTED_CAPS", "NOT_REQUESTED_PREFIX", "NO_ROW_CAUSES",
           "SCOPE", "SCOPE_RULES", "Split", "TERMS", "Term", "failed", "not_requested", "on_wire", "per_link",
           "split_pairs", "words"]


class Family(enum.StrEnum):
    """The families of figures; the value is the key in JSON (stats.json, ``ring status --json``)."""

    PAGES = "pages"
    FAILED = "failed"
    NOT_REQUESTED = "not_requested"
    DROPS = "drops"
    COUNTERS = "counters"


@dataclass(frozen=True, slots=True)
class Term:
    """How every surface names one family."""

    words: str    # in text: the summary, ``ring status``, the dashboard, the report
    metric: str   # the Prometheus family, without the ringcrawl_ prefix and _total
    label: str    # the label of a family counted by kind ("" for a single number)
    means: str    # one line: what it counts


#: The one table of the figures' names (the module docstring's rules).
TERMS: Mapping[Family, Term] = MappingProxyType({
    Family.PAGES: Term("pages fetched", "pages", "",
                       "requests made for pages: an answer of any status, or a failure; robots.txt apart"),
    Family.FAILED: Term("failed", "failed", "kind", "requests made or attempted that failed, by kind"),
    Family.NOT_REQUESTED: Term("not requested", "not_requested", "cause",
                               "URLs never requested, by cause (robots, scope, a rule, a cap...); "
                               "scope, rules, skip_extensions and the caps count links met, not distinct URLs"),
    Family.DROPS: Term("drops", "drops", "reason", "input refused (malformed frames, bad gossip...)"),
    Family.COUNTERS: Term("counters", "", "", "healthy counters (forwarding, holds, the seen set...)"),
})

#: The not-requested cause of links out of the crawl's scope.
SCOPE = "scope"
#: URLs left out by a URL rule or a skipped file extension (``crawl.rules``,
#: ``crawl.skip_extensions``: peer/core/urls/rules.py), named by their key.
SCOPE_RULES = ("rules", "skip_extensions")
#: Caps whose hits are URLs never requested (``peer.core.crawl.limits.Cap`` values:
#: the config key, or ``given_up`` for URLs of a host given up).
NOT_REQUESTED_CAPS = ("max_url_length", "max_path_repeat", "max_urls_per_host", "given_up",
                      # a spent budget's (peer.core.crawl.budgets rule 3)
                      "budget_host", "budget_site", "budget_domain")
#: The causes of URLs refused before a queue: no row is written for them, so
#: the report reads them from stats.json, not from the results file.
NO_ROW_CAUSES = frozenset({SCOPE, *SCOPE_RULES, *NOT_REQUESTED_CAPS})

#: How a not-requested cause rides in a status reply's pairs (rule 5).
NOT_REQUESTED_PREFIX = "not_requested."
#: Pairs of a status reply that count no refused input (rule 4): forwarding
#: frames, hand-off holds and their ends, held hosts, politeness holds, the seen
#: set's and the frontier's figures, restarts of members, gossip rounds that
#: woke late (this process stood still: ``stalled_rounds``), the caps that count
#: cut links or cut waits, internal errors, sitemaps fetched and not read
#: (``sitemaps.``; a sitemap's refused input is ``sitemap.<problem>``, a drop),
#: the cookie jar's (``cookies.``; a malformed Set-Cookie is ``cookie.malformed``, a drop),
#: the WARC writer's (``warc.``: records, files, fetches not archived...),
#: page requisites (``requisites.``: found, fetched, forwarded, and those a cap or the scope left out),
#: duplicate content's (``dedupe.``; a refused band answer or query is ``dedupe_<what>``, a drop),
#: a continuous crawl's schedule (``revisit.``: due, overdue, 304s, freshness;
#: a refused ETag or Last-Modified is ``revisit_validator``, a drop),
#: a seeds file's lines by outcome (``seeds_file.``: peer/core/crawl/seedfeed.py),
#: ``ring seed add``'s lines by outcome (``seed_add.``) and batches it answered
#: with nothing taken (``seed_add_batch.``: ring/seedadds.py),
#: messages not sent to a member of an older wire version (``wire.``: ring/wireversion.py),
#: moved hosts waiting for their lease (``lease.moved_``: peer/core/handoff/leasewaits.py),
#: operators' holds of a member asked by ``ring restart``, by outcome (``hold_request.``: ring/node.py rule 14),
#: and hosts down, held and probed (``outage.``: peer/core/crawl/outages.py).
COUNTER_PREFIXES = ("fwd.", "hold.", "held.", "polite.", "frontier.", "bloom.", "seen.",
                    "handoffs_", "handoff_", "peer_restarts", "stalled_rounds", "cap.", "error.",
                    "directives.", "invalid_status", "sitemaps.", "cookies.", "warc.", "dedupe.", "requisites.",
                    "revisit.", "seeds_file.", "seed_add.", "seed_add_batch.", "wire.", "lease.moved_",
                    "hold_request.", "outage.")


def words(family: Family) -> str:
    """How text names ``family``."""
    return TERMS[family].words


def failed(errors: Mapping[str, int], not_requested_rows: Mapping[str, int]) -> dict[str, int]:
    """Failed requests by kind (rule 2): every error row less those that never were a request."""
    out = {str(k): int(n) - int(not_requested_rows.get(k, 0)) for k, n in errors.items()}
    return {k: n for k, n in sorted(out.items()) if n > 0}


def not_requested(rows: Mapping[str, int], out_of_scope: int = 0,
                  cap_hits: Mapping[str, int] | None = None,
                  excluded: Mapping[str, int] | None = None) -> dict[str, int]:
    """URLs never requested by cause (rule 3): the rows' causes, links out of scope, the
    URLs a rule or an extension left out (``excluded``, :data:`SCOPE_RULES`), the caps' URLs."""
    out = {str(k): int(n) for k, n in rows.items() if n}
    if out_of_scope:
        out[SCOPE] = out.get(SCOPE, 0) + int(out_of_scope)
    for cause, n in (excluded or {}).items():
        if n:
            out[str(cause)] = out.get(str(cause), 0) + int(n)
    for cap in NOT_REQUESTED_CAPS:
        n = int((cap_hits or {}).get(cap, 0))
        if n:
            out[cap] = out.get(cap, 0) + n
    return dict(sorted(out.items()))


def per_link(causes: Iterable[str]) -> str:
    """What text says of not-requested causes among which some count links met (rule 3), or ""."""
    met = sorted(c for c in causes if c in NO_ROW_CAUSES)
    return f"{', '.join(met)}: links met, not distinct URLs" if met else ""


def on_wire(causes: Mapping[str, int]) -> dict[str, int]:
    """Not-requested causes as a status reply's pairs carry them (rule 5)."""
    return {NOT_REQUESTED_PREFIX + k: int(n) for k, n in causes.items() if n}


@dataclass(frozen=True, slots=True)
class Split:
    """A status reply's pairs, by family (rule 5)."""

    drops: tuple[tuple[str, int], ...] = ()
    counters: tuple[tuple[str, int], ...] = ()
    not_requested: tuple[tuple[str, int], ...] = ()


def split_pairs(pairs: Iterable[tuple[str, int]]) -> Split:
    """Drops, counters and not-requested causes of a status reply's pairs."""
    drops: list[tuple[str, int]] = []
    counters: list[tuple[str, int]] = []
    causes: list[tuple[str, int]] = []
    for k, v in pairs:
        if k.startswith(NOT_REQUESTED_PREFIX):
            causes.append((k[len(NOT_REQUESTED_PREFIX):], v))
        elif k.startswith(COUNTER_PREFIXES):
            counters.append((k, v))
        else:
            drops.append((k, v))
    return Split(tuple(drops), tuple(counters), tuple(causes))
