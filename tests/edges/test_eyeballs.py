"""Happy eyeballs (RFC 8305): the order (peer/core/dns/eyeballs.py) and the race (peer/net/connections.py).

The order is tested synchronously. The race goes through the real
``Fetcher`` and ``Connector``, with ``[dns] resolve`` mapping a test name to
loopback addresses on one port: a small HTTP server answering with the
address it was reached at, and a **black hole**, a listening socket with a
backlog of 0 whose queue is filled by one connection nobody accepts, so
Linux drops every further SYN and a connect to it hangs until its timeout.

The race's times are read on a :class:`trio.testing.MockClock` that stands
still (``rate`` 0) and jumps to the next deadline only after the loop has
waited ``_JUMP`` real seconds: a loopback connect and an HTTP exchange
finish in far less, so a fetch's ``elapsed`` is exactly the delays the
race waited, ``ATTEMPT_DELAY`` past a black hole rather than the connect
timeout. (pytest-trio's ``autojump_clock`` jumps the moment every task
waits, which is also while the kernel completes a loopback connect: it
would fire the black hole's timeout before the good address answered.)
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import select
import socket
from collections.abc import Iterator

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st
from trio.testing import MockClock

from peer.core.config.cluster import CrawlConfig, DnsConfig
from peer.core.dns.eyeballs import ATTEMPT_DELAY, attempt_order
from peer.net.fetcher import Fetcher
from peer.net.resolver import Resolver

# -- the order -----------------------------------------------------------------


def test_one_family_keeps_the_resolvers_order():
    assert attempt_order(("192.0.2.9", "192.0.2.1", "192.0.2.5")) == ("192.0.2.9", "192.0.2.1", "192.0.2.5")
    assert attempt_order(("2001:db8::2", "2001:db8::1")) == ("2001:db8::2", "2001:db8::1")


def test_ipv6_first_then_the_families_interleaved():
    given_ = ("192.0.2.1", "192.0.2.2", "2001:db8::1", "2001:db8::2")
    assert attempt_order(given_) == ("2001:db8::1", "192.0.2.1", "2001:db8::2", "192.0.2.2")


def test_the_longer_family_ends_the_order():
    assert attempt_order(("192.0.2.1", "192.0.2.2", "192.0.2.3", "2001:db8::1")) == (
        "2001:db8::1", "192.0.2.1", "192.0.2.2", "192.0.2.3")
    assert attempt_order(("2001:db8::1", "2001:db8::2", "2001:db8::3", "192.0.2.1")) == (
        "2001:db8::1", "192.0.2.1", "2001:db8::2", "2001:db8::3")


def test_an_address_given_twice_is_tried_once_as_first_spelt():
    assert attempt_order(("127.0.0.1", "::1", "0:0::1", "127.0.0.1", "[::1]")) == ("::1", "127.0.0.1")


def test_nothing_to_order():
    assert attempt_order(()) == ()
    assert attempt_order(("192.0.2.1",)) == ("192.0.2.1",)


_ADDRESSES = st.lists(
    st.one_of(st.ip_addresses(v=4).map(str), st.ip_addresses(v=6).map(str),
              st.sampled_from(["127.0.0.1", "::1", "0:0::1", "192.0.2.1"])),
    max_size=12).map(tuple)


@given(_ADDRESSES)
def test_the_order_tries_each_address_given_once_and_nothing_else(addresses):
    order = attempt_order(addresses)
    # Only strings given (the guard judged exactly those), each address once.
    assert set(order) <= set(addresses)
    canon = [ipaddress.ip_address(a) for a in order]
    assert len(set(canon)) == len(canon) == len({ipaddress.ip_address(a) for a in addresses})
    families = [c.version for c in canon]
    if 6 in families and 4 in families:
        pairs = min(families.count(6), families.count(4))
        assert families[: 2 * pairs] == [6, 4] * pairs
    for version in (4, 6):  # the resolver's order within a family
        mine = [c for c in canon if c.version == version]
        theirs = list(dict.fromkeys(c for c in map(ipaddress.ip_address, addresses) if c.version == version))
        assert mine == theirs


# -- the race, on loopback -----------------------------------------------------

_JUMP = 0.3  # real seconds of waiting before the mock clock jumps (module docstring)
TIMEOUT = 30.0  # the fetch's; a connect gets a third of it: 10 s
CONNECT_TIMEOUT = TIMEOUT / 3


@pytest.fixture
def clock() -> MockClock:
    return MockClock(autojump_threshold=_JUMP)


def _ipv6_loopback() -> bool:
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


needs_ipv6 = pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback (::1) on this machine")


def _family(address: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in address else socket.AF_INET


@contextlib.contextmanager
def black_hole(address: str, port: int) -> Iterator[None]:
    """A listener at ``address:port`` whose accept queue is full: SYNs to it are dropped."""
    listener = socket.socket(_family(address), socket.SOCK_STREAM)
    fillers: list[socket.socket] = []
    try:
        listener.bind((address, port))
        listener.listen(0)
        for _ in range(8):  # Linux queues one connection at a backlog of 0
            c = socket.socket(_family(address), socket.SOCK_STREAM)
            c.setblocking(False)
            fillers.append(c)
            with contextlib.suppress(BlockingIOError):
                c.connect((address, port))
            if not select.select([], [c], [], 0.2)[1]:
                break  # this one's SYN was dropped: the queue is full
        else:  # pragma: no cover - a kernel that never drops a SYN here
            pytest.skip("the kernel accepted every connection: no black hole on loopback")
        yield
    finally:
        for c in fillers:
            c.close()
        listener.close()


class Origin:
    """An HTTP server on one port of several loopback addresses; each answer's body
    is the address it was reached at, and ``served`` lists them."""

    def __init__(self) -> None:
        self.served: list[str] = []
        self.port = 0

    async def serve(self, addresses: tuple[str, ...], *,
                    task_status: trio.TaskStatus[Origin] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = []
        for address in addresses:
            sock = trio.socket.socket(_family(address), socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            await sock.bind((address, self.port))
            self.port = sock.getsockname()[1]
            sock.listen(16)
            listeners.append(trio.SocketListener(sock))
        task_status.started(self)
        await trio.serve_listeners(self._handle, listeners)

    async def _handle(self, stream: trio.SocketStream) -> None:
        async with stream:
            data = b""
            with trio.move_on_after(5):
                while b"\r\n\r\n" not in data and len(data) < 65536:
                    chunk = await stream.receive_some(4096)
                    if not chunk:
                        return
                    data += chunk
            here = stream.socket.getsockname()[0]
            self.served.append(here)
            body = here.encode()
            await stream.send_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                                  b"Content-Length: %d\r\n\r\n%s" % (len(body), body))


@contextlib.asynccontextmanager
async def fetcher(resolve: dict[str, list[str]], *, allow_private: bool = True):
    resolver = Resolver(DnsConfig(resolve=resolve), allow_private=allow_private)
    async with Fetcher(CrawlConfig(timeout=TIMEOUT), resolver, ssl_context=None) as f:
        yield f


async def test_a_black_holed_address_costs_the_attempt_delay_not_the_connect_timeout(clock, nursery):
    origin = await nursery.start(Origin().serve, ("127.0.0.1",))
    with black_hole("127.0.0.2", origin.port):
        before = len(os.listdir("/proc/self/fd"))
        async with fetcher({"race.test": ["127.0.0.2", "127.0.0.1"]}) as f:
            r = await f.fetch(f"http://race.test:{origin.port}/")
        await trio.sleep(0)  # the server's side of the connection ends
        # The losing attempt was cancelled and its socket closed (the winner's
        # went with the fetcher's pool).
        assert len(os.listdir("/proc/self/fd")) == before
    assert (r.status, r.error, r.body) == (200, None, b"127.0.0.1")
    assert (r.tried, r.address) == (("127.0.0.2", "127.0.0.1"), "127.0.0.1")
    # One attempt delay, on a clock that only moves by the deadlines waited for;
    # one address at a time it would be the connect timeout (10 s).
    assert r.elapsed == pytest.approx(ATTEMPT_DELAY)


async def test_a_refused_address_starts_the_next_at_once(clock, nursery):
    origin = await nursery.start(Origin().serve, ("127.0.0.1",))
    async with fetcher({"race.test": ["127.0.0.3", "127.0.0.1"]}) as f:
        r = await f.fetch(f"http://race.test:{origin.port}/")
    assert (r.status, r.tried, r.address) == (200, ("127.0.0.3", "127.0.0.1"), "127.0.0.1")
    assert r.elapsed == 0  # a failure does not wait out the attempt delay (RFC 8305 §5)


async def test_when_every_address_black_holes_the_fetch_fails_after_one_connect_timeout(clock, nursery):
    origin = await nursery.start(Origin().serve, ("127.0.0.1",))
    with black_hole("127.0.0.2", origin.port), black_hole("127.0.0.3", origin.port):
        async with fetcher({"race.test": ["127.0.0.2", "127.0.0.3"]}) as f:
            r = await f.fetch(f"http://race.test:{origin.port}/")
    assert (r.status, r.error, r.address) == (None, "connect", None)
    assert r.tried == ("127.0.0.2", "127.0.0.3")
    # The attempts overlap: not two connect timeouts in a row.
    assert r.elapsed == pytest.approx(ATTEMPT_DELAY + CONNECT_TIMEOUT)
    assert origin.served == []


@needs_ipv6
async def test_ipv6_is_tried_first_when_the_host_has_both(clock, nursery):
    origin = await nursery.start(Origin().serve, ("127.0.0.1", "::1"))
    async with fetcher({"race.test": ["127.0.0.1", "::1"]}) as f:
        r = await f.fetch(f"http://race.test:{origin.port}/")
    assert (r.status, r.body, r.address, r.tried) == (200, b"::1", "::1", ("::1",))
    assert origin.served == ["::1"]
    assert r.elapsed == 0


@needs_ipv6
async def test_a_black_holed_ipv6_address_falls_back_to_ipv4(clock, nursery):
    origin = await nursery.start(Origin().serve, ("127.0.0.1",))
    with black_hole("::1", origin.port):
        async with fetcher({"race.test": ["127.0.0.1", "::1"]}) as f:
            r = await f.fetch(f"http://race.test:{origin.port}/")
    assert (r.status, r.body) == (200, b"127.0.0.1")
    assert r.tried == ("::1", "127.0.0.1")
    assert r.elapsed == pytest.approx(ATTEMPT_DELAY)


# -- the SSRF guard on every address tried -------------------------------------

_PUBLIC_V6 = "2606:4700:4700::1111"
_PUBLIC_V4 = "93.184.216.34"


async def test_every_address_tried_passed_the_ssrf_guard(monkeypatch):
    # The connect itself is a stand-in that records and refuses, so no packet
    # leaves the machine and a private address, were it tried, would show here.
    connected: list[str] = []

    async def refuse(host, port, **kwargs):
        connected.append(host)
        await trio.lowlevel.checkpoint()
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(trio, "open_tcp_stream", refuse)
    mixed = ["10.0.0.1", _PUBLIC_V4, "127.0.0.1", "169.254.169.254", "fd00:ec2::254",
             "::1", _PUBLIC_V6, "::ffff:127.0.0.1", "192.168.1.1"]
    async with fetcher({"mixed.example": mixed, "inside.example": ["10.0.0.1", "::1"]},
                       allow_private=False) as f:
        r = await f.fetch("http://mixed.example/")
        assert (r.error, r.tried) == ("connect", (_PUBLIC_V6, _PUBLIC_V4))
        assert connected == [_PUBLIC_V6, _PUBLIC_V4]
        r = await f.fetch("http://inside.example/")
        assert (r.error, r.tried) == ("blocked", ())
        r = await f.fetch("http://[fd00:ec2::254]/")
        assert (r.error, r.tried) == ("blocked", ())
    assert connected == [_PUBLIC_V6, _PUBLIC_V4]


# -- python -m peer try --------------------------------------------------------


def test_try_shows_the_addresses_tried_and_the_one_that_connected(tmp_path):
    from clirun import run_main, web_thread
    from peer.commands.cli import main

    with web_thread(hosts=1, shop=False) as web:  # listens on 127.0.0.1 only: ::1 is refused
        toml = tmp_path / "cluster.toml"
        toml.write_text(f"""
