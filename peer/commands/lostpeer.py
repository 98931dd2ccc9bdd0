"""What a lost peer left behind, read without changing it: the input of an adoption.

:func:`load_lost` reads a data_dir (blocking file I/O) into a :class:`LostPeer`:
the URLs it had queued or forwarded unacked (``DATA_DIR/state``,
:mod:`peer.state.journal`, recovered from a copy so that DATA_DIR stays as it
was, also for ``--dry-run``), the URLs it fetched (its ``pages.duckdb`` rows, its write-ahead log's
included, and the rows only its journal held: exactly the rows
``ringcrawl-merge`` reads from the same data_dir) and those journal-only rows, which
:func:`restore_rows` writes back into its pages.duckdb as the peer itself would
on a restart. Its hosts' state goes too (``revisits``, ``cookies``: peer/core/handoff/state.py):
each URL's last visit in its ``fetches`` table, the cookies of its jar's file,
and the records other peers had handed it that only its journal held, in the
form ``ring.messages.HostState`` carries them. What happens to them is
:mod:`peer.commands.adopt`'s.

Rules: nothing under DATA_DIR is written except by :func:`restore_rows`; a file
held by a live process, a corrupt state or a directory that is no peer's data
raise ``StateError``/``ConfigError`` (the user's mistakes, exit 2).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from peer.core.config.cluster import ClusterConfig
from peer.core.run.layout import RESULTS_NAME, STATE_NAME, StateFile
from peer.errors import ConfigError, StateError, first_line
from peer.results.fetches import LAST_VISITS_SQL
from peer.results.schema import PAGE_COLUMNS
from peer.results.store import PageRow, ResultStore
from peer.state.cookiefile import read_cookies
from peer.state.journal import Recovered
from peer.state.readcopy import recover_copy
from peer.state.snapshot import read_snapshot

__all__ = ["LostPeer", "load_lost", "lost_peer_id", "restore_rows"]

RESULTS_FILE = RESULTS_NAME
STATE_DIR = STATE_NAME


@dataclass(frozen=True, slots=True)
class LostPeer:
    """What a lost peer left: URLs to adopt, URLs it fetched, journal-only rows."""

    peer_id: str
    data_dir: Path
    urls: dict[str, int] = field(repr=False)    # url -> depth: queued or forwarded, not fetched
    fetched: list[str] = field(repr=False)      # pages rows and journal rows: sent as seen
    rows_to_restore: list[list[Any]] = field(repr=False)  # journal rows missing from pages.duckdb
    already_fetched: int                        # queued URLs left out because they have a row
    has_state: bool
    generation: int | None = None
    torn_bytes: int = 0
    #: Its hosts' state, as ``HostState`` carries it: revisit records, newest per URL, and cookies.
    revisits: list[Any] = field(default_factory=list, repr=False)
    cookies: list[Any] = field(default_factory=list, repr=False)


def lost_peer_id(cfg: ClusterConfig, data_dir: Path, given: str | None) -> str:
    """``--id``, else the ``[[peer]]`` whose data_dir is ``data_dir``, else the peer its
    own crawl state names (a copy of the lost disk, anywhere); ConfigError otherwise."""
    target = data_dir.resolve()
    listed = next((p.id for p in cfg.peers if Path(p.data_dir).resolve() == target), None)
    if given:
        if listed is not None and listed != given:
            raise ConfigError(str(data_dir), "--id", f"this is the data_dir of {listed} in "
                                                     f"{cfg.path}, not of {given}")
        return given
    if listed is not None:
        return listed
    # A copy (rsync'd off the dead machine, a restored backup) is at another path:
    # its snapshot says whose it is, and in which ring.
    owner = _state_owner(data_dir / STATE_DIR)
    if owner is not None:
        peer_id, ring = owner
        if ring != cfg.ring.name:
            raise ConfigError(str(data_dir), "", f"holds the crawl state of peer {peer_id!r} of ring "
                                                 f"{ring!r}, not of ring {cfg.ring.name!r} ({cfg.path})")
        return peer_id
    raise ConfigError(str(data_dir), "", f"is not the data_dir of any [[peer]] in {cfg.path}, and "
                                         "holds no crawl state naming its peer; give the lost peer's id with --id")


def _state_owner(state_dir: Path) -> tuple[str, str] | None:
    """(peer id, ring name) of the newest readable snapshot in ``state_dir``, or None."""
    try:
        names = [(parsed[1], entry.name) for entry in state_dir.iterdir()
                 if (parsed := StateFile.parse(entry.name)) is not None and parsed[0] is StateFile.SNAPSHOT]
    except OSError:
        return None
    for gen, name in sorted(names, reverse=True):
        try:
            doc = read_snapshot(state_dir, name, gen, None, None)
        except StateError:
            continue  # a torn newest snapshot: an older one still names the peer
        peer_id, ring = doc.get("peer"), doc.get("ring")
        if isinstance(peer_id, str) and isinstance(ring, str):
            return peer_id, ring
    return None


def _recover(state_dir: Path, peer_id: str, ring_name: str) -> Recovered | None:
    """The lost peer's state, recovered from a copy (``peer.state.readcopy``): DATA_DIR is left as it was."""
    try:
        return recover_copy(state_dir, peer_id, ring_name)
    except StateError as exc:
        raise StateError(f"{exc}; this peer's queued URLs cannot be adopted "
                         "(its pages.duckdb rows still merge)") from None


