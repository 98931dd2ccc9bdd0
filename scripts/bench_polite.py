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
import math
import os
import shlex
import shutil
import signal
import statistics
import sys
import tempfile
import textwrap
import time
import tomllib
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localweb.bench import (
    NGINX_HINT,
    Children,
    Crawl,
    Nginx,
    Request,
    Server,
    Webfarm,
    find_nginx,
    free_ports,
    graph_for,
    machine_busy,
    pid_rows,
    positive,
    proc_cpu,
    read_requests,
    render_site,
    report_ring,
    run_crawl,
    sliding_max,
)

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = ("rate", "step", "scrapy", "ip", "peers3")
WEB_HOSTS = 49
IP_GROUP = tuple(f"s{i:03d}.web.test" for i in range(1, 11))
IP_GROUP_ADDR = "127.0.0.2"
STEP_HOST = "s001.web.test"
#: A peer at or above this share of one core (it is one trio thread) is CPU-bound.
CPU_BOUND = 0.85
#: The ends of a host's active span left out of its mid-crawl rate.
TRIM = 0.1
TOLERANCE = 0.10
#: Crawl length of the sections run at the default window (60 s). A host's
#: first window is no PID sample when its queue ran dry in it (frontier rule
#: 3: the index page is fetched before its links arrive), so on the code this
#: was written against the PID first acts about 120 s in: measured, 0
#: pid_trace rows in a 100 s crawl of the 49 hosts.
LONG = 150.0
SHORT = 90.0


class UsageError(Exception):
    """A mistake in the command line: one line on stderr, exit 2."""


# ---------------------------------------------------------------------------
# Judging a log (pure: lists of request start times in, figures out)


def ceiling(per_s: float, w: float) -> int:
    """Most requests allowed in any ``w`` s: ceil(1.1 x per_s x w) + 1.

    Rounded to 1e-9 first: 1.1 x 10 x 5 is 55.000000000000007 in binary.
    """
    return math.ceil(round((1 + TOLERANCE) * per_s * w, 9)) + 1


def worst(times: Sequence[float], w: float) -> int:
    """Most of ``times`` (sorted) in any half-open ``w``-second interval."""
    return sliding_max(list(times), w, -math.inf, math.inf)


def mid_rate(times: Sequence[float], trim: float = TRIM) -> float | None:
    """Requests per second between a host's first and last request, the ends trimmed.

    None when the span is under 5 s: too short to call a rate.
    """
    if len(times) < 2:
        return None
    span = times[-1] - times[0]
    if span < 5.0:
        return None
    lo, hi = times[0] + trim * span, times[-1] - trim * span
    return sum(1 for t in times if lo <= t < hi) / (hi - lo)


def starts_by_host(reqs: Iterable[Request], lo: float = -math.inf, hi: float = math.inf,
                   hosts: Iterable[str] | None = None) -> dict[str, list[float]]:
    keep = set(hosts) if hosts is not None else None
    out: dict[str, list[float]] = defaultdict(list)
    for r in reqs:
        if lo <= r.start < hi and (keep is None or r.host in keep):
            out[r.host].append(r.start)
    for ts in out.values():
        ts.sort()
    return dict(out)


