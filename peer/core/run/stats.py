"""End-of-run statistics: the summary printed at the end and ``data_dir/stats.json``.

Pure: values in, a string or a JSON-able dict out; the command line writes the
file (atomically) and ``scripts/merge.py`` sums the peers' files into the
cluster's. The shape follows Scrapy's stats dump (``start_time``,
``finish_time``, ``finish_reason``, ``downloader/response_status_count/200``
...), nested rather than slash-keyed, so ``jq .status_counts`` works. The
figures are named by ``ring.vocabulary`` (docs/figures.md), as everywhere:

================  ===========================================================
key               what
================  ===========================================================
format            1 (this layout)
peer, ring        who wrote it; a merged file has ``peers`` instead
run               runs on this crawl state, this one included
start_time ...    ``start_time``, ``finish_time`` (ISO 8601 UTC),
                  ``elapsed_seconds``, ``finish_reason``
pages             pages fetched: requests made, each with a row (an answer of
                  any status, or a failure); ``responses`` those answered
bytes             body bytes kept, decoded (after gzip, br, zstd...);
                  ``wire_bytes`` the same bodies as they came, before content
                  decoding (headers and chunk framing not counted);
                  ``pages_per_second`` over elapsed
status_counts     {status: pages}
failed            failed requests by kind (timeout, connect, dns ...)
not_requested     URLs never requested, by cause: ``robots`` (disallowed), a
                  robots.txt that could not be read (``dns``, ``connect``...),
                  ``retry_after`` (host given up), ``scope`` (links out of
                  scope), ``rules`` and ``skip_extensions`` (left out by
                  peer/core/urls/rules.py), and each cap's config key
                  (``max_url_length``...)
items             {table: rows} of the extraction rules; ``extract_errors``
pages_by_site     {"site[i]": requests} to the hosts of each ``[[site]]`` block
                  (peer/core/config/sites.py); hosts of no block are not listed
retries           requests retried; ``robots_fetches`` robots.txt requests answered
links_cut         links not followed past ``max_links_per_page``
directives        pages by what they say of themselves (``peer.core.page.directives``):
                  ``noindex``, ``nofollow``, ``x_robots_tag`` (either from the
                  header), ``canonical`` (any), ``noncanonical`` (another URL),
                  ``noncanonical_unfollowed`` (crawl.follow_noncanonical),
                  ``items_withheld`` (item rows of noindex pages); and links
                  followed by source: ``links_frame``, ``links_refresh``, ``links_link``;
                  ``links_params_changed``: links whose parameters
                  crawl.strip_params or crawl.sort_query changed
invalid_status    responses with a status outside 100-599 (or a final 1xx),
                  handled as 5xx (RFC 9110 §15)
forwarded_out/in  URLs sent to and received from their owners; ``handoffs_in``
internal_errors   exceptions by type, each one a URL's row (engine rule 8)
sitemaps          ``fetched`` (parsed), ``urls`` (listed, then discovered like
                  links), ``failed`` (not read, by cause) and ``drops``
                  (refused input by ``peer.core.sitemaps.document.Problem`` or tracker
                  refusal: ``too_many_urls``, ``entities``, ``max_per_host``...)
warc              with ``[warc] enabled``: ``records``, ``fetches``, ``files``,
                  ``bytes`` written, ``without_response`` (no bytes to keep),
                  ``skipped_truncated`` (``over_max_body = "skip"``) and
                  ``not_archived`` (after the writer failed)
run_config        the cluster.toml sections this run used, ``sites`` its
                  ``[[site]]`` blocks
================  ===========================================================
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ring.durations import duration
from ring.vocabulary import Family, failed, not_requested, per_link, words

__all__ = ["EARLIER_RUNS", "FORMAT", "STATS_FILE", "Summary", "crawl_stats", "keep_earlier_runs", "render_summary",
           "run_config", "sum_stats", "requested_errors"]

FORMAT = 1
#: The file each peer writes in its data_dir at the end of a run.
STATS_FILE = "stats.json"


@dataclass(slots=True)
class Summary:
    """What a crawl did; printed at the end and returned by ``Crawler.run``."""

    pages: int = 0                       # rows written (fetched or failed)
    fetched: int = 0                     # requests that got an HTTP answer
    bytes: int = 0                       # body bytes kept, decoded (after gzip, br, zstd...)
    wire_bytes: int = 0                  # the same bodies as they came: before content decoding
    by_status: Counter[int] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    retries: int = 0
    robots_fetches: int = 0
    items: int = 0                       # rows of the extraction rules' tables
    extract_errors: int = 0              # user extraction function failures
    internal: Counter[str] = field(default_factory=Counter)  # exceptions by type (rule 8)
    limits: str = ""                     # Limits.render(): caps hit, hosts held
    details: list[str] = field(default_factory=list)  # remote input, politeness, seen set
    elapsed: float = 0.0
    stop_reason: str = ""

    # "pages" to a user are requests made (peer/core/run/progress.py); rows recorded
    # without one are counted apart, by cause, and so are links out of scope.
    requested: int = 0                   # rows whose request was made, this run
    not_requested: Counter[str] = field(default_factory=Counter)
    out_of_scope: int = 0
    excluded: Counter[str] = field(default_factory=Counter)  # by urlrules.Cause: rules, skip_extensions
    requeued_twice: int = 0              # jobs of a URL requested here a moment ago, dropped
    items_by_table: Counter[str] = field(default_factory=Counter)
    caps: Counter[str] = field(default_factory=Counter)  # cap hits by Cap value, at the end
    # Sitemaps (peer/core/sitemaps/jobs.py): fetched apart from pages, as robots.txt is.
    sitemaps_fetched: int = 0            # sitemap requests answered 2xx and parsed
    sitemap_urls: int = 0                # URLs they listed, each then discovered like a link
    sitemap_failed: Counter[str] = field(default_factory=Counter)   # not read, by cause
    sitemap_drops: Counter[str] = field(default_factory=Counter)    # refused input, by problem
    by_site: Counter[str] = field(default_factory=Counter)  # requests to hosts of a [[site]] block
    directives: Counter[str] = field(default_factory=Counter)  # the module docstring's keys
    invalid_status: int = 0              # answers handled as a 5xx (RFC 9110 §15)
    cookies: dict[str, int] = field(default_factory=dict)  # the cookie jar's (peer/core/http/cookies.py)
    warc: dict[str, int] = field(default_factory=dict)  # the WARC writer's ([warc]; peer/engine/archive.py)
    dedupe: dict[str, int] = field(default_factory=dict)  # peer.core.dedupe.held's figures, at the end
    revisit: dict[str, Any] = field(default_factory=dict)  # a continuous crawl's (peer/core/revisit/recrawl.py)
    requisites: Counter[str] = field(default_factory=Counter)  # page requisites (peer/core/crawl/requisites.py rule 5)

    def rate(self) -> float:
        return self.requested / self.elapsed if self.elapsed > 0 else 0.0

    def render(self) -> str:
        return render_summary(self)

def requested_errors(errors: Mapping[str, int], not_requested: Mapping[str, int]) -> dict[str, int]:
    """Failed requests by kind: all error rows less those that never were a request."""
    return failed(errors, not_requested)


def _counts(counts: Mapping[str, int]) -> str:
    """``kind n, kind n`` by count, most first; "none" for none."""
    return ", ".join(f"{k} {n}" for k, n in sorted(counts.items(), key=lambda x: (-x[1], x[0]))) or "none"


def _excluded(s: Any) -> Mapping[str, int]:
    # A summary from before crawl.rules (or a test's stand-in) has no such counter.
    return getattr(s, "excluded", None) or {}


def _size(n: int) -> str:
    """Bytes for a person: MiB from one MiB up, else KiB (7,378 bytes is "7.2 KiB", not "0.0 MiB")."""
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"


def _sizes(s: Any) -> str:
    """The bodies' size, decoded, and as they came when content coding made them smaller."""
    wire = getattr(s, "wire_bytes", s.bytes)
    if wire == s.bytes:
        return f"{_size(s.bytes)} of bodies"
    return f"{_size(s.bytes)} of bodies decoded, {_size(wire)} on the wire"


