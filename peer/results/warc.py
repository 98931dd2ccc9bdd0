"""WARC/1.1 files of one peer's fetches, written off the event loop, crash-safe, with CDXJ indexes.

:class:`WarcWriter` takes one item per fetch (:class:`Fetched` or
:class:`Revisited`). ``compress_threads`` threads build and compress the
records the pure builder (``peer.core.warc.record``) makes of each item, side
by side (zlib and ISA-L release the GIL while they deflate), and one thread
appends the results to the file in the order the items came, each item's
members in one ``write``. At most ``queue_items`` items are in the writer at
once: the engine calls ``await writer.put(item)``, which waits while it is
full, so a disk (or a compressor) slower than the crawl slows the crawl
instead of growing memory.

**Compression.** Each record is its own gzip member (RFC 1952). Levels 1-3
are deflated by ISA-L (the ``isal`` package, Intel's igzip): on HTML about
ten times faster than zlib at its default level 6, for output 6-10% larger
(docs/warc.md has the figures). Levels 4-9, and every level where ISA-L
is not installed, are zlib's; 0 stores. Any gzip reader reads either.

**Files.** ``<prefix>-<peer>-<timestamp>-<serial>.warc.gz`` (the IIPC's and
Heritrix's naming: the 17-digit UTC time the file was opened, a serial per
writer), each opening with a ``warcinfo`` record, each record its own gzip
member. A file is closed for a new one before an item would take it past
``max_file_bytes`` (only an item bigger than that alone goes over). At close
its index is written beside it, ``<name>.cdxj``, sorted (``peer.results.cdxj``).

**Crash safety.** The order that makes a ``kill -9`` or a power loss safe:

1. A file is written as ``<name>.warc.gz.open``: no reader mistakes it for a
   finished file.
2. Each item is appended with one ``write`` of its complete gzip members, and
   the file is ``fsync``-ed every ``fsync_records`` items and at close. A kill
   leaves the file ending in whole members, perhaps followed by part of one.
3. At close: ``fsync`` the file, write ``<name>.cdxj`` atomically, then
   rename ``.open`` away and ``fsync`` the directory. A crash before the
   rename leaves a ``.open`` file; after it, a complete pair.
4. At the next start :func:`recover` (before any writer opens) takes every
   ``.open`` file, keeps it up to the end of its last complete gzip member
   whose record is whole (zlib checks each member's CRC-32 and length, RFC
   1952), truncates the rest, rebuilds its index from what is left and
   renames it. A writer never appends to an old file: each run starts a new
   one, so recovery never races a writer.

**Errors.** Remote input never raises here: the builder escapes and bounds
what it writes. A failing disk (``ENOSPC``, ``EIO``) stops the thread; the
next :meth:`WarcWriter.put` or :meth:`WarcWriter.close` raises
``StateError`` naming the file.
"""

from __future__ import annotations

import os
import queue
import re
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType

import trio

from peer.core.warc.record import (
    Capture,
    CdxFacts,
    Refers,
    RevisitProfile,
    Truncation,
    cdxj_line,
    not_modified_record,
    request_record,
    response_record,
    revisit_record,
    warcinfo_record,
)
from peer.core.config.warc import OverMaxBody, WarcConfig
from peer.errors import StateError
from peer.results.cdxj import index_file, urlkey, write_cdxj
from peer.state.fsio import fsync_dir

__all__ = [
    "Fetched",
    "OverMaxBody",
    "Recovered",
    "Revisited",
    "WarcConfig",
    "WarcStats",
    "WarcWriter",
    "new_record_id",
    "recover",
]

OPEN_SUFFIX = ".open"
SOFTWARE = "ringcrawl"

_isal: ModuleType | None
try:  # a wheel for every platform the project runs on; zlib where there is none
    from isal import isal_zlib as _isal
except ImportError:  # pragma: no cover - isal is a dependency
    _isal = None


def gzip_member(record: bytes, level: int) -> bytes:
    """``record`` as one gzip member (module docstring, "Compression"); the header's mtime is 0."""
    if _isal is not None and 1 <= level <= 3:
        return _isal.compress(record, level, wbits=31)
    return zlib.compress(record, level, wbits=31)


