"""The journal's bytes: its magic, records and frames, and reading a journal back.

``journal-<g>.log`` is what happened after snapshot g: the magic
"RCJOURN1" (last byte = format version), then frames.

A *frame* is what one :meth:`peer.state.journal.PeerState.commit` writes:
u32 length, u32 crc32 of the payload, and the payload, a stream of msgpack
records ``[tag, ...]``: ``[0, url, depth]`` queued, ``[1, url, row]`` done,
``[2, [[url, depth], ...]]`` forwarded, ``[3, {name: number}]`` counters,
``[4, url]`` seen, ``[5, revisits, cookies]`` a host's state handed to us
(``peer.core.handoff.state``: the wire records of ``ring.messages.HostState``,
written before it is acked). Framing a commit rather than each record keeps the hot
path to one msgpack ``pack`` and a ``bytearray`` append (no crc or header per
record, ~8 fewer bytes each), and makes a commit all-or-nothing at recovery.

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

What must be on disk before what is argued in ``peer.state.journal``'s
docstring ("Crash ordering"); what a replayed record means to the recovered
state, in ``peer.state.recovery``'s.
"""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path
from typing import Any

import msgpack

from peer.state.generations import damaged

__all__ = ["QUEUED", "DONE", "FORWARDED", "COUNTERS", "SEEN", "STATE", "JOURNAL_MAGIC", "FRAME",
           "MAX_FRAME", "replay"]

# Record tags; ints, not strings: one byte each on the wire.
QUEUED, DONE, FORWARDED, COUNTERS, SEEN, STATE = range(6)
_ARITY = {QUEUED: 3, DONE: 3, FORWARDED: 2, COUNTERS: 2, SEEN: 2, STATE: 3}

JOURNAL_MAGIC = b"RCJOURN1"
_JOURNAL_FAMILY = JOURNAL_MAGIC[:-1]
FRAME = struct.Struct("<II")  # payload length, crc32 of the payload
MAX_FRAME = 0xFFFFFFFF
_MISSING = object()


def replay(
    directory: Path, name: str, queue: dict[str, int], forwards: list[tuple[str, int]],
    rows: list[list[Any]], counters: dict[str, float], added: list[str],
    missed: list[str] | None = None, *, fsync: bool = False, seen: list[str] | None = None,
    state: tuple[list[Any], list[Any]] | None = None,
    done: list[str] | None = None,
) -> tuple[int, int]:
    """Apply journal ``name`` to the given state; returns (records, torn bytes).

    A torn tail is truncated away (fsynced if ``fsync``); what each record
    does to the state is ``peer.state.recovery``'s docstring.
    """
    path = directory / name
    try:
        data = path.read_bytes()
    except OSError as e:
        raise damaged(directory, name, f"cannot read journal ({e.strerror or e})") from e
    size = len(data)
    head = len(JOURNAL_MAGIC)
    if size < head and JOURNAL_MAGIC.startswith(data):
        return 0, 0  # cut while being created: nothing was ever committed to it
    if data[: len(_JOURNAL_FAMILY)] != _JOURNAL_FAMILY:
        raise damaged(directory, name, "not a ringcrawl journal (bad magic)")
    if data[:head] != JOURNAL_MAGIC:
        raise damaged(directory, name, f"journal format {data[:head]!r} is not supported "
                                       f"(this build reads {JOURNAL_MAGIC!r})")
    view = memoryview(data)
    off, records = head, 0
    add, pop, row_add = added.append, queue.pop, rows.append
    while off < size:
        if size - off >= FRAME.size:
            length, crc = FRAME.unpack_from(data, off)
            end = off + FRAME.size + length
            good = length > 0 and end <= size and zlib.crc32(view[off + FRAME.size : end]) == crc
        else:
            good = False
        if not good:
            if _torn_tail(data[off:]):
                break
            raise damaged(directory, name, f"corrupt journal at byte {off} of {size} "
                                           f"(bad frame with {size - off} bytes to the end)")
        unpacker = msgpack.Unpacker(raw=False, max_buffer_size=max(length, 1 << 20))
        unpacker.feed(view[off + FRAME.size : end])
        try:
            for rec in unpacker:
                tag = rec[0]
                if tag == QUEUED:
                    _, url, depth = rec
                    add(url)
                    if url not in queue:
                        queue[url] = depth
                elif tag == DONE:
                    _, url, row = rec
                    if done is not None:
                        done.append(url)
                    if pop(url, _MISSING) is _MISSING and missed is not None:
                        missed.append(url)  # queued before the snapshot, in the spill store
                    if row is not None:
                        row_add(row)
                elif tag == FORWARDED:
                    _, items = rec
                    forwards.extend((u, d) for u, d in items)
                elif tag == COUNTERS:
                    _, values = rec
                    counters.update(values)
                elif tag == SEEN:
                    # Handed to us as fetched by its host's previous owner: if it
                    # was queued here too (a link came first), its job must not
                    # run after a restart either (peer.core.handoff.moves:
                    # Handoffs.handed_in keeps that in memory only). Not looked
                    # for in the spill store: most such URLs were never queued,
                    # and each would cost a read of its host's blocks.
                    _, url = rec
                    add(url)
                    pop(url, None)
                    if seen is not None:
                        seen.append(url)  # handed to us as fetched by another peer
                elif tag == STATE:
                    # A host's revisit records and cookies its previous owner
                    # handed us, journaled before their ack (peer.state.journal rule 6).
                    _, revisits, cookies = rec
                    if state is not None:
                        state[0].extend(revisits)
                        state[1].extend(cookies)
                else:
                    raise ValueError(f"unknown record tag {tag!r}")
                records += 1
        except Exception as e:  # the crc matched: a bad writer or another format
            raise damaged(directory, name, f"undecodable frame at byte {off} ({e})") from e
        off = end
    if off < size:
        _truncate(directory, name, off, fsync)
    return records, size - off


def _truncate(directory: Path, name: str, size: int, fsync: bool) -> None:
    try:
        with open(directory / name, "r+b") as f:
            f.truncate(size)
            if fsync:
                os.fsync(f.fileno())
    except OSError as e:
        raise damaged(directory, name,
                      f"cannot truncate the torn journal tail ({e.strerror or e})") from e


def _torn_tail(tail: bytes) -> bool:
    """Whether ``tail`` (a bad frame to the end of the file) is an interrupted append."""
    for t in (tail, tail.rstrip(b"\0")):
        if len(t) < FRAME.size:
            return True
        length, _ = FRAME.unpack_from(t)
        body = t[FRAME.size :]
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
