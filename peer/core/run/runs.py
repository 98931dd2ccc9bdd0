"""Runs: whether a peer with earlier crawl state resumes it, starts fresh, asks, or refuses.

Pure: the command line reads the run record (``peer.state.journal.read_run``) and the
terminal's presence, and this module decides. The rules, in order:

1. ``--fresh`` starts over (the command line still confirms the deletion);
   ``--resume`` continues the state, whatever it is, and any change of scope or
   seeds since it was written is reported.
2. No crawl state: a new crawl.
3. On a terminal, the peer asks (resume, fresh, or quit), saying how the last
   run ended and what changed.
4. Without a terminal, an *interrupted* run with the same scope and seeds is
   resumed: the same command after ``kill -9``, a reboot or a supervisor's
   restart must pick up where it stopped (peer/state/journal.py's promise).
   So is a run that *left the ring* (a graceful leave: ``--leave`` and the
   SIGTERM of a service manager's stop, or ``python -m ring leave``): a leave
   is a clean stop, and the same command must start again. Resuming is what
   is safe: the peer rejoins at a new incarnation and takes its share of the
   hosts back from the peers it handed them to, with their queued and
   fetched URLs (``ring.handoff``); its seen set is rebuilt from its own rows
   (``peer.core.door.persistence.Persistence.forget_handed_over``), so it
   fetches none of its pages again and drops none of the URLs it handed
   over; its results stay. Starting fresh would delete its results (maybe
   the only copy) and is never done without ``--fresh``.
5. Without a terminal, anything else is refused in one line naming
   ``--resume`` and ``--fresh``: a *finished* crawl resumed would end at once
   with 0 pages (every URL it knew is in its Bloom filter), and a crawl whose
   scope or seeds changed would silently not revisit the pages whose links
   were out of scope before. Deleting results without being asked (Crawlee's
   purge on start) would be worse than one line: the results may be the only
   copy.

A state written before run records existed has none: it is treated as an
interrupted run of unknown scope (rule 4), which is what it was resumed as then.

A run *finished* when it ended by itself: the frontier ran empty, the cluster
was done, ``max_pages`` was reached, or the peer left the ring. A stop by
signal, a crash or a kill is *interrupted*.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Choice", "Decision", "Fingerprint", "RunRecord", "FINISHED_REASONS", "LEFT_REASON", "decide"]

#: Stop reasons (``Summary.stop_reason``) of a run that ended by itself.
FINISHED_REASONS = frozenset({"frontier empty", "cluster done", "max_pages reached", "left the ring"})
#: The stop reason of a graceful leave: finished, yet resumed by the same command (rule 4).
LEFT_REASON = "left the ring"


class Choice(enum.Enum):
    NEW = "new"          # no state: a new crawl
    RESUME = "resume"
    FRESH = "fresh"      # delete data_dir first (after confirmation)
    ASK = "ask"          # a terminal: ask the user
    REFUSE = "refuse"    # no terminal: one line, exit 2


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """What decides which URLs a crawl reaches: its scope (hosts, depth, URL rules) and its seeds."""

    seeds: tuple[str, ...]
    allow_hosts: tuple[str, ...]
    deny_hosts: tuple[str, ...]
    max_depth: int
    # crawl.rules: the include/exclude rules judge every link as the scope
    # does. None: a record written before they were kept (no change said).
    rules: tuple[str, ...] | None = None
    # crawl.allow_domains: hosts in scope beside allow_hosts. None: a record
    # written before they were kept (no change said).
    allow_domains: tuple[str, ...] | None = None

    @classmethod
    def of(cls, crawl: Any) -> Fingerprint:
        """The fingerprint of a ``CrawlConfig``."""
        return cls(tuple(crawl.seeds), tuple(crawl.allow_hosts), tuple(crawl.deny_hosts),
                   int(crawl.max_depth), tuple(crawl.rules), tuple(crawl.allow_domains))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seeds": list(self.seeds), "allow_hosts": list(self.allow_hosts),
                               "deny_hosts": list(self.deny_hosts), "max_depth": self.max_depth}
        if self.rules is not None:
            out["rules"] = list(self.rules)
        if self.allow_domains is not None:
            out["allow_domains"] = list(self.allow_domains)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Fingerprint:
        rules = d.get("rules")
        domains = d.get("allow_domains")
        return cls(tuple(d["seeds"]), tuple(d["allow_hosts"]), tuple(d["deny_hosts"]),
                   int(d["max_depth"]), tuple(str(r) for r in rules) if isinstance(rules, list) else None,
                   tuple(str(x) for x in domains) if isinstance(domains, list) else None)

    def changes(self, now: Fingerprint) -> tuple[str, ...]:
        """What changed from this (the state's) to ``now`` (the config's), one phrase each."""
        out = []
        for name in ("seeds", "allow_hosts", "deny_hosts", "allow_domains"):
            before, after = getattr(self, name), getattr(now, name)
            if before is None or after is None:
                continue  # allow_domains of a record written before it was kept
            if set(before) != set(after):
                added = [x for x in after if x not in before]
                gone = [x for x in before if x not in after]
                parts = ([f"+{_short(added)}"] if added else []) + ([f"-{_short(gone)}"] if gone else [])
                out.append(f"crawl.{name} {' '.join(parts)}")
        if self.max_depth != now.max_depth:
            out.append(f"crawl.max_depth {self.max_depth} -> {now.max_depth}")
        if self.rules is not None and now.rules is not None and self.rules != now.rules:
            # Order matters here: the first rule that matches decides.
            added = [x for x in now.rules if x not in self.rules]
            gone = [x for x in self.rules if x not in now.rules]
            parts = ([f"+{_short(added)}"] if added else []) + ([f"-{_short(gone)}"] if gone else [])
            out.append(f"crawl.rules {' '.join(parts) or 'reordered'}")
        return tuple(out)


def _short(items: list[str], most: int = 3) -> str:
    shown = ", ".join(items[:most])
    return f"[{shown}{f', ... {len(items) - most} more' if len(items) > most else ''}]"


@dataclass(frozen=True, slots=True)
class RunRecord:
    """The last run on a crawl state (``data_dir/state/run.json``)."""

    fingerprint: Fingerprint
    runs: int                 # runs on this state so far, this one included
    started: float            # epoch seconds
    ended: float | None       # None: still running, or killed
    stop_reason: str          # "" while running or after a kill
    pages: int                # pages this run fetched (0 while running)

    @property
    def finished(self) -> bool:
        """Ended by itself (the module docstring)."""
        return self.ended is not None and self.stop_reason in FINISHED_REASONS

    @property
    def left(self) -> bool:
        """Ended by a graceful leave (rule 4: the same command resumes it)."""
        return self.ended is not None and self.stop_reason == LEFT_REASON

    def how_it_ended(self) -> str:
        if self.ended is None:
            return "was interrupted (killed or crashed)"
        if self.left:
            return f"left the ring gracefully ({self.pages} pages); rejoining it"
        if self.finished:
            return f"finished ({self.stop_reason}, {self.pages} pages)"
        return f"was stopped ({self.stop_reason}, {self.pages} pages)"

    def to_dict(self) -> dict[str, Any]:
        return {"fingerprint": self.fingerprint.to_dict(), "runs": self.runs,
                "started": self.started, "ended": self.ended,
                "stop_reason": self.stop_reason, "pages": self.pages}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunRecord:
        """Raises KeyError, TypeError or ValueError for a malformed record."""
        ended = d["ended"]
        return cls(Fingerprint.from_dict(d["fingerprint"]), int(d["runs"]), float(d["started"]),
                   None if ended is None else float(ended), str(d["stop_reason"]), int(d["pages"]))

    def starting(self, fingerprint: Fingerprint, now: float) -> RunRecord:
        """The record of the next run on this state."""
        return RunRecord(fingerprint, self.runs + 1, now, None, "", 0)

    def ending(self, now: float, stop_reason: str, pages: int) -> RunRecord:
        return RunRecord(self.fingerprint, self.runs, self.started, now, stop_reason, pages)


def first_run(fingerprint: Fingerprint, now: float) -> RunRecord:
    return RunRecord(fingerprint, 1, now, None, "", 0)


@dataclass(frozen=True, slots=True)
class Decision:
    choice: Choice
    why: str = ""                      # how the last run ended, for the question or the error
    changes: tuple[str, ...] = ()      # scope and seed changes since the state was written


def decide(*, has_state: bool, record: RunRecord | None, now: Fingerprint,
           resume: bool, fresh: bool, tty: bool) -> Decision:
    """The module's rules; ``record`` is None when the state has no run record."""
    changes = record.fingerprint.changes(now) if record is not None else ()
    why = ("the last run " + record.how_it_ended()) if record is not None else (
        "the last run left no run record")
    if fresh:
        return Decision(Choice.FRESH, why, changes)
    if not has_state:
        return Decision(Choice.NEW)
    if resume:
        return Decision(Choice.RESUME, why, changes)
    if tty:
        return Decision(Choice.ASK, why, changes)
    if (record is None or not record.finished or record.left) and not changes:
        return Decision(Choice.RESUME, why, changes)
    return Decision(Choice.REFUSE, why, changes)
