"""The exceptions of the ``ring`` package.

::

    RingError                      base of everything ring raises on purpose
    ├── DecodeError                bytes from the network are not a message we accept
    ├── EncodeError                we tried to send something the codec cannot carry (our bug)
    └── EmptyRingError             an owner was asked of a ring with no members

``DecodeError`` is the remote's fault (h11's ``RemoteProtocolError``): the
receiver drops and counts the message. ``EncodeError`` is ours
(``LocalProtocolError``) and should never happen in a correct peer.
"""

from __future__ import annotations

__all__ = ["RingError", "DecodeError", "EncodeError", "EmptyRingError"]


class RingError(Exception):
    """Base class of every error the ring package raises on purpose."""


class DecodeError(RingError, ValueError):
    """Bytes that are not a valid message of this wire version.

    ``kind`` names the fault for the receiver's drop counters (shown by
    ``python -m ring status``): ``oversized``, ``not_msgpack`` (garbage or a
    truncated frame), ``version``, ``unknown_type`` or ``malformed``.
    """

    def __init__(self, message: str, kind: str = "malformed") -> None:
        super().__init__(message)
        self.kind = kind


class EncodeError(RingError, ValueError):
    """A message that cannot be encoded (a value the codec does not carry)."""


class EmptyRingError(RingError, LookupError):
    """An owner was asked of a ring with no members."""
