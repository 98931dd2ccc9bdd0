"""A peer's crawl state on disk: an append-only journal plus periodic snapshots.

Crash and restart: after ``kill -9`` and a restart with the same
command a peer resumes where it was. No queued URL is lost, no finished page
is fetched again (except those in flight at the kill), a forwarded batch is
persisted before it is acked, and a damaged state file stops the peer with
one line naming the file and the way out, never a silent restart from zero.

Why a journal and snapshots (the classic write-ahead-log + checkpoint shape,
e.g. Redis's AOF + RDB, SQLite's WAL + checkpoint): rewriting the whole
frontier and Bloom filter after every page would cost megabytes per page; a
journal costs tens of bytes per event, and a snapshot now and then bounds
both the journal's size and the time recovery takes to replay it.

Files, all in one directory (the engine uses ``<data_dir>/state``; the names
are ``peer.core.run.layout.StateFile``'s), each format in its own module::

    snapshot-<g>.msgpack  the state at generation g (``peer.state.snapshot``:
                          a msgpack map and a checked trailer)
    bloom-<g>.bin         the Bloom filter at g (``peer.state.bloomfile.write_bloom``: its
                          own header and crc); the snapshot names it
    journal-<g>.log       what happened after snapshot g: a magic, then frames
                          of records (``peer.state.frames``, which also tells
                          a torn tail from corruption)
    frontier/seg-<n>.dat  the frontier's spilled queues (peer/state/spill.py); the
                          snapshot's ``spill`` manifest names the blocks in
                          them that were queued at g
    run.json              how the last run began and ended (``peer.state.runrecord``;
                          advice for the next start, never read by recovery)
    revisits/seg-<n>.dat  a continuous crawl's revisit records due far ahead
                          (peer/core/revisit/duequeue.py rule 5): not state,
                          emptied at each start (peer/engine/revisits.py)

Recovery (``peer.state.recovery``) reads the newest snapshot, replays its
journal in order and takes from the spill store the blocks done since; the
directory's listing and clean-up by generation is ``peer.state.generations``.
:class:`PeerState` below is the one object the engine holds: it writes the
journal and drives the others in the order argued next.

Crash ordering (why each promise holds; "committed" = ``os.write`` returned,
which survives ``kill -9``; with ``fsync=True`` it is also fsynced):

1. The engine appends queued(link) for a page's links *before* done(page),
   and a commit writes the buffer in order as one frame. So if done(page) is
   on disk, so are its links; if it is not, the page was "in flight at the
   kill" and is fetched again, rediscovering its links.
2. A receiver commits queued(url) for a forwarded batch before it sends the
   ack; a sender re-sends every unacked batch. An ack therefore implies the
   URLs are on the receiver's disk, and no ack implies a re-send.
3. forwarded(items) is appended when URLs go to the outbox, before done(page)
   of the page they came from (rule 1). Recovery re-sends every forward since
   the snapshot, plus those the snapshot holds (the outbox's unacked URLs at
   snapshot time). Owners dedupe, so the extra copies are harmless.
4. A snapshot: commit; write ``bloom-<g+1>.bin`` (atomic, fsynced); write
   ``snapshot-<g+1>.msgpack`` (tmp, fsync, rename, fsync the directory);
   create ``journal-<g+1>.log``; delete generation g. A crash before the
   rename leaves generation g whole (plus strays cleaned at recovery); after
   it, g+1 is whole and a missing journal is an empty one. Snapshots are
   always fsynced, whatever ``fsync`` says: the old journal is deleted on the
   strength of them. The segments holding the blocks a snapshot names are
   fsynced before it is renamed into place, and a segment whose blocks
   were all taken is deleted only after the next snapshot is (the one
   before still names it).
   A snapshot written in a worker thread (the engine does so, so the event
   loop keeps its rhythm) opens ``journal-<g+1>.log`` first and writes every
   commit to both journals until it is done (:meth:`prepare_snapshot`); a
   crash before the rename leaves generation g whole with every record,
   and ``journal-<g+1>`` beside it is a stray; after it, ``journal-<g+1>``
   holds every record since the view the snapshot was written from.
5. A snapshot drops the done rows of the journal it replaces, so the engine
   must have flushed those rows to DuckDB before calling :meth:`snapshot` or
   :meth:`begin`.
6. A host's state handed to us (its revisit records and cookies, a
   ``HostState``) is appended with :meth:`state` and committed before its
   ``HostStateAck`` is sent, as a URL batch is (rule 2): an ack means the
   records are on our disk, and the sender drops its copy only then. A
   snapshot carries the handed records that nothing else here holds on
   disk yet (``handed_state``: a revisit record until its page's next
   visit writes a ``fetches`` row, a cookie until the jar's file is
   written), since it drops the journal that held them.
7. A restart goes on in the recovered generation (:meth:`resume`) rather
   than writing a snapshot before its first request: recovery's state is
   snapshot g plus journal g, and the new run's records are changes to that
   state, so snapshot g plus journal g with them appended is the state at a
   later crash. What recovery replays twice then is harmless by rules 1-3:
   a done row is inserted again idempotently, a forward re-sent (owners
   dedupe). The spill store holds: segments are deleted only after a later
   snapshot (rule 4), so the blocks snapshot g names are still there, and
   the blocks recovery or the new run wrote since are strays a recovery
   deletes, their URLs in snapshot g, its blocks or the journal. The first
   snapshot of the run comes once the recovered journal's URLs are back in
   the frontier (a second or two after the start), in a worker thread.

The engine's part, in order: ``--fresh`` → :meth:`discard`; :meth:`recover`
(None: a new crawl); rebuild frontier, outbox and counters from
:class:`Recovered`, re-insert its rows; :meth:`begin` for a new crawl,
:meth:`resume` after a recovery (rule 7); then per event
:meth:`queued` / :meth:`done` / :meth:`forwarded`, :meth:`commit` every
scheduler pass and before every ack, :meth:`snapshot` when
:meth:`journal_bytes` passes a threshold, and :meth:`close` at exit.

Plain synchronous file I/O, no trio: ``commit`` is one ``os.writev`` into the
page cache (microseconds), cheap enough to call on the event loop. Not
thread-safe; use a :class:`PeerState` from one thread, except
:meth:`write_snapshot` and :meth:`drop_older`, which touch only files the
journal's thread does not (see :meth:`prepare_snapshot`).
"""

