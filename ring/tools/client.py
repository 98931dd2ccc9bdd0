"""The ring's client for tools: ``ring status``, ``leave``, ``forget``, ``voter``, ``seed add`` (edge; typed results).

A tool is not a member: it asks over a DEALER on a tool's route (``ring.wireversion``: it
claims no member and names the tool's wire version), and a
peer answers on that connection (``ring.node``: tools send only status,
leave, forget, voter and seed-add requests and ``adopt:`` batches). Nothing here reads cluster.toml: a
caller passes the ring's name and its seeds (:class:`Contact`), and, when
the ring uses CurveZMQ, the tool's own key pair (:func:`client_keys`).
A member's row is the decoded :class:`~ring.messages.MemberStatus` itself,
as the wire carries it; formatting is ``ring.tools.cli``'s.
"""

from __future__ import annotations

import enum
import os
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import trio
import zmq

from ring.commandnames import spoken
from ring.io.curve import CurveKeys
from ring.errors import RingError
from ring.messages import (
    DecodeError,
    ForgetOutcome,
    ForgetReply,
    ForgetRequest,
    HoldOutcome,
    HoldReply,
    HoldRequest,
    LeaseStatus,
    LeaveRequest,
    MemberState,
    MemberStatus,
    RestartRequest,
    SeedAddReply,
    SeedAddRequest,
    SettingsAction,
    SettingsOutcome,
    SettingsReply,
    SettingsRequest,
    StatusReply,
    StatusRequest,
    VoterAction,
    VoterOutcome,
    VoterReply,
    VoterRequest,
    decode,
    encode_lowest,
    speaks,
)
from ring.io.errors import HandshakeRefused
from ring.io.handshake import Handshake, HandshakeWatch
from ring.io.handshake import request as watched_request
from ring.io.zap import curve_client
from ring.io.zmqio import SocketType, open_socket
from ring.wireversion import tool_route

__all__ = ["ASK_AT_ONCE", "Contact", "ForgetResult", "HandshakeRefused", "LeaveOutcome", "LeaveResult",
           "RestartOutcome", "RestartResult", "VoterResult", "ask_seed_add", "cannot_announce", "client_keys",
           "cluster_status", "refusal", "request_forget", "request_hold", "request_leave", "request_restart", "request_voter", "settled", "silence",
           "SettingsResult", "request_settings", "behind"]

#: Members ``ring status`` asks for their own figures at once.
ASK_AT_ONCE = 32

_A = TypeVar("_A", StatusReply, ForgetReply, VoterReply, SeedAddReply, SettingsReply, HoldReply)


@dataclass(frozen=True, slots=True)
class Contact:
    """A peer to ask: its id (for its Curve key) and its address."""

    id: str
    address: str


class LeaveOutcome(enum.StrEnum):
    LEFT = "left"  # it is gone and the others list it as left
    LEAVING = "leaving"  # still handing over when the timeout ran out
    UNKNOWN = "unknown"  # no peer knows it, or none answers
    NOT_LIVE = "not_live"  # the ring holds it dead (or left already)


@dataclass(frozen=True, slots=True)
class ForgetResult:
    """One peer's answer to ``ring forget``: its outcome, or None if none came (``error``: why)."""

    peer: str
    address: str
    outcome: ForgetOutcome | None
    error: str = ""
    refused: bool = False  # it refused this tool's key (``error`` says so): not a dead peer


@dataclass(frozen=True, slots=True)
class VoterResult:
    """``ring voter``'s run: the steward asked and its answer (None: no answer), whether the
    change settled at every live member, and the rows last seen."""

    steward: str | None
    outcome: VoterOutcome | None
    version: int = 0  # the steward's record's version after its answer
    settled: bool = False
    rows: tuple[MemberStatus, ...] = ()


@dataclass(frozen=True, slots=True)
class LeaveResult:
    outcome: LeaveOutcome
    state: str = ""  # the member's last known state, when the ring knows it


