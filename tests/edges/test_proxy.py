"""Crawling through proxies: HTTP CONNECT and SOCKS5 test proxies on loopback, judged by their logs.

Every request the web server logs must come from the proxy's own
connections (they leave from 127.0.0.2, the crawler's from 127.0.0.1), and
the proxy's log must list every host; failures are the proxy kinds.
"""

from __future__ import annotations

import json
import queue
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from clirun import error_line, run_main, web_thread
from localweb import SiteGraph, serve_webfarm
from localweb.services.proxies import ConnectProxy, Socks5Proxy, TunnelEntry
from tests.e2e.test_engine import crawl, make_config, rows
from test_fetcher import pki  # noqa: F401 - the fixture

from peer.core.config.cluster import parse_config
from peer.errors import ErrorKind
from peer.net.fetcher import Fetcher
from peer.net.resolver import Resolver

USER, PASSWORD = "crawler", "s3cret-Pa55word"
AUTH_ENV = "RINGCRAWL_TEST_PROXY_AUTH"
WEB = {"*.web.test": "127.0.0.1"}


def proxy_crawl_keys(url: str) -> dict[str, Any]:
    return {"proxy": url, "proxy_auth_env": AUTH_ENV, "proxy_allow_private": True}


@pytest.fixture
def auth_env(monkeypatch):
    monkeypatch.setenv(AUTH_ENV, f"{USER}:{PASSWORD}")


def judge(farm: Any, log: list[TunnelEntry]) -> None:
    """Every request the web saw came through the proxy, and the proxy lists every host."""
    assert farm.log, "the web saw no request"
    clients = Counter(e.client for e in farm.log)
    assert set(clients) == {"127.0.0.2"}, f"requests not from the proxy's connections: {clients}"
    ok = [e for e in log if e.outcome == "ok"]
    assert {e.user for e in ok} == {USER}
    tunnelled = {e.target.rpartition(":")[0] for e in ok}
    # A name [dns] resolve pins is tunnelled to its address (peer/net/proxy.py).
    assert tunnelled == {WEB["*.web.test"] if e.host.endswith(".web.test") else e.host for e in farm.log}
    # Each tunnel is one connection of the web's, and every connection of the web's a tunnel.
    assert all(e.upstream.startswith("127.0.0.2:") for e in ok)
    assert len({e.conn for e in farm.log}) == len(ok)


@pytest.mark.parametrize("kind", ["http", "socks5h"])
async def test_a_crawl_goes_only_through_the_proxy(tmp_path, auth_env, kind):
    graph = SiteGraph(hosts=3, pages_per_host=12, shop=False)
    cls = ConnectProxy if kind == "http" else Socks5Proxy
    proxy = cls(resolve=WEB, credentials=(USER, PASSWORD))
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        await nursery.start(proxy.serve)
        cfg = make_config(tmp_path, farm.port, crawl=proxy_crawl_keys(f"{kind}://{proxy.address}"))
        _, summary = await crawl(cfg)
        nursery.cancel_scope.cancel()
    judge(farm, proxy.log)
    expected = graph.expected_urls(farm.port)
    fetched = Counter(f"http://{e.host}:{farm.port}{e.target}" for e in farm.log
                      if e.method == "GET" and e.target != "/robots.txt")
    assert set(fetched) == expected and max(fetched.values()) == 1
    assert summary.stop_reason == "frontier empty"
    # The names are [dns] resolve's: the proxy was asked for their pinned address, never a name.
    assert {e.target.rpartition(":")[0] for e in proxy.log} == {"127.0.0.1"}
    assert not {r[2] for r in rows(cfg)} & {"proxy", "proxy_auth", "proxy_refused", "connect"}


async def fetch_via(tmp_path: Path, url: str, proxy_url: str, *, creds: str | None = None,
                    allow_private: bool = True, **crawl: Any):
    cfg = make_config(tmp_path, 1, crawl={"proxy": proxy_url, "proxy_allow_private": True,
                                          "allow_private": allow_private,
                                          **({"proxy_auth_env": AUTH_ENV} if creds else {}), **crawl})
    environ_creds = {AUTH_ENV: creds} if creds else {}
    with pytest.MonkeyPatch.context() as mp:
        for k, v in environ_creds.items():
            mp.setenv(k, v)
        resolver = Resolver(cfg.dns, allow_private=cfg.crawl.allow_private)
        async with Fetcher(cfg.crawl, resolver) as fetcher:
            return await fetcher.fetch(url)


