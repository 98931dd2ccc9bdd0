"""``ring restart`` of a peer that cannot announce its own restart: what the operator reads (ring.tools)."""

from __future__ import annotations

from clirun import ring_main

from ring.messages import HoldOutcome, MemberState, MemberStatus
from ring.tools.cli import format_restart
from ring.tools.client import RestartOutcome, RestartResult, cannot_announce

HELD = HoldOutcome.HELD


def _row(pid: str, wire_version: int) -> MemberStatus:
    return MemberStatus(pid, f"tcp://a:{pid[1:]}", MemberState.ALIVE, 0.2, 0, 0.0, 0, 0, 0, 0, 0.0, 0.0, 0.0,
                        wire_version=wire_version)


def test_a_peer_of_wire_version_3_cannot_announce_and_one_that_did_not_answer_is_not_judged():
    assert cannot_announce(_row("p4", 3))
    assert not cannot_announce(_row("p1", 4))
    assert not cannot_announce(_row("p9", 0))  # no row of its own: its version is not known


def test_ring_restart_of_a_held_peer_says_who_holds_it_and_what_to_do():
    text, ok = format_restart("p4", RestartResult(RestartOutcome.HELD, "restarting", 1_000_060.0,
                                                  (("p1", HELD), ("p2", HELD)), 3), 60)
    assert ok and "wire version 3" in text and "held by p1, p2" in text and "back by" in text
    assert "stop it now and start it again" in text
    text, ok = format_restart("p4", RestartResult(RestartOutcome.PART_HELD, "alive", 1_000_060.0,
                                                  (("p1", HELD), ("p2", None), ("p3", HoldOutcome.NOT_ALIVE)), 3), 60)
    assert not ok and text.startswith("error: ") and "p2: no answer" in text and "p3: not_alive" in text
    text, ok = format_restart("p4", RestartResult(RestartOutcome.NO_HOLDER, "alive", wire_version=3), 60)
    assert not ok and "no other live peer of this release" in text
    text, ok = format_restart("p4", RestartResult(RestartOutcome.BACK, "alive", 0.0, (("p1", HELD),), 3), 60)
    assert ok and "back" in text


def test_ring_restart_help_says_how_an_older_peer_is_restarted():
    res = ring_main(["restart", "--help"])
    assert res.returncode == 0
    text = " ".join(res.stdout.split())
    assert "wire version 3" in text and "--hold" in text and "held at the operator's word" in text
