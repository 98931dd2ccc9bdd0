"""Duplicate verdicts: exact by digest (first URL wins), near by band owners, timeouts (peer.core.dedupe.verdicts).

The digest table is peer.core.dedupe.digests, the section peer.core.config.dedupe;
exact copies across the ring, the digest with the band queries, peer.core.dedupe.exact.
"""

from __future__ import annotations

import hashlib
from random import Random

import pytest
from selectolax.lexbor import LexborHTMLParser

from localweb.sitegraph.nearcopies import Change, change, corpus
from peer.core.dedupe.verdicts import Ask, Basis, Dedupe, IllegalTransition, Kind, Verdict, WaitState, _Wait
from peer.core.config.dedupe import DedupeConfig
from peer.core.dedupe.digests import DigestTable, Seen
from peer.core.dedupe.bands import NearAnswer
from peer.core.dedupe.exact import digest_ring_key
from peer.core.dedupe.simhash import fingerprint, visible_text
from ring.hashring import HashRing

FP = 0x0123456789ABCDEF


def sha1(body: bytes) -> bytes:
    return hashlib.sha1(body).digest()


# -- exact duplicates -------------------------------------------------------------


def test_exact_duplicate_first_url_wins() -> None:
    t = DigestTable()
    d = sha1(b"the page")
    assert t.check("http://a/1", d) == (Seen.NEW, None)
    assert t.check("http://a/1?sid=2", d) == (Seen.DUPLICATE, "http://a/1")
    assert t.check("http://mirror/1", d) == (Seen.DUPLICATE, "http://a/1")
    assert t.check("http://a/1", d) == (Seen.UNCHANGED, "http://a/1")
    assert t.check("http://a/2", sha1(b"another page")) == (Seen.NEW, None)
    assert (t.stats.duplicates, t.stats.unchanged) == (2, 1)


def test_digest_table_forgets_the_oldest_past_its_cap() -> None:
    t = DigestTable(max_digests=3)
    for i in range(5):
        t.check(f"http://a/{i}", sha1(b"%d" % i))
    assert len(t) == 3
    assert t.stats.forgotten == 2
    assert t.check("http://b/0", sha1(b"0"))[0] is Seen.NEW  # forgotten: a miss, never a false match
    assert t.check("http://b/4", sha1(b"4")) == (Seen.DUPLICATE, "http://a/4")


def test_a_short_digest_is_our_bug() -> None:
    with pytest.raises(ValueError):
        DigestTable().check("http://a/", b"1234")


# -- near duplicates over a ring of peers ---------------------------------------------


class Ring:
    """Peers with a Dedupe each; messages delivered at once, or dropped for the peers in ``mute``."""

    def __init__(self, n: int = 3, **config: object) -> None:
        ids = [f"p{i}" for i in range(1, n + 1)]
        self.ring = HashRing(dict.fromkeys(ids, 1.0))
        self.peers = {p: Dedupe(DedupeConfig(**{"enabled": True, **config}), p) for p in ids}  # type: ignore[arg-type]
        self.mute: set[str] = set()

    def fetch(self, peer: str, url: str, body: bytes, now: float) -> Verdict | Ask:
        fp = fingerprint(visible_text(LexborHTMLParser(body)))
        out = self.peers[peer].check(url, sha1(body), fp, now, self.ring.owner)
        if isinstance(out, Verdict):
            return out
        verdict: Verdict | Ask = out
        for owner, query in out.queries:
            if owner in self.mute:
                continue
            answer = self.peers[owner].serve(query)
            got = self.peers[query.reply_to].answer(owner, answer)
            if got is not None:
                verdict = got
        return verdict


@pytest.fixture(scope="module")
def pages() -> tuple[bytes, ...]:
    return corpus(6, changes=()).originals


def test_near_copy_on_another_peer_is_a_duplicate_of_the_first(pages: tuple[bytes, ...]) -> None:
    r = Ring()
    first = r.fetch("p1", "http://s001/a", pages[0], 1.0)
    assert first == Verdict("http://s001/a", Kind.NEW, Basis.BANDS)
    copy = change(pages[0], Change.DATE, Random(2))
    v = r.fetch("p2", "http://mirror/a", copy, 2.0)
    assert isinstance(v, Verdict)
    assert (v.kind, v.basis, v.duplicate_of) == (Kind.NEAR, Basis.BANDS, "http://s001/a")
    assert 0 <= v.distance <= 3
    other = r.fetch("p3", "http://s002/b", pages[1], 3.0)
    assert isinstance(other, Verdict) and other.kind is Kind.NEW


