"""Sitemaps: one document parsed from hostile bytes (peer.core.sitemaps.document), the tracker (peer.core.sitemaps.tracker).

The hostile documents are the ones localweb.hostile.sitemaps serves, so what the
test web offers a crawler is what is checked here (tests/e2e/test_sitemapweb.py
checks that the served web gives the same bytes).
"""

import gzip
import tracemalloc
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localweb.hostile import sitemaps as web
from peer.core.sitemaps.document import (
    Authority, ChangeFreq, Problem, SitemapKind, SitemapLimits, host_authority, location_authority,
    parse, w3c_datetime,
)
from peer.core.sitemaps.tracker import Found, SitemapTracker

HOST = web.SITEMAP_HOST
ROOT = f"http://{HOST}"


def _epoch(*args: int) -> float:
    return datetime(*args, tzinfo=timezone.utc).timestamp()


def _body(path: str) -> bytes:
    return web.document(HOST, path)


# -- a valid site: robots.txt -> index -> plain and gzipped children ---------------------


def test_robots_names_the_index_and_the_index_its_children():
    assert [f"{ROOT}/sitemap_index.xml"] == [
        line.split(": ", 1)[1] for line in web.robots_txt(HOST).decode().splitlines()
        if line.startswith("Sitemap:")]
    index = parse(_body("/sitemap_index.xml"), f"{ROOT}/sitemap_index.xml")
    assert index.kind is SitemapKind.INDEX and not index.problems
    assert [(s.loc, s.lastmod) for s in index.sitemaps] == [
        (f"{ROOT}/sitemap-pages.xml", _epoch(2024, 5, 1, 12, 0, 0)),
        (f"{ROOT}/sitemap-hidden.xml.gz", _epoch(2024, 5, 2)),
    ]


def test_a_gzipped_child_gives_the_pages_only_it_names_with_their_hints():
    body = _body("/sitemap-hidden.xml.gz")
    assert body[:2] == b"\x1f\x8b"
    got = parse(body, f"{ROOT}/sitemap-hidden.xml.gz")
    assert got.kind is SitemapKind.URLSET and not got.problems
    assert [u.loc for u in got.urls] == [f"{ROOT}{p}" for p in web.HIDDEN]
    first = got.urls[0]
    assert first.lastmod == _epoch(2024, 4, 30, 8, 30, 0) - 2 * 3600  # +02:00
    assert first.priority == 0.9 and first.changefreq is ChangeFreq.WEEKLY
    # The hidden pages are linked from no page of the site.
    for path in web.PAGES:
        assert not any(h in web.document(HOST, path).decode() for h in web.HIDDEN)


def test_the_plain_child_lists_the_linked_pages():
    got = parse(_body("/sitemap-pages.xml"), f"{ROOT}/sitemap-pages.xml")
    assert [u.loc for u in got.urls] == [f"{ROOT}{p}" for p in web.PAGES] and not got.problems
    assert all(u.lastmod is not None for u in got.urls)


def test_a_text_sitemap_is_one_url_a_line():
    got = parse(_body("/sitemap.txt"), f"{ROOT}/sitemap.txt")
    assert got.kind is SitemapKind.TEXT
    assert [u.loc for u in got.urls] == [f"{ROOT}{p}" for p in web.PAGES]
    assert got.problems == {Problem.BAD_LOC: 1}  # its ftp:// line


def test_an_error_page_is_no_sitemap_and_no_attack():
    got = parse(b"<!DOCTYPE html><html><body>Not found</body></html>", f"{ROOT}/sitemap.xml")
    assert got.kind is SitemapKind.NONE and got.problems == {Problem.NOT_A_SITEMAP: 1}
    assert parse(b"Not found\n", f"{ROOT}/sitemap.txt").problems == {Problem.NOT_A_SITEMAP: 1}


# -- fields -------------------------------------------------------------------------------


