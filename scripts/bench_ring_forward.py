"""Forwarding cost for scripts/bench_ring.py: two real ring members over zmq, in two processes.

Each side is a ``ring.node.RingNode`` under a
``ring.io.driver.RingDriver``, with a crawl that only counts what it is handed.
The sender's :class:`ring.forwarding.forwarder.Outbox` (batches of 500, ``max_age`` 50
ms) hands batches to its DEALER connected to the receiver's ROUTER; the
receiver's node asks its :class:`ring.forwarding.inbox.Inbox` and acks through its
own DEALER to the sender's ROUTER, where ``Outbox.ack`` retires the batch.
Gossip runs too, every 5 s (a digest of two members, ~100 bytes). Not
included: what the owner does with a URL it takes (normalise, Bloom filter,
frontier push; scripts/bench_cores.py measures those).

The sender keeps at most ``window`` batches unacked, so it cannot run ahead
of the receiver into resends (``Outbox`` resends after 1 s): the rate is
what the pipeline sustains. Bytes are counted twice: the msgpack frames
(batches and acks), and the TCP payload of both connections as the kernel
counted it (``ss -ti``: ``bytes_sent`` + ``bytes_received`` of each
connection's connecting end), which adds ZMTP framing and handshakes.

The receiver runs as ``python scripts/bench_ring_forward.py --receiver
--p1 ENDPOINT --p2 ENDPOINT``: it prints ``ready``, and once it has taken the
sender's last URL (:data:`END`), one JSON line of its counters.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass

import trio

from localweb.bench import free_ports, tcp_bytes
from ring.io.driver import RingDriver
from ring.hashring import HashRing
from ring.messages import Ack, UrlBatch, encode
from ring.node import RingNode
from ring.status import StatusFigures

RING = "bench"
#: The sender's last URL, sent once everything before it is acked.
END = "http://end.invalid/"
#: Gossip rarely: its bytes would count as forwarding's.
GOSSIP = dict(gossip_interval=5.0, suspect_after=60.0, dead_after=120.0, tombstone_ttl=240.0)


class Counting:
    """The crawl of a benchmark member (``ring.crawlport.CrawlPort``): counts what it takes."""

    pages_requested = 0

    def __init__(self) -> None:
        self.urls = 0
        self.end = trio.Event()

    def accept(self, url: str, depth: int) -> None:
        if url == END:
            self.end.set()
        else:
            self.urls += 1

    def locally_idle(self) -> bool:
        return True

    def accept_seen(self, url: str) -> None: ...
    def take_back(self, url: str, depth: int) -> None: ...
    def commit_state(self) -> None: ...
    def set_ring(self, ring: HashRing) -> None: ...
    def handoff_done(self, sender: str) -> None: ...
    def seed_host_starts(self, starts: object) -> None: ...
    def leave(self) -> None: ...
    def poke(self) -> None: ...

    async def handoff_seen(self, old: HashRing, ring: HashRing) -> int:
        return 0

    def handoff_starts(self, old: HashRing, ring: HashRing) -> dict:
        return {}

    def status_figures(self) -> StatusFigures:
        return StatusFigures()


def member(peer_id: str, p1: str, p2: str) -> RingNode:
    seeds = [("p1", p1, 1.0), ("p2", p2, 1.0)]
    address = p1 if peer_id == "p1" else p2
    return RingNode(peer_id, address, 1.0, RING, seeds=seeds, now=trio.current_time(),
                    incarnation=int(time.time() * 1000), **GOSSIP)


def sample_urls(n: int, port: int = 8080) -> list[str]:
    """``n`` distinct URLs shaped like the local web's (host, section, page)."""
    hosts = 999
    return [f"http://s{i % hosts + 1:03d}.web.test:{port}/c{(i // hosts) // 30}/p{i // hosts + 1}.html"
            for i in range(n)]


# -------------------------------------------------------------------- receiver


async def _receive(p1: str, p2: str) -> dict:
    node = member("p2", p1, p2)
    crawl = Counting()
    cpu0, start = time.process_time(), time.perf_counter()
    async with trio.open_nursery() as nursery:
        await nursery.start(RingDriver(node, crawl, p2).run)
        print("ready", flush=True)  # the sender reads this line
        await crawl.end.wait()
        nursery.cancel_scope.cancel()
    st = node.inbox.stats()
    replays = node.inbox.dropped.get("replay", 0)
    return {"urls": crawl.urls, "batches": st.batches, "replays": replays,
            "cpu": time.process_time() - cpu0, "seconds": time.perf_counter() - start,
            "dropped": dict(node.dropped_rows())}


