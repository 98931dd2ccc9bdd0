#!/usr/bin/env python3
"""Adopt a lost peer's frontier: the command line of :mod:`peer.commands.adopt` (which says how).

::

    python scripts/adopt.py data/p3 --ring cluster.toml [--id p3] [--dry-run]

Mistakes (bad cluster.toml, unknown data dir, corrupt state, the lost peer
still running or still alive in the ring) are one line on stderr and exit 2;
no peer answering, or batches unacked at ``--timeout``, exit 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import trio

from peer.commands.adopt import EXIT_INCOMPLETE, EXIT_USAGE, Unreachable, adopt
from peer.state.configfile import load_config
from peer.errors import ConfigError, PeerError
from ring.errors import RingError, user_error

__all__ = ["main"]


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python scripts/adopt.py",
        description=(
            "Adopt a lost peer's frontier: send the URLs it had queued (and the forwards it had\n"
            "not had acked) to their current owners in the running ring, and the URLs it had\n"
            "already fetched as 'seen', so nothing it queued is lost and nothing it fetched is\n"
            "fetched again. Its pages.duckdb stays where it is; merge it with scripts/merge.py.\n"
            "The lost peer must be dead in the ring (see python -m ring status)."
        ),
        epilog=(
            "examples:\n"
            "  python -m ring status --ring cluster.toml          # p3 is 'dead'\n"
            "  python scripts/adopt.py data/p3 --ring cluster.toml --dry-run\n"
            "  python scripts/adopt.py data/p3 --ring cluster.toml\n"
            "  python scripts/adopt.py /mnt/old/p4 --ring cluster.toml --id p4   # a joiner\n\n"
            "Exit status: 0 all acked; 1 no peer answered, or batches still unacked at --timeout\n"
            "(run it again: owners dedupe); 2 a usage mistake (bad cluster.toml, unknown data dir,\n"
            "corrupt state, the peer still running or still alive in the ring)."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("data_dir", type=Path, metavar="DATA_DIR", help="the lost peer's data_dir")
    p.add_argument("--ring", type=Path, required=True, metavar="cluster.toml",
                   help="the running ring's cluster.toml (required)")
    p.add_argument("--id", metavar="ID",
                   help="the lost peer's id (default: the [[peer]] whose data_dir is DATA_DIR)")
    p.add_argument("--dry-run", action="store_true",
                   help="print how many URLs would go to each owner, send nothing")
    p.add_argument("--force", action="store_true",
                   help="adopt even if the ring still lists the peer as alive or suspect")
    p.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="give up on unacked batches after this long (default 60)")
    p.add_argument("--key-id", default="ops", metavar="ID",
                   help="with [ring] curve_keys: the key pair this tool uses (default ops)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if not args.timeout > 0:
            raise ConfigError("adopt.py", "--timeout", "expected a number of seconds > 0")
        cfg = load_config(args.ring)
        summary = trio.run(lambda: adopt(
            cfg, args.data_dir, peer_id=args.id, force=args.force, dry_run=args.dry_run,
            timeout=args.timeout, key_id=args.key_id))
    except (PeerError, RingError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Unreachable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INCOMPLETE
    except BaseException as exc:  # Ctrl-C: alone, or in a group of the tasks it cancelled
        if user_error(exc, (KeyboardInterrupt,)) is None:
            raise
        print("\ninterrupted: run adopt.py again to finish (the owners dedupe what they already took)",
              file=sys.stderr)
        return EXIT_INCOMPLETE
    if args.json:
        doc = dataclasses.asdict(summary)
        doc["complete"] = summary.complete
        print(json.dumps(doc, indent=2, sort_keys=True))
    else:
        print("\n".join(summary.lines()))
    if not summary.complete:
        print(f"error: not acked within {args.timeout:g}s: {summary.unacked_line()}; run adopt.py "
              "again when the ring is reachable (owners dedupe what they already took)",
              file=sys.stderr)
        return EXIT_INCOMPLETE
    return 0


if __name__ == "__main__":
    sys.exit(main())
