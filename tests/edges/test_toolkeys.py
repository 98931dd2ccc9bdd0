"""The operator's tools on a Curve ring: their key by ``--key-id``, a refused key said as refused.

One Curve peer (a ``ring.io.driver.RingDriver`` with p1's keys, its ZAP
handler admitting the ``*.key`` files of keys/) runs in a thread of this
process, so ``ring status``, ``ring forget`` and ``scripts/adopt.py`` run
in the main thread as the operator runs them (tests/support/clirun.py).
The operator's own keys directory (opkeys/) holds the ring's public keys,
the pair ``ops`` the ring lists, and the pair ``intruder`` it does not.

A zmq client whose key the ring refuses gets no error, only silence: these
tests check that the tools say ``refused``, not that the ring is dead. The
commands run with ``--timeout 1`` (p3 is listed but never runs, and is waited
for); that the refusal itself comes at once, and that the seeds are asked at
once, is checked on ``cluster_status`` under ``trio.fail_after`` with a
timeout longer than the guard, so a client that only timed out fails.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from clirun import ring_main, run_main
from ringharness import free_ports

from ring.crawlport import NoCrawl
from ring.io.curve import CurveKeys, write_keypair
from ring.io.driver import RingDriver
from ring.io.zap import curve_keypair
from ring.node import RingNode
from ring.tools.client import Contact, HandshakeRefused, cluster_status, request_forget

RING = "keyed"


@contextlib.contextmanager
def curve_peer(keys: CurveKeys, seeds: list[tuple[str, str, float]]) -> Iterator[None]:
    """Peer p1 of ``seeds`` with CurveZMQ on, in a thread with its own trio loop, until the block ends."""
    ready = threading.Event()
    held: dict[str, Any] = {}

    def main() -> None:
        async def serve() -> None:
            address = dict((s[0], s[1]) for s in seeds)["p1"]
            node = RingNode("p1", address, 1.0, RING, seeds=seeds, gossip_interval=0.1,
                            suspect_after=1.0, dead_after=3.0, now=trio.current_time(), incarnation=1000)
            driver = RingDriver(node, NoCrawl(), address, keys=keys)
            async with trio.open_nursery() as nursery:
                held["token"], held["scope"] = trio.lowlevel.current_trio_token(), nursery.cancel_scope
                await nursery.start(driver.run)
                ready.set()

        trio.run(serve)

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    try:
        assert ready.wait(30), "the Curve peer did not start"
        yield
    finally:
        if "token" in held:
            trio.from_thread.run_sync(held["scope"].cancel, trio_token=held["token"])
        thread.join(30)


def said(res: Any) -> list[str]:
    """The tool's own lines on stderr (the peer in this process logs there too: its ZAP refusals)."""
    assert "Traceback" not in res.stderr
    return [line for line in res.stderr.splitlines() if not line.startswith("refused a Curve handshake")]


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(cluster.toml of a ring with p1 running and p3 listed, the operator's keys directory).

    One peer for the module: the tests only ask it. It shares this process's zmq
    context with the tools, so a tool that stalls the context's I/O thread (a
    monitor event sent to a reader gone, ring/io/handshake.py) stalls it too: the
    tests after such a request found it silent.
    """
    tmp_path = tmp_path_factory.mktemp("keyed")
    ring_keys, op_keys = tmp_path / "keys", tmp_path / "opkeys"
    for peer_id in ("p1", "p3", "ops"):
        write_keypair(ring_keys, peer_id, *curve_keypair())
    write_keypair(op_keys, "intruder", *curve_keypair())  # a pair the ring does not list
    for name in ("p1.key", "p3.key", "ops.key", "ops.key_secret"):
        shutil.copy2(ring_keys / name, op_keys / name)
    p1, p3 = (f"tcp://127.0.0.1:{port}" for port in free_ports(2))
    toml = tmp_path / "cluster.toml"
    toml.write_text(f"""
[ring]
name = "{RING}"
curve_keys = "opkeys"

[[peer]]
id = "p1"
address = "{p1}"
data_dir = "{tmp_path / 'p1'}"

[[peer]]
id = "p3"
address = "{p3}"
data_dir = "{tmp_path / 'p3'}"

