"""``python -m ring``: cluster-level commands (formatting and the command line only).

``table`` prints the ring that cluster.toml describes: each peer's share of
the hash space and the owner of the seeds' hosts, so an operator can check a
ring (weights, a new peer) before starting it. It reads only the file.
``status``, ``leave``, ``forget`` and ``voter`` ask the running ring through
``ring.tools.client``, which returns typed rows; this module only formats them
(``status``'s table in ``ring.tools.statustable``, the voters in ``ring.tools.voters``).

``voter add ID`` / ``voter retire ID`` change the lease's voters
(``ring.membership.voters``): a joiner becomes a voter, or a voter a learner,
without editing any cluster.toml. The request goes to the ring's steward
(its lowest live id), which refuses it unless it holds its lease; the
command then waits until every live member holds the settled record, prints
how many failures the ring survives, and exits 0, or 1 with the reason.

``set KEY=VALUE...``, ``pause`` and ``resume`` steer a running ring
(``ring.membership.epochs``): the steward makes the next config epoch of the
ring's live settings, only while it holds its lease; the command waits until
every live member runs it, prints the epoch and exits 0; 1 when refused or not
taken by every live member in time; 2 for a key that cannot change live (the
steward checks it with the crawl's own parsers, through ``ring.crawlport.SettingsPort``).

``forget`` is for a ring that lost its majority for good (``ring.membership.lease``:
a peer starts requests only while a majority of its quorum vouches for its
ring, and a dead member stays in the quorum): it asks every peer to drop a
dead member, prints each peer's answer, and exits 0 only when every peer
that answered forgot it or did not know it.

``status`` prints each member's figures with a totals row and the units
(``--watch`` redraws them in place), and each member's own view of its lease
and ring: members that agree on the ring show one fingerprint; ``dashboard`` serves them as a live page
(:mod:`ring.tools.dashboard`). Both poll through :func:`status_source`: a
ring of one whose peer has no address (``solo.toml``) is asked where that
peer recorded one in its data_dir (:mod:`ring.tools.statuspoll`), and when
it is not running they say so in one line naming the data_dir and the
command that starts it: ``status`` exits 1, as when no peer of a ring
answers; ``dashboard`` serves its page all the same (it may be opened before
the crawl), which says so until the peer answers.

``ring`` never imports ``peer``. cluster.toml has one parser,
``peer.core.config.cluster``, and the solo peer's record one reader,
``peer.state.statusaddress``, so both come in through a :class:`ConfigSource`
that ``ring/__main__.py`` (the process entry point, the one place the two
packages meet) builds from peer's. A user's mistake is one line and exit
status 2, also when trio hands it over wrapped in an exception group.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ring.tools.client import (Contact, ForgetResult, HandshakeRefused, LeaveOutcome, LeaveResult, SettingsResult,
                               VoterResult, client_keys, request_forget, request_leave, request_settings,
                               request_voter)
from ring.tools.client import RestartOutcome, RestartResult, request_restart
from ring.tools.epochs import format_settings, settings_summary
from ring.tools.seedadd import SeedAddRun, SeedInputError
from ring.tools.statuspoll import RecordedAddress, SoloPeer, StatusPoll
from ring.tools.logs import FORMATS
from ring.tools.statustable import format_status, hhmmss
from ring.tools.voters import format_voter, voters_summary
from ring.io.curve import resolve_keys_dir
from ring.commandnames import Command, command as command_name
from ring.errors import user_error
from ring.hashring import HashRing
from ring.messages import ForgetOutcome, SettingsAction, VoterAction

__all__ = ["ConfigSource", "RingFile", "format_forget", "format_voter", "voters_summary",
           "main", "ownership_table", "ring_of", "seeds_of", "solo_peer", "status_source", "tool_keys"]


class _RingSection(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def vnodes(self) -> int: ...
    @property
    def curve_keys(self) -> str: ...


class _PeerEntry(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def address(self) -> str: ...
    @property
    def weight(self) -> float: ...


class _CrawlSection(Protocol):
    @property
    def seeds(self) -> tuple[str, ...]: ...
    @property
    def seed_add_batch(self) -> int: ...
    @property
    def seed_add_wait(self) -> float: ...


class RingFile(Protocol):
    """What the ring's commands read of a parsed cluster.toml (``peer.core.config.cluster.ClusterConfig``)."""

    @property
    def path(self) -> Path: ...

    @property
    def ring(self) -> _RingSection: ...

    @property
    def peers(self) -> Sequence[_PeerEntry]: ...

    @property
    def crawl(self) -> _CrawlSection: ...

    def data_dir(self, peer_id: str) -> Path:
        """A listed peer's data_dir, found as the peer itself finds it."""
        ...


@dataclass(frozen=True, slots=True)
class ConfigSource:
    """How the commands get a cluster.toml: its parser, the host key of a URL, the user's errors.

    ``user_error(exc)`` is the user's mistake ``exc`` is or carries (a
    ``peer.errors.user_error``), or None for a bug, which is re-raised.
    ``status_address(data_dir)`` is the address a solo peer without one
    recorded there while it runs, or None (not running).
    """

    load: Callable[[str], RingFile]
    host_key: Callable[[str], str]
    user_error: Callable[[BaseException], BaseException | None]
    status_address: Callable[[Path], RecordedAddress | None]


