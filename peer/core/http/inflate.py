"""Bounded decoding of a response body (gzip, deflate, br, zstd): at most ``max_out`` bytes a call.

httpx inflates without an output limit (a 1 MB gzip bomb reached 2 GB
through ``.read()``). The fetcher sends its own ``Accept-Encoding``, reads
the raw stream and feeds it here, so at most ``max_body + 1`` decoded bytes
exist at any time (the fetcher's module docstring, "Bounded
decompression"). Pure: bytes in, bytes out. The rules:

1. Every decoder is asked for at most ``max_out`` bytes and returns at most
   that; input it could not decode yet stays inside it, never decoded ahead.
   gzip/deflate: ``zlib.decompressobj().decompress(data, max_length)``.
   zstd: ``ZstdDecompressor.decompress(data, max_length)`` of
   ``compression.zstd`` (Python 3.14; ``backports.zstd`` before).
   br: the brotli binding's ``process(data, output_buffer_limit=n)`` stops
   only at the end of an output block (asked for 1001 bytes of a bomb it
   returned 32,752; for 100,000 it returned 229,328), so it is asked for at
   most :data:`_BR_STEP` bytes (one block) a call and what it gives beyond
   ``max_out`` is kept for the next call: at most ``max_out + 32 KiB`` exist.
2. A zstd frame whose window is over ``max_window`` (RFC 9659 §3: an HTTP
   client need only support 8 MiB) is refused before it is decoded: the
   window is what the decoder allocates. brotli's window is at most 16 MiB
   (RFC 7932 §9.1; the large-window extension is off in its decoder).
3. Stacked codings (``Content-Encoding: br, gzip``: br applied first) are
   decoded in reverse order, each pulling at most :data:`_STEP` bytes from the
   one before, so no stage decodes ahead of what the next consumes. An inner
   stream is counted like a body: over ``max_stream`` bytes it is
   ``too_large`` (a gzip of endless empty deflate blocks decodes to nothing,
   and would cost CPU unbounded by the output). At most
   :data:`MAX_CODINGS` codings.
4. A corrupt stream, a refused window, or a coding we cannot decode is
   ``FetchError("decode")``, never a library's exception. Bytes after a
   gzip or deflate stream's end are ignored, as browsers do; the brotli
   binding refuses bytes after a br stream (an error, so ``decode``), and
   after a zstd frame they must be another frame (RFC 8878 §3: zstd data is
   one or more frames).
5. A library missing at run time leaves its coding out of
   :data:`AVAILABLE`, hence out of ``Accept-Encoding``
   (:func:`accept_encoding`), instead of failing.
"""

from __future__ import annotations

import importlib
import zlib
from typing import Any, Protocol

from peer.errors import ErrorKind, FetchError


def _library(*names: str) -> Any:
    """The first of ``names`` that imports, else None (rule 5)."""
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


brotli = _library("brotli")
# Python 3.14's compression.zstd, else its backport (the same API).
zstd = _library("compression.zstd", "backports.zstd")

__all__ = ["AVAILABLE", "CODINGS", "MAX_CODINGS", "MAX_WINDOW", "Inflater", "accept_encoding",
           "check_codings", "check_window", "decoder"]

#: Every coding this module knows, in the order Accept-Encoding lists them.
CODINGS = ("gzip", "deflate", "br", "zstd")
#: The codings whose library is installed (rule 5).
AVAILABLE = tuple(c for c in CODINGS
                  if (c != "br" or brotli is not None) and (c != "zstd" or zstd is not None))
#: Codings one response may stack (rule 3); RFC 9110 sets no limit, servers send one.
MAX_CODINGS = 3
#: The largest zstd window decoded (rule 2), RFC 9659's 8 MiB.
MAX_WINDOW = 8 * 1024 * 1024
# What a stage pulls from the stage before it at a time (rule 3).
_STEP = 64 * 1024
# brotli's first output block is 32,752 bytes: a limit over it adds a 64 KiB
# block (asked for 32,768 it returned 98,272), one at most that does not (rule 1).
_BR_STEP = 32_752
_ALIASES = {"x-gzip": "gzip"}

