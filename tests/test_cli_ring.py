"""python -m ring status / leave: a ring it cannot ask is one line, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ringharness import cluster_text

ROOT = Path(__file__).resolve().parent.parent


def ring_cmd(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ring", *args], capture_output=True, text=True,
                          cwd=ROOT, env=os.environ, stdin=subprocess.DEVNULL, timeout=60)


def one_line(res: subprocess.CompletedProcess, status: int) -> str:
    assert res.returncode == status, res.stderr
    assert "Traceback" not in res.stderr and res.stderr.count("\n") == 1, res.stderr
    assert res.stderr.startswith("error: ")
    return res.stderr.strip()


def test_status_of_a_ring_nobody_answers_is_one_line_and_exit_1(tmp_path):
    # Two free loopback ports with nothing behind them: connects are refused.
    toml = tmp_path / "cluster.toml"
    toml.write_text(cluster_text(tmp_path, 9, 2))
    res = ring_cmd("status", "--ring", str(toml), "--timeout", "0.3")
    line = one_line(res, 1)
    assert "no peer of ring 'test' answered" in line and "are the peers running?" in line
    assert res.stdout == ""


def test_status_and_leave_of_a_missing_file_are_one_line_and_exit_2(tmp_path):
    for args in (("status",), ("leave", "--id", "p1")):
        res = ring_cmd(*args, "--ring", str(tmp_path / "none.toml"))
        assert one_line(res, 2) == f"error: {tmp_path / 'none.toml'}: no such file (pass --ring PATH to a cluster.toml)"


def test_a_missing_curve_key_inside_the_event_loop_is_one_line(tmp_path):
    # The tool's own pair is there but not p1's public key: the error is raised
    # inside trio.run, while asking p1.
    keys = tmp_path / "keys"
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "keys.py"), "--dir", str(keys),
                          "--id", "ops"], capture_output=True, text=True, timeout=60, env=os.environ)
    assert res.returncode == 0, res.stderr
    toml = tmp_path / "cluster.toml"
    toml.write_text(cluster_text(tmp_path, 9, 2).replace('[ring]\n', f'[ring]\ncurve_keys = "{keys}"\n'))
    for args in (("status", "--timeout", "0.3"), ("leave", "--id", "p2", "--timeout", "1")):
        res = ring_cmd(*args, "--ring", str(toml))
        line = one_line(res, 2)
        assert f"{keys / 'p1.key'}: no such key file" in line
