"""peer.state.spill: the frontier's spill store on disk, blocks in segment files (frontier rule 9).

The frontier's side of spilling (heads in RAM, tails, blocks given back; a
stateful model of it over ``MemorySpill``) is tested without files in
tests/core/test_spillqueue.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from peer.errors import StateError
from peer.state.spill import FileSpill, SpillManifest, sync_segments


def segments(d: Path) -> list[str]:
    return sorted(n for n in os.listdir(d) if n.startswith("seg-")) if d.exists() else []


def fill(spill: FileSpill, hosts: int, per_host: int, block: int) -> dict[str, list[tuple[str, int]]]:
    """``per_host`` URLs a host, put in blocks of ``block`` the hosts taking turns."""
    want: dict[str, list[tuple[str, int]]] = {}
    for start in range(0, per_host, block):
        for h in range(hosts):
            host = f"h{h}.test"
            flat = []
            for i in range(start, min(start + block, per_host)):
                url = f"http://{host}/{i}"
                flat += (url, i % 5)
                want.setdefault(host, []).append((url, i % 5))
            spill.put(host, flat)
    return want


def drain(spill: FileSpill, host: str) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    while spill.count(host):
        chunk = spill.take(host)
        assert chunk
        out += zip(chunk[::2], chunk[1::2])
    return out


def test_file_spill_keeps_each_hosts_fifo_across_blocks_and_segments(tmp_path: Path):
    spill = FileSpill(tmp_path, block_urls=16, segment_bytes=1 << 16)
    want = fill(spill, 5, 1000, 16)
    st = spill.stats()
    assert st.urls == 5000 and st.segments > 1 and st.blocks_written == 5 * -(-1000 // 16)
    assert [u for u, _ in spill.iter_host("h3.test")] == [u for u, _ in want["h3.test"]]
    for host, items in want.items():
        assert drain(spill, host) == items
    assert spill.stats().urls == 0 and spill.hosts() == []
    # Every block taken: every segment but the one being written is dead, and
    # goes at the checkpoint's release (after the snapshot naming none of them).
    before = segments(tmp_path)
    m = spill.checkpoint()
    assert m.urls == 0 and m.hosts == () and len(m.dead) == len(before) - 1
    spill.release(m)
    assert len(segments(tmp_path)) == 1
    spill.close()


def test_a_checkpoint_reopens_as_the_same_queues_and_later_blocks_are_dropped(tmp_path: Path):
    spill = FileSpill(tmp_path, block_urls=10, segment_bytes=1 << 16)
    want = fill(spill, 3, 95, 10)  # 10 blocks a host, the last of 5
    for _ in range(2):
        spill.take("h0.test")  # 20 taken since the last checkpoint: not in the next
    m = spill.checkpoint()
    sync_segments(m)
    assert m.urls == 3 * 95 - 20 and m.dirty
    fill(spill, 3, 50, 10)  # after the checkpoint: the journal has these, not the manifest
    doc = m.to_doc()
    spill.close()
    again = FileSpill.open(tmp_path, SpillManifest.from_doc(doc), block_urls=10)
    assert drain(again, "h0.test") == want["h0.test"][20:]
    assert drain(again, "h2.test") == want["h2.test"]
    again.close()


def test_take_done_drops_what_was_done_since_and_puts_the_rest_in_front(tmp_path: Path):
    spill = FileSpill(tmp_path, block_urls=10)
    want = fill(spill, 1, 100, 10)["h0.test"]
    done = {u for u, _ in want[:23]} - {want[21][0]}  # 21 was in flight at the kill
    head = [("http://h0.test/head", 0)]
    read = spill.take_done("h0.test", set(done), head)
    assert read == 3  # only the blocks holding the done URLs
    assert drain(spill, "h0.test") == head + [want[21]] + want[23:]


def test_a_missing_segment_or_a_corrupt_block_is_one_line_naming_the_file(tmp_path: Path):
    spill = FileSpill(tmp_path, block_urls=4)
    fill(spill, 1, 12, 4)
    m = spill.checkpoint()
    spill.close()
    seg = tmp_path / segments(tmp_path)[0]
    data = bytearray(seg.read_bytes())
    data[20] ^= 0xFF
    seg.write_bytes(bytes(data))
    again = FileSpill.open(tmp_path, m)
    with pytest.raises(StateError, match=f"{seg}: corrupt frontier block at byte 0"):
        again.take("h0.test")
    again.close()
    seg.unlink()
    with pytest.raises(StateError, match="segment the snapshot names is missing"):
        FileSpill.open(tmp_path, m)


def test_open_without_a_manifest_deletes_old_segments(tmp_path: Path):
    spill = FileSpill(tmp_path, block_urls=4)
    fill(spill, 2, 20, 4)
    spill.close()
    assert segments(tmp_path)
    FileSpill.open(tmp_path, None).close()
    assert segments(tmp_path) == []


def test_ram_per_spilled_url_is_a_fraction_of_a_byte(tmp_path: Path):
    import tracemalloc

    spill = FileSpill(tmp_path, block_urls=64, segment_bytes=64 << 20)
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for i in range(0, 6400, 64):
        for h in range(10):
            spill.put(f"h{h}.test", [x for j in range(i, i + 64) for x in (f"http://h{h}.test/{j}", 1)])
    spill.close()  # its write buffer (1 MiB at most, whatever the queue) written out
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert used / 64_000 < 1, used / 64_000  # the budget was 30 B beyond the heads and tails
    assert spill.count("h3.test") == 6400


def test_fronts_come_before_blocks_and_survive_a_checkpoint_as_they_are(tmp_path: Path) -> None:
    """A host's fronts (packed heads a snapshot gave back) are taken before its blocks, in
    order; a checkpoint lists them bytes and all, and the store opened from it has them."""
    from peer.state.spill import pack_head

    d = tmp_path / "frontier"
    spill = FileSpill.open(d, None, block_urls=2)
    first, second = pack_head(["a/1", 1, "a/2", 1]), pack_head(["a/3", 2])
    spill.add_front("a", first, 2)
    spill.add_front("a", second, 1)
    spill.put("a", ["a/4", 1, "a/5", 1])
    assert spill.count("a") == 5 and spill.stats().resident == 3
    m = spill.checkpoint()
    assert m.fronts == (("a", 2, first), ("a", 1, second))
    again = FileSpill.open(d, SpillManifest.from_doc(m.to_doc()), block_urls=2)
    assert list(again.iter_host("a")) == [("a/1", 1), ("a/2", 1), ("a/3", 2), ("a/4", 1), ("a/5", 1)]
    read = again.blocks_read
    assert again.take("a") == ["a/1", 1, "a/2", 1] and again.blocks_read == read   # no disk read
    spill.close()
    again.close()


def test_a_url_done_from_a_front_leaves_the_order_of_the_rest(tmp_path: Path) -> None:
    """Recovery's take_done on a host whose first front held a URL done since the snapshot:
    what is left of that front stays ahead of the next front and of the blocks."""
    from peer.state.spill import pack_head

    spill = FileSpill.open(tmp_path / "frontier", None, block_urls=2)
    spill.add_front("a", pack_head(["a/1", 1, "a/2", 1]), 2)
    spill.add_front("a", pack_head(["a/3", 1]), 1)
    spill.put("a", ["a/4", 1])
    spill.take_done("a", {"a/1"}, [])
    assert list(spill.iter_host("a")) == [("a/2", 1), ("a/3", 1), ("a/4", 1)]
    spill.close()


def test_a_frontier_on_disk_serves_the_same_order_after_a_restart(tmp_path: Path) -> None:
    """Frontier rule 11 through the store on disk: a checkpoint (tails flushed, the heads
    packed as fronts) reopened as a kill -9 restart reopens it, each host adopted lazily,
    serves every URL in the order the frontier before the crash would have, boosts and all."""
    from peer.core.frontier.frontier import Frontier, Politeness
    from peer.state.spill import pack_head

    d = tmp_path / "frontier"
    spill = FileSpill.open(d, None, block_urls=4)
    f = Frontier(Politeness(rate=0), spill=spill, head_per_host=4)
    for i in range(60):
        host = f"h{i % 3}.test"
        f.push(f"http://{host}/{i}", host, (i * 7) % 5, 0.0, boost=2 if i % 11 == 0 else 0)
    f.flush_tails()
    fronts = tuple((h, len(flat) // 2, pack_head(flat)) for h, flat in f.heads())
    doc = spill.checkpoint().to_doc(fronts)
    before: dict[str, list[tuple[str, int]]] = {f"h{i}.test": [] for i in range(3)}
    while (job := f.pop_ready(0.0)) is not None:  # the order without the crash (blocks are not deleted yet)
        before[job.host].append((job.url, job.depth))
        f.done(job.host, 0.0)
    spill.close()
    again = FileSpill.open(d, SpillManifest.from_doc(doc), block_urls=4)
    g = Frontier(Politeness(rate=0), spill=again, head_per_host=4)
    for h in sorted(again.hosts()):
        g.adopt(h, 0.0)
    after: dict[str, list[tuple[str, int]]] = {h: [] for h in before}
    while (job := g.pop_ready(0.0)) is not None:
        after[job.host].append((job.url, job.depth))
        g.done(job.host, 0.0)
    assert after == before
    # Boosted +2 (i % 11 == 0): ahead of the depth-0 URLs.
    assert after["h0.test"][:3] == [("http://h0.test/0", 0), ("http://h0.test/33", 1), ("http://h0.test/15", 0)]
    again.close()