_ERRORS: tuple[type[BaseException], ...] = (zlib.error, EOFError)
if brotli is not None:
    _ERRORS += (brotli.error,)
if zstd is not None:
    _ERRORS += (zstd.ZstdError,)


def accept_encoding(codings: tuple[str, ...] = CODINGS) -> str:
    """The Accept-Encoding value for ``codings``: those we can decode, in our order.

    None of them is ``identity``: RFC 9110 §12.5.3 reads a request without
    Accept-Encoding as "any coding is acceptable".
    """
    wanted = {_ALIASES.get(c, c) for c in codings}
    return ", ".join(c for c in AVAILABLE if c in wanted) or "identity"


def check_codings(value: tuple[str, ...]) -> str | None:
    """``crawl.accept_encodings``' check: None, or what was expected."""
    if all(c in CODINGS for c in value) and len(set(value)) == len(value):
        return None
    return "a list of distinct codings among " + ", ".join(CODINGS)


def check_window(value: int) -> str | None:
    """``crawl.zstd_max_window``'s check: zstd's windows run from 1 KiB to 2 GiB (RFC 8878 §3.1.1.1.2)."""
    return None if 1024 <= value <= 1 << 31 else "bytes from 1024 to 2147483648"


class _Stage(Protocol):
    @property
    def eof(self) -> bool: ...

    def feed(self, data: bytes, max_out: int) -> bytes: ...


class _Zlib:
    """gzip or deflate: zlib with ``max_length``; the undecoded input is kept."""

    __slots__ = ("_z", "_raw_fallback", "_head")

    def __init__(self, coding: str) -> None:
        # wbits 47 = 32 + 15: zlib detects a gzip or zlib header itself.
        self._z = zlib.decompressobj(47)
        # RFC 9110 §8.4.1.2: "deflate" is zlib-wrapped, but some servers send
        # raw deflate; browsers accept both, so retry raw on a header error.
        self._raw_fallback = coding == "deflate"
        self._head = b""

    @property
    def eof(self) -> bool:
        return self._z.eof

    def feed(self, data: bytes, max_out: int) -> bytes:
        z = self._z
        if z.eof:
            return b""  # rule 4: trailing bytes are ignored
        if z.unconsumed_tail:
            data = z.unconsumed_tail + data
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


class _Brotli:
    """br: at most ``_BR_STEP`` asked of the binding a call, its excess kept (rule 1)."""

    __slots__ = ("_d", "_input", "_carry")

    def __init__(self) -> None:
        self._d = brotli.Decompressor()
        self._input = b""   # bytes the binding cannot take yet (it holds unread input)
        self._carry = b""   # output beyond an earlier call's max_out

    @property
    def eof(self) -> bool:
        return not self._carry and bool(self._d.is_finished())

    def feed(self, data: bytes, max_out: int) -> bytes:
        d = self._d
        parts = [self._carry] if self._carry else []
        have = len(self._carry)
        pending = self._input + data if self._input else data
        while have < max_out and not d.is_finished():
            # can_accept_more_data() is True with output still inside, so
            # "no output for no input" is what says the binding is empty.
            if pending and d.can_accept_more_data():
                chunk, pending = pending, b""
            else:
                chunk = b""
            out = d.process(chunk, output_buffer_limit=min(max_out - have, _BR_STEP))
            if out:
                parts.append(out)
                have += len(out)
            elif not chunk:
                break
        self._input = pending
        out = parts[0] if len(parts) == 1 else b"".join(parts)
        self._carry = out[max_out:]
        return out[:max_out] if self._carry else out


