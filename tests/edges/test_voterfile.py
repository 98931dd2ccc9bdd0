"""peer.state.voterfile: the ring's voter record in a data_dir, across restarts."""

from __future__ import annotations

import pytest

from peer.errors import StateError
from peer.state.voterfile import read_voters, write_voters
from ring.membership.voters import VoterRecord


def test_the_record_round_trips_and_none_is_version_0s(tmp_path):
    assert read_voters(tmp_path) is None  # never changed: cluster.toml's [[peer]] list
    joint = VoterRecord(3, ("p1", "p2", "p3"), ("p1", "p2"))
    write_voters(tmp_path, joint)
    assert read_voters(tmp_path) == joint
    write_voters(tmp_path, VoterRecord(4, ("p1", "p2", "p3")))
    assert read_voters(tmp_path) == VoterRecord(4, ("p1", "p2", "p3"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["voters.json"]  # no temporary file left


@pytest.mark.parametrize("text", ['{"version": 2}', "not json", '{"version": 2, "voters": ["b", "a"]}',
                                  '{"version": 1, "voters": ["a", "b", "c", "d"], "joint": ["a", "b"]}'])
def test_a_damaged_record_is_one_clear_error(tmp_path, text):
    (tmp_path / "voters.json").write_text(text)
    with pytest.raises(StateError, match="voters.json: not a voter record"):
        read_voters(tmp_path)
