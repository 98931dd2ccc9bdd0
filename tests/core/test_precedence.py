"""Which copy wins (peer.core.dedupe.precedence), and the tables that keep it (digests, bands, verdicts, held).

The order is checked step by step, then by property: any arrival order of a
set of copies leaves the same original, in the order itself, in a peer's
digest table, at a band owner, and in the rows once every correction is
applied.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from peer.core.config.dedupe import DedupeConfig
from peer.core.crawl.decisions import Reverdict
from peer.core.dedupe.bands import BandTable, NearAnswer, NearQuery
from peer.core.dedupe.digests import DigestTable, Seen
from peer.core.dedupe.precedence import (
    Claim, Demoted, Says, confirmed, has_session, key, original, says, session_free, unsessioned,
)
from peer.core.dedupe.held import HeldPages
from peer.core.dedupe.verdicts import Ask, Basis, Dedupe, Kind, Verdict

FP = 0x0123456789ABCDEF
DIGEST = hashlib.sha1(b"the page").digest()


def first_of(a: Claim, b: Claim) -> Claim:
    return original([a, b])


# -- the order, step by step ------------------------------------------------------


def test_a_page_whose_canonical_names_itself_beats_one_with_none_and_that_one_beats_a_copy() -> None:
    own = Claim("http://a.test/print/p1", Says.SELF, 9.0)
    none = Claim("http://a.test/p1", Says.NONE, 1.0)
    other = Claim("http://a.test/p", Says.OTHER, 0.0)
    assert first_of(own, none) is own and first_of(none, other) is none and first_of(own, other) is own


def test_a_copy_whose_canonical_names_the_other_page_loses_whatever_else() -> None:
    # The session view came first, has the shorter path, and names /page as canonical.
    view = Claim("http://a.test/p?sid=1", says("http://a.test/p?sid=1", "http://a.test/page"), 0.0)
    page = Claim("http://a.test/page", says("http://a.test/page", None), 5.0)
    assert view.said is Says.OTHER and first_of(view, page) is page


def test_then_the_url_without_session_or_tracking_parameters() -> None:
    assert has_session("http://a.test/p?sid=ab12") and has_session("http://a.test/p?x=1&utm_source=n")
    assert has_session("http://a.test/p?PHPSESSID=9") and not has_session("http://a.test/p?id=3")
    plain = Claim("http://a.test/a/much/longer/path", Says.NONE, 9.0)
    session = Claim("http://a.test/p?sid=1", Says.NONE, 0.0)
    assert first_of(plain, session) is plain


def test_then_the_shorter_path_then_the_earlier_fetch_then_the_url() -> None:
    assert first_of(Claim("http://a.test/a/index.html", seen_at=0.0), Claim("http://a.test/a/", seen_at=9.0)).url \
        == "http://a.test/a/"
    assert first_of(Claim("http://a.test/p1", seen_at=2.0), Claim("http://b.test/p2", seen_at=1.0)).url \
        == "http://b.test/p2"
    assert first_of(Claim("http://b.test/p", seen_at=1.0), Claim("http://a.test/p", seen_at=1.0)).url \
        == "http://a.test/p"


def test_a_hostile_say_counts_as_none() -> None:
    assert key("http://a.test/p", 7, 1.0) == key("http://a.test/p", Says.NONE, 1.0)


def test_session_free_urls() -> None:
    assert session_free("http://a.test/p?sid=1") == "http://a.test/p"
    assert session_free("http://a.test/p?id=2&sid=1&utm_source=x") == "http://a.test/p?id=2"
    assert session_free("http://a.test/p?id=2") is None
    assert session_free("http://a.test/p") is None


def test_a_canonical_confirms_only_session_names_on_its_own_site() -> None:
    assert confirmed("http://a.test/p?sid=1", "http://a.test/p") == {"sid"}
    assert confirmed("http://a.test/list?page=2", "http://a.test/list") == frozenset()  # pagination
    assert confirmed("http://a.test/p?sid=1", "http://b.test/p") == frozenset()  # another site
    assert confirmed("http://a.test/p?sid=1", "http://a.test/p?sid=1") == frozenset()
    links = ("http://a.test/q?sid=1", "http://a.test/r?sid=1&id=4", "http://b.test/s?sid=1",
             "http://a.test/q?sid=2")
    assert unsessioned("http://a.test/p?sid=1", "http://a.test/p", links) == (
        "http://a.test/q", "http://a.test/r?id=4", "http://b.test/s?sid=1")
    assert unsessioned("http://a.test/list?page=2", "http://a.test/list", links) is links


# -- any arrival order, the same original ----------------------------------------------------

HOSTS = ("a.test", "b.test")
PATHS = ("/p", "/p/", "/print/p", "/p?sid=7f", "/p?sid=01&x=1", "/index.html", "/p?id=2")


@st.composite
def copies(draw: st.DrawFn) -> list[Claim]:
    n = draw(st.integers(min_value=2, max_value=7))
    urls = draw(st.lists(st.sampled_from([f"http://{h}{p}" for h in HOSTS for p in PATHS]),
                         min_size=n, max_size=n, unique=True))
    out = []
    for u in urls:
        canon = draw(st.sampled_from([None, u, urls[0], "http://a.test/p"]))
        out.append(Claim(u, says(u, canon), float(draw(st.integers(min_value=0, max_value=3)))))
    return out


@settings(max_examples=300, deadline=None)
@given(copies(), st.randoms(use_true_random=False))
def test_the_order_gives_one_original_whatever_the_arrival(claims: list[Claim], rng) -> None:
    shuffled = claims[:]
    rng.shuffle(shuffled)
    assert original(shuffled) == original(claims)
    keys = [c.key for c in claims]
    assert len(set(keys)) == len(keys)  # total: no two copies tie


def _rows_after(arrivals: list[Claim], table: Callable[[Claim], tuple[str | None, list[str]]]) -> dict[str, str | None]:
    """Each copy's duplicate_of once every correction is applied, as the results would hold it."""
    rows: dict[str, str | None] = {}
    for c in arrivals:
        dup, demoted = table(c)
        rows[c.url] = dup
        for d in demoted:  # a correction demotes an original; a copy keeps its verdict (held rule 6)
            if rows.get(d) is None:
                rows[d] = c.url
    return rows


