"""The crawl's side of duplicate content: each page's verdict, and its row and links held until it comes (pure).

``peer.core.dedupe.verdicts.Dedupe`` decides; ``HeldPages``, a part of
``CrawlCore``, owns it and says what a verdict means for the crawl: it holds
the pages waiting for their verdicts, and reaches the rest of the core
through two callables it is handed (who owns a host, discover a link).
``peer.core.crawl.outcomes`` calls it for every 2xx HTML page parsed with
``[dedupe]`` on (its digest and SimHash come from the parse worker,
``peer.core.page.parse``).

Rules:

1. **Exact.** A body digest this peer saw before under another URL is known
   at once: the row says ``duplicate_kind = 'exact'`` and ``duplicate_of``
   the first URL, and the page's links are not followed (they are the first
   page's links, followed when it was parsed). Counted ``dedupe.exact`` and
   ``dedupe.unfollowed_links``.
2. **Near: held, not followed and counted.** A page with a SimHash waits
   for the owners of its bands (``NearAsk`` effects, one to each owner;
   ``peer.core.door.peer`` sends them, or answers in place those this peer owns).
   Until its verdict its row and the links it would follow are *held*:
   nothing is discovered and no row is written. On the verdict, a new page's
   links are discovered and then its row written (``peer/state/journal.py``
   crash ordering rule 1 holds: the links' ``Queued`` before the page's
   ``Row``); a near duplicate's row is written with ``duplicate_kind =
   'near'`` and its links are dropped, counted. Following the links at once
   and counting the duplicates afterwards was the alternative: cheaper to
   wire, but it fetches every link of a mirror, which is what finding the
   mirror is for. Holding costs at most ``dedupe.max_waiting`` pages' rows
   and links for at most ``dedupe.answer_timeout`` seconds (the rows'
   bodies only with ``store_body``), and the verdict of a page whose owners
   did not all answer in time is what came (``dedupe.timeouts``).
3. **A held page is in flight.** It has no row on disk, so a peer killed
   meanwhile fetches it again after a restart, as it does a page whose
   request was on the wire; and a peer with pages held is not idle
   (``CrawlCore.locally_idle``): termination waits for their verdicts.
4. **Ending.** When the crawl stops (``stop()``, ``max_pages``) the held
   pages are decided on what came, their timeouts counted, before
   ``Finished``: every page fetched leaves its row.
5. **Columns.** Every page with a digest has ``payload_digest``
   (``sha1:`` and the base-32 digest, as WARC's ``WARC-Payload-Digest``
   writes it) and ``simhash`` (NULL under ``min_words``); ``duplicate_of``
   and ``duplicate_kind`` are NULL for a new or unchanged page.
6. **The better copy wins, and the earlier verdict is corrected**
   (``peer.core.dedupe.precedence``). A page's check carries what its
   canonical says. A verdict that names copies kept before it as originals
   (``Verdict.superseded``: the page outranks them) gives a
   :class:`~peer.core.crawl.decisions.Reverdict` for each: its row gets
   ``duplicate_of`` this page and the kind, in place (``PeerCore`` sends it
   to the owner of its host when that is another peer). Nothing is taken
   back: a superseded page's links were followed when it was new, and this
   page's are followed now. A page superseded while it is held here takes
   the correction when it is released (its links still followed: it was
   the original when it was asked). A page that is a copy already keeps
   its verdict, unless the correction says it is byte-identical to the
   better page (a near copy becomes exact): a copy's ``duplicate_of``
   always names a page that outranks it, so following it ends at the
   original, and a mirror is not relabelled a near copy of a print view.
7. **A copy never hides its original.** When a page is judged a copy, the
   URL a better copy would have is discovered: its session-free URL
   (``precedence.session_free``; its canonical is discovered by
   ``peer.core.crawl.outcomes`` at the parse). The seen set makes that a
   no-op when it is known; else the better copy is fetched and wins by
   rule 6, and its links are followed.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from peer.core.crawl.decisions import Discover, Effect, NearAsk, Origin, Reverdict, Row
from peer.core.dedupe.bands import NearAnswer
from peer.core.dedupe.precedence import says, session_free
from peer.core.dedupe.verdicts import Ask, Dedupe, Kind, Verdict
from peer.core.frontier.frontier import Job
from peer.core.page.parse import Parsed
from peer.core.urls.normalize import host_key
from peer.core.warc.record import digest_text

if TYPE_CHECKING:
    from peer.core.config.dedupe import DedupeConfig

__all__ = ["HeldPages", "payload_digest"]


def payload_digest(digest: bytes) -> str:
    """``sha1:`` and the base-32 digest, WARC's form (ISO 28500 §5.9)."""
    return digest_text(digest)


