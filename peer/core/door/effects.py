"""What the peer core asks of its driver besides the crawl's and the ring's effects, and the union of all.

``peer.core.door.peer.PeerCore`` returns one ordered list of effects from every
call: the crawl's (``peer.core.crawl.decisions``), the ring's
(``ring.actions``) and the three below, which only the peer core makes.
``PeerEffect`` is their union, the type of the driver's one table
(``peer.engine.effects``).

==============  ==============================================================
``Commit``      make every journal record so far durable, before what follows
``ReadHosts``   a hand-off needs the hosts the results hold (``hosts_read``)
``ReadFetched`` ... and the fetched URLs of those that moved (``fetched_read``)
``SeedsAt``     journal the seeds file's position and counts, or ``ring seed add``'s counts (before the batch's ``Commit``)
``StateKept``   journal a host's state handed to us (before the ``Commit`` that precedes its ack)
==============  ==============================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from peer.core.crawl.decisions import Effect
from ring.actions import (Granted, Log, Released, Reply, RestartAsked, Send, SettingsChanged, SettingsMismatch,
                          StatusAsked, VotersChanged)

__all__ = ["Commit", "PeerEffect", "ReadFetched", "ReadHosts", "SeedsAt", "StateKept"]


@dataclass(frozen=True, slots=True)
class Commit:
    """Make every journal record so far durable before the effects after it (``peer.core.door.peer`` rule 1)."""


@dataclass(frozen=True, slots=True)
class ReadHosts:
    """A hand-off needs the hosts the results hold: answer with ``PeerCore.hosts_read(request, ...)``."""

    request: int


@dataclass(frozen=True, slots=True)
class ReadFetched:
    """A hand-off needs (url, host) of the pages fetched of ``hosts``: answer with ``PeerCore.fetched_read``."""

    request: int
    hosts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SeedsAt:
    """Journal ``counters``: a seeds file's position and counts (peer/core/crawl/seedfeed.py rule 3),
    or ``ring seed add``'s counts (peer/core/crawl/seedadd.py rule 2)."""

    counters: tuple[tuple[str, float], ...]


@dataclass(frozen=True, slots=True)
class StateKept:
    """Journal a host's revisit records and cookies another peer handed us (peer/state/journal.py rule 6)."""

    revisits: tuple[Any, ...]
    cookies: tuple[Any, ...]


PeerEffect = Union[Effect, Send, Reply, Log, StatusAsked, Released, Commit, ReadHosts, ReadFetched,
                   Granted, VotersChanged, SeedsAt, SettingsChanged, SettingsMismatch, StateKept, RestartAsked]
