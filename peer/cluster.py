"""The ring side of one peer: gossip, URL forwarding and status, over ZeroMQ.

A thin edge around the pure ring cores (``ring.membership``,
``ring.forwarder``, ``ring.messages``) and the zmq adapter (``ring.zmqio``):

- one ROUTER socket bound at this peer's address receives everything: gossip
  digests, joins, URL batches, acks, status requests (answered on the same
  socket, to the asker's identity);
- one DEALER per remote peer sends to it, owned by a single sender task fed by
  a bounded channel. Every send is bounded in time and may be dropped: gossip
  is repeated every round and URL batches are resent until acked
  (``Outbox``), so a dead or slow peer never blocks the others;
- no ring message can end this peer. Whatever arrives is decoded, checked
  and dropped and counted (``dropped``, shown by ``python -m ring status``)
  if it is not what a member or a tool may send; every send is dropped and
  counted, never raised, when it cannot go: a reply to a client that has
  gone (``unreachable``: a status asker that timed out while we were busy),
  a reply that found no room in time (``reply_timeout``), a message that
  cannot be encoded (``encode_error``), a gossiped address zmq refuses
  (``bad_address``);
- a member's messages must come on its own route: our DEALERs connect with
  the routing id ``<our id>/<nonce>`` (``ring.zmqio.member_route``, a fresh
  nonce each process), and a Digest, Join, Leave, UrlBatch, Ack or
  HandoffDone whose ``sender`` is not the member that route names is
  dropped (``route_spoof``). With CurveZMQ the ZAP User-Id of the
  connection (the member id of its key) must be that member too
  (``wrong_user``), so one member cannot speak as another. Tools (``ring
  status``, ``ring leave``, ``scripts/adopt.py``) use libzmq's anonymous
  routes and send only their own kinds of message;
- every ``gossip_interval`` the membership ticks; a change of the live member
  set gives the crawler a new ``HashRing`` (``Crawler.set_ring``), which moves
  queued URLs of hosts this peer no longer owns to their new owners;
- the crawler's idle flag and its URL counters ride on our heartbeat, and
  ``TerminationDetector`` (the counter method: every live peer idle and the
  cluster's sent == received for two rounds) says when the crawl is over.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from collections.abc import Mapping
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

import trio

from peer.urls import host_key
from ring.forwarder import Inbox, Outbox, Verdict
from ring.membership import Membership
from ring.messages import (
    MAX_ARRAY,
    MAX_DROPPED,
    Ack,
    EncodeError,
    DecodeError,
    Digest,
    HandoffDone,
    HostStarts,
    Join,
    Leave,
    LeaveRequest,
    MemberState,
    MemberStatus,
    StatusReply,
    StatusRequest,
    UrlBatch,
    decode,
    encode,
)
from ring.curve import CurveKeys, resolve_keys_dir, unauthenticated_warning
from ring.errors import RingError
from ring.zmqio import (
    CurveAuthenticator,
    PeerUnreachable,
    SocketType,
    ZmqSocket,
    curve_client,
    curve_server,
    member_route,
    open_socket,
    route_member,
)

if TYPE_CHECKING:
    from peer.config import ClusterConfig
    from peer.engine import Crawler

__all__ = ["ClusterNode"]

log = logging.getLogger("peer.cluster")

#: A send that cannot be queued within this long is dropped (see module doc).
SEND_TIMEOUT = 0.2
#: Messages waiting for the sender task; beyond this, producers wait.
SEND_QUEUE = 4096
#: Sender ids of URL batches from ``scripts/adopt.py`` start with this.
ADOPT_PREFIX = "adopt:"
#: Rounds a HandoffDone is sent; one that never arrives only makes the new
#: owner wait ``hold_timeout`` before fetching the hosts it gained.
MARKER_ROUNDS = 5
#: Longest a hand-off waits for the new owners' acks.
HANDOFF_TIMEOUT = 60.0
#: What a DEALER to a peer accepts back: nothing is ever sent back on it (peers
#: answer through their own DEALERs), so one small message, unread, is all a
#: hostile "peer" at a gossiped address can park in our memory. Not less:
#: ZMTP's handshake commands count against MAXMSGSIZE (1 byte fails it).
DEALER_MAX_MSG = 64 * 1024

_MEMBER_MESSAGES = (Digest, Join, Leave, UrlBatch, Ack, HandoffDone, HostStarts)


class ClusterNode:
    """Gossip membership, forwarding and status for one running peer."""

    def __init__(self, cfg: ClusterConfig, peer_id: str, address: str, weight: float,
                 crawler: Crawler) -> None:
        self.cfg = cfg
        self.peer_id = peer_id
        self.address = address
        self.crawler = crawler
        # The start time as incarnation and epoch: a restarted peer outranks
        # its old life in gossip, and its batch numbers start a new channel.
        self.incarnation = int(time.time() * 1000)
        rc = cfg.ring
        seeds = [(p.id, p.address, p.weight) for p in cfg.peers]
        self.membership = Membership(
            peer_id, address, weight, rc.name, seeds=seeds,
            gossip_interval=rc.gossip_interval, suspect_after=rc.suspect_after,
            dead_after=rc.dead_after, now=trio.current_time(), incarnation=self.incarnation,
            tombstone_ttl=rc.tombstone_ttl,
        )
        # Our DEALERs' routing id: who we are, plus a nonce of this process,
        # so a restart never collides with our old connection (ring.zmqio).
        self.route = member_route(peer_id, os.urandom(8).hex())
        # CurveZMQ (issue 6): with [ring] curve_keys, only the ring's keys get
        # in and traffic is encrypted; a missing or bad key file is a RingError
        # the command line turns into one line.
        keys_dir = resolve_keys_dir(rc.curve_keys, cfg.path)
        self.keys = CurveKeys.load(keys_dir, peer_id) if keys_dir is not None else None
        self.outbox = Outbox(peer_id, rc.name, epoch=self.incarnation)
        self.inbox = Inbox(rc.name)
        self.dropped: dict[str, int] = {}
        self.started = time.time()
        self._ring_version = -1
        self._send, self._to_send = trio.open_memory_channel[tuple[str, bytes]](SEND_QUEUE)
        self._wake_forward = trio.Event()
        # This peer's share of max_pages until the next round (Membership.page_cap).
        self.page_cap = 0
        # Hand-off (issue 6): how long a gained host waits for its previous
        # owner's HandoffDone, the hand-offs running, and what each cost.
        self.hold_timeout = max(5.0, 2 * rc.dead_after)
        self.handoffs: list[tuple[int, float]] = []  # (seen URLs sent, seconds to all acked)
        self._handoffs_running = 0
        self._leaving = False
        self._nursery: trio.Nursery | None = None
        self._current_ring = None

    # -- the crawler's side ------------------------------------------------------

    def ring(self):  # type: ignore[no-untyped-def]
        return self.membership.ring(self.cfg.ring.vnodes)

    def forward(self, url: str, depth: int, owner: str, *, relay: bool = False) -> None:
        """Queue a URL for its owner (called by the crawler's discovery).

        ``relay``: a URL this peer was handed and no longer owns; it bypasses
        the recently-forwarded cache (``Outbox.relay``), which could
        otherwise drop the only copy.
        """
        if relay:
            self.outbox.relay(url, depth, owner, trio.current_time())
        else:
            self.outbox.add(url, depth, owner, trio.current_time())
        self._wake_forward.set()

    def idle(self) -> bool:
        return self.outbox.idle

    def done(self) -> bool:
        """True once the whole cluster's crawl is over (counter method)."""
        return self.membership.cluster_idle(trio.current_time())

    def leave(self) -> None:
        """Announce that we leave; the ring without us hands everything over."""
        self._leaving = True
        for dest, msg in self.membership.leave(trio.current_time()):
            self._queue(dest, msg)
        self._check_ring()

    def left(self) -> bool:
        """Leaving, and everything handed over and acked: the process may end."""
        return (self._leaving and self._handoffs_running == 0 and self.outbox.idle
                and self.crawler.locally_idle())

    def others_pages(self) -> int:
        """Pages the other members had requested, as last gossiped."""
        return sum(m.pages for mid, m in self.membership.members().items() if mid != self.peer_id)

    # -- running -----------------------------------------------------------------

    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:  # type: ignore[no-untyped-def]
        async with AsyncExitStack() as stack:
            if self.keys is not None:
                # Before the ROUTER: libzmq admits any key while no ZAP handler runs.
                await stack.enter_async_context(CurveAuthenticator(self.keys))
                log.info("CurveZMQ on: %s keys from %s", len(self.keys.members()), self.keys.directory)
            elif warning := unauthenticated_warning([self.address, *(p.address for p in self.cfg.peers)]):
                log.warning("%s", warning)
            rc = self.cfg.ring
            inbound = await stack.enter_async_context(open_socket(
                SocketType.ROUTER, bind=self.address, rcvhwm=rc.recv_queue,
                heartbeat=(rc.suspect_after, rc.dead_after),
                configure=curve_server(self.keys) if self.keys is not None else None))
            nursery = await stack.enter_async_context(trio.open_nursery())
            self._nursery = nursery
            nursery.start_soon(self._sender)
            nursery.start_soon(self._receiver, inbound)
            nursery.start_soon(self._gossip)
            nursery.start_soon(self._forwarder)
            task_status.started()

    async def _sender(self) -> None:
        async with AsyncExitStack() as stack:
            # Keyed by address too: a peer that rejoins elsewhere gets a new socket.
            dealers: dict[tuple[str, str], ZmqSocket] = {}
            async for dest, data in self._to_send:
                member = self.membership.members().get(dest)
                if member is None:
                    continue
                key = (dest, member.address)
                sock = dealers.get(key)
                if sock is None:
                    configure = None
                    if self.keys is not None:
                        try:
                            configure = curve_client(self.keys, self.keys.public_key(dest))
                        except RingError:
                            self._count("no_curve_key")  # its .key has not been deployed here
                            continue
                    try:
                        sock = await stack.enter_async_context(open_socket(
                            SocketType.DEALER, connect=member.address, identity=self.route,
                            hwm=10_000, rcvhwm=1, max_msg=DEALER_MAX_MSG, configure=configure))
                    except RingError:
                        # A gossiped address is remote input: zmq may refuse it.
                        self._count("bad_address")
                        continue
                    for old in [k for k in dealers if k[0] == dest]:
                        dealers.pop(old).close()  # it moved: the old address is dead to us
                    dealers[key] = sock
                try:
                    with trio.move_on_after(SEND_TIMEOUT) as scope:
                        await sock.send_multipart([data])
                except RingError:
                    self._count("send_failed")
                    continue
                if scope.cancelled_caught:
                    self._count("send_timeout")

    def _queue(self, dest: str, msg: object) -> None:
        try:
            self._send.send_nowait((dest, encode(msg)))  # type: ignore[arg-type]
        except trio.WouldBlock:
            self._count("send_queue_full")
        except EncodeError as e:
            self._count("encode_error")  # our bug, but no reason to end the peer
            log.error("not sent to %s: %s", dest, e)

    async def _reply(self, sock, route: bytes, msg: object) -> None:  # type: ignore[no-untyped-def]
        """Answer on the ROUTER; a client that has gone or has no room is counted, never raised."""
        try:
            data = encode(msg)  # type: ignore[arg-type]
        except EncodeError as e:
            self._count("encode_error")
            log.error("reply not sent: %s", e)
            return
        try:
            with trio.move_on_after(SEND_TIMEOUT) as scope:
                await sock.send_multipart([route, data])
        except PeerUnreachable:
            # The asker went away while we worked (a `ring status` that timed
            # out during a long stall): ROUTER_MANDATORY says so, here only.
            self._count("unreachable")
            return
        except RingError:
            self._count("send_failed")
            return
        if scope.cancelled_caught:
            self._count("reply_timeout")

    def _count(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1

    async def _receiver(self, sock) -> None:  # type: ignore[no-untyped-def]
        curve = self.keys is not None
        while True:
            for got in await sock.recv_routed(1000, user_id=curve):
                if len(got.frames) != 1:
                    self._count("bad_frames")
                    continue
                try:
                    msg = decode(got.frames[0])
                except DecodeError as e:
                    self._count(e.kind)
                    continue
                if isinstance(msg, _MEMBER_MESSAGES) and not (
                        isinstance(msg, UrlBatch) and msg.sender.startswith(ADOPT_PREFIX)):
                    reason = self._impostor(got.route, got.user_id, msg.sender)
                    if reason is not None:
                        self._count(reason)
                        continue
                await self._dispatch(sock, got.route, msg)

    def _impostor(self, route: bytes, user_id: str | None, sender: str) -> str | None:
        """Why a member's message on ``route`` is not from ``sender``, or None if it may be."""
        claimed = route_member(route)
        if self.keys is not None and (user_id is None or user_id != sender or claimed != user_id):
            return "wrong_user"  # its key is another member's (or it took another's route)
        if claimed != sender:
            return "route_spoof"
        return None

    async def _dispatch(self, sock, ident: bytes, msg) -> None:  # type: ignore[no-untyped-def]
        now = trio.current_time()
        if isinstance(msg, (Digest, Join, Leave)):
            for dest, out in self.membership.receive(msg, now):
                self._queue(dest, out)
            self._check_ring()
        elif isinstance(msg, UrlBatch):
            if msg.ring != self.cfg.ring.name:
                self._count("other_ring")
                return
            if msg.sender.startswith(ADOPT_PREFIX):
                await self._adopt(sock, ident, msg)
                return
            sender = self.membership.members().get(msg.sender)
            if sender is None or sender.state is MemberState.DEAD:
                self._count("unknown_sender")  # the forwarder's contract: members only
                return
            if msg.epoch > sender.incarnation:
                # A peer's epoch is its incarnation at start, and incarnations
                # only grow: a later epoch is forged (or from a restart whose
                # gossip has not reached us: unacked, so it comes again). Taken,
                # it would close the sender's real channel in the Inbox and its
                # unacked batches would be resent for ever.
                self._count("future_epoch")
                return
            verdict = self.inbox.accept(msg)
            if verdict is Verdict.ACCEPT:
                for url, depth in msg.urls:
                    self.crawler.accept(url, depth)
                for url in msg.seen:
                    self.crawler.accept_seen(url)
            if verdict is not Verdict.ACCEPT:
                self._count(verdict.value)  # a replay is acked again, but still counted
            else:
                self.crawler.commit_state()  # taken is on disk before it is acked (issue 6)
            if verdict.ack:
                self._queue(msg.sender, Ack(self.cfg.ring.name, self.peer_id, msg.epoch, msg.seq))
        elif isinstance(msg, Ack):
            if msg.ring != self.cfg.ring.name:
                self._count("other_ring")
            else:
                self.outbox.ack(msg.sender, msg.epoch, msg.seq)
        elif isinstance(msg, HandoffDone):
            if msg.ring != self.cfg.ring.name:
                self._count("other_ring")
            elif msg.sender not in self.membership.members():
                self._count("unknown_sender")
            elif self._current_ring is not None and msg.members == tuple(sorted(self._current_ring)):
                self.crawler.handoff_done(msg.sender)
            else:
                self._count("handoff_other_ring_view")  # it will say it again for our view
        elif isinstance(msg, HostStarts):
            if msg.ring != self.cfg.ring.name:
                self._count("other_ring")
            elif msg.sender not in self.membership.members():
                self._count("unknown_sender")
            else:
                self.crawler.seed_host_starts(msg.starts)
        elif isinstance(msg, LeaveRequest):
            if msg.ring != self.cfg.ring.name:
                self._count("other_ring")
            elif msg.target == self.peer_id:
                log.warning("leave requested by %s: handing over and leaving the ring", msg.sender)
                self.crawler.leave()
        elif isinstance(msg, StatusRequest):
            if msg.ring != self.cfg.ring.name:
                self._count("other_ring")
                return
            reply = StatusReply(self.cfg.ring.name, self.peer_id, self.status(), nonce=msg.nonce)
            await self._reply(sock, ident, reply)
        else:
            self._count("unexpected_type")

    async def _adopt(self, sock, ident: bytes, msg: UrlBatch) -> None:  # type: ignore[no-untyped-def]
        """A batch from ``scripts/adopt.py``: a lost peer's frontier, URL by URL to its owner.

        The tool is not a member, so its batches bypass the Inbox (they are
        not in the termination sums: the URLs they bring make this peer busy,
        which is what termination needs to see) and are acked on the socket
        they came by. A repeat is harmless: the Bloom filter dedupes.
        """
        for url, depth in msg.urls:
            self.crawler.accept(url, depth)
        for url in msg.seen:
            self.crawler.accept_seen(url)
        self.crawler.commit_state()
        await self._reply(sock, ident, Ack(self.cfg.ring.name, self.peer_id, msg.epoch, msg.seq))

    def status(self) -> tuple[MemberStatus, ...]:
        """This peer's view: full figures for itself, gossiped ones for the others."""
        ring = self.ring()
        shares = ring.shares()
        mine = self.crawler.status_figures()
        out = []
        for mid, m in sorted(self.membership.members().items()):
            figures = mine if mid == self.peer_id else {}
            out.append(MemberStatus(
                id=mid, address=m.address, state=MemberState(m.state),
                share=shares.get(mid, 0.0), pages=m.pages if mid != self.peer_id else figures["pages"],
                rate=figures.get("rate", 0.0), frontier=figures.get("frontier", 0),
                hosts=figures.get("hosts", 0), forwarded_out=figures.get("forwarded_out", m.sent),
                forwarded_in=figures.get("forwarded_in", m.received),
                dns_hit_rate=figures.get("dns_hit_rate", 0.0), bloom_fill=figures.get("bloom_fill", 0.0),
                uptime=time.time() - self.started if mid == self.peer_id else 0.0,
                # The crawler's cap hits, held hosts and the like ride along
                # (cap.*, held.*, malformed.*, polite.*).
                dropped=self._dropped_rows(figures.get("limits", {})) if mid == self.peer_id else (),
                errors=tuple(sorted(figures.get("errors", {}).items()))[:MAX_DROPPED],
                busiest=tuple(figures.get("busiest", ())),
            ))
        return tuple(out)

    def _dropped_rows(self, extra: Mapping[str, int] | None = None) -> tuple[tuple[str, int], ...]:
        """Every drop counter, as the status reply carries them (at most MAX_DROPPED)."""
        rows = sorted((Counter(self.dropped) + self.membership.dropped + Counter(extra or {})).items())
        if len(rows) > MAX_DROPPED:
            rest = sorted(rows, key=lambda kv: -kv[1])[MAX_DROPPED - 1:]
            rows = sorted(set(rows) - set(rest)) + [("other", sum(n for _, n in rest))]
        return tuple(rows)

    async def _gossip(self) -> None:
        interval = self.cfg.ring.gossip_interval
        while True:
            self.membership.set_local(
                idle=self.crawler.locally_idle() and self.outbox.idle, sent=self.outbox.sent,
                received=self.inbox.received, pages=self.crawler.pages_requested)
            for dest, msg in self.membership.tick(trio.current_time()):
                self._queue(dest, msg)
            self._check_ring()
            if self.cfg.crawl.max_pages:
                self.page_cap = self.membership.page_cap(
                    self.cfg.crawl.max_pages, self.crawler.pages_requested)
            self.crawler.poke()
            await trio.sleep(interval)

    def _check_ring(self) -> None:
        version = self.membership.ring_version
        if version != self._ring_version:
            self._ring_version = version
            old, ring = self._current_ring, self.ring()
            self._current_ring = ring
            log.info("ring: %s", ", ".join(sorted(ring)) or "(empty)")
            if not len(ring):
                return  # the last peer left: nobody to hand anything to
            self.crawler.set_ring(ring)
            # Channels with a dead peer leave the termination sums on both
            # sides (TerminationDetector): reroute drops ours to it, forget
            # drops its to us (and its late batches are refused). A leaver's
            # stay: it is still handing over, and its counters stay summed.
            members = self.membership.members()
            left = {m for m, rec in members.items() if rec.state is MemberState.LEFT}
            for gone in set(old or ()) - set(ring) - left:
                if gone != self.peer_id:
                    self.inbox.forget(gone)
            urls, seen = self.outbox.reroute(
                lambda u: ring.owner(host_key(u)), trio.current_time(), members=ring, left=left)
            for url in seen:
                self.crawler.accept_seen(url)
            for url, depth in urls:
                self.crawler.take_back(url, depth)
            if old is not None and self._nursery is not None:
                self._handoffs_running += 1
                self._nursery.start_soon(self._hand_off, old, ring, version)

    async def _hand_off(self, old, ring, version: int) -> None:  # type: ignore[no-untyped-def]
        """Send the moved hosts' seen URLs, wait for every new owner's acks, say HandoffDone.

        The queued URLs of moved hosts went already (``Crawler.set_ring``);
        :meth:`Outbox.barrier` marks the last batch of everything queued for
        each peer so far, so "acked through the barrier" means that peer has
        taken all of it into its Bloom filter and frontier.
        """
        members = tuple(sorted(ring))
        dests = [m for m in members if m != self.peer_id]
        try:
            t0 = trio.current_time()
            n = await self.crawler.handoff_seen(old, ring)
            starts = self.crawler.handoff_starts(old, ring)
            self._wake_forward.set()
            marks = {d: self.outbox.barrier(d) for d in dests}
            with trio.move_on_after(HANDOFF_TIMEOUT):
                while marks:
                    live = self.membership.live()
                    for d in list(marks):
                        if d not in live or self.outbox.acked_through(d, marks[d]):
                            del marks[d]
                            if d in live:
                                if starts.get(d):
                                    # Before HandoffDone, on the same connection: the
                                    # new owner counts them before it releases the hosts.
                                    self._queue(d, HostStarts(self.cfg.ring.name, self.peer_id,
                                                              tuple(starts[d][:MAX_ARRAY])))
                                self._queue(d, HandoffDone(self.cfg.ring.name, self.peer_id, members))
                    if marks:
                        await trio.sleep(0.02)
            elapsed = trio.current_time() - t0
            self.handoffs.append((n, elapsed))
            if marks:
                log.warning("hand-off: no ack from %s within %.0fs", ", ".join(marks), HANDOFF_TIMEOUT)
            if n:
                log.info("hand-off: %d fetched URLs to their new owners, all acked in %.2fs", n, elapsed)
        finally:
            self._handoffs_running -= 1
        for _ in range(MARKER_ROUNDS - 1):
            await trio.sleep(self.cfg.ring.gossip_interval)
            if self.membership.ring_version != version:
                return  # a newer ring has its own hand-off and markers
            for d in dests:
                self._queue(d, HandoffDone(self.cfg.ring.name, self.peer_id, members))

    async def _forwarder(self) -> None:
        while True:
            for dest, batch in self.outbox.due(trio.current_time()):
                self._queue(dest, batch)
            when = self.outbox.next_due_at()
            self._wake_forward = trio.Event()
            with trio.move_on_at(when if when is not None else trio.current_time() + 1.0):
                await self._wake_forward.wait()
