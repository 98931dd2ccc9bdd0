"""The lease's voters: one versioned record, changed a member at a time, in two steps (pure).

A lease (``ring.membership.lease``) counts the vouches of a *quorum*, and
the safety argument needs every two majorities in use at once to share a
member. Before this record the quorum was the ``[[peer]]`` list of
cluster.toml, so a joiner never voted, and an operator could change the
quorum only by editing every file. Now the quorum is a :class:`VoterRecord`
that every peer holds, that an operator changes with ``python -m ring
voter add|retire ID``, and that spreads by gossip. It is quorum
configuration, so it changes as Raft's membership changes do (Ongaro,
"Consensus: bridging theory and practice", 2014, ch. 4: joint consensus,
4.3), with versions instead of a log:

1. **The record.** ``(version, voters, joint)``. Version 0 is cluster.toml's
   ``[[peer]]`` list, the same at every peer. An odd version is *joint*: it
   holds the voters before the change (``joint``, Raft's C_old) and after
   it (``voters``, C_new), which differ by exactly one member. An even
   version above 0 is *settled*: ``voters`` alone.
2. **The quorums.** A lease under a settled record needs a majority of its
   voters; under a joint record a majority of ``joint`` AND a majority of
   ``voters``. Voters that left, or were forgotten, are out of the quorum,
   as before (``ring.membership.lease`` rule 4).
3. **A vouch names the record.** A peer vouches for its ring *and* its
   record (``ring.membership.lease.vouch_print``), and a change of record
   starts a grace, as a change of ring does (``ring.membership.lease``
   rule 2). A lease counts only vouches for its own ring and record.
4. **Changes.** A peer makes the joint record ``version + 1`` from the
   settled record it holds, at an operator's word, only while it holds its
   lease under that record; it makes the settled record ``version + 2`` from
   a joint one only while it holds its lease under the joint one. Nothing
   else writes a record.
5. **Which record wins.** A record of a higher version replaces a lower one
   (gossip: pushed to every live member when made, to the anti-entropy
   partner with each ``Sync``, and answered to anyone who shows a lower
   one). At one version a peer keeps the record it has (*sticky*): two
   different records of one version are two operators' concurrent changes,
   and the second is refused and counted (``voters_conflict``).
6. **On disk before use.** A peer's record is written to its data_dir
   before it vouches for it (rule 3's grace comes first), and a restart
   resumes it.

Why two peers still never fetch one host at once (the lease's argument,
``docs/membership.md``, needs a voter ``Y`` in both leases' majorities whose
ring changed between its two vouches):

- Records one version apart share a set: a joint record's ``joint`` is the
  settled record's ``voters`` before it, and its ``voters`` those of the
  settled record after it. So two leases under neighbouring records have a
  common voter ``Y``, whose vouches for the two are separated by a grace.
- Two joint records of one version (two concurrent operators) both hold
  the same ``joint`` set, so leases under both would need a common voter;
  by rule 5 no peer vouches for both, so at most one of them is ever under
  a lease, and only that one can be settled (rule 4). The peers that took
  the other wait, paused, until the settled record reaches them.
- Records further apart: a record two versions on exists only after a
  lease under the record between was held (rule 4), which needed a majority
  of the shared set to vouch for the newer record, each after a grace that
  outlasts every lease resting on its vouch for the older one; versions
  only grow at each peer (rules 5 and 6), so that majority never vouches
  for the older record again, and no lease under it is ever held again.

The price: a change is two records, and each costs the ring a grace (rule
3) plus a ping round trip, as a ring change does.

:func:`survival` is how many voters can fail while a majority of voters
stays alive (each set of a joint record; the smaller figure).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

import mmh3

from ring.messages import VoterAction

__all__ = ["Survival", "VoterAction", "VoterRecord", "initial", "joint_change", "problem", "settle", "survival",
           "wins"]


@dataclass(frozen=True, slots=True)
class VoterRecord:
    """The voters at ``version`` (module docstring, rule 1); ``joint``: the voters before, while joint."""

    version: int
    voters: tuple[str, ...]
    joint: tuple[str, ...] = ()

    @property
    def settled(self) -> bool:
        """Even versions: one set of voters, no change under way."""
        return self.version % 2 == 0

    def quorums(self) -> tuple[tuple[str, ...], ...]:
        """The sets a lease needs a majority of (rule 2): one, or two while joint."""
        return (self.voters,) if self.settled else (self.joint, self.voters)

    def ident(self) -> int:
        """A 64-bit name of the record for vouches (rule 3); 0 for version 0, so a ring
        whose voters never changed vouches as a peer of an older build does."""
        if self.version == 0:
            return 0
        text = f"{self.version}\n{' '.join(self.voters)}\n{' '.join(self.joint)}"
        return mmh3.hash64(text.encode("utf-8"), signed=False)[0] or 1

    def describe(self) -> str:
        """``p1, p2, p3 (version 2)``, or both sets while joint."""
        now = ", ".join(self.voters) or "none"
        if self.settled:
            return f"{now} (version {self.version})"
        return f"{', '.join(self.joint) or 'none'} -> {now} (version {self.version}, changing)"


def initial(seeds: Iterable[str]) -> VoterRecord:
    """Version 0: cluster.toml's ``[[peer]]`` list."""
    return VoterRecord(0, tuple(sorted(set(seeds))))


