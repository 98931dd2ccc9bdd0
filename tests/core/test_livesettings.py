"""Live settings in a running crawl: ``PeerCore.adopt_settings`` (peer.core.door.peer rule 7), driven synchronously.

A small scheduler loop stands in for the engine: it asks the core for its
next step, answers every request at once, and sleeps (on simulated time) when
told to, recording when each request started. What an operator would check
is read from those starts: none while paused, the spacing of a host before
and after a rate change, the URLs a rule change keeps from being fetched.
"""

from __future__ import annotations

import math
import random

from peer.core.config.livekeys import assign, set_paused
from peer.core.crawl.core import REPACE_CHUNK, CrawlCore
from peer.core.crawl.decisions import Fetch, Finished, Origin, Requeue, Sleep, Start, StopReason
from peer.core.door.peer import PeerCore
from peer.core.frontier.frontier import Frontier, Outcome, Politeness
from peer.core.run.probes import readiness
from peer.core.urls.normalize import host_key
from ring.actions import Log
from ring.node import RingNode
from tests.core.test_crawl import answer, config

A = "http://a.web.test"
B = "http://b.web.test"


def peer(**kw) -> PeerCore:
    kw.setdefault("seeds", [f"{A}/"])
    kw.setdefault("obey_robots", False)
    return PeerCore(CrawlCore(config(**kw), "p1", rng=random.Random(1)))


def queue(core: PeerCore, *urls: str, now: float = 0.0) -> None:
    for url in urls:
        core.discover(url, 1, now, Origin.LINK)


def run(core: PeerCore, now: float, until: float, starts: list[tuple[float, str]], *,
        hold: list | None = None) -> float:
    """Step the core from ``now`` to ``until`` (simulated seconds); each request answered at once
    and recorded in ``starts`` as (time, url). ``hold``: keep started jobs open (in flight) there."""
    for _ in range(100_000):
        step, _effects = core.next(now)
        if isinstance(step, Finished):
            return now
        if isinstance(step, Sleep):
            if step.until > until:
                return until
            now = max(now, step.until)
            continue
        assert isinstance(step, Start)
        job = step.job
        adm, _ = core.admit(job, now)
        if isinstance(adm, Fetch):
            starts.append((now, job.url))
            if hold is not None:
                hold.append(job)
                continue
            core.on_result(job, answer(job.url, 200), None, now)
        core.job_ended(job)
    raise AssertionError("the loop did not settle")


def adopt(core: PeerCore, *assignments: str, now: float) -> list:
    return core.adopt_settings(assign(core.settings, list(assignments)), now)


def gaps(starts: list[tuple[float, str]], prefix: str) -> list[float]:
    ts = [t for t, u in starts if u.startswith(prefix)]
    return [round(b - a, 3) for a, b in zip(ts, ts[1:])]


def test_no_request_starts_while_paused_and_those_in_flight_end():
    core = peer(politeness={"rate": 0.0}, concurrency=2)
    queue(core, *(f"{A}/{i}" for i in range(5)), *(f"{B}/{i}" for i in range(5)))
    starts: list[tuple[float, str]] = []
    inflight: list = []
    run(core, 0.0, 0.0, starts, hold=inflight)
    assert len(inflight) == 2  # one a host, concurrency 2

    effects = core.adopt_settings(set_paused(core.settings, True), 1.0)
    assert [e.text for e in effects if isinstance(e, Log)] == [
        "paused by ring pause: no request starts until ring resume"]
    assert core.paused and core.settings["paused"] is True
    # The requests in flight end, and count.
    for job in inflight:
        core.on_result(job, answer(job.url, 200), None, 2.0)
        core.job_ended(job)
    assert core.crawl.requested == 2
    # Ten minutes of simulated time: nothing starts, the crawl does not end either.
    before = len(starts)
    assert run(core, 2.0, 600.0, starts) == 600.0
    assert len(starts) == before
    # It says so where an operator looks.
    assert core.figures.progress(600.0, 600.0, 0.0).paused.startswith("paused: by ring pause")
    assert core.figures.status(600.0, elapsed=600.0, dns_hit_rate=0.0, limits={}).paused is True
    assert core.figures.scrape(600.0, core.figures.status(600.0, elapsed=1.0, dns_hit_rate=0.0, limits={}), peer="p1",
                               ring="test", uptime=1.0, dns={}, dns_hit_ratio=0.0, warc={}).paused is True
    ready = readiness(running=True, in_ring=False, cluster=False, lease=None, stopping=False, leaving=False,
                      paused=core.paused)
    assert not ready.ready and ready.reason == "not ready: paused (ring pause; ring resume starts it again)"

    core.adopt_settings(set_paused(core.settings, False), 600.0)
    assert core.figures.progress(600.0, 600.0, 0.0).paused == ""
    run(core, 600.0, 1200.0, starts)
    assert sorted(u for _, u in starts) == sorted({*(f"{A}/{i}" for i in range(5)), *(f"{B}/{i}" for i in range(5))})
    assert all(t >= 600.0 for t, _ in starts[before:])