def render_summary(s: Any) -> str:
    """The summary a peer prints at the end; ``s`` is the engine's ``Summary``."""
    statuses = ", ".join(f"{st}: {n}" for st, n in sorted(s.by_status.items())) or "none"
    errs = _counts(failed(s.errors, s.not_requested))
    if s.internal:
        errs += " (internal: " + ", ".join(f"{k} {n}" for k, n in s.internal.most_common(5)) + ")"
    causes = not_requested(s.not_requested, s.out_of_scope, getattr(s, "caps", None), _excluded(s))
    excluded = _counts(causes)
    # On a line of its own: the line above is read by scripts (``not requested: k n, ...``).
    met = per_link(causes)
    rate = s.requested / s.elapsed if s.elapsed > 0 else 0.0
    items = ""
    if s.items or s.extract_errors:
        tables = ", ".join(f"{t} {n}" for t, n in sorted(s.items_by_table.items()))
        items = f"; items: {s.items}" + (f" ({tables})" if tables else "")
        items += f" ({s.extract_errors} extraction errors)" if s.extract_errors else ""
    return "\n".join([
        f"crawl finished ({s.stop_reason}) in {duration(s.elapsed)}: "
        f"{s.requested} {words(Family.PAGES)} this run, {rate:.1f} pages/s, {_sizes(s)}",
        f"  by status: {statuses}",
        f"  {words(Family.FAILED)}: {errs}",
        f"  {words(Family.NOT_REQUESTED)}: {excluded}",
        *([f"    ({met})"] if met else []),
        f"  retries: {s.retries}; robots.txt fetched: {s.robots_fetches}" + items,
        *([f"  directives: " + ", ".join(f"{k} {n}" for k, n in sorted(s.directives.items()))]
          if s.directives else []),
        *([f"  invalid status codes (handled as 5xx): {s.invalid_status}"] if s.invalid_status else []),
        *([f"  {s.limits}"] if s.limits else []),
        *([f"  pages by [[site]] block: " + ", ".join(f"{k} {n}" for k, n in sorted(s.by_site.items()))]
          if s.by_site else []),
        *(f"  {line}" for line in s.details),
    ])


