"""A data_dir whose disk fails mid-crawl: exit status 4, one line, and no page counted that has no row.

The disk is a real one that fills up: a 1.2 MB tmpfs mounted for the test,
so every write of the peer (DuckDB's log and file, the journal, the seen set)
meets the kernel's own ENOSPC wherever it comes, and the test does not
choose which write fails first. Why not a read-only remount or a chmod: a
bind mount cannot be remounted read-only while the peer holds files open for
writing ("mount point is busy", tried), and root writes through a chmod.
Needs root for ``mount``; skipped in one line without it.

Judged as an operator would: the exit status and the last line; then the
dead peer's data_dir copied off the full disk, adopted (``--dry-run``'s
reading of it, ``peer.commands.lostpeer.load_lost``) and merged: the URLs
adopt would pass on as already fetched are exactly the rows the merge has,
and every page the server answered is one of those or is sent to be fetched
again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest
from clirun import run_main, web_thread

SIZE = "1200k"


@pytest.fixture
def small_disk(tmp_path):
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(mnt)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_full_disk_mid_crawl_is_exit_4_in_one_line_and_no_page_without_a_row_is_seen(tmp_path,
                                                                                        small_disk):
    from peer.commands.cli import main
    from peer.commands.lostpeer import load_lost
    from peer.commands.merge import main as merge_main
    from peer.state.configfile import load_config

    data = small_disk / "p1"
    with web_thread(hosts=4, pages=60, links=5, shop=False) as web:
        toml = tmp_path / "solo.toml"
        toml.write_text(f"""
[ring]
name = "solo"

[[peer]]
id = "p1"
data_dir = "{data}"

[crawl]
seeds = ["http://s001.web.test:{web.port}/"]
allow_hosts = ["*.web.test"]
allow_private = true
store_body = true

[politeness]
rate = 600

[bloom]
capacity = 1000

[dns]
resolve = {{ "*.web.test" = "127.0.0.1" }}
""")
        res = run_main(main, ["--ring", str(toml), "--progress", "1"])
        answered = {f"http://{e.host}:{web.port}{e.target}" for e in web.requests()
                    if e.method == "GET" and e.target != "/robots.txt" and e.status}

    assert res.returncode == 4, res.stderr[-3000:]
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: storage failed, the crawl stopped: {data}/"), last
    assert "No space left on device" in last
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr[-3000:]
    assert answered, "the crawl failed before its first page: the disk is too small for the test"

    # What the operator does next: the dead peer's directory copied off the
    # full disk, adopted and merged.
    copy = tmp_path / "copy" / "p1"
    shutil.copytree(data, copy)
    lost = load_lost(load_config(toml), copy, "p1")
    out = tmp_path / "crawl.duckdb"
    merged = run_main(merge_main, [str(copy), "-o", str(out)])
    assert merged.returncode == 0, merged.stderr
    with duckdb.connect(str(out), read_only=True) as con:
        rows = {u for (u,) in con.execute("SELECT url FROM pages").fetchall()}
    # Adopt counts as fetched exactly the pages the merge has: a URL sent as
    # seen without a row would be a page nobody has and nobody fetches again.
    assert set(lost.fetched) == rows
    # Every page the server answered has its row, or goes to be fetched again.
    assert answered <= rows | set(lost.urls), sorted(answered - rows - set(lost.urls))[:5]
