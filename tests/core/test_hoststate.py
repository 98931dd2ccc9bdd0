"""What moves with a host (peer/core/handoff/state.py): revisit records, cookies, digests.

Pure: each part's export on the old owner, its import on the new one, and
the rules of the import (the newer record wins, remote input is checked).
A host's records travel in wall-clock time, so the two owners' crawl
clocks differ here on purpose.
"""

from __future__ import annotations

import random
from pathlib import Path

from peer.core.config.cluster import parse_config
from peer.core.config.revisit import RevisitConfig
from peer.core.crawl.core import CrawlCore
from peer.core.crawl.decisions import Done
from peer.core.door.effects import ReadFetched, ReadHosts
from peer.core.door.peer import PeerCore
from peer.core.dedupe.digests import DigestTable, Seen
from peer.core.http.cookies import CookieJar
from peer.core.revisit.recrawl import Recrawl
from peer.core.urls.normalize import host_key
from ring.messages import HandoffDone, HostState, HostStateAck, UrlBatch
from ring.node import RingNode, Send
from ring.statebox import Kind as StateKind

CFG = RevisitConfig(enabled=True, min_interval=10.0, max_interval=1000.0, initial_interval=10.0,
                    jitter=0.0, revisit_share=0.5)
OLD_WALL = 1_700_000_000.0   # the old owner's clock 0.0 is this epoch second
NEW_WALL = 1_700_000_500.0   # the new owner's clock 0.0 is this one
URL = "http://a.test/x"
from ring.wireversion import marked_nonce

#: Routes of members of wire version 4 (ring.wireversion): they take HostState.
R1 = b"p1/" + marked_nonce("a" * 16).encode()
R2 = b"p2/" + marked_nonce("a" * 16).encode()


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


# -- two peers' cores: a leave hands the state over, acked (peer/core/door/peer.py rule 3) --

RING = "test"
SEEDS = [("p1", "tcp://127.0.0.1:5799", 1.0), ("p2", "tcp://127.0.0.1:5798", 1.0)]
INC = 5000
TOML = f"""
[ring]
name = "{RING}"
[[peer]]
id = "p1"
address = "tcp://127.0.0.1:5799"
[[peer]]
id = "p2"
address = "tcp://127.0.0.1:5798"
[crawl]
seeds = ["http://h0.web.test/"]
allow_hosts = ["*.web.test"]
obey_robots = false
cookies = true
[revisit]
enabled = true
min_interval = 10.0
initial_interval = 10.0
jitter = 0.0
[dedupe]
enabled = true
"""


def peer_core(peer_id: str) -> PeerCore:
    node = RingNode(peer_id, dict((s[0], s[1]) for s in SEEDS)[peer_id], 1.0, RING, seeds=SEEDS,
                    gossip_interval=0.1, suspect_after=0.5, dead_after=1.5, now=0.0, incarnation=INC,
                    owner_key=host_key)
    core = PeerCore(CrawlCore(parse_config(TOML, Path("/nonexistent/cluster.toml")), peer_id,
                              rng=random.Random(1)), node, now=0.0)
    # The first ring, and its hand-off read (ring.handoff rule 6): nothing fetched here.
    [ask] = [e for e in core.tick(0.0) if isinstance(e, ReadHosts)]
    [fetch] = core.hosts_read(ask.request, [], 0.0)
    core.fetched_read(fetch.request, [], 0.0, wall=0.0)
    return core


