"""peer.core.crawl.proxyreach: a proxy that has not answered in this run is not waited for (pure).

Driven through ``CrawlCore`` as tests/core/test_crawl.py drives a robots.txt
that cannot be read: before, a proxy down held each host's robots.txt for
``crawl.robots_retry`` x ``robots_tries`` (3 min 30 s by default) and said
"robots.txt ... unreachable" host by host.
"""

from __future__ import annotations

from peer.core.crawl.core import FetchRobots, Origin, Requeue, Warn
from peer.core.crawl.limits import Hold
from peer.core.crawl.proxyreach import ProxyReach, proxy_of
from tests.core.test_crawl import SITE, answer, core, rows, start

PROXY = "http://proxy.example:3128"
DOWN = dict(error="proxy", detail=f"{PROXY}: connection refused")


def robots_job(c, url: str, now: float = 0.0):
    c.discover(url, 0, now, Origin.LINK)
    job = start(c, now)
    adm = c.admit(job, now)
    assert isinstance(adm, FetchRobots), adm
    return job, adm


def test_a_proxy_down_since_the_start_records_its_hosts_urls_at_once_with_one_warning():
    c = core(proxy=PROXY, robots_retry=30.0)
    c.discover(f"{SITE}/b", 0, 0.0, Origin.LINK)
    job, adm = robots_job(c, f"{SITE}/a")
    effects = c.on_robots(job, answer(adm.url, None, **DOWN), 0.0)
    c.job_ended(job)
    assert {u: r.error for u, r in rows(effects).items()} == {f"{SITE}/a": "proxy", f"{SITE}/b": "proxy"}
    assert [e.text for e in effects if isinstance(e, Warn)] == [
        f"the proxy {PROXY} (crawl.proxy) cannot be reached and has not answered in this run "
        "(connection refused): no site behind it can be fetched, so their URLs are recorded as 'proxy' "
        "now rather than waited for (crawl.robots_retry); start the proxy or correct crawl.proxy, then "
        "crawl them again with --retry-failed"]  # before: held 30 s, "tried again in 30s (2 of 4)"
    assert not c.limits.held(0.0)[Hold.ROBOTS]
    # Another host behind it: its URLs at once too, and nothing said again.
    job, adm = robots_job(c, "http://other.web.test/x", 0.1)
    effects = c.on_robots(job, answer(adm.url, None, **DOWN), 0.1)
    assert {u: r.error for u, r in rows(effects).items()} == {"http://other.web.test/x": "proxy"}
    assert not [e for e in effects if isinstance(e, Warn)]


def test_a_proxy_that_answered_earlier_is_an_outage_and_its_hosts_are_held_as_before():
    c = core(proxy=PROXY, robots_retry=30.0)
    job, adm = robots_job(c, f"{SITE}/a")
    c.on_robots(job, answer(adm.url, 404), 0.0)  # through the proxy: it answered
    c.job_ended(job)
    c.discover("http://other.web.test/x", 0, 1.0, Origin.LINK)
    while not isinstance(adm := c.admit(job := start(c, 1.0), 1.0), FetchRobots):
        c.on_result(job, answer(job.url, 200), None, 1.0)  # SITE/a, fetched
        c.job_ended(job)
    effects = c.on_robots(job, answer(adm.url, None, **DOWN), 1.0)
    c.job_ended(job)
    assert not rows(effects) and c.limits.held(1.0)[Hold.ROBOTS] == 1
    (warn,) = [e.text for e in effects if isinstance(e, Warn)]
    assert "tried again in 30s (2 of 4)" in warn
    job = start(c, 1.0)
    assert isinstance(c.admit(job, 1.0), Requeue)


def test_a_page_behind_a_proxy_down_since_the_start_is_not_retried():
    c = core(proxy=PROXY, obey_robots=False)
    c.discover(f"{SITE}/a", 0, 0.0, Origin.LINK)
    job = start(c, 0.0)
    c.admit(job, 0.0)
    effects = c.on_result(job, answer(job.url, None, **DOWN), None, 0.0)
    assert {u: r.error for u, r in rows(effects).items()} == {f"{SITE}/a": "proxy"}  # before: retried twice
    assert len([e for e in effects if isinstance(e, Warn)]) == 1


def test_no_proxy_no_part_and_a_block_s_proxy_is_named_by_its_key():
    assert core().outcomes._proxies is None
    assert proxy_of(-1, None, "") is None and proxy_of(2, "direct", PROXY) is None
    assert proxy_of(2, "socks5h://p:1080", PROXY) == ("socks5h://p:1080", "site[2].proxy")
    assert proxy_of(-1, None, PROXY) == (PROXY, "crawl.proxy")
    reach = ProxyReach(lambda h: (PROXY, "crawl.proxy") if h != "direct.test" else None)
    assert reach.unreached("a.test", "proxy") == (PROXY, "crawl.proxy")
    assert reach.unreached("direct.test", "proxy") is None and reach.unreached("a.test", "connect") is None
    reach.saw("a.test", "proxy_refused")  # the proxy's own answer: it is up
    assert reach.unreached("b.test", "proxy") is None
