"""``python -m peer --id ENTRY`` for a ``[[peer]] workers = N`` entry: its N peers under one supervisor.

The supervisor starts one ``python -m peer`` a worker, with the command line
it was given and ``--id ENTRY-k`` (argparse keeps the last ``--id``), so every
other flag reaches every worker. It is the one process a service manager
(systemd, a container runtime, a terminal) sees:

1. SIGTERM and SIGINT are forwarded to every worker still running, each time
   they come (a second signal cancels the workers' in-flight fetches, as it
   does for one peer). The workers run in their own process group, so a
   Ctrl-C on a terminal reaches them once, through the supervisor, not twice.
   On Linux a worker gets SIGTERM if the supervisor dies (``PR_SET_PDEATHSIG``):
   a supervisor killed with ``kill -9`` leaves no worker behind, and each one
   stops cleanly.
2. A worker that ends is said in one line on stderr (``supervisor: m1-1
   exited with status 2``); the others go on: each is a peer of the ring, and
   the ring takes over a stopped peer's hosts as it does any peer's.
3. The supervisor exits when every worker has, with the worst status
   (:func:`worst`): the highest exit status, a worker killed by signal S
   counted as 128 + S (the shell's convention), which is above every status a
   peer exits with itself. So 0 only when every worker exited 0.

The workers have no terminal to ask on (stdin is /dev/null): with earlier
crawl state pass ``--resume`` or ``--fresh --yes`` (docs/operations.md,
Several peers on one machine). Their stdout and stderr are the supervisor's,
passed through untouched (a service manager's journal, or a JSON log, stays
one record a line): the lines of several workers interleave.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Sequence

from peer.core.config.cluster import ClusterConfig

__all__ = ["FORWARDED", "entry_of", "run_workers", "supervise", "worst"]

#: The signals forwarded to every worker.
FORWARDED = (signal.SIGTERM, signal.SIGINT)

_PR_SET_PDEATHSIG = 1


def worst(statuses: Sequence[int]) -> int:
    """The supervisor's exit status from its workers' ``Popen.returncode`` values (-S: killed by signal S)."""
    return max((128 - s if s < 0 else s for s in statuses), default=0)


def supervise(argv: Sequence[str], worker_ids: Sequence[str]) -> int:
    """Run ``python -m peer ARGV --id W`` for each worker id W; the worst exit status."""
    commands = [[sys.executable, "-m", "peer", *argv, "--id", w] for w in worker_ids]
    return run_workers(list(worker_ids), commands)


def _in_own_group_dying_with_parent() -> None:
    # Between fork and exec: a process group of its own (a terminal's Ctrl-C
    # goes to the supervisor alone) and SIGTERM when the supervisor dies.
    os.setpgid(0, 0)
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def run_workers(names: Sequence[str], commands: Sequence[Sequence[str]]) -> int:
    """Start each command, forward signals to them, wait for all; the worst status (rules 1-3)."""
    procs: dict[str, subprocess.Popen[bytes]] = {}
    received: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        received.append(signum)
        for proc in procs.values():
            if proc.returncode is None:
                # os.kill, not Popen.send_signal: that polls, and a worker it
                # reaped would never be seen by the os.wait() below.
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signum)

    old = {s: signal.signal(s, forward) for s in FORWARDED}
    statuses: dict[str, int] = {}
    try:
        for name, command in zip(names, commands, strict=True):
            if received:
                break  # stopped before this worker started: it is not started
            try:
                proc = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                        preexec_fn=_in_own_group_dying_with_parent)
            except OSError as exc:
                print(f"supervisor: {name}: cannot start ({exc.strerror or exc})", file=sys.stderr)
                statuses[name] = 127  # the shell's "command not found"
                continue
            procs[name] = proc
            print(f"supervisor: started {name} (pid {proc.pid})", file=sys.stderr, flush=True)
        while any(p.returncode is None for p in procs.values()):
            try:
                pid, raw = os.wait()
            except ChildProcessError:
                break
            ended = next((n for n, p in procs.items() if p.pid == pid), None)
            if ended is None:
                continue
            name, proc = ended, procs[ended]
            proc.returncode = os.waitstatus_to_exitcode(raw)
            statuses[name] = proc.returncode
            how = (f"was killed by {signal.Signals(-proc.returncode).name}" if proc.returncode < 0
                   else f"exited with status {proc.returncode}")
            print(f"supervisor: {name} {how}", file=sys.stderr, flush=True)
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
    status = worst(list(statuses.values()))
    print(f"supervisor: {len(statuses)} worker(s) ended; exit status {status}", file=sys.stderr, flush=True)
    return status


def entry_of(cfg: ClusterConfig, peer_id: str | None) -> str | None:
    """The ``[[peer]] workers = N`` entry a command runs: the one ``--id`` names, or, without
    ``--id``, the file's only entry; None when it runs one peer."""
    if peer_id is not None:
        return peer_id if peer_id in cfg.groups else None
    if len(cfg.groups) == 1:
        (entry, ids), = cfg.groups.items()
        return entry if len(ids) == len(cfg.peers) else None
    return None
