"""The exact seen set's hashes: sorted runs of 64-bit URL hashes, in RAM and on disk.

The driver half of ``peer/core/seen/sieve.py``: :meth:`SieveFiles.apply` takes one
:class:`~peer.core.seen.sieve.SieveBatch`, inserts its adds, answers which of its
checks are new (and inserts those), and is meant for a worker thread
(``trio.to_thread``): a merge of big runs reads and writes files.

Layout, in ``<data_dir>/seen/``::

    run-<n>.u64    a sorted run: magic b"RCSIEVE1", distinct little-endian
                   u64 hashes in ascending order, then their count (u64),
                   last so a merge can stream; written with
                   peer.state.fsio.write_atomic (whole or absent)
    adds.log       every hash inserted since the newest run was written,
                   raw little-endian u64s, appended per batch (os.write)

Runs are an LSM tree's levels: each batch becomes a small sorted run in RAM
(numpy), merged size-tiered (``peer.core.seen.sieve.plan_merge``) so a check probes a
few runs by binary search. When the RAM runs hold ``ram_hashes`` hashes they
are merged into one run file on disk and adds.log is emptied; disk runs are
then merged the same way, streaming in chunks of ``_CHUNK`` hashes (RAM for
a merge is bounded whatever the run sizes). A check of a whole batch is one
``np.searchsorted`` of the sorted checks per run: on a memory-mapped run
that is the sorted sweep DRUM does, touching each page of the run at most
once per batch.

Crash safety (kill -9): a run file is renamed into place only when complete,
and adds.log is truncated only after the run holding its hashes is; a crash
between leaves a hash in both (harmless: lookups are unchanged and merges
drop duplicates). adds.log's torn tail (a partial u64) is dropped at open.
What the sieve can lose is the batch the core had not yet handed over; the
engine takes a batch only after committing the journal, and a check found
new is inserted only by a later batch (peer/core/seen/sieve.py), so every hash here has
its journal record and no URL is ever called seen that was not queued.
After a restart the engine re-adds the recovered queue's and rows' hashes;
a URL still missing can at worst be fetched twice, never lost.

Without a directory (a peer with no data_dir, tests) every run stays in RAM.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from peer.errors import StateError, StorageError
from peer.state.fsio import write_atomic
from peer.core.seen.sieve import SieveBatch, plan_merge

__all__ = ["SieveFiles", "SieveFileStats"]


class _Numpy:
    """numpy, imported at first use: a crawl whose seen set never reaches the
    disk does not pay numpy's import (0.1-0.2 s of CPU) at every peer start."""

    def __getattr__(self, name: str) -> Any:
        import numpy

        return getattr(numpy, name)


np: Any = _Numpy()

_MAGIC = b"RCSIEVE1"
_HEAD = len(_MAGIC)
_COUNT = struct.Struct("<Q")
_RUN = re.compile(r"^run-(\d+)\.u64$")
_LOG = "adds.log"
#: Hashes per merge step: 2 x 8 MiB of input and 16 MiB of output at a time.
_CHUNK = 1 << 20
_U64 = "<u8"  # little-endian uint64: the files' byte order on any machine
_FRESH = "delete the seen/ directory with the crawl state (--fresh) to start over"


@dataclass(frozen=True, slots=True)
class SieveFileStats:
    hashes: int          # hashes held (duplicates across an interrupted merge counted twice)
    ram_runs: int
    disk_runs: int
    ram_bytes: int
    disk_bytes: int


class _Run:
    __slots__ = ("keys", "path", "seq")

    def __init__(self, keys: Any, path: Path | None = None, seq: int = 0) -> None:
        self.keys = keys          # sorted distinct uint64: ndarray or memmap
        self.path = path
        self.seq = seq

    def __len__(self) -> int:
        return int(self.keys.shape[0])