def windows(times: Sequence[float], lo: float, hi: float, w: float) -> list[int]:
    """Requests in each whole window ``[lo + k w, lo + (k + 1) w)`` inside ``[lo, hi)``."""
    n = int((hi - lo) // w)
    counts = [0] * n
    for t in times:
        k = int((t - lo) // w)
        if lo <= t and 0 <= k < n:
            counts[k] += 1
    return counts


def recovery(counts: Sequence[int], target: float) -> tuple[int | None, int | None]:
    """(first window within +-10% of ``target``, first window from which all are), 1-based."""
    inside = [abs(c - target) <= TOLERANCE * target for c in counts]
    first = next((k + 1 for k, ok in enumerate(inside) if ok), None)
    settled = None
    for k in range(len(inside), 0, -1):
        if not inside[k - 1]:
            break
        settled = k
    return first, settled


# ---------------------------------------------------------------------------
# Crawls


def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_toml(k)} = {_toml(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"no TOML form for {v!r}")


Sets = list[tuple[str | None, str, str, Any]]  # (section of this bench or None, table, key, value)


def write_cluster(path: Path, n: int, *, seeds: Sequence[str], allow: Sequence[str],
                  politeness: dict[str, Any], resolve: dict[str, str], concurrency: int,
                  sets: Sets, section: str) -> list[str]:
    """A cluster.toml of ``n`` peers with ``--set`` applied; validated; returns the peer ids."""
    tables: dict[str, dict[str, Any]] = {
        "ring": {"name": "bench-polite"},
        "crawl": {"seeds": list(seeds), "allow_hosts": list(allow), "concurrency": concurrency,
                  "allow_private": True, "timeout": 10.0},
        "politeness": dict(politeness),
        "dns": {"resolve": dict(resolve)},
        "bloom": {"capacity": 1_000_000},
    }
    for only, table, key, value in sets:
        if only in (None, section):
            tables.setdefault(table, {})[key] = value
    ids = [f"p{i + 1}" for i in range(n)]
    lines = ["[ring]", *(f"{k} = {_toml(v)}" for k, v in tables.pop("ring").items())]
    for pid, port in zip(ids, free_ports(n)):
        lines += ["", "[[peer]]", f'id = "{pid}"', f'address = "tcp://127.0.0.1:{port}"',
                  f"data_dir = {_toml(str(path.parent / pid))}"]
    for table, keys in tables.items():
        lines += ["", f"[{table}]", *(f"{k} = {_toml(v)}" for k, v in keys.items())]
    path.write_text("\n".join(lines) + "\n")
    from peer.state.configfile import load_config
    from peer.errors import ConfigError

    try:
        load_config(path)
    except ConfigError as exc:
        raise UsageError(f"the crawl's config is refused (check --set): {exc}") from None
    return ids


def set_value(sets: Sets, section: str, table: str, key: str) -> Any:
    """The last ``--set`` of ``table.key`` that applies to ``section``, else None."""
    found = None
    for only, t, k, v in sets:
        if only in (None, section) and (t, k) == (table, key):
            found = v
    return found


@dataclass
class Run:
    """One crawl and what the server saw of it."""

    crawl: Crawl
    reqs: list[Request]
    server_cpu: float
    machine_cores: float  # every process of the machine, cores, over the crawl's wall time
    peak_peer: float = 0.0  # the busiest peer's cores in its busiest 5 s (sampled each second)
    peak_machine: float = 0.0  # the machine's cores in its busiest 5 s

    @property
    def peer_cores(self) -> float:
        """The busiest peer's share of one core."""
        return max((e.cpu for e in self.crawl.exits.values()), default=0.0) / self.crawl.wall

    @property
    def others(self) -> float:
        return max(0.0, self.machine_cores - self.crawl.cpu / self.crawl.wall
                   - self.server_cpu / self.crawl.wall)

    def bound(self) -> str:
        """CPU when the peer used a whole core, or the machine all of its cores, for 5 s."""
        cores = os.cpu_count() or 1
        if self.peak_peer >= CPU_BOUND:
            return f"CPU at times (a peer {self.peak_peer:.2f} cores in its busiest 5 s)"
        if self.peak_machine >= 0.9 * cores:
            return f"CPU at times (machine {self.peak_machine:.2f}/{cores} cores in its busiest 5 s)"
        return f"politeness (peer <= {self.peak_peer:.2f} cores in any 5 s)"


def crawl_once(children: Children, server: Server, d: Path, n: int, *, seconds: float, sets: Sets,
               section: str, seeds: Sequence[str], allow: Sequence[str], politeness: dict[str, Any],
               resolve: dict[str, str], concurrency: int = 128, stop_at: float | None = None) -> Run:
    d.mkdir(parents=True)
    toml = d / "cluster.toml"
    ids = write_cluster(toml, n, seeds=seeds, allow=allow, politeness=politeness, resolve=resolve,
                        concurrency=concurrency, sets=sets, section=section)
    s0, m0 = server.cpu(), machine_busy()
    stop_after = seconds if stop_at is None else max(1.0, stop_at - time.time())
    pids: list[int] = []
    samples: list[tuple[float, list[float], float]] = []

    def sample(_elapsed: float) -> float:
        if not pids:
            pids.extend(p.pid for p in children.live() if str(toml) in p.args)
        samples.append((time.monotonic(), [proc_cpu(pid) for pid in pids], machine_busy()))
        return 1.0

    crawl = run_crawl(children, toml, ids, time_limit=stop_after + 60, stop_after=stop_after,
                      while_running=sample)
    server_cpu, machine = server.cpu() - s0, machine_busy() - m0
    peak_peer = peak_machine = 0.0
    for (t0, c0, b0), (t1, c1, b1) in zip(samples, samples[5:]):
        if t1 > t0 and len(c0) == len(c1):
            # A peer gone by t1 reads 0.0: skip its negative difference.
            peak_peer = max([peak_peer, *((b - a) / (t1 - t0) for a, b in zip(c0, c1) if b >= a)])
            peak_machine = max(peak_machine, (b1 - b0) / (t1 - t0))
    time.sleep(1.5)  # nginx flushes its request log every second
    reqs = [r for r in read_requests(server)
            if crawl.started - 1 <= r.start <= crawl.started + crawl.wall + 1]
    for err in crawl.errors:
        if "time limit" not in err:
            print(f"> ! {err.strip()}", flush=True)
    report_ring(crawl)
    return Run(crawl, reqs, server_cpu, machine / crawl.wall, peak_peer, peak_machine)


# ---------------------------------------------------------------------------
# Output


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def over(got: int, limit: int) -> str:
    return f"**{got}** > {limit}" if got > limit else f"{got} <= {limit}"


def fmt(v: float | None, spec: str = ".2f") -> str:
    return "n/a" if v is None else format(v, spec)


@dataclass
class Ctx:
    args: argparse.Namespace
    children: Children
    work: Path
    sets: Sets
    command: str
    figures: list[str] = field(default_factory=list)
    _web: Server | None = None
    _step: list[dict[str, Any]] = field(default_factory=list)

    def web(self) -> Server:
        """nginx over the 49-host web, on 127.0.0.1 and 127.0.0.2 (started once)."""
        if self._web is None:
            binary = find_nginx()
            if binary is None:
                raise UsageError(f"nginx is not installed ({NGINX_HINT}); the rate, ip and "
                                 "peers3 sections need its request log")
            port = free_ports(1)[0]
            graph = graph_for(WEB_HOSTS, self.args.pages, self.args.links)
            site = render_site(graph, port, self.work / "site")
            print(f"> rendered {site.files} files of {WEB_HOSTS} hosts x {self.args.pages} pages "
                  f"({self.args.links} links a page) in {site.seconds:.1f} s; nginx on 127.0.0.1 "
                  f"and {IP_GROUP_ADDR}, port {port}\n", flush=True)
            self._web = Nginx.start(self.children, binary, site, self.work / "nginx", access_log=True,
                                    addresses=("127.0.0.1", IP_GROUP_ADDR))
        return self._web

    def section_cmd(self, section: str) -> str:
        return f"{self.command} --only {section}"


def seeds_for(hosts: Iterable[str], port: int) -> list[str]:
    return [f"http://{h}:{port}/" for h in hosts]


# ---------------------------------------------------------------------------
# rate


def judge_hosts(reqs: list[Request], per_s: float) -> dict[str, Any]:
    by = starts_by_host(reqs)
    c1, c5 = ceiling(per_s, 1), ceiling(per_s, 5)
    w1 = {h: worst(ts, 1) for h, ts in by.items()}
    w5 = {h: worst(ts, 5) for h, ts in by.items()}
    rates = [r for r in (mid_rate(ts) for ts in by.values()) if r is not None]
    top1 = max(w1, key=w1.__getitem__, default="")
    return {"hosts": len(by), "c1": c1, "c5": c5, "w1": max(w1.values(), default=0),
            "w5": max(w5.values(), default=0), "top": top1,
            "over": sum(1 for h in by if w1[h] > c1 or w5[h] > c5),
            "median_rate": statistics.median(rates) if rates else None}


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
                         over(j["w1"], j["c1"]), over(j["w5"], j["c5"]), j["top"],
                         f"{j['over']} of {j['hosts']}",
                         f"{fmt(j['median_rate'])} / {per_s:g}", run.bound()))
            print(f"> run {rep + 1}, {rate:g}/min hc {hc}: {len(run.reqs)} requests, worst 1 s "
                  f"{j['w1']}, 5 s {j['w5']}, {j['over']} hosts over; {run.bound()}", flush=True)
            if not args.keep:
                shutil.rmtree(ctx.work / f"rate-{rep}-{rate:g}-{hc}", ignore_errors=True)
    print()
    print(table(["run", "setpoint", "requests", "req/s", "peer cores (mean)", "other cores",
                 "worst host, any 1 s", "worst host, any 5 s", "worst host", "hosts over",
                 "median host mid-crawl req/s / setpoint", "bound by"], rows))
    for (rate, hc), js in results.items():
        m = {k: statistics.median(j[k] for j in js) for k in ("w1", "w5", "over")}
        mr = [j["median_rate"] for j in js if j["median_rate"] is not None]
        med = statistics.median(mr) if mr else None
        line = (f"- `{ctx.section_cmd('rate')}`: {WEB_HOSTS} hosts at {rate:g} pages/min, "
                f"host_concurrency {hc}, 1 peer (median of {len(js)}): worst host {m['w1']:g} requests "
                f"in 1 s (ceiling {js[0]['c1']}), {m['w5']:g} in 5 s (ceiling {js[0]['c5']}); "
                f"{m['over']:g} of {js[0]['hosts']} hosts over; median host {fmt(med)} req/s "
                f"mid-crawl against a setpoint of {rate / 60:g}")
        ctx.figures.append(line)
    print()


