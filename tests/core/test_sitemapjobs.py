"""peer.core.sitemaps.jobs: sitemaps found, owned, fetched and read by the crawl core (pure, synchronous)."""

from __future__ import annotations

import random
from datetime import datetime, timezone

from peer.core.crawl.core import (
    CrawlCore, Done, Fetch, FetchRobots, FetchSitemap, Forward, Origin, PassOn, Queued, Reason, Refused, Row,
)
from peer.core.crawl.decisions import Hinted
from peer.core.frontier.frontier import Job
from peer.core.sitemaps.document import Authority, ChangeFreq, parse
from peer.core.sitemaps.hints import SitemapJob, UrlHints, attach, detach
from peer.core.urls.normalize import MAX_URL_LENGTH
from ring.hashring import HashRing
from ring.vocabulary import split_pairs
from tests.core.test_crawl import answer, config, owned_by, start

A = "http://a.web.test"
B = "http://b.web.test"

SITEMAP = f"""<?xml version="1.0"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>{A}/p1</loc><lastmod>2024-05-01</lastmod><changefreq>daily</changefreq><priority>0.8</priority></url>
<url><loc>{A}/p2</loc></url>
<url><loc>{B}/elsewhere</loc></url>
</urlset>""".encode()


def core(peer: str = "p1", **kw) -> CrawlCore:
    sitemaps = kw.pop("sitemaps", None)
    cfg = config(seeds=[f"{A}/"], **kw)
    if sitemaps:
        from dataclasses import replace
        cfg = replace(cfg, sitemaps=replace(cfg.sitemaps, **sitemaps))
    return CrawlCore(cfg, peer, rng=random.Random(1))


def robots(c: CrawlCore, host_url: str, text: str, now: float = 0.0) -> list:
    """Queue the host's root, and answer its robots.txt with ``text``; the effects of that answer."""
    c.discover(f"{host_url}/", 0, now, Origin.LINK)
    job = start(c, now)
    adm = c.admit(job, now)
    assert isinstance(adm, FetchRobots)
    out = c.on_robots(job, answer(adm.url, 200, text.encode(), ctype="text/plain"), now)
    c.job_ended(job)
    return out


def next_sitemap(c: CrawlCore, now: float) -> FetchSitemap:
    """Start jobs until the sitemap's; pages met on the way are fetched as empty 404s."""
    for _ in range(10):
        job = start(c, now)
        adm = c.admit(job, now)
        if isinstance(adm, FetchSitemap):
            return adm
        assert isinstance(adm, Fetch), adm
        c.on_result(job, answer(job.url, 404), None, now)
        c.job_ended(job)
    raise AssertionError("no sitemap job came")


def read(c: CrawlCore, adm: FetchSitemap, body: bytes, now: float = 0.0) -> list:
    sm = parse(body, adm.job.url, adm.granted, c.cfg.sitemaps.limits())
    out = c.on_sitemap(adm.job, answer(adm.job.url, 200, body, ctype="application/xml"), sm, now)
    c.job_ended(adm.job)
    return out


def test_a_robots_sitemap_line_becomes_a_job_with_that_robots_txts_authority():
    c = core(obey_robots=True)
    out = robots(c, A, f"User-agent: *\nDisallow:\nSitemap: {A}/sitemap.xml\n")
    # Not journaled as a page to fetch: a sitemap is never a page row.
    assert not [e for e in out if isinstance(e, Queued)]
    adm = next_sitemap(c, 0.0)
    assert adm.job.url == f"{A}/sitemap.xml"
    assert adm.granted == (Authority(A),)
    assert adm.max_bytes == c.cfg.sitemaps.max_bytes


def test_from_robots_false_reads_no_sitemap_line():
    c = core(obey_robots=True, sitemaps={"from_robots": False})
    robots(c, A, f"Sitemap: {A}/sitemap.xml\n")
    job = start(c, 0.0)
    assert job.url == f"{A}/" and not c.is_sitemap_job(f"{A}/sitemap.xml")


def test_the_grant_is_the_scheme_of_the_robots_txt_actually_fetched():
    c = core(obey_robots=True)
    https = "https://a.web.test"
    robots(c, https, f"Sitemap: {A}/sitemap.xml\n")
    adm = next_sitemap(c, 0.0)
    assert adm.granted == (Authority(https),)


