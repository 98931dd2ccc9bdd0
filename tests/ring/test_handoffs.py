"""ring.handoff's HandOffs alone, through the three small interfaces it is given (Members, Sends, Channels).

The part owns the ring of the last change and the hand-off records; these
stand-ins are all it can reach. tests/ring/test_node.py and test_heal.py run
it inside RingNode and whole fake rings.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Container, Mapping

import pytest

from ring.actions import HandOff, Log, Released, Rerouted, RingChanged, Send
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

    def set(self, mid: str, state: MemberState, incarnation: int | None = None) -> None:
        inc = self.records[mid].incarnation if incarnation is None else incarnation
        self.records[mid] = Member(mid, f"tcp://a/{mid}", inc, state, 1.0)
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


def started(h: HandOffs, sends: Sends, now: float = 0.0) -> list:
    """The first ring (rule 6), its hand-off read and acked by everyone: what it said."""
    out = h.check(now)
    assert isinstance(out[-1], HandOff)
    h.begin(out[-1].version, 0, {}, now)
    sends.acked = {m: 10 for m in h.ring if m != "p1"}
    told = h.progress(now)
    sends.acked = {}
    return out + told


def test_the_first_ring_hands_over_from_ourselves_alone_and_a_change_starts_a_hand_off():
    members, channels = Members("p1", "p2", "p3"), Channels()
    sends = Sends(Entries([("http://x.test/", 1)], ["http://x.test/seen"]))
    h = part(members, sends, channels)
    out = h.check(0.0)
    assert [type(a) for a in out] == [Log, RingChanged, Rerouted, HandOff]
    assert out[1] == RingChanged(h.ring, None) and set(h.ring) == {"p1", "p2", "p3"}
    assert out[2] == Rerouted((("http://x.test/", 1),), ("http://x.test/seen",))
    # Rule 6: what this process holds of hosts not its own goes, as if all were its own before.
    assert out[3] == HandOff(HashRing({"p1": 1.0}, 16), h.ring, 0) and h.handing_off == 1
    assert sorted(channels.calls) == [("reopen", "p1"), ("reopen", "p2"), ("reopen", "p3")]
    assert h.check(0.1) == []  # no change, nothing to say
    first = h.ring
    members.set("p3", MemberState.DEAD)
    out = h.check(1.0)
    assert out[-1] == HandOff(first, h.ring, 1) and h.handing_off == 2
    assert ("forget", "p3") in channels.calls and sends.rerouted_with[-1] == {"p1", "p2"}


def test_a_new_process_tells_every_member_handoff_done_at_its_first_ring_once_each_acked():
    """Rule 6: a restarted peer's word to each member, its incarnation on it (rule 7)."""
    members, sends = Members("p1", "p2", "p3"), Sends()
    h = part(members, sends)
    [*_, handoff] = h.check(0.0)
    assert h.begin(handoff.version, 0, {}, 0.1) == []  # nobody acked yet
    sends.acked["p3"] = 10
    assert h.progress(0.2) == [Send("p3", HandoffDone(R, "p1", ("p1", "p2", "p3"), 1))]
    sends.acked["p2"] = 10
    assert h.progress(0.3) == [Send("p2", HandoffDone(R, "p1", ("p1", "p2", "p3"), 1))]
    assert h.handing_off == 0
    # Told once: a ring's cold start costs one marker a pair of peers, not five.
    assert h.progress(0.5, marker_round=True) == [] and h.records == ()


def test_a_member_told_before_we_heard_from_it_is_told_once_more_when_heard():
    """Rule 6: before it is heard from, a frame to it is version 3, without rule 7's incarnation."""
    members, sends, heard = Members("p1", "p2", "p3"), Sends(), {"p2"}
    h = HandOffs("p1", R, 16, members=members, sends=sends, channels=Channels(), owner_key=lambda url: url,
                 dropped=Counter(), heard=heard.__contains__)
    [*_, handoff] = h.check(0.0)
    marker = HandoffDone(R, "p1", ("p1", "p2", "p3"), 1)
    assert h.begin(handoff.version, 0, {}, 0.1, seen_to=()) == [Send("p2", marker), Send("p3", marker)]
    assert h.progress(0.6, marker_round=True) == []  # no repeats
    heard.add("p3")
    assert h.progress(1.0, marker_round=True) == [Send("p3", marker)]  # once more, now at its version
    assert h.progress(1.5, marker_round=True) == [] and h.records == ()


