"""peer.engine: one peer crawls the local test web, checked against the server's log."""

from __future__ import annotations

import functools
import json
import time
import tracemalloc
from collections import Counter
from pathlib import Path

import duckdb
import trio
from ringharness import ceiling, worst_window
from localweb import HostBehaviour, SiteGraph, serve_webfarm

from peer.core.config.cluster import ClusterConfig, parse_config
from peer.engine.crawler import Crawler

CRAWL_TIME_LIMIT = 120  # seconds; every crawl here is bounded in time


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return repr(v)


def make_config(tmp_path: Path, port: int, *, seeds: list[str] | None = None,
                crawl: dict | None = None, politeness: dict | None = None,
                extra: str = "") -> ClusterConfig:
    """A one-peer config for the local web on ``port``; dicts override keys, ``extra`` is appended."""
    sections = {
        "crawl": {
            "seeds": seeds or [f"http://s001.web.test:{port}/"],
            "allow_hosts": ["*.web.test"], "concurrency": 32, "allow_private": True,
            "timeout": 5.0, **(crawl or {}),
        },
        "politeness": {"rate": 0.0, "host_concurrency": 1, **(politeness or {})},
        "bloom": {"capacity": 100_000, "error_rate": 0.001},
    }
    text = f"""
[ring]
name = "test"

[[peer]]
id = "p1"
address = "tcp://127.0.0.1:5799"
data_dir = "{tmp_path / 'p1'}"

[dns]
resolve = {{ "*.web.test" = "127.0.0.1" }}
"""
    for name, table in sections.items():
        text += f"\n[{name}]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in table.items())
    return parse_config(text + extra, tmp_path / "cluster.toml")


async def crawl(cfg: ClusterConfig, **kw):
    crawler = Crawler(cfg, "p1", progress_interval=3600, **kw)
    with trio.fail_after(CRAWL_TIME_LIMIT):
        summary = await crawler.run()
    return crawler, summary


def rows(cfg: ClusterConfig, sql: str = "select url, status, error, depth, peer from pages"):
    with duckdb.connect(str(Path(cfg.peers[0].data_dir) / "pages.duckdb"), read_only=True) as con:
        return con.execute(sql).fetchall()


