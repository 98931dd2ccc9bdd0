"""The fetcher (peer/net/fetcher.py) against the local test web and small local servers.

What one fetch returns to the core is peer.core.http.result's ``FetchResult``.

Every misbehaving endpoint of bad.web.test has a test showing that the fetch
returns (no exception), with which error kind, and that memory stays
bounded. The crawler reaches *.web.test through the static DNS entry
{"*.web.test": "127.0.0.1"} with allow_private, as the test configs do.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import gzip
import ssl
import subprocess
import time
import re
import tracemalloc
import warnings
import zlib
from collections import Counter

import brotli
import h11
import httpx
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import localweb.sitegraph.endpoints
from peer.core.http.inflate import zstd
from localweb.services.nameserver import LocalDns
from peer.core.config.cluster import CrawlConfig, DnsConfig
from peer.core.page.extract import decode_html
from peer.core.http.result import FetchResult
from peer.net.fetcher import MAX_LOCATION, RETRY_AFTER_MAX, Fetcher, error_kind
from peer.net.resolver import Resolver
from localweb import SiteGraph, serve_webfarm

MiB = 1024 * 1024
STATIC = {"*.web.test": "127.0.0.1"}
UA = "ringcrawl-test/1.0"


@pytest.fixture(scope="module")
def graph() -> SiteGraph:
    return SiteGraph(hosts=2, pages_per_host=10, shop=False)


@pytest.fixture
async def farm(graph, nursery):
    return await nursery.start(functools.partial(serve_webfarm, graph))


@functools.cache
def default_ssl_context() -> ssl.SSLContext:
    """The context a Fetcher makes when given none (httpx's, certifi's CAs), made once.

    Loading the CA bundle is about 50 of the 58 ms of CPU a Fetcher takes to
    start; the tests here use plain HTTP or pass their own context. The
    engine's crawls (tests/e2e/test_engine.py) start Fetchers without one.
    """
    return httpx.create_ssl_context()


@contextlib.asynccontextmanager
async def fetcher(*, allow_private=True, dns=None, resolver=None, shards=None, ssl_context=None,
                  **crawl):
    crawl.setdefault("user_agent", UA)
    crawl.setdefault("timeout", 5.0)
    if ssl_context is None:
        ssl_context = default_ssl_context()
    if resolver is None:
        resolver = Resolver(dns or DnsConfig(resolve=STATIC), allow_private=allow_private)
    async with Fetcher(CrawlConfig(**crawl), resolver, shards=shards, ssl_context=ssl_context) as f:
        yield f


def bad(farm, path: str) -> str:
    return f"http://bad.web.test:{farm.port}{path}"


# -- ordinary pages ------------------------------------------------------------


async def test_fetches_a_page(farm, graph):
    url = f"http://s001.web.test:{farm.port}/c0/p1.html"
    async with fetcher() as f:
        r = await f.fetch(url)
    page = graph.render("s001.web.test", "/c0/p1.html", farm.port)
    assert r.url == url
    assert (r.status, r.error, r.truncated) == (200, None, False)
    assert (r.content_type, r.charset) == ("text/html", "utf-8")
    assert r.body == page.body
    assert r.raw_bytes == len(page.body)
    assert r.address == "127.0.0.1"
    assert r.location is None and r.retry_after is None
    assert r.elapsed > 0
    assert [(e.host, e.target) for e in farm.log] == [("s001.web.test", "/c0/p1.html")]


async def test_keep_alive_reuses_one_connection(farm):
    async with fetcher() as f:
        for n in range(1, 6):
            r = await f.fetch(f"http://s001.web.test:{farm.port}/c0/p{n}.html")
            assert r.status == 200
    assert farm.stats.requests == 5
    assert farm.stats.connections == 1


async def test_addresses_are_tried_in_order(farm):
    # The farm listens on 127.0.0.1 only, so 127.0.0.2 refuses and the next is tried.
    dns = DnsConfig(resolve={"multi.web.test": ["127.0.0.2", "127.0.0.1"]})
    async with fetcher(dns=dns) as f:
        r = await f.fetch(f"http://multi.web.test:{farm.port}/")
    assert (r.status, r.error, r.address) == (404, None, "127.0.0.1")  # the farm knows no such host
    assert [e.host for e in farm.log] == ["multi.web.test"]


async def test_redirect_is_returned_not_followed(farm):
    async with fetcher() as f:
        r = await f.fetch(bad(farm, "/redirect-loop"))
    assert (r.status, r.location, r.error) == (302, "/redirect-loop/b", None)
    assert [e.target for e in farm.log] == ["/redirect-loop"]


async def test_404_is_a_response_not_an_error(farm):
    async with fetcher() as f:
        r = await f.fetch(f"http://s001.web.test:{farm.port}/c0/gone0.html")
    assert (r.status, r.error) == (404, None)


async def test_status_503_with_retry_after(farm):
    async with fetcher() as f:
        r = await f.fetch(bad(farm, "/status/503?retry_after=7"))
    assert (r.status, r.retry_after, r.error) == (503, 7.0, None)


async def test_accept_html_only_skips_other_bodies_and_keeps_the_connection(farm):
    async with fetcher() as f:
        pdf = await f.fetch(f"http://s001.web.test:{farm.port}/files/doc0.pdf", accept_html_only=True)
        page = await f.fetch(f"http://s001.web.test:{farm.port}/", accept_html_only=True)
    assert (pdf.status, pdf.content_type, pdf.body, pdf.error) == (200, "application/pdf", b"", None)
    assert pdf.raw_bytes > 0  # small: read and dropped, so the connection lives on
    assert page.body.startswith(b"<!DOCTYPE html>")
    assert farm.stats.connections == 1


# -- misbehaving endpoints -----------------------------------------------------


async def test_gzip_bomb_is_cut_at_max_body_in_bounded_memory(farm):
    async with fetcher(max_body=2 * MiB) as f:
        tracemalloc.start()
        try:
            r = await f.fetch(bad(farm, "/gzip-bomb"))  # 1 GiB of zeros, ~1 MB gzipped
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert (r.status, r.error, r.truncated) == (200, "too_large", True)
    assert r.body == bytes(2 * MiB)
    assert r.raw_bytes < 2 * MiB
    assert peak < 100 * MiB, f"peak {peak / MiB:.1f} MiB"


async def test_content_length_over_max_body_is_refused_unread(farm):
    async with fetcher(max_body=2 * MiB) as f:
        r = await f.fetch(bad(farm, "/big-cl"))  # Content-Length: 50 MiB
    assert (r.status, r.error, r.truncated) == (200, "too_large", False)
    assert (r.body, r.raw_bytes) == (b"", 0)
    for _ in range(100):  # a streamed answer is logged when the server notices we left
        if farm.log:
            break
        await trio.sleep(0.01)
    assert farm.log[0].bytes < 2 * MiB  # the server was cut off early too


async def test_chunked_body_stops_at_max_body(farm):
    async with fetcher(max_body=2 * MiB) as f:
        tracemalloc.start()
        try:
            r = await f.fetch(bad(farm, "/big-chunked"))  # 50 MiB, no Content-Length
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert (r.status, r.error, r.truncated) == (200, "too_large", True)
    assert len(r.body) == 2 * MiB
    assert r.body.startswith(b"<p>xxx")
    assert 2 * MiB < r.raw_bytes <= 2 * MiB + 64 * 1024
    assert peak < 20 * MiB


async def test_drip_ends_at_the_total_deadline(farm):
    async with fetcher(timeout=1.0) as f:
        start = time.monotonic()
        r = await f.fetch(bad(farm, "/drip"))  # one byte every 0.3 s, 400 of them
        wall = time.monotonic() - start
    assert (r.status, r.error) == (200, "timeout")
    assert 1 <= r.raw_bytes <= 5
    assert 1.0 <= r.elapsed < 3.0
    assert wall < 3.0


async def test_malformed_and_latin1_bodies_are_returned_as_is(farm):
    async with fetcher() as f:
        broken = await f.fetch(bad(farm, "/malformed"))
        latin = await f.fetch(bad(farm, "/latin1"))
    assert (broken.status, broken.error, broken.charset) == (200, None, None)
    assert broken.body == localweb.sitegraph.endpoints.MALFORMED
    assert (latin.status, latin.error, latin.charset) == (200, None, "iso-8859-1")
    assert latin.body.decode(latin.charset) == localweb.sitegraph.endpoints.LATIN1.decode("latin-1")


async def test_reset_connection_is_error_reset(farm):
    # The server answers with a TCP RST before any response byte (SO_LINGER 0):
    # httpcore reads ECONNRESET, a ReadError.
    async with fetcher() as f:
        r = await f.fetch(bad(farm, "/reset"))
    assert (r.status, r.error, r.body) == (None, "reset", b"")


async def test_huge_header_is_error_protocol(farm):
    # 200 KiB in one header: h11 gives up at httpcore's 100 KiB ("Receive buffer too long").
    async with fetcher() as f:
        r = await f.fetch(bad(farm, "/huge-header"))
    assert (r.status, r.error) == (None, "protocol")


async def test_connection_refused_is_error_connect():
    with trio.socket.socket() as sock:
        await sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: refused
        async with fetcher() as f:
            r = await f.fetch(f"http://s001.web.test:{port}/")
    assert (r.status, r.error, r.address) == (None, "connect", None)
    assert r.detail == "connection refused"  # the OS's words, for the log line that names the port


async def settle() -> None:
    # Let the GC and trio's generator finalizers run: each level of a nested
    # generator is closed in a system task of its own, one after the other.
    gc.collect()
    for _ in range(10):
        await trio.sleep(0.005)
    gc.collect()


async def test_early_stops_leave_no_async_generator_to_the_gc(farm):
    # Under filterwarnings=error a GC'd generator fails the test (trio's
    # ResourceWarning, raised from the finalizer, reaches pytest as an
    # unraisable exception); the record below makes the check explicit.
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        async with fetcher(max_body=256 * 1024) as f:
            for _ in range(3):
                for path in ("/big-chunked", "/gzip-bomb?mb=64"):
                    r = await f.fetch(bad(farm, path))
                    assert (r.error, r.truncated) == ("too_large", True)
        await settle()
    assert [str(w.message) for w in seen] == []


async def test_the_trap_is_real_for_a_plain_break(farm):
    # The control for the test above: httpx's own streaming API, left with a
    # break, does leave generators to the GC, and trio warns.
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        async with httpx.AsyncClient() as client:
            url = f"http://127.0.0.1:{farm.port}/big-chunked"
            async with client.stream("GET", url, headers={"host": "bad.web.test"}) as response:
                async for _ in response.aiter_raw():
                    break
        await settle()
    assert any("garbage collected before it had been exhausted" in str(w.message) for w in seen)


async def test_cancellation_from_outside_propagates(farm):
    async with fetcher(timeout=10.0) as f:
        with trio.move_on_after(0.3) as scope:
            await f.fetch(bad(farm, "/drip"))
            pytest.fail("fetch returned after its caller was cancelled")  # pragma: no cover
    assert scope.cancelled_caught


async def test_stats_count_requests_bytes_and_errors(farm):
    async with fetcher(max_body=MiB) as f:
        await f.fetch(f"http://s001.web.test:{farm.port}/")
        await f.fetch(bad(farm, "/reset"))
        await f.fetch(bad(farm, "/big-chunked"))
        stats = f.stats()
    assert stats["requests"] == 3
    assert stats["truncated"] == 1
    assert stats["errors"] == {"reset": 1, "too_large": 1}
    assert stats["bytes"] > MiB
    assert stats["malformed"] == {}  # the test web's pages are well-formed


# -- the SSRF guard ------------------------------------------------------------


async def test_guard_blocks_a_name_resolving_to_loopback_without_connecting(farm):
    async with fetcher(allow_private=False) as f:
        r = await f.fetch(f"http://s001.web.test:{farm.port}/")
    assert (r.status, r.error, r.address) == (None, "blocked", None)
    assert farm.log == []
    assert farm.stats.connections == 0


async def test_guard_blocks_a_literal_loopback_url_without_connecting(farm):
    async with fetcher(allow_private=False) as f:
        r4 = await f.fetch(f"http://127.0.0.1:{farm.port}/")
        r6 = await f.fetch(f"http://[::ffff:127.0.0.1]:{farm.port}/")
    assert (r4.error, r6.error) == ("blocked", "blocked")
    assert farm.stats.connections == 0


# -- DNS through the cache -----------------------------------------------------


async def _fetch_concurrently(f: Fetcher, urls: list[str]) -> list:
    results = []

    async def one(url):
        results.append(await f.fetch(url))

    async with trio.open_nursery() as nursery:
        for url in urls:
            nursery.start_soon(one, url)
    return results


@pytest.mark.parametrize("cache", [True, False])
async def test_dns_queries_per_connection(farm, nursery, cache):
    server = await nursery.start(LocalDns(ttl=300, delay=0.05).serve)
    resolver = Resolver(DnsConfig(nameservers=(server.nameserver,)), allow_private=True, cache=cache)
    urls = [f"http://s00{1 + i % 2}.web.test:{farm.port}/c0/p{1 + i}.html" for i in range(8)]
    async with fetcher(resolver=resolver) as f:
        results = await _fetch_concurrently(f, urls)  # 4 at once per host: 8 connections
        results += await _fetch_concurrently(f, urls)  # reuses them
    assert [r.error for r in results] == [None] * 16
    connections = farm.stats.connections
    assert connections >= 4
    # A lookup asks two questions, A and AAAA (RFC 8305 §3).
    if cache:
        assert server.queries == {"s001.web.test": 2, "s002.web.test": 2}
    else:
        assert server.total == 2 * connections  # one lookup per connection, none per request
    assert resolver.queries == server.total


async def test_dns_failure_is_error_dns(nursery):
    server = await nursery.start(LocalDns().serve)
    async with fetcher(dns=DnsConfig(nameservers=(server.nameserver,))) as f:
        r1 = await f.fetch("http://nosuch.invalid/")
        r2 = await f.fetch("http://nosuch.invalid/other")
    assert (r1.status, r1.error) == (None, "dns")
    assert r2.error == "dns"
    assert server.queries == {"nosuch.invalid": 2}  # A and AAAA once: negatively cached


# -- sharding ------------------------------------------------------------------


async def test_one_client_per_eight_connections_of_concurrency(farm):
    async with fetcher(concurrency=64) as f:
        assert f.shards == 8
    async with fetcher(concurrency=64, shards=1) as f:
        assert f.shards == 1
        assert (await f.fetch(f"http://s001.web.test:{farm.port}/")).status == 200
    async with fetcher(concurrency=1) as f:
        assert f.shards == 1


async def test_a_host_keeps_its_shard(farm):
    async with fetcher(concurrency=64) as f:
        for n in range(1, 9):
            for host in ("s001", "s002"):
                assert (await f.fetch(f"http://{host}.web.test:{farm.port}/c0/p{n}.html")).error is None
    assert farm.stats.connections == 2  # one pool per host, so its connection is reused


# -- what we send, and content codings, against a small scripted server -------


class ScriptedServer:
    """One h11 response per connection from ``routes``; records each request's headers."""

    def __init__(self, routes: dict[str, tuple[int, list[tuple[bytes, bytes]], bytes]]) -> None:
        self.routes = routes
        self.requests: list[dict[bytes, bytes]] = []
        self.port = 0

    async def serve(self, *, task_status=trio.TASK_STATUS_IGNORED):
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started(self)
        await trio.serve_listeners(self._handle, listeners)

    async def _handle(self, stream):
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await stream.receive_some(65536))
                    continue
                break
            self.requests.append(dict(event.headers))
            status, headers, body = self.routes[event.target.decode()]
            headers = [*headers, (b"content-length", str(len(body)).encode()), (b"connection", b"close")]
            await stream.send_all(conn.send(h11.Response(status_code=status, headers=headers))
                                  + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage()))
        except (trio.BrokenResourceError, h11.ProtocolError):
            pass
        finally:
            await trio.aclose_forcefully(stream)


