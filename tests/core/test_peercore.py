"""peer.core.door.peer: the crawl core and the ring node in one, driven synchronously (``now`` passed in).

With the door's parts: its effects (peer.core.door.effects), the core's side of the driver's
files (peer.core.door.persistence), the figures (peer.core.door.readouts) and the ring gate
(peer.core.door.ringgate).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from peer.core.crawl.core import CrawlCore, parse_response
from peer.core.crawl.decisions import Done, Drop, Fetch, Forward, Origin, PassOn, Queued, Row, Seen, Sleep, Start
from peer.core.door.effects import Commit, ReadFetched, ReadHosts
from peer.core.door.peer import PeerCore
from peer.core.urls.normalize import host_key
from ring.actions import Reply, Send
from ring.messages import Ack, Packet, UrlBatch
from ring.forwarding.intake import ADOPT_PREFIX
from ring.node import RingNode
from tests.core.test_crawl import answer, config, html

RING = "test"
SEEDS = [("p1", "tcp://127.0.0.1:5799", 1.0), ("p2", "tcp://127.0.0.1:5798", 1.0)]
INC = 5000
R2 = b"p2/aaaa"


def peer(peer_id: str = "p1", now: float = 0.0) -> PeerCore:
    node = RingNode(peer_id, dict((s[0], s[1]) for s in SEEDS)[peer_id], 1.0, RING, seeds=SEEDS,
                    gossip_interval=0.1, suspect_after=0.5, dead_after=1.5, now=now,
                    incarnation=INC, owner_key=host_key)
    crawl = CrawlCore(config(obey_robots=False), peer_id, rng=random.Random(1))
    core = PeerCore(crawl, node, now=now)
    # The first ring, and its hand-off read (ring.handoff rule 6): nothing fetched here.
    [ask] = [e for e in core.tick(now) if isinstance(e, ReadHosts)]
    [fetch] = core.hosts_read(ask.request, [], now)
    core.fetched_read(fetch.request, [], now, wall=now)
    return core


def hosts_of(core: PeerCore, owner: str, n: int = 1) -> list[str]:
    ring = core.node.ring()  # type: ignore[union-attr]
    got = [h for h in (f"h{i}.web.test" for i in range(200)) if ring.owner(h) == owner]
    return got[:n]


def known(core: PeerCore, sender: str = "p2", route: bytes = R2) -> None:
    """``sender`` gossips its own record to ``core``'s node."""
    other = RingNode(sender, "tcp://127.0.0.1:5798", 1.0, RING, seeds=SEEDS, gossip_interval=0.1,
                     suspect_after=0.5, dead_after=1.5, now=0.0, incarnation=INC)
    core.receive(route, other.membership.digest(), 0.0, wall=0.0)


def test_a_link_of_another_peers_host_is_in_the_outbox_when_discover_returns():
    p1 = peer()
    [theirs] = hosts_of(p1, "p2")
    url = f"http://{theirs}/a"
    out = p1.discover(url, 1, 0.0, Origin.LINK)
    assert out == [Forward(url, 1, "p2", False)]
    assert out[0].host == theirs  # computed once, carried on
    assert p1.node.outbox.queued().urls == [(url, 1)]  # type: ignore[union-attr]


def test_a_delivered_batch_is_a_queued_url_and_committed_before_its_ack():
    p1 = peer()
    known(p1)
    [mine] = hosts_of(p1, "p1")
    url = f"http://{mine}/x"
    batch = UrlBatch(RING, "p2", INC, 0, ((url, 2),), ())
    out = p1.receive(R2, batch, 0.2, wall=0.0)
    # Straight into the crawl's discover, as a relay: no driver in between.
    assert out == [Queued(url, 2), Commit()]
    assert len(p1.crawl.frontier) == 1
    # The member's ack is owed: it leaves with a later flush, after the Commit ran.
    frames = [a.msg for a in p1.flush(10.0) if isinstance(a, Send) and a.dest == "p2"]
    assert any(isinstance(m, Ack) or (isinstance(m, Packet) and m.acks == (0,)) for m in frames)


