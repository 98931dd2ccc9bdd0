"""ring.tools.dashboard: the page's tables and plots' data, its HTTP edge, and the page in a real browser."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import trio

from ring.tools.dashboard import History, Snapshot, host_allowed, render_fragment, render_page, serve_dashboard

ROOT = Path(__file__).resolve().parents[2]
EVIL_HOST = '<img src=x onerror="document.body.dataset.pwned=1">.web.test:80'
EVIL_KIND = "<script>document.body.dataset.pwned=2</script>"


def row(mid: str = "p1", pages: int = 10, **kw) -> dict:
    base = dict(id=mid, address=f"tcp://127.0.0.1:57{mid[-1]}0", state="alive", share=0.5, pages=pages,
                rate=1.0, frontier=20, hosts=2, forwarded_out=3, forwarded_in=4, dns_hit_rate=0.5,
                bloom_fill=0.001, uptime=9.0, drops={}, failed={}, busiest=[])
    return base | kw


# ------------------------------------------------------------------ the core

def test_a_continuous_crawl_shows_its_revisits_summed_with_freshness():
    rows = [row("p1", counters={"revisit.due": 2, "revisit.not_modified": 6, "revisit.changed": 2,
                                "fwd.frames": 9}),
            row("p2", counters={"revisit.due": 1, "revisit.unchanged": 0, "revisit.changed": 0})]
    text = render_fragment(Snapshot(0.0, tuple(rows)), {}, "demo")
    table = text[text.index('<table id="revisits"'):]
    assert '<td class="n">3</td>' in table and '<td class="n">75%</td>' in table
    assert 'id="revisits"' not in render_fragment(Snapshot(0.0, (row("p1"),)), {}, "demo")


def test_every_crawl_string_is_escaped_in_the_tables():
    rows = [row("p1", failed={EVIL_KIND: 2, "timeout": 5}, busiest=[[EVIL_HOST, 70.0, 60.0]]),
            row("<b>p9</b>", address="tcp://<i>x</i>:1")]
    text = render_fragment(Snapshot(0.0, tuple(rows)), {}, "ring<script>")
    assert "<script" not in text and "<img" not in text and "<b>p9" not in text and "<i>" not in text
    assert "&lt;img src=x onerror=&quot;document.body.dataset.pwned=1&quot;&gt;.web.test:80" in text
    assert "&lt;script&gt;document.body.dataset.pwned=2&lt;/script&gt;" in text
    assert 'data-id="&lt;b&gt;p9&lt;/b&gt;"' in text
    page = render_page("ring<script>", text, 2.0)
    assert page.count("<script") == 2  # the two script files, nothing from the data
    assert "<title>ringcrawl: ring ring&lt;script&gt;</title>" in page


def test_tables_show_members_totals_errors_and_busiest_against_setpoint():
    rows = [row("p1", 30, share=0.25, failed={"timeout": 2}, not_requested={"robots": 3}, busiest=[["a.test:80", 70.0, 60.0]]),
            row("p2", 50, share=0.75, state="suspect", failed={"timeout": 1, "dns": 4},
                busiest=[["b.test:80", 30.0, 60.0]])]
    text = render_fragment(Snapshot(0.0, tuple(rows)), {"p1": 2.0, "p2": 3.5}, "demo")
    assert re.search(r'<tr class="member state-alive" data-id="p1"><td>p1</td>', text)
    assert 'data-id="p2"><td>p2</td><td class="state-suspect">suspect</td>' in text
    assert '<td class="n" id="total-pages">80</td>' in text
    assert '<td>2 live</td><td>0 held</td><td></td><td id="rings" class="">0 rings</td><td class="n">100.0%</td>' in text
    assert '<td class="n">5.5</td>' in text
    # errors summed over members, most first
    assert text.index("<td>dns</td>") < text.index("<td>timeout</td>")
    assert '<td>timeout</td><td class="n">3</td>' in text
    # URLs never requested apart from the failures, under the summary's words
    failed_table = text.split('id="errors"', 1)[1].split('id="not-requested"', 1)[0]
    assert "robots" not in failed_table and "<h2>Failed by kind</h2>" in text
    assert "<h2>Not requested by cause</h2>" in text and '<td>robots</td><td class="n">3</td>' in text
    # the busiest host first, flagged when over 110 % of its setpoint
    assert text.index("a.test:80") < text.index("b.test:80")
    assert '<td class="n bad">117%</td>' in text and '<td class="n">50%</td>' in text


def test_each_members_lease_and_ring_are_shown_and_a_split_is_flagged():
    lease = dict(vouched=1, needed=2, quorum=3, grace_left=0.0, ring_version=4)
    rows = [row("p1", lease="no_majority", ring_fingerprint="9f3a12c0deadbeef", **lease),
            row("p2", lease="held", ring_fingerprint="0123456789abcdef", **(lease | {"vouched": 2})),
            row("p3", state="dead", lease="unknown", ring_fingerprint=None)]
    text = render_fragment(Snapshot(0.0, tuple(rows)), {}, "demo")
    assert ('<td class="bad">paused: no majority</td><td class="n">1 of 3, 2 needed</td>'
            '<td class="ring">v4 9f3a12c0</td>') in text
    assert '<td>held</td><td class="n">2 of 3, 2 needed</td><td class="ring">v4 01234567</td>' in text
    assert 'data-id="p3"><td>p3</td><td class="state-dead">dead</td><td>?</td><td class="n">-</td><td>-</td>' in text
    assert '<td>1 held</td><td></td><td id="rings" class="bad">2 rings (split)</td>' in text
    same = [row("p1", lease="grace", ring_fingerprint="9f3a12c0deadbeef", **(lease | {"grace_left": 2.4})),
            row("p2", lease="held", ring_fingerprint="9f3a12c0deadbeef", **lease)]
    text = render_fragment(Snapshot(0.0, tuple(same)), {}, "demo")
    assert '<td class="bad">paused: grace (2.4s)</td>' in text  # ring.durations: tenths under 10 s
    assert '<td id="rings" class="">1 ring</td>' in text


def test_no_answer_and_not_yet_polled_are_said_in_words():
    assert "waiting for the first answer" in render_fragment(None, {}, "demo")
    assert "no peer of ring demo answered" in render_fragment(Snapshot(0.0, None), {}, "demo")


def test_a_poller_that_says_why_nobody_answered_is_shown_in_its_words_escaped():
    from ring.tools.dashboard import Dashboard

    async def nobody():
        return None

    why = ["solo peer 'solo' of ring 'solo' is not running: no status address recorded in /d/<x>"]
    dash = Dashboard(nobody, "solo", 1.0, silence=lambda: why[0])
    dash.history.add(0.0, None)
    text = dash.fragment()
    assert "not running: no status address recorded in /d/&lt;x&gt;" in text and "<x>" not in text
    assert "are the peers running?" not in text
    why[0] = None  # a ring's poller says nothing: the page's own words
    assert "no peer of ring solo answered" in dash.fragment()
    dash.history.add(1.0, [row("solo")])
    assert 'data-id="solo"' in dash.fragment()


def test_history_measures_rates_between_polls_and_is_bounded():
    h = History(maxlen=3)
    h.add(0.0, [row("p1", 0)])
    assert h.current_rates() == {}
    h.add(2.0, [row("p1", 10), row("p2", 5)])
    assert h.current_rates() == {"p1": 5.0}
    h.add(3.0, None)  # a poll nobody answered leaves the rates as they were
    assert h.current_rates() == {"p1": 5.0}
    h.add(4.0, [row("p1", 4), row("p2", 9)])  # p1 restarted: its count fell
    assert h.current_rates() == {"p1": 0.0, "p2": 2.0}
    s = h.series()
    assert s["t"] == [2.0, 4.0]  # maxlen 3: the first poll is gone, the silent one has no point
    assert s["members"] == ["p1", "p2"]
    assert s["rate"] == [[None, 0.0], [None, 2.0]] and s["total_rate"] == [None, 2.0]
    assert s["queued"] == [40, 40]


def test_only_loopback_host_headers_are_answered_on_loopback():
    for header in (b"127.0.0.1:8765", b"localhost:8765", b"[::1]:8765", b"127.0.0.2"):
        assert host_allowed("127.0.0.1", header), header
    for header in (b"evil.example:8765", b"", None, b"127.0.0.1.evil.example"):
        assert not host_allowed("127.0.0.1", header), header
    assert host_allowed("0.0.0.0", b"crawler.lan:8765")  # widened with --host: the operator's choice


def test_vendored_uplot_is_the_pinned_release():
    readme = (ROOT / "ring" / "tools" / "static" / "README.md").read_text()
    for name in ("uPlot.iife.min.js", "uPlot.min.css"):
        digest = hashlib.sha256((ROOT / "ring" / "tools" / "static" / name).read_bytes()).hexdigest()
        assert f"| `{name}` | `{digest}` |" in readme, name
    assert (ROOT / "ring" / "tools" / "static" / "uPlot.iife.min.js").read_text().startswith(
        "/*! https://github.com/leeoniya/uPlot (v1.6.32) */")
    assert "MIT License" in (ROOT / "ring" / "tools" / "static" / "LICENSE.uPlot").read_text()


def test_the_ring_package_does_not_import_peer():
    code = "import sys, ring.tools.dashboard; print(sorted(m for m in sys.modules if m.split('.')[0] == 'peer'))"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=os.environ)
    assert res.returncode == 0 and res.stdout.strip() == "[]", res.stdout + res.stderr


# ------------------------------------------------------------------ the edge

def _fake_poll():
    state = {"n": 0}

    async def poll():
        state["n"] += 1
        n = state["n"]
        return [row(f"p{i}", pages=10 * n * i, failed={EVIL_KIND: 1}, busiest=[[EVIL_HOST, 70.0, 60.0]])
                for i in (1, 2, 3)]

    return poll


async def test_the_server_answers_the_page_its_parts_and_refuses_the_rest():
    async with trio.open_nursery() as nursery:
        url = await nursery.start(lambda task_status: serve_dashboard(
            _fake_poll(), ring_name="demo", port=0, interval=0.1, task_status=task_status))
        async with httpx.AsyncClient(timeout=5) as client:
            page = await client.get(url)
            assert page.status_code == 200 and page.headers["content-type"] == "text/html; charset=utf-8"
            csp = page.headers["content-security-policy"]
            assert "script-src 'self'" in csp and "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
            assert (await client.get(url + "fragment")).text.count('class="member') == 3
            series = (await client.get(url + "series.json")).json()
            assert series["members"] == ["p1", "p2", "p3"]
            js = await client.get(url + "static/uPlot.iife.min.js")
            assert js.status_code == 200 and js.headers["content-type"].startswith("application/javascript")
            for bad in ("nope", "static/../dashboard.py", "static/README.md"):
                assert (await client.get(url + bad)).status_code == 404, bad
            assert (await client.post(url, content=b"x")).status_code == 405
            assert (await client.head(url)).status_code == 200
            # DNS rebinding: a foreign name pointed at 127.0.0.1 gets nothing.
            assert (await client.get(url, headers={"host": "evil.example:80"})).status_code == 403
            assert (await client.get(url, headers={"host": "localhost"})).status_code == 200
        # Garbage on the socket is answered 400 and closed; the server goes on.
        host, port = url.removeprefix("http://").rstrip("/").rsplit(":", 1)
        stream = await trio.open_tcp_stream(host, int(port))
        await stream.send_all(b"\x00\xff garbage\r\n\r\n")
        with trio.fail_after(5):
            reply = await stream.receive_some(1000)
        await stream.aclose()
        assert reply.startswith(b"HTTP/1.1 400")
        async with httpx.AsyncClient(timeout=5) as client:
            assert (await client.get(url)).status_code == 200
        nursery.cancel_scope.cancel()


async def test_with_a_token_every_request_needs_it_and_a_browser_logs_in_once():
    token = "dash-t0ken"
    async with trio.open_nursery() as nursery:
        url = await nursery.start(lambda task_status: serve_dashboard(
            _fake_poll(), ring_name="demo", port=0, interval=0.1, token=token, task_status=task_status))
        async with httpx.AsyncClient(timeout=5) as client:
            login = await client.get(url)
            assert login.status_code == 401 and '<form method="post" action="/login">' in login.text
            assert 'class="member' not in login.text and "<script" not in login.text
            assert "form-action 'self'" in login.headers["content-security-policy"]
            for path in ("fragment", "series.json"):
                assert (await client.get(url + path)).status_code == 401, path
            wrong = await client.get(url + "fragment", headers={"Authorization": "Bearer dash-t0ke"})
            assert wrong.status_code == 401
            assert (await client.get(url + "static/dashboard.css")).status_code == 200  # the login page's style
            # A script or proxy: the bearer header.
            bearer = await client.get(url + "fragment", headers={"Authorization": f"Bearer {token}"})
            assert bearer.status_code == 200 and bearer.text.count('class="member') == 3
            # A browser: the form, then its cookie.
            bad = await client.post(url + "login", data={"token": "guess"})
            assert bad.status_code == 401 and "not this dashboard" in bad.text and "set-cookie" not in bad.headers
            good = await client.post(url + "login", data={"token": token})
            assert good.status_code == 303 and good.headers["location"] == "/"
            cookie = good.headers["set-cookie"]
            assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and token not in cookie
            page = await client.get(url)  # the client keeps the cookie, as a browser does
            assert page.status_code == 200 and "<h1>ringcrawl dashboard" in page.text
            assert (await client.get(url + "series.json")).json()["members"] == ["p1", "p2", "p3"]
        nursery.cancel_scope.cancel()


def test_a_routable_address_needs_a_token_and_a_token_must_be_there(tmp_path):
    from clirun import ring_main
    from ringharness import cluster_text

    toml = tmp_path / "cluster.toml"
    toml.write_text(cluster_text(tmp_path, 9, 1))
    res = ring_main(["dashboard", "--ring", str(toml), "--host", "0.0.0.0", "--port", "0"])
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert res.stderr.startswith("error: --host 0.0.0.0 is not loopback: pass --token-file or --token-env")
    res = ring_main(["dashboard", "--ring", str(toml), "--host", "0.0.0.0", "--token-file", str(tmp_path / "none")])
    assert res.returncode == 2 and res.stderr.startswith("error: --token-file: cannot read "), res.stderr
    res = ring_main(["dashboard", "--ring", str(toml), "--token-env", "RINGCRAWL_NO_SUCH_VARIABLE"])
    assert res.returncode == 2 and "RINGCRAWL_NO_SUCH_VARIABLE is not set" in res.stderr, res.stderr


def ring_cmd(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ring", *args], capture_output=True, text=True,
                          cwd=ROOT, env=os.environ, stdin=subprocess.DEVNULL, timeout=timeout)


def test_bad_port_and_port_in_use_are_one_line_and_exit_2(tmp_path):
    from ringharness import cluster_text

    toml = tmp_path / "cluster.toml"
    toml.write_text(cluster_text(tmp_path, 9, 1))
    res = ring_cmd("dashboard", "--ring", str(toml), "--port", "70000")
    assert res.returncode == 2 and res.stderr == "error: --port: expected a port number from 0 to 65535\n"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        res = ring_cmd("dashboard", "--ring", str(toml), "--port", str(port))
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith(f"error: dashboard cannot listen on 127.0.0.1:{port}: ")
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr


# ------------------------------------------------------------------ a real browser

def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("no chromium: scripts/test installs Debian's (apt-get install -y chromium); "
                    "this machine could not")
    return path


async def dump_dom(browser: str, url: str, profile: Path) -> str:
    """The page's DOM after its script ran about 3 s of (virtual) time: chromium --headless --dump-dom."""
    res = await trio.run_process(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--no-first-run", f"--user-data-dir={profile}", "--virtual-time-budget=3000",
         "--dump-dom", url],
        capture_stdout=True, capture_stderr=True, check=False)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    return res.stdout.decode()


