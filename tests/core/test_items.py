"""peer.core.page.items: extraction rules from cluster.toml, applied to the local shop."""

from __future__ import annotations

import re
import sys
import textwrap
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser
from localweb import SHOP_HOST, SiteGraph

from peer.core.config.cluster import parse_config
from peer.errors import ConfigError
from peer.core.page.items import (
    DEFAULT_TABLE,
    MAX_USER_ROWS,
    ExtractConfig,
    Field,
    Rule,
    columns_of,
    extract_items,
    parse_extract,
    raw_items,
)

MINIMAL = """
[[peer]]
id = "p1"
address = "tcp://127.0.0.1:5701"
"""

BOOK_RULE = """
[extract.book]
match = "*/product/*"
[extract.book.fields]
title   = "h1.title::text"
price   = ".price::text"
cover   = "img.cover::attr(src)"
authors = "a.author::text*"
blurb   = "p.blurb"
"""

PORT = 8080


def extract_cfg(toml: str) -> ExtractConfig:
    return parse_config(MINIMAL + textwrap.dedent(toml), "/etc/rc/cluster.toml").extract


def error_of(toml: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        extract_cfg(toml)
    return info.value


def run(cfg: ExtractConfig, url: str, html: str):
    return extract_items(cfg, url, html, LexborHTMLParser(html))


@pytest.fixture(scope="module")
def graph() -> SiteGraph:
    return SiteGraph(seed=3, hosts=2, pages_per_host=10, shop_products=25)


def shop_page(graph: SiteGraph, url: str) -> str:
    path = url.split(SHOP_HOST, 1)[1].split("/", 1)[1]
    page = graph.render(SHOP_HOST, "/" + path, PORT)
    assert page.status == 200 and page.content_type.startswith("text/html")
    return page.body.decode("utf-8")


# ---------------------------------------------------------------------------
# The shop


def test_every_product_page_gives_exactly_the_shops_items(graph):
    cfg = extract_cfg(BOOK_RULE)
    expected = graph.shop_items(PORT)
    assert len(expected) == 25
    for want in expected:
        html = shop_page(graph, want["url"])
        items, errors = run(cfg, want["url"], html)
        assert errors == []
        assert items == [("items_book", {k: v for k, v in want.items() if k != "url"})]


def test_shop_pages_that_are_not_products_give_no_row(graph):
    cfg = extract_cfg(BOOK_RULE)
    products = {d["url"] for d in graph.shop_items(PORT)}
    # Every shop page a crawler reaches from the index, minus the products.
    todo, seen = [f"http://{SHOP_HOST}:{PORT}/"], set()
    while todo:
        url = todo.pop()
        if url in seen or SHOP_HOST not in url or "/cart/" in url or "/img/" in url:
            continue
        seen.add(url)
        todo += [link.target for link in graph.links(url) if link.target]
    others = seen - products
    assert {u for u in others if "/category/" in u} and {u for u in others if "/author/" in u}
    assert products <= seen
    for url in sorted(others):
        assert run(cfg, url, shop_page(graph, url)) == ([], [])


def test_config_tables_give_columns_and_types():
    cfg = extract_cfg(BOOK_RULE)
    assert bool(cfg) and not bool(ExtractConfig())
    assert cfg.tables() == {"items_book": (
        ("title", "VARCHAR"), ("price", "VARCHAR"), ("cover", "VARCHAR"),
        ("authors", "VARCHAR[]"), ("blurb", "VARCHAR"))}
    rule = cfg.rules[0]
    assert rule.table == "items_book"
    assert rule.fields[2] == Field("cover", "img.cover", "src", False)
    assert rule.fields[3] == Field("authors", "a.author", None, True)
    assert rule.fields[4] == Field("blurb", "p.blurb", None, False)


def test_no_extract_table_means_no_rules():
    cfg = parse_config(MINIMAL)
    assert cfg.extract == ExtractConfig() and not cfg.extract
    assert extract_items(cfg.extract, "http://a.test/", "<p>x</p>") == ([], [])


# ---------------------------------------------------------------------------
# Matching


def test_glob_matches_the_whole_url_case_sensitively():
    rule = Rule("r", "http://*.test/product/*", (Field("t", "h1"),))
    assert rule.matches("http://shop.test/product/x.html")
    assert rule.matches("http://a.b.test/product/")
    assert not rule.matches("http://shop.test/Product/x.html")
    assert not rule.matches("https://shop.test/product/x.html")
    assert not Rule("r", "*/product/", (Field("t", "h1"),)).matches("http://a.test/product/x")


def test_regex_match_is_a_search():
    cfg = extract_cfg("""
        [extract.item]
        match = 're:/p/[0-9]+\\.html$'
        fields = { name = "h1" }
    """)
    html = "<h1>  Hello\n  <b>world</b> </h1>"
    assert run(cfg, "http://a.test/x/p/12.html", html) == ([("items_item", {"name": "Hello world"})], [])
    assert run(cfg, "http://a.test/x/p/12.html?x=1", html) == ([], [])
    assert run(cfg, "http://a.test/x/p/ab.html", html) == ([], [])


def test_several_rules_each_give_a_row_in_config_order():
    cfg = extract_cfg("""
        [extract.b]
        match = "*"
        fields = { h = "h1" }
        [extract.a]
        match = "*/x"
        fields = { p = "p" }
    """)
    items, _ = run(cfg, "http://a.test/x", "<h1>H</h1><p>P</p>")
    assert items == [("items_b", {"h": "H"}), ("items_a", {"p": "P"})]


# ---------------------------------------------------------------------------
# Fields


PAGE = """<html><head><title>T</title></head><body>
<a class="k" href="../up.html">one</a>
<a class="k" href="mailto:x@y.test">two</a>
<a class="k">three (no href)</a>
<a class="k" href="//cdn.test/a b.png#frag"> four </a>
<img src="  /pic.png " alt="A&amp;B" data-size="2">
<input class="flag" disabled>
<p class="empty"></p>
</body></html>"""


def test_attr_href_is_made_absolute_and_non_http_kept_as_written():
    cfg = extract_cfg("""
        [extract.r]
        match = "*"
        [extract.r.fields]
        first = "a.k::attr(href)"
        all   = "a.k::attr(HREF)*"
        img   = "img::attr(src)"
        alt   = "img::attr(alt)"
        size  = "img::attr(data-size)"
        flag  = "input.flag::attr(disabled)"
    """)
    items, errors = run(cfg, "http://site.test/dir/page.html", PAGE)
    assert errors == []
    assert items == [("items_r", {
        "first": "http://site.test/up.html",
        "all": ["http://site.test/up.html", "mailto:x@y.test", "http://cdn.test/a%20b.png"],
        "img": "http://site.test/pic.png",
        "alt": "A&B",
        "size": "2",
        "flag": "",
    })]


def test_url_attributes_follow_base_href():
    cfg = extract_cfg("""
        [extract.r]
        match = "*"
        fields = { link = "a::attr(href)" }
    """)
    html = '<base href="http://other.test/sub/"><a href="x.html">x</a>'
    assert run(cfg, "http://site.test/a/b", html)[0] == [("items_r", {"link": "http://other.test/sub/x.html"})]


def test_missing_elements_give_none_or_an_empty_list():
    cfg = extract_cfg("""
        [extract.r]
        match = "*"
        [extract.r.fields]
        one   = "h2"
        many  = "h2::text*"
        attr  = "h2::attr(id)"
        attrs = "a::attr(title)*"
        empty = "p.empty"
        texts = "a.k::text*"
    """)
    items, _ = run(cfg, "http://site.test/", PAGE)
    assert items == [("items_r", {
        "one": None, "many": [], "attr": None, "attrs": [], "empty": "",
        "texts": ["one", "two", "three (no href)", "four"],
    })]


def test_universal_selector_is_css_not_the_many_marker():
    cfg = extract_cfg("""
        [extract.r]
        match = "*"
        fields = { first = "ul > *", all = "ul > *::text*" }
    """)
    items, _ = run(cfg, "http://site.test/", "<ul><li>a</li><li>b</li></ul>")
    assert items == [("items_r", {"first": "a", "all": ["a", "b"]})]


def test_tree_is_parsed_only_when_needed():
    cfg = extract_cfg(BOOK_RULE)
    # No tree given: parsed from the html for a matching URL.
    items, _ = extract_items(cfg, "http://s.test/product/1", '<h1 class="title">X</h1>')
    assert items[0][1]["title"] == "X"


# ---------------------------------------------------------------------------
# Config mistakes: one ConfigError naming the key path


@pytest.mark.parametrize("toml, key, words", [
    ('[extract.b]\nmatch = "*"\nfields = { title = "" }', "extract.b.fields.title", "CSS selector"),
    ('[extract.b]\nmatch = "*"\nfields = { title = "   " }', "extract.b.fields.title", "CSS selector"),
    ('[extract.b]\nmatch = "*"\nfields = { title = "h1::foo" }', "extract.b.fields.title", "unknown suffix '::foo'"),
    ('[extract.b]\nmatch = "*"\nfields = { title = "p::before" }', "extract.b.fields.title", "::text or ::attr(name)"),
    ('[extract.b]\nmatch = "*"\nfields = { cover = "img::attr(src" }', "extract.b.fields.cover", "closing ')'"),
    ('[extract.b]\nmatch = "*"\nfields = { cover = "img::attr()" }', "extract.b.fields.cover", "::attr(name)"),
    ('[extract.b]\nmatch = "*"\nfields = { title = "::text" }', "extract.b.fields.title", "before '::text'"),
    ('[extract.b]\nmatch = "*"\nfields = { title = "h1[" }', "extract.b.fields.title", "selectolax accepts"),
    ('[extract.b]\nmatch = "*"\nfields = { title = "div >" }', "extract.b.fields.title", "selectolax accepts"),
    ('[extract.b]\nmatch = "*"\nfields = { title = "p.x*" }', "extract.b.fields.title", "::text*"),
    ('[extract.b]\nmatch = "*"\nfields = { title = 3 }', "extract.b.fields.title", "got 3"),
    ('[extract.b]\nmatch = "re:(unclosed"\nfields = { t = "h1" }', "extract.b.match", "valid regex"),
    ('[extract.b]\nmatch = "re:"\nfields = { t = "h1" }', "extract.b.match", "URL glob"),
    ('[extract.b]\nmatch = ""\nfields = { t = "h1" }', "extract.b.match", "URL glob"),
    ('[extract.b]\nfields = { t = "h1" }', "extract.b.match", "is required"),
    ('[extract.b]\nmatch = "*"', "extract.b.fields", "is required"),
    ('[extract.b]\nmatch = "*"\nfields = {}', "extract.b.fields", "non-empty"),
    ('[extract.b]\nmatch = "*"\nfeilds = { t = "h1" }', "extract.b.feilds", "unknown key"),
    ('[extract.b]\nmatch = "*"\nfields = { 1st = "h1" }', "extract.b.fields.1st", "field name"),
    ('[extract.b]\nmatch = "*"\nfields = { "a-b" = "h1" }', "extract.b.fields.a-b", "field name"),
    ('[extract.b]\nmatch = "*"\nfields = { url = "h1" }', "extract.b.fields.url", "reserved"),
    ('[extract.b]\nmatch = "*"\nfields = { Fetched_At = "h1" }', "extract.b.fields.Fetched_At", "reserved"),
    ('[extract.b]\nmatch = "*"\nfields = { peer = "h1" }', "extract.b.fields.peer", "reserved"),
    ('[extract.b]\nmatch = "*"\nfields = { t = "h1", T = "h2" }', "extract.b.fields.T", "case"),
    ('[extract."my-rule"]\nmatch = "*"\nfields = { t = "h1" }', "extract.my-rule", "rule name"),
    ('[extract.peer]\nmatch = "*"\nfields = { t = "h1" }', "extract.peer", "reserved"),
    ('[extract.b]\nmatch = "*"\nfields = { t = "h1" }\n[extract.B]\nmatch = "*"\nfields = { t = "h1" }',
     "extract.B", "ignore case"),
    ('[extract]\nbook = "h1"', "extract.book", "rule table"),
    ('[extract]\nmodule = "nodots"', "extract.module", "pkg.mod:func"),
    ('[extract]\nmodule = "a.b:"', "extract.module", "pkg.mod:func"),
    ('[extract]\nmodule = "no_such_module_rc5:f"', "extract.module", "cannot import 'no_such_module_rc5'"),
    ('[extract]\nmodule = "json:no_such_function"', "extract.module", "no function 'no_such_function'"),
    ('[extract]\nmodule = "json:__doc__"', "extract.module", "no function"),
    ('[extract]\nmodule = 1', "extract.module", "pkg.mod:func"),
    ('[extract]\nmodule = "json:loads"\n[extract.custom]\nmatch = "*"\nfields = { t = "h1" }',
     "extract.custom", "default table"),
])
def test_bad_rules_are_one_config_error_naming_the_key(toml, key, words):
    err = error_of(toml)
    assert err.key == key
    assert words in err.message
    assert "\n" not in str(err) and str(err).startswith("/etc/rc/cluster.toml: ")


def test_extract_that_is_not_a_table_is_refused():
    with pytest.raises(ConfigError) as info:
        parse_config("extract = 3\n" + MINIMAL, "c.toml")
    assert info.value.key == "extract" and "expected a table" in info.value.message


def test_parse_extract_alone_names_the_file():
    with pytest.raises(ConfigError) as info:
        parse_extract({"b": {"match": "*", "fields": {"t": "h1::attr(x"}}}, "c.toml")
    assert str(info.value).startswith("c.toml: extract.b.fields.t: ")


def test_selector_with_double_colon_inside_an_attribute_value_is_css():
    cfg = extract_cfg("""
        [extract.r]
        match = "*"
        fields = { t = 'a[title="x::y"]' }
    """)
    assert run(cfg, "http://s.test/", '<a title="x::y">hit</a>')[0] == [("items_r", {"t": "hit"})]


# ---------------------------------------------------------------------------
# Post-processing: strip, then re


DOCS_PAGE = """<h1>Installation<a class="headerlink" href="#installation">¶</a></h1>
<h2>Step 1: download<a class="headerlink" href="#s1">¶</a></h2>
<h2>Notes<a class="headerlink" href="#notes">¶</a></h2>
<h2>Step 2: unpack<a class="headerlink" href="#s2">¶</a></h2>
<a class="dl" href="/files/pkg-1.4.2.tar.gz">download</a>"""


@pytest.mark.parametrize("field, value, want", [
    (Field("t", "h1", strip="¶ "), "Installation ¶", "Installation"),
    (Field("t", "h1", strip="¶ "), "¶ mid¶dle ¶", "mid¶dle"),  # the ends only, as str.strip
    (Field("t", "h1", strip="¶"), "¶", ""),
    (Field("t", "h1", regex=r"Step (\d+)"), "Step 12: unpack", "12"),  # the first group
    (Field("t", "h1", regex=r"(\d+)-(\d+)"), "pages 3-9", "3"),
    (Field("t", "h1", regex=r"\d+"), "pages 3-9", "3"),  # no group: the whole match
    (Field("t", "h1", regex=r"Step (\d+)"), "Notes", None),  # no match: NULL
    (Field("t", "h1", regex=r"(x)?y"), "y", None),  # the first group took no part
    (Field("t", "h1", regex=r"^(\w+)$"), "Notes", "Notes"),
    # strip first, then re, whatever order the keys are written in
    (Field("t", "h1", strip="¶", regex=r"(\w+)$"), "Installation¶", "Installation"),
    (Field("t", "h1"), " as found ", " as found "),
])
def test_clean_strips_then_takes_the_regex_capture(field, value, want):
    assert field.clean(value) == want


def test_the_docs_permalink_is_stripped_and_lists_keep_the_matches_only():
    cfg = extract_cfg(r"""
        [extract.doc]
        match = "*"
        [extract.doc.fields]
        raw     = "h1::text"
        title   = { css = "h1::text", strip = "¶ " }
        steps   = { css = "h2::text*", strip = "¶", re = 'Step (\d+)' }
        heads   = { re = '^(.*?)¶?$', css = "h2::text*" }
        version = { css = "a.dl::attr(href)", re = '-([0-9.]+)\.tar' }
        missing = { css = "h3::text", strip = "x" }
        none    = { css = "h1::text", re = 'Chapter (\d+)' }
    """)
    items, errors = run(cfg, "http://docs.test/install.html", DOCS_PAGE)
    assert errors == []
    assert items == [("items_doc", {
        "raw": "Installation¶", "title": "Installation", "steps": ["1", "2"],
        "heads": ["Step 1: download", "Notes", "Step 2: unpack"], "version": "1.4.2",
        "missing": None, "none": None,
    })]
    # The columns are the same types as for a plain selector.
    assert cfg.tables()["items_doc"] == (("raw", "VARCHAR"), ("title", "VARCHAR"), ("steps", "VARCHAR[]"),
                                         ("heads", "VARCHAR[]"), ("version", "VARCHAR"),
                                         ("missing", "VARCHAR"), ("none", "VARCHAR"))


def test_regex_sees_the_absolute_url_of_a_url_attribute():
    cfg = extract_cfg("""
        [extract.r]
        match = "*"
        fields = { host = { css = "a::attr(href)", re = '^https?://([^/:]+)' } }
    """)
    assert run(cfg, "http://site.test/a/", '<a href="b.html">b</a>')[0] == [("items_r", {"host": "site.test"})]


def test_a_field_as_a_sub_table_is_the_same_as_inline():
    inline = extract_cfg("""
        [extract.r]
        match = "*"
        fields = { t = { css = "h1", strip = "¶" } }
    """)
    table = extract_cfg("""
        [extract.r]
        match = "*"
        [extract.r.fields.t]
        css = "h1"
        strip = "¶"
    """)
    assert inline == table
    assert inline.rules[0].fields == (Field("t", "h1", None, False, "¶", None),)


def test_raw_items_are_the_values_before_post_processing():
    cfg = extract_cfg("""
        [extract.doc]
        match = "*/install*"
        fields = { title = { css = "h1::text", strip = "¶" }, plain = "h2::text" }
        [extract.other]
        match = "*/never/*"
        fields = { t = "h1" }
    """)
    tree = LexborHTMLParser(DOCS_PAGE)
    assert raw_items(cfg, "http://docs.test/install.html", tree) == {
        "items_doc": {"title": "Installation¶", "plain": "Step 1: download¶"}}
    assert run(cfg, "http://docs.test/install.html", DOCS_PAGE)[0] == [
        ("items_doc", {"title": "Installation", "plain": "Step 1: download¶"})]


@pytest.mark.parametrize("toml, key, words", [
    ("title = { css = 'h1', re = '(unclosed' }", "extract.book.fields.title.re", "valid regex"),
    ("title = { css = 'h1', re = '' }", "extract.book.fields.title.re", "a regex"),
    ("title = { css = 'h1', re = 3 }", "extract.book.fields.title.re", "a regex"),
    ("title = { css = 'h1', strip = '' }", "extract.book.fields.title.strip", "characters to strip"),
    ("title = { css = 'h1', strip = true }", "extract.book.fields.title.strip", "characters to strip"),
    ("title = { css = 'h1', regex = 'x' }", "extract.book.fields.title.regex", "unknown key (known: css, strip, re)"),
    ("title = { strip = 'x' }", "extract.book.fields.title.css", "is required"),
    ("title = { css = 'h1[' }", "extract.book.fields.title.css", "selectolax accepts"),
    ("title = { css = '' }", "extract.book.fields.title.css", "CSS selector"),
    ("title = { css = 'h1::foo' }", "extract.book.fields.title.css", "unknown suffix"),
    ("title = {}", "extract.book.fields.title.css", "is required"),
])
def test_bad_post_processing_is_one_config_error_naming_the_key(toml, key, words):
    err = error_of(f'[extract.book]\nmatch = "*"\n[extract.book.fields]\n{toml}\n')
    assert err.key == key
    assert words in err.message
    assert "\n" not in str(err) and str(err).startswith(f"/etc/rc/cluster.toml: {key}: ")


# ---------------------------------------------------------------------------
# The user function


USER_MODULE = '''
def rows(url, html, tree):
    if "/boom" in url:
        raise RuntimeError("bad\\npage")
    if "/none" in url:
        return None
    if "/one" in url:
        return {"h": tree.css_first("h1").text(), "n": 3, "ok": True, "f": 1.5}
    if "/bad" in url:
        return "not rows"
    if "/mixed" in url:
        return [{"a": "1"}, 7, {"url": "x"}, {"_table": "book", "a": "2"}, {"_table": "x y"},
                {"_table": "links", "l": ["a", 2, None], "obj": object}]
    if "/many" in url:
        return ({"i": i} for i in range(10**9))
    return [{"_table": "pages", "length": len(html)}]
'''


@pytest.fixture
def user_cfg(monkeypatch) -> ExtractConfig:
    # The user's package rcuser5 with its module scrape.py, as an import of it
    # leaves them in sys.modules (built in memory: the import of a file is
    # Python's; what is tested is that extract.module names a function).
    pkg = types.ModuleType("rcuser5")
    pkg.__path__ = []
    scrape = types.ModuleType("rcuser5.scrape")
    exec(compile(USER_MODULE, "rcuser5/scrape.py", "exec"), scrape.__dict__)
    pkg.scrape = scrape
    monkeypatch.setitem(sys.modules, "rcuser5", pkg)
    monkeypatch.setitem(sys.modules, "rcuser5.scrape", scrape)
    return extract_cfg("""
        [extract]
        module = "rcuser5.scrape:rows"
        [extract.book]
        match = "*/book/*"
        fields = { t = "h1" }
    """)


def test_user_function_rows_go_to_their_tables(user_cfg):
    assert user_cfg.module == "rcuser5.scrape:rows" and user_cfg.function is not None
    html = "<h1>Hi</h1>"
    assert run(user_cfg, "http://s.test/one", html) == (
        [(f"items_{DEFAULT_TABLE}", {"h": "Hi", "n": "3", "ok": "true", "f": "1.5"})], [])
    assert run(user_cfg, "http://s.test/book/x", html) == (
        [("items_book", {"t": "Hi"}), ("items_pages", {"length": str(len(html))})], [])
    assert run(user_cfg, "http://s.test/none", html) == ([], [])


def test_user_function_errors_are_reported_not_raised(user_cfg):
    items, errors = run(user_cfg, "http://s.test/boom", "<h1>x</h1>")
    assert items == [] and errors == ["rcuser5.scrape:rows: RuntimeError: bad page"]
    items, errors = run(user_cfg, "http://s.test/bad", "<h1>x</h1>")
    assert items == [] and errors == ["rcuser5.scrape:rows: returned str; expected a dict, an iterable of dicts or None"]


def test_user_function_bad_rows_are_dropped_and_reported(user_cfg):
    items, errors = run(user_cfg, "http://s.test/mixed", "<h1>x</h1>")
    assert items == [
        ("items_custom", {"a": "1"}),
        ("items_links", {"l": ["a", "2", None], "obj": str(object)}),
    ]
    assert len(errors) == 4 and all(e.startswith("rcuser5.scrape:rows: ") for e in errors)
    assert "int" in errors[0] and "'url' is reserved" in errors[1]
    assert "rule extract.book" in errors[2] and "'x y'" in errors[3]
    assert columns_of(items[1][1]) == (("l", "VARCHAR[]"), ("obj", "VARCHAR"))


def test_a_runaway_user_generator_is_cut(user_cfg):
    items, errors = run(user_cfg, "http://s.test/many", "")
    assert len(items) == MAX_USER_ROWS and items[-1] == ("items_custom", {"i": str(MAX_USER_ROWS - 1)})
    assert len(errors) == 1 and "dropped" in errors[0]


# ---------------------------------------------------------------------------
# No page can make extraction raise


_TAGS = st.sampled_from(["a", "img", "h1", "p", "base", "div", "span", "script", "template", "table"])
_ATTRS = st.sampled_from(["href", "src", "class", "title", "HREF", "data"])
_VALUES = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["title", "cover", "author", "http://x.test/", "//[::1", "mailto:a",
                     "javascript:x", "http://[bad", "../../..", "%zz", "http://a.test:99999/"]),
)


