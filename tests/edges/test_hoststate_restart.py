"""A host's state handed over survives a kill -9 of its new owner, and a restart passes its own on.

The new owner of a host acks the host's revisit records and cookies
(``HostStateAck``) only once they are in its journal (peer/state/journal.py
rule 6, peer/core/door/peer.py rule 1h), since the old owner drops its copy
at the ack. Until the page's next visit writes a ``fetches`` row, nothing
else on the new owner's disk holds the record: a restart before that visit
used to lose it and fetch the page as new.

The peer cores are driven synchronously and their effects written by the
real journal (``peer.state.journal``) into files; "kill -9" is recovering
from those files with no close, into a new core, as the engine does
(``Crawler.run``: the ``fetches`` schedule, the jar's file, then the
journal's handed records).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from peer.core.door.effects import Commit, StateKept
from peer.core.door.peer import PeerCore
from peer.state.journal import PeerState
from ring.messages import HostState, HostStateAck
from ring.node import Send
from tests.core.test_hoststate import NEW_WALL, OLD_WALL, RING, peer_core
from tests.edges.test_handed_restart import write

INC = 5000


def two_peers() -> tuple[PeerCore, PeerCore]:
    p1, p2 = peer_core("p1"), peer_core("p2")
    for a, b in ((p1, p2), (p2, p1)):
        a.receive(f"{b.crawl.peer_id}/aaaa".encode(), b.node.membership.digest(), 0.0, wall=0.0)  # type: ignore[union-attr]
    p1.set_wall(0.0, OLD_WALL)
    p2.set_wall(0.0, NEW_WALL)
    return p1, p2


def p2_host(core: PeerCore) -> str:
    ring = core.node.ring()  # type: ignore[union-attr]
    return next(h for h in (f"h{i}.web.test" for i in range(200)) if ring.owner(h) == "p2")


def handed(host: str) -> HostState:
    """p1 hands p2 a host it visited at OLD_WALL: due 10 s later, with an ETag, and its session cookie."""
    url = f"http://{host}/page"
    revisit = (url, host, OLD_WALL + 10.0, 10.0, OLD_WALL, "sha1:A", '"e1"', "", 1, 0, 2)
    cookie = (host, "sid", "s3cr3t", "/", False, 0.0)
    return HostState(RING, "p1", INC, 0, (revisit,), (cookie,), ())


def restarted(directory: Path) -> tuple[PeerCore, PeerState]:
    """kill -9, then a new process of p2: recovery, the handed records put back, and its first snapshot."""
    state = PeerState(directory, "p2", RING)
    rec = state.recover()
    assert rec is not None
    core = peer_core("p2")
    core.set_wall(0.0, NEW_WALL + 100.0)  # the new process's clock starts again at 0.0
    core.disk.restore(rec)
    core.disk.restore_state(*rec.handed_state, NEW_WALL + 100.0)
    state.begin(core.figures.bloom, [], [], {}, handed_state=rec.handed_state)
    return core, state


def assert_revisited_on_schedule(core: PeerCore, host: str) -> None:
    url = f"http://{host}/page"
    rc = core.crawl.recrawl
    assert rc is not None
    # Due at OLD_WALL + 10 = this process's clock -590: overdue, so its revisit goes first,
    # conditional, at its depth, with the host's session.
    assert rc.feed(0.0) == [(url, host, 2)]
    assert dict(core.validators(url)) == {"If-None-Match": '"e1"'}
    assert core.cookie_header(url, NEW_WALL + 100.0) == "sid=s3cr3t"


@pytest.mark.parametrize("snapshot", [False, True], ids=["journal", "snapshot"])
def test_a_handed_host_s_records_are_journaled_before_the_ack_and_survive_a_kill_9(tmp_path, snapshot):
    _, p2 = two_peers()
    host = p2_host(p2)
    state = PeerState(tmp_path / "state", "p2", RING)
    state.begin(p2.figures.bloom, [], [], {})
    out = p2.receive(b"p1/aaaa", handed(host), 1.0, wall=NEW_WALL + 1.0)
    kinds = [type(e) for e in out if isinstance(e, (StateKept, Commit, Send))]
    # Journaled, committed, and only then acked (peer/core/door/peer.py rule 1h).
    assert kinds == [StateKept, Commit, Send] and isinstance(out[-1].msg, HostStateAck), out
    write(state, out)
    if snapshot:
        # A snapshot drops that journal: it carries the records nothing else holds yet.
        view = p2.disk.snapshot_view()
        assert [len(x) for x in view.handed_state] == [1, 1]
        state.snapshot(view.bloom, view.queued, view.forwards, view.counters, handed=view.handed,
                       handed_state=view.handed_state)
    again, state2 = restarted(tmp_path / "state")
    assert_revisited_on_schedule(again, host)
    # A second kill -9 before anything else: the first snapshot of the new run kept them too.
    state2.close()
    third, _ = restarted(tmp_path / "state")
    assert_revisited_on_schedule(third, host)


def test_a_handed_record_leaves_the_snapshots_once_its_page_is_visited_or_the_jar_saved(tmp_path):
    _, p2 = two_peers()
    host = p2_host(p2)
    p2.receive(b"p1/aaaa", handed(host), 1.0, wall=NEW_WALL + 1.0)
    url = f"http://{host}/page"
    rc = p2.crawl.recrawl
    assert rc is not None and rc.feed(20.0) == [(url, host, 2)]
    assert [len(x) for x in p2.disk.handed_state()] == [1, 1]    # in the frontier: still only journaled
    rc.visited(url, host, 2, 21.0, 304, None, None, None)        # its fetches row holds it now
    p2.disk.cookies_saved(p2.disk.cookie_changes())              # and the jar's file the cookie
    assert p2.disk.handed_state() == ([], [])


def test_the_jar_s_file_wins_over_the_journal_s_older_copy_of_a_handed_cookie(tmp_path):
    _, p2 = two_peers()
    host = p2_host(p2)
    state = PeerState(tmp_path / "state", "p2", RING)
    state.begin(p2.figures.bloom, [], [], {})
    write(state, p2.receive(b"p1/aaaa", handed(host), 1.0, wall=NEW_WALL + 1.0))
    jar = p2.crawl.cookies
    assert jar is not None
    jar.store(f"http://{host}/", ["sid=renewed"], NEW_WALL + 2.0)  # the host set it again
    saved = jar.records()                                          # the jar's file, written then
    rec = PeerState(tmp_path / "state", "p2", RING).recover()
    assert rec is not None
    again = peer_core("p2")
    again.disk.restore(rec)
    again.disk.restore_cookies(saved, NEW_WALL + 3.0)
    again.disk.restore_state(*rec.handed_state, NEW_WALL + 3.0)
    assert again.cookie_header(f"http://{host}/x", NEW_WALL + 3.0) == "sid=renewed"


def test_urls_handed_over_as_fetched_survive_a_second_kill_9_after_the_restart_s_first_snapshot(tmp_path):
    # The restart's first snapshot (Durability.open's begin) replaces the journal that
    # held the seen records: it must carry them, as the handed records above.
    from ring.messages import UrlBatch

    _, p2 = two_peers()
    host = p2_host(p2)
    url = f"http://{host}/fetched-by-p1"
    state = PeerState(tmp_path / "state", "p2", RING)
    state.begin(p2.figures.bloom, [], [], {})
    write(state, p2.receive(b"p1/aaaa", UrlBatch(RING, "p1", INC, 0, (), (url,)), 1.0, wall=NEW_WALL + 1.0))
    rec = PeerState(tmp_path / "state", "p2", RING).recover()  # kill -9
    assert rec is not None and url in rec.handed
    again = PeerState(tmp_path / "state", "p2", RING)
    again.recover()
    again.begin(rec.bloom, [], [], {}, handed=rec.handed.items())  # as peer.engine.durability does
    rec2 = PeerState(tmp_path / "state", "p2", RING).recover()  # kill -9 again
    assert rec2 is not None and url in rec2.handed


async def test_the_engine_s_journal_keeps_handed_records_across_two_restarts(tmp_path):
    # peer.engine.durability: the restart's first snapshot (begin) replaces the journal
    # that held the handed records, so it carries them; the engine then imports them.
    from peer.engine.durability import Durability
    from peer.results.store import ResultStore

    def durable(core: PeerCore) -> Durability:
        return Durability(core.crawl.cfg, "p2", tmp_path, core)

    _, p2 = two_peers()
    host = p2_host(p2)
    store = ResultStore(tmp_path / "pages.duckdb", "p2", store_links=False, store_body=False)
    async with store:
        d = durable(p2)
        assert await d.open(store) is None
        for e in p2.receive(b"p1/aaaa", handed(host), 1.0, wall=NEW_WALL + 1.0):
            if isinstance(e, StateKept):
                d.handed_state(e.revisits, e.cookies)
            elif isinstance(e, Commit):
                d.commit()
        for _ in range(2):  # kill -9 (no close), then a restart; twice
            core = peer_core("p2")
            core.set_wall(0.0, NEW_WALL + 100.0)
            d = durable(core)
            rec = await d.open(store)
            assert rec is not None
            core.disk.restore_state(*rec.handed_state, NEW_WALL + 100.0)  # as Crawler.run does
            assert_revisited_on_schedule(core, host)