def test_a_rate_change_changes_a_hosts_spacing_from_its_next_request():
    core = peer(politeness={"rate": 60.0})
    queue(core, *(f"{A}/{i}" for i in range(40)))
    starts: list[tuple[float, str]] = []
    now = run(core, 0.0, 10.0, starts)
    assert set(gaps(starts, A)) == {1.0}  # 60 a minute
    n = len(starts)
    effects = adopt(core, "politeness.rate=6", now=now)
    assert "politeness.rate" in effects[0].text and "1 known hosts paced anew" in effects[0].text
    run(core, now, now + 100.0, starts)
    after = gaps(starts[n - 1:], A)
    # 6 a minute from the request after the change: 10 s, and the controller keeps it
    # between its floor (nominal/1.1) and the nominal delay.
    assert len(after) >= 9 and after[0] == 10.0
    assert all(60 / 6 / 1.1 - 1e-3 <= g <= 10.0 for g in after), after
    assert core.crawl.cfg.politeness.rate == 6.0


def test_a_site_block_added_live_paces_its_hosts_alone():
    core = peer(politeness={"rate": 60.0})
    queue(core, *(f"{A}/{i}" for i in range(30)), *(f"{B}/{i}" for i in range(30)))
    starts: list[tuple[float, str]] = []
    now = run(core, 0.0, 5.0, starts)
    effects = adopt(core, 'site[0]={hosts=["b.web.test"], rate=12}', now=now)
    assert "site[0]" in effects[0].text
    n = len(starts)
    run(core, now, now + 20.0, starts)
    assert set(gaps(starts[n:], B)) == {5.0}  # the block's 12 a minute
    assert set(gaps(starts[n:], A)) == {1.0}  # the global 60 a minute
    assert core.sites.label("b.web.test") == "site[0]: b.web.test"


def test_a_rule_change_refuses_queued_urls_at_their_turn():
    core = peer(politeness={"rate": 0.0})
    urls = [f"{A}/pub/1", f"{A}/private/1", f"{A}/pub/2", f"{A}/private/2"]
    queue(core, *urls)
    adopt(core, 'crawl.rules=["exclude:*/private/*"]', now=0.0)
    # Queued before the change: refused now, at their turn, never fetched.
    queue(core, f"{A}/private/3")  # and a new link is refused as it comes
    starts: list[tuple[float, str]] = []
    run(core, 0.0, 100.0, starts)
    assert [u for _, u in starts] == [f"{A}/pub/1", f"{A}/pub/2"]
    assert core.crawl.refused_queued == {"rules": 2}
    assert core.crawl.summary.excluded["rules"] == 3
    assert core.crawl.limits_figures(100.0, {})["frontier.refused.rules"] == 2
    assert core.figures.status(100.0, elapsed=1.0, dns_hit_rate=0.0, limits={}).not_requested["rules"] == 3


def test_max_pages_lowered_below_the_pages_fetched_starts_nothing_more():
    core = peer(politeness={"rate": 0.0}, max_pages=100)
    queue(core, *(f"{A}/{i}" for i in range(20)))
    starts: list[tuple[float, str]] = []
    core.adopt_settings(set_paused(core.settings, True), 0.0)
    run(core, 0.0, 1.0, starts)
    core.adopt_settings(set_paused(core.settings, False), 1.0)
    # Five pages, then the cap lowered to three: the crawl is at its limit.
    for _ in range(5):
        step, _ = core.next(1.0)
        assert isinstance(step, Start)
        core.admit(step.job, 1.0)
        core.on_result(step.job, answer(step.job.url, 200), None, 1.0)
        core.job_ended(step.job)
    adopt(core, "crawl.max_pages=3", now=1.0)
    step, _ = core.next(2.0)
    assert isinstance(step, Finished) and step.reason is StopReason.MAX_PAGES


def test_max_pages_changes_the_rings_budget():
    seeds = [("p1", "tcp://127.0.0.1:5799", 1.0), ("p2", "tcp://127.0.0.1:5798", 1.0)]
    node = RingNode("p1", "tcp://127.0.0.1:5799", 1.0, "test", seeds=seeds, gossip_interval=0.1,
                    suspect_after=0.5, dead_after=1.5, now=0.0, incarnation=5000, owner_key=host_key)
    core = PeerCore(CrawlCore(config(), "p1", rng=random.Random(1)), node, now=0.0)
    core.tick(0.0)
    assert node.budget is None
    adopt(core, "crawl.max_pages=11", now=0.0)
    assert node.max_pages == 11 and node.page_cap == 6  # p1's base of two voters: 6 + 5
    adopt(core, "crawl.max_pages=4", now=0.0)
    assert node.page_cap == 2
    adopt(core, "crawl.max_pages=0", now=0.0)
    assert node.budget is None and node.page_cap == 0


