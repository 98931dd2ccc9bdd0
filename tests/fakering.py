"""N ``RingNode`` s in one process over a fake network that drops, delays and partitions.

Like h11's ``ConnectionPair``: no sockets and no trio, virtual time, every
message through the real codec (``encode``/``decode``). Each peer pairs a
``ring.node.RingNode`` with a :class:`FakeCrawl`, a small crawl that
implements ``ring.crawlport.CrawlPort`` the way ``peer.engine.crawler.Crawler``
does what matters to the ring: a seen set, a queue of owned hosts, holds on
gained hosts until the previous owner's ``HandoffDone``, the hand-off of
fetched URLs as ``seen``. Its "server log" (:attr:`FakeRing.fetches`) is the
oracle: every page of the fake web fetched exactly once.

The fake web: host ``h<i>.web.test`` has pages 0..``pages_per_host``-1;
page ``p`` links to the next page of its host, to page ``p`` of the next
host (so the crawl from ``h0``'s page 0 reaches every page), and back to
pages likely fetched already.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ring.hashring import HashRing
from ring.messages import decode, encode
from ring.node import (
    Action,
    Count,
    Deliver,
    HandOff,
    LeaveAsked,
    Log,
    Released,
    Rerouted,
    Reply,
    RingChanged,
    RingNode,
    SeedStarts,
    Send,
    StatusAsked,
    StatusFigures,
)

RING = "fake"
#: Rounds a finished peer keeps gossiping before it exits (peer.engine.crawler's LINGER_ROUNDS).
LINGER_ROUNDS = 3


def host_of(url: str) -> str:
    return url.partition("://")[2].split("/", 1)[0]


@dataclass(frozen=True)
class FakeWeb:
    hosts: int = 12
    pages_per_host: int = 8

    def url(self, h: int, p: int) -> str:
        return f"http://h{h}.web.test/p{p}"

    def seed(self) -> str:
        return self.url(0, 0)

    def all_urls(self) -> set[str]:
        return {self.url(h, p) for h in range(self.hosts) for p in range(self.pages_per_host)}

    def links(self, url: str) -> list[str]:
        host, _, path = url.partition("://")[2].partition("/")
        h, p = int(host.split(".")[0][1:]), int(path[1:])
        # Links back to pages fetched long ago (a host's home, a far host's
        # earlier pages) are what a hand-off must make safe: without the old
        # owner's seen URLs, the new owner would fetch those again.
        out = [self.url((h + 1) % self.hosts, p), self.url(h, 0),
               self.url((h + 5) % self.hosts, p // 2)]
        if p + 1 < self.pages_per_host:
            out.append(self.url(h, p + 1))
        return out


class FakeCrawl:
    """The crawl of one fake peer (``CrawlPort``); ``peer`` gives it its node and clock."""

    def __init__(self, peer: FakePeer) -> None:
        self.peer = peer
        self.seen: set[str] = set()
        self.queue: deque[tuple[str, int]] = deque()
        self.fetched: list[str] = []
        self.seen_in: dict[str, str] = {}
        self.handed_seen: set[str] = set()
        self.ring: HashRing | None = None
        self.holds: list[tuple[HashRing, dict[str, float]]] = []
        self.leaving = False
        self.released: list[str] = []
        self.busy = False  # a test's way to keep the peer from finishing

    # -- CrawlPort ----------------------------------------------------------------

    @property
    def pages_requested(self) -> int:
        return len(self.fetched)

    def locally_idle(self) -> bool:
        return not self.queue and not self.busy

    def accept(self, url: str, depth: int) -> None:
        self.discover(url, depth, relay=True)

    def accept_seen(self, url: str) -> None:
        self.seen_in[url] = host_of(url)
        if url in self.seen:
            self.handed_seen.add(url)
        self.seen.add(url)

    def take_back(self, url: str, depth: int) -> None:
        if self.ring is not None and self.ring.owner(host_of(url)) != self.peer.id:
            self.accept(url, depth)
            return
        self.seen.add(url)
        self.queue.append((url, depth))

    def commit_state(self) -> None:
        self.peer.commits += 1

    def set_ring(self, ring: HashRing) -> None:
        old, self.ring = self.ring, ring
        keep: deque[tuple[str, int]] = deque()
        for url, depth in self.queue:
            owner = ring.owner(host_of(url))
            if owner != self.peer.id:
                self.peer.forward(url, depth, owner, relay=True)
            else:
                keep.append((url, depth))
        self.queue = keep
        if old is not None and self.peer.id in ring and set(old) != set(ring):
            self.hold_from(old)

    async def handoff_seen(self, old: HashRing, ring: HashRing) -> int:
        n = 0
        me = self.peer.id
        for url in [*self.fetched, *self.seen_in]:
            host = host_of(url)
            new = ring.owner(host)
            if new != me and old.owner(host) != new:
                self.peer.node.outbox.add_seen(url, new, self.peer.ring.now)
                n += 1
        return n

    def handoff_starts(self, old: HashRing, ring: HashRing) -> Mapping[str, Iterable[tuple[str, float]]]:
        return {}

    def handoff_done(self, sender: str) -> None:
        self.released.append(sender)
        for _, waiting in self.holds:
            waiting.pop(sender, None)
        self.holds = [(o, w) for o, w in self.holds if w]

    def seed_host_starts(self, starts: Iterable[tuple[str, float]]) -> None:
        pass

    def leave(self) -> None:
        if not self.leaving:
            self.leaving = True
            self.peer.run(self.peer.node.leave(self.peer.ring.now))

    def poke(self) -> None:
        pass

    def status_figures(self) -> dict[str, Any]:
        return {"pages": len(self.fetched), "frontier": len(self.queue)}

    # -- the crawl itself -----------------------------------------------------------

    def discover(self, url: str, depth: int, relay: bool = False) -> None:
        if self.ring is not None:
            owner = self.ring.owner(host_of(url))
            if owner != self.peer.id:
                self.peer.forward(url, depth, owner, relay=relay)
                return
        if url not in self.seen:
            self.seen.add(url)
            self.queue.append((url, depth))

    def hold_from(self, old: HashRing) -> None:
        members = self.peer.node.membership.members()
        until = self.peer.ring.now + self.peer.node.hold_timeout
        waiting = {p: until for p in old if p != self.peer.id and p in members
                   and members[p].state.value != "dead"}
        if waiting:
            self.holds.append((old, waiting))

    def held(self, host: str) -> bool:
        now = self.peer.ring.now
        members = self.peer.node.membership.members()
        held = False
        for old, waiting in self.holds:
            prev = old.owner(host)
            until = waiting.get(prev)
            if until is None:
                continue
            m = members.get(prev)
            if now >= until or (m is not None and m.state.value == "dead"):
                del waiting[prev]
                continue
            held = True
        self.holds = [(o, w) for o, w in self.holds if w]
        return held

    def step(self, web: FakeWeb, budget: int) -> None:
        """Fetch up to ``budget`` owned, unheld pages."""
        if self.leaving:
            if self.queue and self.ring is not None:
                self.set_ring(self.ring)  # everything goes to its owner
            return
        cap = self.peer.node.page_cap if self.peer.node.max_pages else None
        for _ in range(len(self.queue)):
            if budget <= 0 or not self.queue:
                return
            if cap is not None and (len(self.fetched) >= cap or
                                    len(self.fetched) + self.peer.node.others_pages()
                                    >= self.peer.node.max_pages):
                return
            url, depth = self.queue.popleft()
            host = host_of(url)
            if url in self.handed_seen:
                self.handed_seen.discard(url)
                continue
            if self.ring is not None and self.ring.owner(host) != self.peer.id:
                self.peer.forward(url, depth, self.ring.owner(host), relay=True)
                continue
            if self.holds and self.held(host):
                self.queue.append((url, depth))
                continue
            budget -= 1
            self.fetched.append(url)
            self.peer.ring.fetches.append((self.peer.id, url))
            for link in web.links(url):
                self.discover(link, depth + 1)


class FakePeer:
    """A RingNode, its FakeCrawl and its route; actions run as ``ring.io.driver`` runs them."""

    def __init__(self, ring: FakeRing, peer_id: str, *, seeds: list[tuple[str, str, float]],
                 incarnation: int, max_pages: int = 0) -> None:
        self.ring = ring
        self.id = peer_id
        self.route = f"{peer_id}/{incarnation:x}".encode()
        self.node = RingNode(
            peer_id, f"fake://{peer_id}", 1.0, RING, seeds=seeds,
            gossip_interval=ring.gossip_interval, suspect_after=ring.suspect_after,
            dead_after=ring.dead_after, tombstone_ttl=ring.dead_after * 4, now=ring.now,
            incarnation=incarnation, vnodes=64, max_pages=max_pages, owner_key=host_of)
        self.crawl = FakeCrawl(self)
        self.crawl.ring = self.node.ring()
        self.commits = 0
        self.alive = True
        self.finished: str | None = None  # "cluster done" / "left the ring"
        self.finished_at = 0.0
        self.exited = False  # gone: LINGER_ROUNDS after it finished, as peer.engine.crawler lingers
        self.next_tick = ring.now
        self.log: list[Action] = []
        self.replies: list[tuple[bytes, Any]] = []

    def forward(self, url: str, depth: int, owner: str, *, relay: bool = False) -> None:
        self.node.forward(url, depth, owner, self.ring.now, relay=relay)

    def run(self, actions: list[Action]) -> None:
        for a in actions:
            self.log.append(a)
            self._ACTIONS[type(a)](self, a)

    # The driver's table, over the fake network.
    def _send(self, a: Send) -> None:
        self.ring.net.send(self, a.dest, encode(a.msg))

    def _reply(self, a: Reply) -> None:
        self.replies.append((a.route, a.msg))

    def _deliver(self, a: Deliver) -> None:
        for url, depth in a.urls:
            self.crawl.accept(url, depth)
        for url in a.seen:
            self.crawl.accept_seen(url)
        self.crawl.commit_state()

    def _rerouted(self, a: Rerouted) -> None:
        for url in a.seen:
            self.crawl.accept_seen(url)
        for url, depth in a.urls:
            self.crawl.take_back(url, depth)

    def _ring_changed(self, a: RingChanged) -> None:
        self.crawl.set_ring(a.ring)

    def _hand_off(self, a: HandOff) -> None:
        coro = self.crawl.handoff_seen(a.old, a.ring)
        try:
            coro.send(None)
        except StopIteration as stop:
            n = stop.value
        starts = self.crawl.handoff_starts(a.old, a.ring)
        self.run(self.node.begin_handoff(a.version, n, starts, self.ring.now))

    def _released(self, a: Released) -> None:
        self.crawl.handoff_done(a.sender)

    def _seed_starts(self, a: SeedStarts) -> None:
        self.crawl.seed_host_starts(a.starts)

    def _leave_asked(self, a: LeaveAsked) -> None:
        self.crawl.leave()

    def _status(self, a: StatusAsked) -> None:
        figures = StatusFigures.of(self.crawl.status_figures(), 0.0)
        self.replies.append((a.route, self.node.status_reply(a.nonce, figures)))

    def _nothing(self, a: Action) -> None:
        pass

    _ACTIONS: dict[type, Callable[[FakePeer, Any], None]] = {
        Send: _send, Reply: _reply, Deliver: _deliver, Rerouted: _rerouted, RingChanged: _ring_changed,
        HandOff: _hand_off, Released: _released, SeedStarts: _seed_starts,
        LeaveAsked: _leave_asked, StatusAsked: _status, Count: _nothing, Log: _nothing,
    }

    def step(self, web: FakeWeb, budget: int) -> None:
        now = self.ring.now
        if now >= self.next_tick:
            self.next_tick = now + self.ring.gossip_interval
            self.run(self.node.tick(now, idle=self.crawl.locally_idle(),
                                    pages=self.crawl.pages_requested))
            # A peer's last acts, as peer.engine.crawler's: stop when left or when done,
            # and keep gossiping a few rounds so the others see stable counters.
            if self.finished:
                if now - self.finished_at >= LINGER_ROUNDS * self.ring.gossip_interval:
                    self.exited = True
                    return
            elif self.crawl.leaving and self.node.left(self.crawl.locally_idle()):
                self.finished, self.finished_at = "left the ring", now
            elif (self.crawl.locally_idle() and self.node.idle() and self.node.done(now)):
                self.finished, self.finished_at = "cluster done", now
        if not self.finished:
            self.crawl.step(web, budget)
        self.run(self.node.flush(now))


class FakeNet:
    """Delivers encoded frames after a delay, or drops them; partitions cut links."""

    def __init__(self, ring: FakeRing, rng: random.Random, *, drop: float = 0.0,
                 delay: tuple[float, float] = (0.001, 0.005)) -> None:
        self.ring = ring
        self.rng = rng
        self.drop = drop
        self.delay = delay
        self.groups: list[set[str]] | None = None
        self.queue: list[tuple[float, int, str, str, bytes, bytes]] = []
        self.n = 0
        self.stats: Counter[str] = Counter()

    def cut(self, a: str, b: str) -> bool:
        if self.groups is None:
            return False
        return not any(a in g and b in g for g in self.groups)

    def partition(self, *groups: Iterable[str]) -> None:
        self.groups = [set(g) for g in groups]

    def heal(self) -> None:
        self.groups = None

    def send(self, src: FakePeer, dest: str, data: bytes) -> None:
        self.stats["sent"] += 1
        if self.rng.random() < self.drop or self.cut(src.id, dest):
            self.stats["dropped"] += 1
            return
        self.n += 1
        at = self.ring.now + self.rng.uniform(*self.delay)
        heapq.heappush(self.queue, (at, self.n, src.id, dest, src.route, data))

    def deliver(self, now: float) -> None:
        while self.queue and self.queue[0][0] <= now:
            _, _, src, dest, route, data = heapq.heappop(self.queue)
            peer = self.ring.peers.get(dest)
            if peer is None or not peer.alive or peer.exited or self.cut(src, dest):
                self.stats["lost"] += 1
                continue
            peer.run(peer.node.receive(route, decode(data), now))


@dataclass
class FakeRing:
    """The whole fake cluster: peers, network, web and the server log."""

    n: int = 3
    web: FakeWeb = field(default_factory=FakeWeb)
    seed: int = 1
    drop: float = 0.0
    delay: tuple[float, float] = (0.001, 0.005)
    gossip_interval: float = 0.1
    suspect_after: float = 0.5
    dead_after: float = 1.5
    step_seconds: float = 0.01
    pages_per_step: int = 1
    max_pages: int = 0

    def __post_init__(self) -> None:
        self.now = 0.0
        self.rng = random.Random(self.seed)
        self.net = FakeNet(self, self.rng, drop=self.drop, delay=self.delay)
        self.fetches: list[tuple[str, str]] = []
        self.seeds = [(f"p{i + 1}", f"fake://p{i + 1}", 1.0) for i in range(self.n)]
        self.peers: dict[str, FakePeer] = {}
        for sid, _, _ in self.seeds:
            self.add(sid)
        first = self.peers["p1"]
        first.crawl.discover(self.web.seed(), 0)

    def add(self, peer_id: str) -> FakePeer:
        """Start a peer: a seed if listed, else a joiner through the seeds."""
        inc = 1000 + int(self.now * 1000) + len(self.peers)
        peer = FakePeer(self, peer_id, seeds=self.seeds, incarnation=inc, max_pages=self.max_pages)
        if peer_id not in {s[0] for s in self.seeds}:
            ring = peer.node.ring()
            peer.crawl.hold_from(ring.without_peer(peer_id))
        self.peers[peer_id] = peer
        return peer

    def running(self) -> list[FakePeer]:
        return [p for p in self.peers.values() if p.alive and not p.exited]

    def step(self) -> None:
        self.now += self.step_seconds
        self.net.deliver(self.now)
        for p in self.running():
            p.step(self.web, self.pages_per_step)

    def run_until(self, done: Callable[[], bool], max_seconds: float = 120.0) -> float:
        """Step until ``done()``; the virtual seconds it took (AssertionError past ``max_seconds``)."""
        start = self.now
        while not done():
            assert self.now - start < max_seconds, f"not done after {max_seconds} virtual seconds"
            self.step()
        return self.now - start

    def run_for(self, seconds: float) -> None:
        end = self.now + seconds
        while self.now < end:
            self.step()

    def all_finished(self) -> bool:
        return all(p.finished or not p.alive for p in self.peers.values())

    def fetch_counts(self) -> Counter[str]:
        return Counter(url for _, url in self.fetches)