def test_a_leaver_hands_a_host_s_schedule_cookies_and_digests_to_its_new_owner_acked() -> None:
    p1, p2 = peer_core("p1"), peer_core("p2")
    for a, b in ((p1, p2), (p2, p1)):
        a.receive(f"{b.crawl.peer_id}/{marked_nonce('a' * 16)}".encode(), b.node.membership.digest(), 0.0, wall=0.0)  # type: ignore[union-attr]
    ring = p1.node.ring()  # type: ignore[union-attr]
    mine = next(h for h in (f"h{i}.web.test" for i in range(200)) if ring.owner(h) == "p1")
    url = f"http://{mine}/page"
    for core, wall in ((p1, OLD_WALL), (p2, NEW_WALL)):
        core.set_wall(0.0, wall)
    rc, jar = p1.crawl.recrawl, p1.crawl.cookies
    assert rc is not None and jar is not None
    rc.visited(url, mine, 1, 0.0, 200, "sha1:A", '"e1"', None)
    jar.store(url, ["sid=s3cr3t"], OLD_WALL)
    p1.crawl.dedupe.digests.check(url, bytes(range(20)))

    out = p1.leave(1.0)  # every host of p1 moves to p2
    [ask] = [e for e in out if isinstance(e, ReadHosts)]
    [fetch] = [e for e in p1.hosts_read(ask.request, [mine], 1.1) if isinstance(e, ReadFetched)]
    out = p1.fetched_read(fetch.request, [(url, mine)], 1.2, wall=OLD_WALL + 1.2)
    [state] = [a.msg for a in out if isinstance(a, Send) and isinstance(a.msg, HostState)]
    assert (len(state.revisits), len(state.cookies), len(state.digests)) == (1, 1, 1)
    assert rc.queue.get(url, mine) is None and jar.header(url, OLD_WALL) is None  # gone from p1
    batches = [a.msg for a in p1.flush(2.0) if isinstance(a, Send) and isinstance(a.msg, UrlBatch)]

    out = p2.receive(R1, state, 1.3, wall=NEW_WALL + 1.3)
    [ack] = [a.msg for a in out if isinstance(a, Send) and isinstance(a.msg, HostStateAck)]
    for b in batches:
        p2.receive(R1, b, 1.3, wall=NEW_WALL + 1.3)
    # p2 revisits the page when it was due (10 s after p1's visit), conditionally, with the cookie.
    rc2 = p2.crawl.recrawl
    assert rc2 is not None and rc2.feed(-500.0 + 9.9) == [] and rc2.feed(-500.0 + 10.0) == [(url, mine, 1)]
    assert dict(p2.validators(url)) == {"If-None-Match": '"e1"'}
    assert p2.cookie_header(url, NEW_WALL + 10.0) == "sid=s3cr3t"
    assert p2.crawl.dedupe.digests.check(url + "?copy", bytes(range(20))) == (Seen.DUPLICATE, url)
    assert p2.node.dropped["handoff_state.revisits_taken"] == 1  # type: ignore[union-attr]

    # p1 tells HandoffDone only once both the batch and the state are acked.
    acks = [a.msg for a in p2.flush(10.0) if isinstance(a, Send) and a.dest == "p1"]
    done = []
    for m in acks:
        done += p1.receive(R2, m, 2.1, wall=OLD_WALL + 2.1)
    assert not any(isinstance(a, Send) and isinstance(a.msg, HandoffDone) for a in done)
    done = p1.receive(R2, ack, 2.2, wall=OLD_WALL + 2.2)
    assert any(isinstance(a, Send) and isinstance(a.msg, HandoffDone) for a in done)
    assert p1.node.statebox.idle  # type: ignore[union-attr]


def test_a_revisit_passed_on_after_the_move_sends_its_record_to_the_host_s_owner() -> None:
    p1, p2 = peer_core("p1"), peer_core("p2")
    p1.receive(R2, p2.node.membership.digest(), 0.0, wall=0.0)  # type: ignore[union-attr]
    ring = p1.node.ring()  # type: ignore[union-attr]
    theirs = next(h for h in (f"h{i}.web.test" for i in range(200)) if ring.owner(h) == "p2")
    url = f"http://{theirs}/late"
    rc = p1.crawl.recrawl
    assert rc is not None
    # A record of a host that is p2's now (a restarted p1's, read back from its results).
    rc.visited(url, theirs, 0, 0.0, 200, "sha1:A", '"e1"', None)
    p1.set_wall(0.0, OLD_WALL)
    assert rc.feed(10.0) == [(url, theirs, 0)]  # due: to the front of its host's queue
    p1.routed([Done(url)], 10.0)  # its job was passed on to p2 (admit's PassOn): no visit here
    assert not rc.scheduled
    sent = [m for _, m in p1.node.statebox.messages(10.1)]  # type: ignore[union-attr]
    assert [m.revisits[0][0] for m in sent] == [url] and sent[0].revisits[0][6] == '"e1"'


