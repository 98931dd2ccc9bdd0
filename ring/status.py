"""``ring status``: this peer's own row from the crawl's figures, the others' from gossip, the reply (pure).

``StatusFigures`` is what the crawl says of itself (its input, not a row);
:func:`own_row` puts it with what the ring knows of this peer into the one
row type, :class:`~ring.messages.MemberStatus`, that travels on in the
``StatusReply`` to ``ring.tools.client``, ``ring status`` (and ``--json``)
and the dashboard. :func:`gossiped_row` is another member's row, from its
gossiped record; :func:`status_reply` puts them in order.
``ring.node.RingNode.status_reply`` gathers the arguments.

The lease (``ring.membership.lease``) is measured on the real clock, which a reply
does not read: the engine puts its ``LeaseState`` in ``StatusFigures.lease``
and the reply carries it in our own row, with our ring's version and
fingerprint. The other members' rows say ``LeaseStatus.UNKNOWN``: only a
member knows its lease, so ``ring status`` asks each one.
:func:`lease_words` is how a lease reads for an operator, in the progress
line, ``ring status`` and the dashboard alike.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ring.forwarding.forwarder import OutboxStats
from ring.membership.epochs import ConfigEpoch
from ring.membership.lease import LeaseState, PauseReason
from ring.membership.voters import Survival, VoterRecord
from ring.messages import (MAX_BUSIEST, MAX_DROPPED, VERSION, LeaseStatus, Member, MemberState, MemberStatus,
                           StatusReply)
from ring.durations import duration

__all__ = ["StatusFigures", "capped_counts", "forwarding_rows", "gossiped_row", "lease_status", "lease_words",
           "own_row", "status_reply"]


@dataclass(frozen=True, slots=True)
class StatusFigures:
    """What the crawl says of itself for ``ring status``: the figures :func:`own_row` puts in our row."""

    pages: int = 0
    rate: float = 0.0
    frontier: int = 0
    hosts: int = 0
    forwarded_out: int = 0
    forwarded_in: int = 0
    dns_hit_rate: float = 0.0
    bloom_fill: float = 0.0
    uptime: float = 0.0
    limits: Mapping[str, int] = field(default_factory=dict)
    errors: Mapping[str, int] = field(default_factory=dict)  # failed requests by kind (ring.vocabulary)
    not_requested: Mapping[str, int] = field(default_factory=dict)  # URLs never requested, by cause
    busiest: Sequence[tuple[str, float, float]] = ()  # (host, pages/min, setpoint pages/min)
    lease: LeaseState | None = None  # the ring's lease now (None: not known here)
    page_cap: int = 0  # our max_pages cap now (ring.membership.budget; 0: no max_pages)
    budget_wait: bool = False  # at that cap with URLs queued: waiting for a grant
    paused: bool = False  # held by ``ring pause``: no request starts until ``ring resume``

    @classmethod
    def of(cls, figures: Any, uptime: float) -> StatusFigures:
        """From the crawl's figures, a mapping or an object with these attributes."""
        def get(name: str, default: Any) -> Any:
            if isinstance(figures, Mapping):
                return figures.get(name, default)
            return getattr(figures, name, default)

        return cls(pages=int(get("pages", 0)), rate=float(get("rate", 0.0)),
                   frontier=int(get("frontier", 0)), hosts=int(get("hosts", 0)),
                   forwarded_out=int(get("forwarded_out", 0)), forwarded_in=int(get("forwarded_in", 0)),
                   dns_hit_rate=float(get("dns_hit_rate", 0.0)), bloom_fill=float(get("bloom_fill", 0.0)),
                   uptime=uptime, limits=dict(get("limits", {}) or {}),
                   errors=dict(get("errors", {}) or {}),
                   not_requested=dict(get("not_requested", {}) or {}),
                   busiest=tuple((str(h), float(r), float(sp)) for h, r, sp in get("busiest", ()) or ()),
                   lease=get("lease", None), page_cap=int(get("page_cap", 0)),
                   budget_wait=bool(get("budget_wait", False)), paused=bool(get("paused", False)))


def lease_status(state: LeaseState | None) -> LeaseStatus:
    """How a status row names ``state`` (UNKNOWN for None)."""
    if state is None:
        return LeaseStatus.UNKNOWN
    if state.held:
        return LeaseStatus.HELD
    return LeaseStatus.GRACE if state.reason is PauseReason.GRACE else LeaseStatus.NO_MAJORITY


def lease_words(lease: LeaseStatus, vouched: int, needed: int, quorum: int, grace_left: float,
                open: bool = False) -> str:
    """A lease as an operator reads it: ``held (3 of 3 vouch, 2 needed)``,
    ``paused: no majority (1 of 3 vouch, 2 needed)``, ``paused: grace (2s left)``, and
    ``settling: moved hosts wait (2s left)`` while the hosts that kept their owner go on
    (``open``: ``ring.membership.hostgate``)."""
    if lease is LeaseStatus.UNKNOWN:
        return "unknown"
    if open and lease is not LeaseStatus.HELD:
        return (f"settling: moved hosts wait ({duration(grace_left)} left)" if grace_left >= 1
                else "settling: moved hosts wait")
    if lease is LeaseStatus.GRACE:
        return f"paused: grace ({duration(grace_left)} left)" if grace_left >= 1 else "paused: grace"
    count = f"{vouched} of {quorum} vouch, {needed} needed"
    if lease is LeaseStatus.HELD:
        return f"held ({count})"
    return f"paused: no majority ({count})"