@dataclass(frozen=True, slots=True)
class Fetched:
    """A fetch to archive as a request and a response record; ``record_id`` the response's,
    when the crawl must know it (a later revisit refers to it), else the writer makes one."""

    capture: Capture
    record_id: str | None = None


@dataclass(frozen=True, slots=True)
class Revisited:
    """A fetch to archive as a revisit record referring to the response record that holds the
    payload (peer/core/warc/record.py rule 6) and a request record; a 304's head is kept in a
    metadata record after them."""

    capture: Capture
    profile: RevisitProfile
    refers: Refers


@dataclass(slots=True)
class WarcStats:
    """What the writer did; read by the engine's metrics (counts, not a message: mutable)."""

    items: int = 0
    records: int = 0
    bytes: int = 0
    files: int = 0
    skipped_truncated: int = 0
    closed_files: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Recovered:
    """One ``.open`` file made whole: its final name, records kept, bytes cut off."""

    path: Path
    records: int
    dropped_bytes: int


def new_record_id() -> str:
    """A ``WARC-Record-ID`` (§5.2): a UUID URN, random (RFC 9562 version 4)."""
    return f"<urn:uuid:{uuid.uuid4()}>"


def _safe(name: str) -> str:
    """A peer's name as part of a file name: ``host:port`` has a colon, and ``-`` separates the name's parts."""
    return re.sub(r"[^A-Za-z0-9._]", "_", name) or "peer"


class _File:
    """The file being written: its handle, name, size and index lines so far."""

    def __init__(self, directory: Path, name: str, warcinfo_id: str) -> None:
        self.final = directory / name
        self.path = directory / (name + OPEN_SUFFIX)
        self.handle = open(self.path, "xb")
        self.size = 0
        self.lines: list[str] = []
        self.unsynced = 0
        self.warcinfo_id = warcinfo_id


@dataclass(frozen=True, slots=True)
class _Made:
    """One item's records as a compressing thread made them: the item, the warcinfo record they
    name, its gzip members as one buffer, (start, length, urlkey, facts) of the indexed one, how many."""

    item: Fetched | Revisited
    warcinfo_id: str
    data: bytes
    indexed: list[tuple[int, int, str, CdxFacts]]
    count: int


_STOP = object()
_SKIPPED = object()  # an item the config says not to archive (over_max_body = "skip")


