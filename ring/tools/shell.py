"""The command-line shell of every command of both packages: a user's error is one line, exit 2.

``python -m peer``, ``python -m ring`` and the user commands wrap their
``main(argv)`` in :func:`cli_shell` (``peer.commands.shell.cli_main`` is the shell
for both packages' errors), so ``ring`` needs nothing of ``peer``. Which
errors are a user's, and how they are found inside trio's exception groups,
is ``ring.errors.user_error``.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Sequence

from ring.errors import EXIT_USAGE, Main, user_error

__all__ = ["cli_shell", "reader_gone"]


def reader_gone() -> int:
    """The reader of our output left (``| head``): what it read was what it wanted; exit 0.

    The rest of the output goes to /dev/null, so the interpreter's last
    flush does not fail again (the Python docs' recipe for SIGPIPE).
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 0


def cli_shell(*kinds: type[BaseException]) -> Callable[[Main], Main]:
    """A decorator for a command's ``main(argv) -> int``: errors of ``kinds`` become one line.

    What ``main`` raises that :func:`user_error` finds is printed as
    ``error: <message>`` (on one line: a message's line breaks become
    spaces) and the command exits with :data:`EXIT_USAGE`; anything else
    (a bug) propagates with its traceback. ``main`` keeps its own other exit
    statuses (1 for "no peer answered", ...). A reader that left (``| head``)
    ends the command quietly, exit 0 (:func:`reader_gone`).
    """

    def wrap(main: Main) -> Main:
        @functools.wraps(main)
        def shell(argv: Sequence[str] | None = None) -> int:
            try:
                return main(argv)
            except BaseException as exc:
                if user_error(exc, (BrokenPipeError,)) is not None:
                    return reader_gone()
                err = user_error(exc, kinds)
                if err is None:
                    raise
                print("error: " + " ".join(str(err).splitlines()), file=sys.stderr)
                return EXIT_USAGE

        return shell

    return wrap
