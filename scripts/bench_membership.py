"""Membership at scale on the simulated network (ring.membership.sim): bytes, convergence, detection.

    python scripts/bench_membership.py                 # 8, 64, 256, 512 peers; 0, 1, 10 % loss
    python scripts/bench_membership.py --sizes 256 --loss 0.1
    python scripts/bench_membership.py --sizes 256 --loss 0.1 --breakdown   # start-up bytes by kind
    python scripts/bench_membership.py --death-and-return --sizes 16 160 512 --loss 0.01
    python scripts/bench_membership.py --rolling-restart --sizes 16 160 512 --loss 0 0.01  # planned restarts
    python scripts/bench_membership.py --rolling-restart --sizes 16 48 --against /tmp/v038  # and a release's quiet ring

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

``--rolling-restart`` runs another scenario instead (:func:`rolling_restart`):
every peer of a converged ring stops for a planned restart
(``ring.membership.restarts``), stays down ``--down`` seconds (longer than
``dead_after``) and comes back as a new process that resumes (its own
lease's grace); ``--at-once`` peers at a time (default: N / 16, so the
whole ring restarts in 16 waves), one after another. It reports the ring
changes the peers that were not restarting saw, the seconds those peers
went without their lease (a ring-wide pause: what every host of theirs
waits), and how long the restarting peers' own hosts waited (from the stop
until the new process holds its lease: at most its own restart).
``--against TREE`` runs the same scenario, same seeds, over the ring of
another checkout (``git archive v0.38.0 | tar -x -C /tmp/v038``): its quiet
ring, and with ``--unplanned`` its rolling restart; ``--progress`` prints
the figures so far after each wave (512 peers take half an hour of CPU).

Targets at 256 peers (docs/membership.md): <= 15 KB/s a peer, <= 20 MB start-up, 0
false deaths in a 30 s rolling start, a death everywhere within dead_after +
two rounds. Bytes are frame lengths of the real codec (ring.messages).
``--death-and-return`` runs one scenario instead (``death_and_return``): a
peer dies, stays down ``--down`` seconds (past ``dead_after``: a real ring
change, twice) and comes back as a resumed crawl. It prints the ring-wide
pause (simulated seconds in which some running peer could not start a
request to a host whose owner never changed: the rule of leases by host,
``ring.membership.hostgate``; and the same under the whole-ring lease of
before, a peer starting nothing while it does not hold it), each moved
host's wait for its lease, and the bytes a peer sent meanwhile.
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
from typing import Any

from ring.membership.protocol import Membership
from ring.messages import MemberState
from ring.membership.sim import SimNet

INTERVAL, SUSPECT_AFTER, DEAD_AFTER = 0.5, 2.0, 6.0
RING = "bench"
RESTART_HOLD = 60.0  # ring.restart_hold's default


def ids(n: int) -> list[str]:
    return [f"p{i:03d}" for i in range(n)]


def factory(pid: str, seeds: list[tuple[str, str]], seed: int, lease: float, resumed: bool = False):
    def make(now: float) -> Membership:
        return Membership(
            pid, f"tcp://10.0.{int(pid[1:]) // 250}.{int(pid[1:]) % 250}:5701", 1.0, RING,
            seeds=seeds, gossip_interval=INTERVAL, suspect_after=SUSPECT_AFTER,
            dead_after=DEAD_AFTER, now=now, incarnation=1_700_000_000_000 + int(now * 1000),
            rng=random.Random(f"{seed}/{pid}/{now}"), lease=lease or None, resumed=resumed)
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


# -- a peer that dies and comes back (leases by host, ring.membership.hostgate) --------------

#: The crawl's hash ring in the scenario's host checks: fewer points than the
#: crawl's 256 (what moves is the same share of hosts; building 512 rings of
#: 131 k points each would be the bench's whole CPU).
SIM_VNODES = 32
#: Running peers whose host leases are checked every STEP (all of them up to this many).
OBSERVERS = 24
STEP = 0.1


def death_and_return(n: int, loss: float, seed: int, lease: float, down: float,
                     after: float = 30.0) -> dict[str, float]:
    """One peer dies, is down ``down`` s, and comes back resumed; figures over the scenario.

    ``pause_hosts``: simulated seconds in which some observed running peer
    could not start a request to a host it owned in every ring of the run;
    ``pause_whole``: the same under the whole-ring lease of before (a peer
    without its lease starts nothing). ``moved_*``: for each host of the
    victim, the wait from its new owner's ring change to its lease at its
    death, and from the victim's restart to its lease at its return.
    """
    if not lease:
        raise SystemExit("--death-and-return needs a lease (--lease > 0)")
    from ring.hashring import HashRing

    net = cluster(n, loss, seed, spread=INTERVAL, lease=lease)
    net.run_until(INTERVAL)
    if net.run_until_converged(limit=120.0, step=1.0) < 0:
        raise SystemExit(f"{n} peers did not converge")
    peers = sorted(net.peers)
    for _ in range(200):  # every lease held: the ring is settled
        if all(net.peers[p].lease_state(net.now).held for p in peers):  # type: ignore[union-attr]
            break
        net.run_for(0.5)
    net.run_for(5.0)
    victim = peers[n // 2]
    rng = random.Random(seed)
    observers = sorted(rng.sample([p for p in peers if p != victim], min(OBSERVERS, n - 1)))
    full = {p: 1.0 for p in peers}
    without = {p: 1.0 for p in peers if p != victim}
    ring_full, ring_without = HashRing(full, SIM_VNODES), HashRing(without, SIM_VNODES)
    kept: dict[str, list[str]] = {p: [] for p in observers}
    moved: dict[str, str] = {}  # victim's host -> its owner while the victim is dead
    for i in range(40 * n):
        h = f"h{i}.sim"
        a, b = ring_full.owner(h), ring_without.owner(h)
        if a == b and a in kept and len(kept[a]) < 40:
            kept[a].append(h)
        elif a == victim and len(moved) < 400:
            moved[h] = b
    seeds = [(p, f"tcp://10.0.{int(p[1:]) // 250}.{int(p[1:]) % 250}:5701") for p in peers]
    net._factory[victim] = factory(victim, seeds, seed, lease, resumed=True)
    sent0 = dict(net.sent)
    start = net.now
    net.crash(victim)
    pause_hosts = pause_whole = 0.0
    changed_at: dict[str, float] = {}  # observer or new owner -> when its ring lost the victim
    watched = sorted(set(observers) | set(moved.values()))
    waits_death: dict[str, float] = {}
    waits_return: dict[str, float] = {}
    back_at = None
    while net.now < start + down + after:
        if back_at is None and net.now >= start + down:
            net.restart(victim)
            back_at = net.now
        net.run_for(STEP)
        now = net.now
        blocked = whole = False
        for p in observers:
            m = net.peers[p]
            gate = m.host_gate(now, SIM_VNODES)
            if not all(gate.may(h) for h in kept[p]):
                blocked = True
            st = m.lease_state(now)
            whole = whole or st is None or not st.held
        for p in watched:
            if p not in changed_at and victim not in net.peers[p].live():
                changed_at[p] = now
        pause_hosts += STEP * blocked
        pause_whole += STEP * whole
        if back_at is None:
            for h, o in moved.items():
                if h in waits_death or o not in changed_at:
                    continue
                if net.peers[o].host_gate(now, SIM_VNODES).may(h):
                    waits_death[h] = now - changed_at[o]
        elif victim in net.up:
            gate = net.peers[victim].host_gate(now, SIM_VNODES)
            for h in moved:
                if h not in waits_return and gate.may(h):
                    waits_return[h] = now - back_at
    span = net.now - start
    per_peer = [(net.sent[p] - sent0.get(p, 0)) / span for p in peers]
    death = sorted(waits_death.values())
    back = sorted(waits_return.values())

    def pct(xs: list[float], q: float) -> float:
        return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else -1.0

    return dict(n=n, loss=loss, pause_hosts=pause_hosts, pause_whole=pause_whole,
                moved=len(moved), death_med=pct(death, 0.5), death_max=death[-1] if death else -1.0,
                death_unset=len(moved) - len(death) if back_at else 0,
                back_med=pct(back, 0.5), back_max=back[-1] if back else -1.0,
                back_unset=len(moved) - len(back), mean=sum(per_peer) / n, max=max(per_peer))


def print_death_and_return(args: argparse.Namespace) -> None:
    print(f"a peer dies, is down {args.down:g} s, comes back resumed; lease {args.lease:g} s "
          f"(grace {args.lease * 1.25:g} s); 200 ms one way; host checks every {STEP} s on up to "
          f"{OBSERVERS} peers")
    print("| N | loss | ring-wide pause s (hosts that kept their owner) | the same, whole-ring lease "
          "(before) | moved hosts | moved host's wait at the death s (median / max) | at the return s "
          "(median / max) | KB/s a peer (mean / max) | CPU s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        for loss in args.loss:
            t0 = time.process_time()
            r = death_and_return(n, loss, args.seed, args.lease, args.down)
            cpu = time.process_time() - t0
            print(f"| {n} | {loss:.0%} | {r['pause_hosts']:.1f} | {r['pause_whole']:.1f} | {r['moved']:.0f} "
                  f"| {r['death_med']:.1f} / {r['death_max']:.1f} | {r['back_med']:.1f} / {r['back_max']:.1f} "
                  f"| {r['mean'] / 1000:.2f} / {r['max'] / 1000:.2f} | {cpu:.0f} |", flush=True)

def _has_restarts() -> bool:
    import inspect

    return "restart_hold" in inspect.signature(Membership).parameters


def rolling_restart(n: int, loss: float, seed: int, lease: float, down: float, at_once: int,
                    observers: int = 64, planned: bool = True, steady: float = 20.0,
                    progress: bool = False) -> dict[str, Any]:
    """Every peer restarts (planned), ``at_once`` at a time: what the others and the owners waited.

    ``planned=False``: each stop is silent (a crash, or a stop before planned restarts), for
    comparison.

    The others' lease is sampled every round on up to ``observers`` peers not
    restarting at the time (every one of them at N <= observers); the
    restarting peers' every tenth of a second.
    """
    net = SimNet(seed=seed, loss=loss, latency=0.2, interval=INTERVAL)
    peers = ids(n)
    seeds = [(p, f"tcp://10.0.{int(p[1:]) // 250}.{int(p[1:]) % 250}:5701") for p in peers]
    resumed: set[str] = set()

    # A release before planned restarts (--against, run unplanned) has no restart_hold.
    hold = {"restart_hold": RESTART_HOLD} if planned or _has_restarts() else {}

    def make(pid: str):
        def build(now: float) -> Membership:
            return Membership(
                pid, f"tcp://10.0.{int(pid[1:]) // 250}.{int(pid[1:]) % 250}:5701", 1.0, RING,
                seeds=seeds, gossip_interval=INTERVAL, suspect_after=SUSPECT_AFTER,
                dead_after=DEAD_AFTER, now=now, incarnation=1_700_000_000_000 + int(now * 1000),
                rng=random.Random(f"{seed}/{pid}/{now}"), lease=lease, resumed=pid in resumed, **hold)
        return build

    rng = random.Random(seed)
    for p in peers:
        net.add(p, make(p), rng.random() * INTERVAL)
    net.run_until(INTERVAL)
    if net.run_until_converged(limit=120.0, step=1.0) < 0:
        raise SystemExit(f"{n} peers did not converge")
    net.run_for(2 * lease * 1.25)  # every lease held
    quiet0, q0 = dict(net.sent), net.now
    net.run_for(steady)  # the same ring with nobody restarting, to compare the bytes
    quiet = [(net.sent[p] - quiet0.get(p, 0)) / (net.now - q0) for p in peers]
    if not at_once:  # the quiet ring only (``against``)
        return dict(n=n, loss=loss, quiet=sum(quiet) / n)
    net.events.clear()
    sent0, t0, why0 = dict(net.sent), net.now, dict(net.why)
    moved = 0  # ring changes the peers that were not restarting saw
    order = peers[:]
    rng.shuffle(order)
    others_paused = 0.0  # peer-seconds a non-restarting observer held no lease
    worst_other = 0.0  # the longest such pause of one peer
    owner_waits: list[float] = []
    paused_since: dict[str, float] = {}
    for k in range(0, n, at_once):
        wave = order[k:k + at_once]
        stopped = net.now
        before = {p: (net.peers[p], net.peers[p].ring_version) for p in peers if p not in wave}
        for p in wave if planned else ():
            net.announce_restart(p)
        for _ in range(8 if planned else 0):  # the peer's announce wait (peer.engine.crawler.ANNOUNCE_ROUNDS, more)
            if all(net.peers[p].announced() for p in wave):
                break
            net.run_for(INTERVAL)
        for p in wave:
            net.crash(p)
        back_at = stopped + down
        resumed.update(wave)
        waiting = set(wave)
        started = False
        while waiting and net.now - stopped < down + 60.0:
            if not started and net.now >= back_at:
                for p in wave:
                    net.restart(p)
                started = True
            net.run_for(INTERVAL / 5)
            real = net.now
            if started:
                for p in list(waiting):
                    st = net.peers[p].lease_state(real) if p in net.up else None
                    if st is not None and st.held:
                        owner_waits.append(real - stopped)
                        waiting.discard(p)
            others = [p for p in peers if p not in wave]
            sample = others if len(others) <= observers else \
                random.Random(int(real * 10)).sample(others, observers)
            for p in sample:
                st = net.peers[p].lease_state(real)
                if st is not None and not st.held:
                    since = paused_since.setdefault(p, real)
                    worst_other = max(worst_other, real - since)
                    others_paused += INTERVAL / 5 * (len(others) / len(sample))
                else:
                    paused_since.pop(p, None)
        owner_waits += [float("inf")] * len(waiting)
        moved += sum(1 for p, (m, v) in before.items() if net.peers[p] is m and m.ring_version != v)
        if progress:  # a long run's state so far (512 peers: half an hour of CPU)
            so_far = sum(net.sent[p] - sent0.get(p, 0) for p in peers) / (net.now - t0) / n
            print(f"    wave {k // at_once + 1}/{-(-n // at_once)}: {net.now - t0:.0f} simulated s, "
                  f"{so_far / 1000:.2f} KB/s a peer so far (nobody restarting {sum(quiet) / n / 1000:.2f}), "
                  f"ring changes {moved}, others' pause {others_paused:.1f} peer-s, "
                  f"owner's wait max {max(owner_waits):.1f} s, CPU {time.process_time():.0f} s",
                  file=sys.stderr, flush=True)
    elapsed = net.now - t0
    per_peer = [(net.sent[p] - sent0.get(p, 0)) / elapsed for p in peers]
    deaths = sum(1 for e in net.events if e.event.state is MemberState.DEAD and e.event.id != e.at_peer)
    why = {k: v - why0.get(k, 0) for k, v in net.why.items() if v > why0.get(k, 0)}
    return dict(n=n, loss=loss, at_once=at_once, elapsed=elapsed, others_paused=others_paused,
                worst_other=worst_other, owner_mean=sum(owner_waits) / len(owner_waits),
                owner_max=max(owner_waits), moved=moved, deaths=deaths,
                mean=sum(per_peer) / n, max=max(per_peer), quiet=sum(quiet) / n, why=why)


#: Run in another tree (``--against``): this file's :func:`rolling_restart` over that tree's
#: ring (``ring`` is imported from it), unplanned (a release before planned restarts has
#: none) or with no wave at all (the quiet ring only), as JSON.
_AGAINST = r"""
import json, runpy, sys
bench = runpy.run_path(sys.argv[1])
n, loss, seed, lease, down, at_once, waves = (int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]),
                                              float(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7]),
                                              sys.argv[8] == "1")
