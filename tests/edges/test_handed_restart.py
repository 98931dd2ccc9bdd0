"""URLs handed over as fetched survive a kill -9: the journal and snapshot keep them, a resume uses them.

A leaver (or any previous owner) hands the new owner of its hosts the URLs
it fetched there; the new owner takes them as seen. Two things follow from
them that lived in memory only before, so a peer killed and resumed forgot
them and fetched a page twice:

- a copy of such a URL already queued here (found by a link before the
  hand-off came) is dropped when its job comes up, not fetched;
- when the host moves again (a join, a death), they go on to its next owner
  with the pages fetched here.

The peer core is driven synchronously, its effects written by the real
journal (``peer.state.journal``) into files, and "kill -9" is recovering
from those files with no close.
"""

from __future__ import annotations

from pathlib import Path

from peer.core.crawl.decisions import Done, Drop, Origin, Queued, Seen, Start
from peer.core.door.effects import Commit, StateKept
from peer.state.journal import PeerState
from ring.messages import UrlBatch
from tests.core.test_peercore import INC, R2, RING, hosts_of, known, peer


def write(state: PeerState, effects: list) -> None:
    """What the engine's table does with the journal's effects (peer.engine.crawler)."""
    for e in effects:
        if isinstance(e, Queued):
            state.queued(e.url, e.depth)
        elif isinstance(e, Seen):
            state.seen(e.url)
        elif isinstance(e, Done):
            state.done(e.url, None)
        elif isinstance(e, StateKept):
            state.state(e.revisits, e.cookies)
        elif isinstance(e, Commit):
            state.commit()


def first_job(core, now: float):  # type: ignore[no-untyped-def]
    for _ in range(50):
        step = core.crawl.next(now, None)  # the frontier's next job, the lease aside
        if isinstance(step, Start):
            return step.job
        now += 1.0
    return None


def crash_after_a_handoff(tmp_path: Path, *, snapshot: bool):  # type: ignore[no-untyped-def]
    """p1 queues a URL of its host, then p2 hands it over as fetched; p1 is killed."""
    p1 = peer()
    known(p1)
    state = PeerState(tmp_path / "state", "p1", RING)
    state.begin(p1.figures.bloom, [], [], {})
    [mine] = hosts_of(p1, "p1")
    url = f"http://{mine}/page"
    write(state, p1.discover(url, 1, 0.0, Origin.LINK) + [Commit()])
    write(state, p1.receive(R2, UrlBatch(RING, "p2", INC, 0, (), (url,)), 0.1, wall=0.1))
    if snapshot:
        view = p1.disk.snapshot_view()
        state.snapshot(view.bloom, view.queued, view.forwards, view.counters, handed=view.handed)
    # kill -9: no close; the next process recovers what the files hold.
    rec = PeerState(tmp_path / "state", "p1", RING).recover()
    assert rec is not None
    again = peer()
    known(again)
    again.disk.restore(rec)
    again.disk.resume(rec, [], 1.0, wall=1.0)
    return again, url, mine


def test_a_queued_copy_of_a_url_handed_over_as_fetched_is_not_fetched_after_a_kill_9(tmp_path):
    for snapshot in (False, True):
        core, url, _ = crash_after_a_handoff(tmp_path / str(snapshot), snapshot=snapshot)
        # The journal takes it off the recovered queue; a copy still queued
        # (one in the spill store, not looked for there) is dropped at admission.
        job = first_job(core, 2.0)
        if job is not None:
            assert job.url == url
            adm, _ = core.admit(job, 2.0)
            assert isinstance(adm, Drop), (snapshot, adm)  # p2 fetched it; before: fetched again


def test_urls_handed_over_go_on_with_their_host_after_a_kill_9(tmp_path):
    for snapshot in (False, True):
        core, url, host = crash_after_a_handoff(tmp_path / str(snapshot), snapshot=snapshot)
        ring = core.node.ring()  # type: ignore[union-attr]
        # The host moves to p2 (say p1's ring loses it): what p1 knows was fetched goes along.
        moved = core.crawl.handoffs.handoff_seen([], ring, ring.without_peer("p1"))
        assert (url, "p2") in moved, (snapshot, moved)
