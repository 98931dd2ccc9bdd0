"""``ring seed add`` at the peer that takes a batch: peer.core.crawl.seedadd, peer.core.door.peer rule 7,
and the answer's wait for the owners' acks (ring.seedadds), driven synchronously.

Each line is judged as a seeds file's line (peer.core.crawl.seedfeed), so the outcomes are the
same words; the batch is committed before its answer, and the answer waits for the owners' acks.
"""

from __future__ import annotations

import random

from peer.core.crawl.core import CrawlCore
from peer.core.crawl.decisions import Forward, Queued
from peer.core.crawl.seedadd import SeedTally
from peer.core.door.effects import Commit, SeedsAt
from peer.core.door.peer import PeerCore, ring_node
from peer.core.urls.normalize import host_key
from ring.actions import Reply, Send
from ring.messages import Ack, MemberState, MemberStatus, SeedAddReply, SeedAddRequest, SeedAddStatus, UrlBatch
from ring.node import RingNode
from tests.core.test_crawl import config
from tests.core.test_peercore import INC, R2, RING, SEEDS, hosts_of, known

TOOL = b"\x00tool-route"


def peer(**crawl) -> PeerCore:
    node = RingNode("p1", "tcp://127.0.0.1:5799", 1.0, RING, seeds=SEEDS, gossip_interval=0.1,
                    suspect_after=0.5, dead_after=1.5, now=0.0, incarnation=INC, owner_key=host_key)
    core = PeerCore(CrawlCore(config(obey_robots=False, **crawl), "p1", rng=random.Random(1)), node, now=0.0)
    core.tick(0.0)
    known(core)
    return core


def request(lines: list[str], nonce: int = 7, unreadable: int = 0) -> SeedAddRequest:
    return SeedAddRequest(RING, "ring-seed-add", nonce, tuple(lines), unreadable)


def replies(effects) -> list[SeedAddReply]:  # type: ignore[no-untyped-def]
    return [e.msg for e in effects if isinstance(e, Reply) and isinstance(e.msg, SeedAddReply)]


def lines_of(p1: PeerCore) -> tuple[str, str, list[str]]:
    [mine], [theirs] = hosts_of(p1, "p1"), hosts_of(p1, "p2")
    mine_url, theirs_url = f"http://{mine}/", f"http://{theirs}/a"
    return mine_url, theirs_url, ["# added by hand", "", mine_url, theirs_url, "ftp://f.web.test/",
                                  "http://elsewhere.example.org/", "a b"]


def test_each_line_is_judged_as_a_seeds_file_line_committed_and_counted_by_outcome():
    p1 = peer()
    mine, theirs, lines = lines_of(p1)
    out = p1.receive(TOOL, request(lines, unreadable=1), 1.0, wall=0.0)
    assert Queued(mine, 0) in out and Forward(theirs, 0, "p2", False) in out
    assert p1.node.outbox.queued().urls == [(theirs, 0)]  # type: ignore[union-attr]
    commit = out.index(Commit())
    assert isinstance(out[commit - 1], SeedsAt)  # the counts journaled with the batch (seedadd rule 2)
    assert replies(out) == []  # p2 has not acked the URL forwarded to it
    want = {"queued": 1, "forwarded": 1, "skipped": 2, "invalid": 3, "scope": 1}
    assert dict(p1.crawl.seed_adds.counts) == want
    assert dict(out[commit - 1].counters) == {f"seed_add.{k}": float(n) for k, n in want.items()}
    # Shown where an operator looks: ring status' counters, and its --json "seed_add".
    figures = p1.figures.limits(1.0, {})
    assert {k: n for k, n in figures.items() if k.startswith("seed_add.")} == {
        f"seed_add.{k}": n for k, n in want.items()}


def test_the_answer_waits_for_the_owners_ack_and_comes_after_the_commit():
    p1 = peer()
    _, _, lines = lines_of(p1)
    p1.receive(TOOL, request(lines), 1.0, wall=0.0)
    sent = [a.msg for a in p1.flush(1.1) if isinstance(a, Send) and a.dest == "p2"]
    assert [m.seq for m in sent if isinstance(m, UrlBatch)] == [0]  # cut at once (the barrier), sent
    out = p1.receive(R2, Ack(RING, "p2", INC, 0), 1.2, wall=0.0)
    [reply] = replies(out)
    assert reply.status is SeedAddStatus.ACKED and reply.nonce == 7 and reply.unacked == 0
    assert dict(reply.counts) == {"queued": 1, "forwarded": 1, "skipped": 2, "invalid": 2, "scope": 1}
    assert [e for e in out if isinstance(e, Reply)][0].route == TOOL


def test_an_owner_that_does_not_ack_within_seed_add_wait_gets_a_durable_answer():
    p1 = peer(seed_add_wait=2.0)
    _, _, lines = lines_of(p1)
    p1.receive(TOOL, request(lines), 1.0, wall=0.0)
    assert replies(p1.receive(R2, request([], nonce=99), 2.9, wall=0.0)) == [
        SeedAddReply(RING, "p1", 99, SeedAddStatus.ACKED)]  # another batch; the first still waits
    known(p1)  # the next frame past the wait answers it
    out = p1.receive(R2, request([], nonce=98), 3.1, wall=0.0)
    got = {r.nonce: r for r in replies(out)}
    assert got[7].status is SeedAddStatus.DURABLE and got[7].unacked == 1