@pytest.mark.parametrize("cls", [ConnectProxy, Socks5Proxy])
async def test_credentials_right_pass_and_wrong_give_proxy_auth(tmp_path, cls):
    graph = SiteGraph(hosts=1, pages_per_host=3, shop=False)
    proxy = cls(resolve=WEB, credentials=(USER, PASSWORD))
    scheme = "http" if cls is ConnectProxy else "socks5h"
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        await nursery.start(proxy.serve)
        url = farm.url("s001.web.test")
        good = await fetch_via(tmp_path, url, f"{scheme}://{proxy.address}", creds=f"{USER}:{PASSWORD}")
        bad = await fetch_via(tmp_path, url, f"{scheme}://{proxy.address}", creds=f"{USER}:wrong")
        none = await fetch_via(tmp_path, url, f"{scheme}://{proxy.address}")
        nursery.cancel_scope.cancel()
    assert good.error is None and good.status == 200
    assert bad.error is ErrorKind.PROXY_AUTH and bad.status is None, bad
    assert none.error is ErrorKind.PROXY_AUTH, none
    assert [e.outcome for e in proxy.log] == ["ok", "auth", "auth"]
    assert len(farm.log) == 1 and farm.log[0].client == "127.0.0.2"
    assert PASSWORD not in bad.detail and "wrong" not in bad.detail


async def test_a_proxy_that_is_down_gives_proxy_rows(tmp_path):
    # A port that was just free: nothing listens on it.
    with trio.socket.socket() as s:
        await s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for scheme in ("http", "socks5h"):
        res = await fetch_via(tmp_path, "http://s001.web.test:8/", f"{scheme}://127.0.0.1:{port}")
        assert res.error is ErrorKind.PROXY, res
        assert "connection refused" in res.detail


async def test_a_connect_answered_502_or_an_unreachable_target_gives_proxy_refused(tmp_path):
    refusing = ConnectProxy(resolve=WEB, refuse=502)
    socks = Socks5Proxy(resolve={})  # resolves nothing: reply 4, host unreachable
    async with trio.open_nursery() as nursery:
        await nursery.start(refusing.serve)
        await nursery.start(socks.serve)
        via_http = await fetch_via(tmp_path, "http://s001.web.test:8/", f"http://{refusing.address}")
        # A name not pinned by [dns] resolve: the proxy is asked for it, and knows none.
        via_socks = await fetch_via(tmp_path, "http://unknown.example:8/", f"socks5h://{socks.address}")
        nursery.cancel_scope.cancel()
    assert via_http.error is ErrorKind.PROXY_REFUSED and "502" in via_http.detail
    assert via_socks.error is ErrorKind.PROXY_REFUSED and "host unreachable" in via_socks.detail
    assert [e.outcome for e in refusing.log] == ["refused"]
    assert [e.outcome for e in socks.log] == ["unreachable"]


@pytest.mark.parametrize("scheme", ["http", "socks5h"])
async def test_a_name_dns_resolve_pins_goes_to_the_proxy_as_its_address_and_its_page_comes(tmp_path, scheme):
    # A proxy that resolves no name never heard of s001.web.test, which [dns] resolve
    # pins to 127.0.0.1: before, every request through it was a 502 or a SOCKS5
    # "host unreachable" (proxy_refused). Now it is asked for the pinned address, and
    # the name still rides inside the tunnel: the web answers s001's page by its Host.
    graph = SiteGraph(hosts=1, pages_per_host=3, shop=False)
    proxy = (ConnectProxy if scheme == "http" else Socks5Proxy)(resolve={})
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        await nursery.start(proxy.serve)
        named = await fetch_via(tmp_path, farm.url("s001.web.test"), f"{scheme}://{proxy.address}")
        closed = await fetch_via(tmp_path, "http://s001.web.test:9/", f"{scheme}://{proxy.address}")
        nursery.cancel_scope.cancel()
    assert named.error is None and named.status == 200, named
    assert [e.target for e in proxy.log][:1] == [f"127.0.0.1:{farm.port}"]
    assert [(e.host, e.client) for e in farm.log] == [("s001.web.test", "127.0.0.2")]
    assert named.address == "127.0.0.1"  # known here: per-IP politeness counts it
    # A pinned address the proxy cannot reach says which address it was given, and why.
    assert closed.error is ErrorKind.PROXY_REFUSED, closed
    assert "s001.web.test:9 (127.0.0.1 by [dns] resolve)" in closed.detail, closed.detail


