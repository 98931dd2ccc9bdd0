"""N peers in one process over a fake network that drops, delays and partitions.

Like h11's ``ConnectionPair``: no sockets and no trio, virtual time, every
message through the real codec (``encode``/``decode``). Each peer is the real
``peer.core.door.peer.PeerCore``: a ``peer.core.crawl.core.CrawlCore`` and a
``ring.node.RingNode`` in one, in memory, fed the fake web's pages as fetch
results and parsed by the crawl's own ``parse_response``; :class:`FakePeer`
carries out its effects as ``peer.engine.crawler`` does, with a list of rows
for the results store. No crawl rule is restated here: hand-off holds, seen
URLs, re-routing and ``max_pages`` are the core's. The "server log"
(:attr:`FakeRing.fetches`: who fetched what, and when in virtual time) is
the oracle: every page of the fake web fetched exactly once.

Faults: :meth:`FakeNet.partition` splits the peers into groups,
:meth:`FakeNet.block` drops one direction of one link (an asymmetric
partition), :meth:`FakeNet.heal` undoes both; :meth:`FakeRing.crash` stops
a peer (kill -9) and :meth:`FakeRing.restart` starts a new process of it
with what it had on disk: its seen set, results and queues.

The fake web: host ``h<i>.web.test`` has pages 0..``pages_per_host``-1;
page ``p`` links to the next page of its host, to page ``p`` of the next
host (so the crawl from ``h0``'s page 0 reaches every page), and back to
pages likely fetched already.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from peer.core.config.cluster import ClusterConfig, parse_config
from peer.core.crawl.core import (
    Checking,
    CrawlCore,
    Done,
    Fetch,
    Finished,
    Forward,
    Items,
    Origin,
    Queued,
    Refused,
    Requeued,
    Row,
    Seen,
    Sleep,
    Warn,
    parse_response,
)
from peer.core.crawl.decisions import Hinted
from peer.core.door.peer import Commit, PeerCore, PeerEffect, ReadFetched, ReadHosts
from peer.core.urls.normalize import host_key
from peer.core.http.result import FetchResult
from ring.messages import decode, encode
from ring.node import (Granted, Log, Released, Reply, RingNode, Send, SettingsChanged, SettingsMismatch, StatusAsked,
                       StatusFigures)

RING = "fake"
#: Rounds a finished peer keeps gossiping before it exits (peer.engine.crawler's LINGER_ROUNDS).
LINGER_ROUNDS = 3


class Fetched(NamedTuple):
    """One line of the fake web's server log."""

    who: str
    url: str
    at: float  # virtual seconds


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

    def page(self, url: str) -> FetchResult:
        """The server's answer: an HTML page of :meth:`links`."""
        body = ("<html><body>" + "".join(f'<a href="{u}">l</a>' for u in self.links(url))
                + "</body></html>").encode()
        return FetchResult(url=url, status=200, content_type="text/html", charset="utf-8",
                           location=None, retry_after=None, body=body, raw_bytes=len(body),
                           truncated=False, error=None, elapsed=0.001, address=None)


def crawl_config(web: FakeWeb, max_pages: int, takeover_after: float = 0.0, crawl_extra: str = "") -> ClusterConfig:
    """The crawl's rules for the fake web: no robots.txt, no delays, every host in scope."""
    text = (f'[ring]\nname = "{RING}"\ntakeover_after = {takeover_after}\n[[peer]]\nid = "p1"\naddress = "tcp://127.0.0.1:1"\n'
            f'[crawl]\nseeds = ["{web.seed()}"]\nallow_hosts = ["*.web.test"]\nobey_robots = false\n'
            f"concurrency = 8\nmax_pages = {max_pages}\n{crawl_extra}\n"
            "[politeness]\nrate = 0.0\nhost_concurrency = 1\n"
            "[bloom]\ncapacity = 10000\nerror_rate = 0.001\n")
    return parse_config(text, Path("/nonexistent/cluster.toml"))


