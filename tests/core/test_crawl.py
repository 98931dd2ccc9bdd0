"""peer.core.crawl.core: the crawl core, driven synchronously (no trio, no sockets, ``now`` passed in).

Through ``CrawlCore`` these cover its parts too: peer.core.crawl.outcomes
(results, retries, robots.txt answers), peer.core.handoff.moves (ring changes
and hand-offs), peer.core.crawl.figures (the figures read from the parts)
and the values of peer.core.crawl.decisions, peer.core.handoff.leasewaits (moved
hosts waiting for their lease); peer.core.crawl.discovery and
peer.core.crawl.jobs have test modules of their own as well.
"""

from __future__ import annotations

import dataclasses
import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from peer.core.config.cluster import ClusterConfig, parse_config
from peer.core.crawl.core import (
    HOLD_POLL,
    MAX_RETRIES,
    RETRY_BASE,
    ROBOTS_PENDING_WAIT,
    CrawlCore,
    Done,
    Drop,
    Fetch,
    FetchRobots,
    Finished,
    Forward,
    Items,
    Origin,
    PassOn,
    Queued,
    Reason,
    Refused,
    Requeue,
    Requeued,
    Row,
    Seen,
    Sleep,
    Start,
    StopReason,
    Warn,
    parse_response,
)
from peer.core.http.result import FetchResult
from peer.core.frontier.frontier import Job
from peer.core.crawl.limits import Cap, Hold
from ring.hashring import HashRing

SITE = "http://site.web.test"
HOST = "site.web.test"


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return repr(v)


def config(*, seeds: list[str] | None = None, politeness: dict | None = None, retry: dict | None = None,
           **crawl) -> ClusterConfig:
    sections = {
        "crawl": {"seeds": seeds or [f"{SITE}/"], "allow_hosts": ["*.web.test"],
                  "concurrency": 8, **crawl},
        "politeness": {"rate": 0.0, "host_concurrency": 1, **(politeness or {})},
        "bloom": {"capacity": 10_000, "error_rate": 0.001},
        "retry": retry or {},
    }
    text = '[ring]\nname = "test"\n[[peer]]\nid = "p1"\naddress = "tcp://127.0.0.1:5799"\n'
    text += '[[peer]]\nid = "p2"\naddress = "tcp://127.0.0.1:5798"\n'
    for name, table in sections.items():
        text += f"\n[{name}]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in table.items())
    return parse_config(text, Path("/nonexistent/cluster.toml"))


def core(**kw) -> CrawlCore:
    seed = kw.pop("rng_seed", 1)
    return CrawlCore(config(**kw), "p1", rng=random.Random(seed))


def answer(url: str, status: int | None = 200, body: bytes = b"", *, error: str | None = None,
           ctype: str = "text/html", retry_after: float | None = None, location: str | None = None,
           truncated: bool = False, detail: str = "") -> FetchResult:
    return FetchResult(url=url, status=status, content_type=ctype if status else "",
                       charset="utf-8" if status else None, location=location,
                       retry_after=retry_after, body=body, raw_bytes=len(body), truncated=truncated,
                       error=error, elapsed=0.01, address=None, detail=detail)


def html(*hrefs: str) -> bytes:
    return ("<html><body>" + "".join(f'<a href="{h}">l</a>' for h in hrefs) + "</body></html>").encode()


def start(c: CrawlCore, now: float) -> Job:
    got = c.next(now)
    assert isinstance(got, Start), got
    return got.job


def fetch_job(c: CrawlCore, url: str, now: float = 0.0) -> Job:
    """Queue ``url`` (no robots), start it and admit it for a fetch."""
    c.discover(url, 0, now, Origin.LINK)
    job = start(c, now)
    assert job.url == url
    assert isinstance(c.admit(job, now), Fetch)
    return job


def result(c: CrawlCore, job: Job, res: FetchResult, now: float):
    parsed = None
    if c.fetched(job, res, now):
        parsed = parse_response(job.url, res.body, res.charset, c.cfg.extract,
                                c.cfg.crawl.max_links_per_page, c.params, c.page_rules)
    effects = c.on_result(job, res, parsed, now)
    c.job_ended(job)
    return effects


def rows(effects) -> dict[str, Row]:
    return {e.url: e for e in effects if isinstance(e, Row)}


def owned_by(ring: HashRing, peer: str, n: int = 1) -> list[str]:
    """``n`` host names of the local web that ``ring`` gives to ``peer``."""
    out = [f"h{i}.web.test" for i in range(1000) if ring.owner(f"h{i}.web.test") == peer]
    return out[:n]


# -- discovery and each origin's Bloom treatment -------------------------------------


def test_a_link_is_queued_and_journaled_once():
    c = core(obey_robots=False)
    assert c.discover(f"{SITE}/a", 1, 0.0, Origin.LINK) == [Queued(f"{SITE}/a", 1)]
    assert c.discover(f"{SITE}/a", 1, 0.0, Origin.LINK) == [Refused(f"{SITE}/a", Reason.SEEN)]
    assert len(c.frontier) == 1 and f"{SITE}/a" in c.bloom


def test_seeds_and_relays_are_normalised_and_scoped():
    c = core(obey_robots=False)
    assert c.seeds(0.0) == [Queued(f"{SITE}/", 0)]
    assert c.discover("HTTP://Site.Web.Test:80/x#frag", 0, 0.0, Origin.RELAY) == [Queued(f"{SITE}/x", 0)]
    assert c.discover("not a url", 0, 0.0, Origin.RELAY) == []  # a tail after a space: a sitemap drop
    assert c.discover("notaurl", 0, 0.0, Origin.RELAY) == [Refused("notaurl", Reason.BAD_URL)]
    assert c.discover("ftp://x/", 0, 0.0, Origin.LINK) == [Refused("ftp://x/", Reason.BAD_URL)]
    assert c.discover("http://elsewhere.example/", 0, 0.0, Origin.ADOPTED) == [
        Refused("http://elsewhere.example/", Reason.HOST)]  # out of scope
    assert c.discover(f"{SITE}/x", 0, 0.0, Origin.ADOPTED) == [Refused(f"{SITE}/x", Reason.SEEN)]


def test_handed_back_is_queued_even_when_the_bloom_filter_has_it():
    c = core(obey_robots=False)
    c.bloom.add(f"{SITE}/back")
    assert c.discover(f"{SITE}/back", 2, 0.0, Origin.HANDED_BACK) == [Queued(f"{SITE}/back", 2)]
    assert len(c.frontier) == 1


def test_handed_back_is_not_queued_when_a_previous_owner_handed_it_over_as_fetched():
    # A link of a leaver's host, forwarded to the leaver, comes back unacked
    # when the ring drops it (Outbox.reroute); the leaver had fetched that
    # page and handed it over as seen first: fetching it again would be twice.
    c = core(obey_robots=False)
    c.discover(f"{SITE}/p", 0, 0.0, Origin.HANDED_SEEN)
    assert c.discover(f"{SITE}/p", 1, 0.0, Origin.HANDED_BACK) == [Refused(f"{SITE}/p", Reason.SEEN)]
    assert len(c.frontier) == 0 and c.locally_idle()


def test_a_url_requested_here_and_queued_again_by_another_path_is_not_requested_twice():
    # One of ours re-routed back (HANDED_BACK queues it whatever the filter
    # says) after the same URL came and was fetched by another path.
    c = core(obey_robots=False)
    job = fetch_job(c, f"{SITE}/twice")
    result(c, job, answer(job.url, body=html()), 0.1)
    assert c.discover(f"{SITE}/twice", 1, 0.2, Origin.HANDED_BACK) == [Queued(f"{SITE}/twice", 1)]
    again = start(c, 0.3)
    assert isinstance(c.admit(again, 0.3), Drop)
    c.job_ended(again)
    assert c.summary.requeued_twice == 1 and c.locally_idle()
    assert c.limits_figures(0.3, {})["frontier.requeued_twice"] == 1