# ---------------------------------------------------------------------------
# step and scrapy


def _phases(args: argparse.Namespace) -> list[tuple[float, float, float]]:
    """(start, end, latency s) of each phase, in seconds from the server's start."""
    lat = [ms / 1000 for ms in args.step_ms]
    third = args.step_seconds / len(lat)
    return [(k * third, (k + 1) * third, s) for k, s in enumerate(lat)]


def start_step_web(ctx: Ctx, d: Path) -> tuple[Webfarm, float]:
    args = ctx.args
    sched = ",".join(f"{a:g}:{s:g}" for a, _, s in _phases(args))
    web = Webfarm.start(ctx.children, 1, args.step_pages, free_ports(1)[0], d / "webfarm",
                        access_log=True, links=args.links, latency=[f"{STEP_HOST}={sched}"])
    # webfarm's schedule runs from its own start, which is when it listens
    # (within the 50 ms the listening check polls).
    return web, time.time() - 0.025


def judge_step(reqs: list[Request], t0: float, first: float, args: argparse.Namespace,
               trace: list[tuple[str, float, int, float, float]] | None) -> list[dict[str, Any]]:
    per_s = args.step_rate / 60
    w = args.step_window
    ts = sorted(r.start for r in reqs if r.host == STEP_HOST)
    out = []
    for k, (a, b, lat) in enumerate(_phases(args)):
        lo = max(t0 + a, first) if k == 0 else t0 + a
        hi = t0 + b
        inside = [t for t in ts if lo <= t < hi]
        counts = windows(inside, lo, hi, w)
        first_in, settled = recovery(counts, per_s * w)
        delays = [d for _, end, _, d, _ in (trace or ()) if lo <= end < hi]
        out.append({"latency": lat, "span": hi - lo, "n": len(inside),
                    "rate": len(inside) / (hi - lo) if hi > lo else 0.0,
                    "cap": args.step_hc / lat if lat > 0 else math.inf,
                    "w1": worst(inside, 1), "w5": worst(inside, 5),
                    "windows": counts, "first_in": first_in, "settled": settled,
                    "delay": delays[-1] if delays else None})
    return out