class SieveFiles:
    """Sorted runs of URL hashes (module docstring); one thread at a time."""

    def __init__(self, directory: Path | None, ram_hashes: int, *, fsync: bool = False) -> None:
        self.directory = None if directory is None else Path(directory)
        self.ram_hashes = ram_hashes
        self.fsync = fsync
        self._ram: list[_Run] = []
        self._disk: list[_Run] = []
        self._log_fd = -1
        self._seq = 0

    # -- open, close, discard --------------------------------------------------------

    def open(self) -> int:
        """Load the runs and adds.log of ``directory``; return the hashes found."""
        d = self.directory
        if d is None:
            return 0
        try:
            d.mkdir(parents=True, exist_ok=True)
            names = sorted(os.listdir(d))
        except OSError as e:
            raise StateError(f"{d}: cannot open the seen set ({e.strerror or e})") from e
        runs = []
        for name in names:
            m = _RUN.match(name)
            if m:
                runs.append(self._load_run(d / name, int(m[1])))
            elif name.endswith(".tmp"):
                (d / name).unlink(missing_ok=True)  # an interrupted write_atomic
        runs.sort(key=lambda r: r.seq)
        self._disk = runs
        self._seq = max((r.seq for r in runs), default=0)
        log_path = d / _LOG
        try:
            self._log_fd = os.open(log_path, os.O_RDWR | os.O_CREAT, 0o644)
            size = os.fstat(self._log_fd).st_size
            whole = size - size % 8
            if whole != size:
                os.ftruncate(self._log_fd, whole)  # torn tail of a kill -9
            data = os.pread(self._log_fd, whole, 0) if whole else b""
            os.lseek(self._log_fd, whole, os.SEEK_SET)
        except OSError as e:
            raise StateError(f"{log_path}: cannot read the seen set's log ({e.strerror or e})") from e
        if data:
            self._ram.append(_Run(_union([np.frombuffer(data, dtype=_U64)], presorted=False)))
        return sum(len(r) for r in self._disk) + sum(len(r) for r in self._ram)

    def _load_run(self, path: Path, seq: int) -> _Run:
        try:
            size = path.stat().st_size
            with open(path, "rb") as f:
                head = f.read(_HEAD)
                f.seek(max(size - _COUNT.size, 0))
                tail = f.read(_COUNT.size)
        except OSError as e:
            raise StateError(f"{path}: cannot read a seen-set run ({e.strerror or e}); {_FRESH}") from e
        if head != _MAGIC or size < _HEAD + _COUNT.size:
            raise StateError(f"{path}: not a ringcrawl seen-set run (bad header); {_FRESH}")
        (count,) = _COUNT.unpack(tail)
        if size != _HEAD + 8 * count + _COUNT.size:
            raise StateError(f"{path}: seen-set run is truncated or corrupt ({size} bytes for "
                             f"{count} hashes); {_FRESH}")
        keys = (np.memmap(path, dtype=_U64, mode="r", offset=_HEAD, shape=(count,))
                if count else np.empty(0, dtype=_U64))
        return _Run(keys, path, seq)

    def close(self) -> None:
        if self._log_fd >= 0:
            os.close(self._log_fd)
            self._log_fd = -1
        self._disk = []
        self._ram = []

    def discard(self) -> None:
        """``--fresh``: delete the runs and the log."""
        self.close()
        d = self.directory
        if d is None or not d.exists():
            return
        for name in os.listdir(d):
            if _RUN.match(name) or name == _LOG or name.endswith(".tmp"):
                (d / name).unlink(missing_ok=True)

    # -- one batch -------------------------------------------------------------------

    def apply(self, batch: SieveBatch) -> list[bool]:
        """Insert ``batch.adds``, then say which ``batch.checks`` are new.

        New checks are not inserted: the core adds them to a later batch once
        their Queued record is journaled (peer/core/seen/sieve.py, crash safety).
        """
        adds = np.frombuffer(batch.adds, dtype=_U64)
        checks = np.frombuffer(batch.checks, dtype=_U64)
        fresh = np.empty(0, dtype=_U64)
        if adds.size:
            fresh = _union([adds], presorted=False)
        new = np.zeros(checks.size, dtype=bool)
        if checks.size:
            # The first occurrence of each hash, in batch order, is the one that may be new.
            uniq, first = np.unique(checks, return_index=True)
            found = self._contains(uniq)
            if fresh.size:
                found |= _member(fresh, uniq)
            new[first[~found]] = True
        if fresh.size:
            self._log(fresh)
            self._ram.append(_Run(fresh))
            self._compact()
        verdicts: list[bool] = new.tolist()
        return verdicts

    def contains(self, hashes: Any) -> Any:
        """Which of ``hashes`` (uint64 array) the runs hold; for tests and benchmarks."""
        h = np.asarray(hashes, dtype=_U64)
        uniq, inv = np.unique(h, return_inverse=True)
        return self._contains(uniq)[inv]

    def _contains(self, sorted_keys: Any) -> Any:
        found = np.zeros(sorted_keys.size, dtype=bool)
        for run in [*self._ram, *self._disk]:
            todo = np.flatnonzero(~found)
            if not todo.size:
                break
            found[todo] = _member(run.keys, sorted_keys[todo])
        return found

    def _log(self, fresh: Any) -> None:
        if self._log_fd < 0:
            return
        data = fresh.astype(_U64, copy=False).tobytes()
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._log_fd, view):]
            if self.fsync:
                os.fsync(self._log_fd)
        except OSError as e:
            raise StorageError(f"{self.directory}/{_LOG}: cannot write the seen set "
                             f"({e.strerror or e})") from e

    # -- merging ---------------------------------------------------------------------

    def _compact(self) -> None:
        n = plan_merge([len(r) for r in self._ram])
        if n:
            merged = self._ram[-n:]
            self._ram[-n:] = [_Run(_union([r.keys for r in merged]))]
        if self.directory is None or sum(len(r) for r in self._ram) < self.ram_hashes:
            return
        self._seal()
        n = plan_merge([len(r) for r in self._disk])
        if n:
            self._merge_disk(n)

    def _seal(self) -> None:
        """The RAM runs become one run file; adds.log is emptied after it is in place."""
        keys = _union([r.keys for r in self._ram])
        self._seq += 1
        run = self._write_run(self._seq, [keys])
        self._disk.append(run)
        self._ram = []
        try:
            os.ftruncate(self._log_fd, 0)
            os.lseek(self._log_fd, 0, os.SEEK_SET)
        except OSError as e:
            raise StorageError(f"{self.directory}/{_LOG}: cannot truncate ({e.strerror or e})") from e

    def _merge_disk(self, n: int) -> None:
        olds = self._disk[-n:]
        self._seq += 1
        run = self._write_run(self._seq, _merge_chunks([r.keys for r in olds]))
        self._disk[-n:] = [run]
        for r in olds:
            assert r.path is not None
            r.keys = None  # drop the memmap before the file goes
            r.path.unlink(missing_ok=True)

    def _write_run(self, seq: int, chunks: Iterable[Any]) -> _Run:
        assert self.directory is not None
        path = self.directory / f"run-{seq}.u64"

        def parts() -> Iterator[bytes]:
            # Lazily, chunk by chunk: a merge never holds a whole run.
            count = 0
            yield _MAGIC
            for c in chunks:
                count += int(c.size)
                yield c.astype(_U64, copy=False).tobytes()
            yield _COUNT.pack(count)

        try:
            write_atomic(path, parts())
        except OSError as e:
            raise StorageError(f"{path}: cannot write a seen-set run ({e.strerror or e})") from e
        return self._load_run(path, seq)

    # -- figures ---------------------------------------------------------------------

    def stats(self) -> SieveFileStats:
        ram = sum(len(r) for r in self._ram)
        disk = sum(len(r) for r in self._disk)
        return SieveFileStats(hashes=ram + disk, ram_runs=len(self._ram), disk_runs=len(self._disk),
                              ram_bytes=8 * ram, disk_bytes=8 * disk + (_HEAD + _COUNT.size) * len(self._disk))