class FakePeer:
    """A ``PeerCore`` and its route; its effects carried out as ``peer.engine.crawler`` does."""

    def __init__(self, ring: FakeRing, peer_id: str, *, seeds: list[tuple[str, str, float]],
                 incarnation: int, max_pages: int = 0, joining: bool = False,
                 grants: tuple[tuple[str, int], ...] = ()) -> None:
        self.ring = ring
        self.id = peer_id
        self.route = f"{peer_id}/{incarnation:x}".encode()
        self.node = RingNode(
            peer_id, f"fake://{peer_id}", 1.0, RING, seeds=seeds,
            gossip_interval=ring.gossip_interval, suspect_after=ring.suspect_after,
            dead_after=ring.dead_after, tombstone_ttl=ring.dead_after * 4, now=ring.now,
            incarnation=incarnation, vnodes=64, max_pages=max_pages, owner_key=host_key,
            takeover_after=ring.takeover_after, grants=grants)
        self.crawl = CrawlCore(crawl_config(ring.web, max_pages, ring.takeover_after, ring.crawl_extra), peer_id,
                               rng=random.Random(incarnation))
        self.core = PeerCore(self.crawl, self.node, now=ring.now, joining=joining)
        self.fetched: list[str] = []  # this peer's requests, in order
        self.rows: list[tuple[str, str]] = []  # (url, host) of its results "store"
        self.released: list[str] = []  # previous owners whose HandoffDone came
        self.busy = False  # a test's way to keep the peer from finishing
        self.commits = 0
        self.granted: tuple[tuple[str, int], ...] = grants  # its max_pages grants "on disk"
        self.alive = True
        self.finished: str | None = None  # "cluster done" / "left the ring" / "max_pages reached"
        self.finished_at = 0.0
        self.exited = False  # gone: LINGER_ROUNDS after it finished, as peer.engine.crawler lingers
        self.next_tick = ring.now
        self.log: list[PeerEffect] = []
        self.replies: list[tuple[bytes, Any]] = []

    def run(self, effects: list[PeerEffect]) -> None:
        for e in effects:
            self.log.append(e)
            self._EFFECTS[type(e)](self, e)

    # The engine's table, over the fake network and an in-memory store.
    def _send(self, e: Send) -> None:
        self.ring.net.send(self, e.dest, encode(e.msg))

    def _reply(self, e: Reply) -> None:
        self.replies.append((e.route, e.msg))

    def _status(self, e: StatusAsked) -> None:
        figures = StatusFigures.of({"pages": len(self.fetched), "frontier": len(self.crawl.frontier)}, 0.0)
        self.replies.append((e.route, self.core.status_reply(e.nonce, figures)))

    def _row(self, e: Row) -> None:
        self.rows.append((e.url, e.host))

    def _commit(self, e: Commit) -> None:
        self.commits += 1

    def _granted(self, e: Granted) -> None:
        self.granted = e.grants  # journaled, as peer.engine.crawler's table does

    def _released(self, e: Released) -> None:
        self.released.append(e.sender)

    def _read_hosts(self, e: ReadHosts) -> None:
        self.run(self.core.hosts_read(e.request, {h for _, h in self.rows}, self.ring.now))

    def _read_fetched(self, e: ReadFetched) -> None:
        hosts = set(e.hosts)
        rows = [(u, h) for u, h in self.rows if h in hosts]
        self.run(self.core.fetched_read(e.request, rows, self.ring.now, wall=self.ring.now))

    def _nothing(self, e: Any) -> None:
        pass  # the journal's records, a log line: nothing to keep in memory

    _EFFECTS: dict[type, Callable[[FakePeer, Any], None]] = {
        Send: _send, Reply: _reply, StatusAsked: _status, Row: _row, Commit: _commit,
        Released: _released, ReadHosts: _read_hosts, ReadFetched: _read_fetched, Granted: _granted,
        Forward: _nothing, Queued: _nothing, Checking: _nothing, Seen: _nothing, Done: _nothing,
        Items: _nothing, Requeued: _nothing, Warn: _nothing, Log: _nothing, Refused: _nothing, Hinted: _nothing,
        SettingsChanged: _nothing, SettingsMismatch: _nothing,
    }

    def crawl_step(self, web: FakeWeb, budget: int, now: float) -> None:
        """Fetch up to ``budget`` pages the core starts (the engine's scheduler, in one step).

        Every call goes through the peer core's one door, as the engine's do.
        """
        core = self.core
        while budget > 0:
            step, effects = core.next(now)
            if isinstance(step, Finished):
                self.finished, self.finished_at = step.reason.value, now
                return
            if isinstance(step, Sleep):
                self.run(effects)
                return
            job = step.job
            adm, effects = core.admit(job, now)
            if isinstance(adm, Fetch):
                budget -= 1
                self.fetched.append(job.url)
                self.ring.fetches.append(Fetched(self.id, job.url, now))
                res = web.page(job.url)
                parsed = None
                if core.fetched(job, res, now):
                    cfg = self.crawl.cfg
                    parsed = parse_response(job.url, res.body, res.charset, cfg.extract,
                                            cfg.crawl.max_links_per_page)
                effects += core.on_result(job, res, parsed, now)
            core.job_ended(job)
            self.run(effects)

    def step(self, web: FakeWeb, budget: int) -> None:
        now = self.ring.now
        if now >= self.next_tick:
            self.next_tick = now + self.ring.gossip_interval
            self.run(self.core.tick(now))
            # A peer's last acts, as peer.engine.crawler's: keep gossiping a few
            # rounds once finished, so the others see stable counters.
            if self.finished and now - self.finished_at >= LINGER_ROUNDS * self.ring.gossip_interval:
                self.exited = True
                return
        if not self.finished and not self.busy:
            self.crawl_step(web, budget, now)
        self.run(self.core.flush(now))


