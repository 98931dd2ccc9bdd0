"""Tests for peer.state.journal: journal + snapshots, torn tails, corruption, a real kill -9."""

from __future__ import annotations

import copy
import errno
import os
import signal
import struct
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from peer.core.seen.bloom import BloomFilter
from peer.state.bloomfile import write_bloom
from peer.errors import StateError
from peer.state.journal import PeerState, Recovered

REPO = Path(__file__).resolve().parents[2]
FRAME = struct.Struct("<II")
JOURNAL_HEADER = 8


def url(i: int) -> str:
    return f"http://h{i % 5}.test/page/{i}"


def new_bloom(urls: Iterable[str] = ()) -> BloomFilter:
    bf = BloomFilter(10_000, 0.0001)
    bf.add_many(list(urls))
    return bf


def state(tmp_path: Path, peer: str = "p1", ring: str = "r", *, fsync: bool = False) -> PeerState:
    return PeerState(tmp_path / "state", peer, ring, fsync=fsync)


def view(rec: Recovered) -> tuple:
    """What a user compares: queue in order, rows, forwards, counters."""
    return list(rec.queued.items()), rec.rows, rec.forwards, rec.counters


def files(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "state").iterdir())


def journal(tmp_path: Path, gen: int = 1) -> Path:
    return tmp_path / "state" / f"journal-{gen}.log"


def frame_offsets(data: bytes) -> list[int]:
    """Start offsets of the frames of a journal's bytes."""
    out, off = [], JOURNAL_HEADER
    while off < len(data):
        out.append(off)
        (length, _) = FRAME.unpack_from(data, off)
        off += FRAME.size + length
    assert off == len(data)
    return out


def begun(tmp_path: Path, *, fsync: bool = False) -> PeerState:
    """A state with seeds a0, a1 queued, one forward and a counter, as the engine begins."""
    s = state(tmp_path, fsync=fsync)
    s.begin(new_bloom(["http://a.test/0", "http://a.test/1"]),
            [("http://a.test/0", 0), ("http://a.test/1", 0)], [("http://far.test/0", 1)], {"pages": 0})
    return s


# ---------------------------------------------------------------------------
# Round trip


@pytest.mark.parametrize("fsync", [False, True])
def test_round_trip_gives_exactly_the_state(tmp_path: Path, fsync: bool) -> None:
    s = begun(tmp_path, fsync=fsync)
    for i in range(1, 6):
        s.queued(url(i), 1)
    s.queued(url(1), 9)  # queued twice: the first depth and place win
    s.done("http://a.test/0", ["http://a.test/0", 200, None, 1.5])
    s.done(url(2), [url(2), 404, "not found", 0.25])
    s.done(url(3), None)  # left the queue without a row (handed to another owner)
    s.forwarded([("http://far.test/1", 2), ("http://far.test/2", 2)])
    s.seen("http://handed.test/x")
    s.counters({"pages": 2, "sent": 3})
    s.counters({"pages": 3})
    s.commit()

    rec = state(tmp_path).recover()
    assert rec is not None and rec.generation == 1
    assert list(rec.queued.items()) == [
        ("http://a.test/1", 0), (url(1), 1), (url(4), 1), (url(5), 1),
    ]
    assert rec.rows == [["http://a.test/0", 200, None, 1.5], [url(2), 404, "not found", 0.25]]
    assert rec.forwards == [("http://far.test/0", 1), ("http://far.test/1", 2), ("http://far.test/2", 2)]
    assert rec.counters == {"pages": 3, "sent": 3}
    for u in ["http://a.test/0", "http://a.test/1", "http://handed.test/x", *map(url, range(1, 6))]:
        assert u in rec.bloom, u
    assert "http://never.test/" not in rec.bloom
    assert rec.records == 13 and rec.torn_bytes == 0
    assert rec.created == pytest.approx(time.time(), abs=60)


def test_a_queued_url_handed_over_as_fetched_is_not_queued_after_a_restart(tmp_path: Path) -> None:
    # A link queued it here, then its host's previous owner handed it over as
    # fetched: in memory its job is dropped when it comes up; after a restart
    # it must not be fetched again (it was, twice, before).
    s = begun(tmp_path)
    s.queued(url(1), 1)
    s.queued(url(2), 1)
    s.seen(url(1))
    s.commit()
    rec = state(tmp_path).recover()
    assert rec is not None
    assert list(rec.queued) == ["http://a.test/0", "http://a.test/1", url(2)]
    assert url(1) in rec.bloom


def test_uncommitted_records_are_not_on_disk(tmp_path: Path) -> None:
    s = begun(tmp_path)
    s.queued(url(1), 1)
    s.commit()
    s.queued(url(2), 1)
    s.done(url(1), [url(1)])
    # "kill": no commit, no close; another process reads the directory.
    rec = state(tmp_path).recover()
    assert rec is not None
    assert list(rec.queued) == ["http://a.test/0", "http://a.test/1", url(1)]
    assert rec.rows == []
    assert url(2) not in rec.bloom


def test_nothing_there_recovers_none_and_exists_is_false(tmp_path: Path) -> None:
    assert state(tmp_path).recover() is None
    assert not PeerState.exists(tmp_path / "state")
    begun(tmp_path).close()
    assert PeerState.exists(tmp_path / "state")


