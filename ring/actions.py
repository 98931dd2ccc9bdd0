"""What ``ring.node.RingNode`` returns: actions, frozen dataclasses carried out in order (pure).

h11's ``_events.py``: values only, no behaviour. ``ring.node``'s docstring
lists what each means to the driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from ring.hashring import HashRing
from ring.membership.epochs import ConfigEpoch
from ring.membership.voters import VoterRecord
from ring.messages import Message, NearAnswer, NearQuery, Reverdict, SeedAddRequest
from ring.statebox import StateRecords

__all__ = ["Action", "Count", "Deliver", "Granted", "HandOff", "LeaveAsked", "Log", "NearAnswered", "NearAsked", "Released", "Reverdicted",
           "Reply", "RestartAsked", "Rerouted", "RingChanged", "SeedStarts", "SeedsAsked", "Send", "SettingsChanged",
           "SettingsMismatch", "StateTaken", "StatusAsked", "VotersChanged"]


@dataclass(frozen=True, slots=True)
class Send:
    dest: str
    msg: Message


@dataclass(frozen=True, slots=True)
class Reply:
    route: bytes
    msg: Message


@dataclass(frozen=True, slots=True)
class Deliver:
    """A batch taken from ``sender`` (a member, or ``adopt:...``): entries for the crawl.

    They must be durable before whatever follows (the ack): the crawl says
    where each came from by its own origins (``peer.core.crawl.decisions.Origin``);
    the ring only says who sent it.
    """

    urls: tuple[tuple[str, int], ...]
    seen: tuple[str, ...]
    sender: str


@dataclass(frozen=True, slots=True)
class Rerouted:
    """Our own entries, on their way to a member now gone, back for the crawl to place again."""

    urls: tuple[tuple[str, int], ...]
    seen: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RingChanged:
    ring: HashRing
    old: HashRing | None


@dataclass(frozen=True, slots=True)
class HandOff:
    """Collect what moved from ``old`` to ``ring``, then call ``RingNode.begin_handoff(version, ...)``."""

    old: HashRing
    ring: HashRing
    version: int


@dataclass(frozen=True, slots=True)
class Released:
    sender: str


@dataclass(frozen=True, slots=True)
class SeedStarts:
    starts: tuple[tuple[str, float], ...]


@dataclass(frozen=True, slots=True)
class LeaveAsked:
    sender: str


@dataclass(frozen=True, slots=True)
class RestartAsked:
    """``ring restart`` asked this peer to stop for a planned restart (``ring.membership.restarts``)."""

    sender: str


@dataclass(frozen=True, slots=True)
class StatusAsked:
    route: bytes
    nonce: int


@dataclass(frozen=True, slots=True)
class Count:
    reason: str


@dataclass(frozen=True, slots=True)
class Log:
    """A line for the peer's log; ``event`` and ``fields`` name it for ``--log-format json``
    (``ring.tools.logs``), empty for a line that has no name."""

    level: int
    text: str
    event: str = ""
    fields: tuple[tuple[str, str | int | float | bool | None], ...] = ()

    def extra(self) -> dict[str, object] | None:
        """``extra=`` of the ``logging`` call that logs it."""
        return {"event": self.event, "fields": dict(self.fields)} if self.event else None


@dataclass(frozen=True, slots=True)
class Granted:
    """Our page-budget grant totals changed (``ring.membership.budget``): durable before the sends after it."""

    grants: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class VotersChanged:
    """Our voter record changed (``ring.membership.voters``): on disk before the sends after it (rule 6)."""

    record: VoterRecord


@dataclass(frozen=True, slots=True)
class SettingsChanged:
    """Our config epoch changed (``ring.membership.epochs``): on disk, and applied to the crawl, before
    the actions after it (rule 7); ``keys``: those whose values differ from ``before``'s."""

    record: ConfigEpoch
    before: ConfigEpoch
    keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SettingsMismatch:
    """A starting peer's cluster.toml differs from the ring's document at its epoch, and ``[ring]
    config_mismatch = "refuse"`` (``ring.membership.epochs`` rule 6): the peer stops, naming ``keys``."""

    theirs: ConfigEpoch
    ours: ConfigEpoch
    sender: str
    keys: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NearAsked:
    """A member asks about bands this peer owns (``peer.core.dedupe.verdicts``): answer it with a ``Send``."""

    msg: NearQuery


@dataclass(frozen=True, slots=True)
class NearAnswered:
    """A band owner's answer about one of this peer's pages."""

    msg: NearAnswer


@dataclass(frozen=True, slots=True)
class Reverdicted:
    """A member says one of this peer's pages is a copy of a better one (``peer.core.dedupe.held`` rule 6)."""

    msg: Reverdict


@dataclass(frozen=True, slots=True)
class SeedsAsked:
    """``ring seed add``'s batch, new to this member (``ring.seedadds``): the crawl judges and routes its
    lines, commits, then hands the counts back (``RingNode.seeds_taken``), which answers on ``route``."""

    route: bytes
    msg: SeedAddRequest


@dataclass(frozen=True, slots=True)
class StateTaken:
    """Hosts' state for the crawl to import (``ring.statebox``): from ``sender``'s ``HostState``,
    acked once this is done; or our own, back from a member gone (``sender`` is us)."""

    records: StateRecords
    sender: str


Action = Union[Send, Reply, Deliver, Rerouted, RingChanged, HandOff, Released, SeedStarts, LeaveAsked,
               StatusAsked, Count, Log, Granted, NearAsked, NearAnswered, Reverdicted, VotersChanged, SeedsAsked, SettingsChanged,
               SettingsMismatch, StateTaken, RestartAsked]