class WarcWriter:
    """Appends fetches to rotating WARC files: compressed side by side, written in order (module docstring).

    ``info`` goes into each file's ``warcinfo`` record (hostname, the crawl
    config as JSON...). ``clock`` gives the time a file is named after; the
    records carry their captures' own dates.
    """

    def __init__(
        self,
        config: WarcConfig,
        directory: str | os.PathLike[str],
        peer: str,
        info: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.peer = _safe(peer)
        self.info = {"software": SOFTWARE, "peer": peer, **(info or {})}
        self.clock = clock
        self.stats = WarcStats()
        # Items in the writer (queued, compressing or being written): put takes a slot, the
        # writing thread gives it back once the item is in the file.
        self._slots = threading.Semaphore(config.queue_items)
        # Futures of the items' records in the order the items came: the file's order.
        # With one compressing thread it is the writing thread itself: no hand-over a record.
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._pool = (ThreadPoolExecutor(config.compress_threads, thread_name_prefix="warc-gzip")
                      if config.compress_threads > 1 else None)
        self._order = threading.Lock()  # a future's place in the queue is its item's place
        self._error: BaseException | None = None
        self._file: _File | None = None
        # The warcinfo record of the file open, or of the next one: the records a compressing
        # thread builds name it (a thread reads it as one attribute; a record built for a file
        # just closed is built again by the writing thread).
        self._warcinfo_id = new_record_id()
        self._serial = 0
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="warc-writer", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------ the crawl's side

    async def put(self, item: Fetched | Revisited) -> None:
        """Queue ``item``; waits (in a worker thread) while the writer holds ``queue_items`` items."""
        self._check(putting=True)
        if self._slots.acquire(blocking=False):
            self._enqueue(item)
        else:
            await trio.to_thread.run_sync(self._put_blocking, item)

    def put_blocking(self, item: Fetched | Revisited) -> None:
        """Queue ``item`` from a plain thread (tests, benchmarks, tools)."""
        self._check(putting=True)
        self._put_blocking(item)

    def _put_blocking(self, item: Fetched | Revisited) -> None:
        while not self._slots.acquire(timeout=0.5):
            self._check()  # a dead thread never frees a slot: do not wait for it forever
        self._enqueue(item)

    def _enqueue(self, item: Fetched | Revisited) -> None:
        if self._pool is None:
            self._queue.put(item)
            return
        with self._order:
            self._queue.put(self._pool.submit(self._build, item))

    def close(self) -> None:
        """Write what is queued, close the file (fsync, index, rename) and stop the threads."""
        if not self._closed:
            self._closed = True
            self._queue.put(_STOP)
            self._thread.join()
            if self._pool is not None:
                self._pool.shutdown(wait=True)
        self._check()

    async def aclose(self) -> None:
        """:meth:`close` in a worker thread."""
        await trio.to_thread.run_sync(self.close)

    def _check(self, putting: bool = False) -> None:
        if putting and self._closed:
            raise RuntimeError("WarcWriter.put after close()")  # our bug: nothing would drain it
        if self._error is not None:
            where = self._file.path if self._file is not None else self.directory
            raise StateError(f"{where}: writing the WARC file failed: {self._error}") from self._error

    # ------------------------------------------------------------ the compressing threads' side

    def _build(self, item: Fetched | Revisited) -> object:
        """The item's records compressed (:class:`_Made`), or ``_SKIPPED``; runs on a pool thread."""
        return self._records(item, self._warcinfo_id) or _SKIPPED

    def _records(self, item: Fetched | Revisited, warcinfo_id: str) -> _Made | None:
        """The item's gzip members naming ``warcinfo_id``; None for an item not archived."""
        capture = item.capture
        cfg = self.config
        if (
            isinstance(item, Fetched)
            and capture.truncated is Truncation.LENGTH
            and cfg.over_body is OverMaxBody.SKIP
        ):
            return None
        main_id, request_id = new_record_id(), new_record_id()
        if isinstance(item, Fetched):
            main_id = item.record_id or main_id
            main, facts = response_record(capture, main_id, warcinfo_id, cfg.algorithm)
        else:
            main, facts = revisit_record(capture, main_id, item.profile, item.refers, warcinfo_id, cfg.algorithm)
        request = request_record(capture, request_id, main_id, warcinfo_id, cfg.algorithm)
        # The response first: pywb and cdxj-indexer pair a request with the
        # response before it, and a reader wants the response's offset.
        main_gz = gzip_member(main, cfg.gzip_level)
        members = [main_gz, gzip_member(request, cfg.gzip_level)]
        if isinstance(item, Revisited) and item.profile is RevisitProfile.SERVER_NOT_MODIFIED:
            # The 304 as received, beside its revisit (peer/core/warc/record.py, revisit_record).
            meta = not_modified_record(capture, new_record_id(), main_id, warcinfo_id, cfg.algorithm)
            members.append(gzip_member(meta, cfg.gzip_level))
        # The SURT key here too: of the index line, only the offset and file wait for the writer.
        return _Made(item, warcinfo_id, b"".join(members), [(0, len(main_gz), urlkey(facts.url), facts)], len(members))

    # ------------------------------------------------------------ the writing thread's side

    def _run(self) -> None:
        try:
            while True:
                job = self._queue.get()
                if job is _STOP:
                    break
                # A builder's exception is the writer's: it stops here.
                made = job.result() if isinstance(job, Future) else self._build(job)  # type: ignore[arg-type]
                if made is _SKIPPED:
                    self.stats.skipped_truncated += 1
                else:
                    assert isinstance(made, _Made)
                    self._write(made)
                self._slots.release()
            self._finish()
        except BaseException as error:  # noqa: BLE001 - handed to the crawl's next call
            self._error = error
            # Free the slots of what is queued: a producer waiting for one sees the error.
            while True:
                try:
                    self._queue.get_nowait()
                except queue.Empty:
                    break
                self._slots.release()

    def _write(self, made: _Made) -> None:
        current = self._file
        if current is not None and current.size + len(made.data) > self.config.max_file_bytes and current.lines:
            self._finish()
            current = None
        if current is None:
            current = self._open()
        if made.warcinfo_id != current.warcinfo_id:
            # Built while the file before was open: its records name that file's warcinfo.
            # An item is built again once a file (rarely: files are large).
            again = self._records(made.item, current.warcinfo_id)
            assert again is not None  # the same item, the same config: archived as before
            made = again
        offset = current.size
        current.handle.write(made.data)
        current.size += len(made.data)
        for start, length, key, facts in made.indexed:
            current.lines.append(cdxj_line(key, facts, length, offset + start, current.final.name))
        self.stats.items += 1
        self.stats.records += made.count
        self.stats.bytes += len(made.data)
        current.unsynced += 1
        if current.unsynced >= self.config.fsync_records:
            current.handle.flush()
            os.fsync(current.handle.fileno())
            current.unsynced = 0

    def _open(self) -> _File:
        now = self.clock()
        stamp = datetime.fromtimestamp(now, timezone.utc).strftime("%Y%m%d%H%M%S%f")[:17]
        while True:
            name = f"{self.config.prefix}-{self.peer}-{stamp}-{self._serial:05d}.warc.gz"
            self._serial += 1
            if not (self.directory / name).exists() and not (self.directory / (name + OPEN_SUFFIX)).exists():
                break
        new = _File(self.directory, name, self._warcinfo_id)
        info = warcinfo_record(new.warcinfo_id, now, name, self.info, self.config.algorithm)
        member = gzip_member(info, self.config.gzip_level)
        new.handle.write(member)
        new.size = len(member)
        self._file = new
        self.stats.files += 1
        self.stats.records += 1
        self.stats.bytes += len(member)
        return new

    def _finish(self) -> None:
        current = self._file
        if current is None:
            return
        current.handle.flush()
        os.fsync(current.handle.fileno())
        current.handle.close()
        write_cdxj(current.final.with_name(current.final.name[: -len(".warc.gz")] + ".cdxj"), current.lines)
        os.replace(current.path, current.final)
        fsync_dir(self.directory)
        self.stats.closed_files.append(str(current.final))
        self._file = None
        self._warcinfo_id = new_record_id()  # the next file's


# ---------------------------------------------------------------- recovery


_CHUNK = 1 << 20


def _complete_prefix(path: Path) -> tuple[int, int]:
    """(bytes, members): how far ``path`` holds complete gzip members, each a WARC record.

    Inflates member by member with at most ``_CHUNK`` bytes out a call, so a
    record whose body compressed a thousandfold costs no more memory.
    """
    good = members = 0
    with open(path, "rb") as f:
        pending = f.read(_CHUNK)
        while pending:
            inflater = zlib.decompressobj(31)  # gzip framing: CRC-32 and length checked
            consumed = 0
            head = b""
            data, pending = pending, b""
            while not inflater.eof:
                if not data:
                    data = f.read(_CHUNK)
                    if not data:
                        return good, members  # the file ends inside this member
                try:
                    out = inflater.decompress(data, _CHUNK)
                except zlib.error:
                    return good, members
                consumed += len(data) - len(inflater.unconsumed_tail)
                data = inflater.unconsumed_tail
                if len(head) < 8:
                    head += out[: 8 - len(head)]
            if not head.startswith(b"WARC/"):
                return good, members
            rest = inflater.unused_data
            good += consumed - len(rest)
            members += 1
            pending = rest + data if rest or data else f.read(_CHUNK)
    return good, members


def recover(directory: str | os.PathLike[str]) -> list[Recovered]:
    """Make every ``.open`` WARC file in ``directory`` whole (module docstring, step 4).

    Call it before a writer starts. An ``.open`` file without one complete
    record is removed. Returns what was done, for the peer to log.
    """
    done: list[Recovered] = []
    folder = Path(directory)
    if not folder.is_dir():
        return done
    for path in sorted(folder.glob("*.warc.gz" + OPEN_SUFFIX)):
        good, members = _complete_prefix(path)
        size = path.stat().st_size
        final = path.with_name(path.name[: -len(OPEN_SUFFIX)])
        if members == 0:
            path.unlink()
            fsync_dir(folder)
            done.append(Recovered(final, 0, size))
            continue
        with open(path, "r+b") as f:
            f.truncate(good)
            f.flush()
            os.fsync(f.fileno())
        write_cdxj(final.with_name(final.name[: -len(".warc.gz")] + ".cdxj"), index_file(path, final.name))
        os.replace(path, final)
        fsync_dir(folder)
        done.append(Recovered(final, members, size - good))
    return done
