"""End to end, the heavier half: malformed HTTP, random answers (hypothesis) and a link farm.

The same harness and judges as tests/test_hostileweb.py (one real peer
against the hostile local web); a file of its own so that the two halves
run side by side in the suite's two workers.
"""

from __future__ import annotations

import gzip

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from localweb import RETRY_AFTER, End, Farm, HostileWeb, Reply, Site, serve_in_thread
from test_hostileweb import RSS_BOUND_MB, assert_clean_exit, assert_rows_for, crawl, requested


# -- malformed HTTP, traps -----------------------------------------------------------------


def test_malformed_http_every_url_gets_a_row(tmp_path):
    web = HostileWeb()
    with serve_in_thread(web):
        run = crawl(tmp_path, web, ["bad.test/"], sections={"crawl": {"timeout": 1.0},
                                                           "politeness": {"host_concurrency": 4}})
    assert_clean_exit(run)
    assert_rows_for(run, requested(web))
    assert len(run.rows) >= 30


# -- hypothesis: random answers through the real server into one peer ----------------------
#
# One crawl of a peer process costs seconds, so each hypothesis example is a
# batch of FUZZ_URLS answers served to ONE running peer, and max_examples is
# small. Shrinking is off: a crawl that fails is not replayed hundreds of
# times; instead every URL is judged on its own and a failure names the URLs
# (and so the drawn answers) that broke. ``.example()`` is not used: it is
# not replayable from the example database and warns outside the REPL.

FUZZ_URLS = 200
FUZZ_HOSTS = 50  # four URLs a host keep the crawl short

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
_retry_after = st.one_of(st.integers(-10, 10**12).map(str), st.sampled_from(list(RETRY_AFTER.values())), _text)
_content_length = st.one_of(st.integers(-5, 10**20).map(str), st.just("5, 5"), _text)
_content_type = st.one_of(
    st.builds("{}; charset={}".format, st.sampled_from(["text/html", "text/plain", "application/xhtml+xml"]),
              st.sampled_from(["utf-8", "latin-1", "utf-16", "bogus", "", "\u00e9"])),
    _text)
_location = st.one_of(st.sampled_from(["/elsewhere", "http://fz-away.test/x", "//", "http://[::1", "?q"]), _text)
_encoding = st.one_of(st.sampled_from(["gzip", "deflate", "identity", "br", "gzip, gzip", "chunked"]), _text)
_header = st.one_of(
    st.tuples(st.just("Retry-After"), _retry_after),
    st.tuples(st.just("Content-Length"), _content_length),
    st.tuples(st.just("Content-Type"), _content_type),
    st.tuples(st.just("Location"), _location),
    st.tuples(st.just("Content-Encoding"), _encoding),
    st.tuples(st.just("Transfer-Encoding"), st.sampled_from(["chunked", "gzip, chunked", "identity"])),
).map(lambda kv: f"{kv[0]}: {kv[1]}".encode())
_status_line = st.one_of(
    st.builds(lambda v, code, reason: b"HTTP/%s %d %s" % (v, code, reason),
              st.sampled_from([b"1.1", b"1.1", b"1.0", b"2", b"0.9"]), st.integers(0, 1000),
              st.sampled_from([b"OK", b"", b"Whatever", "\u00e9t\u00e9".encode()])),
    st.binary(max_size=20))
_html = st.lists(st.sampled_from(["/linked/1", "/linked/2", "http://fz-away.test/y", "../", "#", "mailto:x"]),
                 max_size=4).map(lambda links: b"<title>fuzz</title>" + b"".join(
                     b'<a href="%s">x</a>' % h.encode() for h in links))
_body = st.one_of(st.binary(max_size=2000), _html, _html.map(gzip.compress))
_end = st.sampled_from([End.CLOSE, End.CLOSE, End.CLOSE, End.KEEP, End.RESET])


@st.composite
def answers(draw) -> Reply:
    lines = [draw(_status_line), *draw(st.lists(_header, max_size=5))]
    return Reply(b"\r\n".join(lines) + b"\r\n\r\n", draw(_body), draw(_end), 0)


class Batch(list):
    """The drawn answers; a short repr, since hypothesis prints a failing example
    (200 answers would be ~50 kB; a failure names its URLs and answers instead)."""

    def __repr__(self) -> str:
        return f"Batch({len(self)} answers, {sum(len(a.head) for a in self)} head bytes)"


@settings(max_examples=2, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.large_base_example])
@given(st.lists(answers(), min_size=FUZZ_URLS, max_size=FUZZ_URLS).map(Batch))
def test_random_answers_never_end_the_peer_and_every_url_gets_a_row(tmp_path_factory, drawn):
    tmp = tmp_path_factory.mktemp("fuzz")
    web = HostileWeb()
    paths = [(f"fz{i % FUZZ_HOSTS}.test", f"/fuzz/{i}") for i in range(FUZZ_URLS)]
    for key, answer in zip(paths, drawn):
        web.program[key] = answer
    with serve_in_thread(web):
        urls = [web.url(h, p) for h, p in paths]
        web.program[("fuzzindex.test", "/")] = Reply(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n",
            b"".join(b'<a href="%s">x</a>\n' % u.encode() for u in urls), End.CLOSE, 200)
        # Four at a time per host: a drawn answer that hangs costs its
        # timeout three times (two retries), and hosts must not queue behind it.
        # A drawn 429/503 holds its host for its Retry-After, cut to 0.5 s here.
        run = crawl(tmp, web, ["fuzzindex.test/"], sections={
            "crawl": {"timeout": 1.5},
            "politeness": {"host_concurrency": 4, "max_retry_after": 0.5}})
    assert_clean_exit(run)
    missing = [(u, a) for u, a in zip(urls, drawn) if u not in run.by_url()]
    assert not missing, (f"{len(missing)} fuzz URLs without a row; first ones and their answers:\n"
                         + "\n".join(f"{u}: {a!r:.300}" for u, a in missing[:5]) + "\n" + run.stderr())
    assert_rows_for(run, requested(web))


# -- a link farm beside the normal site ------------------------------------------------------


def test_link_farm_beside_the_site_memory_bounded_and_site_complete(tmp_path):
    web = HostileWeb(site=Site(pages=200), farm=Farm(hosts=4, links_per_page=1_000_000))
    expected = web.site.expected_urls(0)  # port filled in below

    def site_done() -> bool:
        return len(web.fetched("site.test")) >= len(expected)

    with serve_in_thread(web):
        expected = web.site.expected_urls(web.port)
        run = crawl(tmp_path, web, ["site.test/", "trap.test/", *(f"{h}/" for h in web.farm.names())],
                    sections={"politeness": {"rate": 1200.0, "initial_delay": 0.05}},
                    stop_when=site_done, timeout=60.0)
    p = run.peers[0]
    assert p.killed != "rss", f"peer killed at {p.peak_rss_mb:.0f} MB RSS"
    assert p.peak_rss_mb < RSS_BOUND_MB, f"peak RSS {p.peak_rss_mb:.0f} MB"
    assert not run.timed_out, f"the site was not complete within 60 s\n{run.stderr()}"
    assert p.code == 0, f"peer exited {p.code}\n{run.stderr()}"
    fetched = web.fetched("site.test")
    assert set(fetched) == expected and max(fetched.values()) == 1
    assert_rows_for(run, expected)