def _the_original(rows: dict[str, str | None]) -> str:
    kept = [u for u, dup in rows.items() if dup is None]
    assert len(kept) == 1, rows
    for u in rows:  # every copy leads to it, without a cycle
        seen = set()
        while rows[u] is not None:
            assert u not in seen
            seen.add(u)
            u = rows[u]  # type: ignore[assignment]
        assert u == kept[0]
    return kept[0]


@settings(max_examples=300, deadline=None)
@given(copies(), st.randoms(use_true_random=False))
def test_a_digest_table_keeps_the_original_whatever_the_arrival(claims: list[Claim], rng) -> None:
    arrivals = claims[:]
    rng.shuffle(arrivals)
    t = DigestTable()

    def check(c: Claim) -> tuple[str | None, list[str]]:
        seen, first = t.check(c.url, DIGEST, c.said, c.seen_at)
        if seen is Seen.DUPLICATE:
            return first, []
        return None, [first] if seen is Seen.SUPERSEDES and first else []

    assert _the_original(_rows_after(arrivals, check)) == original(claims).url
    assert t.check("http://z.test/zz/zz/zz?sid=9", DIGEST, Says.OTHER, 99.0) == (Seen.DUPLICATE, original(claims).url)


@settings(max_examples=300, deadline=None)
@given(copies(), st.randoms(use_true_random=False))
def test_a_band_owner_keeps_the_original_whatever_the_arrival(claims: list[Claim], rng) -> None:
    arrivals = claims[:]
    rng.shuffle(arrivals)
    t = BandTable(k=3)

    def query(c: Claim) -> tuple[str | None, list[str]]:
        a = t.query(NearQuery((0, 1, 2, 3), FP, c.url, "p1", c.seen_at, int(c.said)))
        return a.duplicate_of, [u for u, _ in a.superseded]

    assert _the_original(_rows_after(arrivals, query)) == original(claims).url


@settings(max_examples=200, deadline=None)
@given(copies(), st.randoms(use_true_random=False), st.booleans())
def test_a_peers_verdicts_keep_the_original_whatever_the_arrival(claims: list[Claim], rng, same_body) -> None:
    # Exact copies (one body) or near ones (one SimHash, bodies differ): the
    # Dedupe core asks the bands it owns itself, and its verdicts name the
    # copies a better page outranks.
    arrivals = claims[:]
    rng.shuffle(arrivals)
    d = Dedupe(DedupeConfig(enabled=True), "p1")

    def verdict(c: Claim) -> tuple[str | None, list[str]]:
        body = DIGEST if same_body else hashlib.sha1(c.url.encode()).digest()
        v = d.check(c.url, body, FP, c.seen_at, lambda key: "p1", c.said)
        if isinstance(v, Ask):
            got = None
            for _, q in v.queries:
                got = d.answer("p1", d.serve(q))
            assert isinstance(got, Verdict)
            v = got
        assert v.kind in (Kind.NEW, Kind.EXACT, Kind.NEAR)
        return v.duplicate_of, [s.url for s in v.superseded]

    assert _the_original(_rows_after(arrivals, verdict)) == original(claims).url


