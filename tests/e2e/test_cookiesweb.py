"""A crawl that needs a cookie jar, and what an operator asks of one (peer.core.http.cookies end to end).

The crawls fetch ``bad.web.test/session`` (localweb/sitegraph/session.py: pages
served only with the session cookie its first page sets) with the real fetcher,
in the test's process, and are judged by the server's request log: the Cookie
field each request carried. The jar's rules are tested without I/O in
tests/core/test_cookies.py, its file in tests/edges/test_cookiefile.py.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import trio

from localweb import SiteGraph, serve_webfarm
from localweb.sitegraph.session import GATED, has_session
from peer.state.cookiefile import COOKIE_FILE, read_cookies


def _session_config(tmp_path: Path, port: int, cookies: bool, **crawl):
    from tests.e2e.test_engine import make_config

    block = f'\n[[site]]\nhosts = ["bad.web.test"]\ncookies = {"true" if cookies else "false"}\n'
    return make_config(tmp_path, port, seeds=[f"http://bad.web.test:{port}/session"], crawl=crawl, extra=block)


def _session_log(farm):
    return [(e.target, e.status, dict(e.headers).get("cookie")) for e in farm.log
            if e.host == "bad.web.test" and e.target.startswith("/session")]


async def test_a_crawl_with_cookies_on_fetches_the_gated_pages_with_the_session_cookie(tmp_path):
    from peer.engine.crawler import Crawler

    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, SiteGraph(hosts=1, pages_per_host=2, shop=False))
        cfg = _session_config(tmp_path, farm.port, cookies=True)
        crawler = Crawler(cfg, "p1", progress_interval=3600)
        with trio.fail_after(60):
            await crawler.run()
        nursery.cancel_scope.cancel()
    log = _session_log(farm)
    assert log[0] == ("/session", 200, None)
    gated = {t: (s, c) for t, s, c in log[1:]}
    assert set(gated) == set(GATED) and len(log) == 1 + len(GATED)  # each once
    for status, cookie in gated.values():
        assert status == 200 and has_session(cookie) and "theme=dark" in cookie
        assert "wide" not in cookie and "junk" not in cookie
    # The operator's figures: ring status's pairs (counters and a drop) and stats.json.
    from peer.core.run.stats import crawl_stats
    from ring.vocabulary import split_pairs

    pairs = crawler.peer.figures.limits(0.0, {})
    split = split_pairs(pairs.items())
    counters = dict(split.counters)
    assert counters["cookies.stored"] == 2 and counters["cookies.refused.domain"] == 1
    assert counters["cookies.sent"] == len(GATED) and dict(split.drops) == {"cookie.malformed": 1}
    doc = crawl_stats(crawler.summary, peer="p1", ring="test", run=1, started=0.0, finished=1.0, cap_hits={})
    assert doc["cookies"] == {"stored": 2, "sent": len(GATED), "refused.domain": 1, "drops": {"malformed": 1}}
    assert "cookies: cookie.malformed 1" in crawler.summary.render()


async def test_with_cookies_off_none_is_sent_and_the_gated_pages_are_refused(tmp_path):
    from peer.engine.crawler import Crawler

    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, SiteGraph(hosts=1, pages_per_host=2, shop=False))
        cfg = _session_config(tmp_path, farm.port, cookies=False)
        with trio.fail_after(60):
            await Crawler(cfg, "p1", progress_interval=3600).run()
        nursery.cancel_scope.cancel()
    log = _session_log(farm)
    assert log and all(cookie is None for _, _, cookie in log)
    assert {t: s for t, s, _ in log} == {"/session": 200, **{g: 403 for g in GATED}}
    assert not any(e.headers and "cookie" in dict(e.headers) for e in farm.log)


async def test_a_resumed_crawl_sends_the_cookie_its_first_run_kept(tmp_path):
    from peer.engine.crawler import Crawler

    async with trio.open_nursery() as nursery:
        farm = await nursery.start(serve_webfarm, SiteGraph(hosts=1, pages_per_host=2, shop=False))
        # First run: slow (a page every 2 s), stopped as soon as the jar is on
        # disk: what a kill -9 then would leave has the cookie
        # (COOKIE_SAVE_SECONDS after it was set, while the crawl still runs).
        cfg = _session_config(tmp_path, farm.port, cookies=True)
        cfg = dataclasses.replace(cfg, politeness=dataclasses.replace(cfg.politeness, rate=30.0))
        crawler = Crawler(cfg, "p1", progress_interval=3600)
        state = Path(cfg.peers[0].data_dir) / "state"
        on_disk_while_running = []

        async def watch() -> None:
            while not (state / COOKIE_FILE).exists():
                await trio.sleep(0.05)
            on_disk_while_running.append(read_cookies(state, "p1"))
            crawler.stop()

        with trio.fail_after(60):
            async with trio.open_nursery() as inner:
                inner.start_soon(watch)
                await crawler.run()
                inner.cancel_scope.cancel()
        first = len(_session_log(farm))
        # Second run: the same data_dir, resumed at full speed.
        cfg = _session_config(tmp_path, farm.port, cookies=True)
        with trio.fail_after(60):
            await Crawler(cfg, "p1", progress_interval=3600).run()
        nursery.cancel_scope.cancel()
    assert on_disk_while_running, "the jar was not written while the crawl ran"
    records, problem = on_disk_while_running[0]
    assert problem is None and {r[1] for r in records} == {"sid", "theme"}
    log = _session_log(farm)
    assert 1 <= first < len(log) and [t for t, _, _ in log].count("/session") == 1  # never asked again
    resumed = log[first:]
    assert {t for t, _, _ in resumed} <= set(GATED)
    assert all(s == 200 and has_session(c) for _, s, c in resumed), resumed
    assert {t for t, s, _ in log if s == 200} == {"/session", *GATED}


# --- what an operator asks: --check, --check --host, try ----------------------------------


def test_check_and_try_say_where_cookies_are_on_and_try_never_prints_a_value(tmp_path):
    from clirun import run_main, web_thread
    from localweb.sitegraph.session import SESSION
    from peer.commands.cli import main
    from tests.e2e.test_cli import solo_toml

    with web_thread(hosts=1) as web:
        block = '\n[[site]]\nhosts = ["bad.web.test"]\ncookies = true\n'
        toml = solo_toml(tmp_path, web.port, extra=block)
        check = run_main(main, ["--ring", str(toml), "--check"])
        host = run_main(main, ["--ring", str(toml), "--check", "--host", "bad.web.test"])
        other = run_main(main, ["--ring", str(toml), "--check", "--host", "s001.web.test"])
        tried = run_main(main, ["try", f"http://bad.web.test:{web.port}/session", "--ring", str(toml)])
        gated = run_main(main, ["try", f"http://bad.web.test:{web.port}/session/a", "--ring", str(toml)])
    assert "   cookies: on for site[0] bad.web.test; kept per host, at most 50 a host, 10000 in all" in check.stdout
    assert "  cookies on: kept and sent back (site[0]: bad.web.test)" in host.stdout.splitlines()
    assert "  cookies off (default)" in other.stdout.splitlines()
    line = next(x for x in tried.stdout.splitlines() if x.startswith("cookies:"))
    assert line == ("cookies:    sent none; set sid, theme, wide, junk, kept sid, theme; the next request "
                    "of this URL sends sid, theme (values not shown)"), line
    assert SESSION not in tried.stdout + tried.stderr
    assert "cookies:    sent none;" in gated.stdout and "HTTP 403" in gated.stdout  # try keeps no jar
