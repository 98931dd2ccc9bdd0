"""The ring's live settings: one versioned document, changed by epochs and fenced by the lease (pure).

What a running ring may change (rates, ``max_pages``, rules, ``[[site]]``
blocks, whether it is paused) is one document, and every peer runs one
version of it, a :class:`ConfigEpoch`. The ring carries the document as an
opaque text: which keys it holds, how an assignment changes it and what
it does to a crawl are the crawl's (``ring.crawlport.SettingsPort``; a
peer's is ``peer.core.door.settings``), since ``ring`` never imports
``peer``. The rules, as the voters' (``ring.membership.voters``):

1. **The record.** ``(epoch, fingerprint, doc)``. Epoch 0 is the peer's
   own cluster.toml; every later epoch is made by the steward at an
   operator's word (``python -m ring set|pause|resume``), from the epoch
   before. The fingerprint is the document's (64 bits), so two peers on one
   epoch agree when their fingerprints do.
2. **Which record wins.** A higher epoch replaces a lower one, at once,
   whatever the peer is doing: that is how a live change spreads (pushed
   to every live member when made, sent to the anti-entropy partner and to
   a member that joined or restarted, answered to one that shows a lower
   epoch). At one epoch a different fingerprint is a *conflict*: a peer
   that runs (holds its lease under its document, and its document is
   confirmed: rule 5) keeps its own (sticky) and counts it
   (``settings_conflict``); one that does not run takes the record of a
   member that does (a starting peer only as ``[ring] config_mismatch``
   says: rule 6).
3. **A vouch names the epoch.** A peer vouches for its ring, its voter
   record *and* its epoch and fingerprint (``ring.membership.lease.vouch_print``),
   epoch 0 included, so it holds its lease only while a majority of its
   quorum runs its very document: peers whose cluster.toml files differ
   never vouch for each other. A peer of wire version 3 says no epoch: at
   epoch 0 its vouch (the ring alone) counts as ours, and ours is said to it
   the same way (``ring.membership.lease.Lease.plain``), so a mixed ring
   runs; at a later epoch it counts for nobody. A new epoch starts no
   grace: it moves no host, so each host keeps its one owner across it, and
   that owner applies the new document to every request it starts from
   the moment it takes it (``docs/membership.md``, "Config epochs").
4. **Changes.** Only the steward (the lowest live id: every peer holding a
   lease at one instant holds it on one ring, so all name the same one)
   makes epoch ``e + 1``, only from epoch ``e`` the operator saw (``base``),
   only while it holds its lease, and not while leaving. An assignment the
   crawl refuses (a key that cannot change live) makes nothing and is said
   (``SettingsOutcome.INVALID``).
5. **Confirmed.** A peer starts no request until its document is the
   ring's: it heard a member on the same epoch and fingerprint, or took a
   member's record, or it is the only live member and holds its lease, or it
   held its lease for a whole lease's time with no conflict heard (a ring of
   peers of an older build never says its epoch).
6. **A starting peer that differs.** A peer not yet confirmed that hears
   a running member at a later epoch takes it (the differing keys are
   logged: ``ring set`` made them). At epoch 0 a peer that does not run
   and never ran settles which file the ring runs by rule 8; if it is not
   its own, it takes it with ``config_mismatch = "adopt"``, or stops with
   ``"refuse"`` (the default), naming the keys that differ.
7. **On disk before use.** A record taken is written to the data_dir
   before the peer vouches for it (the write is carried out in the list of
   actions that took it, ahead of its sends), and a restart resumes it: a
   paused ring stays paused across restarts. An epoch-0 record taken from
   another member is resumed only while the peer's own cluster.toml is the
   one it replaced (``peer.state.settingsfile``): an edited file starts over
   at rule 8.
8. **Which file the ring runs at epoch 0** (:func:`settle_zero`), from the
   fingerprint each voter said at epoch 0 (its own cluster.toml, or the one
   it took), the same at every peer that heard the same: the document a
   member *runs* (rule 3: a majority of the voters vouch for it, so there is
   one at a time); else the one a majority of every quorum holds (the only
   one that can ever hold a lease); else, once every voter was heard and
   none has a majority, the one most voters hold, the lowest fingerprint of
   those tied. A file that loses to a majority stops its peer
   (``"refuse"``) or is replaced (``"adopt"``); with no majority, ``"refuse"``
   peers wait, each saying once which members run which keys, and
   ``"adopt"`` peers all take the plurality's, which then has every vote.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import mmh3

from ring.messages import MAX_DOC_CHUNKS, Settings, SettingsAction, SettingsOutcome

__all__ = ["CHUNK", "ConfigEpoch", "Heard", "PlainSettings", "Settled", "join_doc", "settle_zero", "split_doc",
           "wins"]

#: Characters of a document chunk on the wire: at most 4 bytes a character in
#: UTF-8, so a chunk never passes the codec's ``MAX_STR`` (8 KiB).
CHUNK = 2048


@dataclass(frozen=True, slots=True)
class ConfigEpoch:
    """The ring's settings at ``epoch`` (rule 1): the document's ``fingerprint`` and its text."""

    epoch: int
    fingerprint: int
    doc: str

    def ident(self) -> int:
        """What a vouch mixes in (rule 3): a nonzero 64-bit name of the epoch and fingerprint,
        epoch 0 included, so peers whose cluster.toml differs never vouch for each other."""
        return mmh3.hash64(f"{self.epoch}:{self.fingerprint:x}".encode("ascii"), signed=False)[0] or 1

    def describe(self) -> str:
        """``epoch 3 (5f1c...)``: as logs and ``ring status`` name it."""
        return f"epoch {self.epoch} ({self.fingerprint:016x})"


def wins(incoming: ConfigEpoch, ours: ConfigEpoch) -> bool:
    """Rule 2: whether ``incoming`` replaces ``ours`` whatever we are doing (a higher epoch)."""
    return incoming.epoch > ours.epoch


def split_doc(doc: str) -> tuple[str, ...]:
    """The document in chunks for :class:`~ring.messages.Settings`."""
    return tuple(doc[i:i + CHUNK] for i in range(0, len(doc), CHUNK)) or ("",)


def join_doc(chunks: Sequence[str]) -> str:
    return "".join(chunks)


def fits(doc: str) -> bool:
    """Whether ``doc`` fits a :class:`~ring.messages.Settings` message."""
    return len(doc) <= CHUNK * MAX_DOC_CHUNKS


def record_of(msg: Settings) -> ConfigEpoch:
    return ConfigEpoch(msg.epoch, msg.fingerprint, join_doc(msg.doc))


class Heard(enum.Enum):
    """What a member's record is to us (rule 2), as :meth:`~ring.epochwatch.EpochWatch.heard` acts on it."""

    SAME = "same"  # our epoch and fingerprint: confirms ours (rule 5)
    LATER = "later"  # a higher epoch: taken
    BEHIND = "behind"  # a lower epoch: the sender is told ours
    CONFLICT = "conflict"  # our epoch, another fingerprint


