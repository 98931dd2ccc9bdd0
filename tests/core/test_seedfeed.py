"""peer.core.crawl.seedfeed: a seeds file's lines judged, counted and positioned, through the peer core (pure)."""

from __future__ import annotations

import pytest

from peer.core.crawl.decisions import Forward, Queued
from peer.core.crawl.seedfeed import FileMark, SeedFeed, parse_line, reader
from peer.core.door.effects import Commit, SeedsAt
from peer.errors import ConfigError
from tests.core.test_crawl import config
from tests.core.test_peercore import hosts_of, peer

MARK = FileMark(size=1000, mtime=1.5, head=42, gzip=False)


def test_a_line_is_a_url_a_skip_or_invalid():
    assert parse_line(b"  http://a.web.test/x \r\n") == "http://a.web.test/x"
    assert parse_line(b"\n") is None
    assert parse_line(b"   # a comment\n") is None
    for bad in (b"http://a.web.test/ x\n", b"\xff\xfe\n"):
        with pytest.raises(ValueError):
            parse_line(bad)


def test_only_the_lowest_listed_peer_reads_the_file():
    assert reader(["p2", "p1", "p3"], "p1")
    assert not reader(["p2", "p1", "p3"], "p2")
    assert not reader(["p1", "p2"], "p9")  # a joiner not in cluster.toml


def test_every_line_is_counted_once_by_its_outcome():
    p1 = peer()
    [mine] = hosts_of(p1, "p1")
    [theirs] = hosts_of(p1, "p2")
    lines = [b"# seeds\n", b"\n", f"http://{mine}/a\n".encode(), f"http://{mine}/a\n".encode(),
             f"http://{theirs}/b\n".encode(), b"http://elsewhere.example/\n", b"ftp://x/\n",
             b"not a url\n", b"\xff\n"]
    assert p1.seeds_file_begin(MARK) == (0, None)
    assert not p1.crawl.locally_idle()  # the reader is busy until the file ends
    out = p1.seeds_file_batch(lines, 321, 0.0)
    assert Queued(f"http://{mine}/a", 0) in out
    assert [e for e in out if isinstance(e, Forward)] == [Forward(f"http://{theirs}/b", 0, "p2", False)]
    assert isinstance(out[-2], SeedsAt) and isinstance(out[-1], Commit)  # the position, then durable (rule 3)
    feed = p1.crawl.seed_feed
    assert dict(feed.counts) == {"skipped": 2, "queued": 1, "seen": 1, "forwarded": 1, "scope": 1,
                                 "invalid": 3}
    assert feed.lines == len(lines) and feed.offset == 321
    assert dict(out[-2].counters)["seeds_file.@offset"] == 321
    # Where an operator looks: the status reply's counters and the summary's line.
    assert p1.figures.limits(0.0, {})["seeds_file.invalid"] == 3
    p1.seeds_file_end()
    assert not feed.reading and feed.done


def test_the_position_and_counts_come_back_from_the_journals_counters():
    feed = SeedFeed()
    feed.begin(MARK)
    feed.count("queued")
    feed.count("scope")
    feed.advance(500)
    back = SeedFeed.from_counters({"pages": 3.0, **feed.to_counters()})
    assert back.offset == 500 and dict(back.counts) == {"queued": 1, "scope": 1}
    assert back.begin(MARK) == (500, None)  # the same file: on from where it stopped


def test_a_grown_plain_file_goes_on_and_a_changed_one_starts_again_saying_so():
    feed = SeedFeed()
    feed.begin(MARK)
    feed.count("queued")
    feed.advance(900)
    saved = feed.to_counters()
    grown = SeedFeed.from_counters(saved)
    start, said = grown.begin(FileMark(2000, 9.0, MARK.head, False))
    assert start == 900 and said is not None and "grew" in said
    changed = SeedFeed.from_counters(saved)
    start, said = changed.begin(FileMark(1000, 9.0, 7, False))
    assert start == 0 and said is not None and "changed" in said
    assert changed.lines == 0
    # The cleared counts are journaled as 0, so a later recovery does not bring them back.
    assert SeedFeed.from_counters({**saved, **changed.to_counters()}).counts == {}


def test_a_finished_file_is_not_read_again():
    feed = SeedFeed()
    feed.begin(MARK)
    feed.advance(1000)
    feed.end()
    back = SeedFeed.from_counters(feed.to_counters())
    assert back.begin(MARK) == (1000, None) and not back.reading


def test_a_seeds_file_needs_allow_hosts():
    with pytest.raises(ConfigError, match="crawl.allow_hosts"):
        config(seeds_file="seeds.txt", allow_hosts=[])
    cfg = config(seeds_file="seeds.txt")
    assert cfg.crawl.seeds_file == "/nonexistent/seeds.txt"  # relative to cluster.toml
