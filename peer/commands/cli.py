"""``python -m peer``: the command line of one crawler peer.

Argument parsing and error reporting only; the work is done by the modules it
calls. A user's mistake (bad cluster.toml, unknown --id) is one line on stderr
and exit status 2, never a traceback; so is a peer that cannot start (its
port in use, an address not of this machine, a corrupt or foreign crawl
state, a results file another process holds open). A crawl whose results
file was deleted or replaced while it ran stops, says so in one line and
exits 1 (``EXIT_LOST``): it never reports rows it no longer has. A write
under data_dir refused while the crawl runs (a disk gone read-only or full)
is one line naming the file and the system's reason, and exit 4
(``peer.errors.EXIT_STORAGE``). The ``--help`` epilog lists every status.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from peer.core.config.cluster import ClusterConfig
from peer.state.configfile import load_config
from peer.errors import EXIT_RESTART, EXIT_STORAGE, EXIT_USAGE, PeerError, StorageError, user_error

#: Exit status of a crawl whose results file went away under it.
EXIT_LOST = 1
from peer.core.run.runs import Choice, Fingerprint, RunRecord, decide, first_run
from peer.commands.supervise import entry_of, supervise
from peer.commands import envflags
from peer.commands.check import (check_host, config_warnings, describe, seed_hosts_text, seed_owners,
                                 static_refused)
from peer.core.run.stats import STATS_FILE
from peer.commands.machine import bind_problem
from ring.commandnames import Command, command
from ring.errors import RingError
from ring.tools.logs import FORMATS, configure as configure_logs, event

__all__ = ["main"]



#: The examples of ``--help``: (arguments, what they do).
_EXAMPLES = (
    ("--ring cluster.toml --check", "validate the config, ask the seed hosts"),
    ("--ring F --check --host HOST", "the settings in force for one host"),
    ("--ring solo.toml", "crawl (a ring of one peer)"),
    ("try URL --ring solo.toml", "show what the crawl would do with one URL"),
    ("--ring F --id m1", "an entry of workers = N: its N peers m1-0..,\n"
                         "one supervisor (exit: the worst worker's status)"),
)


def _parser() -> argparse.ArgumentParser:
    # Named as the user started it: ringcrawl once installed, python -m peer in a checkout.
    me = command(Command.PEER, sys.argv[0])
    width = max(len(f"  {me} {a}") for a, _ in _EXAMPLES) + 2
    examples = "".join(f"{f'  {me} {a}':<{width}}" + what.replace("\n", "\n" + " " * width) + "\n"
                       for a, what in _EXAMPLES)
    p = argparse.ArgumentParser(
        prog=me,
        description=(
            "Run one peer of a ringcrawl cluster. Every machine runs the same "
            "command with the same cluster.toml; --id says which [[peer]] this is."
        ),
        epilog=(
            "Examples:\n" + examples +
            "Earlier crawl state (data_dir/state/): on a terminal the peer asks whether to resume\n"
            "it or start fresh. Without one it resumes an interrupted run (kill -9, a signal, a\n"
            "crash) or a graceful leave (--leave and SIGTERM: it rejoins the ring) whose scope and\n"
            "seeds are unchanged, and refuses anything else (a finished crawl, a changed scope)\n"
            "in one line: pass --resume or --fresh.\n"
            "Exit statuses (one meaning each; docs/operations.md, Exit statuses):\n"
            "  0  the crawl ended: done, max_pages, left the ring, or SIGINT/SIGTERM after a\n"
            "     clean stop (results flushed and checkpointed, stats.json written; in a ring,\n"
            "     without --leave, a planned restart: the ring keeps its hosts for it)\n"
            "  1  the results file or data directory was deleted or replaced under the peer\n"
            "  2  a usage or config error, or a peer that cannot start (its port in use,\n"
            "     damaged crawl state, a results file held open, an earlier crawl to resume)\n"
            "  3  the crawl (alone, or the whole ring) ended without fetching a page: the\n"
            "     last line says why (every seed refused, out of scope, unreachable, robots.txt)\n"
            "  4  storage failed while the crawl ran: a write under data_dir was refused (a\n"
            "     disk gone read-only or full, an I/O error); one line names the file and the\n"
            "     system's reason; start again with the same command once the disk is fixed\n"
            f"  75 stopped for a planned restart by `{command(Command.RING, sys.argv[0])} restart`: the service manager\n"
            "     starts it again (the ring keeps its hosts for it for ring.restart_hold)\n"
            "  other: a bug, with its traceback (please report it); -9 / 137: killed"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--ring", metavar="PATH", required=True,
                   help="the cluster.toml shared by every peer (required)")
    p.add_argument("--id", metavar="ID",
                   help="which [[peer]] of cluster.toml this process is (an entry of workers = N: "
                        "all N, under one supervisor); may be left out when the file lists one peer "
                        "or one entry of workers")
    p.add_argument("--address", metavar="tcp://HOST:PORT",
                   help="join a running ring as a peer not listed in cluster.toml, listening here "
                        "(with --id and --data-dir)")
    p.add_argument("--bind", metavar="tcp://HOST:PORT",
                   help="where a joining peer listens when not at its --address (NAT, a container, "
                        "a pod): e.g. tcp://0.0.0.0:5555 or tcp://[::]:5555; default: --address "
                        "itself, or every interface on its port when --address is a DNS name")
    p.add_argument("--data-dir", metavar="DIR", help="data directory of a joining peer")
    p.add_argument("--weight", metavar="W", type=float, default=None,
                   help="ring weight of a joining peer (default 1.0)")
    p.add_argument("--metrics-address", metavar="HOST:PORT",
                   help="serve a joining peer's metrics and probes here, as [[peer]] metrics_address "
                        "does for a listed peer (a port alone: 127.0.0.1; [metrics] applies)")
    p.add_argument("--check", action="store_true",
                   help="validate cluster.toml, print what this peer would run with, ask each "
                        "seed host as the crawl would (its name resolved, its robots.txt read: "
                        "one request per host, at most 20 hosts, 5 s each), warn of each seed the "
                        "crawl cannot fetch; with --id (or a one-peer file) check that this machine "
                        "can run that peer (its secret key, a writable data_dir with 1 GiB free, its "
                        "ring and metrics addresses free and of this machine): each failure one "
                        "line, exit 2; then exit")
    p.add_argument("--host", metavar="HOST",
                   help="with --check: print the settings in force for this host (or URL's host) "
                        "and the [[site]] block or key that set each one, and exit (asks no server)")
    p.add_argument("--fresh", action="store_true",
                   help="delete this peer's earlier results and crawl state (data_dir) and "
                        "start over; asks first unless --yes")
    p.add_argument("--resume", action="store_true",
                   help="continue the crawl state in data_dir/state/ whatever it is: after a "
                        "finished run (e.g. with a higher max_pages) or a changed scope, "
                        "which is reported")
    p.add_argument("--retry-failed", action="store_true",
                   help="resume the crawl (as --resume) and queue again this peer's failed pages: "
                        "URLs whose latest row failed with an error or status [retry] retries "
                        "(connect, timeout, 5xx, 429...) or of a host given up; not robots.txt "
                        "refusals nor scope; in a ring a host another peer owns now goes to it. "
                        "The summary says how many (docs/operations.md, Failed pages again)")
    p.add_argument("--yes", action="store_true", help="do not ask before --fresh deletes anything")
    p.add_argument("--leave", action="store_true",
                   help="on SIGTERM, leave the ring gracefully: hand the queued and fetched "
                        "URLs of this peer's hosts to their new owners, then exit 0 "
                        f"(same as `{command(Command.RING, sys.argv[0])} leave --id ID`); without it SIGTERM stops "
                        "this peer for a planned restart: the others keep its hosts for it for "
                        "ring.restart_hold seconds, then take them when it is declared dead")
    p.add_argument("--progress", metavar="SECONDS", type=float, default=5.0,
                   help="seconds between progress lines on stderr (default 5)")
    p.add_argument("--log-level", metavar="LEVEL", default="INFO",
                   choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                   help="logging level: DEBUG, INFO (default), WARNING or ERROR")
    p.add_argument("--log-format", metavar="FORMAT", default="text", choices=FORMATS,
                   help="text (default): one line a record, stamped in UTC; json: one JSON object "
                        "a line (ts, level, peer, logger, event, msg and the event's fields), the "
                        "end-of-run summary one record (docs/operations.md, Logs)")
    # try is a first word main() reads before this parser: its usage follows the crawl's.
    p.usage = (p.format_usage().removeprefix("usage: ").rstrip()
               + f"\n       {me} try URL --ring PATH [options]   (see {me} try --help)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["try"]:
        from peer.commands.trial import main as try_main

        return try_main(argv[1:])
    parser = _parser()
    try:
        # RINGCRAWL_<FLAG>: each flag's default; --retry-failed is an operator's act, as --fresh
        # is: a service's environment would ask it at every start, the first one refused.
        envflags.apply(parser, os.environ, never=("--fresh", "--yes", "--help", "--retry-failed"))
    except envflags.EnvError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    args = parser.parse_args(argv)
    joiner_only = (("--data-dir", args.data_dir), ("--weight", args.weight), ("--bind", args.bind),
                   ("--metrics-address", args.metrics_address))
    if args.address is None and any(v is not None for _, v in joiner_only):
        # A listed peer's come from cluster.toml; ignoring them silently would
        # put its results where the user does not look.
        given = " and ".join(f for f, v in joiner_only if v is not None)
        print(f"error: {given}: only for a peer joining with --address; a peer listed in "
              f"cluster.toml takes data_dir, weight, bind and metrics_address from its [[peer]] entry",
              file=sys.stderr)
        return EXIT_USAGE
    if args.weight is None:
        args.weight = 1.0
    if args.host is not None and not args.check:
        print("error: --host: only with --check (it shows the settings in force for a host)", file=sys.stderr)
        return EXIT_USAGE
    try:
        cfg = load_config(args.ring)
        if cfg.crawl.proxy or any(b.proxy for b in cfg.sites):  # its credentials read now: one line if not
            from peer.core.config.sites import SiteSettings
            from peer.net.proxy import proxy_routes

            proxy_routes(cfg.crawl, SiteSettings(cfg.sites, cfg.crawl, cfg.politeness))
        if args.address is not None:
            _check_join(cfg, args)
        elif args.id is not None and args.id not in cfg.groups:
            cfg.peer(args.id)
        elif len(cfg.peers) == 1:
            args.id = cfg.peers[0].id
        from peer.net.tls import check_tls

        check_tls(cfg)  # a CA file or client key that cannot be used: one line now
    except PeerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.address is None and (entry := entry_of(cfg, args.id)) is not None:
        return supervise(argv, cfg.groups[entry])  # one peer a worker, each with this command line
    if args.check and args.host is not None:
        return check_host(cfg, args.host)
    if args.check:
        print(describe(cfg, args.id))
        from peer.commands.preflight import probe_lines

        for line in probe_lines(cfg.for_peer(args.id or cfg.peers[0].id), skip=set(static_refused(cfg))):
            print(f"warning: {line}")
        return _check_machine(cfg, args)
    if args.id is None:
        print(f"error: {cfg.path}: lists {len(cfg.peers)} peers; say which one this is with --id",
              file=sys.stderr)
        return EXIT_USAGE
    if args.progress <= 0:
        print("error: --progress: expected a number of seconds > 0", file=sys.stderr)
        return EXIT_USAGE
    if args.fresh and args.resume:
        print("error: --fresh and --resume: pass one of them, not both", file=sys.stderr)
        return EXIT_USAGE
    if args.fresh and args.retry_failed:
        print("error: --fresh and --retry-failed: --fresh deletes the results whose failed pages "
              "--retry-failed queues again; pass one of them", file=sys.stderr)
        return EXIT_USAGE
    if args.retry_failed:
        args.resume = True  # the failed pages are this crawl's: it goes on
    configure_logs(args.log_level, args.log_format, peer=args.id)
    # httpx logs every request at INFO; our results table already has them.
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))
    log = logging.getLogger("peer")
    if len(cfg.peers) > 1:
        # Who owns the seeds, said at the start as --check says it: an idle peer is no surprise.
        owners = seed_owners(cfg)
        if owners:
            log.info("seed hosts: %s", seed_hosts_text(owners))
    # What --check warned of, said again: a crawl started without --check
    # (a script, a service) must not be the only one left in the dark.
    for warning in config_warnings(cfg):
        log.warning("%s", warning)
    data_dir = Path(args.data_dir).resolve() if args.address else cfg.data_dir(args.id)
    from peer.core.run.layout import DataDir

    results, state_dir = DataDir(data_dir).results, DataDir(data_dir).state
    try:
        record, rejoining = _start_run(cfg, args, data_dir, results, state_dir)
    except _Refused as exc:
        if exc.line:
            print(exc.line, file=sys.stderr)
        return EXIT_USAGE
    except PeerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    import trio  # the edges only: --check and errors above need no event loop

    from peer.engine.crawler import Crawler

    before = _results_pages(results)
    cluster = len(cfg.peers) > 1 or args.address is not None
    crawler = Crawler(cfg, args.id, data_dir=data_dir, progress_interval=args.progress,
                      cluster=cluster, address=args.address, weight=args.weight, bind=args.bind,
                      rejoining=rejoining, retry_failed=args.retry_failed)
    try:
        summary = trio.run(_crawl, crawler, args.leave, not cluster, args.metrics_address)
    except BaseException as exc:  # a corrupt state file, a port in use...; user_error() decides
        lost = crawler.results.gone() if user_error(exc) is not None else None
        if lost is not None:
            # A write failed because the data_dir was deleted under the crawl:
            # that loss (exit 1), not a failing disk or a bad start.
            print(f"error: {lost} while the crawl ran; this run's results are lost "
                  f"(start again with --fresh)", file=sys.stderr)
            return EXIT_LOST
        failed = user_error(exc, (StorageError,))
        if failed is not None:
            # The disk, not the command line: its own status, one line, no traceback.
            print(f"error: storage failed, the crawl stopped: {failed}; free or repair the disk "
                  f"(or remount it writable), then start this peer again with the same command: "
                  f"it resumes", file=sys.stderr)
            return EXIT_STORAGE
        err = user_error(exc)
        if err is None:
            raise
        address = _listen_address(cfg, args)
        # zmq's bind error names the address; only then is the probe's answer the cause.
        bind_failed = cluster and isinstance(err, RingError) and address in str(err)
        why = bind_problem(address) if bind_failed else None
        if why is not None:
            if args.address:
                fix = f"pass another {'--bind' if args.bind else '--address'}"
            else:
                fix = f"correct its {'bind' if cfg.peer(args.id).bind else 'address'} in {cfg.path}"
            print(f"error: peer {args.id} cannot listen on {address}: {why[0]}; {why[1]}, or {fix}",
                  file=sys.stderr)
        else:
            print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    finished = time.time()
    if crawler.lost is not None:
        # Nothing to report: the rows are gone with the file.
        print(f"error: {crawler.lost} while the crawl ran; this run's results are lost "
              f"(start again with --fresh)", file=sys.stderr)
        return EXIT_LOST
    doc = _end_run(cfg, args.id, crawler, summary, record, state_dir, data_dir, finished)
    # The file's rows split by when they were fetched, so that the parts sum: rows
    # restored from the journal of a killed run are written during this one, but
    # were fetched by the earlier run (their fetched_at says so).
    split = _results_split(results, crawler.started)
    total, this_run = split if split is not None else (None, summary.requested)
    earlier = total - this_run if total is not None else (before or 0)
    if args.log_format == "json":
        # The summary is one record a log shipper keeps whole (its fields are
        # stats.json's, less the config), not lines that interleave with others'.
        fields = {k: v for k, v in doc.items() if k not in ("run_config", "peer")}  # the record has its peer
        fields.update(results=str(results), pages_in_all=total, stats_file=str(data_dir / STATS_FILE),
                      pages_earlier_runs=earlier if record.runs > 1 else 0)
        log.info("%s", summary.render().splitlines()[0], extra=event("summary", **fields))
    else:
        print(summary.render())
        if total is None:
            print(f"results: {results}")
        else:
            print(f"results: {results}: {total:,} pages in all, {this_run:,} fetched this run"
                  + (f", {earlier:,} by {record.runs - 1} earlier run(s)" if record.runs > 1 else ""))
        print(f"stats: {data_dir / STATS_FILE}")
    if not summary.requested and not total and _fetched_nothing(crawler, summary, cluster):
        # A crawl that ended without one request is the config's doing or the
        # seeds' reachability: say which, and fail, so a script notices.
        cause = _why_nothing(results, summary)
        if cluster and cause == _NOTHING_SAID:
            others = sorted({owner for _, owner in seed_owners(cfg)} - {args.id})
            if others:
                cause = (f"the ring ended without fetching anything; the seed hosts' owner(s) "
                         f"({', '.join(others)}) say why in their last line")
        print(f"error: {cause}", file=sys.stderr)
        return EXIT_NOTHING
    if crawler.exit_for_restart:
        # `ringcrawl-ring restart`: the service manager starts us again (ring.membership.restarts).
        return EXIT_RESTART
    return 0


def _fetched_nothing(crawler: Any, summary: Any, cluster: bool) -> bool:
    """Whether the crawl ran to its end without one request: alone, or in the whole ring."""
    if not cluster:
        return bool(summary.stop_reason == "frontier empty")
    peer = crawler.peer
    return bool(summary.stop_reason == "cluster done" and peer.in_ring and not peer.others_pages())


#: Exit status of a crawl that ended without fetching a page (alone, or the whole ring).
EXIT_NOTHING = 3

_NOTHING_SAID = "the crawl ended without fetching anything (see the warnings above)"

_NOTHING_BECAUSE = {
    "blocked": "the SSRF guard refused it: its host resolves to a private or loopback address; "
               "set crawl.allow_private = true to crawl such a site (an intranet, a local test web)",
    "dns": "its host name does not resolve; check the URL, or [dns] resolve / nameservers",
    "connect": "nothing answers at its host and port; check the URL and that the server is up",
    "timeout": "its server did not answer within crawl.timeout",
    "tls": "its TLS handshake failed",
    "proxy": "the proxy (crawl.proxy) cannot be reached or broke its protocol",
    "proxy_auth": "the proxy refused the credentials (crawl.proxy_auth_env, proxy_auth_file)",
    "proxy_refused": "the proxy could not or would not reach it",
    "tls_expired": "its certificate has expired (or is not yet valid)",
    "tls_hostname": "its certificate is for another host name",
    "tls_untrusted": "its certificate is signed by no CA we trust (self-signed, or a private CA: "
                     "crawl.ca_file names a CA bundle; a [[site]] block's verify = false skips the check)",
    "tls_client_cert": "its server asks for a client certificate (crawl.client_cert), or refused ours",
    "robots": "its robots.txt forbids it (crawl.obey_robots = false ignores robots.txt: only on "
              "sites you run)",
}


def _why_nothing(results: Path, summary: Any) -> str:
    """One line: why a crawl ended without a request, from its first seed's row."""
    if (summary.out_of_scope or sum(summary.excluded.values())) and not summary.pages:
        return ("the crawl ended without fetching anything: every seed is out of scope "
                "(crawl.allow_hosts, crawl.deny_hosts, crawl.max_depth, crawl.rules, "
                "crawl.skip_extensions)")
    row = None
    if results.exists():
        import duckdb

        try:
            with duckdb.connect(str(results), read_only=True) as con:
                row = con.execute("SELECT url, error FROM pages WHERE error IS NOT NULL "
                                  "ORDER BY fetched_at LIMIT 1").fetchone()
        except duckdb.Error:
            row = None
    if row is None:
        return _NOTHING_SAID
    url, error = row
    because = _NOTHING_BECAUSE.get(str(error), f"its request failed ({error})")
    return f"the crawl ended without fetching anything: {url}: {because}"


