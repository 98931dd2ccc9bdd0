"""The report's ``index.html``: summary tables and the figures with their captions.

Rules: one self-contained page (its style inline, the PNGs beside it); every
string from the data is HTML-escaped (:func:`_e`) and shown as text, never as
a link, since URLs, titles, hosts and peer ids are hostile input.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from peer.results.report.facts import Facts
from ring.durations import duration
from ring.vocabulary import TERMS, Family, words

__all__ = ["render_page", "run_rows"]


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _cut(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"




def _when(us: int | None) -> str:
    if us is None:
        return "n/a"
    return datetime.fromtimestamp(us / 1e6, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]], num: frozenset[int] = frozenset()) -> str:
    """An HTML table; every cell escaped, the columns in ``num`` right-aligned."""
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f'<td class="num">{_e(c)}</td>' if i in num else f"<td>{_e(c)}</td>"
                         for i, c in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_CSS = """
body { font-family: system-ui, sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: 0.5rem 0 1.5rem; font-size: 0.92rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.6rem; text-align: left; vertical-align: top; }
thead th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td { word-break: break-all; }
figure { margin: 1.5rem 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 0.92rem; color: #444; margin-top: 0.3rem; }
p.skipped { color: #8a5a00; background: #fff6e0; padding: 0.4rem 0.6rem; }
"""


def _summary_rows(f: Facts, ring_source: str) -> list[tuple[str, str, str]]:
    v = f.visits
    # A continuous crawl's pages row is each URL's last visit: its visits and their times
    # are the fetches table's, every run in the file (facts.Visits).
    span, t0, t1 = (f.span, f.t0_us, f.t1_us) if v is None else (v.span, v.t0_us, v.t1_us)
    rate = f"{(f.pages if v is None else v.total) / span:,.1f}" if span > 0 else "n/a"
    status = " · ".join(f"{'error' if s is None else s}: {n:,}" for s, n in f.status) or "none"
    def by(counts: Sequence[tuple[str, int, str]]) -> str:
        return " · ".join(f"{k}: {n:,}" for k, n, _ in counts) or "none"

    items = "; ".join(f"{t}: {n:,} rows" for t, n in f.counts.items() if t.startswith("items_"))
    optional = []
    for t in ("pid_trace", "links", "bodies"):
        optional.append((f"s-{t}", t, f"{f.counts[t]:,} rows" if t in f.counts else "absent"))
    return [
        ("s-source", "results file", str(f.db)),
        # Named by ring.vocabulary, as the summary, stats.json and ring status name them.
        ("s-pages", f"{words(Family.PAGES)} ({TERMS[Family.PAGES].means})" if v is None else
         "pages (distinct URLs requested: the pages table keeps one row a URL, its last visit)", f"{f.pages:,}"),
        *([] if v is None else [(
            "s-visits", "visits (every request of a page, first visits and revisits, of every run in the "
            "file: the fetches table)",
            f"{v.total:,}: {v.new:,} first visits, {v.revisit:,} revisits, of {v.urls:,} URLs")]),
        ("s-failed", f"{words(Family.FAILED)}, by kind", by(f.errors)),
        ("s-not-requested", f"{words(Family.NOT_REQUESTED)}, by cause", by(f.not_requested)),
        ("s-answered", "answered (with a status)", f"{f.answered:,}"),
        ("s-hosts", "hosts", f"{f.hosts:,}"),
        ("s-peers", "peers", f"{len(f.peers):,}"),
        ("s-first", "first fetch", _when(t0)),
        ("s-last", "last fetch", _when(t1)),
        ("s-span", "time span", duration(span) if t0 is not None else "n/a"),
        ("s-rate", "pages/s (mean over the span)" if v is None else "visits/s (mean over the span)", rate),
        ("s-status", "status codes", status),
        ("s-per-host", "pages per host", f"median {f.host_median:,.1f}, max {f.host_max:,}"),
        ("s-ring", "ring shares from", ring_source),
        *optional,
        ("s-items", "items tables", items or "none"),
    ]


def _items_html(f: Facts) -> list[str]:
    out = []
    for table, n, empty, shown, sample in f.items:
        out.append(f"<h3>{_e(table)}</h3><p>{n:,} rows. Empty: NULL, blank, or an empty list.</p>")
        out.append(_table(["field", "% empty"], [(c, f"{pct:.1f}%") for c, pct in empty],
                          num=frozenset({1})))
        out.append(_table(shown, [[_cut(str(v), 80) for v in row] for row in sample]))
    return out


def _config_html(cfg: tuple[str, dict[str, Any]] | None) -> str:
    if cfg is None:
        return ("<p>No stats.json beside the results file (a peer writes one in its data_dir at the "
                "end of a run; merge.py sums them into OUT.stats.json); --stats names one.</p>")
    import json

    source, doc = cfg
    rows: list[tuple[str, str]] = []
    for section, values in doc.items():
        if isinstance(values, dict):
            rows.extend((f"{section}.{k}", json.dumps(v)) for k, v in values.items())
        else:
            rows.append((section, json.dumps(values)))
    return f"<p>From {_e(source)}.</p>" + _table(["key", "value"], [(k, _cut(v, 200)) for k, v in rows])


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def run_rows(doc: dict[str, Any]) -> list[tuple[str, str, str, str, str, int | None, int | None]]:
    """The runs a stats.json holds, oldest first, then their total: (run, peer, started, finished,
    how it ended, pages, revisits). A peer's stats.json is its last run, with the runs before it
    under ``earlier_runs`` (peer.core.run.stats.keep_earlier_runs); a merged one sums the peers'
    last runs and lists their earlier ones."""
    rows: list[tuple[str, str, str, str, str, int | None, int | None]] = []
    merged = "peers" in doc and "peer" not in doc
    for r in [*(doc.get("earlier_runs") or []), doc]:
        if not isinstance(r, dict):
            continue
        revisit = r.get("revisit")
        revisits = _count(revisit.get("visits_revisit")) if isinstance(revisit, dict) else None
        if r is doc and merged:
            got_peers, got_reasons = doc.get("peers"), doc.get("finish_reasons")
            peers: list[Any] = got_peers if isinstance(got_peers, list) else []
            reasons: dict[str, Any] = got_reasons if isinstance(got_reasons, dict) else {}
            rows.append(("last", ", ".join(map(str, peers)), str(r.get("start_time") or ""),
                         str(r.get("finish_time") or ""), ", ".join(f"{k} ({n})" for k, n in reasons.items()),
                         _count(r.get("pages")), revisits))
            continue
        rows.append((str(r.get("run", "")), str(r.get("peer") or ""), str(r.get("start_time") or ""),
                     str(r.get("finish_time") or ""), str(r.get("finish_reason") or ""),
                     _count(r.get("pages")), revisits))
    if len(rows) > 1:
        pages = [p for *_, p, _ in rows if p is not None]
        revisits_ = [n for *_, n in rows if n is not None]
        rows.append(("all", "", "", "", "", sum(pages) if pages else None, sum(revisits_) if revisits_ else None))
    return rows


def _runs_html(stats: tuple[str, dict[str, Any]] | None) -> str:
    if stats is None:
        return "<p>No stats.json beside the results file: the runs are not known.</p>"
    source, doc = stats
    rows = run_rows(doc)
    if not rows:
        return "<p>The stats.json names no run.</p>"
    return (f"<p>Per run, from {_e(source)}, oldest first, and their total: each run's own figures "
            "(a run's counters start at zero; a run killed before its end wrote none). "
            f"{_e(words(Family.PAGES).capitalize())}: requests made, revisits among them.</p>"
            + _table(["run", "peer", "started", "finished", "ended", "pages", "revisits"],
                     [(*r[:5], "" if r[5] is None else f"{r[5]:,}", "" if r[6] is None else f"{r[6]:,}")
                      for r in rows], num=frozenset({5, 6})))


def render_page(f: Facts, ring_source: str, shares: dict[str, float],
          sections: list[tuple[str, str, str | None, str]],
          run_cfg: tuple[str, dict[str, Any]] | None = None,
          stats: tuple[str, dict[str, Any]] | None = None) -> str:
    """``sections``: (title, png name, caption or None when skipped, why skipped); ``stats``:
    (source, document) of the stats.json read, for the runs table."""
    out = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>ringcrawl report: {_e(f.db.name)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>ringcrawl report: {_e(f.db.name)}</h1>",
        f"<p>Generated {_e(datetime.now(UTC).strftime('%Y-%m-%d %H:%M:%S UTC'))}. "
        "Times are UTC. Strings from the crawl are shown as text, never as links.</p>",
        '<h2 id="summary">Summary</h2>',
        '<table class="summary"><tbody>',
        *(f'<tr id="{rid}"><th>{_e(k)}</th><td>{_e(v)}</td></tr>' for rid, k, v in _summary_rows(f, ring_source)),
        "</tbody></table>",
        '<h2 id="runs">Runs</h2>',
        _runs_html(stats),
        '<h2 id="peers">Peers</h2>',
        _table(["peer", "pages", "share of pages", "hosts", "share of the ring"],
               [(p or "(no peer)", f"{n:,}", f"{100 * n / f.pages:.1f}%" if f.pages else "n/a", f"{h:,}",
                 f"{100 * shares[p]:.1f}%" if p in shares else "not on the ring")
                for p, n, h in f.peers], num=frozenset({1, 2, 3, 4})),
        f'<h2 id="hosts">Top hosts</h2><p>The {len(f.top_hosts)} hosts with the most pages, of '
        f"{f.hosts:,}.</p>",
        _table(["host", "pages", "failed", "peer(s)"],
               [(h, f"{n:,}", f"{e:,}", p) for h, n, e, p in f.top_hosts], num=frozenset({1, 2})),
        f'<h2 id="errors">{_e(words(Family.FAILED).capitalize())}</h2>'
        f"<p>{_e(TERMS[Family.FAILED].means.capitalize())}.</p>",
        _table(["kind", "pages", "example URL"],
               [(k, f"{n:,}", _cut(u)) for k, n, u in f.errors], num=frozenset({1}))
        if f.errors else "<p>No failed request.</p>",
        f'<h2 id="not-requested">{_e(words(Family.NOT_REQUESTED).capitalize())}</h2><p>URLs never '
        "requested, by cause: <code>robots</code> is robots.txt's exclusion; a failure kind is why a "
        "host's robots.txt could not be read; <code>retry_after</code> a host given up; "
        "<code>scope</code> and the caps (their config key) leave no row, and are read from the "
        "stats.json beside the file. Not failures, not pages.</p>",
        _table(["cause", "URLs", "example URL"],
               [(k, f"{n:,}", _cut(u)) for k, n, u in f.not_requested], num=frozenset({1}))
        if f.not_requested else "<p>None: every URL recorded was requested.</p>",
        '<h2 id="items">Item quality</h2>',
        *(_items_html(f) or ["<p>No items tables.</p>"]),
        '<h2 id="config">Run config</h2>',
        _config_html(run_cfg),
        f'<h2 id="slowest">Slowest pages</h2><p>The {len(f.slowest)} fetches that took longest.</p>',
        _table(["URL", "status", "title", "elapsed ms", "peer"],
               [(_cut(u), "error" if s is None else s, _cut(t, 80), f"{ms:,.1f}", p)
                for u, s, t, ms, p in f.slowest], num=frozenset({3})),
        '<h2 id="figures">Figures</h2>',
    ]
    for title, name, caption, why in sections:
        if caption is None:
            out.append(f'<p class="skipped">{_e(title)}: not drawn, {_e(why)}.</p>')
        else:
            out.append(f'<figure><img src="{_e(name)}" alt="{_e(title)}">'
                       f"<figcaption><b>{_e(title)}.</b> {_e(caption)}</figcaption></figure>")
    out.append("</body></html>\n")
    return "\n".join(out)
