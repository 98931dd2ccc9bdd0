"""One ring member without a crawl, as a process: ``python -m localweb.netns.ringnode --ring PATH --id ID``.

For namespace tests of the ring's addresses (tests/e2e/test_addresses_netns.py):
a whole peer costs about a second of CPU to start, most of it imports a
member's ring does not need. This builds the ring node from cluster.toml as
a peer does (``peer.core.door.peer.ring_node``, its Curve keys, its bind
address ``peer.core.config.cluster.bind_address``) and runs it over the
same ``ring.io.sockets.MemberSockets`` a peer's engine uses, under
``ring.io.driver.RingDriver``, with a crawl that holds nothing and is never
idle (the ring never ends by itself). It prints ``alive: ID@INCARNATION ...``
on stdout each time the set of members it holds alive changes (a restart is
a new incarnation), and runs until
SIGTERM or SIGINT (exit 0).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Sequence

import trio

from peer.core.config.cluster import bind_address
from peer.state.configfile import load_config
from peer.core.door.peer import ring_node
from peer.engine.ringface import curve_keys
from ring.crawlport import NoCrawl
from ring.io.driver import RingDriver
from ring.messages import MemberState

__all__ = ["main"]


class EmptyCrawl(NoCrawl):
    """A crawl with nothing to crawl, never idle: the ring never declares itself done."""

    def locally_idle(self) -> bool:
        return False


async def _run(ring: str, peer_id: str) -> None:
    cfg = load_config(ring)
    spec = cfg.peer(peer_id)
    rc = cfg.ring
    keys = curve_keys(cfg, peer_id)
    node = ring_node(cfg, peer_id, spec.address, spec.weight, trio.current_time(),
                     incarnation=int(time.time() * 1000), curve=keys is not None)
    driver = RingDriver(node, EmptyCrawl(), spec.address, bind=bind_address(spec), keys=keys,
                        recv_queue=rc.recv_queue, heartbeat=(rc.suspect_after, rc.dead_after))
    async with trio.open_nursery() as nursery:
        await nursery.start(driver.run)

        async def stop() -> None:
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    nursery.cancel_scope.cancel()
                    return

        nursery.start_soon(stop)
        shown: tuple[str, ...] | None = None
        while True:
            alive = tuple(sorted(f"{m.id}@{m.incarnation}" for m in node.membership.members().values()
                                 if m.state is MemberState.ALIVE))
            if alive != shown:
                print("alive:", *alive, flush=True)
                shown = alive
            await trio.sleep(rc.gossip_interval)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m localweb.netns.ringnode", description=__doc__.splitlines()[0])
    p.add_argument("--ring", required=True, help="cluster.toml")
    p.add_argument("--id", required=True, help="which [[peer]] this is")
    args = p.parse_args(argv)
    trio.run(_run, args.ring, args.id)
    return 0


if __name__ == "__main__":
    sys.exit(main())