def client_keys(keys_dir: Path | None, key_id: str = "ops", ring_path: str | Path = "cluster.toml",
                ) -> CurveKeys | None:
    """The tool's own Curve key pair from the ring's keys directory, or None without Curve.

    Peers admit only keys in the keys directory, so an operator's tool has
    a pair of its own there (``scripts/keys.py --ring cluster.toml --id ops``).
    """
    if keys_dir is None:
        return None
    if not (keys_dir / f"{key_id}.key_secret").exists():
        raise RingError(spoken(f"{keys_dir}: no key pair {key_id!r} for this tool; the ring uses CurveZMQ, "
                               f"make one with: python scripts/keys.py --ring {ring_path} --id {key_id}",
                               sys.argv[0]))
    return CurveKeys.load(keys_dir, key_id)


def _configure(keys: CurveKeys | None, peer_id: str) -> Any:
    """The DEALER's hook: a routing id naming our wire version (``ring.wireversion`` rule 1), Curve keys."""
    curve = None if keys is None else curve_client(keys, keys.public_key(peer_id))
    route = tool_route(os.urandom(8).hex())

    def configure(sock: zmq.Socket) -> None:
        sock.setsockopt(zmq.ROUTING_ID, route)
        if curve is not None:
            curve(sock)

    return configure


def _nonce() -> int:
    return int.from_bytes(os.urandom(4), "big")


def refusal(watch: HandshakeWatch, contact: Contact, keys: CurveKeys | None) -> str:
    """The line for a failed handshake with ``contact`` (``watch.state.failed``): why, and what to do."""
    if keys is None:
        return (f"refused: peer {contact.id} at {contact.address} uses CurveZMQ and this tool does not: "
                "set [ring] curve_keys in cluster.toml as on the peers (docs/curve.md)")
    mine = keys.directory / f"{keys.peer_id}.key"
    if watch.state is Handshake.REFUSED:
        return (f"refused: the ring does not accept this key ({mine}: peer {contact.id} at "
                f"{contact.address} does not list it; copy {mine.name} into every peer's keys "
                f"directory, or pass --key-id with a key that is there; docs/curve.md)")
    return (f"refused: the Curve handshake with peer {contact.id} at {contact.address} failed: "
            f"the peer runs without CurveZMQ, or with another key than {keys.directory}/{contact.id}.key "
            "(copy the ring's .key files here, docs/curve.md)")


async def _exchange(contact: Contact, request: Any, answer: type[_A], nonce: int, timeout: float,
                    keys: CurveKeys | None, heard: dict[str, Handshake] | None = None) -> _A | None:
    """``request`` to ``contact``; the ``answer`` with ``nonce`` it sends back, or None within ``timeout``.

    A peer that refuses this tool's key (or a failed handshake) raises
    :class:`~ring.io.errors.HandshakeRefused` at once, instead of the silence
    of a dead peer; ``heard`` gets what the connection showed of a silent one.
    """

    def accept(frames: list[bytes]) -> _A | None:
        try:
            reply = decode(frames[-1])
        except DecodeError:
            return None
        return reply if isinstance(reply, answer) and getattr(reply, "nonce", None) == nonce else None

    reply, watch = await watched_request(contact.address, [encode_lowest(request)], accept, timeout,
                                 configure=_configure(keys, contact.id))
    if watch.state.failed:
        raise HandshakeRefused(refusal(watch, contact, keys))
    if reply is None and heard is not None:
        heard[contact.address] = watch.state
    return reply


async def ask(ring_name: str, contact: Contact, timeout: float, keys: CurveKeys | None = None,
              heard: dict[str, Handshake] | None = None) -> StatusReply | None:
    """One StatusRequest to ``contact``; its reply, or None if none came within ``timeout``.

    Raises HandshakeRefused when ``contact`` refuses this tool's key."""
    nonce = _nonce()
    return await _exchange(contact, StatusRequest(ring_name, "ring-status", nonce), StatusReply, nonce,
                           timeout, keys, heard)


