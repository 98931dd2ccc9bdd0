"""Bounded gzip/deflate decoding of a response body: at most ``max_out`` bytes a call.

httpx inflates without an output limit (a 1 MB gzip bomb reached 2 GB
through ``.read()``). The fetcher sends its own ``Accept-Encoding: gzip,
deflate``, reads the raw stream and feeds it here, where
``zlib.decompressobj().decompress(data, max_length)`` bounds the output, so
at most ``max_body + 1`` decoded bytes exist at any time (the fetcher's
module docstring, "Bounded decompression"). Pure: bytes in, bytes out.
"""

from __future__ import annotations

import zlib

from peer.core.head import CODINGS
from peer.errors import ErrorKind, FetchError

__all__ = ["Inflater", "decoder"]


class Inflater:
    """gzip/deflate decoding with a bounded output per call."""

    __slots__ = ("_z", "_raw_fallback", "_head")

    def __init__(self, coding: str) -> None:
        # wbits 47 = 32 + 15: zlib detects a gzip or zlib header itself.
        self._z = zlib.decompressobj(47)
        # RFC 9110 §8.4.1.2: "deflate" is zlib-wrapped, but some servers send
        # raw deflate; browsers accept both, so retry raw on a header error.
        self._raw_fallback = coding == "deflate"
        self._head = b""

    def feed(self, data: bytes, max_out: int) -> bytes:
        z = self._z
        if z.eof:
            return b""  # trailing bytes after the stream end are ignored, like browsers do
        try:
            out = z.decompress(data, max_out)
        except zlib.error:
            if not self._raw_fallback:
                raise
            self._raw_fallback = False
            self._z = z = zlib.decompressobj(-15)
            out = z.decompress(self._head + data, max_out)
        if self._raw_fallback:
            if out or len(self._head) > 64:
                self._raw_fallback = False  # the header was fine
                self._head = b""
            else:
                self._head += data
        return out


def decoder(codings: tuple[str, ...]) -> Inflater | None:
    """None for identity; FetchError("decode") for a coding we did not ask for."""
    if not codings:
        return None
    if len(codings) == 1 and codings[0] in CODINGS:
        return Inflater(codings[0])
    # A 100 KiB header need not be in the message (nobody reads it whole).
    shown = ", ".join(codings)
    raise FetchError(ErrorKind.DECODE, f"unsupported Content-Encoding {shown[:200]!r}")
