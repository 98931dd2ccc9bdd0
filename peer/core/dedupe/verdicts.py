"""Is this page a duplicate? Exact by body digest, near by SimHash asked of band owners (pure).

:class:`Dedupe` composes a peer's two sides: the pages it fetched, checked
against its :class:`~peer.core.dedupe.digests.DigestTable` and then asked of the
owners of their SimHash bands; and the bands it owns, a
:class:`~peer.core.dedupe.bands.BandTable` that answers other peers' (and its
own) :class:`~peer.core.dedupe.bands.NearQuery`. The driver carries messages;
every decision is here, with ``now`` passed in.

Rules:

1. **Order of checks.** A body digest seen before under another URL makes an
   exact duplicate (:attr:`Kind.EXACT`) at once, with no message; under the
   same URL, the page is unchanged (:attr:`Kind.UNCHANGED`, a recrawl). A
   page without a fingerprint (too little text) is new, or asks its digest
   alone (rule 9). Otherwise the page
   waits (:class:`Ask`): one :class:`NearQuery` to each distinct owner of its
   k+1 band keys (``owner_of(band_key(i, value))``, the ring's
   ``HashRing.owner``), naming the bands that owner is asked for.
2. **The waiting page's state machine** (``_MOVES``; anything else raises
   :class:`IllegalTransition`, a bug of ours)::

       WAITING --last answer in-->  ANSWERED   verdict: NEAR (nearest answer) or NEW
       WAITING --now >= deadline--> TIMED_OUT  verdict: NEAR if an answer in
                                               time found one, else NEW; counted

   A page leaves the table in either final state; an answer for a page no
   longer waiting (late, or never asked) is dropped and counted, and so is
   an answer from a peer the page is not waiting for (a ring change may have
   moved a band since: the page's owners are fixed when it is asked).
3. **Bounded.** At most ``max_waiting`` pages wait at once; past that a page
   is new at once, counted (``busy``): a slow ring costs missed duplicates,
   never memory or a stalled crawl. Deadlines are ``now + answer_timeout``
   in the order pages are asked, so expiry pops the oldest first.
4. **Answers are checked**: a distance outside 0..k, or a duplicate that is
   the page itself or longer than the URL cap, counts as that owner's "no
   duplicate" and is counted (``bad_answers``).
5. **Disabled** (``enabled = false``): every page is new, nothing is kept.
6. **The original wins** (``peer.core.dedupe.precedence``): the digest
   table and the band owners keep the copy first in the precedence order,
   not the first fetched. A page that outranks copies kept before it is
   new, and its verdict names them (``Verdict.superseded``): they are now
   its copies, exact or near, and ``peer.core.dedupe.held`` corrects their
   rows. An owner's ``superseded`` pairs are checked like its answer (a
   distance outside 0..k, the page itself, a URL over the cap, more than
   ``MAX_SUPERSEDED`` an asked owner: dropped and counted in ``bad_answers``).
7. **Exact across the ring** (``peer.core.dedupe.exact``): a page whose
   digest the local table did not know sends it with each of its band
   queries; an owner's answer may say ``exact``, and the page is then an
   exact duplicate of the URL it names (before any near one). Every owner,
   not only band 0's: two peers whose views of the ring differ (one has
   not seen a join yet) place band 0 on different owners, and a copy is
   then found only by the owners they share, as near copies are.
   A peer of an older build refuses a query with a digest (a field it does
   not know) and never answers it: an owner that left a digest unanswered
   at a page's deadline is sent no digest for ``DIGEST_BACKOFF`` answer
   timeouts (counted ``digest_unanswered``), so in a ring of mixed builds
   one page an owner waits its timeout, not every page; the copy is then
   still found by the bands, at distance 0.
8. **Members' queries are judged** (``peer.core.dedupe.claims``) before a
   band owner answers or records them: :meth:`Dedupe.serve_member`.
9. **A page without a SimHash** (under ``min_words``) has no bands to
   carry its digest: with ``exact_across_ring`` it asks the owner of its
   digest's own ring key (``digest_ring_key``) one query naming no band,
   and waits for it as a page waits for its band owners (an owner in its
   ``DIGEST_BACKOFF`` is not asked: the page is new at once). A near answer
   to it is not taken. One query and one answer more for such a page whose
   digest another peer owns.
"""

from __future__ import annotations

import enum
import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from peer.core.config.dedupe import DedupeConfig
from peer.core.dedupe.digests import DigestTable, Seen
from peer.core.dedupe.bands import MAX_SUPERSEDED, NO_DISTANCE, BandTable, NearAnswer, NearQuery
from peer.core.dedupe.claims import Claim, judge
from peer.core.dedupe.exact import ExactTable, digest_key, digest_ring_key
from peer.core.dedupe.simhash import band_key, bands
from peer.core.dedupe.precedence import Demoted, Says