async def test_socks5_without_h_resolves_here_and_sends_the_address(tmp_path):
    graph = SiteGraph(hosts=1, pages_per_host=3, shop=False)
    proxy = Socks5Proxy()  # resolves no name: only an address can work
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        await nursery.start(proxy.serve)
        res = await fetch_via(tmp_path, farm.url("s001.web.test"), f"socks5://{proxy.address}")
        nursery.cancel_scope.cancel()
    assert res.error is None and res.status == 200
    assert [e.target for e in proxy.log] == [f"127.0.0.1:{farm.port}"]
    assert res.address == "127.0.0.1"  # known here: per-IP politeness sees the target's IP


@pytest.mark.parametrize("scheme", ["http", "socks5h", "socks5"])
async def test_the_guard_refuses_a_private_target_before_the_proxy_hears_of_it(tmp_path, scheme):
    proxy = (ConnectProxy if scheme == "http" else Socks5Proxy)(resolve=WEB)
    async with trio.open_nursery() as nursery:
        await nursery.start(proxy.serve)
        literal = await fetch_via(tmp_path, "http://127.0.0.1:9/", f"{scheme}://{proxy.address}",
                                  allow_private=False)
        static = await fetch_via(tmp_path, "http://s001.web.test:9/", f"{scheme}://{proxy.address}",
                                 allow_private=False)
        refused = list(proxy.log)
        # The control: with the guard off the same target is asked of the proxy.
        await fetch_via(tmp_path, "http://127.0.0.1:9/", f"{scheme}://{proxy.address}", allow_private=True)
        nursery.cancel_scope.cancel()
    assert literal.error is ErrorKind.BLOCKED, literal
    assert static.error is ErrorKind.BLOCKED, static  # [dns] resolve maps it to 127.0.0.1
    assert refused == []
    assert [e.target for e in proxy.log] == ["127.0.0.1:9"]


def test_a_proxy_on_loopback_is_refused_at_start_naming_the_key(tmp_path):
    toml = tmp_path / "cluster.toml"
    toml.write_text('[crawl]\nseeds = ["http://example.com/"]\nproxy = "http://127.0.0.1:3128"\n'
                    '[[peer]]\nid = "p1"\n')
    from peer.commands.cli import main

    res = run_main(main, ["--ring", str(toml)])
    line = error_line(res)
    assert "crawl.proxy" in line and "crawl.proxy_allow_private = true" in line
    assert not (tmp_path / "data").exists()
    # The key lets it through.
    toml.write_text(toml.read_text().replace("[[peer]]", "proxy_allow_private = true\n[[peer]]"))
    assert parse_config(toml.read_text(), toml).crawl.proxy_allow_private


@contextmanager
def proxy_thread(proxy: Any) -> Iterator[Any]:
    """``proxy`` served by a thread of its own (a CLI run in this process owns trio.run)."""
    started: queue.Queue[Any] = queue.Queue()

    async def serve() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(proxy.serve)
            started.put(trio.lowlevel.current_trio_token())

    thread = threading.Thread(target=lambda: trio.run(serve), name="test proxy", daemon=True)
    thread.start()
    token = started.get(timeout=10)
    try:
        yield proxy
    finally:
        token.run_sync_soon(proxy.stop)
        thread.join(10)
        assert not thread.is_alive()


def test_credentials_never_show_in_output_logs_stats_or_check(tmp_path, monkeypatch):
    monkeypatch.setenv(AUTH_ENV, f"{USER}:{PASSWORD}")
    with web_thread(2) as web, proxy_thread(ConnectProxy(resolve=WEB, credentials=(USER, PASSWORD))) as proxy:
        toml = tmp_path / "cluster.toml"
        toml.write_text(f"""
[crawl]
seeds = ["http://s001.web.test:{web.port}/", "http://127.0.0.1:{web.port}/"]
allow_hosts = ["*.web.test", "127.0.0.1"]
allow_private = true
proxy = "http://{proxy.address}"
proxy_auth_env = "{AUTH_ENV}"
proxy_allow_private = true
timeout = 5
[politeness]
rate = 0
[dns]
resolve = {{ "*.web.test" = "127.0.0.1" }}
[[peer]]
id = "p1"
data_dir = "{tmp_path / 'p1'}"
""")
        from peer.commands.cli import main
        from peer.commands.trial import main as try_main

        ran = run_main(main, ["--ring", str(toml), "--log-level", "DEBUG", "--progress", "0.2"])
        tunnels = len(proxy.log)
        checked = run_main(main, ["--ring", str(toml), "--check"])
        asked_by_check = proxy.log[tunnels:]
        tried = run_main(try_main, [f"http://s001.web.test:{web.port}/", "--ring", str(toml)])
        requests = web.requests()
    # --check asks the seed hosts through the proxy, as the crawl does.
    assert [e.target.rpartition(":")[0] for e in asked_by_check] == ["127.0.0.1"] * 2  # s001 pinned there
    assert ran.returncode == 0, ran.stderr
    assert requests and {e.client for e in requests} == {"127.0.0.2"}
    assert {e.user for e in proxy.log} == {USER}
    stats = (tmp_path / "p1" / "stats.json").read_text()
    assert json.loads(stats)
    import base64

    token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    for text in (ran.stdout, ran.stderr, stats, checked.stdout, checked.stderr, tried.stdout, tried.stderr):
        assert PASSWORD not in text and token not in text
    assert f"credentials from ${AUTH_ENV}" in checked.stdout
    assert f"proxy:      http://{proxy.address} (credentials from ${AUTH_ENV})" in tried.stdout
    assert checked.returncode == 0 and tried.returncode == 0, (checked.stderr, tried.stderr)