class _Refused(Exception):
    """The run must not start; ``line`` is what to print (empty: already said)."""

    def __init__(self, line: str = "") -> None:
        self.line = line
        super().__init__(line)


def _start_run(cfg: ClusterConfig, args: argparse.Namespace, data_dir: Path, results: Path,
               state_dir: Path) -> tuple[RunRecord, bool]:
    """Resume, start fresh, ask or refuse (peer/core/run/runs.py's rules): the record of this
    run, and whether it resumes a run that left the ring gracefully (and so rejoins it)."""
    log = logging.getLogger("peer")
    from peer.state.journal import PeerState, read_run, write_run

    if results.exists():
        # A running peer holds it: say that first, not what its state looks
        # like from here ("interrupted") or that we resume it.
        from peer.results.store import check_not_held

        try:
            check_not_held(results)
        except PeerError as exc:
            raise _Refused(f"error: {exc}; nothing changed") from None
    has_state = PeerState.exists(state_dir)
    if args.retry_failed and not has_state:
        raise _Refused(f"error: --retry-failed: {state_dir} holds no earlier crawl whose failed pages "
                       "to queue again; start the crawl without it")
    record = read_run(state_dir) if has_state else None
    fp = Fingerprint.of(cfg.crawl)
    tty = sys.stdin.isatty()
    d = decide(has_state=has_state, record=record, now=fp, resume=args.resume,
               fresh=args.fresh, tty=tty)
    changed = "; since then: " + ", ".join(d.changes) if d.changes else ""
    choice = d.choice
    confirmed = args.yes
    if choice is Choice.ASK:
        answer = _ask(f"{state_dir} holds a crawl: {d.why}{changed}.\n"
                      "[r]esume it, start [f]resh (deletes this peer's results and state), "
                      "or [q]uit? ")
        if answer not in ("r", "f"):
            raise _Refused("nothing changed (pass --resume or --fresh to choose without a question)")
        choice, confirmed = (Choice.RESUME, False) if answer == "r" else (Choice.FRESH, True)
    if choice is Choice.REFUSE:
        raise _Refused(f"error: {state_dir} holds an earlier crawl: {d.why}{changed}; pass --resume "
                       "to continue it, or --fresh to delete it and start over")
    now = time.time()
    if choice is Choice.FRESH:
        if results.exists() or has_state:
            if not confirmed and not _confirm(
                    f"delete {data_dir} (results and crawl state) and start over? [y/N] "):
                raise _Refused("nothing deleted")
            shutil.rmtree(data_dir)
        new = first_run(fp, now)
    elif choice is Choice.RESUME:
        log.info("resuming the crawl state in %s (--fresh to start over): %s", state_dir, d.why,
                 extra=event("resume", state_dir=str(state_dir), why=d.why))
        if d.changes:
            # Pages fetched before are in the Bloom filter and are not fetched
            # again, so the links they had that were out of scope then are
            # not found now: only new pages and seeds follow the new scope.
            log.warning("the scope changed since this crawl state was written: %s; pages fetched "
                        "before are not fetched again, so links they held that the old scope "
                        "dropped are not followed (--fresh recrawls with the new scope)",
                        ", ".join(d.changes), extra=event("scope_changed", changes=list(d.changes)))
        new = record.starting(fp, now) if record is not None else first_run(fp, now)
    else:
        # A peer killed after it made its results file and before its first
        # journal record left a file without rows: nothing to lose or resume.
        if _results_pages(results, requested=False) != 0:
            raise _Refused(f"error: {results} holds an earlier crawl but no crawl state to "
                           "resume; move it away, or pass --fresh to delete it and start over")
        new = first_run(fp, now)
    write_run(state_dir, new)
    return new, choice is Choice.RESUME and record is not None and record.left