def compare(incoming: ConfigEpoch, ours: ConfigEpoch) -> Heard:
    """Rule 2's cases."""
    if wins(incoming, ours):
        return Heard.LATER
    if incoming.epoch < ours.epoch:
        return Heard.BEHIND
    return Heard.SAME if incoming.fingerprint == ours.fingerprint else Heard.CONFLICT


@dataclass(frozen=True, slots=True)
class Settled:
    """Rule 8's verdict on the voters' epoch-0 documents."""

    fingerprint: int | None  # the document the ring runs; None: not decided yet
    majority: bool  # a majority of every quorum holds it (or a member runs it)
    #: (fingerprint, voters holding it) among the voters heard, most first.
    counts: tuple[tuple[int, int], ...] = ()
    unheard: int = 0  # voters not heard at epoch 0 yet


def settle_zero(held: Mapping[str, int], quorums: Sequence[Sequence[str]], running: int | None = None) -> Settled:
    """Rule 8: which epoch-0 document the ring runs.

    ``held``: member -> the fingerprint it said at epoch 0 (ours included);
    ``quorums``: the voter sets a lease needs a majority of
    (``ring.membership.lease`` rule 4); ``running``: the fingerprint of a
    member that says it runs at epoch 0, if any. A pure function of what was
    heard, so every peer that heard the same decides the same."""
    voters = sorted({v for q in quorums for v in q})
    tally: dict[int, int] = {}
    for v in voters:
        fp = held.get(v)
        if fp is not None:
            tally[fp] = tally.get(fp, 0) + 1
    counts = tuple(sorted(tally.items(), key=lambda kv: (-kv[1], kv[0])))
    unheard = sum(1 for v in voters if v not in held)
    if running is not None:
        return Settled(running, True, counts, unheard)
    for fp, _ in counts:
        if quorums and all(sum(1 for v in q if held.get(v) == fp) >= len(q) // 2 + 1 for q in quorums):
            return Settled(fp, True, counts, unheard)
    if counts and not unheard:
        return Settled(counts[0][0], False, counts, unheard)
    return Settled(None, False, counts, unheard)


class PlainSettings:
    """A stand-in ``SettingsPort`` for members without a crawl (tests, benchmarks): the document
    is a JSON object, an assignment ``KEY=VALUE`` sets a string, ``paused`` a bool; a key
    starting with ``fixed.`` cannot change live."""

    def assign(self, doc: str, action: SettingsAction, assignments: Sequence[str]) -> str:
        d = json.loads(doc) if doc else {}
        if action is SettingsAction.PAUSE or action is SettingsAction.RESUME:
            d["paused"] = action is SettingsAction.PAUSE
        for a in assignments:
            key, eq, value = a.partition("=")
            if not eq or not key:
                raise ValueError(f"{a!r}: expected KEY=VALUE")
            if key.startswith("fixed."):
                raise ValueError(f"{key}: cannot change while the ring runs")
            d[key] = value
        return json.dumps(d, sort_keys=True, separators=(",", ":"))

    def fingerprint(self, doc: str) -> int:
        return mmh3.hash64(doc.encode("utf-8"), signed=False)[0]

    def differing(self, a: str, b: str) -> list[str]:
        da, db = (json.loads(x) if x else {} for x in (a, b))
        return sorted(k for k in set(da) | set(db) if da.get(k) != db.get(k))

    def paused(self, doc: str) -> bool:
        return bool((json.loads(doc) if doc else {}).get("paused", False))


#: Outcomes of a request that change nothing for a reason of the request's (counted).
REFUSED = frozenset(SettingsOutcome) - {SettingsOutcome.CHANGED, SettingsOutcome.ALREADY}
