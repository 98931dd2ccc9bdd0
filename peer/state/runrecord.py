"""``run.json``: how the last run on a state directory began and ended, and its scope.

A small JSON file beside the snapshots, rewritten atomically at the start and
at the end of each run (``peer.core.run.runs`` decides with it). It is advice for
the next start (resume, refuse, ask), not state: recovery never reads it, so
a kill between the snapshot and this file costs nothing but a less precise
question.
"""

from __future__ import annotations

import json
from pathlib import Path

from peer.core.run.runs import RunRecord
from peer.errors import StateError
from peer.state.fsio import write_atomic

__all__ = ["RUN_FILE", "read_run", "write_run"]

#: The run record's name in the state directory (module docstring).
RUN_FILE = "run.json"


def read_run(directory: Path) -> RunRecord | None:
    """The run record in a state directory, or None if there is none."""
    path = Path(directory) / RUN_FILE
    try:
        doc = json.loads(path.read_bytes())
        return RunRecord.from_dict(doc)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise StateError(f"{path}: cannot read the run record ({e.strerror or e})") from e
    except (ValueError, KeyError, TypeError) as e:
        raise StateError(f"{path}: run record is malformed ({type(e).__name__}: {e}); "
                         "delete it (the crawl state stays) or start with --fresh") from e


def write_run(directory: Path, record: RunRecord) -> None:
    """Write the run record atomically (fsynced: it is small and written twice a run)."""
    d = Path(directory)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StateError(f"{d}: cannot create the state directory ({e.strerror or e})") from e
    data = json.dumps(record.to_dict(), indent=1).encode() + b"\n"
    try:
        write_atomic(d / RUN_FILE, (data,))
    except OSError as e:
        raise StateError(f"{d / RUN_FILE}: cannot write the run record ({e.strerror or e})") from e
