"""The local test web (localweb: graph, pages, oracle, endpoints, server) and scripts/webfarm.py."""

from __future__ import annotations

import functools
import gzip
import json
import signal
import struct
import subprocess
import sys
import time
import tomllib
import zlib
from collections import Counter, deque
from pathlib import Path

import httpx
import pytest
import trio
from protego import Protego
from selectolax.lexbor import LexborHTMLParser

from peer.core.config.cluster import parse_config
from peer.core.urls.normalize import host_key, hostname, join, normalize, normalize_link
from peer.core.urls.scope import Scope

from localweb import (
    BAD_HOST,
    SHOP_HOST,
    HostBehaviour,
    SiteGraph,
    SiteSpec,
    read_log,
    serve_webfarm,
    webfarm,
)
from localweb.sitegraph import endpoints, server
from localweb.sitegraph.hrefs import FORMS

ROOT = Path(__file__).resolve().parents[2]

UA = "ringcrawl/0.1 (+https://example.invalid/bot)"
SMALL = SiteSpec(seed=7, hosts=4, pages_per_host=30, section_size=10, links_per_page=40,
                 shop_products=12, crawl_delay=(("s002.web.test", 2.5),))


@pytest.fixture(scope="module")
def graph() -> SiteGraph:
    return SiteGraph(SMALL)


@pytest.fixture
async def farm(graph, nursery):
    return await nursery.start(serve_webfarm, graph)


def _split(url: str) -> tuple[str, str]:
    host = hostname(host_key(url))
    rest = url.split("//", 1)[1]
    return host, rest[rest.find("/"):] if "/" in rest else "/"


async def _get(client: httpx.AsyncClient, farm, host: str, target: str, **kw) -> httpx.Response:
    return await client.get(f"http://127.0.0.1:{farm.port}{target}",
                            headers={"Host": f"{host}:{farm.port}", **kw.pop("headers", {})}, **kw)


def _links_in(html: bytes) -> tuple[str | None, bool, list[tuple[str, str, str]]]:
    """(base href, meta nofollow, [(tag, href, rel)]) as a crawler's parser sees them."""
    tree = LexborHTMLParser(html)
    base = tree.css_first("base[href]")
    meta = tree.css_first('meta[name="robots"]')
    nofollow = meta is not None and "nofollow" in (meta.attributes.get("content") or "")
    links = [(n.tag, n.attributes["href"] or "", n.attributes.get("rel") or "")
             for n in tree.css("a[href], area[href]")]
    return (base.attributes["href"] if base else None), nofollow, links


# ---------------------------------------------------------------------------
# The graph, without a server


def test_spec_rejects_bad_values():
    for bad in ({"hosts": 0}, {"hosts": 1000}, {"pages_per_host": 0}, {"page_kb": (30, 20)},
                {"cross_host_ratio": 0.9, "missing_ratio": 0.2}, {"shop_products": 0}):
        with pytest.raises(ValueError):
            SiteSpec(**bad)
    with pytest.raises(ValueError, match="unknown hosts"):
        SiteGraph(hosts=2, crawl_delay={"s009.web.test": 1.0})


def test_same_seed_gives_the_same_bytes():
    a, b, c = SiteGraph(SMALL), SiteGraph(SMALL), SiteGraph(seed=8, hosts=4, pages_per_host=30,
                                                            section_size=10, links_per_page=40)
    for host, path in [("s001.web.test", "/"), ("s003.web.test", "/c1/p17.html"),
                       ("s002.web.test", "/c2/"), (SHOP_HOST, "/")]:
        assert a.render(host, path, 8080).body == b.render(host, path, 8080).body
    assert a.render("s003.web.test", "/c1/p17.html", 8080).body != c.render(
        "s003.web.test", "/c1/p17.html", 8080).body
    assert a.expected_urls(8080) == b.expected_urls(8080)
    assert a.shop_items(8080) == b.shop_items(8080)


def test_site_pages_are_20_to_40_kib(graph):
    sizes = []
    for url in graph.expected_urls(8080):
        host, path = _split(url)
        page = graph.render(host, path, 8080)
        if host in graph.site_hosts() and page.status == 200 and page.content_type.startswith("text/html"):
            sizes.append(len(page.body))
    big = SiteGraph(seed=3, hosts=3, pages_per_host=300)
    for n in range(1, 301, 13):
        sizes.append(len(big.render("s002.web.test", f"/c{(n - 1) // 30}/p{n}.html", 8080).body))
    assert len(sizes) > 150
    assert min(sizes) >= 20 * 1024 and max(sizes) <= 40 * 1024


