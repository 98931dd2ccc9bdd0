"""peer.state.configfile: reading cluster.toml from disk, and the one line a file that cannot be read gets.

Parsing the text (peer.core.config.cluster) is tested without files in
tests/core/test_config.py.
"""

import pytest

from peer.errors import ConfigError
from peer.state.configfile import load_config


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "nope.toml")
    assert str(info.value) == f"{tmp_path / 'nope.toml'}: no such file (pass --ring PATH to a cluster.toml)"


def test_directory_and_binary_file(tmp_path):
    with pytest.raises(ConfigError, match="is a directory"):
        load_config(tmp_path)
    bad = tmp_path / "bin.toml"
    bad.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="is not UTF-8"):
        load_config(bad)