def _end_run(cfg: ClusterConfig, peer_id: str, crawler, summary, record: RunRecord,  # type: ignore[no-untyped-def]
             state_dir: Path, data_dir: Path, finished: float) -> dict[str, Any]:
    """The run record's end and data_dir/stats.json, whose document it returns; a failure to
    write them is a warning."""
    import json

    from peer.core.crawl.limits import Cap
    from peer.state.fsio import write_atomic
    from peer.state.journal import write_run
    from peer.core.run.stats import crawl_stats, keep_earlier_runs, run_config

    out, received = crawler.peer.figures.forwarded()
    hits = {cap.value: n for cap, n in crawler.limits.hits.items() if isinstance(cap, Cap) and n}
    doc = crawl_stats(summary, peer=peer_id, ring=cfg.ring.name, run=record.runs,
                      started=crawler.started, finished=finished, cap_hits=hits,
                      forwarded_out=out, forwarded_in=received, handoffs_in=crawler.handoffs_in,
                      config=run_config(cfg))
    try:
        previous = json.loads((data_dir / STATS_FILE).read_bytes())
    except (OSError, ValueError):
        previous = None  # none yet (a first run), or unreadable: this run's figures alone
    doc = keep_earlier_runs(doc, previous)
    try:
        write_run(state_dir, record.ending(finished, summary.stop_reason, summary.requested))
        write_atomic(data_dir / STATS_FILE, (json.dumps(doc, indent=1).encode() + b"\n",))
    except PeerError as exc:
        logging.getLogger("peer").warning("%s", exc)
    except OSError as exc:
        logging.getLogger("peer").warning("%s: cannot write (%s)", data_dir / STATS_FILE, exc.strerror or exc)
    return doc


