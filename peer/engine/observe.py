"""What an operator watches on a running peer: its metrics and a one-peer crawl's status.

- ``[[peer]] metrics_address`` set: Prometheus metrics (:mod:`peer.engine.metrics`).
- A ring of one runs no ring node and no sockets (no gossip, no
  forwarding), so before this nothing listened on its address and
  ``python -m ring status`` reported no peer. :func:`serve_status` binds that
  address with a ROUTER that answers :class:`~ring.messages.StatusRequest`
  only, with the same :class:`~ring.messages.MemberStatus` row a ring member
  gives. Anything else that arrives is decoded as data and dropped (counted
  in the row's ``dropped``); the socket's receive queue and message size are
  zmq's bounds, as on a member's ROUTER.

The address is a convenience of a solo crawl, not its need: if it cannot be
bound (the port taken, an address not of this machine) the crawl goes on
without it and says so once on stderr.
"""

from __future__ import annotations

import logging
import time

import trio

from ring.errors import RingError
from ring.lease import fingerprint
from ring.messages import (DecodeError, EncodeError, LeaseStatus, MemberState, MemberStatus, StatusReply,
                           StatusRequest, decode, encode)
from ring.vocabulary import on_wire

__all__ = ["start_observers", "serve_status", "solo_status"]

log = logging.getLogger("peer.observe")

#: A reply the asker cannot take within this long is dropped (it timed out).
SEND_TIMEOUT = 0.2


async def start_observers(crawler, nursery: trio.Nursery, *, solo: bool) -> None:  # type: ignore[no-untyped-def]
    """Start the metrics server and, for a ``solo`` peer, the status responder, in ``nursery``.

    ``python -m peer`` calls this next to ``crawler.run()``, before it: a
    metrics port that cannot be bound stops the peer before it crawls. The
    crawler's figures exist from its construction, so a scrape that comes
    while it opens its state reads zeros, not an error. In-process crawlers
    (the tests) start neither, and so bind no port.
    """
    spec = next((p for p in crawler.cfg.peers if p.id == crawler.peer_id), None)
    if spec is None:
        return  # a joining peer (--address): not in cluster.toml, so no metrics_address either
    if spec.metrics_address:
        from peer.engine.metrics import serve_metrics

        await nursery.start(serve_metrics, crawler, spec.metrics_address)
    if solo and spec.address:
        nursery.start_soon(serve_status, crawler, spec.address)


def solo_status(crawler, address: str, uptime: float,  # type: ignore[no-untyped-def]
                dropped: dict[str, int]) -> MemberStatus:
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
    )


async def serve_status(crawler, address: str) -> None:  # type: ignore[no-untyped-def]
    """Answer ``ring status`` on ``address`` until cancelled (a solo peer)."""
    from contextlib import AsyncExitStack

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
                SocketType.ROUTER, bind=address, rcvhwm=cfg.ring.recv_queue,
                configure=curve_server(keys) if keys is not None else None))
        except RingError as exc:
            log.warning("`python -m ring status` cannot reach this peer: %s", exc)
            return
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
                if not isinstance(msg, StatusRequest):
                    dropped["unexpected_type"] = dropped.get("unexpected_type", 0) + 1
                    continue
                if msg.ring != cfg.ring.name:
                    dropped["other_ring"] = dropped.get("other_ring", 0) + 1
                    continue
                row = solo_status(crawler, address, time.time() - started, dropped)
                try:
                    data = encode(StatusReply(cfg.ring.name, crawler.peer_id, (row,), nonce=msg.nonce))
                except EncodeError as e:
                    log.error("status reply not sent: %s", e)
                    continue
                try:
                    with trio.move_on_after(SEND_TIMEOUT):
                        await sock.send_multipart([got.route, data])
                except RingError:  # PeerUnreachable: the asker went away
                    dropped["unreachable"] = dropped.get("unreachable", 0) + 1
