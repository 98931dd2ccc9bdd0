"""Page requisites, pure: found in HTML and CSS (peer.core.page.requisites), and their path through the
crawl core (peer.core.crawl.requisites): past skip_extensions, no row, counted, capped, forwarded."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from peer.core.config.cluster import ClusterConfig, parse_config
from peer.core.crawl.core import CrawlCore, Done, Fetch, Forward, Origin, Queued, Reason, Refused, Row, Start
from peer.core.frontier.frontier import Job
from peer.core.http.result import FetchResult
from peer.core.page.extract import parse_tree
from peer.core.page.parse import parse_response
from peer.core.page.requisites import css_requisites, decode_css, html_requisites, srcset_urls
from peer.core.sitemaps.hints import MALFORMED, Requisite, attach, detach
from peer.errors import ConfigError
from ring.hashring import HashRing

SITE = "http://site.web.test"


# -- found in a page and in a stylesheet ---------------------------------------------


def test_a_page_names_its_stylesheets_images_scripts_fonts_icons_and_frames_in_document_order():
    page = b"""<html><head><base href="/sub/">
    <link rel="stylesheet" href="a.css"><link rel="alternate stylesheet" href="alt.css">
    <link rel="icon" href="/favicon.ico"><link rel="preload" as="font" href="f.woff2">
    <link rel="canonical" href="/canon"><link rel="next" href="/p2">
    <style>@import "imp.css"; body { background: url( 'bg.png' ) } /* url(no.png) */</style>
    <script src="s.js"></script><script>var u = "url(/not-a-requisite.png)";</script></head>
    <body background="b.gif"><img src="i.png" srcset="i2.png 2x, i,3.png 3x">
    <picture><source srcset="p.webp 1x"></picture><iframe src="fr.html"></iframe>
    <video poster="v.jpg" src="v.mp4"></video><div style="background:url(d.png)"></div>
    <img src="data:image/png;base64,AAAA"><svg><rect fill="url(#g)"/></svg>
    <a href="page.html">a link</a><input type="image" src="go.png"><img src="/sub/i.png"></body></html>"""
    got = html_requisites(f"{SITE}/p/", parse_tree(page))
    assert got == tuple(f"{SITE}/{p}" for p in (
        "sub/a.css", "favicon.ico", "sub/f.woff2", "sub/imp.css", "sub/bg.png", "sub/s.js", "sub/b.gif",
        "sub/i.png", "sub/i2.png", "sub/i,3.png", "sub/p.webp", "sub/fr.html", "sub/v.jpg", "sub/d.png",
        "sub/go.png"))


def test_a_stylesheet_names_its_imports_fonts_and_images_relative_to_itself():
    text = """@charset "utf-8";
    @import url("base.css"); @import 'print.css' print;
    @font-face { src: url(../fonts/f.woff2) format("woff2"), url("f.woff") }
    /* @import "commented.css"; url(commented.png) */
    h1 { background: url(  data:image/png;base64,xx ) } .a { cursor: url(#frag) }
    .b { background-image: URL(img/b.png) }"""
    assert css_requisites(f"{SITE}/css/site.css", text) == (
        f"{SITE}/css/base.css", f"{SITE}/css/print.css", f"{SITE}/fonts/f.woff2", f"{SITE}/css/f.woff",
        f"{SITE}/css/img/b.png")
    assert decode_css('@charset "iso-8859-1"; a{content:"\u00e9"}'.encode("latin-1"), None).endswith('"\u00e9"}')


def test_srcset_candidates_keep_commas_inside_a_url():
    assert srcset_urls("a.png 1x,b.png 2x, c.png") == ["a.png", "b.png", "c.png"]
    assert srcset_urls("a,b.png 1x, c.png, d.png 100w") == ["a,b.png", "c.png", "d.png"]
    assert srcset_urls("x.png (w) 1x, y.png") == ["x.png", "y.png"]
    assert srcset_urls("  ") == []


def test_a_requisite_travels_to_its_owner_as_a_tail_an_older_peer_drops():
    assert attach(f"{SITE}/s.css", Requisite(2)) == f"{SITE}/s.css requisite 2"
    assert detach(f"{SITE}/s.css requisite 2") == (f"{SITE}/s.css", Requisite(2))
    for bad in ("requisite", "requisite 0", "requisite x", "requisite 1 2", "requisite 65"):
        assert detach(f"{SITE}/s.css {bad}")[1] is MALFORMED


# -- through the crawl core ----------------------------------------------------------------


def config(**warc: object) -> ClusterConfig:
    crawl = {"seeds": [f"{SITE}/"], "allow_hosts": ["*.web.test"], "concurrency": 8, "obey_robots": False}
    crawl.update(warc.pop("crawl", {}))  # type: ignore[arg-type]
    frontier = warc.pop("frontier", {})
    sections = {"crawl": crawl, "politeness": {"rate": 0.0, "host_concurrency": 4}, "frontier": frontier,
                "bloom": {"capacity": 10_000, "error_rate": 0.001},
                "warc": {"enabled": True, "requisites": True, **warc}}
    text = '[ring]\nname = "test"\n[[peer]]\nid = "p1"\naddress = "tcp://127.0.0.1:5799"\n'
    text += '[[peer]]\nid = "p2"\naddress = "tcp://127.0.0.1:5798"\n'
    for name, table in sections.items():
        text += f"\n[{name}]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in table.items())
    return parse_config(text, Path("/nonexistent/cluster.toml"))


def answer(url: str, body: bytes, ctype: str = "text/html", status: int = 200,
           location: str | None = None) -> FetchResult:
    return FetchResult(url=url, status=status, content_type=ctype, charset="utf-8", location=location,
                       retry_after=None, body=body, raw_bytes=len(body), truncated=False, error=None,
                       elapsed=0.01, address=None)


def run(c: CrawlCore, url: str, res: FetchResult, now: float = 0.0) -> list[object]:
    """Start the queued job of ``url``, admit it, give it ``res``; the effects."""
    got = c.next(now)
    assert isinstance(got, Start) and got.job.url == url, got
    job: Job = got.job
    assert isinstance(c.admit(job, now), Fetch)
    parsed = None
    if c.fetched(job, res, now):
        parsed = parse_response(job.url, res.body, res.charset, *rules(c))
    out = c.on_result(job, res, parsed, now)
    c.job_ended(job)
    return list(out)


def core(**warc: object) -> CrawlCore:
    return CrawlCore(config(**warc), "p1", rng=random.Random(1))


def rules(c: CrawlCore) -> tuple[object, ...]:
    """``parse_response``'s arguments after (url, body, charset), as ``PeerCore.parse_rules`` gives them."""
    cfg = c.cfg
    return (cfg.extract, cfg.crawl.max_links_per_page, c.params, c.page_rules, cfg.dedupe,
            c.requisite_jobs.enabled)


PAGE = (b'<html><head><link rel="stylesheet" href="/s.css"></head>'
        b'<body><img src="/i.png"><a href="/next">next</a><a href="/i.png">full</a></body></html>')


def test_a_pages_stylesheet_and_image_are_queued_past_skip_extensions_and_leave_no_row():
    # In the order found, so that the three starts below are /next and the page's two
    # requisites; by depth, what the stylesheet loads (at the page's depth) would come
    # before /next (one level deeper).
    c = core(frontier={"order": "fifo"})
    c.discover(f"{SITE}/", 0, 0.0, Origin.SEED)
    out = run(c, f"{SITE}/", answer(f"{SITE}/", PAGE))
    queued = [e.url for e in out if isinstance(e, Queued)]
    # The link to the image is refused as a link (skip_extensions), then taken as the page's image.
    assert queued == [f"{SITE}/next", f"{SITE}/s.css", f"{SITE}/i.png"]
    assert Refused(f"{SITE}/i.png", Reason.EXTENSION) in out
    assert c.requested == 1
    # The stylesheet: no row, a Done; what it loads comes next, at the next level.
    css = b"body { background: url(bg.png) } @import 'more.css';"
    effects = []
    for _ in range(3):
        got = c.next(0.1)
        assert isinstance(got, Start)
        job = got.job
        assert isinstance(c.admit(job, 0.1), Fetch)
        res = {f"{SITE}/s.css": answer(job.url, css, "text/css"),
               f"{SITE}/i.png": answer(job.url, b"\x89PNG", "image/png")}.get(job.url,
                                                                            answer(job.url, b"<p>next</p>"))
        fetched = c.fetched(job, res, 0.1)
        parsed = parse_response(job.url, res.body, res.charset, *rules(c)) if fetched else None
        effects += c.on_result(job, res, parsed, 0.1)
        c.job_ended(job)
    rows = {e.url for e in effects if isinstance(e, Row)}
    assert rows == {f"{SITE}/next"}  # the page; the stylesheet and the image are no pages
    assert {e.url for e in effects if isinstance(e, Done)} == {f"{SITE}/s.css", f"{SITE}/i.png"}
    assert [e.url for e in effects if isinstance(e, Queued)] == [f"{SITE}/bg.png", f"{SITE}/more.css"]
    assert c.requested == 2  # max_pages counts the two pages only
    assert c.summary.requisites["fetched"] == 2 and c.summary.requisites["css"] == 2
    figures = c.limits_figures(0.2, {})
    assert figures["requisites.fetched"] == 2 and figures["requisites.queued"] == 4
    assert any(line.startswith("requisites: found 4, fetched 2") for line in c.detail_lines({}))


def test_without_the_option_a_page_gives_no_requisites():
    c = CrawlCore(config(requisites=False), "p1", rng=random.Random(1))
    c.discover(f"{SITE}/", 0, 0.0, Origin.SEED)
    got = c.next(0.0)
    assert isinstance(got, Start)
    res = answer(f"{SITE}/", PAGE)
    assert c.fetched(got.job, res, 0.0)
    parsed = parse_response(f"{SITE}/", PAGE, "utf-8", *rules(c))
    assert parsed.requisites == ()
    c.admit(got.job, 0.0)
    out = c.on_result(got.job, res, parsed, 0.0)
    assert [e.url for e in out if isinstance(e, Queued)] == [f"{SITE}/next"]
    assert not c.summary.requisites


def test_the_caps_count_what_they_leave_out():
    many = b"<html><body>" + b"".join(b'<img src="/i%d.png">' % i for i in range(5)) + \
        b'<link rel="stylesheet" href="/s.css"></body></html>'
    c = core(requisites_per_page=3, requisites_depth=1)
    c.discover(f"{SITE}/", 0, 0.0, Origin.SEED)
    out = run(c, f"{SITE}/", answer(f"{SITE}/", many))
    assert len([e for e in out if isinstance(e, Queued)]) == 3
    assert c.summary.requisites["max_per_page"] == 3
    assert c.requisite_jobs.found((f"{SITE}/deep.png",), 2, 0, 0.0) == []  # past requisites_depth
    assert c.limits_figures(0.0, {})["requisites.max_depth"] == 1


def test_scope_for_requisites_deny_hosts_and_exclude_rules_hold_include_rules_and_extensions_do_not():
    c = core(crawl={"deny_hosts": ["ads.web.test"], "allow_hosts": ["site.web.test"],
                    "rules": ["exclude:*/private/*", "include:*/docs/*"]})
    found = c.requisite_jobs.found(
        (f"{SITE}/static/a.png", "http://cdn.other.test/f.woff2", "http://ads.web.test/t.gif",
         f"{SITE}/private/x.png"), 1, 0, 0.0)
    assert [e.url for e in found if isinstance(e, Queued)] == [f"{SITE}/static/a.png", "http://cdn.other.test/f.woff2"]
    assert Refused("http://ads.web.test/t.gif", Reason.HOST) in found
    assert Refused(f"{SITE}/private/x.png", Reason.RULES) in found
    assert c.summary.requisites["refused"] == 2
    only = core(requisites_other_hosts=False, crawl={"allow_hosts": ["site.web.test"]})
    assert only.requisite_jobs.found(("http://cdn.other.test/f.woff2",), 1, 0, 0.0) == [
        Refused("http://cdn.other.test/f.woff2", Reason.HOST)]


def test_a_requisite_of_another_owners_host_is_forwarded_with_its_level_and_queued_there_as_one():
    ring = HashRing({"p1": 1.0, "p2": 1.0})
    theirs = next(f"h{i}.web.test" for i in range(1000) if ring.owner(f"h{i}.web.test") == "p2")
    url = f"http://{theirs}/s.css"
    p1 = core()
    p1.handoffs.set_ring(ring, 0.0)
    assert p1.requisite_jobs.found((url,), 2, 1, 0.0) == [Forward(f"{url} requisite 2", 1, "p2", False, theirs)]
    p2 = CrawlCore(config(), "p2", rng=random.Random(2))
    p2.handoffs.set_ring(ring, 0.0)
    assert p2.discover(f"{url} requisite 2", 1, 0.0, Origin.RELAY) == [Queued(url, 1)]
    assert p2.requisite_jobs.is_job(url)
    assert p2.discover(f"{url} requisite 2", 1, 0.0, Origin.RELAY) == [Refused(url, Reason.SEEN)]
    # Its host moves back to p1 before it is fetched: it goes on as a requisite, and leaves p2's queue.
    out: list[object] = []
    p2._pass_on(url, 1, "p1", theirs, out)  # type: ignore[arg-type]
    assert out == [Forward(f"{url} requisite 2", 1, "p1", True, theirs), Done(url)]


def test_requisites_need_the_archive():
    with pytest.raises(ConfigError, match="warc.requisites = true needs warc.enabled = true"):
        config(enabled=False)


def test_a_requisite_that_answers_503_is_retried_through_its_hosts_queue_then_done():
    c = core()
    c.discover(f"{SITE}/", 0, 0.0, Origin.SEED)
    run(c, f"{SITE}/", answer(f"{SITE}/", b'<html><head><link rel="stylesheet" href="/s.css"></head></html>'))
    out = run(c, f"{SITE}/s.css", answer(f"{SITE}/s.css", b"busy", "text/plain", 503), 0.1)
    assert not any(isinstance(e, Done) for e in out) and c.summary.retries == 1  # back in the queue
    out = run(c, f"{SITE}/s.css", answer(f"{SITE}/s.css", b"body {}", "text/css"), 100.0)
    assert [e.url for e in out if isinstance(e, Done)] == [f"{SITE}/s.css"]
    assert not any(isinstance(e, Row) for e in out) and c.summary.requisites["fetched"] == 1
