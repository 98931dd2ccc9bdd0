"""The quickstart commands work as the README says."""

import re
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

from peer.state.configfile import load_config
from ring.tools.cli import ring_of

ROOT = Path(__file__).resolve().parents[2]


def test_readme_quickstart_is_exactly_the_two_commands():
    readme = (ROOT / "README.md").read_text()
    quick = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    block = quick.split("```sh\n", 1)[1].split("```", 1)[0]
    assert block.split("\n")[:-1] == ["scripts/demo", "scripts/test"]


def test_ci_runs_the_readme_test_command():
    assert "bash scripts/test" in (ROOT / ".ci" / "run").read_text()


@dataclass(frozen=True)
class DemoRun:
    config: Path     # the copy of cluster.toml the demo was given
    run: Path        # the cluster.toml it ran with: OUT/cluster.toml, with the ports it picked
    out: Path
    stdout: str
    web_port: int
    held: tuple[int, ...]  # CONFIG's own ports, which the test held busy during the run


def _demo_setting(name: str) -> int:
    m = re.search(rf"^{name}=(\d+)$", (ROOT / "scripts" / "demo").read_text(), re.M)
    assert m, f"scripts/demo sets no {name}="
    return int(m.group(1))


def _listen(port: int) -> socket.socket:
    """A socket listening on 127.0.0.1:``port``: anyone else binding it fails."""
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        s.listen()
    except OSError:
        s.close()  # else the unbound socket is collected later, in another test, as a ResourceWarning
        raise
    return s


def _config_on_ports(tmp: Path, web: int, peers: list[int]) -> Path:
    """A copy of cluster.toml whose web and peers use these ports (instead of 8080 and 5701-5703).

    Its gossip rounds are 0.2 s instead of 0.5: a peer lingers 6 rounds after
    the cluster is done and the counter method needs 2 more, so the demo's
    3-peer crawl ends ~2 s sooner; the timers are tested in tests/ring/test_membership.py.
    And its politeness.rate is 1200 pages/min, not 600: the crawl is paced by
    it (the shop's 59 pages alone took 6 s at 600), and the report must show
    the setpoint it was given.
    """
    text = (ROOT / "cluster.toml").read_text().replace("s001.web.test:8080", f"s001.web.test:{web}")
    for old, new in (("\ngossip_interval = 0.5 ", "\ngossip_interval = 0.2 "), ("\nrate = 600.0 ", "\nrate = 1200.0 ")):
        assert old in text, old
        text = text.replace(old, new)
    for i, port in enumerate(peers):
        text = text.replace(f"tcp://127.0.0.1:{5701 + i}", f"tcp://127.0.0.1:{port}")
    config = tmp / "cluster.toml"
    config.write_text(text)
    return config


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> DemoRun:
    """One run of ``scripts/demo --port 0`` while every port its CONFIG names is held busy.

    The suite needs no fixed port: the demo picks free ones for its web and
    peers and prints them. CONFIG is cluster.toml on ports this test holds
    (not 8080 and 5701-5703 themselves, which another checkout's demo on this
    machine may be using right now; test_demo_with_a_busy_fixed_port... holds
    those for the few seconds it needs).
    """
    tmp = tmp_path_factory.mktemp("demo")
    socks = [_listen(0) for _ in range(4)]
    try:
        held = tuple(s.getsockname()[1] for s in socks)
        config = _config_on_ports(tmp, held[0], list(held[1:]))
        out = tmp / "out"
        res = subprocess.run(["bash", "scripts/demo", "--port", "0", str(config), str(out)], cwd=ROOT,
                             capture_output=True, text=True, timeout=240)
    finally:
        for s in socks:
            s.close()
    assert res.returncode == 0, f"stdout tail:\n{res.stdout[-3000:]}\nstderr tail:\n{res.stderr[-3000:]}"
    m = re.search(r"^local web:  http://127\.0\.0\.1:(\d+)/", res.stdout, re.M)
    assert m, res.stdout[:3000]
    return DemoRun(config, out / "cluster.toml", out, res.stdout, int(m[1]), held)


def _graph():
    import localweb

    return localweb.SiteGraph(hosts=_demo_setting("WEB_HOSTS"), pages_per_host=_demo_setting("WEB_PAGES"))


def test_demo_prints_the_ring_and_crawls_with_three_peers(demo):
    ring = ring_of(load_config(demo.run))
    shares = ring.shares()
    # --check runs once the web is up, on the config of the run (its ports made free).
    assert f"{demo.run}: ok: ring 'demo', 3 peer(s)" in demo.stdout
    for peer in ("p1", "p2", "p3"):
        assert f"{shares[peer]:.1%}" in demo.stdout
    host = f"s001.web.test:{demo.web_port}"
    assert f"{host:<40} {ring.owner(host)}" in demo.stdout
    # The 3-peer crawl: each peer ends by itself, status answered part-way.
    assert demo.stdout.count("crawl finished (cluster done)") == 3, demo.stdout[-3000:]
    assert "==> part-way: python -m ring status" in demo.stdout
    assert re.search(r"^==> dashboard: http://127\.0\.0\.1:\d+/ \(ring 'demo'", demo.stdout, re.M)
    # The status table's totals row: three live, how many hold their lease and on
    # how many rings (a peer that joined late may still be in its grace: not 3 and 1 always).
    assert re.search(r"^total +3 live +[0-3] held +[0-3] rings?!? +100\.0%", demo.stdout, re.M), \
        demo.stdout[-3000:]


