"""The DNS cache policy: which names need a query, and what to answer meanwhile.

A crawler asks for the same few hosts over and over, and an uncached lookup
costs a round trip to a name server for every one of them: Heydon and Najork
found DNS resolution a main bottleneck of a crawler ("Mercator: A scalable,
extensible Web crawler", World Wide Web 2(4), 1999) and cached it
(``scripts/bench_dns.py`` prints the throughput with and without this cache
against a name server that answers after 300 ms). Answers live their TTL
(RFC 1035 §3.2.1, clamped to ``[dns] min_ttl``/``max_ttl``), failures their
negative TTL (RFC 2308). This module is only the policy (no sockets): the resolver at
the edge asks :meth:`DnsCache.lookup` and acts on the :data:`Decision`:

- :class:`Hit` -- use these addresses (from the cache, a static override or
  an IP literal; ``static`` tells the last two apart from DNS answers).
- :class:`NegativeHit` -- the name failed recently; fail again at once
  (RFC 2308 negative caching), for ``negative_ttl`` seconds.
- :class:`Miss` -- resolve it, then report :meth:`resolved`, :meth:`failed`
  or, if the resolving task is cancelled, :meth:`cancelled`. The name is now
  *in flight*.
- :class:`Wait` -- someone is already resolving it: wait for that, then ask
  again. So concurrent lookups of one name merge into one query.

Rules:

- Names are case-insensitive (RFC 4343) and a trailing dot is dropped.
- Static overrides are like curl ``--resolve`` but take fnmatch globs
  (``*.web.test``), case-insensitive. An exact name beats an IP literal,
  which beats any glob; among globs the longest pattern (the most specific)
  wins, then the first given. They never expire.
- An IP literal (``10.0.0.1``, ``::1``, ``[::1]``) is its own answer.
- Answers from a glob or a literal are memoised in the LRU (they cost a regex
  scan or an ``ipaddress`` parse) and count as static hits; exact static
  names need no memo.
- A TTL is clamped to ``[min_ttl, max_ttl]``: below 30 s a busy crawler would
  query the same host every few pages, above an hour it would not notice a
  host that moved. ``ttl=None`` (the system resolver tells no TTL) is cached
  for ``min_ttl``, the shortest we allow, since nothing says it may live
  longer; the edge may pass its configured TTL instead.
- An answer stored at ``t`` with TTL ``T`` is served for ``t <= now < t + T``:
  at exactly ``t + T`` it is expired.
- At most ``max_size`` answers are kept; the least recently used goes first.
  In-flight names are not answers and are not counted.

``hit_rate`` is the share of lookups answered at once, without a query and
without waiting: ``(hits + static_hits + negative_hits) / lookups``. A merged
lookup (:class:`Wait`) is not a hit: the caller still waits for the network.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Decision", "DnsCache", "DnsStats", "Hit", "Miss", "NegativeHit", "Wait"]


@dataclass(frozen=True, slots=True)
class Hit:
    """Connect to one of these addresses."""

    addresses: tuple[str, ...]
    static: bool = False


@dataclass(frozen=True, slots=True)
class NegativeHit:
    """The name failed to resolve recently, with this error."""

    error: str


@dataclass(frozen=True, slots=True)
class Wait:
    """A lookup of this name is in flight: wait for it, then look up again."""


@dataclass(frozen=True, slots=True)
class Miss:
    """Resolve the name yourself and report the result; it is now in flight."""


Decision = Hit | NegativeHit | Wait | Miss

_WAIT = Wait()
_MISS = Miss()
_INF = float("inf")


@dataclass(frozen=True, slots=True)
class DnsStats:
    """A snapshot of the cache's counters."""

    lookups: int
    hits: int
    static_hits: int
    negative_hits: int
    misses: int
    merged: int
    evictions: int
    size: int
    in_flight: int

    @property
    def hit_rate(self) -> float:
        """Share of lookups answered at once (see the module docstring)."""
        if not self.lookups:
            return 0.0
        return (self.hits + self.static_hits + self.negative_hits) / self.lookups


def _norm(name: str) -> str:
    name = name.lower()
    return name[:-1] if name.endswith(".") else name


def _ip_literal(name: str) -> str | None:
    """The canonical address if ``name`` is an IPv4/IPv6 literal, else None."""
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    # Cheap pre-test: a host name never ends in a digit (TLDs are alphabetic),
    # an IPv4 literal always does and an IPv6 one contains ':'.
    if not name or not (name[-1].isdigit() or ":" in name):
        return None
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return None


