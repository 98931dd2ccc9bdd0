"""ring.io.zmqio: no loss, no reordering, no hang, clear errors (ring/io/zmqio.py's facts).

The long tests run a second process (tests/support/zmq_peer_proc.py) on 127.0.0.1, as
the module's measurements did. Streams go DEALER -> ROUTER, the ring's own path
(URL batches to the owner's ROUTER, acks back by identity): DEALER blocks at
HWM and the ROUTER learns who sent, so zero loss there is the property the
forwarding code relies on.
"""

from __future__ import annotations

import gc
import random
import subprocess
import sys
from pathlib import Path

import pytest
import trio
import trio.testing

from ring.errors import RingError
from ring.messages import MAX_FRAME
from ring.io.zmqio import (
    PeerUnreachable,
    SocketClosed,
    SocketType,
    TransportError,
    member_route,
    open_socket,
    route_member,
)

PEER = Path(__file__).resolve().parents[1] / "support" / "zmq_peer_proc.py"
ANY_PORT = "tcp://127.0.0.1:*"
#: 20x the receiving ROUTER's HWM, so the sender blocks at HWM over and over.
#: The adapter that lost 50,253 of 200,000 messages under random
#: cancellation lost about one in four: 20,000 show such a loss thousands of times.
N_STREAM = 20_000


def seq_of(frame: bytes) -> int:
    return int.from_bytes(frame[:8], "big")


def assert_exact_sequence(seqs: list[int], n: int) -> None:
    """``seqs`` is exactly 0..n-1: reports the first gap or swap, not a 200k-item diff."""
    if seqs != list(range(n)):
        first = next((i for i, s in enumerate(seqs) if s != i), min(len(seqs), n))
        got = seqs[first] if first < len(seqs) else None
        lost = n - len(set(seqs) & set(range(n)))
        pytest.fail(f"{len(seqs)} messages, {lost} of {n} missing; at index {first} got {got}")


async def run_peer(args: list[str], results: dict[str, subprocess.CompletedProcess[bytes]]) -> None:
    results[args[0]] = await trio.run_process(
        [sys.executable, str(PEER), *args], capture_stderr=True, check=False
    )


async def stream_from_other_process(take) -> list[int]:
    """The sequence numbers the ``send`` peer's stream brought, ``take`` doing the receiving.

    ``take(sock, frames)`` appends payload frames; the stream ends with b"end",
    so a loss shows as a short count, not as a wait for messages that never come.
    """
    results: dict[str, subprocess.CompletedProcess[bytes]] = {}
    frames: list[bytes] = []
    with trio.fail_after(50):
        async with open_socket("ROUTER", hwm=1000) as sock:
            endpoint = sock.bind(ANY_PORT)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(run_peer, ["send", endpoint, str(N_STREAM), "--size", "64"], results)
                while not frames or frames[-1] != b"end":
                    await take(sock, frames)
                await sock.send_multipart([b"sender", b"done"])
    proc = results["send"]
    assert proc.returncode == 0, proc.stderr.decode()
    # A slow receiver may find a repeated end marker behind the first.
    end = frames.index(b"end")
    assert set(frames[end:]) == {b"end"}
    return [seq_of(f) for f in frames[:end]]


# ------------------------------------------------------------------ streams


async def test_20k_messages_between_processes_arrive_all_in_order():
    async def take(sock, frames):
        for identity, frame in await sock.recv_batch(1000):
            assert identity == b"sender"
            frames.append(frame)

    assert_exact_sequence(await stream_from_other_process(take), N_STREAM)


#: Most messages one take of the cancellation test may receive. A take that
#: receives nothing was cancelled, so the count of cancelled takes follows
#: the count of takes, and with ``recv_batch(1..400)`` that one followed the
#: machine's speed: a fast sender left full queues, big batches ended the
#: stream in fewer takes, and a quiet machine cancelled 750-900 of them
#: (under load, over 1000). At most 8 a take, the 20k stream needs at least
#: 2,500 takes that receive, and a third of all takes start past their
#: deadline (two of the six choices), so at least half as many again are
#: cancelled whatever the timing.
MAX_TAKE = 8


