"""``python -m ring``: cluster-level commands.

``table`` prints the ring that cluster.toml describes: each peer's share of
the hash space and the owner of the seeds' hosts, so an operator can check a
ring (weights, a new peer) before starting it. It reads only the file.

This is an edge: it reads cluster.toml through ``peer.config`` (the one parser
of that file) and reports a user's mistake as one line and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence

from peer.config import ClusterConfig, load_config
from peer.errors import PeerError
from peer.urls import host_key
from ring.hashring import HashRing

__all__ = ["main", "ownership_table"]


def ring_of(cfg: ClusterConfig) -> HashRing:
    """The ring of the initial members listed in cluster.toml."""
    return HashRing({p.id: p.weight for p in cfg.peers}, vnodes=cfg.ring.vnodes)


def ownership_table(cfg: ClusterConfig, sample: int = 10_000, hosts: Sequence[str] = ()) -> str:
    """The text that ``python -m ring table`` prints."""
    ring = ring_of(cfg)
    shares = ring.shares()
    counts: Counter[str] = Counter(
        ring.owner(f"h{i}.sample.invalid") for i in range(sample)
    )
    out = [f"ring {cfg.ring.name!r}: {len(ring)} peers, {cfg.ring.vnodes} vnodes per unit of weight"]
    head = f"{'id':<10} {'address':<26} {'weight':>6} {'share':>7}"
    if sample:
        head += f" {'of ' + format(sample, ',') + ' hosts':>16}"
    out += ["", head]
    for spec in cfg.peers:
        row = f"{spec.id:<10} {spec.address:<26} {spec.weight:>6g} {shares[spec.id]:>7.1%}"
        if sample:
            row += f" {counts[spec.id]:>16,}"
        out.append(row)
    if sample:
        total = sum(ring.peers.values())
        worst = max(counts[p] / (sample * w / total) for p, w in ring.peers.items())
        out.append(f"most loaded peer: {worst:.3f} x its fair share (by weight) of the sample")
    wanted = list(dict.fromkeys([*(host_key(s) for s in cfg.crawl.seeds), *(h.lower() for h in hosts)]))
    if wanted:
        out += ["", f"{'host':<40} owner"]
        out += [f"{h:<40} {ring.owner(h)}" for h in wanted]
    return "\n".join(out)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ring", description="Cluster-level commands of ringcrawl.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    t = sub.add_parser("table", help="print the ring's shares and who owns which host",
                       description="Print each peer's share of the ring described by cluster.toml, "
                                   "and the owner of the seeds' hosts and of any --host given.")
    t.add_argument("--ring", metavar="PATH", required=True, help="the cluster.toml (required)")
    t.add_argument("--sample", metavar="N", type=int, default=10_000,
                   help="also count how many of N synthetic hosts each peer owns (default 10000; 0: skip)")
    t.add_argument("--host", metavar="HOST", action="append", default=[],
                   help="also show the owner of HOST (host[:port]); repeatable")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.sample < 0:
        print("error: --sample: expected an integer >= 0", file=sys.stderr)
        return 2
    try:
        cfg = load_config(args.ring)
    except PeerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(ownership_table(cfg, args.sample, args.host))
    return 0
