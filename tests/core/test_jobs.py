"""peer.core.crawl.jobs: the jobs in flight (rule 8's marks, redirect hops, recent rows) and the row each leaves.

``Jobs`` is driven alone over a frontier; ``Rows`` through a ``CrawlCore``,
whose summary it counts in.
"""

from __future__ import annotations

from peer.core.crawl.core import Origin, Row
from peer.core.crawl.jobs import DONE, FETCHING, RECENT_ROWS, REQUEUED, ROW, Jobs
from peer.core.frontier.frontier import Frontier, Job, Outcome
from peer.core.sitemaps.hints import SitemapJob, UrlHints
from tests.core.test_crawl import SITE, answer, core, start

HOST = "site.web.test"


def test_a_job_is_marked_only_while_in_flight_and_done_once_by_the_frontier():
    fr = Frontier()
    jobs = Jobs(fr)
    fr.push(f"{SITE}/a", HOST, 0, 0.0)
    job = fr.pop_ready(0.0)
    assert job is not None
    jobs.mark(job.url, ROW)  # not started here: nothing to mark
    assert jobs.marks(job.url) == 0
    jobs.started(job)
    assert jobs.count == 1 and jobs.fetching() == []
    jobs.mark(job.url, FETCHING)
    assert jobs.fetching() == [(job.url, HOST)]
    out: list = []
    jobs.requeue(job, 0.0, 5.0, out)
    jobs.finish(job, 0.0, Outcome.FETCHED)
    assert jobs.marks(job.url) == FETCHING | REQUEUED | DONE
    assert [(e.url, e.at) for e in out] == [(job.url, 5.0)] and len(fr) == 1
    assert list(jobs.in_flight()) == [(job.url, (HOST, 0))]
    jobs.ended(job)
    assert jobs.count == 0 and jobs.marks(job.url) == 0 and not list(jobs.in_flight())


def test_hops_are_taken_once_and_recent_rows_keep_the_last_ones():
    jobs = Jobs(Frontier())
    jobs.set_hops(f"{SITE}/r", 2)
    assert jobs.take_hops(f"{SITE}/r") == 2 and jobs.take_hops(f"{SITE}/r") == 0
    for i in range(RECENT_ROWS + 1):
        jobs.requested(f"{SITE}/{i}")
    assert not jobs.recently_requested(f"{SITE}/0")  # the oldest is forgotten first
    assert jobs.recently_requested(f"{SITE}/1") and jobs.recently_requested(f"{SITE}/{RECENT_ROWS}")


def test_a_row_is_counted_as_a_request_or_by_its_cause():
    c = core(obey_robots=False)
    c.discover(f"{SITE}/a", 0, 0.0, Origin.LINK)
    c.discover(f"{SITE}/b", 0, 0.0, Origin.LINK)
    a, b = Job(f"{SITE}/a", HOST, 0), Job(f"{SITE}/b", HOST, 0)
    out: list = []
    c.rows.row(a, answer(a.url, 404), out)
    c.rows.row(b, None, out, error="robots")
    c.rows.row(b, None, out, error="internal")  # a bug of ours: an error, not a cause of not asking
    s = c.summary
    assert [type(e) for e in out] == [Row, Row, Row]
    assert c.requested == s.requested == 1 and s.pages == 3 and s.by_status == {404: 1}
    assert s.not_requested == {"robots": 1} and s.errors == {"robots": 1, "internal": 1}
    assert c.jobs.recently_requested(a.url) and not c.jobs.recently_requested(b.url)
    c.requested = 7  # set by the driver on recovery
    assert c.rows.requested == 7


def test_a_sitemap_job_leaves_no_row_and_hints_reach_the_page_row():
    c = core(obey_robots=False)
    c.sitemap_jobs.found(f"{SITE}/s.xml", SitemapJob(0), 0.0)
    c.sitemap_jobs.hinted(f"{SITE}/p", UrlHints(1.0, 0.5, None), 0, 0.0, Origin.SITEMAP)
    out: list = []
    sitemap = start(c, 0.0)
    assert sitemap.url == f"{SITE}/s.xml"
    c.rows.row(sitemap, None, out, error="robots")
    assert out == [] and c.summary.sitemap_failed == {"robots": 1} and c.summary.pages == 0
    assert not c.is_sitemap_job(sitemap.url)
    c.jobs.finish(sitemap, 0.0, Outcome.NOT_STARTED)
    c.job_ended(sitemap)
    job = start(c, 0.0)
    assert job.url == f"{SITE}/p"
    c.rows.row(job, answer(job.url), out)
    (row,) = out
    assert (row.sitemap_lastmod, row.sitemap_priority) == (1.0, 0.5)