def test_at_the_first_ring_a_member_given_no_seen_urls_is_told_without_waiting_for_its_other_urls():
    members, sends = Members("p1", "p2", "p3"), Sends()
    h = part(members, sends)
    [*_, handoff] = h.check(0.0)
    # p3's barrier would wait for URLs queued to it (a resumed queue's): not at the first ring.
    out = h.begin(handoff.version, 1, {}, 0.1, seen_to={"p2"})
    assert out == [Send("p3", HandoffDone(R, "p1", ("p1", "p2", "p3"), 1))]
    sends.acked["p2"] = 10
    assert h.progress(0.2)[0] == Send("p2", HandoffDone(R, "p1", ("p1", "p2", "p3"), 1))
    # Any later hand-off waits for each member's barrier.
    members.set("p3", MemberState.DEAD)
    [*_, later] = h.check(1.0)
    sends.acked = {}
    assert h.begin(later.version, 0, {}, 1.0, seen_to=set()) == [] and h.handing_off == 1


def test_a_marker_from_a_later_life_is_kept_until_our_ring_holds_that_life_alive():
    """Rule 7: p2 restarted; its marker came before its return, and is taken with the return."""
    members, sends = Members("p1", "p2", "p3"), Sends()
    h = part(members, sends)
    started(h, sends)
    members.set("p2", MemberState.DEAD)
    h.check(1.0)
    assert set(h.ring) == {"p1", "p3"}
    h.early(HandoffDone(R, "p2", ("p1", "p2", "p3"), 7))
    assert h.check(1.5) == []  # kept: p2 is still dead here
    members.set("p2", MemberState.ALIVE, incarnation=7)
    out = h.check(2.0)
    changed = next(i for i, a in enumerate(out) if isinstance(a, RingChanged))
    assert out[-1] == Released("p2") and changed < len(out) - 1  # after the ring that brings p2 back
    members.set("p2", MemberState.DEAD)
    members.set("p2", MemberState.ALIVE)
    assert Released("p2") not in h.check(3.0)  # taken once


def test_a_kept_marker_is_dropped_for_a_later_incarnation_and_waits_for_its_own_view():
    members, sends = Members("p1", "p2", "p3"), Sends()
    h = part(members, sends)
    started(h, sends)
    members.set("p2", MemberState.DEAD)
    members.set("p3", MemberState.DEAD)
    h.check(1.0)
    h.early(HandoffDone(R, "p2", ("p1", "p2", "p3"), 7))
    members.set("p2", MemberState.ALIVE, incarnation=7)
    assert Released("p2") not in h.check(2.0)  # our ring is p1, p2: another view, kept
    members.set("p3", MemberState.ALIVE)
    assert h.check(3.0)[-1] == Released("p2")  # now it is the view it names
    members.set("p2", MemberState.DEAD)
    h.check(4.0)
    h.early(HandoffDone(R, "p2", ("p1", "p2", "p3"), 8))
    members.set("p2", MemberState.ALIVE, incarnation=9)  # refuted again since: its own markers count
    assert Released("p2") not in h.check(5.0)
    members.set("p2", MemberState.DEAD)
    members.set("p2", MemberState.ALIVE, incarnation=8)
    assert Released("p2") not in h.check(6.0)  # dropped, not kept for an older record


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
    started(h, sends)
    assert dropped["handoffs_done"] == 1  # the first ring's (rule 6)
    members.set("p3", MemberState.DEAD)
    [*_, handoff] = h.check(1.0)
    assert h.begin(handoff.version, 5, {"p2": [("moved.test", 1.5)]}, 1.0) == []  # p2 has not acked
    sends.acked["p2"] = 10
    out = h.progress(1.2)
    assert out[0] == Send("p2", HostStarts(R, "p1", (("moved.test", 1.5),)))  # before HandoffDone
    assert out[1] == Send("p2", HandoffDone(R, "p1", ("p1", "p2"), 1))
    assert h.handing_off == 0 and h.ended[-1] == (5, pytest.approx(0.2)) and dropped["handoffs_done"] == 2
    repeats = [h.progress(2.0 + i, marker_round=True) for i in range(MARKER_ROUNDS)]
    assert [len(r) for r in repeats] == [1] * (MARKER_ROUNDS - 1) + [0]


