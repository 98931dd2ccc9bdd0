"""The SSRF guard's address policy: may a crawler connect to this IP?

A crawler follows links written by strangers, so a page can point it at
``http://169.254.169.254/`` (a cloud metadata service), ``http://10.0.0.5/``
(an office printer) or a name whose DNS answer is ``127.0.0.1``. OWASP's SSRF
prevention cheat sheet says to check the *resolved* address, then connect to
exactly that address (so DNS rebinding cannot slip in between), and the
resolver does both: it asks :func:`is_public_address` about every answer,
static entries and IP literals included, before the fetcher connects.

The policy is a table of blocked networks, written out here rather than read
from ``ipaddress``'s ``is_private``/``is_global`` flags, whose lists changed
between Python patch releases (3.11.10, 3.12.4): the guard must not move when
the interpreter does.

IPv4 (RFC 6890 special-purpose registry): blocked are this-network 0/8,
RFC 1918 private 10/8, 172.16/12, 192.168/16, CGNAT 100.64/10 (RFC 6598),
loopback 127/8, link-local 169.254/16 (holds the 169.254.169.254 metadata
service), IETF protocol assignments 192.0.0/24, the documentation nets
(RFC 5737), the 6to4 relay anycast 192.88.99/24 (RFC 7526), benchmarking
198.18/15 (RFC 2544), multicast 224/4 and reserved 240/4 (with broadcast).

IPv6: only global unicast 2000::/3 (RFC 4291 §2.4) is allowed, which leaves
out unspecified, loopback, ULA fc00::/7 (holds AWS's fd00:ec2::254), link-local
fe80::/10, site-local, multicast and the discard prefix. Inside 2000::/3 the
documentation prefixes (2001:db8::/32, 3fff::/20 of RFC 9637) are blocked.
Addresses that *carry* an IPv4 address are judged by it: IPv4-mapped
``::ffff:a.b.c.d`` (an OS connects to the IPv4 address), NAT64
``64:ff9b::/96`` (RFC 6052), 6to4 ``2002::/16`` (RFC 3056) and Teredo
``2001::/32`` (RFC 4380, the client address).

Pure: no I/O; the answers are memoised because a crawler asks about the same
few addresses on every connection.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable

__all__ = ["BLOCKED_V4", "BLOCKED_V6", "filter_public", "is_ip", "is_public_address"]

#: IPv4 networks never connected to unless allow_private (RFC 6890 and friends).
BLOCKED_V4: tuple[ipaddress.IPv4Network, ...] = tuple(ipaddress.IPv4Network(n) for n in (
    "0.0.0.0/8",        # "this network" (RFC 1122); 0.0.0.0 reaches localhost on Linux
    "10.0.0.0/8",       # private (RFC 1918)
    "100.64.0.0/10",    # carrier-grade NAT (RFC 6598)
    "127.0.0.0/8",      # loopback
    "169.254.0.0/16",   # link-local (RFC 3927): cloud metadata at 169.254.169.254
    "172.16.0.0/12",    # private (RFC 1918)
    "192.0.0.0/24",     # IETF protocol assignments (RFC 6890)
    "192.0.2.0/24",     # TEST-NET-1 (RFC 5737)
    "192.88.99.0/24",   # 6to4 relay anycast, deprecated (RFC 7526)
    "192.168.0.0/16",   # private (RFC 1918)
    "198.18.0.0/15",    # benchmarking (RFC 2544)
    "198.51.100.0/24",  # TEST-NET-2 (RFC 5737)
    "203.0.113.0/24",   # TEST-NET-3 (RFC 5737)
    "224.0.0.0/4",      # multicast (RFC 5771)
    "240.0.0.0/4",      # reserved (RFC 1112), includes 255.255.255.255
))

_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
#: IPv6 networks blocked inside global unicast 2000::/3 (everything outside it is blocked).
BLOCKED_V6: tuple[ipaddress.IPv6Network, ...] = tuple(ipaddress.IPv6Network(n) for n in (
    "2001:db8::/32",    # documentation (RFC 3849)
    "3fff::/20",        # documentation (RFC 9637)
))
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")

# As (first, last) integer ranges: a membership test is two comparisons.
_V4_RANGES = tuple((int(n.network_address), int(n.broadcast_address)) for n in BLOCKED_V4)
_V6_RANGES = tuple((int(n.network_address), int(n.broadcast_address)) for n in BLOCKED_V6)


def _v4_public(ip: ipaddress.IPv4Address) -> bool:
    value = int(ip)
    return not any(lo <= value <= hi for lo, hi in _V4_RANGES)


def _v6_public(ip: ipaddress.IPv6Address) -> bool:
    mapped = ip.ipv4_mapped
    if mapped is not None:
        return _v4_public(mapped)
    if ip in _NAT64:
        return _v4_public(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    if ip not in _GLOBAL_UNICAST:
        return False
    value = int(ip)
    if any(lo <= value <= hi for lo, hi in _V6_RANGES):
        return False
    embedded = ip.sixtofour
    if embedded is None and ip.teredo is not None:
        embedded = ip.teredo[1]
    return embedded is None or _v4_public(embedded)


@functools.lru_cache(maxsize=4096)
def is_ip(text: str) -> bool:
    """Whether ``text`` is an IPv4 or IPv6 address literal (no brackets, no port)."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def is_public_address(ip: str) -> bool:
    """True if ``ip`` (an IPv4 or IPv6 literal) is a public unicast address.

    Anything that does not parse as an address is not public: the guard fails
    closed. An IPv6 zone (``fe80::1%eth0``) is accepted by the parser and the
    address judged without it.
    """
    try:
        addr = ipaddress.ip_address(ip.strip("[]"))
    except ValueError:
        return False
    if addr.version == 4:
        return _v4_public(addr)
    return _v6_public(addr)


def filter_public(addresses: Iterable[str]) -> tuple[str, ...]:
    """The public addresses among ``addresses``, in their order."""
    return tuple(a for a in addresses if is_public_address(a))
