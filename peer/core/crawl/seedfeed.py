"""A seeds file read as a stream: its lines, their outcomes and the position (pure).

``crawl.seeds_file`` names a file of one URL a line, plain or gzip, of
millions of lines. The edge (``peer.state.seedfile``) reads it in batches
of raw lines and says where each batch ends; this module judges the lines
and keeps the count and the position, which ride in the journal's counters
(``peer.state.journal``: counters replace by name, and a snapshot keeps
them), so a restart goes on from the last committed batch.

Rules:

1. **A line** is stripped of surrounding white space; a blank line or one
   whose first character is ``#`` is ``skipped``. A line that is not UTF-8,
   or holds white space inside (a URL has none, RFC 3986 §2), is
   ``invalid``; otherwise it is a URL, which goes through the same checks
   and routing as a ``crawl.seeds`` entry (``CrawlCore.discover`` with
   ``Origin.SEED``: normalise, scope, URL rules, caps, then its owner).
2. **Every line has one outcome**, counted under ``seeds_file.<outcome>``:
   ``skipped``, ``invalid`` (the line, or a URL normalisation refuses),
   ``queued`` (queued here, or waiting for the exact seen set), ``forwarded``
   (to its host's owner, through the Outbox), ``seen`` (already seen), or
   the not-requested cause that refused it, in ``ring.vocabulary``'s words
   (``scope``, ``rules``, ``skip_extensions``, a cap's key). Their sum is
   ``seeds_file.lines``.
3. **The position** is the byte offset (of the decompressed stream, for a
   gzip file) after the last line of the last batch judged. It is journaled
   with the batch's URL records and made durable by the same ``Commit``
   (``peer.core.door.peer`` rule 1g), so after a ``kill -9`` a batch is
   either wholly on disk with its position or not at all and read again:
   no line is lost, and none is counted twice.
4. **The file's mark** (size, mtime, a CRC-32 of its first 64 KiB) is kept
   with the position. At a restart, a file with the same mark goes on from
   the position; a plain file that only grew (same head, larger) too; any
   other change is read again from the start, said in one line (URLs seen
   before are refused as ``seen`` by the owners' seen sets, so nothing is
   fetched twice).
5. **Only one peer reads the file**: the ``[[peer]]`` of cluster.toml with
   the lowest id (:func:`reader`). Each URL then reaches its host's owner
   through the ring's forwarding, whose Outbox re-routes a URL whose owner
   changes before the ack (docs/membership.md); so a ring change while the
   file is read loses nothing, which a "read it on every peer and keep your
   own hosts" scheme cannot promise (a host moving from a peer that has
   not read the line yet to one that already has would lose it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from peer.core.crawl.decisions import Checking, Effect, Forward, Queued, Reason, Refused
from ring.vocabulary import SCOPE

__all__ = ["FileMark", "HEAD_BYTES", "INVALID", "PREFIX", "SKIPPED", "SeedFeed", "outcome", "parse_line",
           "reader"]

#: The counters' prefix (``ring.vocabulary.COUNTER_PREFIXES``).
PREFIX = "seeds_file."
SKIPPED = "skipped"
INVALID = "invalid"
#: Bytes of the file's head whose CRC-32 is a part of its mark (rule 4).
HEAD_BYTES = 64 << 10

# The refusals' outcomes in the vocabulary's words (rule 2).
_REFUSED = {Reason.BAD_URL: INVALID, Reason.HOST: SCOPE, Reason.DEPTH: SCOPE, Reason.SEEN: "seen"}


def parse_line(raw: bytes) -> str | None:
    """Rule 1: the URL of a raw line, ``None`` to skip it; raises ``ValueError`` for an invalid one."""
    line = raw.strip()
    if not line or line.startswith(b"#"):
        return None
    text = line.decode("utf-8")  # UnicodeDecodeError is a ValueError
    if any(c.isspace() for c in text):
        raise ValueError("white space inside a URL")
    return text


def outcome(effects: Iterable[Effect]) -> str:
    """Rule 2: the outcome of one URL from ``discover``'s effects (its one verdict)."""
    for e in effects:
        if isinstance(e, Queued | Checking):
            return "queued"
        if isinstance(e, Forward):
            return "forwarded"
        if isinstance(e, Refused):
            return _REFUSED.get(e.reason, e.reason.value)
    return "queued"  # a sitemap job (a URL with a tail) leaves no verdict of its own