def _page_urls(path: Path, peer_id: str) -> list[str]:
    """URLs with a row in ``pages``; StateError if the file is held by a live process."""
    if not path.exists():
        return []
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        why = first_line(exc)
        if "lock" in why.lower():
            holder = m.group(0) if (m := re.search(r"PID \d+", why)) else "another process"
            raise StateError(f"{path}: is held open by a running process ({holder}): is {peer_id} "
                             "still running? adopt only a dead peer's data; stop it first") from None
        raise StateError(f"{path}: cannot be opened: {why}") from None
    try:
        return [u for (u,) in con.execute("SELECT DISTINCT url FROM pages WHERE url IS NOT NULL")
                .fetchall()]
    except duckdb.Error as exc:
        why = first_line(exc)
        raise StateError(f"{path}: cannot read its pages table: {why}") from None
    finally:
        con.close()


def load_lost(cfg: ClusterConfig, data_dir: Path, peer_id: str) -> LostPeer:
    """Read ``data_dir`` (blocking file I/O; nothing in it is changed)."""
    if not data_dir.is_dir():
        raise ConfigError(str(data_dir), "", "no such directory (expected the lost peer's data_dir)")
    rec = _recover(data_dir / STATE_DIR, peer_id, cfg.ring.name)
    pages = _page_urls(data_dir / RESULTS_FILE, peer_id)
    if rec is None and not pages and not (data_dir / RESULTS_FILE).exists():
        raise ConfigError(str(data_dir), "", f"holds neither {STATE_DIR}/ nor {RESULTS_FILE}: "
                                             "is it a peer's data_dir?")
    fetched = dict.fromkeys(pages)
    restore: list[list[Any]] = []
    urls: dict[str, int] = {}
    already: set[str] = set()
    unusable: dict[str, int] = {}
    if rec is not None:
        have = set(fetched)
        for row in rec.rows:
            # The engine journals a page row's columns in order (PageRow.values): the URL first.
            if not row or not isinstance(row[0], str) or row[0] in have:
                continue
            try:
                PageRow.from_values(row)
            except TypeError:
                # Neither restore_rows nor the merge can make a pages row of
                # it (another build's columns): a URL sent as seen without a
                # row would be a page nobody fetches again and nobody has.
                # Its next owner fetches it again instead.
                unusable[row[0]] = _depth(row)
                continue
            restore.append(row)
            fetched[row[0]] = None
        # Queue and unacked forwards together; a URL in both keeps its
        # smaller depth, the one a max_depth limit would let go further.
        for url, depth in [*rec.all_queued(), *rec.forwards, *unusable.items()]:
            if url in fetched:
                already.add(url)
            elif url not in urls or depth < urls[url]:
                urls[url] = depth
    return LostPeer(
        peer_id=peer_id, data_dir=data_dir, urls=urls, fetched=list(fetched),
        rows_to_restore=restore, already_fetched=len(already), has_state=rec is not None,
        generation=None if rec is None else rec.generation,
        torn_bytes=0 if rec is None else rec.torn_bytes,
        revisits=_revisits(data_dir / RESULTS_FILE, peer_id, rec),
        cookies=_cookies(data_dir / STATE_DIR, peer_id, rec),
    )


