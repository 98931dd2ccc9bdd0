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
are ``peer.core.layout.StateFile``'s)::

    snapshot-<g>.msgpack  the state at generation g: one msgpack map (peer,
                          ring, generation, created, written, bloom, urls,
                          depths, forwards, counters, spill) + a 24-byte trailer
                          (magic "RCSNAPSH", u32 format version, u64 payload
                          length, u32 crc32 of the payload); little-endian
    bloom-<g>.bin         the Bloom filter at g (``peer.state.bloomfile.write_bloom``: its
                          own header and crc); the snapshot names it
    journal-<g>.log       what happened after snapshot g: the magic
                          "RCJOURN1" (last byte = format version), then frames
    frontier/seg-<n>.dat  the frontier's spilled queues (peer/state/spill.py); the
                          snapshot's ``spill`` manifest names the blocks in
                          them that were queued at g

Incremental (format 2): with a spill store the snapshot's ``urls`` are only
what the frontier held in RAM (its per-host heads and the jobs in flight),
and ``spill`` lists the blocks of the rest, 16 bytes a block of 64 URLs; the
URLs themselves are written once, to the segments, as they spill. So a
snapshot costs the heads and the manifest, not the frontier: measured in
scripts/bench_spill.py (README, "Scale"). Format 1 (every queued URL in
``urls``, no ``spill``) is still read.

A *frame* is what one :meth:`PeerState.commit` writes: u32 length, u32 crc32
of the payload, and the payload, a stream of msgpack records ``[tag, ...]``:
``[0, url, depth]`` queued, ``[1, url, row]`` done, ``[2, [[url, depth],
...]]`` forwarded, ``[3, {name: number}]`` counters, ``[4, url]`` seen.
Framing a commit rather than each record keeps the hot path to one msgpack
``pack`` and a ``bytearray`` append (no crc or header per record, ~8 fewer
bytes each), and makes a commit all-or-nothing at recovery.

Recovery: the newest snapshot, then its journal replayed in order. queued adds
the URL to the queue (a URL queued twice keeps its first depth and place) and
to the Bloom filter; done takes it off the queue and keeps its row (the page
row may not have reached DuckDB before the kill; re-insert it idempotently);
forwarded adds to the URLs to re-send; counters update; seen only adds to the
Bloom filter (a URL another peer fetched, handed over on a ring change).
A done URL that is neither in the snapshot's heads nor queued since was in
the spill store: a host's queue is taken FIFO, so it is in the host's first
blocks, and recovery reads that host's blocks from the front until every
such URL is found (:meth:`peer.state.spill.FileSpill.take_done`); the rest of
those blocks and the host's snapshot head go back in front, in order. So
recovery reads the snapshot (heads and manifest), the journal and the few
blocks taken since, never the whole frontier.

Torn tails. ``kill -9`` can cut a ``write`` short, and a power cut can leave a
file tail of zeros. So a bad last frame is a *torn tail*, dropped and
truncated away, when it is shorter than its header, when it ends exactly at
the end of the file (bad crc), or when it runs past the end and the bytes it
has are a clean prefix of records (msgpack is self-delimiting, so a cut frame
parses as whole records and one incomplete one); trailing zeros are ignored
for that test. Anything else (a bad frame with more data after it, a length
that runs past the end over bytes that are not records) is corruption and
raises :class:`~peer.errors.StateError` naming the file and the byte offset.
The prefix test is what keeps a flipped bit in a length field in the middle
of the file from passing for a torn tail and silently dropping good frames.

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

The engine's part, in order: ``--fresh`` → :meth:`discard`; :meth:`recover`
(None: a new crawl); rebuild frontier, outbox and counters from
:class:`Recovered`, re-insert its rows; :meth:`begin`; then per event
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

import gc
import json
import os
import struct
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import msgpack

from peer.core.bloom import BloomFilter
from peer.state.bloomfile import read_bloom, write_bloom
from peer.errors import StateError
from peer.state.fsio import fsync_dir, write_atomic
from peer.core.layout import StateFile
from peer.core.runs import RunRecord
from peer.state.spill import FileSpill, SpillManifest, sync_segments
from peer.core.urls import host_key

