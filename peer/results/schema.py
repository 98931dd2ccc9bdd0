"""The results tables: their columns, what each holds, and the row of ``pages``.

Every peer's ``data_dir/pages.duckdb`` has these tables (``peer.results.store``
creates them when absent and refuses a file whose columns differ), and a
merged file has the same ones, so a query written for one works on the
other::

    pages(url, final_url, host, status, content_type, bytes, title, n_links,
          depth, fetched_at TIMESTAMP, elapsed_ms, error, peer,
          canonical, noindex BOOLEAN, nofollow BOOLEAN,
          sitemap_lastmod TIMESTAMP, sitemap_priority, sitemap_changefreq,
          payload_digest, simhash UBIGINT, duplicate_of, duplicate_kind)
    links(from_url, to_url)            only with store_links
    bodies(url, body BLOB)             only with store_body
    pid_trace(host, window_end TIMESTAMP, n, delay, setpoint, peer)
    fetches(url, host, fetched_at TIMESTAMP, kind, status, change, ...)
                                       only with [revisit] enabled: one row a visit
                                       (peer.results.fetches); pages keeps the latest
    items_<name>(url, fetched_at TIMESTAMP, peer, <fields>)
                                       one per extraction rule or user table

Items tables (:mod:`peer.core.page.items`) are made when their first row is written: a
rule's columns are declared in cluster.toml; a user function's table takes
the first row's keys, and a column a later row brings is added (``ALTER
TABLE``). Field columns are ``VARCHAR`` or ``VARCHAR[]``, quoted
(:func:`quote`), so a field may be called ``order``.

Timestamps are UTC, naive ``TIMESTAMP`` (DuckDB's ``TIMESTAMPTZ`` would be
shown in each reader's session time zone). ``links.from_url`` is the page's
``url`` (the key of ``pages``); a page's links are the ones it was parsed with.

Declarations only: no DuckDB here. docs/results.md says the same
for users (a test checks that they agree).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from peer.core.crawl.decisions import Row

from peer.results.fetches import FETCHES

__all__ = ["SCHEMA", "ITEM_COLUMNS", "PAGE_COLUMNS", "ROW_COLUMNS", "DRIVER_COLUMNS", "PageRow", "Value",
           "quote"]

#: Column names and types of every fixed table, in order.
SCHEMA: dict[str, tuple[tuple[str, str], ...]] = {
    "pages": (
        ("url", "VARCHAR"),            # the URL fetched: the table's key
        ("final_url", "VARCHAR"),      # the redirect target for a 3xx
        ("host", "VARCHAR"),           # host[:port], the politeness key
        ("status", "INTEGER"),         # NULL when no answer came
        ("content_type", "VARCHAR"),
        ("bytes", "BIGINT"),           # body bytes kept
        ("title", "VARCHAR"),
        ("n_links", "INTEGER"),        # links the page was parsed with
        ("depth", "INTEGER"),          # links from a seed
        ("fetched_at", "TIMESTAMP"),   # UTC, when the row was made, after the fetch
        ("elapsed_ms", "DOUBLE"),      # the fetch's duration (its start: fetched_at - elapsed_ms)
        ("error", "VARCHAR"),          # the error kind (peer.errors.ErrorKind), NULL on success
        ("peer", "VARCHAR"),           # the peer that fetched it
        # What the page says of itself (peer.core.page.directives). canonical: the
        # normalised rel=canonical URL, from the Link header or the HTML head,
        # stored whenever present, the page's own URL included (a self-
        # canonical is a fact worth querying too); noindex/nofollow: from
        # <meta name=robots|TOKEN> and X-Robots-Tag together, NULL when no
        # answer came. Two booleans, not a text list: the crawler acts on
        # exactly these two, and "WHERE noindex" needs no string matching.
        ("canonical", "VARCHAR"),
        ("noindex", "BOOLEAN"),        # no items rows were stored for it
        ("nofollow", "BOOLEAN"),       # its links were not followed
        # What a sitemap said of the URL (sitemaps.org), NULL when none listed it or said nothing:
        ("sitemap_lastmod", "TIMESTAMP"),   # UTC, <lastmod>
        ("sitemap_priority", "DOUBLE"),     # <priority>, 0.0-1.0
        ("sitemap_changefreq", "VARCHAR"),  # <changefreq>: always, hourly, daily ... never
        # Duplicate content (peer.core.dedupe.held), for 2xx HTML pages with [dedupe] on:
        ("payload_digest", "VARCHAR"),  # sha1:<base32> of the decoded body
        ("simhash", "UBIGINT"),         # SimHash of the visible text; NULL under min_words
        ("duplicate_of", "VARCHAR"),    # the page this is a copy of (corrected when a better copy came), else NULL
        ("duplicate_kind", "VARCHAR"),  # 'exact' (same digest) or 'near' (SimHash within k), else NULL
    ),
    "links": (("from_url", "VARCHAR"), ("to_url", "VARCHAR")),
    "bodies": (("url", "VARCHAR"), ("body", "BLOB")),
    "pid_trace": (
        ("host", "VARCHAR"),
        ("window_end", "TIMESTAMP"),   # UTC, the end of the controller's window
        ("n", "INTEGER"),              # pages in the window
        ("delay", "DOUBLE"),           # the PID's new delay, seconds
        ("setpoint", "DOUBLE"),
        ("peer", "VARCHAR"),
    ),
    # One row a visit of a continuous crawl (peer.results.fetches says what each holds).
    "fetches": tuple((name, kind) for name, kind, _ in FETCHES),
}

#: The columns every ``items_<name>`` table starts with, before its fields.
ITEM_COLUMNS: tuple[tuple[str, str], ...] = (
    ("url", "VARCHAR"), ("fetched_at", "TIMESTAMP"), ("peer", "VARCHAR"),
)


#: One column's value as a page row keeps it, in the journal and before the store converts times.
Value = str | int | float | bool | None

#: The columns of ``pages``, in order.
PAGE_COLUMNS: tuple[str, ...] = tuple(name for name, _ in SCHEMA["pages"])
#: The columns the driver adds to the core's ``Row``: when the row was made, and by which peer.
DRIVER_COLUMNS = ("fetched_at", "peer")
#: The columns the core's ``Row`` fills, by its fields of the same names.
ROW_COLUMNS: tuple[str, ...] = tuple(c for c in PAGE_COLUMNS if c not in DRIVER_COLUMNS)
_FROM_ROW = attrgetter(*ROW_COLUMNS)
_DRIVER_AT = tuple(sorted((PAGE_COLUMNS.index(c), c) for c in DRIVER_COLUMNS))


@dataclass(frozen=True, slots=True)
class PageRow:
    """One row of ``pages``: the crawl core's ``Row`` and what the driver adds.

    ``fetched_at`` in seconds since the epoch (``time.time()``); ``peer``
    "" is the store's peer_id. Its columns are ``SCHEMA["pages"]``: each is
    a field of ``Row`` of the same name or one of ``DRIVER_COLUMNS``, so a
    new column is a field of ``Row`` and a line above, nothing else
    (tests/edges/test_store.py checks that they agree).
    """

    row: Row
    fetched_at: float
    peer: str = ""

    @property
    def url(self) -> str:
        return self.row.url

    @property
    def host(self) -> str:
        return self.row.host

    def values(self) -> list[Value]:
        """The columns of ``pages`` in order, times in epoch seconds: what the journal keeps."""
        out: list[Value] = list(_FROM_ROW(self.row))
        for i, name in _DRIVER_AT:
            out.insert(i, self.fetched_at if name == "fetched_at" else self.peer)
        return out

    @classmethod
    def from_values(cls, values: Sequence[Value]) -> PageRow:
        """A row from its columns' values in order (a journal's row); TypeError if they are not.

        A row journaled by an older build is shorter: the columns added
        since take their defaults (``Row``'s later fields have them).
        """
        if len(values) > len(PAGE_COLUMNS):
            raise TypeError(f"a page row has {len(PAGE_COLUMNS)} columns, not {len(values)}")
        return cls.of(**dict(zip(PAGE_COLUMNS, values)))

    @classmethod
    def of(cls, *values: Value, **columns: Value) -> PageRow:
        """A row from its columns, in order then by name (``PageRow.of(url, final_url, ..., title=...)``)."""
        if len(values) > len(PAGE_COLUMNS):
            raise TypeError(f"a page row has {len(PAGE_COLUMNS)} columns, not {len(values)}")
        # Any: each column has its own type, which Row's constructor checks by name.
        named: dict[str, Any] = dict(zip(PAGE_COLUMNS, values))
        if named.keys() & columns.keys():
            raise TypeError(f"columns given twice: {sorted(named.keys() & columns.keys())}")
        named.update(columns)
        if "fetched_at" not in named:
            raise TypeError("a page row needs its fetched_at")
        fetched_at = named.pop("fetched_at")
        peer = named.pop("peer", "")
        return cls(Row(**named), fetched_at, peer or "")


def quote(name: str) -> str:
    """A quoted SQL identifier (field names may be keywords such as ``order``)."""
    return '"' + name.replace('"', '""') + '"'
