"""A continuous crawl's archive replayed in pywb: every revisit time of a page shows the page.

One peer in process crawls changing.test's ``/framed/`` pages (plain, gzip,
and gzip sent chunked; with an ETag, so each revisit is a 304, and without,
so each is a 200 of the same bytes) with ``[revisit]`` and ``[warc]`` on,
then is started again on its data_dir for a few more revisits (the
references must survive a restart). The archive is then judged by tools
nobody here wrote, as an archivist would: ``warcio check`` on every file,
and pywb (tests/support/replay.py) asked for each page at each capture time,
through its own index and through ours. Every answer must be the page
(status 200, its bytes), never an empty 304, and every revisit record must
name the response record that holds the page (WARC 1.1 §5.16, §5.17). A
page whose server answers 304 to the first request too has its ``pages``
row and ``response`` records of that 304, never a revisit pointing at nothing.
"""

from __future__ import annotations

import email.utils
import gzip
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest
from replay import Wayback, tools
from warcio.archiveiterator import ArchiveIterator

from localweb import HostileWeb, serve_in_thread
from localweb.hostile import changing as cw
from localweb.processes.peerrun import cluster_toml, run_in_process
from peer.results.cdxj import merge_cdxj

BOUNDED = 60.0
NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
#: A page that answers 304 even to a request without validators (localweb/hostile/changing.py).
NOT_MODIFIED_FIRST = "/framed/not-modified"