def _member(keys: Any, sorted_probe: Any) -> Any:
    """Which of ``sorted_probe`` are in the sorted array ``keys`` (one sorted sweep)."""
    n = int(keys.shape[0])
    if not n:
        return np.zeros(sorted_probe.size, dtype=bool)
    pos = np.searchsorted(keys, sorted_probe)
    hit = pos < n
    hit[hit] = keys[pos[hit]] == sorted_probe[hit]
    return hit


def _union(arrays: list[Any], *, presorted: bool = True) -> Any:
    """The sorted distinct union of sorted arrays (of any arrays, with ``presorted=False``)."""
    if len(arrays) == 1 and presorted:
        return np.asarray(arrays[0])
    a = np.concatenate(arrays) if len(arrays) > 1 else np.array(arrays[0], copy=True)
    # Timsort ("stable") finds the sorted runs and merges them in linear
    # time: 0.03 s for 4 M + 1 M hashes, where np.unique took 9.0 s
    # (numpy 2.4, this box).
    a.sort(kind="stable")
    keep = np.empty(a.size, dtype=bool)
    keep[:1] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


def _merge_chunks(runs: list[Any]) -> Iterator[Any]:
    """Yield the sorted distinct union of sorted ``runs`` in chunks of about ``_CHUNK`` per run."""
    pos = [0] * len(runs)
    sizes = [int(r.shape[0]) for r in runs]
    while True:
        live = [i for i in range(len(runs)) if pos[i] < sizes[i]]
        if not live:
            return
        # Cut at the smallest of the live runs' chunk ends: every run's part
        # below the cut is at most _CHUNK long (runs hold distinct keys).
        cut = min(runs[i][min(pos[i] + _CHUNK, sizes[i]) - 1] for i in live)
        parts = []
        for i in live:
            end = int(np.searchsorted(runs[i], cut, side="right"))
            parts.append(np.asarray(runs[i][pos[i]:end]))
            pos[i] = end
        yield _union(parts)
