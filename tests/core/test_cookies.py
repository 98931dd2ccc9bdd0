"""The cookie jar (peer/core/http/cookies.py), driven with ``now`` passed in: parsing, matching, limits, config.

Its file (peer/state/cookiefile.py) is tested in tests/edges/test_cookiefile.py;
a crawl that needs one, judged by the Cookie field of each request in the
server's log, in tests/e2e/test_cookiesweb.py.
"""

from __future__ import annotations

import email.utils

import pytest

from peer.core.config.cluster import parse_config
from peer.core.http.cookies import Cookie, CookieJar, CookieLimits, default_path, parse_set_cookie, path_match
from peer.core.http.head import MAX_SET_COOKIES, read_head

NOW = 1_700_000_000.0
URL = "http://shop.example/cart/view"


def jar(**limits) -> CookieJar:
    return CookieJar(CookieLimits(**limits))


# --- parsing --------------------------------------------------------------------------


@pytest.mark.parametrize("value, name, val", [
    ("sid=abc", "sid", "abc"),
    ("  sid = abc ; Path=/", "sid", "abc"),
    ('q="quoted value"', "q", '"quoted value"'),
    ("empty=", "empty", ""),
    ("eq=a=b=c", "eq", "a=b=c"),
])
def test_name_value_variants(value, name, val):
    c = parse_set_cookie(value, "shop.example", "/cart/view", False, NOW, 4096)
    assert isinstance(c, Cookie) and (c.name, c.value) == (name, val)


@pytest.mark.parametrize("value", ["junk", "=novalue", "  =x", "a\x01b=1", "a=b\x7fc", ""])
def test_malformed_set_cookie_is_refused_as_malformed(value):
    assert parse_set_cookie(value, "shop.example", "/", False, NOW, 4096) == "malformed"


@pytest.mark.parametrize("value", [
    "a=1" + ";" * 100_000, "a=1; Expires=" + "x" * 10_000, "a=1; Max-Age=\u00b2", "a=1; Max-Age=-",
    "a=1; Max-Age=-" + "9" * 500, "a=1; Domain=", "a=1; Path=", "\u00e9=\u00e9", "a=1; Expires=Mon, 99 Foo 99999 99:99:99 GMT",
])
def test_hostile_set_cookie_values_never_raise(value):
    j = jar()
    j.store(URL, [value], NOW)
    assert isinstance(j.header(URL, NOW), (str, type(None)))


def test_default_path_and_path_match_follow_rfc_6265_5_1_4():
    assert default_path("/cart/view") == "/cart"
    assert default_path("/cart") == "/"
    assert default_path("") == "/" and default_path("x") == "/"
    assert path_match("/cart", "/cart") and path_match("/cart/x", "/cart") and path_match("/cart/x", "/cart/")
    assert not path_match("/cartoon", "/cart") and not path_match("/", "/cart")
    c = parse_set_cookie("a=1; Path=relative", "h", "/x/y", False, NOW, 4096)
    assert isinstance(c, Cookie) and c.path == "/x"


def test_expires_and_max_age_with_now_max_age_winning():
    date = email.utils.formatdate(NOW + 100, usegmt=True)
    c = parse_set_cookie(f"a=1; Expires={date}", "h", "/", False, NOW, 4096)
    assert isinstance(c, Cookie) and c.expires == pytest.approx(NOW + 100)
    c = parse_set_cookie(f"a=1; Expires={date}; Max-Age=10", "h", "/", False, NOW, 4096)
    assert isinstance(c, Cookie) and c.expires == NOW + 10
    c = parse_set_cookie("a=1; Max-Age=soon; Expires=not a date", "h", "/", False, NOW, 4096)
    assert isinstance(c, Cookie) and c.expires is None  # unreadable attributes ignored alone
    c = parse_set_cookie("a=1; Max-Age=" + "9" * 400, "h", "/", False, NOW, 4096)
    assert isinstance(c, Cookie) and NOW < c.expires < float("inf")


def test_a_cookie_expires_with_now_and_an_expired_one_deletes_its_namesake():
    j = jar()
    assert j.store(URL, ["a=1; Max-Age=60", "b=2"], NOW) == ["a", "b"]
    assert j.header(URL, NOW + 59) == "a=1; b=2"
    assert j.header(URL, NOW + 61) == "b=2"
    assert j.counts["cookies.expired"] == 1
    j.store(URL, ["b=0; Max-Age=0"], NOW + 62)
    assert j.header(URL, NOW + 62) is None and len(j) == 0 and j.counts["cookies.deleted"] == 1


def test_secure_cookies_go_only_over_https_and_cannot_be_set_over_http():
    j = jar()
    assert j.store("http://h.example/", ["s=1; Secure"], NOW) == []
    assert j.counts["cookies.refused.secure"] == 1
    assert j.store("https://h.example/", ["s=1; Secure", "p=2"], NOW) == ["s", "p"]
    assert j.header("https://h.example/x", NOW) == "s=1; p=2"
    assert j.header("http://h.example/x", NOW) == "p=2"


def test_cookies_are_host_only_whatever_domain_says():
    j = jar()
    stored = j.store("http://www.shop.example/", [
        "parent=1; Domain=shop.example", "dotted=2; Domain=.WWW.shop.example",
        "other=3; Domain=evil.example", "suffix=4; Domain=example", "sub=5; Domain=a.www.shop.example"], NOW)
    assert stored == ["parent", "dotted", "suffix"]
    assert j.counts["cookies.refused.domain"] == 2
    assert j.header("http://www.shop.example/", NOW) == "parent=1; dotted=2; suffix=4"
    # Not widened: the parent and its other hosts get nothing.
    for other in ("http://shop.example/", "http://api.shop.example/", "http://evil.example/"):
        assert j.header(other, NOW) is None
    assert j.header("http://www.shop.example:8080/", NOW) is not None  # no port isolation (§8.5)