def test_close_commits_and_begin_after_recovery_starts_the_next_generation(tmp_path: Path) -> None:
    s = begun(tmp_path)
    s.queued(url(1), 1)
    s.close()
    s.close()  # idempotent
    s2 = state(tmp_path)
    rec = s2.recover()
    assert rec is not None and list(rec.queued)[-1] == url(1)
    stats = s2.begin(rec.bloom, rec.queued.items(), rec.forwards, rec.counters)
    assert stats.generation == 2 and stats.queued == 3
    assert files(tmp_path) == ["bloom-2.bin", "journal-2.log", "snapshot-2.msgpack"]
    rec2 = state(tmp_path).recover()
    assert rec2 is not None and rec2.generation == 2
    assert view(rec2) == view(rec)[:1] + ([], rec.forwards, rec.counters)
    assert rec2.created == rec.created  # the crawl's start survives snapshots


def test_commit_before_begin_is_a_programming_error(tmp_path: Path) -> None:
    s = state(tmp_path)
    s.queued(url(1), 0)
    with pytest.raises(RuntimeError, match="begin"):
        s.commit()


# ---------------------------------------------------------------------------
# Torn tails and corruption


def two_commits(tmp_path: Path) -> tuple[Recovered, Recovered, bytes, int]:
    """Commit A then B; return the state after A, after B, the journal bytes, B's offset."""
    s = begun(tmp_path)
    s.queued(url(1), 1)
    s.done("http://a.test/0", ["http://a.test/0", 200])
    s.commit()
    after_a = state(tmp_path).recover()
    s.queued(url(2), 0)  # ends in a 0x00 byte: stripping trailing zeros must not fool us
    s.forwarded([("http://far.test/9", 3)])
    s.done(url(1), [url(1), 301])
    s.queued(url(3), 0)
    s.commit()
    after_b = state(tmp_path).recover()
    data = journal(tmp_path).read_bytes()
    assert after_a is not None and after_b is not None
    return after_a, after_b, data, frame_offsets(data)[-1]


def test_torn_tail_at_every_cut_point_of_the_last_frame(tmp_path: Path) -> None:
    after_a, after_b, data, last = two_commits(tmp_path)
    assert view(after_a) != view(after_b)
    path = journal(tmp_path)
    for cut in range(last, len(data) + 1):
        path.write_bytes(data[:cut])
        rec = state(tmp_path).recover()
        assert rec is not None
        want = after_b if cut == len(data) else after_a
        assert view(rec) == view(want), cut
        assert rec.torn_bytes == (0 if cut == len(data) else cut - last)
        # Truncated to the last good frame, so the next append follows it.
        assert path.stat().st_size == (len(data) if cut == len(data) else last)


def test_torn_tail_then_appending_again_reads_cleanly(tmp_path: Path) -> None:
    after_a, _, data, last = two_commits(tmp_path)
    journal(tmp_path).write_bytes(data[: last + 11])
    s = state(tmp_path)
    rec = s.recover()
    assert rec is not None
    s.begin(rec.bloom, rec.queued.items(), rec.forwards, rec.counters)
    s.queued(url(7), 2)
    s.commit()
    rec2 = state(tmp_path).recover()
    assert rec2 is not None and list(rec2.queued.items()) == [*after_a.queued.items(), (url(7), 2)]


def test_zero_filled_tail_after_a_power_cut_is_torn(tmp_path: Path) -> None:
    after_a, _, data, last = two_commits(tmp_path)
    journal(tmp_path).write_bytes(data[: last + 5] + bytes(4096))
    rec = state(tmp_path).recover()
    assert rec is not None and view(rec) == view(after_a)


@pytest.mark.parametrize("where", ["payload", "crc", "length"])
def test_flipped_byte_in_the_middle_is_corruption(tmp_path: Path, where: str) -> None:
    _, _, data, last = two_commits(tmp_path)
    first = frame_offsets(data)[0]
    pos = {"payload": first + FRAME.size + 3, "crc": first + 5, "length": first + 3}[where]
    bad = bytearray(data)
    bad[pos] ^= 0x40  # for "length": the frame now runs far past the end of the file
    journal(tmp_path).write_bytes(bytes(bad))
    with pytest.raises(StateError) as err:
        state(tmp_path).recover()
    msg = str(err.value)
    assert str(journal(tmp_path)) in msg
    assert f"byte {first}" in msg
    assert "--fresh" in msg and "move" in msg
    assert "\n" not in msg
    assert journal(tmp_path).read_bytes() == bytes(bad)  # nothing "repaired" on error


