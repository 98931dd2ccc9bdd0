"""Recovery: the newest snapshot, its journal replayed, and the spill blocks taken since.

The newest snapshot, then its journal replayed in order. queued adds
the URL to the queue (a URL queued twice keeps its first depth and place) and
to the Bloom filter; done takes it off the queue and keeps its row (the page
row may not have reached DuckDB before the kill; re-insert it idempotently);
forwarded adds to the URLs to re-send; counters update; seen adds to the
Bloom filter, takes the URL off the queue if it was queued since the
snapshot, and adds it to ``handed`` (a URL another peer fetched, handed over
on a ring change: a queued copy of it must not run, and it goes on with its
host when the host moves again; the snapshot keeps the ``handed`` of before it);
state adds a host's revisit records and cookies handed to us to ``handed_state``,
after the snapshot's (the engine imports them again, each part keeping the newer).
A done URL that is neither in the snapshot's heads nor queued since was in
the spill store: a host's queue is taken FIFO, so it is in the host's first
blocks, and recovery reads that host's blocks from the front until every
such URL is found (:meth:`peer.state.spill.FileSpill.take_done`); the rest of
those blocks and the host's snapshot head go back in front, in order. Every
other spilled host's snapshot head is handed back as it is
(:attr:`Recovered.heads`), for the frontier to put in RAM in front of the
host's blocks, as it was. A snapshot of format 3 has no such list: its
heads are the store's fronts (``peer.state.spill``, "Heads"), packed a host
each, and go back into the store as they are, no URL of them made a string
until its host starts; the URLs done since that were in them are found as
those in the blocks are (``take_done`` takes a host's fronts first). So
recovery reads the snapshot (heads and
manifest), the journal and the few blocks taken since, never the whole
frontier; and with a spill store it never puts the snapshot's URLs, millions
at a restart, into a dict: the journal is replayed into an empty queue and
the snapshot's list is split by host after (``_split_heads``).

Which generation is whole after a crash, and so which files recovery keeps
and which it deletes as strays, follows from rule 4 of
``peer.state.journal``'s docstring ("Crash ordering"). The journal's torn
tails are told from corruption in ``peer.state.frames``.
"""

from __future__ import annotations

import gc
import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from peer.core.frontier.order import depth_of
from peer.core.seen.bloom import BloomFilter
from peer.core.run.layout import StateFile
from peer.core.urls.normalize import host_key
from peer.results.schema import Value
from peer.state.bloomfile import read_bloom
from peer.state.frames import JOURNAL_MAGIC, replay
from peer.state.generations import SPILL_DIR, clean, damaged, list_dir
from peer.state.snapshot import read_snapshot
from peer.state.spill import FileSpill, SpillManifest

__all__ = ["Recovered", "recover"]


@dataclass(frozen=True, slots=True)
class Recovered:
    """What :meth:`PeerState.recover` found: the state at the moment of the crash."""

    generation: int                    # the snapshot recovery started from
    queued: dict[str, int] = field(repr=False)           # url -> depth, in queue order
    forwards: list[tuple[str, int]] = field(repr=False)  # (url, depth) for the outbox again
    rows: list[list[Value]] = field(repr=False)          # page rows done since the snapshot (PageRow.values)
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
    # url -> host of the URLs other peers handed us as fetched (the snapshot's and the
    # journal's seen records): peer.core.handoff.moves keeps them across a restart.
    handed: dict[str, str] = field(default_factory=dict, repr=False)
    # (revisit records, cookies) other peers handed us with their hosts, acked once
    # journaled (the snapshot's, then the journal's, in order): peer.core.handoff.state.
    handed_state: tuple[list[Any], list[Any]] = field(default_factory=lambda: ([], []), repr=False)
    # A spilled host's snapshot head, flat ``[url, depth, ...]``: it goes back in RAM in
    # front of the host's blocks (Frontier.adopt), not through the store.
    heads: dict[str, list[Any]] = field(default_factory=dict, repr=False)
    resident: int = 0                  # of ``spilled``, URLs in the store's fronts (packed heads, in RAM)

    @property
    def head_urls(self) -> int:
        """URLs in ``heads``."""
        return sum(len(h) for h in self.heads.values()) // 2

    def all_heads(self) -> Iterator[tuple[str, int]]:
        """The (url, depth) of ``heads``, host by host."""
        for head in self.heads.values():
            yield from zip(head[::2], head[1::2])

    def all_queued(self) -> Iterator[tuple[str, int]]:
        """Every queued (url, depth): the spilled hosts' heads and blocks (read from disk), then ``queued``.

        Depths, not the frontier's slots (frontier rule 11): for the tools that pass a queue on.
        """
        for url, slot in self.all_heads():
            yield url, depth_of(slot)
        if self.spill is not None:
            for host in self.spill.hosts():
                for url, slot in self.spill.iter_host(host):
                    yield url, depth_of(slot)
        for url, slot in self.queued.items():
            yield url, depth_of(slot)