async def ask_seed_add(contact: Contact, request: SeedAddRequest, timeout: float,
                       keys: CurveKeys | None = None) -> SeedAddReply | None:
    """``ring seed add``'s batch to ``contact``; its answer, or None if none came within ``timeout``
    (``ring.tools.seedadd``). Raises HandshakeRefused when ``contact`` refuses this tool's key."""
    return await _exchange(contact, request, SeedAddReply, request.nonce, timeout, keys)


def silence(heard: dict[str, Handshake]) -> str:
    """What the connections to seeds that did not answer showed, as one clause ("" if nothing)."""
    down = sorted(a for a, state in heard.items() if state is Handshake.NOTHING_LISTENS)
    return f"nothing listens at {', '.join(down)} (connection refused)" if down else ""


def _row(view: MemberStatus, own: MemberStatus | None) -> MemberStatus:
    """A member's own row, with the state and share the answering peer's view gives it
    (None: it did not answer, so the view's row, whose wire version is not the member's word)."""
    if own is None:
        return replace(view, wire_version=0)
    return replace(own, state=view.state, share=view.share)


async def cluster_status(ring_name: str, seeds: Sequence[Contact], timeout: float = 1.5,
                         keys: CurveKeys | None = None, heard: dict[str, Handshake] | None = None,
                         ) -> tuple[MemberStatus, ...] | None:
    """Each member's row, by id: the first seed that answers names the members, and
    every live member is asked for its own figures (``state`` and ``share`` stay the
    first seed's view). None when no seed answers; ``heard`` gets what the silent
    seeds' connections showed (:func:`silence`).

    The seeds are asked at once, so a ring answers as fast as its quickest seed
    and a dead one costs one ``timeout``, not one for each seed. When no seed
    answers and one refused this tool's key, that refusal is raised
    (:class:`~ring.io.errors.HandshakeRefused`): a ring that will not hear the
    tool is not a dead ring.
    """
    answers: list[StatusReply] = []
    failures: list[RingError] = []  # refusals first, then a seed's missing .key or bad address
    limiter = trio.CapacityLimiter(ASK_AT_ONCE)

    async def ask_seed(seed: Contact, nursery: trio.Nursery) -> None:
        try:
            async with limiter:
                reply = await ask(ring_name, seed, timeout, keys, heard)
        except HandshakeRefused as exc:
            failures.insert(0, exc)
            return
        except RingError as exc:
            failures.append(exc)
            return
        if reply is not None:
            answers.append(reply)
            nursery.cancel_scope.cancel()

    async with trio.open_nursery() as nursery:
        for seed in seeds:
            if seed.address:  # a solo peer without an address listens nowhere
                nursery.start_soon(ask_seed, seed, nursery)
    if not answers:
        if failures:
            raise failures[0]
        return None
    first = answers[0]
    own: dict[str, MemberStatus] = {}
    # A view holds up to MAX_MEMBERS (1,024) members: ask a few dozen at a
    # time (``limiter``), not one socket and one timeout for each at once.

    async def ask_member(contact: Contact) -> None:
        try:
            async with limiter:
                reply = await ask(ring_name, contact, timeout, keys)
        except RingError:
            return  # a joiner whose .key is not deployed here, or an address zmq refuses
        if reply is not None:
            for m in reply.members:
                if m.id == contact.id:
                    own[contact.id] = m

    async with trio.open_nursery() as nursery:
        for m in first.members:
            if m.id != first.sender and m.live:
                nursery.start_soon(ask_member, Contact(m.id, m.address))
    own.update((m.id, m) for m in first.members if m.id == first.sender)  # the seed's own row
    return tuple(_row(m, own.get(m.id)) for m in sorted(first.members, key=lambda m: m.id))