def test_bad_journal_magic_is_corruption(tmp_path: Path) -> None:
    begun(tmp_path).close()
    journal(tmp_path).write_bytes(b"GARBAGE!" + bytes(20))
    with pytest.raises(StateError, match="not a ringcrawl journal.*--fresh"):
        state(tmp_path).recover()


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "trailer"])
def test_corrupt_snapshot_is_an_error(tmp_path: Path, damage: str) -> None:
    begun(tmp_path).close()
    snap = tmp_path / "state" / "snapshot-1.msgpack"
    data = bytearray(snap.read_bytes())
    if damage == "flip":
        data[len(data) // 3] ^= 0x01
    elif damage == "truncate":
        del data[-30:]
    elif damage == "empty":
        data = bytearray()
    else:
        data[-1] ^= 0xFF  # the crc field of the trailer
    snap.write_bytes(bytes(data))
    with pytest.raises(StateError) as err:
        state(tmp_path).recover()
    assert str(snap) in str(err.value) and "--fresh" in str(err.value)


def test_missing_bloom_file_is_an_error(tmp_path: Path) -> None:
    begun(tmp_path).close()
    (tmp_path / "state" / "bloom-1.bin").unlink()
    with pytest.raises(StateError, match="bloom-1.bin.*--fresh"):
        state(tmp_path).recover()


@pytest.mark.parametrize(("peer", "ring"), [("p2", "r"), ("p1", "other")])
def test_state_of_another_peer_or_ring_is_an_error(tmp_path: Path, peer: str, ring: str) -> None:
    begun(tmp_path).close()
    with pytest.raises(StateError) as err:
        state(tmp_path, peer=peer, ring=ring).recover()
    msg = str(err.value)
    assert "'p1'" in msg and "'r'" in msg and repr(peer) in msg and repr(ring) in msg
    assert "--fresh" in msg


def test_journal_without_its_snapshot_is_an_error(tmp_path: Path) -> None:
    s = begun(tmp_path)
    s.queued(url(1), 1)
    s.close()
    for name in ("snapshot-1.msgpack", "bloom-1.bin"):
        (tmp_path / "state" / name).unlink()
    with pytest.raises(StateError, match="journal-1.log.*no snapshot-1.msgpack"):
        state(tmp_path).recover()


def test_write_error_leaves_no_half_frame(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = begun(tmp_path)
    s.queued(url(1), 1)
    s.commit()
    good = journal(tmp_path).stat().st_size
    real_write = os.write

    def disk_full(fd: int, parts: list[bytes]) -> int:
        real_write(fd, b"".join(parts)[:5])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "writev", disk_full)
    s.queued(url(2), 1)
    with pytest.raises(StateError, match="No space left"):
        s.commit()
    monkeypatch.undo()
    assert journal(tmp_path).stat().st_size == good
    s.commit()  # the records were kept and go out once the disk has room
    rec = state(tmp_path).recover()
    assert rec is not None and list(rec.queued)[-2:] == [url(1), url(2)] and rec.torn_bytes == 0


# ---------------------------------------------------------------------------
# Snapshots, rotation, crashes in between


def test_snapshot_rotates_and_recovery_after_rotation(tmp_path: Path) -> None:
    s = begun(tmp_path)
    s.queued(url(1), 1)
    s.done("http://a.test/0", ["http://a.test/0"])
    s.commit()
    before = s.journal_bytes()
    s.queued(url(2), 1)  # buffered: snapshot commits it first
    bloom = new_bloom(["http://a.test/0", "http://a.test/1", url(1), url(2)])
    stats = s.snapshot(bloom, [("http://a.test/1", 0), (url(1), 1), (url(2), 1)],
                       [("http://far.test/5", 2)], {"pages": 1})
    assert stats.generation == 2 and stats.queued == 3 and stats.forwards == 1
    assert stats.journal_bytes > before
    assert files(tmp_path) == ["bloom-2.bin", "journal-2.log", "snapshot-2.msgpack"]
    assert s.journal_bytes() == JOURNAL_HEADER
    s.done(url(1), [url(1), 200])
    s.queued(url(3), 2)
    s.commit()
    rec = state(tmp_path).recover()
    assert rec is not None and rec.generation == 2
    assert view(rec) == (
        [("http://a.test/1", 0), (url(2), 1), (url(3), 2)],
        [[url(1), 200]],  # the rows before the snapshot were flushed to DuckDB by then
        [("http://far.test/5", 2)],
        {"pages": 1},
    )
    assert all(u in rec.bloom for u in ["http://a.test/0", url(1), url(2), url(3)])


def test_grown_bloom_filter_survives_snapshots_and_recovery(tmp_path: Path) -> None:
    # As the engine does it: every URL into the filter and the journal; the
    # filter grows past its capacity between snapshots and during replay.
    s = state(tmp_path)
    bloom = BloomFilter(100, 0.01, growth=2, max_capacity=100_000)
    s.begin(bloom, [], [], {})
    links = [url(i) for i in range(1_000)]
    for u in links[:400]:
        if bloom.add(u):
            s.queued(u, 1)
    s.commit()
    s.snapshot(bloom, [(u, 1) for u in links[:400]], [], {"pages": 0})
    assert bloom.num_slices == 3  # 100 + 200 + 400
    for u in links[400:]:  # only in the journal: recovery's add_many grows it again
        if bloom.add(u):
            s.queued(u, 1)
    s.commit()
    assert bloom.num_slices == 4
    bloom.take_growth()

    rec = state(tmp_path).recover()
    assert rec is not None and rec.generation == 2
    got = rec.bloom
    # Replaying the journal in order rebuilds exactly the filter the peer had.
    assert got == bloom and got.slices() == bloom.slices()
    assert (got.num_slices, got.total_capacity, got.growth, got.max_capacity) == (4, 1_500, 2, 100_000)
    assert all(got.contains_many(links)) and all(u in got for u in links)
    assert [(e.slices, e.capacity) for e in got.take_growth()] == [(4, 1_500)]  # the replay's growth

    # The recovered filter is begun as the next generation and recovered again.
    s2 = state(tmp_path)
    assert s2.recover() is not None
    stats = s2.begin(got, [], [], {})
    assert stats.bloom_bytes == (tmp_path / "state" / f"bloom-{stats.generation}.bin").stat().st_size
    assert stats.bloom_bytes > got.nbytes
    s2.close()
    again = state(tmp_path).recover()
    assert again is not None and again.bloom == bloom


def test_corrupt_grown_bloom_file_names_the_file(tmp_path: Path) -> None:
    s = state(tmp_path)
    bloom = BloomFilter(50, 0.01)
    bloom.add_many([url(i) for i in range(400)])
    assert bloom.num_slices >= 3
    s.begin(bloom, [], [], {})
    s.close()
    path = tmp_path / "state" / "bloom-1.bin"
    data = bytearray(path.read_bytes())
    data[-30] ^= 0x01  # in the bits of the newest slice
    path.write_bytes(bytes(data))
    with pytest.raises(StateError, match=r"bloom-1\.bin: Bloom filter is corrupt.*--fresh"):
        state(tmp_path).recover()


def test_snapshot_keeps_the_first_depth_of_a_url_given_twice(tmp_path: Path) -> None:
    s = begun(tmp_path)
    s.snapshot(new_bloom([url(1), url(2)]), [(url(1), 1), (url(2), 2), (url(1), 5)], [], {})
    rec = state(tmp_path).recover()
    assert rec is not None and list(rec.queued.items()) == [(url(1), 1), (url(2), 2)]


def test_crash_between_bloom_and_snapshot_recovers_the_previous_generation(tmp_path: Path) -> None:
    s = begun(tmp_path)
    s.queued(url(1), 1)
    s.commit()
    want = state(tmp_path).recover()
    d = tmp_path / "state"
    # What a kill between the two writes of snapshot 2 leaves behind.
    write_bloom(new_bloom([url(9)]), d / "bloom-2.bin")
    (d / "snapshot-2.msgpack.abc123.tmp").write_bytes(b"half a snapshot")
    (d / "bloom-3.bin.xyz.tmp").write_bytes(b"half a filter")
    rec = state(tmp_path).recover()
    assert rec is not None and want is not None
    assert rec.generation == 1 and view(rec) == view(want)
    assert url(9) not in rec.bloom
    assert files(tmp_path) == ["bloom-1.bin", "journal-1.log", "snapshot-1.msgpack"]


def test_crash_after_the_snapshot_rename_recovers_the_new_generation(tmp_path: Path) -> None:
    s = begun(tmp_path)
    s.queued(url(1), 1)
    s.commit()
    d = tmp_path / "state"
    saved = {n: (d / n).read_bytes() for n in files(tmp_path)}
    s.snapshot(new_bloom([url(1)]), [(url(1), 1)], [], {"pages": 7})
    # Killed after snapshot-2 was renamed in, before journal-2 and the clean-up.
    (d / "journal-2.log").unlink()
    for name, data in saved.items():
        (d / name).write_bytes(data)
    rec = state(tmp_path).recover()
    assert rec is not None and rec.generation == 2
    assert view(rec) == ([(url(1), 1)], [], [], {"pages": 7})
    assert files(tmp_path) == ["bloom-2.bin", "snapshot-2.msgpack"]


def test_discard_removes_all_state(tmp_path: Path) -> None:
    s = begun(tmp_path)
    s.queued(url(1), 1)
    s.commit()
    (tmp_path / "state" / "snapshot-7.msgpack.q.tmp").write_bytes(b"x")
    state(tmp_path).discard()
    assert not (tmp_path / "state").exists()
    assert not PeerState.exists(tmp_path / "state")
    assert state(tmp_path).recover() is None
    state(tmp_path).discard()  # nothing there: fine


def test_discard_leaves_files_that_are_not_state(tmp_path: Path) -> None:
    begun(tmp_path).close()
    (tmp_path / "state" / "notes.txt").write_text("mine")
    state(tmp_path).discard()
    assert files(tmp_path) == ["notes.txt"]


# ---------------------------------------------------------------------------
# Any sequence of events, "killed" at the end, recovers the last commit


POOL = [url(i) for i in range(12)]
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("q"), st.sampled_from(POOL), st.integers(0, 3)),
        st.tuples(st.just("d"), st.sampled_from(POOL), st.booleans()),
        st.tuples(st.just("f"), st.sampled_from(POOL), st.integers(0, 3)),
        st.tuples(st.just("n"), st.integers(0, 100), st.none()),
        st.tuples(st.just("commit"), st.none(), st.none()),
        st.tuples(st.just("snapshot"), st.none(), st.none()),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(ops=OPS)
