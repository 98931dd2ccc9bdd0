#!/usr/bin/env python3
"""What CurveZMQ costs: messages per second between two processes, plain vs Curve.

The same stream as ``scripts/bench_zmq.py`` (1 KB msgpack ``UrlBatch``
frames, DEALER in a sender process -> ROUTER here, received with
``recv_batch(1000)``, the ring's own path), once over plain TCP and once
with ``[ring] curve_keys`` on: the ROUTER a Curve server behind the ZAP
handler of ``ring.io.zap.CurveAuthenticator``, the DEALER a Curve client,
with key pairs written to a temporary directory by ``ring.io.curve``. Curve
encrypts and authenticates every message (XSalsa20-Poly1305 per frame,
RFC 26), measured at about half the plain rate here (docs/curve.md).

Runs alternate (plain, curve, plain, ...) so a noisy machine slows both
alike; the figures are medians of ``--repeat`` runs, plus the ratio. The
clock runs from the first message received to the end marker, so process
start-up and the Curve handshake are not counted. All traffic is on
127.0.0.1 and every run gives up after ``--max-seconds``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

from localweb.bench import END_FRAME as END
from localweb.bench import sample_frames  # the same frames as bench_zmq.py
from ring.io.curve import CurveKeys, write_keypair
from ring.io.zap import CurveAuthenticator, curve_client, curve_keypair, curve_server
from ring.io.zmqio import open_socket

MODES = ("plain", "curve")
MECHANISM = {"plain": "NULL", "curve": "CURVE"}


async def send(endpoint: str, messages: int, size: int, keys_dir: str | None) -> None:
    frames = sample_frames(size)
    configure = None
    if keys_dir:
        keys = CurveKeys.load(keys_dir, "sender")
        configure = curve_client(keys, keys.public_key("bench"))
    async with open_socket("DEALER", connect=endpoint, identity=b"sender", configure=configure) as sock:
        for i in range(messages):
            await sock.send_multipart([frames[i & 7]])
        # Repeated until answered: with linger 0, leaving early would drop the queue.
        while True:
            await sock.send_multipart([END])
            with trio.move_on_after(0.5):
                await sock.recv_multipart()
                return


async def receive(keys_dir: str | None, messages: int, size: int,
                  max_seconds: float) -> tuple[float, float, str]:
    """Messages/s, receiver CPU µs per message, and the mechanism the ROUTER used."""
    with trio.fail_after(max_seconds):
        if keys_dir is None:
            return await _receive(None, None, messages, size)
        keys = CurveKeys.load(keys_dir, "bench")
        async with CurveAuthenticator(keys):
            return await _receive(keys, keys_dir, messages, size)


async def _receive(keys: CurveKeys | None, keys_dir: str | None, messages: int,
                   size: int) -> tuple[float, float, str]:
    configure = curve_server(keys) if keys is not None else None
    async with open_socket("ROUTER", configure=configure) as sock:
        endpoint = sock.bind("tcp://127.0.0.1:*")
        cmd = [sys.executable, __file__, "--role", "send", "--endpoint", endpoint,
               "--messages", str(messages), "--size", str(size)]
        if keys_dir:
            cmd += ["--keys", keys_dir]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: trio.run_process(cmd, check=True))
            first = await sock.recv_multipart()
            start, cpu = time.perf_counter(), time.process_time()
            got, done = 1, False
            while not done:
                for _, frame in await sock.recv_batch(1000):
                    if frame == END:
                        done = True
                        break
                    got += 1
            elapsed = time.perf_counter() - start
            cpu = time.process_time() - cpu
            await sock.send_multipart([first[0], b"done"])
        mechanism = sock.mechanism
    if got != messages:
        raise SystemExit(f"lost messages: {got} of {messages} received")
    return (got - 1) / elapsed, cpu / (got - 1) * 1e6, mechanism


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: python scripts/bench_curve.py --messages 100000 --repeat 5",
    )
    ap.add_argument("--messages", type=int, default=200_000, help="per run (default 200000)")
    ap.add_argument("--size", type=int, default=1024, help="bytes per message, about (default 1024)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each mode, alternated (default 3)")
    ap.add_argument("--max-seconds", type=float, default=60.0, help="per run (default 60)")
    ap.add_argument("--role", choices=["bench", "send"], default="bench", help=argparse.SUPPRESS)
    ap.add_argument("--endpoint", help=argparse.SUPPRESS)
    ap.add_argument("--keys", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.messages < 2 or args.repeat < 1:
        print("bench_curve.py: --messages must be at least 2 and --repeat at least 1", file=sys.stderr)
        return 2

    if args.role == "send":
        trio.run(send, args.endpoint, args.messages, args.size, args.keys)
        return 0

    size = len(sample_frames(args.size)[0])
    runs: dict[str, list[tuple[float, float]]] = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory(prefix="ringcrawl-curve-") as tmp:
        for peer_id in ("bench", "sender"):
            write_keypair(Path(tmp), peer_id, *curve_keypair())
        for _ in range(args.repeat):
            for mode in MODES:
                rate, cpu, mechanism = trio.run(receive, tmp if mode == "curve" else None,
                                                args.messages, size, args.max_seconds)
                if mechanism != MECHANISM[mode]:
                    raise SystemExit(f"{mode} run used the {mechanism} mechanism, not {MECHANISM[mode]}")
                runs[mode].append((rate, cpu))
    print(f"{args.messages} messages of {size} bytes (UrlBatch, msgpack), DEALER -> ROUTER on 127.0.0.1,"
          f" recv_batch(1000); median of {args.repeat} alternated runs")
    print(f"{'mode':>6}  {'msgs/s':>9}  {'MB/s':>6}  {'receiver CPU us/msg':>19}  runs (msgs/s)")
    median = {}
    for mode in MODES:
        rate = statistics.median(r for r, _ in runs[mode])
        cpu = statistics.median(c for _, c in runs[mode])
        median[mode] = rate
        each = ", ".join(f"{r:,.0f}" for r, _ in runs[mode])
        print(f"{mode:>6}  {rate:>9,.0f}  {rate * size / 1e6:>6.1f}  {cpu:>19.1f}  {each}")
    print(f"curve / plain: {median['curve'] / median['plain']:.2f} of the rate")
    return 0


if __name__ == "__main__":
    sys.exit(main())