def test_handed_seen_enters_the_bloom_filter_only_and_drops_a_queued_copy():
    c = core(obey_robots=False)
    assert c.discover(f"{SITE}/fetched-elsewhere", 0, 0.0, Origin.HANDED_SEEN) == [
        Seen(f"{SITE}/fetched-elsewhere")]
    assert len(c.frontier) == 0 and f"{SITE}/fetched-elsewhere" in c.bloom
    assert c.discover(f"{SITE}/fetched-elsewhere", 0, 0.0, Origin.LINK) == [
        Refused(f"{SITE}/fetched-elsewhere", Reason.SEEN)]
    # Queued here first, then handed over as fetched: its job is dropped, not fetched.
    c.discover(f"{SITE}/both", 0, 0.0, Origin.LINK)
    c.discover(f"{SITE}/both", 0, 0.0, Origin.HANDED_SEEN)
    job = start(c, 0.0)
    assert c.admit(job, 0.0) == Drop(job, (Done(f"{SITE}/both"),))
    c.job_ended(job)
    assert c.handoffs_in == 2 and c.locally_idle()


def test_a_snapshot_leaves_out_a_queued_url_handed_over_as_fetched():
    # Its job would be dropped when it came up; a snapshot listing it made a
    # restarted peer fetch it a second time.
    c = core(obey_robots=False)
    c.discover(f"{SITE}/both", 0, 0.0, Origin.LINK)
    c.discover(f"{SITE}/mine", 0, 0.0, Origin.LINK)
    c.discover(f"{SITE}/both", 0, 0.0, Origin.HANDED_SEEN)
    assert [u for u, _ in c.snapshot_queue()] == [f"{SITE}/mine"]


def test_recovered_urls_skip_the_bloom_filter_and_the_journal():
    c = core(obey_robots=False)
    count = c.bloom.count
    assert c.discover(f"{SITE}/r", 3, 0.0, Origin.RECOVERED) == []
    assert len(c.frontier) == 1 and c.bloom.count == count


def test_urls_of_other_owners_are_forwarded_relay_only_when_handed_to_us():
    c = core(obey_robots=False)
    ring = HashRing({"p1": 1.0, "p2": 1.0})
    c.handoffs.set_ring(ring, 0.0)
    theirs = f"http://{owned_by(ring, 'p2')[0]}/"
    assert c.discover(theirs, 1, 0.0, Origin.LINK) == [Forward(theirs, 1, "p2", False)]
    assert c.discover(theirs, 1, 0.0, Origin.RELAY) == [Forward(theirs, 1, "p2", True)]
    assert theirs not in c.bloom  # the owner's filter decides
    # Handed back, but no longer ours: on to its owner like a relay.
    assert c.discover(theirs, 1, 0.0, Origin.HANDED_BACK) == [Forward(theirs, 1, "p2", True)]


def test_capped_urls_stay_out_of_the_bloom_filter_and_are_counted():
    c = core(obey_robots=False, max_urls_per_host=2, max_url_length=64, max_path_repeat=2)
    for i in range(4):
        c.discover(f"{SITE}/p{i}", 0, 0.0, Origin.LINK)
    c.discover(f"{SITE}/" + "x" * 100, 0, 0.0, Origin.LINK)
    c.discover(f"{SITE}/a/a/a/", 0, 0.0, Origin.LINK)
    assert len(c.frontier) == 2
    assert f"{SITE}/p3" not in c.bloom
    hits = c.limits.hits
    assert hits[Cap.URLS_PER_HOST] == 2 and hits[Cap.URL_LENGTH] == 1 and hits[Cap.PATH_REPEAT] == 1


def test_url_rules_leave_urls_out_after_the_host_scope_counted_by_cause():
    c = core(obey_robots=False, rules=["exclude:re:[?&]q=", "include:*/library/*"])
    assert c.discover(f"{SITE}/library/a", 1, 0.0, Origin.LINK) == [Queued(f"{SITE}/library/a", 1)]
    def refused(url: str, origin: Origin = Origin.LINK, depth: int = 1) -> Reason | None:
        (e,) = c.discover(url, depth, 0.0, origin)
        return e.reason if isinstance(e, Refused) else None

    assert refused(f"{SITE}/library/search?q=x") is Reason.RULES
    assert refused(f"{SITE}/blog/") is Reason.RULES                  # matches no include
    assert refused(f"{SITE}/library/cover.JPG") is Reason.EXTENSION  # default extensions
    assert refused("http://other.example/library/a") is Reason.HOST  # hosts first
    assert c.discover(f"{SITE}/library/b", 0, 0.0, Origin.RELAY) == [Queued(f"{SITE}/library/b", 0)]
    assert refused(f"{SITE}/other", Origin.ADOPTED, 0) is Reason.RULES
    assert f"{SITE}/blog/" not in c.bloom  # left out before the seen set, like the host scope
    assert c.summary.excluded == {"rules": 3, "skip_extensions": 1} and c.summary.out_of_scope == 1
    # Not requested, by cause (ring.vocabulary): never drops, which are refused input.
    assert not any(k.startswith("scope.") for k in c.limits_figures(0.0, {}))
    from peer.core.run.stats import crawl_stats

    stats = crawl_stats(c.summary, peer="p1", ring="r", run=1, started=0.0, finished=1.0, cap_hits={})
    assert stats["not_requested"] == {"rules": 3, "scope": 1, "skip_extensions": 1}
    assert "not requested: rules 3, scope 1, skip_extensions 1" in c.summary.render()


def test_tracking_variants_are_one_url_whatever_their_origin():
    c = core(obey_robots=False, seeds=[f"{SITE}/?utm_source=a", f"{SITE}/?fbclid=b&utm_medium=c"])
    assert c.seeds(0.0) == [Queued(f"{SITE}/", 0), Refused(f"{SITE}/", Reason.SEEN)]
    assert c.discover(f"{SITE}/;jsessionid=1F2E", 0, 0.0, Origin.RELAY) == [Refused(f"{SITE}/", Reason.SEEN)]
    # A link source that normalised without the rules still meets them in discover.
    assert c.discover(f"{SITE}/?gclid=x", 1, 0.0, Origin.LINK) == [Refused(f"{SITE}/", Reason.SEEN)]
    job = start(c, 0.0)
    assert isinstance(c.admit(job, 0.0), Fetch)
    page = html("/p?utm_source=x&id=1", "/p?id=1&utm_campaign=y", "/p?id=1", "/q?fbclid=z")
    parsed = parse_response(job.url, page, "utf-8", c.cfg.extract, 0, c.params)
    assert parsed.page.links == (f"{SITE}/p?id=1", f"{SITE}/q")  # the variants are one link
    effects = c.on_result(job, answer(job.url, 200, page), parsed, 0.0)
    c.job_ended(job)
    assert [e for e in effects if isinstance(e, Queued)] == [Queued(f"{SITE}/p?id=1", 1), Queued(f"{SITE}/q", 1)]
    assert rows(effects)[job.url].n_links == 2
    assert c.summary.directives["links_params_changed"] == 3  # counted where an operator looks
    # A redirect's target is stripped too, and so is the row's final_url.
    job = start(c, 1.0)
    assert isinstance(c.admit(job, 1.0), Fetch)
    effects = result(c, job, answer(job.url, 301, location="/moved?utm_source=r"), 1.0)
    assert rows(effects)[job.url].final_url == f"{SITE}/moved"
    assert Queued(f"{SITE}/moved", 1) in effects


def test_no_strip_params_keeps_every_variant():
    c = core(obey_robots=False, strip_params=[], skip_extensions=[])
    assert c.params is None and not c.urlrules
    for url in (f"{SITE}/?utm_source=a", f"{SITE}/", f"{SITE}/a.pdf"):
        assert c.discover(url, 0, 0.0, Origin.SEED) == [Queued(url, 0)]


def test_links_per_page_are_cut_and_nofollow_depth_respected():
    c = core(obey_robots=False, max_links_per_page=3, max_depth=1)
    job = fetch_job(c, f"{SITE}/")
    effects = result(c, job, answer(job.url, 200, html(*(f"/l{i}" for i in range(10)))), 0.0)
    assert [e for e in effects if isinstance(e, Queued)] == [Queued(f"{SITE}/l{i}", 1) for i in range(3)]
    row = rows(effects)[job.url]
    assert row.n_links == 10 and row.status == 200
    # The page's Row comes after its links' Queued (peer/state/journal.py crash rule 1).
    assert isinstance(effects[-1], Row)
    assert c.limits.hits[Cap.LINKS_PER_PAGE] == 7
    # At max_depth the links are not followed.
    deep = start(c, 10.0)
    assert isinstance(c.admit(deep, 10.0), Fetch)
    effects = result(c, deep, answer(deep.url, 200, html("/deeper")), 10.0)
    assert not [e for e in effects if isinstance(e, Queued)]


