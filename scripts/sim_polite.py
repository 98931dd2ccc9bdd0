"""Politeness at any rate, from simulated servers' own request logs (no network, no clock).

    .venv/bin/python scripts/sim_polite.py [--window 60] [--hosts 9]

Runs localweb/sims/politeness.py, the simulation tests/e2e/test_politeness.py checks, and
prints per rate and host concurrency:

- the worst requests any host got in any 1 s and any 5 s window (sliding),
  against the ceiling ceil(1.1 x rate/s x W) + 1 of peer/core/frontier/frontier.py rule 7;
- the median host's rate while it had work, against the setpoint;
- after a latency step 50 -> 1000 -> 50 ms, windows until every window is
  within +-10 % of the setpoint again;
- after 30 s of 429s, the same.

Then the scale-free PID law on the PID post's own fast-slow-fast host, scaled to
each rate: windows to settle within +-5 % after each step.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from localweb.sims.politeness import (
    PHASE, Site, ceilings, host_response_time, max_in_window, rate_between, recovery_windows, simulate, steps,
)
from localweb.sims.politeness import simulate_pid_host as pid_sim
from peer.core.frontier.frontier import Politeness
from peer.core.politeness.pid import PID

RATES = (6.0, 60.0, 120.0, 600.0, 1200.0)


def frontier_table(window: float, hosts: int) -> None:
    phase = 6 * window
    print(f"Frontier, one peer, {hosts} hosts a run, {window:g} s windows, phases of 6 windows")
    print("| pages/min | per host | worst 1 s (ceiling) | worst 5 s (ceiling) | median rate / setpoint "
          "| back after 1000 -> 50 ms | back after 30 s of 429s |")
    print("|---|---|---|---|---|---|---|")
    for rate in RATES:
        for conc in (1, 4):
            pol = Politeness(rate=rate, window=window, host_concurrency=conc)
            lat = steps((0.0, 0.05), (phase, 1.0), (2 * phase, 0.05))
            sites = [Site(f"h{i}.test", latency=lat) for i in range(hosts)]
            run = simulate(sites, pol, 3 * phase)
            s = rate * window / 60.0
            c = ceilings(rate)
            w1 = max(max_in_window(run.times(host=x.host), 1.0) for x in sites)
            w5 = max(max_in_window(run.times(host=x.host), 5.0) for x in sites)
            med = statistics.median(
                rate_between(run.times(host=x.host), 0.0, phase) for x in sites) / rate
            backs = [recovery_windows(run.times(host=x.host), window, 2 * phase, 3 * phase, s)
                     for x in sites]
            back = "never" if None in backs else max(backs)
            end = phase + 30.0 + 14 * window
            busy = simulate([Site("b.test", busy=[(phase, phase + 30.0)])], pol, end)
            bt = busy.times()
            n429 = sum(h.status == 429 for h in busy.log)
            b429 = recovery_windows(bt, window, phase + 30.0, end, s)
            w1 = max(w1, max_in_window(bt, 1.0))
            w5 = max(w5, max_in_window(bt, 5.0))
            print(f"| {rate:g} | {conc} | {w1} ({c[1.0]}) | {w5} ({c[5.0]}) | {med:.3f} "
                  f"| {back} windows | {b429} windows ({n429} 429s) |")
    print()


def shared_ip_table(window: float) -> None:
    print("Per IP: 1 host on peer 0 and 3 on peer 1 share one IP (shares 1/4, 3/4), 600 pages/min per host,"
          f" {window:g} s windows, 4 windows")
    print("| ip_rate | worst 1 s on the IP (ceiling) | worst 5 s (ceiling) | IP rate / ip_rate |")
    print("|---|---|---|---|")
    for ip_rate in (60.0, 120.0, 600.0, 1200.0):
        pol = Politeness(rate=600.0, window=window, ip_rate=ip_rate, ip_concurrency=8)
        sites = [Site(f"h{p}{i}.test", ip="10.0.0.1", peer=p, latency=lambda t: 0.2)
                 for p, n in ((0, 1), (1, 3)) for i in range(n)]
        run = simulate(sites, pol, 4 * window, peers=2,
                       shares={(0, "10.0.0.1"): 0.25, (1, "10.0.0.1"): 0.75})
        ts = run.times(ip="10.0.0.1")
        c = ceilings(ip_rate)
        print(f"| {ip_rate:g} | {max_in_window(ts, 1.0)} ({c[1.0]}) | {max_in_window(ts, 5.0)} ({c[5.0]}) "
              f"| {rate_between(ts, window, 4 * window) / ip_rate:.3f} |")
    print()


def pid_table() -> None:
    # tests/core/test_pid.py's model: 7 connections, each waiting the delay after
    # its response; 0.5 s then 9.5 s then 0.5 s a page at 40/min, scaled.
    print("PID law alone, the PID post's fast-slow-fast host scaled to the rate, 60 s windows:"
          " windows to settle within +-5 % of S")
    print("| pages/min | S | start | fast -> slow | slow -> fast |")
    print("|---|---|---|---|---|")
    for rate in RATES:
        s = rate
        t0 = 60.0 / rate
        scale = t0 / 1.5
        pid = PID(-0.05, -0.01, 0.0, s, 1.0 * scale, 0.0, float("inf"), 15.0, nominal_delay=t0)
        trace = pid_sim(pid, lambda t, k=scale: host_response_time(t) * k, 3 * PHASE)
        band = max(0.05 * s, 1.0)  # at S = 6 one page is 17 %: the counting resolution
        cells = []
        for ph in range(3):
            a, b = ph * PHASE, (ph + 1) * PHASE
            cells.append(next((str(i - a) for i in range(a, b)
                               if all(abs(n - s) <= band for _, n, _ in trace[i:b])), "never"))
        print(f"| {rate:g} | {s:g} | " + " | ".join(cells) + " |")
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--window", type=float, default=60.0, help="PID window, seconds (default 60)")
    ap.add_argument("--hosts", type=int, default=9, help="hosts a run (default 9)")
    args = ap.parse_args()
    if args.window <= 0 or args.hosts < 1:
        print("sim_polite.py: --window must be > 0 and --hosts >= 1", file=sys.stderr)
        raise SystemExit(2)
    frontier_table(args.window, args.hosts)
    shared_ip_table(args.window)
    pid_table()


if __name__ == "__main__":
    main()