def test_any_history_recovers_its_last_commit(ops: list[tuple]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        model = {"queue": {}, "rows": [], "forwards": [], "counters": {}, "seen": set()}
        s = state(tmp_path)
        bloom = new_bloom()
        s.begin(bloom, [], [], {})
        committed = copy.deepcopy(model)
        for op, a, b in ops:
            if op == "q":
                s.queued(a, b)
                bloom.add(a)
                model["seen"].add(a)
                model["queue"].setdefault(a, b)
            elif op == "d":
                row = [a, len(model["rows"])] if b else None
                s.done(a, row)
                model["queue"].pop(a, None)
                if row:
                    model["rows"].append(row)
            elif op == "f":
                s.forwarded([(a, b)])
                model["forwards"].append((a, b))
            elif op == "n":
                s.counters({"pages": a})
                model["counters"]["pages"] = a
            elif op == "commit":
                s.commit()
                committed = copy.deepcopy(model)
            else:
                s.snapshot(bloom, model["queue"].items(), model["forwards"], model["counters"])
                model["rows"] = []  # flushed to the results before the snapshot
                committed = copy.deepcopy(model)
        rec = state(tmp_path).recover()  # no close(): killed
        assert rec is not None
        assert view(rec) == (
            list(committed["queue"].items()), committed["rows"], committed["forwards"],
            committed["counters"],
        )
        assert all(u in rec.bloom for u in committed["seen"])
        s.close()


# ---------------------------------------------------------------------------
# A real kill -9


CHILD = textwrap.dedent("""
    import sys
    from pathlib import Path
    from peer.core.seen.bloom import BloomFilter
    from peer.state.journal import PeerState

    st = PeerState(Path(sys.argv[1]), "p1", "r")
    bloom = BloomFilter(200_000, 0.001)
    st.begin(bloom, [], [], {})
    print("ready", flush=True)
    queue = {}
    for i in range(200_000):  # bounded; the parent kills it long before
        url = f"http://h{i % 7}.test/{i}"
        bloom.add(url)
        st.queued(url, i % 5)
        queue[url] = i % 5
        if i >= 3:
            old = f"http://h{(i - 3) % 7}.test/{i - 3}"
            st.done(old, [old, 200, i])
            del queue[old]
        st.counters({"i": i})
        st.commit()
        print(i, flush=True)
        if i % 700 == 699:
            st.snapshot(bloom, queue.items(), [], {"i": i})
""")


def child_url(i: int) -> str:
    return f"http://h{i % 7}.test/{i}"


@pytest.mark.parametrize("target", [900, 2100])
def test_real_kill_9_loses_no_committed_record(tmp_path: Path, target: int) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "state")],
        stdout=subprocess.PIPE, text=True, cwd=REPO,
    )
    watchdog = threading.Timer(10.0, proc.kill)  # never hang the suite
    watchdog.start()
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 2.0
        seen = -1
        while seen < target and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen = int(line)
        os.kill(proc.pid, signal.SIGKILL)
        rest = proc.stdout.read().split()
        proc.wait()
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    last = int(rest[-1]) if rest else seen  # printed after its commit, so committed
    assert last >= 0

    rec = state(tmp_path).recover()
    assert rec is not None
    k = int(rec.counters["i"])  # the last commit on disk
    assert k in (last, last + 1)  # everything printed, plus at most the one being printed
    assert list(rec.queued.items()) == [(child_url(i), i % 5) for i in range(max(0, k - 2), k + 1)]
    assert all(child_url(i) in rec.bloom for i in range(k + 1))
    # Rows since the snapshot: consecutive, ending with the last page done.
    done = [r[0] for r in rec.rows]
    first = max(0, k - 2 - len(done))
    assert done == [child_url(j) for j in range(first, k - 2)]
    # They start at the beginning or right after a snapshot (taken after i = 699, 1399, ...).
    assert first == 0 or (first + 3) % 700 == 0