def recover(
    directory: Path, peer_id: str, ring: str, *, fsync: bool = False,
    spill_block: int = 64, segment_bytes: int = 64 << 20,
) -> Recovered | None:
    """Load the newest snapshot in ``directory`` and replay its journal; None if there is no state.

    Raises StateError if a file is corrupt or belongs to another peer or
    ring. Truncates a torn journal tail and deletes stray files of other
    generations and interrupted writes.
    """
    files: dict[StateFile, dict[int, str]] = {k: {} for k in StateFile}
    for name in list_dir(directory):
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
        if jgen > gen and not stray and os.path.getsize(directory / name) > len(JOURNAL_MAGIC):
            raise damaged(directory, name, f"journal of generation {jgen} has no "
                                           f"{StateFile.SNAPSHOT.file_name(jgen)}")
    if not snaps:
        clean(directory, keep=None)
        FileSpill.open(directory / SPILL_DIR, None).close()  # strays of a first run
        return None
    # Millions of small containers and no cycles: the cyclic GC would
    # rescan the growing heap again and again (measured: half the time).
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        return _load(directory, peer_id, ring, gen, files, fsync=fsync, spill_block=spill_block,
                     segment_bytes=segment_bytes)
    finally:
        if gc_was_on:
            gc.enable()


def _load(
    directory: Path, peer_id: str, ring: str, gen: int, files: dict[StateFile, dict[int, str]],
    *, fsync: bool, spill_block: int, segment_bytes: int,
) -> Recovered:
    snaps = files[StateFile.SNAPSHOT]
    doc = read_snapshot(directory, snaps[gen], gen, peer_id, ring)
    bloom = read_bloom(directory / doc["bloom"])
    urls, depths = doc["urls"], doc["depths"]
    try:
        manifest = SpillManifest.from_doc(doc["spill"]) if doc.get("spill") is not None else None
    except ValueError as e:
        raise damaged(directory, snaps[gen], f"snapshot is malformed ({e})") from e
    spill = FileSpill.open(directory / SPILL_DIR, manifest, block_urls=spill_block,
                           segment_bytes=segment_bytes)
    spilled_hosts = set(spill.hosts())
    queue: dict[str, int] = {}
    if not spilled_hosts:
        queue = dict(zip(urls, depths))
        if len(queue) != len(urls):  # duplicates: keep each URL's first depth
            queue = {}
            for u, d in zip(urls, depths):
                queue.setdefault(u, d)
    # A recovered journal's URLs not yet put back (format 3): queued behind the rest, as the
    # journal's are, before the journal is replayed (its records may take them off again).
    back_urls, back_depths = doc.get("recovering", [[], []])
    if back_urls and queue:
        for u, d in zip(back_urls, back_depths):
            queue.setdefault(u, d)
    elif back_urls:
        queue = dict(zip(back_urls, back_depths))
    # else the journal is replayed into an empty queue and the snapshot's URLs,
    # millions of them, are split by host after (_split_heads), never put in a dict.
    forwards = [(u, d) for u, d in doc["forwards"]]
    counters = dict(doc["counters"])
    rows: list[list[Value]] = []
    records = torn = 0
    missed: list[str] = []
    done: list[str] = []
    seen: list[str] = []
    handed = {url: host for url, host in doc.get("handed", [])}
    snap_state = doc.get("handed_state", [[], []])
    handed_state: tuple[list[Any], list[Any]] = (list(snap_state[0]), list(snap_state[1]))
    if gen in files[StateFile.JOURNAL]:
        added: list[str] = []
        records, torn = replay(directory, files[StateFile.JOURNAL][gen], queue, forwards, rows,
                               counters, added, missed, fsync=fsync, seen=seen, state=handed_state, done=done)
        bloom.add_all(added)
        for url in seen:
            handed[url] = host_key(url)
    blocks_read = 0
    heads: dict[str, list[Any]] = {}
    if spilled_hosts:
        # A spilled host's snapshot head came before its blocks, and what
        # was queued since after them (the engine pushes ``queue`` after
        # adopting the store): so the head goes back in front of its blocks,
        # in RAM (Frontier.adopt), as the frontier had it. Only a host with
        # URLs done since the snapshot in its blocks has them read
        # (take_done), its head going into the store in front of what is left.
        snap = set(urls)
        gone = snap.intersection(done)
        gone.update(snap.intersection(seen))
        queue, heads = _split_heads(urls, depths, snap, gone, queue, spilled_hosts)
        taken: dict[str, set[str]] = {}
        for u in missed:
            if u not in snap and (h := host_key(u)) in spilled_hosts:
                taken.setdefault(h, set()).add(u)
        for h, found in taken.items():
            head = heads.pop(h, [])
            blocks_read += spill.take_done(h, found, list(zip(head[::2], head[1::2])))
    clean(directory, keep=gen)
    return Recovered(
        generation=gen, queued=queue, forwards=forwards, rows=rows, counters=counters,
        bloom=bloom, created=float(doc["created"]), records=records, torn_bytes=torn,
        spill=spill, spilled=spill.stats().urls, blocks_read=blocks_read, handed=handed,
        handed_state=handed_state,
        heads=heads, resident=spill.stats().resident,
    )


