"""The resolver: host name -> addresses, through the DNS cache and the SSRF guard.

The edge around two pure cores. :class:`peer.core.dns.cache.DnsCache` decides what
a lookup needs (cached for its TTL, RFC 1035; failures per RFC 2308); :func:`peer.core.dns.guard.is_public_address`
decides which answers we may connect to. This module does the querying:

- ``[dns] nameservers`` set: dnspython's async resolver on its trio backend,
  which returns TTLs. An ``A`` and an ``AAAA`` query go out together (RFC
  8305 §3), so a dual-stack host's answer holds both families for the
  connector to race (:mod:`peer.core.dns.eyeballs`). Once the ``A`` answer is
  in, the ``AAAA`` one gets :data:`~peer.core.dns.eyeballs.RESOLUTION_DELAY`
  more (50 ms), then the host is taken as IPv4-only until the answer
  expires; the ``A`` answer is always waited for. The answer lists the
  ``A`` addresses first (:meth:`Resolver.peek`, the per-IP budget's key,
  stays the IPv4 address it was), the TTL is the smaller of the two.
- no nameservers: the system resolver, ``trio.socket.getaddrinfo`` (run in a
  thread by trio), which asks for both families itself. It tells no TTL, so
  the answer lives ``min_ttl``.

Concurrent lookups of one name make one query: the first caller gets
:class:`~peer.core.dns.cache.Miss` and queries; the others get
:class:`~peer.core.dns.cache.Wait` and sleep on a :class:`trio.Event` until it is
done, then ask the cache again. If the querying task is cancelled (its
fetch hit the total deadline), the cache forgets the in-flight mark and the
waiters wake up; the next of them to ask becomes the new querier.

A failed lookup (NXDOMAIN, no address, timeout, SERVFAIL) is cached for
``negative_ttl`` (RFC 2308 §5 and §7.1 allow caching both the negative answer
and a server failure) and raises ``FetchError("dns")``. Addresses the guard
refuses are dropped; if none is left the lookup raises
``FetchError("blocked")``. The guard runs on every call, cache hits, static
entries and IP literals included, so a static ``127.0.0.1`` is refused unless
``allow_private``.

``cache=False`` is for the benchmark's baseline only: static entries and
literals are still answered, but every other lookup is a query of its own,
neither cached nor merged, like a client that calls getaddrinfo for each
connection.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from dns import asyncbackend, asyncresolver, rdatatype
    from dns import resolver as dns_resolver

from peer.core.config.cluster import DnsConfig
from peer.core.dns.cache import DnsCache, DnsStats, Hit, Miss, NegativeHit, Wait
from peer.core.dns.eyeballs import RESOLUTION_DELAY
from peer.errors import ErrorKind, FetchError
from peer.core.dns.guard import filter_public, is_public_address

__all__ = ["Resolver", "is_public_address"]

# dnspython retries over its nameservers until ``lifetime``; a fetch's total
# deadline usually cancels it first, but a lookup outside one must end too.
_DNS_TIMEOUT = 2.0
_DNS_LIFETIME = 5.0


def _norm(name: str) -> str:
    # Must agree with DnsCache's key, so a Wait finds the querier's event.
    name = name.lower()
    return name[:-1] if name.endswith(".") else name


def _split_nameserver(text: str) -> tuple[str, int]:
    """``IP`` or ``IP:port`` or ``[IPv6]:port`` (validated by peer.core.config.cluster) -> (ip, port)."""
    if text.startswith("["):
        ip, _, port = text[1:].partition("]:")
        return ip.rstrip("]"), int(port or 53)
    if text.count(":") == 1:
        ip, _, port = text.partition(":")
        return ip, int(port)
    return text, 53


def _unguarded(name: str, addresses: tuple[str, ...]) -> tuple[str, ...]:
    return addresses


class _LookupFailed(Exception):
    """A query that got an answer saying 'no' (or no answer at all); negatively cached."""


class Resolver:
    """Resolves host names for the fetcher: DNS cache, one query per name, SSRF guard."""

    __slots__ = ("_cache", "_caching", "_allow_private", "_clock", "_events",
                 "_dns", "_backend", "queries")

    def __init__(self, dns: DnsConfig, *, allow_private: bool,
                 clock: Callable[[], float] = trio.current_time, cache: bool = True) -> None:
        self._caching = cache
        if cache:
            self._cache = DnsCache(dns.resolve, min_ttl=dns.min_ttl,
                                   max_ttl=dns.max_ttl, negative_ttl=dns.negative_ttl,
                                   max_size=dns.cache_size)
        else:
            # Only the static entries and literals; answers are never stored.
            self._cache = DnsCache(dns.resolve, min_ttl=0, max_ttl=0, negative_ttl=0)
        self._allow_private = allow_private
        self._clock = clock
        self._events: dict[str, trio.Event] = {}
        #: Queries actually sent (a name server's A and AAAA count as two).
        self.queries = 0
        self._dns: asyncresolver.Resolver | None = None
        self._backend: asyncbackend.Backend | None = None
        if dns.nameservers:
            # dnspython only where [dns] nameservers is set: its import is
            # 0.1 s of every peer start that asks the system resolver instead.
            from dns import asyncbackend, asyncresolver, nameserver

            res = asyncresolver.Resolver(configure=False)
            res.nameservers = [nameserver.Do53Nameserver(*_split_nameserver(ns))
                               for ns in dns.nameservers]
            res.cache = None  # DnsCache is the cache; two would disagree on TTLs
            res.timeout = _DNS_TIMEOUT
            res.lifetime = _DNS_LIFETIME
            self._dns = res
            self._backend = asyncbackend.get_backend("trio")

    def stats(self) -> DnsStats:
        """The cache's counters (lookups, hits, misses, merged...)."""
        return self._cache.stats()

    def peek(self, host: str) -> str | None:
        """The first address already known for ``host`` (no query, no guard), else None."""
        addresses = self._cache.peek(host, self._clock())
        return addresses[0] if addresses else None

    def known(self, host: str) -> tuple[str, ...]:
        """The addresses ``host`` has without a query (an IP literal, a static entry, a cached
        answer), guard applied; () if none. For a proxy that resolves names itself: the
        guard still sees what can be known here (peer/core/config/proxies.py rule 1)."""
        name = _norm(host)
        addresses = self._cache.peek(name, self._clock())
        return self._guard(name, addresses) if addresses else ()

    def static(self, host: str) -> tuple[str, ...]:
        """The addresses ``[dns] resolve`` gives ``host``, guard applied; () if it gives none."""
        name = _norm(host)
        addresses = self._cache.static(name)
        return self._guard(name, addresses) if addresses else ()

    async def resolve(self, host: str, *, guard: bool = True) -> tuple[str, ...]:
        """The addresses to connect to for ``host`` (no port), guard applied.

        Raises ``FetchError("dns")`` when the name does not resolve and
        ``FetchError("blocked")`` when every address is refused by the guard.
        ``guard=False`` is for a proxy's own name, which has a guard of its own
        (``crawl.proxy_allow_private``, applied by ``peer.net.proxy``).
        """
        name = _norm(host)
        cache = self._cache
        check = self._guard if guard else _unguarded
        while True:
            decision = cache.lookup(name, self._clock())
            if isinstance(decision, Hit):
                return check(name, decision.addresses)
            if isinstance(decision, NegativeHit):
                raise FetchError(ErrorKind.DNS, f"{name}: {decision.error}")
            if isinstance(decision, Wait):
                event = self._events.get(name)
                if event is not None:
                    await event.wait()
                else:  # pragma: no cover - Wait always has an event; never spin
                    await trio.lowlevel.checkpoint()
                continue
            assert isinstance(decision, Miss)
            if not self._caching:
                cache.cancelled(name)  # no merging either: every lookup queries
                return check(name, await self._query_uncached(name))
            return check(name, await self._query_cached(name))

    # ------------------------------------------------------------- internals

    async def _query_cached(self, name: str) -> tuple[str, ...]:
        event = self._events[name] = trio.Event()
        try:
            try:
                addresses, ttl = await self._query(name)
            except _LookupFailed as exc:
                self._cache.failed(name, str(exc), self._clock())
                raise FetchError(ErrorKind.DNS, f"{name}: {exc}") from None
            except BaseException:
                self._cache.cancelled(name)
                raise
            self._cache.resolved(name, addresses, ttl, self._clock())
            return addresses
        finally:
            del self._events[name]
            event.set()

    async def _query_uncached(self, name: str) -> tuple[str, ...]:
        try:
            addresses, _ = await self._query(name)
        except _LookupFailed as exc:
            raise FetchError(ErrorKind.DNS, f"{name}: {exc}") from None
        return addresses

    async def _query(self, name: str) -> tuple[tuple[str, ...], float | None]:
        """One lookup of ``name``: (addresses, ttl or None); _LookupFailed if none."""
        if self._dns is None:
            return await self._system(name), None
        from dns import exception as dns_exception
        from dns import rdatatype
        from dns import resolver as dns_resolver

        try:
            answers = await self._both(name)
        except dns_resolver.NXDOMAIN:
            raise _LookupFailed("no such domain (NXDOMAIN)") from None
        except dns_resolver.NoNameservers:
            raise _LookupFailed("no nameserver answered (SERVFAIL or refused)") from None
        except dns_exception.Timeout:
            raise _LookupFailed("DNS query timed out") from None
        except dns_exception.DNSException as exc:
            raise _LookupFailed(f"DNS error: {exc}") from None
        if not answers:
            raise _LookupFailed("no A or AAAA record")
        addresses = tuple(dict.fromkeys(rd.address for answer in answers for rd in answer))
        # The smallest TTL along a CNAME chain bounds the whole answer.
        return addresses, float(min(a.chaining_result.minimum_ttl for a in answers))

    async def _both(self, name: str) -> list[dns_resolver.Answer]:
        """The A and the AAAA answer of ``name`` (those that exist), asked together.

        The A query's error, if it has one, is raised (else the AAAA's), unless the
        other query answered: a name with an address is not a failure.
        """
        from dns import exception as dns_exception
        from dns import rdatatype

        got: dict[rdatatype.RdataType, dns_resolver.Answer | None] = {}
        errors: dict[rdatatype.RdataType, dns_exception.DNSException] = {}
        done = {rdatatype.A: trio.Event(), rdatatype.AAAA: trio.Event()}

        async def ask(rdtype: rdatatype.RdataType) -> None:
            try:
                got[rdtype] = await self._ask(name, rdtype)
            except dns_exception.DNSException as exc:
                errors[rdtype] = exc
            done[rdtype].set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, rdatatype.A)
            nursery.start_soon(ask, rdatatype.AAAA)
            await done[rdatatype.A].wait()
            if got.get(rdatatype.A) is not None:
                with trio.move_on_after(RESOLUTION_DELAY):
                    await done[rdatatype.AAAA].wait()
                nursery.cancel_scope.cancel()
        answers = [a for a in (got.get(rdatatype.A), got.get(rdatatype.AAAA)) if a is not None]
        if not answers:
            error = errors.get(rdatatype.A) or errors.get(rdatatype.AAAA)
            if error is not None:
                raise error
        return answers

    async def _ask(self, name: str, rdtype: rdatatype.RdataType) -> dns_resolver.Answer | None:
        assert self._dns is not None
        from dns import resolver as dns_resolver

        self.queries += 1
        try:
            return await self._dns.resolve(name, rdtype, search=False, backend=self._backend)
        except dns_resolver.NoAnswer:
            return None

    async def _system(self, name: str) -> tuple[str, ...]:
        self.queries += 1
        try:
            infos = await trio.socket.getaddrinfo(name, None, type=trio.socket.SOCK_STREAM)
        except trio.socket.gaierror as exc:
            raise _LookupFailed(exc.strerror or str(exc)) from None
        except (OSError, UnicodeError) as exc:
            raise _LookupFailed(str(exc)) from None
        addresses = tuple(dict.fromkeys(str(info[4][0]) for info in infos))
        if not addresses:
            raise _LookupFailed("no address")
        return addresses

    def _guard(self, name: str, addresses: tuple[str, ...]) -> tuple[str, ...]:
        if self._allow_private:
            return addresses
        allowed = filter_public(addresses)
        if not allowed:
            raise FetchError(ErrorKind.BLOCKED, f"{name} resolves to {', '.join(addresses)}: "
                                        "not a public address (set crawl.allow_private to allow)")
        return allowed