@pytest.mark.parametrize("text, want", [
    ("2024", _epoch(2024, 1, 1)),
    ("2024-02", _epoch(2024, 2, 1)),
    ("2024-02-29", _epoch(2024, 2, 29)),
    ("2024-02-29T10:20Z", _epoch(2024, 2, 29, 10, 20)),
    ("2024-02-29T10:20:30.5+01:00", _epoch(2024, 2, 29, 9, 20, 30) + 0.5),
    ("2024-02-29T10:20:30-0130", _epoch(2024, 2, 29, 11, 50, 30)),
    (" 2024-02-29 10:20:30 ", _epoch(2024, 2, 29, 10, 20, 30)),
    ("2023-02-29", None), ("2024-13-01", None), ("yesterday", None), ("", None),
    ("2024-01-01T10:00+25:00", None), ("99999-01-01", None),
])
def test_w3c_datetime(text, want):
    assert w3c_datetime(text) == want


def test_bad_fields_are_counted_and_the_entry_kept():
    doc = (b"<urlset><url><loc>http://h.test/a</loc><lastmod>soon</lastmod><priority>1.5</priority>"
           b"<changefreq>sometimes</changefreq></url><url><lastmod>2024</lastmod></url>"
           b"<url><loc>javascript:alert(1)</loc></url><url><loc>http://h.test/b</loc>"
           b"<priority>NaN</priority><changefreq> HOURLY </changefreq></url></urlset>")
    got = parse(doc, "http://h.test/sitemap.xml")
    assert [(u.loc, u.lastmod, u.priority, u.changefreq) for u in got.urls] == [
        ("http://h.test/a", None, None, None), ("http://h.test/b", None, None, ChangeFreq.HOURLY)]
    assert got.problems == {Problem.BAD_LASTMOD: 1, Problem.BAD_PRIORITY: 2,
                            Problem.BAD_CHANGEFREQ: 1, Problem.BAD_LOC: 2}


def test_positions_not_namespaces_decide_what_a_loc_is():
    doc = (b'<urlset xmlns="http://www.google.com/schemas/sitemap/0.84" xmlns:i="urn:img">'
           b"<url><i:image><loc>http://h.test/image</loc></i:image><loc>http://h.test/page</loc></url>"
           b"<sitemap><loc>http://h.test/s.xml</loc></sitemap></urlset>")
    got = parse(doc, "http://h.test/sitemap.xml")
    assert [u.loc for u in got.urls] == ["http://h.test/page"]
    assert got.problems == {Problem.MISPLACED: 1}


# -- authority ----------------------------------------------------------------------------


def test_a_sitemap_lists_only_urls_under_its_own_directory():
    got = parse(_body("/blog/sitemap.xml"), f"{ROOT}/blog/sitemap.xml")
    assert [u.loc for u in got.urls] == [f"{ROOT}/blog/post-1", f"{ROOT}/blog/2024/post-2"]
    # /about, /blog-old/x (a prefix of the string, not of the path), https://, another port.
    assert got.problems == {Problem.WRONG_HOST: 4}


def test_robots_txt_cross_submission_grants_the_whole_host():
    grant = host_authority(f"{ROOT}/robots.txt")
    got = parse(_body("/blog/sitemap.xml"), f"{ROOT}/blog/sitemap.xml", [grant])
    assert f"{ROOT}/about" in [u.loc for u in got.urls] and got.problems == {Problem.WRONG_HOST: 2}


def test_urls_of_another_host_are_dropped():
    got = parse(web.document(web.HOSTILE_HOST, "/wrong-host.xml"), f"http://{web.HOSTILE_HOST}/wrong-host.xml")
    assert got.urls == () and got.problems == {Problem.WRONG_HOST: web.WRONG_HOST_URLS}
    # A robots.txt elsewhere may grant its own host to a sitemap here (cross-submission).
    other = host_authority("http://other.test/robots.txt")
    got = parse(web.document(web.HOSTILE_HOST, "/wrong-host.xml"),
                f"http://{web.HOSTILE_HOST}/wrong-host.xml", [other])
    assert {u.loc.split("/")[2] for u in got.urls} == {"other.test"}


def test_authorities():
    assert location_authority("HTTP://H.test:80/a/b/s.xml?x=/y/") == Authority("http://h.test", "/a/b/")
    assert host_authority("https://h.test:8443/robots.txt") == Authority("https://h.test:8443", "/")
    assert location_authority("ftp://h.test/s.xml") is None
    a = Authority("http://h.test", "/a/")
    assert a.covers("http://h.test/a/x") and not a.covers("http://h.test/ab")
    assert not a.covers("http://h.test:81/a/x") and not a.covers("http://h.test.evil/a/x")


