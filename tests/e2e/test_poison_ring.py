"""Poisoned gossip at a running ring of two peers, with and without CurveZMQ (ring.membership.view "Hearsay").

The rules, each alone and on a fake network, are tested without I/O in
tests/ring/test_poison.py. Here p1 runs in the test's process
(tests/support/ringharness.py), p2 as a real process (libzmq takes one ZAP
handler a context: with CurveZMQ only one peer can be in process). A third
party that can reach both addresses sends Digests whose only record says
"p2 left". Judged as a user would: each peer's own answer to `ring status`
(its view and its drop counters), the local web's request log (every page
fetched exactly once: had p1 believed p2 gone, it would have fetched p2's
hosts too) and the exit codes.
"""

from __future__ import annotations

import pytest

from ring.messages import Digest, Member, MemberState
from ring.membership.records import MAX_INCARNATION

LEFT = MemberState.LEFT
CAP = MAX_INCARNATION  # the highest incarnation a record may carry at all


def _p2_incarnation(err_log) -> int:
    """p2's incarnation as p1 logged it when it first heard from p2."""
    import re

    found = re.findall(r"member p2: \w+ \(\w+\), incarnation (\d+)", err_log.read_text())
    assert found, err_log.read_text()[-2000:]
    return int(found[-1])


async def _views(cfg, keys) -> dict[str, tuple[dict[str, MemberState], dict[str, int]]]:
    """Each peer's own answer to `ring status`: its view of the members, its drop counters."""
    from ring.tools.client import Contact, ask

    out = {}
    for spec in cfg.peers:
        reply = await ask(cfg.ring.name, Contact(spec.id, spec.address), 2.0, keys)
        assert reply is not None, f"{spec.id} did not answer"
        own = next(m for m in reply.members if m.id == spec.id)
        out[spec.id] = ({m.id: m.state for m in reply.members}, dict(own.dropped))
    return out


async def _poison(address: str, route: bytes, msgs, configure=None) -> None:
    """Send ``msgs`` to ``address`` from a DEALER with routing id ``route``."""
    import trio

    from ring.io.zmqio import SocketType, open_socket
    from ring.messages import encode

    async with open_socket(SocketType.DEALER, connect=address, identity=route,
                           configure=configure) as sock:
        for msg in msgs:
            with trio.move_on_after(1.0):
                await sock.send_multipart([encode(msg)])
        await trio.sleep(0.25)  # linger is 0: give the frames time to leave


@pytest.mark.parametrize("curve", [False, True], ids=["plain", "curve"])
async def test_a_running_ring_shrugs_off_p2_left_from_a_stranger_and_a_spoofed_member(
        tmp_path, curve):
    import os

    import trio
    from localweb import SiteGraph, serve_webfarm
    from ringharness import Ring, cluster_text, fetched, wait_pages

    from peer.state.configfile import load_config
    from ring.__main__ import keys_main
    from ring.io.curve import CurveKeys
    from ring.io.zap import curve_client
    from ring.forwarding.routes import member_route
    from ring.tools.client import client_keys

    # 5 pages/s a host: the crawl lasts a few seconds, past the poison.
    graph = SiteGraph(hosts=4, pages_per_host=8, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        text = cluster_text(tmp_path, farm.port, 2, rate=300.0, window=2.0, initial_delay=0.1)
        if curve:
            text = text.replace('name = "test"', 'name = "test"\ncurve_keys = "keys"')
        async with Ring(tmp_path, text) as ring:
            keys = None
            if curve:
                # p3's key is in the directory: it authenticates, but is no listed peer.
                assert keys_main(["--ring", str(ring.toml), "--id", "p1", "--id", "p2",
                                  "--id", "p3", "--id", "ops"]) == 0
                keys = client_keys(tmp_path / "keys")
            cfg = load_config(ring.toml)
            addr = {p.id: p.address for p in cfg.peers}
            third = CurveKeys.load(tmp_path / "keys", "p3") if curve else None

            def dial(peer: str):
                return curve_client(third, third.public_key(peer)) if third else None

            try:
                with trio.fail_after(90):
                    await ring.start_in_process(nursery, "p1")
                    await ring.start("p2")
                    await wait_pages(farm, 4)
                    while True:  # the ring is formed: each peer holds the other alive
                        views = await _views(cfg, keys)
                        if all(v[0].get(o) is MemberState.ALIVE
                               for p, v in views.items() for o in ("p1", "p2")):
                            break
                        await trio.sleep(0.2)
                    inc = _p2_incarnation(ring.logs["p1"][1])
                    before = {p: v[1] for p, v in views.items()}
                    name = cfg.ring.name
                    left = [Member("p2", addr["p2"], i, LEFT, 1.0, 10**6) for i in (CAP, inc, inc + 1)]
                    stranger = member_route("p3", os.urandom(8).hex())
                    for target in ("p1", "p2"):
                        await _poison(addr[target], stranger,
                                      [Digest(name, "p3", (r,)) for r in left], dial(target))
                    # p1's id, on a route that claims p1 (with Curve: p3's key says otherwise).
                    await _poison(addr["p2"], member_route("p1", os.urandom(8).hex()),
                                  [Digest(name, "p1", (r,)) for r in left], dial("p2"))
                    assert all(proc.returncode is None for proc in ring.procs.values()), \
                        f"the crawl ended before the poison\n{ring.tails()}"
                    await trio.sleep(1.0)  # a few gossip rounds (0.2 s)
                    after = await _views(cfg, keys)
                    await ring.wait()
            except trio.TooSlowError:
                raise AssertionError(f"the peers did not finish in time\n{ring.tails()}") from None
            codes = {p: proc.returncode for p, proc in ring.procs.items()}
            logs = {p: ring.logs[p][1].read_text() for p in ring.procs}
            tails = ring.tails()
        nursery.cancel_scope.cancel()

    assert codes == {"p1": 0, "p2": 0}, tails
    for p, (view, _) in after.items():
        assert view == {"p1": MemberState.ALIVE, "p2": MemberState.ALIVE}, (p, view)
    for p, log in logs.items():
        assert "member p2: left" not in log and "member p2: dead" not in log, (p, log[-3000:])

    def grew(peer: str, reason: str) -> int:
        return after[peer][1].get(reason, 0) - before[peer].get(reason, 0)

    # Every frame arrived and was refused where the rules say (none was lost on the way).
    assert grew("p1", "unknown_sender") >= 3 and grew("p2", "unknown_sender") >= 3, after
    if curve:
        assert grew("p2", "wrong_user") >= 3, after  # p3's key is not p1's
    else:
        assert grew("p2", "bad_member") >= 1, after  # "left" at the cap, said by "p1"
    got = fetched(farm, farm.port)
    assert set(got) == graph.expected_urls(farm.port)
    assert max(got.values()) == 1, [u for u, n in got.items() if n > 1]
