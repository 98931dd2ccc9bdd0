"""The command-line shell (ring.tools.shell.cli_shell, peer.commands.shell.cli_main): what a command prints
as its one line, and what it must not hide; and every command, run as a user runs it, says a
mistake in one line with exit status 2.

Each command's ``main(argv)`` runs in this process (tests/support/clirun.py); ``python
-m peer`` also runs as a process, through its real entry point. The other
entry points run as processes in their own tests: ``python -m ring`` in
test_cli_ring.py, scripts/merge.py in test_merge.py, scripts/report.py in
test_report.py, scripts/adopt.py in test_adopt.py, scripts/keys.py in
test_curve_ring.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
import trio

from peer.commands.shell import cli_main
from peer.errors import ConfigError, LockedError, PeerError, StateError, user_error
from ring.errors import RingError
from ring.tools.shell import cli_shell

ROOT = Path(__file__).resolve().parents[2]


def raised_by_nursery(*errors: BaseException) -> BaseException:
    """What trio.run raises when tasks of one nursery raise ``errors``."""

    async def fail(e: BaseException) -> None:
        raise e

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            for e in errors:
                nursery.start_soon(fail, e)

    with pytest.raises(BaseException) as info:
        trio.run(main)
    return info.value


def a_cancelled() -> trio.Cancelled:
    async def grab() -> trio.Cancelled:
        with trio.CancelScope() as scope:
            scope.cancel()
            try:
                await trio.sleep(1)
            except trio.Cancelled as c:
                return c
        raise AssertionError("not cancelled")

    return trio.run(grab)


def test_trio_wraps_even_a_lone_error_so_the_cli_must_unwrap():
    err = StateError("data/state/snapshot-3.msgpack: corrupt")
    exc = raised_by_nursery(err)
    assert isinstance(exc, BaseExceptionGroup)  # why `except PeerError` alone printed a traceback
    assert user_error(exc) is err


def test_ours_unwrapped_from_nested_groups_and_beside_cancelled_siblings():
    err = RingError("ROUTER socket: cannot bind tcp://127.0.0.1:5701: Address already in use")
    group = BaseExceptionGroup("outer", [a_cancelled(), BaseExceptionGroup("inner", [err])])
    assert user_error(group) is err


def test_the_first_of_several_of_ours_is_the_line():
    first, second = ConfigError("c.toml", "crawl.rate", "expected a number"), StateError("x")
    assert user_error(ExceptionGroup("g", [first, second])) is first


def test_a_bug_beside_ours_is_not_hidden():
    exc = raised_by_nursery(StateError("data/pages.duckdb: locked"), KeyError("a real bug"))
    assert user_error(exc) is None  # the caller re-raises the whole group


@pytest.mark.parametrize("exc", [
    KeyError("bug"),
    KeyboardInterrupt(),
    BaseExceptionGroup("g", [KeyboardInterrupt()]),
    ExceptionGroup("g", [ValueError("bug")]),
    BaseExceptionGroup("only cancelled", [a_cancelled()]),
])
def test_anything_not_ours_gives_none(exc):
    assert user_error(exc) is None


def test_a_plain_error_of_ours_is_itself_and_kinds_can_be_narrowed():
    err = LockedError("data/pages.duckdb: held open by process 7", pid=7)
    assert user_error(err) is err and isinstance(err, StateError) and isinstance(err, PeerError)
    assert user_error(err, (RingError,)) is None
    farm = OSError("cannot listen on 127.0.0.1:8080")
    assert user_error(ExceptionGroup("g", [farm]), (OSError,)) is farm


# ------------------------------------------------------------------ the shell


def test_the_shell_prints_an_error_trio_wrapped_as_one_line_and_returns_2(capsys):
    @cli_main
    def main(argv: Sequence[str] | None = None) -> int:
        async def crawl() -> None:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(trio.sleep_forever)
                raise StateError("data/state/snapshot-3.msgpack: corrupt;\nmove it away")

        trio.run(crawl)
        return 0

    assert main([]) == 2
    assert capsys.readouterr().err == "error: data/state/snapshot-3.msgpack: corrupt; move it away\n"


def test_the_shell_passes_the_commands_own_exit_status_and_its_arguments(capsys):
    @cli_main
    def main(argv: Sequence[str] | None = None) -> int:
        return len(argv or ())

    assert main(["a", "b", "c"]) == 3 and main() == 0
    assert capsys.readouterr().err == ""


def test_the_shell_lets_a_bug_through_with_its_traceback():
    @cli_main
    def main(argv: Sequence[str] | None = None) -> int:
        raise KeyError("a real bug")

    with pytest.raises(KeyError):
        main([])


def test_a_ring_only_shell_does_not_swallow_other_errors(capsys):
    @cli_shell(RingError)
    def main(argv: Sequence[str] | None = None) -> int:
        raise ConfigError("c.toml", "ring.name", "expected a string")

    with pytest.raises(ConfigError):
        main([])


# ------------------------------------------------- every command, as a user runs it

MISSING = "no-such-cluster.toml"

#: One user mistake per command: (the command's main, its argv, a word the line must name).
#: A main is "module:function" or "ring" (ring.tools.cli.main with ring/__main__.py's ConfigSource).
COMMANDS = {
    "peer": ("peer.commands.cli:main", ["--ring", MISSING], MISSING),
    "peer --progress": ("peer.commands.cli:main", ["--ring", "{toml}", "--progress", "0"], "--progress"),
    "ring table": ("ring", ["table", "--ring", MISSING], MISSING),
    "ring table --sample": ("ring", ["table", "--ring", "{toml}", "--sample", "-1"], "--sample"),
    "ring status": ("ring", ["status", "--ring", MISSING], MISSING),
    "ring leave": ("ring", ["leave", "--ring", MISSING, "--id", "p1"], MISSING),
    "merge": ("peer.commands.merge:main", ["-o", "{tmp}/out.duckdb"], "no input"),
    "merge --ring": ("peer.commands.merge:main", ["--ring", MISSING, "-o", "{tmp}/out.duckdb"], MISSING),
    "adopt": ("peer.commands.adopt:main", ["{tmp}", "--ring", MISSING], MISSING),
    "adopt --timeout": ("peer.commands.adopt:main", ["{tmp}", "--ring", "{toml}", "--timeout", "0"], "--timeout"),
    "keys": ("ring.__main__:keys_main", [], "--ring"),
    "keys --ring": ("ring.__main__:keys_main", ["--ring", MISSING], MISSING),
    "report": ("peer.commands.report:main", ["{tmp}/missing.duckdb", "-o", "{tmp}/report"], "missing.duckdb"),
}


def a_toml(tmp_path: Path) -> Path:
    toml = tmp_path / "cluster.toml"
    toml.write_text('[ring]\nname = "t"\n\n[[peer]]\nid = "p1"\naddress = "tcp://127.0.0.1:1"\n\n'
                    '[crawl]\nseeds = ["http://127.0.0.1:1/"]\n')
    return toml


def assert_one_line(returncode: int, stdout: str, stderr: str, names: str) -> None:
    assert returncode == 2, stderr
    assert stdout == "", stdout
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert names in lines[0], lines[0]


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_says_a_users_mistake_in_one_line_and_exits_2(tmp_path, monkeypatch, name):
    import importlib

    from clirun import ring_main, run_main

    target, argv, names = COMMANDS[name]
    toml = a_toml(tmp_path)
    argv = [a.format(toml=toml, tmp=tmp_path) for a in argv]
    monkeypatch.chdir(ROOT)  # relative paths resolve as for a user in the checkout
    if target == "ring":
        res = ring_main(argv)
    else:
        module, _, function = target.partition(":")
        res = run_main(getattr(importlib.import_module(module), function), argv)
    assert_one_line(res.returncode, res.stdout, res.stderr, names)


def test_python_m_peer_says_a_users_mistake_in_one_line_and_exits_2(tmp_path):
    # The real entry point (peer/__main__.py): its exit status reaches the shell.
    _, argv, names = COMMANDS["peer"]
    # os.environ carries PYTHONPATH, so the child imports this tree.
    res = subprocess.run([sys.executable, "-m", "peer", *argv], capture_output=True, text=True, cwd=ROOT,
                         env=os.environ, stdin=subprocess.DEVNULL, timeout=120)
    assert_one_line(res.returncode, res.stdout, res.stderr, names)
