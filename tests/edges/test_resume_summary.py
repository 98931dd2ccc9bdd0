"""The end-of-run summary of a resumed crawl adds up: ``python -m peer``'s ``main`` run in process.

A first run ends at ``max_pages``; the second resumes it as after a ``kill -9``
(``run.json`` not ended) whose last rows were in the journal, not yet in the
results file: recovery writes them back during the second run. The summary's
figures are judged as a user reads them: the parts of the ``results:`` line
sum to its total, which is the file's count, and the limits line says what
stopped the crawl.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from clirun import Result, WebThread, run_main, solo_toml, web_thread


@pytest.fixture(scope="module")
def web() -> Iterator[WebThread]:
    with web_thread(hosts=1, pages=12, links=3, shop=False) as w:
        yield w


def crawl(toml: Path, *flags: str) -> Result:
    from peer.commands.cli import main

    res = run_main(main, ["--ring", str(toml), *flags])
    assert res.returncode == 0, res.stderr
    return res


def test_a_kill_9_resume_s_results_line_adds_up(tmp_path, web):
    toml = solo_toml(tmp_path, web.port, extra="max_pages = 6")
    crawl(toml)
    results = tmp_path / "solo" / "pages.duckdb"
    # As a kill -9 before the store's last flush leaves them: two rows in the journal only.
    with duckdb.connect(str(results)) as con:
        con.execute("DELETE FROM pages WHERE url IN (SELECT url FROM pages ORDER BY url LIMIT 2)")
    record = tmp_path / "solo" / "state" / "run.json"
    doc = json.loads(record.read_text())
    doc.update(ended=None, stop_reason="")
    record.write_text(json.dumps(doc))
    toml.write_text(toml.read_text().replace("max_pages = 6", "max_pages = 9"))
    res = crawl(toml, "--resume")
    assert "2 result rows restored" in res.stderr
    line = re.search(r"^results: .*: (\d+) pages in all, (\d+) fetched this run, (\d+) by 1 earlier run\(s\)$",
                     res.stdout, re.M)
    assert line, res.stdout
    total, this_run, earlier = map(int, line.groups())
    with duckdb.connect(str(results), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM pages").fetchone() == (total,)
    assert (total, this_run, earlier) == (9, 3, 6)  # before: 9 in all, 3 this run, 4 earlier
    assert f"{this_run} pages fetched this run" in res.stdout  # the summary's first line


def test_a_crawl_stopped_by_max_pages_says_so_on_its_limits_line(tmp_path, web):
    res = crawl(solo_toml(tmp_path, web.port, extra="max_pages = 4"))
    assert res.stdout.startswith("crawl finished (max_pages reached)"), res.stdout
    limits = [ln for ln in res.stdout.splitlines() if ln.startswith("  limits: ")]
    assert limits == ["  limits: max_pages 4 reached"], res.stdout  # before: "limits: none hit"