def _iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


def _jsonable(v: Any) -> Any:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: _jsonable(getattr(v, f.name)) for f in dataclasses.fields(v)
                if not f.name.startswith("_") and f.repr}
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def run_config(cfg: Any) -> dict[str, Any]:
    """The config a run used, JSON-able: every section, the peers and the extraction rules."""
    out = {name: _jsonable(getattr(cfg, name))
           for name in ("ring", "crawl", "politeness", "dns", "bloom", "sitemaps", "warc", "revisit")}
    out["peers"] = [_jsonable(p) for p in cfg.peers]
    out["sites"] = [_jsonable(b) for b in cfg.sites]  # [[site]] blocks, as written
    ex = cfg.extract
    out["extract"] = {"rules": [{"table": r.table, "match": r.match,
                                 "fields": [_jsonable(f) for f in r.fields]} for r in ex.rules],
                      "module": ex.module}
    return out


def crawl_stats(s: Any, *, peer: str, ring: str, run: int, started: float, finished: float,
                cap_hits: Mapping[str, int], forwarded_out: int = 0, forwarded_in: int = 0,
                handoffs_in: int = 0, config: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The stats.json of one run; ``s`` is the engine's ``Summary``, times are epoch seconds."""
    elapsed = max(finished - started, 0.0)
    return {
        "format": FORMAT, "peer": peer, "ring": ring, "run": run,
        "start_time": _iso(started), "finish_time": _iso(finished),
        "elapsed_seconds": round(elapsed, 3), "finish_reason": s.stop_reason,
        Family.PAGES.value: int(s.requested), "responses": int(s.fetched), "bytes": int(s.bytes),
        "wire_bytes": int(s.wire_bytes),
        "pages_per_second": round(s.requested / elapsed, 3) if elapsed > 0 else 0.0,
        "status_counts": {str(k): int(n) for k, n in sorted(s.by_status.items())},
        Family.FAILED.value: failed(s.errors, s.not_requested),
        Family.NOT_REQUESTED.value: not_requested(s.not_requested, s.out_of_scope, cap_hits, _excluded(s)),
        "items": {t: int(n) for t, n in sorted(s.items_by_table.items())},
        "items_total": int(s.items), "extract_errors": int(s.extract_errors),
        "pages_by_site": {k: int(n) for k, n in sorted(s.by_site.items())},
        "retries": int(s.retries), "robots_fetches": int(s.robots_fetches),
        "directives": {k: int(n) for k, n in sorted(s.directives.items())},
        "invalid_status": int(s.invalid_status),
        "links_cut": int(cap_hits.get("max_links_per_page", 0)),
        "forwarded_out": int(forwarded_out), "forwarded_in": int(forwarded_in),
        "handoffs_in": int(handoffs_in),
        "internal_errors": {k: int(n) for k, n in sorted(s.internal.items())},
        "sitemaps": {"fetched": int(s.sitemaps_fetched), "urls": int(s.sitemap_urls),
                     "failed": {k: int(n) for k, n in sorted(s.sitemap_failed.items())},
                     Family.DROPS.value: {k: int(n) for k, n in sorted(s.sitemap_drops.items())}},
        "cookies": _split_figures(getattr(s, "cookies", {}), "cookies.", "cookie."),  # a summary without a jar: {}
        "warc": {k: int(n) for k, n in sorted(getattr(s, "warc", {}).items())},  # {} when off
        "dedupe": _split_figures(getattr(s, "dedupe", {}), "dedupe.", "dedupe_"),
        "revisit": dict(getattr(s, "revisit", {})),  # {} unless [revisit] is on
        "requisites": {k: int(n) for k, n in sorted(getattr(s, "requisites", {}).items())},  # {} when off
        "run_config": dict(config or {}),
    }


#: stats.json's key for the runs before this one on the same crawl state, oldest first.
EARLIER_RUNS = "earlier_runs"


def keep_earlier_runs(doc: dict[str, Any], previous: Any) -> dict[str, Any]:
    """``doc`` (this run's stats.json) with the runs before it kept under :data:`EARLIER_RUNS`.

    ``previous`` is the stats.json this run finds in its data_dir (None when
    none, or unreadable): a resumed crawl's earlier run, whose file this
    run's replaces. Each run's figures are its own (the counters of a run
    start at zero), so without this a resumed or continuous crawl's
    stats.json, and the report drawn from it, would show the last run
    alone. Kept when it is this peer's and of an earlier run number of the
    same state (a ``--fresh`` start deletes the file with the state); its
    ``run_config`` is left out (the current run's is the one in force).
    """
    if not isinstance(previous, Mapping) or previous.get("peer") != doc.get("peer"):
        return doc
    run, before = doc.get("run"), previous.get("run")
    if not isinstance(run, int) or not isinstance(before, int) or isinstance(before, bool) or before >= run:
        return doc
    earlier = previous.get(EARLIER_RUNS)
    kept = [r for r in earlier if isinstance(r, Mapping)] if isinstance(earlier, list) else []
    last = {k: v for k, v in previous.items() if k not in (EARLIER_RUNS, "run_config")}
    return {**doc, EARLIER_RUNS: [*kept, last]}


def _split_figures(counts: Mapping[str, int], counter: str, drop: str) -> dict[str, Any]:
    """A feature's counters (names starting ``counter``) by name without it, and its refused
    input (names starting ``drop``) under ``drops`` (ring.vocabulary: a drop is refused input)."""
    out: dict[str, Any] = {k.removeprefix(counter): int(n) for k, n in sorted(counts.items())
                           if k.startswith(counter)}
    out[Family.DROPS.value] = {k.removeprefix(drop): int(n) for k, n in sorted(counts.items())
                               if k.startswith(drop)}
    return out


def _add(into: dict[str, Any], key: str, value: Any) -> None:
    if isinstance(value, Mapping):
        sub = into.setdefault(key, {})
        if isinstance(sub, dict):
            for k, v in value.items():
                _add(sub, k, v)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        into[key] = into.get(key, 0) + value


_NOT_SUMMED = {"format", "peer", "ring", "run", "start_time", "finish_time", "elapsed_seconds",
               "finish_reason", "pages_per_second", "run_config", EARLIER_RUNS}


def sum_stats(peers: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The cluster's stats: counters summed, the span from the first start to the last finish.

    ``run_config`` is the first peer's (every peer of a ring reads the same
    cluster.toml); ``finish_reasons`` counts the peers' reasons.
    """
    docs = list(peers)
    out: dict[str, Any] = {"format": FORMAT, "peers": [d.get("peer") for d in docs],
                           "ring": next((d.get("ring") for d in docs if d.get("ring")), None)}
    starts = [d["start_time"] for d in docs if d.get("start_time")]
    ends = [d["finish_time"] for d in docs if d.get("finish_time")]
    out["start_time"] = min(starts) if starts else None  # ISO 8601 UTC strings sort as times
    out["finish_time"] = max(ends) if ends else None
    elapsed = 0.0
    if starts and ends:
        elapsed = (datetime.fromisoformat(out["finish_time"])
                   - datetime.fromisoformat(out["start_time"])).total_seconds()
    out["elapsed_seconds"] = elapsed
    reasons: dict[str, int] = {}
    for d in docs:
        r = str(d.get("finish_reason", ""))
        reasons[r] = reasons.get(r, 0) + 1
        for k, v in d.items():
            if k not in _NOT_SUMMED:
                _add(out, k, v)
    out["finish_reasons"] = reasons
    # Each peer's earlier runs, as they were (each names its peer), oldest first: not summed,
    # since the peers' runs need not line up.
    earlier = [r for d in docs if isinstance(d.get(EARLIER_RUNS), list) for r in d[EARLIER_RUNS]
               if isinstance(r, Mapping)]
    if earlier:
        out[EARLIER_RUNS] = sorted(earlier, key=lambda r: str(r.get("start_time") or ""))
    out["pages_per_second"] = round(out.get("pages", 0) / elapsed, 3) if elapsed > 0 else 0.0
    out["run_config"] = next((d["run_config"] for d in docs if d.get("run_config")), {})
    return out