def test_sending_orders_longest_path_first_and_path_matches():
    j = jar()
    j.store("http://h.example/a/b/page", ["root=1; Path=/", "deep=2", "other=3; Path=/z"], NOW)
    assert j.header("http://h.example/a/b/next", NOW) == "deep=2; root=1"
    assert j.header("http://h.example/a/x", NOW) == "root=1"
    assert j.counts["cookies.sent"] == 2


def test_a_same_name_and_path_replaces_and_keeps_its_age():
    j = jar()
    j.store(URL, ["a=1; Path=/", "b=2; Path=/"], NOW)
    j.store(URL, ["a=9; Path=/"], NOW + 1)
    assert j.header(URL, NOW + 1) == "a=9; b=2" and len(j) == 2


def test_caps_size_per_host_and_total_each_counted():
    j = jar(max_bytes=10, per_host=2, total=3)
    assert j.store(URL, ["big=" + "x" * 20], NOW) == []
    assert j.counts["cookies.refused.size"] == 1
    j.store(URL, ["a=1", "b=2", "c=3"], NOW)  # the host's oldest goes
    assert [c.name for c in j.cookies("shop.example")] == ["b", "c"] and j.counts["cookies.evicted"] == 1
    j.store("http://two.example/", ["d=4", "e=5"], NOW)
    assert len(j) == 3 and j.counts["cookies.refused.total"] == 1  # never another host's pushed out
    j.store("http://two.example/", ["d=5"], NOW)  # a replacement is no new cookie
    assert j.header("http://two.example/", NOW) == "d=5"


def test_a_full_jar_purges_expired_cookies_before_refusing():
    j = jar(total=1)
    j.store(URL, ["a=1; Max-Age=5"], NOW)
    assert j.store("http://two.example/", ["b=1"], NOW + 10) == ["b"]


def test_hosts_whose_cookies_are_off_neither_keep_nor_send():
    j = CookieJar(enabled=lambda h: h == "on.example")
    assert j.store("http://off.example/", ["a=1"], NOW) == [] and len(j) == 0
    j.store("http://on.example/", ["a=1"], NOW)
    assert j.header("http://on.example/", NOW) == "a=1"


def test_records_restore_a_jar_and_skip_expired_and_bad_records():
    j = jar()
    j.store(URL, ["a=1; Max-Age=100", "b=2"], NOW)
    records = j.records() + [["x"], ["h", "n", "v", "nopath", False, None, 9]]
    k = jar()
    assert k.restore(records, NOW + 10) == 2 and k.header(URL, NOW + 10) == "a=1; b=2"
    assert "cookies.stored" not in k.counts and k.changes == 0
    assert jar().restore(j.records(), NOW + 1000) == 1  # a expired meanwhile


# --- the head hands them over -------------------------------------------------------------


def test_read_head_hands_over_set_cookie_values_bounded():
    head = read_head(200, [("set-cookie", "a=1"), ("content-type", "text/html"), ("set-cookie", "b=2; Path=/")], NOW)
    assert head.set_cookies == ("a=1", "b=2; Path=/")
    many = read_head(200, [("set-cookie", f"c{i}=1") for i in range(MAX_SET_COOKIES + 5)], NOW)
    assert len(many.set_cookies) == MAX_SET_COOKIES and "set_cookie" in many.reasons
    assert read_head(200, [], NOW).set_cookies == ()


# --- config -------------------------------------------------------------------------------


def test_cookies_are_off_by_default_and_a_site_block_turns_them_on():
    from peer.core.crawl.core import CrawlCore

    base = '[[peer]]\nid = "p1"\ndata_dir = "d"\n[crawl]\nseeds = ["http://a.example/"]\n'
    assert CrawlCore(parse_config(base, "c.toml"), "p1").cookies is None  # the default path: no jar
    core = CrawlCore(parse_config(base + '[[site]]\nhosts = ["a.example"]\ncookies = true\n', "c.toml"), "p1")
    assert core.cookies is not None
    assert core.cookies.enabled("a.example") and not core.cookies.enabled("b.example")
    lines = core.sites.describe("a.example")
    assert "  cookies on: kept and sent back (site[0]: a.example)" in lines
    assert "  cookies off (default)" in core.sites.describe("b.example")


@pytest.mark.parametrize("text, key", [
    ('[crawl]\ncookies = true\nheaders = { Cookie = "a=1" }\n', "crawl.headers.Cookie"),
    ('[[site]]\nhosts = ["a.example"]\ncookies = true\nheaders = { cookie = "a=1" }\n', "site[0].headers.cookie"),
    ('[crawl]\nheaders = { Cookie = "a=1" }\n[[site]]\nhosts = ["a.example"]\ncookies = true\n', "crawl.headers.Cookie"),
])
def test_a_static_cookie_header_where_the_jar_writes_one_is_a_config_error(text, key):
    from peer.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        parse_config('[[peer]]\nid = "p1"\ndata_dir = "d"\n' + text, "c.toml")
    assert err.value.key == key and "Cookie" in str(err.value)
    # With the jar off for those hosts, a static Cookie is theirs to send.
    parse_config('[[peer]]\nid = "p1"\ndata_dir = "d"\n[crawl]\nheaders = { Cookie = "a=1" }\n'
                 '[[site]]\nhosts = ["b.example"]\ncookies = false\n', "c.toml")