from __future__ import annotations

import os
import time
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgpack

from peer.core.seen.bloom import BloomFilter
from peer.core.run.layout import StateFile
from peer.errors import StateError, StorageError
from peer.results.schema import Value
from peer.state.fsio import fsync_dir
from peer.state.frames import (COUNTERS as _COUNTERS, DONE as _DONE, FORWARDED as _FORWARDED,
                               FRAME as _FRAME, JOURNAL_MAGIC as _JOURNAL_MAGIC,
                               MAX_FRAME as _MAX_FRAME, QUEUED as _QUEUED, SEEN as _SEEN,
                               STATE as _STATE)
from peer.state.generations import SPILL_DIR, list_dir, unlink
from peer.state.recovery import Recovered, recover
from peer.state.cookiefile import discard_cookies
from peer.state.runrecord import RUN_FILE, read_run, write_run
from peer.state.snapshot import HandedState, PendingSnapshot, SnapshotStats, write_snapshot_files
from peer.state.spill import FileSpill, SpillManifest

#: (host, flat ``[url, depth, ...]``) of the frontier's heads, packed into a snapshot (format 3).
Heads = Iterable[tuple[str, list[Any]]]

# Recovered, SnapshotStats, PendingSnapshot, the run record and SPILL_DIR live
# in their own modules; they are re-exported here, where callers have always
# found them beside PeerState.
__all__ = ["PeerState", "PendingSnapshot", "Recovered", "SnapshotStats", "RUN_FILE", "read_run",
           "write_run", "SPILL_DIR"]


