"""A local authoritative DNS server for one zone: the resolver's and fetcher's test peer.

:class:`LocalDns` answers ``A`` for every name under its zone (``web.test``
by default, the site graph's hosts) with a loopback address (and ``AAAA``
with an IPv6 one if given one, for the dual-stack tests), after an
optional delay, on a random UDP port of 127.0.0.1, and counts the questions
it was asked. A crawler reaches it with ``[dns] nameservers =
[server.nameserver]``. It serves tests/edges/test_resolver.py, tests/edges/test_fetcher.py,
tests/edges/test_hostileweb.py and scripts/bench_dns.py (what the DNS cache buys).

Rules: dnspython builds and parses the messages (no hand-written wire
format); every answer is sent from its own task, so a delay does not
serialise queries; a packet that is not DNS is dropped, as a real server does.
"""

from __future__ import annotations

from collections import Counter

import dns.exception
import dns.message
import dns.name
import dns.rcode
import dns.rdatatype
import dns.rrset
import trio

__all__ = ["LocalDns"]


class LocalDns:
    """An authoritative DNS server on 127.0.0.1 (UDP, random port) for one zone.

    Answers ``A`` for every name under ``zone`` with ``address`` and ``ttl``
    (``AAAA`` with ``address6`` if set; either None: no record of the type),
    an empty NOERROR for other types there, and NXDOMAIN outside the zone.
    ``delay`` seconds pass before each answer (queries are answered
    concurrently); ``aaaa_delay``, if set, before an AAAA one instead. ``queries`` counts the questions by name (lower case, no
    trailing dot). ``delay`` and ``ttl`` may be changed while serving.
    """

    def __init__(self, zone: str = "web.test", address: str | None = "127.0.0.1", *,
                 ttl: int = 300, delay: float = 0.0, address6: str | None = None,
                 aaaa_delay: float | None = None) -> None:
        self.zone = dns.name.from_text(zone)
        self.address = address
        self.address6 = address6
        self.ttl = ttl
        self.delay = delay
        self.aaaa_delay = aaaa_delay
        self.queries: Counter[str] = Counter()
        self.port = 0

    @property
    def nameserver(self) -> str:
        """The ``[dns] nameservers`` entry for this server."""
        return f"127.0.0.1:{self.port}"

    @property
    def total(self) -> int:
        return sum(self.queries.values())

    async def serve(self, *, task_status: trio.TaskStatus[LocalDns] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; ``started(self)`` once bound."""
        sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_DGRAM)
        with sock:
            await sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
            async with trio.open_nursery() as nursery:
                task_status.started(self)
                while True:
                    data, peer = await sock.recvfrom(65535)
                    nursery.start_soon(self._answer, sock, data, peer)

    async def _answer(self, sock: trio.socket.SocketType, data: bytes, peer: tuple[str, int]) -> None:
        try:
            query = dns.message.from_wire(data)
        except dns.exception.DNSException:
            return  # not DNS: drop it, as a real server would
        if len(query.question) != 1:
            return
        question = query.question[0]
        self.queries[question.name.to_text(omit_final_dot=True).lower()] += 1
        delay = (self.aaaa_delay if question.rdtype == dns.rdatatype.AAAA and self.aaaa_delay is not None
                 else self.delay)
        if delay > 0:
            await trio.sleep(delay)
        response = dns.message.make_response(query)
        if not question.name.is_subdomain(self.zone):
            response.set_rcode(dns.rcode.NXDOMAIN)
        elif question.rdtype == dns.rdatatype.A and self.address is not None:
            response.answer.append(dns.rrset.from_text(question.name, self.ttl, "IN", "A", self.address))
        elif question.rdtype == dns.rdatatype.AAAA and self.address6 is not None:
            response.answer.append(dns.rrset.from_text(question.name, self.ttl, "IN", "AAAA", self.address6))
        try:
            await sock.sendto(response.to_wire(), peer)
        except OSError:
            pass  # the client left
