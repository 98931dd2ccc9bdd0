"""peer.engine.durability: when a restart's first snapshot comes (peer/state/journal.py rule 7).

A restart goes on in its recovered generation and writes its first snapshot
soon after, in a worker thread; not while the recovered journal's URLs are
still going back into the frontier (after the first requests), which the
snapshot would list one by one and hold the GIL against.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import trio

from peer.core.config.cluster import parse_config
from peer.engine.durability import Durability

CFG = """
[ring]
name = "r"

[[peer]]
id = "p1"
address = "tcp://127.0.0.1:1"
data_dir = "p1"

[crawl]
seeds = ["http://a.test/"]
"""


async def test_the_first_snapshot_after_a_restart_waits_until_the_recovered_urls_are_back(
        tmp_path: Path, autojump_clock: Any) -> None:
    left = {"urls": 3}          # batches of the recovered journal still to put back
    disk = SimpleNamespace(recovering=lambda: left["urls"])
    durability = Durability(parse_config(CFG, base=tmp_path), "p1", tmp_path / "p1",
                            SimpleNamespace(disk=disk))  # type: ignore[arg-type]
    durability._state = SimpleNamespace(journal_bytes=lambda: 0)  # type: ignore[assignment]
    durability._snapshot_soon = True   # as Durability.open leaves it after a resume (rule 7)
    taken: list[tuple[float, int]] = []

    async def snapshot(store: object) -> str:
        taken.append((trio.current_time(), left["urls"]))
        return "stats"

    durability.snapshot = snapshot  # type: ignore[method-assign]

    async def drain() -> None:
        while left["urls"]:
            await trio.sleep(2.5)
            left["urls"] -= 1

    start = trio.current_time()
    with trio.move_on_after(20):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(drain)
            nursery.start_soon(durability.run, object())
    # One snapshot, once nothing was left to put back (7.5 s in), not a second after the start;
    # none after it before the journal grows or ages (SNAPSHOT_SECONDS).
    assert [n for _, n in taken] == [0] and taken[0][0] - start >= 7.5
