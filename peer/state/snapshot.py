"""A snapshot's files: ``bloom-<g>.bin`` and ``snapshot-<g>.msgpack``, written and read back checked.

``snapshot-<g>.msgpack`` is the state at generation g: one msgpack map (peer,
ring, generation, created, written, bloom, urls, depths, forwards, counters,
spill) + a 24-byte trailer (magic "RCSNAPSH", u32 format version, u64 payload
length, u32 crc32 of the payload); little-endian. ``bloom-<g>.bin`` is the
Bloom filter at g (``peer.state.bloomfile.write_bloom``: its own header and
crc); the snapshot names it.

Incremental (format 2): with a spill store the snapshot's ``urls`` are only
what the frontier held in RAM (its per-host heads and the jobs in flight),
and ``spill`` lists the blocks of the rest, 16 bytes a block of 64 URLs; the
URLs themselves are written once, to the segments, as they spill. So a
snapshot costs the heads and the manifest, not the frontier: measured in
scripts/bench_spill.py (docs/benchmarks/scale.md). Format 1 (every queued URL in
``urls``, no ``spill``) is still read.

Packed heads (format 3): the frontier's heads are not in ``urls`` but in the
manifest's ``fronts``, one msgpack payload a host (peer/state/spill.py,
"Heads"), in front of the fronts the spill store still held packed. A
restart reads 20,000 payloads instead of 1.3 M strings, and splits nothing
by host; ``urls`` keeps the jobs in flight and the other few, and ``recovering``
lists apart, as [urls, depths], the URLs a recovered journal queued that the
frontier has not taken back yet (a restart puts them back after its first
requests, and a snapshot a second later finds most still there): a restart
queues them as they are, behind every head and block, instead of splitting
them by host with the heads (interleaved hosts made that a run a URL). A snapshot
with no front is written as format 2, which earlier builds read; they refuse
format 3 in one line (format 2 lists the heads as URLs, each build reads it).

In what order these files reach the disk, relative to the journals and the
spill segments, and why, is rule 4 of ``peer.state.journal``'s docstring
("Crash ordering"): :func:`write_snapshot_files` syncs the segments first, then
writes the Bloom file, then the snapshot, each atomically.
"""

from __future__ import annotations

import dataclasses
import os
import struct
import time
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import msgpack

from peer.core.seen.bloom import BloomFilter
from peer.core.run.layout import StateFile
from peer.errors import StateError, StorageError
from peer.state.bloomfile import write_bloom
from peer.state.fsio import write_atomic
from peer.state.generations import damaged
from peer.state.spill import Front, SpillManifest, pack_head, sync_segments, unpack_front

__all__ = ["HandedState", "SnapshotStats", "PendingSnapshot", "write_snapshot_files", "read_snapshot"]

#: (revisit records, cookies) handed to us with their hosts, as ``ring.messages.HostState`` carries them.
HandedState = tuple[Sequence[Any], Sequence[Any]]

_SNAP_MAGIC = b"RCSNAPSH"
_SNAP_VERSION = 3     # 2 when the manifest has no fronts (module docstring)
_SNAP_READS = (1, 2, 3)  # 1: every queued URL in the snapshot, no spill manifest; 3: packed heads
_SNAP_TRAILER = struct.Struct("<8sIQI")  # magic, version, payload length, crc32


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
    spilled: int = 0                   # URLs in spill blocks and fronts the snapshot names (not written again)
    heads: int = 0                     # hosts' heads packed (format 3)


@dataclass(frozen=True, slots=True)
class PendingSnapshot:
    """A snapshot begun by :meth:`peer.state.journal.PeerState.prepare_snapshot`."""

    generation: int
    old_journal: int                   # bytes of the journal it replaces