class PeerState:
    """The journal and snapshots of one peer, in ``directory``; see the module docstring."""

    def __init__(self, directory: Path, peer_id: str, ring: str, *, fsync: bool = False,
                 spill_block: int = 64, segment_bytes: int = 64 << 20) -> None:
        self.directory = Path(directory)
        self.spill_block = spill_block
        self.segment_bytes = segment_bytes
        self.peer_id = peer_id
        self.ring = ring
        self.fsync = fsync
        self._gen = 0                  # generation of the open (or recovered) journal
        self._created: float | None = None
        self._fd = -1
        self._journal_size = 0         # bytes of the open journal on disk
        self._buf = bytearray()
        # A snapshot being written in another thread (prepare_snapshot): the
        # next generation's journal, written alongside the open one.
        self._next_fd = -1
        self._next_size = 0
        # autoreset=True on purpose: a Packer without it empties its whole
        # buffer when one pack() fails, which would drop uncommitted records.
        self._pack = msgpack.Packer(use_bin_type=True).pack

    # -- inspection and removal ------------------------------------------------

    @staticmethod
    def exists(directory: Path) -> bool:
        """Whether ``directory`` holds any snapshot, Bloom or journal file."""
        try:
            return any(StateFile.parse(n) for n in os.listdir(directory))
        except FileNotFoundError:
            return False
        except OSError as e:
            raise StateError(f"{directory}: cannot list crawl state ({e.strerror or e})") from e

    def discard(self) -> None:
        """``--fresh``: delete every state file (unknown files are left alone)."""
        self._close_fd()
        self._buf.clear()
        self._gen = 0
        self._created = None
        for name in self._listdir():
            if StateFile.parse(name) or StateFile.is_temporary(name) or name == RUN_FILE:
                self._unlink(name)
        discard_cookies(self.directory)
        FileSpill.open(self.directory / SPILL_DIR, None).close()  # deletes every segment
        try:
            (self.directory / SPILL_DIR).rmdir()
        except OSError:
            pass
        try:
            self.directory.rmdir()
        except OSError:
            pass  # absent, or holds files that are not ours

    # -- the hot path ----------------------------------------------------------

    def queued(self, url: str, depth: int) -> None:
        """``url`` passed the Bloom filter into this peer's frontier (buffered)."""
        self._buf += self._pack((_QUEUED, url, depth))

    def done(self, url: str, row: Sequence[Value] | None) -> None:
        """``url`` left the queue: its page row's values (``PageRow.values``), or None for no row."""
        self._buf += self._pack((_DONE, url, row))

    def forwarded(self, items: Iterable[tuple[str, int]]) -> None:
        """(url, depth) pairs handed to the outbox for other owners (buffered)."""
        self._buf += self._pack((_FORWARDED, [(u, d) for u, d in items]))

    def seen(self, url: str) -> None:
        """``url`` goes into the Bloom filter without being queued (a hand-off)."""
        self._buf += self._pack((_SEEN, url))

    def state(self, revisits: Sequence[object], cookies: Sequence[object]) -> None:
        """A host's revisit records and cookies handed to us (rule 6; buffered: commit before the ack)."""
        self._buf += self._pack((_STATE, list(revisits), list(cookies)))

    def counters(self, counters: Mapping[str, float]) -> None:
        """Progress counters (pages, sent, ...), replacing earlier values by name."""
        self._buf += self._pack((_COUNTERS, dict(counters)))

    def commit(self) -> None:
        """Write the buffered records as one frame (survives kill -9; fsync if asked)."""
        buf = self._buf
        if not buf:
            return
        if self._fd < 0:
            raise RuntimeError("PeerState.commit() before begin() or after close()")
        if len(buf) > _MAX_FRAME:
            raise StateError(f"{self._journal_path()}: {len(buf)} uncommitted bytes exceed one frame; "
                             "commit more often")
        self._append((_FRAME.pack(len(buf), zlib.crc32(buf)), buf))
        buf.clear()

    def journal_bytes(self) -> int:
        """Bytes of the current journal, committed or buffered (when to snapshot)."""
        return self._journal_size + len(self._buf)

    def close(self) -> None:
        """Commit what is buffered and close the journal (no snapshot). Idempotent."""
        if self._fd >= 0:
            self.commit()
        self._close_fd()
        if self._next_fd >= 0:
            # A snapshot still pending: its g+1 files are strays recovery deletes
            # unless its snapshot was renamed into place (then they are whole).
            fd, self._next_fd = self._next_fd, -1
            os.close(fd)

    # -- snapshots -------------------------------------------------------------

    def begin(
        self, bloom: BloomFilter, queued: Iterable[tuple[str, int]],
        forwards: Iterable[tuple[str, int]], counters: Mapping[str, float],
        spill: SpillManifest | None = None, handed_state: HandedState = ((), ()),
        handed: Iterable[tuple[str, str]] = (), heads: Heads = (),
    ) -> SnapshotStats:
        """Write the first snapshot of this run (after any recovered one) and open its journal.

        Records buffered before ``begin`` are dropped: the snapshot is the
        whole state. Every older generation is deleted.
        """
        if self._fd >= 0:
            raise RuntimeError("PeerState.begin() called twice")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StorageError(f"{self.directory}: cannot create the state directory "
                             f"({e.strerror or e})") from e
        self._buf.clear()
        gens = [p[1] for p in map(StateFile.parse, self._listdir()) if p]
        if self._created is None:
            self._created = time.time()
        return self._snapshot(max([self._gen, *gens]) + 1, bloom, queued, forwards, counters, spill,
                              handed, handed_state, heads)

    def resume(self) -> None:
        """Go on appending to the recovered generation's journal instead of :meth:`begin`.

        After :meth:`recover`, whose replay cut any torn tail, so the
        journal ends on a frame. The state the new run starts from is that
        generation's snapshot plus this journal, so records appended from
        here are changes to it, and a crash now recovers the same state
        plus them (rule 7). It saves writing a whole snapshot before the
        first request: 1.3 M queued URLs and the Bloom filter took seconds.
        """
        if self._fd >= 0:
            raise RuntimeError("PeerState.resume() after begin() or resume()")
        path = self._journal_path()
        try:
            size = os.path.getsize(path)
        except FileNotFoundError:
            size = 0
        except OSError as e:
            raise StorageError(f"{path}: cannot open journal ({e.strerror or e})") from e
        if size < len(_JOURNAL_MAGIC):
            self._open_journal()   # none, or cut while being created: a new empty one
            return
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        except OSError as e:
            raise StorageError(f"{path}: cannot open journal ({e.strerror or e})") from e
        self._buf.clear()
        self._fd = fd
        self._journal_size = size

    def snapshot(
        self, bloom: BloomFilter, queued: Iterable[tuple[str, int]],
        forwards: Iterable[tuple[str, int]], counters: Mapping[str, float],
        spill: SpillManifest | None = None, handed: Iterable[tuple[str, str]] = (),
        handed_state: HandedState = ((), ()), heads: Heads = (), packed: bool = True,
    ) -> SnapshotStats:
        """Commit, write snapshot g+1 of the state given, continue in ``journal-<g+1>.log``.

        ``queued`` is the frontier plus the jobs in flight; ``forwards`` the
        outbox's unacked URLs. The rows of pages done so far must already be
        in DuckDB (module docstring, rule 5).
        """
        if self._fd < 0:
            raise RuntimeError("PeerState.snapshot() before begin() or after close()")
        self.commit()
        return self._snapshot(self._gen + 1, bloom, queued, forwards, counters, spill, handed, handed_state,
                              heads, packed)

    # A snapshot off the event loop, in three steps (the engine's rule 10):
    # prepare (loop) -> write_snapshot (any thread) -> finish (loop). Between
    # prepare and finish every commit goes to journal g and journal g+1, so
    # a crash leaves a whole generation whatever the thread had done: before
    # snapshot-<g+1> is renamed into place recovery takes g (its journal has
    # everything; the g+1 files are strays it deletes), after it g+1, whose
    # journal holds every record since the view was taken.

    def prepare_snapshot(self) -> PendingSnapshot:
        """Commit, and start journal g+1 beside journal g; call on the journal's thread."""
        if self._fd < 0:
            raise RuntimeError("PeerState.prepare_snapshot() before begin() or after close()")
        if self._next_fd >= 0:
            raise RuntimeError("PeerState.prepare_snapshot(): a snapshot is already pending")
        self.commit()
        gen = self._gen + 1
        path = self.directory / StateFile.JOURNAL.file_name(gen)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        except OSError as e:
            raise StorageError(f"{path}: cannot create journal ({e.strerror or e})") from e
        self._next_fd, self._next_size = fd, 0
        self._append_next((_JOURNAL_MAGIC,))
        return PendingSnapshot(gen, self._journal_size)

    def write_snapshot(
        self, pending: PendingSnapshot, bloom: BloomFilter, queued: Iterable[tuple[str, int]],
        forwards: Iterable[tuple[str, int]], counters: Mapping[str, float],
        spill: SpillManifest | None = None, handed: Iterable[tuple[str, str]] = (),
        handed_state: HandedState = ((), ()), heads: Heads = (), packed: bool = True,
        recovering: Sequence[tuple[str, int]] = (),
    ) -> SnapshotStats:
        """Write bloom and snapshot g+1 of the view given; safe in a worker thread.

        ``packed`` False: the heads listed URL by URL, the store's fronts too (format 2,
        ``[frontier] packed_heads``). ``recovering``: a recovered journal's URLs not yet
        put back, listed apart (peer/state/snapshot.py).

        It touches only the files of generation g+1 (never the journals):
        ``bloom`` must be a copy nobody changes meanwhile, ``queued`` and
        ``forwards`` lists of that same moment, ``spill`` the spill store's
        :meth:`~peer.state.spill.FileSpill.checkpoint` of it (``queued`` then
        holds only the frontier's heads and the jobs in flight).
        """
        return self._write_files(pending.generation, bloom, queued, forwards, counters,
                                 pending.old_journal, spill, handed, handed_state, heads, packed, recovering)

    def finish_snapshot(self, pending: PendingSnapshot) -> None:
        """Continue in journal g+1 alone; generation g's files are left for :meth:`drop_older`."""
        if self._next_fd < 0:
            raise RuntimeError("PeerState.finish_snapshot() without prepare_snapshot()")
        self._close_fd()
        self._fd, self._next_fd = self._next_fd, -1
        self._journal_size, self._next_size = self._next_size, 0
        self._gen = pending.generation

    def abort_snapshot(self, pending: PendingSnapshot) -> None:
        """The write failed or was cancelled: go on in journal g, unless g+1 is whole already."""
        if self._next_fd < 0:
            return
        if (self.directory / StateFile.SNAPSHOT.file_name(pending.generation)).exists():
            # The rename happened (it is atomic): g+1 is the state on disk now.
            self.finish_snapshot(pending)
            return
        fd, self._next_fd = self._next_fd, -1
        os.close(fd)
        for kind in (StateFile.JOURNAL, StateFile.BLOOM):
            self._unlink(kind.file_name(pending.generation))

    def drop_older(self, generation: int) -> None:
        """Delete the files of generations before ``generation``; safe in a worker thread."""
        removed = False
        for name in self._listdir():
            p = StateFile.parse(name)
            if p and p[1] < generation:
                self._unlink(name)
                removed = True
        if removed:
            fsync_dir(self.directory)

    def _snapshot(
        self, gen: int, bloom: BloomFilter, queued: Iterable[tuple[str, int]],
        forwards: Iterable[tuple[str, int]], counters: Mapping[str, float],
        spill: SpillManifest | None, handed: Iterable[tuple[str, str]] = (),
        handed_state: HandedState = ((), ()), heads: Heads = (), packed: bool = True,
    ) -> SnapshotStats:
        stats = self._write_files(gen, bloom, queued, forwards, counters, self._journal_size, spill, handed,
                                  handed_state, heads, packed)
        self._close_fd()
        self._gen = gen
        self._open_journal()
        for name in self._listdir():
            p = StateFile.parse(name)
            if (p and p[1] != gen) or StateFile.is_temporary(name):
                self._unlink(name)
        fsync_dir(self.directory)
        return stats

    def _write_files(
        self, gen: int, bloom: BloomFilter, queued: Iterable[tuple[str, int]],
        forwards: Iterable[tuple[str, int]], counters: Mapping[str, float], old_journal: int,
        spill: SpillManifest | None = None, handed: Iterable[tuple[str, str]] = (),
        handed_state: HandedState = ((), ()), heads: Heads = (), packed: bool = True,
        recovering: Sequence[tuple[str, int]] = (),
    ) -> SnapshotStats:
        return write_snapshot_files(self.directory, gen, self.peer_id, self.ring, self._created,
                                    bloom, queued, forwards, counters, old_journal, spill, handed,
                                    handed_state, heads, packed, recovering)

    # -- recovery --------------------------------------------------------------

    def recover(self) -> Recovered | None:
        """Load the newest snapshot and replay its journal; None if there is no state.

        Raises StateError if a file is corrupt or belongs to another peer or
        ring. Truncates a torn journal tail and deletes stray files of other
        generations and interrupted writes (``peer.state.recovery``).
        """
        self._close_fd()
        rec = recover(self.directory, self.peer_id, self.ring, fsync=self.fsync,
                      spill_block=self.spill_block, segment_bytes=self.segment_bytes)
        if rec is not None:
            self._gen = rec.generation
            self._created = rec.created
        return rec

    def open_spill(self) -> FileSpill:
        """An empty spill store for a new crawl (its old segments deleted)."""
        return FileSpill.open(self.directory / SPILL_DIR, None, block_urls=self.spill_block,
                              segment_bytes=self.segment_bytes)

    # -- files -------------------------------------------------------------------

    def _journal_path(self) -> Path:
        return self.directory / StateFile.JOURNAL.file_name(self._gen)

    def _open_journal(self) -> None:
        path = self._journal_path()
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        except OSError as e:
            raise StorageError(f"{path}: cannot create journal ({e.strerror or e})") from e
        self._fd = fd
        self._journal_size = 0
        self._append((_JOURNAL_MAGIC,))
        fsync_dir(self.directory)

    def _append(self, parts: tuple[bytes | bytearray, ...]) -> None:
        total = sum(len(p) for p in parts)
        try:
            written = os.writev(self._fd, parts)
            if written < total:  # short write (disk full, signal): finish it
                rest = b"".join(parts)[written:]
                while rest:
                    rest = rest[os.write(self._fd, rest):]
            if self.fsync:
                os.fsync(self._fd)
        except OSError as e:
            # Cut the half-written frame off, or the next frame would follow
            # garbage and the journal would read as corrupt.
            try:
                os.ftruncate(self._fd, self._journal_size)
            except OSError:
                pass
            raise StorageError(f"{self._journal_path()}: cannot write crawl state "
                             f"({e.strerror or e})") from e
        self._journal_size += total
        if self._next_fd >= 0:
            self._append_next(parts)

    def _append_next(self, parts: tuple[bytes | bytearray, ...]) -> None:
        """The same bytes into the next generation's journal while a snapshot is pending."""
        try:
            data = b"".join(parts)
            while data:
                data = data[os.write(self._next_fd, data):]
            if self.fsync:
                os.fsync(self._next_fd)
        except OSError as e:
            try:
                os.ftruncate(self._next_fd, self._next_size)
            except OSError:
                pass
            raise StorageError(f"{self.directory / f'journal-{self._gen + 1}.log'}: cannot write "
                             f"crawl state ({e.strerror or e})") from e
        self._next_size += sum(len(p) for p in parts)

    def _listdir(self) -> list[str]:
        return list_dir(self.directory)

    def _unlink(self, name: str) -> None:
        unlink(self.directory, name)

    def _close_fd(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)
