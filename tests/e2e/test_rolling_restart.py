"""A rolling restart of a 5-peer ring, each peer down longer than ``dead_after``: no ring-wide pause.

Each peer in turn stops for a planned restart (``ring.membership.restarts``:
p1 by ``ring restart``'s request, as an upgrade asks it, the others by
SIGTERM without ``--leave``, as a service manager's restart), stays down
7.5 s (``dead_after`` is 6 s) and is started again on its data_dir. Judged
from the local web's request log: while each peer is away, the hosts the
other four own keep being fetched (no host waits the returner's hand-off
hold, and the worst gap of each restart is printed: under 2 s on a quiet
machine), every page is fetched once, and every peer ends with exit 0
(p1's restart with 75, ``EXIT_RESTART``, which a service manager restarts
on).

Before planned restarts each such stop was a death: the ring moved twice,
and when the peer came back every other peer held its own hosts until the
returner's hand-off (peer/core/handoff/holds.py rule 5), a gap of
``hold_timeout`` (12 s here) on every host at each restart.

The peers are real processes (``python -m peer`` with its signal handler,
as a service manager runs them): in the test's process, five peers sharing
one loop lost their majority for a second at a time on the loaded box, and
a resumed peer's start stalled the others for seconds. The timings and the
web that paces the crawl are tests/support/rollingrestart.py's (shared with
tests/e2e/test_rolling_upgrade.py, the same with two peers of the previous
release). A slow test: about 70 s of wall time alone, 25 s of CPU.
"""

from __future__ import annotations

from rollingrestart import roll


async def test_a_rolling_restart_pauses_no_host_of_the_other_peers(tmp_path):
    await roll(tmp_path, hosts=12)