def test_a_restarted_peer_passes_the_schedule_of_hosts_now_others_on_at_once() -> None:
    # p1 comes back (after a stop, or after being declared dead: its hosts may have
    # moved meanwhile): its fetches table holds the schedule of a host the ring now
    # gives to p2, due only in an hour, and of one of its own.
    p1, p2 = peer_core("p1"), peer_core("p2")
    p1.receive(R2, p2.node.membership.digest(), 0.0, wall=0.0)  # type: ignore[union-attr]
    p1.set_wall(0.0, OLD_WALL)
    ring = p1.node.ring()  # type: ignore[union-attr]
    hosts = [f"h{i}.web.test" for i in range(200)]
    theirs = next(h for h in hosts if ring.owner(h) == "p2")
    mine = next(h for h in hosts if ring.owner(h) == "p1")
    # ResultStore.last_visits' rows: url, host, fetched_at, next_due, interval, digest, etag, lm, visits, changes.
    rows = [(f"http://{h}/p", h, OLD_WALL - 60.0, OLD_WALL + 3600.0, 3660.0, "sha1:A", '"e1"', None, 2, 0)
            for h in (theirs, mine)]
    assert p1.disk.restore_visits(rows, 0.0, OLD_WALL) == 2
    jar = p1.crawl.cookies
    assert jar is not None
    jar.store(f"http://{theirs}/", ["sid=s3cr3t"], OLD_WALL)  # the jar's file, read back
    assert p1.pass_on_restored() == 2
    sent = [a.msg for a in p1.tick(0.1) if isinstance(a, Send) and isinstance(a.msg, HostState)]
    assert [(m.revisits[0][0], m.cookies[0][2]) for m in sent] == [(f"http://{theirs}/p", "s3cr3t")]
    rc = p1.crawl.recrawl
    assert rc is not None and rc.queue.get(f"http://{theirs}/p", theirs) is None
    assert rc.queue.get(f"http://{mine}/p", mine) is not None  # its own host's stays
    out = p2.receive(R1, sent[0], 0.2, wall=NEW_WALL + 0.2)
    acks = [a.msg for a in out if isinstance(a, Send) and isinstance(a.msg, HostStateAck)]
    p1.receive(R2, acks[0], 0.3, wall=OLD_WALL + 0.3)
    assert p1.node.statebox.idle  # type: ignore[union-attr]
    assert p2.crawl.recrawl is not None and p2.crawl.recrawl.queue.get(f"http://{theirs}/p", theirs) is not None


def test_a_leaver_ends_only_once_every_record_it_sent_is_acked_even_one_sent_after_its_handoff() -> None:
    from peer.core.crawl.decisions import Finished

    p1, p2 = peer_core("p1"), peer_core("p2")
    for a, b in ((p1, p2), (p2, p1)):
        a.receive(f"{b.crawl.peer_id}/{marked_nonce('a' * 16)}".encode(), b.node.membership.digest(), 0.0, wall=0.0)  # type: ignore[union-attr]
    p1.set_wall(0.0, OLD_WALL)
    ring = p1.node.ring()  # type: ignore[union-attr]
    mine = next(h for h in (f"h{i}.web.test" for i in range(200)) if ring.owner(h) == "p1")
    url = f"http://{mine}/page"
    rc = p1.crawl.recrawl
    assert rc is not None
    rc.visited(url, mine, 1, 0.0, 200, "sha1:A", '"e1"', None)
    assert rc.feed(10.0) == [(url, mine, 1)]  # its revisit is in the frontier when p1 leaves

    out = p1.leave(11.0)
    [ask] = [e for e in out if isinstance(e, ReadHosts)]
    [fetch] = [e for e in p1.hosts_read(ask.request, [mine], 11.1) if isinstance(e, ReadFetched)]
    out = p1.fetched_read(fetch.request, [(url, mine)], 11.2, wall=OLD_WALL + 11.2)
    for m in [a.msg for a in [*out, *p1.flush(12.0)] if isinstance(a, Send)]:
        for b in p2.receive(R1, m, 12.1, wall=NEW_WALL + 12.1):
            if isinstance(b, Send) and b.dest == "p1":
                p1.receive(R2, b.msg, 12.2, wall=OLD_WALL + 12.2)
    for m in [a.msg for a in p2.flush(20.0) if isinstance(a, Send) and a.dest == "p1"]:
        p1.receive(R2, m, 12.3, wall=OLD_WALL + 12.3)
    assert p1.node.handing_off == 0  # type: ignore[union-attr]  # the hand-off is over (HandoffDone sent)
    # The revisit's job leaves p1's frontier without a visit: its record goes after it.
    p1.routed([Done(url)], 12.4)
    step, _ = p1.next(12.5)
    assert not isinstance(step, Finished)  # before: p1 ended here, and the record with it
    [late] = [a for a in p1.tick(12.6) if isinstance(a, Send) and isinstance(a.msg, HostState)]
    step, _ = p1.next(12.7)
    assert not isinstance(step, Finished)
    [ack] = [a.msg for a in p2.receive(R1, late.msg, 12.8, wall=NEW_WALL + 12.8)
             if isinstance(a, Send) and isinstance(a.msg, HostStateAck)]
    p1.receive(R2, ack, 12.9, wall=OLD_WALL + 12.9)
    step, _ = p1.next(13.0)
    assert isinstance(step, Finished)
    rc2 = p2.crawl.recrawl
    assert rc2 is not None and rc2.queue.get(url, mine) is not None


