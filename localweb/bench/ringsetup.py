"""The ring benchmark's setup: its command line, and the web server its crawls hit.

What ``scripts/bench_ring.py`` (which documents the benchmark and is the one
to run) and ``scripts/bench_sidebyside.py`` share: the options
(:func:`parser`), the [ring] keys they set (:func:`ring_keys`), the command
line that reproduces one benchmark (:func:`cmd`, printed with each
figure), and :func:`start_server`, nginx over the pre-rendered web when it
is installed, else webfarm.py.
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from localweb.bench import (
    NGINX_HINT,
    Children,
    Nginx,
    Server,
    Webfarm,
    find_nginx,
    free_ports,
    graph_for,
    positive,
    render_site,
)

BENCHES = ("cpu", "polite", "forward")


class UsageError(Exception):
    """A mistake in the command line: one line on stderr, exit 2."""


# ---------------------------------------------------------------------------
# The web


def start_server(children: Children, choice: str, hosts: int, pages: int, work: Path,
                 access_log: bool = False, links: int = 100) -> Server:
    """nginx over the pre-rendered web (``auto`` when found), else webfarm.py."""
    port = free_ports(1)[0]
    binary = find_nginx() if choice in ("auto", "nginx") else None
    if choice == "nginx" and binary is None:
        raise UsageError(f"--server nginx: nginx is not installed; {NGINX_HINT}")
    if binary is not None:
        graph = graph_for(hosts, pages, links)
        site = render_site(graph, port, work / "site")
        print(f"  rendered {site.files} files ({site.bytes / 2**20:.0f} MiB; {site.expected} URLs "
              f"expected) in {site.seconds:.1f} s", flush=True)
        try:
            return Nginx.start(children, binary, site, work / "nginx", access_log=access_log)
        except RuntimeError as exc:
            if choice == "nginx":
                raise
            print(f"  WARNING: {exc}; serving with webfarm.py instead", flush=True)
    elif choice == "auto":
        print(f"  WARNING: nginx not found ({NGINX_HINT}); serving with webfarm.py, whose CPU "
              "competes with the peers on this machine", flush=True)
    return Webfarm.start(children, hosts, pages, port, work / "webfarm", access_log=access_log,
                         links=links)


# ---------------------------------------------------------------------------
# CLI


def ring_keys(args: argparse.Namespace) -> dict[str, float]:
    """The [ring] timings given on the command line (the rest: cluster.toml's defaults)."""
    keys = {"gossip_interval": args.gossip_interval, "suspect_after": args.suspect_after,
            "dead_after": args.dead_after}
    return {k: v for k, v in keys.items() if v is not None}


def cmd(args: argparse.Namespace, bench: str) -> str:
    """The command line that reproduces ``bench`` with this run's options."""
    parts = [".venv/bin/python scripts/bench_ring.py", f"--only {bench}"]
    if args.server != "auto":
        parts.append(f"--server {args.server}")
    for key, value in ring_keys(args).items():
        parts.append(f"--{key.replace('_', '-')} {value:g}")
    if args.repeats != 3 and bench != "polite":
        parts.append(f"--repeats {args.repeats}")
    for name, default in _DEFAULTS.get(bench, ()):
        value = getattr(args, name)
        if value != default:
            shown = ",".join(map(str, value)) if isinstance(value, list) else f"{value:g}" \
                if isinstance(value, float) else str(value)
            parts.append(f"--{name.replace('_', '-')} {shown}")
    return " ".join(parts)


_DEFAULTS = {
    "cpu": (("cpu_hosts", 100), ("cpu_pages", 100), ("cpu_peers", [1, 2, 3]), ("concurrency", 64),
            ("host_concurrency", 8)),
    "polite": (("polite_hosts", 200), ("polite_pages", 150), ("polite_rate", 120.0),
               ("polite_window", 5.0), ("polite_kp", -0.05), ("polite_ki", -0.01), ("polite_seconds", 75.0), ("polite_peers", [3]), ("polite_links", 20),
               ("skip_windows", 2)),
    "forward": (("fwd_urls", 300_000), ("fwd_window", 64), ("fwd_hosts", 40), ("fwd_pages", 100)),
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def _peers(value: str) -> list[int]:
    try:
        out = [int(v) for v in value.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected peer counts like 1,2,3, not {value!r}") from None
    if not out or min(out) < 1 or max(out) > 16:
        raise argparse.ArgumentTypeError(f"peer counts must be 1..16, not {value!r}")
    return out


def parser(description: str) -> argparse.ArgumentParser:
    """bench_ring's options; ``description`` is its docstring (--help prints it)."""
    p = _Parser(
        prog="bench_ring.py", description=description, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=textwrap.dedent("""\
            examples:
              .venv/bin/python scripts/bench_ring.py                  # all three (15-25 minutes)
              .venv/bin/python scripts/bench_ring.py --only cpu --repeats 5
              .venv/bin/python scripts/bench_ring.py --only polite --polite-peers 1,3
              .venv/bin/python scripts/bench_ring.py --only forward --no-crawl-forward

            nginx (a much cheaper server than webfarm.py): apt-get install -y nginx-light
            The last lines printed are a markdown block of figures, each with its command.
            """))
    p.add_argument("--only", action="append", choices=BENCHES, help="run this benchmark (repeatable; default all)")
    p.add_argument("--repeats", type=positive(int), default=3, help="runs of each cpu and forward setting (default 3)")
    p.add_argument("--server", choices=("auto", "nginx", "webfarm"), default="auto",
                   help="web server: nginx over pre-rendered pages when installed (auto), or webfarm.py")
    p.add_argument("--crawl-timeout", type=positive(float), default=300.0, help="hard limit of one crawl, s (default 300)")
    p.add_argument("--gossip-interval", type=positive(float), default=None,
                   help="ring.gossip_interval of the crawls (default: the config default, 0.5 s)")
    p.add_argument("--suspect-after", type=positive(float), default=None,
                   help="ring.suspect_after of the crawls (default: the config default, 2 s)")
    p.add_argument("--dead-after", type=positive(float), default=None,
                   help="ring.dead_after of the crawls (default: the config default, 6 s)")
    p.add_argument("--keep", action="store_true", help="keep the work directory (rendered site, results)")
    g = p.add_argument_group("cpu")
    g.add_argument("--cpu-hosts", type=positive(int), default=100, help="hosts (default 100)")
    g.add_argument("--cpu-pages", type=positive(int), default=100, help="pages a host (default 100)")
    g.add_argument("--cpu-links", type=positive(int), default=100,
                   help="links a page (default 100; bench_polite.py's web has 20)")
    g.add_argument("--cpu-peers", type=_peers, default=[1, 2, 3], help="peer counts, alternated (default 1,2,3)")
    g.add_argument("--concurrency", type=positive(int), default=64, help="fetches in flight a peer (default 64)")
    g.add_argument("--host-concurrency", type=positive(int), default=8, help="fetches in flight a host (default 8)")
    g = p.add_argument_group("polite")
    g.add_argument("--polite-hosts", type=positive(int), default=200, help="hosts (default 200)")
    g.add_argument("--polite-pages", type=positive(int), default=150, help="pages a host (default 150)")
    g.add_argument("--polite-rate", type=positive(float), default=120.0, help="politeness.rate, pages/min a host (default 120)")
    g.add_argument("--polite-window", type=positive(float), default=5.0, help="politeness.window, s (default 5)")
    g.add_argument("--polite-kp", type=float, default=-0.05,
                   help="politeness.kp (default -0.05, the PID post's): at 120 pages/min a host's "
                        "delay is 0.5 s, and one page of error moves it by kp/0.5")
    g.add_argument("--polite-ki", type=float, default=-0.01, help="politeness.ki (default -0.01, the PID post's)")
    g.add_argument("--polite-seconds", type=positive(float), default=75.0, help="stop the peers after this, s (default 75)")
    g.add_argument("--polite-peers", type=_peers, default=[3], help="peer counts (default 3)")
    g.add_argument("--polite-links", type=positive(int), default=20,
                   help="links a page (default 20: less parsing, so the peers' CPU does not bound the rate)")
    g.add_argument("--skip-windows", type=int, default=2, help="windows left out at the start (default 2)")
    g = p.add_argument_group("forward")
    g.add_argument("--fwd-urls", type=positive(int), default=300_000, help="URLs forwarded a run (default 300000)")
    g.add_argument("--fwd-window", type=positive(int), default=64, help="batches unacked at most (default 64)")
    g.add_argument("--fwd-hosts", type=positive(int), default=40, help="hosts of the 2-peer crawl (default 40)")
    g.add_argument("--fwd-pages", type=positive(int), default=100, help="pages a host of that crawl (default 100)")
    g.add_argument("--no-crawl-forward", action="store_true", help="skip the 2-peer crawl part")
    return p
