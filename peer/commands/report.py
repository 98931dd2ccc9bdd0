"""``python scripts/report.py`` (``ringcrawl-report``): a crawl report drawn from a results file.

The command line of :mod:`peer.results.report`, which reads the file and
draws the plots and the page: the file, the output directory, and the lines
saying what was written, or one ``error:`` line and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from ring.commandnames import Command, command, spoken
from collections.abc import Sequence
from pathlib import Path

from peer.commands.shell import cli_main
from peer.errors import ConfigError
from peer.results.report.build import build_report
from peer.results.report.plots import MAX_TOP

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=command(Command.REPORT, sys.argv[0]),
        description=(
            "Draw a crawl report from a results file (a peer's pages.duckdb or a merged file):\n"
            "PNG plots of pages/s per peer, requests/s of the busiest hosts against their\n"
            "setpoint, the PID trace of the busiest hosts, status codes,\n"
            "latency, pages per peer against ring share, errors by kind, progress over time and\n"
            "pages by depth, and an index.html with summary tables (failed requests and, apart,\n"
            "URLs never requested; item quality; the run's config from stats.json). The file is opened read-only. A plot with no data is left\n"
            "out and the page says why."
        ),
        epilog=(
            "example:\n"
            "  python scripts/report.py data/p1/pages.duckdb -o report/ --ring cluster.toml\n"
            "  then open report/index.html\n\n"
            "OUT is created if absent; files of an earlier report in it are overwritten, and the\n"
            "PNG of a plot this run leaves out is deleted. Exit status 2 on a usage mistake\n"
            "(missing or unreadable file, no pages table, OUT is a file, bad cluster.toml)."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("db", type=Path, help="results file (.duckdb) with a pages table")
    p.add_argument("-o", "--out", type=Path, required=True, metavar="OUT",
                   help="output directory for index.html and the PNGs")
    p.add_argument("--ring", type=Path, metavar="cluster.toml",
                   help="take ring shares from this config's [[peer]] weights and ring.vnodes, "
                        "and the politeness panel's setpoints from its politeness.rate and [[site]] rates "
                        "(default: the peers in the data, weight 1, 256 vnodes; pid_trace's setpoint)")
    p.add_argument("--stats", type=Path, metavar="stats.json",
                   help="the stats.json whose run_config the page shows (default: DB's stem + "
                        ".stats.json, else stats.json, beside DB)")
    p.add_argument("--top", type=int, default=4, metavar="N",
                   help=f"hosts in the politeness and PID trace plots, 1 to {MAX_TOP} (default 4)")
    # Commands named as the user started this one (installed, or from a checkout).
    p.description, p.epilog = spoken(p.description or "", sys.argv[0]), spoken(p.epilog or "", sys.argv[0])
    return p


@cli_main
def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        summary = build_report(args.db, args.out, ring_config=args.ring, top=args.top,
                               stats=args.stats)
    except ImportError as exc:
        raise ConfigError("report.py", "", f"{exc.name or exc} is not installed; "
                          "pip install -e '.[report]'") from None
    for title, why in summary.skipped:
        print(f"skipped: {title}: {why}")
    print(f"wrote {len(summary.figures)} plot(s) to {summary.index.parent}")
    print(f"report: {summary.index.resolve()}")
    return 0