def _figure(dom: str, element_id: str) -> int:
    m = re.search(rf'id="{element_id}">([0-9,]+)<', dom)
    assert m, f"no #{element_id} in the page"
    return int(m[1].replace(",", ""))


class Crawling:
    """What a peer's ring node asks of its crawl, with a page count that grows 10 a second.

    The dashboard sees only the ring's status replies, so three real ring
    nodes over loopback zmq, each with its own figures, are all a ring it
    can be shown; what a real crawl reports there is checked by the demo
    (tests/project/test_scripts.py: `ring status` part-way, its totals row).
    """

    def __init__(self) -> None:
        self.t0 = trio.current_time()
        self.pages_requested = 0

    def status_figures(self) -> dict:
        self.pages_requested = int((trio.current_time() - self.t0) * 10)
        return {"pages": self.pages_requested, "rate": 10.0, "frontier": 5, "hosts": 2,
                "forwarded_out": 0, "forwarded_in": 0, "dns_hit_rate": 0.0, "bloom_fill": 0.0}

    def locally_idle(self) -> bool:
        return False  # never "cluster done": the test ends the ring

    def accept(self, url: str, depth: int) -> None: ...
    def accept_seen(self, url: str) -> None: ...
    def take_back(self, url: str, depth: int) -> None: ...
    def commit_state(self) -> None: ...
    def set_ring(self, ring) -> None: ...  # type: ignore[no-untyped-def]
    def handoff_done(self, sender: str) -> None: ...
    def seed_host_starts(self, starts) -> None: ...  # type: ignore[no-untyped-def]
    def leave(self) -> None: ...
    def poke(self) -> None: ...

    async def handoff_seen(self, old, ring) -> int:  # type: ignore[no-untyped-def]
        return 0

    def handoff_starts(self, old, ring) -> dict:  # type: ignore[no-untyped-def]
        return {}


