"""``settings.json``: the ring's live settings as this peer last ran them, kept across restarts.

A live change (``python -m ring set|pause|resume``) makes a new config epoch
(``ring.membership.epochs``) that spreads by gossip. Its rule 7 needs a peer
never to go back to an older epoch once it vouched for a newer one, and an
operator needs a paused ring to stay paused when a peer restarts: so the
epoch is written here, atomically (``peer.state.fsio.write_atomic``: a
reader sees the old record or the new one, never half of one), in the list
of effects that took it, before the sends after it, and read back when the
peer starts.

No file: the settings never changed since this data_dir was made, and the
peer starts at epoch 0, its cluster.toml's. ``--fresh`` deletes it with the
rest of the data_dir.

An epoch-0 record is another member's cluster.toml, taken when this peer's
differed (``[ring] config_mismatch = "adopt"``, ``ring.membership.epochs``
rule 8). It is kept with the fingerprint of the file it replaced, and
resumed only while the peer's cluster.toml is still that file: an operator
who edits the file has said what the peer should run, and it starts over
from it (the ring then settles again, by the same rule).
"""

from __future__ import annotations

import json
from pathlib import Path

from peer.core.run.layout import DataDir
from peer.errors import StateError
from peer.state.fsio import write_atomic
from ring.membership.epochs import ConfigEpoch

__all__ = ["read_settings", "write_settings"]


def write_settings(data_dir: Path, record: ConfigEpoch, file: int = 0) -> None:
    """Record ``record`` in ``data_dir`` atomically; OSError if it cannot be written. ``file``:
    the fingerprint of this peer's own cluster.toml (epoch 0's), which an epoch-0 record replaced."""
    doc: dict[str, object] = {"epoch": record.epoch, "fingerprint": f"{record.fingerprint:016x}", "doc": record.doc}
    if record.epoch == 0:
        doc["file"] = f"{file:016x}"
    write_atomic(DataDir(data_dir).settings, (json.dumps(doc).encode() + b"\n",))


def read_settings(data_dir: Path, file: int = 0) -> ConfigEpoch | None:
    """The record in ``data_dir``, or None if there is none, or if it is an epoch-0 record that
    replaced another file than ``file`` (the fingerprint of this peer's cluster.toml now)."""
    path = DataDir(data_dir).settings
    try:
        doc = json.loads(path.read_bytes())
        record = ConfigEpoch(int(doc["epoch"]), int(doc["fingerprint"], 16), str(doc["doc"]))
        # A record of epoch 0 that names no file (an earlier build's) names none we have.
        replaced = int(doc.get("file", "0"), 16) if record.epoch == 0 else 0
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise StateError(f"{path}: cannot read the ring's settings ({e.strerror or e})") from e
    except (ValueError, KeyError, TypeError) as e:
        raise StateError(f"{path}: not a settings record ({e}); restore it from a copy, or delete it and "
                         "the peer takes cluster.toml's settings, then the ring's by gossip") from e
    if record.epoch < 0:
        raise StateError(f"{path}: not a settings record (epoch {record.epoch})")
    if record.epoch == 0 and replaced != file:
        return None  # cluster.toml was edited since: it is what this peer runs now
    return record