def reader(peer_ids: Iterable[str], me: str) -> bool:
    """Rule 5: whether ``me`` reads the file (the lowest ``[[peer]]`` id; a peer not listed never)."""
    ids = sorted(peer_ids)
    return bool(ids) and ids[0] == me


@dataclass(frozen=True, slots=True)
class FileMark:
    """What tells a changed file (rule 4)."""

    size: int
    mtime: float
    head: int      # CRC-32 of the first HEAD_BYTES bytes
    gzip: bool


class SeedFeed:
    """The count and position of one seeds file (module docstring)."""

    __slots__ = ("offset", "counts", "mark", "reading", "done", "_cleared")

    def __init__(self) -> None:
        self.offset = 0
        self.counts: Counter[str] = Counter()
        self.mark: FileMark | None = None
        #: Between ``begin`` and ``end``: the peer is not idle (``CrawlCore.locally_idle``).
        self.reading = False
        self.done = False
        self._cleared: set[str] = set()  # counts cleared by a changed file: journaled as 0

    @property
    def lines(self) -> int:
        return sum(self.counts.values())

    def begin(self, mark: FileMark) -> tuple[int, str | None]:
        """Rule 4: where to start reading a file of ``mark``, and the one line to say, if any."""
        old = self.mark
        self.reading = True
        if old is None or self.offset == 0:
            self.mark = mark
            self.done = False
            return 0, None
        if old == mark:
            if self.done:
                self.reading = False
            return self.offset, None
        grew = (not mark.gzip and not old.gzip and mark.head == old.head and mark.size > old.size
                and self.offset <= mark.size)
        self.mark = mark
        self.done = False
        if grew:
            return self.offset, (f"it grew from {old.size:,} to {mark.size:,} bytes since the last run: "
                                 f"reading on from byte {self.offset:,}")
        said = f"it changed since the last run (size, time or first {HEAD_BYTES >> 10} KiB): reading it again " \
               f"from the start ({self.lines:,} lines were read; URLs seen before are refused as seen)"
        self.offset = 0
        self._cleared.update(self.counts)
        self.counts.clear()
        return 0, said

    def count(self, what: str) -> None:
        self.counts[what] += 1

    def advance(self, end: int) -> None:
        """A batch judged: the position after its last line (rule 3)."""
        self.offset = end

    def give_up(self) -> None:
        """The file could not be read on (an I/O error): the peer may go idle; a restart tries again."""
        self.reading = False

    def end(self) -> None:
        """The file read to its end."""
        self.reading = False
        self.done = True

    def summary(self) -> str:
        parts = ", ".join(f"{k} {n:,}" for k, n in sorted(self.counts.items()))
        return f"seeds_file: {self.lines:,} lines read ({parts or 'none'})"

    def figures(self) -> dict[str, int]:
        """The counts as the status reply's counters carry them (``seeds_file.<outcome>``)."""
        return {PREFIX + k: n for k, n in self.counts.items() if n}

    # -- the journal's counters (rule 3) -----------------------------------------------

    def to_counters(self) -> dict[str, float]:
        if self.mark is None:
            return {}
        m = self.mark
        out: dict[str, float] = {PREFIX + "@offset": float(self.offset), PREFIX + "@size": float(m.size),
                                 PREFIX + "@mtime": m.mtime, PREFIX + "@head": float(m.head),
                                 PREFIX + "@gzip": float(m.gzip), PREFIX + "@done": float(self.done)}
        out.update({PREFIX + k: 0.0 for k in self._cleared})
        out.update({PREFIX + k: float(n) for k, n in self.counts.items()})
        return out

    @classmethod
    def from_counters(cls, counters: Mapping[str, float]) -> SeedFeed:
        feed = cls()
        if PREFIX + "@offset" not in counters:
            return feed
        g = counters.get
        feed.offset = int(g(PREFIX + "@offset", 0))
        feed.mark = FileMark(int(g(PREFIX + "@size", 0)), float(g(PREFIX + "@mtime", 0)),
                             int(g(PREFIX + "@head", 0)), bool(g(PREFIX + "@gzip", 0)))
        feed.done = bool(g(PREFIX + "@done", 0))
        for name, v in counters.items():
            if name.startswith(PREFIX) and not name.startswith(PREFIX + "@") and v:
                feed.counts[name[len(PREFIX):]] = int(v)
        return feed
