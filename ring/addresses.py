"""Ring addresses: what a member advertises, what it binds, and what ZeroMQ needs to use them (pure).

A ring address is ``tcp://HOST:PORT`` (ZMQ RFC 41's tcp transport), where
HOST is one of

- an IPv4 literal, ``tcp://10.0.0.5:5555``;
- an IPv6 literal in brackets (RFC 3986 §3.2.2), ``tcp://[2001:db8::5]:5555``,
  ``tcp://[::1]:5555``;
- a DNS name (RFC 1123 §2.1 labels: letters, digits and ``-``, 1-63 each, at
  most 253 in all; ``_`` is let through inside a label, as container
  runtimes name services with it and a hosts file or resolver answers them),
  ``tcp://ringcrawl-0.ringcrawl:5555``.

Two addresses per member (the shape of Kafka's ``listeners`` and
``advertised.listeners``, of Cassandra's ``listen_address`` and
``broadcast_address``):

- its **address**, the one it advertises: what the others connect to, what
  its gossip records and ``ring status`` carry, what cluster.toml lists;
- its **bind**, where its socket listens: by default the address itself
  when that is a literal (as before binds existed: a loopback ring stays on
  loopback), and **every interface on the address's port** when the address
  is a name (``tcp://*:PORT``; ``localhost`` apart, RFC 6761 §6.3): the name is what others resolve, and in a
  pod, a container or behind NAT it need not resolve to an interface of
  this machine at all, or not yet when the peer starts. A bind may also be
  ``*``, ``0.0.0.0`` or ``[::]`` explicitly, and its port may differ from
  the advertised one (a NAT or a container's published port).

Names are resolved by libzmq each time it opens a connection, reconnects
included (``tcp_connecter_t::open`` in libzmq 4.3; measured here with
libzmq 4.3.5: a DEALER whose peer restarted at a new address for the same
name, in a network namespace with its own hosts file, reached it on its
own reconnect; tests/e2e/test_addresses_netns.py keeps it tested). So a
member named by a name that moves is found again without a new socket once
its old connection is gone (refused, or closed by the ZMTP heartbeat when
the old address went silent). Ownership never follows an address: the ring
is keyed by member id, and an address is only where that id is reached.

ZeroMQ needs ``ZMQ_IPV6`` on a socket before it binds or connects to an
IPv6 literal (without it a bind fails with ENODEV and a connect never
completes, silently) and before a name that may resolve to one; with it a
bind of ``*`` listens on ``[::]``, both families, and on a machine without
IPv6 libzmq falls back to IPv4 by itself (``EAFNOSUPPORT``: its TCP listener
and connecter both retry with an IPv4 resolution). :func:`needs_ipv6` says
when. It is not set for IPv4 literals: with it, libzmq reports an IPv4 bind
as ``tcp://[::ffff:127.0.0.1]:PORT``, which a solo peer records for ``ring
status``.
"""

from __future__ import annotations

import enum
import ipaddress
import re
from dataclasses import dataclass

__all__ = ["Endpoint", "HostKind", "bind_address", "is_name", "needs_ipv6", "parse_endpoint"]

#: Any interface (ZeroMQ's spelling; 0.0.0.0 and [::] are its per-family forms).
ANY = "*"

_SHAPE = re.compile(r"tcp://(?:\[(?P<v6>[^\]]*)\]|(?P<host>[^:/\[\]]*)):(?P<port>[0-9]{1,5})")
_LABEL = re.compile(r"(?!-)[A-Za-z0-9_-]{1,63}(?<!-)")

EXPECTED = ("tcp://host:port with host an IPv4 address, an IPv6 address in brackets or a DNS name, "
            "port 1-65535 (e.g. 'tcp://10.0.0.5:5555', 'tcp://[::1]:5555', 'tcp://ringcrawl-0.ringcrawl:5555')")


class HostKind(enum.Enum):
    IPV4 = "ipv4"
    IPV6 = "ipv6"
    NAME = "name"
    ANY = "any"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A parsed ``tcp://HOST:PORT``: ``host`` without brackets, ``*`` for any interface."""

    host: str
    port: int
    kind: HostKind

    def __str__(self) -> str:
        host = f"[{self.host}]" if self.kind is HostKind.IPV6 else self.host
        return f"tcp://{host}:{self.port}"


