"""The state directory's files, by generation: list them, delete the stale, name the damaged.

A state directory holds generations of three files each (``snapshot-<g>``,
``bloom-<g>``, ``journal-<g>``; the names are ``peer.core.run.layout.StateFile``'s),
leftovers of interrupted atomic writes, the run record and the spill store's
folder. Which generation is whole, and so which files are stale, is argued
in ``peer.state.journal``'s docstring ("Crash ordering"); this module only
carries out the listing and the deletions, and words the one line a damaged
file stops the peer with.

Every ``OSError`` becomes a :class:`~peer.errors.StateError` naming the path.
"""

from __future__ import annotations

import os
from pathlib import Path

from peer.core.run.layout import StateFile
from peer.errors import StateError
from peer.state.fsio import fsync_dir

__all__ = ["REVISIT_DIR", "SPILL_DIR", "list_dir", "unlink", "clean", "damaged"]

#: The spill store's directory inside the state directory.
SPILL_DIR = "frontier"
#: The due queue's far records (peer/core/revisit/duequeue.py rule 5): rebuilt at each start.
REVISIT_DIR = "revisits"


def list_dir(directory: Path) -> list[str]:
    """The names in ``directory``; none if it does not exist."""
    try:
        return os.listdir(directory)
    except FileNotFoundError:
        return []
    except OSError as e:
        raise StateError(f"{directory}: cannot list crawl state ({e.strerror or e})") from e


def unlink(directory: Path, name: str) -> None:
    """Delete ``directory / name``; gone already is fine."""
    try:
        os.unlink(directory / name)
    except FileNotFoundError:
        pass
    except OSError as e:
        raise StateError(f"{directory / name}: cannot delete ({e.strerror or e})") from e


def clean(directory: Path, keep: int | None) -> None:
    """Delete every state file not of generation ``keep``, and every temporary one."""
    removed = False
    for name in list_dir(directory):
        p = StateFile.parse(name)
        if (p and p[1] != keep) or StateFile.is_temporary(name):
            unlink(directory, name)
            removed = True
    if removed:
        fsync_dir(directory)


def damaged(directory: Path, name: str, what: str) -> StateError:
    """The error for a state file that cannot be used: the file, what is wrong, the way out."""
    return StateError(
        f"{directory / name}: {what}; start with --fresh to discard this peer's "
        f"crawl state, or move {directory} away"
    )
