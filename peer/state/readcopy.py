"""A data_dir's crawl state read without changing it: recovered from a copy, for the tools.

Recovery (``peer.state.recovery``) truncates a torn journal tail and deletes
stray files, which is right for a peer resuming and wrong for a tool that
only reads: ``ringcrawl-adopt`` (``--dry-run`` too) and ``ringcrawl-merge``,
which are given a dead peer's data_dir, or the operator's copy of it, and
must leave it as it was. So the state directory is copied (snapshots, Bloom
files and spill segments are only read by recovery, so they are hard-linked
where the file system allows; journals are copied) and the copy recovered.

:func:`journal_rows` is what both tools need of it: the page rows a peer
journaled after its last snapshot, which DuckDB may not have written before
the peer died (peer/state/journal.py rule 5: a row is in the journal before
it is in ``pages.duckdb``). The merge adds them to the peer's rows and adopt
counts them as fetched, so both see the same pages.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import tempfile
from pathlib import Path

from peer.core.run.layout import StateFile
from peer.errors import StateError
from peer.results.schema import Value
from peer.state.journal import SPILL_DIR, PeerState, Recovered
from peer.state.snapshot import read_snapshot

__all__ = ["journal_rows", "recover_copy", "state_owner"]


def state_owner(state_dir: Path) -> tuple[str, str] | None:
    """(peer id, ring name) of the newest snapshot in ``state_dir``, or None without one.

    Raises StateError if that snapshot is damaged.
    """
    try:
        names = os.listdir(state_dir)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise StateError(f"{state_dir}: cannot list crawl state ({e.strerror or e})") from None
    snaps = {p[1]: n for n in names if (p := StateFile.parse(n)) and p[0] is StateFile.SNAPSHOT}
    if not snaps:
        return None
    gen = max(snaps)
    doc = read_snapshot(state_dir, snaps[gen], gen, None, None)
    return str(doc["peer"]), str(doc["ring"])


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def recover_copy(state_dir: Path, peer_id: str, ring_name: str) -> Recovered | None:
    """The crawl state in ``state_dir``, recovered from a copy: ``state_dir`` is left as it was.

    The spilled queues are read into ``queued`` (the copy goes when this
    returns). A damaged state is a StateError naming the real files.
    """
    if not PeerState.exists(state_dir):
        return None
    with tempfile.TemporaryDirectory(prefix="ringcrawl-state-") as tmp:
        try:
            for entry in os.scandir(state_dir):
                if not entry.is_file(follow_symlinks=False):
                    continue
                dst = os.path.join(tmp, entry.name)
                if (kind := StateFile.parse(entry.name)) is not None and kind[0] is StateFile.JOURNAL:
                    shutil.copyfile(entry.path, dst)  # recovery may truncate a torn tail
                else:
                    _link_or_copy(entry.path, dst)
            # The frontier's spilled queues (peer/state/spill.py): recovery only adds
            # segments and deletes unnamed ones, never writes into one, so links do.
            spill_dir = os.path.join(state_dir, SPILL_DIR)
            if os.path.isdir(spill_dir):
                os.mkdir(os.path.join(tmp, SPILL_DIR))
                for entry in os.scandir(spill_dir):
                    if entry.is_file(follow_symlinks=False):
                        _link_or_copy(entry.path, os.path.join(tmp, SPILL_DIR, entry.name))
        except OSError as exc:
            raise StateError(f"{state_dir}: cannot read crawl state ({exc.strerror or exc})") from None
        try:
            rec = PeerState(Path(tmp), peer_id, ring_name).recover()
            if rec is not None and rec.spill is not None:
                spill = rec.spill
                rec = dataclasses.replace(rec, queued=dict(rec.all_queued()), spill=None, heads={})
                spill.close()
            return rec
        except StateError as exc:
            # Name the real file, and not the peer's own way out (--fresh).
            msg = str(exc).replace(tmp, str(state_dir))
            raise StateError(re.sub(r";[^;]*--fresh.*$", "", msg)) from None


def journal_rows(state_dir: Path) -> tuple[str, list[list[Value]]] | None:
    """(peer id, page rows journaled since the last snapshot) of ``state_dir``; None without state.

    Each row is ``PageRow.values()`` as the engine journaled it (the URL first).
    """
    owner = state_owner(state_dir)
    if owner is None:
        return None
    rec = recover_copy(state_dir, *owner)
    return owner[0], [] if rec is None else list(rec.rows)
