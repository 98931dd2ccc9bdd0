"""peer.errors.user_error: what a command line prints as its one line, and what it must not hide."""

from __future__ import annotations

import pytest
import trio

from peer.errors import ConfigError, LockedError, PeerError, StateError, user_error
from ring.errors import RingError


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
