"""localweb.demo: scripts/demo's ports are planned and checked before anything is touched."""

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from localweb.demo import DemoError, busy, check, plan, run_config
from peer.core.config.cluster import parse_config
from peer.state.configfile import load_config

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def listening():
    """A port something listens on (127.0.0.1), for as long as the test runs."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


@pytest.fixture
def cfg(tmp_path):
    config = tmp_path / "cluster.toml"
    config.write_text((ROOT / "cluster.toml").read_text())
    return load_config(config)


def test_busy_tells_a_listening_port_from_a_free_one(listening):
    assert busy("127.0.0.1", listening) == "address already in use"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    assert busy("127.0.0.1", free) is None


def test_the_plan_keeps_configs_ports_unless_asked(cfg):
    p = plan(cfg, None)
    assert (p.web_port, p.seed_port, p.picked) == (8080, 8080, False)
    assert dict(p.addresses) == {s.id: s.address for s in cfg.peers}
    assert not p.rewrites(cfg)
    moved = plan(cfg, 8123)
    assert moved.web_port == 8123 and moved.rewrites(cfg)


def test_port_0_picks_distinct_free_ports_for_the_web_and_each_peer(cfg):
    p = plan(cfg, 0)
    ports = [p.web_port] + [int(a.rsplit(":", 1)[1]) for a in p.addresses.values()]
    assert p.picked and len(set(ports)) == 4
    assert all(busy("127.0.0.1", port) is None for port in ports)


def test_check_names_the_busy_port_and_who_needs_it(cfg, listening):
    p = plan(cfg, listening)
    with pytest.raises(DemoError, match=rf"127\.0\.0\.1:{listening}, where the local web must listen, is busy"):
        check(cfg, p)


def test_run_config_moves_ports_and_data_and_keeps_the_rest(cfg, tmp_path):
    p = plan(cfg, 0)
    out = tmp_path / "out"
    text = run_config(Path(cfg.path).read_text(), cfg, p, out)
    run = parse_config(text, out / "cluster.toml")
    assert run.crawl.seeds == (f"http://s001.web.test:{p.web_port}/",)
    assert {s.id: s.address for s in run.peers} == dict(p.addresses)
    assert {s.id: s.data_dir for s in run.peers} == {s.id: str(out / s.id) for s in cfg.peers}
    # Everything else is CONFIG's: the extraction rule, politeness, comments.
    assert run.extract == cfg.extract and run.politeness == cfg.politeness
    assert "# start URLs (http or https)" in text


def test_main_prints_shell_lines_or_one_error_line(tmp_path, listening):
    config = tmp_path / "cluster.toml"
    config.write_text((ROOT / "cluster.toml").read_text())
    args = [sys.executable, "-m", "localweb.demo", "--config", str(config), "--out", str(tmp_path / "out"),
            "--write", str(tmp_path / "run.toml")]
    res = subprocess.run([*args, "--port", "0"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[1] == "REWRITTEN=1" and (tmp_path / "run.toml").exists()
    res = subprocess.run([*args, "--port", str(listening)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.count("\n") == 1 and res.stderr.startswith(f"demo: 127.0.0.1:{listening}, ")
