#!/usr/bin/env python3
"""Messages per second through ring.io.zmqio between two processes, batched vs not.

Measured here: about 100–150k msgs/s for 1 KB msgpack messages when the
receiver drains up to ~1000 messages per wait, against about 77k with one
await per message (ring/io/zmqio.py). This script measures both on loopback: a sender process
(this script, ``--role send``) pushes ``--messages`` frames through a DEALER
to the benchmark's ROUTER, which receives them either

- ``batched``: ``await sock.recv_batch(1000)``, or
- ``one await/msg``: ``await sock.recv_multipart()`` per message,

and prints both side by side: the rate, and the receiving process's CPU
time per message (with one process per core the rate can be the sender's,
so the CPU column is what batching saves). Each frame is a real
:class:`ring.messages.UrlBatch`, encoded to about ``--size`` bytes (a few
distinct ones are encoded up front and cycled, so the sender's rate is the
transport's, not the codec's). ``--decode`` also decodes every frame on the
receiving side. The clock runs from the first message received to the last,
so process start-up is not counted; each mode runs ``--repeat`` times with a
fresh sender, and the best run is shown. All traffic is on 127.0.0.1, and
every run gives up after ``--max-seconds``.

Usage::

    python scripts/bench_zmq.py [--messages 200000] [--size 1024] [--repeat 3] [--decode]
"""

from __future__ import annotations

import argparse
import sys
import time

import trio

from localweb.bench import END_FRAME as END
from localweb.bench import sample_frames
from ring.messages import decode
from ring.io.zmqio import open_socket

# -------------------------------------------------------------------- sender


async def send(endpoint: str, messages: int, size: int) -> None:
    frames = sample_frames(size)
    async with open_socket("DEALER", connect=endpoint, identity=b"sender") as sock:
        for i in range(messages):
            await sock.send_multipart([frames[i & 7]])
        # Repeated until answered: with linger 0, leaving early would drop the queue.
        while True:
            await sock.send_multipart([END])
            with trio.move_on_after(0.5):
                await sock.recv_multipart()
                return


# ------------------------------------------------------------------ receiver


async def receive(mode: str, messages: int, size: int, decoding: bool, rcvhwm: int | None,
                  max_seconds: float) -> tuple[float, float]:
    """Messages/s received in ``mode`` and this process's CPU µs per message.

    Both from the first message to the end marker; the CPU time includes
    zmq's I/O thread, which reads the TCP stream for this process.
    """
    got = 0
    with trio.fail_after(max_seconds):
        async with open_socket("ROUTER", rcvhwm=rcvhwm) as sock:
            endpoint = sock.bind("tcp://127.0.0.1:*")
            cmd = [sys.executable, __file__, "--role", "send", "--endpoint", endpoint,
                   "--messages", str(messages), "--size", str(size)]
            async with trio.open_nursery() as nursery:
                nursery.start_soon(lambda: trio.run_process(cmd, check=True))
                first = await sock.recv_multipart()
                start, cpu = time.perf_counter(), time.process_time()
                got = 1
                done = False
                if mode == "batched":
                    while not done:
                        for _, frame in await sock.recv_batch(1000):
                            if frame == END:
                                done = True
                                break
                            if decoding:
                                decode(frame)
                            got += 1
                else:
                    while True:
                        _, frame = await sock.recv_multipart()
                        if frame == END:
                            break
                        if decoding:
                            decode(frame)
                        got += 1
                elapsed = time.perf_counter() - start
                cpu = time.process_time() - cpu
                await sock.send_multipart([first[0], b"done"])
    if got != messages:
        raise SystemExit(f"lost messages: {got} of {messages} received")
    return (got - 1) / elapsed, cpu / (got - 1) * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=1024, help="bytes per message (about)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--decode", action="store_true", help="also decode every message")
    ap.add_argument("--max-seconds", type=float, default=60.0, help="per run")
    ap.add_argument("--rcvhwm", type=int, default=None,
                    help="the ROUTER's receive HWM (default 1000, as hwm; a peer's is [ring] recv_queue)")
    ap.add_argument("--role", choices=["bench", "send"], default="bench", help=argparse.SUPPRESS)
    ap.add_argument("--endpoint", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.role == "send":
        trio.run(send, args.endpoint, args.messages, args.size)
        return 0

    size = len(sample_frames(args.size)[0])
    modes = ["batched", "one await/msg"]
    best = dict.fromkeys(modes, (0.0, 0.0))
    for _ in range(args.repeat):
        for mode in modes:
            run = trio.run(receive, mode, args.messages, args.size, args.decode, args.rcvhwm,
                           args.max_seconds)
            best[mode] = max(best[mode], run)
    print(f"{args.messages} messages of {size} bytes (UrlBatch, msgpack), DEALER -> ROUTER on 127.0.0.1,"
          f" best of {args.repeat}{', decoded' if args.decode else ''}"
          f"{f', ROUTER rcvhwm {args.rcvhwm}' if args.rcvhwm is not None else ''}")
    print(f"{'receive':>15}  {'msgs/s':>9}  {'MB/s':>6}  {'receiver CPU us/msg':>19}")
    for mode in modes:
        rate, cpu = best[mode]
        print(f"{mode:>15}  {rate:>9,.0f}  {rate * size / 1e6:>6.1f}  {cpu:>19.1f}")
    ratio = best["batched"][0] / best["one await/msg"][0]
    print(f"batched / one await per message: {ratio:.2f}x the rate")
    return 0


if __name__ == "__main__":
    sys.exit(main())
