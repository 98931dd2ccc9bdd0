"""The memory of seeds that left, kept across a restart of the peer that saw them leave (pure).

A seed (``[[peer]]``) starts in every view alive at incarnation 0
(``ring.membership.view``), so without this a restarted peer would wait for
a seed that left long ago, find it silent and declare it dead (and,
``takeover_after`` later, crashed): a graceful leave logged as a crash, and
its hosts held from the crawl meanwhile. Others' word cannot settle it: a
"left" is believed only from the leaver (``ring.membership.view``,
"Hearsay"). Our own former view believed it from the leaver, so its
tombstone stands until the seed speaks again (a newer incarnation, rule 1
of ``ring.membership.records``), as a tombstone in a running view keeps a
member from coming back on stale gossip (``ring.membership.view``,
"Tombstones", after van Renesse, Minsky, Hayden, Middleware 1998).

:func:`tombstones` is what a peer persists (``peer.core.door.persistence``),
:func:`remember_left` what a restart is given back; ``Membership`` calls
both on its view.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ring.membership.records import LEFT, MAX_INCARNATION, ChangeReason
from ring.membership.view import View

__all__ = ["remember_left", "tombstones"]


def tombstones(view: View, self_id: str) -> dict[str, int]:
    """The configured seeds that left, at the incarnation they left with; 0 for the others."""
    members = view.members
    return {mid: (m.incarnation if (m := members.get(mid)) is not None and m.state is LEFT else 0)
            for mid in view.configured if mid != self_id}


def remember_left(view: View, self_id: str, left: Mapping[str, int], now: float) -> None:
    """Seeds our former process saw leave, each at the incarnation it left with, put back in ``view``.

    Only a seed's untouched placeholder is replaced: one heard from since
    the restart, or at another incarnation than 0, tells its own story.
    """
    for mid, incarnation in left.items():
        m = view.members.get(mid)
        if (incarnation <= 0 or incarnation > MAX_INCARNATION or mid == self_id or m is None
                or mid not in view.unheard or m.incarnation != 0 or m.heartbeat != 0):
            continue
        view.unheard.discard(mid)
        view.put(replace(m, incarnation=incarnation, state=LEFT), now, ChangeReason.LEFT, spread=False)