def run_ringcrawl_step(ctx: Ctx, rep: int) -> list[dict[str, Any]]:
    args = ctx.args
    d = ctx.work / f"step-{rep}-ringcrawl"
    d.mkdir()
    web, t0 = start_step_web(ctx, d)
    run = crawl_once(ctx.children, web, d / "crawl", 1, seconds=args.step_seconds, sets=ctx.sets,
                     section="step", seeds=seeds_for([STEP_HOST], web.port), allow=[STEP_HOST],
                     politeness={"rate": args.step_rate, "host_concurrency": args.step_hc,
                                 "window": args.step_window},
                     resolve={"*.web.test": "127.0.0.1"}, stop_at=t0 + args.step_seconds)
    web.stop()
    first = min((r.start for r in run.reqs), default=t0)
    out = judge_step(run.reqs, t0, first, args, pid_rows(run.crawl))
    print(f"> ringcrawl step run {rep + 1}: {len(run.reqs)} requests, peer {run.peer_cores:.2f} "
          f"cores; {run.bound()}", flush=True)
    if not args.keep:
        shutil.rmtree(d, ignore_errors=True)
    return out


_SPIDER = '''\
"""A minimal Scrapy spider for scripts/bench_polite.py: follow every link in scope."""
import scrapy
from scrapy.http import TextResponse
from scrapy.resolver import CachingThreadedResolver
from twisted.internet import defer


class WebTestResolver(CachingThreadedResolver):
    """*.web.test is the local web on 127.0.0.1, as ringcrawl's dns.resolve maps it."""

    def getHostByName(self, name, timeout=()):
        if name == "web.test" or name.endswith(".web.test"):
            return defer.succeed("127.0.0.1")
        return super().getHostByName(name, timeout)


class Follow(scrapy.Spider):
    name = "bench_polite"

    def __init__(self, start, host, **kw):
        super().__init__(**kw)
        self.start_urls = [start]
        self.allowed_domains = [host]

    def parse(self, response):
        if not isinstance(response, TextResponse):
            return
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, self.parse)
'''