def _results_pages(results: Path, *, requested: bool = True) -> int | None:
    """Fetched pages in a results file (rows whose request was made; with
    ``requested=False`` rows of any kind), or None if unreadable.

    A row without a request (robots exclusion, a host given up) has neither a
    status nor a measured time: ``status IS NULL AND elapsed_ms = 0``.
    """
    if not results.exists():
        return 0
    import duckdb

    where = " WHERE NOT (status IS NULL AND coalesce(elapsed_ms, 0) = 0)" if requested else ""
    try:
        with duckdb.connect(str(results), read_only=True) as con:
            row = con.execute("SELECT count(*) FROM pages" + where).fetchone()
    except duckdb.Error:
        return None
    return int(row[0]) if row else None


def _results_split(results: Path, started: float) -> tuple[int, int] | None:
    """(fetched pages in the results file, those of them fetched since ``started``, epoch
    seconds), or None if unreadable: the rest were fetched by earlier runs, so the parts sum.

    A page fetched again this run (in flight at a kill -9) counts once, as this run's.
    """
    if not results.exists():
        return 0, 0
    import duckdb

    # fetched_at is naive UTC (peer.results.store); epoch() reads it as such.
    try:
        with duckdb.connect(str(results), read_only=True) as con:
            row = con.execute("SELECT count(*), count(*) FILTER (WHERE epoch(fetched_at) >= ?) FROM pages"
                              " WHERE NOT (status IS NULL AND coalesce(elapsed_ms, 0) = 0)",
                              [started]).fetchone()
    except duckdb.Error:
        return None
    return (int(row[0]), int(row[1])) if row else None


