"""The command-line shell (ring.errors.cli_shell, peer.errors.cli_main): what a command prints
as its one line, and what it must not hide; and every command, run as a user runs it, says a
mistake in one line with exit status 2."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
import trio

from peer.errors import ConfigError, LockedError, PeerError, StateError, cli_main, user_error
from ring.errors import RingError, cli_shell

ROOT = Path(__file__).resolve().parent.parent


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

#: One user mistake per command: (the command line, a word the line must name).
COMMANDS = {
    "peer": (["-m", "peer", "--ring", MISSING], MISSING),
    "peer --progress": (["-m", "peer", "--ring", "{toml}", "--progress", "0"], "--progress"),
    "ring table": (["-m", "ring", "table", "--ring", MISSING], MISSING),
    "ring table --sample": (["-m", "ring", "table", "--ring", "{toml}", "--sample", "-1"], "--sample"),
    "ring status": (["-m", "ring", "status", "--ring", MISSING], MISSING),
    "ring leave": (["-m", "ring", "leave", "--ring", MISSING, "--id", "p1"], MISSING),
    "merge": (["scripts/merge.py", "-o", "{tmp}/out.duckdb"], "no input"),
    "merge --ring": (["scripts/merge.py", "--ring", MISSING, "-o", "{tmp}/out.duckdb"], MISSING),
    "adopt": (["scripts/adopt.py", "{tmp}", "--ring", MISSING], MISSING),
    "adopt --timeout": (["scripts/adopt.py", "{tmp}", "--ring", "{toml}", "--timeout", "0"], "--timeout"),
    "keys": (["scripts/keys.py"], "--ring"),
    "keys --ring": (["scripts/keys.py", "--ring", MISSING], MISSING),
    "report": (["scripts/report.py", "{tmp}/missing.duckdb", "-o", "{tmp}/report"], "missing.duckdb"),
}


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_says_a_users_mistake_in_one_line_and_exits_2(tmp_path, name):
    toml = tmp_path / "cluster.toml"
    toml.write_text('[ring]\nname = "t"\n\n[[peer]]\nid = "p1"\naddress = "tcp://127.0.0.1:1"\n\n'
                    '[crawl]\nseeds = ["http://127.0.0.1:1/"]\n')
    argv, names = COMMANDS[name]
    argv = [a.format(toml=toml, tmp=tmp_path) for a in argv]
    # os.environ carries PYTHONPATH, so the child imports this tree.
    res = subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=ROOT,
                         env=os.environ, stdin=subprocess.DEVNULL, timeout=120)
    assert res.returncode == 2, res.stderr
    assert res.stdout == "", res.stdout
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert names in lines[0], lines[0]
