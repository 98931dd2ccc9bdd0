"""The frontier's spill store on disk: per-host FIFO queues in append-only segment files.

The frontier (peer/core/frontier/frontier.py, rule 9) keeps a small head of each host's
queue in RAM and hands the rest to a :class:`~peer.core.frontier.spillqueue.SpillStore`;
this is the one that writes it to disk. Mercator's frontier keeps its
per-host FIFO queues on disk with a RAM buffer at each end (Heydon and
Najork, 1999); BUbiNG's workbench virtualizer does the same with per-host
queues interleaved in shared log files (Boldi et al., "BUbiNG: Massive
crawling for the masses", WWW 2014). So does this:

* The frontier keeps each host's *tail* in RAM and hands it over when it
  holds a head's worth of URLs (a call a block, not a URL: the push path
  stays as fast as the all-in-RAM one). :meth:`FileSpill.put` writes it as
  one *block* (u32 payload length, u32 crc32, msgpack of the flat
  ``[url, depth, ...]`` list) at the end of the current segment file,
  ``seg-<n>.dat``, which is closed for writing at ``segment_bytes``.
* The host keeps a ref to each of its blocks: two int64 in an ``array('q')``
  (segment << 40 | offset, bytes << 20 | URLs), 16 B per block, so 0.25 B
  per queued URL at 64 URLs a block: all the RAM it takes (the issue's
  budget was 30 B a URL beyond the heads and tails).
* ``take`` reads the host's first block (one ``pread``). A segment whose blocks have all been taken is *dead*;
  it is deleted at the next checkpoint (:meth:`FileSpill.release`), not
  before, since the previous checkpoint still points into it.

Why plain segment files and not an embedded store: the queue is append at
one end, read once at the other, in whole blocks; a B-tree (SQLite, LMDB)
adds a key a URL, a page split now and then and a delete a URL, for an
order that the files give for nothing. scripts/bench_spill.py measures
SQLite on the same job (per-host FIFO, 64-URL batches, one transaction a
batch) beside this.

Heads (a host's queue in front of its blocks) go into a snapshot packed, one
msgpack payload a host (:func:`pack_head`: the flat list of a block's body),
and recovery hands each back to the store as that host's *front*: held in
RAM as the bytes the snapshot had, in front of the host's blocks, decoded
by the first :meth:`FileSpill.take` of the host, at its first start. So a
restart at millions of queued URLs makes no string of a head it has not
started (a ``str`` a URL was most of its time and RAM), and the next
snapshot copies the fronts not taken yet as they are. A front is not on
disk: a checkpoint lists it in the manifest (``fronts``), bytes and all.

Checkpoints (peer/state/journal.py): the frontier hands over its tails
(:meth:`~peer.core.frontier.frontier.Frontier.flush_tails`), then
:meth:`FileSpill.checkpoint` returns a :class:`SpillManifest`, the refs
of every queued block, on the event loop (a copy of 16 B a block); :func:`sync_segments` fsyncs the segments
written since in a worker thread, before the snapshot that names them is
renamed into place. Blocks written after a checkpoint are not needed after
a crash: the journal has their URLs, recovery queues them again, and the
segments the manifest does not name are deleted (:meth:`FileSpill.open`).
"""

from __future__ import annotations

import os
import struct
import zlib
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack

from peer.errors import StateError, StorageError

__all__ = ["FileSpill", "Front", "SpillManifest", "SpillStats", "pack_head", "sync_segments", "unpack_front"]

_BLOCK = struct.Struct("<II")  # payload length, crc32 of the payload
_OFF_BITS = 40                 # a segment up to 1 TiB
_OFF_MASK = (1 << _OFF_BITS) - 1
_N_BITS = 20                   # up to a million URLs a block
_N_MASK = (1 << _N_BITS) - 1
#: Blocks are gathered into writes of this many bytes: measured on this box,
#: 8 KiB writes (a 64-URL block) ran at 0.6 GB/s, 1 MiB ones at 1.7 GB/s.
_WRITE_BYTES = 1 << 20
#: Open read descriptors kept; a crawl of 1 B URLs at 64 MiB a segment has
#: ~1,500 segments, more than a 1,024 ``ulimit -n``.
_MAX_READERS = 64


