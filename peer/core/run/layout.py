"""The files of a peer's data_dir, named in one place.

::

    <data_dir>/
        pages.duckdb          the results (peer/results/store.py); DuckDB keeps its
        pages.duckdb.wal      write-ahead log beside it while the file is open
        state/                the crawl state (peer/state/journal.py), one generation g:
            snapshot-<g>.msgpack
            bloom-<g>.bin
            journal-<g>.log
            cookies.msgpack   the cookie jar, when some host's cookies are on
                              (peer/state/cookiefile.py names it)
        seen/                 the exact seen set's sorted runs of URL hashes
            run-<n>.u64       and adds.log (peer/state/sievefile.py)
        status-address.json   while a solo peer without an address runs: where it
                              answers ring status (peer/state/statusaddress.py)
        voters.json           the ring's voter record as this peer last held it, once
                              an operator changed it (peer/state/voterfile.py)
        settings.json         the ring's live settings (config epoch) as this peer last
                              ran them, once an operator changed them (peer/state/settingsfile.py)

Every reader and writer of these files (the peer, ``--fresh``, adopt, merge,
report, the benchmarks) takes the names from here, so they cannot drift
apart. Pure: paths are computed, never touched.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

__all__ = ["DataDir", "StateFile", "RESULTS_NAME", "SEEN_NAME", "STATE_NAME", "STATUS_ADDRESS_NAME",
           "SETTINGS_NAME", "VOTERS_NAME"]

#: The results file's name in a data_dir (the user-visible name the docs use).
RESULTS_NAME = "pages.duckdb"
#: The crawl state's directory in a data_dir.
STATE_NAME = "state"
#: The exact seen set's directory in a data_dir (peer/state/sievefile.py).
SEEN_NAME = "seen"
#: A running solo peer's status address in a data_dir (peer/state/statusaddress.py).
STATUS_ADDRESS_NAME = "status-address.json"
#: The ring's voter record as this peer holds it (peer/state/voterfile.py, ring.membership.voters).
VOTERS_NAME = "voters.json"
#: The ring's live settings as this peer last ran them (peer/state/settingsfile.py, ring.membership.epochs).
SETTINGS_NAME = "settings.json"


class StateFile(StrEnum):
    """The three kinds of file of a state directory; the value is the name's stem."""

    SNAPSHOT = "snapshot"
    BLOOM = "bloom"
    JOURNAL = "journal"

    @property
    def suffix(self) -> str:
        return _SUFFIX[self]

    def file_name(self, generation: int) -> str:
        """``<kind>-<generation>.<suffix>``, e.g. ``journal-3.log``."""
        return f"{self.value}-{generation}.{self.suffix}"

    @classmethod
    def parse(cls, name: str) -> tuple[StateFile, int] | None:
        """The kind and generation of a state file's name, or None if it is not one."""
        m = _STATE_FILE.match(name)
        if m is None:
            return None
        kind = cls(m[1])
        return (kind, int(m[2])) if kind.suffix == m[3] else None

    @staticmethod
    def is_temporary(name: str) -> bool:
        """A leftover of ``peer.state.fsio.write_atomic`` interrupted by a crash (``<name>.<random>.tmp``)."""
        return _STATE_TMP.match(name) is not None


_SUFFIX = {StateFile.SNAPSHOT: "msgpack", StateFile.BLOOM: "bin", StateFile.JOURNAL: "log"}
_KINDS = "|".join(k.value for k in StateFile)
_SUFFIXES = "|".join(_SUFFIX.values())
_STATE_FILE = re.compile(rf"^({_KINDS})-(\d+)\.({_SUFFIXES})$")
_STATE_TMP = re.compile(rf"^({_KINDS})-\d+\.({_SUFFIXES})\..+\.tmp$")


@dataclass(frozen=True, slots=True, init=False)
class DataDir:
    """One peer's data_dir, ``root``; its properties are the paths of its files."""

    root: Path

    def __init__(self, root: str | os.PathLike[str]) -> None:
        object.__setattr__(self, "root", Path(root))  # a str from cluster.toml too

    @property
    def results(self) -> Path:
        """The results file (``pages.duckdb``)."""
        return self.root / RESULTS_NAME

    @property
    def results_wal(self) -> Path:
        """DuckDB's write-ahead log of the results file, present while a writer has it open."""
        return self.root / f"{RESULTS_NAME}.wal"

    @property
    def state(self) -> Path:
        """The crawl state's directory (``state/``), given to ``peer.state.journal.PeerState``."""
        return self.root / STATE_NAME

    @property
    def seen(self) -> Path:
        """The exact seen set's hash runs (``seen/``), given to ``peer.state.sievefile.SieveFiles``."""
        return self.root / SEEN_NAME

    @property
    def status_address(self) -> Path:
        """Where a running solo peer without an address records its status address."""
        return self.root / STATUS_ADDRESS_NAME

    @property
    def voters(self) -> Path:
        """The ring's voter record as this peer last held it (``peer.state.voterfile``)."""
        return self.root / VOTERS_NAME

    @property
    def settings(self) -> Path:
        """The ring's live settings as this peer last ran them (``peer.state.settingsfile``)."""
        return self.root / SETTINGS_NAME