def run_scrapy_step(ctx: Ctx, rep: int) -> list[dict[str, Any]] | None:
    args = ctx.args
    import importlib.util

    if importlib.util.find_spec("scrapy") is None:
        print("> ! Scrapy is not installed in this Python (pip install -e '.[bench]'); its runs are "
              "left out", flush=True)
        return None
    d = ctx.work / f"step-{rep}-scrapy"
    d.mkdir()
    (d / "bench_polite_spider.py").write_text(_SPIDER)
    web, t0 = start_step_web(ctx, d)
    delay = 60 / args.step_rate
    settings = {"AUTOTHROTTLE_ENABLED": "True", "AUTOTHROTTLE_TARGET_CONCURRENCY": "1",
                "AUTOTHROTTLE_START_DELAY": f"{delay:g}", "AUTOTHROTTLE_MAX_DELAY": "60",
                "CONCURRENT_REQUESTS_PER_DOMAIN": str(args.step_hc), "CONCURRENT_REQUESTS": "16",
                "ROBOTSTXT_OBEY": "True", "TELNETCONSOLE_ENABLED": "False", "LOG_LEVEL": "INFO",
                "DNS_RESOLVER": "bench_polite_spider.WebTestResolver",
                "CLOSESPIDER_TIMEOUT": f"{max(1.0, t0 + args.step_seconds - time.time()):.0f}",
                "USER_AGENT": "bench-polite-scrapy"}
    argv = [sys.executable, "-m", "scrapy", "runspider", str(d / "bench_polite_spider.py"),
            "-a", f"start=http://{STEP_HOST}:{web.port}/", "-a", f"host={STEP_HOST}"]
    for k, v in settings.items():
        argv += ["-s", f"{k}={v}"]
    env_path = os.pathsep.join([str(d), os.environ.get("PYTHONPATH", "")])
    os.environ["PYTHONPATH"], old = env_path, os.environ.get("PYTHONPATH")
    try:
        with (d / "scrapy.log").open("wb") as log:
            proc = ctx.children.start(argv, stdout=log, stderr=log, cwd=d)
    finally:
        if old is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = old
    deadline, signalled = t0 + args.step_seconds + 30, False
    while (done := ctx.children.poll(proc)) is None:
        if time.time() > t0 + args.step_seconds + 2 and not signalled:
            ctx.children.signal(proc, signal.SIGINT)
            signalled = True
        if time.time() > deadline:
            done = ctx.children.stop(proc, grace=2)
            break
        time.sleep(0.05)
    wall = time.time() - t0
    web.stop()
    reqs = read_requests(web)
    if not reqs:
        tail = (d / "scrapy.log").read_text(errors="replace")[-600:]
        print(f"> ! Scrapy made no request (exit {done.code}): {tail}", flush=True)
        return None
    first = min(r.start for r in reqs)
    out = judge_step(reqs, t0, first, args, None)
    print(f"> Scrapy step run {rep + 1}: {len(reqs)} requests, {done.cpu / wall:.2f} cores, "
          f"exit {done.code}", flush=True)
    if not args.keep:
        shutil.rmtree(d, ignore_errors=True)
    return out


