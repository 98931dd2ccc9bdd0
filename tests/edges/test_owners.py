"""localweb.judges.owners: a ring's crawl judged from hand-made request logs."""

from localweb.judges.owners import Exit, Hit, judge, page_url

PEERS = {"10.0.0.11": "p1", "10.0.0.12": "p2", "10.0.0.13": "p3"}
A, B, C = "10.0.0.11", "10.0.0.12", "10.0.0.13"


def test_one_owner_per_host_every_page_once_is_clean():
    hits = [Hit(100.0, "a.test", "/robots.txt", client=A), Hit(100.2, "a.test", "/", client=A),
            Hit(101.5, "a.test", "/x", client=A), Hit(100.1, "b.test", "/", client=B)]
    expected = {page_url("a.test", "/", 80), page_url("a.test", "/x", 80), page_url("b.test", "/", 80)}
    v = judge(hits, PEERS, expected=expected, port=80,
              exits=[Exit("p1", 0, 103.5, True), Exit("p2", 0, 104.0, True)])
    assert (v.requests, v.pages, v.two_peer_seconds, v.fetched_twice, v.hosts_by_two) == (4, 3, 0, 0, ())
    assert v.coverage == 1.0 and v.covered == 3 and v.last_page == 101.5
    assert v.all_exit_0_by_themselves
    assert [v.exit_after_last_page(e) for e in v.exits] == [2.0, 2.5]
    assert v.unknown_clients == ()


def test_two_clients_in_one_second_of_one_host_count_and_their_longest_run():
    hits = [
        # a.test: p1 and p2 in seconds 10, 11, 12 (a run of 3), then p3 with p1 in 20.
        Hit(10.1, "a.test", "/1", client=A), Hit(10.9, "a.test", "/2", client=B),
        Hit(11.0, "a.test", "/3", client=A), Hit(11.99, "a.test", "/4", client=B),
        Hit(12.5, "a.test", "/5", client=A), Hit(12.6, "a.test", "/6", client=B),
        Hit(20.0, "a.test", "/7", client=C), Hit(20.5, "a.test", "/8", client=A),
        # b.test: two peers but in different seconds: no host-second.
        Hit(10.0, "b.test", "/1", client=A), Hit(11.0, "b.test", "/2", client=B),
        # One peer twice in a second is one client.
        Hit(30.1, "c.test", "/1", client=C), Hit(30.2, "c.test", "/2", client=C),
    ]
    v = judge(hits, PEERS)
    assert v.two_peer_seconds == 4
    assert v.longest_two_peer_run == 3
    assert v.two_peer_hosts == ("a.test",)
    assert v.hosts_by_two == (("a.test", ("p1", "p2", "p3")), ("b.test", ("p1", "p2")))
    assert v.fetched_twice == 0


def test_robots_txt_by_a_second_peer_makes_a_host_second_but_no_page_twice():
    hits = [Hit(5.1, "a.test", "/", client=A), Hit(5.5, "a.test", "/robots.txt", client=B),
            Hit(6.0, "a.test", "/robots.txt", client=A)]
    v = judge(hits, PEERS)
    assert v.two_peer_seconds == 1  # the site owner sees two crawlers in that second
    assert v.fetched_twice == 0 and v.pages == 1
    assert v.hosts_by_two == ()  # robots.txt is no page of the host


def test_pages_fetched_twice_by_one_or_two_peers_and_heads_apart():
    hits = [Hit(1, "a.test", "/p", client=A), Hit(50, "a.test", "/p", client=A),
            Hit(2, "a.test", "/q", client=A), Hit(60, "a.test", "/q", client=B),
            Hit(3, "a.test", "/r", client=A), Hit(4, "a.test", "/r", "HEAD", client=A)]
    v = judge(hits, PEERS)
    assert (v.fetched_twice, v.fetched_twice_by_two) == (2, 1)
    assert v.pages == 5


def test_coverage_compares_normalised_urls_on_the_webs_port():
    expected = {page_url("a.test", "/x", 8080), page_url("a.test", "/y", 8080)}
    hits = [Hit(1, "a.test", "/x", client=A),
            Hit(2, "a.test", "/z", client=A)]
    v = judge(hits, PEERS, expected=expected, port=8080)
    assert (v.covered, v.expected, v.coverage) == (1, 2, 0.5)
    assert page_url("a.test", "/x", 8080) == "http://a.test:8080/x"


def test_unknown_clients_count_as_themselves_and_are_listed():
    hits = [Hit(1.1, "a.test", "/", client=A), Hit(1.2, "a.test", "/x", client="192.0.2.9")]
    v = judge(hits, PEERS)
    assert v.two_peer_seconds == 1
    assert v.unknown_clients == ("192.0.2.9",)


def test_exits_that_did_not_end_by_themselves_or_not_0_fail_and_are_shown():
    v = judge([Hit(10, "a.test", "/", client=A)], PEERS,
              exits=[Exit("p1", 0, 12.0, True), Exit("p2", -15, 40.0, False), Exit("p3", None, None, False)])
    assert not v.all_exit_0_by_themselves
    assert v.exit_after_last_page(v.exits[2]) is None
    text = "\n".join(v.lines())
    assert "exit p2" in text and "stopped" in text and "2.0 s after the last page" in text


def test_an_empty_log_is_full_coverage_only_when_nothing_is_expected():
    assert judge([], PEERS).coverage == 1.0
    assert judge([], PEERS, expected={"http://a.test/"}).coverage == 0.0
