"""An outsider on a ring without CurveZMQ forges duplicate verdicts: none is taken.

Two peers crawl :func:`localweb.sitegraph.nearcopies.mirror_web` in this
process. Before any page is fetched (every robots.txt is held by the server
until the attack is sent), a plain DEALER at each peer claims to be the other
member on a route of its own (``p2/bad0`` at p1, ``p1/bad0`` at p2, as
anyone who reaches the port can) and sends, for every page of the web, a
band query with that page's real SimHash, a URL of the attacker's own host
and a fetch time of 1970 (0.0): on a ring that takes it, the page is stored
as a near duplicate of the attacker's URL and its links are dropped.

Judged by the peers' rows (no page names an attacker's URL), by the server's
log (every original's child page was fetched: its links were followed) and
by ``ring status --json``'s drops (the forged queries counted under their
reason at each peer).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import trio
from selectolax.lexbor import LexborHTMLParser

from ringharness import Ring
from localweb import HostileWeb, serve_in_thread
from localweb.hostile.wire import reply
from localweb.processes.peerrun import cluster_toml, read_rows
from localweb.sitegraph.nearcopies import mirror_web
from peer.core.dedupe.simhash import fingerprint, visible_text
from peer.state.configfile import load_config
from ring.io.zmqio import SocketType, member_route, open_socket
from ring.messages import NearQuery, encode
from ring.tools.client import Contact, cluster_status

K = 3
EVIL = "evil.dup.test"


class _Gate:
    """A body that waits for the test's word before its bytes: robots.txt, held until the attack is sent."""

    def __init__(self) -> None:
        self.open = threading.Event()

    def __iter__(self) -> Iterator[bytes]:
        self.open.wait(60.0)  # bounded: the server's thread is never held past a minute
        yield b"User-agent: *\nAllow: /\n"


async def _ring_formed(ring: Ring) -> None:
    while True:
        nodes = [ring.procs[p].crawler.peer.node for p in ("p1", "p2")]
        views = [n.membership.members() if n is not None else {} for n in nodes]
        if all(len(v) == 2 and all(m.state.value == "alive" for m in v.values()) for v in views):
            return
        await trio.sleep(0.05)


async def _drops(toml) -> dict[str, dict[str, int]]:  # type: ignore[no-untyped-def]
    cfg = load_config(toml)
    rows = await cluster_status(cfg.ring.name, [Contact(p.id, p.address) for p in cfg.peers])
    return {} if rows is None else {r.as_json()["id"]: r.as_json()["drops"] for r in rows}


async def test_forged_band_queries_from_an_outsider_mark_no_page(tmp_path):
    web = HostileWeb()
    gate = _Gate()
    # The server in a thread of its own (the gate blocks its loop, not the peers'); left from a
    # worker thread, as serve_in_thread's exit must not run in a trio loop.
    server = serve_in_thread(web)
    server.__enter__()
    try:
        mw = mirror_web(12, port=web.port)
        for (host, path), body in mw.pages.items():
            web.program[(host, path)] = reply(200, body)
        web.program[("*", "/robots.txt")] = reply(200, gate, content_type="text/plain")
        toml = cluster_toml(tmp_path, [web.url(h, p) for h, p in mw.seeds], peers=2,
                            sections={"dedupe": {"enabled": True, "k": K, "answer_timeout": 3.0},
                                      # robots.txt is held while the attack is counted: no timeout meanwhile
                                      "crawl": {"timeout": 10.0}})
        cfg = load_config(toml)
        address = {p.id: p.address for p in cfg.peers}
        forged: list[NearQuery] = []
        for n, ((host, path), body) in enumerate(sorted(mw.pages.items())):
            fp = fingerprint(visible_text(LexborHTMLParser(body)))
            if fp is not None:
                forged.append(NearQuery(cfg.ring.name, "", tuple(range(K + 1)), fp,
                                        web.url(EVIL, f"/forged{n}.html"), "", 0.0))
        async with Ring(tmp_path, toml.read_text()) as ring:
            with trio.fail_after(90):
                async with trio.open_nursery() as nursery:
                    for p in ("p1", "p2"):
                        await ring.start_in_process(nursery, p)
                    await _ring_formed(ring)
                    # The attack: at each peer, the other member's id on a route of the attacker's own.
                    for target, posing in (("p1", "p2"), ("p2", "p1")):
                        async with open_socket(SocketType.DEALER, connect=address[target],
                                               identity=member_route(posing, "bad0")) as sock:
                            for q in forged:
                                await sock.send_multipart([encode(NearQuery(
                                    q.ring, posing, q.bands, q.fingerprint, q.url, posing, q.seen_at))])
                            await trio.sleep(0.5)  # delivered before the socket closes
                    counted: dict[str, dict[str, int]] = {}
                    with trio.move_on_after(5):  # until both peers counted every forged query
                        while not all(counted.get(p, {}).get("near_not_live_route", 0) >= len(forged)
                                      for p in ("p1", "p2")):
                            counted = await _drops(toml)
                            await trio.sleep(0.1)
                    gate.open.set()
                    await ring.wait()
    finally:
        gate.open.set()
        await trio.to_thread.run_sync(server.__exit__, None, None, None)
    rows = read_rows(tmp_path / "p1") + read_rows(tmp_path / "p2")
    marked = [r for r in rows if (r["duplicate_of"] or "").startswith(web.url(EVIL))]
    fetched = web.fetched()
    dropped = [hp for i, hp in enumerate(mw.originals) if not fetched[web.url(hp[0], f"/p{i}-child.html")]]
    print(f"{len(forged)} forged queries at each peer; pages marked copies of the attacker's URLs: "
          f"{len(marked)} of {len(rows)}; originals whose links were dropped: {len(dropped)}; "
          f"counted: {counted}")
    assert len(rows) >= len(mw.originals)
    assert marked == [], f"{len(marked)} pages marked copies of the attacker's URLs"
    assert dropped == []
    for p in ("p1", "p2"):
        assert counted[p].get("near_not_live_route", 0) >= len(forged), counted
