"""The run order is derived: test files longest first, by the seconds a full run recorded (tests/support/runorder.py).

tests/durations.json is written by ``scripts/test --record-durations``
(docs/development.md says when); tests/conftest.py sorts the files by it.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from runorder import COMMAND, DurationRecorder, file_order, load, sort_items, write

ROOT = Path(__file__).resolve().parents[2]


def test_files_run_longest_first_and_unknown_ones_after_in_their_order():
    seconds = {"tests/e2e/b.py": 5.0, "tests/e2e/c.py": 50.0, "tests/core/gone.py": 99.0}
    assert file_order(["tests/core/a.py", "tests/e2e/b.py", "tests/e2e/c.py", "tests/core/d.py"], seconds) == [
        "tests/e2e/c.py", "tests/e2e/b.py", "tests/core/a.py", "tests/core/d.py"]


def test_items_keep_their_order_within_a_file(tmp_path):
    items = [SimpleNamespace(path=tmp_path / f, name=n) for f, n in
             [("a.py", "a1"), ("b.py", "b1"), ("a.py", "a2"), ("c.py", "c1"), ("b.py", "b2")]]
    sort_items(items, {"b.py": 2.0, "a.py": 1.0}, tmp_path)
    assert [i.name for i in items] == ["b1", "b2", "a1", "a2", "c1"]


def test_the_recorder_sums_each_file_and_keeps_what_did_not_run(tmp_path):
    (tmp_path / "tests").mkdir()
    for name in ("a.py", "b.py", "old.py"):
        (tmp_path / "tests" / name).write_text("")
    path = tmp_path / "durations.json"
    write(path, {"tests/old.py": 7.0, "tests/gone.py": 3.0, "tests/a.py": 100.0})
    rec = DurationRecorder(path, tmp_path)
    for nodeid, seconds in [("tests/a.py::t1", 1.0), ("tests/a.py::t1", 0.25), ("tests/b.py::t[x]", 2.0)]:
        rec.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, duration=seconds))
    rec.pytest_sessionfinish(None, 0)
    # Measured now wins, a file that did not run keeps its seconds, a deleted one goes.
    assert load(path) == {"tests/b.py": 2.0, "tests/a.py": 1.2, "tests/old.py": 7.0}
    doc = json.loads(path.read_text())
    assert doc["command"] == COMMAND and list(doc["seconds"]) == ["tests/old.py", "tests/b.py", "tests/a.py"]


def test_the_record_is_committed_and_read():
    seconds = load(ROOT / "tests" / "durations.json")
    assert seconds and all(k.startswith("tests/") and k.endswith(".py") for k in seconds)