def section_step(ctx: Ctx, which: Sequence[str]) -> None:
    args = ctx.args
    per_s = args.step_rate / 60
    w = args.step_window
    c1, c5 = ceiling(per_s, 1), ceiling(per_s, 5)
    names = {"step": "ringcrawl", "scrapy": "Scrapy AutoThrottle"}
    shown = " and ".join(names[s] for s in which)
    print(f"## {'/'.join(which)}: one host, latency "
          f"{' -> '.join(f'{ms:g}' for ms in args.step_ms)} ms ({args.step_seconds / len(args.step_ms):g} s "
          f"each), {args.step_rate:g} pages/min ({per_s:g}/s), host_concurrency {args.step_hc}; "
          f"{shown}, {args.repeats} repeat(s)\n\n`{ctx.command} "
          + " ".join(f"--only {s}" for s in which) + "`\n", flush=True)
    print(f"ringcrawl: politeness.window {w:g} s (PID windows of {per_s * w:g} pages). Scrapy: "
          f"AUTOTHROTTLE_TARGET_CONCURRENCY 1, AUTOTHROTTLE_START_DELAY {60 / args.step_rate:g} s, "
          f"DOWNLOAD_DELAY 0 (its default: the floor AutoThrottle never goes under), "
          f"CONCURRENT_REQUESTS_PER_DOMAIN {args.step_hc}. Windows: consecutive {w:g} s windows "
          f"from each phase's start, 'back within' = first window within +-10% of {per_s * w:g}, "
          "'settled' = first window from which every later one in the phase is.\n", flush=True)
    results: dict[str, list[list[dict[str, Any]]]] = defaultdict(list)
    runners: dict[str, Callable[[Ctx, int], list[dict[str, Any]] | None]] = {
        "step": run_ringcrawl_step, "scrapy": run_scrapy_step}
    for rep in range(args.repeats):
        for s in which:
            got = runners[s](ctx, rep)
            if got is not None:
                results[s].append(got)
    print()
    rows = []
    for s in which:
        for i, phases in enumerate(results[s]):
            for k, p in enumerate(phases):
                cap = f" (cap {p['cap']:g}/s)" if p["cap"] < per_s else ""
                rows.append((names[s], i + 1, k + 1, f"{p['latency'] * 1000:g} ms{cap}",
                             f"{p['span']:.0f}", f"{p['rate']:.2f} / {per_s:g}",
                             f"{p['rate'] / per_s:.0%}", over(p["w1"], c1), over(p["w5"], c5),
                             p["first_in"] or "never", p["settled"] or "never",
                             " ".join(map(str, p["windows"])), fmt(p["delay"], ".3f")))
    print(table(["crawler", "run", "phase", "latency", "s", "req/s / setpoint", "of setpoint",
                 "worst any 1 s", "worst any 5 s", "back within +-10% (window)", "settled (window)",
                 f"requests per {w:g} s window", "PID delay at phase end, s"], rows))
    print()
    for s in which:
        if not results[s]:
            continue
        parts = []
        for k in range(len(args.step_ms)):
            ph = [r[k] for r in results[s]]
            parts.append(f"{ph[0]['latency'] * 1000:g} ms: {statistics.median(p['rate'] for p in ph):.2f} "
                         f"req/s, worst {statistics.median(p['w1'] for p in ph):g}/1 s, "
                         f"{statistics.median(p['w5'] for p in ph):g}/5 s")
        ctx.figures.append(
            f"- `{ctx.command} --only {s}`: {names[s]}, one host at {args.step_rate:g} pages/min "
            f"(ceilings {c1}/1 s, {c5}/5 s), host_concurrency {args.step_hc}, median of "
            f"{len(results[s])}: " + "; ".join(parts))


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
                     over(j["w1"], j["c1"]), over(j["w5"], j["c5"]), f"{j['over']} of {j['hosts']}",
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


