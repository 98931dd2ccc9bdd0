"""What a batch the ring takes, or gives back, hands the crawl: its entries in rule order (pure).

``ring.node.RingNode`` returns ``Deliver`` for a URL batch it took (a
member's, or the adopt tool's) and ``Rerouted`` for our own entries that were
on their way to a member now gone. Two drivers carry them out:
``peer.core.door.peer.PeerCore``, where the crawl core and the ring node are one,
and ``ring.io.driver.RingDriver``, which serves a stand-in crawl
(``ring.crawlport``). Both turn an action into the crawl's calls through
:func:`intake`, so these rules live here, once:

1. **Source by sender.** A ``Deliver``'s URLs are ``RELAY`` when a member
   sent the batch, ``ADOPTED`` when the adopt tool did (its sender id starts
   with :data:`ADOPT_PREFIX`; ``scripts/adopt.py``). Both are remote input
   the crawl checks again.
2. **Seen URLs are handed as seen.** A batch's ``seen`` URLs were fetched
   by another peer for hosts now ours (a hand-off): :class:`TakeSeen`, for
   the seen set, never the frontier.
3. **Taken, durable, then acked.** A ``Deliver`` gives its URLs, then its
   seen URLs, then :data:`DURABLE`: the crawl makes everything taken durable
   before anything the node said after it, the adopt tool's ``Reply`` ack
   and the member's ack owed in the Outbox (which leaves only with a later
   flush: ``ring.node`` rule 5). A crash must not lose what was acked.
4. **Back: seen first.** A ``Rerouted`` gives its seen URLs, then its URLs
   (``HANDED_BACK``), each in the order ``Outbox.reroute`` gives them: a URL
   of ours that a previous owner handed us as fetched is then dropped, not
   queued again (``peer.core.crawl.core``'s note [3]). Nothing follows that
   must wait for the disk: no ack hangs on our own entries.

The steps are values, as ``ring.actions`` are: a driver carries them out in
order and decides nothing. ``Source``'s values are the crawl's own origins'
(``peer.core.crawl.decisions.Origin``), which ``ring`` cannot import.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Union

from ring.actions import Deliver, Rerouted

__all__ = ["ADOPT_PREFIX", "DURABLE", "Durable", "Source", "Step", "Take", "TakeSeen", "adopted", "intake"]

#: Sender ids of URL batches from ``scripts/adopt.py`` start with this.
ADOPT_PREFIX = "adopt:"


class Source(enum.StrEnum):
    """Where the URLs of a :class:`Take` come from (rules 1 and 4)."""

    RELAY = "relay"  # a member's batch: ours to crawl now
    ADOPTED = "adopted"  # the adopt tool's batch: a dead peer's queue, recovered
    HANDED_BACK = "handed-back"  # ours, back from a member now gone


@dataclass(frozen=True, slots=True)
class Take:
    """``(url, depth)`` pairs for the crawl, all of one source, in order."""

    source: Source
    urls: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class TakeSeen:
    """URLs another peer fetched, for hosts now ours: for the seen set (rule 2)."""

    urls: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Durable:
    """Make everything taken so far durable, before what follows (rule 3)."""


#: The one :class:`Durable` (it carries nothing).
DURABLE = Durable()

Step = Union[Take, TakeSeen, Durable]


def adopted(sender: str) -> bool:
    """Whether a URL batch's ``sender`` is the adopt tool, not a member (rule 1)."""
    return sender.startswith(ADOPT_PREFIX)


def intake(action: Deliver | Rerouted) -> tuple[Step, ...]:
    """The crawl's steps for ``action``, in the order they must be carried out (rules 1-4).

    Empty runs are left out; a ``Deliver`` always ends with :data:`DURABLE`.
    """
    if isinstance(action, Deliver):
        source = Source.ADOPTED if adopted(action.sender) else Source.RELAY
        steps: tuple[Step, ...] = (Take(source, action.urls),) if action.urls else ()
        if action.seen:
            steps += (TakeSeen(action.seen),)
        return (*steps, DURABLE)
    back: tuple[Step, ...] = (TakeSeen(action.seen),) if action.seen else ()
    if action.urls:
        back += (Take(Source.HANDED_BACK, action.urls),)
    return back
