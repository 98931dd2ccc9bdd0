"""End to end: one peer against the hostile local web (localweb/), over real sockets.

Every test starts the server in a thread of its own, runs a peer's crawl on a
cluster.toml written for it, and judges the crawl the way an operator would:
by the server's request log, the peer's rows in data_dir/pages.duckdb (read
after it ended), whether it ended cleanly, and its log. The crawl runs in this
process (:func:`localweb.processes.peerrun.run_in_process`: the same ``Crawler``,
fetcher and store as ``python -m peer``, without an interpreter to start a
test); a test of memory runs a real peer process and polls its RSS from
/proc (``process=True``). Every run is bounded in time (and in RSS: a peer
over ``RSS_KILL_MB`` is killed so it cannot take the shared machine down).

Caps the tests rely on (``politeness.max_retry_after``,
``crawl.max_links_per_page``, ``crawl.max_urls_per_host``) are written into
the config only where this tree's peer.core.config.cluster declares them
(:func:`localweb.processes.peerrun.supported`), so these tests say what is missing
before the caps exist and pass once they do.
"""

from __future__ import annotations

import contextlib
import re
import socket
import time
from pathlib import Path

import pytest
from localweb import RETRY_AFTER, Farm, HostileWeb, Site, in_thread, serve_in_thread
from localweb.hostile.cases import RA_WHERE, PAGES_PER_HOST
from localweb.processes.peerrun import Run, cluster_toml, run_in_process, run_peers

from localweb.services.nameserver import LocalDns

#: A peer's memory stays under this whatever the web sends; the harness kills one at RSS_KILL_MB.
RSS_BOUND_MB = 500
RSS_KILL_MB = 800
#: Seconds a crawl of these tests may take before it counts as never ending.
BOUNDED = 45.0
#: The caps a hardened peer needs against this web (small, so tests end quickly).
CAPS = {
    "politeness.max_retry_after": 2.0,
    "crawl.max_links_per_page": 1000,
    "crawl.max_urls_per_host": 2000,
    # A robots.txt that cannot be read is asked for 3 times; 0.2 s apart here
    # (600 s by default), so these crawls end in seconds.
    "crawl.robots_retry": 0.2,
    # A 429/503 doubles its host's delay, up to max_delay (60 s by default):
    # a host answering nothing else would pace these crawls by the tens of seconds.
    "politeness.max_delay": 0.2,
    # The first retry's wait (1 s by default, doubling each attempt): every
    # retried URL's row waited 1.5-4.5 s for it. These tests judge that every
    # answer ends in a row; the waits themselves are judged in tests/core/test_crawl.py.
    "retry.base": 0.05,
    # A host that answered and then refuses or times out, or keeps asking for
    # a Retry-After over the cap, is held until down_give_up (an hour by
    # default; tests/core/test_outages.py judges the holds): seconds here.
    "retry.down_wait": 0.2,
    "retry.down_max_wait": 0.5,
    "retry.down_give_up": 3.0,
}


def crawl(tmp: Path, web: HostileWeb, seeds: list[str], *, timeout: float = BOUNDED,
          sections: dict | None = None, process: bool = False, **kw) -> Run:
    """Crawl ``seeds`` ("host/path") with one peer, in this process or (``process``) a peer process."""
    urls = [web.url(host, "/" + path) for host, _, path in (s.partition("/") for s in seeds)]
    toml = cluster_toml(tmp, urls, sections=sections, caps=CAPS)
    if process:
        return run_peers(toml, timeout=timeout, rss_kill_mb=RSS_KILL_MB, **kw)
    return run_in_process(toml, timeout=timeout, **kw)


def assert_clean_exit(run: Run) -> None:
    p = run.peers[0]
    assert not run.timed_out, f"the crawl did not end within {BOUNDED:.0f}s\n{run.stderr()}"
    assert not p.killed, f"peer killed ({p.killed}, peak RSS {p.peak_rss_mb:.0f} MB)\n{run.stderr()}"
    assert p.code == 0, f"peer exited {p.code}\n{run.stderr()}"


def assert_rows_for(run: Run, urls: set[str]) -> None:
    missing = sorted(urls - run.by_url().keys())
    assert not missing, f"{len(missing)} URLs without a row, e.g. {missing[:5]}\n{run.stderr()}"


def requested(web: HostileWeb) -> set[str]:
    return set(web.fetched())


# -- the server itself is bounded ------------------------------------------------


def _raw(port: int, data: bytes, limit: int = 1 << 20) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(data)
        out = bytearray()
        with contextlib.suppress(TimeoutError, ConnectionResetError):
            while len(out) < limit and (chunk := s.recv(1 << 20)):
                out += chunk
    return bytes(out)


