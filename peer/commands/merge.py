"""``python scripts/merge.py`` (``ringcrawl-merge``): the peers' results files merged into one.

The command line of :mod:`peer.results.merge`, which does the merge and
says what its rules are: the inputs (data directories, files, or ``--ring``'s
peers), the output, and a summary with a line an input, its warnings on
stderr, or one ``error:`` line and exit status 2 (1: ``--strict`` refused an
input).
"""

from __future__ import annotations

import argparse
import sys
from ring.commandnames import Command, command, spoken
from collections.abc import Sequence
from pathlib import Path

from peer.commands.shell import cli_main
from peer.errors import ConfigError
from peer.results.merge import Incomplete, merge, ring_inputs
from peer.state.configfile import load_config

__all__ = ["EXIT_INCOMPLETE", "main"]

#: ``--strict`` and an input not as a clean stop leaves it: nothing written.
EXIT_INCOMPLETE = 1


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=command(Command.MERGE, sys.argv[0]),
        description=(
            "Merge the peers' results files (pages.duckdb) into one DuckDB file: one pages row\n"
            "per URL (the newest fetch wins, its peer kept), distinct links and PID trace rows,\n"
            "one body per URL, and any items_* extraction tables deduped by URL. A file held\n"
            "open by a running peer is read from a copy (a snapshot). The output is written to\n"
            "a temporary file and renamed at the end, so a failed merge leaves nothing behind."
        ),
        epilog=(
            "examples:\n"
            "  python scripts/merge.py --ring cluster.toml -o crawl.duckdb\n"
            "  python scripts/merge.py copies/p1 copies/p2 copies/p3 -o crawl.duckdb   (data dirs)\n"
            "  python scripts/merge.py data/p1/pages.duckdb data/p2/pages.duckdb -o crawl.duckdb\n"
            "  python scripts/merge.py --ring cluster.toml -o crawl.duckdb --force --parquet out/\n"
            "  python scripts/merge.py --ring cluster.toml -o crawl.duckdb --export 'out/{table}.jsonl'\n"
            "      (out/pages.jsonl, out/items_book.jsonl, ...; .csv and .parquet too)\n"
            "  python scripts/merge.py --ring cluster.toml -o crawl.duckdb --wacz crawl.wacz\n"
            "      (the WARC files and the merged index as one WACZ 1.1.1 package)\n\n"
            "An input is a peer's data directory (or a copy of it: copy the whole directory)\n"
            "or a results file. A directory is read whole: pages.duckdb, its write-ahead log\n"
            "pages.duckdb.wal (rows since the last checkpoint, replayed without changing the\n"
            "files), the rows only state/'s journal held (a peer killed mid-run), and\n"
            "stats.json, summed into OUT's stats file (crawl.duckdb -> crawl.stats.json) that\n"
            "the report reads. The summary says what it read of each input; an input not left\n"
            "as a clean stop leaves it (a log replayed, journal rows, a file without tables,\n"
            "0 rows) is warned about on stderr.\n\n"
            "Exit status 0 when merged; 1 with --strict when an input was warned about\n"
            "(nothing written); 2 on a usage mistake (no such file or data directory, not a\n"
            "DuckDB file, a foreign pages table, existing output without --force, output among\n"
            "the inputs, bad cluster.toml)."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("files", nargs="*", type=Path, metavar="DIR|FILE",
                   help="peers' data directories (or copies of them) or results files to merge "
                        "(with --ring: added to the peers')")
    p.add_argument("--ring", type=Path, metavar="cluster.toml",
                   help="merge the data_dir of every peer listed in this config")
    p.add_argument("--strict", action="store_true",
                   help="fail (exit 1, nothing written) when an input is not as a clean stop "
                        "leaves it: a write-ahead log replayed, rows from the journal, a file "
                        "without tables, 0 page rows")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="OUT",
                   help="the merged DuckDB file to write")
    p.add_argument("--force", action="store_true", help="overwrite OUT (and parquet files) if present")
    p.add_argument("--parquet", type=Path, metavar="DIR",
                   help="also write each merged table to DIR/<table>.parquet")
    p.add_argument("--export", type=Path, metavar="PATH",
                   help="also write pages and each items_* table to a file in PATH's format "
                        "(.jsonl, .csv, .parquet); {table} in PATH is each table's name, "
                        "else PATH is the pages file as given and each items_* table goes beside "
                        "it, .<table> before the extension; simhash is written as 16 hex digits, "
                        "and in CSV a list as JSON")
    p.add_argument("--wacz", type=Path, metavar="OUT.wacz",
                   help="also package the peers' WARC files and the merged CDXJ index as one WACZ 1.1.1 "
                        "file (archive/, indexes/index.cdx, pages/pages.jsonl, datapackage.json with "
                        "sha256 hashes), which ReplayWeb.page and pywb read ([warc] enabled must have been on)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="print no summary (warnings and errors still go to stderr)")
    # Commands named as the user started this one (installed, or from a checkout).
    p.description, p.epilog = spoken(p.description or "", sys.argv[0]), spoken(p.epilog or "", sys.argv[0])
    return p


@cli_main
def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)

    def warn(line: str) -> None:
        print(line, file=sys.stderr)

    files = list(args.files)
    warc_dirs = None
    if args.ring is not None:
        files = ring_inputs(args.ring, warn) + files
        cfg = load_config(args.ring)
        warc_dirs = [cfg.data_dir(s.id) / cfg.warc.directory for s in cfg.peers]
        warc_dirs += [p.parent / "warc" for p in args.files]
    if not files:
        raise ConfigError(command(Command.MERGE, sys.argv[0]), "", "no input: give results files or --ring cluster.toml")
    try:
        summary = merge(files, args.output, force=args.force, parquet=args.parquet,
                        export=args.export, warc_dirs=warc_dirs, strict=args.strict, wacz=args.wacz)
    except Incomplete as exc:
        for read in exc.reads:
            for line in read.warnings:
                warn(f"warning: {line}")
        for read in exc.reads:
            warn(f"input      {read.line()}")
        warn(f"error: {exc}")
        return EXIT_INCOMPLETE
    for read in summary.read:
        for line in read.warnings:
            warn(f"warning: {line}")
    for path in summary.snapshots:
        warn(f"note: {path} is held open by a running peer; merged a copy of it (a snapshot)")
    if not args.quiet:
        print("\n".join(summary.lines()))
    return 0
