"""The resolver (peer/net/resolver.py) against a real DNS server on loopback.

The server is localweb.services.nameserver's LocalDns: dnspython messages over a trio
UDP socket on 127.0.0.1, answering *.web.test -> 127.0.0.1 with a TTL we
choose, optionally after a delay, counting the queries by name. Cache expiry
runs on a fake clock handed to the Resolver; only the queries are real. Every
lookup asks two questions, A and AAAA, together (RFC 8305 §3): ``Q`` of them.
"""

from __future__ import annotations

import pytest
import trio

from peer.core.config.cluster import DnsConfig
from peer.errors import FetchError
from peer.net.resolver import Resolver

from localweb.services.nameserver import LocalDns

#: The questions one lookup asks a name server: A and AAAA.
Q = 2


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def dns_server(nursery):
    return await nursery.start(LocalDns(ttl=60).serve)


def make(server: LocalDns, *, clock=None, cache=True, allow_private=True, **dns) -> Resolver:
    cfg = DnsConfig(nameservers=(server.nameserver,), **dns)
    return Resolver(cfg, allow_private=allow_private, cache=cache,
                    clock=clock if clock is not None else FakeClock())


async def test_answers_from_the_server(dns_server):
    r = make(dns_server)
    assert await r.resolve("s001.web.test") == ("127.0.0.1",)
    assert dns_server.queries == {"s001.web.test": Q}
    assert r.queries == Q


async def test_one_query_per_host_per_ttl(dns_server):
    clock = FakeClock()
    r = make(dns_server, clock=clock, min_ttl=0)
    for _ in range(3):
        assert await r.resolve("s001.web.test") == ("127.0.0.1",)
    for _ in range(2):
        assert await r.resolve("S002.web.test.") == ("127.0.0.1",)  # case and final dot ignored
    assert dns_server.queries == {"s001.web.test": Q, "s002.web.test": Q}
    clock.now += 59.9  # the server's TTL is 60
    await r.resolve("s001.web.test")
    assert dns_server.queries["s001.web.test"] == Q
    clock.now += 0.1  # expired at exactly t + TTL
    await r.resolve("s001.web.test")
    assert dns_server.queries["s001.web.test"] == 2 * Q
    st = r.stats()
    assert (st.lookups, st.hits, st.misses) == (7, 4, 3)


async def test_ttl_is_clamped_to_min_ttl(dns_server):
    dns_server.ttl = 5
    clock = FakeClock()
    r = make(dns_server, clock=clock, min_ttl=30)
    await r.resolve("s001.web.test")
    clock.now += 29
    await r.resolve("s001.web.test")
    assert dns_server.total == Q
    clock.now += 1
    await r.resolve("s001.web.test")
    assert dns_server.total == 2 * Q


async def test_concurrent_lookups_of_one_name_make_one_query(dns_server):
    dns_server.delay = 0.2
    r = make(dns_server)
    results = []

    async def one():
        results.append(await r.resolve("s001.web.test"))

    async with trio.open_nursery() as nursery:
        for _ in range(50):
            nursery.start_soon(one)
    assert results == [("127.0.0.1",)] * 50
    assert dns_server.queries == {"s001.web.test": Q}
    assert r.queries == Q
    st = r.stats()
    assert (st.misses, st.merged, st.in_flight) == (1, 49, 0)


async def test_nxdomain_is_negatively_cached(dns_server):
    clock = FakeClock()
    r = make(dns_server, clock=clock, negative_ttl=60)
    with pytest.raises(FetchError) as err:
        await r.resolve("nosuch.invalid")
    assert err.value.kind == "dns"
    assert "NXDOMAIN" in str(err.value)
    with pytest.raises(FetchError) as err:
        await r.resolve("nosuch.invalid")
    assert err.value.kind == "dns"
    assert dns_server.queries == {"nosuch.invalid": Q}
    assert r.stats().negative_hits == 1
    clock.now += 60
    with pytest.raises(FetchError):
        await r.resolve("nosuch.invalid")
    assert dns_server.queries == {"nosuch.invalid": 2 * Q}