def ring_of(cfg: RingFile) -> HashRing:
    """The ring of the initial members listed in cluster.toml."""
    return HashRing.of_members(cfg.peers, cfg.ring.vnodes)


def solo_peer(cfg: RingFile) -> _PeerEntry | None:
    """The peer of a ring of one that has no address (it records one in its data_dir), else None."""
    return cfg.peers[0] if len(cfg.peers) == 1 and not cfg.peers[0].address else None


def seeds_of(cfg: RingFile) -> tuple[Contact, ...]:
    """The ``[[peer]]`` entries, as ``ring.tools.client`` asks them."""
    return tuple(Contact(p.id, p.address) for p in cfg.peers)


def tool_keys(cfg: RingFile, key_id: str = "ops") -> Any:
    """The tool's Curve pair when ``[ring] curve_keys`` is set, else None (``ring.tools.client.client_keys``)."""
    return client_keys(resolve_keys_dir(cfg.ring.curve_keys, cfg.path), key_id, cfg.path)


def ownership_table(cfg: RingFile, sample: int = 10_000, hosts: Sequence[str] = (),
                    host_key: Callable[[str], str] = str.lower) -> str:
    """The text that ``python -m ring table`` prints; ``host_key`` places a seed URL."""
    ring = ring_of(cfg)
    shares = ring.shares()
    counts: Counter[str] = Counter(
        ring.owner(f"h{i}.sample.invalid") for i in range(sample)
    )
    out = [f"ring {cfg.ring.name!r}: {len(ring)} peers, {cfg.ring.vnodes} vnodes per unit of weight"]
    head = f"{'id':<10} {'address':<26} {'weight':>6} {'share':>7}"
    if sample:
        head += f" {'of ' + format(sample, ',') + ' hosts':>16}"
    out += ["", head]
    for spec in cfg.peers:
        row = f"{spec.id:<10} {spec.address:<26} {spec.weight:>6g} {shares[spec.id]:>7.1%}"
        if sample:
            row += f" {counts[spec.id]:>16,}"
        out.append(row)
    if sample:
        total = sum(ring.peers.values())
        worst = max(counts[p] / (sample * w / total) for p, w in ring.peers.items())
        out.append(f"most loaded peer: {worst:.3f} x its fair share (by weight) of the sample")
    wanted = list(dict.fromkeys([*(host_key(s) for s in cfg.crawl.seeds), *(h.lower() for h in hosts)]))
    if wanted:
        out += ["", f"{'host':<40} owner"]
        out += [f"{h:<40} {ring.owner(h)}" for h in wanted]
    return "\n".join(out)


def _named(cmd: Command) -> str:
    """How the user types ``cmd``: as they started this command (ring.commandnames)."""
    return command_name(cmd, sys.argv[0])