def _name_ok(host: str) -> bool:
    if not host or len(host.rstrip(".")) > 253:
        return False
    labels = host.rstrip(".").split(".")
    # All digits and dots is an IPv4 literal or nothing (RFC 1123 §2.1: a
    # top-level label is never all numeric), never a name: 999.1.1.1 is refused.
    if all(label.isdigit() for label in labels):
        return False
    return all(_LABEL.fullmatch(label) for label in labels)


def parse_endpoint(text: str, *, wildcard: bool = False) -> Endpoint:
    """``tcp://HOST:PORT`` -> :class:`Endpoint` (module docstring); ValueError says what was expected.

    ``wildcard``: a bind, where ``*``, ``0.0.0.0`` and ``[::]`` (any interface) are allowed too.
    """
    if not isinstance(text, str):
        raise ValueError(f"expected {EXPECTED}, got {text!r}")
    m = _SHAPE.fullmatch(text)
    if m is None or not 1 <= int(m["port"]) <= 65535:
        raise ValueError(f"expected {EXPECTED}, got {text!r}")
    port = int(m["port"])
    if m["v6"] is not None:
        try:
            ip6 = ipaddress.IPv6Address(m["v6"])
        except ValueError:
            raise ValueError(f"expected {EXPECTED}, got {text!r} (not an IPv6 address in the brackets)") from None
        if ip6.is_unspecified and not wildcard:
            raise ValueError(f"expected {EXPECTED}, got {text!r} ([::] is no address others can reach; "
                             f"it is a bind)")
        return Endpoint(m["v6"], port, HostKind.IPV6)
    host = m["host"]
    if host == ANY:
        if not wildcard:
            raise ValueError(f"expected {EXPECTED}, got {text!r} (* is no address others can reach; it is a bind)")
        return Endpoint(ANY, port, HostKind.ANY)
    if re.fullmatch(r"[0-9.]+", host):
        try:
            ip4 = ipaddress.IPv4Address(host)
        except ValueError:
            raise ValueError(f"expected {EXPECTED}, got {text!r} (not an IPv4 address)") from None
        if ip4.is_unspecified and not wildcard:
            raise ValueError(f"expected {EXPECTED}, got {text!r} (0.0.0.0 is no address others can reach; "
                             f"it is a bind)")
        return Endpoint(host, port, HostKind.IPV4)
    if not _name_ok(host):
        raise ValueError(f"expected {EXPECTED}, got {text!r} (not a DNS name)")
    return Endpoint(host, port, HostKind.NAME)


def _is_localhost(host: str) -> bool:
    host = host.rstrip(".").lower()
    return host == "localhost" or host.endswith(".localhost")


def _kind(address: str) -> HostKind | None:
    if address.endswith(":*"):  # zmq's "a port the OS picks"
        address = address[:-1] + "1"
    try:
        return parse_endpoint(address, wildcard=True).kind
    except ValueError:
        return None


def needs_ipv6(address: str) -> bool:
    """True when a zmq socket needs ``ZMQ_IPV6`` to bind or connect to ``address`` (module docstring).

    An IPv6 literal, a name (it may resolve to one), or any interface (``*``:
    both families). Not an IPv4 literal, nor a non-tcp endpoint (inproc, ipc).
    """
    return _kind(address) in (HostKind.IPV6, HostKind.NAME, HostKind.ANY)


def is_name(address: str) -> bool:
    """True when ``address``'s host is a DNS name (resolved by libzmq at each connection)."""
    return _kind(address) is HostKind.NAME


def bind_address(address: str, bind: str = "") -> str:
    """Where a member advertising ``address`` listens: ``bind`` if given, else the default of the module docstring.

    ``""`` for a member without an address (a solo peer). Both are taken as
    checked already (a ValueError otherwise).
    """
    if bind:
        return str(parse_endpoint(bind, wildcard=True))
    if not address:
        return ""
    ep = parse_endpoint(address)
    # RFC 6761 §6.3: localhost names are loopback, and a ring on them stays there.
    if ep.kind is HostKind.NAME and not _is_localhost(ep.host):
        return str(Endpoint(ANY, ep.port, HostKind.ANY))
    return str(ep)