def _split_heads(urls: list[str], depths: list[int], snap: set[str], gone: set[str],
                 journal: dict[str, int], spilled: set[str]) -> tuple[dict[str, int], dict[str, list[Any]]]:
    """The queue without the spilled hosts' snapshot URLs, and those by host (flat heads).

    ``urls``/``depths`` are the snapshot's (``snap`` the same as a set),
    ``gone`` those done or handed over since, ``journal`` what the journal
    queued since, in order. Millions of URLs at a restart, so the step a URL
    is one ``startswith`` (``host_key`` a URL was most of a 2 M-URL
    restart's time): the snapshot lists a host's head as one run
    (``Frontier.iter_heads``), a run's host is its first URL's authority
    (a queued URL is normalised), and a run moves as slices.
    """
    starts: list[int] = []
    prefix = "\0"
    for i, u in enumerate(urls):
        if not u.startswith(prefix):
            starts.append(i)
            end = u.find("/", u.find("//") + 2)
            prefix = u[: end + 1] if end > 0 else u
    starts.append(len(urls))
    rest: dict[str, int] = {}
    heads: dict[str, list[Any]] = {}
    twice = len(snap) != len(urls)   # a URL listed twice keeps its first place and depth
    used: set[str] = set()
    for a, b in zip(starts, starts[1:]):
        part, dpart = urls[a:b], depths[a:b]
        if twice or (gone and not gone.isdisjoint(part)):
            keep = [k for k, u in enumerate(part) if u not in gone and u not in used]
            if twice:
                used.update(part[k] for k in keep)
            part, dpart = [part[k] for k in keep], [dpart[k] for k in keep]
            if not part:
                continue
        first = part[0]
        start = first.find("//") + 2
        end = first.find("/", start)
        h = first[start:end] if end > 0 else host_key(first)
        if h in spilled:
            head = heads.get(h)
            if head is None:
                head = heads[h] = []
            flat: list[Any] = [None] * (2 * len(part))
            flat[0::2] = part
            flat[1::2] = dpart
            head += flat
        else:
            rest.update(zip(part, dpart))
    # What the journal queued since, in its order: a URL of the snapshot keeps its place
    # there, unless it was done since and queued again. Looked for from the smaller side:
    # the journal holds hundreds of thousands, a packed snapshot's list a handful.
    if len(snap) < len(journal):
        kept = {u for u in snap if u in journal and u not in gone}
    else:
        kept = {u for u in journal if u in snap and u not in gone}
    if kept:
        rest.update((u, d) for u, d in journal.items() if u not in kept)
    else:
        rest.update(journal)
    return rest, heads



