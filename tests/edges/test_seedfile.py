"""peer.state.seedfile: a seeds file read from an offset, plain or gzip by its magic; resumed after a kill."""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterable
from pathlib import Path

import pytest

from peer.core.crawl.decisions import Queued
from peer.core.crawl.seedfeed import SeedFeed
from peer.core.door.effects import Commit, PeerEffect, SeedsAt
from peer.core.door.peer import PeerCore
from peer.state.journal import PeerState
from peer.state.seedfile import MAX_LINE, SeedReader, mark_of
from tests.core.test_crawl import config
from tests.edges.test_state import new_bloom

LINES = [f"http://h{i % 7}.web.test/p{i}\n" for i in range(250)]
TEXT = ("# a comment\n\n" + "".join(LINES)).encode()


def write(tmp_path: Path, *, gz: bool) -> Path:
    # The names lie on purpose: the kind is told by the magic bytes.
    path = tmp_path / ("seeds.gz" if not gz else "seeds.txt")
    path.write_bytes(gzip.compress(TEXT) if gz else TEXT)
    return path


def read_all(f: SeedReader, batch: int = 64) -> list[bytes]:
    out: list[bytes] = []
    while True:
        lines, _ = f.read(batch)
        if not lines:
            return out
        out += lines


@pytest.mark.parametrize("gz", [False, True])
def test_plain_and_gzip_are_told_by_their_magic_and_resume_at_an_offset(tmp_path, gz):
    path = write(tmp_path, gz=gz)
    assert mark_of(path).gzip is gz
    with SeedReader(path) as f:
        assert f.gzip is gz
        first, at = f.read(40)
    assert b"".join(first) == TEXT[:at]  # the offset counts the (decompressed) bytes
    with SeedReader(path, at) as f:
        assert first + read_all(f) == TEXT.splitlines(keepends=True)


def test_a_line_too_long_is_one_invalid_line(tmp_path):
    path = tmp_path / "s"
    path.write_bytes(b"http://a.web.test/\n" + b"x" * (3 * MAX_LINE) + b"\nhttp://b.web.test/\n")
    with SeedReader(path) as f:
        lines = read_all(f)
        assert f.offset == path.stat().st_size
    assert len(lines) == 3 and lines[1] == b"\xff"


def carry(effects: Iterable[PeerEffect], state: PeerState, queued: list[str]) -> None:
    """What the engine's table does with a batch's effects (peer/engine/crawler.py)."""
    for e in effects:
        if isinstance(e, Queued):
            state.queued(e.url, e.depth)
            queued.append(e.url)
        elif isinstance(e, SeedsAt):
            state.counters(dict(e.counters))
        elif isinstance(e, Commit):
            state.commit()


@pytest.mark.parametrize("gz", [False, True])
def test_a_kill_mid_file_neither_loses_nor_repeats_a_line(tmp_path, gz):
    path = write(tmp_path, gz=gz)
    cfg = config(seeds_file=str(path))
    state = PeerState(tmp_path / "state", "p1", "r")
    state.begin(new_bloom(), [], [], {})
    core = PeerCore.alone(cfg, "p1")
    start, _ = core.seeds_file_begin(mark_of(path))
    before: list[str] = []
    f = SeedReader(path, start)
    for _ in range(3):
        lines, end = f.read(50)
        carry(core.seeds_file_batch(lines, end, 0.0), state, before)
    # A fourth batch's records are appended but never committed: kill -9 (no close of anything).
    lines, end = f.read(50)
    lost: list[str] = []
    carry([e for e in core.seeds_file_batch(lines, end, 0.0) if not isinstance(e, Commit)], state, lost)
    assert lost
    f.close()  # (the reader's handle is nothing the journal depends on)

    rec = PeerState(tmp_path / "state", "p1", "r").recover()
    assert rec is not None
    assert list(rec.queued) == before  # the three committed batches, not the fourth
    feed = SeedFeed.from_counters(rec.counters)
    start, said = feed.begin(mark_of(path))
    assert said is None and feed.lines == 150
    with SeedReader(path, start) as f2:
        rest = [line.decode().strip() for line in read_all(f2)]
    urls = before + [u for u in rest if u.startswith("http")]
    assert urls == [line.strip() for line in LINES]  # every line once, in order

    # The file changed since (touched and rewritten): said, and read from the start.
    path.write_bytes(gzip.compress(TEXT + b"http://new.web.test/\n") if gz else b"x" + TEXT)
    os.utime(path, (1, 1))
    again = SeedFeed.from_counters(rec.counters)
    start, said = again.begin(mark_of(path))
    assert start == 0 and said is not None


def test_the_counts_are_a_metric_family(tmp_path):
    from peer.engine.metrics import families

    core = PeerCore.alone(config(seeds_file="seeds.txt"), "p1")
    core.seeds_file_begin(mark_of(write(tmp_path, gz=False)))
    core.seeds_file_batch([b"http://a.web.test/\n", b"http://x.example.org/\n", b"#\n"], 40, 0.0)
    figures = core.figures
    scrape = figures.scrape(0.0, figures.status(0.0, elapsed=1.0, dns_hit_rate=1.0, limits={}), peer="p1",
                            ring="r", uptime=1.0, dns={}, dns_hit_ratio=1.0, warc={})
    m = {m.name: m for m in families(scrape)}["ringcrawl_seeds_file_lines"]
    assert {s.labels["outcome"]: s.value for s in m.samples if s.name.endswith("_total")} == {
        "queued": 1, "scope": 1, "skipped": 1}


def test_a_missing_seeds_file_is_one_clear_config_error(tmp_path):
    from peer.errors import ConfigError
    from peer.state.configfile import load_config

    toml = tmp_path / "cluster.toml"
    toml.write_text('[[peer]]\nid = "p1"\n[crawl]\nseeds_file = "nope.txt"\nallow_hosts = ["*"]\n')
    with pytest.raises(ConfigError, match="crawl.seeds_file.*no such file"):
        load_config(toml)
    (tmp_path / "nope.txt").write_text("http://a.web.test/\n")
    assert load_config(toml).crawl.seeds_file == str(tmp_path.resolve() / "nope.txt")
