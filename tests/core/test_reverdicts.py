"""The better copy wins in the crawl: rows corrected, session views' links, corrections over the ring.

peer.core.dedupe.held rules 6 and 7 and peer.core.crawl.outcomes, driven
synchronously as tests/core/test_duplicates.py drives them: a page is
fetched and parsed by the crawl's own ``parse_response`` with ``[dedupe]`` on.
"""

from __future__ import annotations

from peer.core.crawl.decisions import Reverdict
from peer.core.urls.normalize import host_key
from ring import messages as wire
from ring.actions import Reverdicted, Send
from tests.core.test_duplicates import (
    SITE, answered_here, crawl_core, fetch, page, queued, ring_peer, rows, text,
)
from tests.core.test_peercore import R2, RING, hosts_of, known


def view(words: str, canonical: str, *links: str) -> bytes:
    return page(words, *links).replace(b"<html>", f'<html><head><link rel="canonical" href="{canonical}">'
                                                   f"</head>".encode(), 1)


def test_a_page_after_its_session_view_is_the_original_and_the_views_row_is_corrected():
    c = crawl_core()
    words = text(11)
    # The session view first: nothing to compare with, so new; its canonical is
    # discovered, and its links on the site lose the sid its canonical confirms.
    first = answered_here(c, fetch(c, f"{SITE}/p?sid=1", view(words, f"{SITE}/p", f"{SITE}/q?sid=1",
                                                                    "http://other.web.test/r?sid=1"), 0.0), 0.0)
    [row] = rows(first)
    assert row.duplicate_kind is None
    assert queued(first) == {f"{SITE}/p", f"{SITE}/q", "http://other.web.test/r?sid=1"}
    # The page itself, later: it outranks the view (its canonical names itself).
    later = answered_here(c, fetch(c, f"{SITE}/p", view(words, f"{SITE}/p", f"{SITE}/q", f"{SITE}/only"), 10.0),
                          10.0)
    [row] = rows(later)
    assert row.duplicate_kind is None and f"{SITE}/only" in queued(later)  # its links followed
    fixes = [e for e in later if isinstance(e, Reverdict)]
    assert fixes == [Reverdict(f"{SITE}/p?sid=1", f"{SITE}/p", "near", 0)]
    # Another view after the page (on a mirror: the site's host is busy with its links): a copy of it.
    again = answered_here(c, fetch(c, "http://mirror.web.test/p?sid=2",
                                   view(words, f"{SITE}/p", f"{SITE}/q", f"{SITE}/only"), 20.0), 20.0)
    [row] = rows(again)
    assert (row.duplicate_kind, row.duplicate_of) == ("exact", f"{SITE}/p")  # the same bytes
    assert c.dup_figures()["dedupe.superseded"] == 1


def test_a_copy_has_its_session_free_url_discovered():
    c = crawl_core()
    body = page(text(12))
    answered_here(c, fetch(c, f"{SITE}/a?sid=1", body, 0.0), 0.0)
    # The same bytes under another session: an exact copy, and the URL without
    # a session is discovered, so the better copy is fetched and wins.
    again = fetch(c, f"{SITE}/a?sid=2", body, 1.0)
    [row] = rows(again)
    assert (row.duplicate_kind, row.duplicate_of) == ("exact", f"{SITE}/a?sid=1")
    assert queued(again) == {f"{SITE}/a"}
    assert c.dup_figures()["dedupe.originals_discovered"] == 1


def test_a_correction_goes_to_the_owner_of_the_pages_host_and_a_members_is_checked():
    p1 = ring_peer()
    known(p1)
    [theirs] = hosts_of(p1, "p2")
    [mine] = hosts_of(p1, "p1")
    fix = Reverdict(f"http://{theirs}/a?sid=1", f"http://{mine}/a", "near", 1)
    # A page of p2's host: its row is p2's, so the correction is sent there.
    assert p1.routed([fix], 0.1) == [Send("p2", wire.Reverdict(RING, "p1", fix.url, fix.duplicate_of, "near", 1))]
    # Of our own host: the engine's (it updates the row).
    own = Reverdict(f"http://{mine}/b?sid=1", f"http://{mine}/b", "exact", 0)
    assert p1.routed([own], 0.1) == [own]
    # A member's correction of one of our pages: taken; of another's host: dropped, counted.
    m = wire.Reverdict(RING, "p2", own.url, own.duplicate_of, "exact", 0)
    assert p1.node.receive(R2, m, 0.2) == [Reverdicted(m)]  # type: ignore[union-attr]
    assert p1.receive(R2, m, 0.2, wall=0.2) == [own]
    stray = wire.Reverdict(RING, "p2", fix.url, fix.duplicate_of, "near", 1)
    assert p1.receive(R2, stray, 0.3, wall=0.3) == []
    assert p1.crawl.dup_figures()["dedupe_stray_reverdicts"] == 1
    # A stranger's, on its own route: the node drops it.
    assert p1.receive(b"p7/bbbb", wire.Reverdict(RING, "p7", own.url, "http://x.test/", "near", 0), 0.4,
                      wall=0.4) == []
    assert p1.node.dropped["unknown_sender"] == 1  # type: ignore[union-attr]
    assert host_key(own.url) == mine
