"""python -m peer try (peer.commands.trial): one URL through the crawl's rules, every verdict printed, nothing written.

Each case runs the command line's ``main`` in this process (tests/support/clirun.py)
against the local web served from a thread, with its request log, as a user
would run it; a bad URL goes through the real ``python -m peer try`` process.
The words ``try`` gives each of the core's refusals (``peer.commands.trial.refusal``)
are checked on a core of its own, without a web.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from clirun import Result, WebThread, run_main, web_thread
from ringharness import free_ports

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def web() -> Iterator[WebThread]:
    with web_thread(hosts=3) as w:
        yield w


def config(tmp_path: Path, port: int, peers: int = 1, allow: str = '["*.web.test"]', crawl: str = "") -> Path:
    addrs = free_ports(peers)
    entries = "".join(f'[[peer]]\nid = "p{i + 1}"\naddress = "tcp://127.0.0.1:{a}"\n'
                      f'data_dir = "{tmp_path / f"p{i + 1}"}"\n\n' for i, a in enumerate(addrs))
    toml = tmp_path / "cluster.toml"
    toml.write_text(f"""
[ring]
name = "try"

{entries}
[crawl]
seeds = ["http://s001.web.test:{port}/"]
allow_hosts = {allow}
allow_private = true
{crawl}

[dns]
resolve = {{ "*.web.test" = "127.0.0.1" }}

