"""What moves with a host (peer/core/handoff/state.py): revisit records, cookies, digests.

Pure: each part's export on the old owner, its import on the new one, and
the rules of the import (the newer record wins, remote input is checked).
A host's records travel in wall-clock time, so the two owners' crawl
clocks differ here on purpose.
"""

from __future__ import annotations

import random

from peer.core.config.revisit import RevisitConfig
from peer.core.dedupe.digests import DigestTable, Seen
from peer.core.http.cookies import CookieJar
from peer.core.revisit.recrawl import Recrawl

CFG = RevisitConfig(enabled=True, min_interval=10.0, max_interval=1000.0, initial_interval=10.0,
                    jitter=0.0, revisit_share=0.5)
OLD_WALL = 1_700_000_000.0   # the old owner's clock 0.0 is this epoch second
NEW_WALL = 1_700_000_500.0   # the new owner's clock 0.0 is this one
URL = "http://a.test/x"


def old_owner() -> Recrawl:
    rc = Recrawl(CFG, random.Random(1))
    rc.visited(URL, "a.test", 3, 0.0, 200, "sha1:A", '"e1"', "Tue, 14 Nov 2023 22:13:20 GMT")
    rc.visited("http://b.test/y", "b.test", 1, 0.0, 200, "sha1:B", None, None)
    return rc


def test_a_moved_host_s_record_keeps_its_schedule_and_its_revisit_is_conditional() -> None:
    old = old_owner()
    records = old.export_host("a.test", OLD_WALL)
    assert len(records) == 1 and old.queue.get(URL, "a.test") is None   # gone from the old owner
    assert old.queue.get("http://b.test/y", "b.test") is not None        # other hosts stay
    new = Recrawl(CFG, random.Random(2))
    # Same instant: the new owner's clock reads -500 when the old one's reads 0.
    assert new.import_records(records, NEW_WALL) == 1
    assert new.feed(-500.0 + 9.9) == []                                 # not due before its time
    assert new.feed(-500.0 + 10.0) == [(URL, "a.test", 3)]               # due when it was, its depth kept
    assert dict(new.conditional(URL)) == {"If-None-Match": '"e1"',
                                          "If-Modified-Since": "Tue, 14 Nov 2023 22:13:20 GMT"}
    v = new.visited(URL, "a.test", 3, -490.0, 304, None, None, None)
    assert v.kind.value == "revisit" and v.conditional and v.interval_after == 15.0   # its interval went on


def test_the_newer_record_of_a_url_wins_and_a_replay_changes_nothing() -> None:
    old = old_owner()
    records = old.export_host("a.test", OLD_WALL)
    new = Recrawl(CFG, random.Random(2))
    new.visited(URL, "a.test", 3, -400.0, 200, "sha1:C", '"e9"', None)   # visited here after the old owner
    assert new.import_records(records, NEW_WALL) == 0                    # the older one is not taken
    assert dict(new.conditional(URL) or ()) == {} and new.queue.get(URL, "a.test").etag == '"e9"'
    fresh = Recrawl(CFG, random.Random(3))
    assert fresh.import_records(records, NEW_WALL) == 1
    assert fresh.import_records(records, NEW_WALL) == 0                  # a replay
    assert len(fresh.queue) == 1


def test_imported_records_are_checked_as_remote_input() -> None:
    new = Recrawl(CFG, random.Random(2))
    bad_etag = (URL, "a.test", OLD_WALL, 5e9, OLD_WALL - 5, "", 'e1\r\nX: y', "not a date", 1, 0, 0)
    assert new.import_records([bad_etag, ("short",), (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)], OLD_WALL) == 1  # type: ignore[list-item]
    state = new.queue.get(URL, "a.test")
    assert state is not None and state.etag is None and state.last_modified is None
    assert state.interval == CFG.max_interval                            # clamped
    assert new.counts["import_malformed"] == 2


def test_a_revisit_passed_on_without_a_visit_gives_its_record_to_send_on() -> None:
    rc = old_owner()
    rc.feed(10.0)                      # handed to the frontier
    record = rc.forget(URL, OLD_WALL)  # its host moved: the job left without a visit
    assert record is not None and record[0] == URL and record[2] == OLD_WALL + 10.0
    assert rc.forget(URL, OLD_WALL) is None


def test_a_host_s_cookies_move_and_are_sent_by_the_new_owner() -> None:
    now = OLD_WALL
    old = CookieJar()
    old.store("http://a.test/", ["sid=s3cr3t; Path=/", "theme=dark; Max-Age=3600"], now)
    old.store("http://b.test/", ["other=1"], now)
    records = old.export_host("a.test")
    assert old.header("http://a.test/x", now) is None and old.header("http://b.test/", now) == "other=1"
    new = CookieJar()
    assert new.import_records(records, now + 5) == 2
    assert new.header("http://a.test/x", now + 5) == "sid=s3cr3t; theme=dark"
    assert new.header("http://a.test/x", now + 4000) == "sid=s3cr3t"   # the Max-Age one expired


def test_handed_cookies_are_checked_as_remote_input() -> None:
    off = CookieJar(enabled=lambda host: host != "off.test")
    bad = [("a.test", "sid", "v\r\nX-Evil: 1", "/", False, 0.0), ("a.test", "", "v", "/", False, 0.0),
           ("off.test", "sid", "v", "/", False, 0.0), ("a.test", "sid", "v", "nopath", False, 0.0), ("x",)]
    assert off.import_records(bad, OLD_WALL) == 0 and len(off) == 0
    assert off.counts["cookies.refused.handed"] == 5


def test_a_host_s_digests_move_and_its_copies_stay_exact_duplicates() -> None:
    old = DigestTable()
    page = bytes(range(20))
    old.check("http://a.test/p", page)
    old.check("http://b.test/q", bytes(range(1, 21)))
    records = old.export_hosts({"a.test"})
    assert len(records) == 1 and len(old) == 1
    new = DigestTable()
    new.check("http://c.test/first", bytes(range(2, 22)))
    assert new.import_digests([*records, ("bad",), (-1, "http://x/")]) == 1
    assert new.check("http://a.test/p?print=1", page) == (Seen.DUPLICATE, "http://a.test/p")
    assert new.check("http://a.test/p", page)[0] is Seen.UNCHANGED
    assert new.import_digests(records) == 0   # known: keeps its first URL


def test_a_full_digest_table_still_exports_exactly_what_it_holds_of_each_host() -> None:
    # The per-host lists follow the FIFO's evictions, so an export never
    # misses a digest nor returns one the table forgot.
    rng = random.Random(5)
    table = DigestTable(max_digests=50)
    for i in range(400):
        table.check(f"http://h{rng.randrange(7)}.test/{i}", i.to_bytes(8, "big"))
    held = dict(table._first)
    got = table.export_hosts([f"h{h}.test" for h in range(7)])
    assert dict(got) == held and len(table) == 0
    assert table.stats.forgotten == 350
