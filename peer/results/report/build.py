"""Writing a report: :func:`build_report` and :func:`captions`.

:func:`build_report` reads the file (:mod:`~peer.results.report.facts`), draws
the figures (:mod:`~peer.results.report.plots`), then writes the PNGs and the
page (:mod:`~peer.results.report.page`) into OUT. ``python scripts/report.py
DB -o OUT`` (``ringcrawl-report`` once installed) is its command line,
``peer.commands.report``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from peer.errors import ConfigError, StateError, first_line
from peer.results.report.facts import PAGES_COLUMNS, Facts, open_results, read_facts, table_columns
from peer.results.report.page import render_page
from peer.results.report.plots import DPI, MAX_TOP, draw, ring_shares, setpoint
from ring.vocabulary import NO_ROW_CAUSES, Family

__all__ = ["ReportSummary", "build_report", "captions"]


@dataclass(frozen=True, slots=True)
class ReportSummary:
    """What :func:`build_report` wrote: the page, its PNGs in page order, the plots skipped."""

    index: Path
    figures: tuple[Path, ...]
    skipped: tuple[tuple[str, str], ...]  # (plot title, why)


def _stats_doc(db: Path, stats: Path | None) -> tuple[str, dict[str, Any]] | None:
    """(source, document) of ``stats`` or the stats.json beside ``db``; None if there is none."""
    import json

    candidates = [stats] if stats is not None else [db.with_name(db.stem + ".stats.json"),
                                                    db.parent / "stats.json"]
    for path in candidates:
        if path is None or not path.is_file():
            if stats is not None:
                raise ConfigError(str(stats), "--stats", "no such file")
            continue
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise StateError(f"{path}: cannot read stats ({exc})") from None
        return (str(path), doc) if isinstance(doc, dict) else None
    return None


def _run_config(doc: tuple[str, dict[str, Any]] | None) -> tuple[str, dict[str, Any]] | None:
    """(source, run_config) of a stats document, if it has one."""
    cfg = doc[1].get("run_config") if doc is not None else None
    return (doc[0], cfg) if doc is not None and isinstance(cfg, dict) and cfg else None


def _no_row_causes(facts: Facts, doc: tuple[str, dict[str, Any]] | None) -> Facts:
    """``facts`` with the not-requested causes that leave no row (scope, the caps) from stats.json."""
    got = doc[1].get(Family.NOT_REQUESTED.value) if doc is not None else None
    if not isinstance(got, dict):
        return facts
    extra = [(str(k), int(n), "") for k, n in got.items()
             if k in NO_ROW_CAUSES and isinstance(n, int) and not isinstance(n, bool) and n > 0]
    if not extra:
        return facts
    causes = sorted([*facts.not_requested, *extra], key=lambda c: (-c[1], c[0]))
    return dataclasses.replace(facts, not_requested=causes)


def _read(db: Path, ring_config: Path | None,
          top: int) -> tuple[Facts, dict[str, float], str, list[tuple[str, str, Any]]]:
    """The file's facts, ring shares and each plot drawn (not yet saved), or why it is skipped."""
    con = open_results(db)
    try:
        try:
            tables = table_columns(con)
            if "pages" not in tables:
                found = ", ".join(sorted(tables)) or "none"
                raise StateError(f"{db}: has no pages table (tables: {found}); is it a ringcrawl results file?")
            if missing := PAGES_COLUMNS - tables["pages"]:
                raise StateError(f"{db}: the pages table lacks the column(s) {', '.join(sorted(missing))}")
            facts = read_facts(con, db, tables)
            shares, ring_source = ring_shares(facts, ring_config)
            drawn = draw(con, facts, top=top, shares=shares, ring_source=ring_source,
                          setpoint=setpoint(con, facts, ring_config))
        except duckdb.Error as exc:
            raise StateError(f"{db}: cannot be read: {first_line(exc)}") from None
    finally:
        con.close()
    return facts, shares, ring_source, drawn


def captions(db: Path, *, ring_config: Path | None = None, top: int = 4) -> dict[str, str]:
    """Each plot's caption, or the reason it is skipped, by file name: what build_report
    would write under each PNG of the page, without rendering or writing anything.

    Rendering the figures (``savefig``) is most of a report's cost: 13.4 of
    15.1 s of one profiled 9-plot report.
    """
    db = Path(db)
    if not 1 <= top <= MAX_TOP:
        raise ConfigError("--top", "", f"expected an integer from 1 to {MAX_TOP}, got {top!r}")
    _, _, _, drawn = _read(db, ring_config, top)
    out: dict[str, str] = {}
    for name, _, result in drawn:
        if isinstance(result, str):
            out[name] = result
        else:
            out[name] = result[1]
    return out


def build_report(db: Path, out: Path, *, ring_config: Path | None = None, top: int = 4,
                 stats: Path | None = None) -> ReportSummary:
    """Write the PNGs and ``out/index.html`` for the results file ``db``.

    ``out`` is created if absent; files of an earlier report there are
    overwritten, and a plot this run skips has its old PNG removed. Raises
    :class:`ConfigError` (bad argument, unreadable cluster.toml, ``out`` is a
    file) or :class:`StateError` (not a DuckDB file, no pages table).
    """
    db, out = Path(db), Path(out)
    if not 1 <= top <= MAX_TOP:
        raise ConfigError("--top", "", f"expected an integer from 1 to {MAX_TOP}, got {top!r}")
    if out.exists() and not out.is_dir():
        raise ConfigError(str(out), "", "exists and is not a directory (-o takes a directory)")
    doc = _stats_doc(db, stats)
    run_cfg = _run_config(doc)
    facts, shares, ring_source, drawn = _read(db, ring_config, top)
    facts = _no_row_causes(facts, doc)
    try:
        out.mkdir(parents=True, exist_ok=True)
        written: list[Path] = []
        sections: list[tuple[str, str, str | None, str]] = []
        for name, title, result in drawn:
            path = out / name
            if isinstance(result, str):
                if path.is_file():  # a stale plot of an earlier report would contradict the page
                    path.unlink()
                sections.append((title, name, None, result))
                continue
            fig, caption = result
            fig.savefig(path, dpi=DPI)
            written.append(path)
            sections.append((title, name, caption, ""))
        index = out / "index.html"
        index.write_text(render_page(facts, ring_source, shares, sections, run_cfg, doc), encoding="utf-8",
                         errors="replace")
    except OSError as exc:
        raise ConfigError(str(out), "", f"cannot write the report: {exc.strerror or exc}") from None
    return ReportSummary(
        index=index, figures=tuple(written),
        skipped=tuple((title, why) for title, _, caption, why in sections if caption is None),
    )