async def test_20k_messages_under_random_cancellation_lose_nothing():
    rng = random.Random(4)
    state = {"scope": None, "cancelled": 0, "received": 0}

    async def take(sock, frames):
        # Deadlines from "already expired" to a few hundred microseconds, and
        # a second task cancelling whatever scope is current at random times.
        with trio.CancelScope(deadline=trio.current_time() + rng.choice([0, 0, 1e-6, 1e-5, 1e-4, 3e-4])) as scope:
            state["scope"] = scope
            if rng.random() < 0.5:
                batch = await sock.recv_batch(rng.randint(1, MAX_TAKE))
                assert 1 <= len(batch) <= MAX_TAKE
                for _, frame in batch:
                    frames.append(frame)
            else:
                _, frame = await sock.recv_multipart()
                frames.append(frame)
            state["received"] += 1
        state["cancelled"] += scope.cancelled_caught

    async def canceller():
        while True:
            await trio.sleep(rng.random() * 2e-4)
            if state["scope"] is not None:
                state["scope"].cancel()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(canceller)
        seqs = await stream_from_other_process(take)
        nursery.cancel_scope.cancel()
    assert_exact_sequence(seqs, N_STREAM)
    # The cancellations did happen.
    assert state["cancelled"] > 1000, state


async def test_send_and_recv_on_one_socket_from_two_tasks_does_not_hang():
    # A naive adapter hung after 168 of 100,000 round trips: the
    # sending task's send consumed the FD edge the receiving task slept on.
    # A window of one message makes every round trip depend on that wake-up.
    n, window = 10_000, 32  # 60x the round trips after which the naive adapter hung
    results: dict[str, subprocess.CompletedProcess[bytes]] = {}
    echoed: list[int] = []
    with trio.move_on_after(40) as timer:
        async with open_socket("DEALER", identity=b"t") as sock:
            endpoint = sock.bind(ANY_PORT)
            credit = trio.Semaphore(window)

            async def sender():
                for seq in range(n):
                    await credit.acquire()
                    await sock.send_multipart([seq.to_bytes(8, "big")])

            async def receiver():
                while len(echoed) < n:
                    for (frame,) in await sock.recv_batch():
                        echoed.append(seq_of(frame))
                        credit.release()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(run_peer, ["echo", endpoint], results)
                nursery.start_soon(sender)
                await receiver()
                await sock.send_multipart([b"stop"])
    if timer.cancelled_caught:
        pytest.fail(f"hung after {len(echoed)} of {n} messages")
    assert results["echo"].returncode == 0, results["echo"].stderr.decode()
    assert_exact_sequence(echoed, n)


async def test_many_tasks_sending_and_receiving_on_one_pair_of_sockets():
    # In-process: 4 senders and 3 receivers share two sockets with a tiny HWM,
    # so every task parks and is woken many times; every message arrives once.
    per_sender, senders = 2_000, 4  # 8,000 messages through an HWM of 8
    total = per_sender * senders
    got: dict[int, list[int]] = {s: [] for s in range(senders)}
    received = 0
    with trio.fail_after(30):
        async with open_socket("ROUTER", hwm=8) as router:
            endpoint = router.bind(ANY_PORT)
            async with open_socket("DEALER", connect=endpoint, identity=b"d", hwm=8) as dealer:

                async def send(s):
                    for i in range(per_sender):
                        await dealer.send_multipart([bytes([s]), i.to_bytes(4, "big")])

                async def recv(take):
                    nonlocal received
                    while True:
                        for _, s, i in await take():
                            got[s[0]].append(int.from_bytes(i, "big"))
                        received = sum(map(len, got.values()))
                        if received >= total:
                            nursery.cancel_scope.cancel()  # the others are parked for good

                async def one():
                    return [await router.recv_multipart()]

                async with trio.open_nursery() as nursery:
                    for s in range(senders):
                        nursery.start_soon(send, s)
                    nursery.start_soon(recv, lambda: router.recv_batch(50))
                    nursery.start_soon(recv, lambda: router.recv_batch(1))
                    nursery.start_soon(recv, one)
    # Receivers interleave, so each sender's order is not kept; the sets are exact.
    assert received == total
    for s in range(senders):
        assert sorted(got[s]) == list(range(per_sender))


# --------------------------------------------------------- ROUTER_MANDATORY


async def test_router_send_to_unknown_identity_raises_peer_unreachable():
    with trio.fail_after(10):
        async with open_socket("ROUTER", bind=ANY_PORT) as router:
            with pytest.raises(PeerUnreachable) as info:
                await router.send_multipart([b"nobody", b"hello"])
    assert info.value.identity == b"nobody"
    assert isinstance(info.value, RingError)
    assert "b'nobody'" in str(info.value)


