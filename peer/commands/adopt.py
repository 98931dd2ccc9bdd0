"""Adopt a lost peer's frontier: its unfetched URLs go to their current owners.

When a peer is lost for good (disk moved to another machine, host gone), the
others mark it dead and take over its hosts (consistent hashing moves only
its hosts, UbiCrawler §3), but the URLs only it had queued would be lost::

    python scripts/adopt.py data/p3 --ring cluster.toml [--id p3] [--dry-run]

(``ringcrawl-adopt`` once installed; :func:`main` is the command line) reads
the lost peer's crash state (``DATA_DIR/state``, :mod:`peer.state.journal`:
the queue at the kill, in-flight fetches included, plus the forwards it had
not had acked) and its results (``DATA_DIR/pages.duckdb``), both read by
:mod:`peer.commands.lostpeer`, asks the running
ring who is alive (``ring.tools.client.cluster_status``), and sends every URL to the
owner of its host as :class:`~ring.messages.UrlBatch` es with the sender
``adopt:<id>``, which ``ring.node`` takes into the crawl's frontier and acks
on the same socket (``ring.io.driver.ForwardLink`` carries them). Rows the lost peer had written stay in its pages.duckdb and
are merged as usual by ``scripts/merge.py``; rows only its journal held (done
after its last snapshot, not yet flushed to DuckDB) are written back there
first, as the peer itself would on a restart.

Its hosts' state goes first (peer/core/handoff/state.py): each page's last
visit in its ``fetches`` table (when it is due again, its interval and
validators), its cookie jar's file, and what other peers had handed it that
only its journal held, as :class:`~ring.messages.HostState` messages from
``adopt:<id>`` (``ring.statebox``: numbered, resent until acked, re-routed
when an owner goes), each to its host's owner, which journals them before it
acks on the same socket and keeps the newer of two records. Without them the
pages it fetched, sent as seen, would never be revisited by their new owners
in a continuous crawl. A ring of an older build drops the message type: the
state is then listed as not acked at ``--timeout`` (exit 1) and the URLs are
not sent; ``--no-state`` leaves it out.

Order matters, so delivery has two phases after it. First every already-fetched URL
(a pages row or a journal row) goes as ``seen`` to its owner's Bloom filter,
and only once all of those are acked do the queued URLs go: a queued page
fetched by its new owner links to pages the lost peer fetched, possibly on
another owner's hosts, and that owner must know them already or it would
fetch them again. A queued URL that also has a row is sent only as seen.

Delivery reuses the peers' own :class:`ring.forwarding.forwarder.Outbox` (per-owner
sequence numbers, resend of a batch not acked after a second, re-routing),
with at most :data:`WINDOW` unacked batches per owner so a big frontier does
not pile resends on a busy peer. While batches wait unacked the ring is asked
again (at most every :data:`STATUS_EVERY` s); if an owner is gone, its
batches are re-routed over the new ring, so nothing is dropped silently:
what is still unacked at ``--timeout`` is listed and the exit status is 1.
Adopting twice is harmless: owners dedupe with their Bloom filters.

Limitations. The ring is rebuilt from ``python -m ring status``: ids and
states, not weights, so a member's weight is taken from its ``[[peer]]``
entry and a joiner not listed there counts as 1.0. A URL routed with a wrong
weight still arrives: the receiver routes what it takes with its own ring and
relays it. A ``seen`` URL that lands on a non-owner (same cause, or a ring
change while in flight) is not relayed, so at worst that page is fetched once
more. Run adopt soon after the peer is declared dead: until then the new
owners may fetch again pages of its hosts that it had fetched.

With ``[ring] curve_keys`` set, the tool is a Curve client with the key pair
``--key-id`` (default ``ops``) of the keys directory: generate it with
``python scripts/keys.py --ring cluster.toml --id ops`` and copy ``ops.key``
into every peer's keys directory (docs/curve.md), or peers refuse it.

Mistakes (bad cluster.toml, unknown data dir, corrupt state, the lost peer
still running or still alive in the ring) raise the package's errors, which
:func:`main` (the command line) prints as one line with exit 2; no
peer answering (:class:`Unreachable`), or batches unacked at the timeout,
exit 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from ring.commandnames import Command, command, spoken
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from peer.commands.lostpeer import RESULTS_FILE, STATE_DIR, LostPeer, load_lost, lost_peer_id, restore_rows
from peer.core.config.cluster import ClusterConfig
from peer.core.urls.normalize import host_key, hostname
from peer.errors import EXIT_USAGE, ConfigError, PeerError, URLError
from peer.state.configfile import load_config
from ring.durations import duration
from ring.errors import RingError, user_error
from ring.forwarding.forwarder import Outbox
from ring.hashring import HashRing
from ring.io.curve import resolve_keys_dir
from ring.io.driver import ForwardLink
from ring.messages import Ack, HostStateAck, MemberStatus, UrlBatch
from ring.statebox import Kind, StateBox
from ring.forwarding.intake import ADOPT_PREFIX
from ring.tools.client import Contact, client_keys, cluster_status, silence

__all__ = [
    "AdoptSummary",
    "LostPeer",
    "Plan",
    "Unreachable",
    "adopt",
    "live_ring",
    "load_lost",
    "lost_peer_id",
    "main",
    "make_plan",
    "ring_status",
]

EXIT_INCOMPLETE = 1
#: Entries (URLs + seen) per batch. The codec takes 10,000 and 8 MiB a frame;
#: at the 4 KiB URL limit of peer.core.urls.normalize 1,000 entries stay under 4.1 MiB, and
#: MAX_BATCH under 8 MiB.
BATCH_SIZE = 1000
MAX_BATCH = 2000
#: Unacked batches per owner: enough to keep an owner busy, few enough that a
#: slow one is not sent the same batches again every second.
WINDOW = 4
#: A batch not acked this long after it was sent is sent again (Outbox rule 3).
RESEND_AFTER = 1.0
#: A send that cannot be queued within this long is left to the resend.
SEND_TIMEOUT = 0.5
#: While batches wait unacked, ask the ring for its members at most this often.
STATUS_EVERY = 2.0
#: Seconds to wait for each peer's status answer.
STATUS_TIMEOUT = 1.0
StatusRows = Sequence[MemberStatus]


class Unreachable(Exception):
    """No peer of the ring answered: exit status 1, not a user's mistake."""