# -- the table replacement, by example ------------------------------------------------------


def test_the_plain_page_after_its_session_view_takes_the_digest_and_the_view_is_its_copy() -> None:
    # The peer's own digest table (pages without a SimHash are not also asked of a digest owner here).
    d = Dedupe(DedupeConfig(enabled=True, exact_across_ring=False), "p1")
    view = d.check("http://a.test/p?sid=1", DIGEST, None, 0.0, lambda key: "p1", Says.OTHER)
    assert isinstance(view, Verdict) and view.kind is Kind.NEW
    page = d.check("http://a.test/p", DIGEST, None, 1.0, lambda key: "p1", Says.SELF)
    assert isinstance(page, Verdict) and page.kind is Kind.NEW
    assert page.superseded == (Demoted("http://a.test/p?sid=1", "exact", 0),)
    again = d.check("http://a.test/p?sid=2", DIGEST, None, 2.0, lambda key: "p1", Says.OTHER)
    assert isinstance(again, Verdict) and (again.kind, again.duplicate_of) == (Kind.EXACT, "http://a.test/p")
    assert d.digests.stats.superseded == 1


def test_a_band_owner_answers_the_copies_a_better_page_outranks() -> None:
    t = BandTable(k=3)
    assert t.query(NearQuery((0, 1, 2, 3), FP, "http://a.test/p?sid=1", "p1", 0.0, 2)).duplicate_of is None
    a = t.query(NearQuery((0, 1, 2, 3), FP ^ 0b11, "http://a.test/p", "p2", 1.0, 0))
    assert (a.duplicate_of, a.superseded) == (None, (("http://a.test/p?sid=1", 2),))
    # A later view is a copy of the nearest earlier copy that outranks it (the first view,
    # itself now a copy of /p: duplicate_of leads to the original, as in the results).
    b = t.query(NearQuery((0, 1, 2, 3), FP, "http://a.test/p?sid=2", "p1", 2.0, 2))
    assert (b.duplicate_of, b.distance, b.superseded) == ("http://a.test/p?sid=1", 0, ())
    c = t.query(NearQuery((0, 1, 2, 3), FP ^ 0b11, "http://a.test/p?sid=3", "p1", 3.0, 2))
    assert (c.duplicate_of, c.distance) == ("http://a.test/p", 0)
    assert t.stats.superseded == 1


def test_an_owners_hostile_superseded_pairs_are_dropped_and_counted() -> None:
    d = Dedupe(DedupeConfig(enabled=True), "p1")
    ask = d.check("http://a.test/p", DIGEST, FP, 0.0, lambda key: "p2")
    assert isinstance(ask, Ask)
    v = d.answer("p2", NearAnswer("http://a.test/p", None, -1, (("http://a.test/p", 0), ("http://a.test/q", 9),
                                                                 ("http://a.test/r", 1))))
    assert isinstance(v, Verdict) and v.superseded == (Demoted("http://a.test/r", "near", 1),)
    assert d.stats.bad_answers == 2


def test_held_pages_correct_the_rows_of_the_copies_a_page_outranks() -> None:
    h = HeldPages(DedupeConfig(enabled=True), "p1", owner=lambda key: "p1", discover=lambda *a: [])
    v = Verdict("http://a.test/p", Kind.NEW, Basis.BANDS, superseded=(Demoted("http://a.test/p?sid=1", "near", 0),))
    assert h._corrections(v) == [Reverdict("http://a.test/p?sid=1", "http://a.test/p", "near", 0)]
    assert h.figures()["dedupe.superseded"] == 1
    # A member's correction: of a page of this peer's host, the engine's; else dropped and counted.
    fix = Reverdict("http://a.test/x", "http://a.test/y", "near", 0)
    assert h.reverdict(fix, remote=True) == [fix]
    other = HeldPages(DedupeConfig(enabled=True), "p1", owner=lambda key: "p2", discover=lambda *a: [])
    assert other.reverdict(fix, remote=True) == []
    assert other.figures()["dedupe_stray_reverdicts"] == 1