async def test_router_send_to_a_peer_that_left_raises_peer_unreachable():
    with trio.fail_after(10):
        async with open_socket("ROUTER") as router:
            endpoint = router.bind(ANY_PORT)
            async with open_socket("DEALER", connect=endpoint, identity=b"d") as dealer:
                await dealer.send_multipart([b"hi"])
                assert await router.recv_multipart() == [b"d", b"hi"]
                await router.send_multipart([b"d", b"reply"])
                assert await dealer.recv_multipart() == [b"reply"]
            # The DEALER is gone; once the ROUTER notices, sends fail loudly.
            with pytest.raises(PeerUnreachable):
                while True:
                    await router.send_multipart([b"d", b"anyone?"])
                    await trio.sleep(0.01)


async def test_a_second_connection_with_a_live_routing_id_does_not_take_its_route():
    # With ROUTER_HANDOVER (the old setting) the newcomer took "p2"'s route and
    # the real p2's connection was never read again: a ring split for good.
    with trio.fail_after(10):
        async with open_socket("ROUTER") as router:
            endpoint = router.bind(ANY_PORT)
            async with open_socket("DEALER", connect=endpoint, identity=b"p2") as real:
                await real.send_multipart([b"real 1"])
                assert await router.recv_multipart() == [b"p2", b"real 1"]
                async with open_socket("DEALER", connect=endpoint, identity=b"p2") as spoof:
                    for i in range(3):
                        await spoof.send_multipart([b"spoof %d" % i])
                    await trio.sleep(0.2)
                    await real.send_multipart([b"real 2"])
                    assert await router.recv_multipart() == [b"p2", b"real 2"]
                    await router.send_multipart([b"p2", b"to the real p2"])
                    assert await real.recv_multipart() == [b"to the real p2"]
                    with trio.move_on_after(0.3):
                        got = await router.recv_multipart()
                        pytest.fail(f"the spoof's message got through: {got}")
                    with trio.move_on_after(0.3):
                        await spoof.recv_multipart()
                        pytest.fail("the spoof got the real p2's message")


async def test_a_restarted_member_gets_a_route_of_its_own_while_the_old_one_lingers():
    # Member routes carry a per-process nonce, so a restart never meets the
    # duplicate-id refusal above, however long the old connection lingers.
    old_route, new_route = member_route("p2", "aa01"), member_route("p2", "bb02")
    with trio.fail_after(10):
        async with open_socket("ROUTER") as router:
            endpoint = router.bind(ANY_PORT)
            async with open_socket("DEALER", connect=endpoint, identity=old_route) as old:
                await old.send_multipart([b"old life"])
                assert await router.recv_multipart() == [old_route, b"old life"]
                async with open_socket("DEALER", connect=endpoint, identity=new_route) as new:
                    await new.send_multipart([b"new life"])
                    assert await router.recv_multipart() == [new_route, b"new life"]
    assert route_member(old_route) == route_member(new_route) == "p2"


def test_route_member_names_members_only():
    assert member_route("p1", "0123abcd") == b"p1/0123abcd"
    assert route_member(b"p1/0123abcd") == "p1"
    assert route_member(b"node-7.x/ff") == "node-7.x"
    for route in (b"p2", b"\x00\x80\x00\x00\x01", b"p2/", b"/ff", b"p2/XYZ", b"../x/ff",
                  b"p 2/ff", b"p2/" + b"f" * 33, "pé/ff".encode()):
        assert route_member(route) is None, route
    with pytest.raises(ValueError):
        member_route("p2", "not hex")


async def test_a_message_over_max_msg_drops_its_connection_before_it_is_read():
    with trio.fail_after(10):
        async with open_socket("ROUTER", max_msg=1000) as router:
            endpoint = router.bind(ANY_PORT)
            async with open_socket("DEALER", connect=endpoint, identity=b"big") as big, \
                    open_socket("DEALER", connect=endpoint, identity=b"ok") as ok:
                await big.send_multipart([b"x" * 1001])
                await big.send_multipart([b"after the big one"])
                await ok.send_multipart([b"y" * 1000])
                got = []
                with trio.move_on_after(0.5):
                    while True:
                        got.append(await router.recv_multipart())
    # The big one never arrives; the DEALER reconnects and what it queued
    # after it may (zmq keeps a DEALER's queue across reconnects).
    assert [b"ok", b"y" * 1000] in got
    assert all(len(m[1]) <= 1000 for m in got), [(m[0], len(m[1])) for m in got]
    assert [m for m in got if m[0] == b"big"] in ([], [[b"big", b"after the big one"]])
    with pytest.raises(ValueError):
        open_socket("ROUTER", max_msg=MAX_FRAME + 1)


