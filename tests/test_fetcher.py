"""The fetcher (peer/fetcher.py) against the local test web and small local servers.

Every misbehaving endpoint of bad.web.test has a test showing that the fetch
returns (no exception), with which error kind, and that memory stays
bounded. The crawler reaches *.web.test through the static DNS entry
{"*.web.test": "127.0.0.1"} with allow_private, as the test configs do.
"""

from __future__ import annotations

import contextlib
import email.utils
import functools
import gc
import gzip
import ssl
import subprocess
import time
import tracemalloc
import warnings
import zlib

import h11
import httpx
import pytest
import trio

import webfarm
from bench_dns import LocalDns
from peer.config import CrawlConfig, DnsConfig
from peer.fetcher import Fetcher, error_kind, parse_content_type, parse_retry_after
from peer.resolver import Resolver
from webfarm import SiteGraph, serve_webfarm

MiB = 1024 * 1024
STATIC = {"*.web.test": "127.0.0.1"}
UA = "ringcrawl-test/1.0"


@pytest.fixture(scope="module")
def graph() -> SiteGraph:
    return SiteGraph(hosts=2, pages_per_host=10, shop=False)


@pytest.fixture
async def farm(graph, nursery):
    return await nursery.start(functools.partial(serve_webfarm, graph))


@contextlib.asynccontextmanager
async def fetcher(*, allow_private=True, dns=None, resolver=None, shards=None, ssl_context=None,
                  **crawl):
    crawl.setdefault("user_agent", UA)
    crawl.setdefault("timeout", 5.0)
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
    assert broken.body == webfarm._MALFORMED
    assert (latin.status, latin.error, latin.charset) == (200, None, "iso-8859-1")
    assert latin.body.decode(latin.charset) == webfarm._LATIN1.decode("latin-1")


async def test_reset_connection_is_error_reset(farm):
    # The server answers with a TCP RST before any response byte (SO_LINGER 0):
    # httpcore reads ECONNRESET, a ReadError.
    async with fetcher() as f:
        r = await f.fetch(bad(farm, "/reset"))
    assert (r.status, r.error, r.body) == (None, "reset", b"")


async def test_huge_header_is_error_protocol(farm):
    # 200 KiB in one header: h11 gives up at 16 KiB ("Receive buffer too long").
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
    if cache:
        assert server.queries == {"s001.web.test": 1, "s002.web.test": 1}
    else:
        assert server.total == connections  # one query per connection, none per request
    assert resolver.queries == server.total


async def test_dns_failure_is_error_dns(nursery):
    server = await nursery.start(LocalDns().serve)
    async with fetcher(dns=DnsConfig(nameservers=(server.nameserver,))) as f:
        r1 = await f.fetch("http://nosuch.invalid/")
        r2 = await f.fetch("http://nosuch.invalid/other")
    assert (r1.status, r1.error) == (None, "dns")
    assert r2.error == "dns"
    assert server.queries == {"nosuch.invalid": 1}  # negatively cached


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
        "/br": (200, [(b"content-encoding", b"br")], b"\x0b\x02\x80hello\x03"),
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
    assert first[b"accept-encoding"] == b"gzip, deflate"
    assert first[b"host"] == f"s001.web.test:{scripted.port}".encode()
    assert b"cookie" not in second  # a crawler keeps no cookies


@pytest.mark.parametrize("path", ["/gzip", "/deflate", "/raw-deflate"])
async def test_compressed_bodies_are_decoded(scripted, path):
    async with fetcher() as f:
        r = await f.fetch(f"http://s001.web.test:{scripted.port}{path}")
    assert (r.status, r.error, r.truncated) == (200, None, False)
    assert r.body == HTML
    assert r.raw_bytes < len(HTML) // 4


@pytest.mark.parametrize(("path", "body"), [("/br", b""), ("/corrupt", None)])
async def test_undecodable_bodies_are_error_decode(scripted, path, body):
    async with fetcher() as f:
        r = await f.fetch(f"http://s001.web.test:{scripted.port}{path}")
    assert (r.status, r.error) == (200, "decode")
    if body is not None:
        assert r.body == body


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


async def test_tls_certificate_for_another_name_is_error_tls(nursery, pki):
    sni: list = []
    port = await _tls_server(nursery, pki, "other.web.test", sni)
    client_ctx = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    async with fetcher(ssl_context=client_ctx) as f:
        r = await f.fetch(f"https://tls.web.test:{port}/")
    assert (r.status, r.error, r.body) == (None, "tls", b"")
    assert sni == ["tls.web.test"]


async def test_tls_untrusted_ca_is_error_tls(nursery, pki):
    port = await _tls_server(nursery, pki, "tls.web.test", [])
    async with fetcher() as f:  # the default trust store does not know our CA
        r = await f.fetch(f"https://tls.web.test:{port}/")
    assert r.error == "tls"


# -- pure helpers ----------------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [
    (None, ("", None)),
    ("", ("", None)),
    ("text/html", ("text/html", None)),
    ("Text/HTML; Charset=UTF-8", ("text/html", "utf-8")),
    ('text/html; foo=bar; charset="ISO-8859-1"', ("text/html", "iso-8859-1")),
    ("application/xhtml+xml;charset=", ("application/xhtml+xml", None)),
])
def test_parse_content_type(value, expected):
    assert parse_content_type(value) == expected


def test_parse_retry_after():
    now = 1_700_000_000.0
    assert parse_retry_after("120", now) == 120.0
    assert parse_retry_after(" 0 ", now) == 0.0
    assert parse_retry_after(email.utils.formatdate(now + 90, usegmt=True), now) == 90.0
    assert parse_retry_after(email.utils.formatdate(now - 90, usegmt=True), now) == 0.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now) == 0.0
    for junk in (None, "", "soon", "-5", "1.5"):
        assert parse_retry_after(junk, now) is None


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
