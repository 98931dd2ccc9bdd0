"""peer.core.urls.normalize: normalisation rules, link joining, host key; and the scope by host (peer.core.urls.scope)."""

import dataclasses

import idna
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from peer.errors import URLError
from peer.core.urls.normalize import MAX_URL_LENGTH, host_key, hostname, join, normalize, normalize_link, path_repeats
from peer.core.urls.scope import Scope

# --------------------------------------------------------------------------
# normalize: one row per rule

NORMALIZE = [
    # case of scheme and host; the path keeps its case
    ("HTTP://Example.COM/Path", "http://example.com/Path"),
    ("hTtPs://WWW.Example.com/", "https://www.example.com/"),
    # IDNA
    ("http://Bücher.example/", "http://xn--bcher-kva.example/"),
    ("http://bücher.example/", "http://xn--bcher-kva.example/"),
    ("http://пример.испытание/", "http://xn--e1afmkfd.xn--80akhbyknj4f/"),
    ("http://xn--bcher-kva.example/", "http://xn--bcher-kva.example/"),
    ("http://a_b.Bücher.example/", "http://a_b.xn--bcher-kva.example/"),
    ("http://ｅｘａｍｐｌｅ.com/", "http://example.com/"),  # UTS #46 width mapping
    ("http://example。com/", "http://example.com/"),  # ideographic full stop
    ("http://ß.de/", "http://xn--zca.de/"),  # non-transitional, as browsers
    # default ports, empty port, leading zeros
    ("http://example.com:80/", "http://example.com/"),
    ("https://example.com:443/", "https://example.com/"),
    ("http://example.com:443/", "http://example.com:443/"),
    ("https://example.com:80/", "https://example.com:80/"),
    ("http://example.com:8080/", "http://example.com:8080/"),
    ("http://example.com:/", "http://example.com/"),
    ("http://example.com:0080/", "http://example.com/"),
    ("http://example.com:08080/", "http://example.com:8080/"),
    # fragment
    ("http://example.com/a#frag", "http://example.com/a"),
    ("http://example.com/a?q=1#frag", "http://example.com/a?q=1"),
    ("http://example.com/a#", "http://example.com/a"),
    # dot segments (RFC 3986 §5.2.4 and its example)
    ("http://example.com/a/./b/../c", "http://example.com/a/c"),
    ("http://example.com/a/b/c/./../../g", "http://example.com/a/g"),
    ("http://example.com/../a", "http://example.com/a"),
    ("http://example.com/a/..", "http://example.com/"),
    ("http://example.com/a/b/.", "http://example.com/a/b/"),
    ("http://example.com/a/%2e%2E/b", "http://example.com/b"),
    ("http://example.com/a/.%2e/b", "http://example.com/b"),
    ("http://example.com/.hidden/..x", "http://example.com/.hidden/..x"),
    ("http://example.com//a//b", "http://example.com//a//b"),
    # percent-encoding
    ("http://example.com/%7e", "http://example.com/~"),
    ("http://example.com/%7Euser", "http://example.com/~user"),
    ("http://example.com/%41%62%2D%5f%30", "http://example.com/Ab-_0"),
    ("http://example.com/a%2fb", "http://example.com/a%2Fb"),
    ("http://example.com/a%2Fb", "http://example.com/a%2Fb"),
    ("http://example.com/%3b%3D%40", "http://example.com/%3B%3D%40"),
    ("http://example.com/%e4", "http://example.com/%E4"),
    ("http://example.com/a b", "http://example.com/a%20b"),
    ("http://example.com/ä", "http://example.com/%C3%A4"),
    ("http://example.com/😀", "http://example.com/%F0%9F%98%80"),
    ("http://example.com/100%", "http://example.com/100%25"),
    ("http://example.com/%zz%4", "http://example.com/%25zz%254"),
    ('http://example.com/a|b"<>`{}^[]', "http://example.com/a%7Cb%22%3C%3E%60%7B%7D%5E%5B%5D"),
    ("http://example.com/a\x00b\x7f", "http://example.com/a%00b%7F"),
    ("http://example.com/!$&'()*+,;=:@", "http://example.com/!$&'()*+,;=:@"),
    # query: order and '+' kept, only percent-encoding normalised
    ("http://example.com/?b=2&a=1", "http://example.com/?b=2&a=1"),
    ("http://example.com/?a=%7e&b=%2f&c=a+b", "http://example.com/?a=~&b=%2F&c=a+b"),
    ("http://example.com/?q=a b", "http://example.com/?q=a%20b"),
    ("http://example.com/?q=ä", "http://example.com/?q=%C3%A4"),
    ("http://example.com/p?x=/y?z", "http://example.com/p?x=/y?z"),
    ("http://example.com/p?x=/../y", "http://example.com/p?x=/../y"),
    ("http://example.com/?", "http://example.com/"),
    # empty path
    ("http://example.com", "http://example.com/"),
    ("http://example.com?x", "http://example.com/?x"),
    ("http://example.com#x", "http://example.com/"),
    # userinfo is dropped; the host is after the last '@'
    ("http://user:pw@example.com/", "http://example.com/"),
    ("http://example.com@evil.test/", "http://evil.test/"),
    ("http://a@b@example.com:81/", "http://example.com:81/"),
    # trailing dot of the host
    ("http://example.com./", "http://example.com/"),
    # IP literals
    ("http://127.0.0.1:80/", "http://127.0.0.1/"),
    ("http://[::1]:8080/", "http://[::1]:8080/"),
    ("http://[2001:DB8:0:0:0:0:0:1]/", "http://[2001:db8::1]/"),
    ("https://[::1]:443/", "https://[::1]/"),
    # whitespace and backslashes as browsers treat them
    ("  http://example.com/a\tb\n  ", "http://example.com/ab"),
    ("\x00http://example.com/\x1f", "http://example.com/"),
    ("http:\\\\example.com\\a\\b", "http://example.com/a/b"),
    ("http://example.com/a?b\\c", "http://example.com/a?b%5Cc"),
    # underscore and hyphen in names
    ("http://a_b.my-host.example/", "http://a_b.my-host.example/"),
]