__all__ = ["PeerState", "PendingSnapshot", "Recovered", "SnapshotStats", "RUN_FILE", "read_run",
           "write_run"]

# Record tags; ints, not strings: one byte each on the wire.
_QUEUED, _DONE, _FORWARDED, _COUNTERS, _SEEN = range(5)
_ARITY = {_QUEUED: 3, _DONE: 3, _FORWARDED: 2, _COUNTERS: 2, _SEEN: 2}

_JOURNAL_MAGIC = b"RCJOURN1"
_JOURNAL_FAMILY = _JOURNAL_MAGIC[:-1]
_FRAME = struct.Struct("<II")  # payload length, crc32 of the payload
_MAX_FRAME = 0xFFFFFFFF
_SNAP_MAGIC = b"RCSNAPSH"
_SNAP_VERSION = 2
_SNAP_READS = (1, 2)  # 1: every queued URL in the snapshot, no spill manifest
#: The spill store's directory inside the state directory.
SPILL_DIR = "frontier"
_MISSING = object()
_SNAP_TRAILER = struct.Struct("<8sIQI")  # magic, version, payload length, crc32



@dataclass(frozen=True, slots=True)
class Recovered:
    """What :meth:`PeerState.recover` found: the state at the moment of the crash."""

    generation: int                    # the snapshot recovery started from
    queued: dict[str, int] = field(repr=False)           # url -> depth, in queue order
    forwards: list[tuple[str, int]] = field(repr=False)  # (url, depth) for the outbox again
    rows: list[list[Any]] = field(repr=False)            # rows of pages done since the snapshot
    counters: dict[str, float]
    bloom: BloomFilter                 # contains every URL ever queued or seen
    created: float                     # wall time this peer's crawl state was first begun
    records: int = 0                   # journal records replayed
    torn_bytes: int = 0                # bytes of a torn tail dropped (normal after kill -9)
    # The frontier's spilled queues as the crash left them (``queued`` holds
    # none of their hosts' URLs from before the snapshot); None: none kept.
    spill: FileSpill | None = field(default=None, repr=False)
    spilled: int = 0                   # URLs in ``spill``
    blocks_read: int = 0               # spill blocks read to find the URLs done since the snapshot

    def all_queued(self) -> Iterator[tuple[str, int]]:
        """Every queued (url, depth): the spilled ones (read from disk), then ``queued``."""
        if self.spill is not None:
            for host in self.spill.hosts():
                yield from self.spill.iter_host(host)
        yield from self.queued.items()


@dataclass(frozen=True, slots=True)
class SnapshotStats:
    """What one snapshot wrote, for the log line."""

    generation: int
    queued: int
    forwards: int
    snapshot_bytes: int
    bloom_bytes: int
    journal_bytes: int                 # size of the journal this snapshot replaced
    seconds: float
    spilled: int = 0                   # URLs in spill blocks the snapshot names (not written again)