def test_exact_copy_on_the_same_peer_needs_no_message(pages: tuple[bytes, ...]) -> None:
    r = Ring()
    r.fetch("p1", "http://s001/a", pages[0], 1.0)
    v = r.peers["p1"].check("http://s001/a?sid=9", sha1(pages[0]), FP, 2.0, r.ring.owner)
    assert v == Verdict("http://s001/a?sid=9", Kind.EXACT, Basis.DIGEST, "http://s001/a", 0)


def test_exact_copy_on_another_peer_is_exact_through_its_band_0_owner(pages: tuple[bytes, ...]) -> None:
    r = Ring()
    r.fetch("p1", "http://s001/a", pages[0], 1.0)
    v = r.fetch("p2", "http://mirror/a", pages[0], 2.0)
    assert isinstance(v, Verdict)
    assert (v.kind, v.basis, v.duplicate_of, v.distance) == (Kind.EXACT, Basis.DIGEST, "http://s001/a", 0)
    assert r.peers["p2"].stats.exact_routed == 1
    # Off (a ring with peers of an older build): the band owners find it, at distance 0.
    r = Ring(exact_across_ring=False)
    r.fetch("p1", "http://s001/a", pages[0], 1.0)
    v = r.fetch("p2", "http://mirror/a", pages[0], 2.0)
    assert isinstance(v, Verdict) and (v.kind, v.duplicate_of, v.distance) == (Kind.NEAR, "http://s001/a", 0)


def test_a_better_mirror_after_a_worse_one_on_another_peer_demotes_it_as_exact(pages: tuple[bytes, ...]) -> None:
    # The worse copy (a session id) is fetched first; the plain page after it takes the
    # entry, and the view's correction says exact: the same bytes, whichever came first.
    r = Ring()
    first = r.fetch("p1", "http://mirror/a?sid=1", pages[0], 1.0)
    assert isinstance(first, Verdict) and first.kind is Kind.NEW
    v = r.fetch("p2", "http://s001/a", pages[0], 2.0)
    assert isinstance(v, Verdict) and v.kind is Kind.NEW
    assert [(d.url, d.kind, d.distance) for d in v.superseded] == [("http://mirror/a?sid=1", "exact", 0)]
    # A near copy outranked the same way stays near.
    near = change(pages[1], Change.DATE, Random(3))
    r.fetch("p1", "http://mirror/b?sid=1", near, 3.0)
    w = r.fetch("p2", "http://s001/b", pages[1], 4.0)
    assert isinstance(w, Verdict) and [d.kind for d in w.superseded] == ["near"]


def test_the_digest_rides_with_each_band_query_no_message_more() -> None:
    d = Dedupe(DedupeConfig(enabled=True, k=3), "p1")
    ask = d.check("http://a/", sha1(b"x"), FP, 0.0, lambda key: "p1" if key.split("/")[1] in "02" else "p2")
    assert isinstance(ask, Ask) and len(ask.queries) == 2
    assert all(q.digest == int.from_bytes(sha1(b"x")[:8], "big") for _, q in ask.queries)


def test_a_copy_asked_under_another_view_of_the_ring_is_exact_at_an_owner_both_views_share(
        pages: tuple[bytes, ...]) -> None:
    """The original's peer (p2) had not seen p3 join: every band went to p1. Its mirror's peer (p1)
    asks p3 for band 0 and itself for the rest: p1, asked by both, knows the digest."""
    peers = {p: Dedupe(DedupeConfig(enabled=True), p) for p in ("p1", "p2", "p3")}
    fp = fingerprint(visible_text(LexborHTMLParser(pages[0])))

    def ask(peer: str, url: str, now: float, owner_of) -> Verdict | None:  # type: ignore[no-untyped-def]
        out = peers[peer].check(url, sha1(pages[0]), fp, now, owner_of)
        assert isinstance(out, Ask)
        got = None
        for owner, q in out.queries:
            got = peers[peer].answer(owner, peers[owner].serve(q)) or got
        return got

    assert ask("p2", "http://s001/a", 1.0, lambda key: "p1").kind is Kind.NEW  # type: ignore[union-attr]
    v = ask("p1", "http://mirror/a", 2.0, lambda key: "p3" if key.split("/")[1] == "0" else "p1")
    assert v is not None and (v.kind, v.duplicate_of) == (Kind.EXACT, "http://s001/a")


