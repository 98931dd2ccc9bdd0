"""``python -m ring seed add URL... | --file F``: seeds for a running ring, in batches, to any live peer (tool).

**Reading.** URLs come from the command line, or from ``--file F`` (``-``:
standard input): plain or gzip, told by the magic bytes (RFC 1952 §2.3.1,
``1f 8b``), never by the name, one URL a line, read as a stream: a batch
of at most ``crawl.seed_add_batch`` lines and :data:`MAX_BATCH_BYTES` at a
time, so the tool holds the ``window`` batches in flight (``--window``,
default :data:`WINDOW`) whatever the file's length (millions of lines). A line that the wire cannot carry (not UTF-8, or longer than
``ring.messages.MAX_STR`` bytes) travels as a count, and the peer counts
it ``invalid``; every other line travels as it is, and the peer judges it
as a ``crawl.seeds_file`` line (blank lines and ``#`` comments
``skipped``), so there is one set of checks, at the peer.

**Sending.** Each batch is one :class:`~ring.messages.SeedAddRequest` with
a fresh 64-bit nonce, to the peer that took the last one; first to
cluster.toml's ``[[peer]]`` entries in their order; ``window`` batches
at a time. The answer comes once
the batch is on that peer's disk and its owners acked the URLs forwarded
to them, or ``crawl.seed_add_wait`` later, ``durable`` (``ring.seedadds``).
A peer that does not answer within ``--timeout`` is given up and the
*same* request goes to the next peer: a peer that took it answers what it
answered (the nonce), another judges it anew, so a lost answer may count a
batch at two peers, and its URLs reach their owners twice, whose seen sets
fetch each once. ``busy`` (its forwarding backlog is full, or
``crawl.seed_add_waiting`` batches wait there) is asked again at the same
peer every :data:`BUSY_WAIT` seconds for at most ``busy_for`` seconds
(``--busy-for``, default :data:`BUSY_FOR`, at most an hour), then the
next peer is asked, for as long;
``leaving`` and ``no_crawl`` go to the next peer; ``over_cap`` (the peer's
``crawl.seed_add_batch`` is smaller than this cluster.toml's) stops the run.

**Resumes nothing.** A run that stops (no peer answers, Ctrl-C) says how
many lines the ring took (:attr:`SeedAddRun.taken_lines`) and the first
line of the first batch it did not take (:attr:`SeedAddRun.untaken_from`;
some later batches in the window may have been taken): a second run of the
same file sends every line again (owners refuse those seen as ``seen``);
``tail -n +N`` from that line sends the rest.
"""

from __future__ import annotations

import gzip
import io
import os
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO

import trio

from ring.io.curve import CurveKeys
from ring.messages import MAX_STR, SeedAddReply, SeedAddRequest, SeedAddStatus
from ring.tools.client import Contact, ask_seed_add

__all__ = ["BUSY_FOR", "BUSY_WAIT", "MAX_BATCH_BYTES", "MAX_WINDOW", "WINDOW", "Batch", "SeedAddRun", "SeedInputError", "batches",
           "format_run", "open_lines", "send_batches"]

#: Bytes of lines a batch carries at most: the codec's frame is 8 MiB (ring.messages.MAX_FRAME).
MAX_BATCH_BYTES = 4 << 20
#: Batches in flight at once: a peer's answer waits for the owners' acks (a batch age
#: and a commit each way, ~0.4 s on the loaded 2-core machine), so one at a time left the
#: peers idle: 2,500 lines a second for 100,000 lines (scripts/bench_seed_add.py).
WINDOW = 8
#: The largest ``--window``: each batch in flight is held (up to MAX_BATCH_BYTES), so
#: 64 bound the tool's memory to 256 MiB, and one tool fills a peer's default
#: ``crawl.seed_add_waiting`` (64) alone.
MAX_WINDOW = 64
#: Seconds before a busy peer is asked again.
BUSY_WAIT = 0.5
#: Seconds a batch keeps asking a busy peer before the next peer is asked: a minute
#: of a backlog that does not drain is a peer (or its owners) not keeping up.
BUSY_FOR = 60.0
GZIP_MAGIC = b"\x1f\x8b"
#: Outcomes that put a URL on its way to be crawled; every other one but ``skipped`` refused it.
ROUTED = ("queued", "forwarded")
SKIPPED = "skipped"


class SeedInputError(Exception):
    """The input cannot be read (a missing file, a broken gzip stream): the user's to fix, exit 2."""