# ---------------------------------------------------------------------------
# Routing
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Plan:
    """Who gets what: per owner, the URLs for its frontier and the seen URLs."""

    urls: dict[str, list[tuple[str, int]]]
    seen: dict[str, list[str]]
    unroutable: list[str]  # URLs with no host a ring can own (garbage in the state)


def make_plan(urls: Mapping[str, int], seen: Iterable[str], owner_of: Callable[[str], str]) -> Plan:
    """Group ``urls`` and ``seen`` by ``owner_of(url)`` (pure)."""
    by_owner: dict[str, list[tuple[str, int]]] = {}
    seen_by: dict[str, list[str]] = {}
    bad: list[str] = []
    for url, depth in urls.items():
        try:
            by_owner.setdefault(owner_of(url), []).append((url, depth))
        except URLError:
            bad.append(url)
    for url in seen:
        try:
            seen_by.setdefault(owner_of(url), []).append(url)
        except URLError:
            bad.append(url)
    return Plan(by_owner, seen_by, bad)


def owner_fn(ring: HashRing) -> Callable[[str], str]:
    return lambda url: ring.owner(host_key(url))


def live_members(rows: StatusRows) -> dict[str, str]:
    """id -> address of the members that own hosts."""
    return {r.id: r.address for r in rows if r.live}


