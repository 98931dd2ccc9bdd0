"""Happy eyeballs (RFC 8305): the order a host's addresses are tried in, and the delays.

A host with an AAAA and an A record can be reachable over one family and
not the other: a network that drops IPv6 packets (a black hole, no answer at
all) makes a client that tries its addresses one at a time wait a whole
connect timeout before the next. RFC 8305 races them instead, staggered so
that a healthy first address costs no second connection.
:class:`peer.net.connections.Connector` does the racing; this module decides
the order and holds the two delays. The rules:

- **De-duplicated.** An address given twice (``::1`` and ``0:0::1``, a DNS
  answer that repeats itself) is tried once, where it first appears.
- **IPv6 first, then the families interleaved** (§4, with a "First Address
  Family Count" of 1): v6, v4, v6, v4, ..., the rest of the longer family
  at the end. Within a family the resolver's order is kept (the system
  resolver's is RFC 6724's, a name server's is its own).
- **Nothing added.** The order is a permutation of a subset of the
  addresses it was given, each returned as spelt there: the resolver's SSRF
  guard (:mod:`peer.core.dns.guard`) judged exactly those strings, and no
  other address is ever connected to.
- **Staggered.** The next attempt starts when the one before fails or
  :data:`ATTEMPT_DELAY` has passed, whichever comes first (§5); each attempt
  still has its own connect timeout, and the first to connect wins (the
  others are cancelled and their sockets closed).

Pure: no I/O; the orders are memoised, since a crawler connects to the same
few hosts' address sets over and over.
"""

from __future__ import annotations

import functools
import ipaddress

__all__ = ["ATTEMPT_DELAY", "RESOLUTION_DELAY", "attempt_order"]

#: Seconds before the next address is tried while the one before has not answered:
#: RFC 8305 §5's recommended Connection Attempt Delay (it allows 100 ms to 2 s; 250 ms
#: is also trio's and Chrome's default, and a loopback or LAN connect is far shorter).
ATTEMPT_DELAY = 0.25

#: Seconds the resolver waits for the AAAA answer once the A answer is in (RFC 8305 §3's
#: Resolution Delay): past it the host is taken as IPv4-only until its answer expires.
RESOLUTION_DELAY = 0.05


def _key(address: str) -> str:
    """The address's canonical spelling (for de-duplication); itself if it does not parse."""
    try:
        return str(ipaddress.ip_address(address.strip("[]")))
    except ValueError:
        return address


@functools.lru_cache(maxsize=4096)
def attempt_order(addresses: tuple[str, ...]) -> tuple[str, ...]:
    """``addresses`` in the order they are tried: de-duplicated, IPv6 first, families interleaved."""
    if len(addresses) < 2:
        return addresses
    seen: set[str] = set()
    v6: list[str] = []
    v4: list[str] = []
    for address in addresses:
        key = _key(address)
        if key in seen:
            continue
        seen.add(key)
        (v6 if ":" in key else v4).append(address)
    if not v6 or not v4:
        return tuple(v6 or v4)
    order: list[str] = []
    for pair in zip(v6, v4):
        order += pair
    shorter = min(len(v6), len(v4))
    order += v6[shorter:] or v4[shorter:]
    return tuple(order)
