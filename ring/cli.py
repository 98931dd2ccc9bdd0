"""``python -m ring``: cluster-level commands.

``table`` prints the ring that cluster.toml describes: each peer's share of
the hash space and the owner of the seeds' hosts, so an operator can check a
ring (weights, a new peer) before starting it. It reads only the file.

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


def _print_status(rows: list[dict]) -> None:
    head = f"{'id':<8} {'state':<8} {'share':>6} {'pages':>7} {'rate':>7} {'frontier':>8} {'hosts':>5} " \
           f"{'fwd out':>8} {'fwd in':>8} {'dns hit':>7} {'bloom':>7} {'uptime':>7}  address"
    print(head)
    for r in rows:
        print(f"{r['id']:<8} {r['state']:<8} {r['share']:>6.1%} {r['pages']:>7} {r['rate']:>7.1f} "
              f"{r['frontier']:>8} {r['hosts']:>5} {r['forwarded_out']:>8} {r['forwarded_in']:>8} "
              f"{r['dns_hit_rate']:>7.0%} {r['bloom_fill']:>7.2%} {r['uptime']:>6.0f}s  {r['address']}")
        if r["dropped"]:
            print(f"{'':<8} dropped: " + ", ".join(f"{k} {v}" for k, v in r["dropped"].items()))


@cli_main
def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if getattr(args, "sample", 0) < 0:
        raise RingError("--sample: expected an integer >= 0")
    cfg = load_config(args.ring)
    if args.command == "status":
        import json

        import trio

        rows = trio.run(cluster_status, cfg, args.timeout, client_keys(cfg))
        if rows is None:
            addrs = ", ".join(p.address for p in cfg.peers)
            print(f"error: no peer of ring {cfg.ring.name!r} answered at {addrs}; are the peers running?",
                  file=sys.stderr)
            return 1
        if args.json:
            print(json.dumps({"ring": cfg.ring.name, "members": rows}, indent=2))
        else:
            _print_status(rows)
        return 0
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
