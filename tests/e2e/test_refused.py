"""Refused ring input is counted where an operator looks: `ring status --json` drops and /metrics.

p1 of a Curve ring runs in this process (tests/support/ringharness.py; one
in-process Curve peer at most: libzmq takes one ZAP handler a context). Three
clients send it 20 messages of an unknown type each, and 12 frames over the
frame cap (``ring.messages.MAX_FRAME``) each:

- with a key of the ring's keys/ (admitted): each unknown type is decoded and
  dropped as ``unknown_type``;
- without Curve, and with a stranger's key: not one frame gets past the
  handshake, so the codec sees nothing; the handshake refusals are counted
  (``handshake.protocol``, ``handshake.auth``: ring.io.refusedhandshakes).

A frame over the cap sent after a good handshake closes its connection in
libzmq without a reason libzmq reports (ring.io.refusedhandshakes says why), so it
is not asserted here.
"""

from __future__ import annotations

import json
import re

import httpx
import msgpack
import trio
from ring.__main__ import keys_main  # scripts/keys.py, ringcrawl-keys
from ringharness import Ring, cluster_text
from localweb import SiteGraph, serve_webfarm

from localweb.processes.peerrun import free_ports
from peer.engine.observe import start_observers
from peer.state.configfile import load_config
from ring.io.curve import CurveKeys, read_public
from ring.io.zap import curve_client, curve_keypair
from ring.io.zmqio import SocketType, open_socket
from ring.messages import MAX_FRAME, TYPE_CODES, VERSION
from ring.tools.client import Contact, cluster_status

UNKNOWN = msgpack.packb([VERSION, max(TYPE_CODES) + 90, "test", "p2"])
OVERSIZED = b"\x00" * (MAX_FRAME + 4096)


class StrangerKeys:
    """A key pair nobody in the ring lists, shaped like ring.io.curve.CurveKeys."""

    def __init__(self) -> None:
        self.public, self.secret = curve_keypair()


async def _send(address: str, configure, n_unknown: int = 20, n_big: int = 12) -> None:  # type: ignore[no-untyped-def]
    """Unknown types, then frames over the cap; each send given up after 0.1 s (a DEALER whose
    handshake failed has no peer to send to: its sends wait)."""
    async with open_socket(SocketType.DEALER, connect=address, configure=configure, linger=0) as sock:
        for _ in range(n_unknown):
            with trio.move_on_after(0.1):
                await sock.send_multipart([UNKNOWN])
        await trio.sleep(0.3)  # the unknown types read before a big frame drops the connection
        for _ in range(n_big):
            with trio.move_on_after(0.1):
                await sock.send_multipart([OVERSIZED])


def _drops(rows) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {} if not rows else next(r for r in rows if r.id == "p1").as_json()["drops"]


async def test_unknown_types_and_refused_handshakes_are_counted_in_status_and_metrics(tmp_path):
    graph = SiteGraph(hosts=2, pages_per_host=5, shop=False)
    metrics_port = free_ports(1)[0]
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        text = cluster_text(tmp_path, farm.port, 2)
        text = text.replace('name = "test"', 'name = "test"\ncurve_keys = "keys"')
        text = text.replace(f'data_dir = "{tmp_path / "p1"}"',
                            f'data_dir = "{tmp_path / "p1"}"\nmetrics_address = "{metrics_port}"', 1)
        async with Ring(tmp_path, text) as ring:
            assert keys_main(["--ring", str(ring.toml), "--id", "p1", "--id", "p2", "--id", "ops"]) == 0
            cfg = load_config(ring.toml)
            address = cfg.peers[0].address
            server = read_public(tmp_path / "keys" / "p1.key")
            want = {"unknown_type": 20, "handshake.protocol": 1, "handshake.auth": 1}
            with trio.fail_after(60):
                # p1 alone of two: no lease, so no fetch, but its ROUTER reads everything.
                p1 = await ring.start_in_process(nursery, "p1")
                await start_observers(p1.crawler, nursery, solo=False)
                ops = CurveKeys.load(tmp_path / "keys", "ops")
                await _send(address, curve_client(ops, server))
                # Refused at the handshake, whatever they queue: a few of each kind.
                await _send(address, None, 3, 2)
                await _send(address, curve_client(StrangerKeys(), server), 3, 2)
                contacts = [Contact(p.id, p.address) for p in cfg.peers]
                drops: dict[str, int] = {}
            with trio.move_on_after(20):
                while True:  # counted as p1 reads them: asked until they are in
                    drops = _drops(await cluster_status(cfg.ring.name, contacts, keys=ops))
                    if all(drops.get(k, 0) >= n for k, n in want.items()):
                        break
                    await trio.sleep(0.2)
            assert all(drops.get(k, 0) >= n for k, n in want.items()), f"want {want}, p1 counted {drops}"
            with trio.fail_after(60):
                status = await ring.ring_cmd("status", "--json")
                async with httpx.AsyncClient(timeout=5) as client:
                    scrape = (await client.get(f"http://127.0.0.1:{metrics_port}/metrics")).text
                p1.kill()
        nursery.cancel_scope.cancel()

    assert status.returncode == 0, status.stderr
    members = json.loads(status.stdout)["members"]
    drops = next(m for m in members if m["id"] == "p1")["drops"]
    assert drops["unknown_type"] == 20, drops
    assert drops["handshake.protocol"] >= 1 and drops["handshake.auth"] >= 1, drops
    for reason in ("unknown_type", "handshake.protocol", "handshake.auth"):
        m = re.search(rf'^ringcrawl_drops_total{{reason="{re.escape(reason)}"}} (\S+)$', scrape, re.M)
        assert m and float(m[1]) >= 1, (reason, scrape[-3000:])