def test_an_adopt_batch_is_committed_then_acked_on_its_route():
    p1 = peer()
    [mine] = hosts_of(p1, "p1")
    url = f"http://{mine}/adopted"
    batch = UrlBatch(RING, ADOPT_PREFIX + "tool", 7, 0, ((url, 0),), ())
    out = p1.receive(b"tool-route", batch, 0.1, wall=0.0)
    assert out == [Queued(url, 0), Commit(), Reply(b"tool-route", Ack(RING, "p1", 7, 0))]


def test_a_delivered_url_of_another_host_is_relayed_and_seen_urls_are_journaled():
    p1 = peer()
    known(p1)
    [theirs] = hosts_of(p1, "p2")
    [mine] = hosts_of(p1, "p1")
    url, seen = f"http://{theirs}/b", f"http://{mine}/done"
    out = p1.receive(R2, UrlBatch(RING, "p2", INC, 0, ((url, 1),), (seen,)), 0.2, wall=0.0)
    assert out == [Forward(url, 1, "p2", True), Seen(seen), Commit()]


def test_a_handoff_reads_the_results_as_need_data_and_then_hands_over():
    p1 = peer()
    known(p1)
    [theirs] = hosts_of(p1, "p2")
    [mine] = hosts_of(p1, "p1")
    out = p1.leave(1.0)  # every host of p1 moves to p2
    [ask] = [e for e in out if isinstance(e, ReadHosts)]
    assert p1.crawl.leaving and p1.node.handing_off == 1  # type: ignore[union-attr]
    [fetch] = p1.hosts_read(ask.request, [mine, theirs], 1.1)
    # Only the hosts that moved are read; theirs was p2's already.
    assert fetch == ReadFetched(ask.request, (mine,))
    assert p1.hosts_read(ask.request, [mine], 1.1) == []  # asked once
    url = f"http://{mine}/fetched"
    p1.fetched_read(fetch.request, [(url, mine)], 1.2, wall=1000.0)
    assert p1.node.outbox.queued().seen == [url]  # type: ignore[union-attr]
    assert p1.fetched_read(fetch.request, [(url, mine)], 1.3, wall=1000.0) == []  # closed


# -- the one door: every durability point is a Commit in the list (peer.core.door.peer rule 1) --


def alone(**crawl) -> PeerCore:
    return PeerCore(CrawlCore(config(obey_robots=False, **crawl), "p1", rng=random.Random(1)))


def test_the_seeds_and_a_pages_row_each_come_with_the_commit_that_makes_them_durable():
    core = alone()
    out = core.seeds(0.0)
    assert any(isinstance(e, Queued) for e in out) and out[-1] == Commit()  # rule 1g
    step, effects = core.next(0.0)
    assert isinstance(step, Start) and effects == []
    job = step.job
    adm, effects = core.admit(job, 0.0)
    assert isinstance(adm, Fetch) and Commit() not in effects  # a fetch commits with its row
    res = answer(job.url, 200, html("/a", "/b"))
    assert core.fetched(job, res, 0.0)
    parsed = parse_response(job.url, res.body, res.charset, *core.parse_rules)
    out = core.on_result(job, res, parsed, 0.0)
    core.job_ended(job)
    kinds = [type(e) for e in out]
    # The links' records, then the page's row, then its Commit at once (rule 1a).
    at = kinds.index(Row)
    assert Queued in kinds[:at] and kinds[at + 1] is Commit and kinds.count(Commit) == 1
    assert core.figures.requested == 1 and core.figures.in_flight == 0