[[peer]]
id = "p1"
data_dir = "{tmp_path / 'p1'}"

[crawl]
seeds = ["http://s001.web.test:{web.port}/"]
allow_private = true

[dns]
resolve = {{ "*.web.test" = ["127.0.0.1", "::1"] }}
""")
        res = run_main(main, ["try", f"http://s001.web.test:{web.port}/", "--ring", str(toml)])
    assert res.returncode == 0, res.stderr
    said = [line for line in res.stdout.splitlines() if line.startswith("connect:")]
    assert said == ["connect:    tried ::1, 127.0.0.1 (IPv6 first, 250 ms apart: RFC 8305): "
                    "127.0.0.1 connected"]


def test_try_says_when_no_address_connected(tmp_path):
    from clirun import run_main
    from peer.commands.cli import main
    from ringharness import free_ports

    port = free_ports(1)[0]  # nothing listens there
    toml = tmp_path / "cluster.toml"
    toml.write_text(f"""
[[peer]]
id = "p1"
data_dir = "{tmp_path / 'p1'}"

[crawl]
seeds = ["http://nobody.test:{port}/"]
allow_private = true
obey_robots = false

[dns]
resolve = {{ "nobody.test" = ["127.0.0.1", "127.0.0.2"] }}
""")
    res = run_main(main, ["try", f"http://nobody.test:{port}/", "--ring", str(toml)])
    assert res.returncode == 1
    said = [line for line in res.stdout.splitlines() if line.startswith(("fetch:", "connect:"))]
    assert said[0].startswith("fetch:      failed: connect")
    assert said[1:] == ["connect:    tried 127.0.0.1, 127.0.0.2 (IPv6 first, 250 ms apart: RFC 8305): "
                        "none connected"]