def test_a_hand_off_never_read_is_given_up_and_counted():
    members, sends, dropped = Members("p1", "p2", "p3"), Sends(), Counter()
    h = part(members, sends, dropped=dropped)
    started(h, sends)
    members.set("p3", MemberState.DEAD)
    h.check(1.0)
    h.progress(1.0 + HANDOFF_TIMEOUT)
    assert h.handing_off == 0 and (dropped["handoff_unread"], dropped["handoffs_gave_up"]) == (1, 1)


def test_a_refuted_death_with_no_hand_off_open_retells_handoff_done():
    members, sends = Members("p1", "p2"), Sends()
    h = part(members, sends)
    started(h, sends)
    for _ in range(MARKER_ROUNDS):
        h.progress(0.5, marker_round=True)  # the first ring's markers, over
    assert h.records == ()
    dead_me = Member("p1", "tcp://a/p1", 1, MemberState.DEAD, 1.0)
    h.note_claims(Digest(R, "p2", (dead_me,)))
    members.records["p1"] = Member("p1", "tcp://a/p1", 2, MemberState.ALIVE, 1.0)  # we refuted
    assert h.check(1.0) == [] and len(h.records) == 1  # rule 4: markers, no new hand-off
    out = h.progress(1.1, marker_round=True)
    assert out == [Send("p2", HandoffDone(R, "p1", ("p1", "p2"), 2))]  # our incarnation now (rule 7)


def test_a_death_claimed_at_an_incarnation_we_already_refuted_retells_handoff_done():
    # A member declared us dead at our old incarnation while our refutation of its
    # suspicion was on its way: it sees us back from dead when that refutation
    # comes, and holds every host it owns for our marker (peer.core.handoff.holds
    # rule 5), though our incarnation does not move again. Seen on a loaded ring:
    # "no hand-off from p1 6s after it came back from dead" (hold_timeout).
    members, sends = Members("p1", "p2"), Sends()
    h = part(members, sends)
    started(h, sends)
    for _ in range(MARKER_ROUNDS):
        h.progress(0.5, marker_round=True)
    members.records["p1"] = Member("p1", "tcp://a/p1", 2, MemberState.ALIVE, 1.0)  # refuted a suspicion
    assert h.check(0.8) == [] and h.records == ()  # a suspect keeps its hosts: nothing to tell
    h.note_claims(Digest(R, "p2", (Member("p1", "tcp://a/p1", 1, MemberState.DEAD, 1.0),)))
    assert h.check(1.0) == []
    out = h.progress(1.1, marker_round=True)
    assert out == [Send("p2", HandoffDone(R, "p1", ("p1", "p2"), 2))]


def test_a_new_process_told_its_old_life_is_dead_repeats_its_first_rings_marker():
    # Rule 6's marker is sent once; a member that held our old life dead when it
    # came (another view, or before it saw us back) would wait hold_timeout for
    # another. Its gossip says so: the old life is dead there.
    members, sends = Members("p1", "p2", "p3"), Sends()
    h = part(members, sends)
    started(h, sends)
    h.note_claims(Digest(R, "p2", (Member("p1", "tcp://a/p1", 0, MemberState.DEAD, 1.0),)))
    assert h.check(0.2) == []
    for _ in range(MARKER_ROUNDS):
        assert h.progress(0.3, marker_round=True) == [
            Send(m, HandoffDone(R, "p1", ("p1", "p2", "p3"), 1)) for m in ("p2", "p3")]
    assert h.progress(0.4, marker_round=True) == [] and h.records == ()


def test_a_death_claimed_while_our_hand_off_waits_repeats_its_markers_to_those_told():
    members, sends = Members("p1", "p2", "p3"), Sends()
    h = part(members, sends)
    out = h.check(0.0)
    h.begin(out[-1].version, 0, {}, 0.0)
    sends.acked = {"p2": 10}  # p3 has not acked yet
    assert h.progress(0.1) == [Send("p2", HandoffDone(R, "p1", ("p1", "p2", "p3"), 1))]
    h.note_claims(Digest(R, "p2", (Member("p1", "tcp://a/p1", 0, MemberState.DEAD, 1.0),)))
    assert h.check(0.2) == []
    sends.acked["p3"] = 10
    assert h.progress(0.3) == [Send("p3", HandoffDone(R, "p1", ("p1", "p2", "p3"), 1))]
    repeated = h.progress(0.4, marker_round=True)
    assert repeated == [Send(m, HandoffDone(R, "p1", ("p1", "p2", "p3"), 1)) for m in ("p2", "p3")]
