"""The SSRF guard's address policy (peer/core/dns/guard.py): a table, v4 and v6."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from peer.core.dns.guard import BLOCKED_V4, filter_public, is_public_address

BLOCKED = [
    # IPv4
    ("0.0.0.0", "unspecified / this network"),
    ("0.1.2.3", "this network 0/8"),
    ("10.0.0.1", "RFC 1918"),
    ("10.255.255.255", "RFC 1918, last"),
    ("100.64.0.1", "CGNAT"),
    ("100.127.255.254", "CGNAT, last"),
    ("127.0.0.1", "loopback"),
    ("127.1.2.3", "loopback /8"),
    ("169.254.169.254", "cloud metadata"),
    ("169.254.0.1", "link-local"),
    ("172.16.0.1", "RFC 1918"),
    ("172.31.255.254", "RFC 1918, last"),
    ("192.0.0.170", "IETF assignments (NAT64 discovery)"),
    ("192.0.2.10", "TEST-NET-1"),
    ("192.88.99.1", "6to4 relay anycast"),
    ("192.168.1.1", "RFC 1918"),
    ("198.18.0.1", "benchmarking"),
    ("198.51.100.7", "TEST-NET-2"),
    ("203.0.113.9", "TEST-NET-3"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast SSDP"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "broadcast"),
    # IPv6
    ("::", "unspecified"),
    ("::1", "loopback"),
    ("[::1]", "bracketed loopback"),
    ("::ffff:127.0.0.1", "IPv4-mapped loopback"),
    ("::ffff:7f00:1", "IPv4-mapped loopback, hex"),
    ("::ffff:169.254.169.254", "IPv4-mapped metadata"),
    ("::ffff:10.0.0.1", "IPv4-mapped private"),
    ("::127.0.0.1", "IPv4-compatible (deprecated)"),
    ("64:ff9b::7f00:1", "NAT64 of loopback"),
    ("64:ff9b::a9fe:a9fe", "NAT64 of metadata"),
    ("2002:7f00:1::1", "6to4 of loopback"),
    ("2002:a00:1::1", "6to4 of 10.0.0.1"),
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo, client 127.0.0.1"),
    ("fc00::1", "ULA fc00::/7"),
    ("fd12:3456:789a::1", "ULA fd00::/8"),
    ("fd00:ec2::254", "AWS metadata (IPv6)"),
    ("fe80::1", "link-local"),
    ("fe80::1%eth0", "link-local with zone"),
    ("febf:ffff::1", "link-local, last /10"),
    ("fec0::1", "site-local (deprecated)"),
    ("ff02::1", "multicast"),
    ("100::1", "discard prefix"),
    ("2001:db8::1", "documentation"),
    ("3fff::1", "documentation (RFC 9637)"),
    # Not addresses: fail closed
    ("", "empty"),
    ("localhost", "a name"),
    ("256.1.1.1", "not IPv4"),
    ("1.2.3", "short form is not accepted"),
]

PUBLIC = [
    "93.184.216.34",
    "8.8.8.8",
    "1.1.1.1",
    "100.63.255.255",   # just below CGNAT
    "100.128.0.0",      # just above CGNAT
    "172.15.255.255",   # just below 172.16/12
    "172.32.0.0",       # just above
    "169.253.255.255",
    "223.255.255.255",  # just below multicast
    "2606:2800:220:1:248:1893:25c8:1946",
    "2001:4860:4860::8888",
    "[2606:4700:4700::1111]",
    "::ffff:93.184.216.34",       # mapped public
    "64:ff9b::5db8:d822",          # NAT64 of 93.184.216.34
    "2002:5db8:d822::1",           # 6to4 of 93.184.216.34
]


@pytest.mark.parametrize(("ip", "why"), BLOCKED)
def test_blocked(ip, why):
    assert is_public_address(ip) is False, why


@pytest.mark.parametrize("ip", PUBLIC)
def test_public(ip):
    assert is_public_address(ip) is True


def test_filter_public_keeps_order_and_drops_private():
    assert filter_public(["10.0.0.1", "93.184.216.34", "::1", "8.8.8.8"]) == ("93.184.216.34", "8.8.8.8")
    assert filter_public(["127.0.0.1"]) == ()


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_ipv4_mapped_agrees_with_ipv4(value):
    # An OS connects ::ffff:a.b.c.d to a.b.c.d, so the guard must judge both alike.
    v4 = str(ipaddress.IPv4Address(value))
    assert is_public_address(f"::ffff:{v4}") == is_public_address(v4)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_ipv4_blocked_iff_in_the_table(value):
    ip = ipaddress.IPv4Address(value)
    assert is_public_address(str(ip)) == (not any(ip in net for net in BLOCKED_V4))