# ---------------------------------------------------------------- the run record


def test_the_run_record_round_trips_and_a_malformed_one_is_one_line(tmp_path):
    from peer.errors import StateError
    from peer.core.run.runs import Fingerprint, first_run
    from peer.state.journal import RUN_FILE, read_run, write_run

    d = tmp_path / "state"
    assert read_run(d) is None
    rec = first_run(Fingerprint(("http://a.test/",), (), (), 0), 1.0).ending(2.0, "frontier empty", 3)
    write_run(d, rec)
    assert read_run(d) == rec
    (d / RUN_FILE).write_text("{not json")
    with pytest.raises(StateError, match=r"run\.json: run record is malformed .*--fresh"):
        read_run(d)


def test_discard_removes_the_run_record_too(tmp_path):
    from peer.core.run.runs import Fingerprint, first_run
    from peer.state.journal import write_run

    d = tmp_path / "state"
    write_run(d, first_run(Fingerprint((), (), (), 0), 1.0))
    PeerState(d, "p1", "r").discard()
    assert not d.exists()


# ---------------------------------------------------------------------------
# A snapshot written in another thread: prepare, write (thread), finish


def test_a_snapshot_in_a_thread_keeps_every_record_made_while_it_is_written(tmp_path: Path) -> None:
    s = begun(tmp_path)
    s.queued(url(1), 1)
    pending = s.prepare_snapshot()
    bloom = new_bloom(["http://a.test/0", "http://a.test/1", url(1)])
    queue = [("http://a.test/0", 0), ("http://a.test/1", 0), (url(1), 1)]
    done = threading.Event()
    stats = []
    writer = threading.Thread(target=lambda: (stats.append(s.write_snapshot(
        pending, bloom, queue, [], {"pages": 3})), done.set()))
    writer.start()
    # Meanwhile, on the journal's thread: more records.
    for i in range(2, 50):
        s.queued(url(i), 2)
        s.commit()
    writer.join(timeout=60)
    assert done.is_set() and stats[0].generation == 2 and stats[0].queued == 3
    s.queued(url(50), 2)
    s.finish_snapshot(pending)
    s.drop_older(pending.generation)
    s.close()
    assert files(tmp_path) == ["bloom-2.bin", "journal-2.log", "snapshot-2.msgpack"]
    rec = state(tmp_path).recover()
    assert rec is not None and rec.generation == 2
    assert list(rec.queued) == ["http://a.test/0", "http://a.test/1", *(url(i) for i in range(1, 51))]
    assert rec.counters == {"pages": 3}


