"""ring.tools.statuspoll: a solo peer is asked where it recorded its address, and silence is said in its words."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import trio

from localweb.processes.peerrun import free_ports
from ring.tools.client import Contact
from ring.tools.statuspoll import SoloPeer, StatusPoll


@dataclass(frozen=True)
class Record:
    address: str
    pid: int
    alive: bool

    def gone(self) -> bool:
        return not self.alive


def poll_with(record: Record | None, timeout: float = 0.2) -> tuple[StatusPoll, list[Path]]:
    asked: list[Path] = []

    def recorded(data_dir: Path) -> Record | None:
        asked.append(data_dir)
        return record

    solo = SoloPeer("solo", Path("/d/solo"), "python -m peer --ring solo.toml", recorded)
    return StatusPoll("solo", (Contact("solo", ""),), timeout, None, solo), asked


def test_no_record_is_not_running_and_asks_nobody():
    poll, asked = poll_with(None)
    assert trio.run(poll) is None
    assert asked == [Path("/d/solo")]
    assert poll.silence == ("solo peer 'solo' of ring 'solo' is not running: no status address recorded in "
                            "/d/solo; start it with: python -m peer --ring solo.toml")


def test_a_record_whose_process_is_gone_is_not_running():
    poll, _ = poll_with(Record("tcp://127.0.0.1:1", 4242, alive=False))
    assert trio.run(poll) is None
    assert poll.silence is not None and "left by process 4242, which is gone" in poll.silence


def test_a_live_record_nobody_answers_at_is_said_with_the_timeout_and_read_again_each_poll():
    address = f"tcp://127.0.0.1:{free_ports(1)[0]}"
    poll, asked = poll_with(Record(address, 4242, alive=True))
    assert trio.run(poll) is None  # within its timeout (cluster_status's move_on_after)
    assert poll.silence is not None and f"did not answer within 0.2s at {address}" in poll.silence
    trio.run(poll)
    assert len(asked) == 2  # a restarted peer has another port: the record is read at every poll