# -- scheduling -----------------------------------------------------------------------


def test_next_starts_sleeps_until_the_host_may_start_and_finishes_when_empty():
    c = core(obey_robots=False, politeness={"rate": 60.0, "initial_delay": 1.0})
    c.discover(f"{SITE}/a", 0, 0.0, Origin.LINK)
    c.discover(f"{SITE}/b", 0, 0.0, Origin.LINK)
    a = start(c, 0.0)
    assert c.next(0.0) == Sleep(float("inf"))  # host_concurrency 1: nothing until a ends
    assert isinstance(c.admit(a, 0.0), Fetch)
    result(c, a, answer(a.url, 200, html()), 0.1)
    got = c.next(0.1)
    assert isinstance(got, Sleep) and 0.1 < got.until < float("inf")
    b = start(c, got.until)
    assert isinstance(c.admit(b, got.until), Fetch)
    result(c, b, answer(b.url, 200, html()), got.until)
    assert c.next(got.until + 10) == Finished(StopReason.FRONTIER_EMPTY)
    assert c.summary.pages == 2 and c.requested == 2


def test_stop_finishes_and_a_leaver_passes_its_queue_on():
    c = core(obey_robots=False)
    c.stopping = True
    assert c.next(0.0) == Finished(StopReason.STOPPED)
    c = core(obey_robots=False, concurrency=1)
    ring = HashRing({"p1": 1.0, "p2": 1.0})
    c.handoffs.set_ring(ring, 0.0)
    mine = [f"http://{h}/" for h in owned_by(ring, "p1", 2)]
    for url in mine:
        c.discover(url, 0, 0.0, Origin.LINK)
    job = start(c, 0.0)
    c.leaving = True
    c.handoffs.set_ring(ring.without_peer("p1"), 0.0)  # the ring without the leaver
    view = FakeRing()
    got = c.next(0.0, view)
    assert isinstance(got, Sleep) and got.until == HOLD_POLL
    # A job that comes back later (a retry) goes on too, at the next pass.
    c.frontier.requeue(job, 0.0, 100.0)
    c.frontier.done(job.host, 0.0)
    c.job_ended(job)
    got = c.next(0.1, view)
    assert isinstance(got, Sleep) and got.effects == (Forward(job.url, 0, "p2", True), Done(job.url))
    assert len(c.frontier) == 0
    view.has_left = True
    assert c.next(0.2, view) == Finished(StopReason.LEFT)


class FakeRing:
    """What ``CrawlCore.next`` asks the ring node."""

    def __init__(self, others: int = 0, page_cap: int = 0) -> None:
        self.others, self.page_cap = others, page_cap
        self.is_idle = self.is_done = self.has_left = self.gone = False
        self.lease = True
        self.moved: set[str] = set()  # hosts whose lease waits (ring.membership.hostgate)

    def others_pages(self) -> int:
        return self.others

    def budget_gone(self) -> bool:
        return self.gone

    def idle(self) -> bool:
        return self.is_idle

    def done(self) -> bool:
        return self.is_done

    def left(self) -> bool:
        return self.has_left

    def may_start(self, now: float) -> bool:
        return self.lease

    def may_fetch(self, host: str, now: float) -> bool:
        return self.lease and host not in self.moved


def test_max_pages_alone_bounds_the_starts_and_ends_the_crawl():
    c = core(obey_robots=False, max_pages=2, politeness={"host_concurrency": 8})
    for i in range(5):
        c.discover(f"{SITE}/p{i}", 0, 0.0, Origin.LINK)
    jobs = [start(c, 0.0), start(c, 0.0)]
    assert c.next(0.0) == Sleep(float("inf"))  # no room: two requests in flight already
    for job in jobs:
        assert isinstance(c.admit(job, 0.0), Fetch)
        result(c, job, answer(job.url, 200, html()), 0.0)
    assert c.next(0.0) == Finished(StopReason.MAX_PAGES)


def test_max_pages_across_the_ring_starts_no_more_than_the_cap_and_ends_at_the_total():
    c = core(obey_robots=False, max_pages=10, politeness={"host_concurrency": 8})
    for i in range(8):
        c.discover(f"{SITE}/p{i}", 0, 0.0, Origin.LINK)
    view = FakeRing(others=6, page_cap=2)   # 6 done elsewhere; our cap of the budget: 2
    jobs = [start(c, 0.0), start(c, 0.0)]
    assert c.next(0.0, view) == Sleep(float("inf"))  # requested + in flight = the cap
    for job in jobs:
        c.admit(job, 0.0)
        result(c, job, answer(job.url, 200, html()), 0.0)
    assert c.next(0.0, view) == Sleep(float("inf"))  # at the cap: waits for a grant
    view.page_cap = 3  # a grant came
    job = start(c, 0.0)
    c.admit(job, 0.0)
    result(c, job, answer(job.url, 200, html()), 0.0)
    view.others = 7
    assert c.next(0.0, view) == Finished(StopReason.MAX_PAGES)  # 7 + our 3


def test_max_pages_ends_a_peer_at_its_cap_whose_rest_of_the_budget_is_held_by_the_dead():
    c = core(obey_robots=False, max_pages=10, politeness={"host_concurrency": 8})
    for i in range(3):
        c.discover(f"{SITE}/p{i}", 0, 0.0, Origin.LINK)
    view = FakeRing(others=0, page_cap=0)
    assert c.next(0.0, view) == Sleep(float("inf"))
    view.gone = True  # the node found the rest held by a member dead past takeover_after
    assert c.next(0.0, view) == Finished(StopReason.MAX_PAGES)


def test_the_cluster_is_done_only_when_the_node_says_so():
    c = core(obey_robots=False)
    view = FakeRing()
    assert c.next(0.0, view) == Sleep(float("inf"))
    view.is_idle = view.is_done = True
    assert c.next(0.0, view) == Finished(StopReason.CLUSTER_DONE)


def test_the_cluster_is_not_done_while_a_member_seen_dead_may_come_back():
    # holds rule 7: beyond a partition it may be crawling, with work for us.
    c = core(obey_robots=False)
    c.alive = {"p2": False}.get
    both = HashRing({"p1": 1.0, "p2": 1.0})
    c.handoffs.set_ring(both, 0.0)
    c.handoffs.set_ring(both.without_peer("p2"), 1.0)  # p2 declared dead at 1.0
    view = FakeRing()
    view.is_idle = view.is_done = True
    assert c.next(30.9, view) == Sleep(float("inf"))
    assert c.next(31.0, view) == Finished(StopReason.CLUSTER_DONE)  # takeover_after (30 s) later


def test_a_moved_host_waits_for_its_lease_while_a_host_that_kept_its_owner_is_fetched():
    # ring.membership.hostgate: after a ring change only the hosts that moved wait.
    c = core()  # robots.txt on: it is a request to the host too, and waits as well
    view = FakeRing()
    moved, kept = "moved.web.test", "kept.web.test"
    view.moved = {moved}
    c.discover(f"http://{moved}/a", 0, 0.0, Origin.LINK)
    c.discover(f"http://{kept}/b", 0, 0.0, Origin.LINK)
    got = {}
    for _ in range(2):
        nxt = c.next(0.0, view)
        assert isinstance(nxt, Start)
        got[nxt.job.host] = (nxt.job, c.admit(nxt.job, 0.0, view))
    assert isinstance(got[kept][1], FetchRobots)
    job, adm = got[moved]
    assert adm == Requeue(job, HOLD_POLL, (Requeued(job.url, HOLD_POLL),))
    c.job_ended(job)
    assert c.limits_figures(0.0, {})["lease.moved_waiting"] == 1
    # Asked again within the grace, it waits on; counted as one wait.
    nxt = c.next(2.0, view)
    assert isinstance(nxt, Start) and isinstance(c.admit(nxt.job, 2.0, view), Requeue)
    c.job_ended(nxt.job)
    view.moved = set()  # its lease holds: a majority vouches with no ring that gave it away
    nxt = c.next(4.0, view)
    assert isinstance(nxt, Start) and isinstance(c.admit(nxt.job, 4.0, view), FetchRobots)
    figures = c.limits_figures(4.0, {})
    assert figures["lease.moved_waits"] == 1 and "lease.moved_waiting" not in figures
    assert figures["lease.moved_wait_max_ms"] == 4000