async def ring_status(cfg: ClusterConfig, timeout: float, keys: Any = None,
                      heard: dict[str, Any] | None = None) -> tuple[MemberStatus, ...] | None:
    """``ring status`` of the ring in ``cfg`` (``ring.tools.client.cluster_status``): every seed
    asked at once, so an answer takes as long as the quickest peer and silence one ``timeout``;
    a ring that refuses the tool's key raises HandshakeRefused (a RingError: exit 2)."""
    seeds = [Contact(p.id, p.address) for p in cfg.peers]
    return await cluster_status(cfg.ring.name, seeds, timeout, keys, heard)


def live_ring(cfg: ClusterConfig, members: Iterable[str]) -> HashRing:
    """The ring the peers route with, as far as status shows it (weights: module doc)."""
    weights = {p.id: p.weight for p in cfg.peers}
    return HashRing({m: weights.get(m, 1.0) for m in members}, vnodes=cfg.ring.vnodes)


# ---------------------------------------------------------------------------
# Delivery
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AdoptSummary:
    """What an adoption did (or, with ``dry_run``, would do)."""

    peer: str
    data_dir: str
    dry_run: bool
    urls: dict[str, int]        # owner -> URLs it acked (planned, for a dry run)
    seen: dict[str, int]        # owner -> seen URLs it acked (planned)
    addresses: dict[str, str]   # owner -> its address
    batches: int                # batches sent, resends excluded (planned)
    resends: int
    ring_changes: int           # member sets seen change while sending
    seconds: float
    already_fetched: int        # queued URLs sent only as seen: they have a row
    unroutable: int
    rows_restored: int          # journal-only rows written back to pages.duckdb (to be)
    rows_unusable: int
    has_state: bool
    generation: int | None
    torn_bytes: int
    # owner -> entries not acked ("urls", "seen": sent or not) and "batches" sent unacked
    unacked: dict[str, dict[str, int]] = field(default_factory=dict)
    #: owner -> records of its hosts' state it acked (planned, for a dry run): revisit records and cookies
    state: dict[str, int] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.unacked

    def lines(self) -> list[str]:
        """The text the CLI prints."""
        verb = "plan (dry run, nothing sent)" if self.dry_run else "adopted"
        out = [f"{self.peer}: {verb}: {sum(self.urls.values())} queued URLs and "
               f"{sum(self.seen.values())} fetched URLs (as seen) from {self.data_dir}"]
        if not self.has_state:
            out.append(f"note: no crawl state in {self.data_dir}/{STATE_DIR}: only its fetched URLs go")
        elif self.torn_bytes:
            out.append(f"note: {self.torn_bytes} bytes of a torn journal tail ignored (normal after kill -9)")
        owners = sorted(set(self.urls) | set(self.seen) | set(self.unacked))
        out.append(f"{'owner':<10} {'URLs':>9} {'seen':>9}  address")
        for o in owners:
            out.append(f"{o:<10} {self.urls.get(o, 0):>9} {self.seen.get(o, 0):>9}  "
                       f"{self.addresses.get(o, '?')}")
        out.append(f"{'total':<10} {sum(self.urls.values()):>9} {sum(self.seen.values()):>9}")
        if self.state:
            verb = "would go" if self.dry_run else "acked"
            out.append(f"its hosts' state: {sum(self.state.values())} revisit records and cookies {verb} ("
                       + ", ".join(f"{o}: {n}" for o, n in sorted(self.state.items())) + ")")
        if self.dry_run:
            out.append(f"{self.batches} batches of up to {BATCH_SIZE} entries would be sent")
        else:
            out.append(f"{self.batches} batches, {self.resends} resends, "
                       f"{self.ring_changes} ring changes, {duration(self.seconds)}")
        out.append(f"left out: {self.already_fetched} queued URLs already fetched (sent as seen), "
                   f"{self.unroutable} unroutable URLs")
        if self.rows_restored or self.rows_unusable:
            verb = "would restore" if self.dry_run else "restored"
            out.append(f"{verb} {self.rows_restored} result rows from the journal into "
                       f"{self.data_dir}/{RESULTS_FILE}"
                       + (f"; {self.rows_unusable} rows of another format left out"
                          if self.rows_unusable else ""))
        return out

    def unacked_line(self) -> str:
        return "; ".join(f"{o}: " + (f"{v['state']} records of its hosts' state, " if v.get("state") else "")
                         + f"{v['urls']} URLs and {v['seen']} seen URLs not acked "
                         f"(unacked batches: {v['batches']})" for o, v in sorted(self.unacked.items()))