def test_server_refuses_an_oversized_request_head_and_logs_each_request():
    # The idle timeout only ends the reads below (the server closes an idle
    # connection): both requests are in one write, so none waits for it.
    web = HostileWeb(max_head=4096, idle_timeout=0.3)
    with serve_in_thread(web):
        assert _raw(web.port, b"GET / HTTP/1.1\r\nX: " + b"a" * 10_000).startswith(b"HTTP/1.1 431 ")
        two = _raw(web.port, b"GET /p/1.html HTTP/1.1\r\nHost: site.test:1\r\n\r\n"
                             b"GET /p/2.html HTTP/1.1\r\nHost: SITE.test\r\n\r\n")
    assert two.count(b"HTTP/1.1 200 OK") == 2
    assert [(e.host, e.target) for e in web.log] == [("site.test", "/p/1.html"), ("site.test", "/p/2.html")]
    assert web.log[0].conn == web.log[1].conn


def test_server_caps_its_connections():
    web = HostileWeb(max_connections=2, idle_timeout=2.0)
    with serve_in_thread(web):
        held = [socket.create_connection(("127.0.0.1", web.port)) for _ in range(2)]
        try:
            time.sleep(0.2)
            # The third waits in the accept queue until a slot frees.
            third = socket.create_connection(("127.0.0.1", web.port), timeout=0.5)
            third.sendall(b"GET / HTTP/1.1\r\nHost: site.test\r\n\r\n")
            with pytest.raises(TimeoutError):
                third.recv(100)
            held[0].close()
            third.settimeout(5)
            assert third.recv(100).startswith(b"HTTP/1.1 200 ")
            third.close()
        finally:
            for s in held:
                s.close()


def test_farm_page_streams_a_million_new_links():
    web = HostileWeb(farm=Farm(hosts=2, links_per_page=1_000_000, cross=100))
    with serve_in_thread(web):
        body = _raw(web.port, b"GET /n/3 HTTP/1.1\r\nHost: farm1.test\r\n\r\n", limit=64 << 20)
    links = re.findall(rb'href="(//farm2\.test)?/n/([0-9]+)"', body)
    assert len(links) == 1_000_000
    assert len({n for _, n in links}) == 1_000_000
    assert sum(1 for host, _ in links if host) == 10_000


# -- the normal site: the oracle itself ------------------------------------------


def test_normal_site_every_page_fetched_exactly_once(tmp_path):
    web = HostileWeb(site=Site(pages=200))
    with serve_in_thread(web):
        run = crawl(tmp_path, web, ["site.test/"])
    assert_clean_exit(run)
    fetched = web.fetched("site.test")
    expected = web.site.expected_urls(web.port)
    assert set(fetched) == expected
    assert max(fetched.values()) == 1
    assert {r["url"] for r in run.rows} == expected
    assert all(r["status"] == 200 and r["title"] == f"site.test page {web.site.page_of(r['url'].split(str(web.port), 1)[1])}"
               for r in run.rows)


# -- Retry-After --------------------------------------------------------------------


@pytest.mark.parametrize("wheres", [("429", "503"), ("200", "robots")], ids=["429+503", "200+robots"])
def test_bad_retry_after_never_ends_the_peer(tmp_path, wheres):
    # Two statuses a crawl: each of RA_WHERE is covered, in half the peer runs.
    assert set(RA_WHERE) >= set(wheres)
    web = HostileWeb()
    hosts = {where: [f"ra-{variant}-{where}.test" for variant in RETRY_AFTER] for where in wheres}
    with serve_in_thread(web):
        # Each answer's Retry-After (bad or huge) is cut to 0.2 s here.
        run = crawl(tmp_path, web, [f"{h}/" for hs in hosts.values() for h in hs],
                    sections={"politeness": {"max_retry_after": 0.2, "host_concurrency": 4}})
    assert_clean_exit(run)
    expected = requested(web)
    for where, hs in hosts.items():
        expected |= {web.url(h) for h in hs}
        if where != "robots":  # robots.txt refused: the pages are never discovered
            expected |= {web.url(h, f"/{i}") for h in hs for i in range(PAGES_PER_HOST)}
    assert_rows_for(run, expected)


