#!/usr/bin/env python3
"""What the hostile local web (localweb/) does to real peers, in figures.

(a) **beside**: a 2-peer ring crawls the normal site (``--site-hosts`` hosts
    of ``--pages`` pages at a polite ``--rate``) once alone ("clean") and once
    beside four link-farm hosts of a million new links a page and the trap
    host ("hostile"), alternating, ``--runs`` times each. Figures, median
    of the runs: seconds for the site's pages to finish (the web's log,
    first to last request of the site's hosts), each peer's peak RSS (polled
    from /proc every 0.1 s), result rows, and whether every site page was
    fetched exactly once. A hostile run is stopped (SIGTERM) as soon as the
    site is complete: the farm never ends by itself. Target: hostile within
    20% of clean, every peer under 500 MB.
(b) **cases**: one short 1-peer run for every case of ``localweb.CASES``:
    exit status, how it ended, seconds, peak RSS, rows by error kind.

Caps (``--caps key=value,...``) are written into cluster.toml only where
this tree's peer.core.config.cluster declares the key (``localweb.processes.peerrun.supported``),
so the script runs before and after they exist; the table says which were
in force. Every run is bounded by ``--timeout`` and a peer over
``--rss-kill`` MB is killed, so a runaway crawl cannot take the shared
machine down. Tables are Markdown.

    PYTHONPATH=. python scripts/bench_hostile.py [--runs 3] [--only beside|cases]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from localweb import CASES, Farm, HostileWeb, Site, serve_in_thread
from localweb.bench import positive
from localweb.hostile.farm import TRAP_HOST
from localweb.processes.peerrun import Run, cluster_toml, run_peers, supported


DEFAULT_CAPS = "politeness.max_retry_after=2,crawl.max_links_per_page=1000,crawl.max_urls_per_host=5000"


def _caps(text: str) -> dict[str, float | int]:
    out: dict[str, float | int] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or "." not in key:
            raise argparse.ArgumentTypeError(f"expected section.key=value, not {item!r}")
        try:
            out[key] = int(value) if value.isdigit() else float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number in {item!r}") from None
    return out


def _beside_once(args: argparse.Namespace, hostile: bool, caps: dict) -> dict:
    site = Site(hosts=tuple(f"site{i}.test" for i in range(1, args.site_hosts + 1)), pages=args.pages)
    web = HostileWeb(site=site, farm=Farm(hosts=4, links_per_page=1_000_000))
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as tmp, serve_in_thread(web):
        expected = site.expected_urls(web.port)
        seeds = site.seeds(web.port)
        if hostile:
            seeds += [web.url(h) for h in (*web.farm.names(), TRAP_HOST)]

        def site_done() -> bool:
            return len({u for u in web.fetched() if u in expected}) >= len(expected)

        toml = cluster_toml(Path(tmp), seeds, peers=2, caps=caps, sections={
            "politeness": {"rate": args.rate, "initial_delay": 60.0 / args.rate, "window": 5.0}})
        run = run_peers(toml, peers=2, timeout=args.timeout, rss_kill_mb=args.rss_kill,
                        stop_when=site_done if hostile else None)
        times = [e.t for e in list(web.log) if e.host in site.hosts and e.target != "/robots.txt"]
        fetched = Counter(u for u in web.fetched().elements() if u in expected)
    return {
        "site_s": (max(times) - min(times)) if times else float("nan"),
        "rss": [p.peak_rss_mb for p in run.peers],
        "rows": len(run.rows),
        "complete": set(fetched) == expected and max(fetched.values(), default=0) == 1,
        "codes": run.codes, "timed_out": run.timed_out,
        "killed": [p.killed for p in run.peers],
    }


def beside(args: argparse.Namespace, caps: dict) -> None:
    results: dict[str, list[dict]] = {"clean": [], "hostile": []}
    for i in range(args.runs):
        for kind in ("clean", "hostile"):
            r = _beside_once(args, kind == "hostile", caps)
            results[kind].append(r)
            print(f"  run {i + 1} {kind:<7}: site {r['site_s']:.1f}s, RSS "
                  + "/".join(f"{x:.0f}" for x in r["rss"]) + f" MB, rows {r['rows']}, "
                  f"complete {r['complete']}, exit {r['codes']}"
                  + (", TIMED OUT" if r["timed_out"] else "")
                  + (f", killed {r['killed']}" if any(r["killed"]) else ""), flush=True)
    print(f"\n### beside: {args.site_hosts} site hosts x {args.pages} pages at {args.rate:g} pages/min, "
          f"2 peers, median of {args.runs}\n")
    print("| crawl | site time (s) | peak RSS p1 / p2 (MB) | rows | site complete, once each | exit |")
    print("|---|---|---|---|---|---|")
    med = {}
    for kind, rs in results.items():
        med[kind] = statistics.median(r["site_s"] for r in rs)
        rss = [statistics.median(r["rss"][i] for r in rs) for i in range(2)]
        print(f"| {kind} | {med[kind]:.1f} | {rss[0]:.0f} / {rss[1]:.0f} | "
              f"{statistics.median(r['rows'] for r in rs):.0f} | "
              f"{sum(r['complete'] for r in rs)}/{len(rs)} | {sorted({c for r in rs for c in r['codes']}, key=str)} |")
    worst = max(x for r in results["hostile"] for x in r["rss"])
    print(f"\nhostile / clean site time: {med['hostile'] / med['clean']:.2f} (target <= 1.20); "
          f"worst peak RSS {worst:.0f} MB (target < 500)")


def cases(args: argparse.Namespace, caps: dict) -> None:
    print("\n### cases: one 1-peer run each, bounded by "
          f"{args.case_timeout:g}s\n")
    print("| case | what | exit | ended | seconds | peak RSS (MB) | rows by error (status if none) |")
    print("|---|---|---|---|---|---|---|")
    for case in CASES:
        web = HostileWeb(site=Site(pages=20), farm=Farm(hosts=4, links_per_page=1_000_000))
        with tempfile.TemporaryDirectory(prefix="bench-hostile-") as tmp, serve_in_thread(web):
            seeds = [web.url(h, "/" + p) for h, _, p in (s.partition("/") for s in case.seeds)]
            toml = cluster_toml(Path(tmp), seeds, caps=caps, sections={"crawl": {"timeout": 2.0}})
            run = run_peers(toml, timeout=args.case_timeout, rss_kill_mb=args.rss_kill, grace=10.0)
        print(_case_row(case.name, case.note, run), flush=True)


def _case_row(name: str, note: str, run: Run) -> str:
    p = run.peers[0]
    ended = p.killed and f"killed ({p.killed})" or ("timed out" if run.timed_out else "by itself")
    kinds = Counter(r["error"] or str(r["status"]) for r in run.rows)
    shown = ", ".join(f"{k}: {n}" for k, n in kinds.most_common(6)) or "none"
    if len(kinds) > 6:
        shown += f", +{len(kinds) - 6} kinds"
    return (f"| {name} | {note} | {p.code} | {ended} | {p.seconds:.1f} | {p.peak_rss_mb:.0f} | "
            f"{len(run.rows)} rows: {shown} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["beside", "cases"], help="run one part only")
    ap.add_argument("--runs", type=positive(int), default=3, help="runs of each crawl in (a) (default 3)")
    ap.add_argument("--site-hosts", type=positive(int), default=4, help="hosts of the normal site (default 4)")
    ap.add_argument("--pages", type=positive(int), default=200, help="pages a site host (default 200)")
    ap.add_argument("--rate", type=positive(float), default=900.0,
                    help="politeness.rate, pages/min a host (default 900: ~15 s for 200 pages)")
    ap.add_argument("--timeout", type=positive(float), default=120.0, help="seconds a run of (a) may take")
    ap.add_argument("--case-timeout", type=positive(float), default=30.0, help="seconds a run of (b) may take")
    ap.add_argument("--rss-kill", type=positive(float), default=900.0, help="MB of RSS at which a peer is killed")
    ap.add_argument("--caps", type=_caps, default=_caps(DEFAULT_CAPS),
                    help=f"caps to write where config declares them (default {DEFAULT_CAPS}); '' for none")
    args = ap.parse_args(argv)
    used = {k: v for k, v in args.caps.items() if supported(k)}
    skipped = sorted(set(args.caps) - set(used))
    print(f"caps in force: {used or 'none'}" + (f"; not in this tree's config: {skipped}" if skipped else ""))
    started = time.monotonic()
    if args.only in (None, "beside"):
        beside(args, used)
    if args.only in (None, "cases"):
        cases(args, used)
    print(f"\n(total {time.monotonic() - started:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
