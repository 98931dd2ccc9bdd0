"""peer.core.run.layout: the data_dir's file names, as the docs and the other tools know them."""

from pathlib import Path

from peer.core.run.layout import DataDir, StateFile


def test_the_data_dir_names_its_files_as_the_readme_does() -> None:
    root = Path("/srv/ringcrawl")  # names only: nothing is created or read
    d = DataDir(root / "p1")
    assert d.results == root / "p1" / "pages.duckdb"
    assert d.results_wal == root / "p1" / "pages.duckdb.wal"
    assert d.state == root / "p1" / "state"
    assert DataDir(str(root)).root == root  # a str from cluster.toml is a Path


def test_state_file_names_round_trip() -> None:
    names = {k: k.file_name(7) for k in StateFile}
    assert names == {StateFile.SNAPSHOT: "snapshot-7.msgpack", StateFile.BLOOM: "bloom-7.bin",
                     StateFile.JOURNAL: "journal-7.log"}
    for kind, name in names.items():
        assert StateFile.parse(name) == (kind, 7)


def test_other_names_are_not_state_files() -> None:
    for name in ("snapshot-7.bin", "journal-x.log", "journal-7.log.bak", "notes.txt", "pages.duckdb"):
        assert StateFile.parse(name) is None, name
    assert StateFile.is_temporary("bloom-3.bin.abc123.tmp")
    assert not StateFile.is_temporary("bloom-3.bin")
