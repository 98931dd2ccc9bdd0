"""peer.core.peer: the crawl core and the ring node in one, driven synchronously (``now`` passed in)."""

from __future__ import annotations

import random

from peer.core.crawl.core import CrawlCore
from peer.core.crawl.decisions import Forward, Origin, Queued, Seen
from peer.core.peer import Commit, PeerCore, ReadFetched, ReadHosts
from peer.core.urls.normalize import host_key
from ring.actions import Reply, Send
from ring.messages import Ack, Packet, UrlBatch
from ring.intake import ADOPT_PREFIX
from ring.node import RingNode
from tests.core.test_crawl import config

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
    core.tick(now)  # the first ring
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
