"""peer.core.crawl.failedpages: which rows ``--retry-failed`` queues again, and how a ring routes them (pure).

Driven synchronously through ``CrawlCore.retry_failed``; the ring's
routing between two cores is the ``retry`` tail of a forwarded entry
(peer/core/sitemaps/hints.py), taken as a relay takes any entry.
"""

from __future__ import annotations

import random

import pytest

from peer.core.config.retry import RetryConfig
from peer.core.crawl.core import CrawlCore, Forward, Origin, Queued, Reason, Refused
from peer.core.crawl.failedpages import failure
from peer.core.sitemaps.hints import RETRY, attach, detach
from ring.hashring import HashRing
from tests.core.test_crawl import SITE, HOST, config, core, owned_by


@pytest.mark.parametrize(("status", "error", "cause"), [
    (None, "connect", "connect"), (None, "timeout", "timeout"), (None, "reset", "reset"),
    (None, "dns", "dns"),                 # a down_errors kind: a host that was down
    (None, "retry_after", "retry_after"),  # a host given up
    (429, "retry_after", "retry_after"),
    (503, None, "503"), (500, None, "500"), (429, None, "429"),  # the retries ran out
    (None, "robots", None), (None, "tls", None), (None, "too_large", None), (200, "too_large", None),
    (404, None, None), (200, None, None), (301, None, None), (None, "internal", None),
])
def test_a_failed_page_is_a_failure_the_policy_retries_or_a_host_given_up(status, error, cause):
    assert failure(RetryConfig(), status, error) == cause


def test_the_hosts_policy_decides_its_statuses():
    assert failure(RetryConfig(statuses=("503",)), 500, None) is None
    assert failure(RetryConfig(statuses=("503",)), 503, None) == "503"


def test_failed_pages_are_queued_again_once_though_the_seen_set_holds_them():
    c = core(obey_robots=False)
    for u in ("/a", "/b", "/c"):
        c.bloom.add(f"{SITE}{u}")  # seen by the earlier run, done, none queued now
        assert c.discover(f"{SITE}{u}", 1, 0.0, Origin.LINK) == [Refused(f"{SITE}{u}", Reason.SEEN)]
    rows = [(f"{SITE}/a", HOST, 1, 503, None), (f"{SITE}/b", HOST, 1, None, "connect"),
            (f"{SITE}/c", HOST, 1, None, "robots"), (f"{SITE}/a", HOST, 1, 503, None)]
    effects = c.retry_failed(rows, 0.0)
    assert effects == [Queued(f"{SITE}/a", 1), Queued(f"{SITE}/b", 1)]  # a once, c never
    assert c.failed_pages.summary_line() == "retry-failed: 2 failed pages queued again (503 1, connect 1)"
    assert c.retry_failed(rows, 1.0) == []  # once a run
    assert len(c.frontier) == 2
    assert c.failed_pages.replaces(f"{SITE}/a") and not c.failed_pages.replaces(f"{SITE}/a")


def test_a_failed_page_the_scope_refuses_now_is_not_queued():
    c = core(obey_robots=False, rules=["exclude:*/private/*"])
    effects = c.retry_failed([(f"{SITE}/private/x", HOST, 1, None, "connect"),
                              ("http://elsewhere.example/", "elsewhere.example", 1, None, "connect")], 0.0)
    assert [type(e) for e in effects] == [Refused, Refused] and not len(c.frontier)
    assert c.failed_pages.summary_line() == ("retry-failed: 0 failed pages queued again; "
                                             "2 out of the scope or rules now")


def test_in_a_ring_a_failed_page_goes_to_its_hosts_owner_who_queues_it_though_it_saw_it():
    ring = HashRing({"p1": 1.0, "p2": 1.0})
    p1, p2 = core(obey_robots=False), CrawlCore(config(obey_robots=False), "p2", rng=random.Random(2))
    p1.handoffs.set_ring(ring, 0.0)
    p2.handoffs.set_ring(ring, 0.0)
    theirs = owned_by(ring, "p2")[0]
    url = f"http://{theirs}/x"
    # The host was p1's when it failed; p2 was handed it as fetched (a hand-off), so its filter has it.
    p2.discover(url, 2, 0.0, Origin.HANDED_SEEN)
    assert p2.discover(url, 2, 0.0, Origin.RELAY) == [Refused(url, Reason.SEEN)]  # a plain relay of it: dropped
    (fwd,) = p1.retry_failed([(url, theirs, 2, None, "connect")], 0.0)
    assert fwd == Forward(attach(url, RETRY), 2, "p2", True, theirs) and detach(fwd.url) == (url, RETRY)
    assert p1.failed_pages.summary_line() == ("retry-failed: 0 failed pages queued again; "
                                              "1 sent to their hosts' owners")
    assert p2.discover(fwd.url, fwd.depth, 0.0, Origin.RELAY) == [Queued(url, 2)]
    job = p2.frontier.pop_ready(10.0)
    assert job is not None and job.url == url
    assert p2.failed_pages.received == 1 and p2.failed_pages.replaces(url)


def test_a_failed_page_still_queued_from_an_earlier_run_is_not_queued_twice():
    # A --retry-failed run killed before the page's row came: its journal queued it,
    # recovery puts it back, and the next --retry-failed leaves it there.
    c = core(obey_robots=False)
    c.bloom.add(f"{SITE}/a")
    c.bloom.add(f"{SITE}/b")
    rows = [(f"{SITE}/a", HOST, 1, None, "connect"), (f"{SITE}/b", HOST, 1, None, "connect")]
    assert c.retry_failed(rows, 0.0, queued={f"{SITE}/a"}) == [Queued(f"{SITE}/b", 1)]
    assert c.failed_pages.summary_line() == ("retry-failed: 1 failed page queued again (connect 1); "
                                             "1 still queued from an earlier run")
    assert c.failed_pages.replaces(f"{SITE}/a")  # its row, when it comes, takes the failed one's place


def test_a_failed_page_queued_here_still_runs_when_the_hand_off_names_it_fetched_after():
    # The previous owner hands its rows over as fetched; the failed one's may come after
    # the retry did (a race seen in tests/e2e/test_retry_failed_ring.py): it still runs.
    ring = HashRing({"p1": 1.0, "p2": 1.0})
    p2 = CrawlCore(config(obey_robots=False), "p2", rng=random.Random(2))
    p2.handoffs.set_ring(ring, 0.0)
    theirs = owned_by(ring, "p2")[0]
    url = f"http://{theirs}/x"
    assert p2.discover(attach(url, RETRY), 2, 0.0, Origin.RELAY) == [Queued(url, 2)]
    p2.discover(url, 0, 0.1, Origin.HANDED_SEEN)
    job = p2.frontier.pop_ready(10.0)
    assert job is not None and job.url == url
    assert type(p2.admit(job, 10.0)).__name__ == "Fetch"  # before: dropped as fetched elsewhere