def test_a_document_that_fails_the_checks_changes_nothing():
    core = peer(politeness={"rate": 60.0})
    before = core.settings
    bad = {**before, "politeness.rate": -1.0}
    [log] = core.adopt_settings(bad, 0.0)
    assert isinstance(log, Log) and log.text.startswith("live settings refused, nothing changed: ring set: politeness.rate")
    assert core.settings == before
    assert core.adopt_settings(before, 0.0) == []  # the same document: nothing to do, nothing said


def test_settings_are_the_configs_live_part():
    core = peer(politeness={"rate": 30.0}, max_pages=7)
    s = core.settings
    assert s["politeness.rate"] == 30.0 and s["crawl.max_pages"] == 7 and s["paused"] is False
    assert math.isclose(core.crawl.frontier.host_delay("new.web.test"), 2.0)


# -- the frontier's side (peer/core/frontier/scheduler.py rule 11) ---------------------------


def started(f, now: float) -> list[str]:
    """Every host that starts at ``now`` (each request ends at once)."""
    out = []
    while (job := f.pop_ready(now)) is not None:
        out.append(job.host)
        f.done(job.host, now, Outcome.FETCHED, job.url)
    return out


def frontier(hosts: int, rate: float) -> Frontier:
    f = Frontier(Politeness(rate=rate))
    for i in range(hosts):
        for j in range(3):
            f.push(f"http://h{i}.test/{j}", f"h{i}.test", 1, 0.0)
    assert len(started(f, 0.0)) == hosts
    return f


def test_a_host_slowed_down_never_starts_early_even_before_it_is_paced_anew():
    f = frontier(3, 60.0)  # 1 s apart
    assert f.set_politeness(Politeness(rate=6.0), None, 0.5) == 3  # 10 s apart, nothing refreshed yet
    assert f.stale == 3
    assert started(f, 1.0) == []  # each paced anew as it came up, and put back in line
    assert started(f, 9.99) == []
    assert sorted(started(f, 10.0)) == ["h0.test", "h1.test", "h2.test"]
    assert f.host_delay("h0.test") == 10.0


def test_a_host_sped_up_starts_at_its_new_delay_once_refreshed():
    f = frontier(3, 6.0)  # 10 s apart
    f.set_politeness(Politeness(rate=60.0), None, 0.5)
    assert f.refresh(0.5, 2) == 1 and f.refresh(0.5, 2) == 0  # in chunks
    assert sorted(started(f, 1.0)) == ["h0.test", "h1.test", "h2.test"]  # not at 10 s


def test_a_rate_change_is_cheap_at_once_and_the_scheduler_refreshes_in_chunks():
    core = peer(politeness={"rate": 60.0})
    for i in range(5000):
        core.discover(f"http://h{i}.web.test/", 1, 0.0, Origin.LINK)
    [log] = adopt(core, "politeness.rate=30", now=0.0)
    assert "5,000 known hosts paced anew" in log.text
    assert core.crawl.frontier.stale == 5000
    step, _ = core.next(0.0)  # one chunk a step: the loop yields between them
    assert core.crawl.frontier.stale == 5000 - REPACE_CHUNK
    while core.crawl.frontier.stale:
        step, _ = core.next(0.0)
        if isinstance(step, Start):
            core.admit(step.job, 0.0)
            core.on_result(step.job, answer(step.job.url, 200), None, 0.0)
            core.job_ended(step.job)
    assert core.crawl.frontier.host_delay("h4999.web.test") == 2.0


def test_a_job_started_just_before_the_pause_makes_no_request_until_the_resume():
    core = peer(politeness={"rate": 0.0})
    queue(core, f"{A}/x")
    step, _ = core.next(0.0)
    assert isinstance(step, Start) and step.job.url == f"{A}/x"
    core.adopt_settings(set_paused(core.settings, True), 0.0)  # before the job's admission
    adm, _ = core.admit(step.job, 0.0)
    assert isinstance(adm, Requeue)
    core.job_ended(step.job)
    starts: list[tuple[float, str]] = []
    run(core, 0.0, 60.0, starts)
    assert starts == []
    core.adopt_settings(set_paused(core.settings, False), 60.0)
    run(core, 60.0, 120.0, starts)
    assert starts == [(60.0, f"{A}/x")]