def test_a_sitemap_urls_are_discovered_with_their_hints_and_reach_the_page_row():
    c = core(obey_robots=False)
    c.sitemap_jobs.seeds(0.0)
    c.sitemap_jobs.found(f"{A}/sitemap.xml", SitemapJob(0, frozenset([Authority(B)])), 0.0)
    adm = next_sitemap(c, 0.0)
    out = read(c, adm, SITEMAP)
    queued = {e.url: e.depth for e in out if isinstance(e, Queued)}
    assert queued == {f"{A}/p1": 0, f"{A}/p2": 0, f"{B}/elsewhere": 0}  # B granted; depth 0: seed-like
    assert c.summary.sitemaps_fetched == 1 and c.summary.sitemap_urls == 3
    assert c.requested == 0  # a sitemap is no page
    rows = {}
    for _ in range(3):
        job = start(c, 1.0)
        assert isinstance(c.admit(job, 1.0), Fetch)
        rows.update({e.url: e for e in c.on_result(job, answer(job.url, 200, b"x", ctype="text/plain"),
                                                    None, 1.0) if isinstance(e, Row)})
        c.job_ended(job)
    p1 = rows[f"{A}/p1"]
    assert p1.sitemap_lastmod == datetime(2024, 5, 1, tzinfo=timezone.utc).timestamp()
    assert (p1.sitemap_priority, p1.sitemap_changefreq) == (0.8, "daily")
    assert rows[f"{A}/p2"].sitemap_lastmod is None and rows[f"{A}/p2"].sitemap_changefreq is None


def test_a_url_of_another_peers_host_travels_with_its_hints():
    ring = HashRing({"p1": 1.0, "p2": 1.0})
    c = core(obey_robots=False)
    c.handoffs.set_ring(ring, 0.0)
    theirs = f"http://{owned_by(ring, 'p2')[0]}"
    ours = f"http://{owned_by(ring, 'p1')[0]}"
    body = f"""<urlset><url><loc>{theirs}/x</loc><priority>0.3</priority></url></urlset>""".encode()
    c.sitemap_jobs.found(f"{ours}/s.xml", SitemapJob(0, frozenset([Authority(theirs)])), 0.0)
    adm = next_sitemap(c, 0.0)
    (fwd,) = [e for e in read(c, adm, body) if isinstance(e, Forward)]
    assert fwd.owner == "p2" and detach(fwd.url) == (f"{theirs}/x", UrlHints(priority=0.3))
    # The owner takes it apart and keeps the hint for the row.
    other = core("p2", obey_robots=False)
    other.handoffs.set_ring(ring, 0.0)
    assert other.discover(fwd.url, fwd.depth, 0.0, Origin.RELAY) == [Queued(f"{theirs}/x", 0)]
    job = start(other, 0.0)
    (row,) = [e for e in other.on_result(job, answer(job.url, 404), None, 0.0) if isinstance(e, Row)]
    assert row.sitemap_priority == 0.3


def _rows(c: CrawlCore, n: int, now: float) -> dict:
    """Start, fetch (an empty 200) and end ``n`` jobs; their rows by URL."""
    rows = {}
    for _ in range(n):
        job = start(c, now)
        assert isinstance(c.admit(job, now), Fetch)
        rows.update({e.url: e for e in c.on_result(job, answer(job.url, 200, b"x", ctype="text/plain"),
                                                    None, now) if isinstance(e, Row)})
        c.job_ended(job)
    return rows


def test_a_url_a_link_reached_first_still_takes_the_sitemaps_hints_into_its_row():
    c = core(obey_robots=False)
    c.sitemap_jobs.found(f"{A}/sitemap.xml", SitemapJob(0, frozenset([Authority(B)])), 0.0)
    # The usual order on a real site: the home page links p1 before the sitemap is read.
    assert c.discover(f"{A}/p1", 1, 0.0, Origin.LINK) == [Queued(f"{A}/p1", 1)]
    out = read(c, next_sitemap(c, 0.0), SITEMAP)
    assert Refused(f"{A}/p1", Reason.SEEN) in out
    # Its row is still to come: it takes the hints itself.
    p1 = _rows(c, 3, 1.0)[f"{A}/p1"]
    assert p1.depth == 1   # the link's depth: it was queued first
    assert p1.sitemap_lastmod == datetime(2024, 5, 1, tzinfo=timezone.utc).timestamp()
    assert (p1.sitemap_priority, p1.sitemap_changefreq) == (0.8, "daily")


def test_a_page_fetched_before_its_sitemap_was_read_has_its_row_filled():
    c = core(obey_robots=False)
    c.discover(f"{A}/p1", 1, 0.0, Origin.LINK)
    assert _rows(c, 1, 0.0)[f"{A}/p1"].sitemap_priority is None   # written without them
    c.sitemap_jobs.found(f"{A}/sitemap.xml", SitemapJob(0, frozenset([Authority(B)])), 0.0)
    out = read(c, next_sitemap(c, 0.0), SITEMAP)
    (late,) = [e for e in out if isinstance(e, Hinted)]
    assert late == Hinted(f"{A}/p1", datetime(2024, 5, 1, tzinfo=timezone.utc).timestamp(), 0.8, "daily")
    assert c.sitemap_jobs.take_hints(f"{A}/p1") is None   # its row is written: not held


