"""A seeds file read as a stream of raw lines, from a byte offset (edge).

``crawl.seeds_file`` may hold millions of lines: it is never read whole.
:class:`SeedReader` gives batches of raw lines and the offset after the
last one; the judging, counting and position are
``peer.core.crawl.seedfeed``'s. A gzip file is told by its magic bytes
(RFC 1952 §2.3.1: ``1f 8b``), never by its name, and its offsets count
the decompressed stream: resuming one decompresses the part before the
offset again and throws it away (gzip has no random access; a 1 GB file's
prefix takes seconds, once a restart).

Plain synchronous I/O: the engine calls it in a worker thread
(``trio.to_thread``), one batch at a time, so the loop never waits on the disk.
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
from pathlib import Path
from typing import IO

from peer.core.crawl.seedfeed import HEAD_BYTES, FileMark

__all__ = ["GZIP_MAGIC", "SeedReader", "mark_of"]

GZIP_MAGIC = b"\x1f\x8b"
#: Bytes a skip (the part of a gzip stream before the offset) reads at a time.
_SKIP_CHUNK = 1 << 20
#: A line longer than this is no URL (browsers stop near 64 KiB too): read on to its end
#: without holding it, and handed on as one invalid line (a byte UTF-8 never has).
MAX_LINE = 64 << 10
_TOO_LONG = b"\xff"


def mark_of(path: str | Path) -> FileMark:
    """The file's size, mtime, head CRC-32 and kind (``peer.core.crawl.seedfeed`` rule 4)."""
    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
        st = os.fstat(f.fileno())
    return FileMark(st.st_size, st.st_mtime, zlib.crc32(head), head[:2] == GZIP_MAGIC)


class SeedReader:
    """Raw lines of a plain or gzip file from ``offset`` on (module docstring)."""

    def __init__(self, path: str | Path, offset: int = 0) -> None:
        raw = open(path, "rb")
        try:
            self.gzip = raw.read(2) == GZIP_MAGIC
            raw.seek(0)
            self._f: IO[bytes]
            if self.gzip:
                self._f = io.BufferedReader(gzip.GzipFile(fileobj=raw, mode="rb"), 1 << 16)
                left = offset
                while left > 0:
                    got = len(self._f.read(min(left, _SKIP_CHUNK)))
                    if not got:
                        break
                    left -= got
            else:
                self._f = raw
                raw.seek(offset)
        except BaseException:
            raw.close()
            raise
        self._raw = raw
        #: The offset (of the decompressed stream) after the last line read.
        self.offset = offset

    def read(self, max_lines: int) -> tuple[list[bytes], int]:
        """Up to ``max_lines`` raw lines and the offset after them; ``[]`` at the end.

        A damaged gzip stream ends the file where it breaks (``EOFError``,
        ``gzip.BadGzipFile``, ``zlib.error`` are the library's words for it):
        what was read is kept, and the position says where it stopped.
        """
        lines: list[bytes] = []
        readline = self._f.readline
        try:
            for _ in range(max_lines):
                line = readline(MAX_LINE)
                if not line:
                    break
                self.offset += len(line)
                if len(line) == MAX_LINE and not line.endswith(b"\n"):
                    while line and not line.endswith(b"\n"):
                        line = readline(MAX_LINE)
                        self.offset += len(line)
                    line = _TOO_LONG
                lines.append(line)
        except (EOFError, gzip.BadGzipFile, zlib.error):
            pass
        return lines, self.offset

    def close(self) -> None:
        self._f.close()
        self._raw.close()

    def __enter__(self) -> SeedReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
