"""``ring restart`` and ``ring status`` for a planned restart: what the operator reads (ring.tools)."""

from __future__ import annotations

from ring.messages import MemberState, MemberStatus
from ring.tools.cli import format_restart
from ring.tools.client import RestartOutcome, RestartResult
from ring.tools.statustable import format_status, hhmmss


def _row(pid: str, state: MemberState, back_by: float = 0.0) -> MemberStatus:
    return MemberStatus(pid, f"tcp://a:{pid[1:]}", state, 0.2, 0, 0.0, 0, 0, 0, 0, 0.0, 0.0, 0.0,
                        back_by=back_by)


def test_ring_status_says_when_a_restarting_member_is_back_by():
    text = format_status([_row("p1", MemberState.ALIVE), _row("p2", MemberState.RESTARTING, 1_000_020.0)])
    lines = text.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("p2 "))
    assert lines[row].split()[1] == "restarting"
    assert f"restarting (back by {hhmmss(1_000_020.0)})" in lines[row + 1]
    assert "back by" not in lines[row - 1]


def test_ring_restart_says_what_became_of_the_request():
    from ring.tools.cli import format_restart
    from ring.tools.client import RestartOutcome, RestartResult

    ok = format_restart("p2", RestartResult(RestartOutcome.RESTARTING, "restarting", 1_000_020.0), 60)
    assert ok[1] and "keeps its hosts" in ok[0] and "back by" in ok[0]
    assert format_restart("p2", RestartResult(RestartOutcome.BACK, "alive"), 60)[1]
    for outcome in (RestartOutcome.STOPPING, RestartOutcome.NOT_HELD, RestartOutcome.NOT_LIVE,
                    RestartOutcome.UNKNOWN):
        text, good = format_restart("p2", RestartResult(outcome, "dead"), 60)
        assert not good and text.startswith("error: ")