#: Answer timeouts an owner that left a digest unanswered is sent none (rule 7).
DIGEST_BACKOFF = 60

__all__ = [
    "DIGEST_BACKOFF", "Ask", "Basis", "Dedupe", "DedupeStats", "IllegalTransition", "Kind", "Verdict", "WaitState",
]


class Kind(enum.Enum):
    """What a page is."""

    NEW = "new"
    UNCHANGED = "unchanged"  # the same URL, the same body as before
    EXACT = "exact"  # another URL had the same body first
    NEAR = "near"  # an earlier page's SimHash is within k


class Basis(enum.Enum):
    """What the verdict rests on."""

    DIGEST = "digest"
    BANDS = "bands"  # every asked owner answered
    NO_TEXT = "no text"  # under min_words: no fingerprint
    TIMED_OUT = "timed out"  # not every owner answered in time
    BUSY = "busy"  # max_waiting pages were waiting
    DISABLED = "disabled"


class WaitState(enum.Enum):
    WAITING = "waiting"
    ANSWERED = "answered"
    TIMED_OUT = "timed out"


class IllegalTransition(RuntimeError):
    """A waiting page was moved in a way rule 2 does not allow: a bug of ours, not the network's."""


_MOVES: dict[tuple[WaitState, str], WaitState] = {
    (WaitState.WAITING, "answered"): WaitState.ANSWERED,
    (WaitState.WAITING, "expired"): WaitState.TIMED_OUT,
}


@dataclass(frozen=True, slots=True)
class Verdict:
    """The decision on one page."""

    url: str
    kind: Kind
    basis: Basis
    duplicate_of: str | None = None
    distance: int = NO_DISTANCE
    superseded: tuple[Demoted, ...] = ()  # rule 6: earlier originals, now copies of this page


@dataclass(frozen=True, slots=True)
class Ask:
    """The page waits: send each query to its peer, feed the answers to :meth:`Dedupe.answer`."""

    url: str
    queries: tuple[tuple[str, NearQuery], ...]  # (band owner's peer id, query)
    deadline: float


@dataclass(slots=True)
class DedupeStats:
    """Counters for the metrics: verdicts by kind, and what was dropped."""

    new: int = 0
    unchanged: int = 0
    exact: int = 0
    near: int = 0
    no_text: int = 0
    timed_out: int = 0
    busy: int = 0
    late_answers: int = 0
    stray_answers: int = 0
    bad_answers: int = 0
    # Rules 6 and 7 (peer.core.dedupe.exact, .claims).
    exact_routed: int = 0  # exact duplicates found by a band owner (counted in exact too)
    refused_future: int = 0
    refused_too_old: int = 0
    unrecorded_not_owner: int = 0
    digest_unanswered: int = 0


@dataclass(slots=True)
class _Wait:
    url: str
    deadline: float
    owners: set[str]
    state: WaitState = WaitState.WAITING
    best: tuple[int, str] | None = None  # (distance, duplicate_of)
    demoted: dict[str, Demoted] = field(default_factory=dict)  # rule 6
    exact: str | None = None  # rule 7: an exact copy's first URL, from a band owner
    digested: frozenset[str] = frozenset()  # rule 7: the owners sent the digest, those whose ``exact`` counts
    near: bool = True  # False: a digest alone was asked (rule 9), a near answer is not taken