def _parser() -> argparse.ArgumentParser:
    # Named as the user started it: ringcrawl-ring once installed, python -m ring in a checkout.
    p = argparse.ArgumentParser(prog=_named(Command.RING),
                                description="Cluster-level commands of ringcrawl.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    t = sub.add_parser("table", help="print the ring's shares and who owns which host",
                       description="Print each peer's share of the ring described by cluster.toml, "
                                   "and the owner of the seeds' hosts and of any --host given.")
    t.add_argument("--ring", metavar="PATH", required=True, help="the cluster.toml (required)")
    t.add_argument("--sample", metavar="N", type=int, default=10_000,
                   help="also count how many of N synthetic hosts each peer owns (default 10000; 0: skip)")
    t.add_argument("--host", metavar="HOST", action="append", default=[],
                   help="also show the owner of HOST (host[:port]); repeatable")
    st = sub.add_parser("status", help="ask the running ring for each member's state and figures",
                        description="Ask any reachable peer (each [[peer]] of cluster.toml in turn) for "
                                    "the member list, then each live member for its figures and its own "
                                    "view of its lease (held, or paused: grace, no majority) and of the "
                                    "ring (version and fingerprint: members that agree show one). Exits 1 "
                                    "when no peer answers, 2 when the ring refuses this tool's key "
                                    "(--key-id).")
    st.add_argument("--ring", metavar="PATH", required=True, help="the cluster.toml (required)")
    st.add_argument("--json", action="store_true", help="print JSON: {\"members\": [...]}")
    st.add_argument("--timeout", metavar="SECONDS", type=float, default=1.5,
                    help="seconds to wait for each peer (default 1.5)")
    st.add_argument("--watch", metavar="SECONDS", type=float, nargs="?", const=2.0,
                    help="ask again every SECONDS (default 2) and redraw the table in place, "
                         "until Ctrl-C; with --json, one JSON line a round")
    st.add_argument("--count", metavar="N", type=int, default=0,
                    help="with --watch: stop after N rounds (default 0: until Ctrl-C)")
    db = sub.add_parser("dashboard", help="serve a live HTML page of the running ring",
                        description="Poll the ring's status (as `ring status` does) and serve a live "
                                    "page: members, their state and share, totals, rates over time, "
                                    "errors by kind and the busiest hosts against their setpoint. "
                                    "Prints its address; runs until Ctrl-C.")
    db.add_argument("--ring", metavar="PATH", required=True, help="the cluster.toml (required)")
    db.add_argument("--host", metavar="ADDR", default="127.0.0.1",
                    help="address to listen on (default 127.0.0.1: this machine only); any other "
                         "needs --token-file or --token-env")
    db.add_argument("--token-file", metavar="PATH",
                    help="a file whose first line is the token every request must carry "
                         "(Authorization: Bearer, or the cookie of the page's login form)")
    db.add_argument("--token-env", metavar="NAME",
                    help="the environment variable holding that token, instead of a file")
    db.add_argument("--port", metavar="P", type=int, default=8765,
                    help="port to listen on (default 8765; 0: any free port)")
    db.add_argument("--interval", metavar="SECONDS", type=float, default=2.0,
                    help="seconds between polls of the ring (default 2)")
    db.add_argument("--timeout", metavar="SECONDS", type=float, default=1.5,
                    help="seconds to wait for each peer (default 1.5)")
    db.add_argument("--log-format", metavar="FORMAT", default="text", choices=FORMATS,
                    help="how its log (on stderr: a refused Curve handshake, a poll that failed) "
                         "is written: text (default, UTC stamps) or json (one object a line), "
                         "as python -m peer's")
    lv = sub.add_parser("leave", help="make a peer leave the ring gracefully",
                        description="Ask peer --id to leave: it stops fetching, hands its queued URLs "
                                    "and the URLs it fetched of its hosts to their new owners, waits for "
                                    "their acks and exits 0. Waits for it to go; exits 0 when it left, "
                                    "1 otherwise (Ctrl-C ends the wait, not the leave). Same as SIGTERM to a "
                                    "peer started with --leave.")
    lv.add_argument("--ring", metavar="PATH", required=True, help="the cluster.toml (required)")
    lv.add_argument("--id", metavar="ID", required=True, help="the peer that leaves (required)")
    lv.add_argument("--timeout", metavar="SECONDS", type=float, default=120.0,
                    help="how long to wait for it to finish handing over (default 120)")
    rs = sub.add_parser("restart", help="make a peer stop for a planned restart, keeping its hosts",
                        description="Ask peer --id to stop for a planned restart (an upgrade, a new "
                                    "config): it stops fetching, flushes its results, tells every live "
                                    "member it will be back, and exits 75 for its service manager to "
                                    "start it again (systemd's ringcrawl@.service and the StatefulSet "
                                    "do). Meanwhile its hosts stay its own, with no ring change: they "
                                    "wait for it, and every other host goes on, for ring.restart_hold "
                                    "seconds; not back by then, it is dead as a silent peer is. Exits 0 "
                                    "once the ring holds it restarting (--back: once its new process "
                                    "answers), 1 otherwise (Ctrl-C ends the wait, not the restart). "
                                    "A peer that cannot announce its own restart (the previous release, "
                                    "wire version 3: `ring status --json` says its wire_version; or any "
                                    "peer with --hold, e.g. one whose machine is about to be rebooted) is "
                                    "held at the operator's word instead: every other live peer of this "
                                    "release is asked to hold it (not probe it, and answer the older "
                                    "peers' probes of it for it) for ring.restart_hold seconds, so no ring "
                                    "changes anywhere; the command does not stop it: once it says held, "
                                    "stop the peer (SIGTERM, or the reboot) and start it again, of either "
                                    "release, on its data_dir, before the hold runs out. Exits 0 when "
                                    "every peer asked holds it, 1 otherwise (each peer's answer printed).")
    rs.add_argument("--ring", metavar="PATH", required=True, help="the cluster.toml (required)")
    rs.add_argument("--id", metavar="ID", required=True, help="the peer that restarts (required)")
    rs.add_argument("--back", action="store_true",
                    help="wait until its new process answers, not only until it stopped (or is held)")
    rs.add_argument("--hold", action="store_true",
                    help="hold it at the operator's word without asking it to stop, whatever its release "
                         "(automatic for a peer of wire version 3; for one held already, asks again, the "
                         "hold then running from now); then stop it and start it again")
    rs.add_argument("--timeout", metavar="SECONDS", type=float, default=60.0,
                    help="how long to wait (default 60)")
    fg = sub.add_parser("forget", help="make every peer drop a dead member from its view and quorum",
                        description="A peer starts requests only while a majority of its quorum (every "
                                    "peer listed in cluster.toml that has not left, dead ones included) vouches for its ring, "
                                    "so a ring that lost its majority for good (two of three peers dead, "
                                    "one of two) pauses until the dead are forgotten. Asks every peer of "
                                    "cluster.toml, and the live members they list, to drop --id; a peer "
                                    "refuses if its view holds it alive or suspect, or if it is that peer. "
                                    "Prints each peer's answer; exits 0 when every peer that answered "
                                    "forgot it or did not know it, 1 otherwise. A new process of the "
                                    "forgotten peer joins again.")
    fg.add_argument("--ring", metavar="PATH", required=True, help="the cluster.toml (required)")
    fg.add_argument("--id", metavar="ID", required=True, help="the dead member to forget (required)")
    fg.add_argument("--timeout", metavar="SECONDS", type=float, default=2.0,
                    help="seconds to wait for each peer's answer (default 2)")
    vt = sub.add_parser("voter", help="make a member a voter of the ring's leases, or retire a voter",
                        description="A peer starts requests only while a majority of the ring's voters "
                                    "vouches for its ring. The voters start as cluster.toml's [[peer]] "
                                    "list; a peer that joined later does not vote until it is added. "
                                    "Asks the ring's steward (its lowest live id) to add or retire ID, "
                                    "one member a change (two steps: joint, then settled), waits until "
                                    "every live member holds the new voters and prints how many voter "
                                    "failures the ring survives. Exits 0 when the change settled (or "
                                    "there was nothing to change), 1 when it was refused or did not "
                                    "settle in time. No cluster.toml needs editing; each peer keeps "
                                    "the voters in its data_dir.")
    vt.add_argument("action", choices=[a.value for a in VoterAction],
                    help="add: make a live member a voter; retire: make a voter a learner")
    vt.add_argument("id", metavar="ID", help="the member")
    vt.add_argument("--ring", metavar="PATH", required=True, help="the cluster.toml (required)")
    vt.add_argument("--timeout", metavar="SECONDS", type=float, default=60.0,
                    help="how long to wait for the change to settle (default 60)")
    sa = _seed_parser(sub)
    # Steering a running ring (ring.membership.epochs): one block, apart from the others.
    steer = []
    for action, words in ((SettingsAction.SET, "change live settings of the running ring"),
                          (SettingsAction.PAUSE, "pause the running ring: no request starts anywhere"),
                          (SettingsAction.RESUME, "resume a paused ring")):
        sp = sub.add_parser(action.value, help=words, description=(
            f"{words[0].upper()}{words[1:]}. Asks the ring's steward (its lowest live id) for the next "
            "config epoch of the ring's settings, then waits until every live member runs it "
            "(requests in flight end; none starts against the new settings' rules), prints the "
            "epoch and exits 0; 1 when refused, or not every live member took it in --timeout; 2 "
            "for a key that cannot change live (named). The ring keeps it across restarts "
            "(each peer's data_dir); see docs/operations.md, \"Steering a running ring\"."))
        if action is SettingsAction.SET:
            sp.add_argument("assignments", nargs="+", metavar="KEY=VALUE",
                            help="a live key and its value as in cluster.toml: politeness.rate=30, "
                                 "crawl.max_pages=500, crawl.rules='[\"exclude:*/private/*\"]', "
                                 "site[0].rate=6 (several: one change)")
        sp.add_argument("--ring", metavar="PATH", required=True, help="the cluster.toml (required)")
        sp.add_argument("--timeout", metavar="SECONDS", type=float, default=30.0,
                        help="how long to wait for every live member to run the new epoch (default 30)")
        steer.append(sp)
    for sp in (st, db, lv, fg, vt, sa, *steer):
        # As scripts/adopt.py's --key-id: the same flag, the same meaning.
        sp.add_argument("--key-id", default="ops", metavar="ID",
                        help="with [ring] curve_keys: the key pair this tool uses (default ops)")
    return p