#: A host's front: (host, URLs, msgpack of the flat ``[url, depth, ...]`` list).
Front = tuple[str, int, bytes]


def pack_head(flat: list[Any]) -> bytes:
    """A host's head, flat ``[url, depth, ...]``, as a front's payload (module docstring)."""
    payload: bytes = msgpack.packb(flat, use_bin_type=True)
    return payload


def unpack_front(payload: bytes, n: int) -> list[Any]:
    """A front's flat ``[url, depth, ...]`` list of ``n`` URLs; ValueError if it is not one."""
    try:
        chunk = msgpack.unpackb(payload, raw=False)
    except Exception as e:  # bytes of a checksummed snapshot that do not decode: a bad writer
        raise ValueError(f"undecodable head ({e})") from e
    if not (isinstance(chunk, list) and len(chunk) == 2 * n):
        raise ValueError(f"a head of {n} URLs holds {len(chunk) if isinstance(chunk, list) else 'no list'}")
    return chunk


def _seg_name(n: int) -> str:
    return f"seg-{n:06d}.dat"


def _seg_number(name: str) -> int | None:
    if name.startswith("seg-") and name.endswith(".dat") and name[4:-4].isdigit():
        return int(name[4:-4])
    return None


@dataclass(frozen=True, slots=True)
class SpillManifest:
    """Every block the store held at a checkpoint: what recovery starts from."""

    block_urls: int
    hosts: tuple[str, ...]
    refs: tuple[bytes, ...]        # per host: its refs, ``array('q').tobytes()``
    segments: tuple[int, ...]      # segments holding those blocks
    dirty: tuple[str, ...]         # paths written since the last checkpoint (to fsync)
    dead: tuple[int, ...]          # segments with no block left: delete after the snapshot
    urls: int                      # URLs in those blocks and fronts
    # The hosts' fronts in RAM (module docstring), each host's in order; a snapshot
    # puts the frontier's heads in front of them (peer.state.snapshot).
    fronts: tuple[Front, ...] = ()

    def to_doc(self, heads: tuple[Front, ...] = ()) -> dict[str, Any]:
        """The snapshot's map; ``heads`` go in front of the store's fronts, host by host."""
        doc: dict[str, Any] = {"block_urls": self.block_urls, "hosts": list(self.hosts), "refs": list(self.refs),
                               "segments": list(self.segments), "urls": self.urls + sum(f[1] for f in heads)}
        fronts = [*heads, *self.fronts]
        if fronts:   # only then: a snapshot without fronts stays readable by a build of format 2
            doc["fronts"] = [list(f) for f in fronts]
        return doc

    @classmethod
    def from_doc(cls, doc: Any) -> SpillManifest:
        """The manifest of a snapshot; ValueError if it is not one."""
        if not isinstance(doc, dict):
            raise ValueError("spill manifest is not a map")
        hosts, refs, segs = doc.get("hosts"), doc.get("refs"), doc.get("segments")
        if not (isinstance(hosts, list) and isinstance(refs, list) and isinstance(segs, list)
                and len(hosts) == len(refs) and all(isinstance(h, str) for h in hosts)
                and all(isinstance(r, bytes) and len(r) % 16 == 0 for r in refs)
                and all(isinstance(s, int) for s in segs)
                and isinstance(doc.get("block_urls"), int) and isinstance(doc.get("urls"), int)):
            raise ValueError("spill manifest has missing or mistyped fields")
        fronts = doc.get("fronts", [])
        if not (isinstance(fronts, list) and all(
                isinstance(f, list) and len(f) == 3 and isinstance(f[0], str) and isinstance(f[1], int)
                and f[1] > 0 and isinstance(f[2], bytes) for f in fronts)):
            raise ValueError("spill manifest has malformed fronts")
        return cls(doc["block_urls"], tuple(hosts), tuple(refs), tuple(segs), (), (), doc["urls"],
                   tuple((h, n, b) for h, n, b in fronts))


