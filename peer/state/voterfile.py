"""``voters.json``: the ring's voter record as this peer last held it, kept across restarts.

The lease's voters (``ring.membership.voters``) change at an operator's word
and spread by gossip. Its safety argument needs a peer never to go back to
an older record once it vouched for a newer one (rule 6 there), so the
record is written here, atomically (``peer.state.fsio.write_atomic``: a
reader sees the old record or the new one, never half of one), when it
changes, and read back when the peer starts. A peer vouches for a new
record only after a grace (rule 3), and the write is carried out in the
same list of effects that made the record, so it is on disk first.

No file: the voters never changed since this data_dir was made, and the
peer starts from cluster.toml's ``[[peer]]`` list (version 0). ``--fresh``
deletes it with the rest of the data_dir.
"""

from __future__ import annotations

import json
from pathlib import Path

from peer.core.run.layout import DataDir
from peer.errors import StateError
from peer.state.fsio import write_atomic
from ring.membership.voters import VoterRecord, problem

__all__ = ["read_voters", "write_voters"]


def write_voters(data_dir: Path, record: VoterRecord) -> None:
    """Record ``record`` in ``data_dir`` atomically; OSError if it cannot be written."""
    doc = {"version": record.version, "voters": list(record.voters), "joint": list(record.joint)}
    write_atomic(DataDir(data_dir).voters, (json.dumps(doc).encode() + b"\n",))


def read_voters(data_dir: Path) -> VoterRecord | None:
    """The record in ``data_dir``, or None if there is none."""
    path = DataDir(data_dir).voters
    try:
        doc = json.loads(path.read_bytes())
        record = VoterRecord(int(doc["version"]), tuple(str(v) for v in doc["voters"]),
                             tuple(str(v) for v in doc.get("joint", ())))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise StateError(f"{path}: cannot read the ring's voter record ({e.strerror or e})") from e
    except (ValueError, KeyError, TypeError) as e:
        raise StateError(f"{path}: not a voter record ({e}); restore it from a copy, or delete it and "
                         "the peer takes cluster.toml's [[peer]] list, then the ring's record by gossip") from e
    why = problem(record)
    if why is not None:
        raise StateError(f"{path}: not a voter record ({why})")
    return record