HTML = b"<!DOCTYPE html><title>t</title>" + b"<p>hello</p>" * 500


@pytest.fixture
async def scripted(nursery):
    routes = {
        "/plain": (200, [(b"content-type", b"text/html")], HTML),
        "/cookie": (200, [(b"set-cookie", b"session=abc; Path=/")], b"ok"),
        "/gzip": (200, [(b"content-encoding", b"gzip")], gzip.compress(HTML)),
        "/deflate": (200, [(b"content-encoding", b"deflate")], zlib.compress(HTML)),
        "/br": (200, [(b"content-encoding", b"br")], brotli.compress(HTML)),
        "/zstd": (200, [(b"content-encoding", b"zstd")], zstd.compress(HTML)),
        "/br-corrupt": (200, [(b"content-encoding", b"br")], brotli.compress(HTML)[:30] + b"\xff" * 100),
        "/corrupt": (200, [(b"content-encoding", b"gzip")],
                     gzip.compress(HTML)[:20] + b"\x00garbage" * 100),
        "/exact": (200, [], b"x" * 1000),
        "/gzip-exact": (200, [(b"content-encoding", b"gzip")], gzip.compress(b"y" * 1000)),
        "/gzip-over": (200, [(b"content-encoding", b"gzip")], gzip.compress(b"y" * 1001)),
    }
    raw = zlib.compressobj(6, zlib.DEFLATED, -15)  # no zlib header: what some servers send
    routes["/raw-deflate"] = (200, [(b"content-encoding", b"deflate")], raw.compress(HTML) + raw.flush())
    return await nursery.start(ScriptedServer(routes).serve)


