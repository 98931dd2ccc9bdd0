"""What an operator watches on a running peer: its metrics and a one-peer crawl's status.

- ``[[peer]] metrics_address`` set: Prometheus metrics (:mod:`peer.engine.metrics`).
- A ring of one runs no ring node and no sockets (no gossip, no
  forwarding), so before this nothing listened for ``python -m ring
  status``. :func:`serve_status` binds a ROUTER that answers
  :class:`~ring.messages.StatusRequest`, with the same
  :class:`~ring.messages.MemberStatus` row a ring member gives, and
  ``ring seed add``'s :class:`~ring.messages.SeedAddRequest` (every host is
  its own: a batch committed is a batch taken; ``Crawler.seed_add``). Anything else
  that arrives is decoded as data and dropped (counted in the row's
  ``dropped``); the socket's receive queue and message size are zmq's
  bounds, as on a member's ROUTER.
- Where: on the peer's ``[[peer]] address`` when it has one. Without one
  (``solo.toml``) on ``tcp://127.0.0.1:*``, a loopback port the OS picks,
  which is then recorded in the data_dir for the tools to find
  (:mod:`peer.state.statusaddress` says why a port of the OS's choosing and
  not a fixed scheme, and how a record left by ``kill -9`` is told stale).
  The record is written once the port is bound and removed before the socket
  closes, so a tool that finds it finds the socket listening or the process
  gone, never a socket not yet bound.

The status socket is a convenience of a solo crawl, not its need: if it
cannot be bound (the port taken, an address not of this machine) or its
record cannot be written, the crawl goes on without it and says so once on
stderr.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import time
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

import trio

from peer.core.config.cluster import bind_address
from peer.state.statusaddress import StatusAddress, remove_status_address, write_status_address
from ring.commandnames import Command, command
from ring.errors import RingError
from ring.membership.lease import fingerprint
from ring.messages import (VERSION, DecodeError, EncodeError, LeaseStatus, MemberState, MemberStatus, SeedAddReply,
                           SeedAddRequest, SeedAddStatus, StatusReply, StatusRequest, decode, encode)
from ring.vocabulary import on_wire
from ring.wireversion import route_version, speak_to

if TYPE_CHECKING:
    from peer.engine.crawler import Crawler

__all__ = ["LOOPBACK_ANY", "start_observers", "serve_status", "solo_status"]

log = logging.getLogger("peer.observe")

#: A reply the asker cannot take within this long is dropped (it timed out).
SEND_TIMEOUT = 0.2
#: Where a solo peer without an address listens: loopback, a port the OS picks (module docstring).
LOOPBACK_ANY = "tcp://127.0.0.1:*"


async def start_observers(crawler: Crawler, nursery: trio.Nursery, *, solo: bool,
                          metrics_address: str | None = None) -> None:
    """Start the metrics server and, for a ``solo`` peer, the status responder, in ``nursery``.

    ``python -m peer`` calls this next to ``crawler.run()``, before it: a
    metrics port that cannot be bound stops the peer before it crawls. The
    crawler's figures exist from its construction, so a scrape that comes
    while it opens its state reads zeros, not an error. In-process crawlers
    (the tests) start neither, and so bind no port. ``metrics_address``: a
    joining peer's ``--metrics-address`` (it has no ``[[peer]]`` entry).
    """
    from peer.engine.metrics import serve_metrics

    spec = next((p for p in crawler.cfg.peers if p.id == crawler.peer_id), None)
    if spec is None:
        # A joining peer (--address): not in cluster.toml, its metrics from the command line.
        if metrics_address:
            await nursery.start(functools.partial(serve_metrics, crawler, metrics_address,
                                                  key="--metrics-address"))
        return
    if spec.metrics_address:
        await nursery.start(serve_metrics, crawler, spec.metrics_address)
    if solo:
        nursery.start_soon(serve_status, crawler, spec.address or None, bind_address(spec) or None)


def solo_status(crawler: Crawler, address: str, uptime: float, dropped: dict[str, int]) -> MemberStatus:
    """The one row of a ring of one: all of the ring is its share, and its lease its own (1 of 1)."""
    f = crawler.status_figures()
    spec = next((p for p in crawler.cfg.peers if p.id == crawler.peer_id), None)
    counters = {**f.limits, **on_wire(f.not_requested)}  # ring.vocabulary rule 5
    for k, v in dropped.items():
        counters[k] = counters.get(k, 0) + v
    return MemberStatus(
        id=crawler.peer_id, address=address, state=MemberState.ALIVE, share=1.0,
        pages=f.pages, rate=f.rate, frontier=f.frontier, hosts=f.hosts,
        forwarded_out=0, forwarded_in=0, dns_hit_rate=f.dns_hit_rate, bloom_fill=f.bloom_fill,
        uptime=uptime, dropped=tuple(sorted(counters.items()))[:64],
        errors=tuple(sorted(f.errors.items()))[:64], busiest=tuple(f.busiest),
        lease=LeaseStatus.HELD, vouched=1, needed=1, quorum=1,
        ring_fingerprint=fingerprint({crawler.peer_id: spec.weight if spec is not None else 1.0}),
        wire_version=VERSION,
    )


async def serve_status(crawler: Crawler, address: str | None, bind: str | None = None) -> None:
    """Answer ``ring status`` on ``address`` until cancelled (a solo peer), listening at ``bind`` if given.

    ``address`` None: on :data:`LOOPBACK_ANY`, recorded in the data_dir
    while this runs (:mod:`peer.state.statusaddress`).
    """
    from ring.io.curve import CurveKeys, resolve_keys_dir
    from ring.io.zap import CurveAuthenticator, curve_server
    from ring.io.zmqio import SocketType, open_socket

    cfg = crawler.cfg
    started = time.time()
    dropped: dict[str, int] = {}
    async with AsyncExitStack() as stack:
        try:
            keys_dir = resolve_keys_dir(cfg.ring.curve_keys, cfg.path)
            keys = CurveKeys.load(keys_dir, crawler.peer_id) if keys_dir is not None else None
            if keys is not None:
                await stack.enter_async_context(CurveAuthenticator(keys))
            sock = await stack.enter_async_context(open_socket(
                SocketType.ROUTER, rcvhwm=cfg.ring.recv_queue,
                configure=curve_server(keys) if keys is not None else None))
            if address:
                sock.bind(bind or address)
                shown = address  # as the user wrote it in cluster.toml
            else:
                shown = sock.bind(LOOPBACK_ANY)  # the port the OS gave
        except RingError as exc:
            log.warning("`python -m ring status` cannot reach this peer: %s", exc)
            return
        if address is None:
            await _record(crawler, StatusAddress(shown, os.getpid(), started), stack)
        while True:
            for got in await sock.recv_routed(64):
                if len(got.frames) != 1:
                    dropped["bad_frames"] = dropped.get("bad_frames", 0) + 1
                    continue
                try:
                    msg = decode(got.frames[0])
                except DecodeError as e:
                    dropped[str(e.kind)] = dropped.get(str(e.kind), 0) + 1
                    continue
                if not isinstance(msg, StatusRequest | SeedAddRequest):
                    dropped["unexpected_type"] = dropped.get("unexpected_type", 0) + 1
                    continue
                if msg.ring != cfg.ring.name:
                    dropped["other_ring"] = dropped.get("other_ring", 0) + 1
                    continue
                answer: StatusReply | SeedAddReply
                if isinstance(msg, SeedAddRequest):
                    answer = await crawler.seed_add(msg)
                    if answer.status is not SeedAddStatus.ACKED:
                        key = f"seed_add_batch.{answer.status.value}"
                        dropped[key] = dropped.get(key, 0) + 1
                else:
                    answer = StatusReply(cfg.ring.name, crawler.peer_id,
                                         (solo_status(crawler, shown, time.time() - started, dropped),),
                                         nonce=msg.nonce)
                try:
                    # At the asker's wire version (ring.wireversion rule 5).
                    data = encode(answer, speak_to(route_version(got.route)))
                except EncodeError as e:
                    log.error("reply not sent: %s", e)
                    continue
                try:
                    with trio.move_on_after(SEND_TIMEOUT):
                        await sock.send_multipart([got.route, data])
                except RingError:  # PeerUnreachable: the asker went away
                    dropped["unreachable"] = dropped.get("unreachable", 0) + 1


async def _record(crawler: Crawler, record: StatusAddress, stack: AsyncExitStack) -> None:
    """Write ``record`` in the crawler's data_dir now, and have ``stack`` remove it before the socket closes."""
    data_dir = crawler.data_dir
    try:
        await trio.to_thread.run_sync(write_status_address, data_dir, record)
    except OSError as exc:
        log.warning("`python -m ring status` cannot find this peer: %s: %s",
                    data_dir, exc.strerror or exc)
        return
    # Named as the user started this peer: ringcrawl-ring once installed, python -m ring in a checkout.
    log.info("watch this crawl with: %s status --ring %s (or dashboard); it answers on %s, "
             "recorded in %s", command(Command.RING, sys.argv[0]), crawler.cfg.path, record.address, data_dir)

    async def remove() -> None:
        # Shielded: it runs as the crawl's nursery is cancelled at its end.
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(remove_status_address, data_dir, record)

    stack.push_async_callback(remove)