def test_an_exact_answer_counts_only_from_an_owner_sent_the_digest(pages: tuple[bytes, ...]) -> None:
    d = Dedupe(DedupeConfig(enabled=True, k=3), "p1")
    owner = lambda key: "p2" if key.split("/")[1] == "0" else "p3"  # noqa: E731
    d._no_digest["p3"] = 1e9  # p3 left a digest unanswered: it is sent none
    ask = d.check("http://a/", sha1(b"x"), FP, 0.0, owner)
    assert isinstance(ask, Ask) and [(o, q.digest != 0) for o, q in ask.queries] == [("p2", True), ("p3", False)]
    assert d.answer("p3", NearAnswer("http://a/", "http://evil/", 0, exact=True)) is None
    v = d.answer("p2", NearAnswer("http://a/", None))
    assert isinstance(v, Verdict) and v.kind is Kind.NEAR and v.duplicate_of == "http://evil/"  # not exact


def test_of_two_byte_identical_copies_the_first_in_the_order_wins_at_the_digest_owner_whatever_the_arrival() -> None:
    from peer.core.dedupe.exact import ExactTable
    from peer.core.dedupe.precedence import Says

    t = ExactTable(10)
    assert t.check(7, 5.0, "http://b/") == (None, None)  # B arrives first, fetched at 5
    assert t.check(7, 4.0, "http://a/") == (None, "http://b/")  # A, fetched at 4, takes the entry from B
    assert t.check(7, 6.0, "http://c/") == ("http://a/", None)  # the earliest is the original
    assert t.check(7, 9.0, "http://a/") == (None, None)  # a URL is not its own copy
    # A later copy with a session id loses; one whose canonical names itself outranks an earlier fetch.
    assert t.check(7, 3.0, "http://d/?sid=1") == ("http://a/", None)
    assert t.check(7, 8.0, "http://d/", Says.SELF) == (None, "http://a/")
    # Not recorded (a claim not taken): answered, displaces nothing.
    assert t.check(7, 1.0, "http://z/", Says.SELF, record=False) == (None, None)
    assert t.check(7, 9.0, "http://f/") == ("http://d/", None)
    for n in range(20):
        t.check(100 + n, 1.0, f"http://x/{n}")
    assert len(t) == 10 and t.stats.forgotten == 11


def test_a_recrawl_with_the_same_body_is_unchanged(pages: tuple[bytes, ...]) -> None:
    r = Ring()
    r.fetch("p1", "http://s001/a", pages[0], 1.0)
    v = r.fetch("p1", "http://s001/a", pages[0], 900.0)
    assert isinstance(v, Verdict) and v.kind is Kind.UNCHANGED


def test_one_query_per_owner_naming_its_bands() -> None:
    d = Dedupe(DedupeConfig(enabled=True, k=3), "p1")
    ask = d.check("http://a/", sha1(b"x"), FP, 0.0, lambda key: "p1" if key.split("/")[1] in "02" else "p2")
    assert isinstance(ask, Ask)
    assert [(owner, q.bands) for owner, q in ask.queries] == [("p1", (0, 2)), ("p2", (1, 3))]
    assert all(q.reply_to == "p1" and q.fingerprint == FP for _, q in ask.queries)


def test_no_text_is_new_without_asking_unless_its_digest_goes_across_the_ring() -> None:
    d = Dedupe(DedupeConfig(enabled=True, exact_across_ring=False), "p1")
    assert d.check("http://a/", sha1(b"x"), None, 0.0, lambda k: "p2") == Verdict("http://a/", Kind.NEW, Basis.NO_TEXT)
    assert d.waiting() == 0
    # verdicts rule 8: the digest alone, to the owner of its own ring key, in a query naming no band.
    d = Dedupe(DedupeConfig(enabled=True), "p1")
    ask = d.check("http://a/", sha1(b"x"), None, 0.0, lambda k: "p2" if k.startswith("page-digest/") else "p3")
    assert isinstance(ask, Ask) and d.waiting() == 1
    [(owner, q)] = ask.queries
    assert owner == "p2" and q.bands == () and q.digest == int.from_bytes(sha1(b"x")[:8], "big")
    # A near answer to it is not taken; the page is new.
    v = d.answer("p2", NearAnswer("http://a/", "http://b/", 1))
    assert v == Verdict("http://a/", Kind.NEW, Basis.BANDS)