@dataclass(frozen=True, slots=True)
class Batch:
    """Lines to send as they are, and how many could not travel (counted ``invalid`` by the peer)."""

    lines: tuple[str, ...]
    unreadable: int
    first: int  # the line number (1-based) of its first line

    @property
    def size(self) -> int:
        return len(self.lines) + self.unreadable


def open_lines(path: str) -> Iterator[bytes]:
    """The raw lines of ``path`` (``-``: standard input), plain or gzip; :class:`SeedInputError` if unreadable."""
    try:
        raw: IO[bytes] = sys.stdin.buffer if path == "-" else open(path, "rb")
    except OSError as exc:
        raise SeedInputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return _lines(path, raw, close=path != "-")


def _lines(path: str, raw: IO[bytes], close: bool) -> Iterator[bytes]:
    buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)  # type: ignore[type-var]
    try:
        f: IO[bytes] = buffered
        if buffered.peek(2)[:2] == GZIP_MAGIC:
            f = io.BufferedReader(gzip.GzipFile(fileobj=buffered, mode="rb"), 1 << 16)  # type: ignore[arg-type]
        n = 0
        try:
            while True:
                line = f.readline(MAX_STR + 2)
                if not line:
                    return
                n += 1
                if len(line) == MAX_STR + 2 and not line.endswith(b"\n"):
                    while line and not line.endswith(b"\n"):  # read past it without holding it
                        line = f.readline(1 << 16)
                    yield b"\xff"  # no UTF-8: travels as unreadable
                    continue
                yield line
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise SeedInputError(f"{path}: a broken gzip stream after line {n:,} ({exc})") from None
        except OSError as exc:
            raise SeedInputError(f"{path}: reading stopped after line {n:,} ({exc.strerror or exc})") from None
    finally:
        if close:
            raw.close()


def batches(lines: Iterable[bytes], cap: int, max_bytes: int = MAX_BATCH_BYTES) -> Iterator[Batch]:
    """``lines`` cut into batches of at most ``cap`` lines and ``max_bytes`` (module docstring)."""
    out: list[str] = []
    unreadable = size = number = 0
    first = 1
    for raw in lines:
        number += 1
        text: str | None
        try:
            text = raw.rstrip(b"\r\n").decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is None or len(text) > MAX_STR:
            unreadable += 1
        else:
            out.append(text)
            size += len(text) + 3  # and its msgpack header
        if len(out) + unreadable >= cap or size >= max_bytes:
            yield Batch(tuple(out), unreadable, first)
            out, unreadable, size, first = [], 0, 0, number + 1
    if out or unreadable:
        yield Batch(tuple(out), unreadable, first)


@dataclass(slots=True)
class SeedAddRun:
    """What a run did: the counts the peers answered, and where it stopped if it did."""

    counts: Counter[str] = field(default_factory=Counter)
    batches: int = 0
    taken_lines: int = 0
    durable: int = 0  # batches answered before every owner acked
    unacked: int = 0  # their URLs not yet acked then
    peers: Counter[str] = field(default_factory=Counter)  # batches taken, by peer
    stopped: str = ""  # why the ring did not take the rest ("" : it took every line)
    bad_input: bool = False  # it stopped because the input broke off (the user's to fix)
    #: The first line of the first batch not taken (batches go ``WINDOW`` at a time, so some
    #: after it may have been): a second run from it sends every line not taken.
    untaken_from: int = 0

    def stop(self, why: str, line: int) -> None:
        if not self.stopped:
            self.stopped = why
        self.untaken_from = min(self.untaken_from or line, line)

    def took(self, reply: SeedAddReply, batch: Batch) -> None:
        self.counts.update(dict(reply.counts))
        self.batches += 1
        self.taken_lines += batch.size
        self.peers[reply.sender] += 1
        if reply.status is SeedAddStatus.DURABLE:
            self.durable += 1
            self.unacked += reply.unacked

    @property
    def routed(self) -> int:
        return sum(self.counts[k] for k in ROUTED)

    @property
    def refused(self) -> dict[str, int]:
        return {k: n for k, n in sorted(self.counts.items()) if k not in ROUTED and k != SKIPPED and n}


_WHY = {
    SeedAddStatus.LEAVING: "it is leaving the ring",
    SeedAddStatus.NO_CRAWL: "it runs no crawl",
}