def test_missing_credentials_are_one_line_at_start(tmp_path, monkeypatch):
    monkeypatch.delenv(AUTH_ENV, raising=False)
    toml = tmp_path / "cluster.toml"
    toml.write_text(f'[crawl]\nseeds = ["http://example.com/"]\nproxy = "socks5h://proxy.example:1080"\n'
                    f'proxy_auth_env = "{AUTH_ENV}"\n[[peer]]\nid = "p1"\n')
    from peer.commands.cli import main

    line = error_line(run_main(main, ["--ring", str(toml)]))
    assert f"${AUTH_ENV}" in line and "not set" in line
    toml.write_text(toml.read_text().replace("socks5h://", f"socks5h://{USER}:{PASSWORD}@"))
    line = error_line(run_main(main, ["--ring", str(toml)]))
    assert PASSWORD not in line and "proxy_auth_env" in line


async def raw_connect_proxy(nursery, answer: list[bytes], upstream_port: int | None = None) -> int:
    """A CONNECT proxy that answers with ``answer``'s parts, a read apart, then tunnels to
    127.0.0.1:``upstream_port`` (if given); its port."""

    async def handle(stream):
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = await stream.receive_some(4096)
                if not chunk:
                    return
                data += chunk
            for part in answer:
                await stream.send_all(part)
                await trio.sleep(0.05)
            if upstream_port is None:
                return
            up = await trio.open_tcp_stream("127.0.0.1", upstream_port)
            async with up, trio.open_nursery() as pipes:
                async def one_way(src, dst):
                    while chunk := await src.receive_some(65536):
                        await dst.send_all(chunk)
                    pipes.cancel_scope.cancel()
                pipes.start_soon(one_way, stream, up)
                pipes.start_soon(one_way, up, stream)
        except (trio.BrokenResourceError, OSError):
            pass
        finally:
            await trio.aclose_forcefully(stream)

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    nursery.start_soon(trio.serve_listeners, handle, listeners)
    return listeners[0].socket.getsockname()[1]


