"""``python -m peer --log-format``: what a log shipper and a reader of the text log get.

Run in this process (tests/support/clirun.py) against the local web served
from a thread: a solo crawl of a few pages, once in each format.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from clirun import Result, WebThread, run_main, solo_toml, web_thread
from ring.tools.logs import parse_stamp

#: RFC 3339 in UTC, as every record is stamped.
RFC3339_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture(scope="module")
def web() -> Iterator[WebThread]:
    with web_thread(hosts=1, pages=6, links=3, shop=False) as w:
        yield w


def crawl(toml: Path, *flags: str) -> Result:
    from peer.commands.cli import main

    return run_main(main, ["--ring", str(toml), "--progress", "0.05", *flags])


def test_json_logs_are_one_object_a_line_and_the_summary_one_record(tmp_path, web):
    res = crawl(solo_toml(tmp_path, web.port, rate=200.0), "--log-format", "json")
    assert res.returncode == 0, res.stderr
    records = [json.loads(line) for line in res.stderr.splitlines()]  # every line parses
    assert records
    for r in records:
        assert RFC3339_UTC.match(r["ts"]), r
        assert r["level"] in ("DEBUG", "INFO", "WARNING", "ERROR") and r["peer"] == "solo"
        assert r["event"] and r["logger"] and isinstance(r["msg"], str)
    summaries = [r for r in records if r["event"] == "summary"]
    assert len(summaries) == 1
    s = summaries[0]
    assert s["finish_reason"] == "frontier empty" and s["pages"] == s["pages_in_all"] > 0
    assert s["status_counts"] and s["results"].endswith("pages.duckdb") and s["stats_file"].endswith("stats.json")
    assert s["msg"].startswith("crawl finished (frontier empty)")
    assert "run_config" not in s  # stats.json has it; a log record of the config would be kilobytes
    assert "fields" not in s  # no field of the summary clashes with a key of the record
    progress = [r for r in records if r["event"] == "progress"]
    assert progress and all(isinstance(r["pages"], int) and "frontier" in r for r in progress)
    assert res.stdout == ""  # the summary is the record above, not lines on stdout


def test_text_logs_are_stamped_in_utc_with_their_zone(tmp_path, web):
    import time

    res = crawl(solo_toml(tmp_path, web.port, rate=200.0))
    assert res.returncode == 0, res.stderr
    lines = res.stderr.splitlines()
    assert lines
    for line in lines:
        stamp = line.split(" ", 1)[0]
        assert RFC3339_UTC.match(stamp), line
        assert abs(parse_stamp(stamp) - time.time()) < 600  # UTC read as UTC: the time it is now
    # The summary stays lines a person reads, on stdout.
    assert res.stdout.startswith("crawl finished (frontier empty)") and "\nresults: " in res.stdout
