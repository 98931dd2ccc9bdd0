"""CDXJ indexes of WARC files: one written beside each file, rebuilt from a file, merged.

A line is ``<SURT urlkey> <14-digit timestamp> {json}`` with the JSON fields
``url, mime, status, digest, length, offset, filename`` (all strings), the
form and field order cdxj-indexer and pywb write, so pywb, OpenWayback's
CDX server and ``cdxj-indexer``'s readers take our files as they are. Lines
sort as byte strings (``LC_ALL=C sort``), which is the order a CDX server's
binary search assumes; Python's ``str`` order is UTF-8 byte order, so
``sorted`` gives it.

The urlkey is the SURT of the URL as the ``surt`` package computes it (the
Internet Archive's canonicaliser, which pywb and cdxj-indexer call): a key of
our own making would differ in the edge cases (``www`` prefixes, session ids,
query order) and a reader would not find the capture. A URL that ``surt``
refuses (hostile input) is indexed under itself, as cdxj-indexer does.

Only ``response`` and ``revisit`` records are indexed: the ones a replay looks
up (cdxj-indexer's default also takes ``resource`` and ``metadata``, which we
do not write).
"""

from __future__ import annotations

import heapq
import os
import re
from dataclasses import dataclass
from datetime import datetime
from collections.abc import Iterable, Iterator
from pathlib import Path

import surt as surtlib
from warcio.archiveiterator import ArchiveIterator

from peer.core.warc.record import CdxFacts, cdxj_line
from peer.state.fsio import write_atomic

__all__ = ["INDEXED", "MergedIndex", "index_file", "merge_cdxj", "merge_indexes", "read_cdxj", "urlkey",
           "write_cdxj"]

INDEXED = ("response", "revisit")
_MIME_END = re.compile(r"[;\s]")


def urlkey(url: str) -> str:
    """The SURT urlkey of ``url``; the URL itself if ``surt`` refuses it (module docstring)."""
    try:
        key = surtlib.surt(url)
    except Exception:  # noqa: BLE001 - a hostile URL is indexed, never raised
        return url
    return key if isinstance(key, str) else url


def write_cdxj(path: Path, lines: Iterable[str]) -> None:
    """Write ``lines`` sorted to ``path``, crash-safely (``peer.state.fsio.write_atomic``)."""
    write_atomic(path, [line.encode("utf-8") for line in sorted(lines)])
    os.chmod(path, 0o644)  # mkstemp's 0600 would hide it from a replay server run as another user


def _date(value: str) -> float:
    text = value.rstrip("Z")
    try:
        moment = datetime.fromisoformat(text + "+00:00")
    except ValueError:
        return 0.0
    return moment.timestamp()


def index_file(path: Path, filename: str | None = None) -> list[str]:
    """The CDXJ lines of one WARC file (unsorted), read with warcio; its name as ``filename``."""
    name = filename if filename is not None else path.name
    lines: list[str] = []
    with open(path, "rb") as f:
        records = ArchiveIterator(f)
        for record in records:
            if record.rec_type not in INDEXED:
                continue
            url = record.rec_headers.get_header("WARC-Target-URI") or ""
            http = record.http_headers
            mime: str | None
            if record.rec_type == "revisit":
                mime = "warc/revisit"
            else:
                content_type = http.get_header("Content-Type") if http else None
                mime = _MIME_END.split(content_type, 1)[0] if content_type else None
            facts = CdxFacts(
                url=url,
                date=_date(record.rec_headers.get_header("WARC-Date") or ""),
                mime=mime,
                status=http.get_statuscode() if http else None,
                digest=record.rec_headers.get_header("WARC-Payload-Digest"),
            )
            while record.raw_stream.read(1 << 16):  # to the record's end, so its length is known
                pass
            offset = records.get_record_offset()
            length = records.get_record_length()
            lines.append(cdxj_line(urlkey(url), facts, length, offset, name))
    return lines


def read_cdxj(path: Path) -> Iterator[str]:
    """The lines of a CDXJ file, meta lines (``!...``) left out."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("!"):
                yield line if line.endswith("\n") else line + "\n"


def merge_cdxj(inputs: Iterable[str | os.PathLike[str]], output: str | os.PathLike[str]) -> int:
    """Merge sorted CDXJ files (several peers', several files') into one sorted index; its line count.

    A k-way merge (``heapq.merge``), so the inputs are read once and never held
    whole; the output is written to a temporary file and renamed into place.
    Duplicate lines (the same file indexed twice) are kept once.
    """
    out = Path(output)
    tmp = out.with_name(out.name + ".tmp")
    count = 0
    previous = None
    with open(tmp, "w", encoding="utf-8") as f:
        for line in heapq.merge(*(read_cdxj(Path(p)) for p in inputs)):
            if line != previous:
                f.write(line)
                count += 1
                previous = line
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, out)
    return count


@dataclass(frozen=True, slots=True)
class MergedIndex:
    """One crawl's index made of its peers' (``merge_indexes``): where, from how many files, lines."""

    path: Path
    files: int
    lines: int


def merge_indexes(directories: Iterable[Path], output: Path) -> MergedIndex | None:
    """Merge every ``*.cdxj`` in ``directories`` (the peers' WARC folders) into ``output``.

    None when there is none (WARC was off). A line names its WARC file by
    name only, as cdxj-indexer writes it: the peers' names make the file
    names unique, and a replay (pywb's collection ``archive/``) looks the
    names up in one folder holding every peer's files. A ``.open`` file has
    no index yet: the peer's next start recovers it (``peer.results.warc``).
    """
    inputs = sorted({p for d in directories if d.is_dir() for p in d.glob("*.cdxj")})
    if not inputs:
        return None
    return MergedIndex(output, len(inputs), merge_cdxj(inputs, output))