async def send_batches(ring_name: str, contacts: list[Contact], source: Iterable[Batch], timeout: float,
                       keys: CurveKeys | None = None,
                       progress: Callable[[SeedAddRun], None] | None = None,
                       run: SeedAddRun | None = None, window: int = WINDOW,
                       busy_for: float = BUSY_FOR) -> SeedAddRun:
    """Each batch of ``source`` to a live peer of ``contacts``, ``window`` at a time (module
    docstring); what was taken, filled into ``run`` as it goes (a caller interrupted still has it).

    Raises HandshakeRefused when a peer refuses this tool's key (the user's to fix). An input
    that breaks off (:class:`SeedInputError`) stops the run, said in ``stopped`` with ``bad_input``.
    """
    run = run if run is not None else SeedAddRun()
    sender = _Sender(ring_name, contacts, timeout, keys, run, busy_for)
    room = trio.Semaphore(window)
    batches_in = iter(source)

    async def send(batch: Batch) -> None:
        try:
            await sender.send(batch)
        finally:
            room.release()
        if progress is not None:
            progress(run)

    async with trio.open_nursery() as nursery:
        while not run.stopped:
            await room.acquire()
            try:
                batch = next(batches_in, None)
            except SeedInputError as exc:
                run.stop(str(exc), run.taken_lines + 1)  # read ahead of every batch not sent
                run.bad_input = True
                batch = None
            if batch is None or run.stopped:
                room.release()
                break
            nursery.start_soon(send, batch)
    return run


class _Sender:
    """One batch to a live peer (module docstring): asked again while busy, the next peer on silence."""

    def __init__(self, ring_name: str, contacts: list[Contact], timeout: float, keys: CurveKeys | None,
                 run: SeedAddRun, busy_for: float) -> None:
        self._ring = ring_name
        self._busy_for = busy_for
        self._contacts = contacts
        self._timeout = timeout
        self._keys = keys
        self._run = run
        self._at = 0  # the peer that took the last batch

    async def send(self, batch: Batch) -> None:
        run, contacts = self._run, self._contacts
        request = SeedAddRequest(self._ring, "ring-seed-add", int.from_bytes(os.urandom(8), "big"),
                                 batch.lines, batch.unreadable)
        tried: list[str] = []
        busy = 0
        busy_until: float | None = None  # set at this peer's first busy answer
        at = self._at
        while len(tried) < len(contacts) and not run.stopped:
            contact = contacts[at]
            reply = await ask_seed_add(contact, request, self._timeout, self._keys)
            if reply is not None and reply.status is SeedAddStatus.BUSY:
                now = trio.current_time()
                busy_until = now + self._busy_for if busy_until is None else busy_until
                if now + BUSY_WAIT <= busy_until:
                    busy += 1
                    await trio.sleep(BUSY_WAIT)
                    continue
            if reply is not None and reply.status in (SeedAddStatus.ACKED, SeedAddStatus.DURABLE):
                run.took(reply, batch)
                self._at = at
                return
            if reply is not None and reply.status is SeedAddStatus.OVER_CAP:
                run.stop(f"peer {contact.id} takes fewer lines a batch than this cluster.toml's "
                         f"crawl.seed_add_batch ({batch.size:,}): set the same value as the peers'", batch.first)
                return
            why = "no answer" if reply is None else _WHY.get(
                reply.status, f"busy for {self._busy_for:g} s, asked {busy + 1} times")
            tried.append(f"{contact.id} ({why})")
            busy, busy_until = 0, None
            at = (at + 1) % len(contacts)
        run.stop(f"no peer took the batch from line {batch.first:,}: {', '.join(tried)}", batch.first)


def format_run(run: SeedAddRun, ring_name: str) -> str:
    """The lines the tool prints at the end: what the ring took, by outcome."""
    c = run.counts
    peers = ", ".join(f"{p} {n:,}" for p, n in sorted(run.peers.items())) or "none"
    out = [f"ring {ring_name!r} took {run.taken_lines:,} lines in {run.batches:,} batches (by peer: {peers})"]
    routed = ", ".join(f"{k} {c[k]:,}" for k in ROUTED if c[k]) or "none"
    out.append(f"  routed   {run.routed:,}: {routed}")
    refused = run.refused
    out.append(f"  refused  {sum(refused.values()):,}" +
               (": " + ", ".join(f"{k} {n:,}" for k, n in refused.items()) if refused else ""))
    if c[SKIPPED]:
        out.append(f"  skipped  {c[SKIPPED]:,} (blank or # comment)")
    if run.durable:
        out.append(f"  {run.unacked:,} forwarded URLs of {run.durable:,} batches were not yet acked by their "
                   "owners when answered: they are on the disk of the peer that took them, which sends "
                   "them until acked")
    elif c["forwarded"]:
        out.append("  every forwarded URL was acked by its owner")
    return "\n".join(out)