# -- results: retries, backoff, redirects ---------------------------------------------


# RFC 9110 §15: an invalid code (outside 100-599) is handled as a 5xx, and
# so is a final 1xx (a 101 to a GET that asked for no upgrade).
@pytest.mark.parametrize("status", [500, 600, 999, 101])
def test_a_5xx_is_retried_with_jittered_backoff_then_recorded(status):
    c = core(obey_robots=False, rng_seed=7)
    jitter = random.Random(7)
    job = fetch_job(c, f"{SITE}/flaky")
    now = 0.0
    for attempt in range(MAX_RETRIES):
        effects = result(c, job, answer(job.url, status), now)
        wait = RETRY_BASE * 2**attempt * jitter.uniform(0.5, 1.5)
        assert effects == [Requeued(job.url, now + wait)]
        got = c.next(now)
        assert isinstance(got, Sleep) and got.until >= now + wait
        now = got.until
        job = start(c, now)
        assert isinstance(c.admit(job, now), Fetch)
    effects = result(c, job, answer(job.url, status), now)
    assert rows(effects)[job.url].status == status
    assert c.summary.retries == MAX_RETRIES and c.summary.pages == 1
    assert c.summary.invalid_status == (0 if status == 500 else MAX_RETRIES + 1)
    assert c.limits_figures(now, {}).get("invalid_status", 0) == c.summary.invalid_status


def test_resets_are_retried_and_dns_failures_are_not():
    c = core(obey_robots=False)
    job = fetch_job(c, f"{SITE}/reset")
    assert isinstance(result(c, job, answer(job.url, None, error="reset"), 0.0)[0], Requeued)
    c2 = core(obey_robots=False)
    job = fetch_job(c2, f"{SITE}/dns")
    row = rows(result(c2, job, answer(job.url, None, error="dns"), 0.0))[job.url]
    assert row.status is None and row.error == "dns"


@pytest.mark.parametrize("status", [429, 503])
def test_a_429_or_503_backs_the_host_off_and_waits_its_retry_after(status):
    c = core(obey_robots=False, politeness={"rate": 60.0})
    job = fetch_job(c, f"{SITE}/busy")
    delay = c.frontier.host_delay(job.host)
    effects = result(c, job, answer(job.url, status, retry_after=30.0), 0.0)
    assert effects == [Requeued(job.url, 30.0)]
    assert c.frontier.host_delay(job.host) > delay
    assert c.limits.held(1.0)[Hold.RETRY_AFTER] == 1
    got = c.next(1.0)
    assert isinstance(got, Sleep) and got.until >= 30.0


def test_a_retry_after_over_the_cap_holds_the_host_for_the_cap_until_down_give_up():
    # peer/core/crawl/outages.py rules 4, 5: held for the cap each time, no retry charged, given up
    # only after [retry] down_give_up, when the queued URLs get their rows and the run can end.
    c = core(obey_robots=False, politeness={"max_retry_after": 5.0, "host_concurrency": 1},
             retry={"down_give_up": 30.0})
    for p in "abc":
        c.discover(f"{SITE}/{p}", 0, 0.0, Origin.LINK)
    now, tries = 0.0, 0
    while True:
        job = start(c, now)
        assert job.url == f"{SITE}/a"  # the held URL probes again, the others wait behind it
        assert isinstance(c.admit(job, now), Fetch)
        effects = result(c, job, answer(job.url, 429, retry_after=2.5e11), now)
        tries += 1
        if rows(effects):
            break
        assert effects == [Requeued(job.url, now + 5.0)]  # cut to the cap, not the year 9999
        got = c.next(now)
        # Held for the cap; the politeness backoff of a 429 (its delay doubled, up to max_delay) may add to it.
        assert isinstance(got, Sleep) and now + 5.0 <= got.until <= now + 60
        now = got.until
    assert now >= 30.0 and tries >= 4  # never given up before down_give_up
    warn = [e.text for e in effects if isinstance(e, Warn)]
    assert len(warn) == 1 and "giving up site.web.test" in warn[0] and "2 queued URLs" in warn[0]
    assert {u: (r.status, r.error) for u, r in rows(effects).items()} == {
        f"{SITE}/a": (429, "retry_after"), f"{SITE}/b": (None, "retry_after"),
        f"{SITE}/c": (None, "retry_after")}
    assert c.limits.given_up("site.web.test")
    assert c.discover(f"{SITE}/late", 0, now, Origin.LINK) == [Refused(f"{SITE}/late", Reason.GIVEN_UP)]
    assert c.limits.hits[Cap.GIVEN_UP] == 1 and c.limits.hits[Cap.RETRY_AFTER] == tries
    assert isinstance(c.next(now), Finished)


def test_a_redirect_is_discovered_and_a_long_chain_ends():
    c = core(obey_robots=False, max_redirects=2, politeness={"host_concurrency": 8})
    job = fetch_job(c, f"{SITE}/r0")
    now = 0.0
    for hop in range(1, 3):
        effects = result(c, job, answer(job.url, 302, location=f"/r{hop}"), now)
        assert Queued(f"{SITE}/r{hop}", 0) in effects
        assert rows(effects)[job.url].final_url == f"{SITE}/r{hop}"
        job = start(c, now)
        c.admit(job, now)
    effects = result(c, job, answer(job.url, 302, location="/r3"), now)
    assert rows(effects)[job.url].error == "too_many_redirects"
    assert not [e for e in effects if isinstance(e, Queued)]
    assert Refused(f"{SITE}/r3", Reason.REDIRECTS) in effects  # the target, and why it is not followed


def test_a_redirect_loop_ends_at_the_bloom_filter():
    c = core(obey_robots=False)
    job = fetch_job(c, f"{SITE}/loop")
    effects = result(c, job, answer(job.url, 301, location="/loop"), 0.0)
    assert [type(e) for e in effects] == [Refused, Row] and c.locally_idle()
    assert effects[0] == Refused(f"{SITE}/loop", Reason.SEEN)


# -- robots.txt ------------------------------------------------------------------------


def test_robots_txt_first_then_the_page_and_a_disallowed_url_is_a_row():
    c = core(politeness={"host_concurrency": 2})
    c.discover(f"{SITE}/ok", 0, 0.0, Origin.LINK)
    c.discover(f"{SITE}/private/x", 0, 0.0, Origin.LINK)
    first, second = start(c, 0.0), start(c, 0.0)
    adm = c.admit(first, 0.0)
    assert adm == FetchRobots(first, f"{SITE}/robots.txt")
    # The other job waits while the answer is on its way.
    assert c.admit(second, 0.0) == Requeue(second, ROBOTS_PENDING_WAIT, (Requeued(second.url, ROBOTS_PENDING_WAIT),))
    c.job_ended(second)
    rules = b"User-agent: *\nDisallow: /private/\n"
    effects = c.on_robots(first, answer(adm.url, 200, rules, ctype="text/plain"), 0.1)
    assert effects == [Requeued(first.url, 0.1)]  # back to the front of its queue
    c.job_ended(first)
    assert c.summary.robots_fetches == 1
    jobs = {j.url: j for j in (start(c, 1.0), start(c, 1.0))}
    assert isinstance(c.admit(jobs[f"{SITE}/ok"], 1.0), Fetch)
    drop = c.admit(jobs[f"{SITE}/private/x"], 1.0)
    assert isinstance(drop, Drop) and drop.effects[0].error == "robots"


