"""Durable file writes: the one atomic replace and the directory fsync.

A crash (power loss, ``kill -9``) must leave either the old file or the new
one, never half of one, and the rename itself must survive. POSIX gives that
only in this order (``fsync(2)``: fsync of a file "does not necessarily
ensure that the entry in the directory containing the file has also reached
disk. For that an explicit fsync() on a file descriptor for the directory is
also needed"):

1. write the bytes to a temporary file in the same directory (same file
   system, so the rename is atomic, ``rename(2)``);
2. ``fsync`` the temporary file: its data is on disk before its name is;
3. ``os.replace`` it over the target;
4. ``fsync`` the directory: the new name is on disk.

Errors are left as ``OSError``: each caller turns them into its own
package error naming the file and what it held (``StateError`` for the
Bloom filter and the state snapshot).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing_extensions import Buffer  # collections.abc.Buffer from Python 3.12

__all__ = ["write_atomic", "fsync_dir"]


def write_atomic(path: str | os.PathLike[str], parts: Iterable[Buffer]) -> None:
    """Replace ``path`` with the concatenation of ``parts``, crash-safely (module docstring).

    ``parts`` (bytes, bytearray, memoryview, bitarray: any buffer) is written
    piece by piece, so a big buffer (a Bloom filter's bits) is never copied. The temporary file is removed if anything fails;
    the old ``path`` is then untouched.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            for part in parts:
                f.write(part)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(directory)


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """Make renames, creations and deletions in ``directory`` durable (POSIX; a no-op elsewhere).

    Best effort: a directory that cannot be opened or fsynced (Windows, some
    network file systems) is skipped, since the data itself was fsynced.
    """
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
