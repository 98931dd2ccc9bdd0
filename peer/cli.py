"""``python -m peer``: the command line of one crawler peer.

Argument parsing and error reporting only; the work is done by the modules it
calls. A user's mistake (bad cluster.toml, unknown --id) is one line on stderr
and exit status 2, never a traceback; so is a peer that cannot start (its
port in use, an address not of this machine, a corrupt or foreign crawl
state, a results file another process holds open).
"""

from __future__ import annotations

import argparse
import errno
import logging
import shutil
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from peer.config import ClusterConfig, load_config
from peer.errors import EXIT_USAGE, ConfigError, PeerError, StateError, cli_main, user_error
from ring.errors import RingError

if TYPE_CHECKING:  # the engine (trio, zmq) is imported only when a crawl starts
    from peer.engine import Crawler, Summary

__all__ = ["main", "describe"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m peer",
        description=(
            "Run one peer of a ringcrawl cluster. Every machine runs the same "
            "command with the same cluster.toml; --id says which [[peer]] this is."
        ),
        epilog=(
            "Examples:\n"
            "  python -m peer --ring cluster.toml --check     validate the config\n"
            "  python -m peer --ring solo.toml                crawl (a ring of one peer)\n"
            "Exit status: 0 when the crawl ends (done, max_pages, or SIGINT/SIGTERM "
            "after a clean stop); 2 for a usage or config error, or a peer that cannot "
            "start (its port in use, damaged crawl state, a results file held open)."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--ring", metavar="PATH", required=True,
                   help="the cluster.toml shared by every peer (required)")
    p.add_argument("--id", metavar="ID",
                   help="which [[peer]] of cluster.toml this process is; "
                        "may be left out when the file lists one peer")
    p.add_argument("--address", metavar="tcp://HOST:PORT",
                   help="join a running ring as a peer not listed in cluster.toml, listening here "
                        "(with --id and --data-dir)")
    p.add_argument("--data-dir", metavar="DIR", help="data directory of a joining peer")
    p.add_argument("--weight", metavar="W", type=float, default=1.0,
                   help="ring weight of a joining peer (default 1.0)")
    p.add_argument("--check", action="store_true",
                   help="validate cluster.toml, print what this peer would run with, and exit")
    p.add_argument("--fresh", action="store_true",
                   help="delete this peer's earlier results and crawl state (data_dir) and "
                        "start over; asks first unless --yes. Without it, a peer whose "
                        "data_dir/state/ exists resumes where it stopped (also after kill -9)")
    p.add_argument("--yes", action="store_true", help="do not ask before --fresh deletes anything")
    p.add_argument("--leave", action="store_true",
                   help="on SIGTERM, leave the ring gracefully: hand the queued and fetched "
                        "URLs of this peer's hosts to their new owners, then exit 0 "
                        "(same as `python -m ring leave --id ID`); without it SIGTERM stops "
                        "this peer and the others take its hosts when it is declared dead")
    p.add_argument("--progress", metavar="SECONDS", type=float, default=5.0,
                   help="seconds between progress lines on stderr (default 5)")
    p.add_argument("--log-level", metavar="LEVEL", default="INFO",
                   choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                   help="logging level: DEBUG, INFO (default), WARNING or ERROR")
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
    ex = cfg.extract
    if ex:
        rules = ", ".join(f"{r.table} ({len(r.fields)} fields, match {r.match!r})" for r in ex.rules)
        lines.append(f"   extract: {rules or 'no rules'}"
                     + (f"; user function {ex.module}" if ex.module else ""))
    lines.append("   ring: " + (f"CurveZMQ keys in {cfg.ring.curve_keys}" if cfg.ring.curve_keys
                                else "unauthenticated (no [ring] curve_keys)"))
    return "\n".join(lines)


@cli_main
def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    cfg = load_config(args.ring)
    if args.address is not None:
        _check_join(cfg, args)
    elif args.id is not None:
        cfg.peer(args.id)
    elif len(cfg.peers) == 1:
        args.id = cfg.peers[0].id
    if args.check:
        print(describe(cfg, args.id))
        return 0
    if args.id is None:
        raise ConfigError(str(cfg.path), "", f"lists {len(cfg.peers)} peers; say which one this is with --id")
    if args.progress <= 0:
        raise ConfigError("--progress", "", "expected a number of seconds > 0")
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # httpx logs every request at INFO; our results table already has them.
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))
    data_dir = Path(args.data_dir).resolve() if args.address else Path(cfg.peer(args.id).data_dir)
    from peer.layout import DataDir
    from peer.state import PeerState

    results, state_dir = DataDir(data_dir).results, DataDir(data_dir).state
    if args.fresh and (results.exists() or PeerState.exists(state_dir)):
        if results.exists():
            from peer.store import check_not_held

            try:
                check_not_held(results)
            except PeerError as exc:
                raise StateError(f"{exc}; nothing deleted") from None
        if not args.yes and not _confirm(
                f"delete {data_dir} (results and crawl state) and start over? [y/N] "):
            print("nothing deleted", file=sys.stderr)
            return EXIT_USAGE
        shutil.rmtree(data_dir)
    elif PeerState.exists(state_dir):
        # The same command after a crash or a stop resumes (peer/state.py).
        print(f"resuming the crawl state in {state_dir} (--fresh to start over)", file=sys.stderr)
    elif results.exists():
        raise StateError(f"{results} holds an earlier crawl but no crawl state to resume; move it "
                         "away, or pass --fresh to delete it and start over")
    import trio  # the edges only: --check and errors above need no event loop

    from peer.engine import Crawler

    cluster = len(cfg.peers) > 1 or args.address is not None
    crawler = Crawler(cfg, args.id, data_dir=data_dir, progress_interval=args.progress,
                      cluster=cluster, address=args.address, weight=args.weight)
    try:
        summary = trio.run(_crawl, crawler, args.leave)
    except BaseException as exc:  # a port in use: say why and what to do; cli_main prints the rest
        err = user_error(exc)
        address = args.address or cfg.peer(args.id).address
        # zmq's bind error names the address; only then is the probe's answer the cause.
        bind_failed = cluster and isinstance(err, RingError) and address in str(err)
        why = _bind_problem(address) if bind_failed else None
        if why is None:
            raise
        fix = "pass another --address" if args.address else f"correct its address in {cfg.path}"
        raise RingError(f"peer {args.id} cannot listen on {address}: {why[0]}; {why[1]}, or {fix}") from None
    print(summary.render())
    print(f"results: {results}")
    return 0


