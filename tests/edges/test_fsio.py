"""peer.state.fsio: the atomic replace leaves the old file or the new one, and syncs in order."""

import os
from pathlib import Path

import pytest

from peer.state import fsio


def test_write_atomic_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")
    fsio.write_atomic(target, (b"new ", bytearray(b"con"), memoryview(b"tent")))
    assert target.read_bytes() == b"new content"
    assert os.listdir(tmp_path) == ["f.bin"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary(tmp_path: Path) -> None:
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")

    def parts():
        yield b"half of the new"
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        fsio.write_atomic(target, parts())
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["f.bin"]


def test_the_data_is_synced_before_the_rename_and_the_directory_after(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        calls.append("fsync dir" if os.path.isdir(f"/proc/self/fd/{fd}") else "fsync file")
        real_fsync(fd)

    def replace(src: str, dst: str) -> None:
        calls.append("replace")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    fsio.write_atomic(tmp_path / "f.bin", (b"x",))
    assert calls == ["fsync file", "replace", "fsync dir"]


def test_fsync_dir_of_a_missing_directory_is_a_no_op(tmp_path: Path) -> None:
    fsio.fsync_dir(tmp_path / "absent")