async def test_waiters_of_a_failed_lookup_fail_too(dns_server):
    dns_server.delay = 0.1
    r = make(dns_server)
    kinds = []

    async def one():
        try:
            await r.resolve("nosuch.invalid")
        except FetchError as exc:
            kinds.append(exc.kind)

    async with trio.open_nursery() as nursery:
        for _ in range(10):
            nursery.start_soon(one)
    assert kinds == ["dns"] * 10
    assert dns_server.total == Q


async def test_a_cancelled_querier_hands_over_to_a_waiter(dns_server):
    dns_server.delay = 0.3
    r = make(dns_server)
    got = []

    async def impatient():
        with trio.move_on_after(0.1):
            await r.resolve("s001.web.test")
            got.append("impatient")  # pragma: no cover - cancelled first

    async def patient():
        await trio.sleep(0.01)  # after impatient's query is in flight
        got.append(await r.resolve("s001.web.test"))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(impatient)
        nursery.start_soon(patient)
    assert got == [("127.0.0.1",)]
    # The cancelled query was sent; the waiter then asked again itself.
    assert dns_server.queries == {"s001.web.test": 2 * Q}
    assert r.stats().in_flight == 0


async def test_without_the_cache_every_lookup_queries(dns_server):
    dns_server.delay = 0.05
    r = make(dns_server, cache=False)
    for _ in range(3):
        assert await r.resolve("s001.web.test") == ("127.0.0.1",)

    async with trio.open_nursery() as nursery:
        for _ in range(5):
            nursery.start_soon(r.resolve, "s001.web.test")
    assert dns_server.queries == {"s001.web.test": 8 * Q}
    assert r.queries == 8 * Q


async def test_cache_off_still_answers_static_entries(dns_server):
    r = make(dns_server, cache=False, resolve={"pinned.web.test": "127.0.0.2"})
    assert await r.resolve("pinned.web.test") == ("127.0.0.2",)
    assert await r.resolve("127.0.0.3") == ("127.0.0.3",)
    assert dns_server.total == 0


async def test_static_entries_and_literals_make_no_query(dns_server):
    r = make(dns_server, resolve={"*.web.test": "127.0.0.1", "two.example": ["127.0.0.2", "::1"]})
    assert await r.resolve("s001.web.test") == ("127.0.0.1",)
    assert await r.resolve("two.example") == ("127.0.0.2", "::1")
    assert await r.resolve("10.1.2.3") == ("10.1.2.3",)
    assert await r.resolve("::1") == ("::1",)
    assert dns_server.total == 0
    assert r.queries == 0


# -- both families (RFC 8305 §3) ----------------------------------------------


async def test_a_dual_stack_name_answers_both_families(nursery):
    server = await nursery.start(LocalDns(address6="2001:db8::7", ttl=60).serve)
    r = make(server)
    # A first, as before (peek and the per-IP budget key on it); the
    # connector orders them IPv6 first (peer.core.dns.eyeballs).
    assert await r.resolve("s001.web.test") == ("127.0.0.1", "2001:db8::7")
    assert r.peek("s001.web.test") == "127.0.0.1"
    assert server.queries == {"s001.web.test": Q}


async def test_an_ipv6_only_name_answers_its_aaaa(nursery):
    server = await nursery.start(LocalDns(address=None, address6="2001:db8::7").serve)
    assert await make(server).resolve("s001.web.test") == ("2001:db8::7",)


async def test_the_two_questions_go_out_together(nursery):
    # One after the other, a lookup would take both delays (0.4 s).
    server = await nursery.start(LocalDns(address6="2001:db8::7", delay=0.2).serve)
    start = trio.current_time()
    assert len(await make(server).resolve("s001.web.test")) == 2
    assert trio.current_time() - start < 0.35


