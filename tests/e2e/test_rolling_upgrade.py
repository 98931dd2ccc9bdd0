"""A rolling restart of a 5-peer ring with two peers of the previous release: no ring-wide pause.

p4 and p5 run the previous release's tree (tests/support/previousrelease.py,
wire version 3), p1-p3 today's. Each peer in turn stops, stays down longer
than ``dead_after`` (7.5 s; ``dead_after`` is 6 s) and is started again on
its data_dir:

- p1 by ``ring restart``'s request, p2 and p3 by SIGTERM: planned restarts
  (``ring.membership.restarts`` rules 1-6; the older peers read the
  restarting member as alive, and their probes of it are answered by the
  members that hold it, rule 6);
- p4 and p5 cannot announce a restart (their SIGTERM just stops them): ``ring
  restart`` sees their wire version and asks p1-p3 to hold them at the
  operator's word (rule 7), then the test stops them with SIGTERM. p4 comes
  back on the previous release; p5 comes back on today's tree, an upgrade
  in place, as an operator upgrades a ring one peer at a time.

Judged as tests/e2e/test_rolling_restart.py judges today's ring, from the
local web's request log (tests/support/rollingrestart.py): while each peer
is away the hosts the other four own keep being fetched (no host waits the
returner's hand-off hold; each restart's worst gap is printed: under 2 s on
a quiet machine), no log of either release says a member died, every page
is fetched once, and every peer exits 0 at the end (p1's restart with 75,
``EXIT_RESTART``).

Without the operator's hold the stop of an older peer was a death: the
ring moved twice, and the older peers paused all their hosts for a grace
at each change (with the holds switched off the test fails: "member p4:
dead" in the logs).

A slow test: about 70 s of wall time alone. Its own file, so that another
worker runs it beside test_rolling_restart.py.
"""

from __future__ import annotations

import pytest
from previousrelease import find, materialise
from rollingrestart import roll

from ring.messages import HoldOutcome

PREVIOUS, WHY = find()  # the previous release (tests/support/previousrelease.py)

OLD = ("p4", "p5")  # the previous release's peers
UPGRADED = "p5"  # comes back on today's tree


@pytest.mark.skipif(PREVIOUS is None, reason=WHY)
async def test_a_rolling_restart_with_two_peers_of_the_previous_release_pauses_no_host_of_the_others(tmp_path):
    assert PREVIOUS is not None
    tree = materialise(PREVIOUS, tmp_path / "previous")
    holds = await roll(tmp_path, hosts=10, tree=tree, old=OLD, upgraded=UPGRADED)
    # The three peers of today's tree held each older one (the other older one cannot).
    assert holds == {p: (("p1", HoldOutcome.HELD), ("p2", HoldOutcome.HELD), ("p3", HoldOutcome.HELD))
                     for p in OLD}, holds