def find(rows: Iterable[MemberStatus] | None, peer_id: str) -> MemberStatus | None:
    return next((r for r in rows or () if r.id == peer_id), None)


async def request_leave(ring_name: str, seeds: Sequence[Contact], peer_id: str, timeout: float,
                        keys: CurveKeys | None = None) -> LeaveResult:
    """Ask ``peer_id`` to leave, then wait until it has handed over and gone."""
    target = find(await cluster_status(ring_name, seeds, keys=keys), peer_id)
    if target is None:
        return LeaveResult(LeaveOutcome.UNKNOWN)
    if not target.live:
        return LeaveResult(LeaveOutcome.NOT_LIVE, target.state.value)
    async with open_socket(SocketType.DEALER, connect=target.address, linger=1000,
                           configure=_configure(keys, peer_id)) as sock:
        with trio.move_on_after(2.0):
            await sock.send_multipart([encode_lowest(LeaveRequest(ring_name, "ring-leave", peer_id))])
    with trio.move_on_after(timeout):
        while True:
            await trio.sleep(0.5)
            if await ask(ring_name, Contact(peer_id, target.address), 1.0, keys) is None:
                # The process is gone: check how the others saw it go.
                row = find(await cluster_status(ring_name, seeds, keys=keys), peer_id)
                if row is None:
                    return LeaveResult(LeaveOutcome.UNKNOWN)
                if row.state is MemberState.LEFT:
                    return LeaveResult(LeaveOutcome.LEFT, row.state.value)
                return LeaveResult(LeaveOutcome.NOT_LIVE, row.state.value)
    return LeaveResult(LeaveOutcome.LEAVING, target.state.value)


class RestartOutcome(enum.StrEnum):
    """What became of ``ring restart`` (``ring.membership.restarts``)."""

    RESTARTING = "restarting"  # it stopped, and the ring holds it restarting: its hosts wait for it
    BACK = "back"  # ... and a new process of it answers again (--back)
    STOPPING = "stopping"  # still running (or not yet shown restarting) when the timeout ran out
    UNKNOWN = "unknown"  # no peer knows it, or none answers
    NOT_LIVE = "not_live"  # the ring holds it dead, left or restarting already
    NOT_HELD = "not_held"  # it stopped, but the ring does not hold it restarting (an older build: dead)
    # An operator's hold (ring.membership.restarts rule 7), for a member that cannot announce:
    HELD = "held"  # every other member of wire version 4 holds it: stop it and start it again now
    PART_HELD = "part_held"  # some of them did not answer, or refused (``holders`` says)
    NO_HOLDER = "no_holder"  # no other live member of wire version 4 to hold it


@dataclass(frozen=True, slots=True)
class RestartResult:
    outcome: RestartOutcome
    state: str = ""  # the target's state as the ring last showed it
    back_by: float = 0.0  # when its hold runs out (epoch seconds), as a peer that holds it said
    #: An operator's hold: each member asked, and its answer (None: none came).
    holders: tuple[tuple[str, HoldOutcome | None], ...] = ()
    wire_version: int = 0  # the target's, as its own row said (0: not said)


def cannot_announce(row: MemberStatus) -> bool:
    """Whether the member of ``row`` (its own, as ``cluster_status`` gives it) runs a build that
    cannot announce a planned restart: an older wire version, without ``RestartRequest``."""
    return row.wire_version != 0 and not speaks(RestartRequest, row.wire_version)