@pytest.mark.parametrize(("url", "expected"), NORMALIZE)
def test_normalize(url, expected):
    assert normalize(url) == expected
    assert normalize(expected) == expected


REJECT = [
    "mailto:a@b.example",
    "javascript:alert(1)",
    "JavaScript:void(0)",
    "data:text/html,<p>x",
    "tel:+441234",
    "ftp://example.com/",
    "file:///etc/passwd",
    "ws://example.com/",
    "",
    "   ",
    "example.com/x",
    "/x",
    "//example.com/x",
    "http://",
    "http:///x",
    "http:x",
    "http://:80/",
    "http://user@/",
    "http://example.com:99999/",
    "http://example.com:0/",
    "http://example.com:+80/",
    "http://example.com:8o/",
    "http://example.com:\u00b2/",
    "http://example.com:80:80/",
    "http://exa mple.com/",
    "http://.example.com/",
    "http://a..b/",
    "http://ex%41mple.com/",
    "http://bad\u2100.example/",  # NFKC turns it into "a/c"
    "http://\u2603.example/",  # symbol labels: IDNA2008 refuses them
    "http://-\u00fc.example/",
    "http://" + "a" * 64 + ".example/",
    "http://" + "abc." * 64 + "example/",
    "http://127.1/",
    "http://0x7f.0.0.1/",
    "http://2130706433/",
    "http://010.0.0.1/",
    "http://256.1.1.1/",
    "http://1.2.3.4.5/",
    "http://[fe80::1%25eth0]/",
    "http://[::1/",
    "http://[::1]x/",
    "http://[v1.x]/",
    "http://[1.2.3.4]/",
    "http://example.com/\ud800",
    "http://example.com/" + "a" * MAX_URL_LENGTH,
    "http://example.com/" + "ä" * (MAX_URL_LENGTH // 6),  # grows past the limit when encoded
]


@pytest.mark.parametrize("url", REJECT)
def test_normalize_rejects(url):
    with pytest.raises(URLError):
        normalize(url)


@pytest.mark.parametrize("value", [None, 42, b"http://example.com/", ["http://example.com/"]])
def test_non_strings_raise_url_error(value):
    with pytest.raises(URLError, match="not a string"):
        normalize(value)
    with pytest.raises(URLError):
        join("http://example.com/", value)
    with pytest.raises(URLError):
        host_key(value)


def test_rejection_reasons_are_short_and_specific():
    with pytest.raises(URLError, match="scheme 'mailto'"):
        normalize("mailto:x@y.example")
    with pytest.raises(URLError, match="no host"):
        normalize("http:///x")
    with pytest.raises(URLError, match="bad port"):
        normalize("http://x.example:65536/")
    with pytest.raises(URLError, match="too long"):
        normalize("http://x.example/" + "a" * MAX_URL_LENGTH)
    with pytest.raises(URLError, match="IPv4"):
        normalize("http://127.1/")


def test_the_longest_url_accepted_is_max_url_length():
    head = "http://x.example/"
    assert len(normalize(head + "a" * (MAX_URL_LENGTH - len(head)))) == MAX_URL_LENGTH
    with pytest.raises(URLError):
        normalize(head + "a" * (MAX_URL_LENGTH - len(head) + 1))


# --------------------------------------------------------------------------
# join: RFC 3986 §5.4 examples (fragments dropped, host normalised) + browser forms

RFC_BASE = "http://a/b/c/d;p?q"
RFC_JOIN = [
    ("g", "http://a/b/c/g"),
    ("./g", "http://a/b/c/g"),
    ("g/", "http://a/b/c/g/"),
    ("/g", "http://a/g"),
    ("//g", "http://g/"),
    ("?y", "http://a/b/c/d;p?y"),
    ("g?y", "http://a/b/c/g?y"),
    ("#s", "http://a/b/c/d;p?q"),
    ("g#s", "http://a/b/c/g"),
    ("g?y#s", "http://a/b/c/g?y"),
    (";x", "http://a/b/c/;x"),
    ("g;x", "http://a/b/c/g;x"),
    ("g;x?y#s", "http://a/b/c/g;x?y"),
    ("", "http://a/b/c/d;p?q"),
    (".", "http://a/b/c/"),
    ("./", "http://a/b/c/"),
    ("..", "http://a/b/"),
    ("../", "http://a/b/"),
    ("../g", "http://a/b/g"),
    ("../..", "http://a/"),
    ("../../", "http://a/"),
    ("../../g", "http://a/g"),
    # §5.4.2 abnormal examples
    ("../../../g", "http://a/g"),
    ("../../../../g", "http://a/g"),
    ("/./g", "http://a/g"),
    ("/../g", "http://a/g"),
    ("g.", "http://a/b/c/g."),
    (".g", "http://a/b/c/.g"),
    ("g..", "http://a/b/c/g.."),
    ("..g", "http://a/b/c/..g"),
    ("./../g", "http://a/b/g"),
    ("./g/.", "http://a/b/c/g/"),
    ("g/./h", "http://a/b/c/g/h"),
    ("g/../h", "http://a/b/c/h"),
    ("g;x=1/./y", "http://a/b/c/g;x=1/y"),
    ("g;x=1/../y", "http://a/b/c/y"),
    ("g?y/./x", "http://a/b/c/g?y/./x"),
    ("g?y/../x", "http://a/b/c/g?y/../x"),
    ("g#s/./x", "http://a/b/c/g"),
    ("g#s/../x", "http://a/b/c/g"),
    ("http:g", "http://a/b/c/g"),  # the non-strict reading, as browsers do
]


@pytest.mark.parametrize(("href", "expected"), RFC_JOIN)
def test_join_rfc3986_examples(href, expected):
    assert join(RFC_BASE, href) == expected


BASE = "https://www.example.com/dir/page.html?x=1"
JOIN = [
    ("other.html", "https://www.example.com/dir/other.html"),
    ("../up.html", "https://www.example.com/up.html"),
    ("/abs?b=2&a=1", "https://www.example.com/abs?b=2&a=1"),
    ("//cdn.example.net/lib.js", "https://cdn.example.net/lib.js"),
    ("http://Other.Example:80/x#y", "http://other.example/x"),
    ("HTTPS://www.example.com:443/z", "https://www.example.com/z"),
    ("?page=2", "https://www.example.com/dir/page.html?page=2"),
    ("#section", "https://www.example.com/dir/page.html?x=1"),
    ("", "https://www.example.com/dir/page.html?x=1"),
    ("  \n/ws\t.html  ", "https://www.example.com/ws.html"),
    ("a b/c d", "https://www.example.com/dir/a%20b/c%20d"),
    ("%7euser/", "https://www.example.com/dir/~user/"),
    ("\\\\evil.example\\x", "https://evil.example/x"),
    ("https:/rooted", "https://www.example.com/rooted"),
    ("//user:pw@cdn.example.net:443/", "https://cdn.example.net/"),
]


@pytest.mark.parametrize(("href", "expected"), JOIN)
def test_join_link_forms(href, expected):
    assert join(BASE, href) == expected
    assert normalize_link(BASE, href) == expected


def test_join_against_a_base_element_directory():
    # <base href="http://a.example/docs/"> makes links relative to the directory
    assert join("http://a.example/docs/", "intro.html") == "http://a.example/docs/intro.html"
    assert join("http://a.example/docs", "intro.html") == "http://a.example/intro.html"


def test_join_keeps_the_base_paths_escapes():
    # yarl's join decodes the base path here; a separate resource would be lost
    assert join("http://a.example/x%2Fy/z", "w") == "http://a.example/x%2Fy/w"
    assert join("http://a.example/x%3By/z", "../w") == "http://a.example/w"


def test_join_normalises_a_base_that_is_not_normal():
    assert join("HTTP://A.Example:80/b/c", "d") == "http://a.example/b/d"


NOT_CRAWLABLE = [
    "mailto:someone@example.com",
    "javascript:void(0)",
    "  javascript:alert(1)",
    "tel:+123",
    "data:image/png;base64,AAAA",
    "ftp://example.com/file",
    "http:foo",  # another scheme than the base's, without a host
    "///triple",
    "//:80/",
    "http://127.1/",
]


@pytest.mark.parametrize("href", NOT_CRAWLABLE)
def test_join_rejects_and_normalize_link_returns_none(href):
    with pytest.raises(URLError):
        join(BASE, href)
    assert normalize_link(BASE, href) is None


def test_join_rejects_a_bad_base():
    with pytest.raises(URLError):
        join("mailto:x@y.example", "a")
    assert normalize_link("/relative", "a") is None


# --------------------------------------------------------------------------
# host_key

HOST_KEYS = [
    ("http://example.com/", "example.com"),
    ("http://Example.COM:80/x", "example.com"),
    ("https://example.com:443/", "example.com"),
    ("https://example.com:80/", "example.com:80"),
    ("http://example.com:8080/a?b", "example.com:8080"),
    ("http://[::1]:8080/", "[::1]:8080"),
    ("http://Bücher.example/", "xn--bcher-kva.example"),
    ("http://u:p@x.example/", "x.example"),
    ("http://x.example", "x.example"),
    ("http://x.example?a=/b", "x.example"),
    ("http://x.\texample/", "x.example"),
    ("http://x.example\\y/", "x.example"),
    ("  http://x.example./", "x.example"),
]


@pytest.mark.parametrize(("url", "key"), HOST_KEYS)
def test_host_key(url, key):
    assert host_key(url) == key
    assert host_key(normalize(url)) == key


@pytest.mark.parametrize("url", ["mailto:x@y.example", "http:///x", "garbage", "http://127.1/"])
def test_host_key_rejects(url):
    with pytest.raises(URLError):
        host_key(url)


def test_hostname_strips_port_and_brackets():
    assert hostname("Example.com:8080") == "example.com"
    assert hostname("example.com") == "example.com"
    assert hostname("[::1]:8080") == "::1"
    assert hostname("::1") == "::1"


# --------------------------------------------------------------------------
# Scope


def test_glob_matches_subdomains_but_not_the_apex():
    s = Scope(["*.web.test"], [])
    assert s.allows("http://s001.web.test:8080/")
    assert s.allows("http://a.b.web.test/")
    assert not s.allows("http://web.test/")
    assert not s.allows("http://xweb.test/")
    assert not s.allows("http://s001.web.test.evil.example/")
    assert Scope(["*.web.test", "web.test"]).allows("http://web.test/")


def test_patterns_are_case_insensitive_and_ignore_the_port():
    s = Scope(["*.WEB.Test"], [])
    assert s.allows("http://S001.web.TEST:9999/")
    assert s.allows_host("s002.web.test:8080")
    assert s.allows_host("S003.WEB.TEST")


def test_deny_wins_over_allow():
    s = Scope(["*.web.test"], ["s00?.web.test", "*.private.web.test"])
    assert not s.allows("http://s001.web.test/")
    assert not s.allows("http://x.private.web.test/")
    assert s.allows("http://s010.web.test/")


def test_max_depth():
    s = Scope(["*"], [], max_depth=2)
    assert s.allows("http://x.example/", 0)
    assert s.allows("http://x.example/", 2)
    assert not s.allows("http://x.example/", 3)
    unlimited = Scope(["*"], [], max_depth=0)
    assert unlimited.allows("http://x.example/", 10**6)


def test_empty_allow_list_allows_nothing():
    assert not Scope([], []).allows("http://x.example/")


def test_from_seeds_fills_an_empty_allow_list_with_the_seeds_hosts():
    s = Scope.from_seeds(["http://S001.web.test:8080/", "https://other.example/a"], [], [], 3)
    assert s.allow_hosts == ("s001.web.test", "other.example")
    assert s.max_depth == 3
    assert s.allows("http://s001.web.test:8080/x", 1)
    assert s.allows("http://other.example/b")
    assert not s.allows("http://s002.web.test:8080/")
    given_allow = Scope.from_seeds(["http://s001.web.test/"], ["*.web.test"], ["s009.web.test"])
    assert given_allow.allow_hosts == ("*.web.test",)
    assert given_allow.allows("http://s002.web.test/")
    assert not given_allow.allows("http://s009.web.test/")


def test_from_seeds_ipv6_seed_is_an_exact_name():
    s = Scope.from_seeds(["http://[::1]:8080/"])
    assert s.allows("http://[::1]:8080/x")
    assert not s.allows("http://[::2]:8080/x")


def test_scope_rejects_non_crawlable_urls():
    s = Scope(["*"], [])
    assert not s.allows("mailto:x@y.example")
    assert not s.allows("garbage")


def test_unicode_pattern_matches_the_idna_host():
    assert Scope(["Bücher.example"], []).allows("http://bücher.example/")


@pytest.mark.parametrize("bad", [["s001.web.test:8080"], [""], "*.web.test", [42]])
def test_bad_patterns_raise(bad):
    with pytest.raises(URLError):
        Scope(bad, [])


def test_bad_max_depth_raises():
    with pytest.raises(URLError):
        Scope(["*"], [], max_depth=-1)


def test_scope_is_frozen_and_hashable():
    s = Scope(["*.web.test"], ["x.web.test"], 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.max_depth = 3  # type: ignore[misc]
    assert s == Scope(("*.web.test",), ("x.web.test",), 2)
    assert hash(s) == hash(Scope(["*.web.test"], ["x.web.test"], 2))


def test_scope_verdicts_do_not_depend_on_the_memo():
    s = Scope(["*.web.test"], ["bad.web.test"])
    for _ in range(2):  # second pass answers from the memo
        assert s.allows_host("ok.web.test") is True
        assert s.allows_host("bad.web.test") is False
        assert s.allows_host("x.example") is False


# --------------------------------------------------------------------------
# properties

LABEL = st.from_regex(r"[a-zA-Z0-9_][a-zA-Z0-9_\-]{0,9}", fullmatch=True)
ASCII_HOST = st.lists(LABEL, min_size=1, max_size=4).map(".".join).filter(
    lambda h: not h.rsplit(".", 1)[-1].isdigit()
)
UNICODE_HOST = st.sampled_from(
    ["Bücher.example", "пример.рф", "例え.テスト", "MÜNCHEN.de", "straße.de"]
)
IPV4 = st.tuples(*[st.integers(0, 255)] * 4).map(lambda t: ".".join(map(str, t)))
IPV6 = st.ip_addresses(v=6).map(lambda a: f"[{a.exploded.upper()}]")
HOST = st.one_of(ASCII_HOST, UNICODE_HOST, IPV4, IPV6)
PORT = st.one_of(
    st.none(), st.just(""), st.sampled_from(["80", "443"]), st.integers(1, 65535).map(str)
)
PIECE = st.lists(
    st.one_of(
        st.sampled_from(list("abcXYZ019-._~!$&'()*+,;=:@/?%") + ["%2f", "%7E", "%41", "%e4", ".."]),
        st.characters(codec="utf-8", exclude_characters="#"),
    ),
    max_size=20,
).map("".join)


@st.composite
def structured_urls(draw):
    scheme = draw(st.sampled_from(["http", "https", "HTTP", "hTTps"]))
    host = draw(HOST)
    port = draw(PORT)
    user = draw(st.sampled_from(["", "user@", "u:p@"]))
    path = "/".join(draw(st.lists(PIECE, max_size=5)))
    query = draw(st.one_of(st.none(), PIECE))
    frag = draw(st.one_of(st.none(), PIECE))
    url = f"{scheme}://{user}{host}" + (f":{port}" if port is not None else "") + "/" + path
    if query is not None:
        url += "?" + query
    if frag is not None:
        url += "#" + frag
    return url, scheme.lower(), host, port


def expected_key(scheme, host, port):
    if host.startswith("["):
        import ipaddress

        name = f"[{ipaddress.IPv6Address(host[1:-1]).compressed}]"
    elif host.isascii():
        name = host.lower()
    else:
        name = idna.encode(host, uts46=True).decode("ascii")
    if port and int(port) != {"http": 80, "https": 443}[scheme]:
        return f"{name}:{int(port)}"
    return name


@settings(max_examples=400, deadline=None)
@given(structured_urls())
def test_normalize_is_idempotent_and_keys_the_host(case):
    url, scheme, host, port = case
    try:
        n = normalize(url)
    except URLError:
        return
    assert normalize(n) == n
    assert n.isascii() and n.startswith(scheme + "://")
    assert not any(c in n for c in " \t\n#\\")
    assert host_key(n) == expected_key(scheme, host, port)
    assert host_key(url) == host_key(n)
    assert join("http://base.example/a/b", url) == n


def test_structured_urls_mostly_succeed():
    # Guards the property above: it must check idempotence on real URLs.
    ok = 0
    for i in range(200):
        url = f"http://Host{i}.Example:{8000 + i}/a b/%7e/../c?q={i}&%2f#f"
        n = normalize(url)
        assert normalize(n) == n
        ok += 1
    assert ok == 200


GARBAGE = st.one_of(
    st.text(),
    st.binary().map(lambda b: b.decode("latin-1")),
    st.text().map(lambda t: "http://" + t),
    st.text().map(lambda t: "https://x.example/" + t),
    st.lists(
        st.sampled_from(list(":/?#[]@%.\\ \t\x00hxtp") + ["http://", "%2", "::", "[::1]"])
    ).map("".join),
)


@settings(max_examples=500, deadline=None)
@given(GARBAGE)
def test_garbage_raises_only_url_error_and_normal_forms_are_fixed_points(text):
    try:
        n = normalize(text)
    except URLError:
        pass
    else:
        assert normalize(n) == n
    try:
        host_key(text)
    except URLError:
        pass
    try:
        j = join("http://base.example/a/b?c", text)
    except URLError:
        assert normalize_link("http://base.example/a/b?c", text) is None
    else:
        assert normalize(j) == j
        assert normalize_link("http://base.example/a/b?c", text) == j
    assert Scope(["*"], []).allows(text) in (True, False)


@pytest.mark.parametrize("pattern", ["http://x.test/", "a b.test", "user@x.test", "x.test/path"])
def test_url_like_host_patterns_are_refused(pattern):
    with pytest.raises(URLError, match="not a host name glob"):
        Scope((pattern,))


# --------------------------------------------------------------------------
# path_repeats: the trap rule's measure


@pytest.mark.parametrize(
    ("url", "n"),
    [
        ("http://a.test/", 0),
        ("http://a.test/x", 1),
        ("http://a.test/a/a", 2),
        ("http://a.test/a/a/a/", 3),  # the empty segment after the last / is not one
        ("http://a.test/a/a/a/a/page.html", 4),
        ("http://a.test/x/y/x/y/x/y/", 3),  # a repeated pair repeats both segments
        ("http://a.test/a/b/c/a/b/c/a/b/c/", 3),  # any period
        ("http://a.test/c/2024/01/01/", 2),
        ("http://a.test/x/?a/a/a/a/a", 1),  # the query is not the path
        ("http://a.test:8080/p/p/p", 3),
        ("http://a.test////", 3),  # empty segments count (a // loop)
    ],
)
def test_path_repeats(url, n):
    assert path_repeats(normalize(url)) == n