async def test_request_headers_and_no_cookies(scripted):
    async with fetcher() as f:
        await f.fetch(f"http://s001.web.test:{scripted.port}/cookie")
        await f.fetch(f"http://s001.web.test:{scripted.port}/plain")
    first, second = scripted.requests
    assert first[b"user-agent"] == UA.encode()
    assert first[b"accept-encoding"] == b"gzip, deflate, br, zstd"
    assert first[b"host"] == f"s001.web.test:{scripted.port}".encode()
    assert b"cookie" not in second  # a crawler keeps no cookies


@pytest.mark.parametrize("path", ["/gzip", "/deflate", "/raw-deflate", "/br", "/zstd"])
async def test_compressed_bodies_are_decoded(scripted, path):
    async with fetcher() as f:
        r = await f.fetch(f"http://s001.web.test:{scripted.port}{path}")
    assert (r.status, r.error, r.truncated) == (200, None, False)
    assert r.body == HTML
    assert r.raw_bytes < len(HTML) // 4


@pytest.mark.parametrize(("path", "body"), [("/br-corrupt", None), ("/corrupt", None)])
async def test_undecodable_bodies_are_error_decode(scripted, path, body):
    async with fetcher() as f:
        r = await f.fetch(f"http://s001.web.test:{scripted.port}{path}")
    assert (r.status, r.error) == (200, "decode")
    if body is not None:
        assert r.body == body


@pytest.mark.parametrize(("encodings", "sent"), [
    (("zstd", "gzip"), b"gzip, zstd"), (("br",), b"br"), ((), b"identity")])
async def test_accept_encodings_narrows_what_is_asked_for(scripted, encodings, sent):
    async with fetcher(accept_encodings=encodings) as f:
        r = await f.fetch(f"http://s001.web.test:{scripted.port}/br")
    assert scripted.requests[0][b"accept-encoding"] == sent
    assert (r.error, r.body) == (None, HTML)  # what is sent anyway is still decoded


async def test_stacked_codings_are_decoded_last_first(nursery):
    # RFC 9110 §8.4: "br, gzip" is br applied first, then gzip.
    server = await raw_server(nursery, {"/s": reply(
        b"200 OK", [(b"Content-Encoding", b"br, gzip")], gzip.compress(brotli.compress(GOOD)))})
    r, good, stats = await fetch_then_good(server, "/s")
    assert (r.error, r.body, stats["malformed"]) == (None, GOOD, {})
    assert_good(good)


@pytest.mark.parametrize("coding", ["gzip", "br", "zstd"])
async def test_a_bomb_of_each_coding_is_cut_at_max_body_in_bounded_memory(nursery, coding):
    data = _bomb(coding)  # 256 MiB of zeros; a few KiB to 256 KiB on the wire
    server = await raw_server(nursery, {"/b": reply(b"200 OK", [(b"Content-Encoding", coding.encode())], data)})
    async with fetcher(max_body=MiB) as f:
        tracemalloc.start()
        try:
            r = await f.fetch(server.url("/b"))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert (r.status, r.error, r.truncated) == (200, "too_large", True)
    assert r.body == bytes(MiB)
    assert r.raw_bytes <= min(len(data), 128 * 1024)  # a read or two, not the bomb
    assert peak < 8 * MiB, f"peak {peak / MiB:.1f} MiB"


