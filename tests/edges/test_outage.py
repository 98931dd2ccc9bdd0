"""A real server stopped for a few seconds mid-crawl: its pages are fetched after it comes back (smoke).

The peer runs in this process (``localweb.processes.peerrun.run_in_process``)
against a small HTTP server on loopback that closes its listening socket
after its sixth answer (connection refused) and opens it again 3 s later.
Judged from the server's log, as a user would: every page answered once,
none lost, and the crawl ended by itself. The timing rules themselves
(down_after, the doubling probes, down_give_up) are judged on simulated
clocks in tests/core/test_outages.py and tests/e2e/test_engine.py;
peer/core/crawl/outages.py has them.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from localweb.processes.peerrun import cluster_toml, free_ports, run_in_process

PAGES = 30
DOWN_AFTER_ANSWERS = 6
DOWN_FOR = 3.0


class Site:
    """/ links to /p0 ... /p29, each linking back; ``log`` counts the answers by path."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.log: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None
        self.went_down = threading.Event()
        self.came_back = threading.Event()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                if self.path == "/robots.txt":
                    body, status = b"", 404
                elif self.path == "/":
                    body, status = "".join(f'<a href="/p{i}">p{i}</a>' for i in range(PAGES)).encode(), 200
                else:
                    body, status = b'<a href="/">home</a>', 200
                with site.lock:
                    site.log[self.path] += 1
                self.send_response(status)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass
        return Handler

    def start(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), self.handler())
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def stop(self) -> None:
        assert self.server is not None
        self.server.shutdown()
        self.server.server_close()  # the listening socket closed: connections refused

    def outage(self, deadline: float) -> None:
        """Down after the sixth answer, for DOWN_FOR seconds; then up until the test ends."""
        while time.monotonic() < deadline:
            with self.lock:
                answered = sum(n for p, n in self.log.items() if p != "/robots.txt")
            if answered >= DOWN_AFTER_ANSWERS:
                self.stop()
                self.went_down.set()
                time.sleep(DOWN_FOR)
                self.start()
                self.came_back.set()
                return
            time.sleep(0.005)


def test_a_server_stopped_for_3s_mid_crawl_has_every_page_fetched_once_after_it_comes_back(tmp_path: Path):
    (port,) = free_ports(1)
    site = Site(port)
    site.start()
    toml = cluster_toml(tmp_path, [f"http://127.0.0.1:{port}/"], sections={
        "crawl": {"allow_hosts": ["127.0.0.1"], "concurrency": 4},
        # 10 pages a second: the crawl is still going when the server stops.
        "politeness": {"rate": 600.0, "initial_delay": 0.1, "min_delay": 0.1},
        # Down at the second refusal in a row: the first retry waits at most 1.5 s, inside the outage.
        "retry": {"down_after": 2, "down_wait": 0.5, "down_max_wait": 1.0, "down_give_up": 60.0}})
    controller = threading.Thread(target=site.outage, args=(time.monotonic() + 60,), daemon=True)
    controller.start()
    try:
        run = run_in_process(toml, timeout=60.0)
    finally:
        controller.join(timeout=10)
        if site.came_back.is_set():
            site.stop()
    assert site.went_down.is_set() and site.came_back.is_set(), "the outage happened mid-crawl"
    assert not run.timed_out and not run.stopped and run.codes == [0], run.stderr()  # ended by itself
    pages = {"/", *(f"/p{i}" for i in range(PAGES))}
    answered = {p: n for p, n in site.log.items() if p != "/robots.txt"}
    assert set(answered) == pages and max(answered.values()) == 1, answered  # every page, none twice
    assert {(r["status"], r["error"]) for r in run.rows} == {(200, None)}, run.stderr()
    summary = run.peers[0].out.read_text()
    assert "outages: 1 host outage, 1 recovered, 0 given up" in summary, summary