def test_a_leaver_whose_new_owner_never_acks_its_state_ends_after_the_handoff_timeout() -> None:
    from ring.handoff import HANDOFF_TIMEOUT

    p1 = peer_core("p1")
    node = p1.node
    assert node is not None
    node.leaving = True
    node.statebox.add("p2", "h.test", StateKind.REVISIT, ("http://h.test/", "h.test", 1.0, 1.0, 0.0, "", "", "", 0, 0, 0))
    node.statebox.messages(5.0)  # sent at 5.0; an older build drops it
    assert not node.left(True, 5.0 + HANDOFF_TIMEOUT - 1) and node.left(True, 5.0 + HANDOFF_TIMEOUT)


def test_a_record_imported_overdue_is_revisited_at_the_next_feed() -> None:
    old = old_owner()
    records = old.export_host("a.test", OLD_WALL)
    new = Recrawl(CFG, random.Random(2))
    new.visited("http://c.test/", "c.test", 0, -500.0, 200, None, None, None)
    assert new.feed(-400.0) == [("http://c.test/", "c.test", 0)]  # the queue's clock is past a.test's due time
    assert new.import_records(records, NEW_WALL) == 1
    # Before: it went to a.test's ready heap unseen by feed(), and waited for a start of a.test forever.
    assert new.feed(-399.0) == [(URL, "a.test", 3)]


def test_a_host_handed_back_to_its_former_owner_is_revisited_not_dropped_as_fetched_elsewhere() -> None:
    from peer.core.crawl.decisions import Fetch, Start

    p1, p2 = peer_core("p1"), peer_core("p2")
    for a, b in ((p1, p2), (p2, p1)):
        a.receive(f"{b.crawl.peer_id}/{marked_nonce('a' * 16)}".encode(), b.node.membership.digest(), 0.0, wall=0.0)  # type: ignore[union-attr]
    p1.set_wall(0.0, OLD_WALL)
    ring = p1.node.ring()  # type: ignore[union-attr]
    mine = next(h for h in (f"h{i}.web.test" for i in range(200)) if ring.owner(h) == "p1")
    url = f"http://{mine}/page"
    p1.crawl.bloom.add(url)  # p1 fetched it before the host went to p2 (a join, then a leave)
    # p2 hands the host back: the page as fetched, then its record, due at once.
    p1.receive(R2, UrlBatch(RING, "p2", INC, 0, (), (url,)), 1.0, wall=OLD_WALL + 1.0)
    record = (url, mine, OLD_WALL + 5.0, 10.0, OLD_WALL - 5.0, "sha1:A", '"e1"', "", 1, 0, 0)
    p1.receive(R2, HostState(RING, "p2", INC, 0, (record,), (), ()), 1.1, wall=OLD_WALL + 1.1)
    step = p1.crawl.next(6.0, None)  # the lease aside
    assert isinstance(step, Start) and step.job.url == url
    adm = p1.crawl.admit(step.job, 6.0, None)  # the lease aside here too (leases by host)
    assert isinstance(adm, Fetch), adm  # before: Drop, as a queued copy of a URL p2 fetched
    assert dict(p1.validators(url)) == {"If-None-Match": '"e1"'}


def test_the_adopt_tool_s_state_of_a_dead_peer_is_taken_journaled_and_acked_on_its_route() -> None:
    from peer.core.door.effects import Commit, StateKept
    from ring.actions import Reply

    p1 = peer_core("p1")  # p3 was never a member here: the tool is no member either
    p1.set_wall(0.0, NEW_WALL)
    record = ("http://a.test/x", "a.test", OLD_WALL + 10.0, 10.0, OLD_WALL, "", '"e1"', "", 1, 0, 0)
    out = p1.receive(b"anon-route", HostState(RING, "adopt:p3", 7, 0, (record,), (), ()), 1.0, wall=NEW_WALL + 1.0)
    assert [type(e) for e in out] == [StateKept, Commit, Reply], out
    assert isinstance(out[-1].msg, HostStateAck) and out[-1].route == b"anon-route"
    assert p1.node.dropped["adopted_state"] == 1  # type: ignore[union-attr]
    # A non-member that is not the tool is still refused.
    assert not [e for e in p1.receive(b"r2", HostState(RING, "p9", 7, 0, (record,), (), ()), 1.1,
                                      wall=NEW_WALL + 1.1) if isinstance(e, (Reply, Send))]
