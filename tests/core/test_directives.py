"""peer.core.page.directives: robots directives, canonical links and meta refresh, as servers write them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from peer.core.page.directives import (MAX_FIELD, MAX_FIELDS, link_canonical, refresh_url, robots_rules,
                                  x_robots_tag)

# -- rule 1: the directives of a robots meta tag ----------------------------------------


@pytest.mark.parametrize(("content", "rules"), [
    ("noindex", (True, False)),
    ("NOINDEX, NOFOLLOW", (True, True)),
    ("nofollow", (False, True)),
    ("none", (True, True)),
    ("noindex,nofollow", (True, True)),
    ("  noindex  ,  follow ", (True, False)),
    ("index, follow", (False, False)),
    ("all", (False, False)),
    ("noarchive, nosnippet, max-snippet:-1", (False, False)),
    ("noindex nofollow", (True, True)),  # spaces for commas: common, and meant the same
    ("noindexing", (False, False)),
    ("", (False, False)),
])
def test_robots_meta_content(content, rules):
    assert robots_rules(content) == rules


# -- rule 2: X-Robots-Tag and its user-agent scope -----------------------------------------


@pytest.mark.parametrize(("values", "rules"), [
    (["noindex"], (True, False)),
    (["noindex", "nofollow"], (True, True)),  # several fields add up
    (["noindex, nofollow"], (True, True)),
    (["NoFollow"], (False, True)),
    (["none"], (True, True)),
    (["otherbot: noindex"], (False, False)),  # for another crawler only
    (["otherbot: noindex, nofollow"], (False, False)),  # the agent scopes the rest of the value
    (["ringcrawl: nofollow"], (False, True)),
    (["RingCrawl: noindex"], (True, False)),  # agent names are case-insensitive
    (["otherbot: noindex", "ringcrawl: nofollow"], (False, True)),  # Google's example, our side
    (["otherbot: noindex, ringcrawl: nofollow"], (False, True)),  # a new agent ends the scope
    (["noindex, otherbot: nofollow"], (True, False)),
    (["ringcrawl:noindex"], (True, False)),
    # unavailable_after's date (RFC 850 has a comma in it) and max-snippet's
    # number are values, never agents or rules.
    (["unavailable_after: 25 Jun 2010 15:00:00 PST"], (False, False)),
    (["unavailable_after: Friday, 25-Jun-2010 15:00:00 GMT"], (False, False)),
    (["max-snippet: 20, noindex"], (True, False)),
    (["ringcrawl: unavailable_after: 25 Jun 2010 15:00:00 PST"], (False, False)),
    (["otherbot: unavailable_after: 25 Jun 2010, nofollow"], (False, False)),
    (["noimageindex, noarchive"], (False, False)),
    ([""], (False, False)),
    ([":::, ,,, :"], (False, False)),
])
def test_x_robots_tag(values, rules):
    assert x_robots_tag(values, "ringcrawl") == rules


def test_x_robots_tag_without_a_product_token_obeys_only_unscoped_rules():
    assert x_robots_tag(["ringcrawl: noindex", "nofollow"], "") == (False, True)


def test_x_robots_tag_reads_at_most_max_fields_fields_of_max_field_characters():
    assert x_robots_tag(["all"] * MAX_FIELDS + ["noindex"], "ringcrawl") == (False, False)
    assert x_robots_tag([" " * MAX_FIELD + "noindex"], "ringcrawl") == (False, False)


@given(st.lists(st.text(max_size=200), max_size=20), st.text(max_size=20))
def test_x_robots_tag_never_raises(values, token):
    assert x_robots_tag(values, token) in {(a, b) for a in (False, True) for b in (False, True)}


# -- rule 3: the Link header's canonical ---------------------------------------------------


@pytest.mark.parametrize(("values", "target"), [
    (['<https://example.com/page>; rel="canonical"'], "https://example.com/page"),
    (["</p>; rel=canonical"], "/p"),
    (['<a.css>; rel=preload; as="style", </c>; rel="canonical"'], "/c"),
    (['</style.css>; rel=preload', '</c>; REL="Canonical"'], "/c"),
    (['</c>; rel="alternate canonical"'], "/c"),  # rel is a list of types
    (['</x,y>; rel="canonical"'], "/x,y"),  # a comma inside <...> is the URI's
    (['</a>; title="a, b; rel=canonical", </b>; rel=canonical'], "/b"),  # quoted: a title's text
    (['</a>; rel="canonical"; anchor="#other"'], None),  # about another resource (RFC 8288 §3.2)
    (['</a>; rel="canonicalish"'], None),
    (['</a>; rel="next"'], None),
    (["<>; rel=canonical"], None),
    (["</a\x01b>; rel=canonical"], None),
    (["no brackets; rel=canonical"], None),
    (["</a; rel=canonical"], None),
    ([], None),
])
def test_link_canonical(values, target):
    assert link_canonical(values) == target


def test_link_canonical_is_the_first_and_capped():
    assert link_canonical(['</1>; rel=canonical, </2>; rel=canonical']) == "/1"
    assert link_canonical(["<https://a.test/" + "x" * 9000 + ">; rel=canonical"]) is None


@given(st.lists(st.text(alphabet='<>;,="\\ relcanoi/x', max_size=200), max_size=5))
def test_link_canonical_never_raises(values):
    target = link_canonical(values)
    assert target is None or isinstance(target, str)


# -- rule 4: meta refresh ------------------------------------------------------------------


@pytest.mark.parametrize(("content", "url"), [
    ("5; url=/next", "/next"),
    ("0;URL='/next'", "/next"),
    ('0; url="/next page"', "/next page"),
    ("0 ; URL = /next", "/next"),
    ("0,url=/next", "/next"),
    ("  3.5  ;  Url  =  'http://a.test/x' trailing", "http://a.test/x"),
    ("0; /next", "/next"),  # the URL without its "url="
    ("0; urlfoo", "urlfoo"),  # "url" not followed by "=" is the URL itself
    (".5; url=/n", "/n"),
    ("0 /next", "/next"),
    ("5", None),  # a reload of the page itself: no link
    ("5;", None),
    ("5; url=", None),
    ("; url=/x", None),  # no time: not a refresh
    ("x; url=/x", None),
    ("5x; url=/x", None),
    ("", None),
])
def test_refresh_url(content, url):
    assert refresh_url(content) == url


@given(st.text(max_size=100))
def test_refresh_url_never_raises(content):
    assert refresh_url(content) is None or isinstance(refresh_url(content), str)