def _check_join(cfg: ClusterConfig, args: argparse.Namespace) -> None:
    from peer.core.config.cluster import parse_address
    from peer.errors import ConfigError

    if args.id is None or args.data_dir is None:
        raise ConfigError("--address", "", "a joining peer needs --id, --address and --data-dir")
    if any(p.id == args.id for p in cfg.peers):
        raise ConfigError("--id", "", f"{args.id!r} is listed in {cfg.path}; --address is for peers that are not")
    try:
        parse_address(args.address)
    except ValueError as exc:
        raise ConfigError("--address", "", str(exc)) from None
    if args.bind is not None:
        try:
            parse_address(args.bind, wildcard=True)
        except ValueError as exc:
            raise ConfigError("--bind", "", str(exc)) from None
    from ring.membership.protocol import MAX_WEIGHT

    if not 0 < args.weight <= MAX_WEIGHT:
        raise ConfigError("--weight", "", f"expected a number > 0 and <= {MAX_WEIGHT:g}")
    if args.metrics_address is not None:
        from peer.core.config.metrics import metrics_listen

        try:
            metrics_listen(args.metrics_address)
        except ValueError as exc:
            raise ConfigError("--metrics-address", "", str(exc)) from None


def _listen_address(cfg: ClusterConfig, args: argparse.Namespace) -> str:
    """Where this peer's ring socket listens: a joiner's --bind or --address, a listed peer's bind."""
    from peer.commands.machine import ring_bind_address

    return ring_bind_address(cfg, args.id, joining=args.address, bind=args.bind)


