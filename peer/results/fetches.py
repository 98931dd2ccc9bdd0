"""The ``fetches`` table, proposed: one row per visit of a URL, beside ``pages``' latest row.

``pages`` keeps one row per URL (its key), which a continuous crawl
overwrites at each revisit with the latest answer; ``fetches`` keeps every
visit, so what changed when, how often a page changes and what the
conditional GETs saved can be read back, and the change-rate estimators the
schedule does not run (peer/core/revisit/policy.py: Cho & Garcia-Molina's) can be
fitted offline::

    fetches(url, host, fetched_at TIMESTAMP, kind, status, change, changed,
            digest, etag, last_modified, conditional, bytes, elapsed_ms,
            error, interval_before, interval_after, next_due TIMESTAMP, peer,
            warc_record_id, warc_date, warc_payload_digest)

Rules:

1. One row a visit that was started (a request reached the network or
   failed on it), written in the same batch as the visit's ``pages`` row,
   so ``pages`` never shows a visit ``fetches`` lacks.
2. ``change`` is :class:`peer.core.revisit.policy.Change`'s value; ``changed`` is
   ``change = 'changed'``, a column of its own so ``WHERE changed`` needs no
   string and ``avg(changed::INT)`` is a change rate.
3. Timestamps are UTC, naive ``TIMESTAMP``, as in ``pages``
   (:mod:`peer.results.schema`).

A proposal: declarations only, no DuckDB here, and not yet created by
``peer.results.store`` nor merged by ``peer.results.merge``. A merged file's
``fetches`` would be the union of the peers' (a host's visits are its
owners', in turn, so rows never collide).
"""

from __future__ import annotations

__all__ = ["FETCHES", "FETCHES_DDL", "FETCHES_INDEX_DDL", "LAST_VISITS_CAPTURE_SQL", "LAST_VISITS_SQL"]

#: (column, DuckDB type, what it holds), in order.
FETCHES: tuple[tuple[str, str, str], ...] = (
    ("url", "VARCHAR", "the URL fetched; pages.url of its latest row"),
    ("host", "VARCHAR", "host[:port], the politeness and the ring's key"),
    ("fetched_at", "TIMESTAMP", "UTC, when the answer (or the failure) came"),
    ("kind", "VARCHAR", "'new' for a URL's first visit, 'revisit' after (peer.core.revisit.hostmix.Kind)"),
    ("status", "INTEGER", "the HTTP status, NULL when no answer came"),
    ("change", "VARCHAR", "what the visit found: first, changed, unchanged, not_modified, gone, missing, failed"),
    ("changed", "BOOLEAN", "change = 'changed' (rule 2)"),
    ("digest", "VARCHAR", "the payload's digest (e.g. 'sha1:BASE32'), NULL for a 304 or no body"),
    ("etag", "VARCHAR", "the ETag the answer carried, if valid (RFC 9110 §8.8.3)"),
    ("last_modified", "VARCHAR", "the Last-Modified the answer carried, verbatim, if valid"),
    ("conditional", "BOOLEAN", "whether the request carried If-None-Match or If-Modified-Since"),
    ("bytes", "BIGINT", "body bytes received (0 for a 304)"),
    ("elapsed_ms", "DOUBLE", "the fetch's duration"),
    ("error", "VARCHAR", "the error kind (peer.errors.ErrorKind), NULL on an answer"),
    ("interval_before", "DOUBLE", "seconds: the revisit interval the visit was scheduled with"),
    ("interval_after", "DOUBLE", "seconds: the interval after it (peer.core.revisit.policy rule 3)"),
    ("next_due", "TIMESTAMP", "UTC, when the next visit is due (the interval with jitter)"),
    ("peer", "VARCHAR", "the peer that fetched it"),
    # The WARC response record holding the page as of this visit (peer.core.warc.record rule 6):
    # this visit's own response, or the one its revisit record refers to; NULL without [warc]
    # or with none to refer to. A restarted crawl's revisits refer to it
    # (peer/core/revisit/recrawl.py rule 7).
    ("warc_record_id", "VARCHAR", "that record's WARC-Record-ID"),
    ("warc_date", "VARCHAR", "that record's WARC-Date, exactly as written"),
    ("warc_payload_digest", "VARCHAR", "that record's WARC-Payload-Digest (e.g. 'sha1:BASE32')"),
)

#: The table, created when absent.
FETCHES_DDL = "CREATE TABLE IF NOT EXISTS fetches (\n" + ",\n".join(
    f"    {name} {kind}" for name, kind, _ in FETCHES) + "\n)"

#: Reading a URL's history is the common query; DuckDB's zone maps serve
#: ``fetched_at`` ranges without an index, but not a point lookup by URL.
FETCHES_INDEX_DDL = "CREATE INDEX IF NOT EXISTS fetches_url ON fetches (url)"


#: Each scheduled URL's latest row, as a restart or an adoption schedules it again
#: (peer/core/revisit/recrawl.py rule 7): (url, host, fetched_at, next_due (epoch s),
#: interval_after, digest, etag, last_modified, visits, changes). The digest is the one
#: the schedule compares the next answer with, as peer/core/revisit/policy.py keeps it:
#: the last body's (a 304 has none, and a failure's body is not the page's), '' after a
#: 404/410 (none: the caller reads it as None). The latest row's own digest would be
#: NULL after a 304, so the first answer after a restart was taken for a first visit.
LAST_VISITS_SQL = (
    "SELECT url, host, epoch(fetched_at), epoch(next_due), interval_after, "
    "last_value(CASE WHEN change IN ('first', 'changed', 'unchanged') THEN digest "
    "WHEN change IN ('gone', 'missing') THEN '' END IGNORE NULLS) OVER d, "
    "etag, last_modified, count(*) OVER w, sum(changed::INT) OVER w FROM fetches "
    "WHERE interval_after IS NOT NULL AND next_due IS NOT NULL "
    "WINDOW w AS (PARTITION BY url), d AS (PARTITION BY url ORDER BY fetched_at "
    "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) "
    "QUALIFY row_number() OVER (PARTITION BY url ORDER BY fetched_at DESC) = 1")

#: :data:`LAST_VISITS_SQL` and an 11th column: the WARC record the URL's next revisit refers
#: to, as of its latest row, packed as ``peer.core.warc.record.Refers.pack`` (NULL without
#: one). The store's own file always has the warc_* columns (it adds them when it opens an
#: older one); an adopted peer's file may not, so lostpeer reads the ten.
LAST_VISITS_CAPTURE_SQL = LAST_VISITS_SQL.replace(
    "sum(changed::INT) OVER w FROM fetches",
    "sum(changed::INT) OVER w, warc_record_id || ' ' || warc_date || ' ' || warc_payload_digest FROM fetches")