@pytest.mark.parametrize("stage", ["before the write", "after the rename", "before the clean-up"])
def test_a_crash_during_a_threaded_snapshot_loses_no_committed_record(tmp_path: Path, stage: str) -> None:
    s = begun(tmp_path)
    pending = s.prepare_snapshot()
    for i in range(5):
        s.queued(url(i), 1)
        s.commit()
    if stage != "before the write":
        s.write_snapshot(pending, new_bloom(["http://a.test/0", "http://a.test/1"]),
                         [("http://a.test/0", 0), ("http://a.test/1", 0)], [], {"pages": 0})
        s.queued(url(5), 1)
        s.commit()
    if stage == "before the clean-up":
        s.finish_snapshot(pending)
        s.queued(url(6), 1)
        s.commit()
    # kill -9 here: nothing more is written, no file is closed cleanly.
    rec = state(tmp_path).recover()
    assert rec is not None
    want = {"before the write": 5, "after the rename": 6, "before the clean-up": 7}[stage]
    assert list(rec.queued)[2:] == [url(i) for i in range(want)]
    assert rec.generation == (1 if stage == "before the write" else 2)
    assert files(tmp_path) == [f"{k}-{rec.generation}.{x}" for k, x in
                               (("bloom", "bin"), ("journal", "log"), ("snapshot", "msgpack"))]


def test_an_aborted_snapshot_goes_on_in_the_old_journal(tmp_path: Path) -> None:
    s = begun(tmp_path)
    pending = s.prepare_snapshot()
    s.queued(url(1), 1)
    s.commit()
    s.abort_snapshot(pending)
    s.queued(url(2), 1)
    s.close()
    assert files(tmp_path) == ["bloom-1.bin", "journal-1.log", "snapshot-1.msgpack"]
    rec = state(tmp_path).recover()
    assert rec is not None and list(rec.queued)[2:] == [url(1), url(2)]
    with pytest.raises(RuntimeError):
        s.finish_snapshot(pending)


# ---------------------------------------------------------------------------
# Incremental state: the frontier's spilled queues (format 2)


