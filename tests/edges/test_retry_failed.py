"""``--retry-failed``: the failed pages of a finished crawl fetched again, once each, judged by the server's log.

Two small servers on loopback, run in this process (``python -m peer``'s
``main``, tests/support/clirun.py). In the first crawl host A answers 503
to four pages (the retries run out) and closes the connection on two
without an answer (``reset``); host B, which A links to, is down
(connection refused: its robots.txt cannot be read, and its pages are rows
``connect`` without a request). A disallows one page in its robots.txt and
answers 404 to another: neither is a failed page. Then both hosts are
healthy and the crawl is resumed with ``--retry-failed``: the servers'
logs must show exactly the failed pages, each once (robots.txt apart), and
the results file must hold each as fetched, one row a URL.
"""

from __future__ import annotations

import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import duckdb

from clirun import Result, run_main
from localweb.processes.peerrun import free_ports

BAD = [f"/bad{i}" for i in range(4)]      # 503 while broken
CUT = [f"/cut{i}" for i in range(2)]      # closed without an answer while broken
OK = [f"/ok{i}" for i in range(3)]
B_PAGES = ["/b0", "/b1"]


class Host:
    """One server; ``broken`` makes its failing pages fail, ``down`` keeps it closed."""

    def __init__(self, port: int, links: list[str], home: str = "/") -> None:
        self.port = port
        self.links = links
        self.home = home  # where its pages link back to: known already
        self.broken = True
        self.log: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None

    def start(self) -> None:
        host = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                with host.lock:
                    host.log[self.path] += 1
                if host.broken and self.path in CUT:
                    self.close_connection = True
                    return  # no answer: the client's read ends early
                if self.path == "/robots.txt":
                    status, body, kind = 200, b"User-agent: *\nDisallow: /private\n", "text/plain"
                elif self.path == "/missing":
                    status, body, kind = 404, b"no", "text/plain"
                elif host.broken and self.path in BAD:
                    status, body, kind = 503, b"busy", "text/plain"
                elif self.path == "/":
                    status, kind = 200, "text/html"
                    body = "".join(f'<a href="{u}">x</a>' for u in host.links).encode()
                else:
                    status, body, kind = 200, f'<a href="{host.home}">home</a>'.encode(), "text/html"
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def taken(self) -> Counter[str]:
        with self.lock:
            log, self.log = self.log, Counter()
        return log


def crawl(toml: Path, *flags: str) -> Result:
    from peer.commands.cli import main

    res = run_main(main, ["--ring", str(toml), *flags])
    assert res.returncode == 0, res.stderr
    return res


def config(tmp_path: Path, a: int) -> Path:
    toml = tmp_path / "solo.toml"
    toml.write_text(f"""
[ring]
name = "solo"

[[peer]]
id = "solo"
data_dir = "{tmp_path / 'solo'}"

[crawl]
seeds = ["http://127.0.0.1:{a}/"]
allow_hosts = ["127.0.0.1"]
allow_private = true
timeout = 5.0
robots_tries = 1

[politeness]
rate = 6000.0
initial_delay = 0.01
min_delay = 0.01
max_delay = 0.05

[retry]
times = 1
base = 0.05

[bloom]
capacity = 10000
""")
    return toml


def rows(results: Path) -> dict[str, list[tuple[int | None, str | None]]]:
    out: dict[str, list[tuple[int | None, str | None]]] = {}
    with duckdb.connect(str(results), read_only=True) as con:
        for url, status, error in con.execute("SELECT url, status, error FROM pages").fetchall():
            out.setdefault(url, []).append((status, error))
    return out


def test_retry_failed_fetches_each_failed_page_once_and_the_results_hold_them_fetched(tmp_path):
    pa, pb = free_ports(2)
    b_urls = [f"http://127.0.0.1:{pb}{p}" for p in B_PAGES]
    a = Host(pa, [*OK, *BAD, *CUT, "/private", "/missing", *b_urls])
    b = Host(pb, [], home=f"http://127.0.0.1:{pa}/")
    a.start()
    try:
        toml = config(tmp_path, pa)
        first = crawl(toml)
        results = tmp_path / "solo" / "pages.duckdb"
        before = rows(results)
        A = f"http://127.0.0.1:{pa}"
        failed = {*(A + p for p in BAD + CUT), *b_urls}
        assert {u for u, r in before.items() if r[-1][0] != 200 or r[-1][1]} == {
            *failed, A + "/private", A + "/missing"}, first.stdout
        assert before[A + "/bad0"] == [(503, None)] and before[A + "/cut0"] == [(None, "reset")]
        assert before[b_urls[0]] == [(None, "connect")] and before[A + "/private"] == [(None, "robots")]
        a.taken()

        a.broken = False
        b.start()
        again = crawl(toml, "--retry-failed")
        got_a, got_b = a.taken(), b.taken()
        got_a.pop("/robots.txt", None), got_b.pop("/robots.txt", None)
        assert got_a == Counter({p: 1 for p in BAD + CUT}), (got_a, again.stderr)  # each failed page once
        assert got_b == Counter({p: 1 for p in B_PAGES}), (got_b, again.stderr)
        after = rows(results)
        assert all(after[u] == [(200, None)] for u in failed), after  # fetched, one row each
        assert after[A + "/private"] == [(None, "robots")] and after[A + "/missing"] == [(404, None)]
        assert set(after) == set(before)
        assert "retry-failed: 8 failed pages queued again (503 4, connect 2, reset 2)" in again.stdout, again.stdout

        # Nothing failed now: a second --retry-failed queues nothing and fetches nothing.
        third = crawl(toml, "--retry-failed")
        got = a.taken()
        got.pop("/robots.txt", None)
        assert not got and not b.taken() - Counter({"/robots.txt": 1}), got
        assert "retry-failed: 0 failed pages queued again" in third.stdout, third.stdout
    finally:
        a.stop()
        b.stop()


def test_retry_failed_without_an_earlier_crawl_or_with_fresh_is_one_line(tmp_path):
    from clirun import error_line
    from peer.commands.cli import main

    toml = config(tmp_path, free_ports(1)[0])
    line = error_line(run_main(main, ["--ring", str(toml), "--retry-failed"]))
    assert line.startswith("error: --retry-failed: ") and "holds no earlier crawl" in line, line
    line = error_line(run_main(main, ["--ring", str(toml), "--retry-failed", "--fresh"]))
    assert line.startswith("error: --fresh and --retry-failed"), line


def test_help_documents_retry_failed():
    from peer.commands.cli import main

    res = run_main(main, ["--help"])
    assert "--retry-failed" in res.stdout and "queue again this peer's failed pages" in " ".join(res.stdout.split())


def test_retry_failed_never_comes_from_the_environment(tmp_path, monkeypatch):
    # A service's environment would ask it at every start, and its first start has no crawl.
    from peer.commands.cli import main

    monkeypatch.setenv("RINGCRAWL_RETRY_FAILED", "1")
    res = run_main(main, ["--help"])
    assert "RINGCRAWL_RETRY_FAILED" not in res.stdout and "never --fresh, --yes, --retry-failed" in " ".join(
        res.stdout.split())
