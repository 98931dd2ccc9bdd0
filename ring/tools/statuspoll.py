"""Where ``ring status`` and the dashboard ask: the ring's seeds, or where its solo peer recorded its address.

A ring's peers are asked at their cluster.toml addresses (``ring.tools.client``).
A ring of one whose peer has no address (``solo.toml``) listens on a
loopback port the system picks and records it in its data_dir while it runs
(``peer.state.statusaddress`` says why, and how a record left by ``kill -9``
is told stale). :class:`StatusPoll` reads that record again at every poll (a
restarted peer has another port) and asks there. When it cannot ask, or
nobody answers within the timeout, :attr:`StatusPoll.silence` says why in
one line naming the data_dir and the command that starts the peer: "are the
peers running?" is a ring's question, not a solo crawl's. A ring that
refuses the tool's key is said as such (:attr:`StatusPoll.refused`), not as
silence.

The record comes through a reader the caller passes in, since ``ring``
never imports ``peer`` (``ring/__main__.py`` hands it over).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ring.messages import MemberStatus
from ring.tools.client import Contact, HandshakeRefused, cluster_status

__all__ = ["RecordedAddress", "SoloPeer", "StatusPoll"]


class RecordedAddress(Protocol):
    """Where a running solo peer without an address answers (``peer.state.statusaddress.StatusAddress``)."""

    @property
    def address(self) -> str: ...
    @property
    def pid(self) -> int: ...

    def gone(self) -> bool:
        """Its process no longer exists on this machine: a record left by kill -9 or a crash."""
        ...


@dataclass(frozen=True, slots=True)
class SoloPeer:
    """The peer of a ring of one without an address: where its record is, and how to start it."""

    id: str
    data_dir: Path
    start: str  # the command that starts it, e.g. python -m peer --ring solo.toml
    recorded: Callable[[Path], RecordedAddress | None]  # the record in a data_dir, or None


class StatusPoll:
    """What ``status`` (also ``--watch``) and the dashboard poll: the rows, or None if nobody answers."""

    def __init__(self, ring_name: str, seeds: Sequence[Contact], timeout: float, keys: Any = None,
                 solo: SoloPeer | None = None) -> None:
        self.ring_name = ring_name
        self.seeds = tuple(seeds)
        self.timeout = timeout
        self.keys = keys
        self.solo = solo
        #: Why the last poll found nobody to ask or nobody answered (None: it did not say).
        self.silence: str | None = None
        #: The last poll's silence is a refusal of this tool's key (``silence`` says it), not a dead ring.
        self.refused = False

    async def __call__(self) -> list[MemberStatus] | None:
        self.silence = None
        self.refused = False
        seeds = self.seeds
        if self.solo is not None:
            contact = self._solo_contact(self.solo)
            if contact is None:
                return None
            seeds = (contact,)
        try:
            rows = await cluster_status(self.ring_name, seeds, self.timeout, self.keys)
        except HandshakeRefused as exc:
            self.silence, self.refused = str(exc), True
            return None
        if rows is None and self.solo is not None:
            self.silence = self._start_it(
                self.solo, f"did not answer within {self.timeout:g}s at {seeds[0].address}, the address "
                f"it recorded in {self.solo.data_dir}: it is not running or is stopped")
        return None if rows is None else list(rows)

    def _solo_contact(self, solo: SoloPeer) -> Contact | None:
        record = solo.recorded(solo.data_dir)
        if record is None:
            # A running solo peer has a record (peer.engine.observe), unless
            # it could not write one, which its own log says.
            self.silence = self._start_it(solo, f"is not running: no status address recorded in {solo.data_dir}")
            return None
        if record.gone():
            self.silence = self._start_it(
                solo, f"is not running: the status address in {solo.data_dir} ({record.address}) "
                f"was left by process {record.pid}, which is gone (killed or crashed)")
            return None
        return Contact(solo.id, record.address)

    def _start_it(self, solo: SoloPeer, what: str) -> str:
        return f"solo peer {solo.id!r} of ring {self.ring_name!r} {what}; start it with: {solo.start}"