async def test_recv_batch_and_recv_routed_stop_at_max_bytes():
    with trio.fail_after(10):
        async with open_socket("ROUTER") as router:
            endpoint = router.bind(ANY_PORT)
            async with open_socket("DEALER", connect=endpoint, identity=b"d") as dealer:
                for i in range(10):
                    await dealer.send_multipart([bytes([i]) * 100])
                await trio.sleep(0.2)
                first = await router.recv_batch(1000, max_bytes=250)
                assert [m[1][:1] for m in first] == [b"\x00", b"\x01", b"\x02"]  # crossed at the 3rd
                routed = await router.recv_routed(1000, max_bytes=10_000)
                assert [(r.route, bytes(r.frames[0][:1]), r.user_id) for r in routed] == [
                    (b"d", bytes([i]), None) for i in range(3, 10)]
                assert all(isinstance(r.frames[0], memoryview) for r in routed)


async def test_router_full_queue_is_backpressure_not_loss():
    # 256 KiB messages and HWM 2 fill zmq's queues and the kernel's socket
    # buffers after a few dozen. Without ROUTER_MANDATORY the ROUTER would
    # "send" all of them at once and drop most.
    total, size = 300, 256 * 1024
    pad = b"x" * (size - 4)
    sent = 0

    async def send_from(start):
        nonlocal sent
        for i in range(start, total):
            await router.send_multipart([b"d", i.to_bytes(4, "big") + pad])
            sent = i + 1

    with trio.fail_after(30):
        async with open_socket("ROUTER", hwm=2) as router:
            endpoint = router.bind(ANY_PORT)
            async with open_socket("DEALER", connect=endpoint, identity=b"d", hwm=2) as dealer:
                await dealer.send_multipart([b"hi"])
                assert await router.recv_multipart() == [b"d", b"hi"]

                # Phase 1: nobody reads; the sender stops making progress.
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(send_from, 0)
                    previous = -1
                    while sent != previous:
                        previous = sent
                        await trio.sleep(0.2)
                    nursery.cancel_scope.cancel()
                blocked_at = sent
                assert 0 < blocked_at < total

                # Phase 2: resume from the first unsent message while reading.
                # A cancelled send that had sent anyway would show up twice.
                received: list[int] = []
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(send_from, blocked_at)
                    while len(received) < total:
                        for (frame,) in await dealer.recv_batch():
                            received.append(int.from_bytes(frame[:4], "big"))
                with trio.move_on_after(0.2):
                    extra = await dealer.recv_multipart()
                    pytest.fail(f"unexpected extra message {extra[0][:4]!r}")
    assert_exact_sequence(received, total)


# ---------------------------------------------------------------- lifecycle


async def test_close_wakes_parked_tasks_with_socket_closed():
    errors: list[BaseException] = []

    async def park(call):
        try:
            await call()
        except SocketClosed as e:
            errors.append(e)

    with trio.fail_after(10):
        # Never bound or connected: a DEALER with no peer can neither send nor receive.
        async with open_socket("DEALER") as sock:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(park, sock.recv_multipart)
                nursery.start_soon(park, sock.recv_batch)
                nursery.start_soon(park, lambda: sock.send_multipart([b"x"]))
                nursery.start_soon(park, lambda: sock.send_multipart([b"y"]))
                await trio.testing.wait_all_tasks_blocked()
                assert errors == []
                sock.close()
            assert len(errors) == 4
            assert all(isinstance(e, trio.ClosedResourceError) for e in errors)
            assert sock.closed
            sock.close()  # idempotent
            with pytest.raises(SocketClosed):
                await sock.recv_multipart()
    gc.collect()  # an unclosed zmq socket would warn here, and warnings are errors


async def test_close_wakes_router_senders_waiting_for_a_full_peer():
    # Three tasks send to one DEALER that never reads: one parks for room,
    # the others wait their turn behind it. All must fail, none may hang.
    errors: list[BaseException] = []
    big = b"x" * (1024 * 1024)

    async def flood():
        try:
            while True:
                await router.send_multipart([b"d", big])
        except SocketClosed as e:
            errors.append(e)

    with trio.fail_after(20):
        async with open_socket("ROUTER", hwm=1) as router:
            endpoint = router.bind(ANY_PORT)
            async with open_socket("DEALER", connect=endpoint, identity=b"d", hwm=1) as dealer:
                await dealer.send_multipart([b"hi"])
                assert await router.recv_multipart() == [b"d", b"hi"]
                async with trio.open_nursery() as nursery:
                    for _ in range(3):
                        nursery.start_soon(flood)
                    # A few MiB fill the kernel's buffers too; then all wait.
                    await trio.sleep(0.3)
                    await trio.testing.wait_all_tasks_blocked(0.05)
                    router.close()
    assert len(errors) == 3