async def test_crawl_fetches_every_expected_url_exactly_once(tmp_path):
    graph = SiteGraph(hosts=4, pages_per_host=40, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        cfg = make_config(tmp_path, farm.port)
        crawler, summary = await crawl(cfg)
        nursery.cancel_scope.cancel()

    expected = graph.expected_urls(farm.port)
    fetched = Counter(
        f"http://{e.host}:{farm.port}{e.target}" for e in farm.log
        if e.method == "GET" and e.target != "/robots.txt"
    )
    assert set(fetched) == expected, (
        f"missing {sorted(expected - set(fetched))[:5]}, extra {sorted(set(fetched) - expected)[:5]}"
    )
    twice = {u: n for u, n in fetched.items() if n > 1}
    assert not twice, f"fetched more than once: {list(twice.items())[:5]}"
    assert not fetched.keys() & graph.disallowed_urls(farm.port)
    assert not fetched.keys() & graph.trap_urls(farm.port)
    assert max(farm.stats.max_inflight.values()) <= 1  # host_concurrency
    robots = Counter(e.host for e in farm.log if e.target == "/robots.txt")
    assert robots and max(robots.values()) == 1

    table = rows(cfg)
    assert len(table) >= len(expected)
    assert {u for u, *_ in table} >= expected
    assert summary.stop_reason == "frontier empty"
    assert {r[4] for r in table} == {"p1"}
    assert crawler.in_flight == 0


async def test_url_rules_and_tracking_parameters_as_the_server_saw_them(tmp_path):
    """Excluded URLs are never requested; tracking variants of a page are requested once."""
    from localweb.sitegraph.endpoints import TRACKING_LINKS

    graph = SiteGraph(hosts=3, pages_per_host=45, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        port = farm.port
        seeds = [f"http://s001.web.test:{port}/?utm_source=a&fbclid=b", f"http://s001.web.test:{port}/",
                 f"http://bad.web.test:{port}/tracking?utm_campaign=c"]
        cfg = make_config(tmp_path, port, seeds=seeds,
                          crawl={"rules": ["exclude:re:[?&]q=", "exclude:*/c1/*"]})
        _, summary = await crawl(cfg)
        nursery.cancel_scope.cancel()

    targets = [(e.host, e.target) for e in farm.log if e.method == "GET" and e.target != "/robots.txt"]
    # Every request as sent: no tracking or session-id parameter ever reached the server.
    assert not [t for _, t in targets if any(p in t.lower() for p in ("utm_", "fbclid", "gclid", "_ga=",
                                                                       "jsessionid"))], targets
    fetched = Counter(f"http://{h}:{port}{t}" for h, t in targets)
    tracking = f"http://bad.web.test:{port}/tracking"
    expected = graph.expected_urls(port, exclude=[r"[?&]q=", r"/c1/"]) | {tracking, tracking + "/page"}
    assert set(fetched) == expected, (
        f"missing {sorted(expected - set(fetched))[:5]}, extra {sorted(set(fetched) - expected)[:5]}")
    assert set(fetched.values()) == {1}  # the page of five spellings, and the seed of two, once each
    # What the rules left out is real: the graph links into /c1/ and to its files.
    everything = graph.expected_urls(port, skip_extensions=())
    assert any("/c1/" in u for u in everything) and any(u.endswith((".pdf", ".png")) for u in everything)
    assert not [u for u in fetched if "/c1/" in u or u.lower().endswith((".pdf", ".png", ".jpg"))]
    assert summary.excluded["rules"] >= 2 and summary.excluded["skip_extensions"] >= 2
    assert len(TRACKING_LINKS) == 8
    # The results hold the URLs the crawl kept (and those robots.txt disallows, not requested).
    disallowed = graph.disallowed_urls(port, exclude=[r"[?&]q=", r"/c1/"])
    assert {u for u, *_ in rows(cfg)} == expected | disallowed


async def test_max_pages_stops_the_crawl(tmp_path):
    graph = SiteGraph(hosts=4, pages_per_host=40, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        cfg = make_config(tmp_path, farm.port, crawl={"max_pages": 25})
        _, summary = await crawl(cfg)
        nursery.cancel_scope.cancel()
    pages = [e for e in farm.log if e.target != "/robots.txt"]
    assert summary.stop_reason == "max_pages reached"
    assert len(pages) == 25
    assert len(rows(cfg)) == 25


async def test_misbehaving_endpoints_are_recorded_and_the_crawl_goes_on(tmp_path):
    graph = SiteGraph(hosts=2, pages_per_host=20, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        bad = [f"http://bad.web.test:{farm.port}{p}" for p in (
            "/gzip-bomb", "/big-cl", "/big-chunked", "/drip", "/redirect-loop", "/malformed",
            "/latin1", "/reset", "/huge-header", "/status/500")]
        cfg = make_config(
            tmp_path, farm.port, seeds=[f"http://s001.web.test:{farm.port}/", *bad],
            crawl={"timeout": 1.5, "obey_robots": False},
            politeness={"host_concurrency": 4},
        )
        tracemalloc.start()
        try:
            _, summary = await crawl(cfg)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        nursery.cancel_scope.cancel()

    assert peak < 100 * 2**20, f"peak traced memory {peak / 2**20:.0f} MiB"
    by_url = {u: (s, e) for u, s, e, *_ in rows(cfg)}
    for url in bad:
        assert url in by_url, f"no row for {url}"
    def outcome(path):
        return by_url[f"http://bad.web.test:{farm.port}{path}"]

    assert outcome("/gzip-bomb") == (200, "too_large")  # cut at max_body, not inflated to 1 GB
    assert outcome("/big-cl") == (200, "too_large")     # refused by its Content-Length
    assert outcome("/big-chunked") == (200, "too_large")
    assert outcome("/drip")[1] == "timeout"  # headers came, the body never did
    assert outcome("/reset") == (None, "reset")
    assert outcome("/huge-header") == (None, "protocol")
    assert outcome("/malformed") == (200, None)
    assert outcome("/latin1") == (200, None)
    assert outcome("/status/500") == (500, None)
    assert outcome("/redirect-loop")[0] in (301, 302, 303, 307, 308)
    # The good part of the web was crawled completely all the same.
    expected = graph.expected_urls(farm.port, obey_robots=False)
    assert expected <= set(by_url)
    # 5xx and resets were retried, a bounded number of times.
    status500 = [e for e in farm.log if e.target == "/status/500"]
    assert len(status500) == 3
    assert summary.retries >= 2


async def test_redirect_targets_pass_dedupe_and_loops_end(tmp_path):
    graph = SiteGraph(hosts=1, pages_per_host=10, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        cfg = make_config(tmp_path, farm.port,
                          seeds=[f"http://bad.web.test:{farm.port}/redirect-loop",
                                 f"http://bad.web.test:{farm.port}/redirect/9"],
                          crawl={"obey_robots": False, "max_redirects": 5})
        await crawl(cfg)
        nursery.cancel_scope.cancel()
    hits = Counter(e.target for e in farm.log)
    assert all(n == 1 for n in hits.values()), hits
    table = rows(cfg, "select url, status, error from pages")
    assert any(e == "too_many_redirects" for _, _, e in table)


async def test_cli_crawls_and_stops_cleanly_on_sigterm(tmp_path):
    """python -m peer: SIGTERM mid-crawl ends with exit 0, a summary and a readable file."""
    import signal
    import subprocess
    import sys

    graph = SiteGraph(hosts=3, pages_per_host=200, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(functools.partial(
            serve_webfarm, graph, behaviours={h: HostBehaviour(latency=0.02) for h in graph.site_hosts()}))
        cfg = make_config(tmp_path, farm.port, politeness={"rate": 600.0, "host_concurrency": 1})
        toml = tmp_path / "cluster.toml"
        toml.write_text(cfg_text(cfg, farm.port, tmp_path))
        proc = await trio.lowlevel.open_process(
            [sys.executable, "-m", "peer", "--ring", str(toml), "--progress", "0.5"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        with trio.fail_after(60):
            while sum(e.target != "/robots.txt" for e in farm.log) < 20:
                await trio.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        with trio.fail_after(30):
            out = await proc.stdout.receive_some(1 << 20)
            err = await proc.stderr.receive_some(1 << 20)
            await proc.wait()
        nursery.cancel_scope.cancel()
    assert proc.returncode == 0, err
    assert b"crawl finished (stopped)" in out
    assert b"stopping" in err and b"pages" in err  # the warning and a progress line
    written = rows(cfg)
    fetched = {f"http://{e.host}:{farm.port}{e.target}" for e in farm.log if e.target != "/robots.txt"}
    assert 20 <= len(fetched) <= len(written) < len(graph.expected_urls(farm.port))
    # Every page the server answered before the stop is in the file.
    assert fetched <= {u for u, *_ in written} | {u for u in fetched if "/private/" in u}


def cfg_text(cfg: ClusterConfig, port: int, tmp_path: Path) -> str:
    return f"""
[[peer]]
id = "p1"
address = "tcp://127.0.0.1:5799"
data_dir = "{cfg.peers[0].data_dir}"

[crawl]
seeds = ["http://s001.web.test:{port}/"]
allow_hosts = ["*.web.test"]
allow_private = true

[politeness]
rate = 600.0

[dns]
resolve = {{ "*.web.test" = "127.0.0.1" }}

[bloom]
capacity = 100000
"""


def test_cli_refuses_an_existing_results_file_without_fresh(tmp_path, capsys, monkeypatch):
    """peer.commands.cli.main in process: the same checks as ``python -m peer``, before any event loop."""
    import io
    import logging

    from peer.commands.cli import main

    toml = tmp_path / "cluster.toml"
    data = tmp_path / "p1"
    toml.write_text(f'[[peer]]\nid = "p1"\naddress = "tcp://127.0.0.1:5799"\ndata_dir = "{data}"\n'
                    '[crawl]\nseeds = ["http://a.web.test/"]\n')
    data.mkdir()
    (data / "pages.duckdb").write_bytes(b"earlier")
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # no terminal, as stdin=DEVNULL was
    # main() sets up logging for the process; leave the root logger as it was.
    monkeypatch.setattr(logging.getLogger(), "handlers", list(logging.getLogger().handlers))
    assert main(["--ring", str(toml)]) == 2
    err = capsys.readouterr().err
    assert "holds an earlier crawl" in err and "--fresh" in err
    assert (data / "pages.duckdb").read_bytes() == b"earlier"
    assert main(["--ring", str(toml), "--fresh"]) == 2
    assert "pass --yes" in capsys.readouterr().err
    assert (data / "pages.duckdb").exists()


BOOK_RULE = """
[extract.book]
match = "*/product/*"
[extract.book.fields]
title = "h1.title::text"
price = ".price::text"
cover = "img.cover::attr(src)"
authors = "a.author::text*"
blurb = "p.blurb"
pounds = { css = ".price::text", strip = "£", re = '^([0-9]+)[.]' }
"""


async def test_extraction_rules_fill_an_items_table_from_the_shop(tmp_path):
    graph = SiteGraph(hosts=2, pages_per_host=10, shop=True, shop_products=12)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        cfg = make_config(tmp_path, farm.port, extra=BOOK_RULE)
        _, summary = await crawl(cfg)
        nursery.cancel_scope.cancel()

    expected = graph.shop_items(farm.port)
    got = rows(cfg, "select url, title, price, cover, authors, blurb, peer, fetched_at "
                    "from items_book order by url")
    assert [
        {"url": u, "title": t, "price": p, "cover": c, "authors": a, "blurb": b}
        for u, t, p, c, a, b, *_ in got
    ] == expected
    assert {r[6] for r in got} == {"p1"} and all(r[7] is not None for r in got)
    assert summary.items == len(expected) == 12
    # A field's strip and re are applied before the row is stored: "£12.49" -> "12".
    assert rows(cfg, "select url, pounds from items_book order by url") == [
        (e["url"], e["price"].removeprefix("£").split(".")[0]) for e in expected]
    # Every product page is in pages too: items join their page on url.
    pages = {u for (u,) in rows(cfg, "select url from pages where status = 200")}
    assert {e["url"] for e in expected} <= pages


# ---------------------------------------------------------------------------
# A hostile web through the fetcher= seam: where sockets add nothing, a fake
# fetcher answers, and trio's autojump clock runs the waits (Retry-After,
# robots.txt retries) at once.

import logging  # noqa: E402

import pytest  # noqa: E402
import trio.testing  # noqa: E402

from peer.engine import parsing as parsing_mod  # noqa: E402
from peer.engine.parsing import Parsing  # noqa: E402
from peer.core.http.result import FetchResult  # noqa: E402
from peer.core.crawl.limits import Cap  # noqa: E402
from peer.core.crawl.robots import MAX_ROBOTS_BYTES  # noqa: E402

FAKE_REQUEST_LIMIT = 20_000  # every fake crawl is bounded in requests, too


@pytest.fixture
def jump_clock():
    """trio's autojump, once the loop has been idle for 5 real ms.

    Not pytest-trio's ``autojump_clock`` (threshold 0): the engine waits on
    worker threads (DuckDB, the state journal, parsing), and with threshold
    0 the clock would race from timer to timer, past every deadline, while
    a thread works.
    """
    return trio.testing.MockClock(autojump_threshold=0.005)


def answer(url: str, status: int | None = 200, body: bytes = b"", *, error: str | None = None,
           ctype: str = "text/html", retry_after: float | None = None,
           truncated: bool = False) -> FetchResult:
    return FetchResult(url=url, status=status, content_type=ctype if status else "",
                       charset="utf-8" if status else None, location=None, retry_after=retry_after,
                       body=body, raw_bytes=len(body), truncated=truncated, error=error,
                       elapsed=0.0, address=None)


def html(*hrefs: str) -> bytes:
    return ("<html><body>" + "".join(f'<a href="{h}">l</a>' for h in hrefs) + "</body></html>").encode()


class FakeWeb:
    """A fetcher: ``site(url, max_body, prefix_ok)`` answers (or raises); every call is logged."""

    def __init__(self, site, latency=0.0) -> None:
        self.site = site
        self.latency = latency
        self.calls: list[tuple[str, int | None, bool, float]] = []
        self.in_flight: Counter[str] = Counter()
        self.max_in_flight: Counter[str] = Counter()
        self.first_call = trio.Event()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc) -> None:
        pass

    async def fetch(self, url: str, *, accept_html_only: bool = False,
                    max_body: int | None = None, prefix_ok: bool = False) -> FetchResult:
        self.calls.append((url, max_body, prefix_ok, trio.current_time()))
        self.first_call.set()
        if len(self.calls) > FAKE_REQUEST_LIMIT:
            pytest.fail("runaway crawl")  # a BaseException: the engine does not take it for a bug
        host = url.split("/")[2]
        self.in_flight[host] += 1
        self.max_in_flight[host] = max(self.max_in_flight[host], self.in_flight[host])
        try:
            await trio.sleep(self.latency(url) if callable(self.latency) else self.latency)
        finally:
            self.in_flight[host] -= 1
        return self.site(url, max_body, prefix_ok)

    def fetched(self, host: str | None = None, robots: bool = False) -> list[str]:
        return [u for u, *_ in self.calls if (host is None or f"//{host}/" in u)
                and u.endswith("/robots.txt") == robots]


def no_robots(url: str) -> FetchResult:
    return answer(url, 404, b"", ctype="text/plain")


def fake_config(tmp_path: Path, seeds: list[str], *, dedupe: bool = True, retry: dict | None = None,
                **crawl) -> ClusterConfig:
    politeness = crawl.pop("politeness", {})
    extra = "" if dedupe else "\n[dedupe]\nenabled = false\n"
    if retry:
        extra += "\n[retry]\n" + "".join(f"{k} = {v!r}\n" for k, v in retry.items())
    return make_config(tmp_path, 0, seeds=seeds, crawl=crawl, politeness=politeness, extra=extra)


_IN_THREAD = trio.to_thread.run_sync  # the watchdog's, whatever virtual_clock patches


async def run_bounded(crawler: Crawler):
    """``crawler.run()``, bounded in real time: virtual deadlines mean nothing to a jump clock.

    The watchdog waits in a thread, not on a trio timer: a mock clock jumps
    to any pending deadline whenever every task waits, also while one waits
    for a worker thread (the store's flushes), so a watchdog ticking every
    second was woken thousands of times a run (15,620 times in a 900 s run)
    and took the GIL from the very thread the loop was waiting for.
    """
    import threading

    done = threading.Event()

    async def watchdog():
        if not await _IN_THREAD(done.wait, CRAWL_TIME_LIMIT, abandon_on_cancel=True):
            raise TimeoutError(f"crawl still running after {CRAWL_TIME_LIMIT}s")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watchdog)
        try:
            summary = await crawler.run()
        finally:
            done.set()
    return summary


async def fake_crawl(cfg: ClusterConfig, web: FakeWeb):
    crawler = Crawler(cfg, "p1", progress_interval=3600, fetcher=web)
    return crawler, await run_bounded(crawler)


def normal_site(url: str) -> FetchResult:
    """site.web.test: an index and 20 pages, the crawl's innocent bystander."""
    path = url.split("/", 3)[3]
    if path == "":
        return answer(url, 200, html(*(f"/p{i}.html" for i in range(20))))
    return answer(url, 200, html("/"))


async def test_an_exception_in_one_job_is_an_internal_row_and_the_crawl_goes_on(
        tmp_path, monkeypatch, caplog):
    pages = [f"http://site.web.test/p{i}.html" for i in range(20)]
    broken = {pages[3]: ValueError, pages[4]: ValueError}

    def site(url, max_body, prefix_ok):
        if url in broken:
            raise broken[url]("a bug in the fetcher")
        if url == "http://other.web.test/robots.txt":
            raise KeyError("a bug in the robots.txt path")
        if url.endswith("/robots.txt"):
            return no_robots(url)
        return normal_site(url)

    real_parse = parsing_mod.parse_response

    def parse(url, *args):
        if url == pages[7]:
            raise RuntimeError("a bug in the parser thread")
        return real_parse(url, *args)

    monkeypatch.setattr(parsing_mod, "parse_response", parse)
    web = FakeWeb(site)
    cfg = fake_config(tmp_path, ["http://site.web.test/", "http://other.web.test/x"])
    with caplog.at_level(logging.ERROR, logger="peer.engine"):
        crawler, summary = await fake_crawl(cfg, web)

    by_url = {u: e for u, _, e, *_ in rows(cfg)}
    for url in (pages[3], pages[4], pages[7], "http://other.web.test/x"):
        assert by_url[url] == "internal", url
    # The rest of the crawl completed: every other page has its ordinary row.
    assert {u for u in pages if by_url[u] is None} == set(pages) - {pages[3], pages[4], pages[7]}
    assert summary.stop_reason == "frontier empty"
    assert summary.internal == {"ValueError": 2, "RuntimeError": 1, "KeyError": 1}
    assert summary.errors["internal"] == 4
    assert "internal: ValueError 2" in summary.render()
    # One log line per type, with its traceback, the first time only.
    logged = [r for r in caplog.records if "internal error" in r.getMessage()]
    assert sorted(r.getMessage().split()[2] for r in logged) == ["KeyError", "RuntimeError", "ValueError"]
    assert all(r.exc_info and r.exc_info[0].__name__ in r.getMessage() for r in logged)
    # Frontier.done exactly once a job: a second call would have raised
    # (PeerError, counted above), a missing one would leave a request in flight.
    assert crawler.peer.crawl.frontier.in_flight == 0 and crawler.in_flight == 0
    assert crawler.limits_figures()["error.internal"] == 4


async def test_a_disk_that_refuses_the_journal_stops_the_peer_and_is_no_pages_internal_error(
        tmp_path, monkeypatch, caplog):
    # A read-only disk made the journal's commit of a page's records fail; the
    # catch-all of one job recorded that page as an 'internal' row (logged
    # with a 20-line traceback), as if the page had been fetched and done.
    from peer.errors import StorageError, user_error
    from peer.state.journal import PeerState

    pages = [f"http://site.web.test/p{i}.html" for i in range(20)]
    failing = {"on": False}
    real_done, real_commit = PeerState.done, PeerState.commit

    def done(self, url, row):
        if url == pages[5]:
            failing["on"] = True  # the disk goes read-only with this page's records
        real_done(self, url, row)

    def commit(self):
        if failing["on"]:
            raise StorageError(f"{self.directory}/journal-1.log: cannot write crawl state "
                               "(Read-only file system)")
        real_commit(self)

    monkeypatch.setattr(PeerState, "done", done)
    monkeypatch.setattr(PeerState, "commit", commit)
    web = FakeWeb(lambda url, max_body, prefix_ok: no_robots(url) if url.endswith("/robots.txt")
                  else normal_site(url))
    cfg = fake_config(tmp_path, ["http://site.web.test/"])
    with caplog.at_level(logging.ERROR, logger="peer.engine"), pytest.raises(BaseException) as info:
        await fake_crawl(cfg, web)
    assert isinstance(user_error(info.value, (StorageError,)), StorageError), info.value
    assert not [r for r in caplog.records if "internal error" in r.getMessage()]
    assert all(e != "internal" for _, _, e, *_ in rows(cfg))


async def test_a_link_farm_and_traps_are_capped_and_the_normal_site_is_crawled_whole(tmp_path):
    def site(url, max_body, prefix_ok):
        if url.endswith("/robots.txt"):
            return no_robots(url)
        host, path = url.split("/")[2], "/" + url.split("/", 3)[3]
        if host == "farm.web.test":  # every page links 1000 new pages
            n = int(path[3:] or 0)
            return answer(url, 200, html(*(f"/f/{n * 1000 + i}" for i in range(1, 1001))))
        if host == "trap.web.test":
            if path.startswith("/long"):  # the query doubles on every hop
                return answer(url, 200, html(url.split("?")[0] + "?q=" + "z" * 2 * max(1, len(url))))
            # Relative links that grow the path for ever: /a/a/a/..., /x/y/x/y/...
            return answer(url, 200, html("a/" if path.startswith("/a/") else "x/y/"))
        if host == "cal.web.test":  # an infinite calendar: next month, for ever
            m = int(path.split("=")[1])
            return answer(url, 200, html(f"/cal?m={m + 1}", f"/cal?m={m - 1}"))
        return normal_site(url)

    web = FakeWeb(site)
    cfg = fake_config(tmp_path, [
        "http://farm.web.test/f/0", "http://trap.web.test/a/", "http://trap.web.test/x/y/",
        "http://trap.web.test/long", "http://cal.web.test/cal?m=0", "http://site.web.test/"],
        max_links_per_page=100, max_urls_per_host=300, max_url_length=512, max_path_repeat=3,
        # A trap's pages are the same bytes at every depth: exact duplicates,
        # whose links dedupe would not follow. This test is of the caps.
        dedupe=False)
    crawler, summary = await fake_crawl(cfg, web)

    fetched = Counter(web.fetched())
    assert max(fetched.values()) == 1
    assert len(web.fetched("farm.web.test")) == 300  # the host cap, queued plus fetched
    assert len(web.fetched("cal.web.test")) == 300
    assert set(web.fetched("trap.web.test")) == {
        "http://trap.web.test/a/", "http://trap.web.test/a/a/", "http://trap.web.test/a/a/a/",
        "http://trap.web.test/x/y/", "http://trap.web.test/x/y/x/y/",
        "http://trap.web.test/x/y/x/y/x/y/", *(u for u in web.fetched("trap.web.test") if "long" in u)}
    assert all(len(u) <= 512 for u in web.fetched())
    assert 1 < len([u for u in web.fetched("trap.web.test") if "long" in u]) < 10
    # The bystander was crawled whole.
    assert {f"http://site.web.test/p{i}.html" for i in range(20)} <= set(web.fetched("site.web.test"))
    hits = crawler.limits.hits
    assert hits[Cap.PAGES_CUT] == 300 and hits[Cap.LINKS_PER_PAGE] == 300 * 900
    assert hits[Cap.URLS_PER_HOST] >= 300 * 100 - 300
    assert hits[Cap.PATH_REPEAT] == 2 and hits[Cap.URL_LENGTH] == 1
    # Dropped URLs never went into the Bloom filter: only queued ones did.
    assert crawler.bloom.count <= 300 + 300 + 10 + 21
    # URLs a cap kept from the queue were never requested; a cap that cuts links is a counter.
    figures = crawler.status_figures()
    assert figures.not_requested["max_urls_per_host"] == hits[Cap.URLS_PER_HOST]
    assert figures.not_requested["max_path_repeat"] == 2 and figures.not_requested["max_url_length"] == 1
    assert "cap.max_urls_per_host" not in figures.limits and figures.limits["cap.max_links_per_page"] > 0
    line = summary.render().splitlines()[-1]
    assert line.startswith("  limits: ") and "over host cap" in line and "links cut 270000 on 300 pages" in line


async def test_a_long_retry_after_holds_the_host_for_the_cap_each_time_until_down_give_up(
        tmp_path, jump_clock, caplog):
    # Retry-After: a date in the year 9999, on every answer of ra.web.test.
    forever = 2.5e11

    def site(url, max_body, prefix_ok):
        if url.endswith("/robots.txt"):
            return no_robots(url)
        if "//ra.web.test/" in url:
            return answer(url, 429, b"slow down", retry_after=forever)
        path = url.split("/", 3)[3]
        if path == "":
            return answer(url, 200, html(*(f"/p{i}.html" for i in range(20))))
        # p10...p19 are fetched 2 s apart from 24 s on, after ra.web.test
        # was given up (retry.down_give_up, 20 s): their links to it are not queued.
        late = int(path[1:].split(".")[0]) >= 10
        return answer(url, 200, html("/", *([f"http://ra.web.test/late-{path}"] if late else [])))

    web = FakeWeb(site, latency=lambda url: 2.0 if "//site." in url else 0.5)
    cfg = fake_config(tmp_path, ["http://ra.web.test/a", "http://ra.web.test/b",
                                 "http://ra.web.test/c", "http://site.web.test/"],
                      politeness={"max_retry_after": 5.0, "max_delay": 5.0}, retry={"down_give_up": 20.0})
    t0 = trio.current_time()
    with caplog.at_level(logging.WARNING, logger="peer.engine"):
        crawler, summary = await fake_crawl(cfg, web)
    elapsed = trio.current_time() - t0

    # Held 5 s each time, not until the year 9999, no retry charged; given up after 20 s, and the crawl ends.
    assert elapsed < 120, elapsed
    asked = [t for u, _, _, t in web.calls if "//ra.web.test/" in u and not u.endswith("robots.txt")]
    assert 20 <= asked[-1] - asked[0] < 20 + 5 + 1 and len(asked) >= 4
    gaps = [b - a for a, b in zip(asked, asked[1:])]
    # The cap, and the answer's own 0.5 s (a 429 doubles the politeness delay too: up to max_delay, 5 s here).
    assert all(5 <= g <= 5 + 0.5 + 0.01 for g in gaps), gaps
    by_url = {u: (s, e) for u, s, e, *_ in rows(cfg)}
    assert {u: v for u, v in by_url.items() if "//ra.web.test/" in u} == {
        "http://ra.web.test/a": (429, "retry_after"),
        "http://ra.web.test/b": (None, "retry_after"),
        "http://ra.web.test/c": (None, "retry_after"),
    }
    hits = crawler.limits.hits
    assert hits[Cap.RETRY_AFTER] == len(asked) and hits[Cap.HOSTS_GIVEN_UP] == 1
    assert hits[Cap.GIVEN_UP] == 10  # the late links: dropped, counted
    assert any("giving up ra.web.test" in r.getMessage() and "2 queued URLs" in r.getMessage()
               for r in caplog.records)
    assert f"Retry-After cut {len(asked)}" in summary.limits
    assert "hosts given up 1 (10 URLs dropped)" in summary.limits
    assert {f"http://site.web.test/p{i}.html" for i in range(20)} <= set(by_url)


async def test_a_host_down_for_60s_mid_crawl_is_held_and_every_page_fetched_once_after(
        tmp_path, jump_clock, caplog):
    # Connection refused from the 5th request of site.web.test on, for 60 s of the crawl's clock.
    down: list[float] = []
    served: Counter[str] = Counter()  # the server's log: pages answered

    def site(url, max_body, prefix_ok):
        if url.endswith("/robots.txt"):
            return no_robots(url)
        now = trio.current_time()
        if not down and sum(served.values()) == 5:
            down.append(now)
        if down and now < down[0] + 60.0:
            return answer(url, None, error="connect")
        served[url] += 1
        return normal_site(url)

    web = FakeWeb(site, latency=0.1)
    cfg = fake_config(tmp_path, ["http://site.web.test/"], politeness={"rate": 120.0})
    with caplog.at_level(logging.WARNING, logger="peer.engine"):
        crawler, summary = await fake_crawl(cfg, web)
    refused = [t for u, _, _, t in web.calls if not u.endswith("robots.txt") and down[0] - 0.2 <= t < down[0] + 60]
    assert len(refused) >= 3  # the outage was met, and probed
    expected = {"http://site.web.test/", *(f"http://site.web.test/p{i}.html" for i in range(20))}
    assert set(served) == expected and max(served.values()) == 1  # all of them, none twice
    assert {(s, e) for _, s, e, *_ in rows(cfg)} == {(200, None)}  # no page lost to the outage
    figures = crawler.limits_figures()  # ring status's and /metrics' figures
    assert figures.get("outage.went_down") == 1 and figures.get("outage.recovered") == 1
    assert any("outages: 1 host outage, 1 recovered, 0 given up" in line for line in summary.details)


@pytest.mark.parametrize("cause", ["dns", "blocked"])
async def test_a_robots_txt_no_retry_can_mend_records_the_hosts_urls_at_once(
        tmp_path, jump_clock, caplog, cause):
    def site(url, max_body, prefix_ok):
        if "//dead.web.test/" in url:
            return answer(url, None, error=cause)
        if url.endswith("/robots.txt"):
            return no_robots(url)
        return normal_site(url)

    web = FakeWeb(site, latency=0.01)
    dead = [f"http://dead.web.test/{c}" for c in "abcde"]
    cfg = fake_config(tmp_path, [*dead, "http://site.web.test/"])
    t0 = trio.current_time()
    with caplog.at_level(logging.WARNING, logger="peer.engine"):
        crawler, summary = await fake_crawl(cfg, web)
    assert trio.current_time() - t0 < 60  # no 10-minute hold
    assert web.fetched("dead.web.test", robots=True) == ["http://dead.web.test/robots.txt"]
    assert web.fetched("dead.web.test") == []
    by_url = {u: e for u, _, e, *_ in rows(cfg)}
    assert {u: by_url[u] for u in dead} == {u: cause for u in dead}
    warned = [r.getMessage() for r in caplog.records if "dead.web.test" in r.getMessage()]
    assert len(warned) == 1 and cause in warned[0] and "5 queued URLs" in warned[0]
    assert summary.errors[cause] == 5 and "robots" not in summary.errors


async def test_a_refused_robots_txt_warns_shows_the_hold_and_ends_as_connect(
        tmp_path, virtual_clock, caplog):
    def site(url, max_body, prefix_ok):
        if "//dead.web.test/" in url:
            return answer(url, None, error="connect")
        if url.endswith("/robots.txt"):
            return no_robots(url)
        return normal_site(url)

    web = FakeWeb(site, latency=0.01)
    dead = [f"http://dead.web.test/{c}" for c in "abc"]
    cfg = fake_config(tmp_path, [*dead, "http://site.web.test/"])
    crawler = Crawler(cfg, "p1", progress_interval=3600, fetcher=web)
    lines, figures = [], []

    async def watch():
        await web.first_call.wait()
        await trio.sleep(15)  # halfway through the first 30 s hold
        lines.append(crawler.progress_line())
        figures.append(crawler.status_figures())

    with caplog.at_level(logging.WARNING, logger="peer.engine"):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch)
            summary = await run_bounded(crawler)

    # crawl.robots_retry 30 s, doubling, crawl.robots_tries 4: given up
    # 210 s after the first try (and a host delay of 1 s a try), not 20 minutes.
    tries = [t for u, _, _, t in web.calls if u == "http://dead.web.test/robots.txt"]
    gaps = [b - a for a, b in zip(tries, tries[1:])]
    assert len(tries) == 4 and [round(g) for g in gaps] in ([30, 60, 120], [31, 61, 121]), gaps
    assert web.fetched("dead.web.test") == []
    # The line says which try comes next and the key that bounds them.
    assert (", 1 held: robots.txt of dead.web.test unreachable (no connection on port 80), "
            "try 2 of 4 (crawl.robots_tries), retry in 15s") in lines[0], lines[0]
    assert figures[0].limits["held.robots"] == 1 and figures[0].frontier == 3
    warned = [r.getMessage() for r in caplog.records if "dead.web.test" in r.getMessage()]
    assert len(warned) == 4
    assert warned[0].startswith("robots.txt http://dead.web.test/robots.txt unreachable: no connection on "
                                "port 80; tried again in 30s (2 of 4), then its URLs are recorded as 'connect'")
    assert [w.startswith("robots.txt of dead.web.test still unreachable") for w in warned[1:3]] == [True, True]
    assert "recorded as 'connect'" in warned[3]
    by_url = {u: e for u, _, e, *_ in rows(cfg)}
    assert {u: by_url[u] for u in dead} == {u: "connect" for u in dead}
    assert "hosts held: robots 1" in summary.limits


async def test_a_robots_txt_over_max_body_is_read_up_to_500_kib(tmp_path):
    rules = b"User-agent: *\nDisallow: /private/\n"
    big = rules + b"# filler line\n" * (3 * 2**20 // 14)  # 3 MiB, over crawl.max_body

    def site(url, max_body, prefix_ok):
        if url.endswith("/robots.txt"):
            assert (max_body, prefix_ok) == (MAX_ROBOTS_BYTES, True)
            return answer(url, 200, big[:max_body], ctype="text/plain", truncated=True)
        path = url.split("/", 3)[3]
        return answer(url, 200, html("/private/x.html", "/public.html") if path == "" else html())

    web = FakeWeb(site)
    cfg = fake_config(tmp_path, ["http://site.web.test/"])
    _, summary = await fake_crawl(cfg, web)
    assert set(web.fetched()) == {"http://site.web.test/", "http://site.web.test/public.html"}
    by_url = {u: e for u, _, e, *_ in rows(cfg)}
    assert by_url["http://site.web.test/private/x.html"] == "robots"


async def test_a_blocked_host_is_recorded_as_blocked_without_a_request(tmp_path):
    """The real fetcher and SSRF guard: loopback refused, no socket opened, no hold."""
    graph = SiteGraph(hosts=1, pages_per_host=5, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        seeds = [f"http://s001.web.test:{farm.port}/", f"http://s001.web.test:{farm.port}/c0/"]
        cfg = make_config(tmp_path, farm.port, seeds=seeds, crawl={"allow_private": False})
        _, summary = await crawl(cfg)
        nursery.cancel_scope.cancel()
    assert farm.log == []
    assert {u: e for u, _, e, *_ in rows(cfg)} == {u: "blocked" for u in seeds}
    assert summary.robots_fetches == 0  # refused by the guard: nothing was fetched


async def test_hosts_on_one_ip_share_its_budget_in_every_second(tmp_path, virtual_clock):
    # Ten hosts that the static DNS entry puts on one address, 600 pages/min
    # each (100/s together) under an ip_rate of 1200 pages/min (20/s): the
    # address, as its server's log would show it, gets at most the ceiling
    # of 20/s in any 1 s and 5 s window, and uses at least 90% of it.
    hosts = [f"h{i:02d}.web.test" for i in range(10)]

    def site(url, *_):
        if url.endswith("/robots.txt"):
            return no_robots(url)
        path = url.split("/", 3)[3]
        if path == "":
            return answer(url, 200, html(*(f"/p{i}.html" for i in range(40))))
        return answer(url, 200, html("/", *(f"http://{h}/" for h in hosts)))

    # Every host's index is the same bytes (relative links): dedupe would
    # call nine of them exact duplicates and not follow their links.
    cfg = fake_config(tmp_path, [f"http://{h}/" for h in hosts], dedupe=False,
                      politeness={"rate": 600.0, "ip_rate": 1200.0})
    web = FakeWeb(site, latency=0.02)
    crawler, summary = await fake_crawl(cfg, web)
    starts = sorted(t for _, _, _, t in web.calls)
    assert len(web.fetched()) == 10 * 41
    frontier = crawler.peer.crawl.frontier
    assert frontier.n_ips == 0 or frontier.host_ip(hosts[0]) == "127.0.0.1"
    for w in (1.0, 5.0):
        assert worst_window(starts, w) <= ceiling(20.0, w), w
    busy = starts[-1] - starts[0]
    assert len(starts) / busy >= 0.9 * 20.0
    assert "IP addresses paced 1" in summary.render()


async def test_a_fast_host_never_gets_more_than_the_ceiling_in_a_second(tmp_path, virtual_clock):
    # 600 pages/min with two requests in flight: retries, robots.txt and
    # 503s included, no 1 s or 5 s window of the host's log is over the ceiling.
    calls = {"n": 0}

    def site(url, *_):
        if url.endswith("/robots.txt"):
            return no_robots(url)
        calls["n"] += 1
        path = url.split("/", 3)[3]
        if calls["n"] % 37 == 0:
            return answer(url, 503, b"", retry_after=0.0)
        if path == "":
            return answer(url, 200, html(*(f"/p{i}.html" for i in range(200))))
        return answer(url, 200, html("/"))

    cfg = fake_config(tmp_path, ["http://fast.web.test/"],
                      politeness={"rate": 600.0, "host_concurrency": 2})
    web = FakeWeb(site, latency=0.01)
    await fake_crawl(cfg, web)
    starts = sorted(t for _, _, _, t in web.calls)
    assert len(web.fetched()) >= 201
    for w in (1.0, 5.0):
        assert worst_window(starts, w) <= ceiling(10.0, w), w
    # A 503 doubles the delay as a penalty halved each window: slower, never faster.


# ---------------------------------------------------------------------------
# Politeness of the whole engine on trio's autojump clock: a fake web that
# answers after a latency in virtual time, and every request start logged as
# the server's log would show it. Virtual minutes take real milliseconds per
# request, and a loaded machine cannot bend a measurement.


@pytest.fixture
def virtual_clock(monkeypatch):
    """trio's autojump clock (threshold 0), with the worker threads' work done on the loop.

    With threshold 0 the clock jumps whenever every task waits, including
    one waiting for a worker thread; and while a thread works and no
    deadline is pending, the loop polls without sleeping. So the parser
    thread, the one thread on a job's path, is replaced by a call on the
    loop (the same function), and so is every ``trio.to_thread.run_sync``
    (the store's flushes, the state's snapshots): the same calls, in the
    same order, on a clock that moves only when the crawl waits. A
    politeness run took 2-3 times the CPU with them in threads.
    """
    async def inline_parse(self, job, res):
        return self.inline(job, res)

    async def inline(fn, *args, **kwargs):
        await trio.lowlevel.checkpoint()
        return fn(*args)

    monkeypatch.setattr(Parsing, "threaded", inline_parse)
    monkeypatch.setattr(trio.to_thread, "run_sync", inline)
    return trio.testing.MockClock(autojump_threshold=0)


def endless_site(url: str, *_) -> FetchResult:
    """Page n links pages 3n+1..3n+3: more pages than any run here can fetch."""
    if url.endswith("/robots.txt"):
        return no_robots(url)
    path = url.split("/", 3)[3]
    n = int(path or 0)
    return answer(url, 200, html(*(f"/{3 * n + i}" for i in (1, 2, 3))))


async def polite_run(tmp_path, web: FakeWeb, seconds: float, **politeness) -> list[float]:
    """Crawl one host for ``seconds`` of virtual time from its first request; its request starts."""
    cfg = fake_config(tmp_path, ["http://a.web.test/"], politeness=politeness)
    crawler = Crawler(cfg, "p1", progress_interval=3600, fetcher=web)
    async with trio.open_nursery() as nursery:
        async def stop_later():
            await web.first_call.wait()
            await trio.sleep(seconds)
            crawler.stop()

        nursery.start_soon(stop_later)
        summary = await run_bounded(crawler)
    assert summary.stop_reason == "stopped"
    starts = sorted(t for _, _, _, t in web.calls)
    return [t - starts[0] for t in starts]


def assert_ceilings(starts: list[float], per_minute: float, what: str) -> None:
    """ceil(1.1 x setpoint x W) + 1 in any W window, counted at request start."""
    for w in (1.0, 5.0):
        worst = worst_window(starts, w)
        assert worst <= ceiling(per_minute / 60.0, w), f"{what}: {worst} starts in {w:g} s"


def rate_between(starts: list[float], a: float, b: float) -> float:
    """Requests per minute started in [a, b)."""
    return sum(a <= t < b for t in starts) / (b - a) * 60.0


POLITE_RATES = [6.0, 60.0, 600.0, 1200.0]
#: Seconds of virtual time a run lasts at each rate: at least 60 requests,
#: and 30 s past the first 60 s window.
POLITE_SECONDS = {6.0: 900.0, 60.0: 240.0, 600.0: 90.0, 1200.0: 90.0}


@pytest.mark.parametrize("concurrency", [1, 4])
@pytest.mark.parametrize("rate", POLITE_RATES)
async def test_the_engine_keeps_the_ceilings_and_the_setpoint_at_any_rate(
        tmp_path, virtual_clock, rate, concurrency):
    seconds = POLITE_SECONDS[rate]
    web = FakeWeb(endless_site, latency=0.05)
    starts = await polite_run(tmp_path, web, seconds, rate=rate, window=60.0,
                              host_concurrency=concurrency)
    assert_ceilings(starts, rate, f"{rate:g}/min x {concurrency}")
    # After the first window the PID has its measure; the rate is the setpoint.
    got = rate_between(starts, 60.0, seconds)
    assert 0.9 * rate <= got <= 1.05 * rate, f"{got:.1f}/min, setpoint {rate:g}"
    assert web.max_in_flight["a.web.test"] <= concurrency


@pytest.mark.parametrize("concurrency", [1, 4])
async def test_a_latency_step_slows_the_host_to_what_its_slots_carry_and_it_recovers(
        tmp_path, virtual_clock, concurrency):
    """50 -> 1000 -> 50 ms at 600/min and 10 s windows: the ceilings always, the setpoint when it can."""
    # 40 s phases: each is judged over its last 30 s (three windows, 300
    # requests at the setpoint), after one window of settling.
    rate, window, phase = 600.0, 10.0, 40.0

    def latency(url: str) -> float:
        t = trio.current_time() - t0[0]
        return 1.0 if phase <= t < 2 * phase else 0.05

    t0 = [0.0]
    web = FakeWeb(endless_site, latency=latency)

    async def mark_start():
        await web.first_call.wait()
        t0[0] = web.calls[0][3]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(mark_start)
        starts = await polite_run(tmp_path, web, 3 * phase, rate=rate, window=window,
                                  host_concurrency=concurrency)
    assert_ceilings(starts, rate, f"latency step x {concurrency}")
    capacity = 60.0 * concurrency / 1.0  # pages/min the slots carry at 1 s a request
    for n, can in enumerate([rate, min(rate, capacity), rate]):
        got = rate_between(starts, n * phase + window, (n + 1) * phase)
        assert got >= 0.9 * can, f"phase {n}: {got:.1f}/min, can {can:g}"
        assert got <= 1.05 * rate, f"phase {n}: {got:.1f}/min over the setpoint"


async def test_the_pid_holds_the_rate_through_latency_steps_at_one_second_windows(
        tmp_path, virtual_clock):
    """20 pages a 1 s window (1200/min), the host at 20 ms, then 300 ms, then 20 ms again.

    The seed's gains: the frontier reads them at the seed's operating point
    (40 pages/min) and scales them to this rate and window itself
    (docs/politeness.md). Before the virtual clock this ran 21 s against
    a real server and needed a loose band for a loaded machine.
    """
    step = 7.0
    t0 = [0.0]

    def latency(url: str) -> float:
        t = trio.current_time() - t0[0]
        return 0.3 if step <= t < 2 * step else 0.02

    web = FakeWeb(endless_site, latency=latency)

    async def mark_start():
        await web.first_call.wait()
        t0[0] = web.calls[0][3]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(mark_start)
        starts = await polite_run(
            tmp_path, web, 3 * step, rate=1200.0, window=1.0, kp=-0.05, ki=-0.01, kd=0.0,
            initial_delay=0.1, min_delay=0.0, max_delay=1.0, integral_limit=15.0,
            host_concurrency=8)
    per_window = Counter(int(t) for t in starts)
    trace = [per_window.get(w, 0) for w in range(int(3 * step))]
    assert_ceilings(starts, 1200.0, "PID")
    for phase in range(3):
        # The first 3 windows of each phase: the controller settling. Within
        # 10% of the setpoint, the ceiling's own margin; measured: 21.2, 20.5
        # and 20.2 (a slow first second winds the integral up a little).
        windows = trace[int(phase * step) + 3:int((phase + 1) * step)]
        mean = sum(windows) / len(windows)
        assert 18 <= mean <= 22, f"phase {phase}: mean {mean:.1f}/window, setpoint 20; trace {trace}"


@pytest.mark.parametrize("retry_after", [None, 5.0])
async def test_429s_back_the_host_off_at_once_and_the_rate_comes_back(
        tmp_path, virtual_clock, retry_after):
    """30 s of 429s at 600/min: the ceilings hold, the host slows at once, then recovers."""
    # The 429s start after three 10 s windows at the setpoint, the PID settled.
    rate, window, busy_from, busy_for = 600.0, 10.0, 30.0, 30.0
    first = []

    def site(url, *rest):
        now = trio.current_time()
        if not first:
            first.append(now)
        if not url.endswith("/robots.txt") and busy_from <= now - first[0] < busy_from + busy_for:
            return answer(url, 429, b"", retry_after=retry_after)
        return endless_site(url, *rest)

    web = FakeWeb(site, latency=0.05)
    end = busy_from + busy_for + 10 * window
    starts = await polite_run(tmp_path, web, end, rate=rate, window=window, host_concurrency=2)
    assert_ceilings(starts, rate, "429s")
    n429 = sum(1 for _, _, _, t in web.calls
               if busy_from <= t - first[0] < busy_from + busy_for)
    assert 1 <= n429 <= 12, n429  # slowed at once: not a 429 for every request of 30 s
    assert rate_between(starts, end - 3 * window, end) >= 0.9 * rate


async def test_host_concurrency_is_never_exceeded(tmp_path, virtual_clock):
    pages = [f"http://{h}.web.test/p{i}" for h in ("a", "b") for i in range(40)]
    web = FakeWeb(lambda url, *_: no_robots(url) if url.endswith("robots.txt") else answer(url, 200, html()),
                  latency=0.02)
    cfg = fake_config(tmp_path, pages, politeness={"host_concurrency": 3})
    await fake_crawl(cfg, web)
    assert web.max_in_flight == {"a.web.test": 3, "b.web.test": 3}
    assert len(web.fetched()) == 80


async def test_robots_crawl_delay_spaces_the_hosts_requests(tmp_path, virtual_clock):
    def site(url, *_):
        if url == "http://slow.web.test/robots.txt":
            return answer(url, 200, b"User-agent: *\nCrawl-delay: 0.4\n", ctype="text/plain")
        if url.endswith("/robots.txt"):
            return no_robots(url)
        return answer(url, 200, html())

    seeds = [f"http://{h}.web.test/p{i}" for h in ("slow", "fast") for i in range(8)]
    web = FakeWeb(site, latency=0.01)
    cfg = fake_config(tmp_path, seeds, politeness={"host_concurrency": 2})
    await fake_crawl(cfg, web)
    slow = [t for u, _, _, t in web.calls if "//slow." in u and not u.endswith("robots.txt")]
    gaps = [b - a for a, b in zip(slow, slow[1:])]
    assert len(slow) == 8 and min(gaps) >= 0.4 - 1e-9, gaps  # start to start, on the virtual clock
    fast = [t for u, _, _, t in web.calls if "//fast." in u]
    assert min(b - a for a, b in zip(fast, fast[1:])) < 0.4  # the floor is per host
    assert {u for u, *_ in rows(cfg)} == set(seeds)


async def test_a_rate_limited_host_is_backed_off_and_completed(tmp_path, virtual_clock):
    """A token bucket of 2 at 20/s answers 429 (Retry-After 1) past it; every URL ends in a 200."""
    bucket = {"tokens": 2.0, "t": 0.0}
    statuses: Counter[int] = Counter()

    def site(url, *_):
        if url.endswith("/robots.txt"):
            return no_robots(url)
        now = trio.current_time()
        bucket["tokens"] = min(2.0, bucket["tokens"] + (now - bucket["t"]) * 20.0)
        bucket["t"] = now
        if bucket["tokens"] < 1.0:
            statuses[429] += 1
            return answer(url, 429, b"", retry_after=1.0)
        bucket["tokens"] -= 1.0
        statuses[200] += 1
        return answer(url, 200, html())

    pages = [f"http://rl.web.test/p{i}" for i in range(15)]
    web = FakeWeb(site, latency=0.0)
    cfg = fake_config(tmp_path, pages, politeness={"host_concurrency": 2, "window": 1.0})
    _, summary = await fake_crawl(cfg, web)
    assert statuses[429] >= 1
    assert {u: s for u, s, *_ in rows(cfg)} == {u: 200 for u in pages}
    assert summary.retries == statuses[429]


async def test_a_snapshot_is_written_in_a_thread_while_the_loop_keeps_ticking(tmp_path, monkeypatch):
    """A full snapshot of 20k queued URLs and a slow disk: a gossip-like timer goes on meanwhile.

    Real time on purpose: what is measured is whether the event loop keeps
    running while the snapshot is written. The writer sleeps 1.5 s after
    writing (a slow disk); the timer ticks every 10 ms.
    """
    import threading

    from peer.state.journal import PeerState

    loop_thread = threading.get_ident()
    written: dict[str, float] = {}
    real_write = PeerState.write_snapshot

    def slow_write(self, *args):
        written["thread"] = threading.get_ident()
        t = time.monotonic()
        stats = real_write(self, *args)
        time.sleep(1.5)
        written["start"], written["end"] = t, time.monotonic()
        return stats

    monkeypatch.setattr(PeerState, "write_snapshot", slow_write)
    web = FakeWeb(lambda url, *_: answer(url, 200, html()), latency=3600.0)  # every fetch hangs
    cfg = fake_config(tmp_path, ["http://seed.web.test/"], obey_robots=False, max_urls_per_host=0)
    crawler = Crawler(cfg, "p1", progress_interval=3600, fetcher=web)
    # A fifth of the Bloom filter's capacity: no false positive among them (the
    # hashes are fixed, so this holds on every run).
    queued = [f"http://h{i % 50}.web.test/p{i}" for i in range(20_000)]
    ticks: list[float] = []
    during = [f"http://late.web.test/p{i}" for i in range(100)]

    async def ticker():
        while True:
            ticks.append(time.monotonic())
            if written.get("thread") and not written.get("end") and during:
                crawler.accept(during.pop(), 0)  # journaled while the snapshot is written
                crawler.durability.commit()  # the test's own durability point
            await trio.sleep(0.01)

    ended = trio.Event()

    async def crawl_then_say_so():
        await run_bounded(crawler)
        ended.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(crawl_then_say_so)
        await web.first_call.wait()
        for u in queued:
            crawler.accept(u, 1)
        crawler.durability.commit()  # the test's own durability point
        nursery.start_soon(ticker)
        with trio.fail_after(60):
            stats = await crawler.snapshot()
            crawler.cancel_in_flight()
            await ended.wait()
        nursery.cancel_scope.cancel()  # the ticker

    assert written["thread"] != loop_thread
    # And the seed, in flight; most of the queue spilled: its blocks are named, not written again.
    assert stats.queued + stats.spilled == 20_000 + 1 and stats.spilled > 10_000
    in_write = [t for t in ticks if written["start"] <= t <= written["end"]]
    gaps = [b - a for a, b in zip(in_write, in_write[1:])]
    # 1.5 s at 10 ms a tick is 150 ticks; on a loaded 2-core box fewer, but many.
    assert len(in_write) >= 30 and max(gaps) < 0.5, (len(in_write), max(gaps, default=None))
    # The URLs journaled while it was written are in the state a restart finds.
    rec = PeerState(tmp_path / "p1" / "state", "p1", "test").recover()
    assert rec is not None and rec.generation == 2
    assert set(queued) | {f"http://late.web.test/p{i}" for i in range(len(during), 100)} <= {
        u for u, _ in rec.all_queued()}
    assert len(during) < 100


DIRECTIVES_RULE = """
[extract.product]
match = "*/directives/*"
[extract.product.fields]
name = "h1.product::text"
"""


async def test_a_crawl_does_what_pages_say_of_themselves(tmp_path):
    # localweb/sitegraph/directives.py: each page says in its head or its HTML how to
    # crawl it; the server's log and the results file say what was done.
    from localweb.sitegraph import directives as d

    graph = SiteGraph(hosts=1, pages_per_host=5, shop=False)
    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, graph)
        base = f"http://bad.web.test:{farm.port}"
        cfg = make_config(tmp_path, farm.port, seeds=[base + p for p in (*d.TARGETS, "/status/600")],
                          crawl={"obey_robots": False}, extra=DIRECTIVES_RULE)
        _, summary = await crawl(cfg)
        nursery.cancel_scope.cancel()

    asked = Counter(e.target for e in farm.log if e.host == "bad.web.test")
    # X-Robots-Tag: ringcrawl: nofollow -> its links never requested; otherbot's rules are not ours.
    assert not asked.keys() & set(d.NEVER)
    assert asked["/directives/plain/4"] == 1
    # Frames, an iframe inside a frame, and a meta refresh are followed by default...
    assert all(asked[p] == 1 for p in (*d.FRAME_TARGETS, d.REFRESH_TARGET)), asked
    # ...<link rel=next> is not, nor stylesheets, nor a canonical (a column, not a link).
    for never in (d.LINK_REL_TARGET, "/directives/style.css", "/directives/alt.css", d.CANONICAL,
                  "/directives/body-canonical"):
        assert never not in asked
    # An invalid status is retried as a 5xx (RFC 9110 §15) and recorded as sent.
    assert asked["/status/600"] == 3

    got = {u.removeprefix(base): r for u, *r in rows(
        cfg, "select url, status, error, canonical, noindex, nofollow from pages")}
    assert got["/status/600"] == [600, None, None, False, False]
    assert got["/directives/canonical-html"][2:] == [base + d.CANONICAL, False, False]
    assert got["/directives/canonical-header"][2:] == [base + d.CANONICAL, False, False]
    assert got["/directives/noindex"][2:] == [None, True, False]
    assert got["/directives/xrt-nofollow"][2:] == [None, False, True]
    assert got["/directives/xrt-otherbot"][2:] == [None, False, False]
    assert asked["/directives/plain/3"] == 1  # noindex alone: its links are followed
    # A noindex page writes no items; its neighbours do.
    items = {u.removeprefix(base): n for u, n in rows(cfg, "select url, name from items_product")}
    assert "/directives/noindex" not in items and "/directives/canonical-html" in items
    assert summary.invalid_status == 3
    assert {k: summary.directives[k] for k in ("canonical", "noncanonical", "noindex", "nofollow",
                                               "x_robots_tag", "items_withheld", "links_frame",
                                               "links_refresh")} == {
        "canonical": 2, "noncanonical": 2, "noindex": 1, "nofollow": 1, "x_robots_tag": 1,
        "items_withheld": 1, "links_frame": 3, "links_refresh": 1}