def _revisits(path: Path, peer_id: str, rec: Recovered | None) -> list[Any]:
    """Each URL's newest revisit record (``ring.messages.RevisitWire``): its last ``fetches``
    row (the query ``ResultStore.last_visits`` makes), or one handed to it that only its journal held."""
    newest: dict[str, Any] = {}
    for r in (rec.handed_state[0] if rec is not None else []):
        if isinstance(r, (list, tuple)) and len(r) == 11 and isinstance(r[0], str):
            newest[r[0]] = tuple(r)
    if path.exists():
        try:
            con = duckdb.connect(str(path), read_only=True)
        except duckdb.Error as exc:
            raise StateError(f"{path}: cannot be opened: {first_line(exc)}") from None
        try:
            if con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'fetches'"
                           ).fetchone() != (0,):
                rows = con.execute(LAST_VISITS_SQL).fetchall()
            else:
                rows = []
        except duckdb.Error as exc:
            raise StateError(f"{path}: cannot read its fetches table: {first_line(exc)}") from None
        finally:
            con.close()
        for url, host, at, due, interval, digest, etag, lm, visits, changes in rows:
            held = newest.get(url)
            if held is None or held[4] < at:  # the newer last visit wins, as an import keeps it
                newest[url] = (url, host, float(due), float(interval), float(at), digest or "", etag or "",
                               lm or "", int(visits or 0), int(changes or 0), 0)
    return list(newest.values())


def _cookies(state_dir: Path, peer_id: str, rec: Recovered | None) -> list[Any]:
    """The jar's file's cookies and those handed to it that only its journal held (``CookieWire``)."""
    records, _ = read_cookies(state_dir, peer_id)  # a damaged jar is worth less than the adoption
    out: dict[tuple[str, str, str], Any] = {}
    for r in (rec.handed_state[1] if rec is not None else []):
        if isinstance(r, (list, tuple)) and len(r) == 6:
            out[(r[0], r[1], r[3])] = tuple(r)
    for r in records:
        if isinstance(r, (list, tuple)) and len(r) == 7:
            host, name, value, path, secure, expires, _seq = r
            out[(host, name, path)] = (host, name, value, path, secure, float(expires or 0.0))
    return list(out.values())


def _depth(row: list[Any]) -> int:
    """A journaled row's depth column, 0 if it has none that is a number."""
    i = PAGE_COLUMNS.index("depth")
    d = row[i] if len(row) > i else None
    return d if isinstance(d, int) and d >= 0 else 0


async def restore_rows(lost: LostPeer) -> tuple[int, int]:
    """Write the journal-only rows into the lost peer's pages.duckdb: (written, unusable)."""
    rows: list[PageRow] = []
    bad = 0
    for row in lost.rows_to_restore:
        try:
            rows.append(PageRow.from_values(row))
        except TypeError:  # a row of another build's columns
            bad += 1
    if rows:
        store = ResultStore(lost.data_dir / RESULTS_FILE, lost.peer_id,
                            store_links=False, store_body=False)
        async with store:
            for r in rows:
                store.add_page(r)
    return len(rows), bad