def test_urls_robots_txt_disallows_do_not_use_up_the_hosts_politeness_delay():
    # 60 pages/min: a request a second. Ten disallowed URLs queued before the
    # allowed one are dropped as rows without a request each, so the allowed
    # one starts a second after robots.txt, not ten seconds later.
    c = core(politeness={"rate": 60.0, "initial_delay": 1.0})
    for i in range(10):
        c.discover(f"{SITE}/private/{i}", 0, 0.0, Origin.LINK)
    c.discover(f"{SITE}/ok", 0, 0.0, Origin.LINK)
    first = start(c, 0.0)
    adm = c.admit(first, 0.0)
    assert isinstance(adm, FetchRobots)
    rules = b"User-agent: *\nDisallow: /private/\n"
    c.on_robots(first, answer(adm.url, 200, rules, ctype="text/plain"), 0.1)
    c.job_ended(first)
    dropped = 0
    now = 1.0  # the host's delay after the robots.txt request
    while True:
        job = start(c, now)
        got = c.admit(job, now)
        if isinstance(got, Fetch):
            break
        assert isinstance(got, Drop) and got.effects[0].error == "robots"
        c.job_ended(job)
        dropped += 1
    assert dropped == 10 and job.url == f"{SITE}/ok"  # all at t = 1.0, none waited a delay
    assert c.frontier.recent_starts(first.host) == (0.0, 1.0)  # robots.txt, then /ok


@pytest.mark.parametrize("error", ["blocked", "dns", "connect"])
def test_a_robots_txt_request_that_got_no_answer_is_not_counted_as_fetched(error):
    # The summary said "robots.txt fetched: 1" when the SSRF guard had refused it.
    c = core()
    c.discover(f"{SITE}/", 0, 0.0, Origin.LINK)
    job = start(c, 0.0)
    adm = c.admit(job, 0.0)
    assert isinstance(adm, FetchRobots)
    c.on_robots(job, answer(adm.url, None, error=error), 0.1)
    c.job_ended(job)
    assert c.summary.robots_fetches == 0
    c2 = core()
    c2.discover(f"{SITE}/", 0, 0.0, Origin.LINK)
    job = start(c2, 0.0)
    adm = c2.admit(job, 0.0)
    c2.on_robots(job, answer(adm.url, 404, b"", ctype="text/plain"), 0.1)
    assert c2.summary.robots_fetches == 1  # an answer, even a 404, was fetched


def test_a_page_refused_unread_for_its_size_is_not_parsed():
    # Its extraction rules wrote an items row of NULLs from the empty body.
    c = core(obey_robots=False)
    job = fetch_job(c, f"{SITE}/big")
    refused = answer(job.url, 200, b"", error="too_large")
    assert not c.fetched(job, refused, 0.1)
    cut = answer(job.url, 200, html(f"{SITE}/next"), error="too_large", truncated=True)
    assert c.fetched(job, cut, 0.1)  # a body cut at max_body is still what there is to parse


def test_an_unreachable_robots_txt_holds_the_host_then_records_its_cause():
    c = core(robots_retry=30.0, robots_tries=3)
    c.discover(f"{SITE}/a", 0, 0.0, Origin.LINK)
    c.discover(f"{SITE}/b", 0, 0.0, Origin.LINK)
    now = 0.0
    refused = dict(error="connect", detail="connection refused")
    warns = []
    for wait in (30, 60):
        job = start(c, now)
        adm = c.admit(job, now)
        assert isinstance(adm, FetchRobots)
        effects = c.on_robots(job, answer(adm.url, None, **refused), now)
        c.job_ended(job)
        warns += [e.text for e in effects if isinstance(e, Warn)]
        assert c.limits.held(now)[Hold.ROBOTS] == 1
        job = start(c, now)
        held = c.admit(job, now)
        assert isinstance(held, Requeue) and held.at == now + wait  # RFC 9309 §2.3.1.4: held, not dropped
        c.job_ended(job)
        now = held.at
    # The first failure says it all, at once: the URL, the cause, the next
    # try, what follows and the keys; the next says only what changed.
    assert warns == [
        f"robots.txt {SITE}/robots.txt unreachable: connection refused on port 80; tried again in 30s "
        "(2 of 3), then its URLs are recorded as 'connect' (crawl.robots_retry, crawl.robots_tries); "
        "2 queued URLs wait",
        f"robots.txt of {HOST} still unreachable (connection refused on port 80), try 2 of 3; next in 1m00s",
    ]
    job = start(c, now)
    adm = c.admit(job, now)
    effects = c.on_robots(job, answer(adm.url, None, **refused), now)
    assert {u: r.error for u, r in rows(effects).items()} == {f"{SITE}/a": "connect", f"{SITE}/b": "connect"}
    assert [e.text for e in effects if isinstance(e, Warn)] == [
        f"robots.txt {SITE}/robots.txt unreachable after 3 tries (connection refused on port 80); "
        "its 2 queued URLs are recorded as 'connect'"]


def test_a_5xx_or_a_timeout_is_named_with_its_cause_and_a_retry_after_is_followed():
    c = core(robots_retry=30.0)
    c.discover(f"{SITE}/a", 0, 0.0, Origin.LINK)
    job = start(c, 0.0)
    adm = c.admit(job, 0.0)
    effects = c.on_robots(job, answer(adm.url, 503, retry_after=100.0), 0.0)
    (warn,) = [e.text for e in effects if isinstance(e, Warn)]
    assert warn.startswith(f"robots.txt {SITE}/robots.txt unreachable: HTTP 503; tried again in 1m40s "
                           "(its Retry-After) (2 of 4), then its URLs are recorded as 'robots'")
    c2 = core(robots_retry=30.0, timeout=7.0)
    c2.discover(f"{SITE}/a", 0, 0.0, Origin.LINK)
    job = start(c2, 0.0)
    effects = c2.on_robots(job, answer(c2.admit(job, 0.0).url, None, error="timeout"), 0.0)
    (warn,) = [e.text for e in effects if isinstance(e, Warn)]
    assert "unreachable: no answer within crawl.timeout (7s); tried again in 30s (2 of 4)" in warn
    assert "recorded as 'timeout'" in warn


def test_a_host_held_on_robots_txt_is_counted_held_not_also_waiting_on_politeness():
    c = core(robots_retry=30.0)
    c.discover(f"{SITE}/a", 0, 0.0, Origin.LINK)
    c.discover("http://other.web.test/x", 0, 0.0, Origin.LINK)
    job = start(c, 0.0)
    if job.host != HOST:  # the other host first: let it through
        assert isinstance(c.admit(job, 0.0), FetchRobots)
        c.on_robots(job, answer("http://other.web.test/robots.txt", 404), 0.0)
        c.job_ended(job)
        job = start(c, 0.0)
    assert job.host == HOST
    adm = c.admit(job, 0.0)
    c.on_robots(job, answer(adm.url, None, error="connect", detail="connection refused"), 0.0)
    c.job_ended(job)
    snap = c.progress_snapshot(5.0, 5.0, 0.0, 0)
    assert snap.held_robots == 1
    # Two hosts with work: other.web.test may start, site.web.test is held.
    assert (snap.hosts_ready, snap.hosts_waiting, snap.held_robots) == (1, 0, 1)
    assert snap.held_next == (f"robots.txt of {HOST} unreachable (connection refused on port 80), "
                              "try 2 of 4 (crawl.robots_tries)")
    assert snap.held_next_in == 25.0
    # Its URL, started again, goes back until the retry: the frontier now
    # counts the host among those waiting, and the line still says held.
    for _ in range(3):
        got = c.next(5.0)
        assert isinstance(got, Start)
        adm = c.admit(got.job, 5.0)
        c.job_ended(got.job)
        if got.job.host == HOST:
            assert isinstance(adm, Requeue) and adm.at == 30.0
            break
    snap = c.progress_snapshot(6.0, 6.0, 0.0, 0)
    assert (snap.hosts_waiting, snap.held_robots) == (0, 1)


def test_a_host_held_for_a_hand_off_is_counted_held_not_waiting_on_politeness():
    class Before:  # the ring before a change: p2 owned every host
        def owner(self, host: str) -> str:
            return "p2"

    c = core(obey_robots=False)
    c.holds.add(Before(), ["p2"], "p1", 0.0, lambda p: True, hold_timeout=60.0, takeover_after=0.0)
    c.discover(f"{SITE}/a", 0, 0.0, Origin.LINK)
    job = start(c, 0.0)
    assert isinstance(c.admit(job, 0.0), Requeue)  # held until p2's hand-off
    c.job_ended(job)
    for now in (0.05, 0.5):  # before its next look (HOLD_POLL) and after
        snap = c.progress_snapshot(now, now, 0.0, 0)
        assert (snap.hosts_ready, snap.hosts_waiting, snap.held_handoff) == (0, 0, 1), now
    c.holds.release("p2")
    snap = c.progress_snapshot(0.5, 0.5, 0.0, 0)
    assert (snap.hosts_ready + snap.hosts_waiting, snap.held_handoff) == (1, 0)