r = bench["rolling_restart"](n, loss, seed, lease, down, at_once if waves else 0, planned=False)
print(json.dumps({k: v for k, v in r.items() if k != "why"}))
"""


def against(tree: str, n: int, loss: float, seed: int, lease: float, down: float, at_once: int,
            waves: bool) -> dict[str, float]:
    """:func:`rolling_restart`, unplanned, over the ring of ``tree`` (a checkout of another
    release); ``waves`` False: only its quiet ring (``quiet``), which costs a fraction."""
    import json
    import os
    import subprocess

    env = dict(os.environ, PYTHONPATH=tree)
    res = subprocess.run([sys.executable, "-c", _AGAINST, os.path.abspath(__file__), str(n), str(loss),
                          str(seed), str(lease), str(down), str(at_once), "1" if waves else "0"],
                         cwd=tree, env=env, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise SystemExit(f"--against {tree}: {(res.stderr.strip().splitlines() or [res.returncode])[-1]}")
    got: dict[str, float] = json.loads(res.stdout.splitlines()[-1])
    return got


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
    ap.add_argument("--death-and-return", action="store_true",
                    help="only the scenario of a peer that dies and comes back (leases by host)")
    ap.add_argument("--down", type=float, default=2 * DEAD_AFTER,
                    help="--death-and-return, --rolling-restart: seconds each stopped peer is down "
                         "(default 2 x dead_after: past it, a real ring change when unplanned)")
    ap.add_argument("--breakdown", action="store_true",
                    help="the cold start's bytes by message type and what it answered")
    ap.add_argument("--rolling-restart", action="store_true",
                    help="instead: a planned restart of every peer, one wave after another")
    ap.add_argument("--at-once", type=int, default=0,
                    help="peers restarting at a time (default: N / 16, at least 1)")
    ap.add_argument("--unplanned", action="store_true",
                    help="with --rolling-restart: each peer stops silently (a crash), for comparison")
    ap.add_argument("--against", metavar="TREE",
                    help="with --rolling-restart: also the KB/s a peer of TREE's ring (a checkout of "
                         "another release) sends with nobody restarting, same seeds; with --unplanned, "
                         "and during its rolling restart")
    ap.add_argument("--progress", action="store_true",
                    help="with --rolling-restart: a line on stderr after each wave (the figures so far)")
    args = ap.parse_args(argv)
    if args.death_and_return:
        print_death_and_return(args)
        return 0
    if args.rolling_restart:
        return _restarts(args)
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


def _restarts(args: argparse.Namespace) -> int:
    """The ``--rolling-restart`` table (:func:`rolling_restart`)."""
    print(f"200 ms one way; rounds {INTERVAL} s, dead_after {DEAD_AFTER} s, lease {args.lease} s, "
          f"restart_hold {RESTART_HOLD} s; each peer down {args.down:g} s"
          + ("; UNPLANNED: each stop silent" if args.unplanned else ""))
    theirs = (f"; {args.against}, nobody restarting" + ("; its rolling restart" if args.unplanned else "")
               if args.against else "")
    print("| N | loss | at once | ring changes at the others | others without a lease: peer-s / "
          "longest s | restarting owner's hosts wait s (mean / max) | deaths | KB/s a peer (mean / max; "
          f"nobody restarting{theirs}) | simulated s | CPU s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        for loss in args.loss:
            t0 = time.process_time()
            at_once = args.at_once or max(1, n // 16)
            r = rolling_restart(n, loss, args.seed, args.lease or DEAD_AFTER / 2, args.down, at_once,
                                planned=not args.unplanned, progress=args.progress)
            cpu = time.process_time() - t0
            other = ""
            if args.against:
                q = against(args.against, n, loss, args.seed, args.lease or DEAD_AFTER / 2, args.down,
                            at_once, args.unplanned)
                other = f"; {q['quiet'] / 1000:.2f}" + (f"; {q['mean'] / 1000:.2f}" if args.unplanned else "")
            print(f"| {n} | {loss:.0%} | {at_once} | {r['moved']:.0f} | {r['others_paused']:.1f} / "
                  f"{r['worst_other']:.1f} | {r['owner_mean']:.1f} / {r['owner_max']:.1f} | {r['deaths']:.0f} "
                  f"| {r['mean'] / 1000:.2f} / {r['max'] / 1000:.2f}; {r['quiet'] / 1000:.2f}{other} "
                  f"| {r['elapsed']:.0f} | {cpu:.0f} |", flush=True)
            if args.breakdown:
                why = r["why"]
                assert isinstance(why, dict)
                total = sum(why.values())
                print("    bytes while restarting: " + ", ".join(
                    f"{kind} answering {cause} {b / 1e6:.2f} MB ({b / total:.0%})"
                    for (kind, cause), b in sorted(why.items(), key=lambda kv: -kv[1]) if b >= total / 100),
                    flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