[crawl]
seeds = ["http://a.test/"]
allow_hosts = ["*.test"]
""")
    with curve_peer(CurveKeys.load(ring_keys, "p1"), [("p1", p1, 1.0), ("p3", p3, 1.0)]):
        yield toml, op_keys


def test_ring_status_takes_the_key_id_and_says_a_refused_key_is_refused(keyed):
    toml, op_keys = keyed
    res = ring_main(["status", "--ring", str(toml), "--key-id", "ops", "--timeout", "1"])
    assert res.returncode == 0, res.stderr
    assert any(line.startswith("p1 ") and " alive " in line for line in res.stdout.splitlines()), res.stdout

    res = ring_main(["status", "--ring", str(toml), "--key-id", "intruder", "--timeout", "1"])
    assert res.returncode == 2, res
    (line,) = said(res)
    assert line.startswith("error: refused: the ring does not accept this key ("), line
    assert str(op_keys / "intruder.key") in line and "no answer" not in line

    # ring forget names each peer's refusal; none is "as expected of a dead peer".
    res = ring_main(["forget", "--ring", str(toml), "--id", "p3", "--key-id", "intruder", "--timeout", "1"])
    assert res.returncode == 1, res
    lines = res.stdout.splitlines()
    assert lines[0].startswith("p1         refused: the ring does not accept this key"), lines
    assert "dead peer" not in lines[0] and lines[-1].endswith("the ring refuses this key")


def test_a_tool_without_curve_on_a_curve_ring_is_told_so(keyed):
    toml, _ = keyed
    plain = toml.with_name("plain.toml")
    plain.write_text(toml.read_text().replace('curve_keys = "opkeys"', 'curve_keys = ""'))
    res = ring_main(["status", "--ring", str(plain), "--timeout", "1"])
    assert res.returncode == 2, res
    (line,) = said(res)
    assert "uses CurveZMQ and this tool does not: set [ring] curve_keys" in line


def test_adopt_dry_run_asks_a_curve_ring_with_the_operators_key(keyed):
    from peer.commands.adopt import main

    toml, _ = keyed
    from peer.core.seen.bloom import BloomFilter
    from peer.state.journal import PeerState

    lost = toml.parent / "p3"  # p3's data_dir in cluster.toml
    state = PeerState(lost / "state", "p3", RING)  # p3's crawl state at a kill: one URL queued
    state.begin(BloomFilter(1000, 0.01), [("http://a.test/x", 1)], [], {"pages": 0})
    state.commit()
    state.close()
    res = run_main(main, [str(lost), "--ring", str(toml), "--dry-run", "--force", "--timeout", "1"])
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("p3: plan (dry run, nothing sent)")
    res = run_main(main, [str(lost), "--ring", str(toml), "--dry-run", "--force", "--key-id", "intruder"])
    assert res.returncode == 2, res
    (line,) = said(res)
    assert line.startswith("error: refused: the ring does not accept this key")


async def test_status_asks_every_seed_at_once(keyed):
    """Four listed peers that are down before the one that runs: the answer comes from p1
    without waiting out a timeout for each (3 s each, and p3's own row asked after, would
    outlast fail_after; asked at once, the answer takes one)."""
    from peer.state.configfile import load_config
    from ring.tools.client import client_keys

    toml, op_keys = keyed
    cfg = load_config(toml)
    down = [Contact(f"d{i}", f"tcp://127.0.0.1:{port}") for i, port in enumerate(free_ports(4))]
    keys = client_keys(op_keys, "ops")
    for contact in down:  # the tool dials each with the key it holds for it
        shutil.copy2(op_keys / "p3.key", op_keys / f"{contact.id}.key")
    heard: dict[str, Any] = {}
    with trio.fail_after(10):
        rows = await cluster_status(RING, [*down, Contact("p1", cfg.peers[0].address)], 3.0, keys, heard)
    assert rows is not None and [r.id for r in rows] == ["p1", "p3"]
    with trio.fail_after(10), pytest.raises(HandshakeRefused, match="does not accept this key"):
        await cluster_status(RING, [Contact("p1", cfg.peers[0].address)], 20.0, client_keys(op_keys, "intruder"))
    with trio.fail_after(10):
        forgot = await request_forget(RING, [Contact("p1", cfg.peers[0].address)], "p3", 20.0,
                                      client_keys(op_keys, "intruder"))
    assert [(r.peer, r.refused) for r in forgot] == [("p1", True)]
