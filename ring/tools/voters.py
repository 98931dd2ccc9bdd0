"""How ``python -m ring`` shows the ring's voters: ``status``'s line and ``voter``'s answer (formatting only).

The voters (``ring.membership.voters``) are what a lease counts; each live
member's own status row carries its record and, in its view, the voters
alive and the majority needed. The figure an operator needs is how many
voters can fail while a majority of voters stays alive: ``alive - needed``
for the set closest to losing it, 0 at the edge (one more failure pauses
the ring), and a warning then, and when no majority is alive at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ring.messages import MemberStatus, VoterAction, VoterOutcome
from ring.tools.client import VoterResult

__all__ = ["format_voter", "voters_line", "voters_summary"]


def voters_summary(rows: Sequence[MemberStatus]) -> dict[str, Any] | None:
    """The ring's voters as the live members that answered hold them, and how many voter failures
    the ring survives (``--json``'s ``voters``); None when no member said."""
    own = [r for r in rows if r.live and r.voters_needed]
    if not own:
        return None
    newest = max(own, key=lambda r: (r.voters_version, r.id))
    survives = min(max(0, r.voters_alive - r.voters_needed) for r in own)
    majority = all(r.voters_alive >= r.voters_needed for r in own)
    versions = sorted({r.voters_version for r in own})
    return {"version": newest.voters_version, "voters": list(newest.voters), "joint": list(newest.voters_joint),
            "alive": newest.voters_alive, "needed": newest.voters_needed, "survives": survives,
            "majority": majority, "agree": len(versions) == 1,
            "warning": _survival_warning(survives, majority)}


def _survival_warning(survives: int, majority: bool) -> str | None:
    if not majority:
        return "no majority of the voters is alive: no request starts"
    if survives == 0:
        return ("the ring survives no failure: losing one more voter pauses it; make a live member "
                "a voter (python -m ring voter add ID)")
    return None


def voters_line(rows: Sequence[MemberStatus]) -> str | None:
    """``status``'s line about the voters, under the table."""
    v = voters_summary(rows)
    if v is None:
        return None
    joint = f"{', '.join(v['joint'])} -> " if v["joint"] else ""
    text = (f"voters: {joint}{', '.join(v['voters'])} (version {v['version']}"
            f"{', changing' if v['joint'] else ''}): {v['alive']} alive, {v['needed']} needed; "
            f"survives {v['survives']} voter failure{'s' if v['survives'] != 1 else ''}")
    if not v["agree"]:
        text += " (members hold different versions: a change is spreading)"
    if v["warning"]:
        text += f"\nWARNING: {v['warning']}"
    return text


_VOTER_WORDS = {
    VoterOutcome.STALE: "the voters changed since the ring was asked: run the command again",
    VoterOutcome.BUSY: "a change is under way: wait for it to settle (python -m ring status)",
    VoterOutcome.NO_LEASE: "it holds no lease (no majority of the voters vouches for its ring)",
    VoterOutcome.NOT_LIVE: "the member is not alive in its view",
    VoterOutcome.LAST_VOTER: "a ring needs one voter at least",
    VoterOutcome.LEAVING: "it is leaving the ring",
    VoterOutcome.NOT_STEWARD: "it is not the ring's steward (its lowest live id) in its own view: run the "
                              "command again",
}


def format_voter(action: VoterAction, target: str, result: VoterResult) -> tuple[str, bool]:
    """``ring voter``'s lines, and whether it succeeded (exit 0)."""
    if result.steward is None:
        return "no peer answered: are the peers running?", False
    if result.outcome is None:
        return f"the steward {result.steward} did not answer; nothing changed", False
    if result.outcome is VoterOutcome.ALREADY:
        what = "a voter already" if action is VoterAction.ADD else "not a voter"
        return f"{target} is {what}: nothing to change", True
    if result.outcome is not VoterOutcome.CHANGING:
        return f"refused by {result.steward}: {_VOTER_WORDS[result.outcome]}", False
    done = "a voter" if action is VoterAction.ADD else "retired (a learner)"
    lines = [f"{result.steward} made the change (version {result.version})"]
    if not result.settled:
        lines.append("not settled at every live member yet; see python -m ring status")
        return "\n".join(lines), False
    lines.append(f"{target} is {done} at every live member")
    line = voters_line(result.rows)
    if line:
        lines.append(line)
    return "\n".join(lines), True