class _Delivery:
    """Sends a plan's entries in two phases, seen first, until every batch is acked."""

    def __init__(self, cfg: ClusterConfig, sender: str, members: dict[str, str],
                 configure: Callable[[str], Any] | None, deadline: float,
                 batch_size: int, status: Callable[..., Any]) -> None:
        self.cfg = cfg
        self.members = members
        self.ring = live_ring(cfg, members)
        self.configure = configure
        self.deadline = deadline
        self.batch_size = batch_size
        self.status = status
        # The epoch names this run's batches; seq counts from 0 per owner.
        self.outbox = Outbox(sender, cfg.ring.name, epoch=int(time.time() * 1000),
                             batch_size=batch_size, max_age=0.0, resend_after=RESEND_AFTER,
                             recent_size=0)
        self.inflight: dict[str, dict[int, tuple[int, int]]] = {}  # owner -> seq -> (urls, seen)
        self.acked_urls: dict[str, int] = {}
        self.acked_seen: dict[str, int] = {}
        self.addresses: dict[str, str] = {}
        self.ring_changes = 0
        self._pending: dict[str, deque[Any]] = {}
        self._seen_phase = True
        self.link: ForwardLink | None = None  # while run() delivers
        self._wake = trio.Event()
        self._last_status = trio.current_time()
        self._resent_seen = 0
        self._later: dict[str, list[Any]] = {}  # the URL phase's entries, while seen go first
        # The hosts' state, sent before both phases (module docstring), by the ring's own box.
        self.state = StateBox(sender, cfg.ring.name, epoch=self.outbox.epoch, resend_after=RESEND_AFTER)
        self.state_acked: dict[str, int] = {}

    async def run(self, plan: Plan, revisits: Sequence[Any] = (), cookies: Sequence[Any] = ()) -> bool:
        """Deliver the hosts' state, then ``plan``; True when everything is acked before the deadline."""
        self._later = {o: list(v) for o, v in plan.urls.items()}
        try:
            # The non-member sender of ring.io.driver: one DEALER per owner, at most
            # WINDOW * 4 frames queued in it, acks read back on it.
            async with ForwardLink(self.cfg.ring.name, self._on_ack, configure=self.configure,
                                   hwm=WINDOW * 4, send_timeout=SEND_TIMEOUT,
                                   on_state_ack=self._on_state_ack) as link:
                self.link = link
                ok = await self._state_phase(revisits, cookies)
                if ok:
                    ok = await self._phase({o: list(v) for o, v in plan.seen.items()}, seen=True)
                if ok:
                    later, self._later = self._later, {}
                    ok = await self._phase(later, seen=False)
        except BaseExceptionGroup as group:
            # trio wraps even a lone error (a Curve key refused, say) in a group.
            leaves = _leaves(group)
            if len(leaves) == 1 and isinstance(leaves[0], Exception):
                raise leaves[0] from None
            raise
        return ok

    async def _state_phase(self, revisits: Sequence[Any], cookies: Sequence[Any]) -> bool:
        """The hosts' state, each record to its host's owner, until every one is acked."""
        box = self.state
        keys: dict[str, str] = {}  # a cookie's host name -> a host key of it (the ring places keys)
        for r in revisits:
            keys.setdefault(hostname(r[1]), r[1])
            box.add(self.ring.owner(r[1]), r[1], Kind.REVISIT, r)
        for c in cookies:
            key = keys.get(c[0], c[0])
            box.add(self.ring.owner(key), key, Kind.COOKIE, c)
        resent = 0
        while not box.idle:
            now = trio.current_time()
            if now >= self.deadline:
                return False
            for dest, msg in box.messages(now):
                address = self.members.get(dest)
                if address is not None:  # else gone: the next refresh re-routes it
                    self.addresses[dest] = address
                    assert self.link is not None
                    await self.link.send(dest, address, msg)
            if box.counts["handoff_state.resent"] > resent and now - self._last_status >= STATUS_EVERY:
                resent = box.counts["handoff_state.resent"]
                await self._refresh()
                continue
            with trio.move_on_at(min(self.deadline, now + RESEND_AFTER)):
                await self._wake.wait()
            self._wake = trio.Event()
        return True

    def _on_state_ack(self, msg: HostStateAck) -> None:
        before = self.state.counts["handoff_state.acked"]
        if self.state.ack(msg.sender, msg.epoch, msg.seq):
            n = self.state.counts["handoff_state.acked"] - before
            self.state_acked[msg.sender] = self.state_acked.get(msg.sender, 0) + n
            self._wake.set()

    async def _phase(self, entries: dict[str, list[Any]], *, seen: bool) -> bool:
        self._seen_phase = seen
        self._pending = {o: deque(v) for o, v in entries.items() if v}
        outbox = self.outbox
        while self._pending or not outbox.idle:
            now = trio.current_time()
            if now >= self.deadline:
                return False
            self._feed(now)
            for dest, batch in outbox.due(now):
                await self._send(dest, batch)
            resent = outbox.stats().resent
            if resent > self._resent_seen and now - self._last_status >= STATUS_EVERY:
                self._resent_seen = resent
                await self._refresh()
                continue
            when = outbox.next_due_at()
            with trio.move_on_at(min(self.deadline, when if when is not None else now + RESEND_AFTER)):
                await self._wake.wait()
            self._wake = trio.Event()
        return True

    def _feed(self, now: float) -> None:
        """Hand the Outbox at most WINDOW unacked batches per owner."""
        add = self.outbox.add_seen if self._seen_phase else None
        for owner in list(self._pending):
            q = self._pending[owner]
            room = WINDOW - len(self.inflight.get(owner, ()))
            for _ in range(max(0, room)):
                for _ in range(min(self.batch_size, len(q))):
                    e = q.popleft()
                    if add is not None:
                        add(e, owner, now)
                    else:
                        self.outbox.add(e[0], e[1], owner, now)
                if not q:
                    break
            if not q:
                del self._pending[owner]

    async def _send(self, dest: str, batch: UrlBatch) -> None:
        sent = self.inflight.setdefault(dest, {})
        if batch.seq not in sent:
            sent[batch.seq] = (len(batch.urls), len(batch.seen))
        address = self.members.get(dest)
        if address is None:
            return  # gone: the next refresh re-routes it
        self.addresses[dest] = address
        assert self.link is not None
        await self.link.send(dest, address, batch)

    def _on_ack(self, msg: Ack) -> None:
        if self.outbox.ack(msg.sender, msg.epoch, msg.seq):
            n_urls, n_seen = self.inflight.get(msg.sender, {}).pop(msg.seq, (0, 0))
            for tally, n in ((self.acked_urls, n_urls), (self.acked_seen, n_seen)):
                if n:
                    tally[msg.sender] = tally.get(msg.sender, 0) + n
            self._wake.set()

    async def _refresh(self) -> None:
        """Batches wait: if the live member set changed, re-route over the new ring."""
        self._last_status = trio.current_time()
        rows = await self.status(self.cfg, STATUS_TIMEOUT)
        self._last_status = trio.current_time()
        if rows is None:
            return
        live = live_members(rows)
        if not live or live == self.members:
            return
        self.ring_changes += 1
        self.members = live
        self.ring = ring = live_ring(self.cfg, live)
        owner_of = owner_fn(ring)
        self.outbox.reroute(owner_of, trio.current_time(), members=ring)
        self.state.reroute(ring.owner, members=ring)  # placed by host key
        for dest in [d for d in self.inflight if d not in ring]:
            del self.inflight[dest]  # abandoned: the Outbox moved their entries
        regrouped: dict[str, deque[Any]] = {}
        for q in self._pending.values():
            for e in q:
                url = e if self._seen_phase else e[0]
                regrouped.setdefault(owner_of(url), deque()).append(e)
        self._pending = regrouped
        later: dict[str, list[Any]] = {}
        for items in self._later.values():
            for e in items:
                later.setdefault(owner_of(e[0]), []).append(e)
        self._later = later

    def unacked(self) -> dict[str, dict[str, int]]:
        """What is not acked, by owner: unacked batches, and entries not yet sent."""
        out: dict[str, dict[str, int]] = {}

        def add(owner: str, batches: int = 0, urls: int = 0, seen: int = 0) -> None:
            s = out.setdefault(owner, {"batches": 0, "urls": 0, "seen": 0})
            s["batches"] += batches
            s["urls"] += urls
            s["seen"] += seen

        numbered = 0
        for dest, seqs in self.inflight.items():
            if seqs:
                urls, seen = sum(u for u, _ in seqs.values()), sum(n for _, n in seqs.values())
                add(dest, len(seqs), urls, seen)
                numbered += urls + seen
        queued = self.outbox.queued()
        # Re-routed entries the Outbox holds, not yet in a numbered batch.
        unsealed = len(queued.urls) + len(queued.seen) - numbered
        if unsealed > 0:
            add("(re-routed)", **{"seen" if self._seen_phase else "urls": unsealed})
        for owner, q in self._pending.items():
            add(owner, **{"seen" if self._seen_phase else "urls": len(q)})
        for owner, v in self._later.items():
            add(owner, urls=len(v))
        if not self.state.idle:
            for owner, n in self.state.pending_by_dest().items():
                add(owner)
                out[owner]["state"] = n
        return out