async def request_restart(ring_name: str, seeds: Sequence[Contact], peer_id: str, timeout: float,
                          keys: CurveKeys | None = None, *, back: bool = False, hold: bool = False,
                          answer_timeout: float = 2.0) -> RestartResult:
    """Ask ``peer_id`` to stop for a planned restart; wait until the ring holds it restarting
    (``back``: until its new process answers too). A member that cannot announce its own
    restart (:func:`cannot_announce`), or any with ``hold``, is held at the operator's word
    instead (:func:`request_hold`): the caller then stops it and starts it again."""
    rows = await cluster_status(ring_name, seeds, keys=keys)
    target = find(rows, peer_id)
    if target is None or rows is None:
        return RestartResult(RestartOutcome.UNKNOWN)
    if not target.live and not (hold and target.state is MemberState.RESTARTING):
        # (A member held already shows restarting: --hold asks the holders again.)
        return RestartResult(RestartOutcome.NOT_LIVE, target.shown_state)
    if hold or cannot_announce(target):
        return await request_hold(ring_name, rows, target, timeout, keys, back=back,
                                  answer_timeout=answer_timeout)
    async with open_socket(SocketType.DEALER, connect=target.address, linger=1000,
                           configure=_configure(keys, peer_id)) as sock:
        with trio.move_on_after(2.0):
            await sock.send_multipart([encode_lowest(RestartRequest(ring_name, "ring-restart", peer_id))])
    held: MemberStatus | None = None
    contact = Contact(peer_id, target.address)
    with trio.move_on_after(timeout):
        while True:
            await trio.sleep(0.5)
            answer = await ask(ring_name, contact, 1.0, keys)
            if answer is not None:
                if held is not None:  # it was gone: this is its new process
                    return RestartResult(RestartOutcome.BACK, "alive", held.back_by)
                continue
            if held is None:
                row = find(await cluster_status(ring_name, seeds, keys=keys), peer_id)
                if row is None:
                    return RestartResult(RestartOutcome.UNKNOWN)
                if row.state is not MemberState.RESTARTING:
                    if row.live:
                        continue  # the others have not heard yet, or it is still stopping
                    return RestartResult(RestartOutcome.NOT_HELD, row.shown_state)
                held = row
                if not back:
                    return RestartResult(RestartOutcome.RESTARTING, row.shown_state, row.back_by)
    if held is not None:
        return RestartResult(RestartOutcome.RESTARTING, held.shown_state, held.back_by)
    return RestartResult(RestartOutcome.STOPPING, target.shown_state)


async def request_hold(ring_name: str, rows: Sequence[MemberStatus], target: MemberStatus, timeout: float,
                       keys: CurveKeys | None = None, *, back: bool = False, answer_timeout: float = 2.0,
                       ) -> RestartResult:
    """Ask every other live member of wire version 4 in ``rows`` to hold ``target`` for an
    operator's restart (``ring.membership.restarts`` rule 7); with ``back``, then wait up to
    ``timeout`` for ``target`` to stop and a new process of it to answer."""
    asked = [r for r in rows if r.live and r.id != target.id and speaks(HoldRequest, r.wire_version)]
    if not asked:
        return RestartResult(RestartOutcome.NO_HOLDER, target.shown_state, wire_version=target.wire_version)
    answers: dict[str, HoldReply | None] = {}
    limiter = trio.CapacityLimiter(ASK_AT_ONCE)

    async def hold_at(row: MemberStatus) -> None:
        nonce = _nonce()
        try:
            async with limiter:
                reply = await _exchange(Contact(row.id, row.address),
                                        HoldRequest(ring_name, "ring-restart", target.id, nonce),
                                        HoldReply, nonce, answer_timeout, keys)
        except RingError:  # its key refused, an address zmq refuses: no hold there
            reply = None
        answers[row.id] = reply if reply is not None and reply.target == target.id else None

    async with trio.open_nursery() as nursery:
        for row in asked:
            nursery.start_soon(hold_at, row)
    holders = tuple((mid, r.outcome if r is not None else None) for mid, r in sorted(answers.items()))
    held = [r for r in answers.values() if r is not None and r.outcome is HoldOutcome.HELD]
    back_by = time.time() + min((r.hold for r in held), default=0.0)
    if len(held) < len(asked):
        return RestartResult(RestartOutcome.PART_HELD, target.shown_state, back_by if held else 0.0, holders,
                             target.wire_version)
    if back:
        contact = Contact(target.id, target.address)
        gone = False
        with trio.move_on_after(timeout):
            while True:
                await trio.sleep(0.5)
                answer = await ask(ring_name, contact, 1.0, keys)
                if answer is None:
                    gone = True
                elif gone:
                    return RestartResult(RestartOutcome.BACK, "alive", back_by, holders, target.wire_version)
    return RestartResult(RestartOutcome.HELD, "restarting", back_by, holders, target.wire_version)