@dataclass(frozen=True, slots=True)
class SpillStats:
    """The store's figures, for the summary and the progress line."""

    urls: int            # URLs in blocks on disk and in fronts
    blocks: int          # blocks queued on disk
    segments: int        # segment files on disk
    disk_bytes: int      # their size
    blocks_written: int
    blocks_read: int
    resident: int = 0    # of ``urls``, those in fronts (in RAM, packed)


class _Queue:
    """One host's spilled queue: its fronts, then blocks on disk, refs from ``first`` on."""

    __slots__ = ("refs", "first", "n", "fronts")

    def __init__(self) -> None:
        self.refs = array("q")
        self.first = 0       # index (in refs, pairs) of its first queued block
        self.n = 0           # URLs in its fronts and blocks
        self.fronts: list[tuple[bytes, int]] | None = None  # (payload, URLs), first first


class FileSpill:
    """A :class:`~peer.core.frontier.spillqueue.SpillStore` in segment files under ``directory`` (module docstring).

    Disk errors raise :class:`~peer.errors.StateError` naming the file: the
    crawl state cannot be kept, and the peer stops with that line.
    """

    def __init__(self, directory: Path, *, block_urls: int = 64, segment_bytes: int = 64 << 20) -> None:
        self.directory = Path(directory)
        self.block_urls = max(1, block_urls)
        self.segment_bytes = max(1 << 16, segment_bytes)
        self._q: dict[str, _Queue] = {}
        self._live: dict[int, int] = {}      # segment -> blocks still queued in it
        self._sizes: dict[int, int] = {}     # segment -> bytes
        self._readers: dict[int, int] = {}   # segment -> read fd (insertion order = age)
        self._seg = -1                       # the segment being written
        self._wfd = -1
        self._wbuf = bytearray()             # blocks of the current segment not written yet
        self._wbase = 0                      # the segment offset where _wbuf begins
        self._dirty: set[int] = set()
        self._urls = 0
        self._resident = 0                   # of _urls, those in fronts
        self._blocks = 0
        self.blocks_written = 0
        self.blocks_read = 0
        self._pack = msgpack.Packer(use_bin_type=True).pack

    # -- opening ---------------------------------------------------------------

    @classmethod
    def open(cls, directory: Path, manifest: SpillManifest | None, *, block_urls: int = 64,
             segment_bytes: int = 64 << 20) -> FileSpill:
        """The store as ``manifest`` left it (None: empty); segments it does not name are deleted."""
        self = cls(directory, block_urls=block_urls, segment_bytes=segment_bytes)
        try:
            names = os.listdir(self.directory)  # made at the first block, not before
        except FileNotFoundError:
            names = []
        except OSError as e:
            raise StateError(f"{self.directory}: cannot open the frontier's segments "
                             f"({e.strerror or e})") from e
        on_disk = {n: name for name in names if (n := _seg_number(name)) is not None}
        keep = set(manifest.segments) if manifest is not None else set()
        for n, name in on_disk.items():
            if n not in keep:
                self._unlink(self.directory / name)
        for n in keep:
            if n not in on_disk:
                raise StateError(f"{self.directory / _seg_name(n)}: a frontier segment the "
                                 "snapshot names is missing; start with --fresh to discard this "
                                 f"peer's crawl state, or move {self.directory.parent} away")
            self._sizes[n] = os.path.getsize(self.directory / on_disk[n])
            self._live[n] = 0
        if manifest is not None:
            for host, raw in zip(manifest.hosts, manifest.refs):
                q = _Queue()
                q.refs.frombytes(raw)
                for i in range(0, len(q.refs), 2):
                    seg = q.refs[i] >> _OFF_BITS
                    if seg not in self._live:
                        raise StateError(f"{self.directory}: the snapshot's frontier manifest "
                                         f"names segment {seg}, which it does not list")
                    self._live[seg] += 1
                    q.n += q.refs[i + 1] & _N_MASK
                if q.n:
                    self._q[host] = q
                    self._urls += q.n
                    self._blocks += len(q.refs) // 2
            for host, n, payload in manifest.fronts:
                self.add_front(host, payload, n)
        self._seg = max([*on_disk, *keep], default=-1)
        return self

    # -- the SpillStore protocol -----------------------------------------------

    def put(self, host: str, flat: list[Any]) -> None:
        if not flat:
            return
        q = self._q.get(host)
        if q is None:
            q = self._q[host] = _Queue()
        self._write_block(q, flat)
        n = len(flat) // 2
        q.n += n
        self._urls += n

    def add_front(self, host: str, payload: bytes, n: int) -> None:
        """Queue a front (:func:`pack_head`'s ``payload``, ``n`` URLs) behind the host's fronts and
        before its blocks: a recovered snapshot's heads, in order (module docstring)."""
        q = self._q.get(host)
        if q is None:
            q = self._q[host] = _Queue()
        if q.fronts is None:
            q.fronts = []
        q.fronts.append((payload, n))
        q.n += n
        self._urls += n
        self._resident += n

    def take(self, host: str) -> list[Any]:
        q = self._q.get(host)
        if q is None:
            return []
        if q.fronts:
            payload, got = q.fronts.pop(0)
            if not q.fronts:
                q.fronts = None
            q.n -= got
            self._urls -= got
            self._resident -= got
            if q.n <= 0:
                del self._q[host]
            return self._unpack_front(host, payload, got)
        out = self._read_ref(q, q.first)
        q.first += 1
        self._blocks -= 1
        if q.first * 2 >= len(q.refs):
            q.refs = array("q")
            q.first = 0
        elif q.first >= 64 and q.first * 4 >= len(q.refs):
            del q.refs[: 2 * q.first]  # amortised O(1) like the frontier's heads
            q.first = 0
        got = len(out) // 2
        q.n -= got
        self._urls -= got
        if q.n <= 0:
            del self._q[host]
        return out

    def drop(self, host: str) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        while self.count(host):
            chunk = self.take(host)
            out += zip(chunk[::2], chunk[1::2])
        return out

    def iter_host(self, host: str) -> Iterator[tuple[str, int]]:
        q = self._q.get(host)
        if q is None:
            return
        for payload, n in list(q.fronts or ()):
            chunk = self._unpack_front(host, payload, n)
            yield from zip(chunk[::2], chunk[1::2])
        for i in range(q.first, len(q.refs) // 2):
            chunk = self._read(q.refs[2 * i], q.refs[2 * i + 1])
            yield from zip(chunk[::2], chunk[1::2])

    def count(self, host: str) -> int:
        q = self._q.get(host)
        return 0 if q is None else q.n

    def hosts(self) -> list[str]:
        return list(self._q)

    # -- recovery ----------------------------------------------------------------

    def take_done(self, host: str, done: set[str], before: list[tuple[str, int]]) -> int:
        """Recovery: drop the URLs in ``done`` from the front of ``host``'s queue.

        Blocks are taken in order until every URL of ``done`` is found (a
        host's queue is taken FIFO, so the done ones are in its first
        blocks). What those blocks held that is not done goes back at the
        front as new blocks, after ``before`` (the head the snapshot had in
        RAM, which came first). Returns how many blocks were read.
        """
        q = self._q.get(host)
        rest: list[Any] = []
        for u, d in before:
            rest.append(u)
            rest.append(d)
        read = 0
        while q is not None and done:
            chunk = self.take(host)
            read += 1
            for i in range(0, len(chunk), 2):
                if chunk[i] in done:
                    done.discard(chunk[i])
                else:
                    rest.append(chunk[i])
                    rest.append(chunk[i + 1])
            q = self._q.get(host)
        if rest:
            self._prepend(host, rest)
        return read

    def _prepend(self, host: str, flat: list[Any]) -> None:
        q = self._q.get(host)
        if q is None:
            q = self._q[host] = _Queue()
        if q.fronts:
            # Fronts are taken before blocks: in front of them, this must be a front too.
            n = len(flat) // 2
            q.fronts.insert(0, (self._pack(flat), n))
            q.n += n
            self._urls += n
            self._resident += n
            return
        old = q.refs[2 * q.first:]
        q.refs = array("q")
        q.first = 0
        step = 2 * self.block_urls
        for i in range(0, len(flat), step):
            self._write_block(q, flat[i : i + step])
        q.refs.extend(old)
        n = len(flat) // 2
        q.n += n
        self._urls += n

    # -- checkpoints ---------------------------------------------------------------

    def checkpoint(self) -> SpillManifest:
        """Every queued block, listed on the loop (no I/O); the frontier's tails first (module docstring)."""
        self._flush()
        hosts: list[str] = []
        refs: list[bytes] = []
        for host, q in self._q.items():
            if q.first * 2 < len(q.refs):
                hosts.append(host)
                refs.append(q.refs[2 * q.first :].tobytes())
        fronts = [(host, n, p) for host, q in self._q.items() if q.fronts for p, n in q.fronts]
        segments = tuple(sorted(s for s, n in self._live.items() if n))
        dead = tuple(sorted(s for s, n in self._live.items() if n == 0 and s != self._seg))
        dirty = tuple(str(self.directory / _seg_name(s)) for s in sorted(self._dirty))
        self._dirty.clear()
        return SpillManifest(self.block_urls, tuple(hosts), tuple(refs), segments, dirty, dead,
                             self._urls, tuple(fronts))

    def release(self, manifest: SpillManifest) -> None:
        """The snapshot naming ``manifest`` is on disk: delete the segments that were dead then."""
        for s in manifest.dead:
            if self._live.get(s) == 0 and s != self._seg:
                fd = self._readers.pop(s, -1)
                if fd >= 0:
                    os.close(fd)
                del self._live[s]
                self._sizes.pop(s, None)
                self._unlink(self.directory / _seg_name(s))

    def stats(self) -> SpillStats:
        return SpillStats(self._urls, self._blocks, len(self._sizes), sum(self._sizes.values()),
                          self.blocks_written, self.blocks_read, self._resident)

    def close(self) -> None:
        """Close every descriptor (the files stay: a checkpoint may name them)."""
        self._flush()
        for fd in self._readers.values():
            os.close(fd)
        self._readers.clear()
        if self._wfd >= 0:
            os.close(self._wfd)
            self._wfd = -1

    # -- files ---------------------------------------------------------------------

    def _write_block(self, q: _Queue, flat: list[Any]) -> None:
        payload = self._pack(flat)
        if self._wfd < 0 or self._sizes[self._seg] >= self.segment_bytes:
            self._roll()
        seg, off = self._seg, self._sizes[self._seg]
        buf = self._wbuf
        buf += _BLOCK.pack(len(payload), zlib.crc32(payload))
        buf += payload
        size = len(payload) + _BLOCK.size
        if len(buf) >= _WRITE_BYTES:
            self._flush()
        self._sizes[seg] = off + size
        self._live[seg] += 1
        self._dirty.add(seg)
        q.refs.append(seg << _OFF_BITS | off)
        q.refs.append(size << _N_BITS | len(flat) // 2)
        self._blocks += 1
        self.blocks_written += 1

    def _flush(self) -> None:
        buf = self._wbuf
        if not buf or self._wfd < 0:
            return
        try:
            view = memoryview(buf)
            while view:
                view = view[os.write(self._wfd, view):]
        except OSError as e:
            try:
                os.ftruncate(self._wfd, self._wbase)  # no half block for the next one to follow
            except OSError:
                pass
            raise StorageError(f"{self.directory / _seg_name(self._seg)}: cannot write the frontier "
                             f"({e.strerror or e})") from e
        self._wbase += len(buf)
        self._wbuf = bytearray()

    def _roll(self) -> None:
        self._flush()
        if self._wfd >= 0:
            os.close(self._wfd)
            self._wfd = -1
        self._seg += 1
        path = self.directory / _seg_name(self._seg)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._wfd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        except OSError as e:
            raise StorageError(f"{path}: cannot create a frontier segment ({e.strerror or e})") from e
        self._sizes[self._seg] = 0
        self._live[self._seg] = 0
        self._wbase = 0

    def _read_ref(self, q: _Queue, i: int) -> list[Any]:
        pos, meta = q.refs[2 * i], q.refs[2 * i + 1]
        out = self._read(pos, meta)
        seg = pos >> _OFF_BITS
        self._live[seg] -= 1
        return out

    def _read(self, pos: int, meta: int) -> list[Any]:
        seg, off, size = pos >> _OFF_BITS, pos & _OFF_MASK, meta >> _N_BITS
        path = self.directory / _seg_name(seg)
        if seg == self._seg and self._wfd >= 0 and off >= self._wbase:
            # Not written yet: a short queue spills and comes back within one write.
            return self._decode(bytes(self._wbuf[off - self._wbase : off - self._wbase + size]), meta, path, off)
        fd = self._readers.pop(seg, -1)
        try:
            if fd < 0:
                fd = os.open(path, os.O_RDONLY)
                if len(self._readers) >= _MAX_READERS:
                    oldest = next(iter(self._readers))
                    os.close(self._readers.pop(oldest))
            self._readers[seg] = fd
            data = os.pread(fd, size, off)
        except OSError as e:
            raise StateError(f"{path}: cannot read the frontier ({e.strerror or e})") from e
        return self._decode(data, meta, path, off)

    def _unpack_front(self, host: str, payload: bytes, n: int) -> list[Any]:
        try:
            return unpack_front(payload, n)
        except ValueError:
            pass
        raise StateError(f"{self.directory.parent}: the snapshot's head of {host!r} is corrupt; start "
                         f"with --fresh to discard this peer's crawl state, or move "
                         f"{self.directory.parent} away")

    def _decode(self, data: bytes, meta: int, path: Path, off: int) -> list[Any]:
        size = meta >> _N_BITS
        if len(data) == size >= _BLOCK.size:
            length, crc = _BLOCK.unpack_from(data)
            body = memoryview(data)[_BLOCK.size :]
            if length == len(body) and zlib.crc32(body) == crc:
                try:
                    chunk = msgpack.unpackb(body, raw=False)
                except Exception:  # checksummed bytes that do not decode: a bad writer
                    chunk = None
                if isinstance(chunk, list) and len(chunk) == 2 * (meta & _N_MASK):
                    self.blocks_read += 1
                    return chunk
        raise StateError(f"{path}: corrupt frontier block at byte {off}; start with --fresh to "
                         f"discard this peer's crawl state, or move {self.directory.parent} away")

    def _unlink(self, path: Path) -> None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError as e:
            raise StorageError(f"{path}: cannot delete ({e.strerror or e})") from e


def sync_segments(manifest: SpillManifest) -> None:
    """fsync the segments written before ``manifest`` was taken; safe in a worker thread."""
    for path in manifest.dirty:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue  # dead and released since: no block of it is named
        except OSError as e:
            raise StorageError(f"{path}: cannot open for fsync ({e.strerror or e})") from e
        try:
            os.fsync(fd)
        except OSError as e:
            raise StorageError(f"{path}: cannot fsync the frontier ({e.strerror or e})") from e
        finally:
            os.close(fd)