def _seed_parser(sub: Any) -> argparse.ArgumentParser:
    """``seed add``'s parser (``ring.tools.seedadd``)."""
    sd = sub.add_parser("seed", help="add seed URLs to the running ring",
                        description="Seeds for a running ring: `seed add`.")
    actions = sd.add_subparsers(dest="seed_command", required=True, metavar="ACTION")
    sa: argparse.ArgumentParser = actions.add_parser(
        "add", help="send seed URLs to the running ring, each to its host's owner",
        description="Send URLs to a live peer (each [[peer]] of cluster.toml in turn, the next when one "
                    "does not answer), in batches of crawl.seed_add_batch lines. The peer judges each line as "
                    "a crawl.seeds_file line (scope, URL rules, caps), routes each URL to its host's owner "
                    "and answers with the count of each outcome once the batch is on its disk and the "
                    "owners acked it (or crawl.seed_add_wait later). Prints what the ring took: routed "
                    "(queued, forwarded) and refused by cause. Exits 0 when the ring took every line, 1 when "
                    "it did not (no peer answered: the lines before were taken, the rest not sent; a run "
                    "resumes nothing), 2 for a user's mistake (no URL, an unreadable file, a key the ring "
                    "refuses). --file reads plain or gzip, one URL a line, as a stream.")
    sa.add_argument("urls", nargs="*", metavar="URL", help="URLs to add")
    sa.add_argument("--file", metavar="F", help="a file of URLs, one a line, plain or gzip (-: standard input), "
                                                "instead of URLs")
    sa.add_argument("--ring", metavar="PATH", required=True, help="the cluster.toml (required)")
    sa.add_argument("--timeout", metavar="SECONDS", type=float, default=None,
                    help="seconds to wait for a peer's answer to one batch before asking the next "
                         "(default: crawl.seed_add_wait + 5)")
    sa.add_argument("--window", metavar="N", type=int, default=None,
                    help="batches in flight at once, 1 to 64 (default 8); a peer answers busy beyond its "
                         "crawl.seed_add_waiting batches waiting for acks (64 by default)")
    sa.add_argument("--busy-for", metavar="SECONDS", type=float, default=None,
                    help="seconds to keep asking a busy peer again for one batch, every 0.5 s, before "
                         "asking the next peer, which gets as long; when every peer stays busy the run stops, "
                         "exit 1 (default 60, at most 3600)")
    return sa


