"""peer.engine.metrics: the figures a Prometheus scrape gets, and a real peer serving them.

The figures are a frozen copy made on the trio thread (peer.core.run.scrape's
``PeerFigures``, and its delay quantiles).

The scrape of a crawl asks a real ``python -m peer`` process over HTTP; a busy
metrics port is judged with ``peer.commands.cli.main`` in this process (tests/support/clirun.py).
"""

from __future__ import annotations

import re

import httpx
import trio
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from ringharness import Ring, cluster_text
from localweb import SiteGraph, serve_webfarm

from peer.engine.metrics import PeerCollector, PeerFigures, families, quantiles


def figures(**kw) -> PeerFigures:
    base = dict(
        peer="p1", ring="demo", uptime=12.5, pages=40, bytes=123456,
        by_status={200: 35, 404: 3}, failed={"timeout": 2, 'we"ird\nkind': 1},
        not_requested={"robots": 6, "max_url_length": 5}, retries=4,
        robots_fetches=6, items=7, extract_errors=0, frontier=99, in_flight=3,
        hosts={"ready": 1, "waiting": 5, "held": 2, "busy": 3}, held={"robots": 1, "retry_after": 1},
        dns={"lookups": 10, "hits": 8, "static_hits": 0, "negative_hits": 0, "misses": 2, "merged": 0,
             "evictions": 0, "size": 2, "in_flight": 0},
        dns_hit_ratio=0.8, bloom_urls=500, bloom_fill=0.01, bloom_slices=1, bloom_fpr=1e-6,
        bloom_bytes=4096, forwarded_out=17, forwarded_in=11, drops={"garbage": 2},
        delay_quantiles={0.5: 0.1, 0.9: 0.2, 0.99: 0.5, 1.0: 2.0}, ceiling_holds=9, ip_ceiling_holds=1,
    )
    return PeerFigures(**(base | kw))


def scrape_text(f: PeerFigures | None) -> str:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PeerCollector(lambda: f))
    return generate_latest(registry).decode()


def samples(text: str) -> dict[tuple[str, tuple], float]:
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_a_scrape_has_every_figure_the_issue_names():
    got = samples(scrape_text(figures()))
    assert got[("ringcrawl_pages_total", ())] == 40
    assert got[("ringcrawl_body_bytes_total", ())] == 123456
    assert got[("ringcrawl_responses_total", (("status", "404"),))] == 3
    assert got[("ringcrawl_failed_total", (("kind", "timeout"),))] == 2
    assert got[("ringcrawl_not_requested_total", (("cause", "max_url_length"),))] == 5
    assert got[("ringcrawl_frontier_urls", ())] == 99
    for state, n in (("ready", 1), ("waiting", 5), ("held", 2), ("busy", 3)):
        assert got[("ringcrawl_hosts", (("state", state),))] == n
    assert got[("ringcrawl_hosts_held", (("reason", "robots"),))] == 1
    assert got[("ringcrawl_dns_cache_total", (("figure", "hits"),))] == 8
    assert got[("ringcrawl_dns_cache_hit_ratio", ())] == 0.8
    assert got[("ringcrawl_bloom_fill_ratio", ())] == 0.01
    assert got[("ringcrawl_bloom_urls", ())] == 500
    assert got[("ringcrawl_forwarded_out_total", ())] == 17
    assert got[("ringcrawl_forwarded_in_total", ())] == 11
    assert got[("ringcrawl_drops_total", (("reason", "garbage"),))] == 2
    assert got[("ringcrawl_politeness_delay_seconds", (("quantile", "0.99"),))] == 0.5
    assert got[("ringcrawl_politeness_ceiling_holds_total", (("scope", "host"),))] == 9
    assert got[("ringcrawl_peer_info", (("peer", "p1"), ("ring", "demo")))] == 1


def test_the_lease_is_a_set_of_gauges():
    got = samples(scrape_text(figures(lease_held=False, lease_vouched=1, lease_needed=2, lease_quorum=3,
                                      ring_version=4)))
    assert got[("ringcrawl_lease_held", ())] == 0
    assert (got[("ringcrawl_lease_vouched", ())], got[("ringcrawl_lease_needed", ())],
            got[("ringcrawl_lease_quorum", ())]) == (1, 2, 3)
    assert got[("ringcrawl_ring_version", ())] == 4
    assert got[("ringcrawl_lease_grace_seconds", ())] == 0
    alone = samples(scrape_text(figures()))  # a ring of one holds its own lease
    assert alone[("ringcrawl_lease_held", ())] == 1 and alone[("ringcrawl_lease_needed", ())] == 1


