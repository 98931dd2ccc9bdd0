"""``status-address.json``: where a solo peer without an address answers ``ring status``.

A ring of one needs no address to crawl (``solo.toml`` gives none), yet its
user wants to watch it with ``python -m ring status`` and ``dashboard``.
So such a peer binds a loopback port of the OS's choosing
(``tcp://127.0.0.1:*``, ``peer.engine.observe``) and records it here, in its
data_dir, where the tools look for it (they find the data_dir in cluster.toml
as the peer does, ``ClusterConfig.data_dir``):

- a port the OS gives cannot collide: a fixed scheme (say a port derived
  from a hash of the data_dir) could land on a port a web server or a second
  peer holds, and then fail to bind, or answer for the wrong process;
- loopback only: the record is on this machine's disk, so only this
  machine's tools read it, and a peer that was never given an address is
  not reachable from elsewhere.

The record is written after the bind succeeded, atomically
(``peer.state.fsio.write_atomic``: a reader sees no record, the old one or
the new one, never half of one), so a record always names a port that was
listening. It holds the pid and the wall-clock time the port was bound;
the peer's status row reports its uptime since then, which lets a tool tell
the peer that wrote the record from another process that got the same port
later. A clean exit removes the record, and only the record this process
wrote (:func:`remove_status_address`), so a run that replaced it keeps its
own. ``kill -9`` or a crash leaves it behind: stale. :meth:`StatusAddress.gone`
says so when its process no longer exists on this machine, and the tools
also bound every ask by their timeout, so a stale record neither hangs them
nor shows a peer that is not running.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from peer.core.run.layout import DataDir
from peer.errors import StateError
from peer.state.fsio import write_atomic

__all__ = ["StatusAddress", "read_status_address", "remove_status_address", "write_status_address"]


@dataclass(frozen=True, slots=True)
class StatusAddress:
    """A solo peer's recorded status address: where, which process, since when (``time.time()``)."""

    address: str
    pid: int
    started: float

    def gone(self) -> bool:
        """Its process no longer exists on this machine (the record was left by kill -9 or a crash).

        ``kill(pid, 0)`` sends nothing; it only checks that the process
        exists (``kill(2)``). EPERM means it exists under another user.
        """
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except OSError:
            return False
        return False

    def to_json(self) -> bytes:
        return json.dumps({"address": self.address, "pid": self.pid, "started": self.started}).encode() + b"\n"

    @classmethod
    def from_json(cls, data: bytes) -> StatusAddress:
        doc = json.loads(data)
        address, pid, started = doc["address"], doc["pid"], doc["started"]
        if not (isinstance(address, str) and address.startswith("tcp://")):
            raise ValueError(f"address: expected tcp://HOST:PORT, got {address!r}")
        if not (isinstance(pid, int) and pid > 0) or not isinstance(started, (int, float)):
            raise ValueError("pid or started: not a process id and a time")
        return cls(address, pid, float(started))


def write_status_address(data_dir: Path, record: StatusAddress) -> None:
    """Record ``record`` in ``data_dir`` atomically; OSError if it cannot be written."""
    write_atomic(DataDir(data_dir).status_address, (record.to_json(),))


def read_status_address(data_dir: Path) -> StatusAddress | None:
    """The record in ``data_dir``, or None if there is none (never started, or ended cleanly)."""
    path = DataDir(data_dir).status_address
    try:
        return StatusAddress.from_json(path.read_bytes())
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise StateError(f"{path}: cannot read the solo peer's status address ({e.strerror or e})") from e
    except (ValueError, KeyError, TypeError) as e:
        # Atomic writes leave no torn record: this one was edited by hand.
        raise StateError(f"{path}: not a status address record ({e}); delete it and restart the "
                         "peer, which records its address again") from e


def remove_status_address(data_dir: Path, record: StatusAddress) -> None:
    """Remove the record if it is still ``record`` (a later run of this data_dir may own it now).

    Best effort: a data_dir deleted meanwhile, or a record that cannot be
    read, is left as it is (a stale record is the tools' case to handle).
    """
    path = DataDir(data_dir).status_address
    try:
        if StatusAddress.from_json(path.read_bytes()) == record:
            path.unlink()
    except (OSError, ValueError, KeyError, TypeError):
        pass
