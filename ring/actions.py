"""What ``ring.node.RingNode`` returns: actions, frozen dataclasses carried out in order (pure).

h11's ``_events.py``: values only, no behaviour. ``ring.node``'s docstring
lists what each means to the driver.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Union

from ring.hashring import HashRing
from ring.messages import Message

__all__ = ["Action", "Count", "Deliver", "HandOff", "LeaveAsked", "Log", "Origin", "Released",
           "Reply", "RingChanged", "SeedStarts", "Send", "StatusAsked"]


class Origin(enum.StrEnum):
    """Where delivered entries come from: the crawl treats each its own way."""

    FORWARDED = "forwarded"  # a member's batch: route, dedupe, queue (Crawler.accept)
    ADOPTED = "adopted"  # scripts/adopt.py's batch: the same
    TAKEN_BACK = "taken_back"  # our own, rerouted back from a peer now gone (Crawler.take_back)


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
    """Entries for the crawl; ``commit``: make them durable before what follows (an ack)."""

    urls: tuple[tuple[str, int], ...]
    seen: tuple[str, ...]
    origin: Origin
    commit: bool = False


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
class StatusAsked:
    route: bytes
    nonce: int


@dataclass(frozen=True, slots=True)
class Count:
    reason: str


@dataclass(frozen=True, slots=True)
class Log:
    level: int
    text: str


Action = Union[Send, Reply, Deliver, RingChanged, HandOff, Released, SeedStarts, LeaveAsked,
               StatusAsked, Count, Log]