def write_snapshot_files(
    directory: Path, gen: int, peer_id: str, ring: str, created: float | None,
    bloom: BloomFilter, queued: Iterable[tuple[str, int]],
    forwards: Iterable[tuple[str, int]], counters: Mapping[str, float], old_journal: int,
    spill: SpillManifest | None = None, handed: Iterable[tuple[str, str]] = (),
    handed_state: HandedState = ((), ()), heads: Iterable[tuple[str, list[Any]]] = (),
    packed: bool = True, recovering: Sequence[tuple[str, int]] = (),
) -> SnapshotStats:
    """Write ``bloom-<gen>.bin`` and ``snapshot-<gen>.msgpack`` of the state given.

    ``heads``: (host, flat ``[url, depth, ...]``) of the frontier's heads in RAM,
    packed here into the manifest's fronts (module docstring); ``queued`` then
    holds the rest (the jobs in flight). Without a ``spill`` manifest they go
    into ``urls`` as before, and so do they and the manifest's fronts with ``packed``
    False (format 2, which a build before packed heads reads: ``[frontier] packed_heads``).
    ``recovering``: a recovered journal's URLs the frontier has not taken back yet
    (``CrawlCore.defer_recovered``), listed apart (format 3) or, not ``packed``, after
    ``urls``.

    ``handed``: (url, host) of the URLs other peers handed us as fetched
    (``peer.core.handoff.moves``): a restart must still drop them from its
    queue and pass them on when their hosts move again. ``handed_state``:
    (revisit records, cookies) other peers handed us with their hosts that
    nothing else here holds on disk yet (``peer.core.handoff.state``): the
    journal that held them is dropped on the strength of this snapshot.
    """
    t0 = time.perf_counter()
    if spill is not None:
        sync_segments(spill)  # the blocks it names are on disk before it is
    bloom_name = StateFile.BLOOM.file_name(gen)
    write_bloom(bloom, directory / bloom_name)
    # Written as given: recovery keeps a duplicate URL's first depth, and
    # deduplicating here would cost a million-entry dict on every snapshot.
    urls: list[str] = []
    depths: list[int] = []
    add_url, add_depth = urls.append, depths.append
    for url, depth in queued:
        add_url(url)
        add_depth(depth)
    fronts: list[Front] = []
    for host, flat in heads:
        if not flat:
            continue
        if spill is None or not packed:
            urls += flat[0::2]
            depths += flat[1::2]
        else:
            fronts.append((host, len(flat) // 2, pack_head(flat)))
    if spill is not None and not packed and spill.fronts:
        # After the heads: recovery gives a host's runs back in the order listed.
        for _, n, payload in spill.fronts:
            flat = unpack_front(payload, n)
            urls += flat[0::2]
            depths += flat[1::2]
        spill = dataclasses.replace(spill, fronts=(), urls=spill.urls - sum(f[1] for f in spill.fronts))
    spill_doc = spill.to_doc(tuple(fronts)) if spill is not None else None
    back: list[list[Any]] | None = None
    if recovering and packed:
        back = [[u for u, _ in recovering], [d for _, d in recovering]]
    else:
        for url, depth in recovering:
            add_url(url)
            add_depth(depth)
    fwd = [(u, d) for u, d in forwards]
    doc = {
        "peer": peer_id, "ring": ring, "generation": gen,
        "created": created, "written": time.time(), "bloom": bloom_name,
        # Two flat lists: a byte a URL smaller than pairs, and dict(zip()) rebuilds
        # the queue in C.
        "urls": urls, "depths": depths,
        "forwards": fwd, "counters": dict(counters),
        "spill": spill_doc,
        # Optional (format 3): [urls, depths] of a recovered journal not yet put back.
        **({"recovering": back} if back is not None else {}),
        # Optional: a snapshot of an earlier build has none (read as empty).
        "handed": [list(p) for p in handed],
        # Optional too: (revisit records, cookies) as HostState carries them.
        "handed_state": [list(handed_state[0]), list(handed_state[1])],
    }
    payload = msgpack.packb(doc, use_bin_type=True)
    version = _SNAP_VERSION if back is not None or (spill_doc is not None and "fronts" in spill_doc) else 2
    trailer = _SNAP_TRAILER.pack(_SNAP_MAGIC, version, len(payload), zlib.crc32(payload))
    snap_path = directory / StateFile.SNAPSHOT.file_name(gen)
    try:
        write_atomic(snap_path, (payload, trailer))
    except OSError as e:
        raise StorageError(f"{snap_path}: cannot write snapshot ({e.strerror or e})") from e
    return SnapshotStats(
        generation=gen, queued=len(urls) + sum(f[1] for f in fronts) + (len(back[0]) if back else 0),
        forwards=len(fwd),
        snapshot_bytes=len(payload) + len(trailer),
        bloom_bytes=os.path.getsize(directory / bloom_name),
        journal_bytes=old_journal, seconds=time.perf_counter() - t0,
        spilled=spill.urls if spill is not None else 0, heads=len(fronts),
    )


def _pair_of_lists(v: Any) -> bool:
    return (isinstance(v, list) and len(v) == 2 and isinstance(v[0], list) and isinstance(v[1], list)
            and len(v[0]) == len(v[1]))


def read_snapshot(directory: Path, name: str, gen: int, peer_id: str | None,
                  ring: str | None) -> dict[str, Any]:
    """The checked map of snapshot ``name`` (generation ``gen``) of this peer and ring.

    ``peer_id`` and ``ring`` None: of any peer and ring (a tool that reads a
    data_dir learns whose it is from here).
    """
    try:
        data = (directory / name).read_bytes()
    except OSError as e:
        raise damaged(directory, name, f"cannot read snapshot ({e.strerror or e})") from e
    t = _SNAP_TRAILER.size
    if len(data) < t:
        raise damaged(directory, name, f"not a complete snapshot ({len(data)} bytes)")
    magic, version, length, crc = _SNAP_TRAILER.unpack_from(data, len(data) - t)
    if magic != _SNAP_MAGIC:
        raise damaged(directory, name, "not a complete ringcrawl snapshot (bad trailer)")
    if version not in _SNAP_READS:
        raise damaged(directory, name, f"snapshot format {version} is not supported "
                                       f"(this build reads {', '.join(map(str, _SNAP_READS))})")
    if length != len(data) - t:
        raise damaged(directory, name, f"snapshot length {len(data) - t} does not match its "
                                       f"trailer ({length})")
    payload = memoryview(data)[: len(data) - t]
    if zlib.crc32(payload) != crc:
        raise damaged(directory, name, "snapshot is corrupt (checksum mismatch)")
    try:
        doc = msgpack.unpackb(payload, raw=False, strict_map_key=True)
        ok = (
            isinstance(doc, dict) and doc.get("generation") == gen
            and doc.get("bloom") == StateFile.BLOOM.file_name(gen)
            and isinstance(doc.get("urls"), list) and isinstance(doc.get("depths"), list)
            and len(doc["urls"]) == len(doc["depths"])
            and isinstance(doc.get("forwards"), list) and isinstance(doc.get("counters"), dict)
            and isinstance(doc.get("created"), (int, float))
            and isinstance(doc.get("handed", []), list)
            and _pair_of_lists(doc.get("recovering", [[], []]))
            and isinstance(doc.get("handed_state", [[], []]), list) and len(doc.get("handed_state", [[], []])) == 2
            and all(isinstance(x, list) for x in doc.get("handed_state", [[], []]))
            and all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
                    for p in doc.get("handed", []))
        )
    except Exception as e:  # any decoding failure of checksummed bytes is a bad writer
        raise damaged(directory, name, f"snapshot is malformed ({e})") from e
    if not ok:
        raise damaged(directory, name, "snapshot is malformed (missing or mistyped fields)")
    if (peer_id, ring) != (None, None) and (doc.get("peer") != peer_id or doc.get("ring") != ring):
        raise damaged(directory, name, f"state of peer {doc.get('peer')!r} in ring "
                                       f"{doc.get('ring')!r}, but this is peer {peer_id!r} "
                                       f"in ring {ring!r}")
    return cast(dict[str, Any], doc)  # checked field by field above
