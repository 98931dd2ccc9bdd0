"""peer.state.settingsfile: the config epoch a peer last ran, kept in its data_dir across restarts."""

from pathlib import Path

import pytest

from peer.core.config.cluster import parse_config
from peer.core.door.settings import initial
from peer.errors import StateError
from peer.state.settingsfile import read_settings, write_settings
from ring.membership.epochs import ConfigEpoch

TOML = """
[crawl]
seeds = ["http://a.test/"]

[[peer]]
id = "p1"
address = "tcp://127.0.0.1:5701"
"""


def cfg():  # type: ignore[no-untyped-def]
    return parse_config(TOML, Path("/x/cluster.toml"))


def test_the_journal_keeps_the_epoch_and_refuses_what_is_not_one(tmp_path):
    assert read_settings(tmp_path) is None
    rec = ConfigEpoch(3, 2**64 - 1, initial(cfg()).doc)
    write_settings(tmp_path, rec)
    assert read_settings(tmp_path) == rec
    (tmp_path / "settings.json").write_text('{"epoch": -1, "fingerprint": "1", "doc": "{}"}')
    with pytest.raises(StateError, match="epoch -1"):
        read_settings(tmp_path)
    (tmp_path / "settings.json").write_text('{"epoch": 0, "fingerprint": "1", "doc": "{}"}')
    assert read_settings(tmp_path, 5) is None  # epoch 0 naming no file it replaced: the file's own
    (tmp_path / "settings.json").write_text("{")
    with pytest.raises(StateError, match="not a settings record"):
        read_settings(tmp_path)


def test_an_adopted_epoch_0_record_is_resumed_while_the_file_it_replaced_is_unchanged(tmp_path):
    """A peer that took another member's cluster.toml at epoch 0 (``config_mismatch = "adopt"``)
    resumes it after a restart; once its own file is edited, it starts from the file."""
    ours = initial(cfg())
    theirs = ConfigEpoch(0, 12345, '{"crawl.rate": 9}')
    write_settings(tmp_path, theirs, ours.fingerprint)
    assert read_settings(tmp_path, ours.fingerprint) == theirs
    assert read_settings(tmp_path, ours.fingerprint ^ 1) is None  # the file was edited
