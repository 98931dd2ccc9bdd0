"""Ring addresses over real loopback sockets: IPv6 literals, a bind apart from the advertised address, names.

ring.addresses says what each form means; here a ring of bare ring nodes
(``ringharness.RingMember``: a peer's ring node and the ``MemberSockets`` a
peer uses, in this process) forms over ``[::1]`` and answers ``python -m ring
status``, and a member listening at one address while advertised at a name
is reached at the name. Moving names across network namespaces:
tests/e2e/test_addresses_netns.py.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import trio
from clirun import ring_main
from ringharness import RingMember, free_ports

from peer.core.config.cluster import parse_config
from ring.crawlport import NoCrawl
from ring.io.zmqio import SocketType, open_socket
from ring.tools.client import Contact, ask
from ring.messages import MemberState

RING = "addr"


def _has_ipv6_loopback() -> str | None:
    import socket

    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
    except OSError as exc:
        return f"no IPv6 loopback here ({exc.strerror})"
    return None


needs_v6 = pytest.mark.skipif(_has_ipv6_loopback() is not None, reason=_has_ipv6_loopback() or "")


class _Crawl(NoCrawl):
    """A crawl that never ends, with nothing in it (a hand-off, the first ring's too, finds nothing)."""

    def locally_idle(self) -> bool:
        return False


def _config(tmp_path: Path, peers: str) -> Path:
    path = tmp_path / "cluster.toml"
    path.write_text(f'[ring]\nname = "{RING}"\ngossip_interval = 0.1\nsuspect_after = 1.0\ndead_after = 3.0\n\n'
                    + peers)
    return path


async def _formed(nodes: list[RingMember], n: int) -> None:
    """Until every node holds ``n`` members alive (bounded by the caller's fail_after)."""
    while not all(sum(m.state is MemberState.ALIVE for m in node.membership.members().values()) == n
                  for node in nodes):
        await trio.sleep(0.05)


@needs_v6
async def test_a_socket_binds_and_connects_an_ipv6_literal():
    # Before: ZMQ_IPV6 unset, the bind failed with ENODEV ("No such device").
    with trio.fail_after(10):
        async with open_socket(SocketType.ROUTER) as router:
            endpoint = router.bind("tcp://[::1]:*")
            assert endpoint.startswith("tcp://[::1]:")
            async with open_socket(SocketType.DEALER, connect=endpoint, identity=b"d") as dealer:
                await dealer.send_multipart([b"over v6"])
                assert await router.recv_multipart() == [b"d", b"over v6"]


async def test_an_ipv4_bind_is_reported_as_it_was_given():
    # ZMQ_IPV6 is not set for an IPv4 literal: libzmq would report [::ffff:127.0.0.1],
    # and a solo peer records this endpoint for `ring status`.
    async with open_socket(SocketType.ROUTER) as router:
        assert router.bind("tcp://127.0.0.1:*").startswith("tcp://127.0.0.1:")


@needs_v6
def test_a_ring_forms_over_ipv6_and_ring_status_reads_it(tmp_path):
    # The nodes run in a thread of their own (their own trio loop), so that
    # `python -m ring status` runs in this, the main thread, as a user's does
    # (it listens for SIGINT). Before: every bind of [::1] failed (ENODEV).
    ports = free_ports(3)
    toml = _config(tmp_path, "".join(f'[[peer]]\nid = "p{i + 1}"\naddress = "tcp://[::1]:{port}"\n\n'
                                     for i, port in enumerate(ports)))
    cfg = parse_config(toml.read_text(), toml)
    formed, stop = threading.Event(), threading.Event()
    seen: list[set[str]] = []

    async def serve() -> None:
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                nodes = [RingMember(cfg, f"p{i + 1}", _Crawl()) for i in range(3)]
                for node in nodes:
                    await nursery.start(node.run)
                await _formed(nodes, 3)
                # The gossip records carry the v6 addresses as written.
                seen.append({m.address for m in nodes[0].membership.members().values()})
                formed.set()
                await trio.to_thread.run_sync(stop.wait)
                nursery.cancel_scope.cancel()

    ring = threading.Thread(target=trio.run, args=(serve,), daemon=True)
    ring.start()
    try:
        assert formed.wait(30), "the IPv6 ring did not form"
        res = ring_main(["status", "--ring", str(toml), "--timeout", "5"])
    finally:
        stop.set()
        ring.join(30)
    assert seen == [{f"tcp://[::1]:{p}" for p in ports}]
    assert res.returncode == 0, res.stderr
    rows = [line for line in res.stdout.splitlines() if line[:2] in ("p1", "p2", "p3")]
    assert len(rows) == 3 and all(" alive " in r for r in rows), res.stdout
    assert all(f"tcp://[::1]:{p}" in res.stdout for p in ports), res.stdout


@needs_v6
async def test_a_member_listens_at_its_bind_and_is_reached_at_its_address(tmp_path):
    # p1 is advertised at 127.0.0.1 and binds [::] (both families): p2 and p3
    # reach it at its address, and it also answers on ::1, where only its bind
    # listens. Before, p1's socket bound its advertised address alone (and
    # `bind` was an unknown key).
    p1, p2, p3 = free_ports(3)
    toml = _config(tmp_path, f'[[peer]]\nid = "p1"\naddress = "tcp://127.0.0.1:{p1}"\n'
                             f'bind = "tcp://[::]:{p1}"\n\n'
                             f'[[peer]]\nid = "p2"\naddress = "tcp://127.0.0.1:{p2}"\n\n'
                             f'[[peer]]\nid = "p3"\naddress = "tcp://127.0.0.1:{p3}"\n')
    cfg = parse_config(toml.read_text(), toml)
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nodes = [RingMember(cfg, p, _Crawl()) for p in ("p1", "p2", "p3")]
            for node in nodes:
                await nursery.start(node.run)
            await _formed(nodes, 3)
            # What the others hold and gossip is the advertised address, never the bind.
            assert {n.membership.members()["p1"].address for n in nodes} == {f"tcp://127.0.0.1:{p1}"}
            reply = await trio.to_thread.run_sync(
                trio.run, ask, RING, Contact("p1", f"tcp://[::1]:{p1}"), 5.0)
            nursery.cancel_scope.cancel()
    assert reply is not None, "p1 did not answer on ::1: its socket is not at its bind"
    assert reply.sender == "p1"


async def test_a_named_peer_is_reconnected_with_a_backoff_and_either_family():
    # libzmq resolves a name at each reconnect (ring.addresses): the backoff
    # bounds the lookups to a named peer that is down to about one a second,
    # and ZMQ_IPV6 lets the name resolve to an IPv6 address too. localhost:
    # resolved from /etc/hosts, and port 1 on loopback refuses at once.
    import zmq

    from ring.io.sockopts import NAME_RECONNECT_MAX

    async with open_socket(SocketType.DEALER, connect="tcp://localhost:1") as named, \
            open_socket(SocketType.DEALER, connect="tcp://127.0.0.1:1") as literal:
        assert named._live().getsockopt(zmq.RECONNECT_IVL_MAX) == NAME_RECONNECT_MAX
        assert named._live().getsockopt(zmq.IPV6) == 1
        assert literal._live().getsockopt(zmq.RECONNECT_IVL_MAX) == 0  # libzmq's default: no backoff
        assert literal._live().getsockopt(zmq.IPV6) == 0