def test_every_emitted_href_joins_to_its_canonical_target(graph):
    """graph.links() is what a parser finds in the served HTML, and peer.core.urls.normalize agrees."""
    port = 8123
    forms: Counter[str] = Counter()
    html_seen = b""
    pages = 0
    for url in sorted(graph.expected_urls(port)):
        host, path = _split(url)
        page = graph.render(host, path, port)
        if page.status != 200 or not page.content_type.startswith("text/html"):
            continue
        pages += 1
        html_seen += page.body if pages < 60 else b""
        base_href, meta_nofollow, parsed = _links_in(page.body)
        expected = graph.links(url)
        assert [(t, h) for t, h, _ in parsed] == [(e.tag, e.href) for e in expected], url
        base = join(url, base_href) if base_href else url
        for (_, href, rel), link in zip(parsed, expected, strict=True):
            forms[link.form] += 1
            assert link.rel == rel
            assert link.follow == (not meta_nofollow and "nofollow" not in rel.split())
            assert normalize_link(base, href) == link.target, (url, href)
            if link.target is not None:
                assert normalize(link.target) == link.target
    assert set(forms) == FORMS, FORMS - set(forms)
    text = html_seen.decode()
    for needle in ('href="../', 'href="//s00', 'href="HTTP://S00', "#s", "?a=1&amp;b=2",
                   'href="mailto:', 'href="javascript:', 'rel="nofollow"', "<area ", "<base href=",
                   'href="  ', "/trap/script.html", "<!-- retired: <a href"):
        assert needle in text, needle


