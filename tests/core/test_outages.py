"""A host that goes down mid-crawl, or asks for a wait over the cap: held, probed, fetched after (peer/core/crawl/outages.py).

The crawl core is driven as the engine drives it, one request at a time, on
a simulated clock (the core takes ``now``: no timed assert), against a
server that answers "connection refused" for a while. What a user checks is
the server's side: every page served once, none lost, and the run ends.
The policy's keys and their checks are ``[retry]``'s (peer/core/config/retry.py).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable

import pytest

from peer.core.config.retry import RetryConfig
from peer.core.crawl.core import CrawlCore, Fetch, Finished, Origin, Sleep
from peer.core.crawl.limits import Hold
from peer.core.crawl.outages import Outages, Verdict
from peer.core.http.result import FetchResult
from peer.core.run.progress import Progress
from ring.vocabulary import COUNTER_PREFIXES
from tests.core.test_crawl import SITE, answer, config, html, result, rows

PAGES = [f"{SITE}/p{i}" for i in range(12)]

Serve = Callable[[str, float], FetchResult]


def site(down: Callable[[float], bool]) -> tuple[Serve, Counter[str]]:
    """The site: / links to every page; ``down(now)``: connections refused. Its log: URL -> 200s served."""
    served: Counter[str] = Counter()

    def serve(url: str, now: float) -> FetchResult:
        if down(now):
            return answer(url, None, error="connect", detail="connection refused")
        served[url] += 1
        return answer(url, 200, html(*PAGES) if url == f"{SITE}/" else html("/"))
    return serve, served


def run(c: CrawlCore, serve: Serve, *, watch: Callable[[CrawlCore, float], None] | None = None,
        limit: int = 5000) -> tuple[float, dict[str, object]]:
    """The engine's loop, one request at a time: (the time it ended, every row by URL)."""
    c.discover(f"{SITE}/", 0, 0.0, Origin.SEED)
    now, out = 0.0, {}
    for _ in range(limit):
        got = c.next(now)
        if isinstance(got, Finished):
            return now, out
        if isinstance(got, Sleep):
            assert got.until > now
            now = got.until
            continue
        job = got.job
        assert isinstance(c.admit(job, now), Fetch)
        out.update(rows(result(c, job, serve(job.url, now), now)))
        now += 0.05  # the request's own time
        if watch is not None:
            watch(c, now)
    raise AssertionError("the crawl did not end by itself")


def crawler(**retry: object) -> CrawlCore:
    cfg = config(obey_robots=False, politeness={"rate": 60.0}, retry=dict(retry))
    return CrawlCore(cfg, "p1", rng=random.Random(3))


def test_a_host_down_for_60s_mid_crawl_has_every_page_fetched_after_it_comes_back_none_twice():
    # Default [retry]: the old fixed retries (two, 1 s then 2 s) gave up every page queued in the outage.
    serve, served = site(lambda now: 3.0 <= now < 63.0)
    lines: list[str] = []

    def watch(c: CrawlCore, now: float) -> None:
        line = Progress().line(c.progress_snapshot(now, now, 1.0, 0))
        if line and "down, retrying" in line:
            lines.append(line)
    end, out = run(crawler(), serve, watch=watch)
    assert set(served) == {f"{SITE}/", *PAGES} and max(served.values()) == 1
    assert all(r.status == 200 and r.error is None for r in out.values())  # type: ignore[attr-defined]
    assert 63.0 <= end < 63.0 + 300.0  # back within one probe's longest hold
    assert lines and "1 host down, retrying" in lines[0] and "held" in lines[0]


def test_the_probes_of_a_down_host_back_off_exponentially_up_to_the_cap():
    # Down from t=3 for good, until retry.down_give_up: probes at growing intervals, then every URL recorded.
    serve, served = site(lambda now: now >= 3.0)
    tries: list[float] = []

    def counting(url: str, now: float) -> FetchResult:
        res = serve(url, now)
        if res.status is None:
            tries.append(now)
        return res
    c = crawler(down_wait=10.0, down_max_wait=40.0, down_give_up=300.0)
    end, out = run(c, counting)
    gaps = [round(b - a) for a, b in zip(tries, tries[1:]) if b - a > 5.0]
    assert gaps[:3] == [10, 20, 40] and set(gaps[3:]) <= {40}  # doubled, then capped
    assert 300.0 <= end < 300.0 + 40.0 + 5.0  # given up after down_give_up, and the run ends
    lost = {u for u, r in out.items() if r.error == "connect"}  # type: ignore[attr-defined]
    assert lost and lost | set(served) == {f"{SITE}/", *PAGES}
    assert c.limits.given_up(SITE.split("//")[1]) and c.outages.gave_up == 1
    assert "1 given up" in c.outages.render()


def test_a_host_that_never_answered_is_not_held_its_urls_fail_after_their_retries():
    # A link to a wrong port must not keep the crawl running for down_give_up.
    serve, served = site(lambda now: True)
    end, out = run(crawler(), serve)
    assert not served and out[f"{SITE}/"].error == "connect"  # type: ignore[attr-defined]
    assert end < 10.0