async def test_a_zstd_window_over_zstd_max_window_is_decode(nursery):
    c = zstd.ZstdCompressor(options={zstd.CompressionParameter.window_log: 24})  # 16 MiB
    server = await raw_server(nursery, {"/z": reply(
        b"200 OK", [(b"Content-Encoding", b"zstd")], c.compress(GOOD) + c.flush())})
    r, good, _ = await fetch_then_good(server, "/z")
    assert (r.status, r.error, r.body) == (200, "decode", b"")
    assert "zstd frame's window is over 8,388,608 bytes (crawl.zstd_max_window)" in r.detail
    assert_good(good)
    r, _, _ = await fetch_then_good(server, "/z", zstd_max_window=16 * MiB)
    assert (r.error, r.body) == (None, GOOD)


@functools.cache
def _bomb(coding: str) -> bytes:
    from tests.core.test_inflate import bomb
    return bomb(coding, 256 * MiB)


@pytest.mark.parametrize(("path", "size", "truncated"), [
    ("/exact", 1000, False), ("/gzip-exact", 1000, False), ("/gzip-over", 1000, True)])
async def test_max_body_boundary(scripted, path, size, truncated):
    async with fetcher(max_body=1000) as f:
        r = await f.fetch(f"http://s001.web.test:{scripted.port}{path}")
    assert (len(r.body), r.truncated) == (size, truncated)
    assert r.error == ("too_large" if truncated else None)


# -- TLS: SNI and the certificate check see the host name -----------------------