def _check_join(cfg: ClusterConfig, args: argparse.Namespace) -> None:
    from peer.config import parse_address

    if args.id is None or args.data_dir is None:
        raise ConfigError("--address", "", "a joining peer needs --id, --address and --data-dir")
    if any(p.id == args.id for p in cfg.peers):
        raise ConfigError("--id", "", f"{args.id!r} is listed in {cfg.path}; --address is for peers that are not")
    try:
        parse_address(args.address)
    except ValueError as exc:
        raise ConfigError("--address", "", str(exc)) from None
    from ring.membership import MAX_WEIGHT

    if not 0 < args.weight <= MAX_WEIGHT:
        raise ConfigError("--weight", "", f"expected a number > 0 and <= {MAX_WEIGHT:g}")


def _bind_problem(address: str) -> tuple[str, str] | None:
    """Why this machine cannot listen on ``address`` now and what to do, or None if it can.

    Asked after the ring failed to start: zmq's error carries only a strerror,
    and the way out differs by errno. The probe sets SO_REUSEADDR as libzmq's
    TCP listener does, so a port left in TIME_WAIT by this peer's previous
    run is not reported as busy.
    """
    from peer.config import parse_address

    try:
        host, port = parse_address(address)
        infos = socket.getaddrinfo(None if host == "*" else host, port,
                                   type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (ValueError, OSError):
        return None  # an interface name or a host that does not resolve: zmq's own text says it
    family, kind, proto, _, sockaddr = infos[0]
    try:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(sockaddr)
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            return (f"port {port} is in use by another process",
                    "stop that process (another peer with this address?)")
        if e.errno == errno.EADDRNOTAVAIL:
            return (f"{host} is not an address of this machine",
                    "run this peer on the machine that has it")
        if e.errno == errno.EACCES:
            return f"port {port} needs privileges", "use a port above 1023"
        return str(e.strerror or e), "check the address"
    return None


def _confirm(question: str) -> bool:
    if not sys.stdin.isatty():
        print(f"{question.strip()} -- no terminal to ask; pass --yes", file=sys.stderr)
        return False
    return input(question).strip().lower() in ("y", "yes")


async def _crawl(crawler: Crawler, leave_on_term: bool = False) -> Summary:
    import trio

    async def on_signals() -> None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            stops = 0
            async for signum in signals:
                stops += 1
                if stops == 1 and leave_on_term and signum == signal.SIGTERM:
                    logging.getLogger("peer").warning(
                        "SIGTERM: leaving the ring; handing this peer's hosts over "
                        "(signal again to stop without waiting)")
                    crawler.leave()
                elif stops == 1 or (leave_on_term and stops == 2):
                    logging.getLogger("peer").warning(
                        "%s: stopping; in-flight fetches get a few seconds, results are flushed "
                        "(signal again to cancel them now)", signal.Signals(signum).name)
                    crawler.stop()
                else:
                    crawler.cancel_in_flight()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(on_signals)
        summary = await crawler.run()
        nursery.cancel_scope.cancel()
    return summary