def own_row(me: Member, share: float, figures: StatusFigures, *, dropped: tuple[tuple[str, int], ...],
            ring_version: int, fingerprint: int, voters: VoterRecord | None = None,
            survival: Survival | None = None, settings: ConfigEpoch | None = None,
            settings_waiting: bool = False) -> MemberStatus:
    """This peer's own row: its record, its share, the crawl's ``figures``, its counters
    (``dropped``: drops and counters, as :func:`capped_counts` gives them), its lease and ring,
    its voters (``ring.membership.voters``) with how many failures they survive, and its config
    epoch (``ring.membership.epochs``): the epoch, the fingerprint, paused, still waiting for the ring's."""
    lease = figures.lease
    record = voters if voters is not None else VoterRecord(0, ())
    return MemberStatus(
        id=me.id, address=me.address, state=MemberState(me.state), share=share,
        pages=figures.pages, rate=figures.rate, frontier=figures.frontier, hosts=figures.hosts,
        forwarded_out=figures.forwarded_out, forwarded_in=figures.forwarded_in,
        dns_hit_rate=figures.dns_hit_rate, bloom_fill=figures.bloom_fill, uptime=figures.uptime,
        dropped=dropped, errors=capped_counts(figures.errors), busiest=tuple(figures.busiest)[:MAX_BUSIEST],
        lease=lease_status(lease),
        vouched=lease.vouched if lease else 0, needed=lease.needed if lease else 0,
        quorum=lease.quorum if lease else 0, grace_left=lease.grace_left if lease else 0.0,
        ring_version=ring_version, ring_fingerprint=fingerprint,
        page_cap=figures.page_cap, budget_wait=figures.budget_wait,
        voters_version=record.version, voters=record.voters, voters_joint=record.joint,
        voters_alive=survival.alive if survival else 0, voters_needed=survival.needed if survival else 0,
        wire_version=VERSION,
        paused=figures.paused, config_epoch=settings.epoch if settings else 0,
        config_fingerprint=settings.fingerprint if settings else 0, config_waiting=settings_waiting,
        lease_open=bool(lease and lease.open and not lease.held))


def gossiped_row(m: Member, share: float, heard: bool = True, back_by: float = 0.0) -> MemberStatus:
    """Another member's row, as its gossiped record says: its pages and forwarding counters
    (``heard``: False for a listed peer's placeholder, never heard from; ``back_by``: when a
    restarting member's hold runs out here, in epoch seconds)."""
    return MemberStatus(
        id=m.id, address=m.address, state=MemberState(m.state), share=share, pages=m.pages, rate=0.0,
        frontier=0, hosts=0, forwarded_out=m.sent, forwarded_in=m.received, dns_hit_rate=0.0,
        bloom_fill=0.0, uptime=0.0, heard=heard, wire_version=0,  # only a member says its version
        back_by=back_by)


def status_reply(ring_name: str, peer_id: str, nonce: int, members: Mapping[str, Member],
                 shares: Mapping[str, float], own: MemberStatus,
                 unheard: Collection[str] = (), back_by: Mapping[str, float] | None = None) -> StatusReply:
    """The answer to ``ring status``: ``own`` for us, gossiped rows for the others, by id
    (``unheard``: listed peers not heard from yet; ``back_by``: restarting members' holds'
    ends, in epoch seconds)."""
    back = back_by or {}
    rows = tuple(own if mid == peer_id else gossiped_row(m, shares.get(mid, 0.0), mid not in unheard,
                                                         back.get(mid, 0.0))
                 for mid, m in sorted(members.items()))
    return StatusReply(ring_name, peer_id, rows, nonce=nonce)


def forwarding_rows(st: OutboxStats) -> dict[str, int]:
    """The Outbox's frame counters, shown with the drops (``fwd.*``; the age in ms)."""
    rows = {"fwd.frames": st.messages, "fwd.batches": st.batches, "fwd.resent": st.resent,
            "fwd.acks_piggybacked": st.acks_piggybacked, "fwd.acks_alone": st.acks_alone,
            "fwd.age_ms": round(st.age * 1000) if st.messages else 0,
            "fwd.window_waits": st.window_waits}
    return {k: v for k, v in rows.items() if v}


def capped_counts(counts: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    """Counters as a status reply carries them: at most MAX_DROPPED, the rest as "other"."""
    rows = sorted((str(k), int(v)) for k, v in counts.items())
    if len(rows) > MAX_DROPPED:
        rest = sorted(rows, key=lambda kv: -kv[1])[MAX_DROPPED - 1:]
        rows = sorted(set(rows) - set(rest)) + [("other", sum(n for _, n in rest))]
    return tuple(rows)