async def test_a_late_aaaa_is_not_waited_for_past_the_resolution_delay(nursery):
    from peer.core.dns.eyeballs import RESOLUTION_DELAY

    server = await nursery.start(LocalDns(address6="2001:db8::7", aaaa_delay=2.0).serve)
    start = trio.current_time()
    assert await make(server).resolve("s001.web.test") == ("127.0.0.1",)
    assert trio.current_time() - start < RESOLUTION_DELAY + 0.5


async def test_a_late_a_is_waited_for(nursery):
    server = await nursery.start(LocalDns(address6="2001:db8::7", delay=0.3, aaaa_delay=0.0).serve)
    assert await make(server).resolve("s001.web.test") == ("127.0.0.1", "2001:db8::7")


# -- the SSRF guard ------------------------------------------------------------


async def test_guard_refuses_a_dns_answer_of_loopback(dns_server):
    r = make(dns_server, allow_private=False)
    with pytest.raises(FetchError) as err:
        await r.resolve("s001.web.test")
    assert err.value.kind == "blocked"
    assert "127.0.0.1" in str(err.value)
    # The answer is cached (it is true); only connecting to it is refused.
    with pytest.raises(FetchError):
        await r.resolve("s001.web.test")
    assert dns_server.total == Q


@pytest.mark.parametrize("host", ["127.0.0.1", "169.254.169.254", "::1", "::ffff:127.0.0.1",
                                  "10.0.0.7", "100.64.0.1", "0.0.0.0", "fd00:ec2::254"])
async def test_guard_refuses_private_literals(host):
    r = Resolver(DnsConfig(), allow_private=False)
    with pytest.raises(FetchError) as err:
        await r.resolve(host)
    assert err.value.kind == "blocked"


async def test_guard_applies_to_static_entries_and_keeps_public_ones():
    cfg = DnsConfig(resolve={"*.web.test": "127.0.0.1",
                             "mixed.example": ["10.0.0.1", "93.184.216.34", "::1"]})
    r = Resolver(cfg, allow_private=False)
    with pytest.raises(FetchError) as err:
        await r.resolve("s001.web.test")
    assert err.value.kind == "blocked"
    assert await r.resolve("mixed.example") == ("93.184.216.34",)
    assert await r.resolve("93.184.216.34") == ("93.184.216.34",)
    allowed = Resolver(cfg, allow_private=True)
    assert await allowed.resolve("mixed.example") == ("10.0.0.1", "93.184.216.34", "::1")


# -- the system resolver -------------------------------------------------------


async def test_system_resolver_caches_for_min_ttl():
    # "localhost" comes from /etc/hosts: no packet leaves the machine.
    clock = FakeClock()
    r = Resolver(DnsConfig(min_ttl=30), allow_private=True, clock=clock)
    first = await r.resolve("localhost")
    assert first and all(a in ("127.0.0.1", "::1") for a in first)
    assert await r.resolve("LOCALHOST") == first
    assert r.queries == 1
    clock.now += 29.9
    await r.resolve("localhost")
    assert r.queries == 1
    clock.now += 0.1
    await r.resolve("localhost")
    assert r.queries == 2


async def test_system_resolver_failure_is_a_dns_error(monkeypatch):
    # A stand-in for getaddrinfo, so no query leaves the machine.
    calls = []

    async def no_such_name(host, port, *args, **kwargs):
        calls.append(host)
        await trio.lowlevel.checkpoint()
        raise trio.socket.gaierror(-2, "Name or service not known")

    monkeypatch.setattr(trio.socket, "getaddrinfo", no_such_name)
    r = Resolver(DnsConfig(negative_ttl=60), allow_private=True, clock=FakeClock())
    with pytest.raises(FetchError) as err:
        await r.resolve("nosuch.example")
    assert err.value.kind == "dns"
    assert "Name or service not known" in str(err.value)
    with pytest.raises(FetchError):
        await r.resolve("nosuch.example")
    assert calls == ["nosuch.example"]
