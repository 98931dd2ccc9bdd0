"""A ring with CurveZMQ on: peers crawl as usual, a stranger's key gets nothing in.

p1, the peer attacked, runs in the test's process (the real engine and zmq
sockets on loopback, tests/support/ringharness.py); p2 and p3 are real processes, so
the Curve ring between processes is crawled too (they cannot be in process as
well: libzmq takes one ZAP handler a context, RFC 27, and a process has one).
`ring status` runs as the operator runs it, scripts/keys.py by its main().
"""

from __future__ import annotations

import json

from ring.__main__ import keys_main  # scripts/keys.py, ringcrawl-keys
import trio
from ringharness import Ring, cluster_text, fetched, wait_pages
from localweb import SiteGraph, serve_webfarm

from peer.state.configfile import load_config
from ring.io.curve import read_public
from ring.messages import UrlBatch, encode
from ring.io.zap import curve_client, curve_keypair
from ring.io.zmqio import SocketType, open_socket


class StrangerKeys:
    """A key pair nobody in the ring lists, shaped like ring.io.curve.CurveKeys."""

    def __init__(self) -> None:
        self.public, self.secret = curve_keypair()


async def test_a_key_outside_the_ring_cannot_inject_urls(tmp_path):
    graph = SiteGraph(hosts=6, pages_per_host=20, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        text = cluster_text(tmp_path, farm.port, 3, rate=600.0, window=2.0, initial_delay=0.1)
        text = text.replace('name = "test"', 'name = "test"\ncurve_keys = "keys"')
        async with Ring(tmp_path, text) as ring:
            # scripts/keys.py's main, as `python scripts/keys.py ...` runs it (tests/edges/test_curve.py
            # tests the script itself).
            assert keys_main(["--ring", str(ring.toml), "--id", "p1", "--id", "p2", "--id", "p3",
                                     "--id", "ops"]) == 0
            cfg = load_config(ring.toml)
            p1 = cfg.peers[0]
            evil = f"http://s002.web.test:{farm.port}/evil-injected.html"
            try:
                with trio.fail_after(90):
                    await ring.start_in_process(nursery, "p1")
                    for p in ("p2", "p3"):
                        await ring.start(p)
                    await wait_pages(farm, 10)
                    # A stranger, who knows p1's public key and address but
                    # whose own key is not in keys/, sends a batch as "p2".
                    server_public = read_public(tmp_path / "keys" / "p1.key")
                    stranger = StrangerKeys()
                    batch = UrlBatch(cfg.ring.name, "p2", 12345, 0, ((evil, 1),))
                    async with open_socket(SocketType.DEALER, connect=p1.address,
                                           configure=curve_client(stranger, server_public)) as sock:
                        for _ in range(3):
                            with trio.move_on_after(0.2):
                                await sock.send_multipart([encode(batch)])
                            await trio.sleep(0.2)
                    # A plain (no Curve) client gets nothing in either.
                    async with open_socket(SocketType.DEALER, connect=p1.address) as sock:
                        for _ in range(3):
                            with trio.move_on_after(0.2):
                                await sock.send_multipart([encode(batch)])
                            await trio.sleep(0.2)
                    # Still crawling: an injected URL that got in would have been fetched.
                    assert ring.procs["p1"].returncode is None, f"the crawl ended before the injection\n{ring.tails()}"
                    status = await ring.ring_cmd("status", "--json")
                    await ring.wait()
            except trio.TooSlowError:
                raise AssertionError(f"the peers did not finish in time\n{ring.tails()}") from None
            codes = {p: proc.returncode for p, proc in ring.procs.items()}
            errs = "".join(ring.logs[p][1].read_text() for p in ring.procs)
            tails = ring.tails()
        nursery.cancel_scope.cancel()

    assert codes == {"p1": 0, "p2": 0, "p3": 0}, tails
    got = fetched(farm, farm.port)
    assert evil not in got
    assert set(got) == graph.expected_urls(farm.port)
    assert "CurveZMQ on" in errs and "unauthenticated" not in errs.lower()
    # The operator's own key ("ops") is in keys/, so status works.
    assert status.returncode == 0, status.stderr
    members = json.loads(status.stdout)["members"]
    assert sorted(m["id"] for m in members) == ["p1", "p2", "p3"]
