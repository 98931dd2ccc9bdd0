"""``python -m ring``: cluster-level commands.

``table`` prints the ring that cluster.toml describes: each peer's share of
the hash space and the owner of the seeds' hosts, so an operator can check a
ring (weights, a new peer) before starting it. It reads only the file.

``status`` asks the running ring for each member's figures and prints them
with a totals row and the units (``--watch`` redraws them in place);
``dashboard`` serves them as a live page (:mod:`ring.dashboard`). Both get
the figures through :func:`status_source`, the one place that knows how.

This is an edge: it reads cluster.toml through ``peer.config`` (the one parser
of that file) and reports a user's mistake as one line and exit status 2,
also when trio hands it over wrapped in an exception group (the shell
:func:`ring.errors.cli_shell`).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence

from peer.config import ClusterConfig, load_config
from peer.errors import cli_main
from peer.urls import host_key
from ring.errors import RingError
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


#: Members ``ring status`` asks for their own figures at once.
ASK_AT_ONCE = 32

STATUS_KEYS = ("id", "address", "state", "share", "pages", "rate", "frontier", "hosts",
               "forwarded_out", "forwarded_in", "dns_hit_rate", "bloom_fill", "uptime")


def client_keys(cfg: ClusterConfig, key_id: str = "ops"):  # type: ignore[no-untyped-def]
    """The tool's own Curve key pair when ``[ring] curve_keys`` is set, else None.

    Peers admit only keys in the keys directory, so an operator's tool has
    a pair of its own there (``scripts/keys.py --ring cluster.toml --id ops``).
    """
    from ring.curve import CurveKeys, resolve_keys_dir

    directory = resolve_keys_dir(cfg.ring.curve_keys, cfg.path)
    if directory is None:
        return None
    if not (directory / f"{key_id}.key_secret").exists():
        raise RingError(f"{directory}: no key pair {key_id!r} for this tool; the ring uses CurveZMQ, "
                        f"make one with: python scripts/keys.py --ring {cfg.path} --id {key_id}")
    return CurveKeys.load(directory, key_id)


def socket_options(keys, peer_id: str):  # type: ignore[no-untyped-def]
    """The ``configure`` hook of a DEALER to ``peer_id`` (None without Curve)."""
    from ring.zmqio import curve_client

    return None if keys is None else curve_client(keys, keys.public_key(peer_id))


async def _ask(address: str, ring_name: str, timeout: float, keys=None,  # type: ignore[no-untyped-def]
               peer_id: str = ""):
    """One StatusRequest to the peer at ``address``; its reply or None."""
    import os

    import trio

    from ring.messages import DecodeError, StatusReply, StatusRequest, decode, encode
    from ring.zmqio import SocketType, open_socket

    nonce = int.from_bytes(os.urandom(4), "big")
    with trio.move_on_after(timeout):
        async with open_socket(SocketType.DEALER, connect=address,
                               configure=socket_options(keys, peer_id)) as sock:
            await sock.send_multipart([encode(StatusRequest(ring_name, "ring-status", nonce))])
            while True:
                frames = await sock.recv_multipart()
                try:
                    reply = decode(frames[-1])
                except DecodeError:
                    continue
                if isinstance(reply, StatusReply) and reply.nonce == nonce:
                    return reply
    return None


async def cluster_status(cfg: ClusterConfig, timeout: float = 1.5, keys=None) -> list[dict] | None:  # type: ignore[no-untyped-def]
    """Each member's row: the first seed that answers names the members, and
    every live member is asked for its own figures. ``keys``: the tool's
    Curve pair (:func:`client_keys`) when the ring uses CurveZMQ."""
    import trio

    from ring.messages import MemberState

    first = None
    for spec in cfg.peers:
        if not spec.address:
            continue  # a solo peer without an address listens nowhere (_no_answer says so)
        first = await _ask(spec.address, cfg.ring.name, timeout, keys, spec.id)
        if first is not None:
            break
    if first is None:
        return None
    rows = {m.id: m for m in first.members}
    own: dict[str, object] = {}

    # A view holds up to MAX_MEMBERS (1,024) members: ask a few dozen at a
    # time, not one socket and one timeout for each at once.
    limiter = trio.CapacityLimiter(ASK_AT_ONCE)

    async def ask_member(mid: str, address: str) -> None:
        try:
            async with limiter:
                reply = await _ask(address, cfg.ring.name, timeout, keys, mid)
        except RingError:
            return  # a joiner whose .key is not deployed here, or an address zmq refuses
        if reply is not None:
            for m in reply.members:
                if m.id == mid:
                    own[mid] = m

    async with trio.open_nursery() as nursery:
        for m in first.members:
            if m.id != first.sender and m.state in (MemberState.ALIVE, MemberState.SUSPECT):
                nursery.start_soon(ask_member, m.id, m.address)
    out = []
    for mid, m in sorted(rows.items()):
        best = own.get(mid, m)  # its own figures, else the answering peer's view
        row = {k: getattr(best, k) for k in STATUS_KEYS}
        row["state"] = m.state.value  # the answering peer's view of the state and share
        row["share"] = m.share
        row["dropped"] = dict(best.dropped)  # type: ignore[attr-defined]
        row["errors"] = dict(best.errors)  # type: ignore[attr-defined]
        row["busiest"] = [list(b) for b in best.busiest]  # type: ignore[attr-defined]
        out.append(row)
    return out


async def request_leave(cfg: ClusterConfig, peer_id: str, timeout: float) -> str:
    """Ask ``peer_id`` to leave, then wait until it has handed over and gone.

    Returns "left" (it is gone and the others list it as left), "leaving"
    (still handing over when ``timeout`` ran out), or "unknown" (no peer
    knows it, or none answers).
    """
    import trio

    from ring.messages import LeaveRequest, encode
    from ring.zmqio import SocketType, open_socket

    keys = client_keys(cfg)
    rows = await cluster_status(cfg, keys=keys)
    target = next((r for r in rows or () if r["id"] == peer_id), None)
    if target is None or target["state"] not in ("alive", "suspect"):
        return "unknown" if target is None else target["state"]
    async with open_socket(SocketType.DEALER, connect=target["address"], linger=1000,
                           configure=socket_options(keys, peer_id)) as sock:
        with trio.move_on_after(2.0):
            await sock.send_multipart([encode(LeaveRequest(cfg.ring.name, "ring-leave", peer_id))])
    with trio.move_on_after(timeout):
        while True:
            await trio.sleep(0.5)
            own = await _ask(target["address"], cfg.ring.name, 1.0, keys, peer_id)
            if own is None:  # the process is gone: check how the others saw it go
                rows = await cluster_status(cfg, keys=keys)
                state = next((r["state"] for r in rows or () if r["id"] == peer_id), "unknown")
                return state
    return "leaving"


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
    st.add_argument("--watch", metavar="SECONDS", type=float, nargs="?", const=2.0,
                    help="ask again every SECONDS (default 2) and redraw the table in place, "
                         "until Ctrl-C; with --json, one JSON line a round")
    st.add_argument("--count", metavar="N", type=int, default=0,
                    help="with --watch: stop after N rounds (default 0: until Ctrl-C)")
    db = sub.add_parser("dashboard", help="serve a live HTML page of the running ring",
                        description="Poll the ring's status (as `ring status` does) and serve a live "
                                    "page: members, their state and share, totals, rates over time, "
                                    "errors by kind and the busiest hosts against their setpoint. "
                                    "Prints its address; runs until Ctrl-C.")
    db.add_argument("--ring", metavar="PATH", required=True, help="the cluster.toml (required)")
    db.add_argument("--host", metavar="ADDR", default="127.0.0.1",
                    help="address to listen on (default 127.0.0.1: this machine only; the page "
                         "has no login, so only widen it on a trusted network)")
    db.add_argument("--port", metavar="P", type=int, default=8765,
                    help="port to listen on (default 8765; 0: any free port)")
    db.add_argument("--interval", metavar="SECONDS", type=float, default=2.0,
                    help="seconds between polls of the ring (default 2)")
    db.add_argument("--timeout", metavar="SECONDS", type=float, default=1.5,
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


#: The status table's columns: (header, width, row key, format). The
#: legend under the table gives each column's unit.
_COLUMNS = (
    ("share", 6, "share", "{:.1%}"),
    ("pages", 8, "pages", "{:,}"),
    ("pages/s", 8, "rate", "{:.1f}"),
    ("queued", 8, "frontier", "{:,}"),
    ("hosts", 6, "hosts", "{:,}"),
    ("fwd out", 8, "forwarded_out", "{:,}"),
    ("fwd in", 8, "forwarded_in", "{:,}"),
    ("dns hit", 7, "dns_hit_rate", "{:.0%}"),
    ("bloom", 7, "bloom_fill", "{:.2%}"),
    ("uptime", 7, "uptime", "{:.0f}s"),
)
#: Columns the totals row sums (the others have no meaningful total).
_SUMMED = ("share", "pages", "rate", "frontier", "hosts", "forwarded_out", "forwarded_in")

STATUS_LEGEND = ("pages: page requests made; pages/s: since the peer started; queued: URLs in its "
                 "frontier; hosts: hosts with queued URLs; fwd out/in: URLs sent to / received from "
                 "their owners; dns hit: DNS cache hit rate; bloom: fill of the seen-URL filter")


def status_table(rows: list[dict]) -> str:
    """The text of ``python -m ring status``: a row a member, a totals row, the units."""
    head = f"{'id':<10} {'state':<8}" + "".join(f" {h:>{w}}" for h, w, _, _ in _COLUMNS) + "  address"
    out = [head]
    for r in rows:
        out.append(f"{r['id']:<10} {r['state']:<8}"
                   + "".join(f" {f.format(r[k]):>{w}}" for _, w, k, f in _COLUMNS) + f"  {r['address']}")
        if r["dropped"]:
            out.append(f"{'':<10} dropped: " + ", ".join(f"{k} {v}" for k, v in r["dropped"].items()))
        if r.get("errors"):
            out.append(f"{'':<10} errors: " + ", ".join(f"{k} {v}" for k, v in sorted(r["errors"].items())))
    live = [r for r in rows if r["state"] in ("alive", "suspect")]
    total = f"{'total':<10} {f'{len(live)} live':<8}"
    for _, w, k, f in _COLUMNS:
        total += f" {f.format(sum(r[k] for r in rows)) if k in _SUMMED else '':>{w}}"
    out += [total.rstrip(), "", STATUS_LEGEND]
    return "\n".join(out)


def _print_status(rows: list[dict]) -> None:
    print(status_table(rows))


def _check_numbers(args: argparse.Namespace) -> str | None:
    if not args.timeout > 0:
        return "--timeout: expected a number of seconds > 0"
    if getattr(args, "watch", None) is not None and not args.watch > 0:
        return "--watch: expected a number of seconds > 0"
    if getattr(args, "count", 0) < 0:
        return "--count: expected an integer >= 0"
    if getattr(args, "interval", 1.0) <= 0:
        return "--interval: expected a number of seconds > 0"
    if not 0 <= getattr(args, "port", 0) <= 65535:
        return "--port: expected a port number from 0 to 65535"
    return None


def status_source(cfg: ClusterConfig, timeout: float):  # type: ignore[no-untyped-def]
    """The one function ``status --watch`` and the dashboard poll: rows, or None if nobody answers.

    The tools' only way to the ring's status; when the status client moves
    (ring/client.py), this is what is re-pointed.
    """
    keys = client_keys(cfg)

    async def poll() -> list[dict] | None:
        return await cluster_status(cfg, timeout, keys)

    return poll


def _no_answer(cfg: ClusterConfig) -> str:
    if not any(p.address for p in cfg.peers):
        return (f"no peer of ring {cfg.ring.name!r} has an address to ask: a solo peer answers "
                "ring status on its [[peer]] address, so set one (e.g. address = "
                "\"tcp://127.0.0.1:5701\") and restart it")
    addrs = ", ".join(p.address for p in cfg.peers if p.address)
    return f"no peer of ring {cfg.ring.name!r} answered at {addrs}; are the peers running?"


async def _status(cfg: ClusterConfig, args: argparse.Namespace) -> int:
    import json
    import time

    import trio

    poll = status_source(cfg, args.timeout)
    if args.watch is None:
        rows = await poll()
        if rows is None:
            print(f"error: {_no_answer(cfg)}", file=sys.stderr)
            return 1
        if args.json:
            print(json.dumps({"ring": cfg.ring.name, "members": rows}, indent=2))
        else:
            _print_status(rows)
        return 0
    # In place on a terminal (cursor home, clear to the end: ECMA-48 CUP and
    # ED); into a pipe or a file, one table after another with its time.
    tty = sys.stdout.isatty()
    rounds = 0
    while True:
        started = trio.current_time()
        rows = await poll()
        stamp = time.strftime("%H:%M:%S")
        if args.json:
            print(json.dumps({"ring": cfg.ring.name, "time": time.time(), "members": rows or []}))
        else:
            text = status_table(rows) if rows is not None else f"({_no_answer(cfg)})"
            head = f"ring {cfg.ring.name!r} at {stamp}, every {args.watch:g}s (Ctrl-C to stop)"
            print(("\x1b[H\x1b[J" if tty else "\n") + head + "\n" + text)
        sys.stdout.flush()
        rounds += 1
        if args.count and rounds >= args.count:
            return 0
        await trio.sleep_until(started + args.watch)


async def _dashboard(cfg: ClusterConfig, args: argparse.Namespace) -> int:
    from ring.dashboard import serve_dashboard

    await serve_dashboard(status_source(cfg, args.timeout), ring_name=cfg.ring.name,
                          host=args.host, port=args.port, interval=args.interval)
    return 0


@cli_main
def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if getattr(args, "sample", 0) < 0:
        raise RingError("--sample: expected an integer >= 0")
    cfg = load_config(args.ring)
    if args.command in ("status", "dashboard"):
        problem = _check_numbers(args)
        if problem:
            raise RingError(problem)
        import trio

        try:
            if args.command == "dashboard":
                return trio.run(_dashboard, cfg, args)
            return trio.run(_status, cfg, args)
        except KeyboardInterrupt:
            print(file=sys.stderr)
            return 0  # Ctrl-C is how --watch and the dashboard end
    if args.command == "leave":
        import trio

        state = trio.run(request_leave, cfg, args.id, args.timeout)
        if state == "left":
            print(f"{args.id} handed over its hosts and left the ring")
            return 0
        if state == "leaving":
            print(f"{args.id} is still handing over after {args.timeout:g}s; "
                  "see `python -m ring status`", file=sys.stderr)
        elif state == "unknown":
            print(f"error: no running peer {args.id!r} in ring {cfg.ring.name!r} "
                  "(or no peer answered)", file=sys.stderr)
        else:
            print(f"error: {args.id} is {state}, not a live member", file=sys.stderr)
        return 1
    print(ownership_table(cfg, args.sample, args.host))
    return 0