def _leaves(group: BaseExceptionGroup) -> list[BaseException]:
    out: list[BaseException] = []
    for e in group.exceptions:
        out.extend(_leaves(e) if isinstance(e, BaseExceptionGroup) else [e])
    return out


# ---------------------------------------------------------------------------
# The whole adoption
# ---------------------------------------------------------------------------


def _curve_configure(cfg: ClusterConfig, key_id: str) -> Callable[[str], Any] | None:
    from ring.io.curve import CurveKeys

    keys_dir = resolve_keys_dir(cfg.ring.curve_keys, cfg.path)
    if keys_dir is None:
        return None
    from ring.io.zap import curve_client

    keys = CurveKeys.load(keys_dir, key_id)
    return lambda owner: curve_client(keys, keys.public_key(owner))


async def adopt(
    cfg: ClusterConfig, data_dir: str | Path, *, peer_id: str | None = None, force: bool = False,
    dry_run: bool = False, timeout: float = 60.0, key_id: str = "ops",
    batch_size: int = BATCH_SIZE, status: Callable[..., Any] | None = None, state: bool = True,
) -> AdoptSummary:
    """Adopt the lost peer's frontier in ``data_dir`` into the running ring.

    Raises ConfigError/StateError/RingError for a user's mistake (exit 2) and
    :class:`Unreachable` when no peer answers (exit 1); a summary with
    ``unacked`` entries means the timeout ran out (exit 1).
    """
    if not 1 <= batch_size <= MAX_BATCH:
        raise ValueError(f"batch_size must be in 1..{MAX_BATCH}, not {batch_size!r}")
    t0 = trio.current_time()
    heard: dict[str, Any] = {}
    if status is None:
        # The operator's key pair when the ring uses CurveZMQ (ring.tools.client.client_keys),
        # for a dry run as well: it asks the ring who is alive as the real run does.
        tool_keys = client_keys(resolve_keys_dir(cfg.ring.curve_keys, cfg.path), key_id, cfg.path)

        async def status(cfg: ClusterConfig, timeout: float):  # type: ignore[no-redef]
            return await ring_status(cfg, timeout, tool_keys, heard)
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise ConfigError(str(data_dir), "", "no such directory (expected the lost peer's data_dir)")
    pid = lost_peer_id(cfg, data_dir, peer_id)
    configure = None if dry_run else _curve_configure(cfg, key_id)
    lost = await trio.to_thread.run_sync(load_lost, cfg, data_dir, pid)

    rows = await status(cfg, STATUS_TIMEOUT)
    if rows is None:
        addrs = ", ".join(p.address for p in cfg.peers)
        down = silence(heard)
        raise Unreachable(f"no peer of ring {cfg.ring.name!r} answered at {addrs} within "
                          f"{STATUS_TIMEOUT:g}s" + (f"; {down}" if down else "") + "; is the cluster running?")
    mine = next((r for r in rows if r.id == pid), None)
    if mine is not None and mine.live and not force:
        raise ConfigError(str(data_dir), "", f"{pid} is still {mine.state.value} in the ring; adopt only "
                                             "a dead peer's data (or --force)")
    members = live_members(rows)
    if not members:
        raise Unreachable(f"ring {cfg.ring.name!r} has no live member to adopt {pid}'s URLs")
    ring = live_ring(cfg, members)
    plan = make_plan(lost.urls, lost.fetched, owner_fn(ring))
    revisits, cookies = (lost.revisits, lost.cookies) if state else ([], [])
    common: dict[str, Any] = dict(
        peer=pid, data_dir=str(data_dir), already_fetched=lost.already_fetched,
        unroutable=len(plan.unroutable), has_state=lost.has_state, generation=lost.generation,
        torn_bytes=lost.torn_bytes,
    )
    if dry_run:
        batches = sum(math.ceil(len(v) / batch_size) for part in (plan.urls, plan.seen)
                      for v in part.values())
        return AdoptSummary(
            dry_run=True, urls={o: len(v) for o, v in plan.urls.items()},
            seen={o: len(v) for o, v in plan.seen.items()},
            addresses={o: members[o] for o in set(plan.urls) | set(plan.seen)},
            batches=batches, resends=0, ring_changes=0, seconds=trio.current_time() - t0,
            rows_restored=len(lost.rows_to_restore), rows_unusable=0,
            state=_state_plan(ring, revisits, cookies), **common)

    restored, unusable = await restore_rows(lost)
    # The timeout counts from the first send: reading a big state is not the ring's fault.
    delivery = _Delivery(cfg, ADOPT_PREFIX + pid, members, configure,
                         trio.current_time() + timeout, batch_size, status)
    ok = await delivery.run(plan, revisits, cookies)
    stats = delivery.outbox.stats()
    return AdoptSummary(
        dry_run=False, urls=delivery.acked_urls, seen=delivery.acked_seen,
        addresses=dict(delivery.addresses), batches=stats.batches, resends=stats.resent,
        ring_changes=delivery.ring_changes, seconds=trio.current_time() - t0,
        rows_restored=restored, rows_unusable=unusable,
        unacked={} if ok else delivery.unacked(), state=dict(delivery.state_acked), **common)