def test_the_owner_of_a_url_it_queued_from_a_link_keeps_the_hints_another_peer_sent():
    ring = HashRing({"p1": 1.0, "p2": 1.0})
    theirs = f"http://{owned_by(ring, 'p2')[0]}"
    entry = attach(f"{theirs}/x", UrlHints(priority=0.3))   # from p1's reading of a sitemap
    owner = core("p2", obey_robots=False)
    owner.handoffs.set_ring(ring, 0.0)
    assert owner.discover(f"{theirs}/x", 2, 0.0, Origin.LINK) == [Queued(f"{theirs}/x", 2)]
    assert Refused(f"{theirs}/x", Reason.SEEN) in owner.discover(entry, 0, 0.0, Origin.RELAY)
    job = start(owner, 0.0)
    (row,) = [e for e in owner.on_result(job, answer(job.url, 404), None, 0.0) if isinstance(e, Row)]
    assert row.sitemap_priority == 0.3


def test_a_sitemap_goes_to_its_hosts_owner_with_its_depth_and_grants():
    ring = HashRing({"p1": 1.0, "p2": 1.0})
    c = core(obey_robots=False)
    c.handoffs.set_ring(ring, 0.0)
    theirs = f"http://{owned_by(ring, 'p2')[0]}"
    job = SitemapJob(1, frozenset([Authority(A), Authority(theirs, "/dir/")]))
    (fwd,) = c.sitemap_jobs.found(f"{theirs}/dir/s.xml", job, 0.0)
    assert isinstance(fwd, Forward) and fwd.owner == "p2" and not fwd.relay
    assert len(c.sitemaps) == 0  # the owner tracks it, not us
    other = core("p2", obey_robots=False)
    other.handoffs.set_ring(ring, 0.0)
    assert other.discover(fwd.url, fwd.depth, 0.0, Origin.RELAY) == []
    assert other.is_sitemap_job(f"{theirs}/dir/s.xml")
    adm = next_sitemap(other, 0.0)
    assert set(adm.granted) == {Authority(A), Authority(theirs, "/dir/")} and adm.job.depth == 1


def test_a_queued_sitemap_whose_host_moves_is_passed_on_as_a_sitemap():
    c = core(obey_robots=False)
    c.sitemap_jobs.found(f"{A}/s.xml", SitemapJob(0, frozenset([Authority(A)])), 0.0)
    ring = HashRing({"p1": 1.0, "p2": 1.0})
    owner = ring.owner("a.web.test")
    if owner == "p1":
        ring = HashRing({"p2": 1.0, "p3": 1.0})
        owner = ring.owner("a.web.test")
    c.ring = ring
    job = start(c, 0.0)
    adm = c.admit(job, 0.0)
    assert isinstance(adm, PassOn)
    (fwd,) = adm.effects  # no Done: it was never journaled as queued
    assert detach(fwd.url) == (f"{A}/s.xml", SitemapJob(0, frozenset([Authority(A)])))


def test_tracker_refusals_and_caps_are_counted_as_drops():
    c = core(obey_robots=False, sitemaps={"max_depth": 1, "max_per_host": 2})
    assert c.sitemap_jobs.found(f"{A}/a.xml", SitemapJob(0), 0.0) == []
    c.sitemap_jobs.found(f"{A}/a.xml", SitemapJob(0), 0.0)           # seen
    c.sitemap_jobs.found(f"{A}/deep.xml", SitemapJob(2), 0.0)        # too deep
    c.sitemap_jobs.found(f"{A}/b.xml", SitemapJob(1), 0.0)
    c.sitemap_jobs.found(f"{A}/c.xml", SitemapJob(0), 0.0)           # host cap
    c.sitemap_jobs.found("ftp://x/y.xml", SitemapJob(0), 0.0)         # no http(s) URL
    c.sitemap_jobs.found("http://out.example/s.xml", SitemapJob(0), 0.0)  # out of scope
    assert dict(c.summary.sitemap_drops) == {"seen": 1, "max_depth": 1, "max_per_host": 1, "bad_url": 1,
                                             "out_of_scope": 1}
    c.summary.sitemaps_fetched = 2
    figures = c.limits_figures(0.0, {})
    assert figures["sitemap.max_depth"] == 1 and figures["sitemap.max_per_host"] == 1
    # ring status and the metrics take them apart: refused input is a drop, a fetch a counter.
    split = split_pairs(figures.items())
    assert ("sitemap.out_of_scope", 1) in split.drops and ("sitemaps.fetched", 2) in split.counters
    assert not [k for k, _ in split.drops if k.startswith("sitemaps.")]


