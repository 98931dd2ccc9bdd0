"""The suite's run order, derived from the durations a full run recorded (tests/durations.json).

scripts/test runs pytest-xdist with ``--dist loadfile --no-loadscope-reorder``:
each worker takes the next test file in collection order. Sorting the files
longest first (longest processing time first, LPT) keeps a long end-to-end
file from starting last and ending the run alone. The durations are each
file's setup, call and teardown seconds summed, as ``--durations`` reports
them, recorded by :class:`DurationRecorder` (``scripts/test
--record-durations``); a file the record does not know runs after the known
ones, in collection order.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["COMMAND", "DurationRecorder", "load", "sort_items", "write"]

#: How the record is refreshed (docs/development.md says when).
COMMAND = "scripts/test --record-durations"


def load(path: Path) -> dict[str, float]:
    """{test file relative to the repository: seconds}; empty when there is no record."""
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    return {str(k): float(v) for k, v in doc["seconds"].items()}


def write(path: Path, seconds: Mapping[str, float], keep: Mapping[str, float] = {}) -> None:
    """Write the record: ``seconds`` measured now, over ``keep`` (files this run did not run)."""
    merged = {**keep, **seconds}
    doc = {
        "about": "seconds of each test file in a full run (setup, call and teardown summed); "
                 "tests/conftest.py runs the files longest first",
        "command": COMMAND,
        "seconds": {k: round(v, 1) for k, v in sorted(merged.items(), key=lambda kv: (-kv[1], kv[0]))},
    }
    path.write_text(json.dumps(doc, indent=1) + "\n")


def _file_of(nodeid: str) -> str:
    return nodeid.partition("::")[0]


def sort_items(items: list[Any], seconds: Mapping[str, float], root: Path) -> None:
    """Sort pytest ``items`` in place, longest file first; a file's own order and unknown files' kept."""
    def key(item: Any) -> float:
        name = Path(item.path).resolve().relative_to(root).as_posix()
        return -seconds.get(name, -1.0)  # unknown: after every known file (stable sort)

    items.sort(key=key)


def file_order(files: Sequence[str], seconds: Mapping[str, float]) -> list[str]:
    """The order :func:`sort_items` gives whole files (for the tests of the rule)."""
    return sorted(files, key=lambda f: -seconds.get(f, -1.0))


class DurationRecorder:
    """A pytest plugin: each file's seconds summed over its reports, written at the session's end.

    Registered in the controlling process only (under xdist the workers'
    reports reach it), and only when asked for. Files that did not run keep
    the seconds recorded before, unless they no longer exist.
    """

    def __init__(self, path: Path, root: Path) -> None:
        self.path, self.root = path, root
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: Any) -> None:
        self.seconds[_file_of(report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session: Any, exitstatus: int) -> None:
        if not self.seconds:
            return
        keep = {k: v for k, v in load(self.path).items() if (self.root / k).exists()}
        write(self.path, dict(self.seconds), keep)