def _check_machine(cfg: ClusterConfig, args: argparse.Namespace) -> int:
    """``--check``'s last part: can peer ``--id`` start on this machine (peer.commands.machine)?"""
    from peer.commands.machine import local_of, machine_problems

    if args.id is None:
        print("   machine: not checked (pass --id to check that this machine can run that peer)")
        return 0
    local = local_of(cfg, args.id, joining=args.address, bind=args.bind, data_dir=args.data_dir,
                     metrics=args.metrics_address)
    problems = machine_problems(cfg, local)
    for line in problems:
        print(f"error: {line}", file=sys.stderr)
    if problems:
        return EXIT_USAGE
    checked = ["its secret key"] if local.keys_dir is not None else []
    checked.append(f"data_dir {local.data_dir} writable")
    checked.extend(f"{what} {a} free" for what, a in (("ring address", local.ring),
                                                      ("metrics_address", local.metrics)) if a)
    print(f"   machine: ok for {args.id}: " + ", ".join(checked))
    return 0


def _ask(question: str) -> str:
    """The first letter of the answer on the terminal, lower-cased ("" at end of input)."""
    try:
        return input(question).strip().lower()[:1]
    except EOFError:
        return ""


def _confirm(question: str) -> bool:
    if not sys.stdin.isatty():
        print(f"{question.strip()} -- no terminal to ask; pass --yes", file=sys.stderr)
        return False
    return input(question).strip().lower() in ("y", "yes")


