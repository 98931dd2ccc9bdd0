"""Budgets per host, [[site]] block and registered domain (peer/core/crawl/budgets.py), on the crawl core.

Each test drives a ``CrawlCore`` synchronously through a small web of
pages that link on for ever (a trap), as a crawl would, and checks what an
operator checks: the requests made per host, the not-requested cause the
budget leaves, and the summary's ``limits:`` line.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from peer.core.config.cluster import ClusterConfig, parse_config
from peer.core.crawl.budgets import share
from peer.core.crawl.core import CrawlCore, Done, Drop, Fetch, Finished, Origin, Reason, Refused, Sleep, Start
from peer.core.crawl.figures import not_requested_now
from peer.core.crawl.limits import Cap
from peer.core.http.result import FetchResult
from peer.errors import ConfigError
from ring.hashring import HashRing


def config(crawl: str = "", sites: str = "", peers: int = 1) -> ClusterConfig:
    text = '[ring]\nname = "test"\n'
    for i in range(1, peers + 1):
        text += f'[[peer]]\nid = "p{i}"\naddress = "tcp://127.0.0.1:{5790 + i}"\n'
    text += ('[crawl]\nseeds = ["http://a.one.test/"]\nallow_hosts = ["*.test"]\nobey_robots = false\n'
             'concurrency = 8\n' + crawl + '\n[politeness]\nrate = 0.0\nhost_concurrency = 2\n'
             '[bloom]\ncapacity = 10000\nerror_rate = 0.001\n' + sites)
    return parse_config(text, Path("/nonexistent/cluster.toml"))


def answer(url: str, body: bytes, wire: int | None = None) -> FetchResult:
    return FetchResult(url=url, status=200, content_type="text/html", charset="utf-8", location=None,
                       retry_after=None, body=body, raw_bytes=len(body) if wire is None else wire,
                       truncated=False, error=None, elapsed=0.01, address=None, detail="")


def trap_page(url: str) -> bytes:
    """A calendar: every page links the next two months, for ever."""
    n = int(url.rsplit("/", 1)[1] or 0)
    return f'<html><body><a href="/{n + 1}">next</a> <a href="/{n + 2}">later</a></body></html>'.encode()


def crawl(c: CrawlCore, seeds: list[str], *, wire: int | None = None, steps: int = 500) -> dict[str, int]:
    """Run ``c`` to its end (every admitted fetch answered by ``trap_page``); requests made, by host."""
    from peer.core.page.parse import parse_response
    now = 0.0
    for s in seeds:
        c.discover(s, 0, now, Origin.SEED)
    asked: dict[str, int] = {}
    for _ in range(steps):
        now += 0.01
        got = c.next(now)
        if isinstance(got, Finished):
            return asked
        if isinstance(got, Sleep):
            continue
        assert isinstance(got, Start)
        job = got.job
        adm = c.admit(job, now)
        if not isinstance(adm, Fetch):
            assert isinstance(adm, Drop), adm
            c.job_ended(job)
            continue
        asked[job.host] = asked.get(job.host, 0) + 1
        res = answer(job.url, trap_page(job.url), wire)
        parsed = parse_response(job.url, res.body, res.charset, c.cfg.extract,
                                c.cfg.crawl.max_links_per_page, c.params, c.page_rules) if c.fetched(job, res, now) else None
        c.on_result(job, res, parsed, now)
        c.job_ended(job)
    raise AssertionError(f"the crawl did not end in {steps} steps: {asked}")


def test_a_host_page_budget_ends_a_calendar_trap_at_the_budget_with_the_budget_counted():
    c = CrawlCore(config("max_pages_per_host = 5"), "p1", rng=random.Random(1))
    asked = crawl(c, ["http://a.one.test/0"])
    assert asked == {"a.one.test": 5}  # the server saw exactly the budget
    nr = not_requested_now(c)
    assert nr["budget_host"] >= 1 and not c.summary.errors  # a not-requested cause, never a failure
    assert c.limits.hits[Cap.BUDGETS_SPENT] == 1
    line = c.limits.render(1.0)
    assert line == f"limits: budgets spent 1 (not requested: budget_host {nr['budget_host']})", line
    figures = c.limits_figures(1.0, {})  # ring status --json's counters
    assert figures["cap.budget_host"] == nr["budget_host"] and figures["cap.budgets_spent"] == 1


def test_a_spent_host_has_its_queued_urls_dropped_unrequested_and_new_ones_refused():
    c = CrawlCore(config("max_pages_per_host = 1"), "p1", rng=random.Random(1))
    for i in range(4):
        c.discover(f"http://a.one.test/q{i}", 1, 0.0, Origin.LINK)
    first = c.next(0.0)
    assert isinstance(first, Start) and isinstance(c.admit(first.job, 0.0), Fetch)
    c.on_result(first.job, answer(first.job.url, b""), None, 0.1)
    c.job_ended(first.job)
    dropped = []
    for t in (0.2, 0.3, 0.4):
        got = c.next(t)
        assert isinstance(got, Start)
        adm = c.admit(got.job, t)
        assert isinstance(adm, Drop) and Done(got.job.url) in adm.effects  # left the journal's queue
        c.job_ended(got.job)
        dropped.append(got.job.url)
    assert len(dropped) == 3 and isinstance(c.next(0.5), Finished)
    assert c.discover("http://a.one.test/new", 1, 0.6, Origin.LINK) == [
        Refused("http://a.one.test/new", Reason.BUDGET_HOST)]
    assert "http://a.one.test/new" not in c.bloom  # a trap must not fill the seen set
    assert c.discover("http://b.one.test/other", 1, 0.6, Origin.LINK)[0].__class__.__name__ == "Queued"
    assert not_requested_now(c)["budget_host"] == 4 and c.summary.requested == 1


def test_requests_in_flight_count_so_a_page_budget_is_never_passed():
    # host_concurrency 2: the second start is admitted while the first is on the wire.
    c = CrawlCore(config("max_pages_per_host = 1"), "p1", rng=random.Random(1))
    c.discover("http://a.one.test/x", 0, 0.0, Origin.LINK)
    c.discover("http://a.one.test/y", 0, 0.0, Origin.LINK)
    one, two = c.next(0.0), c.next(0.0)
    assert isinstance(one, Start) and isinstance(two, Start)
    assert isinstance(c.admit(one.job, 0.0), Fetch)
    assert isinstance(c.admit(two.job, 0.0), Drop)


def test_a_host_bytes_budget_counts_bytes_on_the_wire_and_stops_before_the_next_request():
    c = CrawlCore(config("max_bytes_per_host = 2500"), "p1", rng=random.Random(1))
    asked = crawl(c, ["http://a.one.test/0"], wire=1000)  # each answer 1000 bytes on the wire
    assert asked == {"a.one.test": 3}  # 1000, 2000 (< 2500: one more), 3000: spent
    assert c.budgets.host_spent("a.one.test") == (3, 3000)


SITE_BLOCK = '\n[[site]]\nhosts = ["a.one.test", "b.one.test"]\nmax_pages = 6\n'


def test_a_site_block_budget_is_shared_by_its_hosts_and_leaves_other_hosts_alone():
    c = CrawlCore(config("max_pages_per_host = 30", sites=SITE_BLOCK), "p1", rng=random.Random(1))
    asked = crawl(c, ["http://a.one.test/0", "http://b.one.test/0", "http://c.two.test/0"])
    assert asked["a.one.test"] + asked["b.one.test"] == 6, asked  # the block's, under each host's 30
    assert asked["c.two.test"] == 30  # no block: its host budget alone
    assert not_requested_now(c)["budget_site"] >= 1


def test_a_registered_domain_budget_is_shared_by_its_hosts():
    c = CrawlCore(config("max_pages_per_domain = 7"), "p1", rng=random.Random(1))
    asked = crawl(c, ["http://a.one.test/0", "http://b.one.test/0", "http://c.two.test/0"])
    assert asked["a.one.test"] + asked["b.one.test"] == 7 and asked["c.two.test"] == 7, asked
    assert c.limits.hits[Cap.BUDGETS_SPENT] == 2  # one.test and two.test
    assert not_requested_now(c)["budget_domain"] >= 2


def test_in_a_ring_a_domain_and_a_site_budget_are_split_among_the_members_and_a_host_budget_is_not():
    assert [share(10, r, 3) for r in range(3)] == [4, 3, 3]
    assert all(sum(share(b, r, n) for r in range(n)) == b for b in range(20) for n in range(1, 6))
    assert [share(2, r, 3) for r in range(3)] == [1, 1, 0]
    cfg = config("max_pages_per_domain = 10\nmax_pages_per_host = 10", sites=SITE_BLOCK, peers=3)
    c = CrawlCore(cfg, "p2", rng=random.Random(1))
    c.ring = HashRing({"p1": 1.0, "p2": 1.0, "p3": 1.0})
    b = c.budgets
    for _ in range(3):
        assert b.spent("c.two.test") is None
        b.page("c.two.test")
    assert b.spent("c.two.test") is Cap.BUDGET_DOMAIN  # p2's share of 10 among 3: 3
    for _ in range(3):
        b.page("z.three.test")
    assert b.spent("z.three.test") is Cap.BUDGET_DOMAIN
    for _ in range(2):  # the block's 6 pages among 3: 2 for p2
        b.page("b.one.test")
    assert b.spent("b.one.test") is Cap.BUDGET_SITE
    # A member whose share is 0 is spent at once: never 'no budget'.
    cfg = config("max_pages_per_domain = 2", peers=3)
    c3 = CrawlCore(cfg, "p3", rng=random.Random(1))
    c3.ring = HashRing({"p1": 1.0, "p2": 1.0, "p3": 1.0})
    assert c3.budgets.spent("c.two.test") is Cap.BUDGET_DOMAIN
    # Alone again: the whole budget.
    c3.ring = None
    assert c3.budgets.spent("c.two.test") is None


def test_budgets_survive_a_resume_through_the_journals_counters():
    cfg = config("max_pages_per_host = 4\nmax_pages_per_domain = 6", sites=SITE_BLOCK)
    c = CrawlCore(cfg, "p1", rng=random.Random(1))
    for host in ("a.one.test", "a.one.test", "b.one.test", "c.two.test"):
        c.budgets.page(host)
    c.budgets.received("a.one.test", 1234)
    saved = c.budgets.counters()
    assert saved["budget.pages:a.one.test"] == 2 and saved["budget.bytes:a.one.test"] == 1234
    assert c.budgets.counters("b.one.test") == {"budget.pages:b.one.test": 1, "budget.bytes:b.one.test": 0}
    again = CrawlCore(cfg, "p1", rng=random.Random(1))
    again.budgets.restore({"pages": 4, **saved})
    assert again.budgets.host_spent("a.one.test") == (2, 1234)
    for _ in range(3):  # the block (a, b) has spent 3 of its 6
        again.budgets.page("b.one.test")
    assert again.budgets.spent("a.one.test") is Cap.BUDGET_SITE


def test_no_budget_set_costs_nothing_and_writes_no_counters():
    c = CrawlCore(config(), "p1", rng=random.Random(1))
    assert not c.budgets.active and c.budgets.counters() == {}
    with pytest.raises(AssertionError, match="did not end"):
        crawl(c, ["http://a.one.test/0"], steps=60)  # the trap goes on: nothing changed for old configs
    assert not_requested_now(c) == {} and c.limits.render(1.0) == "limits: none hit"


@pytest.mark.parametrize("line", ["max_pages_per_host = -1", 'max_bytes_per_domain = "1 MiB"'])
def test_a_bad_budget_is_a_config_error_naming_the_key(line: str):
    with pytest.raises(ConfigError, match=line.split(" ")[0]):
        config(line)


def test_check_shows_the_budgets_in_force_and_nothing_without_one():
    from peer.commands.check import describe
    from peer.core.config.sites import SiteSettings

    cfg = config("max_pages_per_host = 30\nmax_bytes_per_domain = 1000000", sites=SITE_BLOCK)
    assert ("   budgets: pages per host 30; bytes per registered domain 1,000,000; site[0] 6 pages, 0 bytes "
            "(bytes as on the wire; a site's and a domain's split among a ring's members)") in describe(cfg).splitlines()
    lines = SiteSettings(cfg.sites, cfg.crawl, cfg.politeness, cfg.retry).describe("b.one.test")
    assert ("  budgets host 30 pages (crawl.max_pages_per_host, max_bytes_per_host); site 6 pages for its hosts "
            "together (site[0]); domain one.test: 1,000,000 bytes for its hosts together (crawl.max_pages_per_domain, "
            "max_bytes_per_domain) (a site's and a domain's split evenly among a ring's members)") in lines
    plain = config()
    assert "budgets" not in describe(plain)
    assert not any("budgets" in line for line in SiteSettings(
        plain.sites, plain.crawl, plain.politeness, plain.retry).describe("b.one.test"))


# -- whole rings in the fake network (tests/support/fakering.py) ----------------------


def test_a_ring_of_three_spends_a_domain_budget_exactly_and_every_host_budget_whoever_owns_it():
    from fakering import FakeRing, FakeWeb

    web = FakeWeb(hosts=40, pages_per_host=20)  # 800 pages, every host of one domain (web.test)
    ring = FakeRing(n=3, web=web, crawl_extra="max_pages_per_domain = 100")
    ring.run_until(ring.all_finished, 300)
    per_peer = sorted(len(p.fetched) for p in ring.peers.values())
    assert len(ring.fetches) == 100 and per_peer == [33, 33, 34], per_peer  # the shares, adding up to it
    ring = FakeRing(n=3, web=web, crawl_extra="max_pages_per_host = 5")
    ring.run_until(ring.all_finished, 300)
    by_host = {}
    for f in ring.fetches:
        host = f.url.split("/")[2]
        by_host[host] = by_host.get(host, 0) + 1
    assert set(by_host.values()) == {5} and len(by_host) == 40, by_host  # a host's budget is not split
