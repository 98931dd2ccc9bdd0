"""``[warc]``: whether and how a peer keeps its fetches as WARC/1.1 files (docs/warc.md).

A section of cluster.toml in a module of its own, declared like the others
(``peer.core.config.keys``) and listed in ``peer.core.config.cluster.SECTIONS``. The
writer (``peer.results.warc``) takes it as it is; the two choices that are
enums in the code are strings in the file, read through
:attr:`WarcConfig.algorithm` and :attr:`WarcConfig.over_body`. A config
built in code is checked by the same checks as one read from a file
(``__post_init__`` runs them), so a test's mistake is a ValueError.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from enum import Enum
from typing import Any

from peer.core.config.keys import at_least_one, key
from peer.core.warc.record import DigestAlgorithm

__all__ = ["OverMaxBody", "WarcConfig"]


class OverMaxBody(Enum):
    """What to archive of a body cut at ``max_body``."""

    TRUNCATE = "truncate"  # the response as far as read, with ``WARC-Truncated: length`` (Heritrix's way)
    SKIP = "skip"          # neither request nor response: the archive holds only whole bodies


def _one_of(enum: type[Enum]) -> Any:
    names = [m.value for m in enum]

    def check(v: Any) -> str | None:
        value = v.value if isinstance(v, Enum) else v
        return None if value in names else " or ".join(f'"{n}"' for n in names)
    return check


def _file_bytes(v: Any) -> str | None:
    return None if v >= 4096 else "an integer >= 4096"


def _level(v: Any) -> str | None:
    return None if 0 <= v <= 9 else "an integer from 0 to 9"


def _prefix(v: Any) -> str | None:
    return None if re.fullmatch(r"[A-Za-z0-9._]+", v) else "letters, digits, '.' or '_' (it is part of a file name)"


def _directory(v: Any) -> str | None:
    return None if v.strip() else "a directory (relative to the peer's data_dir, or absolute)"


@dataclass(frozen=True, slots=True)
class WarcConfig:
    """``[warc]``: WARC files of every fetch that got a response, written beside the results."""

    enabled: bool = key(bool, False, "write every response (and its request) to WARC/1.1 files with a CDXJ index; off by default: the archive costs disk as large as the bodies fetched")
    directory: str = key(str, "warc", "where the WARC files go, relative to the peer's data_dir (or absolute)", _directory)
    prefix: str = key(str, "ringcrawl", "the first part of each file's name (<prefix>-<peer>-<time>-<serial>.warc.gz)", _prefix)
    max_file_bytes: int = key(int, 1_000_000_000, "a file is closed for the next before it would pass this size (1 GB, as Heritrix and the IIPC advise)", _file_bytes)
    over_max_body: str = key(str, "truncate", 'a body cut at crawl.max_body: "truncate" writes it as far as read with WARC-Truncated: length, "skip" writes no record of it', _one_of(OverMaxBody))
    digest: str = key(str, "sha1", 'the record and payload digests: "sha1" (what CDX servers and other archives compare) or "sha256"', _one_of(DigestAlgorithm))
    gzip_level: int = key(int, 2, "compression level of each record's gzip member, 0-9: 1-3 by ISA-L (about 10x faster than zlib's 6, 6-10% larger), 4-9 by zlib, 0 stored (docs/warc.md)", _level)
    compress_threads: int = key(int, 2, "threads compressing records side by side (zlib and ISA-L run without the GIL); one more writes them to the file in order", at_least_one)
    queue_items: int = key(int, 256, "fetches queued for the writer thread; the crawl waits when the queue is full (a slow disk slows the crawl, not memory)", at_least_one)
    fsync_records: int = key(int, 256, "fetches between fsyncs of the open file: what a power loss may cost (a kill -9 costs nothing written)", at_least_one)
    # -- page requisites (docs/warc.md "Page requisites"): what an archived page needs to replay styled.
    requisites: bool = key(bool, False, "also fetch each captured page's requisites (stylesheets and what they import, images, scripts, fonts, icons, frames) under their hosts' politeness, past skip_extensions and outside max_pages, so the archive replays the page as it looked; needs enabled = true")
    requisites_per_page: int = key(int, 200, "requisites taken from one page or stylesheet; the rest are counted (requisites.max_per_page) and not fetched", at_least_one)
    requisites_depth: int = key(int, 3, "how deep requisites go: 1 takes what a page embeds, 2 also what its stylesheets and frames load, 3 what those import; deeper ones are counted (requisites.max_depth)", at_least_one)
    requisites_other_hosts: bool = key(bool, True, "fetch requisites on hosts outside the crawl's allow_hosts (a CDN's stylesheets and fonts), by their owners under their politeness; deny_hosts always holds")

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            check = f.metadata["check"]
            value = getattr(self, f.name)
            if check is not None and (expected := check(value)) is not None:
                raise ValueError(f"warc.{f.name} must be {expected}, not {value!r}")
        if self.requisites and not self.enabled:
            # Fetched only to be archived: without the archive they would cost requests for nothing.
            raise ValueError("warc.requisites = true needs warc.enabled = true (requisites are fetched for the archive)")
        # An enum given in code stands for its string (the file's form).
        for name in ("over_max_body", "digest"):
            value = getattr(self, name)
            if isinstance(value, Enum):
                object.__setattr__(self, name, value.value)

    @property
    def algorithm(self) -> DigestAlgorithm:
        """``digest`` as the record builder takes it."""
        return DigestAlgorithm(self.digest)

    @property
    def over_body(self) -> OverMaxBody:
        """``over_max_body`` as the writer takes it."""
        return OverMaxBody(self.over_max_body)

    def describe(self) -> str:
        """One line for ``--check``."""
        if not self.enabled:
            return "warc: off ([warc] enabled = true keeps every response in WARC files)"
        where = self.directory if self.directory.startswith("/") else f"<data_dir>/{self.directory}"
        line = (f"warc: on, into {where}/{self.prefix}-*.warc.gz with a .cdxj index each, files up to "
                f"{self.max_file_bytes:,} bytes, {self.digest} digests, gzip level {self.gzip_level} on {self.compress_threads} thread(s), "
                f"a body over max_body: {self.over_max_body}")
        if self.requisites:
            line += (f"; page requisites fetched (up to {self.requisites_per_page} a page, depth "
                     f"{self.requisites_depth}, {'any host' if self.requisites_other_hosts else 'hosts in scope'})")
        return line
