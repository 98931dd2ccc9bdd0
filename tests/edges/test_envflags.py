"""python -m peer's flags from the environment (peer/commands/envflags.py): RINGCRAWL_<FLAG>."""

from __future__ import annotations

import re

import pytest

from clirun import error_line, run_main
from ringharness import cluster_text
from peer.commands import envflags
from peer.commands.cli import _parser, main


@pytest.fixture
def ring(tmp_path):
    path = tmp_path / "cluster.toml"
    path.write_text(cluster_text(tmp_path, 9, 3))
    return path


def _chosen(stdout: str) -> list[str]:
    """The peer ids --check marks as this process ( ` * p2  tcp://...`)."""
    return re.findall(r"^ \* (\S+)", stdout, re.M)


def test_the_ring_and_the_id_come_from_the_environment(ring, monkeypatch):
    monkeypatch.setenv("RINGCRAWL_RING", str(ring))
    monkeypatch.setenv("RINGCRAWL_ID", "p2")
    res = run_main(main, ["--check"])
    assert res.returncode == 0, res.stderr
    assert _chosen(res.stdout) == ["p2"]


def test_a_flag_on_the_command_line_wins_over_its_variable(ring, monkeypatch):
    monkeypatch.setenv("RINGCRAWL_RING", "/nonexistent/cluster.toml")
    monkeypatch.setenv("RINGCRAWL_ID", "p2")
    res = run_main(main, ["--ring", str(ring), "--id", "p3", "--check"])
    assert res.returncode == 0, res.stderr
    assert _chosen(res.stdout) == ["p3"]


@pytest.mark.parametrize("name, value, says", [
    ("RINGCRAWL_LOG_LEVEL", "LOUD", "expected one of DEBUG, INFO, WARNING, ERROR (as --log-level)"),
    ("RINGCRAWL_PROGRESS", "soon", "expected a number (as --progress)"),
    ("RINGCRAWL_LEAVE", "maybe", "expected one of 1, true, yes, on, 0, false, no, off"),
])
def test_a_bad_value_is_one_line_naming_the_variable_and_exit_2(ring, monkeypatch, name, value, says):
    monkeypatch.setenv(name, value)
    line = error_line(run_main(main, ["--ring", str(ring), "--check"]))
    assert line == f"error: {name}={value!r}: {says}"


def test_help_names_each_variable_and_fresh_never_comes_from_the_environment(monkeypatch):
    res = run_main(main, ["--help"])
    assert res.returncode == 0
    text = " ".join(res.stdout.split())  # argparse wraps the help
    for option in ("--ring", "--id", "--address", "--data-dir", "--leave", "--resume", "--log-level"):
        assert f"[env {envflags.variable(option)}]" in text
    assert "RINGCRAWL_FRESH" not in text and "RINGCRAWL_YES" not in text
    assert "the command line wins" in text
    # A variable outlives the start it was meant for: a service restarted by
    # its manager must never start fresh because of one.
    parser = _parser()
    envflags.apply(parser, {"RINGCRAWL_RING": "x.toml", "RINGCRAWL_FRESH": "1", "RINGCRAWL_YES": "1"})
    args = parser.parse_args([])
    assert (args.ring, args.fresh, args.yes) == ("x.toml", False, False)


@pytest.mark.parametrize("value, leave", [("1", True), ("TRUE", True), ("on", True), ("0", False),
                                          ("no", False), ("", False)])
def test_a_switch_takes_yes_or_no_and_an_empty_variable_is_unset(value, leave):
    parser = _parser()
    envflags.apply(parser, {"RINGCRAWL_RING": "x.toml", "RINGCRAWL_LEAVE": value,
                            "RINGCRAWL_ID": "", "RINGCRAWL_PROGRESS": "2.5"})
    args = parser.parse_args([])
    assert (args.leave, args.id, args.progress) == (leave, None, 2.5)
    assert parser.parse_args(["--leave"]).leave is True