def test_an_index_names_sitemaps_anywhere_on_its_host_only():
    doc = (b"<sitemapindex><sitemap><loc>http://h.test/deep/er/s.xml</loc></sitemap>"
           b"<sitemap><loc>http://evil.test/s.xml</loc></sitemap></sitemapindex>")
    got = parse(doc, "http://h.test/dir/index.xml")
    assert [s.loc for s in got.sitemaps] == ["http://h.test/deep/er/s.xml"]
    assert got.problems == {Problem.WRONG_HOST: 1}


# -- hostile documents: each bounded, each counted ----------------------------------------


def _hostile(path: str, limits: SitemapLimits = SitemapLimits()):
    return parse(web.document(web.HOSTILE_HOST, path), f"http://{web.HOSTILE_HOST}{path}", (), limits)


def test_a_gzip_bomb_stops_at_the_size_cap():
    body = web.document(web.HOSTILE_HOST, "/bomb.xml.gz")
    assert len(body) < 1 << 20  # ~100 KiB on the wire for 1 GiB inflated
    limits = SitemapLimits(max_bytes=4 << 20)
    tracemalloc.start()
    try:
        got = parse(body, f"http://{web.HOSTILE_HOST}/bomb.xml.gz", (), limits)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got.problems == {Problem.TOO_LARGE: 1} and got.size == 4 << 20
    assert [u.loc for u in got.urls] == [f"http://{web.HOSTILE_HOST}/bomb/0"]
    assert peak < 2 << 20, peak  # steps of 64 KiB, never the document


def test_sixty_thousand_urls_are_cut_at_fifty_thousand():
    got = _hostile("/sixty-thousand.xml")
    assert len(got.urls) == 50_000 and got.entries == 50_001
    assert got.problems == {Problem.TOO_MANY_URLS: 1}
    assert got.urls[-1].loc == f"http://{web.HOSTILE_HOST}/many/49999"


@pytest.mark.parametrize("path", ["/billion-laughs.xml", "/quadratic.xml", "/xxe.xml", "/external-dtd.xml"])
def test_entities_and_external_references_are_refused_whole(path):
    got = _hostile(path)
    assert got.urls == () and got.kind is SitemapKind.NONE
    assert got.problems == {Problem.ENTITIES: 1}


def test_a_sitemap_in_a_subdirectory_keeps_to_it():
    got = _hostile("/sub/sitemap.xml")
    assert [u.loc for u in got.urls] == [f"http://{web.HOSTILE_HOST}/sub/page"]
    assert got.problems == {Problem.WRONG_HOST: 3}


def test_deep_nesting_and_many_names_end_the_parse():
    assert _hostile("/deep.xml").problems == {Problem.TOO_DEEP: 1}
    assert _hostile("/names.xml").problems == {Problem.TOO_MANY_NAMES: 1}


def test_whitespace_padding_is_not_held_in_memory():
    body = b"<urlset>" + b" " * (8 << 20) + b"<url><loc>http://h.test/a</loc></url></urlset>"
    tracemalloc.start()
    try:
        got = parse(body, "http://h.test/sitemap.xml")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [u.loc for u in got.urls] == ["http://h.test/a"] and not got.problems
    assert peak < (8 << 20) + (2 << 20), peak  # the body itself, plus steps


def test_a_body_of_blanks_is_no_sitemap_and_read_only_to_the_cap():
    got = parse(b" \n" * 600, "http://h.test/s.xml", (), SitemapLimits(max_bytes=1000))
    assert got.kind is SitemapKind.NONE and got.size == 1000
    assert got.problems == {Problem.NOT_A_SITEMAP: 1, Problem.TOO_LARGE: 1}


