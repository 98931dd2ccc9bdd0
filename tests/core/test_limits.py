"""peer.core.crawl.limits: the caps' decisions and counts, driven synchronously."""

import pytest

from peer.core.crawl.limits import Cap, Hold, Limits

H = "farm.test"


def test_long_urls_and_repeating_paths_are_dropped_and_counted():
    lim = Limits(max_url_length=40, max_path_repeat=3)

    def check(url: str) -> Cap | None:
        cap = lim.check_url(url)
        if cap is not None:
            lim.dropped(cap)  # as the crawl core counts what it refuses (peer.core.crawl.discovery)
        return cap

    assert check("http://a.test/a/a/a/") is None  # three times: allowed
    assert check("http://a.test/a/a/a/a/") is Cap.PATH_REPEAT
    assert check("http://a.test/x/y/x/y/x/y/x/y/") is Cap.PATH_REPEAT
    assert check("http://a.test/p?" + "q" * 40) is Cap.URL_LENGTH
    assert check("http://a.test/c/2024/01/01/") is None
    assert lim.hits == {Cap.PATH_REPEAT: 2, Cap.URL_LENGTH: 1}


def test_zero_turns_a_cap_off():
    lim = Limits()
    assert lim.check_url("http://a.test/" + "a/" * 500) is None
    for _ in range(1000):
        assert lim.admit(H) is None
        lim.queued(H)
    assert list(lim.cut_links(["x"] * 5000)) == ["x"] * 5000
    assert lim.retry_after(H, 1e11) == (1e11, False)
    assert not lim.hits


def test_a_hosts_urls_stop_at_the_cap_and_other_hosts_are_not_affected():
    lim = Limits(max_urls_per_host=3)
    for _ in range(3):
        assert lim.admit(H) is None
        lim.queued(H)
    assert lim.admit(H) is Cap.URLS_PER_HOST
    assert lim.hits[Cap.URLS_PER_HOST] == 0  # admit only asks; the caller counts new URLs
    lim.dropped(Cap.URLS_PER_HOST)
    assert lim.hits[Cap.URLS_PER_HOST] == 1
    assert lim.admit("normal.test") is None
    # Fetched URLs still count: the cap is on queued plus fetched.
    assert lim.host_urls(H) == 3


def test_urls_queued_by_resume_count_towards_the_cap():
    lim = Limits(max_urls_per_host=10)
    lim.queued(H, 10)
    assert lim.admit(H) is Cap.URLS_PER_HOST


def test_links_of_a_page_are_cut_to_the_first_n():
    lim = Limits(max_links_per_page=100)
    links = tuple(f"http://a.test/{i}" for i in range(1_000_000))
    kept = lim.cut_links(links)
    assert list(kept) == list(links[:100])
    assert lim.cut_links(links[:100]) == links[:100]
    assert lim.hits == {Cap.LINKS_PER_PAGE: 999_900, Cap.PAGES_CUT: 1}


def test_a_long_retry_after_is_cut_and_counted_and_never_gives_a_host_up_by_itself():
    # Giving up is peer.core.crawl.outages' (after [retry] down_give_up), not a count of strikes.
    lim = Limits(max_retry_after=300.0)
    assert lim.retry_after(H, 120.0) == (120.0, False)  # within the cap: as asked
    assert lim.retry_after(H, None) == (None, False)  # a 503 without one
    for _ in range(10):
        assert lim.retry_after(H, 2.5e11) == (300.0, True)  # a date in the year 9999
    assert not lim.given_up(H)
    assert lim.hits[Cap.RETRY_AFTER] == 10 and lim.hits[Cap.HOSTS_GIVEN_UP] == 0
    lim.give_up(H)
    assert lim.given_up(H) and lim.admit(H) is Cap.GIVEN_UP


def test_holds_are_counted_while_held_and_forgotten_when_past():
    lim = Limits()
    lim.hold("a.test", Hold.ROBOTS, 600.0)
    lim.hold("a.test", Hold.ROBOTS, 1200.0)  # the same host again: extended, counted once
    lim.hold("b.test", Hold.RETRY_AFTER, 5.0)
    assert lim.held(1.0) == {Hold.ROBOTS: 1, Hold.RETRY_AFTER: 1, Hold.DOWN: 0}
    assert lim.held(5.0) == {Hold.ROBOTS: 1, Hold.RETRY_AFTER: 0, Hold.DOWN: 0}
    assert lim.held(900.0)[Hold.ROBOTS] == 1
    lim.release("a.test", Hold.ROBOTS)
    assert lim.held(900.0) == {Hold.ROBOTS: 0, Hold.RETRY_AFTER: 0, Hold.DOWN: 0}
    assert lim.held_total == {Hold.ROBOTS: 1, Hold.RETRY_AFTER: 1}


def test_giving_up_a_host_ends_its_holds():
    lim = Limits()
    lim.hold(H, Hold.RETRY_AFTER, 100.0)
    lim.give_up(H)
    assert lim.held(1.0)[Hold.RETRY_AFTER] == 0


def test_figures_and_summary_line_name_what_was_hit():
    lim = Limits(max_url_length=30, max_urls_per_host=1, max_links_per_page=2, max_retry_after=1.0)
    assert lim.render(0.0) == "limits: none hit"
    assert lim.figures(0.0) == {}
    lim.dropped(lim.check_url("http://a.test/" + "x" * 40))  # the crawl core counts what it refuses
    lim.cut_links(["a", "b", "c", "d"])
    lim.dropped(Cap.URLS_PER_HOST)
    lim.retry_after(H, 60.0)
    lim.hold("r.test", Hold.ROBOTS, 100.0)
    assert lim.figures(1.0) == {
        "cap.max_url_length": 1, "cap.max_links_per_page": 2, "cap.pages_cut": 1,
        "cap.max_urls_per_host": 1, "cap.max_retry_after": 1, "held.robots": 1,
    }
    line = lim.render(1.0)
    assert line == ("limits: long URLs 1; over host cap 1; Retry-After cut 1; "
                    "links cut 2 on 1 pages; hosts held: robots 1 (1 now)")


@pytest.mark.parametrize("kw", [{"max_url_length": -1}, {"max_urls_per_host": -5},
                                {"max_retry_after": 0.0}])
def test_bad_caps_are_refused(kw):
    with pytest.raises(ValueError):
        Limits(**kw)


def test_a_page_already_cut_by_the_parser_counts_what_it_offered():
    lim = Limits(max_links_per_page=100)
    kept = lim.cut_links([f"u{i}" for i in range(100)], total=5000)
    assert len(kept) == 100
    assert lim.hits[Cap.LINKS_PER_PAGE] == 4900 and lim.hits[Cap.PAGES_CUT] == 1
