"""The metrics server's probes and token on a real ring: /readyz follows the lease, a scrape needs the token.

Two peers of a three-peer ring run in this process (tests/support/ringharness.py),
each with the metrics server ``python -m peer`` starts for it
(``peer.engine.observe.start_observers``); a peer joining with
``--metrics-address`` is a real ``python -m peer`` process, so the flag is
carried from the command line to its server.
"""

from __future__ import annotations

import functools
import re
import sys

import httpx
import trio
from localweb import HostBehaviour, SiteGraph, serve_webfarm
from ringharness import Ring, cluster_text, wait_pages

from localweb.processes.peerrun import free_ports
from peer.engine.observe import start_observers

TOKEN = "s3cret-scrape-token"


async def _until(client: httpx.AsyncClient, url: str, status: int, **kw) -> httpx.Response:
    """GET ``url`` until it answers ``status`` (the caller's fail_after bounds it)."""
    while True:
        try:
            res = await client.get(url, **kw)
            if res.status_code == status:
                return res
        except httpx.TransportError:
            pass  # not listening yet
        await trio.sleep(0.1)


async def test_readyz_is_503_without_a_lease_and_200_with_it_and_metrics_need_the_token(tmp_path):
    graph = SiteGraph(hosts=8, pages_per_host=30, shop=False)
    (tmp_path / "metrics.token").write_text(TOKEN + "\n")
    m1, m2, m4 = free_ports(3)
    async with trio.open_nursery() as nursery:
        # Slow answers: the crawl is still under way when the second peer brings the lease.
        farm = await nursery.start(functools.partial(serve_webfarm, graph,
                                                     behaviours={"*": HostBehaviour(latency=0.5)}))
        text = cluster_text(tmp_path, farm.port, 3, extra='\n[metrics]\ntoken_file = "metrics.token"\n')
        # Every host a seed: p3 never starts, and a seed host it owns waits until it is found dead,
        # after ring.seed_grace (60 s); with s001 alone, one run in three (s001's owner depends on
        # the web's port) waited that minute for its first pages. Of 8 hosts p1 and p2 own some
        # (all 8 p3's: one run in 6,500).
        seed = f'seeds = ["http://s001.web.test:{farm.port}/"]'
        assert seed in text
        text = text.replace(seed, "seeds = [" + ", ".join(f'"http://{h}:{farm.port}/"'
                                                          for h in sorted(graph.hosts(special=False))) + "]")
        # A port alone is loopback (peer.core.config.metrics rule 1).
        text = text.replace('data_dir = "' + str(tmp_path / "p1") + '"',
                            'data_dir = "' + str(tmp_path / "p1") + f'"\nmetrics_address = "{m1}"', 1)
        text = text.replace('data_dir = "' + str(tmp_path / "p2") + '"',
                            'data_dir = "' + str(tmp_path / "p2") + f'"\nmetrics_address = ":{m2}"', 1)
        auth = {"Authorization": f"Bearer {TOKEN}"}
        async with Ring(tmp_path, text) as ring, httpx.AsyncClient(timeout=5) as client:
            try:
                with trio.fail_after(90):
                    p1 = await ring.start_in_process(nursery, "p1")
                    await start_observers(p1.crawler, nursery, solo=False)
                    base = f"http://127.0.0.1:{m1}"
                    # p1 alone of three: alive, in the ring, but no majority vouches for it.
                    alone = await _until(client, base + "/readyz", 503)
                    while "no lease" not in alone.text:
                        alone = await client.get(base + "/readyz")
                        await trio.sleep(0.1)
                    health = await client.get(base + "/healthz")
                    no_token = await client.get(base + "/metrics")
                    wrong = await client.get(base + "/metrics", headers={"Authorization": "Bearer nope"})
                    scrape = await client.get(base + "/metrics", headers=auth)
                    other = await client.get(base + "/", headers=auth)
                    # The second peer makes a majority: p1 holds its lease and is ready.
                    p2 = await ring.start_in_process(nursery, "p2")
                    await start_observers(p2.crawler, nursery, solo=False)
                    ready = await _until(client, base + "/readyz", 200)
                    ready2 = await _until(client, f"http://127.0.0.1:{m2}/readyz", 200)
                    await wait_pages(farm, 3)
                    # A joiner's metrics, from its --metrics-address.
                    joiner = await ring.start("p4", "--address", f"tcp://127.0.0.1:{free_ports(1)[0]}",
                                              "--data-dir", str(tmp_path / "p4"),
                                              "--metrics-address", f"127.0.0.1:{m4}")
                    joined = await _until(client, f"http://127.0.0.1:{m4}/metrics", 200, headers=auth)
                    joined_401 = await client.get(f"http://127.0.0.1:{m4}/metrics")
                    joiner.terminate()
                    await joiner.wait()
                    for p in (p1, p2):
                        p.kill()
            except trio.TooSlowError:
                raise AssertionError(f"not in time\n{ring.tails()}") from None
        nursery.cancel_scope.cancel()

    assert re.fullmatch(r"not ready: no lease \(heard 1 of 3 voters, 2 needed\)\n", alone.text), alone.text
    assert health.status_code == 200 and health.text == "ok\n"
    assert no_token.status_code == 401 and no_token.headers["www-authenticate"].startswith("Bearer")
    assert wrong.status_code == 401
    assert scrape.status_code == 200 and 'ringcrawl_peer_info{peer="p1",ring="test"} 1.0' in scrape.text
    assert "ringcrawl_lease_held 0.0" in scrape.text
    assert "ringcrawl_" not in no_token.text
    assert other.status_code == 404 and "ringcrawl_" not in other.text
    assert ready.text == "ready\n" and ready2.text == "ready\n"
    assert 'ringcrawl_peer_info{peer="p4",ring="test"} 1.0' in joined.text
    assert joined_401.status_code == 401
    assert sys.executable  # the joiner ran as `python -m peer` (ringharness.Ring.start)