def total_vs_setpoints(reqs: list[Request], per_s: float, lo: float, hi: float) -> dict[str, float]:
    """Requests in ``[lo, hi)`` against the sum of setpoints of the hosts with work, 5 s windows.

    A host has work from its first to its last request (as the server saw it).
    """
    by = starts_by_host(reqs)
    spans = [(ts[0], ts[-1]) for ts in by.values()]
    ratios, got, owed = [], 0, 0.0
    t = lo
    while t + 5 <= hi:
        n = sum(1 for ts in by.values() for x in ts if t <= x < t + 5)
        active = sum(max(0.0, min(b, t + 5) - max(a, t)) for a, b in spans)  # host-seconds
        if active > 0:
            ratios.append(n / (active * per_s))
        got += n
        owed += active * per_s
        t += 5
    return {"ratio": got / owed if owed else 0.0, "median": statistics.median(ratios) if ratios else 0.0,
            "max": max(ratios, default=0.0), "rate": got / (hi - lo) if hi > lo else 0.0,
            "owed": owed / (hi - lo) if hi > lo else 0.0}


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
        rows.append((rep + 1, len(run.reqs), f"{tot['rate']:.1f}", f"{tot['owed']:.1f}",
                     f"{tot['ratio']:.0%}", f"{tot['median']:.0%}", f"{tot['max']:.0%}",
                     over(j["w1"], j["c1"]), over(j["w5"], j["c5"]), f"{j['over']} of {j['hosts']}",
                     f"{run.crawl.cpu / run.crawl.wall:.2f}", f"{run.others:.2f}", run.bound()))
        ctx.figures.append(
            f"- `{ctx.section_cmd('peers3')}`: 3 peers, {WEB_HOSTS} hosts at {args.peers_rate:g} "
            f"pages/min: {tot['rate']:.1f} req/s against {tot['owed']:.1f} owed by the hosts with work "
            f"({tot['ratio']:.0%}; worst 5 s window {tot['max']:.0%}); worst host {j['w1']} in 1 s "
            f"(ceiling {j['c1']}), {j['w5']} in 5 s (ceiling {j['c5']}), {j['over']} hosts over")
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