def _records(folder: Path) -> list[dict[str, Any]]:
    """Every response and revisit record's WARC fields, its HTTP status (None: no HTTP head) and
    whether it was a chunked answer (stored de-chunked: peer/core/warc/record.py rule 1)."""
    out = []
    for path in sorted(folder.glob("*.warc.gz")):
        with path.open("rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type in ("response", "revisit"):
                    fields = dict(record.rec_headers.headers)
                    http = record.http_headers
                    fields["status"] = http.get_statuscode() if http else None
                    fields["chunked"] = bool(http and http.get_header("X-Crawler-Transfer-Encoding") == "chunked")
                    out.append(fields)
    return out


def _crawl(tmp_path: Path) -> tuple[Path, list[Any]]:
    tmp_path.mkdir()
    web = HostileWeb()
    with serve_in_thread(web):
        seeds = [web.url(cw.CHANGE_HOST, "/framed/"), web.url(cw.CHANGE_HOST, NOT_MODIFIED_FIRST)]
        toml = cluster_toml(tmp_path, seeds, sections={
            "politeness": {"rate": 600.0, "initial_delay": 0.1, "window": 2.0},
            "warc": {"enabled": True},
            "revisit": {"enabled": True, "min_interval": 1.0, "max_interval": 2.0, "initial_interval": 1.5,
                        "inc_factor": 1.2, "jitter": 0.0, "run_for": 6.0}})
        first = run_in_process(toml, timeout=BOUNDED)
        before = len(web.requests(cw.CHANGE_HOST))

        def enough() -> bool:   # each page once more after the restart (robots.txt apart)
            return sum(e.target != "/robots.txt" for e in web.requests(cw.CHANGE_HOST)[before:]) >= 2 + len(cw.FRAMED)

        again = run_in_process(toml, timeout=BOUNDED, stop_when=enough)
        log = web.requests(cw.CHANGE_HOST)
    assert first.codes == again.codes == [0], first.stderr() + again.stderr()
    return tmp_path / "p1" / "warc", log


def test_every_revisit_time_of_a_page_replays_the_page_in_pywb(tmp_path: Path) -> None:
    folder, log = _crawl(tmp_path / "crawl")
    warcs = sorted(folder.glob("*.warc.gz"))
    assert len(warcs) == 2                       # one a run
    # An archivist's first check, on every record of every file.
    cli = Path(sys.executable).with_name("warcio")
    for path in warcs:
        done = subprocess.run([str(cli), "check", "-v", str(path)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and "fail" not in done.stdout, done.stdout
    records = [r for r in _records(folder) if not r["WARC-Target-URI"].endswith("/robots.txt")]
    # A 304 to a URL's first request: a pages row, and response records (nothing to refer to).
    broken = [r for r in records if r["WARC-Target-URI"].endswith(NOT_MODIFIED_FIRST)]
    assert len(broken) >= 2 and all(r["WARC-Type"] == "response" and r["status"] == "304" for r in broken), broken
    with duckdb.connect(str(folder.parent / "pages.duckdb"), read_only=True) as con:
        rows = con.execute("SELECT url, status FROM pages").fetchall()
    # One row a URL (before, the 304s' rows came back from the journal at the restart, one a visit).
    assert [s for u, s in rows if u.endswith(NOT_MODIFIED_FIRST)] == [304], rows
    assert len(rows) == len({u for u, _ in rows}) == 2 + len(cw.FRAMED), rows
    by_id = {r["WARC-Record-ID"]: r for r in records}
    revisits = [r for r in records if r["WARC-Type"] == "revisit"]
    profiles = {r["WARC-Profile"] for r in revisits}
    assert profiles == {NOT_MODIFIED, IDENTICAL}, profiles
    statuses = [e.status for e in log if e.target != "/robots.txt"]
    assert len(records) == len(statuses) and statuses.count(304) >= 6, statuses   # a record a request
    chunked = {r["WARC-Target-URI"].rsplit("/", 1)[1] for r in records if r["WARC-Type"] == "response" and r["chunked"]}
    assert chunked == {"chunked", "chunked-etag"}, chunked
    # Each revisit names the response record holding its page: its ID, its exact date, its digest.
    for r in revisits:
        original = by_id.get(r["WARC-Refers-To"])
        assert original is not None and original["WARC-Type"] == "response", r
        assert original["status"] == "200" and original["WARC-Target-URI"] == r["WARC-Target-URI"]
        assert r["WARC-Refers-To-Date"] == original["WARC-Date"]
        assert r["WARC-Payload-Digest"] == original["WARC-Payload-Digest"]
        assert r["WARC-Refers-To-Target-URI"] == r["WARC-Target-URI"]
    # The restarted run's revisits refer to the first run's records.
    first_file = {r["WARC-Record-ID"] for r in _records_of(warcs[0])}
    later = [r for r in _records_of(warcs[1]) if r["WARC-Type"] == "revisit"]
    assert later and all(r["WARC-Refers-To"] in first_file for r in later), later
    # pywb: each page at each capture time, through its own index and through ours.
    found = tools()
    if found is None:   # the records were judged above; the replay needs pywb
        pytest.skip("pywb could not be installed (no package registry?)")
    ours = tmp_path / "ours.cdxj"
    merge_cdxj(sorted(folder.glob("*.cdxj")), ours)
    asked = 0
    for name, index in (("pywb", None), ("ours", ours)):
        with Wayback(found, tmp_path / name, warcs, index=index) as wayback:
            for r in records:
                url = r["WARC-Target-URI"]
                if url.endswith(NOT_MODIFIED_FIRST):
                    continue   # the server never sent this page: nothing to replay but its 304
                stamp = "".join(c for c in r["WARC-Date"] if c.isdigit())[:14]
                got = wayback.get(url, stamp)
                body = gzip.decompress(got.body) if got.headers.get("content-encoding") == "gzip" else got.body
                path = url.split(cw.CHANGE_HOST, 1)[1].split("/", 1)[1]
                assert (got.status, body) == (200, cw.framed_page("/" + path)), (name, r, got.status, got.body[:200])
                # Served as the capture of that time, not the nearest other one.
                served = email.utils.parsedate_to_datetime(got.headers["memento-datetime"])
                assert served.strftime("%Y%m%d%H%M%S") == stamp, (name, r, got.headers)
                asked += 1
    print(f"replayed {asked} captures ({len(revisits)} revisits) of {len(records)} records; "
          f"{statuses.count(304)} 304s of {len(statuses)} requests")


def _records_of(path: Path) -> list[dict[str, Any]]:
    with path.open("rb") as f:
        return [dict(r.rec_headers.headers) for r in ArchiveIterator(f) if r.rec_type in ("response", "revisit")]
