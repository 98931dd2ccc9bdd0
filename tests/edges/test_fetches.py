"""peer.results.fetches: the fetches table of a continuous crawl, created in DuckDB as documented."""

from __future__ import annotations

import pytest

from peer.core.revisit.policy import Change
from peer.results.fetches import FETCHES, FETCHES_DDL, FETCHES_INDEX_DDL


def test_fetches_ddl_creates_the_documented_columns() -> None:
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.execute(FETCHES_DDL)
    con.execute(FETCHES_INDEX_DDL)
    cols = con.execute("SELECT column_name, data_type FROM information_schema.columns "
                       "WHERE table_name = 'fetches' ORDER BY ordinal_position").fetchall()
    assert cols == [(name, kind) for name, kind, _ in FETCHES]
    assert all(doc for _, _, doc in FETCHES)
    values = {c.value for c in Change}
    assert values <= set(FETCHES[[n for n, _, _ in FETCHES].index("change")][2].replace(",", "").split())