def test_a_retry_after_of_99999999_holds_the_host_for_the_cap_each_time_and_the_crawl_ends():
    cap = 300.0
    asked: list[float] = []

    def serve(url: str, now: float) -> FetchResult:
        if url == f"{SITE}/":
            return answer(url, 200, html(*PAGES[:3]))
        asked.append(now)
        return answer(url, 503, retry_after=99999999.0)
    c = crawler(down_give_up=3600.0)
    holds: list[float] = []

    def watch(c: CrawlCore, now: float) -> None:
        for _, kind, until in c.limits.held_hosts(now):
            if kind is Hold.RETRY_AFTER:
                holds.append(until - now)
    end, out = run(c, serve, watch=watch)
    assert holds and max(holds) <= cap  # never held longer than the cap
    gaps = [b - a for a, b in zip(asked, asked[1:])]
    assert min(gaps) >= cap - 1 and max(gaps) <= max(cap, c.cfg.politeness.max_delay) + 1
    assert 3600.0 <= end <= 3600.0 + 2 * cap  # the crawl ends by itself after down_give_up
    assert {r.error for u, r in out.items() if u != f"{SITE}/"} == {"retry_after"}  # type: ignore[attr-defined]
    assert len(asked) <= 3600 / cap + 2


# -- the pure rules -------------------------------------------------------------------


def test_outages_rules():
    o = Outages(RetryConfig(down_after=2, down_wait=10.0, down_max_wait=25.0, down_give_up=100.0))
    assert o.failed("h", 0.0) == (Verdict.RETRY, 0.0)  # rule 2: never answered
    o.answered("h")
    assert o.failed("h", 1.0) == (Verdict.RETRY, 1.0)  # one failure is a page's
    assert o.failed("h", 2.0) == (Verdict.HOLD, 12.0)  # two in a row: down
    assert o.failed("h", 3.0) == (Verdict.HOLD, 12.0)  # one started before the hold: as it is
    assert o.failed("h", 12.0) == (Verdict.HOLD, 32.0)  # a probe: doubled
    assert o.failed("h", 32.0) == (Verdict.HOLD, 57.0)  # capped at 25
    assert o.hosts_down() == 1 and o.figures()["outage.hosts_down"] == 1
    # ring status shows them among the counters, not as URLs dropped.
    assert all(name.startswith(COUNTER_PREFIXES) for name in o.figures())
    o.answered("h")  # rule 1: back
    assert o.hosts_down() == 0 and o.recovered == 1
    assert o.failed("h", 60.0) == (Verdict.RETRY, 60.0)  # a new streak
    assert o.failed("h", 61.0) == (Verdict.HOLD, 71.0)
    assert o.failed("h", 161.0) == (Verdict.GIVE_UP, 161.0)  # rule 5
    assert o.asked_wait("r", 0.0, 30.0) == (Verdict.HOLD, 30.0)  # rule 4: the cap, each time
    assert o.asked_wait("r", 30.0, 30.0) == (Verdict.HOLD, 60.0)
    assert o.render() == "outages: 3 host outages, 1 recovered, 1 given up, 1 down now"
    # One slow page timing out again and again is its own failure, not its host's outage.
    o.answered("slow")
    assert [o.failed("slow", t, "http://slow/x", "timeout")[0] for t in (1.0, 2.0, 3.0, 4.0)] == [Verdict.RETRY] * 4
    assert o.failed("slow", 5.0, "http://slow/y", "timeout")[0] is Verdict.HOLD  # a second page: down


@pytest.mark.parametrize(("statuses", "status", "retried"), [
    (("429", "5xx"), 503, True), (("429", "5xx"), 999, True), (("429", "5xx"), 404, False),
    (("503",), 500, False), (("503", "408"), 408, True), ((), 503, False)])
def test_retried_statuses(statuses, status, retried):
    assert RetryConfig(statuses=statuses).retries_status(status) is retried


def test_a_site_block_sets_its_hosts_retries_and_check_host_says_so():
    # [[site]] retry_times / retry_statuses (peer/core/config/sites.py) over [retry] for its hosts alone.
    from pathlib import Path

    from peer.core.config.cluster import parse_config
    from peer.core.config.sites import SiteSettings

    text = (f'[[peer]]\nid = "p1"\n[crawl]\nseeds = ["{SITE}/"]\nallow_hosts = ["*.web.test"]\nobey_robots = false\n'
            '[politeness]\nrate = 0.0\n[retry]\ntimes = 3\n'
            '[[site]]\nhosts = ["api.web.test"]\nretry_times = 0\nretry_statuses = ["404", "5xx"]\n')
    cfg = parse_config(text, Path("/nonexistent/cluster.toml"))
    c = CrawlCore(cfg, "p1", rng=random.Random(1))
    for url in (f"{SITE}/a", "http://api.web.test/a", "http://api.web.test/b"):
        c.discover(url, 0, 0.0, Origin.LINK)
    got: dict[str, list] = {}
    now = 0.0
    while len(got) < 3:
        nxt = c.next(now)
        if isinstance(nxt, Sleep):  # a 503 backs its host off
            now = nxt.until
            continue
        job = nxt.job  # type: ignore[union-attr]
        assert isinstance(c.admit(job, now), Fetch)
        got.setdefault(job.url, result(c, job, answer(job.url, 404 if job.url.endswith("/b") else 503), now))
    assert [type(e).__name__ for e in got[f"{SITE}/a"]] == ["Requeued"]  # [retry] times = 3
    assert rows(got["http://api.web.test/a"])["http://api.web.test/a"].status == 503  # the block's 0: at once
    assert rows(got["http://api.web.test/b"])["http://api.web.test/b"].status == 404
    lines = SiteSettings(cfg.sites, cfg.crawl, cfg.politeness, cfg.retry).describe("api.web.test")
    assert "  retry 0 times on statuses 404, 5xx (site[0]: api.web.test)" in lines
    assert "  retry 3 times on statuses 429, 5xx ([retry])" in SiteSettings(
        cfg.sites, cfg.crawl, cfg.politeness, cfg.retry).describe("site.web.test")