async def test_a_connect_answer_split_over_reads_opens_the_tunnel_and_garbage_is_proxy(tmp_path):
    graph = SiteGraph(hosts=1, pages_per_host=3, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        split = await raw_connect_proxy(nursery, [b"HTTP/1.1 200 Connection", b" established\r\n",
                                                  b"Via: test\r\n", b"\r\n"], farm.port)
        early = await raw_connect_proxy(nursery, [b"HTTP/1.1 200 OK\r\n\r\nHTTP/1.1 200 OK\r\n"], farm.port)
        garbage = await raw_connect_proxy(nursery, [b"SSH-2.0-OpenSSH_9.6\r\n\r\n"])
        silent = await raw_connect_proxy(nursery, [])
        url = farm.url("s001.web.test")
        results = [await fetch_via(tmp_path, url, f"http://127.0.0.1:{port}", timeout=2.0)
                   for port in (split, early, garbage, silent)]
        nursery.cancel_scope.cancel()
    ok, desync, broken, closed = results
    assert ok.error is None and ok.status == 200 and b"<html" in ok.body.lower()
    assert desync.error is ErrorKind.PROXY and "before its client" in desync.detail
    assert broken.error is ErrorKind.PROXY, broken
    assert closed.error is ErrorKind.PROXY, closed
    assert len(farm.log) == 1


async def test_https_goes_end_to_end_through_the_tunnel(tmp_path, pki):
    import ssl

    from test_fetcher import _tls_server

    sni: list = []
    proxy = ConnectProxy(resolve={"tls.web.test": "127.0.0.1"})
    async with trio.open_nursery() as nursery:
        port = await _tls_server(nursery, pki, "tls.web.test", sni)
        await nursery.start(proxy.serve)
        cfg = make_config(tmp_path, 1, crawl=proxy_crawl_keys(f"http://{proxy.address}") | {"proxy_auth_env": ""})
        ctx = ssl.create_default_context(cafile=str(pki / "ca.pem"))
        resolver = Resolver(cfg.dns, allow_private=True)
        async with Fetcher(cfg.crawl, resolver, ssl_context=ctx) as fetcher:
            res = await fetcher.fetch(f"https://tls.web.test:{port}/")
        nursery.cancel_scope.cancel()
    assert (res.status, res.error, res.body) == (200, None, b"secret")
    assert sni == ["tls.web.test"]  # the origin's name, over the tunnel
    assert [e.target for e in proxy.log] == [f"127.0.0.1:{port}"]  # its [dns] resolve address, to the proxy


async def test_keep_alive_reuses_the_tunnel_and_a_direct_block_goes_around_the_proxy(tmp_path):
    graph = SiteGraph(hosts=2, pages_per_host=3, shop=False)
    proxy = ConnectProxy(resolve=WEB)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        await nursery.start(proxy.serve)
        cfg = make_config(tmp_path, farm.port, crawl={"proxy": f"http://{proxy.address}",
                                                      "proxy_allow_private": True},
                          extra='[[site]]\nhosts = ["s002.web.test"]\nproxy = "direct"\n')
        from peer.core.config.sites import SiteSettings

        sites = SiteSettings(cfg.sites, cfg.crawl, cfg.politeness)
        async with Fetcher(cfg.crawl, Resolver(cfg.dns, allow_private=True), sites=sites) as fetcher:
            for host in ("s001.web.test", "s001.web.test", "s002.web.test", "s002.web.test"):
                assert (await fetcher.fetch(farm.url(host))).status == 200
        nursery.cancel_scope.cancel()
    assert [e.target for e in proxy.log] == [f"127.0.0.1:{farm.port}"]  # one tunnel, two requests
    by_host = {(e.host, e.client, e.conn) for e in farm.log}
    assert {(h, c) for h, c, _ in by_host} == {("s001.web.test", "127.0.0.2"), ("s002.web.test", "127.0.0.1")}
    assert len(by_host) == 2  # each host's two requests on one connection


def test_wrong_credentials_end_a_crawl_with_proxy_auth_counted_in_stats_json(tmp_path, monkeypatch):
    from ring.vocabulary import Family

    monkeypatch.setenv(AUTH_ENV, f"{USER}:wrong")
    with web_thread(1) as web, proxy_thread(ConnectProxy(resolve=WEB, credentials=(USER, PASSWORD))) as proxy:
        toml = tmp_path / "cluster.toml"
        toml.write_text(f"""
[crawl]
seeds = ["http://s001.web.test:{web.port}/"]
allow_private = true
proxy = "http://{proxy.address}"
proxy_auth_env = "{AUTH_ENV}"
proxy_allow_private = true
timeout = 5
[dns]
resolve = {{ "*.web.test" = "127.0.0.1" }}
[[peer]]
id = "p1"
data_dir = "{tmp_path / 'p1'}"
""")
        from peer.commands.cli import main

        ran = run_main(main, ["--ring", str(toml), "--progress", "0.2"])
        requests = web.requests()
    assert ran.returncode == 3, ran.stderr  # nothing fetched: said in one line
    assert "the proxy refused the credentials" in ran.stderr
    assert requests == [] and {e.outcome for e in proxy.log} == {"auth"}
    stats = json.loads((tmp_path / "p1" / "stats.json").read_text())
    # The seed's row: its robots.txt was never read, so the seed never requested.
    assert stats[Family.NOT_REQUESTED.value] == {"proxy_auth": 1}, stats
    assert stats["run_config"]["crawl"]["proxy"] == f"http://{proxy.address}"


async def test_a_socks_proxy_that_breaks_the_exchange_or_stays_silent_gives_proxy_rows(tmp_path):
    async def serve(answer: bytes, nursery) -> int:
        async def handle(stream):
            try:
                await stream.receive_some(64)
                if answer:
                    await stream.send_all(answer)
                await trio.sleep(30)  # silent, or waiting for a request that never fits
            except (trio.BrokenResourceError, OSError):
                pass
            finally:
                await trio.aclose_forcefully(stream)

        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        nursery.start_soon(trio.serve_listeners, handle, listeners)
        return listeners[0].socket.getsockname()[1]

    async with trio.open_nursery() as nursery:
        wrong_version = await serve(b"\x04\x00", nursery)
        silent = await serve(b"", nursery)
        results = [await fetch_via(tmp_path, "http://s001.web.test:8/", f"socks5h://127.0.0.1:{port}",
                                   timeout=3.0)
                   for port in (wrong_version, silent)]
        nursery.cancel_scope.cancel()
    broken, quiet = results
    assert broken.error is ErrorKind.PROXY and broken.status is None, broken
    # A silent proxy: its handshake's share of the deadline (timeout / 3, at least 1 s) runs
    # out before the fetch's own (a row "timeout" would hide whose fault it was).
    assert quiet.error is ErrorKind.PROXY and "in time" in quiet.detail, quiet


async def test_credentials_from_a_file_and_an_unreadable_file_is_one_line(tmp_path):
    graph = SiteGraph(hosts=1, pages_per_host=3, shop=False)
    proxy = Socks5Proxy(resolve=WEB, credentials=(USER, PASSWORD))
    (tmp_path / "auth").write_text(f"{USER}:{PASSWORD}\n")
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        await nursery.start(proxy.serve)
        res = await fetch_via(tmp_path, farm.url("s001.web.test"), f"socks5h://{proxy.address}",
                              proxy_auth_file="auth")
        nursery.cancel_scope.cancel()
    assert res.status == 200 and [e.user for e in proxy.log] == [USER]

    toml = tmp_path / "cluster.toml"
    toml.write_text('[crawl]\nseeds = ["http://example.com/"]\nproxy = "socks5h://proxy.example:1080"\n'
                    'proxy_auth_file = "missing"\n[[peer]]\nid = "p1"\n')
    from peer.commands.cli import main

    line = error_line(run_main(main, ["--ring", str(toml)]))
    assert str(tmp_path / "missing") in line and "cannot read the proxy's credentials" in line


def test_the_idle_pool_keeps_a_tunnel_apart_from_a_direct_connection():
    from peer.net.connections import Conn, IdlePool

    class Sock:
        def is_readable(self):
            return False

        def close(self):
            pass

    pool = IdlePool(8)
    tunnel = Conn(None, Sock(), ("http", "a.test", 80, "socks5h://p:1"), None)
    pool.put(tunnel, 0.0)
    assert pool.take(("http", "a.test", 80), 0.0) is None
    assert pool.take(("http", "a.test", 80, "http://q:2"), 0.0) is None
    assert pool.take(("http", "a.test", 80, "socks5h://p:1"), 0.0) is tunnel


def test_a_proxy_down_from_the_start_is_one_warning_and_the_crawl_ends_with_exit_3(tmp_path):
    # Before: robots.txt held for crawl.robots_retry x robots_tries (3 min 30 s by
    # default; 0.2 s doubling here) and a warning a try, then exit 3.
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens on it once closed
    toml = tmp_path / "cluster.toml"
    toml.write_text(f"""
[crawl]
seeds = ["http://s001.web.test:8/", "http://s002.web.test:8/"]
allow_hosts = ["*.web.test"]
allow_private = true
proxy = "http://127.0.0.1:{port}"
proxy_allow_private = true
robots_retry = 0.2
[dns]
resolve = {{ "*.web.test" = "127.0.0.1" }}
[[peer]]
id = "p1"
data_dir = "{tmp_path / 'p1'}"
""")
    from peer.commands.cli import main

    res = run_main(main, ["--ring", str(toml)])
    assert res.returncode == 3, res.stderr
    warnings = [ln for ln in res.stderr.splitlines() if " WARNING " in ln]
    assert len(warnings) == 1, res.stderr
    assert (f"the proxy http://127.0.0.1:{port} (crawl.proxy) cannot be reached and has not answered "
            "in this run (connection refused)") in warnings[0]
    last = res.stderr.splitlines()[-1]  # the first seed's row of the two: either
    assert last.replace("s002", "s001") == ("error: the crawl ended without fetching anything: "
                                            "http://s001.web.test:8/: the proxy (crawl.proxy) cannot be "
                                            "reached or broke its protocol"), last
    assert "  not requested: proxy 2" in res.stdout, res.stdout
