"""Consistent hashing of hosts onto peers, with virtual nodes and weights.

Every peer builds the same ``HashRing`` from the same live member set and so
decides *locally*, with no coordinator, which peer owns a host. This is the
assignment function of UbiCrawler (Boldi et al., "UbiCrawler: a scalable fully
distributed web crawler", 2004, §3: consistent hashing so that a crash or a
join moves only the hosts of the peer concerned) and of BUbiNG (Boldi et al.,
2016, which uses the same scheme for its agents).

Each peer gets ``round(vnodes * weight)`` points on a 64-bit circle (at least
one); a host belongs to the first point clockwise of its own hash. Points are
the low 64 bits of ``mmh3.hash128`` (MurmurHash3 x64), which spreads short,
similar keys such as ``p1#17`` well. With 256 points per unit of weight the
busiest peer carries about 5% (3 peers) to 12% (32 peers) more hosts than the
mean; ``scripts/bench_cores.py`` prints the figures.

Why hosts and not URLs: politeness, robots.txt, the DNS cache and the seen-URL
Bloom filter are all per host, so one owner per host keeps each of them in one
place (the "URLs travel to their owner" rule in docs/architecture.md).

A ring is immutable: ``with_peer`` and ``without_peer`` return a new ring, so a
membership change swaps one reference and readers never see a half-built ring.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterable, Iterator, Mapping
from typing import Protocol

import mmh3

from ring.errors import EmptyRingError

__all__ = ["HashRing", "Listed", "host_hash"]

_MASK64 = (1 << 64) - 1
_SPAN = float(1 << 64)


def host_hash(key: str) -> int:
    """The position of ``key`` on the ring: an unsigned 64-bit integer."""
    return mmh3.hash128(key, 0, False) & _MASK64


class Listed(Protocol):
    """A member as cluster.toml lists it: its id and its weight."""

    @property
    def id(self) -> str: ...

    @property
    def weight(self) -> float: ...


class HashRing:
    """An immutable consistent-hash ring of peer ids.

    >>> ring = HashRing({"p1": 1.0, "p2": 1.0, "p3": 2.0}, vnodes=256)
    >>> ring.owner("s001.web.test:8080") in {"p1", "p2", "p3"}
    True
    """

    __slots__ = ("_weights", "_vnodes", "_points", "_owners")

    def __init__(self, peers: Mapping[str, float], vnodes: int = 256) -> None:
        if vnodes < 1:
            raise ValueError(f"vnodes must be at least 1, not {vnodes!r}")
        for peer_id, weight in peers.items():
            if not isinstance(peer_id, str) or not peer_id:
                raise ValueError(f"peer ids must be non-empty strings, not {peer_id!r}")
            if not weight > 0:
                raise ValueError(f"peer {peer_id!r}: weight must be > 0, not {weight!r}")
        self._weights: dict[str, float] = dict(sorted(peers.items()))
        self._vnodes = vnodes
        # Sorting by (hash, id) makes a collision of two peers' points resolve
        # the same way on every peer, whatever order they learnt the members in.
        points = sorted(
            (host_hash(f"{peer_id}#{i}"), peer_id)
            for peer_id, weight in self._weights.items()
            for i in range(max(1, round(vnodes * weight)))
        )
        self._points = [p for p, _ in points]
        self._owners = [o for _, o in points]

    @classmethod
    def of_members(cls, members: Iterable[Listed], vnodes: int = 256) -> HashRing:
        """The ring of ``members``, each with an ``id`` and a ``weight`` (cluster.toml's ``[[peer]]`` entries)."""
        return cls({m.id: m.weight for m in members}, vnodes)

    # -- derived rings -------------------------------------------------------

    def with_peer(self, peer_id: str, weight: float = 1.0) -> HashRing:
        """A new ring with ``peer_id`` added (or its weight changed)."""
        return HashRing({**self._weights, peer_id: weight}, self._vnodes)

    def without_peer(self, peer_id: str) -> HashRing:
        """A new ring without ``peer_id``; the same ring if it was not a member."""
        if peer_id not in self._weights:
            return self
        return HashRing(
            {p: w for p, w in self._weights.items() if p != peer_id}, self._vnodes
        )

    def rebuilt(self, peers: Mapping[str, float]) -> HashRing:
        """The ring of ``peers`` (equal to ``HashRing(peers, vnodes)``), hashing only the
        peers that are new or reweighted here: a ring one change away costs a filter and a
        merge instead of ``vnodes`` hashes a member (``ring.membership.hostgate``)."""
        weights = self._weights
        same = {p for p, w in peers.items() if weights.get(p) == w}
        fresh = [p for p in peers if p not in same]
        if not fresh and len(same) == len(weights):
            return self
        ring = HashRing({p: w for p, w in peers.items() if p in fresh}, self._vnodes)
        keep = [(pt, o) for pt, o in zip(self._points, self._owners) if o in same]
        merged = list(heapq.merge(keep, zip(ring._points, ring._owners)))
        ring._weights = dict(sorted(peers.items()))
        ring._points = [p for p, _ in merged]
        ring._owners = [o for _, o in merged]
        return ring

    # -- lookups ---------------------------------------------------------------

    def owner(self, host: str) -> str:
        """The peer id that owns ``host`` (its authority, ``host[:port]``).

        Hosts are keyed case-insensitively, so ``Example.COM`` and
        ``example.com`` always have one owner.
        """
        if not self._points:
            raise EmptyRingError("the ring has no members")
        i = bisect.bisect_left(self._points, host_hash(host.lower()))
        return self._owners[i if i < len(self._owners) else 0]

    def shares(self) -> dict[str, float]:
        """The fraction of the hash circle each peer owns; the values sum to 1."""
        if not self._points:
            return {}
        share = dict.fromkeys(self._weights, 0.0)
        prev = self._points[-1] - (1 << 64)
        for point, owner in zip(self._points, self._owners):
            share[owner] += (point - prev) / _SPAN
            prev = point
        return share

    @property
    def peers(self) -> Mapping[str, float]:
        """Peer id -> weight, sorted by id."""
        return dict(self._weights)

    @property
    def vnodes(self) -> int:
        return self._vnodes

    def __contains__(self, peer_id: object) -> bool:
        return peer_id in self._weights

    def __iter__(self) -> Iterator[str]:
        return iter(self._weights)

    def __len__(self) -> int:
        return len(self._weights)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HashRing):
            return NotImplemented
        return self._vnodes == other._vnodes and self._weights == other._weights

    def __hash__(self) -> int:
        return hash((self._vnodes, tuple(self._weights.items())))

    def __repr__(self) -> str:
        return f"HashRing({self._weights!r}, vnodes={self._vnodes})"
