"""How ``python -m ring`` shows the ring's live settings: ``status``'s line and ``set``'s answer (formatting only).

Each live member's own status row says the config epoch it runs
(``ring.membership.epochs``), its document's fingerprint, whether it is
paused and whether it still waits to hear the ring's document. Members that
agree show one epoch and one fingerprint; ``status`` names any that runs
another (a change still spreading, or a member fenced out by its lease).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from ring.messages import LeaseStatus, MemberStatus, SettingsAction, SettingsOutcome
from ring.tools.client import SettingsResult

__all__ = ["format_settings", "settings_line", "settings_summary"]


def settings_summary(rows: Sequence[MemberStatus]) -> dict[str, Any] | None:
    """The ring's settings as its live members run them (``--json``'s ``settings``): the newest
    epoch, its fingerprint, paused, and the members that run another (``others``: id -> epoch)."""
    own = [r for r in rows if r.live and r.lease is not LeaseStatus.UNKNOWN]
    if not own:
        return None
    newest = max(own, key=lambda r: (r.config_epoch, Counter(
        (o.config_epoch, o.config_fingerprint) for o in own)[(r.config_epoch, r.config_fingerprint)], r.id))
    ring = (newest.config_epoch, newest.config_fingerprint)
    others = {r.id: r.config_epoch for r in own if (r.config_epoch, r.config_fingerprint) != ring}
    return {"epoch": newest.config_epoch, "fingerprint": f"{newest.config_fingerprint:016x}",
            "paused": newest.paused, "others": others,
            "waiting": sorted(r.id for r in own if r.config_waiting)}


def settings_line(rows: Sequence[MemberStatus]) -> str | None:
    """``status``'s line about the settings, under the table."""
    s = settings_summary(rows)
    if s is None:
        return None
    text = f"settings: epoch {s['epoch']} ({s['fingerprint']}){', PAUSED by ring pause' if s['paused'] else ''}"
    if s["others"]:
        text += "; another epoch at: " + ", ".join(
            f"{mid} (epoch {e}{', other document' if e == s['epoch'] else ''})" for mid, e in sorted(s["others"].items()))
    if s["waiting"]:
        text += "; waiting for the ring's settings: " + ", ".join(s["waiting"])
    return text


_WORDS = {
    SettingsOutcome.STALE: "the settings changed since the ring was asked: run the command again",
    SettingsOutcome.NO_LEASE: "it holds no lease under its settings (no majority runs its epoch yet): run the "
                              "command again in a moment",
    SettingsOutcome.LEAVING: "it is leaving the ring",
    SettingsOutcome.NOT_STEWARD: "it is not the ring's steward (its lowest live id) in its own view: run the "
                                 "command again",
}


def format_settings(action: SettingsAction, result: SettingsResult) -> tuple[str, int]:
    """``set``/``pause``/``resume``'s lines and exit status: 0 done (every live member runs the
    epoch) or nothing to do, 1 refused or not acked in time, 2 the operator's mistake."""
    if result.steward is None:
        return "no peer answered: are the peers running?", 1
    if result.outcome is None:
        return f"the steward {result.steward} did not answer; nothing changed", 1
    if result.outcome is SettingsOutcome.INVALID:
        return f"refused by {result.steward}: {result.detail}", 2
    if result.outcome is SettingsOutcome.ALREADY:
        return f"nothing to change: the ring's settings say so already (epoch {result.epoch})", 0
    if result.outcome is not SettingsOutcome.CHANGED:
        return f"refused by {result.steward}: {_WORDS[result.outcome]}", 1
    what = {SettingsAction.PAUSE: "paused", SettingsAction.RESUME: "resumed",
            SettingsAction.SET: "set"}[action]
    if result.behind:
        return (f"{result.steward} made epoch {result.epoch}, but not every live member runs it yet: "
                f"{', '.join(result.behind)}; see python -m ring status"), 1
    return f"epoch {result.epoch}: {what} at every live member", 0
