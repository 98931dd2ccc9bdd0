"""A peer's ring node and its sockets in-process, over real loopback: no ring message ends a peer.

Each node is built from cluster.toml as a peer builds it
(``ringharness.RingMember``: ``peer.core.door.peer.ring_node`` over the
``ring.io.sockets.MemberSockets`` a peer uses). The nodes run in the test's
trio loop with a stub crawler, so a test can stall
one (a synchronous sleep in its status figures, as a long state snapshot
stalls a real peer), impersonate a member from a socket of its own, and read
the node's drop counters and membership view directly. ``ring status``'s
client (``ring.tools.client.cluster_status``) runs in a thread with its own trio
loop, so it can time out and go away while the node is stalled.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import trio
from ringharness import RingMember, free_ports

from peer.core.config.cluster import parse_config
from ring.tools.client import Contact, cluster_status
from ring.io.curve import CurveKeys, write_keypair
from ring.messages import MAX_MEMBERS, Digest, Join, Member, MemberState, MemberStatus, UrlBatch, encode
from ring.io.zap import curve_client, curve_keypair
from ring.io.zmqio import SocketType, member_route, open_socket

RING = "test"


class StubCrawler:
    """What the ring driver asks of a crawl, and nothing more."""

    def __init__(self) -> None:
        self.stall = 0.0  # seconds status_figures blocks the whole loop
        self.accepted: list[str] = []
        self.pages_requested = 0

    def status_figures(self) -> dict:
        if self.stall:
            time.sleep(self.stall)  # blocking on purpose: a stalled peer answers nothing meanwhile
        return {"pages": 0, "rate": 0.0, "frontier": 0, "hosts": 0, "forwarded_out": 0,
                "forwarded_in": 0, "dns_hit_rate": 0.0, "bloom_fill": 0.0}

    def locally_idle(self) -> bool:
        return False  # never "cluster done": the test decides when to stop

    def poke(self) -> None:
        pass

    def set_ring(self, ring) -> None:  # type: ignore[no-untyped-def]
        pass

    def accept(self, url: str, depth: int) -> None:
        self.accepted.append(url)

    def accept_seen(self, url: str) -> None:
        pass

    def take_back(self, url: str, depth: int) -> None:
        pass

    def commit_state(self) -> None:
        pass

    async def handoff_seen(self, old, ring) -> int:  # type: ignore[no-untyped-def]
        return 0

    def handoff_starts(self, old, ring) -> dict:  # type: ignore[no-untyped-def]
        return {}

    def seed_host_starts(self, starts) -> None:  # type: ignore[no-untyped-def]
        self.starts = list(starts)

    def handoff_done(self, sender: str) -> None:
        pass

    def leave(self) -> None:
        pass


def write_config(tmp_path: Path, n: int, extra_ring: str = "", *, gossip_interval: float = 0.2,
                 dead_after: float = 3.0) -> Path:
    peers = "".join(f'[[peer]]\nid = "p{i + 1}"\naddress = "tcp://127.0.0.1:{port}"\n\n'
                    for i, port in enumerate(free_ports(n)))
    path = tmp_path / "cluster.toml"
    path.write_text(f'[ring]\nname = "{RING}"\ngossip_interval = {gossip_interval}\nsuspect_after = 1.0\n'
                    f'dead_after = {dead_after}\n{extra_ring}\n{peers}')
    return path


async def start_node(nursery, toml: Path, peer_id: str) -> tuple[RingMember, StubCrawler]:  # type: ignore[no-untyped-def]
    cfg = parse_config(toml.read_text(), toml)
    crawler = StubCrawler()
    node = RingMember(cfg, peer_id, crawler)
    await nursery.start(node.run)
    return node, crawler


async def ring_status(toml: Path, timeout: float) -> tuple[MemberStatus, ...] | None:
    """What `ring status` gets (None: nobody answered), asked from a thread with its own trio loop.

    A node stalled by a synchronous sleep holds the test's loop, but not this
    client's: it times out and closes its socket meanwhile, as a `ring status`
    process that gave up does.
    """
    cfg = parse_config(toml.read_text(), toml)
    contacts = [Contact(p.id, p.address) for p in cfg.peers]
    return await trio.to_thread.run_sync(trio.run, cluster_status, RING, contacts, timeout)


async def test_a_status_reply_to_a_client_that_timed_out_is_dropped_and_counted(tmp_path):
    # Measured before: the ROUTER_MANDATORY send to the departed client raised
    # PeerUnreachable out of the dispatch and the peer exited 1.
    toml = write_config(tmp_path, 1)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            node, crawler = await start_node(nursery, toml, "p1")
            crawler.stall = 1.2  # three times the client's 0.4 s: it has surely given up
            for _ in range(2):
                gone = await ring_status(toml, timeout=0.4)
                assert gone is None, gone  # it gave up while p1 was stalled
            # The stall ends with the second reply; the node is still running.
            await trio.sleep(0.5)
            crawler.stall = 0.0
            heartbeat = node.membership.me.heartbeat
            await trio.sleep(0.5)
            assert node.membership.me.heartbeat > heartbeat, "the gossip loop stopped"
            done = await ring_status(toml, timeout=5.0)
            nursery.cancel_scope.cancel()
    assert done is not None
    (row,) = done
    assert dict(row.families.drops).get("unreachable") == 2, row.dropped


async def test_a_spoofed_member_id_cannot_split_the_ring(tmp_path):
    # Measured before: a DEALER connecting to p1 with routing id "p2" took
    # p2's route (ROUTER_HANDOVER); p1 held p2 dead within ~6 s and never
    # heard from it again. Here two spoofers talk to p1 for longer than
    # dead_after (1.5 s): one with p2's bare id, one with p2's
    # exact route. Gossip every 0.1 s, so p2 is heard ~30 times meanwhile.
    toml = write_config(tmp_path, 2, gossip_interval=0.1, dead_after=1.5)
    p1_address = parse_config(toml.read_text(), toml).peer("p1").address
    states: list[MemberState] = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            p1, p1_crawler = await start_node(nursery, toml, "p1")
            p2, _ = await start_node(nursery, toml, "p2")
            while p1.membership.members()["p2"].incarnation != p2.incarnation:
                await trio.sleep(0.05)
            heard = p1.membership.members()["p2"].heartbeat
            evil = "http://evil.test/injected"
            stale = Member("p2", p2.address, p2.incarnation, MemberState.DEAD, 1.0, 0)
            sent = 0
            async with open_socket(SocketType.DEALER, connect=p1_address, identity=b"p2") as bare, \
                    open_socket(SocketType.DEALER, connect=p1_address, identity=p2.route) as twin:
                for _ in range(30):  # 3 s, dead_after is 1.5 s
                    await bare.send_multipart([encode(Digest(RING, "p2", (stale,)))])
                    await twin.send_multipart([encode(UrlBatch(RING, "p2", 1, sent, ((evil, 0),)))])
                    sent += 1
                    states.append(p1.membership.members()["p2"].state)
                    await trio.sleep(0.1)
            still = p1.membership.members()["p2"]
            dropped = dict(p1.dropped)
            nursery.cancel_scope.cancel()
    assert MemberState.DEAD not in states, states
    assert still.state is MemberState.ALIVE and still.heartbeat > heard + 10  # p1 kept hearing p2
    assert dropped.get("route_spoof", 0) >= sent // 2, dropped
    assert evil not in p1_crawler.accepted  # the twin route was refused by libzmq


def _keys(directory: Path, *ids: str) -> None:
    for peer_id in ids:
        write_keypair(directory, peer_id, *curve_keypair())


async def test_with_curve_a_member_cannot_speak_as_another(tmp_path):
    keys_dir = tmp_path / "keys"
    _keys(keys_dir, "p1", "p2", "p3")
    toml = write_config(tmp_path, 2, extra_ring='curve_keys = "keys"')
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            p1, _ = await start_node(nursery, toml, "p1")
            server_key = CurveKeys.load(keys_dir, "p1").public

            async def send_as(key_id: str, route: bytes, sender: str, heartbeat: int) -> None:
                keys = CurveKeys.load(keys_dir, key_id)
                me = Member(sender, "tcp://127.0.0.1:9", 5, MemberState.ALIVE, 1.0, heartbeat)
                async with open_socket(SocketType.DEALER, connect=p1.address, identity=route,
                                       linger=500, configure=curve_client(keys, server_key)) as d:
                    await d.send_multipart([encode(Digest(RING, sender, (me,)))])
                    await trio.sleep(0.3)

            await send_as("p3", member_route("p2", "01"), "p2", 100)  # p3's key on p2's route
            await send_as("p3", member_route("p3", "02"), "p2", 101)  # p3's key and route, says p2
            await send_as("p3", b"p3", "p3", 102)  # p3's key, not a member route
            assert p1.membership.members()["p2"].incarnation == 0  # nothing of it was believed
            await send_as("p2", member_route("p2", "03"), "p2", 103)  # p2 itself
            assert p1.membership.members()["p2"].heartbeat == 103
            dropped = dict(p1.dropped)
            nursery.cancel_scope.cancel()
    assert dropped.get("wrong_user") == 3, dropped


async def test_a_member_table_past_max_members_is_refused_and_status_still_answers(tmp_path):
    toml = write_config(tmp_path, 2)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            p1, _ = await start_node(nursery, toml, "p1")
            many = [Member(f"n{i}", "tcp://127.0.0.1:9", 5, MemberState.DEAD, 1.0, 1)
                    for i in range(MAX_MEMBERS + 10)]
            async with open_socket(SocketType.DEALER, connect=p1.address,
                                   identity=member_route("p2", "01")) as d:
                for chunk in (many[:600], many[600:]):
                    await d.send_multipart([encode(Digest(RING, "p2", tuple(chunk)))])
                while p1.membership.dropped["too_many_members"] < 12:
                    await trio.sleep(0.05)
            assert len(p1.membership.members()) == MAX_MEMBERS
            # p2 never runs, so the client waits its whole timeout for p2's own row.
            done = await ring_status(toml, timeout=1.0)
            nursery.cancel_scope.cancel()
    assert done is not None
    assert len(done) == MAX_MEMBERS
    own = next(r for r in done if r.id == "p1")
    assert dict(own.families.drops)["too_many_members"] == 12  # p1, p2 and 1,022 of the 1,034 sent


@pytest.mark.parametrize("address", ["tcp://no such host:x", "garbage",
                                     "udp://127.0.0.1:1"])
async def test_a_gossiped_address_zmq_refuses_is_counted_not_fatal(tmp_path, address):
    toml = write_config(tmp_path, 1)
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            p1, _ = await start_node(nursery, toml, "p1")
            # A joiner's address is what a Join says (a Digest from a
            # non-member is refused before its records are read).
            async with open_socket(SocketType.DEALER, connect=p1.address,
                                   identity=member_route("j1", "01")) as d:
                await d.send_multipart([encode(Join(RING, "j1", address, 1.0, 7))])
                while not p1.dropped.get("bad_address"):
                    await trio.sleep(0.05)
            heartbeat = p1.membership.me.heartbeat
            await trio.sleep(0.5)
            assert p1.membership.me.heartbeat > heartbeat
            nursery.cancel_scope.cancel()