@dataclass(slots=True)
class _Held:
    """A page waiting for its band owners: its row and the links it would follow (rule 2)."""

    row: Row
    links: tuple[str, ...]
    depth: int
    corrected: Reverdict | None = None  # rule 6: superseded while held

    def correct(self, fix: Reverdict) -> None:
        """Rule 6 while held: the latest correction, but an exact one is not undone by a near one."""
        if self.corrected is None or self.corrected.kind != Kind.EXACT.value or fix.kind == Kind.EXACT.value:
            self.corrected = fix


class HeldPages:
    """Duplicate content's part of ``CrawlCore`` (module docstring): the verdicts, and the pages held for them."""

    __slots__ = ("dedupe", "wall_offset", "_owner", "_discover", "_held", "_unfollowed",
                 "_corrected", "_originals", "_stray_fixes")

    def __init__(self, cfg: DedupeConfig, me: str, *, owner: Callable[[str], str],
                 discover: Discover) -> None:
        #: The verdicts and the band table this peer owns.
        self.dedupe = Dedupe(cfg, me)
        #: Epoch seconds minus the crawl's clock, set by the driver: a query's
        #: ``seen_at`` is wall time, the one order peers' clocks roughly share
        #: (``peer.core.dedupe.bands`` rule 2; the crawl's clock is a process's own).
        self.wall_offset = 0.0
        self._owner = owner
        self._discover = discover
        self._held: dict[str, _Held] = {}
        self._unfollowed = 0
        self._corrected = 0  # rule 6: rows corrected (or held pages), counted at the page that won
        self._originals = 0  # rule 7: session-free URLs of copies discovered
        self._stray_fixes = 0  # rule 6: a member's correction of a page of a host not ours

    def waiting(self) -> int:
        """Pages held for their band owners' answers (rule 3)."""
        return self.dedupe.waiting()

    # -- a page parsed (peer.core.crawl.outcomes) ---------------------------------------------

    def check(self, job: Job, parsed: Parsed, now: float, canonical: str | None = None) -> Verdict | Ask | None:
        """The page's verdict, or the questions to ask first; None without a digest (rule 6: ``canonical``)."""
        if parsed.digest is None:
            return None
        return self.dedupe.check(job.url, parsed.digest, parsed.simhash, now, self._owner,
                                 says(job.url, canonical), self.wall_offset)

    def unfollowed(self, n: int) -> None:
        """``n`` links of a duplicate page not followed (rules 1, 2)."""
        self._unfollowed += n

    def row(self, out: list[Effect], at: int, parsed: Parsed, dup: Verdict | Ask,
            links: tuple[str, ...], depth: int, now: float | None = None) -> None:
        """The page's row at ``out[at]``: given its columns, or held with ``links`` (rules 2, 5)."""
        if len(out) <= at or not isinstance(out[at], Row):
            return  # no row (a sitemap job): nothing to hold
        row = out[at]
        assert isinstance(row, Row) and parsed.digest is not None
        row = dataclasses.replace(row, payload_digest=payload_digest(parsed.digest), simhash=parsed.simhash)
        if isinstance(dup, Verdict):
            out[at] = _with_verdict(row, dup)
            # Rules 6, 7: before the row, as a page's links are (journal crash order).
            out[at:at] = self._corrections(dup) + self._original_of(dup, depth, now)
            return
        del out[at]
        self._held[dup.url] = _Held(row, links, depth)
        off = self.wall_offset
        out.extend(NearAsk(owner, dataclasses.replace(q, seen_at=q.seen_at + off)) for owner, q in dup.queries)

    # -- verdicts that come later ---------------------------------------------------------

    def answer(self, sender: str, a: NearAnswer, now: float) -> list[Effect]:
        """Band owner ``sender``'s answer; the page's links and row once it is decided."""
        v = self.dedupe.answer(sender, a)
        return [] if v is None else self._release(v, now)

    def due(self, now: float, *, ending: bool = False) -> list[Effect]:
        """The held pages whose time is up at ``now`` (all of them when the crawl ends: rule 4)."""
        d = self.dedupe
        if not d.waiting():
            return []
        out: list[Effect] = []
        for v in d.expire(math.inf if ending else now):
            out += self._release(v, now)
        return out

    def next_deadline(self) -> float | None:
        """When :meth:`due` next has something to do."""
        return self.dedupe.next_deadline()

    def _release(self, v: Verdict, now: float) -> list[Effect]:
        h = self._held.pop(v.url, None)
        if h is None:  # pragma: no cover - every Ask is held (row)
            return []
        out: list[Effect] = self._corrections(v)
        if v.kind in (Kind.NEAR, Kind.EXACT):  # an exact copy may come from a band owner too (dedupe.exact)
            self.unfollowed(len(h.links))
            out += self._original_of(v, h.depth, now)
        else:
            for link in h.links:
                out += self._discover(link, h.depth + 1, now, Origin.LINK)
        row = _with_verdict(h.row, v)
        # A correction demotes a page judged an original; of a page judged a near copy it
        # takes only the word that it is byte-identical to a better one (exact). A copy's
        # verdict names a page that outranks it, so duplicate_of always leads to the original.
        if h.corrected is not None and (v.kind not in (Kind.NEAR, Kind.EXACT)
                                        or (v.kind is Kind.NEAR and h.corrected.kind == Kind.EXACT.value)):
            c = h.corrected
            row = dataclasses.replace(row, duplicate_of=c.duplicate_of, duplicate_kind=c.kind)
        out.append(row)
        return out

    # -- the better copy (rules 6, 7) ---------------------------------------------------------

    def reverdict(self, fix: Reverdict, *, remote: bool = False) -> list[Effect]:
        """A member says one of this peer's pages is a copy of a better one (rule 6): a
        page of a host this peer does not own is dropped and counted."""
        if remote and self._owner(host_key(fix.url)) != self.dedupe.me:
            self._stray_fixes += 1
            return []
        h = self._held.get(fix.url)
        if h is not None:
            h.correct(fix)
            return []
        return [fix]

    def _corrections(self, v: Verdict) -> list[Effect]:
        """Rule 6: the copies ``v``'s page outranks, corrected: their rows, or held here."""
        out: list[Effect] = []
        for d in v.superseded:
            fix = Reverdict(d.url, v.url, d.kind, d.distance)
            h = self._held.get(d.url)
            if h is not None:
                h.correct(fix)
            else:
                out.append(fix)
            self._corrected += 1
        return out

    def _original_of(self, v: Verdict, depth: int, now: float | None) -> list[Effect]:
        """Rule 7: a copy's session-free URL discovered, so a better copy is fetched."""
        if v.kind not in (Kind.EXACT, Kind.NEAR) or now is None:
            return []
        better = session_free(v.url)
        if better is None or better == v.duplicate_of:
            return []
        self._originals += 1
        return list(self._discover(better, depth, now, Origin.LINK))

    # -- figures --------------------------------------------------------------------------

    def figures(self) -> dict[str, int]:
        """``dedupe.*`` counters and ``dedupe_*`` drops (``ring.vocabulary`` rule 4), non-zero only."""
        d = self.dedupe
        s, b, g = d.stats, d.bands.stats, d.digests.stats
        figures = {
            "dedupe.exact": s.exact, "dedupe.near": s.near, "dedupe.new": s.new,
            "dedupe.unchanged": s.unchanged, "dedupe.no_text": s.no_text,
            "dedupe.timeouts": s.timed_out, "dedupe.busy": s.busy,
            "dedupe.waiting": d.waiting(), "dedupe.unfollowed_links": self._unfollowed,
            "dedupe.digests_forgotten": g.forgotten,
            # The better copy (rules 6, 7).
            "dedupe.superseded": self._corrected, "dedupe.originals_discovered": self._originals,
            "dedupe.digests_superseded": g.superseded,
            # Answers refused or too late, and hostile queries: drops.
            "dedupe_late_answers": s.late_answers, "dedupe_stray_answers": s.stray_answers,
            "dedupe_bad_answers": s.bad_answers, "dedupe_stray_reverdicts": self._stray_fixes,
        }
        for f in dataclasses.fields(b):
            if f.name != "dropped":
                figures[f"dedupe.bands.{f.name}"] = getattr(b, f.name)
        figures["dedupe_bad_queries"] = b.dropped  # hostile band queries (nearindex rule 5): a drop
        # Exact copies across the ring, and members' claims refused (peer.core.dedupe.exact, .claims).
        figures["dedupe.exact_routed"] = s.exact_routed
        figures["dedupe.digest_unanswered"] = s.digest_unanswered
        figures["dedupe.exact_table"] = len(d.exact)
        figures["dedupe.exact_table_forgotten"] = d.exact.stats.forgotten
        figures["dedupe_refused_future"] = s.refused_future
        figures["dedupe_refused_too_old"] = s.refused_too_old
        figures["dedupe_unrecorded_not_owner"] = s.unrecorded_not_owner
        return {k: int(n) for k, n in figures.items() if n}


def _with_verdict(row: Row, v: Verdict) -> Row:
    if v.kind in (Kind.EXACT, Kind.NEAR):
        return dataclasses.replace(row, duplicate_of=v.duplicate_of, duplicate_kind=v.kind.value)
    return row