def test_a_dropped_job_leaves_the_queue_with_a_commit():
    core = alone()
    url = "http://site.web.test/handed"
    core.discover(url, 0, 0.0, Origin.LINK)
    # Then handed over as fetched by its host's previous owner: dropped when it comes up.
    core.discover(url, 0, 0.0, Origin.HANDED_SEEN)
    step, _ = core.next(0.0)
    assert isinstance(step, Start)
    adm, effects = core.admit(step.job, 0.0)
    core.job_ended(step.job)
    assert isinstance(adm, Drop)
    assert effects == [Done(url), Commit()]  # rule 1b


def test_a_passed_on_job_leaves_the_queue_with_a_commit():
    core = alone()
    [theirs] = hosts_of(peer(), "p2")
    url = f"http://{theirs}/moving"
    core.discover(url, 0, 0.0, Origin.LINK)  # alone: every host is ours
    # Its host moves to p2 before its job comes up.
    core.crawl.ring = peer().node.ring()  # type: ignore[union-attr]
    step, _ = core.next(0.0)
    assert isinstance(step, Start)
    adm, effects = core.admit(step.job, 0.0)
    assert isinstance(adm, PassOn) and adm.owner == "p2"
    assert effects == [Forward(url, 0, "p2", True), Done(url), Commit()]  # rule 1b


def test_a_sieve_batch_is_taken_after_a_commit():
    core = alone()
    batch, effects = core.disk.sieve_take(0.0)
    assert batch is None and effects == [Commit()]  # rule 1d: before the files hold any hash


def test_a_resume_puts_the_queue_back_and_forwards_the_rest_then_commits():
    p1 = peer()
    [mine] = hosts_of(p1, "p1")
    [theirs] = hosts_of(p1, "p2")
    ours, other = f"http://{mine}/q", f"http://{theirs}/f"

    @dataclass(frozen=True)
    class Rec:
        bloom: object
        counters: dict
        queued: dict
        forwards: list

    rec = Rec(p1.figures.bloom, {"pages": 7.0, "granted:p2": 3.0}, {ours: 2}, [(other, 1)])
    p1.disk.restore(rec)  # type: ignore[arg-type]
    assert p1.figures.requested == 7 and p1.disk.resumed and p1.disk.resumed_grants == (("p2", 3),)
    out = p1.disk.resume(rec, [], 1.0, wall=1000.0)  # type: ignore[arg-type]
    assert out[-1] == Commit()  # rule 1g
    assert Forward(other, 1, "p2", True) in out
    assert p1.node.outbox.queued().urls == [(other, 1)]  # type: ignore[union-attr]
    # The journal's queued URLs go back after the first requests, a batch at a time;
    # until then a snapshot lists them and the peer is not idle.
    assert len(p1.crawl.frontier) == 0 and p1.disk.recovering() == 1 and not p1.crawl.locally_idle()
    assert p1.disk.snapshot_view().recovering == [(ours, 2)]   # listed apart (snapshot format 3)
    p1.disk.drain_recovered(1.0, 10)
    assert len(p1.crawl.frontier) == 1 and p1.disk.recovering() == 0
    assert (ours, 2) in p1.crawl.snapshot_queue()


def test_a_recovered_queue_put_back_in_one_batch_is_what_url_by_url_discovery_makes_of_it():
    """CrawlCore.recovered looks a host up once a scheme and authority: the same queue,
    forwards and per-host counts as Origin.RECOVERED one URL at a time."""
    from peer.core.crawl.decisions import Origin

    mine = hosts_of(peer(), "p1", 3)
    theirs = hosts_of(peer(), "p2", 2)
    queued = [(f"{scheme}://{h}{port}/p{i}", i % 3) for i in range(40)
              for h in (mine + theirs)[i % 5 : i % 5 + 1]
              for scheme, port in [("https" if i % 4 == 0 else "http", ":8080" if i % 7 == 0 else "")]]
    batch, single = peer(), peer()
    got = batch.crawl.recovered(queued, 1.0)
    want = [e for url, depth in queued for e in single.crawl.discover(url, depth, 1.0, Origin.RECOVERED)]
    assert got == want and any(got)
    jobs = lambda core: [(j.url, j.depth) for j in core.crawl.frontier.iter_queued()]  # noqa: E731
    assert jobs(batch) == jobs(single) and 0 < len(jobs(batch)) < len(queued)
    hosts = {u.split("/")[2] for u, _ in queued}
    assert all(batch.crawl.limits.host_urls(h) == single.crawl.limits.host_urls(h) for h in hosts)


