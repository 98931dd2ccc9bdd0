"""The due queue's far records on disk (peer/core/revisit/duequeue.py rule 5) with the real files.

The pure rules are tested against a model in tests/core/test_revisit.py with
an in-RAM store; here the store is the frontier's segment files
(peer/state/spill.py) and the records come from a results store's
``fetches`` table in batches, as a restarted continuous crawl reads them
(peer/engine/revisits.py): every record scheduled, most of them on disk, each
popped once, in due order, and a store left behind by a killed run is not read.
"""

from __future__ import annotations

import random

from peer.core.config.revisit import RevisitConfig
from peer.core.revisit.recrawl import Recrawl
from peer.results.fetches import FETCHES
from peer.results.store import ResultStore
from peer.state.spill import FileSpill

WALL = 1_700_000_000.0
DAY = 86400.0


def _row(i: int) -> tuple:
    host = f"h{i % 40}.test"
    r = dict.fromkeys(name for name, _, _ in FETCHES)
    r.update(url=f"http://{host}/p{i}", host=host, fetched_at=WALL - 10.0, kind="new", status=200,
             change="first", changed=False, digest=f"sha1:{i:032x}", etag=f'"{i:x}"', conditional=False,
             bytes=1, elapsed_ms=1.0, interval_before=DAY, interval_after=DAY,
             next_due=WALL + (i * 7919 % 4000) * 2 * DAY / 4000, peer="p1")
    return tuple(r.values())


async def test_a_restart_reads_its_schedule_in_batches_and_keeps_the_far_part_on_disk(tmp_path) -> None:
    path = tmp_path / "pages.duckdb"
    async with ResultStore(path, "p1", store_links=False, store_body=False, store_fetches=True) as st:
        for i in range(4000):
            st.add_fetch(_row(i))
    far_dir = tmp_path / "state" / "revisits"
    # What a killed run left: a segment of its own, named by no one now.
    stale = FileSpill.open(far_dir, None)
    stale.put("0/0", [0, 1, "x.test", "http://x.test/", 1.0, 1.0, None, None, None, None, 0, 0])
    stale.close()

    cfg = RevisitConfig(enabled=True, min_interval=60.0, max_interval=30 * DAY, memory_window=3600.0)
    rc = Recrawl(cfg, random.Random(1))
    store = FileSpill.open(far_dir, None)
    assert not store.hosts() and store.stats().segments == 0       # the killed run's files are gone
    rc.attach_far(store, 0.0)
    n = 0
    async with ResultStore(path, "p1", store_links=False, store_body=False, store_fetches=True) as st:
        async for rows in st.last_visit_batches(size=500):
            assert len(rows) <= 500
            n += rc.restore(rows, 0.0, WALL)
    q = rc.queue
    assert n == len(q) == 4000
    # Due over two days, a window of an hour: RAM holds about two hours' worth and a tail.
    assert q.far > 3500 and store.stats().blocks > 0, q.far_figures()
    assert len(q) - q.far < 4000 * 2 / 48 + 4096
    seen: dict[str, float] = {}
    t = 0.0
    while len(q):
        t += 600.0
        q.advance(t)
        for host in list(q.hosts_due()):
            while (r := q.pop(host)) is not None:
                assert r.url not in seen and r.due <= t < r.due + 600.0 + 1e-6
                assert r.etag is not None and r.digest is not None   # the whole record came back
                seen[r.url] = r.due
        assert t < 3 * DAY
    assert len(seen) == 4000 and q.far == 0
    f = q.far_figures()
    assert f.written == f.loaded > 3500
    store.close()