@st.composite
def html_pages(draw) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 12))):
        if draw(st.booleans()):
            parts.append(draw(st.text(max_size=30)))
        else:
            tag = draw(_TAGS)
            attrs = draw(st.lists(st.tuples(_ATTRS, _VALUES), max_size=3))
            a = "".join(f' {k}="{v}"' if draw(st.booleans()) else f" {k}={v}" for k, v in attrs)
            parts.append(f"<{tag}{a}>{draw(st.text(max_size=10))}")
            if draw(st.booleans()):
                parts.append(f"</{tag}>")
    return "".join(parts)


_FUZZ = ExtractConfig((Rule("r", "*", (
    Field("t", "h1"), Field("ts", "p, span", None, True),
    Field("c", ".cover", "src"), Field("as_", "a.author", "href", True), Field("ti", "[title]", "title"),
    Field("tc", "h1", None, False, "¶ ", r"(\w+)"), Field("tsc", "p, span", None, True, "x", r"\d*(.)"),
)),))


@settings(max_examples=200, deadline=None)
@given(html=html_pages(), url=st.sampled_from(["http://s.test/product/1", "http://[::1]:81/a?b", "not a url"]))
def test_no_html_makes_extract_items_raise(html, url):
    items, errors = extract_items(_FUZZ, url, html, LexborHTMLParser(html))
    assert errors == [] and len(items) == 1
    row = items[0][1]
    assert row["t"] is None or isinstance(row["t"], str)
    assert isinstance(row["ts"], list) and all(isinstance(v, str) for v in row["ts"])
    assert all(v == " ".join(v.split()) for v in row["ts"])
    assert row["tc"] is None or re.fullmatch(r"\w+", row["tc"])
    assert isinstance(row["tsc"], list) and len(row["tsc"]) <= len(row["ts"])
    assert all(isinstance(v, str) and len(v) == 1 for v in row["tsc"])