[extract.book]
match = "*/product/*"
[extract.book.fields]
title = "h1.title::text"
authors = "a.author::text*"
""")
    return toml


def try_url(toml: Path, url: str, *args: str) -> Result:
    from peer.commands.cli import main  # `python -m peer try` is peer.commands.cli's dispatch to peer.commands.trial

    return run_main(main, ["try", url, "--ring", str(toml), *args])


def requests_since(web: WebThread, since: int) -> list[str]:
    return [f"{r.host}{r.target}" for r in web.requests()[since:]]


def lines(web: WebThread) -> int:
    return len(web.requests())


def a_product(port: int, toml: Path) -> str:
    res = try_url(toml, f"http://shop.web.test:{port}/", "--links", "0")
    return next(w for line in res.stdout.splitlines() for w in line.split() if "/product/" in w)


def test_a_page_shows_its_verdicts_links_and_fields_and_writes_nothing(tmp_path, web):
    port = web.port
    toml = config(tmp_path, port)
    product = a_product(port, toml)
    since = lines(web)
    res = try_url(toml, product)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert f"url:        {product}" in out
    assert "scope:      in scope, would be queued" in out
    assert "robots.txt HTTP 200: allowed" in out
    assert "fetch:      HTTP 200 from 127.0.0.1, text/html" in out
    assert "item:       items_book" in out and "  title: '" in out and "  authors: ['" in out
    assert "in scope, would be queued" in out.split("links:", 1)[1]
    # A dry run: the two requests only, and no results file or crawl state anywhere.
    host = product.split("/")[2]
    assert requests_since(web, since) == [f"{host.split(':')[0]}/robots.txt",
                                          f"{host.split(':')[0]}/{product.split('/', 3)[3]}"]
    assert not (tmp_path / "p1").exists()


def test_links_out_of_scope_and_the_owner_in_a_ring(tmp_path, web):
    from ring.hashring import HashRing

    port = web.port
    toml = config(tmp_path, port, peers=3, allow='["s001.web.test", "s002.web.test"]')
    ring = HashRing({"p1": 1.0, "p2": 1.0, "p3": 1.0}, vnodes=256)
    for me in ("p1", "p2", "p3"):
        res = try_url(toml, f"http://s001.web.test:{port}/", "--links", "0", "--peer", me)
        assert res.returncode == 0, res.stderr
        links = dict(line.split() [:1] + [line.split(None, 1)[1]]
                     for line in res.stdout.split("links:", 1)[1].splitlines()[1:] if line.startswith("  http"))
        assert links[f"http://shop.web.test:{port}/"] == "out of scope (host): not crawled"
        for host in ("s001", "s002"):
            owner = ring.owner(f"{host}.web.test:{port}")
            want = f"in scope: fetched by {me}" if owner == me else f"in scope: {me} forwards it to its owner {owner}"
            assert links[f"http://{host}.web.test:{port}/"] == want
    assert not any((tmp_path / p).exists() for p in ("p1", "p2", "p3"))


def test_a_url_robots_txt_disallows_is_not_fetched(tmp_path, web):
    port = web.port
    toml = config(tmp_path, port)
    since = lines(web)
    res = try_url(toml, f"http://s001.web.test:{port}/private/x.html")
    assert res.returncode == 1
    assert "disallowed: the crawl records it as 'robots'" in res.stdout
    assert "not fetched (--ignore-robots to fetch it anyway)" in res.stdout
    assert requests_since(web, since) == ["s001.web.test/robots.txt"]


def test_a_url_out_of_scope_is_fetched_to_show_it_but_said_so(tmp_path, web):
    port = web.port
    toml = config(tmp_path, port, allow='["s001.web.test"]')
    res = try_url(toml, f"http://s002.web.test:{port}/")
    assert res.returncode == 0
    assert "scope:      out of scope (host): not crawled" in res.stdout
    assert "fetch:      HTTP 200" in res.stdout


def test_the_url_after_parameter_stripping_and_the_rule_that_decided(tmp_path, web):
    port = web.port
    toml = config(tmp_path, port, crawl='rules = ["exclude:re:/p1\\\\.html$", "include:*/c0/p2.html", '
                                        '"exclude:*/c0/p*", "include:*"]')
    since = lines(web)
    res = try_url(toml, f"http://s001.web.test:{port}/c0/?utm_source=news&fbclid=x1", "--links", "0")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert f"url:        http://s001.web.test:{port}/c0/\n" in out
    assert "params:     stripped utm_source, fbclid (crawl.strip_params): the crawl keeps the URL above" in out
    assert "scope:      in scope (included by crawl.rules[3] '*'), would be queued" in out
    links = dict(line.split(None, 1) for line in out.split("links:", 1)[1].splitlines()[1:]
                 if line.startswith("  http"))
    c0 = f"http://s001.web.test:{port}/c0/"
    assert links[c0 + "p1.html"] == "out of scope: excluded by crawl.rules[0] 're:/p1\\\\.html$': not crawled"
    assert links[c0 + "p2.html"] == "in scope (included by crawl.rules[1] '*/c0/p2.html'), would be queued"
    assert links[c0 + "p3.html"] == "out of scope: excluded by crawl.rules[2] '*/c0/p*': not crawled"
    # The page itself was requested as the crawl would: without its tracking parameters.
    assert requests_since(web, since)[-1] == "s001.web.test/c0/"
    pdf = try_url(toml, f"http://s001.web.test:{port}/files/doc0.pdf")
    assert "scope:      out of scope: excluded by crawl.skip_extensions ('pdf'): not crawled" in pdf.stdout


def test_a_redirect_shows_the_crawl_cores_own_refusal_of_its_target(tmp_path, web):
    # `try` judged a redirect's target afresh, as a link met for the first
    # time ("in scope, would be queued"), whatever the crawl does with it: past
    # crawl.max_redirects the core follows no redirect and records the page as
    # 'too_many_redirects'. It shows the page's own core's verdict now.
    port = web.port
    bad = f"http://bad.web.test:{port}"
    toml = config(tmp_path, port, crawl="max_redirects = 0")
    res = try_url(toml, f"{bad}/redirect/3")
    assert res.returncode == 0, res.stderr
    (line,) = [x for x in res.stdout.splitlines() if x.startswith("redirect:")]
    assert line == (f"redirect:   /redirect/2 -> {bad}/redirect/2: not followed: past crawl.max_redirects (0); "
                    "the crawl records the page as 'too_many_redirects'")
    # Within max_redirects, the target is judged as the crawl judges it: new here, queued.
    res = try_url(config(tmp_path, port), f"{bad}/redirect/3")
    assert f"redirect:   /redirect/2 -> {bad}/redirect/2: in scope, would be queued" in res.stdout


def test_the_cores_refusal_reasons_are_named_as_they_are(tmp_path):
    # The verdict is the core's Refused reason, not rebuilt from its counters:
    # the old reading took any scope counter for "out of scope (host)", so a
    # URL the crawl cannot take at all (no host) was called out of scope, and a
    # URL the core holds already had no words.
    from peer.commands.trial import _Rules
    from peer.core.crawl.core import Origin
    from peer.state.configfile import load_config

    rules = _Rules(load_config(str(config(tmp_path, 9, crawl="max_depth = 2"))), None)
    assert rules.verdict("http:///no-host", 0) == "not a URL the crawl would take"
    assert rules.verdict("http://s001.web.test:9/a", 3) == "out of scope (deeper than max_depth): not crawled"
    assert rules.verdict("http://elsewhere.example/a", 3) == "out of scope (host): not crawled"  # the host first
    from peer.commands.trial import refusal
    from peer.core.crawl.core import Reason, Refused

    core = rules.core("")
    core.discover("http://s001.web.test:9/a", 0, 0.0, Origin.LINK)
    (seen,) = core.discover("http://s001.web.test:9/a", 0, 0.0, Origin.LINK)
    assert seen == Refused("http://s001.web.test:9/a", Reason.SEEN)
    assert refusal(core, seen) == "seen already: the crawl does not queue it again"
    # A redirect back to the page itself (here by a tracking parameter the
    # crawl strips) ends at the seen set, as in a crawl.
    from peer.commands.trial import _redirect
    from tests.core.test_crawl import answer

    page = "http://s001.web.test:9/a"
    said = _redirect(rules, page, answer(page, 301, location="/a?utm_source=loop"))
    assert said == f"{page}: seen already: the crawl does not queue it again"


def test_a_bad_url_is_one_line(tmp_path):
    # The real entry point: python -m peer try, as a process.
    res = subprocess.run([sys.executable, "-m", "peer", "try", "ftp://example.com/", "--ring",
                          str(config(tmp_path, 9))], capture_output=True, text=True, cwd=ROOT,
                         env=os.environ, stdin=subprocess.DEVNULL, timeout=60)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.strip().startswith("error: 'ftp://example.com/': not a URL the crawl would take")


def test_a_robots_txt_answering_429_with_retry_after_holds_the_url_as_the_crawl_does(tmp_path):
    # The crawl core's own robots.txt rule (CrawlCore.on_robots): a 429 with
    # Retry-After is a failure to ask again after that wait, not a 4xx that
    # allows everything; `try` runs the core, so it says the same.
    from localweb import HostileWeb, serve_in_thread
    from localweb.hostile.server import config_snippet

    web = HostileWeb()
    with serve_in_thread(web):
        url = f"http://ra-big-robots.test:{web.port}/0"
        toml = tmp_path / "cluster.toml"
        toml.write_text(f'[ring]\nname = "try"\n[[peer]]\nid = "p1"\naddress = "tcp://127.0.0.1:{free_ports(1)[0]}"\n'
                        f'data_dir = "{tmp_path / "p1"}"\n\n' + config_snippet(web.port, [url]))
        res = try_url(toml, url)
    assert res.returncode == 1, res.stdout + res.stderr
    robots = next(line for line in res.stdout.splitlines() if line.startswith("robots:"))
    assert "HTTP 429 (Retry-After" in robots and "held: robots.txt unreachable" in robots, robots
    assert "not fetched (--ignore-robots to fetch it anyway)" in res.stdout


def test_output_into_a_pipe_its_reader_closed_ends_quietly(tmp_path, web):
    # `python -m peer try URL --links 0 | head -3`: head leaves after three
    # lines; the rest must go nowhere, without a BrokenPipeError traceback.
    toml = config(tmp_path, web.port)
    proc = subprocess.Popen([sys.executable, "-m", "peer", "try", f"http://shop.web.test:{web.port}/",
                             "--ring", str(toml), "--links", "0"], cwd=ROOT, env=os.environ,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first line is written
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_a_robots_txt_the_ssrf_guard_refuses_is_recorded_with_its_cause_not_asked_again(tmp_path, web):
    # `try` said "the crawl asks again later" for blocked and dns, which no retry mends.
    toml = config(tmp_path, web.port)
    toml.write_text(toml.read_text().replace("allow_private = true", "allow_private = false"))
    res = try_url(toml, f"http://s001.web.test:{web.port}/")
    assert res.returncode == 1, res.stderr
    robots = next(line for line in res.stdout.splitlines() if line.startswith("robots:"))
    assert "not read (blocked)" in robots and "records it as 'blocked'" in robots, robots
    assert "asks again" not in res.stdout


DOCS_RULE = """
[extract.doc]
match = "*/permalinks"
[extract.doc.fields]
title = { css = "h1::text", strip = "¶ " }
sections = { css = "h2::text*", re = '^(.*?)¶?$' }
heading = "h1::text"
"""


def test_fields_are_shown_after_strip_and_re_with_the_value_found_beside_them(tmp_path, web):
    # A documentation page as Sphinx writes it: every heading ends in its "¶" permalink.
    from localweb.sitegraph.endpoints import PERMALINK_HEADINGS

    toml = config(tmp_path, web.port)
    toml.write_text(toml.read_text() + DOCS_RULE)
    res = try_url(toml, f"http://bad.web.test:{web.port}/permalinks")
    assert res.returncode == 0, res.stdout + res.stderr
    h1, *h2 = PERMALINK_HEADINGS
    item = res.stdout.split("item:       items_doc\n", 1)[1].splitlines()
    assert item[:3] == [
        f"  title: {h1!r}  (from {h1 + '¶'!r})",
        f"  sections: {h2!r}  (from {[h + '¶' for h in h2]!r})",
        f"  heading: {h1 + '¶'!r}",  # no strip or re: as found, nothing beside it
    ]


def test_a_bad_regex_in_a_field_is_one_line_naming_the_key(tmp_path):
    toml = config(tmp_path, 9)
    toml.write_text(toml.read_text().replace('title = "h1.title::text"',
                                             "title = { css = 'h1.title::text', re = '(unclosed' }"))
    res = try_url(toml, "http://s001.web.test:9/")
    assert res.returncode == 2 and res.stdout == ""
    assert len(res.stderr.splitlines()) == 1 and "Traceback" not in res.stderr
    assert f"{toml}: extract.book.fields.title.re: expected a valid regex" in res.stderr


def test_a_sitemap_shows_its_kind_its_urls_with_their_verdicts_and_its_problems(tmp_path):
    from localweb import HostileWeb, serve_in_thread
    from localweb.hostile import sitemaps as sm
    from localweb.processes.peerrun import cluster_toml

    hostile = HostileWeb()
    with serve_in_thread(hostile):
        toml = cluster_toml(tmp_path, [hostile.url(sm.SITEMAP_HOST, "/")], peers=2)
        index = try_url(toml, hostile.url(sm.SITEMAP_HOST, "/sitemap_index.xml"))
        hidden = try_url(toml, hostile.url(sm.SITEMAP_HOST, "/sitemap-hidden.xml.gz"), "--links", "2")
        xxe = try_url(toml, hostile.url(sm.HOSTILE_HOST, "/xxe.xml"))
    assert index.returncode == 0, index.stderr
    assert "sitemap:    sitemap index: 2 child sitemaps of 2 entries" in index.stdout
    # Named by robots.txt: the whole host is granted, as the crawl grants it.
    assert f"and all of {hostile.url(sm.SITEMAP_HOST, '')} (named by " in index.stdout
    assert "sitemap-hidden.xml.gz  a sitemap one level deeper: fetched by p" in index.stdout
    assert "sitemap:    urlset: 5 URLs of 5 entries" in hidden.stdout
    first = hostile.url(sm.SITEMAP_HOST, sm.HIDDEN[0])
    assert (f"  {first}  in scope: fetched by p" in hidden.stdout
            and "(lastmod 2024-04-30T06:30:00Z, priority 0.9, weekly)" in hidden.stdout)
    assert "  ... 3 more (--links 0 shows all)" in hidden.stdout
    assert "problems:   entities 1 (counted as drops in a crawl)" in xxe.stdout


def test_try_names_the_site_block_and_asks_with_its_agent(tmp_path, web):
    port = web.port
    toml = config(tmp_path, port)
    toml.write_text(toml.read_text() + '\n[[site]]\nhosts = ["s002.web.test"]\nuser_agent = "BadBot/9"\n')
    res = try_url(toml, f"http://s001.web.test:{port}/")
    assert "site:       no [[site]] block: the global settings" in res.stdout.splitlines()
    since = lines(web)
    res = try_url(toml, f"http://s002.web.test:{port}/")
    assert "site:       site[0]: s002.web.test" in res.stdout.splitlines()
    # The site graph's robots.txt shuts badbot out: its group, chosen by the block's agent.
    assert "robots.txt HTTP 200: disallowed" in res.stdout and res.returncode == 1
    assert [(r.target, r.agent) for r in web.requests()[since:]] == [("/robots.txt", "BadBot/9")]


def test_what_a_page_says_of_itself_is_shown_with_its_source(tmp_path, web):
    toml = config(tmp_path, web.port)
    bad = f"http://bad.web.test:{web.port}"
    res = try_url(toml, f"{bad}/directives/canonical-html")
    assert res.returncode == 0, res.stderr
    assert (f"canonical:  {bad}/directives/the-canonical (from the <link rel=canonical>: another URL)"
            in res.stdout)
    res = try_url(toml, f"{bad}/directives/canonical-header")
    assert f"canonical:  {bad}/directives/the-canonical (from the Link header: another URL)" in res.stdout
    res = try_url(toml, f"{bad}/directives/noindex")
    assert "noindex:    from <meta> robots: no items stored, the page row kept" in res.stdout
    assert "nofollow:" not in res.stdout
    res = try_url(toml, f"{bad}/directives/xrt-nofollow")
    assert "nofollow:   from X-Robots-Tag: its links are not followed" in res.stdout
    assert "links:      nofollow: none followed" in res.stdout and "/never/" not in res.stdout
    res = try_url(toml, f"{bad}/directives/xrt-otherbot")  # otherbot's rules are not ours
    assert "noindex:" not in res.stdout and "nofollow:" not in res.stdout
    assert f"  {bad}/directives/plain/4  in scope" in res.stdout


def test_links_from_frames_and_meta_refresh_are_marked(tmp_path, web):
    toml = config(tmp_path, web.port)
    bad = f"http://bad.web.test:{web.port}"
    res = try_url(toml, f"{bad}/directives/frames")
    assert f"  {bad}/directives/frame/top [frame]  in scope" in res.stdout
    assert f"  {bad}/directives/frame/main [frame]  in scope" in res.stdout
    res = try_url(toml, f"{bad}/directives/refresh")
    assert f"  {bad}/directives/refreshed [meta refresh]  in scope" in res.stdout
    res = try_url(toml, f"{bad}/directives/link-rel")  # off by default
    assert "links:      0 found" in res.stdout


def test_a_status_outside_100_599_is_shown_as_a_5xx_the_crawl_retries(tmp_path, web):
    toml = config(tmp_path, web.port)
    res = try_url(toml, f"http://bad.web.test:{web.port}/status/600")
    assert res.returncode == 0, res.stderr
    assert "fetch:      HTTP 600 from" in res.stdout
    assert "status:     600 is outside 100-599 (or a final 1xx): the crawl retries it as a 5xx" in res.stdout


def test_the_fetch_shows_the_codings_asked_for_and_the_bytes_on_the_wire(tmp_path, web):
    toml = config(tmp_path, web.port, crawl='accept_encodings = ["zstd", "gzip"]\nzstd_max_window = 1048576')
    res = try_url(toml, f"http://s001.web.test:{web.port}/", "--links", "0")
    assert res.returncode == 0, res.stderr
    (line,) = [x for x in res.stdout.splitlines() if x.startswith("coding:")]
    assert line.startswith("coding:     asked for gzip, zstd (crawl.accept_encodings), "
                           "zstd window up to 1,048,576 bytes; ")
    assert line.endswith(" bytes on the wire")


# --- crawl.allow_domains (peer/core/urls/scope.py) ---------------------------------

def test_try_names_the_allowed_domain_that_lets_a_host_in_and_check_shows_the_scope(tmp_path, web):
    from peer.commands.cli import main

    port = web.port
    toml = config(tmp_path, port, allow="[]", crawl='allow_domains = ["s001.web.test", "web.test"]')
    res = try_url(toml, f"http://s002.web.test:{port}/", "--links", "0")
    assert res.returncode == 0, res.stderr
    assert "scope:      in scope (host under crawl.allow_domains 'web.test'), would be queued" in res.stdout
    narrow = tmp_path / "narrow"
    narrow.mkdir()
    toml = config(narrow, port, allow="[]", crawl='allow_domains = ["s001.web.test"]')
    res = try_url(toml, f"http://s002.web.test:{port}/", "--links", "0")
    assert ("scope:      out of scope (host: in no crawl.allow_domains domain, or denied by "
            "crawl.deny_hosts): not crawled") in res.stdout
    check = run_main(main, ["--ring", str(toml), "--check"])
    assert check.returncode == 0, check.stderr
    assert "scope: domains s001.web.test and below;" in check.stdout
    bad = tmp_path / "bad"
    bad.mkdir()
    check = run_main(main, ["--ring", str(config(bad, port, crawl='allow_domains = ["co.uk"]')), "--check"])
    assert check.returncode == 2
    assert check.stderr.strip().endswith("crawl.allow_domains[0]: expected a domain name such as 'example.com', "
                                         "got 'co.uk' (a public suffix: it would let in every site under it)")