@dataclass(frozen=True, slots=True)
class PendingSnapshot:
    """A snapshot begun by :meth:`PeerState.prepare_snapshot`."""

    generation: int
    old_journal: int                   # bytes of the journal it replaces


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

    def done(self, url: str, row: list[Any] | None) -> None:
        """``url`` left the queue: a page row (any msgpack-able list), or None for no row."""
        self._buf += self._pack((_DONE, url, row))

    def forwarded(self, items: Iterable[tuple[str, int]]) -> None:
        """(url, depth) pairs handed to the outbox for other owners (buffered)."""
        self._buf += self._pack((_FORWARDED, [(u, d) for u, d in items]))

    def seen(self, url: str) -> None:
        """``url`` goes into the Bloom filter without being queued (a hand-off)."""
        self._buf += self._pack((_SEEN, url))

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
        spill: SpillManifest | None = None,
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
            raise StateError(f"{self.directory}: cannot create the state directory "
                             f"({e.strerror or e})") from e
        self._buf.clear()
        gens = [p[1] for p in map(StateFile.parse, self._listdir()) if p]
        if self._created is None:
            self._created = time.time()
        return self._snapshot(max([self._gen, *gens]) + 1, bloom, queued, forwards, counters, spill)

    def snapshot(
        self, bloom: BloomFilter, queued: Iterable[tuple[str, int]],
        forwards: Iterable[tuple[str, int]], counters: Mapping[str, float],
        spill: SpillManifest | None = None,
    ) -> SnapshotStats:
        """Commit, write snapshot g+1 of the state given, continue in ``journal-<g+1>.log``.

        ``queued`` is the frontier plus the jobs in flight; ``forwards`` the
        outbox's unacked URLs. The rows of pages done so far must already be
        in DuckDB (module docstring, rule 5).
        """
        if self._fd < 0:
            raise RuntimeError("PeerState.snapshot() before begin() or after close()")
        self.commit()
        return self._snapshot(self._gen + 1, bloom, queued, forwards, counters, spill)

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
            raise StateError(f"{path}: cannot create journal ({e.strerror or e})") from e
        self._next_fd, self._next_size = fd, 0
        self._append_next((_JOURNAL_MAGIC,))
        return PendingSnapshot(gen, self._journal_size)

    def write_snapshot(
        self, pending: PendingSnapshot, bloom: BloomFilter, queued: Iterable[tuple[str, int]],
        forwards: Iterable[tuple[str, int]], counters: Mapping[str, float],
        spill: SpillManifest | None = None,
    ) -> SnapshotStats:
        """Write bloom and snapshot g+1 of the view given; safe in a worker thread.

        It touches only the files of generation g+1 (never the journals):
        ``bloom`` must be a copy nobody changes meanwhile, ``queued`` and
        ``forwards`` lists of that same moment, ``spill`` the spill store's
        :meth:`~peer.state.spill.FileSpill.checkpoint` of it (``queued`` then
        holds only the frontier's heads and the jobs in flight).
        """
        return self._write_files(pending.generation, bloom, queued, forwards, counters,
                                 pending.old_journal, spill)

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
        spill: SpillManifest | None,
    ) -> SnapshotStats:
        stats = self._write_files(gen, bloom, queued, forwards, counters, self._journal_size, spill)
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
        spill: SpillManifest | None = None,
    ) -> SnapshotStats:
        t0 = time.perf_counter()
        if spill is not None:
            sync_segments(spill)  # the blocks it names are on disk before it is
        bloom_name = StateFile.BLOOM.file_name(gen)
        write_bloom(bloom, self.directory / bloom_name)
        # Written as given: recovery keeps a duplicate URL's first depth, and
        # deduplicating here would cost a million-entry dict on every snapshot.
        urls: list[str] = []
        depths: list[int] = []
        add_url, add_depth = urls.append, depths.append
        for url, depth in queued:
            add_url(url)
            add_depth(depth)
        fwd = [(u, d) for u, d in forwards]
        doc = {
            "peer": self.peer_id, "ring": self.ring, "generation": gen,
            "created": self._created, "written": time.time(), "bloom": bloom_name,
            # Two flat lists: a byte a URL smaller than pairs, and dict(zip()) rebuilds
            # the queue in C.
            "urls": urls, "depths": depths,
            "forwards": fwd, "counters": dict(counters),
            "spill": spill.to_doc() if spill is not None else None,
        }
        payload = msgpack.packb(doc, use_bin_type=True)
        trailer = _SNAP_TRAILER.pack(_SNAP_MAGIC, _SNAP_VERSION, len(payload), zlib.crc32(payload))
        snap_path = self.directory / StateFile.SNAPSHOT.file_name(gen)
        try:
            write_atomic(snap_path, (payload, trailer))
        except OSError as e:
            raise StateError(f"{snap_path}: cannot write snapshot ({e.strerror or e})") from e
        return SnapshotStats(
            generation=gen, queued=len(urls), forwards=len(fwd),
            snapshot_bytes=len(payload) + len(trailer),
            bloom_bytes=os.path.getsize(self.directory / bloom_name),
            journal_bytes=old_journal, seconds=time.perf_counter() - t0,
            spilled=spill.urls if spill is not None else 0,
        )

    # -- recovery --------------------------------------------------------------

    def recover(self) -> Recovered | None:
        """Load the newest snapshot and replay its journal; None if there is no state.

        Raises StateError if a file is corrupt or belongs to another peer or
        ring. Truncates a torn journal tail and deletes stray files of other
        generations and interrupted writes.
        """
        self._close_fd()
        files: dict[StateFile, dict[int, str]] = {k: {} for k in StateFile}
        for name in self._listdir():
            p = StateFile.parse(name)
            if p:
                files[p[0]][p[1]] = name
        snaps = files[StateFile.SNAPSHOT]
        gen = max(snaps, default=0)
        for jgen, name in files[StateFile.JOURNAL].items():
            # snapshot-<g> is renamed into place before journal-<g> exists, so
            # a journal with records and no snapshot was not left by a crash;
            # except journal-<g+1> beside journal-<g>: a snapshot written in a
            # thread was interrupted (prepare_snapshot), and journal-<g> has
            # every record too.
            stray = jgen == gen + 1 and gen in files[StateFile.JOURNAL]
            if jgen > gen and not stray and os.path.getsize(self.directory / name) > len(_JOURNAL_MAGIC):
                raise self._error(name, f"journal of generation {jgen} has no "
                                        f"{StateFile.SNAPSHOT.file_name(jgen)}")
        if not snaps:
            self._clean(keep=None)
            FileSpill.open(self.directory / SPILL_DIR, None).close()  # strays of a first run
            return None
        # Millions of small containers and no cycles: the cyclic GC would
        # rescan the growing heap again and again (measured: half the time).
        gc_was_on = gc.isenabled()
        gc.disable()
        try:
            return self._load(gen, files)
        finally:
            if gc_was_on:
                gc.enable()

    def _load(self, gen: int, files: dict[StateFile, dict[int, str]]) -> Recovered:
        snaps = files[StateFile.SNAPSHOT]
        doc = self._read_snapshot(snaps[gen], gen)
        bloom = read_bloom(self.directory / doc["bloom"])
        urls, depths = doc["urls"], doc["depths"]
        queue = dict(zip(urls, depths))
        if len(queue) != len(urls):  # duplicates: keep each URL's first depth
            queue = {}
            for u, d in zip(urls, depths):
                queue.setdefault(u, d)
        forwards = [(u, d) for u, d in doc["forwards"]]
        counters = dict(doc["counters"])
        rows: list[list[Any]] = []
        records = torn = 0
        try:
            manifest = SpillManifest.from_doc(doc["spill"]) if doc.get("spill") is not None else None
        except ValueError as e:
            raise self._error(snaps[gen], f"snapshot is malformed ({e})") from e
        spill = FileSpill.open(self.directory / SPILL_DIR, manifest, block_urls=self.spill_block,
                               segment_bytes=self.segment_bytes)
        missed: list[str] = []
        if gen in files[StateFile.JOURNAL]:
            added: list[str] = []
            records, torn = self._replay(files[StateFile.JOURNAL][gen], queue, forwards, rows, counters,
                                         added, missed)
            bloom.add_many(added)
        blocks_read = 0
        spilled_hosts = set(spill.hosts())
        if spilled_hosts:
            # A spilled host's snapshot head came before its blocks, and what
            # was queued since after them (the engine pushes ``queue`` after
            # adopting the store): so the head goes into the store, in front.
            heads: dict[str, list[tuple[str, int]]] = {}
            for u in urls:
                if u in queue and (h := host_key(u)) in spilled_hosts:
                    heads.setdefault(h, []).append((u, queue.pop(u)))
            done: dict[str, set[str]] = {}
            for u in missed:
                if (h := host_key(u)) in spilled_hosts:
                    done.setdefault(h, set()).add(u)
            for h in spilled_hosts:
                if h in done or h in heads:
                    blocks_read += spill.take_done(h, done.get(h, set()), heads.get(h, []))
        self._clean(keep=gen)
        self._gen = gen
        self._created = float(doc["created"])
        return Recovered(
            generation=gen, queued=queue, forwards=forwards, rows=rows, counters=counters,
            bloom=bloom, created=self._created, records=records, torn_bytes=torn,
            spill=spill, spilled=spill.stats().urls, blocks_read=blocks_read,
        )

    def open_spill(self) -> FileSpill:
        """An empty spill store for a new crawl (its old segments deleted)."""
        return FileSpill.open(self.directory / SPILL_DIR, None, block_urls=self.spill_block,
                              segment_bytes=self.segment_bytes)

    def _read_snapshot(self, name: str, gen: int) -> dict[str, Any]:
        try:
            data = (self.directory / name).read_bytes()
        except OSError as e:
            raise self._error(name, f"cannot read snapshot ({e.strerror or e})") from e
        t = _SNAP_TRAILER.size
        if len(data) < t:
            raise self._error(name, f"not a complete snapshot ({len(data)} bytes)")
        magic, version, length, crc = _SNAP_TRAILER.unpack_from(data, len(data) - t)
        if magic != _SNAP_MAGIC:
            raise self._error(name, "not a complete ringcrawl snapshot (bad trailer)")
        if version not in _SNAP_READS:
            raise self._error(name, f"snapshot format {version} is not supported "
                                    f"(this build reads {', '.join(map(str, _SNAP_READS))})")
        if length != len(data) - t:
            raise self._error(name, f"snapshot length {len(data) - t} does not match its trailer "
                                    f"({length})")
        payload = memoryview(data)[: len(data) - t]
        if zlib.crc32(payload) != crc:
            raise self._error(name, "snapshot is corrupt (checksum mismatch)")
        try:
            doc = msgpack.unpackb(payload, raw=False, strict_map_key=True)
            ok = (
                isinstance(doc, dict) and doc.get("generation") == gen
                and doc.get("bloom") == StateFile.BLOOM.file_name(gen)
                and isinstance(doc.get("urls"), list) and isinstance(doc.get("depths"), list)
                and len(doc["urls"]) == len(doc["depths"])
                and isinstance(doc.get("forwards"), list) and isinstance(doc.get("counters"), dict)
                and isinstance(doc.get("created"), (int, float))
            )
        except Exception as e:  # any decoding failure of checksummed bytes is a bad writer
            raise self._error(name, f"snapshot is malformed ({e})") from e
        if not ok:
            raise self._error(name, "snapshot is malformed (missing or mistyped fields)")
        if doc.get("peer") != self.peer_id or doc.get("ring") != self.ring:
            raise self._error(name, f"state of peer {doc.get('peer')!r} in ring {doc.get('ring')!r}, "
                                    f"but this is peer {self.peer_id!r} in ring {self.ring!r}")
        return cast(dict[str, Any], doc)  # checked field by field above

    def _replay(
        self, name: str, queue: dict[str, int], forwards: list[tuple[str, int]],
        rows: list[list[Any]], counters: dict[str, float], added: list[str],
        missed: list[str] | None = None,
    ) -> tuple[int, int]:
        """Apply journal ``name`` to the given state; returns (records, torn bytes)."""
        path = self.directory / name
        try:
            data = path.read_bytes()
        except OSError as e:
            raise self._error(name, f"cannot read journal ({e.strerror or e})") from e
        size = len(data)
        head = len(_JOURNAL_MAGIC)
        if size < head and _JOURNAL_MAGIC.startswith(data):
            return 0, 0  # cut while being created: nothing was ever committed to it
        if data[: len(_JOURNAL_FAMILY)] != _JOURNAL_FAMILY:
            raise self._error(name, "not a ringcrawl journal (bad magic)")
        if data[:head] != _JOURNAL_MAGIC:
            raise self._error(name, f"journal format {data[:head]!r} is not supported "
                                    f"(this build reads {_JOURNAL_MAGIC!r})")
        view = memoryview(data)
        off, records = head, 0
        add, pop, row_add = added.append, queue.pop, rows.append
        while off < size:
            if size - off >= _FRAME.size:
                length, crc = _FRAME.unpack_from(data, off)
                end = off + _FRAME.size + length
                good = length > 0 and end <= size and zlib.crc32(view[off + _FRAME.size : end]) == crc
            else:
                good = False
            if not good:
                if _torn_tail(data[off:]):
                    break
                raise self._error(name, f"corrupt journal at byte {off} of {size} "
                                        f"(bad frame with {size - off} bytes to the end)")
            unpacker = msgpack.Unpacker(raw=False, max_buffer_size=max(length, 1 << 20))
            unpacker.feed(view[off + _FRAME.size : end])
            try:
                for rec in unpacker:
                    tag = rec[0]
                    if tag == _QUEUED:
                        _, url, depth = rec
                        add(url)
                        if url not in queue:
                            queue[url] = depth
                    elif tag == _DONE:
                        _, url, row = rec
                        if pop(url, _MISSING) is _MISSING and missed is not None:
                            missed.append(url)  # queued before the snapshot, in the spill store
                        if row is not None:
                            row_add(row)
                    elif tag == _FORWARDED:
                        _, items = rec
                        forwards.extend((u, d) for u, d in items)
                    elif tag == _COUNTERS:
                        _, values = rec
                        counters.update(values)
                    elif tag == _SEEN:
                        _, url = rec
                        add(url)
                    else:
                        raise ValueError(f"unknown record tag {tag!r}")
                    records += 1
            except Exception as e:  # the crc matched: a bad writer or another format
                raise self._error(name, f"undecodable frame at byte {off} ({e})") from e
            off = end
        if off < size:
            self._truncate(name, off)
        return records, size - off

    # -- files -------------------------------------------------------------------

    def _journal_path(self) -> Path:
        return self.directory / StateFile.JOURNAL.file_name(self._gen)

    def _open_journal(self) -> None:
        path = self._journal_path()
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        except OSError as e:
            raise StateError(f"{path}: cannot create journal ({e.strerror or e})") from e
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
            raise StateError(f"{self._journal_path()}: cannot write crawl state "
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
            raise StateError(f"{self.directory / f'journal-{self._gen + 1}.log'}: cannot write "
                             f"crawl state ({e.strerror or e})") from e
        self._next_size += sum(len(p) for p in parts)

    def _truncate(self, name: str, size: int) -> None:
        try:
            with open(self.directory / name, "r+b") as f:
                f.truncate(size)
                if self.fsync:
                    os.fsync(f.fileno())
        except OSError as e:
            raise self._error(name, f"cannot truncate the torn journal tail ({e.strerror or e})") from e

    def _clean(self, keep: int | None) -> None:
        removed = False
        for name in self._listdir():
            p = StateFile.parse(name)
            if (p and p[1] != keep) or StateFile.is_temporary(name):
                self._unlink(name)
                removed = True
        if removed:
            fsync_dir(self.directory)

    def _listdir(self) -> list[str]:
        try:
            return os.listdir(self.directory)
        except FileNotFoundError:
            return []
        except OSError as e:
            raise StateError(f"{self.directory}: cannot list crawl state ({e.strerror or e})") from e

    def _unlink(self, name: str) -> None:
        try:
            os.unlink(self.directory / name)
        except FileNotFoundError:
            pass
        except OSError as e:
            raise StateError(f"{self.directory / name}: cannot delete ({e.strerror or e})") from e

    def _close_fd(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)

    def _error(self, name: str, what: str) -> StateError:
        return StateError(
            f"{self.directory / name}: {what}; start with --fresh to discard this peer's "
            f"crawl state, or move {self.directory} away"
        )


# ---------------------------------------------------------------------------
# The run record (peer/core/runs.py decides with it)
# ---------------------------------------------------------------------------

#: How the last run on this state began and ended, and the scope it had: a
#: small JSON file beside the snapshots, rewritten atomically at the start and
#: at the end of each run. It is advice for the next start (resume, refuse,
#: ask), not state: recovery never reads it, so a kill between the snapshot
#: and this file costs nothing but a less precise question.
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


def _torn_tail(tail: bytes) -> bool:
    """Whether ``tail`` (a bad frame to the end of the file) is an interrupted append."""
    for t in (tail, tail.rstrip(b"\0")):
        if len(t) < _FRAME.size:
            return True
        length, _ = _FRAME.unpack_from(t)
        body = t[_FRAME.size :]
        if length == 0:
            continue
        if len(body) == length:
            return True  # whole frame, bad checksum, nothing after it
        if len(body) < length and _records_prefix(body):
            return True
    return False


def _records_prefix(body: bytes) -> bool:
    """Whether ``body`` is whole records followed by at most one incomplete one."""
    unpacker = msgpack.Unpacker(raw=False, max_buffer_size=max(len(body), 1 << 20))
    unpacker.feed(body)
    try:
        for rec in unpacker:  # stops quietly at an incomplete last object
            if not (isinstance(rec, list) and rec and rec[0] in _ARITY and len(rec) == _ARITY[rec[0]]):
                return False
    except Exception:  # any decoding failure means: not what our writer wrote
        return False
    return True