def problem(r: VoterRecord) -> str | None:
    """Why a received record cannot be a record at all (counted ``bad_voters``), or None."""
    if r.version == 0:
        return "version 0 is cluster.toml's, never sent"
    if list(r.voters) != sorted(set(r.voters)) or list(r.joint) != sorted(set(r.joint)):
        return "ids not sorted and distinct"
    if not r.voters:
        return "no voter"
    if r.settled:
        return "a settled record has no joint set" if r.joint else None
    if not r.joint or len(set(r.voters) ^ set(r.joint)) != 1:
        return "a joint record's two sets must differ by exactly one member"
    return None


def wins(incoming: VoterRecord, ours: VoterRecord) -> bool:
    """Rule 5: whether ``incoming`` replaces ``ours`` (a higher version; one version is sticky)."""
    return incoming.version > ours.version


def joint_change(current: VoterRecord, action: VoterAction, target: str) -> VoterRecord | None:
    """Rule 4's first step: the joint record that adds or retires ``target``; None if it
    changes nothing (a voter already, or not one). The caller checks the lease."""
    if not current.settled:
        raise ValueError("a change is under way: settle it first")
    voters = set(current.voters)
    if (action is VoterAction.ADD) == (target in voters):
        return None
    voters ^= {target}
    return VoterRecord(current.version + 1, tuple(sorted(voters)), current.voters)


def settle(current: VoterRecord) -> VoterRecord:
    """Rule 4's second step: the settled record after joint ``current``."""
    if current.settled:
        raise ValueError("nothing to settle")
    return VoterRecord(current.version + 1, current.voters)


@dataclass(frozen=True, slots=True)
class Survival:
    """How many voters can fail while a majority stays alive, for the set where it is fewest."""

    alive: int  # voters alive (or suspect) in this view, of the binding set
    needed: int  # a majority of that set
    quorum: int  # that set's size: its voters that have not left

    @property
    def survives(self) -> int:
        """Failures survived; 0 at the edge, and 0 too with no majority alive (:attr:`majority`)."""
        return max(0, self.alive - self.needed)

    @property
    def majority(self) -> bool:
        """Whether a majority of the voters is alive at all."""
        return self.alive >= self.needed


def survival(quorums: Iterable[Collection[str]], alive: Collection[str]) -> Survival:
    """:class:`Survival` over ``quorums`` (rule 2's sets, less the voters gone) with ``alive`` up."""
    worst: Survival | None = None
    for q in quorums:
        s = Survival(sum(1 for v in q if v in alive), len(q) // 2 + 1, len(q))
        if worst is None or s.alive - s.needed < worst.alive - worst.needed:
            worst = s
    return worst if worst is not None else Survival(0, 1, 0)