def _state_plan(ring: HashRing, revisits: Sequence[Any], cookies: Sequence[Any]) -> dict[str, int]:
    """owner -> records of the hosts' state it would get (a dry run's figure)."""
    out: dict[str, int] = {}
    keys: dict[str, str] = {}
    for r in revisits:
        keys.setdefault(hostname(r[1]), r[1])
        out[ring.owner(r[1])] = out.get(ring.owner(r[1]), 0) + 1
    for c in cookies:
        o = ring.owner(keys.get(c[0], c[0]))
        out[o] = out.get(o, 0) + 1
    return out


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=command(Command.ADOPT, sys.argv[0]),
        description=(
            "Adopt a lost peer's frontier: send the URLs it had queued (and the forwards it had\n"
            "not had acked) to their current owners in the running ring, and the URLs it had\n"
            "already fetched as 'seen', so nothing it queued is lost and nothing it fetched is\n"
            "fetched again. Its pages.duckdb stays where it is; merge it with python scripts/merge.py.\n"
            "The lost peer must be dead in the ring (see python -m ring status)."
        ),
        epilog=(
            "examples:\n"
            "  python -m ring status --ring cluster.toml          # p3 is 'dead'\n"
            "  python scripts/adopt.py data/p3 --ring cluster.toml --dry-run\n"
            "  python scripts/adopt.py data/p3 --ring cluster.toml\n"
            "  python scripts/adopt.py /mnt/old/p3 --ring cluster.toml   # a copy: its state names p3\n\n"
            "Exit status: 0 all acked; 1 no peer answered, or batches still unacked at --timeout\n"
            "(run it again: owners dedupe); 2 a usage mistake (bad cluster.toml, unknown data dir,\n"
            "corrupt state, the peer still running or still alive in the ring)."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("data_dir", type=Path, metavar="DATA_DIR", help="the lost peer's data_dir")
    p.add_argument("--ring", type=Path, required=True, metavar="cluster.toml",
                   help="the running ring's cluster.toml (required)")
    p.add_argument("--id", metavar="ID",
                   help="the lost peer's id (default: the [[peer]] whose data_dir is DATA_DIR, else the "
                        "peer DATA_DIR's crawl state names: a copy at another path needs no --id)")
    p.add_argument("--dry-run", action="store_true",
                   help="print how many URLs would go to each owner, send nothing")
    p.add_argument("--force", action="store_true",
                   help="adopt even if the ring still lists the peer as alive or suspect")
    p.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="give up on unacked batches after this long (default 60)")
    p.add_argument("--key-id", default="ops", metavar="ID",
                   help="with [ring] curve_keys: the key pair this tool uses (default ops)")
    p.add_argument("--no-state", action="store_true",
                   help="send only its URLs, not its hosts' revisit schedule and cookies")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    # Commands named as the user started this one (installed, or from a checkout).
    p.description, p.epilog = spoken(p.description or "", sys.argv[0]), spoken(p.epilog or "", sys.argv[0])
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if not args.timeout > 0:
            raise ConfigError("adopt.py", "--timeout", "expected a number of seconds > 0")
        cfg = load_config(args.ring)
        summary = trio.run(lambda: adopt(
            cfg, args.data_dir, peer_id=args.id, force=args.force, dry_run=args.dry_run,
            timeout=args.timeout, key_id=args.key_id, state=not args.no_state))
    except (PeerError, RingError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Unreachable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INCOMPLETE
    except BaseException as exc:  # Ctrl-C: alone, or in a group of the tasks it cancelled
        if user_error(exc, (KeyboardInterrupt,)) is None:
            raise
        print("\ninterrupted: run adopt.py again to finish (the owners dedupe what they already took)",
              file=sys.stderr)
        return EXIT_INCOMPLETE
    if args.json:
        doc = dataclasses.asdict(summary)
        doc["complete"] = summary.complete
        print(json.dumps(doc, indent=2, sort_keys=True))
    else:
        print("\n".join(summary.lines()))
    if not summary.complete:
        print(f"error: not acked within {args.timeout:g}s: {summary.unacked_line()}; run adopt.py "
              "again when the ring is reachable (owners dedupe what they already took)",
              file=sys.stderr)
        return EXIT_INCOMPLETE
    return 0
