"""``python -m ring``: cluster-level commands (formatting and the command line only).

``table`` prints the ring that cluster.toml describes: each peer's share of
the hash space and the owner of the seeds' hosts, so an operator can check a
ring (weights, a new peer) before starting it. It reads only the file.
``status`` and ``leave`` ask the running ring through ``ring.client``, which
returns typed rows; this module only formats them.

``ring`` never imports ``peer``. cluster.toml has one parser, ``peer.config``,
so the file comes in through a :class:`ConfigSource` that ``ring/__main__.py``
(the process entry point, the one place the two packages meet) builds from
peer's parser. A user's mistake is one line and exit status 2, also when
trio hands it over wrapped in an exception group.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ring.client import Contact, LeaveOutcome, StatusRow, client_keys, cluster_status, request_leave
from ring.curve import resolve_keys_dir
from ring.hashring import HashRing

__all__ = ["ConfigSource", "RingFile", "format_status", "main", "ownership_table", "ring_of",
           "seeds_of", "tool_keys"]


class _RingSection(Protocol):
    name: str
    vnodes: int
    curve_keys: str


class _PeerEntry(Protocol):
    id: str
    address: str
    weight: float


class _CrawlSection(Protocol):
    seeds: tuple[str, ...]


class RingFile(Protocol):
    """What the ring's commands read of a parsed cluster.toml (``peer.config.ClusterConfig``)."""

    path: Path

    @property
    def ring(self) -> _RingSection: ...

    @property
    def peers(self) -> Sequence[_PeerEntry]: ...

    @property
    def crawl(self) -> _CrawlSection: ...


@dataclass(frozen=True, slots=True)
class ConfigSource:
    """How the commands get a cluster.toml: its parser, the host key of a URL, the user's errors.

    ``user_error(exc)`` is the user's mistake ``exc`` is or carries (a
    ``peer.errors.user_error``), or None for a bug, which is re-raised.
    """

    load: Callable[[str], RingFile]
    host_key: Callable[[str], str]
    user_error: Callable[[BaseException], BaseException | None]


def ring_of(cfg: RingFile) -> HashRing:
    """The ring of the initial members listed in cluster.toml."""
    return HashRing({p.id: p.weight for p in cfg.peers}, vnodes=cfg.ring.vnodes)


def seeds_of(cfg: RingFile) -> tuple[Contact, ...]:
    """The ``[[peer]]`` entries, as ``ring.client`` asks them."""
    return tuple(Contact(p.id, p.address) for p in cfg.peers)


def tool_keys(cfg: RingFile, key_id: str = "ops") -> Any:
    """The tool's Curve pair when ``[ring] curve_keys`` is set, else None (``ring.client.client_keys``)."""
    return client_keys(resolve_keys_dir(cfg.ring.curve_keys, cfg.path), key_id, cfg.path)


def ownership_table(cfg: RingFile, sample: int = 10_000, hosts: Sequence[str] = (),
                    host_key: Callable[[str], str] = str.lower) -> str:
    """The text that ``python -m ring table`` prints; ``host_key`` places a seed URL."""
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
    st = sub.add_parser("status", help="ask the running ring for each member's state and figures",
                        description="Ask any reachable peer (each [[peer]] of cluster.toml in turn) for "
                                    "the member list, then each live member for its figures. Exits 1 "
                                    "when no peer answers.")
    st.add_argument("--ring", metavar="PATH", required=True, help="the cluster.toml (required)")
    st.add_argument("--json", action="store_true", help="print JSON: {\"members\": [...]}")
    st.add_argument("--timeout", metavar="SECONDS", type=float, default=1.5,
                    help="seconds to wait for each peer (default 1.5)")
    lv = sub.add_parser("leave", help="make a peer leave the ring gracefully",
                        description="Ask peer --id to leave: it stops fetching, hands its queued URLs "
                                    "and the URLs it fetched of its hosts to their new owners, waits for "
                                    "their acks and exits 0. Waits for it to go; exits 0 when it left, "
                                    "1 otherwise. Same as SIGTERM to a peer started with --leave.")
    lv.add_argument("--ring", metavar="PATH", required=True, help="the cluster.toml (required)")
    lv.add_argument("--id", metavar="ID", required=True, help="the peer that leaves (required)")
    lv.add_argument("--timeout", metavar="SECONDS", type=float, default=120.0,
                    help="how long to wait for it to finish handing over (default 120)")
    return p


def format_status(rows: Sequence[StatusRow]) -> str:
    """The table ``python -m ring status`` prints."""
    out = [f"{'id':<8} {'state':<8} {'share':>6} {'pages':>7} {'rate':>7} {'frontier':>8} {'hosts':>5} "
           f"{'fwd out':>8} {'fwd in':>8} {'dns hit':>7} {'bloom':>7} {'uptime':>7}  address"]
    for r in rows:
        out.append(f"{r.id:<8} {r.state.value:<8} {r.share:>6.1%} {r.pages:>7} {r.rate:>7.1f} "
                   f"{r.frontier:>8} {r.hosts:>5} {r.forwarded_out:>8} {r.forwarded_in:>8} "
                   f"{r.dns_hit_rate:>7.0%} {r.bloom_fill:>7.2%} {r.uptime:>6.0f}s  {r.address}")
        if r.dropped:
            out.append(f"{'':<8} dropped: " + ", ".join(f"{k} {v}" for k, v in r.dropped))
    return "\n".join(out)


def main(argv: Sequence[str] | None = None, *, source: ConfigSource) -> int:
    args = _parser().parse_args(argv)
    if getattr(args, "sample", 0) < 0:
        print("error: --sample: expected an integer >= 0", file=sys.stderr)
        return 2
    try:
        cfg = source.load(args.ring)
        if args.command == "table":
            print(ownership_table(cfg, args.sample, args.host, source.host_key))
            return 0
        import trio

        keys = tool_keys(cfg)
        if args.command == "status":
            rows = trio.run(cluster_status, cfg.ring.name, seeds_of(cfg), args.timeout, keys)
        else:
            result = trio.run(request_leave, cfg.ring.name, seeds_of(cfg), args.id, args.timeout, keys)
    except BaseException as exc:  # trio wraps errors in groups; user_error() unwraps ours
        err = source.user_error(exc)
        if err is None:
            raise
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.command == "status":
        if rows is None:
            addrs = ", ".join(p.address for p in cfg.peers)
            print(f"error: no peer of ring {cfg.ring.name!r} answered at {addrs}; are the peers running?",
                  file=sys.stderr)
            return 1
        if args.json:
            import json

            print(json.dumps({"ring": cfg.ring.name, "members": [r.as_json() for r in rows]}, indent=2))
        else:
            print(format_status(rows))
        return 0
    if result.outcome is LeaveOutcome.LEFT:
        print(f"{args.id} handed over its hosts and left the ring")
        return 0
    if result.outcome is LeaveOutcome.LEAVING:
        print(f"{args.id} is still handing over after {args.timeout:g}s; "
              "see `python -m ring status`", file=sys.stderr)
    elif result.outcome is LeaveOutcome.UNKNOWN:
        print(f"error: no running peer {args.id!r} in ring {cfg.ring.name!r} "
              "(or no peer answered)", file=sys.stderr)
    else:
        print(f"error: {args.id} is {result.state}, not a live member", file=sys.stderr)
    return 1
