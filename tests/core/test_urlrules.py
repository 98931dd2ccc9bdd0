"""peer.core.urls.rules: include/exclude rules, skipped extensions, parameter rules (pure)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from peer.core.urls.rules import (
    DEFAULT_SKIP_EXTENSIONS,
    DEFAULT_STRIP_PARAMS,
    Cause,
    ParamRules,
    UrlRules,
    parse_url_rules,
)
from peer.core.urls.normalize import join, normalize, normalize_link
from peer.errors import ConfigError

SITE = "http://site.test"


def rules(*texts: str, skip: tuple[str, ...] = (), strip: tuple[str, ...] = (),
          sort: bool = False) -> UrlRules:
    crawl = SimpleNamespace(rules=texts, skip_extensions=skip, strip_params=strip, sort_query=sort)
    return parse_url_rules(crawl, "cluster.toml")  # type: ignore[arg-type]


DEFAULTS = rules(skip=DEFAULT_SKIP_EXTENSIONS, strip=DEFAULT_STRIP_PARAMS)
PARAMS = DEFAULTS.params


# --- include and exclude rules ---------------------------------------------------


def test_the_first_matching_rule_decides():
    r = rules("exclude:*/library/search*", "include:*/library/*")
    assert r.excluded(f"{SITE}/library/search?q=x") is Cause.RULE
    assert r.excluded(f"{SITE}/library/book/1") is None
    j = r.judge(f"{SITE}/library/search?q=x")
    assert (j.rule.index, j.why()) == (0, "excluded by crawl.rules[0] '*/library/search*'")
    assert r.judge(f"{SITE}/library/a").why() == "included by crawl.rules[1] '*/library/*'"
    # The same two rules the other way round: the include wins for both.
    swapped = rules("include:*/library/*", "exclude:*/library/search*")
    assert swapped.excluded(f"{SITE}/library/search?q=x") is None


def test_a_glob_matches_the_whole_url_with_star_crossing_slashes_and_case():
    r = rules("exclude:*/private/*")
    assert r.excluded(f"{SITE}/a/b/private/c/d.html") is Cause.RULE
    assert r.excluded(f"{SITE}/a/Private/c") is None  # paths are case-sensitive (RFC 3986 §6.2.2.1)
    assert rules("exclude:/private/*").excluded(f"{SITE}/private/x") is None  # whole URL, not a search
    assert rules("exclude:http://site.test/?").excluded(f"{SITE}/a") is Cause.RULE  # ? is one character


def test_a_regex_is_searched_anchored_only_if_it_says_so():
    r = rules("exclude:re:[?&]q=")
    assert r.excluded(f"{SITE}/search?page=2&q=books") is Cause.RULE
    assert r.excluded(f"{SITE}/search?page=2&faq=1") is None
    assert r.judge(f"{SITE}/s?q=1").why() == "excluded by crawl.rules[0] 're:[?&]q='"
    anchored = rules("exclude:re:^https://")
    assert anchored.excluded("https://site.test/") is Cause.RULE
    assert anchored.excluded("http://site.test/https://") is None


def test_no_rule_matching_is_included_with_only_excludes_and_excluded_with_an_include():
    only_excludes = rules("exclude:*.cgi", "exclude:re:/tmp/")
    assert only_excludes.excluded(f"{SITE}/page") is None
    assert "no crawl.rules matches" in only_excludes.judge(f"{SITE}/page").why()
    with_include = rules("exclude:*.cgi", "include:*/docs/*")
    assert with_include.excluded(f"{SITE}/page") is Cause.RULE
    assert with_include.judge(f"{SITE}/page").why() == (
        "excluded by crawl.rules: no rule matches, and the list has include rules")
    assert rules().excluded(f"{SITE}/anything") is None and not rules()


def test_rule_mistakes_name_the_entry():
    for bad, key, words in [
        (("include:*", "exclude:re:[",), "crawl.rules[1]", "a valid regex"),
        (("allow:*/x/*",), "crawl.rules[0]", "'include:<glob>'"),
        (("*/x/*",), "crawl.rules[0]", "'exclude:<glob>'"),
        (("exclude:",), "crawl.rules[0]", "a pattern"),
        (("include:re:",), "crawl.rules[0]", "a pattern"),
    ]:
        with pytest.raises(ConfigError) as err:
            rules(*bad)
        assert err.value.key == key and words in err.value.message, err.value
    with pytest.raises(ConfigError) as err:
        rules(skip=("pdf", "a/b"))
    assert err.value.key == "crawl.skip_extensions[1]"
    with pytest.raises(ConfigError) as err:
        rules(strip=("utm_*", "a=b"))
    assert err.value.key == "crawl.strip_params[1]"


# --- skipped extensions --------------------------------------------------------------


@pytest.mark.parametrize("path, skipped", [
    ("/files/report.pdf", "pdf"),
    ("/files/REPORT.PDF", "pdf"),                 # case-insensitive
    ("/img/a.b.c.JpG", "jpg"),
    ("/files/report.pdf;jsessionid=1", "pdf"),   # path parameters are not the extension
    ("/dist/x-1.0.tar.gz", "gz"),
    ("/files/report.pdf/", None),                 # the last segment is empty
    ("/report.pdf.html", None),
    ("/download?file=report.pdf", None),          # the query is not the path
    ("/.zip", None),                              # a dotfile has no extension
    ("/blog/intro-to-node.js", None),             # js is not skipped: slugs end in it
    ("/c0/p1.html", None),
    ("/", None),
])
def test_default_extensions_are_matched_on_the_last_path_segment(path, skipped):
    url = normalize(SITE + path)
    assert DEFAULTS.skipped_extension(url) == skipped
    assert DEFAULTS.excluded(url) is (None if skipped is None else Cause.EXTENSION)


def test_configured_extensions_take_a_dot_any_case_or_two_parts():
    r = rules(skip=(".PDF", "tar.gz"))
    assert r.skipped_extension(f"{SITE}/a.pdf") == "pdf"
    assert r.skipped_extension(f"{SITE}/a-1.TAR.GZ") == "tar.gz"
    assert r.skipped_extension(f"{SITE}/a.gz") is None
    assert r.skipped_extension(f"{SITE}/a.png") is None
    assert r.judge(f"{SITE}/a.pdf").why() == "excluded by crawl.skip_extensions ('pdf')"
    assert not rules(skip=())  # empty: nothing skipped, no cost


def test_an_extension_is_skipped_before_any_rule_can_include_it():
    r = rules("include:*.pdf", skip=("pdf",))
    assert r.excluded(f"{SITE}/a.pdf") is Cause.EXTENSION


# --- parameters ------------------------------------------------------------------------


@pytest.mark.parametrize("raw, clean", [
    ("/p?utm_source=news&utm_medium=mail", "/p"),
    ("/p?id=3&utm_source=news&x=1", "/p?id=3&x=1"),                 # the rest keeps its order
    ("/p?UTM_Source=a&FBCLID=b&id=1", "/p?id=1"),                   # names are case-insensitive
    ("/p?%75tm_source=a&utm%5Fcampaign=b&id=1", "/p?id=1"),         # escaped unreserved names
    ("/p?fbclid=&gclid&id=1", "/p?id=1"),                           # empty values, no value at all
    ("/p?utm_source=a&id=1&utm_source=b", "/p?id=1"),               # repeated
    ("/p?id=1&utm_source=x#section", "/p?id=1"),                    # the fragment goes as before
    ("/p?utm_source=x#section", "/p"),
    ("/p;jsessionid=A1B2?id=1", "/p?id=1"),                         # the servlet path parameter
    ("/a;JSESSIONID=A1/b;v=2;phpsessid=x", "/a/b;v=2"),
    ("/p?sid=1&session=2", "/p?sid=1&session=2"),                   # not session ids by default
    ("/p?xutm_source=1&utm=2", "/p?xutm_source=1&utm=2"),           # whole names only
    ("/p?a=1&&b=2&utm_source=3", "/p?a=1&&b=2"),                    # only the stripped go
    ("/p?q=a%26utm_source%3Db", "/p?q=a%26utm_source%3Db"),         # escaped & and = are data
])
def test_parameters_are_stripped_by_name(raw, clean):
    assert normalize(SITE + raw, PARAMS) == SITE + clean
    assert normalize_link(f"{SITE}/dir/", raw, PARAMS) == SITE + clean
    assert join(f"{SITE}/dir/", raw, PARAMS) == SITE + clean
    assert PARAMS.clean(normalize(SITE + raw)) == SITE + clean


def test_removed_names_what_was_stripped():
    url = normalize(f"{SITE}/p;jsessionid=1?id=2&utm_source=x&fbclid=y")
    assert PARAMS.removed(url) == ["jsessionid", "utm_source", "fbclid"]
    assert PARAMS.removed(f"{SITE}/p?id=2") == []


def test_sorting_is_off_by_default_and_stable_by_name_when_on():
    assert normalize(f"{SITE}/p?b=1&a=2", PARAMS) == f"{SITE}/p?b=1&a=2"
    sort = rules(sort=True).params
    assert sort is not None and sort.strip == ()
    assert normalize(f"{SITE}/p?b=1&a=2&c", sort) == f"{SITE}/p?a=2&b=1&c"
    assert normalize(f"{SITE}/p?id=2&a=0&id=1", sort) == f"{SITE}/p?a=0&id=2&id=1"  # repeats keep order
    assert normalize(f"{SITE}/p?b=1&&a=2&", sort) == f"{SITE}/p?a=2&b=1"          # empty ones go
    both = rules(strip=("utm_*",), sort=True).params
    assert normalize(f"{SITE}/p?z=1&utm_id=2&a=3", both) == f"{SITE}/p?a=3&z=1"


def test_no_parameter_rules_is_no_params_object():
    assert rules().params is None
    assert DEFAULTS.params is not None and not ParamRules()


def test_the_name_memo_is_bounded():
    p = ParamRules(("utm_*",))
    for i in range(10_000):
        p.clean(f"{SITE}/p?n{i}=1")
    assert len(p._memo) <= 4096


# --- normalisation is unchanged when no parameter rule applies ------------------------

_NAMES = st.sampled_from(["id", "page", "q", "sort", "x", "utm", "sid", "Ä", "a%20b", "", "fb"])
_VALUES = st.sampled_from(["", "1", "a b", "%7e", "x/y", "?", "é", "%zz"])
_SEGMENTS = st.sampled_from(["a", "B", "..", ".", "%7Euser", "x;y=1", "p.html", "é", " ", ""])


@st.composite
def urls(draw) -> str:
    host = draw(st.sampled_from(["site.test", "SITE.test:80", "a.b.test:8080", "xn--bcher-kva.test"]))
    path = "/".join(draw(st.lists(_SEGMENTS, max_size=5)))
    params = draw(st.lists(st.tuples(_NAMES, _VALUES), max_size=5))
    query = "&".join(f"{n}={v}" if v else n for n, v in params)
    frag = draw(st.sampled_from(["", "#f", "#utm_source=x"]))
    return f"{draw(st.sampled_from(['http', 'HTTPS']))}://{host}/{path}" + (f"?{query}" if params else "") + frag


@settings(max_examples=400, deadline=None)
@given(urls())
def test_default_rules_change_nothing_for_urls_without_such_parameters(url):
    plain = normalize(url)
    assert normalize(url, PARAMS) == plain
    assert normalize_link(f"{SITE}/d/", url, PARAMS) == normalize_link(f"{SITE}/d/", url) == plain
    assert PARAMS.clean(plain) is plain


@settings(max_examples=400, deadline=None)
@given(urls(), st.sampled_from(["utm_source", "fbclid", "JSESSIONID", "_ga"]), st.booleans())
def test_clean_on_a_normalised_url_is_normalize_with_the_rules(url, name, sort):
    assume("#" not in url and url == url.strip())  # a trailing space is stripped only at the end
    params = rules(strip=DEFAULT_STRIP_PARAMS, sort=sort).params
    assert params is not None
    tracked = url + ("&" if "?" in url else "?") + f"{name}=TRACKED"
    once = normalize(tracked, params)
    assert params.clean(normalize(tracked)) == once
    assert params.clean(once) == once                      # idempotent
    assert "TRACKED" not in once
    if not sort:
        assert once == normalize(url, params)              # the tracked variant is the plain URL


def test_describe_is_one_line():
    text = rules("exclude:re:[?&]q=", "include:*/library/*", skip=("pdf",), strip=("utm_*",)).describe()
    assert text == ("rules: exclude 're:[?&]q=', include '*/library/*'; matching none: excluded; "
                    "extensions skipped: pdf; params stripped: utm_*")
    assert DEFAULTS.describe() == (f"rules: none; the default {len(DEFAULT_SKIP_EXTENSIONS)} extensions skipped; "
                                   f"params stripped: the default {len(DEFAULT_STRIP_PARAMS)} (utm_*, fbclid, gclid...)")
    assert rules("exclude:*.cgi", sort=True).describe() == (
        "rules: exclude '*.cgi'; matching none: included; extensions skipped: none; params stripped: none; "
        "query sorted")
