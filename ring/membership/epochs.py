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
   record *and* its epoch (``ring.membership.lease.vouch_print``; epoch 0
   adds nothing, as a peer of an older build vouches), so it holds its lease
   only while a majority of its quorum runs its epoch. A new epoch starts no
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
   logged: ``ring set`` made them); at its own epoch with another
   fingerprint (a cluster.toml that differs), it takes the member's record
   with ``config_mismatch = "adopt"``, or stops with ``"refuse"`` (the
   default), naming the keys that differ.
7. **On disk before use.** A record taken is written to the data_dir
   before the peer vouches for it (the write is carried out in the list of
   actions that took it, ahead of its sends), and a restart resumes it: a
   paused ring stays paused across restarts.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from dataclasses import dataclass

import mmh3

from ring.messages import MAX_DOC_CHUNKS, Settings, SettingsAction, SettingsOutcome

__all__ = ["CHUNK", "ConfigEpoch", "Heard", "PlainSettings", "join_doc", "split_doc", "wins"]

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
        """What a vouch mixes in (rule 3): 0 for epoch 0, else a nonzero 64-bit name."""
        if self.epoch == 0:
            return 0
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