class _Zstd:
    """zstd: ``decompress(data, max_length)``, frame after frame, each window capped (rule 2)."""

    __slots__ = ("_d", "_log", "_window")

    # RFC 8878 §3: zstd data is one or more frames (a server that flushes may
    # send several), so a frame's end is not the body's: never at eof.
    eof = False

    def __init__(self, max_window: int) -> None:
        self._log = max(10, (max_window - 1).bit_length())  # zstd's smallest window is 1 KiB
        self._window = max_window
        self._d = self._new()

    def _new(self) -> Any:
        return zstd.ZstdDecompressor(options={zstd.DecompressionParameter.window_log_max: self._log})

    def feed(self, data: bytes, max_out: int) -> bytes:
        parts: list[bytes] = []
        have = 0
        while have < max_out:
            d = self._d
            if d.eof:
                data = d.unused_data + data
                if not data:
                    break
                d = self._d = self._new()
            elif not data and d.needs_input:
                break
            try:
                out = d.decompress(data, max_out - have)
            except zstd.ZstdError as exc:
                if "too much memory" not in str(exc):
                    raise
                raise FetchError(ErrorKind.DECODE, f"a zstd frame's window is over {self._window:,} "
                                 "bytes (crawl.zstd_max_window)") from None
            data = b""
            if out:
                parts.append(out)
                have += len(out)
            if not d.eof:
                break
        return parts[0] if len(parts) == 1 else b"".join(parts)


def _stage(coding: str, max_window: int) -> _Stage:
    if coding in ("gzip", "deflate"):
        return _Zlib(coding)
    if coding == "br":
        return _Brotli()
    return _Zstd(max_window)


class Inflater:
    """Decoding of one body's content codings with a bounded output per call.

    ``feed(data, max_out)`` takes the next raw bytes and returns at most
    ``max_out`` decoded bytes; raises :class:`FetchError` (``decode``, or
    ``too_large`` for an inner stream over ``max_stream``: rule 3).
    """

    __slots__ = ("_stages", "_one", "_coding", "_raw", "_inner", "_max_stream")

    def __init__(self, codings: tuple[str, ...], *, max_window: int = MAX_WINDOW,
                 max_stream: int = 1 << 62) -> None:
        # RFC 9110 §8.4: codings are listed in the order applied; decode the
        # last first.
        self._stages = [_stage(c, max_window) for c in reversed(codings)]
        self._one: _Stage | None = self._stages[0] if len(codings) == 1 else None
        self._coding = ", ".join(codings)
        self._raw = b""
        self._inner = 0
        self._max_stream = max_stream

    def feed(self, data: bytes, max_out: int) -> bytes:
        try:
            if self._one is not None:
                return self._one.feed(data, max_out)
            self._raw += data
            parts: list[bytes] = []
            have = 0
            while have < max_out:
                out = self._pull(len(self._stages) - 1, max_out - have)
                if not out:
                    break
                parts.append(out)
                have += len(out)
            return b"".join(parts)
        except _ERRORS as exc:
            detail = str(exc) or type(exc).__name__
            raise FetchError(ErrorKind.DECODE,
                             f"corrupt {self._coding} body: {detail[:200]}") from None

    def _pull(self, i: int, max_out: int) -> bytes:
        """Up to ``max_out`` bytes out of stage ``i``, pulling input from stage ``i - 1``."""
        stage = self._stages[i]
        if i == 0:
            data, self._raw = self._raw, b""
            return stage.feed(data, max_out)
        out = stage.feed(b"", max_out)
        while not out and not stage.eof:
            mid = self._pull(i - 1, _STEP)
            if not mid:
                break
            self._inner += len(mid)
            if self._inner > self._max_stream:
                raise FetchError(ErrorKind.TOO_LARGE,
                                 f"an inner stream of {self._coding} over {self._max_stream} bytes")
            out = stage.feed(mid, max_out)
        return out


def decoder(codings: tuple[str, ...], *, max_window: int = MAX_WINDOW,
            max_stream: int = 1 << 62) -> Inflater | None:
    """None for identity; FetchError("decode") for a coding we cannot decode.

    ``max_window`` caps a zstd frame's window (rule 2); ``max_stream`` an
    inner stream of stacked codings (rule 3): the fetcher passes ``max_body``.
    """
    if not codings:
        return None
    known = tuple(_ALIASES.get(c, c) for c in codings)
    if len(known) <= MAX_CODINGS and all(c in AVAILABLE for c in known):
        return Inflater(known, max_window=max_window, max_stream=max_stream)
    # A 100 KiB header need not be in the message (nobody reads it whole).
    shown = ", ".join(codings)
    raise FetchError(ErrorKind.DECODE, f"unsupported Content-Encoding {shown[:200]!r}")