def test_spilled_queues_move_only_in_a_ring_and_each_chunk_is_committed():
    core = alone()
    assert not core.moving() and core.move_spilled(0.0) == []  # alone: nothing ever moves
    p1 = peer()
    assert p1.move_spilled(0.0) == [Commit()]  # rule 1e (nothing was moving: an empty chunk)


# -- the door's parts: the figures (peer.core.door.readouts), the ring gate (peer.core.door.ringgate) --


def test_the_figures_read_the_crawl_core_and_in_a_ring_the_ring_node():
    core = alone()
    core.seeds(0.0)
    st = core.figures.status(0.0, elapsed=2.0, dns_hit_rate=0.5, limits={"cap.url_length": 1})
    assert (st.frontier, st.hosts, st.forwarded_out, st.lease, st.dns_hit_rate) == (1, 1, 0, None, 0.5)
    assert st.limits == {"cap.url_length": 1} and core.figures.forwarded() == (0, 0)
    assert core.figures.progress(0.0, 2.0, 0.5).frontier == 1 and core.figures.pause_words(0.0) == ""
    p1 = peer()
    st = p1.figures.status(0.0, elapsed=2.0, dns_hit_rate=0.5, limits={})
    assert st.lease is not None and st.lease == p1.lease_state(0.0)


def test_the_ring_gate_answers_the_scheduler_only_in_a_ring():
    core = alone()
    assert core.lease_state(0.0) is None and core.others_pages() == 0 and not core.in_ring
    p1 = peer()
    assert p1.in_ring and p1.lease_state(0.0) is not None
    # The scheduler asks it before every start: a lease not held (no member
    # has vouched yet) holds back a job that alone would start at once.
    [mine] = hosts_of(p1, "p1")
    url = f"http://{mine}/x"
    solo = alone()
    for core in (p1, solo):
        core.discover(url, 0, 0.0, Origin.LINK)
    assert not p1.lease_state(0.0).held  # type: ignore[union-attr]
    assert isinstance(p1.next(0.0)[0], Sleep)
    assert isinstance(solo.next(0.0)[0], Start)


def test_the_progress_line_counts_every_url_not_requested_that_ring_status_counts():
    # URLs left out by a rule, by their file type, by the scope and by a cap: the
    # progress line and ring status name the same causes with the same counts.
    from peer.core.run.progress import Progress
    core = alone(rules=["exclude:*/private/*"], max_url_length=60)
    core.seeds(0.0)
    site = "http://site.web.test"
    for url in (f"{site}/private/a", f"{site}/private/a", f"{site}/b.png", "http://other.test/x",
                f"{site}/{'x' * 80}"):
        core.discover(url, 1, 0.0, Origin.LINK)
    st = core.figures.status(0.0, elapsed=2.0, dns_hit_rate=0.5, limits={})
    assert st.not_requested == {"max_url_length": 1, "rules": 2, "scope": 1, "skip_extensions": 1}
    line = Progress().line(core.figures.progress(0.0, 2.0, 0.5))
    assert "not requested 5 (rules 2, max_url_length 1, scope 1, ...)" in line
    # Each says what the causes without a row count: links met ("rules 2" is one URL met twice).
    summary = core.figures.final_summary(0.0, {}).render()
    assert "\n    (max_url_length, rules, scope, skip_extensions: links met, not distinct URLs)\n" in summary
    from ring.vocabulary import TERMS, Family  # the legend of ring status, the metrics' help
    assert "the caps count links met, not distinct URLs" in TERMS[Family.NOT_REQUESTED].means
