"""The other process of tests/edges/test_zmqio.py: a sender or an echo peer on loopback.

    python tests/support/zmq_peer_proc.py send ENDPOINT N [--size BYTES]
        DEALER (identity b"sender") connects to the ROUTER at ENDPOINT and sends
        N single-frame messages: an 8-byte big-endian sequence number padded to
        BYTES, then a b"end" frame every 0.5 s until the ROUTER answers
        b"done", so nothing is still queued when it exits (linger is 0).

    python tests/support/zmq_peer_proc.py echo ENDPOINT
        ROUTER connects to the DEALER bound at ENDPOINT and sends every message
        back to its sender, until a message whose last frame is b"stop".

Both give up after --max-seconds (exit 3) so a broken test never leaves a
process behind.
"""

from __future__ import annotations

import argparse
import sys

import trio

from ring.io.zmqio import open_socket


async def send(endpoint: str, n: int, size: int) -> None:
    pad = b"\0" * max(0, size - 8)
    async with open_socket("DEALER", connect=endpoint, identity=b"sender") as sock:
        for seq in range(n):
            await sock.send_multipart([seq.to_bytes(8, "big") + pad])
        # Repeated, so a receiver that lost the first one still learns the end.
        while True:
            await sock.send_multipart([b"end"])
            with trio.move_on_after(0.5):
                assert await sock.recv_multipart() == [b"done"]
                return


async def echo(endpoint: str) -> None:
    async with open_socket("ROUTER", connect=endpoint) as sock:
        while True:
            for msg in await sock.recv_batch():
                if msg[-1] == b"stop":
                    return
                await sock.send_multipart(msg)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("role", choices=["send", "echo"])
    ap.add_argument("endpoint")
    ap.add_argument("n", type=int, nargs="?", default=0)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--max-seconds", type=float, default=50.0)
    args = ap.parse_args()

    async def run() -> bool:
        with trio.move_on_after(args.max_seconds):
            if args.role == "send":
                await send(args.endpoint, args.n, args.size)
            else:
                await echo(args.endpoint)
            return True
        return False

    if not trio.run(run):
        print(f"zmq_peer_proc {args.role}: gave up after {args.max_seconds}s", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