async def request_forget(ring_name: str, seeds: Sequence[Contact], target: str, timeout: float,
                         keys: CurveKeys | None = None) -> tuple[ForgetResult, ...]:
    """Ask every peer to forget dead member ``target``; each peer's answer, by id.

    The peers asked are the seeds (cluster.toml) and the live members any
    seed lists (a peer that joined later holds the dead member in its
    quorum too). ``target`` itself is asked when it is a seed: if it
    answers, it is running, and it says so (``ForgetOutcome.SELF``).
    """
    seeds = [s for s in seeds if s.address]
    views: list[StatusReply] = []
    limiter = trio.CapacityLimiter(ASK_AT_ONCE)

    async def view_of(contact: Contact) -> None:
        # A seed's missing Curve key or bad address is a RingError: the
        # user's mistake in cluster.toml, one line (as ``ring status``).
        try:
            async with limiter:
                reply = await ask(ring_name, contact, timeout, keys)
        except HandshakeRefused:
            return  # asked again below for the forget itself, which says the refusal per peer
        if reply is not None:
            views.append(reply)

    async with trio.open_nursery() as nursery:
        for seed in seeds:
            nursery.start_soon(view_of, seed)
    contacts = {s.id: s for s in seeds}
    for view in views:
        for m in view.members:
            if m.id not in contacts and m.id != target and m.live and m.address:
                contacts[m.id] = Contact(m.id, m.address)
    results: dict[str, ForgetResult] = {}

    async def forget_at(contact: Contact) -> None:
        nonce = _nonce()
        try:
            async with limiter:
                reply = await _exchange(contact, ForgetRequest(ring_name, "ring-forget", target, nonce),
                                        ForgetReply, nonce, timeout, keys)
        except HandshakeRefused as exc:
            results[contact.id] = ForgetResult(contact.id, contact.address, None, str(exc), refused=True)
            return
        except RingError as exc:  # a joiner whose .key is not deployed here, an address zmq refuses
            results[contact.id] = ForgetResult(contact.id, contact.address, None, str(exc))
            return
        outcome = reply.outcome if reply is not None and reply.target == target else None
        results[contact.id] = ForgetResult(contact.id, contact.address, outcome)

    async with trio.open_nursery() as nursery:
        for contact in contacts.values():
            nursery.start_soon(forget_at, contact)
    return tuple(results[k] for k in sorted(results))


def settled(rows: Sequence[MemberStatus], action: VoterAction, target: str, version: int) -> bool:
    """Whether every live member that gave its own row holds a settled record past ``version``
    with ``target`` a voter (add) or not (retire)."""
    own = [r for r in rows if r.live and r.lease is not LeaseStatus.UNKNOWN]
    want = action is VoterAction.ADD
    return bool(own) and all(r.voters_version > version and r.voters_version % 2 == 0
                             and (target in r.voters) == want for r in own)


