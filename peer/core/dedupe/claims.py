"""What a member's band query may be taken for: its claimed fetch time and URL, checked against what the owner knows (pure).

A band owner records every query it answers (``peer.core.dedupe.bands``
rule 1), and the recorded claim (``peer.core.dedupe.precedence``: its URL,
what its canonical says, its ``seen_at``) decides which page is the
original when a copy comes (rule 2: the first in that order wins). Both are the
asker's claims. ``ring.node`` rule 9 already refuses a query that does not
come on its member's live route; this module bounds what a query that
does may make the owner believe, with only what the owner can check.

Rules (:func:`judge`; ``wall`` is the owner's own epoch time, ``skew`` the
clock difference tolerated between peers, ``dedupe.max_clock_skew``):

1. **Not in the future.** ``seen_at > wall + skew``: no peer fetched the
   page then. Refused (:attr:`Claim.FUTURE`).
2. **Not older than a query can be.** An asker sends its queries right
   after the fetch (``peer.core.dedupe.held``) and decides the page at
   ``answer_timeout`` whatever came, so a true query is at most
   ``answer_timeout`` old when it arrives, give or take the skew.
   ``seen_at < wall - answer_timeout - skew`` is refused
   (:attr:`Claim.TOO_OLD`): a fetch time of 1970 would put its URL before
   every page, and make every later copy of it a copy of that URL.
   This is the rule that an entry claiming to be older never takes a
   stored entry's standing without evidence: a claim may come before an
   entry already held only by what transit and clocks explain (the race
   rule 2 of ``bands`` orders), never before an entry older than that window.
3. **The sender's own host.** A peer fetches only the hosts the ring gives
   it, so a query about a URL whose host the owner's ring gives another
   member (or whose URL has no host key) is answered, for the asker's own
   verdict, but not recorded (:attr:`Claim.NOT_OWNER`): it can never become
   the original another page is a copy of. Just after a ring change a
   true query may be unrecorded so; that costs a missed duplicate, the
   safe side.
4. A refused query (1, 2) is answered "no duplicate" and not recorded, so
   its asker (a peer with a wrong clock) is not left waiting; every
   refusal is counted by its reason (``dedupe_refused_*`` drops).

What a query taken this way can still do: a member (or, without CurveZMQ,
whoever takes a member's live route by claiming a later life of it in
gossip, which the member refutes and which is counted as ``peer_restarts``)
can record a fingerprint it knows under a URL of its own hosts, dated
within the window, so that a page fetched after it is marked a copy of
that URL. That is the trust every member has (docs/curve.md: every member
is trusted alike); CurveZMQ is what keeps non-members out.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable

__all__ = ["Claim", "judge"]


class Claim(enum.Enum):
    """What the owner makes of a member's band query."""

    TAKEN = "taken"  # answered and recorded
    NOT_OWNER = "not_owner"  # rule 3: answered, not recorded
    TOO_OLD = "too_old"  # rule 2: refused
    FUTURE = "future"  # rule 1: refused

    @property
    def recorded(self) -> bool:
        return self is Claim.TAKEN

    @property
    def answered(self) -> bool:
        return self in (Claim.TAKEN, Claim.NOT_OWNER)


def judge(seen_at: float, url: str, sender: str, wall: float, *, answer_timeout: float, skew: float,
          host_owner: Callable[[str], str | None]) -> Claim:
    """Rules 1-3 for a query from member ``sender`` about ``url`` fetched at ``seen_at``."""
    if not isinstance(seen_at, (int, float)) or not math.isfinite(seen_at) or seen_at > wall + skew:
        return Claim.FUTURE
    if seen_at < wall - answer_timeout - skew:
        return Claim.TOO_OLD
    if host_owner(url) != sender:
        return Claim.NOT_OWNER
    return Claim.TAKEN
