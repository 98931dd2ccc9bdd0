"""A crawl's WARC files and merged index packaged as one WACZ file (Web Archive Collection Zipped 1.1.1).

WACZ (specs.webrecorder.net/wacz/1.1.1) is the package Browsertrix writes
and ReplayWeb.page and pywb read: a ZIP file holding

- ``archive/<name>.warc.gz``: the WARC files as the peers wrote them, each
  **stored** (ZIP method 0), never deflated again: a reader seeks into a
  record by its index offset plus the file's place in the ZIP, with HTTP
  range requests (spec, "Archive"), which only a stored entry allows;
- ``indexes/index.cdx``: the merged CDXJ index (``peer.results.cdxj``),
  whose ``filename`` fields name the WARC files under ``archive/`` as they
  are; an uncompressed CDXJ is one of the spec's index forms, and the
  crawl's merged index is already sorted;
- ``pages/pages.jsonl``: the pages of the crawl, a line each (``url``,
  ``ts``, ``title``, ``id``) after the ``json-pages-1.0`` header line: every
  HTML capture answered 200, so a reader lists what to open;
- ``datapackage.json``: the Frictionless Data package (``profile``
  ``data-package``) naming each file above with its ``bytes`` and
  ``sha256:`` hash, ``wacz_version`` ``1.1.1``, the software and the
  creation time;
- ``datapackage-digest.json``: the SHA-256 of ``datapackage.json``, so a
  reader can check the package before it trusts the hashes inside.

Written with the standard library's ``zipfile``: the format is a ZIP of
files we already have plus two small JSON documents, and py-wacz's own
writer (``wacz create``) indexes the WARC files again with its own indexer
rather than taking ours (docs/libraries.md). py-wacz is the judge instead:
``wacz validate`` in the tests. The output is written to a temporary file
and renamed into place, so a failed package leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from peer.results.cdxj import read_cdxj

__all__ = ["WACZ_VERSION", "WaczSummary", "pages_of", "warc_files", "write_wacz"]

#: The version of the spec written (py-wacz 0.6 validates exactly this one).
WACZ_VERSION = "1.1.1"
_PAGES_HEADER = {"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class WaczSummary:
    """What a WACZ file holds."""

    path: Path
    warcs: int
    captures: int
    pages: int
    bytes: int

    def line(self) -> str:
        return (f"wacz {self.path} ({self.warcs} WARC file(s), {self.captures:,} captures, "
                f"{self.pages:,} pages, {self.bytes / 1e6:,.1f} MB)")


def _iso(ts: str) -> str:
    """A CDXJ 14-digit timestamp as ISO 8601 UTC (pages.jsonl's ``ts``)."""
    try:
        moment = datetime.strptime(ts[:14], "%Y%m%d%H%M%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return ts
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def pages_of(index: Path, titles: Mapping[str, str | None]) -> list[dict[str, str]]:
    """pages.jsonl's entries: each HTML capture answered 200 in ``index``, with its title if known."""
    pages: list[dict[str, str]] = []
    for line in read_cdxj(index):
        _, ts, rest = line.split(" ", 2)
        try:
            fields = json.loads(rest)
        except ValueError:
            continue
        if fields.get("status") != "200" or fields.get("mime") not in ("text/html", "application/xhtml+xml"):
            continue
        url = fields.get("url", "")
        page = {"id": hashlib.sha1(f"{ts} {url}".encode()).hexdigest()[:24], "url": url, "ts": _iso(ts)}
        title = titles.get(url)
        if title:
            page["title"] = title
        pages.append(page)
    pages.sort(key=lambda p: (p["ts"], p["url"]))
    return pages


def _hash_file(path: Path) -> tuple[int, str]:
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
            size += len(chunk)
    return size, "sha256:" + h.hexdigest()


def _resource(path: str, size: int, digest: str) -> dict[str, object]:
    # Frictionless names are lower case letters, digits and -._/ (its data-resource profile).
    name = "".join(c if c.isalnum() or c in "-._" else "-" for c in os.path.basename(path).lower())
    return {"name": name, "path": path, "hash": digest, "bytes": size}


def write_wacz(output: Path, warcs: Sequence[Path], index: Path, *, titles: Mapping[str, str | None] = {},
               software: str = "ringcrawl", title: str = "") -> WaczSummary:
    """Package ``warcs`` and the merged CDXJ ``index`` as the WACZ file ``output`` (module docstring)."""
    output = Path(output)
    pages = pages_of(index, titles)
    captures = sum(1 for _ in read_cdxj(index))
    tmp = output.with_name(f".{output.name}.tmp")
    resources: list[dict[str, object]] = []
    try:
        with zipfile.ZipFile(tmp, "w", allowZip64=True) as z:
            for warc in sorted(warcs, key=lambda p: p.name):
                arc = f"archive/{warc.name}"
                z.write(warc, arc, compress_type=zipfile.ZIP_STORED)
                resources.append(_resource(arc, *_hash_file(warc)))
            index_bytes = b"".join(line.encode("utf-8") for line in read_cdxj(index))
            pages_bytes = b"".join(json.dumps(p, ensure_ascii=False).encode("utf-8") + b"\n"
                                   for p in [_PAGES_HEADER, *pages])
            for arc, data in (("indexes/index.cdx", index_bytes), ("pages/pages.jsonl", pages_bytes)):
                z.writestr(arc, data, compress_type=zipfile.ZIP_DEFLATED)
                resources.append(_resource(arc, len(data), "sha256:" + hashlib.sha256(data).hexdigest()))
            now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            package = {
                "profile": "data-package",
                "resources": resources,
                "wacz_version": WACZ_VERSION,
                "software": software,
                "created": now,
                "title": title or output.stem,
            }
            if pages:
                package["mainPageUrl"] = pages[0]["url"]
                package["mainPageDate"] = pages[0]["ts"]
            doc = json.dumps(package, indent=2).encode("utf-8")
            z.writestr("datapackage.json", doc, compress_type=zipfile.ZIP_DEFLATED)
            digest = {"path": "datapackage.json", "hash": "sha256:" + hashlib.sha256(doc).hexdigest()}
            z.writestr("datapackage-digest.json", json.dumps(digest, indent=2).encode("utf-8"),
                       compress_type=zipfile.ZIP_DEFLATED)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, output)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return WaczSummary(output, len(warcs), captures, len(pages), output.stat().st_size)


def warc_files(directories: Iterable[Path]) -> list[Path]:
    """The closed WARC files in the peers' folders (a ``.open`` one is recovered by its peer's next start)."""
    return sorted({p for d in directories if d.is_dir() for p in d.glob("*.warc.gz")}, key=lambda p: p.name)
