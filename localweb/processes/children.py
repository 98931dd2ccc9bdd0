"""The processes of a benchmark: started in their own session, never outliving it, their CPU read.

:class:`Children` starts every process of a benchmark (peers, servers, a
forwarding receiver) in its own session, with ``PR_SET_PDEATHSIG`` so none
outlives the benchmark even if it is killed, and ends them all on exit
(SIGTERM, then SIGKILL after a grace period). A child's own CPU seconds and
peak RSS come from ``os.wait4`` when it exits (:class:`Exited`);
:func:`proc_cpu` reads a live process's CPU seconds from
``/proc/<pid>/stat`` and :func:`machine_busy` the whole machine's from
``/proc/stat``; :func:`tcp_bytes` counts TCP payload with ``ss``.

Linux only (``/proc``, ``prctl``), as the benchmarks are; nothing here runs
at import.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Children", "Exited", "machine_busy", "proc_cpu", "tcp_bytes"]

_TICK = os.sysconf("SC_CLK_TCK")
_PR_SET_PDEATHSIG = 1


def proc_cpu(pid: int) -> float:
    """User + system CPU seconds of a live process (0.0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return 0.0
    # Fields 14 and 15 of proc(5), counted after "pid (comm)".
    return (int(fields[11]) + int(fields[12])) / _TICK


def machine_busy() -> float:
    """CPU seconds all processes of the machine have used since boot (every core, idle excluded)."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal [guest guest_nice, already in user/nice]
    return (sum(ticks[:8]) - ticks[3] - ticks[4]) / _TICK


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: SIGKILL it when we die.
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass
class Exited:
    """How a child ended: exit code, CPU seconds (``os.wait4``), peak RSS (MB)."""

    code: int
    cpu: float
    rss_mb: float


class Children:
    """Every process a benchmark starts; ``close()`` (or leaving ``with``) ends them all."""

    def __init__(self) -> None:
        self._live: dict[int, subprocess.Popen] = {}

    def __enter__(self) -> Children:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self, argv: Sequence[str], *, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
              cwd: Path | None = None) -> subprocess.Popen:
        proc = subprocess.Popen(list(argv), stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL,
                                cwd=cwd, start_new_session=True, preexec_fn=_die_with_parent)
        self._live[proc.pid] = proc
        return proc

    def live(self) -> list[subprocess.Popen]:
        return list(self._live.values())

    def poll(self, proc: subprocess.Popen) -> Exited | None:
        """Reap ``proc`` if it has exited (with its rusage), else None."""
        if proc.pid not in self._live:
            raise ValueError(f"pid {proc.pid} is not a live child")
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if not pid:
            return None
        del self._live[proc.pid]
        proc.returncode = os.waitstatus_to_exitcode(status)
        return Exited(proc.returncode, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)

    def signal(self, proc: subprocess.Popen, signum: int) -> None:
        if proc.pid in self._live:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signum)

    def stop(self, proc: subprocess.Popen, grace: float = 10.0) -> Exited:
        """SIGTERM, then SIGKILL after ``grace`` seconds; the way it ended."""
        self.signal(proc, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while True:
            done = self.poll(proc)
            if done is not None:
                return done
            if time.monotonic() > deadline:
                self.signal(proc, signal.SIGKILL)
                deadline = float("inf")
            time.sleep(0.02)

    def close(self) -> None:
        for proc in list(self._live.values()):
            self.signal(proc, signal.SIGTERM)
        deadline = time.monotonic() + 10.0
        while self._live and time.monotonic() < deadline:
            for proc in list(self._live.values()):
                self.poll(proc)
            time.sleep(0.02)
        for proc in list(self._live.values()):
            self.signal(proc, signal.SIGKILL)
            os.waitpid(proc.pid, 0)
            del self._live[proc.pid]


def tcp_bytes(ports: set[int], pids: set[int] | None = None) -> int | None:
    """TCP payload bytes, both ways, of established connections to ``ports``.

    Each connection is counted at its connecting end (destination port in
    ``ports``), and, with ``pids``, only if a process in ``pids`` owns that
    end. None when ``ss`` is missing.
    """
    if shutil.which("ss") is None:
        return None
    argv = ["ss", "-tinH" + ("p" if pids else ""), "state", "established"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout
    total = 0
    header = ""
    for line in out.splitlines():
        if line and not line[0].isspace():
            header = line
            continue
        fields = header.split()
        if len(fields) < 4:
            continue
        try:
            dport = int(fields[3].rsplit(":", 1)[1])
        except (IndexError, ValueError):
            continue
        if dport not in ports:
            continue
        if pids and not any(f"pid={p}," in header for p in pids):
            continue
        stats = dict(kv.split(":", 1) for kv in line.split() if kv.startswith(("bytes_sent:", "bytes_received:")))
        total += int(stats.get("bytes_sent", 0)) + int(stats.get("bytes_received", 0))
    return total

