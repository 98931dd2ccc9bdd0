"""ring.addresses: the forms a ring address takes, what a member binds by default, what zmq needs for each."""

from __future__ import annotations

import pytest

from ring.addresses import Endpoint, HostKind, bind_address, is_name, needs_ipv6, parse_endpoint


@pytest.mark.parametrize("text, host, port, kind", [
    ("tcp://10.0.0.5:5555", "10.0.0.5", 5555, HostKind.IPV4),
    ("tcp://[::1]:5555", "::1", 5555, HostKind.IPV6),
    ("tcp://[2001:db8::5]:1", "2001:db8::5", 1, HostKind.IPV6),
    ("tcp://[fe80::1%eth0]:5555", "fe80::1%eth0", 5555, HostKind.IPV6),
    ("tcp://ringcrawl-0.ringcrawl:5555", "ringcrawl-0.ringcrawl", 5555, HostKind.NAME),
    ("tcp://ringcrawl-0.ringcrawl.crawl.svc.cluster.local:65535",
     "ringcrawl-0.ringcrawl.crawl.svc.cluster.local", 65535, HostKind.NAME),
    ("tcp://localhost:5701", "localhost", 5701, HostKind.NAME),
    ("tcp://project_peer_1:5701", "project_peer_1", 5701, HostKind.NAME),
    ("tcp://peer1.example.:5701", "peer1.example.", 5701, HostKind.NAME),
])
def test_an_address_is_an_ipv4_an_ipv6_literal_or_a_name(text, host, port, kind):
    ep = parse_endpoint(text)
    assert (ep.host, ep.port, ep.kind) == (host, port, kind)
    assert str(ep) == text  # brackets back on an IPv6 host


@pytest.mark.parametrize("text, why", [
    ("tcp://999.1.1.1:5555", "not an IPv4 address"),
    ("tcp://1.2.3:5555", "not an IPv4 address"),
    ("tcp://[::g]:5555", "not an IPv6 address"),
    ("tcp://[10.0.0.1]:5555", "not an IPv6 address"),
    ("tcp://-peer.x:5555", "not a DNS name"),
    ("tcp://peer-.x:5555", "not a DNS name"),
    ("tcp://a..b:5555", "not a DNS name"),
    ("tcp://a b:5555", "not a DNS name"),
    ("tcp://" + "a" * 64 + ".x:5555", "not a DNS name"),
    ("tcp://" + ".".join(["a" * 50] * 6) + ":5555", "not a DNS name"),
    ("tcp://*:5555", "it is a bind"),
    ("tcp://0.0.0.0:5555", "it is a bind"),
    ("tcp://[::]:5555", "it is a bind"),
    ("tcp://::1:5555", ""),
    ("tcp://10.0.0.5:0", ""),
    ("tcp://10.0.0.5:65536", ""),
    ("tcp://10.0.0.5", ""),
    ("udp://10.0.0.5:5555", ""),
    ("10.0.0.5:5555", ""),
    ("tcp://:5555", ""),
])
def test_garbage_is_refused_in_one_line_saying_what_was_expected(text, why):
    with pytest.raises(ValueError) as got:
        parse_endpoint(text)
    message = str(got.value)
    assert "\n" not in message and repr(text) in message
    assert message.startswith("expected tcp://host:port with host an IPv4 address, an IPv6 address")
    assert why in message


@pytest.mark.parametrize("text", ["tcp://*:5555", "tcp://0.0.0.0:5555", "tcp://[::]:5555"])
def test_a_bind_may_be_any_interface(text):
    assert str(parse_endpoint(text, wildcard=True)) == text


@pytest.mark.parametrize("address, bind, listens", [
    # A literal binds itself, as before binds existed: a loopback ring stays on loopback.
    ("tcp://127.0.0.1:5701", "", "tcp://127.0.0.1:5701"),
    ("tcp://[::1]:5701", "", "tcp://[::1]:5701"),
    ("tcp://10.0.0.5:5555", "", "tcp://10.0.0.5:5555"),
    # A name need not resolve to this machine (a pod, NAT): every interface on its port.
    ("tcp://ringcrawl-0.ringcrawl:5555", "", "tcp://*:5555"),
    # RFC 6761: localhost names are loopback only.
    ("tcp://localhost:5701", "", "tcp://localhost:5701"),
    ("tcp://peer.localhost:5701", "", "tcp://peer.localhost:5701"),
    # An explicit bind wins, its port too (a container's published port).
    ("tcp://ringcrawl-0.ringcrawl:5555", "tcp://0.0.0.0:5555", "tcp://0.0.0.0:5555"),
    ("tcp://203.0.113.7:6000", "tcp://[::]:5555", "tcp://[::]:5555"),
    ("", "", ""),
])
def test_where_a_member_listens(address, bind, listens):
    assert bind_address(address, bind) == listens


@pytest.mark.parametrize("address, ipv6, name", [
    ("tcp://127.0.0.1:5701", False, False),
    ("tcp://0.0.0.0:5701", False, False),
    ("tcp://[::1]:5701", True, False),
    ("tcp://[::]:5701", True, False),
    ("tcp://*:5701", True, False),
    ("tcp://ringcrawl-0.ringcrawl:5555", True, True),
    ("tcp://127.0.0.1:*", False, False),
    ("tcp://[::1]:*", True, False),
    ("inproc://x", False, False),
])
def test_what_zmq_needs_for_an_address(address, ipv6, name):
    # ZMQ_IPV6 for v6 literals, names and any-interface; never for an IPv4
    # literal, which libzmq would then report as [::ffff:a.b.c.d].
    assert needs_ipv6(address) is ipv6
    assert is_name(address) is name


def test_an_endpoint_prints_as_it_parses():
    assert str(Endpoint("::1", 5, HostKind.IPV6)) == "tcp://[::1]:5"
    assert str(Endpoint("*", 5, HostKind.ANY)) == "tcp://*:5"