def test_corrupt_and_truncated_gzip_keep_what_came_before():
    doc = b"<urlset>" + b"".join(b"<url><loc>http://h.test/%d</loc></url>" % i for i in range(2000)) + b"</urlset>"
    packed = gzip.compress(doc)
    cut = parse(packed[: len(packed) // 2], "http://h.test/s.xml.gz")
    assert cut.problems == {Problem.BAD_GZIP: 1} and 0 < len(cut.urls) < 2000
    assert parse(b"\x1f\x8b" + b"garbage" * 10, "http://h.test/s.xml.gz").problems == {Problem.BAD_GZIP: 1}


def test_an_index_that_loops_is_fetched_once():
    tracker = SitemapTracker()
    start = f"http://{web.HOSTILE_HOST}/loop-a.xml"
    queue, fetched = [(start, 0)], []
    for _ in range(100):  # bounded: a loop would otherwise spin here
        if not queue:
            break
        url, depth = queue.pop()
        if tracker.found(url, (), depth, 0.0) is not Found.NEW:
            continue
        fetched.append(url.rsplit("/", 1)[1])
        doc = parse(web.document(web.HOSTILE_HOST, url.split(web.HOSTILE_HOST, 1)[1]), url)
        queue += [(s.loc, depth + 1) for s in doc.sitemaps]
    assert not queue and sorted(fetched) == ["loop-a.xml", "loop-b.xml"]
    assert tracker.refused == {"seen": 2}  # loop-a lists itself; loop-b lists loop-a


# -- the tracker ------------------------------------------------------------------------------


def test_tracker_bounds_depth_and_sitemaps_per_host():
    tracker = SitemapTracker(SitemapLimits(max_depth=2, max_per_host=3))
    assert tracker.found("http://h.test/0.xml", (), 0, 1.0) is Found.NEW
    assert tracker.found("http://h.test/deep.xml", (), 3, 1.0) is Found.TOO_DEEP
    assert tracker.found("http://h.test/2.xml", (), 2, 1.0) is Found.NEW
    assert tracker.found("http://h.test/3.xml", (), 1, 1.0) is Found.NEW
    assert tracker.found("http://h.test/4.xml", (), 1, 1.0) is Found.HOST_CAP
    assert tracker.found("http://other.test/4.xml", (), 1, 1.0) is Found.NEW
    assert tracker.found("mailto:x", (), 0, 1.0) is Found.BAD_URL
    assert tracker.found("HTTP://H.test/0.xml#x", (), 0, 2.0) is Found.SEEN  # the same URL, normalised
    assert tracker.refused == {"too_deep": 1, "host_cap": 1, "bad_url": 1, "seen": 1}
    assert tracker.per_host("h.test") == 3 and len(tracker) == 4


def test_tracker_merges_the_authorities_a_sitemap_is_found_with():
    tracker = SitemapTracker()
    url = "http://h.test/a/s.xml"
    assert tracker.found(url, (), 2, 5.0) is Found.NEW
    assert tracker.authorities(url) == frozenset()
    grant = host_authority("http://h.test/robots.txt")
    assert tracker.found(url, [grant], 0, 6.0) is Found.SEEN
    record = tracker.record(url)
    assert record is not None and record.authorities == {grant}
    assert record.depth == 0 and record.found_at == 5.0
    doc = b"<urlset><url><loc>http://h.test/top</loc></url></urlset>"
    assert [u.loc for u in parse(doc, url, tracker.authorities(url)).urls] == ["http://h.test/top"]


# -- fuzz ---------------------------------------------------------------------------------------

_XML_BITS = st.sampled_from([
    b"<urlset>", b"</urlset>", b"<sitemapindex>", b"</sitemapindex>", b"<url>", b"</url>", b"<sitemap>",
    b"</sitemap>", b"<loc>", b"</loc>", b"<lastmod>", b"</lastmod>", b"<priority>", b"</priority>",
    b"http://h.test/", b"2024-01-01", b"0.5", b"&amp;", b"&lol;", b"<!DOCTYPE x [<!ENTITY a 'b'>]>",
    b"<?xml version='1.0' encoding='utf-16'?>", b"<?xml version='1.0' encoding='bogus'?>",
    b"\x1f\x8b", b"\xef\xbb\xbf", b"\n", b"\x00", b"\xff", b"<![CDATA[", b"]]>", b"<!--", b"-->",
])


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=300), st.lists(_XML_BITS, max_size=40).map(b"".join)),
       st.booleans())
def test_fuzz_parse_never_raises(body, packed):
    if packed:
        body = gzip.compress(body)
    got = parse(body, "http://h.test/s.xml", (), SitemapLimits(max_urls=5, max_bytes=200))
    assert len(got.urls) + len(got.sitemaps) <= 5 and got.size <= 200
    assert all(isinstance(k, Problem) for k in got.problems)
