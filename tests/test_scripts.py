"""The quickstart commands work as the README says."""

import subprocess
from pathlib import Path

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


def test_demo_prints_the_ring_and_crawls_with_three_peers():
    res = subprocess.run(["bash", "scripts/demo"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    ring = ring_of(load_config(ROOT / "cluster.toml"))
    shares = ring.shares()
    assert "cluster.toml: ok: ring 'demo', 3 peer(s)" in res.stdout
    for peer in ("p1", "p2", "p3"):
        assert f"{shares[peer]:.1%}" in res.stdout
    assert f"s001.web.test:8080                       {ring.owner('s001.web.test:8080')}" in res.stdout
    # The 3-peer crawl of cluster.toml: each peer ends by itself, status answered part-way.
    assert res.stdout.count("crawl finished (cluster done)") == 3, res.stdout[-3000:]
    assert "==> part-way: python -m ring status" in res.stdout
    assert res.stdout.count("tcp://127.0.0.1:570") >= 3


def test_readme_results_schema_matches_the_store():
    from peer.store import SCHEMA

    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Results schema", 1)[1].split("\n## ", 1)[0]
    for table, cols in SCHEMA.items():
        row = next((line for line in section.splitlines() if line.startswith(f"| `{table}`")), None)
        assert row is not None, f"README results schema lacks table {table}"
        for name, _ in cols:
            assert f"`{name}`" in row, f"README results schema lacks {table}.{name}"
