"""The supervisor of a machine's workers (peer/commands/supervise.py), on stand-in children.

Each child is a few lines of ``python -c``: the rules of its exit status and of
signal forwarding are judged without a crawl (tests/e2e/test_machines.py runs
real peers).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

from peer.commands.supervise import run_workers, worst


def test_worst_is_the_highest_status_and_a_signal_death_counts_as_128_plus_it():
    assert worst([]) == 0
    assert worst([0, 0]) == 0
    assert worst([0, 2]) == 2
    assert worst([4, 1, 3]) == 4
    assert worst([0, -signal.SIGTERM]) == 128 + signal.SIGTERM
    assert worst([4, -signal.SIGKILL]) == 128 + signal.SIGKILL


def py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_a_failing_worker_makes_the_supervisor_exit_with_its_status_after_the_others_end(capfd):
    status = run_workers(["w-0", "w-1", "w-2"], [
        py("import sys; sys.exit(0)"),
        py("import sys; sys.exit(3)"),
        py("import time, sys; time.sleep(0.3); sys.exit(0)"),  # goes on after w-1 failed
    ])
    err = capfd.readouterr().err
    assert status == 3
    assert "supervisor: w-1 exited with status 3" in err
    assert "supervisor: w-2 exited with status 0" in err
    assert err.strip().splitlines()[-1] == "supervisor: 3 worker(s) ended; exit status 3"


HANDLES_TERM = """
import signal, sys, time, pathlib
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
pathlib.Path(sys.argv[1]).touch()
time.sleep(60)
sys.exit(1)
"""

IGNORES_NOTHING = """
import sys, time, pathlib
pathlib.Path(sys.argv[1]).touch()
time.sleep(60)
"""


def test_sigterm_to_the_supervisor_reaches_every_worker(tmp_path: Path, capfd):
    ready = [tmp_path / "a", tmp_path / "b"]

    def stop_when_ready() -> None:
        deadline = time.monotonic() + 30
        while not all(p.exists() for p in ready) and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=stop_when_ready, daemon=True).start()
    before = signal.getsignal(signal.SIGTERM)
    status = run_workers(["w-0", "w-1"], [py(HANDLES_TERM) + [str(ready[0])],
                                          py(IGNORES_NOTHING) + [str(ready[1])]])
    err = capfd.readouterr().err
    # w-0 stops cleanly on SIGTERM (unforwarded, it would exit 1 after its sleep);
    # w-1 has no handler and dies of it: the worst wins.
    assert "supervisor: w-0 exited with status 0" in err
    assert "supervisor: w-1 was killed by SIGTERM" in err
    assert status == 128 + signal.SIGTERM
    # The supervisor's own handlers are put back.
    assert signal.getsignal(signal.SIGTERM) is before