async def _crawl(crawler, leave_on_term: bool = False, solo: bool = False,  # type: ignore[no-untyped-def]
                 metrics_address: str | None = None):
    import trio

    from peer.engine.observe import start_observers

    async def on_signals() -> None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            stops = 0
            async for signum in signals:
                stops += 1
                if stops == 1 and leave_on_term and signum == signal.SIGTERM:
                    logging.getLogger("peer").warning(
                        "SIGTERM: leaving the ring; handing this peer's hosts over "
                        "(signal again to stop without waiting)")
                    crawler.leave()
                elif stops == 1 and not solo:
                    # A stop without --leave says it will be back (ring.membership.restarts):
                    # the others keep its hosts for it, unprobed, for ring.restart_hold.
                    logging.getLogger("peer").warning(
                        "%s: stopping for a planned restart; in-flight fetches get a few seconds, "
                        "results are flushed, and the ring keeps this peer's hosts for it for %gs "
                        "(ring.restart_hold; signal again to cancel the fetches now)",
                        signal.Signals(signum).name, crawler.cfg.ring.restart_hold)
                    crawler.restart()
                elif stops == 1 or (leave_on_term and stops == 2):
                    logging.getLogger("peer").warning(
                        "%s: stopping; in-flight fetches get a few seconds, results are flushed "
                        "(signal again to cancel them now)", signal.Signals(signum).name)
                    crawler.stop()
                else:
                    crawler.cancel_in_flight()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(on_signals)
        # metrics_address (a joiner's --metrics-address); a solo peer's `ring status`
        await start_observers(crawler, nursery, solo=solo, metrics_address=metrics_address)
        summary = await crawler.run()
        nursery.cancel_scope.cancel()
    return summary