def test_a_short_page_mirrored_on_another_peer_is_exact_through_its_digests_owner() -> None:
    """A page under min_words has no SimHash, so no bands: its digest goes alone (verdicts rule 8)."""
    r = Ring()
    short = b"<html><body><p>Sign in</p></body></html>"
    assert r.fetch("p1", "http://s001/login", short, 1.0).kind is Kind.NEW  # type: ignore[union-attr]
    v = r.fetch("p2", "http://mirror/login", short, 2.0)
    assert isinstance(v, Verdict) and (v.kind, v.duplicate_of) == (Kind.EXACT, "http://s001/login")
    owner = r.ring.owner(digest_ring_key(int.from_bytes(sha1(short)[:8], "big")))
    assert len(r.peers[owner].bands) == 0 and len(r.peers[owner].exact) == 1  # no band entry: a digest only


def test_disabled_says_new_and_keeps_nothing() -> None:
    d = Dedupe(DedupeConfig(enabled=False), "p1")
    for _ in range(2):
        v = d.check("http://a/", sha1(b"x"), FP, 0.0, lambda k: "p2")
        assert v == Verdict("http://a/", Kind.NEW, Basis.DISABLED)
    assert len(d.digests) == 0


# -- the waiting page's state machine ---------------------------------------------------


def _ask(d: Dedupe, url: str, now: float, owners: tuple[str, ...] = ("p2", "p3")) -> Ask:
    ask = d.check(url, sha1(url.encode()), FP, now,
                  lambda key: owners[int(key.split("/")[1]) % len(owners)])
    assert isinstance(ask, Ask)
    return ask


def test_a_page_without_answers_is_new_at_its_deadline() -> None:
    d = Dedupe(DedupeConfig(enabled=True, answer_timeout=10.0), "p1")
    ask = _ask(d, "http://a/", 100.0)
    assert ask.deadline == 110.0 == d.next_deadline()
    assert d.expire(109.999) == []
    assert d.expire(110.0) == [Verdict("http://a/", Kind.NEW, Basis.TIMED_OUT)]
    assert d.stats.timed_out == 1
    assert d.waiting() == 0 and d.next_deadline() is None
    # The answer that comes after is late: dropped, counted.
    assert d.answer("p2", NearAnswer("http://a/", "http://b/", 1)) is None
    assert d.stats.late_answers == 1


def test_a_duplicate_answered_in_time_counts_at_the_deadline() -> None:
    d = Dedupe(DedupeConfig(enabled=True, answer_timeout=5.0), "p1")
    _ask(d, "http://a/", 0.0)
    assert d.answer("p2", NearAnswer("http://a/", "http://orig/", 2)) is None  # p3 still owes
    assert d.expire(5.0) == [Verdict("http://a/", Kind.NEAR, Basis.TIMED_OUT, "http://orig/", 2)]


def test_the_verdict_waits_for_every_owner_and_takes_the_nearest() -> None:
    d = Dedupe(DedupeConfig(enabled=True), "p1")
    _ask(d, "http://a/", 0.0)
    assert d.answer("p3", NearAnswer("http://a/", "http://far/", 3)) is None
    v = d.answer("p2", NearAnswer("http://a/", "http://close/", 1))
    assert v == Verdict("http://a/", Kind.NEAR, Basis.BANDS, "http://close/", 1)
    assert d.expire(1e9) == []


def test_expiry_goes_oldest_first_and_leaves_the_rest() -> None:
    d = Dedupe(DedupeConfig(enabled=True, answer_timeout=10.0), "p1")
    _ask(d, "http://a/", 0.0)
    _ask(d, "http://b/", 5.0)
    assert [v.url for v in d.expire(12.0)] == ["http://a/"]
    assert d.waiting() == 1 and d.next_deadline() == 15.0


def test_answers_from_peers_not_asked_are_stray() -> None:
    d = Dedupe(DedupeConfig(enabled=True), "p1")
    _ask(d, "http://a/", 0.0)
    assert d.answer("p9", NearAnswer("http://a/", "http://x/", 0)) is None
    assert d.stats.stray_answers == 1
    # The same owner twice: its second answer is stray too.
    d.answer("p2", NearAnswer("http://a/", None))
    assert d.answer("p2", NearAnswer("http://a/", "http://x/", 0)) is None
    assert d.stats.stray_answers == 2


