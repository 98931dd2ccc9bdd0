"""The exceptions of the ``ring`` package.

::

    RingError                      base of everything ring raises on purpose
    ├── DecodeError                bytes from the network are not a message we accept
    ├── EncodeError                we tried to send something the codec cannot carry (our bug)
    └── EmptyRingError             an owner was asked of a ring with no members

``DecodeError`` is the remote's fault (h11's ``RemoteProtocolError``): the
receiver drops and counts the message. ``EncodeError`` is ours
(``LocalProtocolError``) and should never happen in a correct peer.

:func:`user_error` finds a user's error inside what ``trio.run`` raised:
trio's nurseries wrap even a lone error in an ``ExceptionGroup``
(``strict_exception_groups``, the default since trio 0.25), so ``except
RingError`` alone never sees it. The command-line shell that prints it as
one line, ``ring.tools.shell.cli_shell``, is built on it; ``peer.commands.shell.cli_main``
is that shell for both packages' errors.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from enum import StrEnum
from typing import Protocol

__all__ = ["RingError", "DecodeError", "DropKind", "EncodeError", "EmptyRingError",
           "EXIT_USAGE", "user_error"]

#: The exit status of a user's mistake (a bad option, config or file), as argparse's own.
EXIT_USAGE = 2


class RingError(Exception):
    """Base class of every error the ring package raises on purpose."""


class DropKind(StrEnum):
    """Why a received frame was dropped: the key of the receiver's drop counters
    (shown by ``python -m ring status``)."""

    OVERSIZED = "oversized"  # over the codec's frame limit
    NOT_MSGPACK = "not_msgpack"  # garbage or a truncated frame
    VERSION = "version"  # another wire version
    UNKNOWN_TYPE = "unknown_type"  # a message type this version does not know
    MALFORMED = "malformed"  # a known type with missing or mistyped fields


class DecodeError(RingError, ValueError):
    """Bytes that are not a valid message of this wire version; ``kind`` says which fault."""

    def __init__(self, message: str, kind: DropKind = DropKind.MALFORMED) -> None:
        super().__init__(message)
        self.kind = kind


class EncodeError(RingError, ValueError):
    """A message that cannot be encoded (a value the codec does not carry)."""


class EmptyRingError(RingError, LookupError):
    """An owner was asked of a ring with no members."""


class Main(Protocol):
    """A command's entry point: ``main(argv=None) -> exit status``."""

    def __call__(self, argv: Sequence[str] | None = None, /) -> int: ...


def user_error(exc: BaseException,
               kinds: tuple[type[BaseException], ...] = (RingError,)) -> BaseException | None:
    """The one error of ``kinds`` that ``exc`` is or carries, or None.

    A group counts when every leaf is one of ``kinds`` or a ``trio.Cancelled``
    (the sibling tasks a failing one took down); its first such leaf is
    returned. Anything else, a group with one of ours next to a real bug
    included, gives None, and the caller re-raises ``exc`` with a bare
    ``raise`` so the bug's whole traceback is shown, not hidden behind our
    line.
    """
    if not isinstance(exc, BaseExceptionGroup):
        return exc if isinstance(exc, kinds) else None
    # No trio import here (the pure cores import this module): if trio is not
    # loaded, no Cancelled exists.
    trio = sys.modules.get("trio")
    cancelled = (trio.Cancelled,) if trio is not None else ()
    ours = []
    for e in _leaves(exc):
        if isinstance(e, kinds):
            ours.append(e)
        elif not isinstance(e, cancelled):
            return None
    return ours[0] if ours else None


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    out: list[BaseException] = []
    for e in group.exceptions:
        out.extend(_leaves(e) if isinstance(e, BaseExceptionGroup) else [e])
    return out
