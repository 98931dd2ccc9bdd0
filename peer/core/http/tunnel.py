"""What a proxy is asked and what its answer means, sans-IO: the CONNECT request, the verdicts.

An HTTP proxy is asked ``CONNECT host:port HTTP/1.1`` (RFC 9110 §9.3.6)
and answers with a response head, read by
:class:`peer.core.http.http1.ResponseReader` (h11's rules, its caps); a SOCKS5
proxy's exchange is python-socks's (``peer.net.proxy``), and only its reply
code is judged here. A proxy's answer is remote input: it never raises
anything but a :class:`~peer.errors.FetchError` of a proxy kind.

Verdicts, by whose fault the fetch failed:

- ``proxy_auth``: the proxy wants other credentials (407, RFC 9110 §15.5.8;
  SOCKS5 username/password refused, RFC 1929 §2, or no method we offered
  accepted, RFC 1928 §3);
- ``proxy_refused``: the proxy answered, and could not or would not reach
  the target: CONNECT 403 (an ACL, such as Squid's CONNECT to a port not
  in ``SSL_ports``), 502, 503, 504; SOCKS5 reply codes 1-8 (RFC 1928 §6:
  general failure, not allowed by ruleset, network or host unreachable,
  refused, TTL expired, command or address type not supported);
- ``proxy``: the proxy could not be reached, or broke the protocol: any
  other status (400, 405, 501, a 101 or a 3xx: no tunnel), a malformed or
  over-long head, a close before the answer, bytes after a 2xx head before
  we spoke (a tunnel carries nothing before its client's first bytes).

A 2xx head may carry Content-Length or Transfer-Encoding; RFC 9110 §9.3.6
says a client must ignore them, and we do: the tunnel starts after the head.
"""

from __future__ import annotations

import base64

from peer.core.config.proxies import Credentials
from peer.errors import ErrorKind, FetchError

__all__ = ["MAX_CONNECT_HEAD", "REFUSED_STATUS", "SOCKS5_REPLIES", "connect_request", "connect_verdict", "socks_verdict"]

#: The longest CONNECT answer head read: a proxy's error page may follow it, but
#: no head needs more than a few hundred bytes (Squid's are under 1 KiB).
MAX_CONNECT_HEAD = 16 * 1024
#: CONNECT answers that mean "the proxy will not or cannot reach the target".
REFUSED_STATUS = frozenset({403, 502, 503, 504})


def connect_request(host: str, port: int, user_agent: str, credentials: Credentials | None) -> bytes:
    """The CONNECT request head for ``host:port`` (an IPv6 literal in brackets, RFC 9110 §7.2)."""
    authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    agent = "".join(" " if c in "\r\n\x00" else c for c in user_agent)
    lines = [f"CONNECT {authority} HTTP/1.1", f"Host: {authority}", f"User-Agent: {agent}"]
    if credentials is not None:
        # Basic (RFC 7617): user-id ":" password, UTF-8 (its charset parameter's only value).
        token = base64.b64encode(f"{credentials.username}:{credentials.password}".encode()).decode("ascii")
        lines.append(f"Proxy-Authorization: Basic {token}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")


def connect_verdict(status: int, proxy: str, target: str) -> FetchError | None:
    """None if a CONNECT answered ``status`` opened the tunnel, else the error to raise."""
    if 200 <= status < 300:
        return None
    if status == 407:
        return FetchError(ErrorKind.PROXY_AUTH, f"{proxy} refused the credentials (407)")
    if status in REFUSED_STATUS:
        return FetchError(ErrorKind.PROXY_REFUSED, f"{proxy} could not reach {target} ({status})")
    return FetchError(ErrorKind.PROXY, f"{proxy} answered CONNECT {target} with {status}")


#: SOCKS5 reply codes (RFC 1928 §6), for a person.
SOCKS5_REPLIES = {
    1: "general SOCKS server failure", 2: "connection not allowed by ruleset",
    3: "network unreachable", 4: "host unreachable", 5: "connection refused",
    6: "TTL expired", 7: "command not supported", 8: "address type not supported",
}


def socks_verdict(code: int | None, auth: bool, proxy: str, target: str) -> FetchError:
    """The error of a failed SOCKS5 exchange: its reply ``code``, or ``auth`` refused, or neither."""
    if auth:
        return FetchError(ErrorKind.PROXY_AUTH, f"{proxy} refused the credentials")
    if code in SOCKS5_REPLIES:
        return FetchError(ErrorKind.PROXY_REFUSED, f"{proxy} could not reach {target}: {SOCKS5_REPLIES[code]}")
    return FetchError(ErrorKind.PROXY, f"{proxy} broke the SOCKS5 exchange")
