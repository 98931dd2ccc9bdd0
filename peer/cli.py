"""``python -m peer``: the command line of one crawler peer.

Argument parsing and error reporting only; the work is done by the modules it
calls. A user's mistake (bad cluster.toml, unknown --id) is one line on stderr
and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from peer.config import ClusterConfig, load_config
from peer.errors import PeerError

__all__ = ["main", "describe"]

EXIT_USAGE = 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m peer",
        description=(
            "Run one peer of a ringcrawl cluster. Every machine runs the same "
            "command with the same cluster.toml; --id says which [[peer]] this is."
        ),
        epilog="Example: python -m peer --ring cluster.toml --check",
    )
    p.add_argument("--ring", metavar="PATH", required=True,
                   help="the cluster.toml shared by every peer (required)")
    p.add_argument("--id", metavar="ID",
                   help="which [[peer]] of cluster.toml this process is; "
                        "may be left out when the file lists one peer")
    p.add_argument("--check", action="store_true",
                   help="validate cluster.toml, print what this peer would run with, and exit")
    return p


def describe(cfg: ClusterConfig, peer_id: str | None = None) -> str:
    """A short human summary of a validated config."""
    lines = [f"{cfg.path}: ok: ring {cfg.ring.name!r}, {len(cfg.peers)} peer(s)"]
    for spec in cfg.peers:
        mark = "*" if spec.id == peer_id else " "
        lines.append(f" {mark} {spec.id:<8} {spec.address:<24} weight {spec.weight:g}  data_dir {spec.data_dir}")
    c, pol = cfg.crawl, cfg.politeness
    scope = ", ".join(c.allow_hosts) or "the seeds' hosts"
    lines.append(f"   seeds: {len(c.seeds)}; scope: {scope}; concurrency {c.concurrency}; "
                 f"robots {'on' if c.obey_robots else 'off'}; SSRF guard {'off' if c.allow_private else 'on'}")
    rate = f"{pol.rate:g} pages/min per host" if pol.rate else "no rate limit"
    lines.append(f"   politeness: {rate}, PID window {pol.window:g}s, host_concurrency {pol.host_concurrency}")
    lines.append(f"   bloom: {cfg.bloom.capacity:,} URLs at p={cfg.bloom.error_rate:g}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        cfg = load_config(args.ring)
        if args.id is not None:
            cfg.peer(args.id)
        elif len(cfg.peers) == 1:
            args.id = cfg.peers[0].id
    except PeerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.check:
        print(describe(cfg, args.id))
        return 0
    print(
        "error: this build has no crawl engine yet (it arrives with the engine work); "
        "use --check to validate cluster.toml",
        file=sys.stderr,
    )
    return EXIT_USAGE