class SpillingPeer:
    """A frontier with a spill store, journaled the way the engine does it."""

    def __init__(self, tmp_path: Path, head: int = 4, resume: bool = False, packed: bool = True) -> None:
        from peer.core.frontier.frontier import Frontier, Politeness

        # packed: the heads go into a snapshot packed a host each (format 3), as the engine's
        # do; not: listed URL by URL (format 2), as an earlier build wrote them.
        self.packed = packed
        self.state = PeerState(tmp_path / "state", "p1", "r", spill_block=head)
        self.rec = self.state.recover()
        self.spill = self.rec.spill if self.rec is not None else self.state.open_spill()
        self.f = Frontier(Politeness(rate=0), spill=self.spill, head_per_host=head)
        self.bloom = self.rec.bloom if self.rec is not None else new_bloom()
        if self.rec is not None:
            for host in self.spill.hosts():   # each host's snapshot head in front of its blocks
                self.f.adopt(host, 0.0, self.rec.heads.get(host))
            for u, d in self.rec.queued.items():
                self.f.push(u, u.split("/")[2], d, 0.0)
        if resume and self.rec is not None:
            self.state.resume()   # journal rule 7: no snapshot before the first request
        else:
            self.checkpoint(begin=True)

    def push(self, u: str, depth: int = 1) -> None:
        self.bloom.add(u)
        self.state.queued(u, depth)
        self.f.push(u, u.split("/")[2], depth, 0.0)

    def pop(self, done: bool = True) -> str:
        job = self.f.pop_ready(0.0)
        assert job is not None
        if done:
            self.f.done(job.host, 0.0)
            self.state.done(job.url, [job.url])
        return job.url

    def checkpoint(self, begin: bool = False, packed: bool = True) -> None:
        """A snapshot; ``packed`` False as ``[frontier] packed_heads = false`` writes it."""
        self.f.flush_tails()
        heads = self.f.heads() if self.packed else []
        queued = [] if self.packed else [(j.url, j.depth) for j in self.f.iter_heads()]
        m = self.spill.checkpoint()
        if begin:
            self.state.begin(self.bloom, queued, [], {}, m, heads=heads)
        else:
            self.state.snapshot(self.bloom, queued, [], {}, m, heads=heads, packed=packed)
        self.spill.release(m)

    def order(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for job in self.f.iter_queued():
            out.setdefault(job.host, []).append(job.url)
        return out


def test_recovery_from_spilled_queues_keeps_every_url_in_order_and_reads_few_blocks(tmp_path: Path) -> None:
    p = SpillingPeer(tmp_path)
    for i in range(600):
        p.push(url(i))
    p.state.commit()
    p.checkpoint()
    # The snapshot holds the heads only (5 hosts x 4 URLs) and 16 bytes per block of the rest.
    snap = tmp_path / "state" / "snapshot-2.msgpack"
    assert snap.stat().st_size < sum(len(url(i)) for i in range(600)) / 4
    done = [p.pop() for _ in range(120)]
    flying = [p.pop(done=False) for _ in range(2)]
    for i in range(600, 650):
        p.push(url(i))
    p.state.commit()
    want = p.order()
    for u in reversed(flying):  # in flight at the kill: fetched again, first in its host's queue
        want[u.split("/")[2]].insert(0, u)
    # kill -9: nothing closed, nothing more written
    again = SpillingPeer(tmp_path)
    assert again.rec is not None and again.order() == want
    assert not set(done) & {u for q in again.order().values() for u in q}
    assert again.rec.blocks_read <= 120 // 4 + 5 * 2  # the blocks taken since, not the queue
    assert len(again.rec.queued) == 50  # only what was queued since the snapshot is in the journal


@pytest.mark.parametrize("packed", [True, False], ids=["packed-heads", "format-2-heads"])
def test_a_restart_goes_on_in_its_generation_and_kills_after_it_lose_and_repeat_nothing(
        tmp_path: Path, packed: bool) -> None:
    """Journal rule 7 and recovery's heads: a restart writes no snapshot and rewrites no block;
    two more kills, each after more work, give back every queued URL once, in order. From
    packed heads (format 3) and from heads listed URL by URL (format 2, an earlier build's)."""
    p = SpillingPeer(tmp_path, packed=packed)
    for i in range(600):
        p.push(url(i))
    p.state.commit()
    p.checkpoint()
    for i in range(600, 640):
        p.push(url(i))
    p.state.commit()
    want = p.order()
    # kill -9, nothing done since the snapshot: the heads back in RAM, no block read or written
    probe = PeerState(tmp_path / "state", "p1", "r", spill_block=4).recover()
    assert probe is not None and probe.spill is not None
    assert probe.blocks_read == 0 and probe.spill.stats().blocks_written == 0
    if packed:   # the heads stay packed in the store, no URL of them a string yet
        assert probe.head_urls == 0 and probe.resident == 5 * 4 and len(probe.queued) == 40
    else:
        assert probe.head_urls == 5 * 4 and len(probe.queued) == 40
    probe.spill.close()
    again = SpillingPeer(tmp_path, resume=True)
    assert again.rec is not None and again.order() == want
    assert sorted(n for n in os.listdir(tmp_path / "state") if n.startswith("snapshot")) == ["snapshot-2.msgpack"]
    fetched = [again.pop() for _ in range(130)]
    for i in range(640, 700):
        again.push(url(i))
    again.state.commit()
    want = again.order()
    third = SpillingPeer(tmp_path, resume=True)      # kill -9 again, in the same generation
    assert third.order() == want
    assert not set(fetched) & {u for q in third.order().values() for u in q}
    fetched += [third.pop() for _ in range(100)]
    third.state.commit()
    third.checkpoint()                                 # the run's first snapshot, as the engine's comes
    for i in range(700, 720):
        third.push(url(i))
    third.state.commit()
    want = third.order()
    last = SpillingPeer(tmp_path, resume=True)
    assert last.order() == want
    assert sorted({u for q in want.values() for u in q} | set(fetched)) == sorted(url(i) for i in range(720))
    assert not set(fetched) & {u for q in last.order().values() for u in q}


def _snapshot_doc(path: Path) -> tuple[int, dict]:
    import msgpack

    data = path.read_bytes()
    version = struct.unpack("<8sIQI", data[-24:])[1]
    return version, msgpack.unpackb(data[:-24], raw=False)


def test_packed_heads_go_from_snapshot_to_snapshot_as_they_are(tmp_path: Path) -> None:
    """Restarts one after another cost the same: a head not started since the restart is
    copied into the next snapshot as the bytes recovery read (no URL of it made a string, none
    split by host), so a third restart reads what the second did; a host started since is
    packed anew, and URLs done from a packed head before a kill are not given back."""
    p = SpillingPeer(tmp_path)
    for i in range(600):
        p.push(url(i))
    p.state.commit()
    p.checkpoint()
    version, doc = _snapshot_doc(tmp_path / "state" / "snapshot-2.msgpack")
    assert version == 3 and doc["urls"] == []          # every head packed, none listed
    fronts = {h: payload for h, _, payload in doc["spill"]["fronts"]}
    assert len(fronts) == 5
    again = SpillingPeer(tmp_path, resume=True)
    assert again.rec is not None and again.rec.heads == {} and again.rec.resident == 20
    started = again.f.pop_ready(0.0)                   # one host starts: its head is decoded
    assert started is not None
    again.f.done(started.host, 0.0)
    again.state.done(started.url, [started.url])
    again.state.commit()
    want = again.order()
    # kill -9 before any snapshot: the URL done is not in the head recovery gives back
    third = SpillingPeer(tmp_path, resume=True)
    assert third.order() == want and started.url not in {u for q in want.values() for u in q}
    third.checkpoint()                                 # the run's first snapshot
    version, doc = _snapshot_doc(tmp_path / "state" / "snapshot-3.msgpack")
    assert version == 3 and doc["urls"] == []
    after = {h: payload for h, _, payload in doc["spill"]["fronts"]}
    untouched = set(fronts) - {started.host}
    assert all(after[h] is not None and after[h] == fronts[h] for h in untouched)
    assert after.get(started.host) != fronts[started.host]   # its rest in a block, or packed anew
    last = SpillingPeer(tmp_path, resume=True)
    assert last.order() == want


def test_packed_heads_false_writes_format_2_with_every_head_listed(tmp_path: Path) -> None:
    """``[frontier] packed_heads = false``, for rolling a peer back: the next snapshot lists
    the heads in RAM and the ones still packed URL by URL (format 2, which a build before
    packed heads reads), and a restart from it gives back the same queue."""
    p = SpillingPeer(tmp_path)
    for i in range(600):
        p.push(url(i))
    p.state.commit()
    p.checkpoint()
    again = SpillingPeer(tmp_path, resume=True)       # every head packed in the store
    again.pop()                                       # one host's decoded, in RAM
    again.state.commit()
    want = again.order()
    again.checkpoint(packed=False)
    version, doc = _snapshot_doc(tmp_path / "state" / "snapshot-3.msgpack")
    assert version == 2 and "fronts" not in doc["spill"] and len(doc["urls"]) == 5 * 4 - 1
    last = SpillingPeer(tmp_path)
    assert last.rec is not None and last.rec.resident == 0 and last.order() == want


def test_a_recovered_journals_urls_not_yet_put_back_are_listed_apart(tmp_path: Path) -> None:
    """A snapshot while a restart still puts the journal's URLs back (the engine waits for
    them before its first, but checkpoint_mb or a full journal do not) lists them apart (format
    3), and the next restart queues them as they are, behind the heads, less the ones done
    since, instead of splitting them by host."""
    p = SpillingPeer(tmp_path)
    for i in range(600):
        p.push(url(i))
    p.state.commit()
    p.checkpoint()
    back = [(url(i), 1) for i in range(600, 700)]
    p.f.flush_tails()
    m = p.spill.checkpoint()
    pending = p.state.prepare_snapshot()
    p.state.write_snapshot(pending, p.bloom, [], [], {}, m, heads=p.f.heads(), recovering=back)
    p.state.finish_snapshot(pending)
    p.spill.release(m)
    p.state.done(url(650), [url(650)])                 # one of them fetched since
    p.state.commit()
    version, doc = _snapshot_doc(tmp_path / "state" / "snapshot-3.msgpack")
    assert version == 3 and doc["urls"] == [] and doc["recovering"][0] == [u for u, _ in back]
    rec = PeerState(tmp_path / "state", "p1", "r", spill_block=4).recover()
    assert rec is not None and rec.heads == {}
    assert list(rec.queued) == [url(i) for i in range(600, 700) if i != 650]
    assert rec.spill is not None
    rec.spill.close()


def test_a_snapshot_without_packed_heads_is_format_2(tmp_path: Path) -> None:
    """What an earlier build reads stays format 2: only a snapshot holding packed heads is 3."""
    s = begun(tmp_path)
    s.close()
    assert _snapshot_doc(tmp_path / "state" / "snapshot-1.msgpack")[0] == 2


def test_segments_emptied_are_deleted_one_snapshot_later(tmp_path: Path) -> None:
    p = SpillingPeer(tmp_path, head=4)
    p.spill.segment_bytes = 1 << 16
    for i in range(10_000):
        p.push(url(i))
    p.state.commit()
    p.checkpoint()
    segs = tmp_path / "state" / "frontier"
    n = len(os.listdir(segs))
    assert n > 3
    for _ in range(9_000):
        p.pop()
    p.state.commit()
    p.checkpoint()  # the segments emptied go now: the snapshot before this one named them
    assert len(os.listdir(segs)) < n
    again = SpillingPeer(tmp_path)
    assert sum(len(q) for q in again.order().values()) == 1_000


def test_a_format_1_snapshot_is_still_read(tmp_path: Path) -> None:
    import msgpack
    import zlib

    s = begun(tmp_path)
    s.close()
    snap = tmp_path / "state" / "snapshot-1.msgpack"
    data = snap.read_bytes()
    doc = msgpack.unpackb(data[:-24], raw=False)
    del doc["spill"]
    payload = msgpack.packb(doc, use_bin_type=True)
    snap.write_bytes(payload + struct.pack("<8sIQI", b"RCSNAPSH", 1, len(payload), zlib.crc32(payload)))
    rec = state(tmp_path).recover()
    assert rec is not None and list(rec.queued) == ["http://a.test/0", "http://a.test/1"]
    assert rec.spilled == 0
