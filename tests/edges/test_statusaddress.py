"""peer.state.statusaddress: a solo peer's recorded status address, written whole, told stale when its process is gone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from peer.errors import StateError
from peer.state.statusaddress import (StatusAddress, read_status_address, remove_status_address,
                                      write_status_address)


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, timeout=60, check=True)
    return int(proc.stdout)


def test_a_record_is_read_back_as_written_and_named_in_the_data_dir(tmp_path: Path) -> None:
    rec = StatusAddress("tcp://127.0.0.1:40123", os.getpid(), 1_700_000_000.25)
    write_status_address(tmp_path, rec)
    assert os.listdir(tmp_path) == ["status-address.json"]  # and no temporary left beside it
    assert read_status_address(tmp_path) == rec
    assert not rec.gone()  # this test's own process


def test_no_record_and_no_data_dir_mean_not_running(tmp_path: Path) -> None:
    assert read_status_address(tmp_path) is None
    assert read_status_address(tmp_path / "never-ran") is None


def test_a_record_left_by_a_killed_process_is_gone(tmp_path: Path) -> None:
    rec = StatusAddress("tcp://127.0.0.1:40123", dead_pid(), 1.0)
    write_status_address(tmp_path, rec)
    assert read_status_address(tmp_path) == rec  # the file survives a kill -9...
    assert rec.gone()  # ...and is told stale by its process


def test_a_failed_rewrite_leaves_the_old_record_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = StatusAddress("tcp://127.0.0.1:40123", os.getpid(), 1.0)
    write_status_address(tmp_path, old)

    def full(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)  # the rename of peer.state.fsio.write_atomic
    with pytest.raises(OSError):
        write_status_address(tmp_path, StatusAddress("tcp://127.0.0.1:40999", os.getpid(), 2.0))
    monkeypatch.undo()
    assert read_status_address(tmp_path) == old
    assert os.listdir(tmp_path) == ["status-address.json"]


def test_a_clean_exit_removes_only_its_own_record(tmp_path: Path) -> None:
    first = StatusAddress("tcp://127.0.0.1:40123", os.getpid(), 1.0)
    second = StatusAddress("tcp://127.0.0.1:40124", os.getpid(), 2.0)
    write_status_address(tmp_path, first)
    write_status_address(tmp_path, second)  # a later run of the same data_dir
    remove_status_address(tmp_path, first)
    assert read_status_address(tmp_path) == second
    remove_status_address(tmp_path, second)
    assert read_status_address(tmp_path) is None
    remove_status_address(tmp_path / "deleted", second)  # a data_dir gone meanwhile: nothing to do


@pytest.mark.parametrize("text", ["", "not json", "[]", '{"address": "tcp://127.0.0.1:1"}',
                                  '{"address": "http://x/", "pid": 1, "started": 0}',
                                  '{"address": "tcp://127.0.0.1:1", "pid": -3, "started": 0}'])
def test_a_record_edited_by_hand_is_one_line_naming_the_file(tmp_path: Path, text: str) -> None:
    (tmp_path / "status-address.json").write_text(text)
    with pytest.raises(StateError) as err:
        read_status_address(tmp_path)
    assert str(err.value).startswith(f"{tmp_path / 'status-address.json'}: not a status address record")
    assert "\n" not in str(err.value)
