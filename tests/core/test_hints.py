"""peer.core.sitemaps.hints: the tail a forwarded URL carries, a sitemap's hints or a sitemap job, and back.

Its module docstring's rules: ``detach`` never raises and calls any other
tail MALFORMED (rule 1), an entry stays within MAX_URL_LENGTH (rule 2), a
grant travels as the URL prefix it covers (rule 3). The crawl core's use of
them is tested in tests/core/test_sitemapjobs.py.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from peer.core.sitemaps.document import Authority, ChangeFreq
from peer.core.sitemaps.hints import MALFORMED, MAX_GRANTS, SitemapJob, UrlHints, attach, detach
from peer.core.urls.normalize import MAX_URL_LENGTH

URL = "http://a.test/p"


def test_hints_and_jobs_round_trip_and_a_plain_url_stays_plain():
    hints = UrlHints(lastmod=1_700_000_000.5, priority=0.8, changefreq=ChangeFreq.DAILY)
    assert attach(URL, hints) == f"{URL} hints 1700000000.5 0.8 daily"
    assert detach(attach(URL, hints)) == (URL, hints)
    assert detach(attach(URL, UrlHints(priority=0.5))) == (URL, UrlHints(priority=0.5))
    job = SitemapJob(2, frozenset({Authority("http://a.test", "/"), Authority("http://a.test", "/dir/")}))
    assert attach(URL, job) == f"{URL} sitemap 2 http://a.test/ http://a.test/dir/"
    assert detach(attach(URL, job)) == (URL, job)
    for plain in (attach(URL, None), attach(URL, UrlHints())):  # nothing to say: no tail
        assert plain == URL and detach(plain) == (URL, None)


def test_an_entry_stays_within_the_longest_url_field():
    long_url = "http://a.test/" + "x" * (MAX_URL_LENGTH - 30)
    assert attach(long_url, UrlHints(lastmod=1.0, priority=1.0, changefreq=ChangeFreq.NEVER)) == long_url
    many = frozenset(Authority(f"http://h{i}.test", "/") for i in range(MAX_GRANTS + 5))
    url, job = detach(attach(URL, SitemapJob(0, many)))
    assert url == URL and isinstance(job, SitemapJob) and len(job.granted) == MAX_GRANTS


def test_any_other_tail_is_malformed_never_an_exception():
    for tail in ("hints 1 2 daily", "hints x - -", "hints - - sometimes", "hints - -", "sitemap",
                 "sitemap -1", "sitemap 65", "sitemap 1 nohost", "sitemap 1 http://a.test", "other 1 2 3",
                 "hints inf - -", "hints - nan -"):
        assert detach(f"{URL} {tail}") == (URL, MALFORMED), tail


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_detach_is_total(tail):
    url, got = detach(f"{URL} {tail}")
    assert url == URL and (got is None or got is MALFORMED or isinstance(got, (UrlHints, SitemapJob)))