@dataclass(slots=True)
class Dedupe:
    """One peer's duplicate detection: its pages' verdicts and the bands it owns."""

    config: DedupeConfig
    me: str
    max_url: int = 8192
    stats: DedupeStats = field(default_factory=DedupeStats)
    digests: DigestTable = field(init=False)
    bands: BandTable = field(init=False)
    exact: ExactTable = field(init=False)
    _waiting: OrderedDict[str, _Wait] = field(default_factory=OrderedDict)
    _no_digest: dict[str, float] = field(default_factory=dict)  # rule 7: owner -> until when

    def __post_init__(self) -> None:
        c = self.config
        self.digests = DigestTable(c.max_digests)
        self.bands = BandTable(c.k, c.band_max_per_key, c.band_max_entries, self.max_url)
        self.exact = ExactTable(c.max_digests)

    def waiting(self) -> int:
        """Pages waiting for band owners' answers."""
        return len(self._waiting)

    def next_deadline(self) -> float | None:
        """When :meth:`expire` next has something to do."""
        for w in self._waiting.values():
            return w.deadline
        return None

    # -- a page this peer fetched -------------------------------------------------

    def check(self, url: str, digest: bytes, fingerprint: int | None, now: float,
              owner_of: Callable[[str], str], said: Says = Says.NONE,
              wall_offset: float = 0.0) -> Verdict | Ask:
        """The verdict on ``url`` now, or the questions to ask first (rules 1, 6).

        ``said``: what the page's canonical says (precedence); ``now +
        wall_offset`` is its fetch time in the order of rule 6."""
        c = self.config
        if not c.enabled:
            return self._new(url, Basis.DISABLED)
        seen, first = self.digests.check(url, digest, said, now + wall_offset)
        # -- precedence (rule 6): this page took the digest from a worse copy.
        demoted = (Demoted(first, Kind.EXACT.value, 0),) if seen is Seen.SUPERSEDES and first else ()
        if seen is Seen.DUPLICATE:
            self.stats.exact += 1
            return Verdict(url, Kind.EXACT, Basis.DIGEST, first, 0)
        if seen is Seen.UNCHANGED:
            self.stats.unchanged += 1
            return Verdict(url, Kind.UNCHANGED, Basis.DIGEST)
        if fingerprint is None:
            self.stats.no_text += 1
            if not c.exact_across_ring:
                return self._new(url, Basis.NO_TEXT, demoted)
            # Rule 9: no bands to ride with; the digest alone, to its own key's owner.
            d = digest_key(digest)
            owner = owner_of(digest_ring_key(d))
            if self._no_digest.get(owner, -math.inf) > now:
                return self._new(url, Basis.NO_TEXT, demoted)
        if len(self._waiting) >= c.max_waiting or url in self._waiting:
            # The same URL twice at once is the crawl's to prevent (its seen
            # set); if it happens the second is not allowed to stall.
            self.stats.busy += 1
            return self._new(url, Basis.BUSY, demoted)
        deadline = now + c.answer_timeout
        if fingerprint is None:  # rule 9
            self._waiting[url] = _Wait(url, deadline, {owner}, demoted={d.url: d for d in demoted},
                                       digested=frozenset((owner,)), near=False)
            return Ask(url, ((owner, NearQuery((), 0, url, self.me, now, int(said), d)),), deadline)
        by_owner: dict[str, list[int]] = {}
        for i, value in enumerate(bands(fingerprint, c.k)):
            by_owner.setdefault(owner_of(band_key(i, value)), []).append(i)
        queries = tuple((owner, NearQuery(tuple(ixs), fingerprint, url, self.me, now, int(said)))
                        for owner, ixs in sorted(by_owner.items()))
        if c.exact_across_ring:  # rule 7: the digest rides with each query
            queries = tuple((o, replace(q, digest=digest_key(digest))
                             if self._no_digest.get(o, -math.inf) <= now else q)
                            for o, q in queries)
        self._waiting[url] = _Wait(url, deadline, set(by_owner), demoted={d.url: d for d in demoted},
                                   digested=frozenset(o for o, q in queries if q.digest))
        return Ask(url, queries, deadline)

    def answer(self, sender: str, a: NearAnswer) -> Verdict | None:
        """Take band owner ``sender``'s answer; the page's verdict once its last owner answered (rule 2)."""
        if not isinstance(a.url, str):
            self.stats.bad_answers += 1
            return None
        w = self._waiting.get(a.url)
        if w is None:
            self.stats.late_answers += 1
            return None
        if sender not in w.owners:
            self.stats.stray_answers += 1
            return None
        w.owners.discard(sender)
        dup = a.duplicate_of
        if dup is not None:
            if (not isinstance(dup, str) or dup == a.url or len(dup) > self.max_url
                    or not isinstance(a.distance, int) or not 0 <= a.distance <= self.config.k):
                self.stats.bad_answers += 1
            elif a.exact is True and a.distance == 0 and sender in w.digested:
                w.exact = dup if w.exact is None else min(w.exact, dup)
            elif w.near and (w.best is None or (a.distance, dup) < w.best):
                w.best = (a.distance, dup)
        # -- precedence (rule 6): copies kept before this page, now its copies.
        cap = (self.config.k + 1) * MAX_SUPERSEDED  # MAX_SUPERSEDED from each asked owner
        # Byte-identical ones are exact copies, on the word of an owner sent the digest (rule 7).
        same = (a.exact_superseded if sender in w.digested and isinstance(a.exact_superseded, tuple)
                else ())
        for pair in a.superseded if isinstance(a.superseded, tuple) else ():
            if (not isinstance(pair, tuple) or len(pair) != 2 or not isinstance(pair[0], str)
                    or pair[0] == a.url or len(pair[0]) > self.max_url or type(pair[1]) is not int
                    or not 0 <= pair[1] <= self.config.k or len(w.demoted) >= cap):
                self.stats.bad_answers += 1
            elif pair[0] in same and pair[1] == 0:
                w.demoted[pair[0]] = Demoted(pair[0], Kind.EXACT.value, 0)
            elif pair[0] not in w.demoted:
                w.demoted[pair[0]] = Demoted(pair[0], Kind.NEAR.value, pair[1])
        if w.owners:
            return None
        self._move(w, "answered")
        del self._waiting[w.url]
        return self._decide(w, Basis.BANDS)

    def expire(self, now: float) -> list[Verdict]:
        """The verdicts of pages whose deadline has passed at ``now`` (rules 2, 3)."""
        out: list[Verdict] = []
        while self._waiting:
            w = next(iter(self._waiting.values()))
            if w.deadline > now:
                break
            self._waiting.popitem(last=False)
            for o in w.owners & w.digested:  # rule 7: left unanswered
                self._no_digest[o] = now + DIGEST_BACKOFF * self.config.answer_timeout
                self.stats.digest_unanswered += 1
            self._move(w, "expired")
            self.stats.timed_out += 1
            out.append(self._decide(w, Basis.TIMED_OUT))
        return out

    # -- bands this peer owns ---------------------------------------------------------

    def serve(self, q: NearQuery, *, record: bool = True) -> NearAnswer:
        """Answer a band query (this peer's own, or a member's judged by :meth:`serve_member`):
        an exact copy first (rule 7), else the bands' nearest (``peer.core.dedupe.bands``).

        A copy the query displaced from the digest table is named among the
        answer's ``superseded`` (rule 6) at distance 0, and in its
        ``exact_superseded``: it is an exact copy of the asked page."""
        said = q.says if type(q.says) is int else int(Says.NONE)
        digest_ok = bool(q.digest) and isinstance(q.seen_at, (int, float)) and isinstance(q.url, str)
        if not q.bands:  # rule 9: a digest alone (a page without a SimHash)
            first, displaced = (self.exact.check(q.digest, q.seen_at, q.url, said, record=record)
                                if digest_ok else (None, None))
            gone = () if displaced is None else ((displaced, 0),)
            same = () if displaced is None else (displaced,)
            return NearAnswer(q.url, None, NO_DISTANCE, gone, exact_superseded=same) if first is None else \
                NearAnswer(q.url, first, 0, gone, exact=True, exact_superseded=same)
        near = self.bands.query(q, record=record)
        if digest_ok:
            first, displaced = self.exact.check(q.digest, q.seen_at, q.url, said, record=record)
            superseded, same = near.superseded, ()
            if displaced is not None:
                if displaced not in dict(superseded) and len(superseded) < MAX_SUPERSEDED:
                    superseded = (*superseded, (displaced, 0))
                if displaced in dict(superseded):
                    same = (displaced,)
            if first is not None:
                return NearAnswer(q.url, first, 0, superseded, exact=True, exact_superseded=same)
            if superseded is not near.superseded or same:
                return replace(near, superseded=superseded, exact_superseded=same)
        return near

    def serve_member(self, q: NearQuery, sender: str, wall: float,
                     host_owner: Callable[[str], str | None]) -> NearAnswer:
        """Answer member ``sender``'s band query as ``peer.core.dedupe.claims`` judges it at ``wall``
        (this peer's epoch time; ``host_owner``: who the ring gives a URL's host, None for no host)."""
        c = self.config
        claim = judge(q.seen_at, q.url, sender, wall, answer_timeout=c.answer_timeout,
                      skew=c.max_clock_skew, host_owner=host_owner)
        if claim is Claim.FUTURE:
            self.stats.refused_future += 1
        elif claim is Claim.TOO_OLD:
            self.stats.refused_too_old += 1
        elif claim is Claim.NOT_OWNER:
            self.stats.unrecorded_not_owner += 1
        if not claim.answered:
            return NearAnswer(q.url, None)
        return self.serve(q, record=claim.recorded)

    # -- moves --------------------------------------------------------------------------

    @staticmethod
    def _move(w: _Wait, event: str) -> None:
        to = _MOVES.get((w.state, event))
        if to is None:
            raise IllegalTransition(f"{w.url}: {event} in state {w.state.value}")
        w.state = to

    def _decide(self, w: _Wait, basis: Basis) -> Verdict:
        demoted = tuple(d for d in w.demoted.values()
                        if d.url != w.exact and (w.best is None or d.url != w.best[1]))
        if w.exact is not None:
            self.stats.exact += 1
            self.stats.exact_routed += 1
            return Verdict(w.url, Kind.EXACT, Basis.DIGEST, w.exact, 0, demoted)
        if w.best is not None:
            self.stats.near += 1
            return Verdict(w.url, Kind.NEAR, basis, w.best[1], w.best[0], demoted)
        return self._new(w.url, basis, demoted)

    def _new(self, url: str, basis: Basis, demoted: tuple[Demoted, ...] = ()) -> Verdict:
        self.stats.new += 1
        return Verdict(url, Kind.NEW, basis, superseded=demoted)
