"""Membership at scale on the simulated network (ring.membership.sim): bytes, convergence, detection.

    python scripts/bench_membership.py                 # 8, 64, 256, 512 peers; 0, 1, 10 % loss
    python scripts/bench_membership.py --sizes 256 --loss 0.1
    python scripts/bench_membership.py --sizes 256 --loss 0.1 --breakdown   # start-up bytes by kind

Every peer is a seed (listed in cluster.toml), the config defaults (0.5 s
rounds, suspect_after 2 s, dead_after 6 s), 200 ms one way. Per (N, loss):

- cold start: all N start within one round; bytes every peer sent until
  every view holds every member alive at its real incarnation ("start-up"),
  and how long that took ("converged");
- steady state over ``--steady`` seconds: bytes/s a peer sent (mean / max),
  suspicions and deaths of running peers per 1,000 peer-rounds;
- a crash: seconds from the crash until the last peer holds it dead, against
  ``dead_after`` + two rounds;
- a rolling start: the N peers start one by one over ``--rolling`` seconds;
  deaths of any peer (all are running or about to start) are false.

Targets at 256 peers (docs/membership.md): <= 15 KB/s a peer, <= 20 MB start-up, 0
false deaths in a 30 s rolling start, a death everywhere within dead_after +
two rounds. Bytes are frame lengths of the real codec (ring.messages).
``--breakdown`` prints, after each row, the cold start's bytes by message
type and by what it answered (a Digest answering a Sync is anti-entropy's
pull, one answering a Join a joiner's view, one sent by a tick a pushed
verdict; a Ping answering a tick is a probe or a greeting, one answering a
PingReq a relayed probe).
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from ring.membership.protocol import Membership
from ring.messages import MemberState
from ring.membership.sim import SimNet

INTERVAL, SUSPECT_AFTER, DEAD_AFTER = 0.5, 2.0, 6.0
RING = "bench"


def ids(n: int) -> list[str]:
    return [f"p{i:03d}" for i in range(n)]


def factory(pid: str, seeds: list[tuple[str, str]], seed: int, lease: float):
    def make(now: float) -> Membership:
        return Membership(
            pid, f"tcp://10.0.{int(pid[1:]) // 250}.{int(pid[1:]) % 250}:5701", 1.0, RING,
            seeds=seeds, gossip_interval=INTERVAL, suspect_after=SUSPECT_AFTER,
            dead_after=DEAD_AFTER, now=now, incarnation=1_700_000_000_000 + int(now * 1000),
            rng=random.Random(f"{seed}/{pid}/{now}"), lease=lease or None)
    return make


def cluster(n: int, loss: float, seed: int, spread: float, lease: float) -> SimNet:
    net = SimNet(seed=seed, loss=loss, latency=0.2, interval=INTERVAL)
    peers = ids(n)
    seeds = [(p, f"tcp://10.0.{int(p[1:]) // 250}.{int(p[1:]) % 250}:5701") for p in peers]
    rng = random.Random(seed)
    for p in peers:
        net.add(p, factory(p, seeds, seed, lease), rng.random() * spread)
    return net


def run(n: int, loss: float, seed: int, steady: float, rolling: float,
        lease: float) -> dict[str, object]:
    check = 0.25 if n <= 64 else 1.0
    # -- cold start
    net = cluster(n, loss, seed, spread=INTERVAL, lease=lease)
    net.run_until(INTERVAL)
    conv = net.run_until_converged(limit=120.0, step=check)
    startup = sum(net.sent.values())
    why = dict(net.why)
    # -- steady state
    net.events.clear()
    before = sum(net.sent.values())
    sent0 = dict(net.sent)
    net.run_for(steady)
    per_peer = [(net.sent[p] - sent0.get(p, 0)) / steady for p in net.peers]
    peer_rounds = n * steady / INTERVAL
    # A suspicion counts once, where it began (its prober's own timer); a
    # false death counts at every peer that declared it.
    susp = sum(1 for e in net.false(MemberState.SUSPECT) if e.event.reason == "silence")
    deaths = len(net.false(MemberState.DEAD))
    # -- a crash
    victim = sorted(net.peers)[n // 2]
    crashed = net.now
    net.crash(victim)
    detect = -1.0
    while net.now - crashed < DEAD_AFTER + 20:
        net.run_for(INTERVAL / 5)
        if all(net.peers[p].members()[victim].state is MemberState.DEAD for p in net.running()):
            detect = net.now - crashed
            break
    # -- a rolling start
    roll = cluster(n, loss, seed + 1, spread=rolling, lease=lease)
    roll.run_until(rolling + 20.0)
    roll_deaths = sum(1 for e in roll.events if e.event.state is MemberState.DEAD
                      and e.event.id != e.at_peer)
    roll_susp = sum(1 for e in roll.events if e.event.state is MemberState.SUSPECT
                    and e.event.reason == "silence")
    return dict(
        n=n, loss=loss, conv=conv, startup=startup, mean=sum(per_peer) / n, max=max(per_peer),
        steady_total=sum(net.sent.values()) - before,
        susp=1000 * susp / peer_rounds, deaths=1000 * deaths / peer_rounds, detect=detect,
        roll_deaths=roll_deaths, roll_susp=roll_susp, why=why,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[8, 64, 256, 512])
    ap.add_argument("--loss", type=float, nargs="+", default=[0.0, 0.01, 0.1])
    ap.add_argument("--steady", type=float, default=30.0, help="seconds of steady state")
    ap.add_argument("--rolling", type=float, default=30.0, help="seconds of the rolling start")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lease", type=float, default=DEAD_AFTER / 2,
                    help="ring.lease in seconds, as a crawling peer runs it (its renewal pings "
                         "are in the bytes); 0: SWIM alone (default: dead_after / 2)")
    ap.add_argument("--breakdown", action="store_true",
                    help="the cold start's bytes by message type and what it answered")
    args = ap.parse_args(argv)
    bound = DEAD_AFTER + 2 * INTERVAL
    print(f"200 ms one way; rounds {INTERVAL} s, suspect_after {SUSPECT_AFTER} s, "
          f"dead_after {DEAD_AFTER} s; death bound {bound} s; rolling start {args.rolling:g} s")
    print("| N | loss | KB/s a peer (mean / max) | start-up MB | converged s | "
          "false suspicions / deaths per 1k peer-rounds | crash dead everywhere s | "
          "rolling start: suspicions / false deaths | CPU s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        for loss in args.loss:
            t0 = time.process_time()
            r = run(n, loss, args.seed, args.steady, args.rolling, args.lease)
            cpu = time.process_time() - t0
            conv = f"{r['conv']:.1f}" if r["conv"] >= 0 else "> 120"
            detect = f"{r['detect']:.1f}" if r["detect"] >= 0 else "never"
            print(f"| {n} | {loss:.0%} | {r['mean'] / 1000:.2f} / {r['max'] / 1000:.2f} "
                  f"| {r['startup'] / 1e6:.2f} | {conv} | {r['susp']:.2f} / {r['deaths']:.2f} "
                  f"| {detect} | {r['roll_susp']} / {r['roll_deaths']} | {cpu:.0f} |",
                  flush=True)
            if args.breakdown:
                why = r["why"]
                assert isinstance(why, dict)
                total = sum(why.values())
                parts = sorted(why.items(), key=lambda kv: -kv[1])
                print("    start-up bytes: " + ", ".join(
                    f"{kind} answering {cause} {b / 1e6:.2f} MB ({b / total:.0%})"
                    for (kind, cause), b in parts if b >= total / 200), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