def _addresses(value: str | Sequence[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


class DnsCache:
    """LRU cache of DNS answers with negative entries, in-flight merging and static overrides."""

    __slots__ = (
        "_exact", "_globs", "_min_ttl", "_max_ttl", "_negative_ttl", "_max_size",
        "_cache", "_pending", "_lookups", "_hits", "_static_hits",
        "_negative_hits", "_misses", "_merged", "_evictions",
    )

    def __init__(
        self,
        static: Mapping[str, str | Sequence[str]] | None = None,
        min_ttl: float = 30,
        max_ttl: float = 3600,
        negative_ttl: float = 60,
        max_size: int = 100_000,
    ) -> None:
        self._exact: dict[str, Hit] = {}
        globs: list[tuple[int, int, re.Pattern[str], Hit]] = []
        for i, (pattern, value) in enumerate((static or {}).items()):
            key = _norm(pattern)
            hit = Hit(_addresses(value), static=True)
            if any(c in key for c in "*?["):
                globs.append((-len(key), i, re.compile(fnmatch.translate(key)), hit))
            else:
                self._exact[key] = hit
        globs.sort(key=lambda g: (g[0], g[1]))
        self._globs = [(rx.match, hit) for _, _, rx, hit in globs]
        self._min_ttl = min_ttl
        self._max_ttl = max_ttl
        self._negative_ttl = negative_ttl
        self._max_size = max_size
        # name -> (expires_at, Hit | NegativeHit), least recently used first.
        self._cache: OrderedDict[str, tuple[float, Hit | NegativeHit]] = OrderedDict()
        self._pending: set[str] = set()
        self._lookups = self._hits = self._static_hits = self._negative_hits = 0
        self._misses = self._merged = self._evictions = 0

    def lookup(self, name: str, now: float) -> Decision:
        """What to do about ``name`` at ``now``; a :class:`Miss` marks it in flight."""
        self._lookups += 1
        name = _norm(name)
        hit = self._exact.get(name)
        if hit is not None:
            self._static_hits += 1
            return hit
        cache = self._cache
        entry = cache.get(name)
        if entry is not None:
            if now < entry[0]:
                cache.move_to_end(name)
                answer = entry[1]
                if isinstance(answer, NegativeHit):
                    self._negative_hits += 1
                elif answer.static:
                    self._static_hits += 1
                else:
                    self._hits += 1
                return answer
            del cache[name]
        hit = self._literal_or_glob(name)
        if hit is not None:
            # Memoised: ipaddress and the glob scan cost microseconds a call.
            self._static_hits += 1
            self._store(name, _INF, hit)
            return hit
        if name in self._pending:
            self._merged += 1
            return _WAIT
        self._pending.add(name)
        self._misses += 1
        return _MISS

    def peek(self, name: str, now: float) -> tuple[str, ...] | None:
        """The addresses already known for ``name`` (static, literal or cached), else None.

        No counters move and nothing is marked in flight: this is for
        planning (per-IP politeness wants a new host's IP before its first
        fetch), not a lookup.
        """
        name = _norm(name)
        hit = self._exact.get(name)
        if hit is not None:
            return hit.addresses
        entry = self._cache.get(name)
        if entry is not None and now < entry[0]:
            answer = entry[1]
            return None if isinstance(answer, NegativeHit) else answer.addresses
        hit = self._literal_or_glob(name)
        return None if hit is None else hit.addresses

    def static(self, name: str) -> tuple[str, ...] | None:
        """The addresses a static override gives ``name`` (``[dns] resolve``), else None.

        Not a literal's nor a DNS answer's: what only this machine knows of
        the name, which a proxy that resolves names itself cannot know.
        """
        name = _norm(name)
        hit = self._exact.get(name)
        if hit is None and _ip_literal(name) is None:
            hit = next((h for match, h in self._globs if match(name)), None)
        return None if hit is None else hit.addresses

    def resolved(self, name: str, addresses: Sequence[str], ttl: float | None, now: float) -> None:
        """The query for ``name`` answered; cache it for the clamped ``ttl``.

        An empty answer is cached as a failure: there is nothing to connect to.
        """
        if not addresses:
            self.failed(name, "no addresses", now)
            return
        name = _norm(name)
        self._pending.discard(name)
        ttl = self._min_ttl if ttl is None else min(max(ttl, self._min_ttl), self._max_ttl)
        self._store(name, now + ttl, Hit(tuple(addresses)))

    def failed(self, name: str, error: str, now: float) -> None:
        """The query for ``name`` failed; answer :class:`NegativeHit` for ``negative_ttl``."""
        name = _norm(name)
        self._pending.discard(name)
        if self._negative_ttl > 0:
            self._store(name, now + self._negative_ttl, NegativeHit(error))
        else:
            self._cache.pop(name, None)

    def cancelled(self, name: str) -> None:
        """The resolving task gave up; the next lookup of ``name`` is a :class:`Miss` again."""
        self._pending.discard(_norm(name))

    def stats(self) -> DnsStats:
        """A snapshot of the counters."""
        return DnsStats(
            lookups=self._lookups, hits=self._hits, static_hits=self._static_hits,
            negative_hits=self._negative_hits, misses=self._misses, merged=self._merged,
            evictions=self._evictions, size=len(self._cache), in_flight=len(self._pending),
        )

    @property
    def hit_rate(self) -> float:
        """Share of lookups answered at once (see the module docstring)."""
        return self.stats().hit_rate

    def __len__(self) -> int:
        return len(self._cache)

    # ------------------------------------------------------------- internals

    def _literal_or_glob(self, name: str) -> Hit | None:
        # The literal first: a catch-all "*" is meant for names, not for an
        # address the URL already spells out.
        ip = _ip_literal(name)
        if ip is not None:
            return Hit((ip,), static=True)
        for match, hit in self._globs:
            if match(name):
                return hit
        return None

    def _store(self, name: str, expires: float, answer: Hit | NegativeHit) -> None:
        cache = self._cache
        cache[name] = (expires, answer)
        cache.move_to_end(name)
        while len(cache) > self._max_size:
            cache.popitem(last=False)
            self._evictions += 1
