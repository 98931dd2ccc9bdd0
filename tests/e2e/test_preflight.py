"""A crawl that cannot fetch its seeds says so before it starts, and fails when it ends.

``python -m peer --check`` asks each seed host the way the crawl will
(peer/commands/preflight.py): the name through ``[dns]`` and the system, the
SSRF guard on the answer, robots.txt through the crawl's fetcher. A run warns
again of what ``--check`` warned of, and a crawl (alone or a ring) that ended
without one request exits 3 with one line naming the cause.
"""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from ringharness import free_ports
from test_cli import check_warnings, crawl, solo_toml


@pytest.fixture
def robots_web() -> Iterator[int]:
    """A server on 127.0.0.1 whose robots.txt depends on the host: forbid.web.test forbids
    everything, busy.web.test answers 503, any other host allows everything."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            host = (self.headers.get("Host") or "").partition(":")[0]
            if self.path == "/robots.txt" and host == "busy.web.test":
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = (b"User-agent: *\nDisallow: /\n" if host == "forbid.web.test" and self.path == "/robots.txt"
                    else b"<html><body>ok</body></html>")
            self.send_response(200)
            self.send_header("Content-Type", "text/plain" if self.path == "/robots.txt" else "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_check_names_a_seed_where_nothing_listens_with_its_url_and_the_key(tmp_path):
    port = closed_port()
    (w,) = check_warnings(solo_toml(tmp_path, port))
    assert f"crawl.seeds[0] 'http://s001.web.test:{port}/'" in w
    assert f"http://s001.web.test:{port}/robots.txt" in w and "nothing answers" in w
    assert "crawl.robots_retry" in w and "'connect'" in w


def test_check_says_robots_txt_forbids_a_seed_and_that_one_answers_503(tmp_path, robots_web):
    seeds = (f'["http://forbid.web.test:{robots_web}/a", "http://busy.web.test:{robots_web}/", '
             f'"http://fine.web.test:{robots_web}/"]')
    warnings = check_warnings(solo_toml(tmp_path, robots_web, seeds=seeds))
    assert len(warnings) == 2, warnings
    forbid, busy = warnings
    assert "crawl.seeds[0]" in forbid and "forbids it" in forbid and "'robots'" in forbid
    assert "crawl.obey_robots = false" in forbid
    assert "crawl.seeds[1]" in busy and "HTTP 503" in busy and "crawl.robots_retry" in busy


def test_check_resolves_seeds_through_the_configured_nameservers():
    """A name the [dns] nameservers map to 127.0.0.1 is refused by the SSRF guard, a name
    they do not know does not resolve: both said, each with the key to change."""
    from localweb.services.nameserver import LocalDns
    from peer.commands.preflight import probe_seeds
    from peer.core.config.cluster import parse_config

    async def main() -> list[str]:
        dns = LocalDns("web.test", "127.0.0.1")
        async with trio.open_nursery() as nursery:
            await nursery.start(dns.serve)
            text = f"""
[[peer]]
id = "solo"
data_dir = "d"
[crawl]
seeds = ["http://docs.web.test/", "http://nosuch.example/"]
allow_hosts = ["*"]
timeout = 2.0
[dns]
nameservers = ["{dns.nameserver}"]
"""
            cfg = parse_config(text, Path("cluster.toml"))
            with trio.fail_after(20):
                out = await probe_seeds(cfg)
            nursery.cancel_scope.cancel()
        return out

    blocked, unknown = trio.run(main)
    assert "crawl.seeds[0]" in blocked and "127.0.0.1" in blocked and "SSRF guard" in blocked
    assert "crawl.allow_private = true" in blocked
    assert "crawl.seeds[1]" in unknown and "does not resolve" in unknown and "[dns] nameservers" in unknown


def test_a_run_repeats_the_check_warnings_and_a_crawl_of_nothing_exits_3(tmp_path):
    toml = solo_toml(tmp_path, 9, seeds='["http://other.example/"]')
    res = crawl(toml, "--fresh", "--yes")
    assert res.returncode == 3, res.stderr
    assert "crawl.seeds[0] 'http://other.example/' is out of scope" in res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "every seed is out of scope" in last


def test_a_ring_that_fetched_nothing_exits_3_on_every_peer(tmp_path):
    """Three peers (a majority survives one slow start) whose only seed is unreachable:
    each ends with one line and exit 3, the owner naming the URL, the others the owner."""
    from localweb.processes.peerrun import run_peers

    port = closed_port()
    ports = free_ports(3)
    peers = "".join(f'[[peer]]\nid = "p{i + 1}"\naddress = "tcp://127.0.0.1:{p}"\n'
                    f'data_dir = "{tmp_path / f"p{i + 1}"}"\n\n' for i, p in enumerate(ports))
    toml = tmp_path / "cluster.toml"
    toml.write_text(f"""
[ring]
name = "nothing"
gossip_interval = 0.2
suspect_after = 1.0
dead_after = 3.0

{peers}
[crawl]
seeds = ["http://s001.web.test:{port}/"]
allow_hosts = ["*.web.test"]
allow_private = true
timeout = 2.0
robots_retry = 0.5
robots_tries = 2

[dns]
resolve = {{ "*.web.test" = "127.0.0.1" }}
""")
    # robots_tries 2: the owner gives the seed up after one wait of robots_retry
    # (the default 4 tries waited 0.5 + 1 + 2 s; how many tries is
    # test_a_crawl_of_a_seed_where_nothing_listens_exits_3_naming_the_url's).
    run = run_peers(toml, peers=3, timeout=60.0)
    assert not run.timed_out
    assert run.codes == [3, 3, 3], run.stderr()
    lasts = [p.stderr().strip().splitlines()[-1] for p in run.peers]
    assert sum(f"http://s001.web.test:{port}/" in line for line in lasts) == 1, lasts
    assert all(line.startswith("error: ") for line in lasts), lasts
    assert sum("owner(s)" in line and "say why in their last line" in line for line in lasts) == 2, lasts


def test_a_crawl_of_a_seed_robots_txt_forbids_exits_3_naming_robots_txt(tmp_path, robots_web):
    toml = solo_toml(tmp_path, robots_web, seeds=f'["http://forbid.web.test:{robots_web}/a"]')
    res = crawl(toml, "--fresh", "--yes")
    assert res.returncode == 3, res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("error: the crawl ended without fetching anything: ")
    assert f"http://forbid.web.test:{robots_web}/a" in last and "robots.txt forbids it" in last


def test_a_crawl_of_a_seed_where_nothing_listens_exits_3_naming_the_url(tmp_path):
    port = closed_port()
    toml = solo_toml(tmp_path, port, extra="robots_retry = 0.2\nrobots_tries = 2")
    res = crawl(toml, "--fresh", "--yes")
    assert res.returncode == 3, res.stderr
    first = next(line for line in res.stderr.splitlines() if "robots.txt" in line)
    assert f"http://s001.web.test:{port}/robots.txt" in first and "connection refused" in first
    last = res.stderr.strip().splitlines()[-1]
    assert f"http://s001.web.test:{port}/" in last and "nothing answers at its host and port" in last