@pytest.mark.parametrize("cause", ["dns", "blocked"])
def test_a_robots_txt_no_retry_can_mend_records_the_hosts_urls_at_once(cause):
    c = core()
    for p in "abc":
        c.discover(f"{SITE}/{p}", 0, 0.0, Origin.LINK)
    job = start(c, 0.0)
    adm = c.admit(job, 0.0)
    effects = c.on_robots(job, answer(adm.url, None, error=cause), 0.0)
    assert {r.error for r in rows(effects).values()} == {cause} and len(rows(effects)) == 3
    assert c.summary.errors[cause] == 3 and len(c.frontier) == 0
    # Asked once: the warning said "after 4 tries" of the SSRF guard's refusal.
    (warn,) = [e.text for e in effects if isinstance(e, Warn)]
    assert "tries" not in warn and f"recorded as '{cause}'" in warn


def test_a_robots_txt_429_is_asked_again_after_its_retry_after():
    c = core(politeness={"max_retry_after": 100.0})
    c.discover(f"{SITE}/a", 0, 0.0, Origin.LINK)
    job = start(c, 0.0)
    adm = c.admit(job, 0.0)
    c.on_robots(job, answer(adm.url, 429, retry_after=40.0), 0.0)
    c.job_ended(job)
    job = start(c, 0.0)
    held = c.admit(job, 0.0)
    assert isinstance(held, Requeue) and 40.0 <= held.at < 600.0


def test_crawl_delay_from_robots_txt_floors_the_hosts_delay():
    c = core(politeness={"rate": 6000.0})
    c.discover(f"{SITE}/a", 0, 0.0, Origin.LINK)
    job = start(c, 0.0)
    adm = c.admit(job, 0.0)
    c.on_robots(job, answer(adm.url, 200, b"User-agent: *\nCrawl-delay: 3\n", ctype="text/plain"), 0.0)
    assert c.frontier.host_delay(job.host) >= 3.0


# -- the ring: ownership re-checks and hand-off holds --------------------------------


def test_a_ring_change_passes_queued_urls_on_and_a_returning_job_too():
    c = core(obey_robots=False, politeness={"host_concurrency": 2})
    ring = HashRing({"p1": 1.0})
    c.handoffs.set_ring(ring, 0.0)
    both = HashRing({"p1": 1.0, "p2": 1.0})
    host = owned_by(both, "p2")[0]
    c.discover(f"http://{host}/a", 0, 0.0, Origin.LINK)
    c.discover(f"http://{host}/b", 0, 0.0, Origin.LINK)
    job = start(c, 0.0)  # /a is in flight when the ring changes
    effects = c.handoffs.set_ring(both, 0.0)
    assert effects == [Forward(f"http://{host}/b", 0, "p2", True), Done(f"http://{host}/b")]
    # /a comes back (a retry): it is p2's now.
    got = c.admit(job, 0.0)
    assert got == PassOn(job, "p2", (Forward(job.url, 0, "p2", True), Done(job.url)))


def test_a_ring_change_passes_a_spilled_queue_on_a_chunk_at_a_time():
    from peer.core.frontier.frontier import MemorySpill

    c = core(obey_robots=False, politeness={"host_concurrency": 2})
    c.frontier.set_spill(MemorySpill(), 4)
    c.handoffs.set_ring(HashRing({"p1": 1.0}), 0.0)
    both = HashRing({"p1": 1.0, "p2": 1.0})
    host = owned_by(both, "p2")[0]
    urls = [f"http://{host}/{i}" for i in range(300)]
    for u in urls:
        c.discover(u, 0, 0.0, Origin.LINK)
    now = [e.url for e in c.handoffs.set_ring(both, 0.0) if isinstance(e, Forward)]
    assert len(now) <= 8 and c.frontier.moving == 300 - len(now)  # the heads, not the queue
    assert not c.locally_idle()  # the rest still to pass on
    later: list[str] = []
    while c.frontier.moving:
        effects = c.handoffs.pass_on_moving(0.0, 50)
        assert len(effects) <= 2 * (50 + 4)
        later += [e.url for e in effects if isinstance(e, Forward) and e.owner == "p2"]
        assert {e.url for e in effects if isinstance(e, Done)} == {e.url for e in effects if isinstance(e, Forward)}
    assert sorted(now + later) == sorted(urls) and c.locally_idle()


def test_hosts_gained_wait_for_the_previous_owners_handoff():
    c = core(obey_robots=False)
    alive = {"p2": True}
    c.alive = alive.get
    c.hold_timeout = 10.0
    both = HashRing({"p1": 1.0, "p2": 1.0})
    c.handoffs.set_ring(both, 0.0)
    host = owned_by(both, "p2")[0]
    c.handoffs.set_ring(both.without_peer("p2"), 0.0)  # p2 leaves: its hosts are ours
    c.discover(f"http://{host}/x", 0, 0.0, Origin.RELAY)
    job = start(c, 0.0)
    assert c.admit(job, 0.0) == Requeue(job, HOLD_POLL, (Requeued(job.url, HOLD_POLL),))
    c.job_ended(job)
    c.handoffs.handoff_done("p2")
    job = start(c, HOLD_POLL)
    assert isinstance(c.admit(job, HOLD_POLL), Fetch)


def test_a_hold_ends_at_its_timeout_with_a_warning_not_when_the_owner_dies():
    # holds rule 3: a previous owner seen dead is waited for takeover_after
    # from then (it may be alive beyond a partition), not released at once.
    for dies, now, fetched in ((False, 10.0, True), (True, 10.0, False), (True, 31.0, True)):
        c = core(obey_robots=False)
        alive = {"p2": True, "p3": True}
        c.alive = alive.get
        c.hold_timeout = 10.0
        everyone = HashRing({"p1": 1.0, "p2": 1.0, "p3": 1.0})
        before = everyone.without_peer("p1")
        c.handoffs.set_ring(before, 0.0)
        c.handoffs.set_ring(everyone, 0.0)  # we joined: p2 is to hand over the hosts we gained of it
        host = next(h for h in owned_by(everyone, "p1", 50) if before.owner(h) == "p2")
        if dies:
            alive["p2"] = False  # ... and it dies before it did, at 1.0
            c.handoffs.set_ring(everyone.without_peer("p2"), 1.0)
        c.discover(f"http://{host}/x", 0, 0.0, Origin.RELAY)
        job = start(c, now)
        got = c.admit(job, now)
        assert isinstance(got, Fetch) is fetched, (dies, now)
        warned = [e.text for e in got.effects if isinstance(e, Warn)]
        assert len(warned) == fetched, warned
        assert c.holds.counts == ({"takeovers": 1} if dies and fetched else
                                  {"handoffs_late": 1} if fetched else {})


def test_a_dead_previous_owners_hosts_wait_takeover_after_and_go_back_if_it_returns():
    c = core(obey_robots=False)
    alive = {"p2": False}
    c.alive = alive.get
    c.hold_timeout = 10.0
    both = HashRing({"p1": 1.0, "p2": 1.0})
    c.handoffs.set_ring(both, 0.0)
    host = owned_by(both, "p2")[0]
    c.handoffs.set_ring(both.without_peer("p2"), 0.0)  # p2 declared dead: its hosts are ours, held
    c.discover(f"http://{host}/x", 0, 0.0, Origin.RELAY)
    job = start(c, 29.0)
    assert isinstance(c.admit(job, 29.0), Requeue)  # not fetched: p2 has its seen set
    c.job_ended(job)
    alive["p2"] = True
    out = c.handoffs.set_ring(both, 29.5)  # p2 refuted in time: its host and queued URL go back
    assert [(e.url, e.owner) for e in out if isinstance(e, Forward)] == [(f"http://{host}/x", "p2")]
    assert not c.holds.counts
    # With takeover_after = 0, a dead owner's hosts are fetched at once (no hold).
    cfg = config(obey_robots=False)
    c = CrawlCore(replace(cfg, ring=replace(cfg.ring, takeover_after=0.0)), "p1", rng=random.Random(1))
    c.alive = {"p2": False}.get
    c.hold_timeout = 10.0
    c.handoffs.set_ring(both, 0.0)
    c.handoffs.set_ring(both.without_peer("p2"), 0.0)
    assert not c.holds