async def _seed_add(cfg: RingFile, args: argparse.Namespace) -> SeedAddRun:
    import time

    from ring.tools.seedadd import batches, send_batches

    last = [time.monotonic()]

    def progress(run: SeedAddRun) -> None:
        now = time.monotonic()
        if args.file and now - last[0] >= 2.0:
            last[0] = now
            print(f"seed add: {run.taken_lines:,} lines taken, {run.routed:,} routed, "
                  f"{sum(run.refused.values()):,} refused", file=sys.stderr, flush=True)

    contacts = [c for c in seeds_of(cfg) if c.address]
    solo = solo_peer(cfg)
    if solo is not None:
        # A ring of one without an address answers where it recorded one (ring.tools.statuspoll).
        data_dir = cfg.data_dir(solo.id)
        recorded = args.recorded(data_dir)
        if recorded is None or recorded.gone():
            raise _NoAnswer(f"peer {solo.id} is not running (no status address recorded in {data_dir}); "
                            f"start it with: {_named(Command.PEER)} --ring {shlex.quote(str(args.ring))}")
        contacts = [Contact(solo.id, recorded.address)]
    return await send_batches(cfg.ring.name, contacts,
                              batches(args.lines, cfg.crawl.seed_add_batch), args.timeout,
                              tool_keys(cfg, args.key_id), progress, args.run, args.window, args.busy_for)


