"""``ring status``: this peer's own row as the crawl reports it, and the reply (pure).

``StatusFigures`` is what the crawl says of itself; ``StatusReplies`` (a
part of ``ring.node.RingNode``) puts it with the membership's gossiped
figures of the others and every drop counter into a ``StatusReply``.

The lease (``ring.lease``) is measured on the real clock, which a reply
does not read: the engine puts its ``LeaseState`` in ``StatusFigures.lease``
and the reply carries it in our own row, with our ring's version and
fingerprint. The other members' rows say ``LeaseStatus.UNKNOWN``: only a
member knows its lease, so ``ring status`` asks each one.
:func:`lease_words` is how a lease reads for an operator, in the progress
line, ``ring status`` and the dashboard alike.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ring.forwarder import Outbox
from ring.lease import LeaseState, PauseReason
from ring.membership import Membership
from ring.messages import MAX_BUSIEST, MAX_DROPPED, LeaseStatus, MemberState, MemberStatus, StatusReply
from ring.vocabulary import COUNTER_PREFIXES, on_wire, split_pairs

__all__ = ["COUNTER_PREFIXES", "StatusFigures", "StatusReplies", "lease_status", "lease_words",
           "split_counters"]


def split_counters(pairs: Iterable[tuple[str, int]]) -> tuple[tuple[tuple[str, int], ...],
                                                              tuple[tuple[str, int], ...]]:
    """(drops, counters) of a status reply's ``dropped`` pairs (``ring.vocabulary.split_pairs``)."""
    split = split_pairs(pairs)
    return split.drops, split.counters


@dataclass(frozen=True, slots=True)
class StatusFigures:
    """This peer's own row of ``ring status``, as the crawl reports it."""

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
                   lease=get("lease", None))


def lease_status(state: LeaseState | None) -> LeaseStatus:
    """How a status row names ``state`` (UNKNOWN for None)."""
    if state is None:
        return LeaseStatus.UNKNOWN
    if state.held:
        return LeaseStatus.HELD
    return LeaseStatus.GRACE if state.reason is PauseReason.GRACE else LeaseStatus.NO_MAJORITY


def lease_words(lease: LeaseStatus, vouched: int, needed: int, quorum: int, grace_left: float) -> str:
    """A lease as an operator reads it: ``held (3 of 3 vouch, 2 needed)``,
    ``paused: no majority (1 of 3 vouch, 2 needed)``, ``paused: grace (2s left)``."""
    if lease is LeaseStatus.UNKNOWN:
        return "unknown"
    if lease is LeaseStatus.GRACE:
        return f"paused: grace ({grace_left:.0f}s left)" if grace_left >= 1 else "paused: grace"
    count = f"{vouched} of {quorum} vouch, {needed} needed"
    if lease is LeaseStatus.HELD:
        return f"held ({count})"
    return f"paused: no majority ({count})"



class StatusReplies:
    """The status part of ``RingNode``: the reply to ``ring status`` and its counter rows."""

    peer_id: str
    ring_name: str
    vnodes: int
    membership: Membership
    outbox: Outbox
    dropped: Counter[str]

    def status_reply(self, nonce: int, figures: StatusFigures) -> StatusReply:
        """The answer to ``ring status``: full figures for us, gossiped ones for the others."""
        ring = self.membership.ring(self.vnodes)
        shares = ring.shares()
        lease = figures.lease
        fingerprint = self.membership.lease.ring if self.membership.lease is not None else 0
        out = []
        for mid, m in sorted(self.membership.members().items()):
            if mid == self.peer_id:
                out.append(MemberStatus(
                    id=mid, address=m.address, state=MemberState(m.state), share=shares.get(mid, 0.0),
                    pages=figures.pages, rate=figures.rate, frontier=figures.frontier, hosts=figures.hosts,
                    forwarded_out=figures.forwarded_out, forwarded_in=figures.forwarded_in,
                    dns_hit_rate=figures.dns_hit_rate, bloom_fill=figures.bloom_fill,
                    uptime=figures.uptime,
                    # The crawler's cap hits, held hosts and the like ride along
                    # (cap.*, held.*, malformed.*, polite.*), and the causes of
                    # URLs never requested (ring.vocabulary rule 5).
                    dropped=self.dropped_rows({**figures.limits, **self.forwarding_rows(),
                                               **on_wire(figures.not_requested)}),
                    errors=_capped_counts(figures.errors),
                    busiest=tuple(figures.busiest)[:MAX_BUSIEST],
                    lease=lease_status(lease),
                    vouched=lease.vouched if lease else 0, needed=lease.needed if lease else 0,
                    quorum=lease.quorum if lease else 0, grace_left=lease.grace_left if lease else 0.0,
                    ring_version=max(0, self.membership.ring_version), ring_fingerprint=fingerprint))
            else:
                out.append(MemberStatus(
                    id=mid, address=m.address, state=MemberState(m.state), share=shares.get(mid, 0.0),
                    pages=m.pages, rate=0.0, frontier=0, hosts=0, forwarded_out=m.sent,
                    forwarded_in=m.received, dns_hit_rate=0.0, bloom_fill=0.0, uptime=0.0))
        return StatusReply(self.ring_name, self.peer_id, tuple(out), nonce=nonce)

    def forwarding_rows(self) -> dict[str, int]:
        """The Outbox's frame counters, shown with the drops (``fwd.*``; the age in ms)."""
        st = self.outbox.stats()
        rows = {"fwd.frames": st.messages, "fwd.batches": st.batches, "fwd.resent": st.resent,
                "fwd.acks_piggybacked": st.acks_piggybacked, "fwd.acks_alone": st.acks_alone,
                "fwd.age_ms": round(st.age * 1000) if st.messages else 0,
                "fwd.window_waits": st.window_waits}
        return {k: v for k, v in rows.items() if v}

    def dropped_rows(self, extra: Mapping[str, int] | None = None) -> tuple[tuple[str, int], ...]:
        """Every drop counter, as the status reply carries them (at most MAX_DROPPED)."""
        return _capped_counts(self.dropped + self.membership.dropped + Counter(extra or {}))



def _capped_counts(counts: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    """Counters as a status reply carries them: at most MAX_DROPPED, the rest as "other"."""
    rows = sorted((str(k), int(v)) for k, v in counts.items())
    if len(rows) > MAX_DROPPED:
        rest = sorted(rows, key=lambda kv: -kv[1])[MAX_DROPPED - 1:]
        rows = sorted(set(rows) - set(rest)) + [("other", sum(n for _, n in rest))]
    return tuple(rows)
