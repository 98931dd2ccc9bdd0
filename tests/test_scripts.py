"""The quickstart commands work as the README says."""

import re
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

from peer.config import load_config
from ring.cli import ring_of

ROOT = Path(__file__).resolve().parent.parent


def test_readme_quickstart_is_exactly_the_two_commands():
    readme = (ROOT / "README.md").read_text()
    quick = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    block = quick.split("```sh\n", 1)[1].split("```", 1)[0]
    assert block.split("\n")[:-1] == ["scripts/demo", "scripts/test"]


def test_ci_runs_the_readme_test_command():
    assert "bash scripts/test" in (ROOT / ".ci" / "run").read_text()


@dataclass(frozen=True)
class DemoRun:
    config: Path
    out: Path
    stdout: str


def _demo_setting(name: str) -> int:
    m = re.search(rf"^{name}=(\d+)$", (ROOT / "scripts" / "demo").read_text(), re.M)
    assert m, f"scripts/demo sets no {name}="
    return int(m.group(1))


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> DemoRun:
    """One run of scripts/demo on a copy of cluster.toml: peers' data and OUT land in a tmp dir."""
    port = _demo_setting("WEB_PORT")
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            pytest.fail(f"scripts/demo needs 127.0.0.1:{port} free for its local web: {exc}")
    tmp = tmp_path_factory.mktemp("demo")
    config = tmp / "cluster.toml"
    shutil.copy(ROOT / "cluster.toml", config)
    out = tmp / "out"
    res = subprocess.run(["bash", "scripts/demo", str(config), str(out)], cwd=ROOT,
                         capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, f"stdout tail:\n{res.stdout[-3000:]}\nstderr tail:\n{res.stderr[-3000:]}"
    return DemoRun(config, out, res.stdout)


def _graph():
    import webfarm

    return webfarm.SiteGraph(hosts=_demo_setting("WEB_HOSTS"), pages_per_host=_demo_setting("WEB_PAGES"))


def test_demo_prints_the_ring_and_crawls_with_three_peers(demo):
    ring = ring_of(load_config(demo.config))
    shares = ring.shares()
    assert f"{demo.config}: ok: ring 'demo', 3 peer(s)" in demo.stdout
    for peer in ("p1", "p2", "p3"):
        assert f"{shares[peer]:.1%}" in demo.stdout
    assert f"s001.web.test:8080                       {ring.owner('s001.web.test:8080')}" in demo.stdout
    # The 3-peer crawl: each peer ends by itself, status answered part-way.
    assert demo.stdout.count("crawl finished (cluster done)") == 3, demo.stdout[-3000:]
    assert "==> part-way: python -m ring status" in demo.stdout
    assert re.search(r"^==> dashboard: http://127\.0\.0\.1:\d+/ \(ring 'demo'", demo.stdout, re.M)
    assert re.search(r"^total +3 live +100\.0%", demo.stdout, re.M)  # the status table's totals row
    assert demo.stdout.count("tcp://127.0.0.1:570") >= 3


def test_demo_merges_the_whole_web_fetched_by_its_owners(demo):
    port = _demo_setting("WEB_PORT")
    graph = _graph()
    ring = ring_of(load_config(demo.config))
    with duckdb.connect(str(demo.out / "crawl.duckdb"), read_only=True) as con:
        rows = con.execute("select url, host, peer, status, error from pages").fetchall()
    assert {peer for _, _, peer, _, _ in rows} == {"p1", "p2", "p3"}
    assert [(url, peer) for url, host, peer, _, _ in rows if ring.owner(host) != peer] == []
    fetched = {url for url, _, _, status, _ in rows if status is not None}
    assert fetched == set(graph.expected_urls(port))
    assert {url for url, _, _, _, error in rows if error == "robots"} == set(graph.disallowed_urls(port))


def test_demo_fills_items_book_with_the_shop_products(demo):
    want = _graph().shop_items(_demo_setting("WEB_PORT"))
    with duckdb.connect(str(demo.out / "crawl.duckdb"), read_only=True) as con:
        got = con.execute("select url, title, price, cover, authors, blurb from items_book order by url").fetchall()
    assert len(got) == len(want) > 0
    assert [dict(zip(want[0], row)) for row in got] == want
    # The demo's example query prints the first books with their authors.
    first = sorted(want, key=lambda d: d["title"])[0]
    assert "select title, price, authors from items_book" in demo.stdout
    assert first["title"] in demo.stdout and first["authors"][0] in demo.stdout


def test_demo_draws_the_report_and_says_where_everything_is(demo):
    index = demo.out / "report" / "index.html"
    html = index.read_text()
    pngs = re.findall(r'<img src="([^"]+\.png)"', html)
    assert len(pngs) >= 4, html[:2000]
    # The politeness panel is drawn for the demo's short crawl, its setpoint from --ring.
    assert "polite.png" in pngs, html[:2000]
    assert "setpoint from politeness.rate = 600 pages/min of" in html
    for name in pngs:
        assert (index.parent / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    assert f"merged results:  {demo.out / 'crawl.duckdb'}" in demo.stdout
    assert f"items table:     items_book in {demo.out / 'crawl.duckdb'}: {len(_graph().shop_items(_demo_setting('WEB_PORT')))} books" in demo.stdout
    assert f"report:          {index}" in demo.stdout


def test_readme_results_schema_matches_the_store():
    from peer.store import SCHEMA

    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Results schema", 1)[1].split("\n## ", 1)[0]
    for table, cols in SCHEMA.items():
        row = next((line for line in section.splitlines() if line.startswith(f"| `{table}`")), None)
        assert row is not None, f"README results schema lacks table {table}"
        for name, _ in cols:
            assert f"`{name}`" in row, f"README results schema lacks {table}.{name}"
