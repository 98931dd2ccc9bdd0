"""The shell of every ``peer`` command: a user's error is one ``error:`` line and exit status 2.

``@cli_main`` over ``def main(argv) -> int`` prints a ``PeerError`` or a
``RingError`` it raises (:data:`peer.errors.USER_ERRORS`) as one line and
returns 2 (``ring.tools.shell.cli_shell`` is the shell; this is it for both
packages' errors). It lives with the commands, not in ``peer.errors``: every
core module imports the error tree, and none may import ``ring.tools``.
"""

from __future__ import annotations

from peer.errors import USER_ERRORS
from ring.tools.shell import cli_shell

__all__ = ["cli_main"]

#: The shell of every command: ``@cli_main`` over ``def main(argv) -> int``.
cli_main = cli_shell(*USER_ERRORS)
