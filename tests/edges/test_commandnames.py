"""Commands name themselves and each other as the user started them: installed or from a checkout.

Each command's ``main`` runs in process with ``sys.argv[0]`` as pip's launcher
sets it (``/usr/local/bin/ringcrawl-merge``) or as ``python -m peer`` and
``python scripts/merge.py`` set it, and its help and messages are judged as a
user reads them (the installed copy itself: tests/project/test_install.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from clirun import run_main
from ring.commandnames import CHECKOUT, INSTALLED, Command

ROOT = Path(__file__).resolve().parents[2]


def mains():
    from localweb.webfarm import main as webfarm
    from peer.commands.adopt import main as adopt
    from peer.commands.cli import main as peer
    from peer.commands.merge import main as merge
    from peer.commands.report import main as report
    from ring.__main__ import keys_main, main as ring

    return {Command.PEER: peer, Command.RING: ring, Command.MERGE: merge, Command.REPORT: report,
            Command.ADOPT: adopt, Command.KEYS: keys_main, Command.WEBFARM: webfarm}


@pytest.mark.parametrize("cmd", list(Command), ids=lambda c: c.value)
def test_an_installed_command_names_itself_and_the_others_as_installed(cmd, monkeypatch):
    monkeypatch.setattr(sys, "argv", [f"/usr/local/bin/{INSTALLED[cmd]}"])
    res = run_main(mains()[cmd], ["--help"])
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"usage: {INSTALLED[cmd]} "), res.stdout[:200]
    assert "python -m" not in res.stdout and "scripts/" not in res.stdout, res.stdout


def test_the_peer_s_usage_lists_try(monkeypatch):
    for argv0, me in (("/usr/local/bin/ringcrawl", "ringcrawl"), (str(ROOT / "peer" / "__main__.py"), "python -m peer")):
        monkeypatch.setattr(sys, "argv", [argv0])
        usage = run_main(mains()[Command.PEER], ["--help"]).stdout.split("\n\n")[0]
        assert usage.startswith(f"usage: {me} [-h] --ring PATH")
        assert f"\n       {me} try URL --ring PATH [options]" in usage
        assert run_main(mains()[Command.PEER], ["try", "--help"]).stdout.startswith(f"usage: {me} try ")


def test_a_checkout_s_commands_keep_their_checkout_names(monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(ROOT / "scripts" / "adopt.py")])
    res = run_main(mains()[Command.ADOPT], ["--help"])
    assert res.stdout.startswith("usage: python scripts/adopt.py ")
    assert "python -m ring status --ring cluster.toml" in res.stdout


def test_ring_status_of_a_solo_peer_not_running_says_how_to_start_it_as_installed(tmp_path, monkeypatch):
    toml = tmp_path / "solo.toml"
    toml.write_text(f'[ring]\nname = "solo"\n[[peer]]\nid = "solo"\ndata_dir = "{tmp_path / "solo"}"\n'
                    '[crawl]\nseeds = ["http://s001.web.test:8080/"]\n')
    monkeypatch.setattr(sys, "argv", ["/usr/local/bin/ringcrawl-ring"])
    res = run_main(mains()[Command.RING], ["seed", "add", "--ring", str(toml), "http://s001.web.test:8080/x"])
    assert f"start it with: ringcrawl --ring {toml}" in res.stderr, res.stderr


def test_the_names_are_pyproject_s_scripts():
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert set(scripts) == set(INSTALLED.values()) and set(INSTALLED) == set(CHECKOUT) == set(Command)
