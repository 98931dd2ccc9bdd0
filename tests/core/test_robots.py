"""peer.core.crawl.robots: the RFC 9309 policy around protego, driven with explicit ``now``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from peer.core.crawl.robots import (
    MAX_ROBOTS_BYTES, RETRY_CAP, ROBOTS_TTL, RobotsCache, Verdict, product_token, retry_wait,
)

import localweb

UA = "ringcrawl/0.1 (+https://example.invalid/bot)"
H = "example.test"
ALLOW, DISALLOW, FETCH, PENDING = Verdict.ALLOW, Verdict.DISALLOW, Verdict.FETCH, Verdict.PENDING
UNREACHABLE = Verdict.UNREACHABLE


def url(path: str, host: str = H) -> str:
    return f"http://{host}{path}"


def loaded(text: str, *, status: int = 200, now: float = 0.0, **kw) -> RobotsCache:
    rc = RobotsCache(UA, max_crawl_delay=kw.pop("max_crawl_delay", 30.0), **kw)
    assert rc.check(H, url("/"), now) is FETCH
    rc.loaded(H, status, text.encode(), now)
    return rc


def test_product_token():
    assert product_token(UA) == "ringcrawl"
    assert product_token("  Ring_Crawl-X/2") == "ring_crawl-x"
    assert product_token("Mozilla/5.0 (compatible; ringcrawl/0.1)") == "mozilla"
    assert product_token("0.1 bot") == ""
    assert RobotsCache(UA, max_crawl_delay=1).token == "ringcrawl"


def test_robots_url():
    rc = RobotsCache(UA, max_crawl_delay=1)
    assert rc.robots_url("s001.web.test:8080", "http") == "http://s001.web.test:8080/robots.txt"
    assert rc.robots_url("example.test", "https") == "https://example.test/robots.txt"


ROBOTS = """\
User-agent: *
Disallow: /private/
Allow: /private/open.html
Disallow: /*.pdf$
Disallow: /search*q=
Disallow: /exact$

User-agent: otherbot
Disallow: /
"""


@pytest.mark.parametrize(
    ("path", "verdict"),
    [
        ("/", ALLOW),
        ("/page.html", ALLOW),
        ("/private/", DISALLOW),
        ("/private/x.html", DISALLOW),
        ("/private/open.html", ALLOW),  # the longer Allow wins (§2.2.2)
        ("/privatex", ALLOW),
        ("/doc.pdf", DISALLOW),
        ("/a/b/doc.pdf", DISALLOW),
        ("/doc.pdf?x=1", ALLOW),  # $ anchors the end
        ("/doc.pdfx", ALLOW),
        ("/search?q=x", DISALLOW),
        ("/search/all?lang=en&q=x", DISALLOW),
        ("/search?lang=en", ALLOW),
        ("/exact", DISALLOW),
        ("/exact/more", ALLOW),
        ("/robots.txt", ALLOW),
    ],
)
def test_path_rules_with_wildcards(path, verdict):
    assert loaded(ROBOTS).check(H, url(path), 1.0) is verdict


def test_group_is_chosen_by_product_token():
    text = "User-agent: *\nDisallow: /all\n\nUser-agent: RingCrawl\nDisallow: /ours\n"
    rc = loaded(text)
    assert rc.check(H, url("/ours"), 1) is DISALLOW
    assert rc.check(H, url("/all"), 1) is ALLOW  # only the most specific group applies
    other = RobotsCache("otherbot/2.0", max_crawl_delay=1)
    other.check(H, url("/"), 0)
    other.loaded(H, 200, ROBOTS.encode(), 0)
    assert other.check(H, url("/page.html"), 1) is DISALLOW


def test_webfarm_robots_match_the_graph():
    graph = localweb.SiteGraph(hosts=6, pages_per_host=20, section_size=10)
    port = 8080
    urls = graph.expected_urls(port) | graph.disallowed_urls(port) | graph.trap_urls(port)
    rc = RobotsCache(UA, max_crawl_delay=30.0)
    bad = RobotsCache("BadBot/1.0", max_crawl_delay=30.0)
    statuses = set()
    for host in graph.site_hosts() + [localweb.SHOP_HOST]:
        key = f"{host}:{port}"
        page = graph.render(host, "/robots.txt", port)
        statuses.add(page.status)
        for cache in (rc, bad):
            assert cache.check(key, url("/", key), 0.0) is FETCH
            cache.loaded(key, page.status, page.body, 0.0)
    assert statuses == {200, 404}
    disallowed = 0
    checked = 0
    for u in sorted(urls):
        host = localweb.SiteGraph.host_of(u)
        if host == localweb.BAD_HOST:
            continue
        key = f"{host}:{port}"
        path = "/" + u.split("/", 3)[3]
        want = graph.robots_allows(host, path.partition("?")[0])
        assert (rc.check(key, u, 1.0) is ALLOW) == want, u
        disallowed += not want
        checked += 1
        # "User-agent: badbot / Disallow: /" on every host that has a robots.txt
        has_robots = graph.robots_txt(host) is not None
        assert bad.check(key, u, 1.0) is (DISALLOW if has_robots else ALLOW), u
    assert checked > 100 and disallowed > 0


def test_webfarm_crawl_delay():
    graph = localweb.SiteGraph(hosts=3, pages_per_host=10, crawl_delay={"s002.web.test": 2.5})
    rc = RobotsCache(UA, max_crawl_delay=30.0)
    for host in graph.site_hosts():
        page = graph.render(host, "/robots.txt", 80)
        rc.check(host, url("/", host), 0)
        rc.loaded(host, page.status, page.body, 0)
    assert rc.crawl_delay("s002.web.test") == 2.5
    assert rc.crawl_delay("s001.web.test") is None


@pytest.mark.parametrize(
    ("text", "cap", "delay"),
    [
        ("User-agent: *\nCrawl-delay: 5\n", 30.0, 5.0),
        ("User-agent: *\nCrawl-delay: 0.5\n", 30.0, 0.5),
        ("User-agent: *\nCrawl-delay: 120\n", 30.0, 30.0),  # capped
        ("User-agent: *\nCrawl-delay: 9\n", 0.0, None),  # cap 0: no delay
        ("User-agent: *\nCrawl-delay: 0\n", 30.0, None),
        ("User-agent: *\nCrawl-delay: -3\n", 30.0, None),
        ("User-agent: *\nCrawl-delay: soon\n", 30.0, None),
        ("User-agent: *\nCrawl-delay: inf\n", 30.0, None),
        ("User-agent: *\nDisallow: /x\n", 30.0, None),
        ("User-agent: otherbot\nCrawl-delay: 7\n", 30.0, None),
        ("User-agent: *\nCrawl-delay: 2\n\nUser-agent: ringcrawl\nCrawl-delay: 4\n", 30.0, 4.0),
    ],
)
def test_crawl_delay_capping(text, cap, delay):
    assert loaded(text, max_crawl_delay=cap).crawl_delay(H) == delay


def test_crawl_delay_of_unknown_host_and_of_error_answers():
    rc = RobotsCache(UA, max_crawl_delay=10)
    assert rc.crawl_delay(H) is None
    assert loaded("User-agent: *\nCrawl-delay: 5\n", status=404).crawl_delay(H) is None


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 451, 301, 302, 308])
def test_4xx_and_3xx_allow_everything(status):
    rc = loaded("User-agent: *\nDisallow: /\n", status=status)
    assert rc.check(H, url("/private/x"), 1.0) is ALLOW


@pytest.mark.parametrize("status", [500, 502, 503, 504, 429, 199, 600])
def test_5xx_and_429_disallow_then_retry_after_error_retry(status):
    rc = loaded("", status=status, now=100.0, error_retry=600.0)
    assert rc.check(H, url("/"), 100.0) is UNREACHABLE
    assert rc.check(H, url("/a"), 699.9) is UNREACHABLE
    assert rc.retry_at(H) == 700.0
    assert rc.check(H, url("/a"), 700.0) is FETCH
    assert rc.check(H, url("/b"), 700.1) is PENDING  # the retry is in flight
    rc.loaded(H, 200, b"User-agent: *\nDisallow: /b\n", 701.0)
    assert rc.check(H, url("/a"), 702.0) is ALLOW
    assert rc.check(H, url("/b"), 702.0) is DISALLOW


def test_network_failure_disallows_then_retries():
    rc = RobotsCache(UA, max_crawl_delay=1, error_retry=60.0)
    assert rc.check(H, url("/"), 0.0) is FETCH
    rc.failed(H, 0.0)
    assert rc.check(H, url("/"), 59.0) is UNREACHABLE
    assert rc.check(H, url("/"), 60.0) is FETCH
    rc.loaded(H, 404, b"", 61.0)
    assert rc.check(H, url("/anything"), 62.0) is ALLOW


def test_unreachable_becomes_final_disallow_after_max_failures():
    rc = RobotsCache(UA, max_crawl_delay=1, error_retry=10.0, max_failures=3)
    now = 0.0
    for _ in range(3):
        assert rc.check(H, url("/"), now) is FETCH
        rc.failed(H, now)
        now = rc.retry_at(H)
    # Three failures in a row: the host's URLs are dropped, not held for ever.
    assert rc.check(H, url("/"), now - 5.0) is DISALLOW


def test_retries_wait_30_s_doubling_so_a_dead_host_is_given_up_within_minutes():
    # The defaults (crawl.robots_retry 30, crawl.robots_tries 4): tries at
    # 0, 30, 90 and 210 s; a refused connection answers at once, so a dead
    # seed host holds a first crawl 3.5 minutes, not 20.
    rc = RobotsCache(UA, max_crawl_delay=1)
    assert rc.max_failures == 4
    now, tries = 0.0, []
    for _ in range(10):
        assert rc.check(H, url("/"), now) is FETCH
        tries.append(now)
        rc.failed(H, now, "connect")
        if rc.check(H, url("/"), now + 0.1) is DISALLOW:
            break
        now = rc.retry_at(H)
        assert rc.check(H, url("/"), now - 0.1) is UNREACHABLE
    assert tries == [0.0, 30.0, 90.0, 210.0]
    assert rc.failure(H) == "connect"


def test_the_backoff_doubles_up_to_its_cap_and_a_retry_after_wins():
    assert [retry_wait(30.0, n) for n in range(1, 8)] == [30.0, 60.0, 120.0, 240.0, 480.0, 600.0, 600.0]
    assert RETRY_CAP == 600.0
    assert retry_wait(900.0, 3) == 900.0  # a first wait over the cap is not cut
    rc = RobotsCache(UA, max_crawl_delay=1, error_retry=30.0)
    assert rc.check(H, url("/"), 0.0) is FETCH
    rc.failed(H, 0.0, retry_after=5.0)
    assert rc.retry_at(H) == 5.0


@pytest.mark.parametrize("cause", ["dns", "blocked"])
def test_a_final_failure_disallows_at_once_and_names_its_cause(cause):
    rc = RobotsCache(UA, max_crawl_delay=1, error_retry=600.0, max_failures=3, ttl=1000.0)
    assert rc.check(H, url("/"), 0.0) is FETCH
    rc.failed(H, 0.0, cause, final=True)
    # No UNREACHABLE hold: the URLs are recorded with the cause now.
    assert rc.check(H, url("/a"), 1.0) is DISALLOW
    assert rc.failure(H) == cause
    assert rc.check(H, url("/a"), 700.0) is DISALLOW  # not asked again after error_retry...
    assert rc.check(H, url("/a"), 1000.0) is FETCH  # ...but after ttl, like an answer


def test_retried_failures_end_with_their_cause():
    rc = RobotsCache(UA, max_crawl_delay=1, error_retry=10.0, max_failures=3)
    now = 0.0
    for n in range(1, 4):
        assert rc.check(H, url("/"), now) is FETCH
        assert rc.failure(H) is None
        rc.failed(H, now, "connect")
        assert rc.failures(H) == n and rc.cause(H) == "connect"
        now = rc.retry_at(H)
    assert rc.check(H, url("/"), now - 5.0) is DISALLOW
    assert rc.failure(H) == "connect"
    assert rc.max_failures == 3


def test_5xx_failures_end_as_robots_and_rules_are_no_failure():
    rc = loaded("", status=503, max_failures=1)
    assert rc.check(H, url("/"), 1.0) is DISALLOW
    assert rc.failure(H) == "robots"
    rc2 = loaded("User-agent: *\nDisallow: /\n")
    assert rc2.check(H, url("/x"), 1.0) is DISALLOW
    assert rc2.failure(H) is None and rc2.failures(H) == 0


def test_a_truncated_prefix_is_parsed_up_to_its_last_whole_line():
    # What Fetcher.fetch(prefix_ok=True) returns for a 2 MiB file: 500 KiB, cut anywhere.
    text = ("User-agent: *\nDisallow: /private/\n" + "# filler\n" * 300_000).encode()
    body = text[:MAX_ROBOTS_BYTES - 15] + b"\nDisallow: /pub"  # a rule cut mid-line
    assert len(body) == MAX_ROBOTS_BYTES  # not over the limit: only ``truncated`` says it was cut
    rc = RobotsCache(UA, max_crawl_delay=1)
    assert rc.check(H, url("/"), 0.0) is FETCH
    rc.loaded(H, 200, body, 0.0, truncated=True)
    assert rc.check(H, url("/private/x"), 1.0) is DISALLOW
    assert rc.check(H, url("/public"), 1.0) is ALLOW  # "/pub" was half a line: not read


def test_a_success_resets_the_failure_count():
    rc = RobotsCache(UA, max_crawl_delay=1, error_retry=10.0, max_failures=2)
    assert rc.check(H, url("/"), 0.0) is FETCH
    rc.failed(H, 0.0)
    assert rc.check(H, url("/"), 10.0) is FETCH
    rc.loaded(H, 200, b"User-agent: *\nDisallow: /x\n", 10.0)
    assert rc.check(H, url("/"), 11.0) is ALLOW
    rc2 = RobotsCache(UA, max_crawl_delay=1, error_retry=10.0, max_failures=2, ttl=20.0)
    assert rc2.check(H, url("/"), 0.0) is FETCH
    rc2.failed(H, 0.0)
    assert rc2.check(H, url("/"), 10.0) is FETCH
    rc2.loaded(H, 404, b"", 10.0)
    assert rc2.check(H, url("/"), 30.0) is FETCH  # expired
    rc2.failed(H, 30.0)  # the cached allow-all stays in force (§2.4)...
    assert rc2.check(H, url("/"), 31.0) is ALLOW


def test_answers_expire_after_24_hours():
    rc = loaded("User-agent: *\nDisallow: /old\n", now=0.0)
    assert ROBOTS_TTL == 86400.0
    assert rc.check(H, url("/old"), ROBOTS_TTL - 1) is DISALLOW
    assert rc.check(H, url("/new"), ROBOTS_TTL) is FETCH
    # While the refresh is in flight the expired copy still answers.
    assert rc.check(H, url("/old"), ROBOTS_TTL + 1) is DISALLOW
    assert rc.check(H, url("/new"), ROBOTS_TTL + 1) is ALLOW
    rc.loaded(H, 200, b"User-agent: *\nDisallow: /new\n", ROBOTS_TTL + 2)
    assert rc.check(H, url("/old"), ROBOTS_TTL + 3) is ALLOW
    assert rc.check(H, url("/new"), ROBOTS_TTL + 3) is DISALLOW
    assert rc.check(H, url("/new"), 2 * ROBOTS_TTL + 2) is FETCH


def test_4xx_answer_expires_too():
    rc = loaded("", status=404, ttl=100.0)
    assert rc.check(H, url("/"), 99.0) is ALLOW
    assert rc.check(H, url("/"), 100.0) is FETCH


def test_unreachable_refresh_keeps_the_cached_rules():
    rc = loaded("User-agent: *\nDisallow: /old\n", now=0.0, error_retry=600.0)
    assert rc.check(H, url("/x"), ROBOTS_TTL) is FETCH
    rc.loaded(H, 503, b"", ROBOTS_TTL)
    # RFC 9309 §2.4: the cached copy stays in force while the file is unreachable.
    assert rc.check(H, url("/x"), ROBOTS_TTL + 1) is ALLOW
    assert rc.check(H, url("/old"), ROBOTS_TTL + 1) is DISALLOW
    assert rc.check(H, url("/x"), ROBOTS_TTL + 600) is FETCH


def test_pending_host_gets_pending_until_reported():
    rc = RobotsCache(UA, max_crawl_delay=1)
    assert rc.check(H, url("/a"), 0.0) is FETCH
    assert rc.check(H, url("/b"), 0.1) is PENDING
    assert rc.check(H, url("/c"), 5.0) is PENDING
    assert rc.check("other.test", url("/", "other.test"), 5.0) is FETCH  # per host
    rc.loaded(H, 200, b"", 6.0)
    assert rc.check(H, url("/b"), 6.0) is ALLOW


def test_pending_fetch_that_never_reports_is_asked_again():
    rc = RobotsCache(UA, max_crawl_delay=1, pending_timeout=30.0)
    assert rc.check(H, url("/"), 0.0) is FETCH
    assert rc.check(H, url("/"), 29.9) is PENDING
    assert rc.check(H, url("/"), 30.0) is FETCH
    assert rc.check(H, url("/"), 31.0) is PENDING
    rc.cancelled(H)
    assert rc.check(H, url("/"), 31.0) is FETCH


def test_lru_bound():
    rc = RobotsCache(UA, max_crawl_delay=1, max_size=3)
    for name in "abc":
        rc.check(name, url("/", name), 0)
        rc.loaded(name, 200, b"User-agent: *\nDisallow: /x\n", 0)
    assert rc.check("a", url("/x", "a"), 1) is DISALLOW  # a is now the most recent
    rc.check("d", url("/", "d"), 1)  # evicts b
    assert len(rc) == 3
    assert rc.check("b", url("/x", "b"), 2) is FETCH
    assert rc.check("a", url("/x", "a"), 2) is DISALLOW
    # A late answer for an evicted host is still taken.
    rc.loaded("c", 200, b"User-agent: *\nDisallow: /y\n", 3)
    assert rc.check("c", url("/y", "c"), 4) is DISALLOW
    assert len(rc) == 3


def test_size_limit_cuts_at_a_whole_line():
    filler = "# " + "x" * 1000 + "\n"
    head = "User-agent: *\nDisallow: /early/\n"
    lines = head + filler * (MAX_ROBOTS_BYTES // len(filler))
    assert len(lines) < MAX_ROBOTS_BYTES
    # "Allow: /early/open.html" straddles the limit. Cut mid-line it would read
    # "Allow: /early/o", longer than "/early/", and open /early/other.html.
    part = "Allow: /early/o"
    pad = MAX_ROBOTS_BYTES - len(lines) - len(part)
    text = lines + "#" * (pad - 1) + "\n" + "Allow: /early/open.html\nDisallow: /late\n"
    assert text.index(part) + len(part) == MAX_ROBOTS_BYTES
    rc = loaded(text)
    assert rc.check(H, url("/early/other.html"), 1) is DISALLOW
    assert rc.check(H, url("/early/open.html"), 1) is DISALLOW  # past the limit: unread
    assert rc.check(H, url("/late"), 1) is ALLOW
    assert rc.check(H, url("/elsewhere"), 1) is ALLOW


def test_bom_and_bad_utf8():
    rc = RobotsCache(UA, max_crawl_delay=1)
    rc.check(H, url("/"), 0)
    rc.loaded(H, 200, b"\xef\xbb\xbfUser-agent: *\nDisallow: /p\xffq\nDisallow: /x\n", 0)
    assert rc.check(H, url("/x"), 1) is DISALLOW
    assert rc.check(H, url("/y"), 1) is ALLOW


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=600), path=st.text(max_size=30))
def test_garbage_robots_txt_never_raises(body, path):
    rc = RobotsCache(UA, max_crawl_delay=5)
    rc.check(H, url("/"), 0)
    rc.loaded(H, 200, b"User-agent: *\n" + body, 0)
    assert rc.check(H, url("/" + path), 1) in (ALLOW, DISALLOW)
    delay = rc.crawl_delay(H)
    assert delay is None or 0 < delay <= 5


def test_a_retry_after_on_a_failed_robots_txt_sets_the_next_try():
    rc = RobotsCache(UA, max_crawl_delay=1, error_retry=600.0)
    rc.check(H, url("/a"), 0.0)
    rc.failed(H, 0.0, "robots", retry_after=5.0)
    assert rc.retry_at(H) == 5.0
    assert rc.check(H, url("/a"), 4.9) is UNREACHABLE
    assert rc.check(H, url("/a"), 5.0) is FETCH
