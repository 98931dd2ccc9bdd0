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

__all__ = ["FETCHES", "FETCHES_DDL", "FETCHES_INDEX_DDL"]

#: (column, DuckDB type, what it holds), in order.
FETCHES: tuple[tuple[str, str, str], ...] = (
    ("url", "VARCHAR", "the URL fetched; pages.url of its latest row"),
    ("host", "VARCHAR", "host[:port], the politeness and the ring's key"),
    ("fetched_at", "TIMESTAMP", "UTC, when the answer (or the failure) came"),
    ("kind", "VARCHAR", "'new' for a URL's first visit, 'revisit' after (peer.core.revisit.hostmix.Kind)"),
    ("status", "INTEGER", "the HTTP status, NULL when no answer came"),
    ("change", "VARCHAR", "what the visit found: first, changed, unchanged, not_modified, gone, failed"),
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
