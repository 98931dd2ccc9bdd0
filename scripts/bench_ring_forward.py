"""Forwarding cost for scripts/bench_ring.py: the real Outbox/Inbox over zmq between two processes.

The same pieces a peer uses, wired the same way (``peer/cluster.py``): the
sender's :class:`ring.forwarder.Outbox` (batches of 500, ``max_age`` 50 ms)
hands batches to a DEALER connected to the receiver's ROUTER; the receiver
decodes each frame, asks its :class:`ring.forwarder.Inbox`, and acks through
its own DEALER to the sender's ROUTER, where ``Outbox.ack`` retires the batch.
Not included: what the owner does with a URL it takes (normalise, Bloom
filter, frontier push; scripts/bench_cores.py measures those).

The sender keeps at most ``window`` batches unacked, so it cannot run ahead
of the receiver into resends (``Outbox`` resends after 1 s): the rate is
what the pipeline sustains. Bytes are counted twice: the msgpack frames
(batches and acks), and the TCP payload of both connections as the kernel
counted it (``ss -ti``: ``bytes_sent`` + ``bytes_received`` of each
connection's connecting end), which adds ZMTP framing and handshakes.

The receiver runs as ``python scripts/bench_ring_forward.py --receiver
--ack-to ENDPOINT``: it prints its endpoint, and at the end one JSON line of
its counters.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass

import trio

from ring.forwarder import Inbox, Outbox, Verdict
from ring.messages import Ack, UrlBatch, decode, encode
from ring.zmqio import SocketType, open_socket

RING = "bench"
END = b"end"


def sample_urls(n: int, port: int = 8080) -> list[str]:
    """``n`` distinct URLs shaped like the local web's (host, section, page)."""
    hosts = 999
    return [f"http://s{i % hosts + 1:03d}.web.test:{port}/c{(i // hosts) // 30}/p{i // hosts + 1}.html"
            for i in range(n)]


