"""peer.core.page.extract: links, title, meta robots, charset and the HTML sniff."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from peer.core.page.extract import FRAME, LINK_REL, MAX_TITLE, REFRESH, Page, PageRules, decode_html, is_html, parse_page
from peer.core.urls.normalize import normalize

import localweb.sitegraph.endpoints

PORT = 8080
URL = "http://example.test/dir/page.html"


@pytest.fixture(scope="module")
def graph() -> localweb.SiteGraph:
    return localweb.SiteGraph(hosts=3, pages_per_host=30)


def _html_pages(graph: localweb.SiteGraph) -> list[tuple[str, bytes]]:
    """(url, body) of every 200 HTML page a crawl meets, traps included."""
    out = []
    for url in sorted(graph.expected_urls(PORT) | graph.trap_urls(PORT)):
        host = graph.host_of(url)
        path = "/" + url.split("/", 3)[3]
        page = graph.render(host, path, PORT)
        if page.status == 200 and page.content_type.startswith("text/html"):
            out.append((url, page.body))
    return out


def _followable(graph: localweb.SiteGraph, url: str) -> tuple[str, ...]:
    targets = (link.target for link in graph.links(url) if link.follow and link.target is not None)
    return tuple(dict.fromkeys(targets))


def _page(head: str = "", body: str = "") -> bytes:
    return f"<!DOCTYPE html><html><head>{head}</head><body>{body}</body></html>".encode()


# -- the local test web ------------------------------------------------------


def test_links_of_every_webfarm_page_are_its_followable_targets(graph):
    pages = _html_pages(graph)
    assert len(pages) > 150  # sections, content pages, about, private, traps, shop
    with_base = 0
    for url, body in pages:
        page = parse_page(url, body, "utf-8")
        assert page.links == _followable(graph, url), url
        assert page.n_links == len(page.links)
        with_base += b"<base " in body
    assert with_base >= 3  # <base href> pages are among them


def test_trap_urls_in_scripts_comments_and_img_are_not_links(graph):
    traps = graph.trap_urls(PORT)
    url = f"http://s001.web.test:{PORT}/c0/p1.html"
    body = graph.render("s001.web.test", "/c0/p1.html", PORT).body
    planted = [b"/trap/script.html", b"/trap/docwrite.html", b"/trap/comment.html", b"/img/inline.png"]
    assert all(p in body for p in planted)
    assert not set(parse_page(url, body, "utf-8").links) & traps


def test_meta_nofollow_page_gives_no_links(graph):
    url = f"http://s002.web.test:{PORT}/about.html"
    body = graph.render("s002.web.test", "/about.html", PORT).body
    assert graph.links(url)  # it does carry links...
    page = parse_page(url, body, "utf-8")
    assert (page.noindex, page.nofollow, page.links, page.n_links) == (True, True, (), 0)


def test_shop_titles_are_decoded_and_complete(graph):
    items = graph.shop_items(PORT)
    assert any("&" in item["title"] for item in items)  # entity-decoded in the title
    for item in items:
        host = graph.host_of(item["url"])
        body = graph.render(host, "/" + item["url"].split("/", 3)[3], PORT).body
        page = parse_page(item["url"], body, "utf-8")
        assert page.title == f"{item['title']} | Paper Lantern Books"
        assert (page.noindex, page.nofollow) == (False, False)


def test_index_page_fields(graph):
    url = f"http://s001.web.test:{PORT}/"
    page = parse_page(url, graph.render("s001.web.test", "/", PORT).body, None)
    assert page.title is not None and page.title.endswith(" - s001.web.test")
    assert page.links[0] == url  # the nav's first link is "/"
    assert f"http://s002.web.test:{PORT}/" in page.links


# -- links ---------------------------------------------------------------------


def test_a_and_area_in_document_order_deduped_first_wins():
    body = _page(body='<a href="b.html">1</a><map><area href="/a.html"></map>'
                      '<a href="./b.html#x">dup</a><a>no href</a><a href="HTTP://EXAMPLE.TEST/a.html">dup</a>'
                      '<a href="c.html">3</a><link href="/style.css"><img src="/i.png">')
    page = parse_page(URL, body)
    assert page.links == ("http://example.test/dir/b.html", "http://example.test/a.html",
                          "http://example.test/dir/c.html")
    assert page.n_links == 3


def test_non_http_links_are_dropped_and_empty_href_is_the_page():
    body = _page(body='<a href="mailto:x@example.test">m</a><a href="javascript:void(0)">j</a>'
                      '<a href="tel:+1">t</a><a href="ftp://example.test/">f</a><a href="">self</a>'
                      '<a href="data:text/plain,hi">d</a><a href="http://[bad/">bad</a>')
    assert parse_page(URL, body).links == (URL,)


@pytest.mark.parametrize(
    ("rel", "followed"),
    [("nofollow", False), ("NoFollow", False), ("external nofollow", False),
     ("nofollow\tnoopener", False), ("noopener", True), ("nofollowers", True), ("", True)],
)
def test_rel_nofollow_is_a_token(rel, followed):
    body = _page(body=f'<a href="/x" rel="{rel}">x</a><area href="/y" rel="{rel}">')
    want = ("http://example.test/x", "http://example.test/y") if followed else ()
    assert parse_page(URL, body).links == want


def test_first_base_href_applies_to_all_links_even_earlier_ones():
    body = _page(body='<a href="x.html">x</a><base href="/other/"><base href="/third/">'
                      '<a href="../up.html">up</a><a href="//cdn.example.test/z">z</a>')
    assert parse_page(URL, body).links == (
        "http://example.test/other/x.html", "http://example.test/up.html",
        "http://cdn.example.test/z")


def test_absolute_base_and_unusable_base():
    absolute = _page('<base href="https://elsewhere.test/a/b">', '<a href="c">c</a><a href="?q=1">q</a>')
    assert parse_page(URL, absolute).links == ("https://elsewhere.test/a/c", "https://elsewhere.test/a/b?q=1")
    for base in ("javascript:alert(1)", "mailto:x@y", ""):
        body = _page(f'<base href="{base}">', '<a href="c">c</a>')
        assert parse_page(URL, body).links == ("http://example.test/dir/c",), base


def test_entities_and_whitespace_in_href():
    body = _page(body='<a href="/q?a=1&amp;b=2">q</a><a href="  /sp ace.html\n">s</a>')
    assert parse_page(URL, body).links == ("http://example.test/q?a=1&b=2",
                                           "http://example.test/sp%20ace.html")


def test_urls_in_script_comment_template_textarea_are_not_links():
    body = _page(body='<script>var u="/s1"; document.write(\'<a href="/s2">x</a>\')</script>'
                      '<!-- <a href="/c1">old</a> --><template><a href="/t1">t</a></template>'
                      '<textarea><a href="/ta">x</a></textarea><style>a{background:url(/st)}</style>'
                      '<noscript><a href="/ns">no js</a></noscript><a href="/real">r</a>')
    # <noscript> content is markup for a crawler that runs no scripts.
    assert parse_page(URL, body).links == ("http://example.test/ns", "http://example.test/real")


# -- meta robots ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("meta", "noindex", "nofollow"),
    [
        ('<meta name="robots" content="noindex">', True, False),
        ('<meta name="robots" content="nofollow">', False, True),
        ('<meta name="ROBOTS" content="NoIndex, NoFollow">', True, True),
        ('<meta name=" robots " content="none">', True, True),
        ('<meta name="robots" content="index,follow">', False, False),
        ('<meta name="robots" content="noindex"><meta name="robots" content="nofollow">', True, True),
        ('<meta name="googlebot" content="noindex, nofollow">', False, False),
        ('<meta content="noindex, nofollow">', False, False),
        ('<meta name="robots" content="noindexing">', False, False),
    ],
)
def test_meta_robots(meta, noindex, nofollow):
    page = parse_page(URL, _page(meta, '<a href="/a">a</a>'))
    assert (page.noindex, page.nofollow) == (noindex, nofollow)
    assert page.links == (() if nofollow else ("http://example.test/a",))


# -- title -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "title"),
    [
        ("<title>  Hello \n\t world  </title>", "Hello world"),
        ("<title>Caf&eacute; &amp; b&lt;a&gt;r</title>", "Café & b<a>r"),
        ("<title>first</title><title>second</title>", "first"),
        ("<title>   </title>", None),
        ("", None),
    ],
)
def test_title(head, title):
    assert parse_page(URL, _page(head)).title == title


def test_title_is_capped():
    page = parse_page(URL, _page(f"<title>{'x' * 5000}</title>"))
    assert page.title == "x" * MAX_TITLE


# -- charset --------------------------------------------------------------------

LATIN1 = "<html><head><title>Café crème brûlée</title></head><body>Ça</body></html>".encode("latin-1")


def test_header_charset_decodes():
    assert parse_page(URL, LATIN1, "iso-8859-1").title == localweb.sitegraph.endpoints.LATIN1_TITLE
    assert parse_page(URL, LATIN1, '"ISO-8859-1"').title == localweb.sitegraph.endpoints.LATIN1_TITLE
    # Undeclared Latin-1 is read as UTF-8 with replacement: no exception.
    assert parse_page(URL, LATIN1, None).title == "Caf\ufffd cr\ufffdme br\ufffdl\ufffde"


@pytest.mark.parametrize(
    "head",
    ['<meta charset="iso-8859-1">', "<meta charset=latin1>",
     '<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">',
     "<META HTTP-EQUIV=content-type CONTENT='text/html;charset=windows-1252'>"],
)
def test_meta_charset_in_the_first_1024_bytes(head):
    body = f"<html><head>{head}<title>Café</title></head></html>".encode("latin-1")
    assert parse_page(URL, body).title == "Café"
    assert decode_html(body, None).count("Café") == 1


def test_charset_precedence():
    text = "<html><head><meta charset='koi8-r'><title>Привет</title></head></html>"
    koi = text.encode("koi8-r")
    assert parse_page(URL, koi).title == "Привет"  # meta
    assert parse_page(URL, text.encode("cp1251"), "windows-1251").title == "Привет"  # header wins
    assert parse_page(URL, koi, "no-such-charset").title == "Привет"  # unknown header: meta
    bom = b"\xef\xbb\xbf" + text.encode()
    assert parse_page(URL, bom, "koi8-r").title == "Привет"  # BOM beats header
    utf16 = "\ufeff<title>Привет</title>".encode("utf-16-le")
    assert parse_page(URL, utf16).title == "Привет"


def test_meta_charset_ignored_in_comments_beyond_1024_bytes_and_when_refused():
    cafe = "<title>Café</title>".encode()
    commented = b"<!-- <meta charset=latin1> --><html><head>" + cafe
    assert parse_page(URL, commented).title == "Café"  # read as UTF-8
    late = b"<html><head>" + b" " * 1100 + b"<meta charset=latin1>" + cafe
    assert parse_page(URL, late).title == "Café"
    for label in ("utf-7", "base64", "rot13", "unicode-escape", "undefined"):
        body = f"<meta charset={label}>".encode() + cafe
        assert parse_page(URL, body).title == "Café", label
        assert parse_page(URL, cafe, label).title == "Café", label


def test_meta_utf16_means_utf8():
    body = "<meta charset=utf-16><title>Café</title>".encode()
    assert parse_page(URL, body).title == "Café"


# -- is_html ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ctype", "body", "want"),
    [
        ("text/html", b"", True),
        ("TEXT/HTML; charset=utf-8", b"%PDF", True),
        ("application/xhtml+xml", b"<?xml version='1.0'?>", True),
        ("text/plain", b"<html><body>", False),
        ("application/pdf", b"<html>", False),
        ("image/png", b"\x89PNG\r\n", False),
        ("", b"<!DOCTYPE html>\n<html>", True),
        ("", b"<!doctype HTML>", True),
        ("", b"  \n\t<html lang=en>", True),
        ("", b"\xef\xbb\xbf<HEAD>", True),
        ("", b"<body>", True),
        ("", b"<p>hello", True),
        ("", b"<a href=x>", True),
        ("", b"<!-- c -->", True),
        ("", b"<abbr>", False),
        ("", b"<?xml version='1.0'?><html>", False),
        ("", b"%PDF-1.4 <html>", False),
        ("", b"hello <html>", False),
        ("", b"<html", False),  # no tag-terminating byte
        ("", b"", False),
        ("application/unknown", b"<html>", True),
        ("*/*", b"<title>", True),
    ],
)
def test_is_html(ctype, body, want):
    assert is_html(ctype, body) is want


# -- never raises -------------------------------------------------------------------

_FRAGMENTS = st.sampled_from([
    b"<a href='", b"'>", b"<area href=", b"<base href=", b"<meta name=robots content=",
    b"<meta charset=", b"<title>", b"</title>", b"<!--", b"-->", b"<script>", b"</script>",
    b"&#xD800;", b"&bogus;", b"\x00", b"\xff\xfe", b"\xef\xbb\xbf", b"\xc3\x28", b"utf-16",
    b"javascript:", b"//", b"../", b"http://[::1", b"http://a.test:99999/", b"%zz", b"\\",
    b"rel=nofollow", b"nofollow", b"none", b" ", b"\n", b">", b"<",
    b"<link rel=canonical href=", b"<link rel=next href=", b"<frame src=", b"<iframe src=",
    b"<meta http-equiv=refresh content='0; url=", b"<frameset>", b"<head>", b"</head>",
])


def _check(page: Page) -> None:
    assert isinstance(page, Page)
    assert page.n_links == len(page.links) == len(set(page.links))
    for link in page.links:
        assert normalize(link) == link
    if page.title is not None:
        assert 0 < len(page.title) <= MAX_TITLE
        page.title.encode("utf-8")  # no lone surrogates reach the results file


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=2048), charset=st.none() | st.text(max_size=12))
def test_garbage_bytes_give_a_page(body, charset):
    _check(parse_page(URL, body, charset))
    assert isinstance(decode_html(body, charset), str)
    is_html("", body)


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(_FRAGMENTS | st.binary(max_size=8), max_size=60),
       charset=st.sampled_from([None, "utf-8", "latin1", "utf-16", "shift_jis", "utf-7", "bogus"]))
def test_html_shaped_garbage_gives_a_page(parts, charset):
    page = parse_page(URL, b"".join(parts), charset, rules=ALL_SOURCES)
    _check(page)
    assert page.canonical is None or normalize(page.canonical) == page.canonical
    assert {link for link, _ in page.via} <= set(page.links)


@settings(max_examples=100, deadline=None)
@given(url=st.text(max_size=40))
def test_garbage_page_url_gives_a_page(url):
    _check(parse_page(url, _page("<base href='x/'>", "<a href='/a'>a</a><a href='b'>b</a>")))


def test_max_links_keeps_the_first_links_in_document_order_and_counts_the_rest():
    body = "".join(f'<a href="/p{i}">{i}</a>' for i in range(50)).encode()
    page = parse_page(URL, body, max_links=10)
    assert page.links == tuple(f"http://example.test/p{i}" for i in range(10))
    assert page.n_links == 50
    whole = parse_page(URL, body)
    assert len(whole.links) == whole.n_links == 50


@pytest.mark.parametrize("max_links", [0, 3])
def test_selection_and_walk_read_the_same_page(graph, monkeypatch, max_links):
    # parse_page selects the elements of a page up to _SELECT_MAX bytes and
    # walks the tree of a bigger one: both must see the same elements in the
    # same order (links, first base and title, every meta robots, the cap).
    import peer.core.page.extract

    pages = _html_pages(graph)
    pages.append(("http://s001.web.test/t.html", b"<title>a</title><a href=/1>x</a><title>b</title>"
                  b"<base href=/d/><area href=2><meta name=robots content=noindex><a href=3>"
                  b"<template><a href=/t></a></template><a href=4><a href=5 rel=nofollow><a href=6>"))
    read = {}
    for limit in (-1, 10**9):
        monkeypatch.setattr(peer.core.page.extract, "_SELECT_MAX", limit)
        read[limit] = [parse_page(url, body, max_links=max_links) for url, body in pages]
    assert read[-1] == read[10**9]
    assert read[-1][-1].noindex and read[-1][-1].title == "a"
    assert read[-1][-1].links[:2] == ("http://s001.web.test/1", "http://s001.web.test/d/2")


# -- canonical -------------------------------------------------------------------------

ALL_SOURCES = PageRules(agent="ringcrawl", frames=True, refresh=True, link_rel=True)


@pytest.mark.parametrize(("head", "body", "canonical"), [
    ('<link rel="canonical" href="/c">', "", "http://example.test/c"),
    ('<link rel=canonical href="other.html">', "", "http://example.test/dir/other.html"),  # relative
    ('<link rel="Canonical" href="HTTP://Example.TEST:80/c#frag">', "", "http://example.test/c"),  # normalised
    ('<link rel="canonical" href="/first"><link rel="canonical" href="/second">', "",
     "http://example.test/first"),  # the first one
    ('<base href="/base/"><link rel="canonical" href="c">', "", "http://example.test/base/c"),
    ('<link rel="canonical" href="page.html">', "", "http://example.test/dir/page.html"),  # itself: kept
    ("", '<link rel="canonical" href="/in-body">', None),  # in the body: user content, ignored
    ('<link rel="canonical" href="mailto:a@b.test">', "", None),  # not a crawlable URL
    ('<link rel="canonical">', "", None),
    ('<link rel="alternate" href="/alt">', "", None),
    ("", "", None),
])
def test_canonical(head, body, canonical):
    assert parse_page(URL, _page(head, body)).canonical == canonical


def test_canonical_after_a_body_tag_in_the_head_is_in_the_body():
    # The parser closes the head at the first body content: what follows is the body's.
    page = parse_page(URL, b"<title>t</title><p>text</p><link rel=canonical href=/late>")
    assert page.canonical is None


def test_canonical_is_kept_on_a_nofollow_page():
    page = parse_page(URL, _page('<meta name=robots content=nofollow><link rel=canonical href=/c>',
                                 "<a href=/a>a</a>"))
    assert (page.links, page.canonical) == ((), "http://example.test/c")


# -- meta robots for our product token ------------------------------------------------------


@pytest.mark.parametrize(("meta", "noindex", "nofollow"), [
    ('<meta name="ringcrawl" content="noindex">', True, False),
    ('<meta name="RingCrawl" content="nofollow">', False, True),
    ('<meta name="otherbot" content="noindex, nofollow">', False, False),
    ('<meta name="robots" content="noindex"><meta name="ringcrawl" content="nofollow">', True, True),
    ('<meta name="ringcrawl" content="none">', True, True),
    ('<meta name="ringcrawl" content="index, follow">', False, False),
])
def test_meta_robots_for_our_token(meta, noindex, nofollow):
    page = parse_page(URL, _page(meta, '<a href="/a">a</a>'), rules=PageRules(agent="ringcrawl"))
    assert (page.noindex, page.nofollow) == (noindex, nofollow)
    # Without a token only name=robots speaks to the crawler.
    alone = parse_page(URL, _page(meta, '<a href="/a">a</a>'))
    assert (alone.noindex, alone.nofollow) == (meta.startswith('<meta name="robots"'), False)


# -- frames, meta refresh, link rel ------------------------------------------------------


def test_frames_and_iframes_are_links_when_asked():
    body = (b"<html><head><title>f</title></head><frameset cols='50%,50%'>"
            b"<frame src=left.html><frame src = ' /right.html ' ><frame></frameset></html>")
    page = parse_page(URL, body)
    assert page.links == ("http://example.test/dir/left.html", "http://example.test/right.html")
    assert page.via == tuple((link, FRAME) for link in page.links)
    inline = _page("", '<a href="/a">a</a><iframe src="/in"></iframe><iframe srcdoc="<a href=/x>"></iframe>')
    page = parse_page(URL, inline)
    assert page.links == ("http://example.test/a", "http://example.test/in")
    assert page.via == (("http://example.test/in", FRAME),)
    off = parse_page(URL, inline, rules=PageRules(frames=False))
    assert (off.links, off.via) == (("http://example.test/a",), ())


@pytest.mark.parametrize("meta", [
    '<meta http-equiv="refresh" content="0; url=/next">',
    "<meta http-equiv=REFRESH content=\"5;URL='/next'\">",
    '<meta http-equiv=" Refresh " content="  3 ,  url = /next ">',
    '<meta http-equiv="refresh" content="0; /next">',
])
def test_meta_refresh_target_is_a_link(meta):
    page = parse_page(URL, _page(meta, ""))
    assert (page.links, page.via) == (("http://example.test/next",), (("http://example.test/next", REFRESH),))
    assert parse_page(URL, _page(meta, ""), rules=PageRules(refresh=False)).links == ()


def test_a_meta_refresh_of_the_page_itself_or_without_a_url_adds_no_other_link():
    assert parse_page(URL, _page('<meta http-equiv="refresh" content="30">', "")).links == ()


@pytest.mark.parametrize(("link", "followed"), [
    ('<link rel="next" href="/p2">', True),
    ('<link rel="prev" href="/p2">', True),
    ('<link rel="previous" href="/p2">', True),
    ('<link rel="alternate" hreflang="de" href="/p2">', True),
    ('<link rel="alternate" type="application/rss+xml" href="/p2">', True),
    ('<link rel="alternate stylesheet" href="/p2">', False),
    ('<link rel="stylesheet" href="/p2">', False),
    ('<link rel="icon" href="/p2">', False),
    ('<link rel="preload" href="/p2">', False),
    ('<link rel="next nofollow" href="/p2">', False),
    ('<link rel="author" href="/p2">', False),
    ('<link rel="next">', False),
])
def test_link_rel_pages(link, followed):
    page = parse_page(URL, _page(link, ""), rules=ALL_SOURCES)
    assert page.links == (("http://example.test/p2",) if followed else ())
    assert page.via == ((("http://example.test/p2", LINK_REL),) if followed else ())
    assert parse_page(URL, _page(link, "")).links == ()  # off by default


def test_every_source_shares_the_dedupe_the_cap_and_nofollow():
    body = _page('<link rel=next href=/a><meta http-equiv=refresh content="0;url=/r">',
                 '<a href="/a">a</a><iframe src="/f"></iframe><a href="/b">b</a><a href="/c">c</a>')
    page = parse_page(URL, body, rules=ALL_SOURCES)
    assert page.links == tuple(f"http://example.test/{p}" for p in ("a", "r", "f", "b", "c"))
    assert page.via == (("http://example.test/a", LINK_REL), ("http://example.test/r", REFRESH),
                        ("http://example.test/f", FRAME))
    cut = parse_page(URL, body, rules=ALL_SOURCES, max_links=3)
    assert cut.links == page.links[:3]
    nofollow = _page('<meta name=robots content=nofollow><meta http-equiv=refresh content="0;url=/r">',
                     '<iframe src="/f"></iframe>')
    assert parse_page(URL, nofollow, rules=ALL_SOURCES).links == ()


@pytest.mark.parametrize("max_links", [0, 2])
def test_selection_and_walk_read_the_other_sources_alike(monkeypatch, max_links):
    import peer.core.page.extract

    body = _page('<link rel=canonical href=/c><link rel=next href=/n><meta name=ringcrawl content=noindex>'
                 '<meta http-equiv=refresh content="1; url=/r">',
                 '<a href=/a>a</a><iframe src=/f></iframe><link rel=canonical href=/body>')
    read = {}
    for limit in (-1, 10**9):
        monkeypatch.setattr(peer.core.page.extract, "_SELECT_MAX", limit)
        read[limit] = parse_page(URL, body, rules=ALL_SOURCES, max_links=max_links)
    assert read[-1] == read[10**9]
    assert read[-1].noindex and read[-1].canonical == "http://example.test/c"