def test_a_member_back_from_dead_holds_our_own_hosts_until_its_handoff():
    # holds rule 5: beyond a split it may have taken our hosts over and
    # fetched them; its hand-off brings those pages before we go on.
    c = core(obey_robots=False)
    alive = {"p2": False}
    c.alive = alive.get
    c.hold_timeout = 10.0
    both = HashRing({"p1": 1.0, "p2": 1.0})
    c.handoffs.set_ring(both, 0.0)
    c.handoffs.set_ring(both.without_peer("p2"), 1.0)  # declared dead
    alive["p2"] = True
    c.handoffs.set_ring(both, 40.0)  # back, after its takeover_after: it may have fetched ours
    mine = owned_by(both, "p1")[0]
    c.discover(f"http://{mine}/x", 0, 40.0, Origin.LINK)
    job = start(c, 40.0)
    assert isinstance(c.admit(job, 40.0), Requeue)
    c.job_ended(job)
    assert c.holds.waiting_for() == {"p2"}
    c.handoffs.handoff_done("p2")
    job = start(c, 40.0 + HOLD_POLL)
    assert isinstance(c.admit(job, 40.0 + HOLD_POLL), Fetch)
    assert not c.holds


def test_handoff_seen_lists_the_moved_hosts_urls_for_their_new_owners():
    c = core(obey_robots=False)
    one = HashRing({"p1": 1.0})
    both = HashRing({"p1": 1.0, "p2": 1.0})
    mine, theirs = owned_by(both, "p1")[0], owned_by(both, "p2")[0]
    c.discover(f"http://{theirs}/seen", 0, 0.0, Origin.HANDED_SEEN)
    moved = c.handoffs.handoff_seen([(f"http://{mine}/a", mine), (f"http://{theirs}/b", theirs)], one, both)
    assert sorted(moved) == [(f"http://{theirs}/b", "p2"), (f"http://{theirs}/seen", "p2")]


def test_handoff_starts_carry_the_moved_hosts_request_starts():
    c = core(obey_robots=False, politeness={"rate": 600.0})
    both = HashRing({"p1": 1.0, "p2": 1.0})
    theirs = owned_by(both, "p2")[0]
    c.discover(f"http://{theirs}/a", 0, 0.0, Origin.LINK)
    job = start(c, 1.0)
    c.admit(job, 1.0)
    result(c, job, answer(job.url, 200, html()), 1.5)
    starts = c.handoffs.handoff_starts(HashRing({"p1": 1.0}), both, offset=1000.0)
    assert starts == {"p2": [(theirs, 1001.0)]}


# -- rule 8: an exception is one URL's row ----------------------------------------------


def test_an_exception_in_a_job_is_an_internal_row_once_and_the_job_is_done():
    c = core(obey_robots=False)
    job = fetch_job(c, f"{SITE}/bug")
    effects, first = c.internal(job, "ValueError", 0.0)
    assert first and rows(effects)[job.url].error == "internal"
    c.job_ended(job)
    assert c.frontier.in_flight == 0 and c.in_flight == 0
    job = fetch_job(c, f"{SITE}/bug2")
    assert c.internal(job, "ValueError", 0.0)[1] is False
    assert c.summary.internal == {"ValueError": 2}


def test_an_exception_after_the_row_adds_no_second_row():
    c = core(obey_robots=False)
    job = fetch_job(c, f"{SITE}/x")
    c.on_result(job, answer(job.url, 200, html()), None, 0.0)  # row and done() taken
    effects, _ = c.internal(job, "KeyError", 0.0)
    assert effects == [] and c.summary.pages == 1


# -- the hand-off of a leaver's or a shrinking owner's jobs in flight -------------------


def new_owner_takes(moved: list[tuple[str, str]], forwards: list[Forward], now: float) -> set[str]:
    """What p2 fetches of a hand-off: the seen URLs (``moved``), then the URLs passed on to it."""
    p2 = CrawlCore(config(obey_robots=False), "p2", rng=random.Random(1))
    p2.handoffs.set_ring(HashRing({"p2": 1.0}), now)
    for url, owner in moved:
        assert owner == "p2"
        p2.discover(url, 0, now, Origin.HANDED_SEEN)
    for f in forwards:
        assert f.owner == "p2" and f.relay
        p2.discover(f.url, f.depth, now, Origin.RELAY)
    got = set()
    while isinstance(d := p2.next(now), Start):
        if isinstance(p2.admit(d.job, now), Fetch):
            got.add(d.job.url)
        p2.job_ended(d.job)
    return got


def test_a_job_started_but_not_admitted_when_its_owner_leaves_is_passed_on_not_handed_as_seen():
    # The scheduler started a job (it is in flight for the core) and its task
    # had not run admit yet when `ring leave` came: the hand-off must not call
    # it fetched, since admit then passes it on to its new owner.
    c = core(obey_robots=False)
    both = HashRing({"p1": 1.0, "p2": 1.0})
    c.handoffs.set_ring(both, 0.0)
    fetching_host, waiting_host = owned_by(both, "p1", 2)
    fetching = fetch_job(c, f"http://{fetching_host}/a")  # its request is on the wire
    c.discover(f"http://{waiting_host}/b", 0, 0.0, Origin.LINK)
    waiting = start(c, 0.0)
    c.leaving = True
    alone = both.without_peer("p1")
    assert c.handoffs.set_ring(alone, 0.0) == []  # nothing queued: both jobs are in flight
    moved = c.handoffs.handoff_seen(c.inflight_urls(), both, alone)
    got = c.admit(waiting, 0.0)
    assert got == PassOn(waiting, "p2", (Forward(waiting.url, 0, "p2", True), Done(waiting.url)))
    c.job_ended(waiting)
    # The fetch on the wire is p1's to finish and is handed over as fetched;
    # the job passed on is p2's to fetch.
    assert moved == [(fetching.url, "p2")]
    assert new_owner_takes(moved, [got.effects[0]], 0.0) == {waiting.url}
    assert rows(result(c, fetching, answer(fetching.url, 200, html()), 0.5))


def test_a_job_whose_robots_txt_is_in_flight_at_the_hand_off_is_passed_on_not_handed_as_seen():
    c = core()
    both = HashRing({"p1": 1.0, "p2": 1.0})
    c.handoffs.set_ring(both, 0.0)
    host = owned_by(both, "p1")[0]
    c.discover(f"http://{host}/", 0, 0.0, Origin.LINK)
    job = start(c, 0.0)
    adm = c.admit(job, 0.0)
    assert isinstance(adm, FetchRobots)  # the request on the wire is robots.txt, not the page
    c.leaving = True
    alone = both.without_peer("p1")
    c.handoffs.set_ring(alone, 0.0)
    moved = c.handoffs.handoff_seen(c.inflight_urls(), both, alone)
    assert moved == []
    c.on_robots(job, answer(adm.url, 404, ctype="text/plain"), 0.5)
    c.job_ended(job)
    # Back in the frontier: the leaver's next turn passes it on (a Start whose
    # admit says PassOn, or a Sleep's effects, as the frontier's timing has it).
    got = c.next(0.5, FakeRing())
    if isinstance(got, Start):
        adm = c.admit(got.job, 0.5)
        assert isinstance(adm, PassOn)
        c.job_ended(got.job)
        effects = adm.effects
    else:
        effects = got.effects
    forwards = [e for e in effects if isinstance(e, Forward)]
    assert forwards == [Forward(job.url, 0, "p2", True)]
    assert new_owner_takes(moved, forwards, 0.5) == {job.url}


def test_a_fetch_in_flight_when_its_host_moves_is_not_retried_here_but_recorded():
    # A join moves the host while its request is on the wire: the hand-off
    # lists the URL as fetched, so a retry here would be passed on and dropped
    # by the new owner as seen. The failure is this peer's row instead.
    c = core(obey_robots=False)
    one = HashRing({"p1": 1.0})
    c.handoffs.set_ring(one, 0.0)
    both = HashRing({"p1": 1.0, "p2": 1.0})
    host = owned_by(both, "p2")[0]
    job = fetch_job(c, f"http://{host}/a")
    c.handoffs.set_ring(both, 0.0)
    moved = c.handoffs.handoff_seen(c.inflight_urls(), one, both)
    assert moved == [(job.url, "p2")]
    effects = result(c, job, answer(job.url, 503), 0.5)
    assert not [e for e in effects if isinstance(e, Requeued)]
    assert rows(effects)[job.url].status == 503
    assert len(c.frontier) == 0


