"""A corrected duplicate verdict (peer.core.dedupe.held rule 6) in the results file: the row keeps its place.

A better copy that comes after a page makes it a copy: the store updates
its ``duplicate_of`` and ``duplicate_kind`` in place, whether its row was
written in an earlier batch or waits in the same one, and leaves every
other column as it was.
"""

from __future__ import annotations

import duckdb

from tests.edges.test_store import row, store


async def test_a_corrected_verdict_updates_the_row_in_place(tmp_path):
    path = tmp_path / "pages.duckdb"
    view, page = "http://s001.web.test/p1.html?sid=1", "http://s001.web.test/p1.html"
    other = "http://s001.web.test/p2.html?sid=1"
    async with store(path) as st:
        st.add_page(row(1, url=view, final_url=view))
        await st.flush()
        st.add_page(row(2, url=other, final_url=other))
        # One row written in an earlier batch, one waiting in this one: both corrected.
        st.reverdict(view, page, "near")
        st.reverdict(other, "http://s001.web.test/p2.html", "exact")
        st.reverdict("http://s001.web.test/never-fetched", page, "near")  # no row: nothing
    con = duckdb.connect(str(path), read_only=True)
    try:
        got = con.execute("SELECT url, title, duplicate_of, duplicate_kind FROM pages ORDER BY url").fetchall()
    finally:
        con.close()
    assert got == [(view, "Page 1", page, "near"), (other, "Page 2", "http://s001.web.test/p2.html", "exact")]


async def test_a_copy_keeps_its_verdict_unless_the_correction_says_it_is_exact(tmp_path):
    # A mirror judged an exact copy of the original is not made a near copy of a print
    # view that outranks it; a near copy told it is byte-identical to a better page is exact.
    path = tmp_path / "pages.duckdb"
    orig, mirror, view = "http://a.test/p", "http://m.test/exact/p", "http://m.test/sid/p?sid=1"
    async with store(path) as st:
        st.add_page(row(1, url=mirror, final_url=mirror, duplicate_of=orig, duplicate_kind="exact"))
        st.add_page(row(2, url=view, final_url=view, duplicate_of="http://m.test/print/p", duplicate_kind="near"))
        await st.flush()
        st.reverdict(mirror, "http://m.test/print/p", "near")
        st.reverdict(view, orig, "exact")
        st.reverdict(view, "http://m.test/nav/p", "near")  # after the exact one, in one batch: not undone
    con = duckdb.connect(str(path), read_only=True)
    try:
        got = con.execute("SELECT url, duplicate_of, duplicate_kind FROM pages ORDER BY url").fetchall()
    finally:
        con.close()
    assert got == [(mirror, orig, "exact"), (view, orig, "exact")]