def test_retry_after_3600_is_capped_and_the_host_given_up(tmp_path):
    web = HostileWeb(site=Site(pages=20))
    with serve_in_thread(web):
        # Cut to 0.3 s: each of hold.test's answers asks for 12,000 times that.
        run = crawl(tmp_path, web, ["hold.test/0", "hold.test/1", "hold.test/2", "site.test/"],
                    sections={"politeness": {"max_retry_after": 0.3}})
    assert_clean_exit(run)
    held = {web.url("hold.test", f"/{i}") for i in range(3)}
    assert_rows_for(run, held | web.site.expected_urls(web.port))
    # Held for the cap each time until retry.down_give_up, then given up: not asked for an hour.
    assert len(web.requests("hold.test")) <= CAPS["retry.down_give_up"] / 0.3 + 3


# -- keep-alive desync ----------------------------------------------------------------


def test_bytes_past_content_length_do_not_answer_the_next_request(tmp_path):
    web = HostileWeb()
    with serve_in_thread(web):
        run = crawl(tmp_path, web, ["desync.test/"])
    assert_clean_exit(run)
    paths = ["/", *(f"/d/{i}" for i in range(8))]
    rows = run.by_url()
    assert_rows_for(run, {web.url("desync.test", p) for p in paths})
    logged = {e.target for e in web.requests("desync.test")}
    assert logged >= set(paths), "every page was asked for on the wire"
    assert not [t for t in logged if t.startswith("/smuggled/")], "links of the smuggled response were followed"
    wrong = {p: rows[web.url("desync.test", p)]["title"] for p in paths
             if rows[web.url("desync.test", p)]["title"] != f"desync.test {p}"}
    assert not wrong, f"rows carry another response's title: {wrong}"
    assert rows[web.url("desync.test", "/")]["n_links"] == 8


# -- robots.txt -----------------------------------------------------------------------


@pytest.mark.parametrize("host", ["bigrobots.test", "robots-huge.test"])
def test_large_robots_txt_rules_at_the_top_are_obeyed(tmp_path, host):
    web = HostileWeb()
    with serve_in_thread(web):
        run = crawl(tmp_path, web, [f"{host}/"])
    assert_clean_exit(run)
    rows = run.by_url()
    private = {web.url(host, f"/private/{i}") for i in range(5)}
    public = {web.url(host, f"/public/{i}") for i in range(5)}
    assert not private & requested(web), "a Disallow: /private/ URL was fetched"
    assert_rows_for(run, private | public)
    assert {rows[u]["error"] for u in private} == {"robots"}
    assert {rows[u]["status"] for u in public} == {200}


@pytest.mark.parametrize("kind", ["dns", "blocked", "connect"])
def test_unreachable_robots_txt_ends_the_crawl_with_rows_and_a_warning(tmp_path, kind):
    web = HostileWeb(site=Site(pages=20))
    host = {"dns": "nx.invalid", "blocked": "site.test", "connect": "refused.test"}[kind]
    dns = LocalDns(zone="nothing.invalid")  # NXDOMAIN for every name the static table lacks
    sections = {"crawl": {"allow_hosts": ["*.test", "*.invalid"]}}
    if kind == "blocked":
        sections["crawl"]["allow_private"] = False  # the SSRF guard refuses 127.0.0.1
    with serve_in_thread(web), in_thread(dns.serve):
        sections["dns"] = {"nameservers": [dns.nameserver]}
        seeds = [f"{host}/", f"{host}/a", f"{host}/b"] + ([] if kind == "blocked" else ["site.test/"])
        run = crawl(tmp_path, web, seeds, sections=sections)
    assert_clean_exit(run)
    rows = run.by_url()
    failing = {web.url(host, p) for p in ("/", "/a", "/b")}
    assert_rows_for(run, failing)
    assert {rows[u]["error"] for u in failing} == {kind}
    if kind != "blocked":
        assert_rows_for(run, web.site.expected_urls(web.port))
    warned = [line for line in run.peers[0].stderr().splitlines() if "WARNING" in line and host in line]
    assert warned, f"no warning naming {host}\n{run.stderr()}"


@pytest.mark.parametrize("host", ["robots-5xx.test", "robots-slow.test", "robots-garbage.test"])
def test_broken_robots_txt_ends_the_crawl_with_a_row_per_url(tmp_path, host):
    web = HostileWeb()
    with serve_in_thread(web):
        # robots-slow.test drips its 34 bytes over 17 s: a fetch timeout of
        # 0.5 s is still far shorter, and each of its 3 tries costs 0.5 s, not 3.
        run = crawl(tmp_path, web, [f"{host}/", f"{host}/public/0"], sections={"crawl": {"timeout": 0.5}})
    assert_clean_exit(run)
    assert_rows_for(run, {web.url(host), web.url(host, "/public/0")} | requested(web))