# -- what a page says of itself: canonical, robots directives, link sources -------------

PRODUCT_RULE = {"match": "*/product/*", "fields": {"name": "h1::text"}}


def page_core(**crawl) -> CrawlCore:
    cfg = config(obey_robots=False, **crawl)
    from peer.core.page.items import parse_extract

    cfg = replace(cfg, extract=parse_extract({"product": PRODUCT_RULE}, "test"))
    return CrawlCore(cfg, "p1", rng=random.Random(1))


def page(head: str = "", body: str = "") -> bytes:
    return f"<html><head>{head}</head><body>{body}</body></html>".encode()


def crawled(c: CrawlCore, url: str, res: FetchResult):
    job = fetch_job(c, url)
    effects = result(c, job, res, 0.1)
    return rows(effects)[url], [e.url for e in effects if isinstance(e, Queued)], effects


def test_a_noindex_page_keeps_its_row_flagged_and_writes_no_items():
    c = page_core()
    url = f"{SITE}/product/1"
    row, queued, effects = crawled(c, url, answer(url, body=page(
        '<meta name="robots" content="noindex">', '<h1>Hidden</h1><a href="/next">n</a>')))
    assert (row.status, row.noindex, row.nofollow, row.title) == (200, True, False, None)
    assert not [e for e in effects if isinstance(e, Items)]
    assert queued == [f"{SITE}/next"]  # noindex alone still follows
    assert c.summary.items == 0
    assert (c.summary.directives["noindex"], c.summary.directives["items_withheld"]) == (1, 1)
    figures = c.limits_figures(0.2, {})  # ring status's counters
    assert (figures["directives.noindex"], figures["directives.items_withheld"]) == (1, 1)
    # The same page without the tag writes its item.
    c2 = page_core()
    row, _, effects = crawled(c2, url, answer(url, body=page("", "<h1>Shown</h1>")))
    assert (row.noindex, row.nofollow) == (False, False)
    assert [e.items for e in effects if isinstance(e, Items)] == [(("items_product", {"name": "Shown"}),)]


def test_x_robots_tag_noindex_withholds_items_like_the_meta_tag():
    c = page_core()
    url = f"{SITE}/product/2"
    res = replace(answer(url, body=page("", "<h1>Hidden</h1>")), x_robots=("ringcrawl: noindex",))
    row, _, effects = crawled(c, url, res)
    assert row.noindex is True and not [e for e in effects if isinstance(e, Items)]
    assert c.summary.directives["x_robots_tag"] == 1


@pytest.mark.parametrize(("x_robots", "followed"), [
    (("ringcrawl: nofollow",), False),
    (("nofollow",), False),
    (("otherbot: noindex", "ringcrawl: nofollow"), False),
    (("otherbot: nofollow",), True),
    (("otherbot: nofollow, noindex",), True),
    (("unavailable_after: 25 Jun 2010 15:00:00 PST",), True),
])
def test_x_robots_tag_nofollow_for_us_follows_no_link(x_robots, followed):
    c = page_core()
    url = f"{SITE}/list"
    res = replace(answer(url, body=html(f"{SITE}/a", f"{SITE}/b")), x_robots=x_robots)
    row, queued, _ = crawled(c, url, res)
    assert queued == ([f"{SITE}/a", f"{SITE}/b"] if followed else [])
    assert row.nofollow is (not followed)
    assert (row.n_links, len(row.links)) == ((2, 0) if followed else (0, 0))  # store_links is off
    assert c.summary.directives["nofollow"] == (0 if followed else 1)


def test_a_page_answer_without_html_still_records_its_header_directives():
    c = page_core()
    url = f"{SITE}/doc"  # a PDF (no .pdf: crawl.skip_extensions would leave it out)
    res = replace(answer(url, body=b"%PDF-1.4", ctype="application/pdf"),
                  x_robots=("noindex, nofollow",), canonical="/doc.html")
    row, _, _ = crawled(c, url, res)
    assert (row.noindex, row.nofollow, row.canonical) == (True, True, f"{SITE}/doc.html")
    failed = fetch_job(c, f"{SITE}/gone")
    row = rows(result(c, failed, answer(failed.url, None, error="dns"), 0.2))[failed.url]
    assert (row.noindex, row.nofollow, row.canonical) == (None, None, None)  # no answer: unknown


@pytest.mark.parametrize("follow", [True, False])
def test_canonical_is_recorded_and_follow_noncanonical_decides_the_links(follow):
    c = page_core(follow_noncanonical=follow)
    url = f"{SITE}/p?session=1"
    body = page('<link rel="canonical" href="/p">', '<a href="/a">a</a>')
    row, queued, _ = crawled(c, url, answer(url, body=body))
    assert row.canonical == f"{SITE}/p"
    assert queued == ([f"{SITE}/a"] if follow else [])
    assert row.n_links == 1  # the page's links, parsed, whether followed or not
    d = c.summary.directives
    assert (d["canonical"], d["noncanonical"], d["noncanonical_unfollowed"]) == (1, 1, 0 if follow else 1)
    # A page that is its own canonical is followed either way.
    me = f"{SITE}/self"
    row, queued, _ = crawled(page_core(follow_noncanonical=follow), me, answer(me, body=page('<link rel="canonical" href="/self">',
                                                          '<a href="/b">b</a>')))
    assert (row.canonical, queued) == (me, [f"{SITE}/b"])


def test_the_link_header_canonical_wins_over_the_html_one():
    c = page_core()
    url = f"{SITE}/both"
    res = replace(answer(url, body=page('<link rel="canonical" href="/html">')), canonical="header")
    row, _, _ = crawled(c, url, res)
    assert row.canonical == f"{SITE}/header"  # resolved against the request URL


def test_links_from_frames_refresh_and_link_rel_are_followed_and_counted():
    c = page_core(follow_link_rel=True)
    url = f"{SITE}/sources"
    body = page('<link rel="next" href="/n"><meta http-equiv="refresh" content="0; url=/r">',
                '<a href="/a">a</a><iframe src="/f"></iframe>')
    _, queued, _ = crawled(c, url, answer(url, body=body))
    assert queued == [f"{SITE}/n", f"{SITE}/r", f"{SITE}/a", f"{SITE}/f"]
    d = c.summary.directives
    assert (d["links_link"], d["links_refresh"], d["links_frame"]) == (1, 1, 1)
    off = page_core(follow_frames=False, follow_meta_refresh=False)
    _, queued, _ = crawled(off, url, answer(url, body=body))
    assert queued == [f"{SITE}/a"]


def test_an_ip_seen_before_the_ring_formed_is_paced_at_the_ring_share_once_it_does():
    # A peer pushed its seeds alone (share 1 of every IP) and kept pacing
    # their IP at the whole ip_rate after the ring of 5 formed.
    c = CrawlCore(config(obey_robots=False, politeness={"ip_rate": 60.0}), "p1",
                  rng=random.Random(1), peek_ip=lambda host: "10.0.0.1")
    ring = HashRing({"p1": 1.0, "p2": 1.0})
    mine = owned_by(ring, "p1")[0]
    c.discover(f"http://{mine}/", 0, 0.0, Origin.LINK)
    assert c.frontier.ip_delay("10.0.0.1") == 1.0  # alone: the whole 60/min
    c.handoffs.set_ring(ring, 1.0)
    share = ring.shares()["p1"]
    assert c.frontier.ip_delay("10.0.0.1") == pytest.approx(1.0 / share)


def test_the_summary_counts_bodies_decoded_and_as_they_came():
    c = core(obey_robots=False)
    job = fetch_job(c, f"{SITE}/coded")
    page = html("/x")
    coded = dataclasses.replace(answer(job.url, body=page), raw_bytes=40)  # gzip on the wire
    result(c, job, coded, 0.1)
    assert (c.summary.bytes, c.summary.wire_bytes) == (len(page), 40)
