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
"""

from __future__ import annotations

import json
from pathlib import Path

from peer.core.run.layout import DataDir
from peer.errors import StateError
from peer.state.fsio import write_atomic
from ring.membership.epochs import ConfigEpoch

__all__ = ["read_settings", "write_settings"]


def write_settings(data_dir: Path, record: ConfigEpoch) -> None:
    """Record ``record`` in ``data_dir`` atomically; OSError if it cannot be written."""
    doc = {"epoch": record.epoch, "fingerprint": f"{record.fingerprint:016x}", "doc": record.doc}
    write_atomic(DataDir(data_dir).settings, (json.dumps(doc).encode() + b"\n",))


def read_settings(data_dir: Path) -> ConfigEpoch | None:
    """The record in ``data_dir``, or None if there is none."""
    path = DataDir(data_dir).settings
    try:
        doc = json.loads(path.read_bytes())
        record = ConfigEpoch(int(doc["epoch"]), int(doc["fingerprint"], 16), str(doc["doc"]))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise StateError(f"{path}: cannot read the ring's settings ({e.strerror or e})") from e
    except (ValueError, KeyError, TypeError) as e:
        raise StateError(f"{path}: not a settings record ({e}); restore it from a copy, or delete it and "
                         "the peer takes cluster.toml's settings, then the ring's by gossip") from e
    if record.epoch < 1:
        raise StateError(f"{path}: not a settings record (epoch {record.epoch}; epoch 0 is cluster.toml's)")
    return record