class FakeNet:
    """Delivers encoded frames after a delay, or drops them; partitions cut links."""

    def __init__(self, ring: FakeRing, rng: random.Random, *, drop: float = 0.0,
                 delay: tuple[float, float] = (0.001, 0.005)) -> None:
        self.ring = ring
        self.rng = rng
        self.drop = drop
        self.delay = delay
        self.groups: list[set[str]] | None = None
        self.blocked: set[tuple[str, str]] = set()  # (from, to): that direction drops everything
        self.queue: list[tuple[float, int, str, str, bytes, bytes]] = []
        self.n = 0
        self.stats: Counter[str] = Counter()

    def cut(self, a: str, b: str) -> bool:
        """Whether ``a``'s messages to ``b`` are dropped."""
        if (a, b) in self.blocked:
            return True
        if self.groups is None:
            return False
        return not any(a in g and b in g for g in self.groups)

    def partition(self, *groups: Iterable[str]) -> None:
        self.groups = [set(g) for g in groups]

    def block(self, src: str, dest: str) -> None:
        """Drop ``src``'s messages to ``dest``, not the other way (an asymmetric partition)."""
        self.blocked.add((src, dest))

    def heal(self) -> None:
        self.groups = None
        self.blocked.clear()

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
            peer.run(peer.core.receive(route, decode(data), now, wall=now))


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
    #: ``[ring] takeover_after``: two dead_after, so a crashed peer's hosts are
    #: taken over within a test's minute, and a split of under ~3 s heals in time.
    takeover_after: float = 3.0
    #: More ``[crawl]`` lines for every peer (a budget: tests/core/test_budgets.py).
    crawl_extra: str = ""

    def __post_init__(self) -> None:
        self.now = 0.0
        self.rng = random.Random(self.seed)
        self.net = FakeNet(self, self.rng, drop=self.drop, delay=self.delay)
        self.fetches: list[Fetched] = []
        self.seeds = [(f"p{i + 1}", f"fake://p{i + 1}", 1.0) for i in range(self.n)]
        self.peers: dict[str, FakePeer] = {}
        for sid, _, _ in self.seeds:
            self.add(sid)
        first = self.peers["p1"]
        first.run(first.core.seeds(self.now))

    def add(self, peer_id: str, grants: tuple[tuple[str, int], ...] = ()) -> FakePeer:
        """Start a peer: a seed if listed, else a joiner through the seeds."""
        inc = 1000 + int(self.now * 1000) + len(self.peers)
        # A peer not among the seeds joins a running ring: it holds its hosts
        # until their previous owners hand them over (PeerCore: joining).
        peer = FakePeer(self, peer_id, seeds=self.seeds, incarnation=inc, max_pages=self.max_pages,
                        joining=peer_id not in {s[0] for s in self.seeds}, grants=grants)
        self.peers[peer_id] = peer
        return peer

    def crash(self, peer_id: str) -> None:
        """kill -9: nothing more from it, nothing delivered to it."""
        self.peers[peer_id].alive = False

    def restart(self, peer_id: str) -> FakePeer:
        """A new process of a crashed peer, with what it had on disk.

        Its seen set (Bloom filter and exact sieve), its results, its queue
        (``Origin.RECOVERED``), the URLs its Outbox held (as the journal
        keeps ``Outbox.queued``'s URLs, given to ``discover`` as relayed),
        its page count and its max_pages grants, as ``peer.engine.durability``
        recovers them. A new incarnation and route: the others see a restart.
        """
        old = self.peers[peer_id]
        assert not old.alive, "crash it first"
        now = self.now
        peer = self.add(peer_id, grants=old.granted)
        crawl = peer.crawl
        crawl.requested = old.crawl.requested
        crawl.bloom, crawl.sieve = old.crawl.bloom, old.crawl.sieve
        peer.rows = list(old.rows)
        peer.fetched = list(old.fetched)
        for job in list(old.crawl.frontier.iter_queued()):
            peer.run(peer.core.discover(job.url, job.depth, now, Origin.RECOVERED))
        for url, depth in old.node.outbox.queued().urls:
            peer.run(peer.core.discover(url, depth, now, Origin.RELAY))
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
        return Counter(f.url for f in self.fetches)