def test_demo_picks_free_ports_and_prints_the_addresses_it_used(demo):
    run = load_config(demo.run)
    assert run.crawl.seeds == (f"http://s001.web.test:{demo.web_port}/",)
    ports = [demo.web_port] + [int(p.address.rsplit(":", 1)[1]) for p in run.peers]
    assert len(set(ports)) == 4 and not set(ports) & set(demo.held)
    for p in run.peers:
        assert re.search(rf"^peer {p.id}: +{re.escape(p.address)}$", demo.stdout, re.M), p
        # The run's peers kept their data in OUT, not where CONFIG says.
        assert Path(p.data_dir) == demo.out / p.id
    assert not (demo.config.parent / "data").exists()


def _hold(port: int) -> socket.socket | None:
    """Listen on 127.0.0.1:``port``; None if something else already does (it is busy either way)."""
    try:
        return _listen(port)
    except OSError:
        return None


def _demo_with_busy_ports(tmp_path: Path, busy: tuple[int, ...], argv: list[str]) -> None:
    tmp_path.mkdir()
    config = tmp_path / "cluster.toml"
    shutil.copy(ROOT / "cluster.toml", config)
    out = tmp_path / "out"
    out.mkdir()
    (out / ".ringcrawl-demo").touch()
    (out / "crawl.duckdb").write_bytes(b"the last demo's results")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    argv = [str(free) if a == "FREE" else a for a in argv]
    held = [_hold(port) for port in busy]
    try:
        res = subprocess.run(["bash", "scripts/demo", *argv, str(config), str(out)], cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
    finally:
        for s in held:
            if s is not None:
                s.close()
    assert res.returncode == 2, res.stdout[-2000:] + res.stderr[-2000:]
    lines = [line for line in res.stderr.splitlines() if line.startswith("demo:")]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert f"127.0.0.1:{busy[0]}," in lines[0] and "busy" in lines[0] and "--port 0" in lines[0]
    assert sorted(p.name for p in out.iterdir()) == [".ringcrawl-demo", "crawl.duckdb"]
    assert (out / "crawl.duckdb").read_bytes() == b"the last demo's results"
    assert "==> starting the local test web" not in res.stdout


def test_demo_with_a_busy_fixed_port_fails_in_one_line_and_keeps_old_results(tmp_path):
    # cluster.toml's own web and peer ports
    _demo_with_busy_ports(tmp_path / "fixed", (8080, 5701), [])
    # the web moved to a free port; p1's port still busy
    _demo_with_busy_ports(tmp_path / "moved", (5701,), ["--port", "FREE"])


# One test for all the cases: each is a run of scripts/demo (bash, which
# ends before it starts Python), and each run was a test that started the demo.
HELP_AND_BAD_ARGUMENTS = [(["--help"], 0), (["-h"], 0), (["--port"], 2), (["--port", "http"], 2),
                          (["--bogus"], 2), (["a", "b", "c"], 2)]


def test_demo_help_and_bad_arguments():
    for argv, code in HELP_AND_BAD_ARGUMENTS:
        res = subprocess.run(["bash", "scripts/demo", *argv], cwd=ROOT, capture_output=True, text=True,
                             timeout=60)
        assert res.returncode == code, (argv, res.stderr)
        if code == 0:
            assert res.stdout.startswith("usage: scripts/demo [--port N] [CONFIG [OUT]]") and res.stderr == "", argv
        else:
            assert res.stderr.startswith(("demo: ", "usage: ")) and "Traceback" not in res.stderr, (argv, res.stderr)
        assert "no such config file" not in res.stderr, argv  # --help is not read as a CONFIG path


def _demo_rows(demo):
    with duckdb.connect(str(demo.out / "crawl.duckdb"), read_only=True) as con:
        return con.execute("select url, host, peer, status, error from pages").fetchall()


def test_demo_merges_the_whole_web_each_page_once(demo):
    port = demo.web_port
    graph = _graph()
    rows = _demo_rows(demo)
    fetched = [url for url, _, _, status, _ in rows if status is not None]
    assert len(fetched) == len(set(fetched))
    assert set(fetched) == set(graph.expected_urls(port))
    assert {url for url, _, _, _, error in rows if error == "robots"} == set(graph.disallowed_urls(port))


def test_demo_pages_are_fetched_by_their_owners(demo):
    ring = ring_of(load_config(demo.run))
    rows = _demo_rows(demo)
    # The web's port is a free one, so which peers own its 7 hosts varies from
    # run to run (one of the three owns none of them in about one run in five):
    # each owner fetched, and only what it owns.
    assert {peer for _, _, peer, _, _ in rows} == {ring.owner(host) for _, host, _, _, _ in rows}
    assert [(url, peer) for url, host, peer, _, _ in rows if ring.owner(host) != peer] == []


def test_demo_fills_items_book_with_the_shop_products(demo):
    want = _graph().shop_items(demo.web_port)
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
    assert "setpoint from politeness.rate = 1200 pages/min of" in html
    for name in pngs:
        assert (index.parent / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    assert f"merged results:  {demo.out / 'crawl.duckdb'}" in demo.stdout
    assert f"items table:     items_book in {demo.out / 'crawl.duckdb'}: {len(_graph().shop_items(demo.web_port))} books" in demo.stdout
    assert f"report:          {index}" in demo.stdout


def test_docs_results_schema_matches_the_store():
    from peer.results.store import SCHEMA

    page = (ROOT / "docs" / "results.md").read_text()
    section = page.split("# Results schema", 1)[1].split("\n## ", 1)[0]
    for table, cols in SCHEMA.items():
        row = next((line for line in section.splitlines() if line.startswith(f"| `{table}`")), None)
        assert row is not None, f"docs/results.md results schema lacks table {table}"
        for name, _ in cols:
            assert f"`{name}`" in row, f"docs/results.md results schema lacks {table}.{name}"