def _seed_main(cfg: RingFile, args: argparse.Namespace) -> int:
    """``seed add``: the exit status of module docstring's terms (``ring.tools.seedadd``)."""
    import trio

    from ring.tools.seedadd import SeedAddRun, format_run, open_lines

    if bool(args.urls) == bool(args.file):
        print("error: give URLs or --file F (one of them)", file=sys.stderr)
        return 2
    if args.timeout is None:
        args.timeout = cfg.crawl.seed_add_wait + 5.0
    problem = _check_seed_add(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    problem = _check_numbers(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    args.lines = [u.encode() for u in args.urls] if args.urls else None
    if args.file:
        args.lines = open_lines(args.file)  # SeedInputError: the user's, exit 2 (main)
    args.run = run = SeedAddRun()
    try:
        trio.run(_until_ctrl_c, _seed_add, cfg, args)
    except BaseException as exc:
        if user_error(exc, (_Interrupted, KeyboardInterrupt)) is None:
            raise
        print(f"\ninterrupted: the ring took {run.taken_lines:,} lines; the rest were not sent, or not "
              "answered (a run resumes nothing)", file=sys.stderr)
        print(format_run(run, cfg.ring.name))
        return 1
    print(format_run(run, cfg.ring.name))
    if run.stopped:
        print(f"error: {run.stopped}; the ring took {run.taken_lines:,} lines, not every line from line "
              f"{run.untaken_from:,} on (a run resumes nothing: tail -n +{run.untaken_from} sends them again)",
              file=sys.stderr)
        return 2 if run.bad_input else 1
    return 0


_FORGET_WORDS = {
    ForgetOutcome.FORGOTTEN: "forgotten: dropped from its view and its quorum",
    ForgetOutcome.NOT_KNOWN: "not known: not in its view (never heard of, or forgotten already)",
}


def format_forget(target: str, results: Sequence[ForgetResult]) -> tuple[str, bool]:
    """``ring forget``'s lines, one a peer and a last one; and whether it succeeded (exit 0).

    It succeeded when some peer answered and every peer that answered forgot
    ``target`` or did not know it.
    """
    out = []
    for r in results:
        if r.outcome is None and r.refused:
            text = r.error  # it would not hear this tool: not the silence of a dead peer
        elif r.outcome is None:
            why = f"no answer ({r.error})" if r.error else "no answer"
            if r.peer == target:
                why += ": as expected of a dead peer"
            text = why
        elif r.outcome is ForgetOutcome.SELF:
            text = f"refused: this is {target}, and it is running"
        elif r.outcome in (ForgetOutcome.ALIVE, ForgetOutcome.SUSPECT):
            text = (f"refused: {target} is {r.outcome.value} in its view; forget only a peer that is "
                    "gone (its process ended), once the ring holds it dead")
        else:
            text = _FORGET_WORDS[r.outcome]
        out.append(f"{r.peer:<10} {text}")
    answered = [r for r in results if r.outcome is not None]
    refused = [r for r in answered if r.outcome not in _FORGET_WORDS]
    forgot = [r for r in answered if r.outcome is ForgetOutcome.FORGOTTEN]
    if not answered and any(r.refused for r in results):
        out.append(f"no peer heard this tool: {target} is not forgotten; the ring refuses this key")
    elif not answered:
        out.append(f"no peer answered: {target} is not forgotten; are the peers running?")
    elif refused:
        out.append(f"{target} is not forgotten everywhere: {len(refused)} of {len(answered)} peers that "
                   "answered refused")
    else:
        out.append(f"{target} is out of every view that answered ({len(forgot)} forgot it, "
                   f"{len(answered) - len(forgot)} did not know it)")
    return "\n".join(out), bool(answered) and not refused


def _dashboard_token(args: argparse.Namespace) -> str | None:
    """Read the dashboard's token into ``args.token``; what is wrong with it, or None."""
    from ring.tools.dashboard import TokenProblem, read_token

    try:
        args.token = read_token(args.host, args.token_file, args.token_env)
    except TokenProblem as exc:
        return str(exc)
    return None


def _check_seed_add(args: argparse.Namespace) -> str | None:
    """``seed add``'s own numbers, their defaults filled in (``ring.tools.seedadd``)."""
    from ring.tools.seedadd import BUSY_FOR, MAX_WINDOW, WINDOW

    args.window = WINDOW if args.window is None else args.window
    args.busy_for = BUSY_FOR if args.busy_for is None else args.busy_for
    if not 1 <= args.window <= MAX_WINDOW:
        return f"--window: expected an integer from 1 to {MAX_WINDOW}"
    if not 0 <= args.busy_for <= 3600:  # a bound in time, as every request loop has
        return "--busy-for: expected a number of seconds from 0 to 3600"
    return None


def _check_numbers(args: argparse.Namespace) -> str | None:
    if not args.timeout > 0:
        return "--timeout: expected a number of seconds > 0"
    if getattr(args, "watch", None) is not None and not args.watch > 0:
        return "--watch: expected a number of seconds > 0"
    if getattr(args, "count", 0) < 0:
        return "--count: expected an integer >= 0"
    if getattr(args, "interval", 1.0) <= 0:
        return "--interval: expected a number of seconds > 0"
    if not 0 <= getattr(args, "port", 0) <= 65535:
        return "--port: expected a port number from 0 to 65535"
    return None


def status_source(cfg: RingFile, timeout: float, recorded: Callable[[Path], RecordedAddress | None],
                  ring_path: str | Path = "cluster.toml", key_id: str = "ops") -> StatusPoll:
    """The one poll ``status`` (also ``--watch``) and the dashboard use: cluster.toml's seeds,
    or where its solo peer recorded its address (:mod:`ring.tools.statuspoll`)."""
    peer = solo_peer(cfg)
    solo = None if peer is None else SoloPeer(peer.id, cfg.data_dir(peer.id),
                                               f"{_named(Command.PEER)} --ring {shlex.quote(str(ring_path))}",
                                               recorded)
    return StatusPoll(cfg.ring.name, seeds_of(cfg), timeout, tool_keys(cfg, key_id), solo)


def _no_answer(cfg: RingFile, poll: StatusPoll) -> str:
    if poll.silence:
        return poll.silence
    # Every peer asked has an address: a ring of several needs them (peer.core.config.cluster),
    # and a solo peer without one is asked where it recorded one (its poll says why not).
    addrs = ", ".join(p.address for p in cfg.peers if p.address)
    return f"no peer of ring {cfg.ring.name!r} answered at {addrs}; are the peers running?"


class _NoAnswer(Exception):
    """No peer answered ``ring status``: exit 1 (a fact about the ring, not a mistake)."""


def _poll(cfg: RingFile, args: argparse.Namespace) -> StatusPoll:
    return status_source(cfg, args.timeout, args.recorded, args.ring, args.key_id)


async def _status(cfg: RingFile, args: argparse.Namespace) -> int:
    import json
    import time

    import trio

    poll = _poll(cfg, args)
    if args.watch is None:
        rows = await poll()
        if rows is None and poll.refused:
            raise HandshakeRefused(poll.silence or "refused")  # the key is the user's to fix: exit 2
        if rows is None:
            raise _NoAnswer(_no_answer(cfg, poll))
        if args.json:
            print(json.dumps({"ring": cfg.ring.name, "members": [r.as_json() for r in rows],
                              "voters": voters_summary(rows), "settings": settings_summary(rows)}, indent=2))
        else:
            print(format_status(rows))
        return 0
    # In place on a terminal (cursor home, clear to the end: ECMA-48 CUP and
    # ED); into a pipe or a file, one table after another with its time.
    tty = sys.stdout.isatty()
    rounds = 0
    while True:
        started = trio.current_time()
        rows = await poll()
        stamp = time.strftime("%H:%M:%S")
        if args.json:
            members = [r.as_json() for r in rows or ()]
            print(json.dumps({"ring": cfg.ring.name, "time": time.time(), "members": members,
                              "voters": voters_summary(rows or ()), "settings": settings_summary(rows or ())}))
        else:
            text = format_status(rows) if rows is not None else f"({_no_answer(cfg, poll)})"
            head = f"ring {cfg.ring.name!r} at {stamp}, every {args.watch:g}s (Ctrl-C to stop)"
            print(("\x1b[H\x1b[J" if tty else "\n") + head + "\n" + text)
        sys.stdout.flush()
        rounds += 1
        if args.count and rounds >= args.count:
            return 0
        await trio.sleep_until(started + args.watch)


async def _dashboard(cfg: RingFile, args: argparse.Namespace) -> int:
    from ring.tools.dashboard import serve_dashboard
    from ring.tools.logs import configure

    configure("INFO", args.log_format)

    poll = _poll(cfg, args)
    if poll.solo is not None and await poll() is None:
        if poll.refused:
            raise _NoAnswer(_no_answer(cfg, poll))
        # A dashboard opened before the crawl it watches, as a ring's may be:
        # said at once, as `status` says it, and then served; each poll reads
        # the peer's record again, so the page shows the crawl once it starts.
        import logging

        logging.getLogger("ring.dashboard").warning(
            "%s; the dashboard polls until it answers", _no_answer(cfg, poll))

    async def rows() -> list[dict[str, Any]] | None:
        got = await poll()
        return None if got is None else [r.as_json() for r in got]

    await serve_dashboard(rows, ring_name=cfg.ring.name, host=args.host, port=args.port,
                          interval=args.interval, silence=lambda: poll.silence, token=args.token)
    return 0


_T = TypeVar("_T")


class _Interrupted(Exception):
    """Ctrl-C ended ``status`` or ``dashboard`` (their documented way to end)."""


async def _until_ctrl_c(command: Callable[[RingFile, argparse.Namespace], Awaitable[_T]],
                        cfg: RingFile, args: argparse.Namespace) -> _T:
    """``command``, cancelled by the first SIGINT, which then raises :class:`_Interrupted`.

    Not trio's default KeyboardInterrupt, which is raised wherever the signal
    lands, and a round of ``--watch`` is mostly inside a zmq socket's
    ``async with`` (ring.io.zmqio). Raising SIGINT at each line of a round in
    turn (tests/e2e/test_cli_ring.py) showed two ways that went wrong: landing
    while the socket's watcher task ran or a nursery waited, it came out of
    ``trio.run`` wrapped in an exception group, past ``except
    KeyboardInterrupt``, as a traceback; landing inside the socket's close()
    it left the socket's nursery open ("Nursery stack corrupted"). The
    receiver turns SIGINT into a message that cancels the command at its
    next checkpoint, through the sockets' own cleanup.
    """
    import signal

    import trio

    interrupted = False
    result: _T
    with trio.open_signal_receiver(signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:

            async def on_ctrl_c() -> None:
                nonlocal interrupted
                async for _ in signals:
                    interrupted = True
                    nursery.cancel_scope.cancel()
                    return

            nursery.start_soon(on_ctrl_c)
            result = await command(cfg, args)
            nursery.cancel_scope.cancel()
    if interrupted:
        raise _Interrupted
    return result

def _waited(command: Callable[[RingFile, argparse.Namespace], Awaitable[_T]], cfg: RingFile,
            args: argparse.Namespace, goes_on: str) -> _T | None:
    """A request command's wait, run to its end; None after Ctrl-C, which ends only the wait:
    ``goes_on`` says what the ring does with the request meanwhile (printed, for exit status 1)."""
    import trio

    try:
        return trio.run(_until_ctrl_c, command, cfg, args)
    except BaseException as exc:
        if user_error(exc, (_Interrupted, KeyboardInterrupt)) is None:
            raise
        print(f"\ninterrupted: {goes_on}; see `{_named(Command.RING)} status`", file=sys.stderr)
        return None


async def _forget(cfg: RingFile, args: argparse.Namespace) -> tuple[ForgetResult, ...]:
    return await request_forget(cfg.ring.name, seeds_of(cfg), args.id, args.timeout,
                                tool_keys(cfg, args.key_id))


async def _voter(cfg: RingFile, args: argparse.Namespace) -> VoterResult:
    return await request_voter(cfg.ring.name, seeds_of(cfg), VoterAction(args.action), args.id, args.timeout,
                               tool_keys(cfg, args.key_id))


async def _settings(cfg: RingFile, args: argparse.Namespace) -> SettingsResult:
    return await request_settings(cfg.ring.name, seeds_of(cfg), SettingsAction(args.command),
                                  getattr(args, "assignments", ()), args.timeout, tool_keys(cfg, args.key_id))

async def _restart(cfg: RingFile, args: argparse.Namespace) -> RestartResult:
    return await request_restart(cfg.ring.name, seeds_of(cfg), args.id, args.timeout,
                                 tool_keys(cfg, args.key_id), back=args.back, hold=args.hold)


def format_restart(peer: str, result: RestartResult, timeout: float) -> tuple[str, bool]:
    """What ``ring restart`` prints, and whether it succeeded."""
    by = f" (back by {hhmmss(result.back_by)})" if result.back_by else ""
    if result.holders or result.outcome is RestartOutcome.NO_HOLDER:
        return _format_hold(peer, result, by)
    if result.outcome is RestartOutcome.RESTARTING:
        return (f"{peer} stopped for a planned restart; the ring keeps its hosts for it{by}", True)
    if result.outcome is RestartOutcome.BACK:
        return f"{peer} restarted and is back; its hosts never moved", True
    if result.outcome is RestartOutcome.STOPPING:
        return (f"error: {peer} had not stopped after {timeout:g}s (a peer of an older build does not "
                f"know ring restart); see `{_named(Command.RING)} status`", False)
    if result.outcome is RestartOutcome.NOT_HELD:
        return f"error: {peer} stopped, but the ring holds it {result.state}, not restarting", False
    if result.outcome is RestartOutcome.NOT_LIVE:
        return f"error: {peer} is {result.state}, not a live member", False
    return f"error: no running peer {peer!r} (or no peer answered)", False


def _format_hold(peer: str, result: RestartResult, by: str) -> tuple[str, bool]:
    """``ring restart`` of a peer held at the operator's word (``ring.membership.restarts`` rule 7)."""
    why = (f"{peer} speaks wire version {result.wire_version} and cannot announce a restart"
           if result.wire_version and result.wire_version < 4 else f"{peer} is held at the operator's word")
    if result.outcome is RestartOutcome.NO_HOLDER:
        return (f"error: {why}, and no other live peer of this release can hold it: upgrade one first, "
                f"or stop it as a crash (`{_named(Command.RING)} leave` hands its hosts over first)", False)
    answers = ", ".join(f"{mid}: {outcome.value if outcome is not None else 'no answer'}"
                        for mid, outcome in result.holders)
    if result.outcome is RestartOutcome.PART_HELD:
        return (f"error: {why}; not every peer holds it ({answers}): a peer that does not may find it "
                f"dead once it stops; ask again with --hold, or see `{_named(Command.RING)} status`", False)
    if result.outcome is RestartOutcome.BACK:
        return f"{peer} restarted and is back; its hosts never moved ({answers})", True
    return (f"{why}: held by {', '.join(mid for mid, _ in result.holders)}{by}; stop it now and start it "
            f"again (either release) before then: its hosts wait for it, every other host goes on", True)


async def _leave(cfg: RingFile, args: argparse.Namespace) -> LeaveResult:
    return await request_leave(cfg.ring.name, seeds_of(cfg), args.id, args.timeout,
                               tool_keys(cfg, args.key_id))


def main(argv: Sequence[str] | None = None, *, source: ConfigSource) -> int:
    args = _parser().parse_args(argv)
    if getattr(args, "sample", 0) < 0:
        print("error: --sample: expected an integer >= 0", file=sys.stderr)
        return 2
    try:
        cfg = source.load(args.ring)
        if args.command == "table":
            print(ownership_table(cfg, args.sample, args.host, source.host_key))
            return 0
        import trio

        if args.command in ("status", "dashboard"):
            args.recorded = source.status_address
            problem = _check_numbers(args) or (_dashboard_token(args) if args.command == "dashboard" else None)
            if problem:
                print(f"error: {problem}", file=sys.stderr)
                return 2
            try:
                return trio.run(_until_ctrl_c, _dashboard if args.command == "dashboard" else _status,
                                cfg, args)
            except BaseException as exc:
                # Ctrl-C is how --watch and the dashboard end: caught by the
                # receiver, or as KeyboardInterrupt (alone or in a group of
                # cancelled tasks) if it came before the receiver was open.
                if user_error(exc, (_Interrupted, KeyboardInterrupt)) is None:
                    raise
                print(file=sys.stderr)
                return 0
        if args.command == "seed":
            args.recorded = source.status_address
            return _seed_main(cfg, args)
        if args.command == "forget":
            problem = _check_numbers(args)
            if problem or not args.id.strip():
                print(f"error: {problem or '--id: expected a member id'}", file=sys.stderr)
                return 2
            results = _waited(_forget, cfg, args, f"the peers the request reached may have forgotten {args.id}")
            if results is None:
                return 1
            text, ok = format_forget(args.id, results)
            print(text)
            return 0 if ok else 1
        if args.command == "voter":
            problem = _check_numbers(args)
            if problem or not args.id.strip():
                print(f"error: {problem or 'ID: expected a member id'}", file=sys.stderr)
                return 2
            outcome = _waited(_voter, cfg, args, "a change the steward made settles on its own")
            if outcome is None:
                return 1
            text, ok = format_voter(VoterAction(args.action), args.id, outcome)
            print(text, file=sys.stdout if ok else sys.stderr)
            return 0 if ok else 1
        if args.command in {a.value for a in SettingsAction}:
            problem = _check_numbers(args)
            bad = next((a for a in getattr(args, "assignments", ()) if "=" not in a or not a.partition("=")[0].strip()),
                       None)
            if problem or bad is not None:
                print(f"error: {problem or f'{bad!r}: expected KEY=VALUE'}", file=sys.stderr)
                return 2
            done = _waited(_settings, cfg, args, "an epoch the steward made spreads on its own")
            if done is None:
                return 1
            text, status = format_settings(SettingsAction(args.command), done)
            print(text if status == 0 else f"error: {text}", file=sys.stdout if status == 0 else sys.stderr)
            return status
        if args.command == "restart":
            problem = _check_numbers(args)
            if problem or not args.id.strip():
                print(f"error: {problem or '--id: expected a member id'}", file=sys.stderr)
                return 2
            restarted = _waited(_restart, cfg, args,
                                f"stopped waiting for {args.id}, which restarts if it got the request")
            if restarted is None:
                return 1
            text, ok = format_restart(args.id, restarted, args.timeout)
            print(text, file=sys.stdout if ok else sys.stderr)
            return 0 if ok else 1
        left = _waited(_leave, cfg, args, f"stopped waiting for {args.id}, which goes on leaving if it got the request")
        if left is None:
            return 1
        result = left
    except BaseException as exc:  # trio wraps errors in groups; user_error() unwraps ours
        inner = user_error(exc, (_NoAnswer,))
        if inner is not None:
            print(f"error: {inner}", file=sys.stderr)
            return 1
        bad = user_error(exc, (SeedInputError,))
        if bad is not None:
            print(f"error: {bad}", file=sys.stderr)
            return 2
        err = source.user_error(exc)
        if err is None:
            raise
        print(f"error: {err}", file=sys.stderr)
        return 2
    if result.outcome is LeaveOutcome.LEFT:
        print(f"{args.id} handed over its hosts and left the ring")
        return 0
    if result.outcome is LeaveOutcome.LEAVING:
        print(f"{args.id} is still handing over after {args.timeout:g}s; "
              f"see `{_named(Command.RING)} status`", file=sys.stderr)
    elif result.outcome is LeaveOutcome.UNKNOWN:
        print(f"error: no running peer {args.id!r} in ring {cfg.ring.name!r} "
              "(or no peer answered)", file=sys.stderr)
    else:
        print(f"error: {args.id} is {result.state}, not a live member", file=sys.stderr)
    return 1