def test_a_batch_asked_again_is_answered_as_before_and_taken_once():
    p1 = peer()
    mine, _, _ = lines_of(p1)
    [first] = replies(p1.receive(TOOL, request([mine]), 1.0, wall=0.0))
    assert first.status is SeedAddStatus.ACKED  # queued here: nothing to wait for
    out = p1.receive(b"\x00another-route", request([mine]), 2.0, wall=0.0)
    assert replies(out) == [first] and [e.route for e in out if isinstance(e, Reply)] == [b"\x00another-route"]
    assert dict(p1.crawl.seed_adds.counts) == {"queued": 1}
    assert p1.node.dropped["seed_add_batch.asked_again"] == 1  # type: ignore[union-attr]


def test_a_batch_over_the_cap_or_at_a_leaving_peer_takes_nothing_and_is_counted():
    p1 = peer(seed_add_batch=2)
    mine, theirs, _ = lines_of(p1)
    [over] = replies(p1.receive(TOOL, request([mine, theirs], unreadable=1), 1.0, wall=0.0))
    assert over.status is SeedAddStatus.OVER_CAP and over.counts == ()
    p1.leave(1.5)
    [leaving] = replies(p1.receive(TOOL, request([mine], nonce=8), 2.0, wall=0.0))
    assert leaving.status is SeedAddStatus.LEAVING
    assert not p1.crawl.seed_adds.counts and len(p1.crawl.frontier) == 0
    dropped = p1.node.dropped  # type: ignore[union-attr]
    assert dropped["seed_add_batch.over_cap"] == 1 and dropped["seed_add_batch.leaving"] == 1


def configured(**crawl) -> PeerCore:
    """A peer whose ring node is made from cluster.toml as ``python -m peer`` makes it."""
    cfg = config(obey_robots=False, **crawl)
    node = ring_node(cfg, "p1", "tcp://127.0.0.1:5799", 1.0, 0.0, incarnation=INC)
    core = PeerCore(CrawlCore(cfg, "p1", rng=random.Random(1)), node, now=0.0)
    core.tick(0.0)
    known(core)
    return core


def test_crawl_seed_add_waiting_bounds_the_batches_waiting_and_the_hits_are_shown():
    p1 = configured(seed_add_waiting=2)
    _, theirs, _ = lines_of(p1)
    for nonce in (1, 2):  # each forwards a URL to p2, which has not acked: both wait
        assert replies(p1.receive(TOOL, request([f"{theirs}{nonce}"], nonce=nonce), 1.0, wall=0.0)) == []
    [busy] = replies(p1.receive(TOOL, request([f"{theirs}3"], nonce=3), 1.0, wall=0.0))
    assert busy == SeedAddReply(RING, "p1", 3, SeedAddStatus.BUSY)
    assert dict(p1.crawl.seed_adds.counts) == {"forwarded": 2}  # the third taken not at all
    figures = p1.figures.status(1.0, elapsed=1.0, dns_hit_rate=1.0, limits={})
    [row] = [m.as_json() for m in p1.status_reply(1, figures).members if m.id == "p1"]
    assert row["counters"]["cap.seed_add_waiting"] == 1 and row["counters"]["seed_add_batch.busy"] == 1


def test_crawl_seed_add_answers_bounds_the_answers_kept():
    p1 = configured(seed_add_answers=2)
    mine, _, _ = lines_of(p1)
    for nonce in range(1, 5):
        replies(p1.receive(TOOL, request([f"{mine}{nonce}"], nonce=nonce), 1.0, wall=0.0))
    assert p1.node.dropped["cap.seed_add_answers"] == 2  # type: ignore[union-attr]
    p1.receive(TOOL, request([f"{mine}1"], nonce=1), 2.0, wall=0.0)  # forgotten: judged anew
    assert dict(p1.crawl.seed_adds.counts) == {"queued": 4, "seen": 1}


def test_the_counts_survive_a_restart_through_the_journals_counters():
    p1 = peer()
    mine, theirs, lines = lines_of(p1)
    p1.receive(TOOL, request(lines), 1.0, wall=0.0)
    counters = p1.disk.counters()
    assert SeedTally.from_counters(counters).counts == p1.crawl.seed_adds.counts
    assert SeedTally.from_counters({"seed_add.scope": 0.0, "pages": 3.0}).counts == {}


def test_status_json_shows_the_seed_add_counts_apart():
    row = MemberStatus("p1", "tcp://x:1", MemberState.ALIVE, 1.0, 0, 0.0, 0, 0, 0, 0, 0.0, 0.0, 1.0,
                       dropped=(("seed_add.scope", 2), ("seed_add.forwarded", 5), ("seeds_file.scope", 9),
                                ("seed_add_batch.busy", 1)))
    j = row.as_json()
    assert j["seed_add"] == {"scope": 2, "forwarded": 5}
    assert j["counters"]["seed_add_batch.busy"] == 1