async def test_a_real_browser_shows_the_three_peers_and_the_page_updates(tmp_path):
    from ringharness import RingMember, free_ports

    from peer.state.configfile import load_config

    browser = chromium()
    peers = "".join(f'[[peer]]\nid = "p{i + 1}"\naddress = "tcp://127.0.0.1:{port}"\n\n'
                    for i, port in enumerate(free_ports(3)))
    toml = tmp_path / "cluster.toml"
    toml.write_text(f'[ring]\nname = "test"\ngossip_interval = 0.2\nsuspect_after = 1.0\n'
                    f'dead_after = 3.0\n\n{peers}')
    cfg = load_config(toml)
    async with trio.open_nursery() as nursery:
        for spec in cfg.peers:
            await nursery.start(RingMember(cfg, spec.id, Crawling()).run)
        out = tmp_path / "dashboard.out"
        with out.open("wb") as fout:
            dash = await trio.lowlevel.open_process(
                [sys.executable, "-m", "ring", "dashboard", "--ring", str(toml), "--port", "0",
                 "--interval", "0.5"], stdout=fout, stderr=subprocess.STDOUT)
        try:
            with trio.fail_after(120):
                while not (m := re.search(r"^dashboard: (http://127\.0\.0\.1:\d+/)", out.read_text(), re.M)):
                    assert dash.returncode is None, out.read_text()
                    await trio.sleep(0.1)
                url = m[1]
                first = await dump_dom(browser, url, tmp_path / "chrome")
                await trio.sleep(1.0)  # two polls of the dashboard (--interval 0.5), 10 pages more
                second = await dump_dom(browser, url, tmp_path / "chrome")
        finally:
            dash.kill()
            await dash.wait()
        nursery.cancel_scope.cancel()
    for dom in (first, second):
        ids = re.findall(r'<tr class="member state-(\w+)" data-id="(p\d)">', dom)
        assert sorted(ids) == [("alive", "p1"), ("alive", "p2"), ("alive", "p3")], dom[:3000]
        assert _figure(dom, "updates") >= 1  # the page's script ran and swapped the tables in
        assert dom.count("<canvas") >= 2  # uPlot drew both plots
    assert _figure(second, "total-pages") > _figure(first, "total-pages")


async def test_a_real_browser_shows_hostile_names_as_text_and_runs_none_of_them(tmp_path):
    browser = chromium()
    async with trio.open_nursery() as nursery:
        url = await nursery.start(lambda task_status: serve_dashboard(
            _fake_poll(), ring_name="demo", port=0, interval=0.3, task_status=task_status))
        with trio.fail_after(60):
            dom = await dump_dom(browser, url, tmp_path / "chrome")
        nursery.cancel_scope.cancel()
    body = re.search(r"<body[^>]*>", dom)[0]
    assert "pwned" not in body, body
    assert _figure(dom, "updates") >= 1
    assert "&lt;img src=x onerror=\"document.body.dataset.pwned=1\"&gt;.web.test:80" in dom
    assert "&lt;script&gt;document.body.dataset.pwned=2&lt;/script&gt;" in dom
