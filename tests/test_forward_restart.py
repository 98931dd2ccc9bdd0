"""No URL is lost on the way while the owner's socket restarts (ring/forwarder.py).

The ring's real path, on loopback: the sender's ``Outbox`` cuts batches that a
DEALER carries to the owner's ROUTER; the owner's ``Inbox`` takes them and acks
over its own DEALER to the sender's ROUTER (``peer.cluster`` does the same).
Part-way through the stream the owner closes its ROUTER, which throws away
whatever zmq held in its queues, and binds the same address again. Only the
Outbox's resends can bring those batches back; the test counts every URL.
"""

from __future__ import annotations

import trio

from ring.forwarder import Inbox, Outbox, Verdict
from ring.messages import Ack, UrlBatch, decode, encode
from ring.zmqio import PeerUnreachable, SocketType, open_socket

RING = "t"
N_URLS = 100_000
BATCH = 500
SEND_TIMEOUT = 0.2   # as peer.cluster: a send that cannot be queued is dropped
RESEND = 0.3


def url(i: int) -> str:
    return f"http://h{i % 997}.web.test/page/{i}"


async def run_stream(*, restarts: int, fresh_inbox: bool) -> tuple[set[str], int, Outbox]:
    """Forward N_URLS while the owner restarts its socket ``restarts`` times."""
    received: set[str] = set()
    entries = 0
    outbox = Outbox("a", RING, epoch=1, batch_size=BATCH, max_age=0.01, resend_after=RESEND)
    acked = trio.Event()

    async with open_socket(SocketType.ROUTER, identity=b"a") as a_in:
        a_addr = a_in.bind("tcp://127.0.0.1:*")

        async def sender_acks() -> None:
            while True:
                for _ident, data in await a_in.recv_batch():
                    ack = decode(data)
                    assert isinstance(ack, Ack)
                    outbox.ack(ack.sender, ack.epoch, ack.seq)
                if outbox.idle and outbox.stats().forwarded == N_URLS:
                    acked.set()

        async def sender(b_addr: str) -> None:
            async with open_socket(SocketType.DEALER, connect=b_addr, identity=b"a", hwm=50) as out:
                added = 0
                while not acked.is_set():
                    now = trio.current_time()
                    # Feed the stream in slices so batches go out while it grows.
                    for i in range(added, min(added + 5 * BATCH, N_URLS)):
                        outbox.add(url(i), 1, "b", now)
                    added = min(added + 5 * BATCH, N_URLS)
                    for _dest, batch in outbox.due(now):
                        with trio.move_on_after(SEND_TIMEOUT):
                            await out.send_multipart([encode(batch)])
                    await trio.sleep(0.001)

        async def owner(task_status=trio.TASK_STATUS_IGNORED) -> None:
            nonlocal entries
            inbox = Inbox(RING)
            async with open_socket(SocketType.DEALER, connect=a_addr, identity=b"b") as back:
                addr = "tcp://127.0.0.1:*"
                for life in range(restarts + 1):
                    # Each life ends after about a 1/(restarts+1) share of the stream.
                    quota = N_URLS * (life + 1) // (restarts + 1)
                    async with open_socket(SocketType.ROUTER, identity=b"b", hwm=50) as b_in:
                        # The same address each life, as a restarted peer binds.
                        addr = b_in.bind(addr)
                        if life == 0:
                            task_status.started(addr)
                        if fresh_inbox:
                            inbox = Inbox(RING)
                        while len(received) < quota or life == restarts:
                            for _ident, data in await b_in.recv_batch():
                                batch = decode(data)
                                assert isinstance(batch, UrlBatch)
                                verdict = inbox.accept(batch)
                                if verdict is Verdict.ACCEPT:
                                    entries += len(batch.urls)
                                    received.update(u for u, _ in batch.urls)
                                if verdict.ack:
                                    with trio.move_on_after(SEND_TIMEOUT):
                                        try:
                                            await back.send_multipart(
                                                [encode(Ack(RING, "b", batch.epoch, batch.seq))])
                                        except PeerUnreachable:
                                            pass
                            if acked.is_set():
                                return
                        # Stop reading a moment before closing, so batches are
                        # surely waiting in zmq's queues when they are thrown away.
                        await trio.sleep(0.1)
                    # Closed: whatever zmq had queued for b_in is gone.
                    await trio.sleep(0.2)

        with trio.fail_after(90):
            async with trio.open_nursery() as nursery:
                b_addr = await nursery.start(owner)
                nursery.start_soon(sender_acks)
                nursery.start_soon(sender, b_addr)
                await acked.wait()
                nursery.cancel_scope.cancel()
    return received, entries, outbox


async def test_every_url_arrives_although_the_owner_socket_restarts_twice():
    received, entries, outbox = await run_stream(restarts=2, fresh_inbox=False)
    assert received == {url(i) for i in range(N_URLS)}
    # The Inbox kept its state across socket restarts: nothing was taken twice.
    assert entries == N_URLS
    stats = outbox.stats()
    assert stats.resent > 0, "the restarts lost no batch: the test did not test resends"


async def test_every_url_arrives_when_the_owner_restarts_with_a_fresh_inbox():
    # A restarted process has a new Inbox: batches it took before but whose acks
    # were lost come again and are taken again; the owner's Bloom filter makes
    # that harmless. What must hold is that nothing is missing.
    received, entries, outbox = await run_stream(restarts=1, fresh_inbox=True)
    assert received == {url(i) for i in range(N_URLS)}
    assert entries >= N_URLS
    assert outbox.stats().resent > 0
