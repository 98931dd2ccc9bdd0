#!/usr/bin/env python3
"""Politeness as a site owner judges it: from the server's request log.

A site owner does not see the crawler's per-window averages; they see their
access log. Every figure here comes from the log of the server the crawl hit
(nginx's ``$msec - $request_time``, webfarm's arrival time: requests are
counted when they **start**, as the frontier paces starts), in every sliding
window of 1 s and of 5 s, against the hard ceiling

    ceiling(W) = ceil(1.1 x setpoint_per_s x W) + 1   requests in any W seconds

(setpoint_per_s = politeness.rate / 60). Sections, each bounded in time, all
on loopback, every process ended at the end:

rate     The synthetic web of 49 hosts (nginx over pre-rendered pages), one
         peer, default gains and window, at 600 pages/min with
         host_concurrency 1 and at 120 pages/min with host_concurrency 2,
         alternately, ``--repeats`` times: the worst host's requests in any 1 s
         and 5 s window, how many hosts went over the ceiling, and the median
         host's mid-crawl rate (between its first and last request, the first
         and last tenth trimmed) against the setpoint. One peer does about 240
         pages/s CPU-bound on a 2-core machine, so 49 hosts at 10/s cannot all
         reach their setpoint: each run prints the peer's CPU and says when it
         was CPU-bound rather than politeness-bound.
step     One host (webfarm.py, which has per-host latency schedules) whose
         latency goes 50 -> 1000 -> 50 ms, a third of the run each; rate 240
         pages/min with host_concurrency 2, so at 1000 ms the host can answer
         only 2 pages/s (host_concurrency / latency) against a setpoint of 4:
         the PID must not wind down its delay then, and must hold the ceiling
         when the host is fast again. Per phase: rate against the setpoint,
         worst 1 s / 5 s, and the PID windows until the rate is back within
         +-10% of the setpoint.
scrapy   Scrapy's AutoThrottle (AUTOTHROTTLE_TARGET_CONCURRENCY 1, start delay
         60 / rate, CONCURRENT_REQUESTS_PER_DOMAIN = host_concurrency) on the
         same latency step, judged the same way; with ``step`` the two run
         alternately and print side by side.
ip       Ten hosts on one IP: the local web also listens on 127.0.0.2, and
         ``dns.resolve`` maps s001..s010 there; each host at 600 pages/min.
         The group's requests in any 1 s / 5 s window against
         ceil(1.1 x B x W) + 1 and its use of the per-IP budget B =
         politeness.ip_rate / 60 (20/s at 1200 pages/min). That key exists only
         once per-IP budgets land: pass it with ``--set ip:politeness.ip_rate=1200``;
         without it the table judges against 1200 pages/min, not enforced.
peers3   Three peers crawl the 49 hosts at 120 pages/min: the total request
         rate against the sum of the setpoints of the hosts that had work at
         each second, and the per-host ceiling.

Crawls of rate, ip and peers3 last 150 s, those of step and scrapy 90 s
(``--seconds`` sets both): at the default window of 60 s a host's first
window is no PID sample when its queue ran dry in it, so the PID first acts
about 120 s in.

``--set KEY=VALUE`` (repeatable; ``SECTION:KEY=VALUE`` for one section only)
sets any cluster.toml key of the crawls, e.g. ``politeness.window=5``; the
value is TOML (``1200``, ``true``, ``"text"``). Keys are passed only when
given, so the same command runs on code that does not know them (it stops
with one line naming the unknown key). The output is Markdown: the command at
the top, a table a section.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import statistics
import sys
import tempfile
import textwrap
import tomllib
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench_polite_crawl import (  # this benchmark's crawls and output
    IP_GROUP,
    IP_GROUP_ADDR,
    LONG,
    SHORT,
    WEB_HOSTS,
    Ctx,
    UsageError,
    crawl_once,
    fmt,
    over,
    seeds_for,
    set_value,
    table,
)
from bench_polite_step import section_step  # this benchmark's step and scrapy sections
from localweb.bench import Children, positive
from localweb.judges.politeness import ceiling, judge_hosts, total_vs_setpoints, worst

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = ("rate", "step", "scrapy", "ip", "peers3")


# ---------------------------------------------------------------------------
# rate


def section_rate(ctx: Ctx) -> None:
    args = ctx.args
    seconds = args.seconds or LONG
    web = ctx.web()
    configs = ((600.0, 1), (120.0, 2))
    print(f"## rate: {WEB_HOSTS} hosts x {args.pages} pages, 1 peer, default gains and window, "
          f"{seconds:g} s a crawl, {args.repeats} repeat(s), alternating\n\n"
          f"`{ctx.section_cmd('rate')}`\n", flush=True)
    rows, results = [], defaultdict(list)
    hosts = [f"s{i:03d}.web.test" for i in range(1, WEB_HOSTS + 1)]
    for rep in range(args.repeats):
        for rate, hc in configs:
            per_s = rate / 60
            run = crawl_once(ctx.children, web, ctx.work / f"rate-{rep}-{rate:g}-{hc}", 1,
                             seconds=seconds, sets=ctx.sets, section="rate",
                             seeds=seeds_for(hosts, web.port), allow=["*.web.test"],
                             politeness={"rate": rate, "host_concurrency": hc},
                             resolve={"*.web.test": "127.0.0.1"})
            j = judge_hosts(run.reqs, per_s)
            results[(rate, hc)].append(j)
            span = (max(r.start for r in run.reqs) - min(r.start for r in run.reqs)) if run.reqs else 0
            rows.append((rep + 1, f"{rate:g}/min ({per_s:g}/s), hc {hc}", len(run.reqs),
                         f"{len(run.reqs) / span:.0f}" if span else "n/a",
                         f"{run.peer_cores:.2f}", f"{run.others:.2f}",
                         over(j.w1, j.c1), over(j.w5, j.c5), j.top,
                         f"{j.over} of {j.hosts}",
                         f"{fmt(j.median_rate)} / {per_s:g}", run.bound()))
            print(f"> run {rep + 1}, {rate:g}/min hc {hc}: {len(run.reqs)} requests, worst 1 s "
                  f"{j.w1}, 5 s {j.w5}, {j.over} hosts over; {run.bound()}", flush=True)
            if not args.keep:
                shutil.rmtree(ctx.work / f"rate-{rep}-{rate:g}-{hc}", ignore_errors=True)
    print()
    print(table(["run", "setpoint", "requests", "req/s", "peer cores (mean)", "other cores",
                 "worst host, any 1 s", "worst host, any 5 s", "worst host", "hosts over",
                 "median host mid-crawl req/s / setpoint", "bound by"], rows))
    for (rate, hc), js in results.items():
        m = {k: statistics.median(getattr(j, k) for j in js) for k in ("w1", "w5", "over")}
        mr = [j.median_rate for j in js if j.median_rate is not None]
        med = statistics.median(mr) if mr else None
        line = (f"- `{ctx.section_cmd('rate')}`: {WEB_HOSTS} hosts at {rate:g} pages/min, "
                f"host_concurrency {hc}, 1 peer (median of {len(js)}): worst host {m['w1']:g} requests "
                f"in 1 s (ceiling {js[0].c1}), {m['w5']:g} in 5 s (ceiling {js[0].c5}); "
                f"{m['over']:g} of {js[0].hosts} hosts over; median host {fmt(med)} req/s "
                f"mid-crawl against a setpoint of {rate / 60:g}")
        ctx.figures.append(line)
    print()


# ---------------------------------------------------------------------------
# ip


def section_ip(ctx: Ctx) -> None:
    args = ctx.args
    seconds = args.seconds or LONG
    web = ctx.web()
    given = set_value(ctx.sets, "ip", "politeness", "ip_rate")
    budget_min = float(given) if given else 1200.0
    budget = budget_min / 60
    per_s = args.ip_host_rate / 60
    g1, g5 = ceiling(budget, 1), ceiling(budget, 5)
    print(f"## ip: {len(IP_GROUP)} hosts ({IP_GROUP[0]}..{IP_GROUP[-1]}) on {IP_GROUP_ADDR}, each at "
          f"{args.ip_host_rate:g} pages/min, 1 peer, {seconds:g} s a crawl; per-IP budget "
          f"{budget_min:g} pages/min = {budget:g}/s "
          + ("(politeness.ip_rate, set)" if given else
             "(NOT set: politeness.ip_rate is passed only with --set ip:politeness.ip_rate=1200)")
          + f"\n\n`{ctx.section_cmd('ip')}`\n", flush=True)
    resolve = {h: IP_GROUP_ADDR for h in IP_GROUP}
    resolve["*.web.test"] = "127.0.0.1"
    rows = []
    for rep in range(args.repeats):
        d = ctx.work / f"ip-{rep}"
        run = crawl_once(ctx.children, web, d, 1, seconds=seconds, sets=ctx.sets, section="ip",
                         seeds=seeds_for(IP_GROUP, web.port), allow=list(IP_GROUP),
                         politeness={"rate": args.ip_host_rate, "host_concurrency": 1},
                         resolve=resolve)
        group = sorted(r.start for r in run.reqs if r.host in IP_GROUP)
        on_addr = sum(1 for r in run.reqs if r.host in IP_GROUP and r.addr == IP_GROUP_ADDR)
        j = judge_hosts([r for r in run.reqs if r.host in IP_GROUP], per_s)
        # Over all the time the group had work, ends included: a burst at the
        # end is budget used too (a trimmed mid-crawl rate would hide it).
        rate = len(group) / (group[-1] - group[0]) if len(group) > 1 and group[-1] > group[0] else None
        rows.append((rep + 1, len(group), f"{on_addr / max(len(group), 1):.0%}",
                     over(worst(group, 1), g1), over(worst(group, 5), g5),
                     f"{fmt(rate)} / {budget:g}", f"{rate / budget:.0%}" if rate else "n/a",
                     over(j.w1, j.c1), over(j.w5, j.c5), f"{j.over} of {j.hosts}",
                     f"{run.peer_cores:.2f}", run.bound()))
        print(f"> ip run {rep + 1}: {len(group)} requests to the group, worst {worst(group, 1)}/1 s, "
              f"{worst(group, 5)}/5 s; {run.bound()}", flush=True)
        ctx.figures.append(
            f"- `{ctx.section_cmd('ip')}`: {len(IP_GROUP)} hosts on one IP at {args.ip_host_rate:g} "
            f"pages/min each, budget {budget_min:g} pages/min{'' if given else ' (not enforced)'}: "
            f"the group's worst {worst(group, 1)} requests in 1 s (ceiling {g1}), {worst(group, 5)} "
            f"in 5 s (ceiling {g5}); {fmt(rate)} req/s while it had work = "
            f"{(rate or 0) / budget:.0%} of the budget")
        if not args.keep:
            shutil.rmtree(d, ignore_errors=True)
    print()
    print(table(["run", "group requests", f"arrived on {IP_GROUP_ADDR}", "group, any 1 s",
                 "group, any 5 s", "group req/s while it had work / budget", "budget used",
                 "worst host, any 1 s", "worst host, any 5 s", "hosts over", "peer cores (mean)", "bound by"],
                rows))
    print()


# ---------------------------------------------------------------------------
# peers3


def section_peers3(ctx: Ctx) -> None:
    args = ctx.args
    seconds = args.seconds or LONG
    web = ctx.web()
    per_s = args.peers_rate / 60
    hosts = [f"s{i:03d}.web.test" for i in range(1, WEB_HOSTS + 1)]
    print(f"## peers3: 3 peers, {WEB_HOSTS} hosts at {args.peers_rate:g} pages/min, host_concurrency 1, "
          f"default gains and window, {seconds:g} s a crawl\n\n`{ctx.section_cmd('peers3')}`\n",
          flush=True)
    rows = []
    for rep in range(args.repeats):
        d = ctx.work / f"peers3-{rep}"
        run = crawl_once(ctx.children, web, d, 3, seconds=seconds, sets=ctx.sets, section="peers3",
                         seeds=seeds_for(hosts, web.port), allow=["*.web.test"],
                         politeness={"rate": args.peers_rate, "host_concurrency": 1},
                         resolve={"*.web.test": "127.0.0.1"})
        if not run.reqs:
            print("> ! no request reached the server", flush=True)
            continue
        t = sorted(r.start for r in run.reqs)
        lo, hi = t[0] + 5, (run.crawl.stopped or t[-1]) - 2
        tot = total_vs_setpoints(run.reqs, per_s, lo, hi)
        j = judge_hosts(run.reqs, per_s)
        rows.append((rep + 1, len(run.reqs), f"{tot.rate:.1f}", f"{tot.owed:.1f}",
                     f"{tot.ratio:.0%}", f"{tot.median:.0%}", f"{tot.max:.0%}",
                     over(j.w1, j.c1), over(j.w5, j.c5), f"{j.over} of {j.hosts}",
                     f"{run.crawl.cpu / run.crawl.wall:.2f}", f"{run.others:.2f}", run.bound()))
        ctx.figures.append(
            f"- `{ctx.section_cmd('peers3')}`: 3 peers, {WEB_HOSTS} hosts at {args.peers_rate:g} "
            f"pages/min: {tot.rate:.1f} req/s against {tot.owed:.1f} owed by the hosts with work "
            f"({tot.ratio:.0%}; worst 5 s window {tot.max:.0%}); worst host {j.w1} in 1 s "
            f"(ceiling {j.c1}), {j.w5} in 5 s (ceiling {j.c5}), {j.over} hosts over")
        if not args.keep:
            shutil.rmtree(d, ignore_errors=True)
    print()
    print(table(["run", "requests", "req/s", "sum of setpoints of hosts with work, /s", "total / sum",
                 "median 5 s window", "worst 5 s window", "worst host, any 1 s", "worst host, any 5 s",
                 "hosts over", "peers' cores", "other cores", "bound by"], rows))
    print()


# ---------------------------------------------------------------------------
# CLI


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def parse_set(value: str) -> tuple[str | None, str, str, Any]:
    """``[SECTION:]TABLE.KEY=VALUE``, VALUE as TOML (a bare word is a string)."""
    spec, eq, raw = value.partition("=")
    only = None
    if ":" in spec:
        only, _, spec = spec.partition(":")
        if only not in SECTIONS:
            raise argparse.ArgumentTypeError(f"{value!r}: no section {only!r} (sections: {', '.join(SECTIONS)})")
    table_name, dot, key = spec.strip().partition(".")
    if not eq or not dot or not table_name or not key or "." in key:
        raise argparse.ArgumentTypeError(f"expected [SECTION:]TABLE.KEY=VALUE like politeness.ip_rate=1200, "
                                         f"not {value!r}")
    try:
        parsed = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = raw
    return only, table_name, key, parsed


def _ms_list(value: str) -> list[float]:
    try:
        out = [float(v) for v in value.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected latencies in ms like 50,1000,50, not {value!r}") from None
    if len(out) < 2 or min(out) < 0:
        raise argparse.ArgumentTypeError(f"expected two or more latencies >= 0 ms, not {value!r}")
    return out


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="bench_polite.py", description=__doc__,
                formatter_class=argparse.RawDescriptionHelpFormatter,
                epilog=textwrap.dedent("""\
                    examples:
                      .venv/bin/python scripts/bench_polite.py                     # every section (~10 min)
                      .venv/bin/python scripts/bench_polite.py --only rate --repeats 3
                      .venv/bin/python scripts/bench_polite.py --only step --only scrapy
                      .venv/bin/python scripts/bench_polite.py --only ip --set ip:politeness.ip_rate=1200
                    """))
    p.add_argument("--only", action="append", choices=SECTIONS, help="run this section (repeatable; default all)")
    p.add_argument("--seconds", type=positive(float), default=None,
                   help=f"length of each crawl, s (default {LONG:g} for rate, ip and peers3, {SHORT:g} for "
                        "step and scrapy)")
    p.add_argument("--repeats", type=positive(int), default=1, help="runs of each setting, alternated (default 1)")
    p.add_argument("--set", dest="sets", action="append", type=parse_set, default=[],
                   metavar="[SECTION:]KEY=VALUE", help="a cluster.toml key of the crawls (repeatable)")
    p.add_argument("--keep", action="store_true", help="keep the work directory (site, configs, results)")
    p.add_argument("--pages", type=positive(int), default=300, help="pages a host of the 49-host web (default 300)")
    p.add_argument("--links", type=positive(int), default=20,
                   help="links a page (default 20: less parsing, so the peer is less CPU-bound)")
    p.add_argument("--step-ms", type=_ms_list, default=[50.0, 1000.0, 50.0],
                   help="latency of each phase of step/scrapy, ms (default 50,1000,50)")
    p.add_argument("--step-rate", type=positive(float), default=240.0, help="pages/min of step/scrapy (default 240)")
    p.add_argument("--step-hc", type=positive(int), default=2, help="host_concurrency of step/scrapy (default 2)")
    p.add_argument("--step-window", type=positive(float), default=5.0,
                   help="politeness.window of step, s (default 5: the default 60 s gives one PID update a phase)")
    p.add_argument("--step-pages", type=positive(int), default=1500, help="pages of the step host (default 1500)")
    p.add_argument("--ip-host-rate", type=positive(float), default=600.0, help="pages/min of each host of ip (default 600)")
    p.add_argument("--peers-rate", type=positive(float), default=120.0, help="pages/min a host of peers3 (default 120)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser().parse_args(argv)
    except UsageError as exc:
        print(f"bench_polite.py: error: {exc}", file=sys.stderr)
        return 2
    args.step_seconds = args.seconds or SHORT
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    chosen = [s for s in SECTIONS if s in (args.only or SECTIONS)]
    command = " ".join([".venv/bin/python scripts/bench_polite.py",
                        *(shlex.quote(a) for a in _without_only(argv))])
    work = Path(tempfile.mkdtemp(prefix="ringcrawl-bench-polite-"))
    work.chmod(0o755)
    print(f"# bench_polite\n\n`{' '.join([command, *(f'--only {s}' for s in chosen)])}`\n\n"
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the start; ceilings "
          f"ceil(1.1 x setpoint/s x W) + 1 for W = 1 s and 5 s, counted at request start from the "
          f"server's log; work directory {work}\n", flush=True)
    ctx = None
    try:
        with Children() as children:
            ctx = Ctx(args, children, work, args.sets, command)
            for s in chosen:
                if s == "rate":
                    section_rate(ctx)
                elif s == "step" or (s == "scrapy" and "step" not in chosen):
                    section_step(ctx, [x for x in ("step", "scrapy") if x in chosen])
                elif s == "ip":
                    section_ip(ctx)
                elif s == "peers3":
                    section_peers3(ctx)
    except UsageError as exc:
        print(f"bench_polite.py: error: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:  # a server that did not start (Nginx.start, Webfarm.start)
        print(f"bench_polite.py: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"## figures (load average {os.getloadavg()[0]:.2f} at the end)\n")
    print("\n".join(ctx.figures if ctx else []))
    return 0


def _without_only(argv: Sequence[str]) -> list[str]:
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--only":
            skip = True
        elif not a.startswith("--only="):
            out.append(a)
    return out


if __name__ == "__main__":
    sys.exit(main())