def test_a_paused_peer_says_so_in_a_gauge():
    assert samples(scrape_text(figures(paused=True)))[("ringcrawl_paused", ())] == 1
    assert samples(scrape_text(figures()))[("ringcrawl_paused", ())] == 0
    assert samples(scrape_text(figures(config_epoch=3)))[("ringcrawl_config_epoch", ())] == 3


def test_a_continuous_crawl_exports_revisits_due_and_freshness():
    got = samples(scrape_text(figures(revisits_due=3, revisits_scheduled=40, revisit_freshness=0.75,
                                      revisit_visits={"not_modified": 5, "unchanged": 1, "changed": 2,
                                                      "gone": 0, "failed": 0})))
    assert got[("ringcrawl_revisits_due", ())] == 3
    assert got[("ringcrawl_revisits_scheduled", ())] == 40
    assert got[("ringcrawl_revisits_total", (("change", "not_modified"),))] == 5
    assert got[("ringcrawl_revisit_freshness_ratio", ())] == 0.75
    assert not [k for k in samples(scrape_text(figures())) if "revisit" in k[0]]  # off: none


def test_remote_strings_in_labels_are_escaped_not_breaking_the_format():
    text = scrape_text(figures())
    # An error kind with a quote and a newline stays one sample line.
    assert 'kind="we\\"ird\\nkind"' in text
    assert samples(text)[("ringcrawl_failed_total", (("kind", 'we"ird\nkind'),))] == 1


def test_no_figures_no_samples():
    assert "ringcrawl_" not in scrape_text(None)
    assert list(families(figures())) and all(m.name.startswith("ringcrawl_") for m in families(figures()))


def test_delay_quantiles_are_nearest_rank():
    assert quantiles([]) == {}
    q = quantiles([float(i) for i in range(1, 101)])
    assert q == {0.5: 50.0, 0.9: 90.0, 0.99: 99.0, 1.0: 100.0}
    assert quantiles([3.0]) == {0.5: 3.0, 0.9: 3.0, 0.99: 3.0, 1.0: 3.0}


def _value(text: str, name: str) -> float:
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    assert m, f"no {name} in the scrape"
    return float(m[1])


async def test_a_peer_serves_metrics_that_grow_while_it_crawls(tmp_path):
    """A solo peer with metrics_address = 127.0.0.1:0 logs where it listens; two scrapes differ."""
    graph = SiteGraph(hosts=3, pages_per_host=40, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        text = cluster_text(tmp_path, farm.port, 1, rate=300.0, window=2.0)
        text = text.replace('[crawl]', 'metrics_address = "127.0.0.1:0"\n\n[crawl]', 1)
        async with Ring(tmp_path, text) as ring:
            await ring.start("p1")
            err = tmp_path / "p1-1.err"
            scrapes = []
            with trio.fail_after(60):
                while not (m := re.search(r"metrics on (http://\S+/metrics)", err.read_text())):
                    assert ring.procs["p1"].returncode is None, err.read_text()[-2000:]
                    await trio.sleep(0.1)
                url = m[1]
                async with httpx.AsyncClient(timeout=5) as client:
                    while len(scrapes) < 2:
                        res = await client.get(url)
                        assert res.status_code == 200
                        page = res.text
                        if _value(page, "ringcrawl_pages_total") > (
                                _value(scrapes[-1], "ringcrawl_pages_total") if scrapes else 0):
                            scrapes.append(page)
                        await trio.sleep(0.3)
                ring.kill("p1", 15)
                await ring.wait("p1")
        nursery.cancel_scope.cancel()
    first, second = scrapes
    assert _value(second, "ringcrawl_pages_total") > _value(first, "ringcrawl_pages_total")
    assert 'ringcrawl_peer_info{peer="p1",ring="test"} 1.0' in second
    assert re.search(r'^ringcrawl_hosts\{state="waiting"\} ', second, re.M)
    assert re.search(r'^ringcrawl_politeness_delay_seconds\{quantile="0.5"\} ', second, re.M)
    assert _value(second, "process_resident_memory_bytes") > 0
    assert _value(second, "ringcrawl_lease_held") == 1  # alone: nobody else to vouch
    assert ring.procs["p1"].returncode == 0, ring.tails()


def test_a_metrics_port_in_use_is_one_line_and_exit_2(tmp_path):
    import socket

    from clirun import run_main
    from peer.commands.cli import main

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        toml = tmp_path / "solo.toml"
        toml.write_text(cluster_text(tmp_path, 9, 1).replace(
            '[crawl]', f'metrics_address = "127.0.0.1:{port}"\n\n[crawl]', 1))
        res = run_main(main, ["--ring", str(toml)])  # python -m peer, in process
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert "Traceback" not in res.stderr
    assert lines[-1].startswith("error: ") and "metrics_address" in lines[-1]
    assert f"cannot listen on 127.0.0.1:{port}" in lines[-1]