@pytest.mark.parametrize("bad", [
    NearAnswer("http://a/", "http://x/", 4),  # beyond k = 3
    NearAnswer("http://a/", "http://x/", -1),
    NearAnswer("http://a/", "http://a/", 0),  # itself
    NearAnswer("http://a/", "http://x/" + "y" * 9000, 1),
])
def test_bad_answers_count_as_no_duplicate(bad: NearAnswer) -> None:
    d = Dedupe(DedupeConfig(enabled=True, k=3), "p1")
    _ask(d, "http://a/", 0.0, owners=("p2",))
    assert d.answer("p2", bad) == Verdict("http://a/", Kind.NEW, Basis.BANDS)
    assert d.stats.bad_answers == 1


def test_an_answer_naming_no_url_is_bad() -> None:
    d = Dedupe(DedupeConfig(enabled=True), "p1")
    _ask(d, "http://a/", 0.0)
    assert d.answer("p2", NearAnswer(["http://a/"], None)) is None  # type: ignore[arg-type]
    assert d.stats.bad_answers == 1 and d.waiting() == 1


def test_past_max_waiting_a_page_is_new_at_once() -> None:
    d = Dedupe(DedupeConfig(enabled=True, max_waiting=2), "p1")
    _ask(d, "http://a/", 0.0)
    _ask(d, "http://b/", 0.0)
    v = d.check("http://c/", sha1(b"c"), FP, 0.0, lambda k: "p2")
    assert v == Verdict("http://c/", Kind.NEW, Basis.BUSY)
    assert d.stats.busy == 1 and d.waiting() == 2


def test_a_final_state_cannot_move() -> None:
    w = _Wait("http://a/", 0.0, set(), WaitState.TIMED_OUT)
    with pytest.raises(IllegalTransition):
        Dedupe._move(w, "answered")
    with pytest.raises(IllegalTransition):
        Dedupe._move(_Wait("http://a/", 0.0, set(), WaitState.ANSWERED), "expired")


def test_a_ring_that_never_answers_costs_only_the_timeout(pages: tuple[bytes, ...]) -> None:
    r = Ring(answer_timeout=3.0)
    r.mute = {"p1", "p2", "p3"}
    ask = r.fetch("p1", "http://s001/a", pages[0], 0.0)
    assert isinstance(ask, Ask)
    assert r.peers["p1"].expire(3.0) == [Verdict("http://s001/a", Kind.NEW, Basis.TIMED_OUT)]


# -- config ------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [{"k": 8}, {"k": -1}, {"shingle": 0}, {"max_digests": 0}, {"answer_timeout": 0}])
def test_config_checks_its_values(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="dedupe"):
        DedupeConfig(**bad)  # type: ignore[arg-type]


def test_config_keys_are_documented() -> None:
    from dataclasses import fields
    for f in fields(DedupeConfig):
        assert f.metadata["doc"], f.name


def test_an_owner_that_leaves_a_digest_unanswered_is_sent_none_for_a_while() -> None:
    """verdicts rule 6: a peer of an older build refuses a query with a digest; one page waits, not all."""
    from peer.core.dedupe.verdicts import DIGEST_BACKOFF

    d = Dedupe(DedupeConfig(enabled=True, k=3, answer_timeout=10.0), "p1")
    owner = lambda key: "p2"  # noqa: E731
    ask = d.check("http://a/", sha1(b"a"), FP, 0.0, owner)
    assert isinstance(ask, Ask) and ask.queries[0][1].digest != 0
    [v] = d.expire(10.0)  # p2 (an older build) dropped it: the page waited its timeout
    assert v.basis is Basis.TIMED_OUT and d.stats.digest_unanswered == 1
    ask = d.check("http://b/", sha1(b"b"), FP, 11.0, owner)
    assert isinstance(ask, Ask) and ask.queries[0][1].digest == 0  # no digest: p2 answers, in time
    assert isinstance(d.answer("p2", NearAnswer("http://b/", None)), Verdict)
    later = 10.0 + DIGEST_BACKOFF * 10.0
    ask = d.check("http://c/", sha1(b"c"), FP, later, owner)
    assert isinstance(ask, Ask) and ask.queries[0][1].digest != 0  # asked again after the backoff
