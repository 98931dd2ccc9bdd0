"""peer.state.sievefile: the seen set's runs on disk, answering the sieve exactly, and a kill -9 with URLs waiting.

The sieve's policy (peer.core.seen.sieve) and the crawl core that uses it are
tested without files in tests/core/test_seen.py; a whole crawl through it in
tests/e2e/test_seenweb.py.
"""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

import peer.state.sievefile as sievefile
from peer.core.crawl.core import Checking, Origin, Queued
from peer.core.seen.sieve import SeenSieve, url_hash
from peer.errors import StateError
from peer.state.sievefile import SieveFiles
from tests.core.test_seen import SITE, drain, saturated_core


def apply(files: SieveFiles, sieve: SeenSieve) -> list[bool]:
    batch = sieve.take(0.0)
    assert batch is not None
    new = files.apply(batch)
    sieve.verdicts(batch, new, 0.0)
    return new


def test_sieve_files_answer_exactly_across_runs_on_disk_and_a_reopen(tmp_path):
    files = SieveFiles(tmp_path / "seen", ram_hashes=500)
    files.open()
    sieve = SeenSieve(disk_after=0, batch=100, max_wait=1.0)
    rng = random.Random(7)
    added = [f"{SITE}/{rng.random()}" for _ in range(5_000)]
    for i in range(0, len(added), 100):
        for url in added[i:i + 100]:
            sieve.add(url, 0.0)
        assert apply(files, sieve) == []
    st = files.stats()
    assert st.hashes == 5_000 and st.disk_runs >= 2 and st.disk_bytes >= 8 * 4_500
    assert st.disk_runs <= 6 and st.ram_runs <= 6  # merged size-tiered, not one run a batch
    # Checks: a known URL is seen, a new one new (once, even twice in a batch).
    for url in [added[0], added[2_345], f"{SITE}/fresh", f"{SITE}/fresh", added[-1]]:
        sieve.check(url, "site", 0, 0, 0.0) if not sieve.is_pending(url) else None
    new = apply(files, sieve)
    assert new == [False, False, True, False]
    # A new check is not inserted by the driver: the core adds it once it is journaled.
    assert files.contains(np.array([url_hash(f"{SITE}/fresh")], dtype=np.uint64)).tolist() == [False]
    sieve.add(f"{SITE}/fresh", 0.0)
    apply(files, sieve)
    files.close()
    again = SieveFiles(tmp_path / "seen", ram_hashes=500)
    assert again.open() >= 5_001
    probe = np.array([url_hash(u) for u in (added[17], added[4_999], f"{SITE}/fresh", f"{SITE}/never")],
                     dtype=np.uint64)
    assert again.contains(probe).tolist() == [True, True, True, False]
    again.close()


def test_a_torn_adds_log_keeps_its_whole_hashes_and_a_bad_run_is_named(tmp_path):
    d = tmp_path / "seen"
    files = SieveFiles(d, ram_hashes=10**6)
    files.open()
    sieve = SeenSieve(disk_after=0, batch=10, max_wait=1.0)
    sieve.add(f"{SITE}/kept", 0.0)
    apply(files, sieve)
    files.close()
    with open(d / "adds.log", "ab") as f:
        f.write(b"\x01\x02\x03")  # a kill -9 mid-write
    files = SieveFiles(d, ram_hashes=10**6)
    assert files.open() == 1
    assert (d / "adds.log").stat().st_size == 8
    assert files.contains(np.array([url_hash(f"{SITE}/kept")], dtype=np.uint64)).tolist() == [True]
    files.close()
    (d / "run-3.u64").write_bytes(b"RCSIEVE1" + b"\0" * 5)
    with pytest.raises(StateError, match=r"run-3\.u64.*--fresh"):
        SieveFiles(d, ram_hashes=10).open()


def test_a_streaming_merge_of_runs_is_their_sorted_union(monkeypatch):
    monkeypatch.setattr(sievefile, "_CHUNK", 7)
    rng = np.random.default_rng(3)
    runs = [np.unique(rng.integers(0, 500, size=n, dtype=np.uint64)) for n in (200, 50, 3)]
    chunks = list(sievefile._merge_chunks(runs))
    assert all(c.size <= 3 * 7 for c in chunks)
    merged = np.concatenate(chunks)
    assert merged.tolist() == np.unique(np.concatenate(runs)).tolist()


def test_a_kill_with_urls_waiting_for_the_sieve_loses_none_of_them(tmp_path):
    from peer.state.journal import PeerState

    c = saturated_core(disk_after=0)
    files = SieveFiles(tmp_path / "seen", ram_hashes=10**6)
    files.open()
    state = PeerState(tmp_path / "state", "p1", "test")
    state.begin(c.bloom, [], [], {})
    urls = [f"{SITE}/p{i}" for i in range(300)]
    for u in urls[:150]:
        journal(state, c.discover(u, 1, 0.0, Origin.LINK))
    state.commit()
    # One sieve pass, as the engine makes it: commit, take, apply, journal the verdicts.
    journal(state, drain(c, files))
    state.commit()
    for u in urls[150:]:
        journal(state, c.discover(u, 1, 0.0, Origin.LINK))
    for u in urls[:20]:  # repeats: duplicates, whatever their state
        journal(state, c.discover(u, 1, 0.0, Origin.LINK))
    state.commit()
    assert c.sieve.pending > 100
    state.close()
    files.close()                                 # kill -9: the open batch never reached the sieve

    rec = PeerState(tmp_path / "state", "p1", "test").recover()
    c2 = saturated_core(disk_after=0)
    c2.bloom = rec.bloom
    files = SieveFiles(tmp_path / "seen", ram_hashes=10**6)
    files.open()
    for u, d in rec.queued.items():               # what Crawler._resume does
        c2.discover(u, d, 0.0, Origin.RECOVERED)
    for u, d in rec.forwards:
        c2.discover(u, d, 0.0, Origin.RELAY)      # the waiting ones are judged again
    drain(c2, files)
    drain(c2, files)
    queued = Counter(j.url for j in c2.frontier.iter_queued())
    assert set(queued) == set(urls) and max(queued.values()) == 1


def journal(state, effects) -> None:
    """What the engine does with the core's effects, for the journal alone."""
    for e in effects:
        if isinstance(e, Queued):
            state.queued(e.url, e.depth)
        elif isinstance(e, Checking):
            state.forwarded(((e.url, e.depth),))