def tcp_bytes(ports: set[int], pids: set[int] | None = None) -> int | None:
    """TCP payload bytes, both ways, of established connections to ``ports``.

    Each connection is counted at its connecting end (destination port in
    ``ports``), and, with ``pids``, only if a process in ``pids`` owns that
    end. None when ``ss`` is missing.
    """
    if shutil.which("ss") is None:
        return None
    argv = ["ss", "-tinH" + ("p" if pids else ""), "state", "established"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout
    total = 0
    header = ""
    for line in out.splitlines():
        if line and not line[0].isspace():
            header = line
            continue
        fields = header.split()
        if len(fields) < 4:
            continue
        try:
            dport = int(fields[3].rsplit(":", 1)[1])
        except (IndexError, ValueError):
            continue
        if dport not in ports:
            continue
        if pids and not any(f"pid={p}," in header for p in pids):
            continue
        stats = dict(kv.split(":", 1) for kv in line.split() if kv.startswith(("bytes_sent:", "bytes_received:")))
        total += int(stats.get("bytes_sent", 0)) + int(stats.get("bytes_received", 0))
    return total


# -------------------------------------------------------------------- receiver


async def _receive(ack_to: str) -> dict:
    inbox = Inbox(RING)
    urls = batches = ack_bytes = frame_bytes = 0
    cpu0 = start = None
    async with open_socket(SocketType.ROUTER, identity=b"p2") as inbound, \
            open_socket(SocketType.DEALER, connect=ack_to, identity=b"p2", hwm=10_000) as acks:
        print(inbound.bind("tcp://127.0.0.1:*"), flush=True)  # the sender reads this line
        done = False
        while not done:
            for frames in await inbound.recv_batch(1000):
                data = frames[-1]
                if data == END:
                    done = True
                    break
                if start is None:
                    start, cpu0 = time.perf_counter(), time.process_time()
                frame_bytes += len(data)
                batch = decode(data)
                assert isinstance(batch, UrlBatch)
                verdict = inbox.accept(batch)
                if verdict is Verdict.ACCEPT:
                    urls += len(batch.urls)
                    batches += 1
                if verdict.ack:
                    ack = encode(Ack(RING, "p2", batch.epoch, batch.seq))
                    ack_bytes += len(ack)
                    await acks.send_multipart([ack])
    return {"urls": urls, "batches": batches, "frame_bytes": frame_bytes, "ack_bytes": ack_bytes,
            "cpu": time.process_time() - (cpu0 or 0.0), "seconds": time.perf_counter() - (start or 0.0),
            "dropped": inbox.dropped}


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
    outbox = Outbox("p1", RING, epoch=1)
    with trio.fail_after(max_seconds):
        async with open_socket(SocketType.ROUTER, identity=b"p1") as inbound:
            ack_ep = inbound.bind("tcp://127.0.0.1:*")
            proc = children.start([sys.executable, __file__, "--receiver", "--ack-to", ack_ep],
                                  stdout=subprocess.PIPE)
            recv_ep = (await trio.to_thread.run_sync(proc.stdout.readline)).decode().strip()
            if not recv_ep.startswith("tcp://"):
                raise RuntimeError(f"the forwarding receiver did not start: {recv_ep!r}")
            ports = {int(ack_ep.rsplit(":", 1)[1]), int(recv_ep.rsplit(":", 1)[1])}
            async with open_socket(SocketType.DEALER, connect=recv_ep, identity=b"p1",
                                   hwm=10_000) as out:
                frame_bytes = 0
                wake = trio.Event()

                async def take_acks() -> None:
                    nonlocal wake
                    while True:
                        for frames in await inbound.recv_batch(1000):
                            msg = decode(frames[-1])
                            if isinstance(msg, Ack):
                                outbox.ack(msg.sender, msg.epoch, msg.seq)
                        wake.set()
                        wake = trio.Event()

                async def send_due() -> None:
                    # Resends (a batch unacked for 1 s) go out too, as in a peer.
                    nonlocal frame_bytes
                    for _, batch in outbox.due(trio.current_time()):
                        frame = encode(batch)
                        frame_bytes += len(frame)
                        await out.send_multipart([frame])

                async def drain() -> None:
                    # The last partial batch leaves after max_age (50 ms), as in a peer.
                    while True:
                        st = outbox.stats()
                        if not st.pending and not st.unacked:
                            return
                        await send_due()
                        with trio.move_on_after(0.01):
                            await wake.wait()

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(take_acks)
                    # Warm-up: one URL, so connections and handshakes are done before the clock.
                    outbox.add("http://s000.web.test:8080/warm-up", 0, "p2", trio.current_time())
                    await drain()
                    tcp0 = tcp_bytes(ports)
                    frame0 = frame_bytes
                    t0, cpu0 = time.perf_counter(), time.process_time()
                    bs = 500
                    for i in range(0, n_urls, bs):
                        now = trio.current_time()
                        for url in urls[i:i + bs]:
                            outbox.add(url, 1, "p2", now)
                        await send_due()
                        while outbox.stats().unacked >= window:
                            with trio.move_on_after(0.05):
                                await wake.wait()
                            await send_due()
                    await drain()
                    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
                    tcp1 = tcp_bytes(ports)
                    await out.send_multipart([END])
                    line = await trio.to_thread.run_sync(proc.stdout.readline)
                    nursery.cancel_scope.cancel()
    stats = json.loads(line)
    children.stop(proc)
    if stats["urls"] != n_urls + 1:
        raise RuntimeError(f"the receiver took {stats['urls']} URLs, not {n_urls + 1}")
    warm_ack = len(encode(Ack(RING, "p2", 1, 0)))
    acks = stats["ack_bytes"] - warm_ack
    st = outbox.stats()
    return ForwardResult(
        urls=n_urls, seconds=seconds, sender_cpu=cpu, receiver_cpu=stats["cpu"],
        frame_bytes=frame_bytes - frame0 + acks,
        tcp_bytes=None if tcp0 is None or tcp1 is None else tcp1 - tcp0,
        batches=st.batches - 1, resent=st.resent, mean_url=mean_url)


def main() -> int:
    ap = argparse.ArgumentParser(description="The receiving side of bench_ring.py's forwarding benchmark.")
    ap.add_argument("--receiver", action="store_true", required=True)
    ap.add_argument("--ack-to", required=True, help="the sender's ROUTER endpoint")
    args = ap.parse_args()

    stats = trio.run(_receive, args.ack_to)
    print(json.dumps(stats), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