def _openssl(*args: str, cwd) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A test CA and two server certificates it signed: tls.web.test and other.web.test."""
    d = tmp_path_factory.mktemp("pki")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=ringcrawl test CA", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)
    for name in ("tls.web.test", "other.web.test"):
        (d / f"{name}.cnf").write_text(
            f"subjectAltName=DNS:{name}\nbasicConstraints=critical,CA:FALSE\n"
            "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
            "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n")
        _openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=d)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.cnf", cwd=d)
    return d


async def _tls_server(nursery, pki, cert_name: str, sni_seen: list):
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(pki / f"{cert_name}.pem", pki / f"{cert_name}.key")
    ctx.sni_callback = lambda sock, name, _ctx: sni_seen.append(name)

    async def handle(stream):
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    return
                data += chunk
            await stream.send_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                                  b"Content-Length: 6\r\nConnection: close\r\n\r\nsecret")
        except trio.BrokenResourceError:
            pass  # the client refused our certificate
        finally:
            await trio.aclose_forcefully(stream)

    listeners = await trio.open_ssl_over_tcp_listeners(0, ctx, host="127.0.0.1")
    nursery.start_soon(trio.serve_listeners, handle, listeners)
    return listeners[0].transport_listener.socket.getsockname()[1]


async def test_tls_checks_the_host_name_not_the_ip(nursery, pki):
    sni: list = []
    port = await _tls_server(nursery, pki, "tls.web.test", sni)
    client_ctx = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    async with fetcher(ssl_context=client_ctx) as f:
        r = await f.fetch(f"https://tls.web.test:{port}/")
    assert (r.status, r.error, r.body, r.address) == (200, None, b"secret", "127.0.0.1")
    assert sni == ["tls.web.test"]


async def test_tls_certificate_for_another_name_is_error_tls_hostname(nursery, pki):
    sni: list = []
    port = await _tls_server(nursery, pki, "other.web.test", sni)
    client_ctx = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    async with fetcher(ssl_context=client_ctx) as f:
        r = await f.fetch(f"https://tls.web.test:{port}/")
    assert (r.status, r.error, r.body) == (None, "tls_hostname", b"")
    assert sni == ["tls.web.test"]


async def test_tls_untrusted_ca_is_error_tls_untrusted(nursery, pki):
    port = await _tls_server(nursery, pki, "tls.web.test", [])
    async with fetcher() as f:  # the default trust store does not know our CA
        r = await f.fetch(f"https://tls.web.test:{port}/")
    assert r.error == "tls_untrusted"


# -- errors named by kind (peer/net/errorkinds.py; the head's helpers: tests/core/test_head.py) --


@pytest.mark.parametrize(("exc", "kind"), [
    (httpx.ConnectError("refused"), "connect"),
    (httpx.ConnectTimeout("slow"), "connect"),
    (httpx.ReadTimeout("slow"), "timeout"),
    (httpx.ReadError("reset"), "reset"),
    (httpx.RemoteProtocolError("Server disconnected without sending a response."), "reset"),
    (httpx.RemoteProtocolError("peer closed connection without sending complete message body"), "reset"),
    (httpx.RemoteProtocolError("Receive buffer too long"), "protocol"),
    (httpx.LocalProtocolError("bad header"), "protocol"),
    (httpx.UnsupportedProtocol("ftp"), "scope"),
    (zlib.error("bad"), "decode"),
    (ConnectionRefusedError(111, "refused"), "connect"),
    (ValueError("a bug"), None),
])
def test_error_kind(exc, kind):
    assert error_kind(exc) == kind


def test_error_kind_finds_tls_in_the_cause_chain():
    try:
        try:
            raise ssl.SSLCertVerificationError(1, "certificate verify failed")
        except ssl.SSLError as inner:
            raise httpx.ConnectError("handshake") from inner
    except httpx.ConnectError as exc:
        assert error_kind(exc) == "tls"


# -- a hostile server: any bytes, verbatim ------------------------------------

GOOD = b"<!DOCTYPE html><title>good</title><p>the right page</p>"
GOOD_REPLY = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: "
              + str(len(GOOD)).encode() + b"\r\n\r\n" + GOOD)
EVIL = b"<!DOCTYPE html><title>evil</title><a href='/planted'>planted</a>"
# Looks like a whole second response: what a desynced client reads as the next one.
EVIL_REPLY = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: "
              + str(len(EVIL)).encode() + b"\r\n\r\n" + EVIL)


def assemble(line: bytes, headers: list[tuple[bytes, bytes]], body: bytes, *, length: bool) -> bytes:
    """Response bytes exactly as given; a right Content-Length is added if ``length``."""
    if length:
        headers = [*headers, (b"Content-Length", str(len(body)).encode())]
    return line + b"\r\n" + b"".join(k + b": " + v + b"\r\n" for k, v in headers) + b"\r\n" + body


def reply(status: bytes, headers: list[tuple[bytes, bytes]], body: bytes = b"", *,
          length: bool = True) -> bytes:
    return assemble(b"HTTP/1.1 " + status, headers, body, length=length)


class RawServer:
    """Sends ``routes[target]`` verbatim for each request; keeps the connection unless told.

    ``late[target] = data``: sent on the idle connection after the reply, and
    then ``late_sent`` is set. ``log`` holds (connection number, target) per request.
    """

    def __init__(self, routes: dict[str, bytes], *, close: frozenset[str] = frozenset(),
                 late: dict[str, bytes] | None = None) -> None:
        self.routes = {"/good": GOOD_REPLY, **routes}
        self.close = close
        self.late = late or {}
        self.late_sent = trio.Event()
        self.log: list[tuple[int, str]] = []
        self.connections = 0
        self.port = 0

    async def serve(self, *, task_status=trio.TASK_STATUS_IGNORED):
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started(self)
        await trio.serve_listeners(self._handle, listeners)

    def url(self, target: str, host: str = "s001.web.test") -> str:
        return f"http://{host}:{self.port}{target}"

    async def _handle(self, stream):
        self.connections += 1
        number = self.connections
        buf = b""
        try:
            for _ in range(100):  # requests a connection may carry, bounded
                while b"\r\n\r\n" not in buf:
                    data = await stream.receive_some(65536)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                target = head.split(b" ", 2)[1].decode()
                self.log.append((number, target))
                await stream.send_all(self.routes.get(target, b"HTTP/1.1 404 Not Found\r\n"
                                                      b"Content-Length: 0\r\n\r\n"))
                if target in self.late:
                    await trio.sleep(0.05)
                    await stream.send_all(self.late[target])
                    self.late_sent.set()
                if target in self.close:
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            await trio.aclose_forcefully(stream)

    def targets(self) -> list[str]:
        return [target for _, target in self.log]


async def raw_server(nursery, routes, **kw) -> RawServer:
    return await nursery.start(RawServer(routes, **kw).serve)


async def fetch_then_good(server: RawServer, target: str, **crawl):
    """Fetch ``target``, then /good of the same host on the same fetcher: (result, good, stats)."""
    async with fetcher(**crawl) as f:
        r = await f.fetch(server.url(target))
        good = await f.fetch(server.url("/good"))
        return r, good, f.stats()


def assert_good(good) -> None:
    assert (good.status, good.error, good.body) == (200, None, GOOD)


# -- every malformed header is data -------------------------------------------

NOW_9999 = b"Fri, 31 Dec 9999 23:59:59 GMT"


@pytest.mark.parametrize(("status", "value", "retry_after"), [
    (b"503 Busy", "²".encode(), None),
    (b"503 Busy", b"9" * 400, RETRY_AFTER_MAX),
    (b"429 Slow", b"1" * 5000, RETRY_AFTER_MAX),  # over int()'s 4300-digit limit
    (b"503 Busy", NOW_9999, RETRY_AFTER_MAX),
    (b"503 Busy", b"-5", None),
    (b"503 Busy", b"1.5", None),
    (b"503 Busy", b"Fri, 31 Dec 99999 23:59:59 GMT", None),
    (b"200 OK", "²".encode(), None),  # on any status
])
async def test_malformed_retry_after_is_ignored_or_clamped(nursery, status, value, retry_after):
    server = await raw_server(nursery, {"/r": reply(status, [(b"Retry-After", value)], b"busy")})
    r, good, stats = await fetch_then_good(server, "/r")
    assert (r.status, r.error, r.retry_after) == (int(status[:3]), None, retry_after)
    assert r.malformed == ("retry_after",)
    assert stats["malformed"] == {"retry_after": 1}
    assert_good(good)


async def test_a_unicode_digit_retry_after_on_robots_txt_does_not_kill_the_fetch(nursery):
    body = b"User-agent: *\nDisallow: /private\n"
    server = await raw_server(nursery, {"/robots.txt": reply(
        b"200 OK", [(b"Content-Type", b"text/plain"), (b"Retry-After", "²".encode())], body)})
    r, good, _ = await fetch_then_good(server, "/robots.txt")
    assert (r.status, r.error, r.body, r.retry_after) == (200, None, body, None)
    assert_good(good)


@pytest.mark.parametrize("headers", [
    [(b"Content-Length", b"5"), (b"Content-Length", b"6")],
    [(b"Content-Length", b"-1")],
    [(b"Content-Length", "²".encode())],
    [(b"Content-Length", b"five")],
    [(b"Content-Length", b"9" * 30)],
])
async def test_content_length_h11_refuses_is_error_protocol(nursery, headers):
    server = await raw_server(nursery, {"/cl": reply(b"200 OK", headers, b"hello", length=False)})
    r, good, stats = await fetch_then_good(server, "/cl")
    assert (r.status, r.error, r.body) == (None, "protocol", b"")
    assert stats["errors"] == {"protocol": 1}
    assert_good(good)


async def test_content_length_with_transfer_encoding_is_ignored_and_counted(nursery):
    chunked = b"5\r\nhello\r\n0\r\n\r\n"
    server = await raw_server(nursery, {"/te": reply(
        b"200 OK", [(b"Content-Length", b"999999999"), (b"Transfer-Encoding", b"chunked")],
        chunked, length=False)})
    r, good, stats = await fetch_then_good(server, "/te", max_body=1000)
    assert (r.status, r.error, r.body) == (200, None, b"hello")  # not too_large: the length is ignored
    assert stats["malformed"] == {"content_length": 1}
    assert_good(good)


@pytest.mark.parametrize(("status", "length"), [(b"304 Not Modified", b"50000000"),
                                                (b"204 No Content", b"50000000")])
async def test_content_length_of_a_bodyless_status_is_no_reason_to_refuse(nursery, status, length):
    server = await raw_server(nursery, {"/n": reply(status, [(b"Content-Length", length)], length=False)})
    r, good, _ = await fetch_then_good(server, "/n", max_body=1000)
    assert (r.status, r.error, r.body) == (int(status[:3]), None, b"")
    assert_good(good)


@pytest.mark.parametrize(("value", "content_type", "charset", "reasons"), [
    (b"text/html garbage; charset=utf-8", "", "utf-8", ("content_type",)),
    (b"x" * 50_000, "", None, ("content_type",)),
    (b"text/html; " + b"; " * 20_000 + b"charset=utf-8", "text/html", "utf-8", ()),
    (b"text/html; charset=utf-8<script>", "text/html", None, ("charset",)),
    (b"text/html; charset=" + b"u" * 41, "text/html", None, ("charset",)),
    (b"text/html; charset=", "text/html", None, ("charset",)),
    (b"text/html; charset=\xff\xfe", "text/html", None, ("charset",)),
    # Well-formed but unknown to Python: kept, peer.core.page.extract decides (and copes).
    (b"text/html; charset=klingon", "text/html", "klingon", ()),
    (b"text/html; charset=x-user-defined", "text/html", "x-user-defined", ()),
    (b"text/html; charset=base64", "text/html", "base64", ()),
])
async def test_malformed_content_type_and_charset(nursery, value, content_type, charset, reasons):
    server = await raw_server(nursery, {"/ct": reply(b"200 OK", [(b"Content-Type", value)], GOOD)})
    r, good, stats = await fetch_then_good(server, "/ct")
    assert (r.status, r.error, r.body) == (200, None, GOOD)
    assert (r.content_type, r.charset, r.malformed) == (content_type, charset, reasons)
    assert stats["malformed"] == dict(Counter(reasons))
    assert "the right page" in decode_html(r.body, r.charset)
    assert_good(good)


async def test_several_content_types_the_last_wins(nursery):
    server = await raw_server(nursery, {"/ct": reply(
        b"200 OK", [(b"Content-Type", b"application/pdf"), (b"Content-Type", b"text/html")], GOOD)})
    r, _, stats = await fetch_then_good(server, "/ct")
    assert (r.content_type, r.malformed) == ("text/html", ("content_type",))


@pytest.mark.parametrize(("headers", "location", "reasons"), [
    ([(b"Location", b"/next")], "/next", ()),
    ([(b"Location", "/café".encode())], "/café", ()),  # an IRI: kept, the URL parser encodes it
    ([(b"Location", b"/a\x01b")], None, ("location",)),  # h11 lets C0 bytes through
    ([(b"Location", b"/a\tb")], None, ("location",)),
    ([(b"Location", b"/a\x7fb")], None, ("location",)),
    ([(b"Location", b"/" + b"a" * MAX_LOCATION)], None, ("location",)),
    ([(b"Location", b"")], None, ("location",)),
    ([(b"Location", b"/one"), (b"Location", b"/two")], None, ("location",)),
    ([(b"Location", b"/one"), (b"Location", b"/one")], "/one", ()),
])
async def test_malformed_location_is_dropped(nursery, headers, location, reasons):
    server = await raw_server(nursery, {"/l": reply(b"302 Found", headers)})
    r, good, stats = await fetch_then_good(server, "/l")
    assert (r.status, r.error, r.location, r.malformed) == (302, None, location, reasons)
    assert stats["malformed"] == dict(Counter(reasons))
    assert_good(good)


async def test_a_huge_latin1_location_is_dropped(nursery):
    # Not UTF-8: httpx decodes the whole head as Latin-1.
    server = await raw_server(nursery, {"/l": reply(b"301 Moved", [(b"Location", b"/\xe9" * 20_000)])})
    r, good, _ = await fetch_then_good(server, "/l")
    assert (r.status, r.error, r.location, r.malformed) == (301, None, None, ("location",))
    assert_good(good)


@pytest.mark.parametrize("value", [b"gzip, gzip, gzip, gzip", b"x-garbage", b"gzip," * 10_000,
                                   b"br, compress", "gzïp".encode()])
async def test_malformed_content_encoding_is_error_decode(nursery, value):
    server = await raw_server(nursery, {"/ce": reply(
        b"200 OK", [(b"Content-Encoding", value)], gzip.compress(gzip.compress(GOOD)))})
    r, good, stats = await fetch_then_good(server, "/ce")
    assert (r.status, r.error) == (200, "decode")
    assert stats["malformed"] == {"content_encoding": 1}
    assert_good(good)


async def test_identity_codings_are_no_coding(nursery):
    server = await raw_server(nursery, {"/ce": reply(b"200 OK", [(b"Content-Encoding", b"identity, ,")], GOOD)})
    r, _, stats = await fetch_then_good(server, "/ce")
    assert (r.error, r.body, stats["malformed"]) == (None, GOOD, {})


@pytest.mark.parametrize("line", [b"HTTP/1.1 099 Low", b"HTTP/1.1 1000 Long", b"HTTP/1.1 abc",
                                  b"HTTP/1.1", b"HTTP/x 200 OK", b"\x00\xff garbage", b"ICY 200 OK"])
async def test_status_lines_h11_refuses_are_error_protocol(nursery, line):
    server = await raw_server(nursery, {"/s": line + b"\r\nContent-Length: 0\r\n\r\n"}, close=frozenset({"/s"}))
    r, good, _ = await fetch_then_good(server, "/s")
    assert (r.status, r.error, r.body) == (None, "protocol", b"")
    assert_good(good)


@pytest.mark.parametrize("code", [b"600", b"999", b"700"])
async def test_a_3_digit_status_outside_100_599_is_kept_with_its_body(nursery, code):
    # RFC 9110 §15: handled as a 5xx (peer.core.http.head.server_error), so the
    # crawl retries it; the code is what the row records. A code h11 refuses
    # (under 100, or not three digits) stays "protocol", above.
    server = await raw_server(nursery, {"/s": reply(code + b" Odd", [], b"body")})
    r, good, stats = await fetch_then_good(server, "/s")
    assert (r.status, r.error, r.body) == (int(code), None, b"body")
    assert r.malformed == ("status",) and stats["malformed"] == {"status": 1}
    assert_good(good)


async def test_a_final_101_is_a_status_the_crawl_handles_as_a_5xx(nursery):
    server = await raw_server(nursery, {"/s": reply(b"101 Switching Protocols", [(b"Upgrade", b"h2c")],
                                                    length=False)}, close=frozenset({"/s"}))
    r, good, _ = await fetch_then_good(server, "/s")
    assert (r.status, r.error, r.body) == (101, None, b"")
    assert_good(good)


async def test_x_robots_tag_and_the_link_canonical_reach_the_result(nursery):
    headers = [(b"X-Robots-Tag", b"otherbot: noindex"), (b"Link", b'</style.css>; rel=preload'),
               (b"X-Robots-Tag", b"ringcrawl: nofollow"), (b"Link", b'</c?a=1>; rel="canonical"')]
    many = [(b"X-Robots-Tag", b"all")] * 20 + [(b"Link", b"<" + b"x" * 9000 + b">; rel=canonical")]
    server = await raw_server(nursery, {"/d": reply(b"200 OK", headers, GOOD),
                                        "/many": reply(b"200 OK", many, GOOD)})
    r, good, _ = await fetch_then_good(server, "/d")
    assert (r.x_robots, r.canonical, r.malformed) == (
        ("otherbot: noindex", "ringcrawl: nofollow"), "/c?a=1", ())
    r, _, stats = await fetch_then_good(server, "/many")
    assert (len(r.x_robots), r.canonical) == (16, None)  # peer.core.page.directives's caps
    assert r.malformed == ("x_robots_tag", "link") and r.body == GOOD
    assert_good(good)


async def test_an_unexpected_exception_is_error_internal(nursery, monkeypatch, caplog):
    import peer.net.fetcher

    def broken(*args):
        raise RuntimeError("a bug in header handling")

    server = await raw_server(nursery, {})
    async with fetcher() as f:
        monkeypatch.setattr(peer.net.fetcher, "read_head", broken)
        r = await f.fetch(server.url("/good"))
        monkeypatch.undo()
        good = await f.fetch(server.url("/good"))
        stats = f.stats()
    assert (r.error, r.body) == ("internal", b"")
    assert stats["errors"] == {"internal": 1}
    assert "a bug in header handling" in caplog.text
    assert_good(good)


# -- no response desync on keep-alive -----------------------------------------


@pytest.mark.parametrize("first", [
    reply(b"200 OK", [(b"Content-Type", b"text/html")], b"<p>A</p>") + EVIL_REPLY,
    reply(b"204 No Content", [], length=False) + EVIL_REPLY,  # a 204 has no body: all excess
    reply(b"200 OK", [(b"Content-Type", b"text/html")], b"<p>A</p>") + b"junk",
])
async def test_bytes_after_a_response_close_the_connection(nursery, first):
    server = await raw_server(nursery, {"/a": first})
    r, good, stats = await fetch_then_good(server, "/a")
    assert r.error is None
    assert_good(good)  # its own answer, not EVIL
    assert server.log == [(1, "/a"), (2, "/good")]  # asked for, on a new connection
    assert stats["malformed"] == {"excess": 1}


async def test_the_desync_is_real_without_the_check(nursery):
    # The control for the test above: httpx's own pool reuses the connection
    # and hands the second URL the planted response.
    server = await raw_server(nursery, {"/a": reply(b"200 OK", [], b"<p>A</p>") + EVIL_REPLY})
    async with httpx.AsyncClient() as client:
        await client.get(f"http://127.0.0.1:{server.port}/a")
        second = await client.get(f"http://127.0.0.1:{server.port}/good")
    assert second.content == EVIL
    assert server.targets() == ["/a", "/good"]


async def test_bytes_arriving_on_an_idle_connection_are_caught_on_reuse(nursery):
    # Not in h11's buffer but in the socket's: httpcore's readable-socket
    # check drops the connection before it is reused.
    server = await raw_server(nursery, {"/a": reply(b"200 OK", [], b"<p>A</p>")}, late={"/a": EVIL_REPLY})
    async with fetcher() as f:
        r = await f.fetch(server.url("/a"))
        await server.late_sent.wait()
        await trio.sleep(0.05)  # loopback: the bytes are in our socket's buffer by now
        good = await f.fetch(server.url("/good"))
        stats = f.stats()
    assert (r.error, r.body) == (None, b"<p>A</p>")
    assert_good(good)
    assert server.log == [(1, "/a"), (2, "/good")]
    assert stats["malformed"] == {}  # not counted: a readable socket may just be a close


async def test_clean_keep_alive_still_reuses_the_connection(nursery):
    server = await raw_server(nursery, {"/a": reply(b"200 OK", [], b"<p>A</p>")})
    async with fetcher() as f:
        for _ in range(3):
            assert (await f.fetch(server.url("/a"))).body == b"<p>A</p>"
        assert_good(await f.fetch(server.url("/good")))
        stats = f.stats()
    assert server.connections == 1
    assert stats["malformed"] == {}


# -- a prefix read, for robots.txt (RFC 9309 §2.5) ----------------------------

KiB = 1024
ROBOTS = (b"User-agent: *\nDisallow: /private\n" + b"# padding " * 400_000)[:3 * MiB]


@pytest.mark.parametrize("framing", ["content-length", "chunked", "gzip"])
async def test_a_3_mib_robots_txt_is_read_to_its_first_500_kib(nursery, framing):
    if framing == "content-length":
        raw = reply(b"200 OK", [(b"Content-Type", b"text/plain")], ROBOTS)
    elif framing == "chunked":
        chunks = b"".join(b"%x\r\n" % len(c) + c + b"\r\n"
                          for c in (ROBOTS[i:i + 64 * KiB] for i in range(0, len(ROBOTS), 64 * KiB)))
        raw = reply(b"200 OK", [(b"Transfer-Encoding", b"chunked")], chunks + b"0\r\n\r\n", length=False)
    else:
        raw = reply(b"200 OK", [(b"Content-Encoding", b"gzip")], gzip.compress(ROBOTS))
    server = await raw_server(nursery, {"/robots.txt": raw})
    async with fetcher(max_body=2 * MiB) as f:
        r = await f.fetch(server.url("/robots.txt"), max_body=500 * KiB, prefix_ok=True)
        whole = await f.fetch(server.url("/robots.txt"))  # crawl.max_body, no prefix: as before
        good = await f.fetch(server.url("/good"))
        stats = f.stats()
    assert (r.status, r.error, r.truncated) == (200, None, True)
    assert r.body == ROBOTS[:500 * KiB]
    assert whole.error == "too_large"
    if framing == "content-length":
        assert (whole.body, whole.raw_bytes) == (b"", 0)  # refused unread, as before
    assert_good(good)
    assert stats["errors"] == {"too_large": 1}


async def test_a_body_within_the_prefix_is_whole(nursery):
    server = await raw_server(nursery, {"/robots.txt": reply(b"200 OK", [], b"User-agent: *\n")})
    async with fetcher() as f:
        r = await f.fetch(server.url("/robots.txt"), max_body=500 * KiB, prefix_ok=True)
    assert (r.error, r.truncated, r.body) == (None, False, b"User-agent: *\n")


async def test_max_body_overrides_the_config_without_prefix_ok(nursery):
    server = await raw_server(nursery, {"/big": reply(b"200 OK", [], b"x" * 2000)})
    async with fetcher(max_body=MiB) as f:
        r = await f.fetch(server.url("/big"), max_body=1000)
        with pytest.raises(ValueError, match="max_body"):
            await f.fetch(server.url("/big"), max_body=0)
    assert (r.error, r.truncated, r.body, r.raw_bytes) == ("too_large", False, b"", 0)


# -- fuzzing: whatever the server sends, fetch returns a consistent result ----

KINDS = {None, "dns", "blocked", "connect", "timeout", "reset", "too_large", "decode",
         "protocol", "tls", "tls_expired", "tls_hostname", "tls_untrusted", "tls_client_cert",
         "scope"}  # never "internal": that would be a bug
REASONS = {"status", "retry_after", "content_length", "content_type", "charset", "location",
           "content_encoding", "excess", "x_robots_tag", "link"}
MEDIA = re.compile(r"[!#$%&'*+.^_`|~0-9a-z-]{1,127}/[!#$%&'*+.^_`|~0-9a-z-]{1,127}")
LABEL = re.compile(r"[a-z0-9_.:+\-]{1,40}")
_FUZZ_SSL = ssl.create_default_context()

VALUE_BYTES = st.one_of(
    st.binary(max_size=60),
    st.text(max_size=40).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.integers(-10, 10**40).map(lambda n: str(n).encode()),
    st.sampled_from(["²".encode(), NOW_9999, b"Wed, 21 Oct 2015 07:28:00 GMT", b"9" * 400, b"",
                     b"5, 5", b"0", b"gzip", b"gzip, gzip", b"deflate", b"br", b"identity",
                     b"/next", b"http://other.web.test/x", "/café".encode(), b"/a\x01b",
                     b"text/html; charset=utf-8", b"text/html; charset=klingon", b"x" * 3000]),
    st.builds(lambda media, cs: media + b"; charset=" + cs,
              st.sampled_from([b"text/html", b"text/plain", b"garbage", b"", b"application/xhtml+xml"]),
              st.one_of(st.binary(max_size=50), st.sampled_from(
                  [b"utf-8", b"latin1", b"utf-16", b"utf-7", b"base64", b"x-user-defined", b'"UTF-8"']))),
)
HEADER_NAMES = st.sampled_from([b"Retry-After", b"Content-Type", b"Location", b"Content-Encoding",
                                b"X-Junk", b"X-Robots-Tag", b"Link"])
FRAMING_NAMES = st.sampled_from([b"Content-Length", b"Transfer-Encoding", b"Connection"])


@st.composite
def responses(draw):
    """(bytes to send, whether the server closes after them, the body, the headers)."""
    keep_open = draw(st.booleans())
    common = st.sampled_from([200, 204, 301, 302, 304, 404, 429, 503])
    code = draw(common | (st.integers(200, 999) if keep_open else st.integers(0, 1000)))
    reason = draw(st.sampled_from([b"OK", b"", b"\xff\xfe", b"x" * 100]))
    line = b"HTTP/1.1 " + str(code).zfill(3).encode() + (b" " + reason if reason else b"")
    if not keep_open and draw(st.integers(0, 3)) == 0:
        line = draw(st.binary(max_size=40))
    names = HEADER_NAMES if keep_open else st.one_of(HEADER_NAMES, FRAMING_NAMES)
    values = VALUE_BYTES.map(lambda v: v.replace(b"\r", b"").replace(b"\n", b"")) if keep_open else VALUE_BYTES
    headers = draw(st.lists(st.tuples(names, values), max_size=6))
    body = draw(st.one_of(st.binary(max_size=1500), st.binary(max_size=3000).map(gzip.compress)))
    excess = draw(st.sampled_from([b"", b"", EVIL_REPLY, b"x"])) if keep_open else b""
    return assemble(line, headers, body, length=keep_open) + excess, keep_open, body, headers, bool(excess)


def check(r, url, max_body, prefix_ok) -> None:
    """What must hold of any FetchResult."""
    assert isinstance(r, FetchResult)
    assert r.url == url
    assert r.error in KINDS, r.error
    assert r.status is None or 100 <= r.status <= 999  # h11's range; outside 100-599 a "5xx"
    assert ("status" in r.malformed) is (r.status is not None and not 100 <= r.status <= 599)
    assert r.error is not None or r.status is not None
    assert len(r.body) <= max_body
    assert not r.truncated or r.error == (None if prefix_ok else "too_large")
    assert r.raw_bytes >= 0
    assert r.retry_after is None or 0.0 <= r.retry_after <= RETRY_AFTER_MAX
    if r.location is not None:
        assert r.status is not None and 300 <= r.status < 400
        assert r.location and len(r.location) <= MAX_LOCATION
        assert not re.search(r"[\x00-\x1f\x7f]", r.location)
    assert r.content_type == "" or MEDIA.fullmatch(r.content_type)
    assert r.charset is None or LABEL.fullmatch(r.charset)
    assert set(r.malformed) <= REASONS
    assert isinstance(decode_html(r.body, r.charset), str)  # peer.core.page.extract copes with any charset


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(response=responses(), prefix_ok=st.booleans())
def test_fetch_is_total_against_any_response(response, prefix_ok):
    raw, keep_open, body, headers, excess = response
    max_body = 1000

    async def scenario():
        async with trio.open_nursery() as nursery:
            server = await raw_server(nursery, {"/x": raw}, close=frozenset() if keep_open else frozenset({"/x"}))
            async with fetcher(max_body=max_body, ssl_context=_FUZZ_SSL) as f:
                r = await f.fetch(server.url("/x"), prefix_ok=prefix_ok)
                good = await f.fetch(server.url("/good"))
                stats = f.stats()
            nursery.cancel_scope.cancel()
        return server, r, good, stats

    server, r, good, stats = trio.run(scenario)
    check(r, server.url("/x"), max_body, prefix_ok)
    assert_good(good)  # whatever came before on this host, and however it ended
    assert server.targets() == ["/x", "/good"]
    malformed = Counter(r.malformed)
    if stats["malformed"].get("excess"):
        malformed["excess"] = stats["malformed"]["excess"]
    assert stats["malformed"] == dict(malformed)
    names = {name.lower() for name, _ in headers}
    if keep_open and r.error is None and not r.truncated:
        assert stats["malformed"].get("excess", 0) == (1 if excess or r.status in (204, 304) and body else 0)
        if r.status not in (204, 304) and b"content-encoding" not in names:
            assert r.body == body



# -- the HTTP/1.1 reader's errors on real sockets (peer/core/http/http1.py) -----------------


@pytest.mark.parametrize(("raw", "kind"), [
    (reply(b"200 OK", [(b"Content-Length", b"5000")], b"only part of it", length=False), "reset"),
    (reply(b"200 OK", [(b"Transfer-Encoding", b"chunked")], b"10\r\nshort", length=False), "reset"),
    (reply(b"200 OK", [(b"Transfer-Encoding", b"chunked")], b"zz\r\nhello\r\n0\r\n\r\n", length=False),
     "protocol"),
    (reply(b"200 OK", [(b"Transfer-Encoding", b"chunked")], b"5\r\nhelloXX0\r\n\r\n", length=False),
     "protocol"),
    (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 200_000, "protocol"),  # no end of head within 100 KiB
])
async def test_a_broken_body_or_head_is_an_error_and_the_host_still_works(nursery, raw, kind):
    server = await raw_server(nursery, {"/x": raw}, close=frozenset({"/x"}))
    r, good, stats = await fetch_then_good(server, "/x")
    assert (r.error, r.truncated) == (kind, False)
    assert stats["errors"] == {kind: 1}
    assert_good(good)
    assert server.log == [(1, "/x"), (2, "/good")]  # the broken connection was not reused


async def test_a_chunked_body_is_read_across_reads(nursery):
    chunks = b"".join(b"%x\r\n" % len(c) + c + b"\r\n" for c in (GOOD[:7], GOOD[7:30], GOOD[30:]))
    server = await raw_server(nursery, {"/c": reply(b"200 OK", [(b"Transfer-Encoding", b"chunked")],
                                                    chunks + b"0\r\nX-Trailer: 1\r\n\r\n", length=False)})
    r, good, stats = await fetch_then_good(server, "/c")
    assert (r.status, r.error, r.body) == (200, None, GOOD)
    assert_good(good)
    assert server.log == [(1, "/c"), (1, "/good")]  # a clean chunked end keeps the connection
