"""ring.handoff's HandOffs alone, through the three small interfaces it is given (Members, Sends, Channels).

The part owns the ring of the last change and the hand-off records; these
stand-ins are all it can reach. tests/ring/test_node.py and test_heal.py run
it inside RingNode and whole fake rings.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Container, Mapping

import pytest

from ring.actions import HandOff, Log, Rerouted, RingChanged, Send
from ring.forwarding.forwarder import Entries
from ring.handoff import HANDOFF_TIMEOUT, MARKER_ROUNDS, HandOffs
from ring.hashring import HashRing
from ring.messages import Digest, HandoffDone, HostStarts, Member, MemberState

R = "r"


class Members:
    """A membership whose records the test sets."""

    def __init__(self, *ids: str) -> None:
        self.records = {m: Member(m, f"tcp://a/{m}", 1, MemberState.ALIVE, 1.0) for m in ids}
        self.ring_version = 0

    def set(self, mid: str, state: MemberState) -> None:
        self.records[mid] = Member(mid, f"tcp://a/{mid}", self.records[mid].incarnation, state, 1.0)
        self.ring_version += 1

    @property
    def me(self) -> Member:
        return self.records["p1"]

    def ring(self, vnodes: int) -> HashRing:
        return HashRing(self.live(), vnodes=vnodes)

    def members(self) -> Mapping[str, Member]:
        return self.records

    def live(self) -> dict[str, float]:
        return {m: r.weight for m, r in self.records.items()
                if r.state in (MemberState.ALIVE, MemberState.SUSPECT)}


class Sends:
    """An Outbox that numbers barriers and acks them when told."""

    def __init__(self, back: Entries = Entries([], [])) -> None:
        self.back = back
        self.acked: dict[str, int] = {}
        self.rerouted_with: list[set[str]] = []

    def reroute(self, owner_of: Callable[[str], str], now: float, *, members: Container[str],
                left: Container[str] = ()) -> Entries:
        self.rerouted_with.append({m for m in ("p1", "p2", "p3") if m in members})
        back, self.back = self.back, Entries([], [])
        return back

    def barrier(self, dest: str) -> int:
        return 10

    def acked_through(self, dest: str, seq: int) -> bool:
        return self.acked.get(dest, -1) >= seq


class Channels:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def forget(self, sender: str) -> None:
        self.calls.append(("forget", sender))

    def reopen(self, sender: str) -> None:
        self.calls.append(("reopen", sender))


def part(members: Members, sends: Sends | None = None, channels: Channels | None = None,
         dropped: Counter[str] | None = None) -> HandOffs:
    return HandOffs("p1", R, 16, members=members, sends=sends or Sends(), channels=channels or Channels(),
                    owner_key=lambda url: url, dropped=dropped if dropped is not None else Counter())


def test_the_first_ring_is_only_told_and_a_change_starts_a_hand_off():
    members, channels = Members("p1", "p2", "p3"), Channels()
    sends = Sends(Entries([("http://x.test/", 1)], ["http://x.test/seen"]))
    h = part(members, sends, channels)
    out = h.check(0.0)
    assert [type(a) for a in out] == [Log, RingChanged, Rerouted]  # no hand-off from no ring
    assert out[1] == RingChanged(h.ring, None) and set(h.ring) == {"p1", "p2", "p3"}
    assert out[2] == Rerouted((("http://x.test/", 1),), ("http://x.test/seen",))
    assert sorted(channels.calls) == [("reopen", "p1"), ("reopen", "p2"), ("reopen", "p3")]
    assert h.check(0.1) == []  # no change, nothing to say
    first = h.ring
    members.set("p3", MemberState.DEAD)
    out = h.check(1.0)
    assert out[-1] == HandOff(first, h.ring, 1) and h.handing_off == 1
    assert ("forget", "p3") in channels.calls and sends.rerouted_with[-1] == {"p1", "p2"}


def test_a_left_members_channel_stays_summed():
    members, channels = Members("p1", "p2", "p3"), Channels()
    h = part(members, channels=channels)
    h.check(0.0)
    members.set("p3", MemberState.LEFT)
    h.check(1.0)
    assert ("forget", "p3") not in channels.calls  # rule 1: a leaver's counters stay


def test_each_new_owner_is_told_once_its_barrier_is_acked_then_the_markers_repeat():
    members, sends, dropped = Members("p1", "p2", "p3"), Sends(), Counter()
    h = part(members, sends, dropped=dropped)
    h.check(0.0)
    members.set("p3", MemberState.DEAD)
    [*_, handoff] = h.check(1.0)
    assert h.begin(handoff.version, 5, {"p2": [("moved.test", 1.5)]}, 1.0) == []  # p2 has not acked
    sends.acked["p2"] = 10
    out = h.progress(1.2)
    assert out[0] == Send("p2", HostStarts(R, "p1", (("moved.test", 1.5),)))  # before HandoffDone
    assert out[1] == Send("p2", HandoffDone(R, "p1", ("p1", "p2")))
    assert h.handing_off == 0 and h.ended == [(5, pytest.approx(0.2))] and dropped["handoffs_done"] == 1
    repeats = [h.progress(2.0 + i, marker_round=True) for i in range(MARKER_ROUNDS)]
    assert [len(r) for r in repeats] == [1] * (MARKER_ROUNDS - 1) + [0]


def test_a_hand_off_never_read_is_given_up_and_counted():
    members, dropped = Members("p1", "p2", "p3"), Counter()
    h = part(members, dropped=dropped)
    h.check(0.0)
    members.set("p3", MemberState.DEAD)
    h.check(1.0)
    h.progress(1.0 + HANDOFF_TIMEOUT)
    assert h.handing_off == 0 and (dropped["handoff_unread"], dropped["handoffs_gave_up"]) == (1, 1)


def test_a_refuted_death_with_no_hand_off_open_retells_handoff_done():
    members = Members("p1", "p2")
    h = part(members)
    h.check(0.0)
    dead_me = Member("p1", "tcp://a/p1", 1, MemberState.DEAD, 1.0)
    h.note_claims(Digest(R, "p2", (dead_me,)))
    members.records["p1"] = Member("p1", "tcp://a/p1", 2, MemberState.ALIVE, 1.0)  # we refuted
    assert h.check(1.0) == [] and len(h.records) == 1  # rule 4: markers, no new hand-off
    out = h.progress(1.1, marker_round=True)
    assert out == [Send("p2", HandoffDone(R, "p1", ("p1", "p2")))]