async def request_voter(ring_name: str, seeds: Sequence[Contact], action: VoterAction, target: str,
                        timeout: float, keys: CurveKeys | None = None, answer_timeout: float = 2.0,
                        ) -> VoterResult:
    """Ask the ring's steward (the lowest live id, ``ring.membership.voters`` rule 4) to add or
    retire ``target``, from the version it holds; then wait up to ``timeout`` for the change to
    settle at every live member."""
    rows = await cluster_status(ring_name, seeds, answer_timeout, keys)
    if rows is None:
        return VoterResult(None, None)
    live = sorted(r.id for r in rows if r.live)
    steward = next((r for r in rows if live and r.id == live[0]), None)
    if steward is None:
        return VoterResult(None, None, rows=rows)
    nonce = _nonce()
    request = VoterRequest(ring_name, "ring-voter", action, target, steward.voters_version, nonce)
    reply = await _exchange(Contact(steward.id, steward.address), request, VoterReply, nonce, answer_timeout,
                            keys)
    if reply is None or reply.target != target:
        return VoterResult(steward.id, None, rows=rows)
    if reply.outcome is VoterOutcome.ALREADY:
        return VoterResult(steward.id, reply.outcome, reply.version, True, rows)
    if reply.outcome is not VoterOutcome.CHANGING:
        return VoterResult(steward.id, reply.outcome, reply.version, False, rows)
    with trio.move_on_after(timeout):
        while True:
            await trio.sleep(0.5)
            got = await cluster_status(ring_name, seeds, answer_timeout, keys)
            if got is not None:
                rows = got
                if settled(rows, action, target, reply.version - 1):
                    return VoterResult(steward.id, reply.outcome, reply.version, True, rows)
    return VoterResult(steward.id, reply.outcome, reply.version, False, rows)


# -- ring set | pause | resume (ring.membership.epochs) ---------------------------------


@dataclass(frozen=True, slots=True)
class SettingsResult:
    """``ring set|pause|resume``'s run: the steward asked and its answer (None: no answer), the
    epoch it made or holds, why it refused (``detail``), the live members that had not taken the
    epoch when the wait ended (``behind``: none once every one acked it), and the rows last seen."""

    steward: str | None
    outcome: SettingsOutcome | None
    epoch: int = 0
    detail: str = ""
    behind: tuple[str, ...] = ()
    rows: tuple[MemberStatus, ...] = ()


def behind(rows: Sequence[MemberStatus], epoch: int) -> tuple[str, ...]:
    """The live members whose own row does not say they run ``epoch`` or later (a member that
    did not answer with its own row is behind: only its own word is an ack)."""
    return tuple(sorted(r.id for r in rows if r.live and (r.lease is LeaseStatus.UNKNOWN or r.config_epoch < epoch)))


async def request_settings(ring_name: str, seeds: Sequence[Contact], action: SettingsAction,
                           assignments: Sequence[str], timeout: float, keys: CurveKeys | None = None,
                           answer_timeout: float = 2.0, poll: float = 0.25) -> SettingsResult:
    """Ask the ring's steward (its lowest live id, ``ring.membership.epochs`` rule 4) for the next
    epoch from the one it runs; then wait up to ``timeout`` until every live member runs it."""
    rows = await cluster_status(ring_name, seeds, answer_timeout, keys)
    if rows is None:
        return SettingsResult(None, None)
    live = sorted(r.id for r in rows if r.live)
    steward = next((r for r in rows if live and r.id == live[0]), None)
    if steward is None:
        return SettingsResult(None, None, rows=rows)
    nonce = _nonce()
    request = SettingsRequest(ring_name, "ring-set", action, tuple(assignments), steward.config_epoch, nonce)
    reply = await _exchange(Contact(steward.id, steward.address), request, SettingsReply, nonce,
                            answer_timeout, keys)
    if reply is None:
        return SettingsResult(steward.id, None, rows=rows)
    if reply.outcome is not SettingsOutcome.CHANGED:
        return SettingsResult(steward.id, reply.outcome, reply.epoch, reply.detail, rows=rows)
    late: tuple[str, ...] = tuple(live)
    with trio.move_on_after(timeout):
        while True:
            got = await cluster_status(ring_name, seeds, answer_timeout, keys)
            if got is not None:
                rows = got
                late = behind(rows, reply.epoch)
                if not late:
                    break
            await trio.sleep(poll)
    return SettingsResult(steward.id, reply.outcome, reply.epoch, reply.detail, late, rows)