def test_an_index_makes_child_jobs_one_deeper_with_its_authority_and_parse_problems_count():
    c = core(obey_robots=False)
    c.sitemap_jobs.found(f"{A}/dir/index.xml", SitemapJob(0, frozenset([Authority(B)])), 0.0)
    adm = next_sitemap(c, 0.0)
    body = (f"<sitemapindex><sitemap><loc>{A}/dir/sub/s.xml</loc></sitemap>"
            f"<sitemap><loc>{B}/s.xml</loc></sitemap><sitemap><loc>http://c.web.test/s.xml</loc></sitemap>"
            f"<url><loc>{A}/dir/x</loc></url></sitemapindex>").encode()
    read(c, adm, body)
    assert c.summary.sitemap_drops == {"wrong_host": 1, "misplaced": 1}
    child = next_sitemap(c, 0.0)
    assert child.job.url in (f"{A}/dir/sub/s.xml", f"{B}/s.xml") and child.job.depth == 1
    assert set(child.granted) == {Authority(B), Authority(A, "/dir/")}


def test_a_sitemap_robots_txt_disallows_is_not_requested_and_leaves_no_row():
    c = core(obey_robots=True)
    robots(c, A, f"User-agent: *\nDisallow: /private/\nSitemap: {A}/private/s.xml\n")
    for _ in range(3):
        job = start(c, 0.0)
        adm = c.admit(job, 0.0)
        assert not isinstance(adm, FetchSitemap)
        if job.url.endswith("s.xml"):
            assert not [e for e in adm.effects if isinstance(e, Row)]
            break
        c.on_result(job, answer(job.url, 404), None, 0.0)
        c.job_ended(job)
    assert c.summary.sitemap_failed == {"robots": 1} and c.summary.pages == 1


def test_a_failed_sitemap_is_counted_apart_and_a_5xx_retried():
    c = core(obey_robots=False)
    c.sitemap_jobs.found(f"{A}/s.xml", SitemapJob(0), 0.0)
    adm = next_sitemap(c, 0.0)
    c.on_sitemap(adm.job, answer(adm.job.url, 503), None, 0.0)
    c.job_ended(adm.job)
    assert c.is_sitemap_job(f"{A}/s.xml") and c.summary.retries == 1
    adm = next_sitemap(c, 100.0)
    c.on_sitemap(adm.job, answer(adm.job.url, 404), None, 100.0)
    c.job_ended(adm.job)
    assert c.summary.sitemap_failed == {"http_404": 1} and c.summary.pages == 0


def test_a_malformed_entry_from_a_peer_is_dropped_and_counted():
    c = core(obey_robots=False)
    assert c.discover(f"{A}/x hints 1 7 -", 0, 0.0, Origin.RELAY) == []
    assert c.discover(f"{A}/x nonsense", 0, 0.0, Origin.RELAY) == []
    assert c.summary.sitemap_drops == {"bad_entry": 2}


def test_sitemap_seeds_are_found_at_the_start_with_their_location_authority():
    c = core(obey_robots=False, sitemaps={"seeds": (f"{A}/blog/sitemap.xml",)})
    c.seeds(0.0)
    adm = next_sitemap(c, 0.0)
    assert adm.job.url == f"{A}/blog/sitemap.xml" and adm.granted == ()
    body = f"<urlset><url><loc>{A}/blog/p</loc></url><url><loc>{A}/about</loc></url></urlset>".encode()
    out = read(c, adm, body)
    assert [e.url for e in out if isinstance(e, Queued)] == [f"{A}/blog/p"]
    assert c.summary.sitemap_drops == {"wrong_host": 1}


def test_a_snapshot_lists_no_sitemap_job():
    c = core(obey_robots=False)
    c.sitemap_jobs.found(f"{A}/s.xml", SitemapJob(0), 0.0)
    c.discover(f"{A}/page", 0, 0.0, Origin.LINK)
    assert [u for u, _ in c.snapshot_queue()] == [f"{A}/page"]


def test_hints_that_do_not_fit_are_left_off():
    long = f"{A}/" + "x" * (MAX_URL_LENGTH - len(A) - 10)
    assert attach(long, UrlHints(1.0, 0.5, ChangeFreq.NEVER)) == long
