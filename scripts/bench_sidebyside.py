#!/usr/bin/env python3
"""Side by side: one peer's CPU a page, two checkouts of ringcrawl alternated on one web.

The question it answers: does a change cost CPU on the path every page takes?
(For example: with no proxy and no cookies configured, does a peer spend
under 5% more CPU a page than the code before?) Absolute figures on a shared
2-core machine move by more than that from one minute to the next, so the
two checkouts are crawled alternately, in rounds, against the same server,
and compared by the ratio of their medians and round by round.

The crawl is ``scripts/bench_ring.py --only cpu --cpu-peers 1`` on the web of
``scripts/bench_polite.py`` (the figure the fetcher's docstring quotes): by
default 49 hosts x 100 pages of 20-40 KB, 20 links a page, politeness off
(rate 0, delays 0), concurrency 64, ``host_concurrency`` 8, static DNS to
127.0.0.1. The server is nginx over the pre-rendered site when installed
(webfarm.py otherwise, with a warning: its CPU competes with the peer's),
started once for every crawl. The harness (this tree's ``localweb``) writes
the cluster.toml and reads the results; only the ``python -m peer``
process comes from the checkout under test (it runs with that checkout as
its working directory, which ``python -m`` puts first on the import path).

A checkout is a directory, or a git revision checked out for the run with
``git worktree add --detach`` under the work directory (and removed at the
end). Each is byte-compiled before the first crawl, so no run pays for
compiling. Rounds alternate the order (A B, B A, A B, ...), so a drift in
the machine's load falls on both. A crawl that did not end cleanly, or
fetched a different number of pages than the others, is left out of the
medians and said so.

Peer CPU is the peer process's user + system seconds (``os.wait4``), start-up
and shut-down included, over the pages it fetched.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from localweb.bench import Children, machine_busy, page_rows, positive, run_crawl, write_toml
from localweb.bench.ringsetup import UsageError, start_server  # bench_ring's web, as it serves it

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Run:
    label: str
    round: int
    pages: int
    cpu: float
    wall: float
    ok: bool
    others: float  # cores used by the rest of the machine meanwhile

    @property
    def ms(self) -> float:
        return self.cpu / max(self.pages, 1) * 1e3


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bench_sidebyside.py", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=("example:\n"
                "  .venv/bin/python scripts/bench_sidebyside.py --base 0af43c4 --rounds 5\n"
                "  (B is this checkout's working tree unless --head names another)"))
    p.add_argument("--base", required=True, metavar="REV|DIR", help="checkout A: a git revision or a directory")
    p.add_argument("--head", default=str(ROOT), metavar="REV|DIR",
                   help="checkout B (default: this working tree, with its uncommitted changes)")
    p.add_argument("--rounds", type=positive(int), default=5, help="rounds, each one crawl of A and one of B (default 5)")
    p.add_argument("--hosts", type=positive(int), default=49, help="hosts of the web (default 49)")
    p.add_argument("--pages", type=positive(int), default=100, help="pages a host (default 100)")
    p.add_argument("--links", type=positive(int), default=20, help="links a page (default 20)")
    p.add_argument("--concurrency", type=positive(int), default=64, help="crawl.concurrency (default 64)")
    p.add_argument("--server", choices=("auto", "nginx", "webfarm"), default="auto",
                   help="web server: nginx over pre-rendered pages when installed (auto), or webfarm.py")
    p.add_argument("--a-toml", default="", metavar="TOML",
                   help="TOML appended to checkout A's cluster.toml, e.g. '[warc]\\nenabled = false' "
                        "(a feature's cost: the same checkout as A and B, the feature on in one)")
    p.add_argument("--b-toml", default="", metavar="TOML", help="TOML appended to checkout B's cluster.toml")
    p.add_argument("--crawl-timeout", type=positive(float), default=300.0, help="hard limit of one crawl, s (default 300)")
    return p


def _checkout(spec: str, work: Path, name: str, added: list[Path]) -> tuple[Path, str]:
    """(directory, label) of ``spec``: a directory as it is, else a revision checked out under ``work``."""
    path = Path(spec).expanduser()
    if path.is_dir():
        if not (path / "peer" / "__main__.py").exists():
            raise UsageError(f"{spec}: not a ringcrawl checkout (no peer/__main__.py)")
        rev = subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(path), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return path.resolve(), f"{path.name} ({rev}{' + changes' if dirty else ''})" if rev else str(path)
    res = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "--verify", f"{spec}^{{commit}}"],
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise UsageError(f"{spec}: neither a directory nor a git revision of {ROOT}")
    rev = res.stdout.strip()
    tree = work / name
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(tree), rev],
                   check=True)
    added.append(tree)
    return tree, rev


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-sidebyside-"))
    added: list[Path] = []
    try:
        trees = [_checkout(args.base, work, "a", added), _checkout(args.head, work, "b", added)]
        labels = ["A", "B"]
        for (tree, label), name in zip(trees, labels):
            print(f"{name}: {label}  ({tree})", flush=True)
            subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", "peer", "ring"],
                           cwd=tree, check=True, stdout=subprocess.DEVNULL)
            # The peers must run this checkout's code, not the installed one's.
            where = subprocess.run([sys.executable, "-c", "import peer; print(peer.__file__)"], cwd=tree,
                                   capture_output=True, text=True).stdout.strip()
            if not Path(where).resolve().is_relative_to(tree.resolve()):
                raise UsageError(f"{tree}: python -m peer there imports {where or 'nothing'}")
        print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
              f"{args.hosts} hosts x {args.pages} pages, {args.links} links a page, one peer, "
              f"politeness off, concurrency {args.concurrency}", flush=True)
        runs = _crawl(args, trees, labels, work)
    except UsageError as exc:
        print(f"bench_sidebyside.py: error: {exc}", file=sys.stderr)
        return 2
    finally:
        for tree in added:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)
    _report(runs, labels, [label for _, label in trees])
    return 0


def _crawl(args: argparse.Namespace, trees: list[tuple[Path, str]], labels: list[str], work: Path) -> list[Run]:
    pol = {"rate": 0.0, "initial_delay": 0.0, "min_delay": 0.0, "host_concurrency": 8}
    runs: list[Run] = []
    with Children() as children:
        server = start_server(children, args.server, args.hosts, args.pages, work, links=args.links)
        print(f"server: {server.name} on 127.0.0.1:{server.port}", flush=True)
        print(f"{'round':>5} {'tree':>4} {'pages':>6} {'wall s':>7} {'peer CPU s':>10} "
              f"{'ms/page':>8} {'others':>6}", flush=True)
        for rnd in range(args.rounds):
            order = [0, 1] if rnd % 2 == 0 else [1, 0]
            for i in order:
                d = work / f"crawl-{rnd}-{labels[i]}"
                d.mkdir()
                extra = (args.a_toml, args.b_toml)[i].replace("\\n", "\n")
                ids = write_toml(d / "cluster.toml", 1, server.port, args.hosts,
                                 concurrency=args.concurrency, politeness=pol, extra=extra)
                m0, s0 = machine_busy(), server.cpu()
                crawl = run_crawl(children, d / "cluster.toml", ids, time_limit=args.crawl_timeout,
                                  tree=trees[i][0])
                others = max(0.0, machine_busy() - m0 - (server.cpu() - s0) - crawl.cpu) / crawl.wall
                pages = len(page_rows(crawl))
                run = Run(labels[i], rnd + 1, pages, crawl.cpu, crawl.wall, crawl.ok, others)
                runs.append(run)
                print(f"{run.round:>5} {run.label:>4} {run.pages:>6} {run.wall:>7.1f} {run.cpu:>10.2f} "
                      f"{run.ms:>8.3f} {run.others:>6.2f}", flush=True)
                for err in crawl.errors:
                    print(f"      ! {err}", flush=True)
                shutil.rmtree(d, ignore_errors=True)
        server.stop()
    return runs


def _report(runs: list[Run], labels: list[str], names: list[str]) -> None:
    counts = [r.pages for r in runs if r.ok]
    usual = statistics.mode(counts) if counts else 0
    good = [r for r in runs if r.ok and r.pages == usual]
    left = len(runs) - len(good)
    if left:
        print(f"({left} crawl(s) left out: not ended cleanly, or not {usual} pages)")
    med = {}
    for label, name in zip(labels, names):
        ms = [r.ms for r in good if r.label == label]
        if ms:
            med[label] = statistics.median(ms)
            print(f"{label} {name}: median {med[label]:.3f} ms CPU/page over {len(ms)} crawls "
                  f"(min {min(ms):.3f}, max {max(ms):.3f})")
    if len(med) == 2:
        ratio = med["B"] / med["A"]
        print(f"B/A: {ratio:.3f} ({(ratio - 1) * 100:+.1f}% CPU a page)")
        per_round = []
        for rnd in sorted({r.round for r in good}):
            pair = {r.label: r.ms for r in good if r.round == rnd}
            if len(pair) == 2:
                per_round.append(pair["B"] / pair["A"])
        if per_round:
            print("B/A per round: " + ", ".join(f"{x:.3f}" for x in per_round)
                  + f"; median {statistics.median(per_round):.3f}")


if __name__ == "__main__":
    sys.exit(main())
