"""bench_polite's step and scrapy sections: one host whose latency steps, ringcrawl against Scrapy.

A part of ``scripts/bench_polite.py`` (its docstring describes both
sections; run that). One host of webfarm with a per-host latency schedule
(50 -> 1000 -> 50 ms by default, a third of the run each); ringcrawl's PID
and Scrapy's AutoThrottle crawl it alternately, and each phase is judged
from webfarm's request log (:mod:`localweb.judges.politeness`): rate against the
setpoint, worst 1 s / 5 s, and the windows until the rate is back within
+-10% of the setpoint.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import signal
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench_polite_crawl import STEP_HOST, Ctx, crawl_once, fmt, over, seeds_for, table
from localweb.bench import Request, Webfarm, free_ports, pid_rows, read_requests
from localweb.judges.politeness import ceiling, recovery, windows, worst

__all__ = ["section_step"]


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
