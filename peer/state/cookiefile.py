"""``cookies.msgpack``: the cookie jar of a peer's crawl, written atomically beside the snapshots.

Only a peer with some host's cookies on (``crawl.cookies``, a ``[[site]]``
block's) writes it: the engine rewrites it whole (``peer.state.fsio``:
tmp, fsync, rename, directory fsync) within ``COOKIE_SAVE_SECONDS`` of a
change to the jar, and at the end of a run; a resume reads it back.

Why a file of its own and not journal records: a jar is small (at most
``crawl.cookies_max_total`` cookies) and changes seldom (a session cookie
is set once), and it needs none of the journal's ordering with the queue:
a cookie is no URL that could be fetched twice or lost. What a ``kill -9``
can lose is the jar's changes of the last second; a site whose session
cookie was lost sets it again on the next response that asks for it, as it
did the first time. A file that cannot be read (damaged, another format)
is reported and the crawl resumes with an empty jar, for the same reason.

Layout: one msgpack map (``version``, ``peer``, ``written``, ``cookies``: the
records of ``peer.core.http.cookies.CookieJar.records``) + an 8-byte magic and
the crc32 of the map, little-endian.
"""

from __future__ import annotations

import os
import struct
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgpack

from peer.state.fsio import write_atomic

__all__ = ["COOKIE_FILE", "COOKIE_SAVE_SECONDS", "discard_cookies", "read_cookies", "write_cookies"]

#: The jar's name in the state directory (module docstring).
COOKIE_FILE = "cookies.msgpack"
#: The longest a changed jar waits before it is written: what a kill -9 can lose.
COOKIE_SAVE_SECONDS = 1.0

_MAGIC = b"RCCOOKIE"
_VERSION = 1
_TRAILER = struct.Struct("<8sI")  # magic, crc32 of the payload


def write_cookies(directory: Path, peer_id: str, records: Sequence[Any]) -> int:
    """Replace the jar's file with ``records``; returns its size in bytes."""
    payload = msgpack.packb({"version": _VERSION, "peer": peer_id, "written": time.time(),
                             "cookies": list(records)}, use_bin_type=True)
    Path(directory).mkdir(parents=True, exist_ok=True)
    write_atomic(Path(directory) / COOKIE_FILE, (payload, _TRAILER.pack(_MAGIC, zlib.crc32(payload))))
    return len(payload) + _TRAILER.size


def read_cookies(directory: Path, peer_id: str) -> tuple[list[Any], str | None]:
    """(records, problem): the jar's records, or ``[]`` and why the file could not be used.

    No file is no problem (a crawl that never kept a cookie). Never raises
    for what the file holds: the jar is worth less than the crawl.
    """
    path = Path(directory) / COOKIE_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return [], None
    except OSError as e:
        return [], f"{path}: cannot read the cookie jar ({e.strerror or e})"
    t = _TRAILER.size
    if len(data) < t:
        return [], f"{path}: not a complete cookie jar ({len(data)} bytes)"
    magic, crc = _TRAILER.unpack_from(data, len(data) - t)
    payload = data[: len(data) - t]
    if magic != _MAGIC or zlib.crc32(payload) != crc:
        return [], f"{path}: the cookie jar is damaged (bad trailer or checksum)"
    try:
        doc = msgpack.unpackb(payload, raw=False, strict_map_key=True)
    except Exception as e:  # checksummed bytes that do not decode: a bad writer
        return [], f"{path}: the cookie jar is malformed ({e})"
    if not isinstance(doc, dict) or doc.get("version") != _VERSION or not isinstance(doc.get("cookies"), list):
        return [], f"{path}: not a cookie jar this build reads"
    if doc.get("peer") != peer_id:
        return [], f"{path}: the cookie jar of peer {doc.get('peer')!r}, not {peer_id!r}"
    return doc["cookies"], None


def discard_cookies(directory: Path) -> None:
    """Delete the jar's file and any interrupted write of it (a new crawl, ``--fresh``)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if name == COOKIE_FILE or (name.startswith(COOKIE_FILE + ".") and name.endswith(".tmp")):
            try:
                os.unlink(Path(directory) / name)
            except OSError:
                pass