async def test_leaving_the_block_closes_and_body_errors_propagate_unwrapped():
    with pytest.raises(ValueError, match="boom"):
        async with open_socket("PULL", bind=ANY_PORT) as sock:
            raise ValueError("boom")
    assert sock.closed
    with pytest.raises(SocketClosed):
        await sock.recv_batch()
    gc.collect()


async def test_outer_cancellation_of_a_parked_receiver_exits_cleanly():
    with trio.fail_after(10):
        with trio.move_on_after(0.05) as scope:
            async with open_socket("PULL", bind=ANY_PORT) as sock:
                await sock.recv_multipart()
        assert scope.cancelled_caught
        assert sock.closed


async def test_send_on_an_unentered_socket_raises_socket_closed():
    sock = open_socket("PUSH", connect="tcp://127.0.0.1:9")
    with pytest.raises(SocketClosed, match="not open"):
        await sock.send_multipart([b"x"])


async def test_bind_to_a_used_address_raises_transport_error_naming_it():
    async with open_socket("ROUTER", bind=ANY_PORT) as first:
        endpoint = first.bind(ANY_PORT)
        with pytest.raises(TransportError, match=f"cannot bind {endpoint}: Address already in use"):
            async with open_socket("ROUTER", bind=endpoint):
                pass
    gc.collect()


async def test_disconnect_stops_delivery_and_an_unknown_endpoint_is_an_error():
    with trio.fail_after(10):
        async with open_socket("PULL") as pull:
            endpoint = pull.bind(ANY_PORT)
            async with open_socket("PUSH", connect=endpoint) as push:
                await push.send_multipart([b"one"])
                assert await pull.recv_multipart() == [b"one"]
                push.disconnect(endpoint)
                # No peer left: the send waits instead of going anywhere.
                with trio.move_on_after(0.2) as waited:
                    await push.send_multipart([b"two"])
                assert waited.cancelled_caught
                with pytest.raises(TransportError, match=f"cannot disconnect from {endpoint}"):
                    push.disconnect(endpoint)
            with trio.move_on_after(0.2):
                pytest.fail(f"a cancelled send was delivered: {await pull.recv_multipart()}")


def test_only_lossless_socket_types_are_offered():
    assert set(SocketType) == {"ROUTER", "DEALER", "PUSH", "PULL", "PAIR"}  # PAIR blocks at HWM too
    with pytest.raises(ValueError):
        open_socket("PUB")


async def test_configure_hook_runs_before_bind_and_push_pull_carry_data():
    seen = []
    with trio.fail_after(10):
        hook = lambda raw: seen.append(raw.LAST_ENDPOINT)  # noqa: E731
        async with open_socket("PULL", bind=ANY_PORT, configure=hook) as pull:
            endpoint = pull.bind(ANY_PORT)
            async with open_socket("PUSH", connect=endpoint) as push:
                await push.send_multipart([b"a", b"b"])
                assert await pull.recv_multipart() == [b"a", b"b"]
    assert seen == [b""]


_STOPPABLE = """
import sys, time, zmq
ctx = zmq.Context()
socks = [ctx.socket(zmq.DEALER) for _ in sys.argv[1:]]
for s, endpoint in zip(socks, sys.argv[1:]):
    s.setsockopt(zmq.ROUTING_ID, b"stopped")
    s.connect(endpoint)
    s.send(b"hi")
time.sleep(60)
"""


async def test_heartbeats_close_a_connection_whose_other_end_stopped_answering():
    # A member whose host vanished leaves its connection open (no FIN):
    # without heartbeats it lingers for ever. A stopped process stands in.
    import signal

    with trio.fail_after(30):
        async with open_socket("ROUTER", heartbeat=(0.2, 1.0)) as beating, \
                open_socket("ROUTER") as plain:
            endpoints = [beating.bind(ANY_PORT), plain.bind(ANY_PORT)]
            proc = await trio.lowlevel.open_process([sys.executable, "-c", _STOPPABLE, *endpoints])
            try:
                assert await beating.recv_multipart() == [b"stopped", b"hi"]
                assert await plain.recv_multipart() == [b"stopped", b"hi"]
                proc.send_signal(signal.SIGSTOP)
                t0 = trio.current_time()
                with pytest.raises(PeerUnreachable):
                    while True:
                        await beating.send_multipart([b"stopped", b"are you there?"])
                        await trio.sleep(0.05)
                closed_after = trio.current_time() - t0
                await plain.send_multipart([b"stopped", b"still routed"])  # no heartbeat: it lingers
            finally:
                proc.kill()
                await proc.wait()
    assert 0.5 < closed_after < 5.0, closed_after