def test_the_oracle_and_the_site_graph_import_no_peer_module():
    """The oracle judges peer.core.urls.normalize; built on it, it would agree with its bugs."""
    code = ("import sys, localweb.sitegraph.oracle, localweb.sitegraph.web\n"
            "print(','.join(m for m in sys.modules if m == 'peer' or m.startswith('peer.')))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == ""


@pytest.mark.parametrize("url", [
    "http://s001.web.test:8080/", "HTTP://S001.WEB.TEST:8080/c0/p1.html", "http://s001.web.test:80/x",
    "https://a.web.test:443/", "http://a.web.test", "http://a.web.test:08080/x?b=1&a=2",
    "http://u:pw@a.web.test/p#frag", "http://a.web.test./c0/./p1.html", "http://a.web.test/x/../c0/",
    "http://a.web.test/%63%30/p%2Fq.html", "http://a.web.test/%7euser/%7E", "  http://a.web.test/ ",
    "http://a.web.test/a/b/..", "http://a.web.test/a/.", "http://a.web.test/c0/p1.html?",
])
def test_the_oracles_own_normaliser_agrees_with_peer_urls(url):
    from localweb.sitegraph.oracle import normalize as oracle_normalize

    assert oracle_normalize(url) == normalize(url)


@pytest.mark.parametrize("url", ["mailto:a@b.test", "ftp://a.test/", "/relative", "http:///nohost"])
def test_the_oracles_normaliser_refuses_what_is_not_a_crawlable_url(url):
    from localweb.sitegraph.oracle import normalize as oracle_normalize

    with pytest.raises(ValueError):
        oracle_normalize(url)


def test_expected_set_options(graph):
    port = 8080
    full = graph.expected_urls(port)
    seed = f"http://s001.web.test:{port}/"
    assert seed in full and not any(u.endswith("/robots.txt") for u in full)
    hosts = {hostname(host_key(u)) for u in full}
    assert hosts == set(graph.site_hosts()) | {SHOP_HOST}
    assert all(f"http://{h}:{port}/" in full for h in graph.site_hosts())
    # Every site page is reachable.
    for h in graph.site_hosts():
        for n in range(1, 31):
            assert f"http://{h}:{port}/c{(n - 1) // 10}/p{n}.html" in full

    traps = graph.trap_urls(port)
    disallowed = graph.disallowed_urls(port)
    assert not full & traps and not full & disallowed
    assert disallowed and all("/private/" in u or "/cart/" in u for u in disallowed)

    no_robots = graph.expected_urls(port, obey_robots=False)
    assert full | disallowed <= no_robots  # and what the private pages link to
    follow_all = graph.expected_urls(port, nofollow=False)
    assert f"http://s001.web.test:{port}/trap/meta.html" in follow_all - full
    assert any("/trap/nf" in u for u in follow_all - full)

    depth1 = graph.expected_urls(port, max_depth=1)
    direct = {seed} | {l.target for l in graph.links(seed) if l.follow and l.target in full}
    # A redirect target keeps its source's depth.
    assert direct <= depth1
    assert all(u.replace("/p", "/old") in direct for u in depth1 - direct)
    only_s001 = graph.expected_urls(port, allow=("s001.web.test",))
    assert only_s001 == {u for u in full if "//s001.web.test:" in u}

    linked = SiteGraph(SiteSpec(seed=7, hosts=2, pages_per_host=10, link_bad=True))
    assert not any(BAD_HOST in u for u in linked.expected_urls(port))
    bad = {u for u in linked.expected_urls(port, bad=True) if BAD_HOST in u}
    b = f"http://{BAD_HOST}:{port}"
    assert {f"{b}/redirect-loop", f"{b}/redirect-loop/b", f"{b}/gzip-bomb", f"{b}/redirect/3",
            f"{b}/redirect/0", f"{b}/slow?ms=300"} <= bad


def test_robots_rules_agree_with_protego(graph):
    txt = {h: graph.robots_txt(h) for h in graph.hosts()}
    assert "Disallow: /private/" in txt["s001.web.test"]
    assert "Allow: /private/open.html" in txt["s001.web.test"]
    assert "Crawl-delay: 2.5" in txt["s002.web.test"]
    assert txt["s004.web.test"] is not None and "/private/" in txt["s004.web.test"]
    assert txt[BAD_HOST] is None
    assert SiteGraph(hosts=5).robots_txt("s005.web.test") is None  # a 404 robots.txt
    paths = ["/", "/private/p1.html", "/private/open.html", "/private/", "/c0/p3.html",
             "/cart/add?id=x", "/privatex"]
    for host, text in txt.items():
        rp = Protego.parse(text or "")
        for p in paths:
            assert rp.can_fetch(f"http://{host}:8080{p}", UA) == graph.robots_allows(host, p), (host, p)
    assert not graph.robots_allows("s001.web.test", "/private/p1.html")
    assert graph.robots_allows("s001.web.test", "/private/open.html")
    assert graph.robots_allows("s002.web.test", "/private/p1.html")


def test_host_behaviour_latency_schedule():
    b = HostBehaviour(latency=[(10, 0.5), (0, 0.05), (20, 0.0)])
    assert [b.latency_at(t) for t in (-1, 0, 9.9, 10, 15, 20, 99)] == [0.0, 0.05, 0.05, 0.5, 0.5, 0.0, 0.0]
    assert HostBehaviour(latency=0.2).latency_at(5) == 0.2
    assert HostBehaviour(latency=lambda t: t / 10).latency_at(3) == pytest.approx(0.3)
    with pytest.raises(ValueError):
        HostBehaviour(latency=-1)
    with pytest.raises(ValueError):
        HostBehaviour(rate=1, burst=0)


def test_gzip_bomb_is_small_and_inflates_to_zeros():
    bomb = endpoints.gzip_bomb()
    assert 900_000 < len(bomb) < 1_200_000
    assert struct.unpack("<I", bomb[-4:])[0] == (1 << 30) & 0xFFFFFFFF  # ISIZE: 1 GiB
    out = zlib.decompressobj(31).decompress(bomb, 1 << 20)
    assert len(out) == 1 << 20 and not out.strip(b"\0")
    assert endpoints.gzip_bomb() is bomb  # built once
    assert gzip.decompress(endpoints.gzip_bomb(4 << 20)) == bytes(4 << 20)  # CRC and size check out


# ---------------------------------------------------------------------------
# Over HTTP


async def _crawl(client: httpx.AsyncClient, farm, seeds: list[str]):
    """An independent reference crawler: BFS, protego, selectolax, peer.core.urls.normalize."""
    scope = Scope(("*.web.test",), (BAD_HOST,))
    robots: dict[str, Protego | None] = {}
    fetched: Counter[str] = Counter()
    statuses: Counter[int] = Counter()
    ctypes: set[str] = set()
    disallowed: set[str] = set()
    seen = set(seeds)
    queue = deque(seeds)

    def enqueue(url: str | None) -> None:
        if url and url not in seen and scope.allows(url):
            seen.add(url)
            queue.append(url)

    while queue:
        assert sum(fetched.values()) < 3000
        url = queue.popleft()
        host, target = _split(url)
        if host not in robots:
            r = await _get(client, farm, host, "/robots.txt")
            robots[host] = Protego.parse(r.text) if r.status_code == 200 else None
        rp = robots[host]
        if rp is not None and not rp.can_fetch(url, UA):
            disallowed.add(url)
            continue
        r = await _get(client, farm, host, target)
        fetched[url] += 1
        statuses[r.status_code] += 1
        ctype = r.headers.get("content-type", "")
        ctypes.add(ctype.split(";")[0])
        if 300 <= r.status_code < 400:
            enqueue(normalize_link(url, r.headers["location"]))
        elif r.status_code == 200 and ctype.startswith("text/html"):
            base_href, meta_nofollow, links = _links_in(r.content)
            if meta_nofollow:
                continue
            base = join(url, base_href) if base_href else url
            for _, href, rel in links:
                if "nofollow" not in rel.lower().split():
                    enqueue(normalize_link(base, href))
    return fetched, statuses, ctypes, disallowed


async def test_http_crawl_fetches_exactly_the_expected_set(graph, farm):
    port = farm.port
    with trio.fail_after(25):
        async with httpx.AsyncClient() as client:
            fetched, statuses, ctypes, disallowed = await _crawl(client, farm, graph.seeds(port))
    # This crawler fetches every file type.
    expected = graph.expected_urls(port, skip_extensions=())
    assert set(fetched) == expected
    assert set(fetched.values()) == {1}
    assert disallowed == graph.disallowed_urls(port, skip_extensions=())
    assert not set(fetched) & graph.trap_urls(port)
    assert {200, 301, 404} <= set(statuses)
    assert {"text/html", "application/pdf", "image/png"} <= ctypes
    # The server's log saw the same requests (robots.txt aside).
    assert farm.fetched() == fetched
    assert {e.target for e in farm.log if e.target == "/robots.txt"}
    assert farm.stats.connections == 1  # one keep-alive connection did it all


async def test_shop_pages_carry_the_expected_items(graph, farm):
    items = graph.shop_items(farm.port)
    assert len(items) == 12
    assert {i["url"] for i in items} <= graph.expected_urls(farm.port)
    assert any("&" in i["title"] for i in items) or any(len(i["authors"]) > 1 for i in items)
    got = []
    async with httpx.AsyncClient() as client:
        for item in items:
            host, target = _split(item["url"])
            r = await _get(client, farm, host, target)
            assert r.status_code == 200
            tree = LexborHTMLParser(r.content)
            got.append({
                "url": item["url"],
                "title": tree.css_first("h1.title").text(),
                "price": tree.css_first(".price").text(),
                "cover": join(item["url"], tree.css_first("img.cover").attributes["src"]),
                "authors": [n.text() for n in tree.css("a.author")],
                "blurb": tree.css_first("p.blurb").text(),
            })
        cover = await _get(client, farm, SHOP_HOST, _split(items[0]["cover"])[1])
        assert cover.status_code == 200 and cover.headers["content-type"] == "image/jpeg"
    assert got == items
    assert all(i["price"].startswith("£") for i in items)


async def test_page_serving_details(graph, farm):
    async with httpx.AsyncClient() as client:
        page = await _get(client, farm, "s002.web.test", "/c1/p20.html")
        assert page.status_code == 200 and page.headers["content-type"] == "text/html; charset=utf-8"
        assert page.content == graph.render("s002.web.test", "/c1/p20.html", farm.port).body
        # Query variants serve the page; percent-escapes are decoded for routing.
        assert (await _get(client, farm, "s002.web.test", "/c1/p20.html?a=1&b=2")).content == page.content
        assert (await _get(client, farm, "s002.web.test", "/%63%31/p20.html")).content == page.content
        head = await client.head(f"http://127.0.0.1:{farm.port}/c1/p20.html",
                                 headers={"Host": f"S002.WEB.TEST:{farm.port}"})
        assert head.status_code == 200 and head.content == b""
        assert int(head.headers["content-length"]) == len(page.content)
        assert (await _get(client, farm, "s002.web.test", "/c1/p1.html")).status_code == 404
        assert (await _get(client, farm, "nowhere.web.test", "/")).status_code == 404
        post = await client.post(f"http://127.0.0.1:{farm.port}/", headers={"Host": "s001.web.test"})
        assert post.status_code == 405
        moved = await _get(client, farm, "s002.web.test", "/c0/old3.html")
        assert moved.status_code == 301 and moved.headers["location"] == "/c0/p3.html"
        moved = await _get(client, farm, "s002.web.test", "/c1/old13.html")
        assert moved.headers["location"] == f"http://s002.web.test:{farm.port}/c1/p13.html"
        missing = await _get(client, farm, "s002.web.test", "/c0/gone1.html")
        assert missing.status_code == 404 and b"/trap/from-404.html" in missing.content
        pdf = await _get(client, farm, "s003.web.test", "/files/doc1.pdf")
        assert pdf.headers["content-type"] == "application/pdf" and pdf.content.startswith(b"%PDF")
        robots = await _get(client, farm, "s004.web.test", "/robots.txt")
        assert robots.text == graph.robots_txt("s004.web.test")


async def test_request_log_and_keep_alive(graph, nursery, tmp_path):
    log_path = tmp_path / "requests.jsonl"
    farm = await nursery.start(functools.partial(serve_webfarm, graph, log_path=str(log_path)))
    t0 = time.time()
    async with httpx.AsyncClient() as client:
        await _get(client, farm, "s001.web.test", "/")
        await _get(client, farm, "s001.web.test", "/c0/p1.html")
        r = await _get(client, farm, "s003.web.test", "/nope?x=1", headers={"Connection": "close"})
        assert r.headers["connection"] == "close"
        await _get(client, farm, "s003.web.test", "/c0/p2.html")
    log = farm.log
    assert [(e.host, e.method, e.target, e.status) for e in log] == [
        ("s001.web.test", "GET", "/", 200), ("s001.web.test", "GET", "/c0/p1.html", 200),
        ("s003.web.test", "GET", "/nope?x=1", 404), ("s003.web.test", "GET", "/c0/p2.html", 200)]
    assert log[0].conn == log[1].conn == log[2].conn != log[3].conn  # keep-alive, then close
    assert log[0].bytes == len(graph.render("s001.web.test", "/", farm.port).body)
    assert all(t0 - 1 <= e.t <= time.time() + 1 and e.dur >= 0 for e in log)
    assert read_log(str(log_path)) == [
        server.LogEntry(**json.loads(e.to_json())) for e in log]
    assert json.loads(log_path.read_text().splitlines()[0])["target"] == "/"
    assert {e.client for e in log} == {"127.0.0.1"}
    assert json.loads(log_path.read_text().splitlines()[0])["client"] == "127.0.0.1"


def test_read_log_reads_logs_without_a_client_and_skips_what_is_not_an_entry(tmp_path):
    old = {"t": 1.5, "host": "s001.web.test", "method": "GET", "target": "/", "status": 200,
           "bytes": 10, "conn": 1, "dur": 0.01}
    path = tmp_path / "old.jsonl"
    path.write_text("\n".join([json.dumps(old), json.dumps({**old, "client": "10.0.0.2", "new": 1}),
                               "[1, 2]", json.dumps({"t": 1}), '{"torn'])
                    + "\n")
    a, b = read_log(str(path))
    assert a == server.LogEntry(**old) and a.client == ""
    assert b.client == "10.0.0.2"


async def test_latency_steps_rate_limit_and_inflight(graph, nursery):
    behaviours = {
        "s001.web.test": HostBehaviour(latency=[(0, 0.0), (0.3, 0.25)]),
        "s002.web.test": HostBehaviour(rate=0.01, burst=2),
        "s003.web.test": HostBehaviour(rate=0.01, burst=1, retry_after=7),
        "s004.web.test": HostBehaviour(latency=0.2),
    }
    farm = await nursery.start(functools.partial(serve_webfarm, graph, behaviours=behaviours))
    async with httpx.AsyncClient() as client:
        await trio.sleep(max(0.0, farm.started + 0.35 - trio.current_time()))
        t = trio.current_time()
        assert (await _get(client, farm, "s001.web.test", "/")).status_code == 200
        assert trio.current_time() - t >= 0.25  # the second step is in force
        assert farm.log[-1].dur >= 0.25

        codes = [(await _get(client, farm, "s002.web.test", "/")) for _ in range(3)]
        assert [r.status_code for r in codes] == [200, 200, 429]
        assert 1 <= int(codes[2].headers["retry-after"]) <= 100
        r = [(await _get(client, farm, "s003.web.test", "/")) for _ in range(2)][1]
        assert r.status_code == 429 and r.headers["retry-after"] == "7"
        assert [e.status for e in farm.log if e.host == "s003.web.test"] == [200, 429]

        async with trio.open_nursery() as n:
            for k in range(3):
                n.start_soon(_get, client, farm, "s004.web.test", f"/c0/p{k + 1}.html")
    assert farm.stats.max_inflight["s004.web.test"] == 3
    assert farm.stats.inflight["s004.web.test"] == 0


async def _raw_exchange(port: int, request: bytes) -> bytes:
    sock = trio.socket.socket()
    data = b""
    with sock, trio.fail_after(5):
        await sock.connect(("127.0.0.1", port))
        await sock.send(request)
        while chunk := await sock.recv(65536):
            data += chunk
    return data


async def test_bad_requests_and_http_1_0(farm):
    garbage = await _raw_exchange(farm.port, b"NONSENSE\r\n\r\n")
    assert garbage.startswith(b"HTTP/1.1 400 ")
    old = await _raw_exchange(farm.port, b"GET /robots.txt HTTP/1.0\r\nHost: s001.web.test\r\n\r\n")
    assert old.startswith(b"HTTP/1.1 200 ") and old.endswith(b"Disallow: /private/\nAllow: /private/open.html\n")
    # A header value h11 refuses to send closes that connection, not the server.
    await _raw_exchange(farm.port, b"GET /status/302?to=%0d%0aX:1 HTTP/1.1\r\nHost: bad.web.test\r\n\r\n")
    async with httpx.AsyncClient() as client:
        assert (await _get(client, farm, "s001.web.test", "/")).status_code == 200


async def test_refuses_non_loopback_addresses(graph):
    for host in ("0.0.0.0", "10.1.2.3", "example.com"):
        with pytest.raises(ValueError, match="loopback"):
            await serve_webfarm(graph, host=host)
    # Opting in allows a private address (a network namespace's), never a public one.
    for host in ("0.0.0.0", "8.8.8.8", "example.com"):
        with pytest.raises(ValueError, match="loopback or private"):
            await serve_webfarm(graph, host=host, private=True)
    server.check_loopback("10.231.7.1", private=True)
    server.check_loopback("fd00::5", private=True)


# ---------------------------------------------------------------------------
# bad.web.test


async def _wait_logged(farm, target: str):
    with trio.fail_after(5):
        while True:
            for e in farm.log:
                if e.target == target:
                    return e
            await trio.sleep(0.01)


async def _raw_get(port: int, target: str, want: int):
    """GET over a bare socket, reading ``want`` body bytes, then hanging up.

    Returns (status, headers, [(time, body bytes so far)]); decodes chunked
    framing. httpx cannot stop early here without leaving its async
    generators to the garbage collector, which trio (rightly) warns about.
    """
    sock = trio.socket.socket()
    with sock:
        await sock.connect(("127.0.0.1", port))
        await sock.send(f"GET {target} HTTP/1.1\r\nHost: {BAD_HOST}\r\n\r\n".encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            data = await sock.recv(65536)
            assert data, "closed before the headers"
            buf += data
        head, buf = buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        headers = dict(line.lower().split(": ", 1) for line in lines[1:])
        chunked = headers.get("transfer-encoding") == "chunked"
        got, arrivals, left = 0, [], 0  # left: bytes still due in the current chunk
        while got < want:
            now = trio.current_time()
            if chunked:
                while buf:
                    if left == 0:
                        end = buf.find(b"\r\n")
                        if end < 0:
                            break
                        left = int(buf[:end], 16) + 2  # the data and its CRLF
                        buf = buf[end + 2:]
                    take = min(left, len(buf))
                    got += max(0, min(take, left - 2))
                    left, buf = left - take, buf[take:]
            else:
                got, buf = got + len(buf), b""
            if got and (not arrivals or arrivals[-1][1] != got):
                arrivals.append((now, got))
            if got >= want:
                break
            data = await sock.recv(65536)
            assert data, "closed early"
            buf += data
    return int(lines[0].split()[1]), headers, arrivals


async def test_gzip_bomb_endpoint(farm):
    url = f"http://127.0.0.1:{farm.port}/gzip-bomb"
    async with httpx.AsyncClient() as client:
        async with client.stream("GET", url, headers={"Host": BAD_HOST}) as r:
            assert r.headers["content-encoding"] == "gzip"
            assert 900_000 < int(r.headers["content-length"]) < 1_200_000
            raw = b"".join([chunk async for chunk in r.aiter_raw()])  # ~1 MB, not inflated
    out = zlib.decompressobj(31).decompress(raw, 1 << 20)
    assert len(out) == 1 << 20 and not out.strip(b"\0")


@pytest.mark.parametrize("path", ["/big-cl", "/big-chunked"])
async def test_big_bodies_stream_lazily_and_stop_on_disconnect(farm, path):
    with trio.fail_after(10):
        status, headers, arrivals = await _raw_get(farm.port, path, 1 << 20)
    assert status == 200 and arrivals[-1][1] >= 1 << 20
    if path == "/big-cl":
        assert headers["content-length"] == str(50 << 20)
    else:
        assert "content-length" not in headers and headers["transfer-encoding"] == "chunked"
    entry = await _wait_logged(farm, path)  # logged when the stream ended
    assert entry.status == 200 and (1 << 20) <= entry.bytes < 50 << 20
    async with httpx.AsyncClient() as client:
        small = await _get(client, farm, BAD_HOST, f"{path}?mb=2")
    assert len(small.content) == 2 << 20


async def test_drip_sends_one_byte_at_a_time(farm):
    with trio.fail_after(10):
        status, headers, arrivals = await _raw_get(farm.port, "/drip?interval=0.2", 2)
    assert status == 200 and [n for _, n in arrivals] == [1, 2]
    assert arrivals[1][0] - arrivals[0][0] >= 0.15
    entry = await _wait_logged(farm, "/drip?interval=0.2")  # stopped when the client left
    assert 2 <= entry.bytes <= 4


async def test_reset_endpoint_resets_the_connection(farm):
    sock = trio.socket.socket()
    with sock:
        await sock.connect(("127.0.0.1", farm.port))
        await sock.send(b"GET /reset HTTP/1.1\r\nHost: bad.web.test\r\n\r\n")
        with trio.fail_after(5), pytest.raises(ConnectionResetError):
            await sock.recv(1024)
    async with httpx.AsyncClient() as client:
        with pytest.raises(httpx.ReadError):
            await _get(client, farm, BAD_HOST, "/reset?after=1000")
    assert (await _wait_logged(farm, "/reset")).status == 0


async def test_huge_header(farm):
    sock = trio.socket.socket()
    data = b""
    with sock, trio.fail_after(5):
        await sock.connect(("127.0.0.1", farm.port))
        await sock.send(b"GET /huge-header HTTP/1.1\r\nHost: bad.web.test\r\n\r\n")
        while b"\r\n\r\n" not in data and len(data) < 1 << 20:
            data += await sock.recv(65536)
    head = data.split(b"\r\n\r\n")[0]
    assert head.startswith(b"HTTP/1.1 200") and len(head) > 200 * 1024
    async with httpx.AsyncClient() as client:
        with pytest.raises(httpx.RemoteProtocolError):
            await _get(client, farm, BAD_HOST, "/huge-header")


async def test_redirects_statuses_and_odd_bodies(farm):
    async with httpx.AsyncClient() as client:
        a = await _get(client, farm, BAD_HOST, "/redirect-loop")
        b = await _get(client, farm, BAD_HOST, a.headers["location"])
        assert (a.status_code, a.headers["location"], b.headers["location"]) == (
            302, "/redirect-loop/b", "/redirect-loop")
        with pytest.raises(httpx.TooManyRedirects):
            await _get(client, farm, BAD_HOST, "/redirect-loop", follow_redirects=True)
        chain = await _get(client, farm, BAD_HOST, "/redirect/3", follow_redirects=True)
        assert chain.status_code == 200 and len(chain.history) == 3

        for code in (404, 410, 500, 503):
            r = await _get(client, farm, BAD_HOST, f"/status/{code}")
            assert r.status_code == code
        assert (await _get(client, farm, BAD_HOST, "/status/503")).headers["retry-after"] == "1"
        r = await _get(client, farm, BAD_HOST, "/status/204")
        assert r.status_code == 204 and r.content == b""
        assert (await _get(client, farm, BAD_HOST, "/status/99")).status_code == 404

        t = trio.current_time()
        assert (await _get(client, farm, BAD_HOST, "/slow?ms=200")).status_code == 200
        assert trio.current_time() - t >= 0.2

        bad = await _get(client, farm, BAD_HOST, "/malformed")
        assert bad.headers["content-type"] == "text/html"
        assert b"\x00" in bad.content and b"href" not in bad.content
        with pytest.raises(UnicodeDecodeError):
            bad.content.decode("utf-8")

        latin = await _get(client, farm, BAD_HOST, "/latin1")
        assert latin.headers["content-type"] == "text/html; charset=iso-8859-1"
        assert f"<title>{endpoints.LATIN1_TITLE}</title>" in latin.content.decode("latin-1")
        with pytest.raises(UnicodeDecodeError):
            latin.content.decode("utf-8")
        plain = await _get(client, farm, BAD_HOST, "/latin1-nocharset")
        assert plain.headers["content-type"] == "text/html" and plain.content == latin.content


# ---------------------------------------------------------------------------
# CLI


def _cli(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(ROOT / "scripts" / "webfarm.py"), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


async def test_cli_serves_on_an_ephemeral_port_and_exits_0_on_sigterm(tmp_path):
    log = tmp_path / "log.jsonl"
    with _cli("--port", "0", "--hosts", "2", "--pages", "10", "--log", str(log)) as proc:
        try:
            with trio.fail_after(20):
                line = await trio.to_thread.run_sync(proc.stdout.readline)
            assert line.startswith("listening on 127.0.0.1:"), line + proc.stderr.read()
            port = int(line.rsplit(":", 1)[1])
            # Then the seed and the config a peer needs, with this port in it.
            printed: list[str] = []
            with trio.fail_after(20):
                while len(printed) < 20 and printed[-1:] != [""] and "resolve" not in "".join(printed):
                    printed.append(await trio.to_thread.run_sync(proc.stdout.readline))
            block = "".join(printed).split("cluster.toml lines:\n", 1)[1]
            assert _peer_keys(block) == {"seeds": [f"http://s001.web.test:{port}/"], "allow_private": True,
                                         "allow_hosts": ["*.web.test"], "resolve": {"*.web.test": "127.0.0.1"}}
            async with httpx.AsyncClient() as client:
                r = await client.get(f"http://127.0.0.1:{port}/c0/p3.html",
                                     headers={"Host": f"s002.web.test:{port}"})
            assert r.status_code == 200
            assert r.content == SiteGraph(hosts=2, pages_per_host=10).render(
                "s002.web.test", "/c0/p3.html", port).body
            proc.send_signal(signal.SIGTERM)
            with trio.fail_after(10):
                code = await trio.to_thread.run_sync(proc.wait)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert code == 0
    entries = read_log(str(log))
    assert [(e.host, e.target, e.status) for e in entries] == [("s002.web.test", "/c0/p3.html", 200)]


def _peer_keys(block: str) -> dict:
    """The keys of the TOML block webfarm prints, checked to be a valid cluster.toml with one peer."""
    # A solo peer's address is never bound: parse_config only checks its form.
    cfg = parse_config('[[peer]]\nid = "p1"\naddress = "tcp://127.0.0.1:1"\n' + block)
    assert cfg.crawl.allow_private and cfg.dns.resolve
    data = tomllib.loads(block)
    return {**data["crawl"], **data["dns"]}


def test_help_shows_the_peer_config_the_web_needs(capsys):
    # In process: the main() scripts/webfarm.py runs (the SIGTERM test above runs the script).
    with pytest.raises(SystemExit) as stop:
        webfarm.main(["--help"])
    assert stop.value.code == 0
    block = capsys.readouterr().out.split("cluster.toml lines", 1)[1].split("\n\n", 1)[1]
    assert _peer_keys(block.replace("PORT", "8080")) == {
        "seeds": ["http://s001.web.test:8080/"], "allow_private": True, "allow_hosts": ["*.web.test"],
        "resolve": {"*.web.test": "127.0.0.1"}}


def test_cli_behaviour_options():
    args = webfarm._arg_parser().parse_args([
        "--latency", "0.05", "--latency", "s002.web.test=0:0.1,10:0.5",
        "--rate-limit", "S003.web.test=2/4", "--retry-after", "3"])
    b = webfarm._behaviours(args)
    assert set(b) == {"*", "s002.web.test", "s003.web.test"}
    assert b["*"].latency_at(100) == 0.05
    assert [b["s002.web.test"].latency_at(t) for t in (1, 11)] == [0.1, 0.5]
    assert (b["s003.web.test"].rate, b["s003.web.test"].burst, b["s003.web.test"].retry_after) == (2, 4, 3)


def test_cli_print_expected_and_refuses_public_bind(capsys):
    assert webfarm.main(["--port", "8080", "--hosts", "2", "--pages", "10", "--print-expected"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == sorted(SiteGraph(hosts=2, pages_per_host=10).expected_urls(8080)), err
    assert webfarm.main(["--host", "0.0.0.0", "--port", "0"]) == 2
    out, err = capsys.readouterr()
    assert "loopback" in err and out == ""
