"""A bare ``ring.node.RingNode`` over zmq, for a crawl seen as a ``CrawlPort``; and ``ForwardLink`` (edge).

:class:`RingDriver` runs a node over :class:`ring.io.sockets.MemberSockets`
and carries out the actions it returns through one ``{action type:
handler}`` table, handing the crawl's part to a ``ring.crawlport.CrawlPort``:
a batch taken and our entries rerouted back as ``ring.forwarding.intake`` orders them
(the rules ``peer.core.door.peer.PeerCore`` follows too).
It serves the ring's tests and benchmarks, which need a member without a
crawl; a peer runs ``peer.core.door.peer.PeerCore`` under its engine instead,
where the crawl and the ring are one core and nothing goes through here.

:class:`ForwardLink` is the sending half for a *non-member*
(``scripts/adopt.py``, tests, benchmarks): batches go over one DEALER per
destination on a tool's route (``ring.wireversion.tool_route``), and the owner acks them on that
connection (``HostState`` too: a dead peer's hosts' state, acked by
``HostStateAck``). A member's acks come back over the owner's own DEALER instead.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from ring.crawlport import CrawlPort
from ring.forwarding.intake import Durable, Source, TakeSeen, intake
from ring.io.curve import CurveKeys
from ring.io.sockets import SEND_TIMEOUT, MemberSockets
from ring.messages import Ack, DecodeError, HostState, HostStateAck, Message, SeedAddStatus, UrlBatch, decode, encode_lowest
from ring.node import (
    Action,
    Count,
    Deliver,
    Granted,
    VotersChanged,
    SettingsChanged,
    SettingsMismatch,
    NearAnswered,
    NearAsked,
    HandOff,
    LeaveAsked,
    Log,
    Released,
    Reply,
    Rerouted,
    RestartAsked,
    RingChanged,
    RingNode,
    SeedStarts,
    SeedsAsked,
    Send,
    StateTaken,
    StatusAsked,
    StatusFigures,
)
from ring.io.zmqio import SocketType, ZmqSocket, open_socket
from ring.wireversion import tool_route

__all__ = ["ForwardLink", "RingDriver", "SEND_TIMEOUT"]

log = logging.getLogger("ring.driver")


class RingDriver:
    """Runs one ``RingNode`` over zmq for a ``CrawlPort`` (module docstring)."""

    def __init__(self, node: RingNode, crawl: CrawlPort, address: str, *, bind: str = "",
                 keys: CurveKeys | None = None, recv_queue: int = 16,
                 heartbeat: tuple[float, float] | None = None,
                 wall: Callable[[], float] | None = None,
                 logger: logging.Logger | None = None) -> None:
        self.node = node
        self.crawl = crawl
        self.address = address
        self.log = logger or log
        self.sockets = MemberSockets(self, node.peer_id, address, bind=bind, keys=keys, recv_queue=recv_queue,
                                     heartbeat=heartbeat, wall=wall, logger=self.log)
        self.route = self.sockets.route
        self.started = self.sockets.started
        self._nursery: trio.Nursery | None = None

    # -- what the crawl calls ----------------------------------------------------

    def forward(self, url: str, depth: int, owner: str, *, relay: bool = False) -> None:
        self.node.forward(url, depth, owner, self.now(), relay=relay)
        self.sockets.wake()

    def wake(self) -> None:
        """Entries were queued in the Outbox directly (hand-off seen URLs)."""
        self.sockets.wake()

    def leave(self) -> None:
        self._start(self.node.leave(self.now()))

    def now(self) -> float:
        """The node's clock (``MemberSockets.now``)."""
        return self.sockets.now()

    @property
    def stalled(self) -> float:
        return self.sockets.stalled

    # -- running -----------------------------------------------------------------

    async def run(self, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await nursery.start(self.sockets.run)
            task_status.started()

    # -- ring.io.sockets.Member ------------------------------------------------------

    @property
    def gossip_interval(self) -> float:
        return self.node.gossip_interval

    async def received(self, route: bytes, msg: Message, user_id: str | None) -> None:
        await self._run(self.node.receive(route, msg, self.now(), user_id=user_id))

    def ticked(self) -> None:
        self._start(self.node.tick(self.now(), idle=self.crawl.locally_idle(),
                                   pages=self.crawl.pages_requested))
        self.crawl.poke()

    def flushed(self) -> None:
        self._start(self.node.flush(self.now()))

    def next_flush_at(self) -> float | None:
        return self.node.outbox.next_due_at()

    def address_of(self, member: str) -> str | None:
        rec = self.node.membership.members().get(member)
        return rec.address if rec is not None else None

    def count(self, reason: str) -> None:
        self.node.count(reason)

    # -- one handler per action type ---------------------------------------------

    def _start(self, actions: list[Action]) -> None:
        """Run actions from synchronous code (they only queue; a Reply never comes here)."""
        for a in actions:
            got = self._ACTIONS[type(a)](self, a)
            if got is not None:  # pragma: no cover - only receive() returns replies
                raise RuntimeError(f"{a!r} needs the receiver")

    async def _run(self, actions: list[Action]) -> None:
        for a in actions:
            got = self._ACTIONS[type(a)](self, a)
            if got is not None:
                await got

    def _do_send(self, a: Send) -> None:
        self.sockets.send(a.dest, a.msg)

    def _do_reply(self, a: Reply) -> Awaitable[None]:
        return self.sockets.reply(a.route, a.msg)

    def _do_intake(self, a: Deliver | Rerouted) -> None:
        """A batch taken, or our entries back: ``ring.forwarding.intake``'s steps, in their order."""
        crawl = self.crawl
        for step in intake(a):
            if isinstance(step, Durable):
                crawl.commit_state()
            elif isinstance(step, TakeSeen):
                for url in step.urls:
                    crawl.accept_seen(url)
            elif step.source is Source.HANDED_BACK:
                for url, depth in step.urls:
                    crawl.take_back(url, depth)
            else:  # a member's or the adopt tool's: a stand-in crawl takes both alike
                for url, depth in step.urls:
                    crawl.accept(url, depth)

    def _do_ring_changed(self, a: RingChanged) -> None:
        self.crawl.set_ring(a.ring)

    def _do_handoff(self, a: HandOff) -> None:
        assert self._nursery is not None
        self._nursery.start_soon(self._hand_off, a)

    async def _hand_off(self, a: HandOff) -> None:
        """Collect the moved hosts' seen URLs and starts; the node waits for the acks."""
        n = await self.crawl.handoff_seen(a.old, a.ring)
        starts = self.crawl.handoff_starts(a.old, a.ring)
        self.sockets.wake()
        self._start(self.node.begin_handoff(a.version, n, starts, self.now()))

    def _do_released(self, a: Released) -> None:
        self.crawl.handoff_done(a.sender)

    def _do_state(self, a: StateTaken) -> None:
        self.crawl.accept_state(a.records)
        self.crawl.commit_state()  # durable before the HostStateAck after it, as a batch is

    def _do_seed_starts(self, a: SeedStarts) -> None:
        self.crawl.seed_host_starts(a.starts)

    def _do_leave_asked(self, a: LeaveAsked) -> None:
        self.crawl.leave()

    def _do_restart_asked(self, a: RestartAsked) -> None:
        pass  # a bare member has no crawl to stop nor a service manager to start it again: it goes on

    def _do_status(self, a: StatusAsked) -> Awaitable[None]:
        figures = StatusFigures.of(self.crawl.status_figures(), self.sockets.uptime())
        return self.sockets.reply(a.route, self.node.status_reply(a.nonce, figures))

    def _do_count(self, a: Count) -> None:
        pass  # counted by the node already; a metrics hook would go here

    def _do_log(self, a: Log) -> None:
        self.log.log(a.level, "%s", a.text, extra=a.extra())

    def _do_granted(self, a: Granted) -> None:
        pass  # a stand-in crawl keeps no disk: its grants live as long as its process

    def _do_voters(self, a: VotersChanged) -> None:
        pass  # a bare node keeps no data_dir: its record lives as long as the process

    def _do_settings(self, a: SettingsChanged) -> None:
        self.crawl.settings_changed(a.record)  # a bare node keeps no data_dir: no journal

    def _do_mismatch(self, a: SettingsMismatch) -> None:
        # A bare member has no cluster.toml of its own to refuse with: it says so and waits.
        self.log.warning("settings: %s runs another document at epoch %d; keys that differ: %s",
                         a.sender, a.ours.epoch, ", ".join(a.keys) or "none")

    def _do_near(self, a: NearAsked | NearAnswered) -> None:
        pass  # a stand-in crawl owns no band table: the asker decides at its answer_timeout

    async def _do_seeds(self, a: SeedsAsked) -> None:
        """``ring seed add``'s batch: a stand-in crawl's counts, answered at once (it forwards through
        ``forward``, whose URLs it does not tell); a member without a crawl says so."""
        counts = self.crawl.add_seeds(a.msg.lines, a.msg.unreadable)
        node = self.node
        if counts is None:
            await self._run(node.seeds_refused(a.route, a.msg.nonce, SeedAddStatus.NO_CRAWL))
        else:
            await self._run(node.seeds_taken(a.route, a.msg.nonce, counts, {}, self.now(), 0.0))

    _ACTIONS: dict[type, Callable[[RingDriver, Any], Awaitable[None] | None]] = {
        Send: _do_send,
        Reply: _do_reply,
        Deliver: _do_intake,
        Rerouted: _do_intake,
        RingChanged: _do_ring_changed,
        HandOff: _do_handoff,
        Released: _do_released,
        SeedStarts: _do_seed_starts,
        LeaveAsked: _do_leave_asked,
        RestartAsked: _do_restart_asked,
        StatusAsked: _do_status,
        Count: _do_count,
        Log: _do_log,
        Granted: _do_granted,
        NearAsked: _do_near,
        NearAnswered: _do_near,
        VotersChanged: _do_voters,
        SeedsAsked: _do_seeds,
        SettingsChanged: _do_settings,
        SettingsMismatch: _do_mismatch,
        StateTaken: _do_state,
    }


class ForwardLink:
    """A non-member's URL batches to members, acked on the same connection (module docstring).

    One task owns each DEALER (opens it, reads its acks, closes it when the
    link closes), so a socket closes only after its reader stopped; sends
    come from the caller's task, which ``ring.io.zmqio`` allows. ``on_ack`` gets
    every :class:`Ack` of ``ring_name`` that comes back; anything else on the
    connection is ignored. ``configure(dest)`` gives a DEALER's socket hook
    (a Curve client, ``ring.io.zap.curve_client``).
    """

    def __init__(self, ring_name: str, on_ack: Callable[[Ack], None], *,
                 configure: Callable[[str], Any] | None = None, hwm: int = 16,
                 send_timeout: float = SEND_TIMEOUT,
                 on_state_ack: Callable[[HostStateAck], None] | None = None) -> None:
        self.ring_name = ring_name
        self.on_ack = on_ack
        self.on_state_ack = on_state_ack
        self.configure = configure
        self.hwm = hwm
        self.send_timeout = send_timeout
        self.timeouts = 0  # sends given up after send_timeout (the resend brings them)
        self._sockets: dict[tuple[str, str], ZmqSocket] = {}
        self._nursery: trio.Nursery | None = None
        self._cm: Any = None

    async def __aenter__(self) -> ForwardLink:
        self._cm = trio.open_nursery()
        self._nursery = await self._cm.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        assert self._nursery is not None
        self._nursery.cancel_scope.cancel()
        return await self._cm.__aexit__(*exc)  # type: ignore[no-any-return]

    async def send(self, dest: str, address: str, batch: UrlBatch | HostState) -> bool:
        """Send ``batch`` (or hosts' state) to ``dest`` at ``address``; False if it found no room in time."""
        key = (dest, address)
        sock = self._sockets.get(key)
        if sock is None:
            assert self._nursery is not None, "use ForwardLink as an async context manager"
            sock = self._sockets[key] = await self._nursery.start(self._own, dest, address)
        with trio.move_on_after(self.send_timeout) as scope:
            await sock.send_multipart([encode_lowest(batch)])  # read by an owner of any version
        if scope.cancelled_caught:
            self.timeouts += 1
            return False
        return True

    async def _own(self, dest: str, address: str, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        configure = self.configure(dest) if self.configure is not None else None
        # A tool's route, naming our wire version: the owner acks at it (ring.wireversion rule 5).
        async with open_socket(SocketType.DEALER, connect=address, configure=configure,
                               hwm=self.hwm, identity=tool_route(os.urandom(8).hex())) as sock:
            task_status.started(sock)
            while True:
                for frames in await sock.recv_batch(1000):
                    try:
                        msg = decode(frames[-1])
                    except DecodeError:
                        continue
                    if isinstance(msg, Ack) and msg.ring == self.ring_name:
                        self.on_ack(msg)
                    elif (isinstance(msg, HostStateAck) and msg.ring == self.ring_name
                          and self.on_state_ack is not None):
                        self.on_state_ack(msg)