# ---------------------------------------------------------------------- sender


@dataclass(frozen=True, slots=True)
class ForwardResult:
    urls: int
    seconds: float
    sender_cpu: float
    receiver_cpu: float
    frame_bytes: int  # batches + acks, msgpack
    tcp_bytes: int | None  # both connections, TCP payload
    batches: int
    resent: int
    mean_url: float

    @property
    def rate(self) -> float:
        return self.urls / self.seconds


async def run_forward(children, n_urls: int, *, window: int = 64, max_seconds: float = 120.0) -> ForwardResult:  # type: ignore[no-untyped-def]
    """Forward ``n_urls`` URLs p1 -> p2 through the real pieces; see the module docstring."""
    urls = sample_urls(n_urls)
    mean_url = sum(map(len, urls)) / len(urls)
    p1, p2 = (f"tcp://127.0.0.1:{port}" for port in free_ports(2))
    node = member("p1", p1, p2)
    outbox = node.outbox
    driver = RingDriver(node, Counting(), p1)
    with trio.fail_after(max_seconds):
        proc = children.start([sys.executable, __file__, "--receiver", "--p1", p1, "--p2", p2],
                              stdout=subprocess.PIPE)
        ready = (await trio.to_thread.run_sync(proc.stdout.readline)).decode().strip()
        if ready != "ready":
            raise RuntimeError(f"the forwarding receiver did not start: {ready!r}")
        ports = {int(p1.rsplit(":", 1)[1]), int(p2.rsplit(":", 1)[1])}
        frames = []  # every batch the sender numbered, for the msgpack byte count

        async def drain() -> None:
            # The last partial batch leaves after max_age (50 ms), as in a peer.
            while not outbox.idle:
                await trio.sleep(0.001)

        async with trio.open_nursery() as nursery:
            await nursery.start(driver.run)
            # Warm-up: one URL, so connections and handshakes are done before the clock.
            driver.forward("http://s000.web.test:8080/warm-up", 0, "p2")
            await drain()
            tcp0 = tcp_bytes(ports)
            batches0 = outbox.stats().batches
            t0, cpu0 = time.perf_counter(), time.process_time()
            bs = 500
            for i in range(0, n_urls, bs):
                for url in urls[i:i + bs]:
                    driver.forward(url, 1, "p2")
                # Batches queued but not yet numbered by the driver count too.
                while (st := outbox.stats()).unacked + st.pending // bs >= window:
                    await trio.sleep(0.001)
            await drain()
            seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
            tcp1 = tcp_bytes(ports)
            frames = [len(encode(UrlBatch(RING, "p1", outbox.epoch, 0, tuple((u, 1) for u in urls[i:i + bs]))))
                      for i in range(0, n_urls, bs)]
            driver.forward(END, 0, "p2")
            line = await trio.to_thread.run_sync(proc.stdout.readline)
            nursery.cancel_scope.cancel()
    frame_bytes = sum(frames)
    stats = json.loads(line)
    children.stop(proc)
    if stats["urls"] != n_urls + 1:
        raise RuntimeError(f"the receiver took {stats['urls']} URLs, not {n_urls + 1}")
    st = outbox.stats()
    batches = st.batches - batches0 - 1  # less the warm-up's and END's
    acks = sum(len(encode(Ack(RING, "p2", outbox.epoch, seq))) for seq in range(1, batches + 1))
    return ForwardResult(
        urls=n_urls, seconds=seconds, sender_cpu=cpu, receiver_cpu=stats["cpu"],
        frame_bytes=frame_bytes + acks,
        tcp_bytes=None if tcp0 is None or tcp1 is None else tcp1 - tcp0,
        batches=batches, resent=st.resent, mean_url=mean_url)


def main() -> int:
    ap = argparse.ArgumentParser(description="The receiving side of bench_ring.py's forwarding benchmark.")
    ap.add_argument("--receiver", action="store_true", required=True)
    ap.add_argument("--p1", required=True, help="the sender's endpoint")
    ap.add_argument("--p2", required=True, help="this receiver's endpoint")
    args = ap.parse_args()

    stats = trio.run(_receive, args.p1, args.p2)
    print(json.dumps(stats), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
